/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The POSIX TZ string that ends a TZif file (RFC 8536 section 3.3), e.g.
 * "CET-1CEST,M3.5.0,M10.5.0/3": the zone's rule after its last listed
 * transition. tzdata's "slim" files list no transition after the last
 * change of rules, so this rule decides every current offset there; its
 * "fat" files list them until 2037.
 *
 * The grammar accepted and the evaluation are Go's (time.tzset), so that a
 * zone gives the offsets the Go operator's schedules see: the tzcode
 * extensions (hours up to 167 in rule times, `;` before the rules, the
 * default rule M3.2.0,M11.1.0 when a DST zone names none), and the year of
 * a rule is the UTC year of the instant looked up. One limit is POSIX's
 * rather than Go's: an offset is at most 24:59:59, which keeps every
 * offset, like those of the file's types, under 26 hours.
 */
#include <errno.h>
#include <stddef.h>

#include "internal.h"

#define SEC_PER_HOUR     3600
#define OFFSET_HOURS_MAX 24       /* POSIX's limit for an offset (Go takes up to 168) */
#define TIME_HOURS_MAX   (24 * 7) /* tzcode's limit for a rule's time, beyond POSIX's 24 */

struct cursor {
        const char *p, *end;
};

static bool at_end(const struct cursor *c)
{
        return c->p == c->end;
}

static bool peek(const struct cursor *c, char ch)
{
        return c->p < c->end && *c->p == ch;
}

static bool take(struct cursor *c, char ch)
{
        if (!peek(c, ch))
                return false;
        c->p++;
        return true;
}

static bool is_digit(char ch)
{
        return ch >= '0' && ch <= '9';
}

/* Decimal digits with a value in [@min, @max]. */
static bool take_number(struct cursor *c, unsigned min, unsigned max, unsigned *ret)
{
        unsigned v = 0;
        const char *start = c->p;
        while (c->p < c->end && is_digit(*c->p)) {
                v = v * 10 + (unsigned) (*c->p++ - '0');
                if (v > max)
                        return false;
        }
        if (c->p == start || v < min)
                return false;
        *ret = v;
        return true;
}

/* A zone abbreviation: "<...>", or at least three characters up to a digit, ',', '-' or '+'. */
static bool take_name(struct cursor *c)
{
        if (take(c, '<')) {
                while (c->p < c->end && *c->p != '>')
                        c->p++;
                return take(c, '>');
        }
        const char *start = c->p;
        while (c->p < c->end && !is_digit(*c->p) && *c->p != ',' && *c->p != '-' && *c->p != '+')
                c->p++;
        return c->p - start >= 3;
}

/* [+-]hh[:mm[:ss]] in seconds, hh up to @hours_max; the sign is the string's, not yet flipped. */
static bool take_hms(struct cursor *c, unsigned hours_max, int32_t *ret)
{
        bool negative = take(c, '-');
        if (!negative)
                (void) take(c, '+');
        unsigned h, m = 0, s = 0;
        if (!take_number(c, 0, hours_max, &h))
                return false;
        if (take(c, ':')) {
                if (!take_number(c, 0, 59, &m))
                        return false;
                if (take(c, ':') && !take_number(c, 0, 59, &s))
                        return false;
        }
        int32_t v = (int32_t) (h * SEC_PER_HOUR + m * 60 + s);
        *ret = negative ? -v : v;
        return true;
}

static bool take_rule(struct cursor *c, struct posix_tz_rule *r)
{
        if (take(c, 'J')) {
                r->kind = POSIX_TZ_JULIAN;
                if (!take_number(c, 1, 365, &r->day))
                        return false;
        } else if (take(c, 'M')) {
                r->kind = POSIX_TZ_MONTH_DAY;
                if (!take_number(c, 1, 12, &r->month) || !take(c, '.') || !take_number(c, 1, 5, &r->week) ||
                    !take(c, '.') || !take_number(c, 0, 6, &r->day))
                        return false;
        } else {
                r->kind = POSIX_TZ_DAY;
                if (!take_number(c, 0, 365, &r->day))
                        return false;
        }
        r->time = 2 * SEC_PER_HOUR;
        return !take(c, '/') || take_hms(c, TIME_HOURS_MAX, &r->time);
}

