/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cron expressions with the semantics of robfig/cron (the library the Go
 * addon-operator and shell-operator use), computed in UTC.
 *
 * Deliberate differences from robfig/cron, all supersets: day-of-week 7 is
 * accepted as Sunday (Vixie cron and most crontab(5) pages allow it; robfig
 * rejects it), and `?` is accepted in every field, as robfig does. The
 * operator schedules in UTC, so of robfig's `TZ=`/`CRON_TZ=` prefixes only
 * the UTC ones are accepted; other zones are an error rather than silently
 * firing at the wrong hour.
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

#define CRON_EXPR_MAX 1024
/* robfig/cron gives up after five years too, so "0 0 30 2 *" never fires. */
#define CRON_SEARCH_YEARS 5
#define SEC_PER_DAY       86400ULL
/* Go's time.Duration is an int64 of nanoseconds; longer @every values do not parse there either. */
#define DURATION_NSEC_MAX INT64_MAX
#define NSEC_PER_SEC      1000000000ULL
#define STEP_MAX          1000000U

struct ao_cron {
        uint64_t sec;     /* bit n: second n fires */
        uint64_t min;     /* bit n: minute n */
        uint64_t hour;    /* bits 0-23 */
        uint64_t dom;     /* bits 1-31 */
        uint64_t month;   /* bits 1-12 */
        uint64_t dow;     /* bits 0-6, Sunday is 0 */
        bool dom_star;    /* day of month was '*' or '?': only day of week decides */
        bool dow_star;    /* day of week was '*' or '?': only day of month decides */
        uint64_t every_s; /* > 0: an `@every` schedule; the fields above are unused */
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

/* Skip "TZ=<zone> " or "CRON_TZ=<zone> " when the zone is UTC; any other zone is an error. */
static int skip_time_zone(const char *expr, const char **text, struct ao_error *reterr)
{
        static const char *const utc_zones[] = {"UTC", "Etc/UTC"};
        size_t n;
        if (!has_prefix(*text, "TZ=", &n) && !has_prefix(*text, "CRON_TZ=", &n))
                return 0;
        const char *zone = *text + n;
        size_t zone_n = 0;
        while (zone[zone_n] && !is_space(zone[zone_n]))
                zone_n++;
        for (size_t i = 0; i < AO_ARRAY_SIZE(utc_zones); i++)
                if (strlen(utc_zones[i]) == zone_n && memcmp(utc_zones[i], zone, zone_n) == 0) {
                        *text = zone + zone_n;
                        while (is_space(**text))
                                (*text)++;
                        return 0;
                }
        return ao_error_set(reterr, -EINVAL,
                            "cron '%s': time zone '%.*s' is not supported (schedules run in UTC)", expr,
                            (int) zone_n, zone);
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
        int r = skip_time_zone(expr, &text, reterr);
        if (r < 0)
                return r;
        struct ao_cron parsed = {0};
        r = *text == '@' ? parse_descriptor(expr, text, &parsed, reterr)
                         : parse_fields(expr, text, &parsed, reterr);
        if (r < 0)
                return r;

        struct ao_cron *c = ao_xmalloc(sizeof(*c));
        *c = parsed;
        *ret = c;
        return 0;
}

struct ao_cron *ao_cron_free(struct ao_cron *c)
{
        free(c);
        return NULL;
}

/* Howard Hinnant's days_from_civil / civil_from_days: proleptic Gregorian, no libc, no TZ. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        unsigned yoe = (unsigned) (y - era * 400);
        unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + (int64_t) doe - 719468;
}

struct civil {
        int64_t year;
        unsigned month, day, hour, min, sec;
};

static void civil_from_secs(uint64_t secs, struct civil *t)
{
        int64_t z = (int64_t) (secs / SEC_PER_DAY) + 719468;
        unsigned rem = (unsigned) (secs % SEC_PER_DAY);
        int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        unsigned doe = (unsigned) (z - era * 146097);
        unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        unsigned mp = (5 * doy + 2) / 153;
        t->day = doy - (153 * mp + 2) / 5 + 1;
        t->month = mp < 10 ? mp + 3 : mp - 9;
        t->year = (int64_t) yoe + era * 400 + (t->month <= 2);
        t->hour = rem / 3600;
        t->min = rem / 60 % 60;
        t->sec = rem % 60;
}

static bool is_leap(int64_t y)
{
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
        static const unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        return m == 2 && is_leap(y) ? 29 : days[m - 1];
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
        unsigned wday = (unsigned) ((days_from_civil(t->year, t->month, t->day) % 7 + 11) % 7);
        bool dow = c->dow & (1ULL << wday);
        if (c->dom_star || c->dow_star)
                return dom && dow;
        return dom || dow;
}

/* Each advance_* moves to the first instant of the next unit and resets the smaller ones. */
static void advance_month(struct civil *t)
{
        t->day = 1;
        t->hour = t->min = t->sec = 0;
        if (++t->month > 12) {
                t->month = 1;
                t->year++;
        }
}

static void advance_day(struct civil *t)
{
        t->hour = t->min = t->sec = 0;
        if (++t->day > days_in_month(t->year, t->month))
                advance_month(t);
}

static void advance_hour(struct civil *t)
{
        t->min = t->sec = 0;
        if (++t->hour == 24)
                advance_day(t);
}

static void advance_min(struct civil *t)
{
        t->sec = 0;
        if (++t->min == 60)
                advance_hour(t);
}

static void advance_sec(struct civil *t)
{
        if (++t->sec == 60)
                advance_min(t);
}

/*
 * Field by field, largest first (robfig/cron's Next): each mismatch jumps to
 * the start of the next month/day/hour/minute/second and re-checks from the
 * top, so a search costs at most a few thousand steps, never one per second.
 */
static uint64_t next_field_match(const struct ao_cron *c, uint64_t secs)
{
        struct civil t;
        civil_from_secs(secs, &t);
        int64_t last_year = t.year + CRON_SEARCH_YEARS;
        while (t.year <= last_year) {
                if (!(c->month & (1ULL << t.month)))
                        advance_month(&t);
                else if (!day_matches(c, &t))
                        advance_day(&t);
                else if (!(c->hour & (1ULL << t.hour)))
                        advance_hour(&t);
                else if (!(c->min & (1ULL << t.min)))
                        advance_min(&t);
                else if (!(c->sec & (1ULL << t.sec)))
                        advance_sec(&t);
                else
                        return (uint64_t) days_from_civil(t.year, t.month, t.day) * SEC_PER_DAY +
                               t.hour * 3600ULL + t.min * 60ULL + t.sec;
        }
        return 0;
}

uint64_t ao_cron_next(const struct ao_cron *c, uint64_t after_usec)
{
        uint64_t after_s = after_usec / AO_USEC_PER_SEC;
        uint64_t next_s;
        if (c->every_s > 0)
                next_s = after_s + c->every_s;
        else
                next_s = next_field_match(c, after_s + 1);
        /* Past the end of uint64 microseconds (year 586912) there is nothing to return. */
        if (next_s == 0 || next_s > UINT64_MAX / AO_USEC_PER_SEC || next_s < after_s)
                return 0;
        return next_s * AO_USEC_PER_SEC;
}
