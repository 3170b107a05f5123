/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exact numbers (include/ao/json-number.h) through the code that prints, reads and compares them:
 * the text of a double (shortest, checked against brute force on random doubles), comparison by
 * value, deep equality, and a table of edge numbers through the YAML loader, the canonical JSON
 * writer, ao_json_print/ao_json_pretty and the YAML emitter, each read back.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/alloc.h"
#include "ao/json-equal.h"
#include "ao/json-number.h"
#include "ao/json-writer.h"
#include "ao/yaml.h"

static cJSON *lit(const char *text)
{
        cJSON *n = ao_json_number_from_literal(text, strlen(text));
        if (!n)
                tap_bail("out of memory");
        return n;
}

static cJSON *dbl(double d)
{
        cJSON *n = ao_json_number_from_double(d);
        if (!n)
                tap_bail("out of memory");
        return n;
}

/* ---- the text of a double ------------------------------------------------------------------------ */

static void test_format_table(void)
{
        static const struct {
                double d;
                const char *want;
        } cases[] = {
            {0.0, "0"},
            {-0.0, "0"},
            {1, "1"},
            {-7, "-7"},
            {1e3, "1000"},
            {0.1, "0.1"},
            {0.30000000000000004, "0.30000000000000004"},
            {1.0 / 3, "0.3333333333333333"},
            {2.5e-3, "0.0025"},
            {1e-7, "1e-07"},
            {5e-324, "5e-324"},
            {-5e-324, "-5e-324"},
            {1e-320, "1e-320"},
            {1.5e-323, "1.5e-323"},
            {0x1.ffffffffffffep-1023, "2.225073858507201e-308"}, /* the largest subnormal */
            {DBL_MIN, "2.2250738585072014e-308"},
            {1e308, "1e+308"},
            {DBL_MAX, "1.7976931348623157e+308"},
            {9007199254740991.0, "9007199254740991"},
            {9007199254740992.0, "9007199254740992"},
            {9007199254740994.0, "9007199254740994"},
            {0x1p63, "9223372036854776000"}, /* shortest digits padded, as Go and JavaScript */
            {-0x1p63, "-9223372036854776000"},
            {0x1p64, "18446744073709552000"},
            {1e20, "100000000000000000000"},
            {1e21, "1e+21"},
            {123456789012345678901234.0, "1.2345678901234569e+23"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                char buf[AO_JSON_NUMBER_DOUBLE_MAX];
                size_t n = ao_json_number_format_double(cases[i].d, buf);
                tap_is_str(buf, cases[i].want, "format %a", cases[i].d);
                tap_ok(n == strlen(buf), "format %a: length", cases[i].d);
        }
}

static uint64_t next_random(uint64_t *state)
{
        /* xorshift64*: reproducible, no libc state. */
        uint64_t x = *state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        return x * 0x2545F4914F6CDD1DULL;
}

/* Significant digits of a text: leading and trailing zeros, signs, point and exponent not counted. */
static int significant_digits(const char *text)
{
        char digits[64];
        int n = 0;
        for (const char *p = text; *p && *p != 'e'; p++)
                if (*p >= '0' && *p <= '9' && (n > 0 || *p != '0'))
                        digits[n++] = *p;
        while (n > 0 && digits[n - 1] == '0')
                n--;
        return n;
}

/*
 * The text reads back as the double, and no text with fewer digits does: tried by brute force
 * from one digit, which also checks that starting at 15 digits for normal doubles (the reasoning
 * in json-number-format.c) never misses a shorter text.
 */
static bool is_shortest(double d, const char *text, char *why, size_t why_size)
{
        if (strtod(text, NULL) != d) {
                (void) snprintf(why, why_size, "'%s' does not read back as %a", text, d);
                return false;
        }
        int k = significant_digits(text);
        for (int p = 1; p < k; p++) {
                char shorter[64];
                (void) snprintf(shorter, sizeof(shorter), "%.*e", p - 1, d);
                if (strtod(shorter, NULL) == d) {
                        (void) snprintf(why, why_size, "'%s' is shorter than '%s'", shorter, text);
                        return false;
                }
        }
        return true;
}

static void test_format_shortest(void)
{
        uint64_t state = 0x9E3779B97F4A7C15ULL;
        size_t normal = 0, subnormal = 0, failures = 0;
        char why[160] = "";

        for (int i = 0; i < 30000; i++) {
                uint64_t bits = next_random(&state);
                if (i % 10 == 0)
                        bits &= 0x800FFFFFFFFFFFFFULL; /* a subnormal */
                else if (i % 10 == 1)
                        bits = (bits & 0x800FFFFFFFFFFFFFULL) | ((uint64_t) (1023 + 40 + i % 30) << 52);
                else if (i % 10 == 2)
                        bits = (bits & 0x800FFFFFFFFFFFFFULL) |
                               ((uint64_t) (1 + i % 3) << 52); /* just above DBL_MIN */
                double d;
                memcpy(&d, &bits, sizeof(d));
                if (!isfinite(d) || d == 0)
                        continue;
                char buf[AO_JSON_NUMBER_DOUBLE_MAX];
                (void) ao_json_number_format_double(d, buf);
                fabs(d) < DBL_MIN ? subnormal++ : normal++;
                if (!is_shortest(d, buf, why, sizeof(why)) && failures++ == 0)
                        tap_diag("%s", why);
        }
        tap_ok(failures == 0 && normal > 20000 && subnormal > 2000,
               "format: %zu normal and %zu subnormal random doubles read back from their shortest text",
               normal, subnormal);
}

/* ---- comparison -------------------------------------------------------------------------------- */

static void test_compare(void)
{
        static const struct {
                const char *a, *b; /* literals; "d:X" a double from strtod(X) without text */
                int want;
        } cases[] = {
            {"9007199254740993", "9007199254740992", 1},
            {"9007199254740992", "d:9007199254740992", 0},
            {"9007199254740993", "d:9007199254740992", 1},
            {"18446744073709551616", "d:18446744073709551616", -1}, /* the double is 18446744073709552000 */
            {"18446744073709552000", "d:18446744073709551616", 0},
            {"-9223372036854775809", "-9223372036854775808", -1},
            {"-9223372036854775808", "d:-9223372036854775808", 1}, /* the double is -9223372036854776000 */
            {"-9223372036854776000", "d:-9223372036854775808", 0},
            {"123456789012345678901234567890", "123456789012345678901234567891", -1},
            {"-123456789012345678901234567890", "123456789012345678901234567890", -1},
            {"1e400", "1E+400", 0},
            {"1e400", "10e399", 0},
            {"1.5e400", "15e399", 0},
            {"1e400", "1e401", -1},
            {"-1e400", "1e400", -1},
            {"-1e400", "-1e401", 1},
            {"1e400", "d:inf", -1},
            {"-1e400", "d:-inf", 1},
            {"1e400", "d:1.7976931348623157e308", 1},
            {"d:1", "d:1.0", 0},
            {"d:0", "d:-0", 0},
            {"d:0.1", "d:0.30000000000000004", -1},
            {"d:nan", "d:nan", AO_JSON_NUMBER_UNORDERED},
            {"1e400", "d:nan", AO_JSON_NUMBER_UNORDERED},
            {"9007199254740993", "d:0.5", 1},
            {"-9007199254740993", "d:0.5", -1},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                const char *texts[2] = {cases[i].a, cases[i].b};
                cJSON *n[2];
                for (int k = 0; k < 2; k++)
                        n[k] =
                            strncmp(texts[k], "d:", 2) == 0 ? dbl(strtod(texts[k] + 2, NULL)) : lit(texts[k]);
                int r = ao_json_number_compare(n[0], n[1]);
                int back = ao_json_number_compare(n[1], n[0]);
                int want_back = cases[i].want == AO_JSON_NUMBER_UNORDERED ? cases[i].want : -cases[i].want;
                tap_ok(r == cases[i].want && back == want_back, "compare %s %s: %d, %d", cases[i].a,
                       cases[i].b, r, back);
                tap_ok(ao_json_number_equal(n[0], n[1]) == (cases[i].want == 0), "equal %s %s", cases[i].a,
                       cases[i].b);
                cJSON_Delete(n[0]);
                cJSON_Delete(n[1]);
        }
}

static void test_is_integer(void)
{
        static const struct {
                const char *text; /* a text kept as such, or "d:X" a double */
                bool want;
        } cases[] = {
            {"9007199254740993", true},
            {"-123456789012345678901234567890", true},
            {"1e400", true},
            {"1.5e400", true},
            {"1.25e1", false},
            {"1.20e1", true},
            {"12.5", false},
            {"0.0", true},
            {"d:2.5", false},
            {"d:1152921504606846976", true},
            {"d:-0", true},
            {"d:inf", false},
            {"d:nan", false},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                const char *t = cases[i].text;
                cJSON *n;
                if (strncmp(t, "d:", 2) == 0) {
                        n = dbl(strtod(t + 2, NULL));
                } else {
                        /* Any text, as the convention allows: set by hand. */
                        n = dbl(strtod(t, NULL));
                        n->valuestring = strdup(t);
                }
                tap_ok(ao_json_number_is_integer(n) == cases[i].want, "is_integer %s", t);
                cJSON_Delete(n);
        }
}

static void test_equal(void)
{
        cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();
        cJSON_AddItemToObject(a, "big", lit("9007199254740993"));
        cJSON_AddItemToObject(a, "one", dbl(1));
        cJSON_AddItemToObject(a, "list", cJSON_CreateArray());
        cJSON_AddItemToArray(cJSON_GetObjectItem(a, "list"), lit("1e400"));
        cJSON_AddItemToObject(b, "list", cJSON_CreateArray());
        cJSON_AddItemToArray(cJSON_GetObjectItem(b, "list"), lit("10e399"));
        cJSON_AddItemToObject(b, "one", dbl(1.0));
        cJSON_AddItemToObject(b, "big", lit("9007199254740993"));
        tap_ok(ao_json_equal(a, b), "equal: members in another order, 1e400 and 10e399");

        cJSON_ReplaceItemInObject(b, "big", lit("9007199254740992"));
        tap_ok(!ao_json_equal(a, b), "equal: 9007199254740993 is not 9007199254740992");
        cJSON_ReplaceItemInObject(b, "big", dbl(9007199254740993.0));
        tap_ok(!ao_json_equal(a, b), "equal: 9007199254740993 is not the double it rounds to");
        cJSON_ReplaceItemInObject(b, "big", cJSON_CreateString("9007199254740993"));
        tap_ok(!ao_json_equal(a, b), "equal: a number is not its text as a string");
        tap_ok(!ao_json_equal(a, NULL) && !ao_json_equal(NULL, NULL), "equal: NULL equals nothing");
        cJSON_Delete(a);
        cJSON_Delete(b);
}

/* ---- edge numbers through YAML and JSON -------------------------------------------------------- */

/* A scalar of values.yaml, what every JSON printer writes for it, and what the YAML emitter writes. */
static const struct {
        const char *yaml, *json, *emitted;
} edges[] = {
    {"9007199254740993", "9007199254740993", NULL}, /* 2^53+1 */
    {"-9007199254740993", "-9007199254740993", NULL},
    {"9223372036854775807", "9223372036854775807", NULL}, /* 2^63-1 */
    {"9223372036854775808", "9223372036854775808", NULL}, /* 2^63 */
    {"-9223372036854775808", "-9223372036854775808", NULL},
    {"-9223372036854775809", "-9223372036854775809", NULL},
    {"18446744073709551615", "18446744073709551615", NULL}, /* 2^64-1 */
    {"18446744073709551616", "18446744073709551616", NULL}, /* 2^64 */
    {"123456789012345678901234567890", "123456789012345678901234567890", NULL},
    {"-123456789012345678901234567890", "-123456789012345678901234567890", NULL},
    {"+0000123456789012345678901234567890", "123456789012345678901234567890", NULL},
    {"1_000_000_000_000_000_000_000", "1000000000000000000000", NULL},
    {"0777777777777777777777777", "777777777777777777777777",
     NULL}, /* octal beyond 64 bits: decimal, as Go */
    {"0x1FFFFFFFFFFFFFFFF", "\"0x1FFFFFFFFFFFFFFFF\"", "0x1FFFFFFFFFFFFFFFF"}, /* a string, as in Go */
    {"0xFFFFFFFFFFFFFFFF", "18446744073709551615", "18446744073709551615"},
    {"0o1777777777777777777777", "18446744073709551615", "18446744073709551615"},
    {"-0x8000000000000000", "-9223372036854775808", "-9223372036854775808"},
    {"-0", "0", NULL},
    {"-0.0", "0", NULL},
    {"1e-320", "1e-320", NULL},
    {"5e-324", "5e-324", NULL},
    {"4.9406564584124654e-324", "5e-324", "5e-324"},
    {"0.1", "0.1", NULL},
    {"0.30000000000000004", "0.30000000000000004", NULL},
    {"1e308", "1e+308", "1e+308"},
    {"1.7976931348623157e308", "1.7976931348623157e+308", "1.7976931348623157e+308"},
    {"1e400", "\"1e400\"", "1e400"}, /* beyond the double range: a string, as in Go */
    {"!!float 1e400", "1e400", "!!float 1e400"},
    {"!!float -1.5E+400", "-1.5E+400", "!!float -1.5E+400"},
    {"!!float +.5e400", "0.5e400", "!!float 0.5e400"},
    {"!!float 9007199254740993", "9007199254740993", "9007199254740993"},
    {"!!int 123456789012345678901234567890", "123456789012345678901234567890",
     "123456789012345678901234567890"},
    {"1e3", "1000", "1000"},
    {"1E+20", "100000000000000000000", "100000000000000000000"},
    {"1e21", "1e+21", "1e+21"},
    {"2.5e-3", "0.0025", "0.0025"},
    {"9007199254740993.0", "9007199254740992", "9007199254740992"}, /* a float: its double */
    {"007", "7", "7"},
    {"010", "8", "8"},
    {"08", "8", "8"},
    {"+12", "12", "12"},
    {"1_000", "1000", "1000"},
};

/* @node as the YAML emitter writes it, without the document's "v: " and newline. */
static char *emitted_value(const cJSON *doc)
{
        char *yaml = ao_yaml_emit(doc);
        size_t len = strlen(yaml);
        char *value = strncmp(yaml, "v: ", 3) == 0 && len > 4 ? strndup(yaml + 3, len - 4) : strdup(yaml);
        free(yaml);
        return value;
}

static cJSON *load_yaml(const char *text, const char *what)
{
        struct ao_error err = {0};
        cJSON *json = NULL;
        if (ao_yaml_load(text, strlen(text), what, &json, &err) < 0) {
                tap_diag("%s", err.msg);
                return NULL;
        }
        return json;
}

static void test_edges_yaml(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(edges); i++) {
                char *doc_text = ao_xasprintf("v: %s\n", edges[i].yaml);
                cJSON *doc = load_yaml(doc_text, "values.yaml");
                const char *want_emitted = edges[i].emitted ? edges[i].emitted : edges[i].json;
                if (!doc) {
                        tap_ok(false, "yaml '%s' loads", edges[i].yaml);
                        free(doc_text);
                        continue;
                }
                const cJSON *v = cJSON_GetObjectItem(doc, "v");
                char *canonical = ao_json_canonical(v), *printed = ao_json_print(v),
                     *pretty = ao_json_pretty(v);
                tap_is_str(canonical, edges[i].json, "yaml '%s': canonical JSON", edges[i].yaml);
                tap_ok(strcmp(printed, canonical) == 0 && strcmp(pretty, canonical) == 0,
                       "yaml '%s': ao_json_print and ao_json_pretty write the same", edges[i].yaml);

                char *emitted = emitted_value(doc);
                tap_is_str(emitted, want_emitted, "yaml '%s': emitted", edges[i].yaml);

                /*
                 * Both texts read back as the same value. Plain YAML reads the JSON 1e400 as a
                 * string (as Go does), which is why the emitter tags it: read that one from YAML only.
                 */
                bool tagged = strncmp(want_emitted, "!!", 2) == 0;
                char *from_json = ao_xasprintf("v: %s\n", tagged ? want_emitted : canonical);
                char *from_yaml = ao_yaml_emit(doc);
                cJSON *again_json = load_yaml(from_json, "canonical"),
                      *again_yaml = load_yaml(from_yaml, "emitted");
                char *t1 = again_json ? ao_json_canonical(cJSON_GetObjectItem(again_json, "v")) : NULL;
                char *t2 = again_yaml ? ao_json_canonical(cJSON_GetObjectItem(again_yaml, "v")) : NULL;
                tap_ok(t1 && t2 && strcmp(t1, canonical) == 0 && strcmp(t2, canonical) == 0 &&
                           ao_json_equal(cJSON_GetObjectItem(again_yaml, "v"), v),
                       "yaml '%s': reads back from JSON (%s) and from YAML (%s)", edges[i].yaml,
                       t1 ? t1 : "-", t2 ? t2 : "-");
                free(t1);
                free(t2);
                cJSON_Delete(again_json);
                cJSON_Delete(again_yaml);
                free(from_json);
                free(from_yaml);
                free(emitted);
                free(canonical);
                free(printed);
                free(pretty);
                cJSON_Delete(doc);
                free(doc_text);
        }
}

