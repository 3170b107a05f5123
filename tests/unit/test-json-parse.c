/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ao_json_parse(): the exact trees it builds (numbers with their kept text), where a value ends,
 * the error offsets cJSON gave (which messages print as file:line:column), the nesting limit,
 * and that two threads may parse at once.
 */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "ao/json-number.h"
#include "ao/json-parse.h"
#include "ao/strbuf.h"

/* The tree as text: numbers as "%.17g", or "#" and their kept text; bytes outside ASCII as \xNN. */
static void dump(struct ao_strbuf *out, const cJSON *j);

static void dump_string(struct ao_strbuf *out, const char *s)
{
        ao_strbuf_append(out, "\"");
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p >= 0x7F || *p == '"' || *p == '\\')
                        ao_strbuf_appendf(out, "\\x%02x", *p);
                else
                        ao_strbuf_appendf(out, "%c", *p);
        ao_strbuf_append(out, "\"");
}

static void dump(struct ao_strbuf *out, const cJSON *j)
{
        if (cJSON_IsNull(j)) {
                ao_strbuf_append(out, "null");
        } else if (cJSON_IsTrue(j)) {
                ao_strbuf_append(out, "true");
        } else if (cJSON_IsFalse(j)) {
                ao_strbuf_append(out, "false");
        } else if (cJSON_IsNumber(j)) {
                if (ao_json_number_text(j))
                        ao_strbuf_appendf(out, "#%s", ao_json_number_text(j));
                else
                        ao_strbuf_appendf(out, "%.17g", j->valuedouble);
        } else if (cJSON_IsString(j)) {
                dump_string(out, j->valuestring);
        } else {
                bool object = cJSON_IsObject(j);
                ao_strbuf_append(out, object ? "{" : "[");
                for (const cJSON *c = j->child; c; c = c->next) {
                        if (object) {
                                dump_string(out, c->string);
                                ao_strbuf_append(out, ":");
                        }
                        dump(out, c);
                        if (c->next)
                                ao_strbuf_append(out, ",");
                }
                ao_strbuf_append(out, object ? "}" : "]");
        }
}

static char *dumped(const cJSON *j)
{
        struct ao_strbuf out = {0};
        dump(&out, j);
        return ao_strbuf_steal(&out);
}

struct tree_case {
        const char *name;
        const char *text;
        size_t len; /* 0: strlen(text) */
        const char *tree;
        size_t end;
};

static const struct tree_case trees[] = {
    {"object, array, literals", "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}", 0,
     "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}", 43},
    {"white space around tokens", " \t\n[ 1 ,\r\n{ \"a\" : [ ] } , \"x\" ]\n", 0, "[1,{\"a\":[]},\"x\"]", 31},
    {"integers beyond 2^53 keep their text",
     "[9007199254740993,-9223372036854775808,9223372036854775807,18446744073709551615,"
     "123456789012345678901234567890]",
     0,
     "[#9007199254740993,#-9223372036854775808,#9223372036854775807,#18446744073709551615,"
     "#123456789012345678901234567890]",
     111},
    {"2^53 keeps its text, 2^53-1 is its double", "[9007199254740992,9007199254740991,-9007199254740991]", 0,
     "[#9007199254740992,9007199254740991,-9007199254740991]", 53},
    {"doubles are strtod's", "[0.1,-0,1e-320,1e308,1.5E+2,2e-2,5e-324]", 0,
     "[0.10000000000000001,-0,9.9998886718268301e-321,1e+308,150,0.02,4.9406564584124654e-324]", 40},
    {"literals beyond the double range keep their text", "[1e400,-1e400,1.0e999]", 0,
     "[#1e400,#-1e400,#1.0e999]", 22},
    {"a key twice is kept twice, in order", "{\"a\":1,\"b\":2,\"a\":3}", 0, "{\"a\":1,\"b\":2,\"a\":3}", 19},
    {"escapes", "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"\\u00e9\\u20AC\"]", 0,
     "[\"\\x22\\x5c/\\x08\\x0c\\x0a\\x0d\\x09\",\"\\xc3\\xa9\\xe2\\x82\\xac\"]", 35},
    {"a surrogate pair is one code point", "\"\\ud83d\\ude00\"", 0, "\"\\xf0\\x9f\\x98\\x80\"", 14},
    {"\\u0000 ends a string at the NUL, in keys too", "{\"a\\u0000b\":\"x\\u0000y\",\"c\":\"\\u0000\"}", 0,
     "{\"a\":\"x\",\"c\":\"\"}", 36},
    {"invalid UTF-8 passes through", "[\"\xff\xfe\",\"\xc3\x28\"]", 0, "[\"\\xff\\xfe\",\"\\xc3(\"]", 11},
    {"a byte order mark is skipped", "\xef\xbb\xbf{\"a\":[]}", 0, "{\"a\":[]}", 11},
    {"bytes up to 0x20 before the value are skipped", "\x01\x1f\x00 [1]", 7, "[1]", 7},
    {"the value ends at its last byte", "{\"a\":1} {\"b\":2}", 0, "{\"a\":1}", 7},
    {"a top-level number ends where its grammar ends", "12x", 0, "12", 2},
    {"\"01\" is 0 followed by the caller's byte", "01", 0, "0", 1},
    {"a number running to the end of the text", "  -12.5e3", 0, "-12500", 9},
    {"true ends after its e", "truex", 0, "true", 4},
    {"a string at the top level", "\"abc\"def", 0, "\"abc\"", 5},
};

