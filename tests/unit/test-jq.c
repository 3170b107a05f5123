/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/jq/ (cache.c, compile.c): one output, several (an array), none
 * (null); runtime errors (error/1 with a string and with an object, type
 * errors, halt_error) and compile errors with their messages, cached
 * failures reported on every call; the cache (hits, growth, failures
 * counted); canonical result text; numbers beyond 2^53 and beyond double;
 * NaN; unicode; deep values; the output cap; ao_jq_check() agreeing with
 * the cache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/jq.h"
#include "ao/yaml.h"

static const char pod[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-0\","
                          "\"namespace\":\"default\",\"uid\":\"1d2c\",\"resourceVersion\":\"42\"},"
                          "\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"app\",\"image\":"
                          "\"nginx:1.25\"},{\"name\":\"sidecar\",\"image\":\"envoy\"}]},"
                          "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.7\"}}";

/*
 * Apply @filter to the JSON text @input. Returns the canonical text of the
 * result (checked to equal that of the returned tree), or "ERR <code>: msg".
 */
static char *apply(struct ao_jq_cache *c, const char *filter, const char *input)
{
        struct ao_error err = {0};
        cJSON *in = cJSON_Parse(input), *out = NULL;
        char *text = NULL, *again, buf[1024];
        int r;

        if (!in)
                tap_bail("test input does not parse");
        r = ao_jq_apply(c, filter, in, &out, &text, &err);
        cJSON_Delete(in);
        if (r < 0) {
                (void) snprintf(buf, sizeof(buf), "ERR %d: %s", r, err.msg);
                return strdup(buf);
        }
        again = ao_json_canonical(out);
        if (strcmp(again, text) != 0)
                printf("# ret_text '%s' is not the canonical text of the result '%s'\n", text, again);
        free(again);
        cJSON_Delete(out);
        return text;
}

static void check(struct ao_jq_cache *c, const char *filter, const char *input, const char *want)
{
        char *got = apply(c, filter, input), name[256];
        size_t n = 0;

        /* a test name is one line */
        for (const char *p = filter; *p && n < sizeof(name) - 3; p++)
                if (*p == '\n' || *p == '\t') {
                        name[n++] = '\\';
                        name[n++] = *p == '\n' ? 'n' : 't';
                } else {
                        name[n++] = *p;
                }
        name[n] = '\0';
        tap_is_str(got, want, "%s", name);
        free(got);
}

static void test_outputs(struct ao_jq_cache *c)
{
        check(c, ".metadata.name", pod, "\"web-0\"");
        check(c, ".", "{\"b\":1,\"a\":{\"d\":[3,2,1],\"c\":null}}",
              "{\"a\":{\"c\":null,\"d\":[3,2,1]},\"b\":1}");
        check(c, ".spec.containers[].name", pod, "[\"app\",\"sidecar\"]");
        check(c, ".spec.containers[] | {name, image}", pod,
              "[{\"image\":\"nginx:1.25\",\"name\":\"app\"},{\"image\":\"envoy\",\"name\":\"sidecar\"}]");
        check(c, "[.spec.containers[].name]", pod, "[\"app\",\"sidecar\"]");
        check(c, "empty", pod, "null");
        check(c, ".spec.containers[] | select(.name == \"none\")", pod, "null");
        check(c, ".metadata.labels", pod, "null");
        check(c, ".metadata.labels // {}", pod, "{}");
        check(c, "{z: .kind, a: .apiVersion, m: .metadata | {uid, name}}", pod,
              "{\"a\":\"v1\",\"m\":{\"name\":\"web-0\",\"uid\":\"1d2c\"},\"z\":\"Pod\"}");
        check(c, "1, 2, 3", "null", "[1,2,3]");
        check(c, "null, null", "{}", "[null,null]");
        check(c, "[]", "{}", "[]");
        check(c, "true, false", "{}", "[true,false]");
        check(c, "halt", pod, "null");
        check(c, "1, halt, 2", pod, "1");
        check(c, "try error(\"x\") catch .", pod, "\"x\"");
        check(c, ".a", "[]", "ERR -22: jqFilter '.a': Cannot index array with string \"a\"");
        check(c, ".[]?", "3", "null");
        check(c, "input", "{}", "ERR -22: jqFilter 'input': No more inputs");
        check(c, "$__loc__", "{}", "{\"file\":\"<top-level>\",\"line\":1}");
        check(c, "[inputs]", "{}", "ERR -22: jqFilter '[inputs]': No more inputs");
        check(c, "debug | .kind", pod, "\"Pod\"");
        check(c, ".metadata | [.name, .missing] | map(ltrimstr(\"web-\"), rtrimstr(\"-0\"))", pod,
              "[\"0\",\"web\",null,null]");
        check(c, "[(\"ab\u00e9\", 1, null) | ltrimstr(\"a\", 2), rtrimstr(\"\u00e9\", \"\")]", "null",
              "[\"b\u00e9\",\"ab\u00e9\",\"ab\",\"ab\u00e9\",1,1,1,1,null,null,null,null]");
        check(c, "# leading comment\n.metadata.name | ltrimstr(\"w\")", pod, "\"eb-0\"");
        check(c, "def ltrimstr($x): 7; ltrimstr(1)", pod, "7");
}

static void test_numbers_and_strings(struct ao_jq_cache *c)
{
        check(c, ".", "12345678901234567890", "12345678901234567000");
        check(c, ".", "9007199254740993", "9007199254740992");
        check(c, ".", "-0.1", "-0.1");
        check(c, ".", "1e300", "1e+300");
        check(c, ". * 10", "1e308", "1.7976931348623157e+308");
        check(c, ". * -10", "1e308", "-1.7976931348623157e+308");
        check(c, "nan", "null", "null");
        check(c, "[nan, infinite]", "null", "[null,1.7976931348623157e+308]");
        check(c, ".x + 1", "{\"x\":41}", "42");
        check(c, ".", "\"caf\\u00e9 \\u65e5\\u672c \\ud83d\\ude00\"", "\"café 日本 😀\"");
        check(c, "length", "\"caf\\u00e9 \\ud83d\\ude00\"", "6");
        check(c, "explode", "\"\\u00e9\\ud83d\\ude00\"", "[233,128512]");
        check(c, "keys", "{\"\\u00fc\":1,\"a\":2}", "[\"a\",\"ü\"]");
        check(c, ".", "\"tab\\tquote\\\"nl\\n\"", "\"tab\\tquote\\\"nl\\n\"");
        check(c, "\"a\\u0000b\"", "null", "\"a\"");
        check(c, "\"x\" * 3", "null", "\"xxx\"");
}

static void test_errors(struct ao_jq_cache *c)
{
        size_t before;

        check(c, "error(\"boom\")", pod, "ERR -22: jqFilter 'error(\"boom\")': boom");
        check(c, "error(\"two\\nlines\\u0007\")", pod,
              "ERR -22: jqFilter 'error(\"two\\nlines\\u0007\")': two\\nlines\\x07");
        check(c, "error({a: 1})", pod, "ERR -22: jqFilter 'error({a: 1})': {\"a\":1} (not a string)");
        check(c, ".metadata.name + 1", pod,
              "ERR -22: jqFilter '.metadata.name + 1': string (\"web-0\") and number (1) cannot be added");
        check(c, "\"bye\" | halt_error(1)", pod, "ERR -22: jqFilter '\"bye\" | halt_error(1)': bye");
        check(c, "1, error(\"late\")", pod, "ERR -22: jqFilter '1, error(\"late\")': late");

        before = ao_jq_cache_size(c);
        for (int i = 0; i < 3; i++)
                check(c, ".foo |||", pod,
                      "ERR -22: jqFilter '.foo |||': syntax error, unexpected '|' (Unix shell quoting "
                      "issues?) at "
                      "<top-level>, line 1");
        tap_is_int(ao_jq_cache_size(c), before + 1, "a compile error is cached once and reported every time");
        check(c, "nosuchfn(1)", pod,
              "ERR -22: jqFilter 'nosuchfn(1)': nosuchfn/1 is not defined at <top-level>, line 1");
        check(c, "\"abc", pod,
              "ERR -22: jqFilter '\"abc': syntax error, unexpected $end, expecting QQSTRING_TEXT or "
              "QQSTRING_INTERP_START or QQSTRING_END (Unix shell quoting issues?) at <top-level>, line 1");
        check(c, "import \"x\" as x; .", pod,
              "ERR -22: jqFilter 'import \"x\" as x; .': module not found: x");
        check(c, "\n.a |\n\t|", pod,
              "ERR -22: jqFilter '\\n.a |\\n\\t|': syntax error, unexpected '|' (Unix shell quoting issues?) "
              "at "
              "<top-level>, line 3");
        check(c, "repeat(1)", pod, "ERR -7: jqFilter 'repeat(1)': more than 100000 results");
        /* the program is usable after each of these */
        check(c, "error(\"boom\")", "{}", "ERR -22: jqFilter 'error(\"boom\")': boom");
        check(c, "try error(\"x\") catch ., .a", "{\"a\":2}", "[\"x\",2]");
        check(c, "repeat(1)", "null", "ERR -7: jqFilter 'repeat(1)': more than 100000 results");
        check(c, "fromjson", "\"{\"",
              "ERR -22: jqFilter 'fromjson': Unfinished JSON term at EOF at line 1, column 1 (while parsing "
              "'{')");
        check(c, "fromjson", "\"{\\\"a\\\":1}\"", "{\"a\":1}");
        check(c, "[.[] | try fromjson catch \"bad\"]", "[\"{\",\"[1]\",\"x\"]", "[\"bad\",[1],\"bad\"]");
}

/*
 * libjq 1.6 crashes on global matching with a regex that matches an empty string over non-ASCII
 * text, and loops forever in gsub with one: those are errors here. Every other use of the regex
 * builtins gives jq's own answers.
 */
static void test_regex_guard(struct ao_jq_cache *c)
{
        const char *refused = "regex \"x*\" matches an empty string: global matching with it is refused "
                              "(it crashes or hangs jq 1.6)";
        char want[512];

        (void) snprintf(want, sizeof(want), "ERR -22: jqFilter '[match(\"x*\"; \"g\")]': %s", refused);
        check(c, "[match(\"x*\"; \"g\")]", "\"h\u00e9llo\"", want);
        (void) snprintf(want, sizeof(want), "ERR -22: jqFilter 'gsub(\"x*\"; \"-\")': %s", refused);
        check(c, "gsub(\"x*\"; \"-\")", "\"abc\"", want);
        (void) snprintf(want, sizeof(want), "ERR -22: jqFilter '[scan(\"x*\")]': %s", refused);
        check(c, "[scan(\"x*\")]", "\"h\u00e9llo\"", want);
        check(c, "gsub(\"-\"; \"_\")", "\"a-b-c\"", "\"a_b_c\"");
        check(c, "sub(\"-\"; \"_\")", "\"a-b-c\"", "\"a_b-c\"");
        check(c, "[match(\"l+\"; \"g\") | .offset]", "\"h\u00e9llo l\"", "[2,6]");
        check(c, "[scan(\"[0-9]+\")]", "\"a1b22c333\"", "[\"1\",\"22\",\"333\"]");
        check(c, "split(\", *\"; null)", "\"a, b,c\"", "[\"a\",\"b\",\"c\"]");
        check(c, "[splits(\"-\")]", "\"x-y\"", "[\"x\",\"y\"]");
        check(c, "test(\"^web\")", "\"web-0\"", "true");
        check(c, "test([\"WEB\", \"i\"])", "\"web-0\"", "true");
        check(c, "capture(\"(?<n>[0-9]+)\")", "\"web-42\"", "{\"n\":\"42\"}");
        check(c, "[match(\"x*\") | .length]", "\"h\u00e9llo\"", "[0]");
        check(c, "split(\"-\")", "\"a-b\"", "[\"a\",\"b\"]");
        check(c, "ltrimstr(\"web-\") | test(\"0\")", "\"web-0\"", "true");
}

static void test_long_filter(struct ao_jq_cache *c)
{
        char filter[600], *got;

        memset(filter, ' ', sizeof(filter));
        memcpy(filter, "error(\"long\")", strlen("error(\"long\")"));
        filter[sizeof(filter) - 1] = '\0';
        got = apply(c, filter, "{}");
        tap_ok(strncmp(got, "ERR -22: jqFilter 'error(\"long\")  ", 34) == 0 && strstr(got, "...': long") &&
                   strlen(got) < 300,
               "a long filter is shortened in the message");
        if (!strstr(got, "...': long"))
                printf("#   got '%s'\n", got);
        free(got);
}

static void test_depth(struct ao_jq_cache *c)
{
        char *input = malloc(2 * 1000 + 1), *got;

        for (int i = 0; i < 1000; i++) {
                input[i] = '[';
                input[1000 + i] = ']';
        }
        input[2000] = '\0';
        got = apply(c, "length", input);
        tap_is_str(got, "1", "input 1000 levels deep");
        free(got);
        got = apply(c, "[.]", input);
        tap_is_str(got, "ERR -7: jqFilter '[.]': result nested deeper than 1000 levels", "a result too deep");
        free(got);
        got = apply(c, "reduce range(5000) as $i (0; [.]) | 1", "null");
        tap_is_str(got, "1", "deep intermediate values are fine");
        free(got);
        free(input);

        /* cJSON_Parse stops at 1000 levels; a tree built in code does not */
        struct ao_error err = {0};
        cJSON *deep = cJSON_CreateArray(), *out = NULL;
        for (int i = 0; i < 1000; i++) {
                cJSON *outer = cJSON_CreateArray();
                cJSON_AddItemToArray(outer, deep);
                deep = outer;
        }
        tap_is_int(ao_jq_apply(c, "1", deep, &out, NULL, &err), -EINVAL, "input 1001 levels deep");
        tap_is_str(err.msg, "jqFilter '1': input nested deeper than 1000 levels", "its message");
        cJSON_Delete(deep);
}

static void test_cache(void)
{
        struct ao_jq_cache *c = ao_jq_cache_new();
        struct ao_error err = {0};
        char filter[64], *text = NULL;
        cJSON *in = cJSON_Parse(pod), *out = NULL;
        int r, failures = 0;

        tap_is_int(ao_jq_cache_size(c), 0, "new cache is empty");
        for (int i = 0; i < 1000; i++) {
                r = ao_jq_apply(c, ".metadata.name", in, &out, NULL, &err);
                failures += r < 0 || !cJSON_IsString(out) || strcmp(out->valuestring, "web-0") != 0;
                cJSON_Delete(out);
        }
        tap_is_int(failures, 0, "1000 applications");
        tap_is_int(ao_jq_cache_size(c), 1, "one program compiled for them");
        for (int i = 0; i < 100; i++) {
                (void) snprintf(filter, sizeof(filter), ".spec.containers | length + %d", i);
                r = ao_jq_apply(c, filter, in, &out, &text, &err);
                (void) snprintf(filter, sizeof(filter), "%d", 2 + i);
                failures += r < 0 || strcmp(text, filter) != 0;
                cJSON_Delete(out);
                free(text);
        }
        tap_is_int(failures, 0, "100 distinct filters (the table grows)");
        tap_is_int(ao_jq_cache_size(c), 101, "101 programs");
        for (int i = 99; i >= 0; i--) {
                (void) snprintf(filter, sizeof(filter), ".spec.containers | length + %d", i);
                r = ao_jq_apply(c, filter, in, &out, NULL, &err);
                failures += r < 0 || out->valuedouble != 2 + i;
                cJSON_Delete(out);
        }
        tap_is_int(failures, 0, "all of them found again after growing");
        tap_is_int(ao_jq_cache_size(c), 101, "still 101 programs");

        out = (cJSON *) 1;
        text = (char *) 1;
        r = ao_jq_apply(c, "error(\"x\")", in, &out, &text, &err);
        tap_ok(r == -EINVAL && out == (cJSON *) 1 && text == (char *) 1, "outputs untouched on error");
        r = ao_jq_apply(c, "error(\"x\")", in, &out, &text, NULL);
        tap_is_int(r, -EINVAL, "reterr may be NULL");

        cJSON_Delete(in);
        tap_ok(ao_jq_cache_free(c) == NULL, "free");
        tap_ok(ao_jq_cache_free(NULL) == NULL, "free(NULL)");
}

/* Inputs built as trees, not parsed: raw values, a missing key name, big arrays. */
static void test_built_input(struct ao_jq_cache *c)
{
        struct ao_error err = {0};
        cJSON *in = cJSON_CreateObject(), *out = NULL, *arr = cJSON_CreateArray();
        char *text = NULL;
        int r;

        cJSON_AddItemToObject(in, "raw", cJSON_CreateRaw("{\"r\":[1,2]}"));
        for (int i = 0; i < 10000; i++)
                cJSON_AddItemToArray(arr, cJSON_CreateNumber(i));
        cJSON_AddItemToObject(in, "arr", arr);
        r = ao_jq_apply(c, "[.raw.r[1], (.arr | length), .arr[9999]]", in, &out, &text, &err);
        tap_ok(r == 0 && strcmp(text, "[2,10000,9999]") == 0, "raw values and a 10000-element array: %s",
               r == 0 ? text : err.msg);
        free(text);
        cJSON_Delete(out);
        r = ao_jq_apply(c, ".arr | map(. * 2) | .[9999]", in, &out, NULL, &err);
        tap_ok(r == 0 && out->valuedouble == 19998, "mapped array");
        cJSON_Delete(out);
        cJSON_Delete(in);
}

/* The configuration check compiles as the cache does: same verdicts, jq's message in one line. */
static void test_check(void)
{
        char reason[256], tiny[8];

        tap_is_int(ao_jq_check(".metadata.name", reason, sizeof(reason)), 0, "check: a valid filter");
        tap_is_int(ao_jq_check(".foo |", reason, sizeof(reason)), -EINVAL, "check: a syntax error");
        tap_is_str(reason,
                   "syntax error, unexpected $end (Unix shell quoting issues?) at <top-level>, line 1",
                   "check: jq's first message, one line");
        tap_is_int(ao_jq_check("[.[] | ltrimstr(\"a\")]", reason, sizeof(reason)), 0,
                   "check: a filter behind the trimstr prelude");
        tap_is_int(ao_jq_check("import \"m\" as m; .", reason, sizeof(reason)), -EINVAL,
                   "check: an import without modules");
        tap_is_int(ao_jq_check("{a: }", tiny, sizeof(tiny)), -EINVAL, "check: a short reason buffer");
        tap_is_str(tiny, "syntax ", "check: the reason is cut to fit");
}

int main(void)
{
        struct ao_jq_cache *c = ao_jq_cache_new();

        test_outputs(c);
        test_numbers_and_strings(c);
        test_errors(c);
        test_regex_guard(c);
        test_long_filter(c);
        test_depth(c);
        test_built_input(c);
        ao_jq_cache_free(c);
        test_cache();
        test_check();
        return tap_done();
}
