/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Comparing numbers by value where a double cannot (see ao/json-number.h). Two numbers without
 * text compare as doubles. Otherwise both become decimals, digits and the place of the decimal
 * point, read from the text or from the double's printed form, and compare digit by digit: exact
 * for any length, and cheap enough for the rare node that has a text.
 */
#include "ao/json-number.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"

/* Exponents are read up to this magnitude (a text cannot have more digits than memory anyway). */
#define MAX_EXPONENT 1000000000000000LL

/* A number as ±0.DIGITS × 10^point, or an infinity. */
struct decimal {
        int sign;      /* -1, 0 (the value is zero: no digits), 1 */
        bool infinite; /* beyond every decimal, on the side of sign */
        char *digits;  /* borrowed (buf or heap): no leading or trailing zeros */
        size_t n;      /* digits in use */
        int64_t point; /* where the decimal point sits, counted from before the first digit */
        char *heap;    /* owned: digits of a long text; NULL when they fit buf */
        char buf[AO_JSON_NUMBER_DOUBLE_MAX];
};

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* The exponent after 'e' at @p, clamped to ±MAX_EXPONENT. */
static int64_t read_exponent(const char *p)
{
        bool negative = *p == '-';
        int64_t e = 0;
        if (*p == '+' || *p == '-')
                p++;
        for (; is_digit(*p); p++)
                if (e < MAX_EXPONENT)
                        e = e * 10 + (*p - '0');
        if (e > MAX_EXPONENT)
                e = MAX_EXPONENT;
        return negative ? -e : e;
}

/* @text, a JSON number literal, into @x (whose buffers it may use). */
static void parse_literal(const char *text, struct decimal *x)
{
        size_t len = strlen(text);
        x->digits = len < sizeof(x->buf) ? x->buf : (x->heap = ao_xmalloc(len + 1));
        x->n = 0;

        const char *p = text;
        bool negative = *p == '-';
        if (*p == '-' || *p == '+')
                p++;
        int64_t fraction = 0; /* digits after the decimal point */
        bool seen_point = false;
        for (; is_digit(*p) || (*p == '.' && !seen_point); p++) {
                if (*p == '.') {
                        seen_point = true;
                        continue;
                }
                fraction += seen_point;
                if (*p == '0' && x->n == 0)
                        continue; /* a leading zero: neither a digit nor a place */
                x->digits[x->n++] = *p;
        }
        int64_t exponent = (*p == 'e' || *p == 'E') ? read_exponent(p + 1) : 0;
        /* Leading zeros after the point moved nothing: the digits kept are the integer D, value D × 10^(e - f). */
        x->point = (int64_t) x->n + exponent - fraction;
        while (x->n > 0 && x->digits[x->n - 1] == '0')
                x->n--;
        x->sign = x->n == 0 ? 0 : negative ? -1 : 1;
}

/* Number node @node as a decimal; false for NaN. */
static bool to_decimal(const cJSON *node, struct decimal *x)
{
        *x = (struct decimal){0};
        const char *text = ao_json_number_text(node);
        if (text) {
                parse_literal(text, x);
                return true;
        }
        double d = node->valuedouble;
        if (isnan(d))
                return false;
        if (isinf(d)) {
                x->sign = d > 0 ? 1 : -1;
                x->infinite = true;
                return true;
        }
        char printed[AO_JSON_NUMBER_DOUBLE_MAX];
        (void) ao_json_number_format_double(d, printed);
        parse_literal(printed, x);
        return true;
}

static void decimal_done(struct decimal *x)
{
        free(x->heap);
}

/* -1, 0, 1 as |x| is below, equal to or above |y|; both nonzero. */
static int compare_magnitudes(const struct decimal *x, const struct decimal *y)
{
        if (x->infinite || y->infinite)
                return x->infinite - y->infinite;
        if (x->point != y->point)
                return x->point < y->point ? -1 : 1;
        size_t common = x->n < y->n ? x->n : y->n;
        int r = memcmp(x->digits, y->digits, common);
        if (r != 0)
                return r < 0 ? -1 : 1;
        /* With no trailing zeros, the longer one has a nonzero digit more. */
        return x->n == y->n ? 0 : x->n < y->n ? -1 : 1;
}

static int compare_decimals(const struct decimal *x, const struct decimal *y)
{
        if (x->sign != y->sign)
                return x->sign < y->sign ? -1 : 1;
        if (x->sign == 0)
                return 0;
        return x->sign * compare_magnitudes(x, y);
}

int ao_json_number_compare(const cJSON *a, const cJSON *b)
{
        if (!ao_json_number_text(a) && !ao_json_number_text(b)) {
                double x = a->valuedouble, y = b->valuedouble;
                if (isnan(x) || isnan(y))
                        return AO_JSON_NUMBER_UNORDERED;
                return x < y ? -1 : x > y;
        }
        struct decimal x, y;
        int r = AO_JSON_NUMBER_UNORDERED;
        bool ordered_x = to_decimal(a, &x), ordered_y = to_decimal(b, &y);
        if (ordered_x && ordered_y)
                r = compare_decimals(&x, &y);
        decimal_done(&x);
        decimal_done(&y);
        return r;
}

bool ao_json_number_equal(const cJSON *a, const cJSON *b)
{
        return ao_json_number_compare(a, b) == 0;
}

bool ao_json_number_is_integer(const cJSON *n)
{
        const char *text = ao_json_number_text(n);
        if (!text)
                return isfinite(n->valuedouble) && floor(n->valuedouble) == n->valuedouble;
        struct decimal x = {0};
        parse_literal(text, &x);
        bool integer = x.sign == 0 || (int64_t) x.n <= x.point;
        decimal_done(&x);
        return integer;
}
