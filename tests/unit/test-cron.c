/* SPDX-License-Identifier: Apache-2.0 */
/* Cron expressions: parsing, error messages and next fire times, in UTC and in IANA zones. */
#include <errno.h>
#include <stdlib.h>
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

static void check_bad_code(const char *expr, int code, const char *message)
{
        struct ao_cron *c = NULL;
        struct ao_error err = {0};
        tap_is_int(ao_cron_parse(expr, &c, &err), code, "'%s' rejected", expr);
        tap_is_str(err.msg, message, "'%s': message", expr);
        tap_ok(c == NULL, "'%s': nothing returned", expr);
}

static void check_bad(const char *expr, const char *message)
{
        check_bad_code(expr, -EINVAL, message);
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
        check_bad("TZ=UTC", "cron 'TZ=UTC': expected 5 or 6 fields, got 0");
        check_bad("TZ=Europe/Berlin", "cron 'TZ=Europe/Berlin': expected 5 or 6 fields, got 0");
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

/*
 * Schedules in zones, across the changes of 2026 (past, so later tzdata
 * releases cannot move them). The expected instants follow robfig/cron v3's
 * SpecSchedule.Next: fields are compared with the zone's wall clock; hours,
 * minutes and seconds advance by elapsed time (Add), so from 01:00 on the
 * day of a spring change the next hour is 03:00 and 02:xx never shows; in
 * an autumn change the repeated hour is entered twice, a match in it fires
 * on both passes. Months and days advance by the calendar (Date), and a
 * skipped or repeated reading made by Date lands where Go's Date puts it.
 * (These instants are also what the Go library returns for them.)
 */
static void test_zone_berlin(void)
{
        /*
         * 2026-03-29: 02:00 CET (+1) becomes 03:00 CEST (+2) at 01:00 UTC. The hour steps go
         * 00:00, 01:00 CET, then 01:00 + 1h = 03:00 CEST: hour 2 is never seen on the 29th, so
         * 02:30 does not fire that day (nor at 03:30 instead), and fires again on the 30th at
         * 02:30 CEST = 00:30 UTC.
         */
        NEXT("TZ=Europe/Berlin 0 30 2 * * *", "2026-03-28T12:00:00", "2026-03-30T00:30:00Z",
             "2026-03-31T00:30:00Z");
        /* Hourly: 02:00 CET (00:00 UTC), then 03:00 CEST (01:00 UTC): one hour apart, as elapsed. */
        NEXT("TZ=Europe/Berlin 0 0 * * * *", "2026-03-28T23:30:00", "2026-03-29T00:00:00Z",
             "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z");
        /* Every 5 seconds runs on through the change: 01:59:55 CET, 03:00:00 CEST, 03:00:05 CEST. */
        NEXT("TZ=Europe/Berlin */5 * * * * *", "2026-03-29T00:59:50", "2026-03-29T00:59:55Z",
             "2026-03-29T01:00:00Z", "2026-03-29T01:00:05Z");
        /*
         * 2026-10-25: 03:00 CEST (+2) becomes 02:00 CET (+1) at 01:00 UTC, so 02:00-02:59 shows
         * twice: 00:00-00:59 UTC, then 01:00-01:59 UTC. After 02:30 CEST the minute steps reach
         * 02:59 CEST + 1 min = 02:00 CET, hour 2 matches again, and 02:30 CET fires too.
         */
        NEXT("TZ=Europe/Berlin 0 30 2 * * *", "2026-10-24T12:00:00", "2026-10-25T00:30:00Z",
             "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z");
        NEXT("TZ=Europe/Berlin 0 0 * * * *", "2026-10-24T23:30:00", "2026-10-25T00:00:00Z",
             "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z");
        NEXT("TZ=Europe/Berlin */5 * * * * *", "2026-10-25T00:59:50", "2026-10-25T00:59:55Z",
             "2026-10-25T01:00:00Z", "2026-10-25T01:00:05Z");
        /* @daily is midnight in the zone: 23:00 UTC in winter, 22:00 UTC in summer. CRON_TZ= is TZ=. */
        NEXT("CRON_TZ=Europe/Berlin @daily", "2026-03-28T12:00:00", "2026-03-28T23:00:00Z",
             "2026-03-29T22:00:00Z");
        /* Past 2037 the fat file lists no changes; its footer rule gives 2041-03-31 (last Sunday). */
        NEXT("TZ=Europe/Berlin 0 30 2 * * *", "2041-03-30T12:00:00", "2041-04-01T00:30:00Z");
        NEXT("TZ=Europe/Berlin 0 30 2 * * *", "2041-10-26T12:00:00", "2041-10-27T00:30:00Z",
             "2041-10-27T01:30:00Z", "2041-10-28T01:30:00Z");
        /* @every counts elapsed time and ignores the zone, as robfig's ConstantDelaySchedule does. */
        NEXT("TZ=Europe/Berlin @every 1h", "2026-03-29T00:30:00", "2026-03-29T01:30:00Z",
             "2026-03-29T02:30:00Z");
}

static void test_zone_new_york(void)
{
        /* 2026-03-08: 02:00 EST (-5) becomes 03:00 EDT (-4) at 07:00 UTC; 02:30 is skipped that day. */
        NEXT("TZ=America/New_York 0 30 2 * * *", "2026-03-07T12:00:00", "2026-03-09T06:30:00Z",
             "2026-03-10T06:30:00Z");
        /*
         * 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00 UTC; 01:00-01:59 shows twice
         * (05:00-05:59 and 06:00-06:59 UTC): 01:30 fires at 05:30 and at 06:30 UTC.
         */
        NEXT("TZ=America/New_York 0 30 1 * * *", "2026-10-31T12:00:00", "2026-11-01T05:30:00Z",
             "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z");
        NEXT("TZ=America/New_York 0 0 * * * *", "2026-11-01T04:30:00", "2026-11-01T05:00:00Z",
             "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z");
        /*
         * From 01:45 EST (the second pass), hour 1 does not match 3: the reset to 01:00 goes
         * through Go's Date, which puts a repeated reading west of UTC on its first pass (01:00
         * EDT, before the start); the hour steps then go 01:00 EST, 02:00 EST, 03:00 EST.
         */
        NEXT("TZ=America/New_York 0 0 3 * * *", "2026-11-01T06:45:00", "2026-11-01T08:00:00Z",
             "2026-11-02T08:00:00Z");
}

static void test_zone_southern(void)
{
        /* Sydney, 2026-04-05: 03:00 AEDT (+11) becomes 02:00 AEST (+10) at 16:00 UTC on the 4th. */
        NEXT("TZ=Australia/Sydney 0 30 2 * * *", "2026-04-04T00:00:00", "2026-04-04T15:30:00Z",
             "2026-04-04T16:30:00Z", "2026-04-05T16:30:00Z");
        /* Sydney, 2026-10-04: 02:00 AEST becomes 03:00 AEDT at 16:00 UTC on the 3rd: no 02:30 on the 4th. */
        NEXT("TZ=Australia/Sydney 0 30 2 * * *", "2026-10-03T00:00:00", "2026-10-04T15:30:00Z",
             "2026-10-05T15:30:00Z");
        /*
         * Lord Howe moves by 30 minutes. 2026-10-04: 02:00 (+10:30) becomes 02:30 (+11) at 15:30
         * UTC on the 3rd. From 01:00 (14:30 UTC) one hour on is 02:30: hour 2 matches but 02:15
         * has gone by, so 02:15 does not fire on the 4th; 02:45 does.
         */
        NEXT("TZ=Australia/Lord_Howe 0 15 2 * * *", "2026-10-03T00:00:00", "2026-10-04T15:15:00Z",
             "2026-10-05T15:15:00Z");
        NEXT("TZ=Australia/Lord_Howe 0 45 2 * * *", "2026-10-03T00:00:00", "2026-10-03T15:45:00Z",
             "2026-10-04T15:45:00Z");
        /* Hourly: 01:00 (14:30 UTC), 03:00 (16:00 UTC): 02:30 is the first reading of hour 2, not :00. */
        NEXT("TZ=Australia/Lord_Howe 0 0 * * * *", "2026-10-03T14:00:00", "2026-10-03T14:30:00Z",
             "2026-10-03T16:00:00Z", "2026-10-03T17:00:00Z");
        /*
         * 2026-04-05: 02:00 (+11) becomes 01:30 (+10:30) at 15:00 UTC on the 4th; 01:30-01:59
         * shows twice. 01:45 fires at 14:45 and 15:15 UTC; hourly goes 01:00 (14:00 UTC), then
         * 02:00 (15:30 UTC), an hour and a half later.
         */
        NEXT("TZ=Australia/Lord_Howe 0 45 1 * * *", "2026-04-04T00:00:00", "2026-04-04T14:45:00Z",
             "2026-04-04T15:15:00Z", "2026-04-05T15:15:00Z");
        NEXT("TZ=Australia/Lord_Howe 0 0 * * * *", "2026-04-04T13:30:00", "2026-04-04T14:00:00Z",
             "2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z");
}

static void test_zone_odd_changes(void)
{
        /*
         * São Paulo, 2018-11-04: midnight (-3) became 01:00 (-2). Searching for the 10th at
         * 09:00: the day steps would land on 23:00 of the day before the change and stay an hour
         * off; robfig moves them back to midnight, so 09:00 -02 = 11:00 UTC.
         */
        NEXT("TZ=America/Sao_Paulo 0 0 9 10 * ?", "2018-10-17T09:00:00", "2018-11-10T11:00:00Z");
        /*
         * St. John's, 2006-10-29: 00:01 NDT (-2:30) became 23:01 NST (-3:30) the evening before,
         * so midnight showed twice. From 23:49 NST robfig's search goes back to the first
         * midnight (02:30 UTC, before the start); here the second one fires, 00:00 NST.
         */
        NEXT("TZ=America/St_Johns 0 0 0 * * *", "2006-10-29T03:19:38", "2006-10-29T03:30:00Z",
             "2006-10-30T03:30:00Z");
        /* Apia skipped 2011-12-30 (-10 to +14): robfig's day steps stand still there, forever. */
        NEXT("TZ=Pacific/Apia 0 0 0 * * *", "2011-12-29T10:00:00", "2011-12-30T10:00:00Z",
             "2011-12-31T10:00:00Z");
        /*
         * Lord Howe, 2026-10-04, 01:50 (+10:30): the minute steps go 01:59, then 02:30 (+11), the
         * hour changes without minute 0 and robfig's search is never told: it returns 02:45 for
         * a job at 01:45. Here a reading that does not match is never a fire time: the next
         * 01:45 is the next day's, 14:45 UTC.
         */
        NEXT("TZ=Australia/Lord_Howe 0 45 1 * * *", "2026-10-03T15:20:00", "2026-10-04T14:45:00Z");
        /* Half-hour zones: hour resets are wall-clock hours (robfig v3; v2 truncated the instant). */
        NEXT("TZ=Asia/Kolkata 0 0 10 * * *", "2026-01-01T02:30:00", "2026-01-01T04:30:00Z",
             "2026-01-02T04:30:00Z");
}

static void test_zone_prefixes(void)
{
        /* "", "UTC", "Etc/UTC" and "Local" (the operator's own zone) are all UTC, with no file. */
        NEXT("TZ= 0 6 * * *", "2026-01-01T00:00:00", "2026-01-01T06:00:00Z");
        NEXT("TZ=Local 0 6 * * *", "2026-01-01T00:00:00", "2026-01-01T06:00:00Z");
        NEXT("CRON_TZ=UTC\t0 6 * * *", "2026-01-01T00:00:00", "2026-01-01T06:00:00Z");

        struct ao_cron *c = NULL;
        if (ao_cron_parse("TZ=Australia/Lord_Howe 0 0 * * *", &c, NULL) < 0)
                tap_bail("Lord Howe does not parse");
        tap_is_str(ao_cron_zone(c), "Australia/Lord_Howe", "the schedule's zone");
        tap_is_int(ao_cron_utc_offset(c, at("2026-07-01T00:00:00")), 37800, "its offset in July (+10:30)");
        tap_is_int(ao_cron_utc_offset(c, at("2026-12-01T00:00:00")), 39600, "its offset in December (+11)");
        ao_cron_free(c);
        if (ao_cron_parse("0 0 * * *", &c, NULL) < 0)
                tap_bail("0 0 * * * does not parse");
        tap_is_str(ao_cron_zone(c), "UTC", "no prefix: UTC");
        tap_is_int(ao_cron_utc_offset(c, at("2026-07-01T00:00:00")), 0, "no prefix: offset 0");
        ao_cron_free(c);

        /* A slim file (every change after 1996 from its footer) gives the same instants. */
        setenv("TZDIR", getenv("AO_ZONEINFO_SLIM") ? getenv("AO_ZONEINFO_SLIM") : "", 1);
        NEXT("TZ=Europe/Berlin 0 30 2 * * *", "2026-10-24T12:00:00", "2026-10-25T00:30:00Z",
             "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z");
        unsetenv("TZDIR");
}

static void test_zone_errors(void)
{
        check_bad("TZ=../../etc/passwd * * * * *",
                  "cron 'TZ=../../etc/passwd * * * * *': time zone '../../etc/passwd' is not a zone name "
                  "(zones are named like Europe/Berlin)");
        check_bad("CRON_TZ=/etc/localtime * * * * *",
                  "cron 'CRON_TZ=/etc/localtime * * * * *': time zone '/etc/localtime' is not a zone name "
                  "(zones are named like Europe/Berlin)");
        check_bad_code(
            "TZ=Mars/Olympus_Mons 0 6 * * *", -ENOENT,
            "cron 'TZ=Mars/Olympus_Mons 0 6 * * *': time zone 'Mars/Olympus_Mons': no such zone in "
            "/usr/share/zoneinfo");
        check_bad(
            "TZ=Europe 0 6 * * *",
            "cron 'TZ=Europe 0 6 * * *': time zone 'Europe': /usr/share/zoneinfo/Europe is not a zone file");
        check_bad("TZ=zone1970.tab 0 6 * * *",
                  "cron 'TZ=zone1970.tab 0 6 * * *': time zone 'zone1970.tab': not "
                  "a TZif file");
        /* A valid zone does not excuse the fields. */
        check_bad("TZ=Europe/Berlin 61 * * * *",
                  "cron 'TZ=Europe/Berlin 61 * * * *': minute: value 61 out of "
                  "range 0-59");
}

/*
 * Outside the few odd changes above, robfig's semantics are: every second
 * whose wall-clock reading matches fires (a skipped reading never, a repeated
 * one twice). So a minute-by-minute scan with glibc's localtime_r() in the
 * zone (this test is single-threaded: switching TZ is harmless here) must
 * give the same fire times, around every change of 2026.
 */
static void check_zone_scan(const char *zone, const char *expr, bool (*match)(const struct tm *))
{
        char tz[64];
        snprintf(tz, sizeof(tz), ":%s", zone);
        setenv("TZ", tz, 1);
        tzset();
        char full[128];
        snprintf(full, sizeof(full), "TZ=%s %s", zone, expr);
        struct ao_cron *c = NULL;
        if (ao_cron_parse(full, &c, NULL) < 0)
                tap_bail("zone scan expression does not parse");
        static const char *const windows[][2] = {{"2026-03-01T00:00:00", "2026-04-10T00:00:00"},
                                                 {"2026-09-28T00:00:00", "2026-11-05T00:00:00"}};
        unsigned fires = 0, mismatches = 0;
        for (size_t w = 0; w < 2; w++) {
                uint64_t start = at(windows[w][0]), end = at(windows[w][1]), t = start;
                for (time_t m = (time_t) (start / USEC) + 60; m < (time_t) (end / USEC); m += 60) {
                        struct tm tm;
                        if (!match(localtime_r(&m, &tm)))
                                continue;
                        uint64_t n = ao_cron_next(c, t);
                        if (n != (uint64_t) m * USEC && mismatches++ == 0)
                                tap_diag("%s: after %llu want %lld got %llu", full,
                                         (unsigned long long) t / USEC, (long long) m,
                                         (unsigned long long) n / USEC);
                        t = (uint64_t) m * USEC;
                        fires++;
                }
        }
        tap_ok(mismatches == 0 && fires > 0, "'%s': %u fires around 2026's changes match a scan of %s", full,
               fires, zone);
        ao_cron_free(c);
        unsetenv("TZ");
        tzset();
}

static bool match_night_quarters(const struct tm *tm)
{
        return tm->tm_min % 15 == 0 && tm->tm_hour >= 1 && tm->tm_hour <= 3;
}

static bool match_two_thirty(const struct tm *tm)
{
        return tm->tm_min == 30 && tm->tm_hour == 2;
}

static void test_zone_scans(void)
{
        static const char *const zones[] = {"Europe/Berlin", "America/New_York", "Australia/Sydney",
                                            "Australia/Lord_Howe"};
        for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
                check_zone_scan(zones[i], "*/15 1-3 * * *", match_night_quarters);
                check_zone_scan(zones[i], "30 2 * * *", match_two_thirty);
        }
}

int main(void)
{
        unsetenv("TZDIR");
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
        test_zone_berlin();
        test_zone_new_york();
        test_zone_southern();
        test_zone_odd_changes();
        test_zone_prefixes();
        test_zone_errors();
        test_zone_scans();
        return tap_done();
}
