/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's time.ParseDuration, for settings (ADDON_OPERATOR_HOOK_TIMEOUT, ...)
 * and hook configurations (settings.executionMinPeriod) alike.
 */
#include "ao/duration.h"

#include <stdbool.h>
#include <string.h>

#include "ao/macro.h"

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* Go's time.ParseDuration unit table, in nanoseconds. Both micro signs are accepted, as Go does. */
static const struct {
        const char *name;
        uint64_t nsec;
} duration_units[] = {
    {"ns", 1ULL},
    {"us", 1000ULL},
    {"\xc2\xb5s", 1000ULL}, /* U+00B5 MICRO SIGN */
    {"\xce\xbcs", 1000ULL}, /* U+03BC GREEK SMALL LETTER MU */
    {"ms", 1000000ULL},
    {"s", 1000000000ULL},
    {"m", 60ULL * 1000000000ULL},
    {"h", 3600ULL * 1000000000ULL},
};

/* Go rejects durations above the int64 nanosecond range; so do we, to accept exactly the same inputs. */
#define DURATION_NSEC_MAX ((uint64_t) INT64_MAX)

static int duration_unit(const char *s, size_t len, uint64_t *ret)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(duration_units); i++)
                if (strlen(duration_units[i].name) == len && memcmp(duration_units[i].name, s, len) == 0) {
                        *ret = duration_units[i].nsec;
                        return 0;
                }
        return -EINVAL;
}

/*
 * Digits after the decimal point, as Go's leadingFraction: digits that
 * would overflow are consumed but ignored, since they cannot change the
 * result at nanosecond precision.
 */
static const char *duration_fraction(const char *p, uint64_t *ret_f, double *ret_scale)
{
        uint64_t f = 0;
        double scale = 1;
        bool overflow = false;

        for (; is_digit(*p); p++) {
                if (overflow)
                        continue;
                uint64_t digit = (uint64_t) (*p - '0');
                if (f > (DURATION_NSEC_MAX - digit) / 10) {
                        overflow = true;
                        continue;
                }
                f = f * 10 + digit;
                scale *= 10;
        }
        *ret_f = f;
        *ret_scale = scale;
        return p;
}

/* One "<number><unit>" element; advances *pp and returns its value in nanoseconds. */
static int duration_element(const char **pp, uint64_t *ret_nsec)
{
        const char *p = *pp, *start = p;
        uint64_t v = 0, f = 0, unit;
        double scale = 1;
        bool pre, post = false;

        for (; is_digit(*p); p++) {
                uint64_t digit = (uint64_t) (*p - '0');
                if (v > (DURATION_NSEC_MAX - digit) / 10)
                        return -ERANGE;
                v = v * 10 + digit;
        }
        pre = p != start;
        if (*p == '.') {
                const char *frac = ++p;
                p = duration_fraction(p, &f, &scale);
                post = p != frac;
        }
        if (!pre && !post)
                return -EINVAL;

        /* The unit is everything up to the next number, so "1 s" or "1sx" fail as unknown units. */
        const char *u = p;
        while (*p && *p != '.' && !is_digit(*p))
                p++;
        if (p == u || duration_unit(u, (size_t) (p - u), &unit) < 0)
                return -EINVAL;

        if (v > DURATION_NSEC_MAX / unit)
                return -ERANGE;
        v *= unit;
        if (f > 0) {
                /* A double keeps fractions of hours exact to the nanosecond, as in Go. */
                double extra = (double) f * ((double) unit / scale);
                if (extra >= (double) (DURATION_NSEC_MAX - v))
                        return -ERANGE;
                v += (uint64_t) extra;
        }
        *pp = p;
        *ret_nsec = v;
        return 0;
}

int ao_parse_duration_usec(const char *s, uint64_t *ret)
{
        const char *p = s;
        uint64_t total = 0;

        if (!s)
                return -EINVAL;
        /* Go accepts a sign; a negative timeout has no meaning here, so only '+' is let through. */
        if (*p == '+')
                p++;
        if (strcmp(p, "0") == 0) {
                *ret = 0;
                return 0;
        }
        if (*p == '\0')
                return -EINVAL;

        while (*p) {
                uint64_t v;
                int r = duration_element(&p, &v);
                if (r < 0)
                        return r;
                if (v > DURATION_NSEC_MAX - total)
                        return -ERANGE;
                total += v;
        }

        /* Round up, so that a non-zero duration never turns into 0 ("no timeout") in microseconds. */
        *ret = total / AO_NSEC_PER_USEC + (total % AO_NSEC_PER_USEC != 0);
        return 0;
}
