/* SPDX-License-Identifier: Apache-2.0 */
/* Cron expressions: parsing, error messages and next fire times in UTC. */
#include <errno.h>
#include <time.h>

#include "../tap.h"
#include "ao/cron.h"

#define USEC 1000000ULL

/* "2026-01-01T00:00:00Z", optionally with ".ffffff" before the Z, to UTC µs. */
static uint64_t at(const char *s)
{
        struct tm tm = {0};
        unsigned usec = 0;
        const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!rest || (*rest == '.' && sscanf(rest, ".%6u", &usec) != 1))
                tap_bail("bad time literal in test");
        return (uint64_t) timegm(&tm) * USEC + usec;
}

static void format_time(uint64_t usec, char *buf, size_t size)
{
        if (usec == 0) {
                snprintf(buf, size, "never");
                return;
        }
        time_t t = (time_t) (usec / USEC);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The fire times after @from, chained, must be exactly @want (NULL-terminated; "never" for 0). */
static void check_next(const char *expr, const char *from, const char *const *want)
{
        struct ao_cron *c = NULL;
        struct ao_error err = {0};
        if (!tap_ok(ao_cron_parse(expr, &c, &err) == 0, "'%s' parses", expr)) {
                tap_diag("%s", err.msg);
                return;
        }
        uint64_t t = at(from);
        for (size_t i = 0; want[i]; i++) {
                t = ao_cron_next(c, t);
                char got[64];
                format_time(t, got, sizeof(got));
                tap_is_str(got, want[i], "'%s' after %s: fire #%zu", expr, from, i + 1);
                if (t == 0)
                        break;
        }
        ao_cron_free(c);
}

#define NEXT(expr, from, ...) check_next(expr, from, (const char *const[]){__VA_ARGS__, NULL})

static void check_bad(const char *expr, const char *message)
{
        struct ao_cron *c = NULL;
        struct ao_error err = {0};
        tap_is_int(ao_cron_parse(expr, &c, &err), -EINVAL, "'%s' rejected", expr);
        tap_is_str(err.msg, message, "'%s': message", expr);
        tap_ok(c == NULL, "'%s': nothing returned", expr);
}

static void test_basic(void)
{
        NEXT("* * * * *", "2026-01-01T00:00:00", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z");
        NEXT("*/15 * * * *", "2026-01-01T00:07:30", "2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z",
             "2026-01-01T00:45:00Z", "2026-01-01T01:00:00Z");
        /* Strictly after: a fire time is never returned for itself. */
        NEXT("0 0 * * *", "2026-01-01T00:00:00", "2026-01-02T00:00:00Z");
        NEXT("0 0 * * *", "2025-12-31T23:59:59.500000", "2026-01-01T00:00:00Z");
        NEXT("0 0 1 1 *", "2026-12-31T23:59:59.999999", "2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z");
        NEXT("59 23 31 12 *", "2026-12-31T23:59:00", "2027-12-31T23:59:00Z");
        NEXT("  0\t0  1 1 *  ", "2026-06-01T00:00:00", "2027-01-01T00:00:00Z");
        /* robfig's zone prefixes, where they name the zone the operator uses anyway. */
        NEXT("TZ=UTC 0 6 * * *", "2026-01-01T00:00:00", "2026-01-01T06:00:00Z");
        NEXT("CRON_TZ=Etc/UTC @daily", "2026-01-01T00:00:00", "2026-01-02T00:00:00Z");
}

static void test_steps_ranges_lists(void)
{
        NEXT("0 8-18/5 * * *", "2026-01-01T00:00:00", "2026-01-01T08:00:00Z", "2026-01-01T13:00:00Z",
             "2026-01-01T18:00:00Z", "2026-01-02T08:00:00Z");
        /* "a/n" runs from a to the field's maximum. */
        NEXT("5/20 * * * *", "2026-01-01T00:00:00", "2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z",
             "2026-01-01T00:45:00Z", "2026-01-01T01:05:00Z");
        NEXT("0,30 1,2-4/2 * * *", "2026-01-01T00:00:00", "2026-01-01T01:00:00Z", "2026-01-01T01:30:00Z",
             "2026-01-01T02:00:00Z", "2026-01-01T02:30:00Z", "2026-01-01T04:00:00Z", "2026-01-01T04:30:00Z",
             "2026-01-02T01:00:00Z");
        NEXT("0 0 1 */5 *", "2026-01-01T00:00:00", "2026-06-01T00:00:00Z", "2026-11-01T00:00:00Z",
             "2027-01-01T00:00:00Z");
        NEXT("*/100 * * * *", "2026-01-01T00:00:00", "2026-01-01T01:00:00Z");
}

static void test_seconds(void)
{
        NEXT("*/20 * * * * *", "2026-01-01T00:00:00", "2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z",
             "2026-01-01T00:01:00Z");
        NEXT("30 0 12 * * *", "2026-01-01T00:00:00", "2026-01-01T12:00:30Z", "2026-01-02T12:00:30Z");
        NEXT("59 59 23 31 12 *", "2026-06-01T00:00:00", "2026-12-31T23:59:59Z", "2027-12-31T23:59:59Z");
        NEXT("? * * * * *", "2026-01-01T00:00:00.250000", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z");
}

static void test_month_ends_and_leap_years(void)
{
        NEXT("0 0 31 * *", "2026-01-31T00:00:00", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z",
             "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z");
        NEXT("0 0 29 2 *", "2025-01-01T00:00:00", "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z");
        NEXT("0 0 29 2 *", "2024-02-29T00:00:00", "2028-02-29T00:00:00Z");
        /* 2100 is not a leap year; 2104 is the last year the five-year search looks at. */
        NEXT("0 0 29 2 *", "2099-03-01T00:00:00", "2104-02-29T00:00:00Z");
        NEXT("0 0 29 2 *", "2097-03-01T00:00:00", "never");
        NEXT("0 12 28-31 2 *", "2024-02-27T00:00:00", "2024-02-28T12:00:00Z", "2024-02-29T12:00:00Z",
             "2025-02-28T12:00:00Z", "2026-02-28T12:00:00Z");
        NEXT("0 0 * * *", "2024-12-31T00:00:00", "2025-01-01T00:00:00Z");
        NEXT("0 0 30 2 *", "2026-01-01T00:00:00", "never");
        NEXT("0 0 31 4,6,9,11 *", "2026-01-01T00:00:00", "never");
}

static void test_day_rule(void)
{
        /* Both restricted: the 13th OR a Friday. */
        NEXT("0 0 13 * FRI", "2026-01-01T00:00:00", "2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z",
             "2026-01-13T00:00:00Z", "2026-01-16T00:00:00Z", "2026-01-23T00:00:00Z");
        /* One of them '*' or '?': only the other counts. */
        NEXT("0 0 * * FRI", "2026-01-01T00:00:00", "2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z",
             "2026-01-16T00:00:00Z");
        NEXT("0 0 13 * *", "2026-01-01T00:00:00", "2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z");
        NEXT("0 0 13 * ?", "2026-01-01T00:00:00", "2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z");
        NEXT("0 0 ? * 5", "2026-01-01T00:00:00", "2026-01-02T00:00:00Z");
        /* "*" with a step above 1 is a restriction (robfig/cron v3), so the OR rule applies. */
        NEXT("0 0 */2 * MON", "2026-01-01T00:00:00", "2026-01-03T00:00:00Z", "2026-01-05T00:00:00Z",
             "2026-01-07T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-12T00:00:00Z",
             "2026-01-13T00:00:00Z");
}

static void test_names(void)
{
        NEXT("0 9 * JAN-MAR MON-FRI", "2026-03-30T10:00:00", "2026-03-31T09:00:00Z", "2027-01-01T09:00:00Z");
        NEXT("0 0 1 jan,Jul *", "2026-01-01T00:00:00", "2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z");
        NEXT("0 0 * * sat,Sun", "2026-01-01T00:00:00", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z",
             "2026-01-10T00:00:00Z");
        /* 7 is Sunday too, alone and at the end of a range. */
        NEXT("0 0 * * 7", "2026-01-01T00:00:00", "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z");
        NEXT("0 0 * * 5-7", "2026-01-01T00:00:00", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z",
             "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z");
}

static void test_descriptors(void)
{
        NEXT("@yearly", "2026-01-01T00:00:00", "2027-01-01T00:00:00Z");
        NEXT("@annually", "2026-05-01T00:00:00", "2027-01-01T00:00:00Z");
        NEXT("@monthly", "2026-01-01T00:00:00", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z");
        NEXT("@weekly", "2026-01-01T00:00:00", "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z");
        NEXT("@daily", "2026-01-01T00:00:00", "2026-01-02T00:00:00Z");
        NEXT("@midnight", "2026-01-01T12:00:00", "2026-01-02T00:00:00Z");
        NEXT(" @hourly ", "2026-01-01T00:30:00", "2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z");
}

static void test_every(void)
{
        /* The start is truncated to the second, then the duration is added (robfig ConstantDelaySchedule). */
        NEXT("@every 1m30s", "2026-01-01T00:00:00.500000", "2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z");
        NEXT("@every 10s", "2026-01-01T00:00:05", "2026-01-01T00:00:15Z", "2026-01-01T00:00:25Z");
        NEXT("@every 2h", "2026-01-01T23:00:00", "2026-01-02T01:00:00Z");
        /* Below one second rounds up to one; fractions of a second are dropped. */
        NEXT("@every 500ms", "2026-01-01T00:00:00", "2026-01-01T00:00:01Z");
        NEXT("@every 1.9s", "2026-01-01T00:00:00", "2026-01-01T00:00:01Z");
        NEXT("@every 0.5h", "2026-01-01T00:00:00", "2026-01-01T00:30:00Z");
        NEXT("@every   1h0m0s  ", "2026-01-01T00:00:00", "2026-01-01T01:00:00Z");
        NEXT("@every 90000000us", "2026-01-01T00:00:00", "2026-01-01T00:01:30Z");
}

static void test_errors(void)
{
        check_bad("* * *", "cron '* * *': expected 5 or 6 fields, got 3");
        check_bad("", "cron '': expected 5 or 6 fields, got 0");
        check_bad("* * * * * * *", "cron '* * * * * * *': expected 5 or 6 fields, got 7");
        check_bad("61 * * * *", "cron '61 * * * *': minute: value 61 out of range 0-59");
        check_bad("60 * * * * *", "cron '60 * * * * *': second: value 60 out of range 0-59");
        check_bad("* 24 * * *", "cron '* 24 * * *': hour: value 24 out of range 0-23");
        check_bad("* * 0 * *", "cron '* * 0 * *': day of month: value 0 out of range 1-31");
        check_bad("* * 32 * *", "cron '* * 32 * *': day of month: value 32 out of range 1-31");
        check_bad("* * * 13 *", "cron '* * * 13 *': month: value 13 out of range 1-12");
        check_bad("* * * * 8", "cron '* * * * 8': day of week: value 8 out of range 0-7");
        check_bad("99999999999 * * * *",
                  "cron '99999999999 * * * *': minute: value 99999999999 out of range 0-59");
        check_bad("*/0 * * * *", "cron '*/0 * * * *': minute: step must be at least 1");
        check_bad("*/x * * * *", "cron '*/x * * * *': minute: invalid step 'x'");
        check_bad("* */ * * *", "cron '* */ * * *': hour: invalid step ''");
        check_bad("1-5/2/3 * * * *", "cron '1-5/2/3 * * * *': minute: invalid step '2/3'");
        check_bad("5-3 * * * *", "cron '5-3 * * * *': minute: range start 5 is after end 3");
        check_bad("* * * * FRI-MON", "cron '* * * * FRI-MON': day of week: range start 5 is after end 1");
        check_bad("1,,2 * * * *", "cron '1,,2 * * * *': minute: empty list element");
        check_bad("1, * * * *", "cron '1, * * * *': minute: empty list element");
        check_bad("x * * * *", "cron 'x * * * *': minute: invalid value 'x'");
        check_bad("-1 * * * *", "cron '-1 * * * *': minute: invalid value ''");
        check_bad("* * * FOO *", "cron '* * * FOO *': month: invalid value 'FOO'");
        check_bad("* * * * MON-", "cron '* * * * MON-': day of week: invalid value ''");
        check_bad("* * MON * *", "cron '* * MON * *': day of month: invalid value 'MON'");
        check_bad("* * * * MONDAY", "cron '* * * * MONDAY': day of week: invalid value 'MONDAY'");
        check_bad("TZ=Europe/Berlin 0 6 * * *", "cron 'TZ=Europe/Berlin 0 6 * * *': time zone "
                                                "'Europe/Berlin' is not supported (schedules run in UTC)");
        check_bad("TZ=UTC", "cron 'TZ=UTC': expected 5 or 6 fields, got 0");
        check_bad("@hourly x", "cron '@hourly x': unexpected text after '@hourly'");
        check_bad("@foo",
                  "cron '@foo': unknown descriptor '@foo' (want @yearly, @annually, @monthly, @weekly, "
                  "@daily, @midnight, @hourly or @every <duration>)");
        check_bad("@every", "cron '@every': @every: missing duration");
        check_bad("@every 0s", "cron '@every 0s': @every: duration '0s' must be positive");
        check_bad("@every 0", "cron '@every 0': @every: duration '0' must be positive");
        check_bad("@every -5s", "cron '@every -5s': @every: duration '-5s' must be positive");
        check_bad("@every 5", "cron '@every 5': @every: invalid duration '5' (want e.g. 30s, 1m30s, 2h)");
        check_bad("@every 1x", "cron '@every 1x': @every: invalid duration '1x' (want e.g. 30s, 1m30s, 2h)");
        check_bad("@every 1 m",
                  "cron '@every 1 m': @every: invalid duration '1 m' (want e.g. 30s, 1m30s, 2h)");
        check_bad("@every 9999999999h",
                  "cron '@every 9999999999h': @every: duration '9999999999h' is too long");

        char long_expr[1100];
        memset(long_expr, ' ', sizeof(long_expr) - 1);
        long_expr[sizeof(long_expr) - 1] = '\0';
        check_bad(long_expr, "cron expression is longer than 1024 bytes");
}

/* Independent predicates for a brute-force minute scan to compare against. */
static bool match_weekday_mornings(const struct tm *tm)
{
        return tm->tm_min % 7 == 0 && tm->tm_hour >= 3 && tm->tm_hour <= 5 && tm->tm_wday >= 1 &&
               tm->tm_wday <= 5;
}

static bool match_first_or_sunday(const struct tm *tm)
{
        return tm->tm_min == 30 && tm->tm_hour == 23 && (tm->tm_mday == 1 || tm->tm_wday == 0);
}

static bool match_quarter_ends(const struct tm *tm)
{
        return tm->tm_min == 0 && tm->tm_hour == 0 && tm->tm_mday >= 28 &&
               (tm->tm_mon == 1 || tm->tm_mon == 2 || tm->tm_mon == 11);
}

static void check_brute_force(const char *expr, bool (*match)(const struct tm *), const char *from, int days)
{
        struct ao_cron *c = NULL;
        if (ao_cron_parse(expr, &c, NULL) < 0)
                tap_bail("brute-force expression does not parse");
        uint64_t start = at(from), t = start, expect = start;
        unsigned fires = 0, mismatches = 0;
        for (;;) {
                /* The next matching minute after expect, the slow way. */
                time_t m = (time_t) (expect / USEC / 60 + 1) * 60;
                struct tm tm;
                while (m < (time_t) (start / USEC) + days * 86400 && !match(gmtime_r(&m, &tm)))
                        m += 60;
                if (m >= (time_t) (start / USEC) + days * 86400)
                        break;
                t = ao_cron_next(c, t);
                if (t != (uint64_t) m * USEC)
                        mismatches++;
                expect = t = (uint64_t) m * USEC;
                fires++;
        }
        tap_ok(mismatches == 0 && fires > 0, "'%s': %u fires over %d days match a minute-by-minute scan",
               expr, fires, days);
        ao_cron_free(c);
}

static void test_brute_force(void)
{
        check_brute_force("*/7 3-5 * * MON-FRI", match_weekday_mornings, "2026-01-01T00:00:00", 60);
        check_brute_force("30 23 1 * 0", match_first_or_sunday, "2027-11-01T00:00:00", 400);
        check_brute_force("0 0 28-31 2,3,12 *", match_quarter_ends, "2023-01-01T00:00:00", 3 * 366);
}

/* next(next - 1µs) == next for any cron schedule: each result is a fire time itself. */
static void test_invariants(void)
{
        static const char *const exprs[] = {"0 0 13 * FRI", "*/20 * * * * *", "0 0 29 2 *", "@weekly",
                                            "5/20 1-3 * JAN,JUL 1-5"};
        for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
                struct ao_cron *c = NULL;
                if (ao_cron_parse(exprs[i], &c, NULL) < 0)
                        tap_bail("invariant expression does not parse");
                bool ok = true;
                uint64_t t = at("2023-06-15T11:22:33.444444");
                for (int k = 0; k < 200 && ok; k++) {
                        uint64_t n = ao_cron_next(c, t);
                        if (n == 0)
                                break; /* "0 0 29 2 *" reaches 2097, whose next leap day is 7 years on */
                        ok = n > t && ao_cron_next(c, n - 1) == n;
                        t = n + (uint64_t) k * 7919 * USEC;
                }
                tap_ok(ok, "'%s': results are fire times, strictly increasing", exprs[i]);
                ao_cron_free(c);
        }
        tap_ok(ao_cron_free(NULL) == NULL, "ao_cron_free(NULL)");
}

int main(void)
{
        test_basic();
        test_steps_ranges_lists();
        test_seconds();
        test_month_ends_and_leap_years();
        test_day_rule();
        test_names();
        test_descriptors();
        test_every();
        test_errors();
        test_brute_force();
        test_invariants();
        return tap_done();
}
