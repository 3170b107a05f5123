/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cron expressions: whatever the input, parsing must not crash, and for an
 * accepted schedule every next() result must lie strictly after its input
 * and be a fire time itself (next(next - 1µs) == next); for `@every` the
 * result is the input truncated to the second plus a constant delay.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/cron.h"

#define USEC 1000000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint64_t starts[] = {
    0,
    951782400ULL * USEC + 1,       /* 2000-02-29T00:00:00.000001Z */
    1767225599ULL * USEC + 999999, /* 2025-12-31T23:59:59.999999Z */
    4107456000ULL * USEC,          /* 2100-02-28T00:00:00Z, a non-leap century */
    UINT64_MAX - 3600 * USEC,      /* the far end of the representable range */
};

/* '@' is never valid inside a field, so an accepted expression naming @every is one (after any TZ= prefix). */
static bool is_every(const char *s)
{
        return strstr(s, "@every") != NULL;
}

static void check(const struct ao_cron *c, bool every)
{
        uint64_t delay = 0;
        for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
                uint64_t t = starts[i];
                for (int k = 0; k < 4; k++) {
                        uint64_t n = ao_cron_next(c, t);
                        if (n == 0)
                                break;
                        if (n <= t || n % USEC != 0)
                                abort();
                        if (every) {
                                uint64_t d = n - t / USEC * USEC;
                                if (d < USEC || (delay && d != delay))
                                        abort();
                                delay = d;
                        } else if (ao_cron_next(c, n - 1) != n) {
                                abort();
                        }
                        t = n;
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 1024)
                return 0;
        char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';

        struct ao_cron *c = NULL;
        struct ao_error err = {0};
        if (ao_cron_parse(s, &c, &err) == 0) {
                check(c, is_every(s));
                ao_cron_free(c);
        } else if (err.code >= 0 || c != NULL) {
                abort();
        }
        free(s);
        return 0;
}
