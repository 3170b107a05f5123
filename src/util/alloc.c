/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn static void out_of_memory(size_t size)
{
        /* No allocation and no logger here: stderr via write(2) is all that is safe. */
        char msg[96];
        int n = snprintf(msg, sizeof(msg), "addon-operator: out of memory allocating %zu bytes\n", size);
        if (n > 0)
                (void) !write(STDERR_FILENO, msg, (size_t) n);
        abort();
}

void *ao_xmalloc(size_t size)
{
        void *p = malloc(size ? size : 1);
        if (!p)
                out_of_memory(size);
        return p;
}

void *ao_xcalloc(size_t n, size_t size)
{
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p)
                out_of_memory(n * size);
        return p;
}

void *ao_xrealloc(void *p, size_t size)
{
        void *q = realloc(p, size ? size : 1);
        if (!q)
                out_of_memory(size);
        return q;
}

void *ao_xreallocarray(void *p, size_t n, size_t size)
{
        void *q = reallocarray(p, n ? n : 1, size ? size : 1);
        if (!q)
                out_of_memory(n * size);
        return q;
}

char *ao_xstrdup(const char *s)
{
        return ao_xstrndup(s, strlen(s));
}

char *ao_xstrndup(const char *s, size_t n)
{
        char *p = ao_xmalloc(n + 1);
        memcpy(p, s, n);
        p[n] = '\0';
        return p;
}

char *ao_xvasprintf(const char *fmt, va_list ap)
{
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                out_of_memory(strlen(fmt));
        return s;
}

char *ao_xasprintf(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *s = ao_xvasprintf(fmt, ap);
        va_end(ap);
        return s;
}
