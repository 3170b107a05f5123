/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cron expressions with the semantics of robfig/cron (the library the Go
 * addon-operator and shell-operator use), in UTC or in the IANA zone a
 * `TZ=`/`CRON_TZ=` prefix names.
 *
 * Deliberate differences from robfig/cron, all supersets: day-of-week 7 is
 * accepted as Sunday (Vixie cron and most crontab(5) pages allow it; robfig
 * rejects it), and `?` is accepted in every field, as robfig does. Without
 * a prefix a schedule runs in UTC, where robfig uses the process's local
 * zone.
 */
#include "ao/cron.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/macro.h"
#include "ao/zone.h"
#include "internal.h"

#define CRON_EXPR_MAX 1024
/* robfig/cron gives up after five years too, so "0 0 30 2 *" never fires. */
#define CRON_SEARCH_YEARS 5
/* Go's time.Duration is an int64 of nanoseconds; longer @every values do not parse there either. */
#define DURATION_NSEC_MAX INT64_MAX
#define NSEC_PER_SEC      1000000000ULL
#define STEP_MAX          1000000U

struct ao_cron {
        uint64_t sec;         /* bit n: second n fires */
        uint64_t min;         /* bit n: minute n */
        uint64_t hour;        /* bits 0-23 */
        uint64_t dom;         /* bits 1-31 */
        uint64_t month;       /* bits 1-12 */
        uint64_t dow;         /* bits 0-6, Sunday is 0 */
        bool dom_star;        /* day of month was '*' or '?': only day of week decides */
        bool dow_star;        /* day of week was '*' or '?': only day of month decides */
        uint64_t every_s;     /* > 0: an `@every` schedule; the fields above are unused */
        struct ao_zone *zone; /* owned; NULL: UTC */
};

enum field {
        FIELD_SEC,
        FIELD_MIN,
        FIELD_HOUR,
        FIELD_DOM,
        FIELD_MONTH,
        FIELD_DOW,
        _FIELD_MAX,
};

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

struct field_spec {
        const char *name;
        unsigned min, max;
        const char *const *names; /* names[i] stands for min + i; NULL: numbers only */
        size_t n_names;
};

static const struct field_spec fields[_FIELD_MAX] = {
    [FIELD_SEC] = {"second", 0, 59, NULL, 0},
    [FIELD_MIN] = {"minute", 0, 59, NULL, 0},
    [FIELD_HOUR] = {"hour", 0, 23, NULL, 0},
    [FIELD_DOM] = {"day of month", 1, 31, NULL, 0},
    [FIELD_MONTH] = {"month", 1, 12, month_names, AO_ARRAY_SIZE(month_names)},
    /* 7 is Sunday as well; folded onto bit 0 once the field is parsed. */
    [FIELD_DOW] = {"day of week", 0, 7, dow_names, AO_ARRAY_SIZE(dow_names)},
};

/* What every error message needs: the whole expression and the field being parsed. */
struct parse_ctx {
        const char *expr;
        const struct field_spec *field;
        struct ao_error *reterr;
};

_printf_(2, 3) static int field_error(const struct parse_ctx *ctx, const char *fmt, ...)
{
        char detail[256];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        return ao_error_set(ctx->reterr, -EINVAL, "cron '%s': %s: %s", ctx->expr, ctx->field->name, detail);
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static char lower(char c)
{
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

/* Digits only; saturates at UINT32_MAX so that "99999999999" reports out of range, not garbage. */
static bool parse_uint(const char *s, size_t n, unsigned *ret)
{
        if (n == 0)
                return false;
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit(s[i]))
                        return false;
                v = AO_MIN(v * 10 + (uint64_t) (s[i] - '0'), (uint64_t) UINT32_MAX);
        }
        *ret = (unsigned) v;
        return true;
}

static bool lookup_name(const struct field_spec *f, const char *s, size_t n, unsigned *ret)
{
        for (size_t i = 0; i < f->n_names; i++) {
                if (n != strlen(f->names[i]))
                        continue;
                size_t k = 0;
                while (k < n && lower(s[k]) == f->names[i][k])
                        k++;
                if (k == n) {
                        *ret = f->min + (unsigned) i;
                        return true;
                }
        }
        return false;
}

