/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TZif files (what a TZ= crontab prefix reads from the zoneinfo directory):
 * whatever the bytes, parsing must not crash and must fail with a message;
 * an accepted zone's offsets stay under 26 hours from UTC; and cron
 * schedules in that zone, read from it as a file in a scratch TZDIR, keep
 * their invariants however the zone jumps: every next() is strictly after
 * its input and a fire time itself (next(next - 1µs) == next).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/cron.h"
#include "ao/zone.h"

#define USEC 1000000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int64_t instants[] = {
    0,
    951782400,  /* 2000-02-29 */
    1774746000, /* 2026-03-29T01:00:00Z, a change in Europe */
    2147483647,
    2147483648, /* either side of the 32-bit end */
    4107456000, /* 2100-02-28 */
    INT64_MAX / 2,
};

static const char *const exprs[] = {"TZ=Fuzz/Zone 0 30 2 * * *", "TZ=Fuzz/Zone */5 * * * * *",
                                    "TZ=Fuzz/Zone 0 0 0 1 * MON"};

static const uint64_t starts[] = {
    0, 1774742400ULL * USEC + 1, /* 2026-03-29T00:00:00.000001Z */
    4102444799ULL * USEC,        /* 2099-12-31T23:59:59Z */
};

static char dir[] = "/tmp/fuzz-zone-XXXXXX";
static char path[64];

static void remove_dir(void)
{
        (void) unlink(path);
        (void) snprintf(path, sizeof(path), "%s/Fuzz", dir);
        (void) rmdir(path);
        (void) rmdir(dir);
}

static bool scratch_dir(void)
{
        static int state; /* 0: not made, 1: ready, -1: failed */
        if (state == 0) {
                state = -1;
                if (!mkdtemp(dir))
                        return false;
                (void) snprintf(path, sizeof(path), "%s/Fuzz", dir);
                if (mkdir(path, 0700) < 0)
                        return false;
                (void) snprintf(path, sizeof(path), "%s/Fuzz/Zone", dir);
                setenv("TZDIR", dir, 1);
                atexit(remove_dir);
                state = 1;
        }
        return state == 1;
}

static bool write_zone(const uint8_t *data, size_t size)
{
        FILE *f = fopen(path, "wb");
        if (!f)
                return false;
        bool ok = fwrite(data, 1, size, f) == size;
        return fclose(f) == 0 && ok;
}

static void check_cron(const char *expr)
{
        struct ao_cron *c = NULL;
        if (ao_cron_parse(expr, &c, NULL) < 0)
                abort(); /* the same bytes parsed as a zone a moment ago */
        for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
                uint64_t t = starts[i];
                for (int k = 0; k < 2; k++) {
                        uint64_t n = ao_cron_next(c, t);
                        if (n == 0)
                                break;
                        if (n <= t || n % USEC != 0 || ao_cron_next(c, n - 1) != n)
                                abort();
                        t = n;
                }
        }
        ao_cron_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > AO_ZONE_FILE_MAX)
                return 0;
        struct ao_zone *z = NULL;
        struct ao_error err = {0};
        if (ao_zone_parse("Fuzz/Zone", data, size, &z, &err) < 0) {
                if (z || err.code >= 0 || strncmp(err.msg, "time zone 'Fuzz/Zone'", 21) != 0 ||
                    strchr(err.msg, '\n'))
                        abort();
                return 0;
        }
        for (size_t i = 0; i < sizeof(instants) / sizeof(instants[0]); i++) {
                int32_t off = ao_zone_offset(z, instants[i]);
                if (off <= -26 * 3600 || off >= 26 * 3600)
                        abort();
        }
        ao_zone_free(z);

        if (!scratch_dir() || !write_zone(data, size))
                return 0;
        for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++)
                check_cron(exprs[i]);
        return 0;
}
