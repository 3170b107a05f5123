/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tool cron 'EXPR' [--from RFC3339] [--count N]: the next N fire times of a
 * schedule binding's crontab, so users can check an expression before a
 * hook ships with it: in UTC ("Z"), or for a `TZ=<zone>` expression as the
 * zone's wall clock with its offset then, which shows a daylight saving
 * change as the jump or the repeat it is.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "ao/cron.h"
#include "ao/macro.h"
#include "internal.h"

#define COUNT_DEFAULT 5
#define COUNT_MAX     1000

static bool take_digits(const char **p, int n, int *ret)
{
        int v = 0;
        for (int i = 0; i < n; i++) {
                char c = (*p)[i];
                if (c < '0' || c > '9')
                        return false;
                v = v * 10 + (c - '0');
        }
        *p += n;
        *ret = v;
        return true;
}

static bool take_char(const char **p, const char *accept)
{
        if (**p == '\0' || !strchr(accept, **p))
                return false;
        (*p)++;
        return true;
}

/* Optional ".ddd" fraction of a second; digits past microseconds are dropped. */
static uint64_t take_fraction(const char **p)
{
        uint64_t usec = 0, scale = AO_USEC_PER_SEC;
        if (**p != '.')
                return 0;
        (*p)++;
        while (**p >= '0' && **p <= '9') {
                if (scale > 1) {
                        scale /= 10;
                        usec += (uint64_t) (**p - '0') * scale;
                }
                (*p)++;
        }
        return usec;
}

/* "Z" or "±hh:mm", as seconds east of UTC. */
static bool take_offset(const char **p, long *ret)
{
        if (take_char(p, "Zz")) {
                *ret = 0;
                return true;
        }
        char sign = **p;
        int oh, om;
        if (!take_char(p, "+-") || !take_digits(p, 2, &oh) || !take_char(p, ":") || !take_digits(p, 2, &om) ||
            oh > 23 || om > 59)
                return false;
        *ret = (sign == '-' ? -1 : 1) * (oh * 3600L + om * 60L);
        return true;
}

/* RFC 3339 date-time ("2026-01-01T00:00:00Z", "2026-01-01T03:00:00.5+03:00") to UTC µs since the epoch. */
static int parse_rfc3339(const char *s, uint64_t *ret_usec)
{
        struct tm tm = {0};
        int y, mo, d, h, mi, sec;
        const char *p = s;
        if (!take_digits(&p, 4, &y) || !take_char(&p, "-") || !take_digits(&p, 2, &mo) ||
            !take_char(&p, "-") || !take_digits(&p, 2, &d) || !take_char(&p, "Tt ") ||
            !take_digits(&p, 2, &h) || !take_char(&p, ":") || !take_digits(&p, 2, &mi) ||
            !take_char(&p, ":") || !take_digits(&p, 2, &sec))
                return -EINVAL;
        uint64_t frac = take_fraction(&p);
        long offset;
        if (!take_offset(&p, &offset) || *p != '\0')
                return -EINVAL;
        if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59)
                return -EINVAL;
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
        time_t t = timegm(&tm);
        /* timegm() normalises 2025-02-30 to March 2nd; such a date is a typo, not a time. */
        if (tm.tm_mday != d || tm.tm_mon != mo - 1)
                return -EINVAL;
        int64_t utc = (int64_t) t - offset;
        if (utc < 0)
                return -ERANGE;
        *ret_usec = (uint64_t) utc * AO_USEC_PER_SEC + frac;
        return 0;
}

static int parse_count(const char *s, unsigned *ret)
{
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < 1 || v > COUNT_MAX)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

static uint64_t now_usec(void)
{
        struct timespec ts;
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * AO_USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* RFC 3339 in the expression's zone: "2026-03-29T03:00:00+02:00", or "...Z" for UTC. */
static int format_time(const struct ao_cron *c, uint64_t usec, char *buf, size_t size)
{
        bool utc = strcmp(ao_cron_zone(c), "UTC") == 0;
        int32_t offset = ao_cron_utc_offset(c, usec);
        time_t local = (time_t) (usec / AO_USEC_PER_SEC) + offset;
        struct tm tm;
        size_t n;
        if (!gmtime_r(&local, &tm) || (n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
                return -EINVAL;
        if (utc)
                return snprintf(buf + n, size - n, "Z") < (int) (size - n) ? 0 : -EINVAL;
        uint32_t a = (uint32_t) (offset < 0 ? -offset : offset);
        int k = a % 60 == 0 ? snprintf(buf + n, size - n, "%c%02u:%02u", offset < 0 ? '-' : '+', a / 3600,
                                       a / 60 % 60)
                            : snprintf(buf + n, size - n, "%c%02u:%02u:%02u", offset < 0 ? '-' : '+',
                                       a / 3600, a / 60 % 60, a % 60);
        return k > 0 && (size_t) k < size - n ? 0 : -EINVAL;
}

static int print_times(const struct ao_cron *c, uint64_t from, unsigned count)
{
        uint64_t t = from;
        for (unsigned i = 0; i < count; i++) {
                t = ao_cron_next(c, t);
                if (t == 0) {
                        fprintf(stderr, "addon-operator tool cron: no further fire time within 5 years\n");
                        break;
                }
                char buf[64];
                if (format_time(c, t, buf, sizeof(buf)) < 0)
                        break;
                printf("%s\n", buf);
        }
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

int tool_cron(int argc, char *const *args)
{
        const char *expr = NULL, *from_arg = NULL, *count_arg = NULL;
        for (int i = 0; i < argc; i++) {
                if (strcmp(args[i], "--from") == 0 && i + 1 < argc)
                        from_arg = args[++i];
                else if (strcmp(args[i], "--count") == 0 && i + 1 < argc)
                        count_arg = args[++i];
                else if (!expr && strncmp(args[i], "--", 2) != 0)
                        expr = args[i];
                else
                        return tool_usage("cron");
        }
        if (!expr)
                return tool_usage("cron");

        uint64_t from = 0;
        unsigned count = COUNT_DEFAULT;
        if (from_arg && parse_rfc3339(from_arg, &from) < 0) {
                fprintf(stderr,
                        "addon-operator tool cron: --from '%s' is not an RFC 3339 time after 1970 "
                        "(e.g. 2026-01-01T00:00:00Z)\n",
                        from_arg);
                return tool_usage("cron");
        }
        if (count_arg && parse_count(count_arg, &count) < 0) {
                fprintf(stderr, "addon-operator tool cron: --count '%s' is not a number from 1 to %d\n",
                        count_arg, COUNT_MAX);
                return tool_usage("cron");
        }
        if (!from_arg)
                from = now_usec();

        struct ao_cron *c = NULL;
        struct ao_error err = {0};
        if (ao_cron_parse(expr, &c, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        int code = print_times(c, from, count);
        ao_cron_free(c);
        return code;
}