/* One number or name of a field, range-checked. */
static int parse_value(const struct parse_ctx *ctx, const char *s, size_t n, unsigned *ret)
{
        const struct field_spec *f = ctx->field;
        unsigned v;
        if (lookup_name(f, s, n, &v)) {
                *ret = v;
                return 0;
        }
        if (!parse_uint(s, n, &v))
                return field_error(ctx, "invalid value '%.*s'", (int) n, s);
        if (v < f->min || v > f->max)
                return field_error(ctx, "value %.*s out of range %u-%u", (int) n, s, f->min, f->max);
        *ret = v;
        return 0;
}

/* One list element: `*`, `?`, `a`, `a-b`, each optionally followed by `/step`. */
static int parse_part(const struct parse_ctx *ctx, const char *s, size_t n, uint64_t *bits, bool *star)
{
        const struct field_spec *f = ctx->field;
        if (n == 0)
                return field_error(ctx, "empty list element");

        const char *slash = memchr(s, '/', n);
        size_t base_n = slash ? (size_t) (slash - s) : n;
        unsigned lo, hi, step = 1;
        bool is_star = false;
        int r;

        if (base_n == 1 && (s[0] == '*' || s[0] == '?')) {
                lo = f->min;
                hi = f->max;
                is_star = true;
        } else {
                const char *dash = memchr(s, '-', base_n);
                size_t lo_n = dash ? (size_t) (dash - s) : base_n;
                r = parse_value(ctx, s, lo_n, &lo);
                if (r < 0)
                        return r;
                hi = lo;
                if (dash) {
                        r = parse_value(ctx, dash + 1, base_n - lo_n - 1, &hi);
                        if (r < 0)
                                return r;
                        if (lo > hi)
                                return field_error(ctx, "range start %u is after end %u", lo, hi);
                } else if (slash)
                        hi = f->max; /* "a/n" means "a-max/n", as in robfig/cron */
        }

        if (slash) {
                size_t step_n = n - base_n - 1;
                if (!parse_uint(slash + 1, step_n, &step))
                        return field_error(ctx, "invalid step '%.*s'", (int) step_n, slash + 1);
                if (step < 1)
                        return field_error(ctx, "step must be at least 1");
                step = AO_MIN(step, STEP_MAX);
                /* robfig/cron: "*" with a step above 1 restricts the field (matters for the day rule). */
                if (step > 1)
                        is_star = false;
        }

        for (unsigned v = lo; v <= hi; v += step)
                *bits |= 1ULL << v;
        *star = *star || is_star;
        return 0;
}

static int parse_field(const char *expr, enum field which, const char *s, size_t n, uint64_t *ret_bits,
                       bool *ret_star, struct ao_error *reterr)
{
        const struct parse_ctx ctx = {expr, &fields[which], reterr};
        uint64_t bits = 0;
        bool star = false;
        for (;;) {
                const char *comma = memchr(s, ',', n);
                size_t part_n = comma ? (size_t) (comma - s) : n;
                int r = parse_part(&ctx, s, part_n, &bits, &star);
                if (r < 0)
                        return r;
                if (!comma)
                        break;
                s += part_n + 1;
                n -= part_n + 1;
        }
        if (which == FIELD_DOW && (bits & (1ULL << 7)))
                bits = (bits & ~(1ULL << 7)) | 1ULL;
        *ret_bits = bits;
        if (ret_star)
                *ret_star = star;
        return 0;
}

struct duration_unit {
        const char *name;
        uint64_t nsec;
};

/* The units of Go's time.ParseDuration; µ is both U+00B5 and U+03BC there. */
static const struct duration_unit duration_units[] = {
    {"ns", 1ULL},       {"us", 1000ULL},     {"\xc2\xb5s", 1000ULL},   {"\xce\xbcs", 1000ULL},
    {"ms", 1000000ULL}, {"s", NSEC_PER_SEC}, {"m", 60 * NSEC_PER_SEC}, {"h", 3600 * NSEC_PER_SEC},
};

