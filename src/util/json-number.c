/* SPDX-License-Identifier: Apache-2.0 */
/* Number nodes that keep their exact text where a double cannot hold them (see ao/json-number.h). */
#include "ao/json-number.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"

cJSON *ao_json_number_from_double(double d)
{
        cJSON *n = cJSON_CreateNumber(isfinite(d) ? d : 0);
        if (n)
                n->valuedouble = d;
        return n;
}

/* @n with @text (borrowed, @len bytes) kept as its exact form. */
static cJSON *keep_text(cJSON *n, const char *text, size_t len)
{
        if (!n)
                return NULL;
        n->valuestring = malloc(len + 1);
        if (!n->valuestring) {
                cJSON_Delete(n);
                return NULL;
        }
        memcpy(n->valuestring, text, len);
        n->valuestring[len] = '\0';
        return n;
}

static bool is_exact_double(double d)
{
        return isfinite(d) && fabs(d) < AO_JSON_EXACT_INTEGER_LIMIT;
}

cJSON *ao_json_number_from_literal(const char *text, size_t len)
{
        char stack[64];
        _cleanup_free_ char *heap = NULL;
        char *buf = len < sizeof(stack) ? stack : (heap = malloc(len + 1));
        if (!buf)
                return NULL;
        memcpy(buf, text, len);
        buf[len] = '\0';
        double d = strtod(buf, NULL);
        bool integer = strcspn(buf, ".eE") == len;
        if (isfinite(d) && (!integer || is_exact_double(d)))
                return ao_json_number_from_double(d);
        /* An integer beyond 2^53, or a literal beyond the double range: the text is the number. */
        return keep_text(ao_json_number_from_double(d), text, len);
}

cJSON *ao_json_number_from_digits(bool negative, const char *digits, size_t len)
{
        while (len > 1 && *digits == '0') {
                digits++;
                len--;
        }
        _cleanup_free_ char *text = malloc(len + 2);
        if (!text)
                return NULL;
        size_t n = 0;
        if (negative && !(len == 1 && *digits == '0'))
                text[n++] = '-';
        memcpy(text + n, digits, len);
        n += len;
        text[n] = '\0';
        return ao_json_number_from_literal(text, n);
}

cJSON *ao_json_number_from_int64(int64_t v)
{
        char buf[24];
        int len = snprintf(buf, sizeof(buf), "%" PRId64, v);
        return ao_json_number_from_literal(buf, (size_t) len);
}

cJSON *ao_json_number_from_uint64(uint64_t v)
{
        char buf[24];
        int len = snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return ao_json_number_from_literal(buf, (size_t) len);
}

const char *ao_json_number_text(const cJSON *n)
{
        return cJSON_IsNumber(n) ? n->valuestring : NULL;
}