static void test_keys(void)
{
        static const char yaml[] = "9007199254740993: a\n"
                                   "123456789012345678901234567890: b\n"
                                   "1e3: c\n"
                                   "0.30000000000000004: d\n"
                                   "5e-324: e\n"
                                   "18446744073709551616: f\n"
                                   "big: &n 123456789012345678901234567891\n"
                                   "*n : g\n";
        cJSON *doc = load_yaml(yaml, "keys.yaml");
        char *text = doc ? ao_json_canonical(doc) : NULL;
        tap_is_str(text,
                   "{\"0.30000000000000004\":\"d\",\"1000\":\"c\",\"123456789012345678901234567890\":\"b\","
                   "\"123456789012345678901234567891\":\"g\",\"18446744073709551616\":\"f\",\"5e-324\":\"e\","
                   "\"9007199254740993\":\"a\",\"big\":123456789012345678901234567891}",
                   "keys: numbers as their exact text, an aliased one too");
        free(text);
        cJSON_Delete(doc);

        doc = load_yaml("9007199254740993: a\n\"9007199254740993\": b\n", "dup.yaml");
        tap_ok(!doc, "keys: 9007199254740993 and \"9007199254740993\" are the same key");
        cJSON_Delete(doc);
        doc = load_yaml("9007199254740993: a\n9007199254740992: b\n", "two.yaml");
        tap_ok(doc && cJSON_GetArraySize(doc) == 2,
               "keys: 9007199254740993 and 9007199254740992 are two keys");
        cJSON_Delete(doc);
}