static const struct duration_unit *lookup_unit(const char *s, size_t n)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(duration_units); i++)
                if (strlen(duration_units[i].name) == n && memcmp(duration_units[i].name, s, n) == 0)
                        return &duration_units[i];
        return NULL;
}

/*
 * One "<int>[.<frac>]<unit>" element of a Go duration. Fraction digits past
 * the ninth cannot change a nanosecond count of whole units, so they are dropped.
 */
static int parse_duration_element(const char **p, const char *end, unsigned __int128 *acc)
{
        const char *s = *p;
        unsigned __int128 whole = 0;
        uint64_t frac = 0, scale = 1;
        bool digits = false;
        while (s < end && is_digit(*s)) {
                whole = whole * 10 + (unsigned) (*s++ - '0');
                if (whole > DURATION_NSEC_MAX)
                        return -ERANGE;
                digits = true;
        }
        if (s < end && *s == '.') {
                s++;
                while (s < end && is_digit(*s)) {
                        if (scale < NSEC_PER_SEC) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                scale *= 10;
                        }
                        s++;
                        digits = true;
                }
        }
        if (!digits)
                return -EINVAL;
        const char *unit = s;
        while (s < end && !is_digit(*s) && *s != '.')
                s++;
        const struct duration_unit *u = lookup_unit(unit, (size_t) (s - unit));
        if (!u)
                return -EINVAL;
        *acc += whole * u->nsec + (unsigned __int128) frac * u->nsec / scale;
        if (*acc > DURATION_NSEC_MAX)
                return -ERANGE;
        *p = s;
        return 0;
}

/* Go's time.ParseDuration: "1h30m", "1.5s", "300ms"; a sign is returned in @ret_negative. */
static int parse_go_duration(const char *s, size_t n, uint64_t *ret_nsec, bool *ret_negative)
{
        const char *end = s + n;
        bool negative = false;
        if (s < end && (*s == '-' || *s == '+'))
                negative = *s++ == '-';
        if (end - s == 1 && *s == '0') {
                *ret_nsec = 0;
                *ret_negative = negative;
                return 0;
        }
        if (s == end)
                return -EINVAL;
        unsigned __int128 acc = 0;
        while (s < end) {
                int r = parse_duration_element(&s, end, &acc);
                if (r < 0)
                        return r;
        }
        *ret_nsec = (uint64_t) acc;
        *ret_negative = negative;
        return 0;
}

/*
 * `@every D`. Like robfig/cron's ConstantDelaySchedule, D is truncated to
 * whole seconds with a floor of one second, and the schedule fires at
 * (after truncated to the second) + D.
 */
static int parse_every(const char *expr, const char *s, size_t n, struct ao_cron *c, struct ao_error *reterr)
{
        uint64_t nsec = 0;
        bool negative = false;
        int r = parse_go_duration(s, n, &nsec, &negative);
        if (r == -ERANGE)
                return ao_error_set(reterr, -EINVAL, "cron '%s': @every: duration '%.*s' is too long", expr,
                                    (int) n, s);
        if (r < 0)
                return ao_error_set(reterr, -EINVAL,
                                    "cron '%s': @every: invalid duration '%.*s' (want e.g. 30s, 1m30s, 2h)",
                                    expr, (int) n, s);
        if (negative || nsec == 0)
                return ao_error_set(reterr, -EINVAL, "cron '%s': @every: duration '%.*s' must be positive",
                                    expr, (int) n, s);
        c->every_s = AO_MAX(nsec / NSEC_PER_SEC, 1);
        return 0;
}

struct descriptor {
        const char *name;
        const char *spec; /* the six-field equivalent, as robfig/cron defines it */
};

static const struct descriptor descriptors[] = {
    {"@yearly", "0 0 0 1 1 *"}, {"@annually", "0 0 0 1 1 *"}, {"@monthly", "0 0 0 1 * *"},
    {"@weekly", "0 0 0 * * 0"}, {"@daily", "0 0 0 * * *"},    {"@midnight", "0 0 0 * * *"},
    {"@hourly", "0 0 * * * *"},
};