static void test_trees(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(trees); i++) {
                const struct tree_case *c = &trees[i];
                size_t len = c->len ? c->len : strlen(c->text);
                const char *end = NULL;
                struct ao_json_parse_error err = {0};
                cJSON *json = ao_json_parse(c->text, len, &end, &err);
                if (!tap_ok(json != NULL, "tree: %s: parses", c->name)) {
                        tap_diag("error at %zu: %s", err.offset, err.reason);
                        continue;
                }
                char *got = dumped(json);
                tap_is_str(got, c->tree, "tree: %s: the tree", c->name);
                tap_is_int(end - c->text, c->end, "tree: %s: ends at byte %zu", c->name, c->end);
                free(got);
                cJSON_Delete(json);
        }
}

struct error_case {
        const char *name;
        const char *text;
        size_t len; /* 0: strlen(text) */
        size_t offset;
        bool at_end;
        const char *reason;
};

/*
 * The offsets are cJSON's, given the text and a NUL after it (given the text alone, cJSON named
 * the last byte where the text ran out: ao_json_parse_error_byte()).
 */
static const struct error_case errors[] = {
    {"empty", "", 0, 0, true, "unexpected end of input"},
    {"white space only", "  \n", 0, 3, true, "unexpected end of input"},
    {"cut short in an array", "{\"kind\":\"PodList\",\"items\":[", 0, 27, true, "unexpected end of input"},
    {"cut short after a comma", "[{\"revision\":1,", 0, 15, true, "unexpected end of input"},
    {"cut short after a colon", "{\"name\":", 0, 8, true, "unexpected end of input"},
    {"cut short in a number at the end", "[1,2", 0, 4, true, "unexpected end of input"},
    {"string never closed", "{\"a\":\"abc", 0, 6, true, "unterminated string"},
    {"backslash at the end", "[\"\\", 0, 2, true, "unterminated string"},
    {"literal cut short", "[tru", 0, 1, true, "invalid literal"},
    {"minus alone at the end", "-", 0, 0, true, "invalid number"},
    {"garbage instead of a value", "<html>502</html>", 0, 0, false, "expected a value"},
    {"bare word", "{\"name\":\"a\",\"add\":one}", 0, 18, false, "expected a value"},
    {"literal misspelt", "[trux]", 0, 1, false, "invalid literal"},
    {"minus without digits", "[-x]", 0, 1, false, "invalid number"},
    {"missing colon", "{\"name\" \"a\"}", 0, 8, false, "expected ':' after a key"},
    {"missing comma in an object", "{\"name\":\"a\" \"add\":1}", 0, 12, false, "expected ',' or '}'"},
    {"missing comma in an array", "[1 2]", 0, 3, false, "expected ',' or ']'"},
    {"mismatched brackets", "{\"x\":[1}]", 0, 7, false, "expected ',' or ']'"},
    {"comma twice", "[1,,2]", 0, 3, false, "expected a value"},
    {"trailing comma in an array", "[1,]", 0, 3, false, "expected a value"},
    {"colon twice", "{\"a\"::1}", 0, 5, false, "expected a value"},
    /* cJSON names a key that is not a string by the byte after its first. */
    {"unquoted key", "{op:\"remove\"}", 0, 2, false, "expected a string key"},
    {"single-quoted key", "{'name':'a'}", 0, 2, false, "expected a string key"},
    {"trailing comma in an object", "{\"a\":1,}", 0, 8, false, "expected a string key"},
    {"key that is not a string, deep", "{\"type\":\"ADDED\",\"object\":{x}}", 0, 27, false,
     "expected a string key"},
    {"unknown escape: its backslash", "{\"name\":\"\\x41\"}", 0, 9, false, "invalid escape in a string"},
    {"bad escape in a key", "{\"a\\x\":1}", 0, 3, false, "invalid escape in a string"},
    {"lone high surrogate", "[\"ab\\ud800\"]", 0, 4, false, "invalid UTF-16 surrogate escape in a string"},
    {"lone low surrogate", "\"\\udc00\"", 0, 1, false, "invalid UTF-16 surrogate escape in a string"},
    {"high surrogate then a letter", "\"\\ud83d\\u0041\"", 0, 1, false,
     "invalid UTF-16 surrogate escape in a string"},
    {"the first refused escape wins", "\"\\ud800\\x\"", 0, 1, false,
     "invalid UTF-16 surrogate escape in a string"},
    {"control characters before the value are white space", "\x01\x02", 0, 2, true,
     "unexpected end of input"},
    {"NUL, then a byte that starts nothing", "\x00\xff<html>", 8, 1, false, "expected a value"},
    /* cJSON given these four bytes (a NUL after them makes it skip the mark). */
    {"a byte order mark with one byte after it is not skipped",
     "\xef\xbb\xbf"
     "1",
     0, 0, false, "expected a value"},
    /* What cJSON read, although JSON does not have it. */
    {"leading zero in an array", "[01]", 0, 2, false, "expected ',' or ']'"},
    {"trailing dot", "[1.]", 0, 1, false, "invalid number"},
    {"trailing dot at the end", "1.", 0, 0, true, "invalid number"},
    {"raw tab in a string", "[\"a\tb\"]", 0, 3, false, "control character in a string"},
    {"control character between tokens", "[1,\x01 2]", 0, 3, false, "expected a value"},
    {"\\u without four hex digits", "\"\\u12x4\"", 0, 1, false, "invalid escape in a string"},
};

