/* SPDX-License-Identifier: Apache-2.0 */
/* The one text of a double every printer writes (see ao/json-number.h). */
#include "ao/json-number.h"

#include <float.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Integers this large print with an exponent, as in JavaScript and Go's encoding/json. */
#define PLAIN_INTEGER_LIMIT 1e21

/*
 * Fewest significant digits that read back, for a normal double: DBL_DIG (15) digits always
 * survive decimal -> double -> decimal, so when some text of k <= 15 digits reads back as @d, the
 * 15-digit rounding of @d is that text padded with zeros, which %g strips. Starting at 15 is then
 * as short as starting at 1. Below DBL_MIN the spacing of doubles is wider than 15 digits
 * resolve (5e-324 is the only double near it), so subnormals start at one digit.
 */
static int first_precision(double magnitude)
{
        return magnitude < DBL_MIN ? 1 : DBL_DIG;
}

/*
 * The shortest "%.*g" (or "%.*e" with @exp) text of @d that reads back as @d. For each count of
 * digits the correctly rounded text is the one nearest @d, so when any text of that many digits
 * reads back, it does; hence trying counts upwards finds the shortest. 17 always reads back.
 */
static void shortest(char buf[static AO_JSON_NUMBER_DOUBLE_MAX], double d, bool exp)
{
        for (int prec = first_precision(d < 0 ? -d : d); prec <= DBL_DECIMAL_DIG; prec++) {
                if (exp)
                        (void) snprintf(buf, AO_JSON_NUMBER_DOUBLE_MAX, "%.*e", prec - 1, d);
                else
                        (void) snprintf(buf, AO_JSON_NUMBER_DOUBLE_MAX, "%.*g", prec, d);
                if (strtod(buf, NULL) == d)
                        return;
        }
}

/*
 * An integral double from 2^53 to 1e21 as plain digits: the shortest digits that read back
 * padded with zeros ("18446744073709552000" for 2^64), as JavaScript and Go print them, rather
 * than the exact binary value. Its shortest digits are no more than its integer digits (the exact
 * integer reads back, and 17 digits always do), and it has fewer than 21 of those, so the text fits.
 */
static size_t format_integer(double d, char out[static AO_JSON_NUMBER_DOUBLE_MAX])
{
        char buf[AO_JSON_NUMBER_DOUBLE_MAX];
        size_t n = 0;
        shortest(buf, d, true);

        const char *p = buf;
        if (*p == '-')
                out[n++] = *p++;
        size_t first = n;
        for (; *p && *p != 'e'; p++)
                if (*p != '.')
                        out[n++] = *p;
        while (n > first + 1 && out[n - 1] == '0')
                n--;
        long exponent = *p == 'e' ? strtol(p + 1, NULL, 10) : 0;
        while ((long) (n - first) <= exponent)
                out[n++] = '0';
        out[n] = '\0';
        return n;
}

size_t ao_json_number_format_double(double d, char buf[static AO_JSON_NUMBER_DOUBLE_MAX])
{
        if (d == 0) {
                /* -0 too: YAML reads "-0" as the integer 0. */
                buf[0] = '0';
                buf[1] = '\0';
                return 1;
        }
        double magnitude = d < 0 ? -d : d;
        if (magnitude < AO_JSON_EXACT_INTEGER_LIMIT && d == (double) (int64_t) d)
                /*
                 * Every integer below 2^53 is a double, so no shorter digits read back as this one:
                 * its digits are the shortest. The common case (replicas, ports) skips the rounds
                 * of shortest(). Below 2^53 the cast is exact and in range.
                 */
                return (size_t) snprintf(buf, AO_JSON_NUMBER_DOUBLE_MAX, "%" PRId64, (int64_t) d);
        /* From 2^53 on every double is an integer. */
        if (magnitude >= AO_JSON_EXACT_INTEGER_LIMIT && magnitude < PLAIN_INTEGER_LIMIT)
                return format_integer(d, buf);
        shortest(buf, d, false);
        return strlen(buf);
}
