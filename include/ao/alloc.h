/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Allocation that cannot fail for small, internally sized objects. This is
 * the only place the process may abort on its own: running out of memory
 * for a few bytes leaves nothing sensible to do. Anything sized by input
 * from outside is capped by its caller before it gets here.
 */

#include <stdarg.h>
#include <stddef.h>

#include "ao/macro.h"

void *ao_xmalloc(size_t size);
void *ao_xcalloc(size_t n, size_t size);
void *ao_xrealloc(void *p, size_t size);
/** reallocarray() that aborts on overflow or exhaustion. */
void *ao_xreallocarray(void *p, size_t n, size_t size);
char *ao_xstrdup(const char *s);
char *ao_xstrndup(const char *s, size_t n);
/** A formatted string, malloc'd. */
char *ao_xasprintf(const char *fmt, ...) _printf_(1, 2);
char *ao_xvasprintf(const char *fmt, va_list ap) _printf_(1, 0);