static void test_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(errors); i++) {
                const struct error_case *c = &errors[i];
                size_t len = c->len ? c->len : strlen(c->text);
                const char *end = NULL;
                struct ao_json_parse_error err = {0};
                cJSON *json = ao_json_parse(c->text, len, &end, &err);
                if (!tap_ok(!json, "error: %s: refused", c->name)) {
                        cJSON_Delete(json);
                        continue;
                }
                tap_is_int(err.offset, c->offset, "error: %s: at byte %zu", c->name, c->offset);
                tap_is_int(err.at_end, c->at_end, "error: %s: %s", c->name,
                           c->at_end ? "the text ended inside the value" : "not at the end");
                tap_is_str(err.reason, c->reason, "error: %s: the reason", c->name);
        }
}

/* @n levels of @open ... @close around @inner. */
static char *nested(size_t n, const char *open, const char *inner, const char *close)
{
        struct ao_strbuf out = {0};
        for (size_t i = 0; i < n; i++)
                ao_strbuf_append(&out, open);
        ao_strbuf_append(&out, inner);
        for (size_t i = 0; i < n; i++)
                ao_strbuf_append(&out, close);
        return ao_strbuf_steal(&out);
}

static size_t depth_of(const cJSON *j)
{
        size_t depth = 0;
        for (; j && (cJSON_IsArray(j) || cJSON_IsObject(j)); j = j->child)
                depth++;
        return depth;
}

