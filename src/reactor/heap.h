/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The reactor's timer heap (see heap.c). Private to src/reactor/. */

#include "internal.h"

void ao_reactor_heap_push(struct ao_reactor *r, struct ao_source *s);
/** Remove @s if it is in the heap; a no-op otherwise. */
void ao_reactor_heap_remove(struct ao_reactor *r, struct ao_source *s);
struct ao_source *ao_reactor_heap_top(const struct ao_reactor *r);
