/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Numbers leave with the value they came in with (include/ao/json-number.h). From the input it
 * builds two documents: an array of numbers (every JSON number literal in the input, kept by
 * ao_json_number_from_literal(), and every 8 bytes read as a double, subnormals, NaN and
 * infinities included), and the input itself loaded as YAML. Each is written as canonical JSON,
 * as pretty JSON and as YAML (ao_yaml_emit), read back with the YAML loader, and compared number
 * by number; it aborts when a number differs:
 *
 *   - a number with an exact text comes back with the same text;
 *   - any other comes back as the same double, bit for bit, except that -0 may come back as 0,
 *     and through JSON NaN and infinities are null;
 *   - a text beyond the double range (1e400) comes back from JSON as the string of that text:
 *     plain YAML reads it so, as Go does; the YAML emitter tags it, so from YAML it is a number.
 *
 * Besides, for each number: its double's text reads back as the double and no text with fewer
 * significant digits does (tried from one digit up), comparing it with
 * what came back says equal (ao_json_number_compare()), and comparing it with its neighbour in
 * the array gives opposite answers both ways round.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/json-number.h"
#include "ao/json-writer.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_INPUT_MAX (64 * 1024)
/* Aliases can make a small YAML input a large tree; its texts are checked below this size. */
#define FUZZ_RELOAD_MAX (1024 * 1024)
/* Numbers taken from one input: enough for every shape, few enough to stay fast. */
#define MAX_LITERALS 512
#define MAX_DOUBLES  256

enum via {
        VIA_JSON, /* canonical or pretty JSON, read by the YAML loader */
        VIA_YAML, /* ao_yaml_emit() */
};

static void check(bool ok)
{
        if (!ok)
                abort();
}

static bool same_bits(double a, double b)
{
        return memcmp(&a, &b, sizeof(a)) == 0;
}

/* Number @n came back as @back, written @via. */
static void check_number(const cJSON *n, const cJSON *back, enum via via)
{
        const char *text = ao_json_number_text(n);
        double d = n->valuedouble;

        if (text && cJSON_IsString(back)) {
                /* Only a text beyond the double range, and only from JSON. */
                check(via == VIA_JSON && isinf(d) && strcmp(back->valuestring, text) == 0);
                return;
        }
        if (!isfinite(d) && !text && via == VIA_JSON) {
                check(cJSON_IsNull(back));
                return;
        }
        check(cJSON_IsNumber(back));
        const char *back_text = ao_json_number_text(back);
        if (text)
                check(back_text && strcmp(text, back_text) == 0);
        else
                check(same_bits(d, back->valuedouble) || (d == 0 && back->valuedouble == 0) ||
                      (isnan(d) && isnan(back->valuedouble)));
        if (!isnan(d))
                check(ao_json_number_compare(n, back) == 0);
}

static const cJSON *member(const cJSON *object, const char *key)
{
        return cJSON_GetObjectItemCaseSensitive(object, key);
}

/* @back is @tree read back; recursion bounded by AO_YAML_MAX_DEPTH, as the loader made @tree. */
static void check_tree(const cJSON *tree, const cJSON *back, enum via via)
{
        check(back != NULL);
        if (cJSON_IsNumber(tree)) {
                check_number(tree, back, via);
                return;
        }
        check((tree->type & 0xFF) == (back->type & 0xFF));
        if (cJSON_IsString(tree))
                check(strcmp(tree->valuestring, back->valuestring) == 0);
        else if (cJSON_IsArray(tree))
                for (const cJSON *a = tree->child, *b = back->child; a || b; a = a->next, b = b->next)
                        check_tree(a, b, via);
        else if (cJSON_IsObject(tree))
                /* Loaded YAML has no duplicate keys, so a key finds its one member. */
                for (const cJSON *a = tree->child; a; a = a->next)
                        check_tree(a, member(back, a->string), via);
}

static void round_trip(const cJSON *tree, char *(*write)(const cJSON *), enum via via)
{
        struct ao_error err = {0};
        cJSON *back = NULL;
        char *text = write(tree);

        if (strlen(text) <= FUZZ_RELOAD_MAX) {
                check(ao_yaml_load(text, strlen(text), "written", &back, &err) == 0);
                check_tree(tree, back, via);
        }
        cJSON_Delete(back);
        free(text);
}

static void round_trips(const cJSON *tree)
{
        round_trip(tree, ao_json_canonical, VIA_JSON);
        round_trip(tree, ao_json_pretty, VIA_JSON);
        round_trip(tree, ao_yaml_emit, VIA_YAML);
}

/* Significant digits of a text: leading and trailing zeros, signs, point and exponent not counted. */
static int significant_digits(const char *text)
{
        int n = 0, zeros = 0;
        for (const char *p = text; *p && *p != 'e'; p++) {
                if (*p < '0' || *p > '9' || (n == 0 && *p == '0'))
                        continue;
                zeros = *p == '0' ? zeros + 1 : 0;
                n++;
        }
        return n - zeros;
}

/* The text of finite @d reads back as @d, and is as short as any that does. */
static void check_shortest(double d)
{
        char buf[AO_JSON_NUMBER_DOUBLE_MAX], shorter[64];
        (void) ao_json_number_format_double(d, buf);
        double back = strtod(buf, NULL);
        check(same_bits(back, d) || (back == 0 && d == 0));
        for (int p = 1; p < significant_digits(buf); p++) {
                (void) snprintf(shorter, sizeof(shorter), "%.*e", p - 1, d);
                check(strtod(shorter, NULL) != d);
        }
}

/* Every double's text is its shortest; comparing neighbours gives opposite answers either way round. */
static void check_array(const cJSON *numbers)
{
        const cJSON *prev = NULL;
        for (const cJSON *n = numbers->child; n; prev = n, n = n->next) {
                if (isfinite(n->valuedouble))
                        check_shortest(n->valuedouble);
                if (!prev)
                        continue;
                int r = ao_json_number_compare(prev, n), s = ao_json_number_compare(n, prev);
                check(r == AO_JSON_NUMBER_UNORDERED ? s == r : s == -r);
                check(ao_json_number_equal(prev, n) == (r == 0));
        }
}

static cJSON *numbers_of(const uint8_t *data, size_t size)
{
        cJSON *numbers = cJSON_CreateArray();
        char *text = malloc(size + 1);
        size_t literals = 0, doubles = 0;

        if (!numbers || !text)
                abort();
        memcpy(text, data, size);
        text[size] = '\0';
        for (size_t i = 0; i < size && literals < MAX_LITERALS; i++) {
                if (text[i] != '-' && !(text[i] >= '0' && text[i] <= '9'))
                        continue;
                size_t end = ao_json_number_end(text, i);
                if (end == 0)
                        continue;
                cJSON_AddItemToArray(numbers, ao_json_number_from_literal(text + i, end - i));
                literals++;
                i = end - 1;
        }
        for (size_t i = 0; i + sizeof(double) <= size && doubles < MAX_DOUBLES; i += sizeof(double)) {
                double d;
                memcpy(&d, data + i, sizeof(d));
                cJSON_AddItemToArray(numbers, ao_json_number_from_double(d));
                doubles++;
        }
        free(text);
        return numbers;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_error err = {0};
        cJSON *yaml = NULL;

        if (size > FUZZ_INPUT_MAX)
                return 0;
        cJSON *numbers = numbers_of(data, size);
        check_array(numbers);
        round_trips(numbers);
        cJSON_Delete(numbers);

        if (ao_yaml_load((const char *) data, size, "fuzz.yaml", &yaml, &err) == 0)
                round_trips(yaml);
        cJSON_Delete(yaml);
        return 0;
}