/* Texts from JSON (ao_json_number_from_literal) through the printers, member order kept or sorted. */
static void test_printers(void)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "z", lit("1e400"));
        cJSON_AddItemToObject(o, "a", lit("9007199254740993"));
        cJSON_AddItemToObject(o, "m", cJSON_CreateArray());
        cJSON_AddItemToArray(cJSON_GetObjectItem(o, "m"), lit("-18446744073709551616"));
        cJSON_AddItemToArray(cJSON_GetObjectItem(o, "m"), dbl(-0.0));
        cJSON_AddItemToArray(cJSON_GetObjectItem(o, "m"), dbl(5e-324));
        cJSON_AddItemToObject(o, "e", cJSON_CreateObject());

        char *text = ao_json_canonical(o);
        tap_is_str(text,
                   "{\"a\":9007199254740993,\"e\":{},\"m\":[-18446744073709551616,0,5e-324],\"z\":1e400}",
                   "canonical: texts as written, keys sorted");
        free(text);
        text = ao_json_print(o);
        tap_is_str(text,
                   "{\"z\":1e400,\"a\":9007199254740993,\"m\":[-18446744073709551616,0,5e-324],\"e\":{}}",
                   "print: texts as written, members in order");
        free(text);
        text = ao_json_pretty(o);
        tap_is_str(text,
                   "{\n  \"z\": 1e400,\n  \"a\": 9007199254740993,\n  \"m\": [\n    -18446744073709551616,\n"
                   "    0,\n    5e-324\n  ],\n  \"e\": {}\n}",
                   "pretty: two spaces a level, members in order");
        free(text);
        text = ao_yaml_emit(o);
        tap_is_str(
            text,
            "z: !!float 1e400\na: 9007199254740993\nm:\n- -18446744073709551616\n- 0\n- 5e-324\ne: {}\n",
            "yaml: 1e400 tagged, the others plain");
        cJSON *back = load_yaml(text, "emitted");
        tap_ok(back && ao_json_equal(back, o), "yaml: reads back equal");
        cJSON_Delete(back);
        free(text);
        cJSON_Delete(o);
}

int main(void)
{
        test_format_table();
        test_format_shortest();
        test_compare();
        test_is_integer();
        test_equal();
        test_edges_yaml();
        test_keys();
        test_printers();
        return tap_done();
}
