/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The reactor's timer heap (see heap.c). Private to src/reactor/. */

#include "internal.h"

void reactor_heap_push(struct ao_reactor *r, struct ao_source *s);
/** Remove @s if it is in the heap; a no-op otherwise. */
void reactor_heap_remove(struct ao_reactor *r, struct ao_source *s);
struct ao_source *reactor_heap_top(const struct ao_reactor *r);