/* Split @s on whitespace into at most @max words; returns the number of words seen. */
static size_t split_fields(const char *s, const char **starts, size_t *lens, size_t max)
{
        size_t n = 0;
        for (;;) {
                while (is_space(*s))
                        s++;
                if (!*s)
                        return n;
                const char *start = s;
                while (*s && !is_space(*s))
                        s++;
                if (n < max) {
                        starts[n] = start;
                        lens[n] = (size_t) (s - start);
                }
                n++;
        }
}

static int parse_fields(const char *expr, const char *text, struct ao_cron *c, struct ao_error *reterr)
{
        const char *starts[_FIELD_MAX];
        size_t lens[_FIELD_MAX];
        size_t n = split_fields(text, starts, lens, _FIELD_MAX);
        if (n != 5 && n != 6)
                return ao_error_set(reterr, -EINVAL, "cron '%s': expected 5 or 6 fields, got %zu", expr, n);

        /* Five fields: seconds are implicitly "0", as robfig/cron's SecondOptional does. */
        size_t first = _FIELD_MAX - n;
        if (first == 1)
                c->sec = 1;
        uint64_t *bits[_FIELD_MAX] = {&c->sec, &c->min, &c->hour, &c->dom, &c->month, &c->dow};
        bool *stars[_FIELD_MAX] = {[FIELD_DOM] = &c->dom_star, [FIELD_DOW] = &c->dow_star};
        for (size_t i = 0; i < n; i++) {
                enum field which = (enum field)(first + i);
                int r = parse_field(expr, which, starts[i], lens[i], bits[which], stars[which], reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_descriptor(const char *expr, const char *text, struct ao_cron *c, struct ao_error *reterr)
{
        size_t n = strlen(text);
        while (n > 0 && is_space(text[n - 1]))
                n--;
        size_t word = 0;
        while (word < n && !is_space(text[word]))
                word++;

        if (word == strlen("@every") && memcmp(text, "@every", word) == 0) {
                size_t start = word;
                while (start < n && is_space(text[start]))
                        start++;
                if (start == n)
                        return ao_error_set(reterr, -EINVAL, "cron '%s': @every: missing duration", expr);
                return parse_every(expr, text + start, n - start, c, reterr);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(descriptors); i++) {
                if (strlen(descriptors[i].name) != word || memcmp(descriptors[i].name, text, word) != 0)
                        continue;
                if (word != n)
                        return ao_error_set(reterr, -EINVAL, "cron '%s': unexpected text after '%s'", expr,
                                            descriptors[i].name);
                return parse_fields(expr, descriptors[i].spec, c, reterr);
        }
        return ao_error_set(reterr, -EINVAL,
                            "cron '%s': unknown descriptor '%.*s' (want @yearly, @annually, @monthly, "
                            "@weekly, @daily, @midnight, @hourly or @every <duration>)",
                            expr, (int) word, text);
}

static bool has_prefix(const char *s, const char *prefix, size_t *ret_len)
{
        size_t n = strlen(prefix);
        if (strncmp(s, prefix, n) != 0)
                return false;
        *ret_len = n;
        return true;
}

/*
 * "TZ=<zone> " or "CRON_TZ=<zone> " before the schedule (robfig/cron v3
 * takes both; v2 only TZ=). As in Go's time.LoadLocation, "" and "UTC" need
 * no file; "Local", the operator's own zone, is UTC here, as a schedule
 * without a prefix is. Any other zone is read from tzdata now, so that a
 * typo fails when the hook's configuration is read, and no tick reads a
 * file.
 */
static int parse_time_zone(const char *expr, const char **text, struct ao_zone **ret_zone,
                           struct ao_error *reterr)
{
        static const char *const utc_zones[] = {"", "UTC", "Etc/UTC", "Local"};
        size_t n;
        if (!has_prefix(*text, "TZ=", &n) && !has_prefix(*text, "CRON_TZ=", &n))
                return 0;
        const char *zone = *text + n;
        size_t zone_n = 0;
        while (zone[zone_n] && !is_space(zone[zone_n]))
                zone_n++;
        *text = zone + zone_n;
        while (is_space(**text))
                (*text)++;
        for (size_t i = 0; i < AO_ARRAY_SIZE(utc_zones); i++)
                if (strlen(utc_zones[i]) == zone_n && memcmp(utc_zones[i], zone, zone_n) == 0)
                        return 0;
        char name[AO_ZONE_NAME_MAX + 2];
        (void) snprintf(name, sizeof(name), "%.*s", (int) AO_MIN(zone_n, sizeof(name) - 1), zone);
        int r = ao_zone_load(name, ret_zone, reterr);
        if (r < 0)
                (void) ao_error_prefix(reterr, "cron '%s'", expr);
        return r;
}

int ao_cron_parse(const char *expr, struct ao_cron **ret, struct ao_error *reterr)
{
        size_t len = strnlen(expr, CRON_EXPR_MAX + 1);
        if (len > CRON_EXPR_MAX)
                return ao_error_set(reterr, -EINVAL, "cron expression is longer than %d bytes",
                                    CRON_EXPR_MAX);

        const char *text = expr;
        while (is_space(*text))
                text++;
        struct ao_cron parsed = {0};
        int r = parse_time_zone(expr, &text, &parsed.zone, reterr);
        if (r < 0)
                return r;
        r = *text == '@' ? parse_descriptor(expr, text, &parsed, reterr)
                         : parse_fields(expr, text, &parsed, reterr);
        if (r < 0) {
                ao_zone_free(parsed.zone);
                return r;
        }

        struct ao_cron *c = ao_xmalloc(sizeof(*c));
        *c = parsed;
        *ret = c;
        return 0;
}

struct ao_cron *ao_cron_free(struct ao_cron *c)
{
        if (!c)
                return NULL;
        ao_zone_free(c->zone);
        free(c);
        return NULL;
}

/*
 * The search below is robfig/cron v3's SpecSchedule.Next, step for step, on
 * an instant and the wall-clock reading the schedule's zone gives it. Each
 * field is matched largest first; a mismatch moves the time on (months and
 * days by the calendar, hours, minutes and seconds by elapsed time) and a
 * wrap-around (a new year, month, day, hour or minute) starts over from the
 * month, so a search takes a few hundred steps at most, never one per
 * second.
 *
 * What daylight saving time does to a schedule follows from that, as it does
 * in robfig/cron: an hour that a spring change skips is stepped over (a job
 * at 02:30 does not run that day, nor at 03:30); an hour that an autumn
 * change repeats is matched on both passes (a job at 02:30 runs twice, an
 * hour apart); seconds and minutes count elapsed time, so an every-5-seconds
 * schedule ticks on evenly through both; a day whose midnight is skipped
 * starts at the first hour that exists.
 */
#define CRON_STEPS_MAX   20000 /* real searches take a few hundred steps */
#define CRON_RESCAN_SECS (2 * CIVIL_SEC_PER_DAY)

/* Where the search is: an instant and what the schedule's zone shows then. */
struct search {
        const struct ao_cron *cron;
        int64_t t;          /* UTC seconds */
        struct civil local; /* t in the schedule's zone */
        bool added;         /* a field was moved on: smaller fields start from zero (robfig's "added") */
        unsigned steps;
};

static int32_t zone_offset(const struct ao_cron *c, int64_t t)
{
        return c->zone ? ao_zone_offset(c->zone, t) : 0;
}

static void search_set(struct search *s, int64_t t)
{
        s->t = t;
        civil_from_secs(t + zone_offset(s->cron, t), &s->local);
}

/*
 * Go's time.Date(year, month, day, hour, min, sec, 0, zone), which robfig
 * uses to reset and to add months and days: the reading is normalised
 * (month 13 is January, day 32 the next month's 1st), then given the offset
 * the zone has at the reading taken as UTC, corrected once by the offset at
 * the instant that yields. A reading the zone skips or shows twice comes out
 * one side of the change or the other, exactly as Go's does, which is what
 * makes robfig's results here.
 */
static int64_t go_date(const struct ao_cron *c, int64_t year, int64_t month, int64_t day, int64_t hour,
                       int64_t min, int64_t sec)
{
        int64_t m0 = month - 1;
        int64_t carry = m0 >= 0 ? m0 / 12 : -((11 - m0) / 12);
        year += carry;
        m0 -= carry * 12;
        int64_t wall = (civil_days_from_month(year, (unsigned) m0 + 1) + day - 1) * CIVIL_SEC_PER_DAY +
                       hour * 3600 + min * 60 + sec;
        int32_t offset = zone_offset(c, wall);
        if (offset != 0)
                offset = zone_offset(c, wall - offset);
        return wall - offset;
}

static void add_months_and_days(struct search *s, int64_t months, int64_t days)
{
        const struct civil *l = &s->local;
        search_set(s, go_date(s->cron, l->year, l->month + months, l->day + days, l->hour, l->min, l->sec));
}

/* Go's Truncate works on the instant, not on the wall clock. */
static int64_t truncate_secs(int64_t t, int64_t unit)
{
        int64_t r = t % unit;
        return t - (r < 0 ? r + unit : r);
}

/*
 * The Vixie cron rule that robfig/cron follows: when either day field is
 * '*' (or '?'), both must match, which means only the other one counts;
 * when both are restricted, a day matches if either does ("0 0 13 * FRI"
 * fires on every 13th and on every Friday).
 */
static bool day_matches(const struct ao_cron *c, const struct civil *t)
{
        bool dom = c->dom & (1ULL << t->day);
        bool dow = c->dow & (1ULL << t->wday);
        if (c->dom_star || c->dow_star)
                return dom && dow;
        return dom || dow;
}

static bool out_of_steps(struct search *s)
{
        return ++s->steps > CRON_STEPS_MAX;
}

/* Each seek_* moves on until its field matches (false) or the time wraps into a new larger unit (true). */
static bool seek_month(struct search *s)
{
        while (!(s->cron->month & (1ULL << s->local.month))) {
                if (out_of_steps(s))
                        return true;
                if (!s->added) {
                        s->added = true;
                        search_set(s, go_date(s->cron, s->local.year, s->local.month, 1, 0, 0, 0));
                }
                add_months_and_days(s, 1, 0);
                if (s->local.month == 1)
                        return true;
        }
        return false;
}

static bool seek_day(struct search *s)
{
        while (!day_matches(s->cron, &s->local)) {
                if (out_of_steps(s))
                        return true;
                if (!s->added) {
                        s->added = true;
                        search_set(s, go_date(s->cron, s->local.year, s->local.month, s->local.day, 0, 0, 0));
                }
                add_months_and_days(s, 0, 1);
                /* A change at midnight moves a day's start: back to it (robfig's fix for São Paulo). */
                if (s->local.hour > 12)
                        search_set(s, s->t + (24 - (int64_t) s->local.hour) * 3600);
                else if (s->local.hour > 0)
                        search_set(s, s->t - (int64_t) s->local.hour * 3600);
                if (s->local.day == 1)
                        return true;
        }
        return false;
}

static bool seek_hour(struct search *s)
{
        while (!(s->cron->hour & (1ULL << s->local.hour))) {
                if (out_of_steps(s))
                        return true;
                if (!s->added) {
                        s->added = true;
                        search_set(s, go_date(s->cron, s->local.year, s->local.month, s->local.day,
                                              s->local.hour, 0, 0));
                }
                search_set(s, s->t + 3600);
                if (s->local.hour == 0)
                        return true;
        }
        return false;
}

static bool seek_minute(struct search *s)
{
        while (!(s->cron->min & (1ULL << s->local.min))) {
                if (out_of_steps(s))
                        return true;
                if (!s->added) {
                        s->added = true;
                        search_set(s, truncate_secs(s->t, 60));
                }
                search_set(s, s->t + 60);
                if (s->local.min == 0)
                        return true;
        }
        return false;
}

static bool seek_second(struct search *s)
{
        while (!(s->cron->sec & (1ULL << s->local.sec))) {
                if (out_of_steps(s))
                        return true;
                /* Times here are whole seconds: robfig's truncation to the second changes nothing. */
                s->added = true;
                search_set(s, s->t + 1);
                if (s->local.sec == 0)
                        return true;
        }
        return false;
}

enum search_end {
        SEARCH_FOUND,
        SEARCH_NONE, /* nothing within five years */
        SEARCH_LOST, /* out of steps: robfig/cron would loop forever here */
};

static enum search_end robfig_next(const struct ao_cron *c, int64_t from, int64_t *ret)
{
        struct search s = {.cron = c};
        search_set(&s, from);
        int64_t last_year = s.local.year + CRON_SEARCH_YEARS;
        for (;;) {
                if (s.steps > CRON_STEPS_MAX)
                        return SEARCH_LOST;
                if (s.local.year > last_year)
                        return SEARCH_NONE;
                if (seek_month(&s) || seek_day(&s) || seek_hour(&s) || seek_minute(&s) || seek_second(&s))
                        continue;
                *ret = s.t;
                return SEARCH_FOUND;
        }
}

static bool fires_at(const struct ao_cron *c, int64_t t)
{
        struct civil l;
        civil_from_secs(t + zone_offset(c, t), &l);
        return (c->month & (1ULL << l.month)) && day_matches(c, &l) && (c->hour & (1ULL << l.hour)) &&
               (c->min & (1ULL << l.min)) && (c->sec & (1ULL << l.sec));
}

/*
 * The first fire time after @after (UTC seconds), or -1 when there is none
 * within five years.
 *
 * Around a few changes robfig's search misbehaves, and its result is not
 * taken then:
 * - a step across a change can move a larger field without passing its
 *   zero, so no wrap-around checks that field again: on Lord Howe's spring
 *   day (01:59 +10:30, then 02:30 +11) a job at 01:45 searched from 01:50
 *   comes out at 02:45; across a change at midnight (America/Havana) an
 *   hour step from 23:00 lands on 01:00 of the next day, and a job on the
 *   10th comes out on the 11th;
 * - where a change at midnight repeats the evening before (America/St_Johns,
 *   2006), Go's time.Date resolves the repeated hour to its first pass and
 *   the search returns a time before its start, which robfig/cron's runner
 *   then fires again and again until the clock passes it;
 * - where a whole day is skipped (Pacific/Apia, 2011-12-30) the day step
 *   stands still and the search never ends.
 * Then the first second after @after whose reading matches is looked for one
 * by one over two days (longer than any change lasts), and the search
 * resumes after that.
 */
static int64_t next_fire(const struct ao_cron *c, int64_t after)
{
        int64_t n = -1;
        enum search_end end = robfig_next(c, after + 1, &n);
        if (end == SEARCH_NONE)
                return -1;
        if (end == SEARCH_FOUND && n > after && fires_at(c, n))
                return n;
        for (int64_t t = after + 1; t <= after + CRON_RESCAN_SECS; t++)
                if (fires_at(c, t))
                        return t;
        end = robfig_next(c, after + CRON_RESCAN_SECS + 1, &n);
        return end == SEARCH_FOUND && n > after && fires_at(c, n) ? n : -1;
}

uint64_t ao_cron_next(const struct ao_cron *c, uint64_t after_usec)
{
        uint64_t after_s = after_usec / AO_USEC_PER_SEC;
        uint64_t next_s;
        if (c->every_s > 0)
                next_s = after_s + c->every_s;
        else {
                int64_t n = next_fire(c, (int64_t) after_s);
                next_s = n > 0 ? (uint64_t) n : 0;
        }
        /* Past the end of uint64 microseconds (year 586912) there is nothing to return. */
        if (next_s == 0 || next_s > UINT64_MAX / AO_USEC_PER_SEC || next_s < after_s)
                return 0;
        return next_s * AO_USEC_PER_SEC;
}

int32_t ao_cron_utc_offset(const struct ao_cron *c, uint64_t usec)
{
        return zone_offset(c, (int64_t) (usec / AO_USEC_PER_SEC));
}

const char *ao_cron_zone(const struct ao_cron *c)
{
        return c->zone ? ao_zone_name(c->zone) : "UTC";
}