static void test_depth(void)
{
        struct {
                const char *name, *open, *inner, *close;
        } shapes[] = {
            {"arrays", "[", "", "]"},
            {"objects", "{\"a\":", "{}", "}"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(shapes); i++) {
                size_t inner_levels = shapes[i].inner[0] ? 1 : 0;
                char *ok = nested(AO_JSON_PARSE_MAX_DEPTH - inner_levels, shapes[i].open, shapes[i].inner,
                                  shapes[i].close);
                char *deep = nested(AO_JSON_PARSE_MAX_DEPTH + 1 - inner_levels, shapes[i].open,
                                    shapes[i].inner, shapes[i].close);
                struct ao_json_parse_error err = {0};
                cJSON *json = ao_json_parse(ok, strlen(ok), NULL, &err);
                tap_is_int(depth_of(json), 1000, "depth: 1000 levels of %s parse", shapes[i].name);
                cJSON_Delete(json);
                json = ao_json_parse(deep, strlen(deep), NULL, &err);
                tap_ok(!json, "depth: 1001 levels of %s are refused", shapes[i].name);
                cJSON_Delete(json);
                /* cJSON names the bracket that opens level 1001. */
                size_t bracket = strlen(shapes[i].open) * AO_JSON_PARSE_MAX_DEPTH;
                tap_is_int(err.offset, bracket, "depth: %s: at the bracket of level 1001", shapes[i].name);
                tap_is_str(err.reason, "nesting deeper than 1000 levels", "depth: %s: the reason",
                           shapes[i].name);
                free(ok);
                free(deep);
        }
}

static void test_parse_all(void)
{
        struct ao_json_parse_error err = {0};
        cJSON *json = ao_json_parse_all(" {\"a\":1} \r\n\t", 12, &err);
        tap_ok(cJSON_IsObject(json), "all: white space after the value");
        cJSON_Delete(json);

        json = ao_json_parse_all("{\"a\":1} x", 9, &err);
        tap_ok(!json, "all: text after the value is refused");
        tap_is_int(err.offset, 8, "all: at the first byte after the value and its white space");
        tap_is_str(err.reason, "text after the value", "all: the reason");
        tap_ok(!err.at_end, "all: not at the end");

        json = ao_json_parse_all("[1] \v", 5, &err);
        tap_ok(!json, "all: only JSON's white space may follow (not a vertical tab)");
        tap_is_int(err.offset, 4, "all: the vertical tab named");

        json = ao_json_parse_all("[1,", 3, &err);
        tap_ok(!json && err.offset == 3 && err.at_end, "all: errors of the value come through");

        json = ao_json_parse_all(NULL, 0, &err);
        tap_ok(!json && err.offset == 0 && err.at_end, "all: no text is an empty one");
        json = ao_json_parse(NULL, 5, NULL, &err);
        tap_ok(!json && err.offset == 0 && err.at_end, "parse: no text is an empty one");
        tap_ok(ao_json_parse("[", 1, NULL, NULL) == NULL, "parse: the error is optional");
}

static void test_error_byte(void)
{
        struct ao_json_parse_error err = {0};
        (void) ao_json_parse("{\"kind\":\"PodList\",\"items\":[", 27, NULL, &err);
        tap_is_int(ao_json_parse_error_byte(&err, 27), 26, "error byte: the last byte when the text ran out");
        (void) ao_json_parse("[1 2]", 5, NULL, &err);
        tap_is_int(ao_json_parse_error_byte(&err, 5), 3, "error byte: the offset itself otherwise");
        (void) ao_json_parse("", 0, NULL, &err);
        tap_is_int(ao_json_parse_error_byte(&err, 0), 0, "error byte: 0 for an empty text");
}

/* Each thread parses its own texts; an offset or tree crossing over would show. */
struct worker {
        const char *bad;
        size_t bad_offset;
        const char *good;
        const char *good_tree;
        int failures;
};

static void *work(void *userdata)
{
        struct worker *w = userdata;
        for (int i = 0; i < 2000; i++) {
                struct ao_json_parse_error err = {0};
                cJSON *json = ao_json_parse(w->bad, strlen(w->bad), NULL, &err);
                if (json || err.offset != w->bad_offset)
                        w->failures++;
                cJSON_Delete(json);
                json = ao_json_parse(w->good, strlen(w->good), NULL, &err);
                char *got = json ? dumped(json) : NULL;
                if (!got || strcmp(got, w->good_tree) != 0)
                        w->failures++;
                free(got);
                cJSON_Delete(json);
        }
        return NULL;
}

static void test_threads(void)
{
        struct worker w[2] = {
            {"{\"name\" \"a\"}", 8, "[18446744073709551615,\"x\"]", "[#18446744073709551615,\"x\"]", 0},
            {"[1,,2]", 3, "{\"a\":{\"b\":9007199254740993}}", "{\"a\":{\"b\":#9007199254740993}}", 0},
        };
        pthread_t t[2];
        for (size_t i = 0; i < 2; i++)
                if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
                        tap_bail("pthread_create");
        for (size_t i = 0; i < 2; i++)
                (void) pthread_join(t[i], NULL);
        tap_is_int(w[0].failures + w[1].failures, 0,
                   "threads: two threads parsing at once get their own results");
}

int main(void)
{
        test_trees();
        test_errors();
        test_depth();
        test_parse_all();
        test_error_byte();
        test_threads();
        return tap_done();
}