static bool take_rules(struct cursor *c, struct posix_tz *tz)
{
        /* tzcode's default when a zone with daylight time names no rule (Go falls back to it too). */
        static const char default_rules[] = ",M3.2.0,M11.1.0";
        struct cursor d = {default_rules, default_rules + sizeof(default_rules) - 1};
        if (at_end(c))
                c = &d;
        if (!take(c, ',') && !take(c, ';'))
                return false;
        return take_rule(c, &tz->start) && take(c, ',') && take_rule(c, &tz->end) && at_end(c);
}

int posix_tz_parse(const char *s, size_t n, struct posix_tz *ret)
{
        struct cursor c = {s, s + n};
        struct posix_tz tz = {0};
        int32_t v;
        /* The string's offsets are west of UTC ("CET-1" is UTC+1); ours are east. */
        if (!take_name(&c) || !take_hms(&c, OFFSET_HOURS_MAX, &v))
                return -EINVAL;
        tz.std_offset = -v;
        /* As Go does: whatever follows a ',' right after the standard offset is ignored. */
        if (at_end(&c) || peek(&c, ',')) {
                *ret = tz;
                return 0;
        }
        if (!take_name(&c))
                return -EINVAL;
        tz.has_dst = true;
        tz.dst_offset = tz.std_offset + SEC_PER_HOUR;
        if (!at_end(&c) && !peek(&c, ',')) {
                if (!take_hms(&c, OFFSET_HOURS_MAX, &v))
                        return -EINVAL;
                tz.dst_offset = -v;
        }
        if (!take_rules(&c, &tz))
                return -EINVAL;
        *ret = tz;
        return 0;
}

static unsigned days_in_month(int64_t year, unsigned month)
{
        int64_t next =
            month == 12 ? civil_days_from_month(year + 1, 1) : civil_days_from_month(year, month + 1);
        return (unsigned) (next - civil_days_from_month(year, month));
}

/* The day of @year (0 is January 1st) a rule names. */
static int64_t rule_day(int64_t year, const struct posix_tz_rule *r)
{
        switch (r->kind) {
        case POSIX_TZ_JULIAN:
                return r->day - 1 + (civil_is_leap(year) && r->day >= 60);
        case POSIX_TZ_DAY:
                return r->day;
        case POSIX_TZ_MONTH_DAY:
        default: {
                int64_t first = civil_days_from_month(year, r->month);
                struct civil c;
                civil_from_secs(first * CIVIL_SEC_PER_DAY, &c);
                unsigned d = (r->day + 7 - c.wday) % 7;
                /* Week 5 is the last such weekday, which may be the fourth. */
                for (unsigned w = 1; w < r->week && d + 7 < days_in_month(year, r->month); w++)
                        d += 7;
                return first - civil_days_from_month(year, 1) + d;
        }
        }
}

int32_t posix_tz_offset(const struct posix_tz *tz, int64_t t)
{
        if (!tz->has_dst)
                return tz->std_offset;
        struct civil c;
        civil_from_secs(t, &c);
        int64_t year_start = civil_days_from_month(c.year, 1) * CIVIL_SEC_PER_DAY;
        int64_t ysec = t - year_start;
        /* A rule's time is local: the start in standard time, the end in daylight time. */
        int64_t start = rule_day(c.year, &tz->start) * CIVIL_SEC_PER_DAY + tz->start.time - tz->std_offset;
        int64_t end = rule_day(c.year, &tz->end) * CIVIL_SEC_PER_DAY + tz->end.time - tz->dst_offset;
        if (start <= end)
                return ysec >= start && ysec < end ? tz->dst_offset : tz->std_offset;
        /* Southern hemisphere: daylight time spans the new year. */
        return ysec >= end && ysec < start ? tz->std_offset : tz->dst_offset;
}
