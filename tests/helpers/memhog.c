/* SPDX-License-Identifier: Apache-2.0 */
/* Test hook: touch N MiB of fresh memory, then exit. Built static, so its own footprint is tiny. */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
        long mib = argc > 1 ? atol(argv[1]) : 0;
        if (mib <= 0)
                return 0;
        size_t size = (size_t) mib << 20;
        char *p = malloc(size);
        if (!p)
                return 1;
        memset(p, 1, size); /* touch every page so it is resident */
        volatile char sink = p[size - 1];
        (void) sink;
        free(p);
        return 0;
}
