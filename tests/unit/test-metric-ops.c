/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/metrics/operations.c: every valid form of a METRICS_PATH
 * operation (the documentation's examples included), every class of invalid
 * one with its exact message, positions on multi-line input, the stream
 * forms (empty, whitespace, several per line, BOM, CRLF), the limits, deep
 * nesting, and ao_metric_ops_to_json(). Results are compared as the compact
 * JSON of ao_metric_ops_to_json().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/metric-ops.h"
#include "ao/strbuf.h"

struct ok_case {
        const char *name;
        const char *text;
        const char *want; /* compact JSON of ao_metric_ops_to_json() */
};

struct fail_case {
        const char *name;
        const char *text;
        int code;
        const char *msg; /* with the filename "m.json" */
        size_t len;      /* of text; 0: strlen(text) */
};

#define DOC1 "{\"name\":\"metric_name\",\"action\":\"add\",\"value\":1,\"labels\":{\"label1\":\"value1\"}}"
#define DOC2 "{\"name\":\"metric_name\",\"action\":\"set\",\"value\":33,\"labels\":{\"label1\":\"value1\"}}"
#define DOC3                                                                                             \
        "{\"name\":\"metric_name\",\"action\":\"observe\",\"value\":42, \"buckets\": [1,2,5,10,20,50], " \
        "\"labels\":{\"label1\":\"value1\"}}"
#define DOC4 "{\"name\":\"metric_name\",\"add\":1,\"labels\":{\"label1\":\"value1\"}}"
#define DOC5                                                                                        \
        "{\"group\":\"group1\", \"name\":\"hook_metric_count\",  \"action\":\"add\", \"value\":1, " \
        "\"labels\":{\"label1\":\"value1\"}}"
#define DOC6 "{\"group\":\"group_name_1\", \"action\":\"expire\"}"

#define WANT1 "{\"action\":\"add\",\"name\":\"metric_name\",\"value\":1,\"labels\":{\"label1\":\"value1\"}}"
#define WANT2 "{\"action\":\"set\",\"name\":\"metric_name\",\"value\":33,\"labels\":{\"label1\":\"value1\"}}"
#define WANT3                                                                                         \
        "{\"action\":\"observe\",\"name\":\"metric_name\",\"value\":42,\"buckets\":[1,2,5,10,20,50]," \
        "\"labels\":{\"label1\":\"value1\"}}"
#define WANT5                                                                                             \
        "{\"action\":\"add\",\"name\":\"hook_metric_count\",\"group\":\"group1\",\"value\":1,\"labels\":" \
        "{\"label1\":\"value1\"}}"
#define WANT6 "{\"action\":\"expire\",\"group\":\"group_name_1\"}"

static const struct ok_case ok_cases[] = {
    /* The examples of the documentation. */
    {"doc: counter", DOC1, "[" WANT1 "]"},
    {"doc: gauge", DOC2, "[" WANT2 "]"},
    {"doc: histogram", DOC3, "[" WANT3 "]"},
    {"doc: add shortcut", DOC4, "[" WANT1 "]"},
    {"doc: grouped counter", DOC5, "[" WANT5 "]"},
    {"doc: expire", DOC6, "[" WANT6 "]"},
    {"doc: all of them, one per line", DOC1 "\n" DOC2 "\n" DOC3 "\n" DOC4 "\n" DOC5 "\n" DOC6 "\n",
     "[" WANT1 "," WANT2 "," WANT3 "," WANT1 "," WANT5 "," WANT6 "]"},

    /* Stream forms. */
    {"empty input", "", "[]"},
    {"whitespace only", " \n\t\r\n  \n", "[]"},
    {"two on one line, no space", "{\"name\":\"a\",\"add\":1}{\"name\":\"b\",\"set\":2}",
     "[{\"action\":\"add\",\"name\":\"a\",\"value\":1},{\"action\":\"set\",\"name\":\"b\",\"value\":2}]"},
    {"spread over lines", "{\n  \"name\": \"a\",\n  \"add\": 1\n}\n\n{\"name\":\"b\",\n\"set\":2}\n",
     "[{\"action\":\"add\",\"name\":\"a\",\"value\":1},{\"action\":\"set\",\"name\":\"b\",\"value\":2}]"},
    {"CRLF line ends", "{\"name\":\"a\",\"add\":1}\r\n{\"name\":\"b\",\"add\":2}\r\n",
     "[{\"action\":\"add\",\"name\":\"a\",\"value\":1},{\"action\":\"add\",\"name\":\"b\",\"value\":2}]"},
    {"byte order mark at the start", "\xEF\xBB\xBF{\"name\":\"a\",\"add\":1}",
     "[{\"action\":\"add\",\"name\":\"a\",\"value\":1}]"},

    /* Each action, long and short. */
    {"set shortcut", "{\"name\":\"g\",\"set\":-2.5}", "[{\"action\":\"set\",\"name\":\"g\",\"value\":-2.5}]"},
    {"add shortcut of zero", "{\"name\":\"c\",\"add\":0}",
     "[{\"action\":\"add\",\"name\":\"c\",\"value\":0}]"},
    {"grouped set", "{\"group\":\"g\",\"name\":\"m\",\"action\":\"set\",\"value\":7}",
     "[{\"action\":\"set\",\"name\":\"m\",\"group\":\"g\",\"value\":7}]"},
    {"grouped set shortcut", "{\"group\":\"g\",\"name\":\"m\",\"set\":7}",
     "[{\"action\":\"set\",\"name\":\"m\",\"group\":\"g\",\"value\":7}]"},
    {"grouped add shortcut", "{\"group\":\"g\",\"name\":\"m\",\"add\":1}",
     "[{\"action\":\"add\",\"name\":\"m\",\"group\":\"g\",\"value\":1}]"},
    {"observe: negative and fractional buckets",
     "{\"name\":\"h\",\"action\":\"observe\",\"value\":-0.25,\"buckets\":[-1,-0.5,0,0.001,1e3]}",
     "[{\"action\":\"observe\",\"name\":\"h\",\"value\":-0.25,\"buckets\":[-1,-0.5,0,0.001,1000]}]"},
    {"observe: one bucket", "{\"name\":\"h\",\"action\":\"observe\",\"value\":3,\"buckets\":[5]}",
     "[{\"action\":\"observe\",\"name\":\"h\",\"value\":3,\"buckets\":[5]}]"},
    {"expire ignores name, value and labels",
     "{\"group\":\"g\",\"action\":\"expire\",\"name\":\"not a name\",\"value\":1,\"labels\":{\"__x\":\"y\"}}",
     "[{\"action\":\"expire\",\"group\":\"g\"}]"},
    {"buckets of set are ignored", "{\"name\":\"g\",\"action\":\"set\",\"value\":1,\"buckets\":[3,2,1]}",
     "[{\"action\":\"set\",\"name\":\"g\",\"value\":1}]"},

    /* Members. */
    {"labels sorted by name",
     "{\"name\":\"m\",\"add\":1,\"labels\":{\"b\":\"2\",\"a\":\"1\",\"B\":\"0\",\"_c\":\"3\",\"a1\":\"4\"}}",
     "[{\"action\":\"add\",\"name\":\"m\",\"value\":1,\"labels\":{\"B\":\"0\",\"_c\":\"3\",\"a\":\"1\","
     "\"a1\":"
     "\"4\",\"b\":\"2\"}}]"},
    {"empty labels object", "{\"name\":\"m\",\"add\":1,\"labels\":{}}",
     "[{\"action\":\"add\",\"name\":\"m\",\"value\":1}]"},
    {"label values: empty, UTF-8, escapes",
     "{\"name\":\"m\",\"add\":1,\"labels\":{\"e\":\"\",\"u\":\"caf\xC3\xA9 "
     "\\u00e9\\u2603\",\"q\":\"a\\\"b\\\\c\\n\"}}",
     "[{\"action\":\"add\",\"name\":\"m\",\"value\":1,\"labels\":{\"e\":\"\",\"q\":\"a\\\"b\\\\c\\n\",\"u\":"
     "\"caf\xC3\xA9 \xC3\xA9\xE2\x98\x83\"}}]"},
    {"metric names with colons and digits", "{\"name\":\":a:b_1:\",\"add\":1}{\"name\":\"_\",\"add\":1}",
     "[{\"action\":\"add\",\"name\":\":a:b_1:\",\"value\":1},{\"action\":\"add\",\"name\":\"_\",\"value\":1}"
     "]"},
    {"null counts as absent",
     "{\"name\":\"m\",\"action\":\"add\",\"value\":1,\"labels\":null,\"group\":null,\"set\":null,\"buckets\":"
     "null}",
     "[{\"action\":\"add\",\"name\":\"m\",\"value\":1}]"},
    {"unknown members are skipped",
     "{\"name\":\"m\",\"x\":[1,{\"y\":[true,false,null]}],\"add\":1,\"Name\":42,\"z\":\"\\u1234\",\"w\":{}}",
     "[{\"action\":\"add\",\"name\":\"m\",\"value\":1}]"},
    {"number forms", "{\"name\":\"a\",\"add\":1E2}{\"name\":\"b\",\"add\":-0}{\"name\":\"c\",\"add\":2.5e-1}",
     "[{\"action\":\"add\",\"name\":\"a\",\"value\":100},{\"action\":\"add\",\"name\":\"b\",\"value\":-0},"
     "{\"action\":\"add\",\"name\":\"c\",\"value\":0.25}]"},
    {"group with any characters", "{\"group\":\"my group/\xC3\xA9\",\"action\":\"expire\"}",
     "[{\"action\":\"expire\",\"group\":\"my group/\xC3\xA9\"}]"},
};

#define F(text) "{\"name\":\"m\",\"action\":\"add\",\"value\":1" text "}"
#define AT1     "m.json:1:1: operation 0: "

static const struct fail_case fail_cases[] = {
    /* Stream. */
    {"array of operations", "[" DOC1 "]", -EINVAL,
     AT1 "an array is not an operation: write one JSON object per operation"},
    {"number at top level", "42", -EINVAL, AT1 "expected an operation object"},
    {"string at top level", "\"x\"", -EINVAL, AT1 "expected an operation object"},
    {"null at top level", "null", -EINVAL, AT1 "expected an operation object"},
    {"trailing garbage", DOC6 " x", -EINVAL, "m.json:1:45: operation 1: expected an operation object"},
    {"trailing comma", DOC6 ",", -EINVAL, "m.json:1:44: operation 1: expected an operation object"},
    {"stray closing brace", DOC6 "}", -EINVAL, "m.json:1:44: operation 1: expected an operation object"},
    {"byte order mark later", DOC6 "\xEF\xBB\xBF" DOC6, -EINVAL,
     "m.json:1:44: operation 1: expected an operation object"},
    {"truncated object", "{\"name\":\"a\",\"add\":1", -EINVAL,
     "m.json:1:20: operation 0: unexpected end of input"},
    {"truncated after a key", "{\"name\"", -EINVAL, "m.json:1:8: operation 0: unexpected end of input"},
    {"unterminated string", "{\"name\":\"ab", -EINVAL, "m.json:1:9: operation 0: unterminated string"},
    {"unterminated escape", "{\"name\":\"ab\\", -EINVAL, "m.json:1:9: operation 0: unterminated string"},
    {"only an opening brace", "\n\n   {", -EINVAL, "m.json:3:5: operation 0: unexpected end of input"},
    {"syntax error before the end", "{\"name\" \"a\", \"add\":1", -EINVAL,
     "m.json:1:9: operation 0: invalid JSON"},
    {"missing colon", "{\"name\" \"a\"}", -EINVAL, "m.json:1:9: operation 0: invalid JSON"},
    {"missing comma", "{\"name\":\"a\" \"add\":1}", -EINVAL, "m.json:1:13: operation 0: invalid JSON"},
    {"trailing comma in object", "{\"name\":\"a\",\"add\":1,}", -EINVAL,
     "m.json:1:21: operation 0: invalid JSON"},
    {"bare word", "{\"name\":\"a\",\"add\":one}", -EINVAL, "m.json:1:19: operation 0: invalid JSON"},
    {"mismatched brackets", "{\"x\":[1}]", -EINVAL, "m.json:1:8: operation 0: invalid JSON"},
    /* cJSON points one past a member name that does not open with a quote. */
    {"single quotes", "{'name':'a'}", -EINVAL, "m.json:1:3: operation 0: invalid JSON"},
    {"bad escape", "{\"name\":\"\\x41\",\"add\":1}", -EINVAL, "m.json:1:10: operation 0: invalid JSON"},
    {"lone surrogate escape", "{\"name\":\"\\ud800\",\"add\":1}", -EINVAL,
     "m.json:1:10: operation 0: invalid JSON"},
    {"control character in a string", "{\"name\":\"a\x01\",\"add\":1}", -EINVAL,
     "m.json:1:11: operation 0: control character 0x01 in a string"},
    {"tab in a string", "{\"name\":\"a\tb\",\"add\":1}", -EINVAL,
     "m.json:1:11: operation 0: control character 0x09 in a string"},
    {"control character outside a string", "{\"name\":\"a\",\f\"add\":1}", -EINVAL,
     "m.json:1:13: operation 0: control character 0x0c outside a string"},
    {"NUL byte between operations", DOC6 "\n\0" DOC6, -EINVAL,
     "m.json:2:1: operation 1: expected an operation object", sizeof(DOC6 "\n\0" DOC6) - 1},
    {"escaped NUL", "{\"name\":\"a\",\"add\":1,\"labels\":{\"l\":\"x\\u0000y\"}}", -EINVAL,
     "m.json:1:37: operation 0: \\u0000 in a string is not supported"},
    {"leading zero", "{\"name\":\"a\",\"add\":01}", -EINVAL, "m.json:1:19: operation 0: invalid number"},
    {"trailing dot", "{\"name\":\"a\",\"add\":1.}", -EINVAL, "m.json:1:19: operation 0: invalid number"},
    {"empty exponent", "{\"name\":\"a\",\"add\":1e}", -EINVAL, "m.json:1:19: operation 0: invalid number"},
    {"minus alone", "{\"name\":\"a\",\"add\":-}", -EINVAL, "m.json:1:19: operation 0: invalid number"},
    {"minus Infinity", "{\"name\":\"a\",\"add\":-Infinity}", -EINVAL,
     "m.json:1:19: operation 0: invalid number"},
    {"NaN", "{\"name\":\"a\",\"add\":NaN}", -EINVAL, "m.json:1:19: operation 0: invalid JSON"},
    {"hex number", "{\"name\":\"a\",\"add\":0x10}", -EINVAL, "m.json:1:20: operation 0: invalid JSON"},
    {"plus sign", "{\"name\":\"a\",\"add\":+1}", -EINVAL, "m.json:1:19: operation 0: invalid JSON"},

    /* Types, as Go's decoder checks them. */
    {"duplicate key", "{\"name\":\"a\",\"add\":1,\"name\":\"b\"}", -EINVAL, AT1 "duplicate key 'name'"},
    {"duplicate unknown key", F(",\"x\":1,\"x\":2"), -EINVAL, AT1 "duplicate key 'x'"},
    {"duplicate label", F(",\"labels\":{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\"}"), -EINVAL,
     AT1 "duplicate key 'a'"},
    {"name not a string", "{\"name\":1,\"add\":1}", -EINVAL, AT1 "'name' is not a string"},
    {"action not a string", "{\"name\":\"m\",\"action\":[\"add\"],\"value\":1}", -EINVAL,
     AT1 "'action' is not a string"},
    {"value a string", "{\"name\":\"m\",\"action\":\"add\",\"value\":\"1\"}", -EINVAL,
     AT1 "'value' is not a number"},
    {"value a boolean", "{\"name\":\"m\",\"action\":\"add\",\"value\":true}", -EINVAL,
     AT1 "'value' is not a number"},
    {"value overflows", "{\"name\":\"m\",\"action\":\"add\",\"value\":1e999}", -EINVAL,
     AT1 "'value' is not a finite number"},
    {"negative value overflows", "{\"name\":\"m\",\"set\":-1e400}", -EINVAL,
     AT1 "'set' is not a finite number"},
    {"add not a number", "{\"name\":\"m\",\"add\":\"1\"}", -EINVAL, AT1 "'add' is not a number"},
    {"set not a number", "{\"name\":\"m\",\"set\":{}}", -EINVAL, AT1 "'set' is not a number"},
    {"buckets not an array", "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":5}", -EINVAL,
     AT1 "'buckets' is not an array"},
    {"bucket a string", "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[1,\"2\"]}", -EINVAL,
     AT1 "bucket 1 is not a number"},
    {"bucket overflows", "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[1,2,1e309]}",
     -EINVAL, AT1 "bucket 2 is not a finite number"},
    {"bucket of set type-checked", "{\"name\":\"h\",\"set\":1,\"buckets\":[null]}", -EINVAL,
     AT1 "bucket 0 is not a number"},
    {"labels an array", F(",\"labels\":[\"a\"]"), -EINVAL, AT1 "'labels' is not an object"},
    {"labels a string", F(",\"labels\":\"a=b\""), -EINVAL, AT1 "'labels' is not an object"},
    {"label value a number", F(",\"labels\":{\"a\":\"x\",\"code\":200}"), -EINVAL,
     AT1 "label 'code': value is not a string"},
    {"label value null", F(",\"labels\":{\"a\":null}"), -EINVAL, AT1 "label 'a': value is not a string"},
    {"label value of expire type-checked", "{\"group\":\"g\",\"action\":\"expire\",\"labels\":{\"a\":1}}",
     -EINVAL, AT1 "label 'a': value is not a string"},
    {"group not a string", "{\"group\":1,\"action\":\"expire\"}", -EINVAL, AT1 "'group' is not a string"},

    /* Actions. */
    {"no action", "{\"name\":\"m\",\"value\":1}", -EINVAL, AT1 "one of 'action', 'add' or 'set' is required"},
    {"empty object", "{}", -EINVAL, AT1 "one of 'action', 'add' or 'set' is required"},
    {"add and set", "{\"name\":\"m\",\"add\":1,\"set\":2}", -EINVAL,
     AT1 "'add' and 'set' are mutually exclusive"},
    {"add with action", "{\"name\":\"m\",\"add\":1,\"action\":\"add\"}", -EINVAL,
     AT1 "'add' cannot be combined with 'action'"},
    {"set with action", "{\"name\":\"m\",\"set\":1,\"action\":\"observe\"}", -EINVAL,
     AT1 "'set' cannot be combined with 'action'"},
    {"set with value", "{\"name\":\"m\",\"set\":1,\"value\":2}", -EINVAL,
     AT1 "'set' cannot be combined with 'value'"},
    {"unknown action", "{\"name\":\"m\",\"action\":\"inc\",\"value\":1}", -EINVAL,
     AT1 "unknown action 'inc' (expected add, set, observe or expire)"},
    {"action in capitals", "{\"name\":\"m\",\"action\":\"ADD\",\"value\":1}", -EINVAL,
     AT1 "unknown action 'ADD' (expected add, set, observe or expire)"},
    {"action with a newline, sanitized", "{\"name\":\"m\",\"action\":\"a\\nb\\u001b[1m\",\"value\":1}",
     -EINVAL, AT1 "unknown action 'a\\nb\\x1b[1m' (expected add, set, observe or expire)"},
    {"long action, cut",
     "{\"action\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xC3\xA9zzz\"}", -EINVAL,
     AT1 "unknown action 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' (expected add, "
         "set, observe "
         "or expire)"},

    /* Groups. */
    {"observe with a group",
     "{\"group\":\"g\",\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[1]}", -EINVAL,
     AT1 "observe is not supported for grouped metrics"},
    {"expire without a group", "{\"name\":\"m\",\"action\":\"expire\"}", -EINVAL,
     AT1 "expire requires a 'group'"},
    {"expire with a null group", "{\"group\":null,\"action\":\"expire\"}", -EINVAL,
     AT1 "expire requires a 'group'"},
    {"empty group", "{\"group\":\"\",\"name\":\"m\",\"add\":1}", -EINVAL, AT1 "'group' is empty"},
    {"group not UTF-8", "{\"group\":\"g\xFF\",\"action\":\"expire\"}", -EINVAL,
     AT1 "'group' is not valid UTF-8"},

    /* Names and values. */
    {"no name", "{\"action\":\"add\",\"value\":1}", -EINVAL, AT1 "'name' is required for action 'add'"},
    {"no name, grouped", "{\"group\":\"g\",\"set\":1}", -EINVAL, AT1 "'name' is required for action 'set'"},
    {"empty name", "{\"name\":\"\",\"add\":1}", -EINVAL, AT1 "'name' is empty"},
    {"name starting with a digit", "{\"name\":\"1m\",\"add\":1}", -EINVAL, AT1 "invalid metric name '1m'"},
    {"name with a dash", "{\"name\":\"my-metric\",\"add\":1}", -EINVAL,
     AT1 "invalid metric name 'my-metric'"},
    {"name with a control character", "{\"name\":\"a\\u0001b\",\"add\":1}", -EINVAL,
     AT1 "invalid metric name 'a\\x01b'"},
    {"name with invalid UTF-8", "{\"name\":\"a\xC0\x80\",\"add\":1}", -EINVAL,
     AT1 "invalid metric name 'a\xEF\xBF\xBD\xEF\xBF\xBD'"},
    {"no value", "{\"name\":\"m\",\"action\":\"set\"}", -EINVAL, AT1 "'value' is required for action 'set'"},
    {"null value", "{\"name\":\"m\",\"action\":\"add\",\"value\":null}", -EINVAL,
     AT1 "'value' is required for action 'add'"},
    {"no value for observe", "{\"name\":\"h\",\"action\":\"observe\",\"buckets\":[1]}", -EINVAL,
     AT1 "'value' is required for action 'observe'"},

    /* Buckets. */
    {"no buckets", "{\"name\":\"h\",\"action\":\"observe\",\"value\":1}", -EINVAL,
     AT1 "'buckets' is required for action 'observe'"},
    {"empty buckets", "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[]}", -EINVAL,
     AT1 "'buckets' is empty"},
    {"equal buckets", "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[1,2,2]}", -EINVAL,
     AT1 "buckets are not strictly increasing: bucket 2 (2) after 2"},
    {"decreasing buckets", "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[0.5,0.25]}",
     -EINVAL, AT1 "buckets are not strictly increasing: bucket 1 (0.25) after 0.5"},

    /* Labels. */
    {"label name with a digit first", F(",\"labels\":{\"1a\":\"x\"}"), -EINVAL,
     AT1 "invalid label name '1a'"},
    {"label name with a colon", F(",\"labels\":{\"a:b\":\"x\"}"), -EINVAL, AT1 "invalid label name 'a:b'"},
    {"empty label name", F(",\"labels\":{\"\":\"x\"}"), -EINVAL, AT1 "invalid label name ''"},
    {"label name with a space", F(",\"labels\":{\"a b\":\"x\"}"), -EINVAL, AT1 "invalid label name 'a b'"},
    {"reserved label name", F(",\"labels\":{\"__name__\":\"x\"}"), -EINVAL,
     AT1 "label name '__name__' is reserved (starts with \"__\")"},
    {"label value not UTF-8", F(",\"labels\":{\"a\":\"\xE2\x82\"}"), -EINVAL,
     AT1 "label 'a': value is not valid UTF-8"},
    {"label value a surrogate in UTF-8", F(",\"labels\":{\"a\":\"\xED\xA0\x80\"}"), -EINVAL,
     AT1 "label 'a': value is not valid UTF-8"},

    /* Positions and indexes. */
    {"third line, indented",
     "{\"name\":\"a\",\"add\":1}\n\n  {\"name\":\"b\",\"add\":\"x\"}\n{\"name\":\"c\",\"add\":1}\n", -EINVAL,
     "m.json:3:3: operation 1: 'add' is not a number"},
    {"columns count characters", "{\"name\":\"a\",\"add\":1,\"labels\":{\"l\":\"\xC3\xA9\xC3\xA9\"}} {}",
     -EINVAL, "m.json:1:42: operation 1: one of 'action', 'add' or 'set' is required"},
    {"CRLF and lone CR end lines", DOC6 "\r\n" DOC6 "\r" DOC6 "\r\n  {\"name\":1}", -EINVAL,
     "m.json:4:3: operation 3: 'name' is not a string"},
    /* The second comma is at 4:20; cJSON points one past it (see "single quotes"). */
    {"syntax error on a later line", DOC6 "\n" DOC6 "\n{\"group\":\"g\",\n \"action\":\"expire\",,}", -EINVAL,
     "m.json:4:21: operation 2: invalid JSON"},
    {"control character on a later line", DOC6 "\n{\"group\":\"g\x7F\x02\"}", -EINVAL,
     "m.json:2:13: operation 1: control character 0x02 in a string"},
};

static int parse(const char *text, size_t len, struct ao_metric_ops *ret, struct ao_error *err)
{
        return ao_metric_ops_parse(text, len, "m.json", ret, err);
}

static char *to_text(const struct ao_metric_ops *ops)
{
        cJSON *json = ao_metric_ops_to_json(ops);
        char *s = json ? cJSON_PrintUnformatted(json) : NULL;
        cJSON_Delete(json);
        return s;
}

static void test_ok(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(ok_cases); i++) {
                const struct ok_case *c = &ok_cases[i];
                struct ao_metric_ops ops = {0};
                struct ao_error err = {0};
                int r = parse(c->text, strlen(c->text), &ops, &err);
                if (!tap_ok(r == 0, "parse: %s", c->name)) {
                        tap_diag("%d %s", r, err.msg);
                        continue;
                }
                char *got = to_text(&ops);
                tap_is_str(got, c->want, "parse: %s: result", c->name);
                free(got);
                ao_metric_ops_done(&ops);
        }
}

static void test_fail(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(fail_cases); i++) {
                const struct fail_case *c = &fail_cases[i];
                struct ao_metric_op sentinel_op = {0};
                struct ao_metric_ops ops = {.ops = &sentinel_op, .n = 42};
                struct ao_error err = {0};
                int r = parse(c->text, c->len ? c->len : strlen(c->text), &ops, &err);
                tap_is_int(r, c->code, "refuse: %s", c->name);
                tap_is_str(err.msg, c->msg, "refuse: %s: message", c->name);
                tap_ok(ops.ops == &sentinel_op && ops.n == 42, "refuse: %s: result untouched", c->name);
        }
}

/* The struct itself, beyond its JSON: types, sorting, ownership. */
static void test_struct(void)
{
        const char *text =
            "{\"group\":\"g\",\"name\":\"n\",\"set\":1.5,\"labels\":{\"z\":\"1\",\"a\":\"2\"}}\n"
            "{\"name\":\"h\",\"action\":\"observe\",\"value\":4,\"buckets\":[1,10]}\n"
            "{\"group\":\"g\",\"action\":\"expire\"}";
        struct ao_metric_ops ops = {0};
        struct ao_error err = {0};

        tap_is_int(ao_metric_ops_parse(text, strlen(text), NULL, &ops, &err), 0, "struct: parses");
        if (!tap_ok(ops.n == 3, "struct: three operations"))
                return;
        const struct ao_metric_op *set = &ops.ops[0], *obs = &ops.ops[1], *exp = &ops.ops[2];
        tap_ok(set->action == AO_METRIC_SET && strcmp(set->name, "n") == 0 && strcmp(set->group, "g") == 0 &&
                   set->value == 1.5 && set->n_buckets == 0 && !set->buckets,
               "struct: set");
        tap_ok(set->n_labels == 2 && strcmp(set->labels[0].name, "a") == 0 &&
                   strcmp(set->labels[0].value, "2") == 0 && strcmp(set->labels[1].name, "z") == 0,
               "struct: labels sorted");
        tap_ok(obs->action == AO_METRIC_OBSERVE && !obs->group && obs->value == 4 && obs->n_buckets == 2 &&
                   obs->buckets[0] == 1 && obs->buckets[1] == 10 && obs->n_labels == 0 && !obs->labels,
               "struct: observe");
        tap_ok(exp->action == AO_METRIC_EXPIRE && !exp->name && strcmp(exp->group, "g") == 0 &&
                   exp->n_labels == 0,
               "struct: expire");
        ao_metric_ops_done(&ops);
        tap_ok(ops.n == 0 && !ops.ops, "struct: done empties");
        ao_metric_ops_done(&ops);
        ao_metric_ops_done(NULL);
        tap_ok(true, "struct: done twice and on NULL");

        /* No NUL terminator needed: the text ends where len says. */
        const char *two = "{\"name\":\"a\",\"add\":1}{\"name\":\"b\",\"add\":1}";
        tap_is_int(ao_metric_ops_parse(two, 20, "x", &ops, &err), 0, "struct: length bounds the text");
        tap_is_int(ops.n, 1, "struct: only the first operation read");
        ao_metric_ops_done(&ops);

        tap_is_int(ao_metric_ops_parse("{}", 2, NULL, &ops, &err), -EINVAL, "struct: NULL filename");
        tap_is_str(err.msg, "<input>:1:1: operation 0: one of 'action', 'add' or 'set' is required",
                   "struct: NULL filename reads <input>");
        tap_is_int(ao_metric_ops_parse(NULL, 0, NULL, &ops, &err), 0, "struct: NULL text of length 0");
        tap_is_int(ops.n, 0, "struct: ... has no operations");
}

static void test_to_json(void)
{
        struct ao_metric_ops empty = {0};
        char *s = to_text(&empty);
        tap_is_str(s, "[]", "to_json: no operations");
        free(s);
        s = to_text(NULL);
        tap_is_str(s, "[]", "to_json: NULL");
        free(s);

        tap_is_str(ao_metric_action_to_string(AO_METRIC_ADD), "add", "action name: add");
        tap_is_str(ao_metric_action_to_string(AO_METRIC_SET), "set", "action name: set");
        tap_is_str(ao_metric_action_to_string(AO_METRIC_OBSERVE), "observe", "action name: observe");
        tap_is_str(ao_metric_action_to_string(AO_METRIC_EXPIRE), "expire", "action name: expire");
        tap_ok(!ao_metric_action_to_string(_AO_METRIC_ACTION_MAX), "action name: past the end");
        tap_ok(!ao_metric_action_to_string(_AO_METRIC_ACTION_INVALID), "action name: invalid");

        /* Round trip: the long form parses back to the same operations. */
        const char *text = DOC1 DOC2 DOC3 DOC4 DOC5 DOC6;
        struct ao_metric_ops ops = {0}, again = {0};
        struct ao_error err = {0};
        tap_is_int(parse(text, strlen(text), &ops, &err), 0, "to_json: round trip: parse");
        char *first = to_text(&ops);
        char *stream = NULL;
        {
                /* The array's elements one after another make a stream. */
                cJSON *json = ao_metric_ops_to_json(&ops);
                struct ao_strbuf sb = {0};
                for (cJSON *c = json ? json->child : NULL; c; c = c->next) {
                        char *one = cJSON_Print(c);
                        ao_strbuf_append(&sb, one);
                        ao_strbuf_append_c(&sb, '\n');
                        free(one);
                }
                cJSON_Delete(json);
                stream = ao_strbuf_steal(&sb);
        }
        tap_is_int(parse(stream, strlen(stream), &again, &err), 0,
                   "to_json: round trip: parse the long form");
        char *second = to_text(&again);
        tap_is_str(second, first, "to_json: round trip: same operations");
        free(first);
        free(second);
        free(stream);
        ao_metric_ops_done(&ops);
        ao_metric_ops_done(&again);
}

static void nested(struct ao_strbuf *sb, size_t depth)
{
        ao_strbuf_append(sb, "{\"name\":\"m\",\"add\":1,\"x\":");
        for (size_t i = 0; i < depth; i++)
                ao_strbuf_append_c(sb, '[');
        for (size_t i = 0; i < depth; i++)
                ao_strbuf_append_c(sb, ']');
        ao_strbuf_append_c(sb, '}');
}

static void test_depth(void)
{
        struct ao_strbuf sb = {0};
        struct ao_metric_ops ops = {0};
        struct ao_error err = {0};

        /* The operation's object is level 1, so 999 arrays inside reach cJSON's limit of 1000 exactly. */
        nested(&sb, CJSON_NESTING_LIMIT - 1);
        tap_is_int(parse(ao_strbuf_str(&sb), sb.len, &ops, &err), 0, "depth: %d levels parse",
                   CJSON_NESTING_LIMIT);
        tap_is_int(ops.n, 1, "depth: ... into one operation");
        ao_metric_ops_done(&ops);

        ao_strbuf_reset(&sb);
        nested(&sb, CJSON_NESTING_LIMIT);
        tap_is_int(parse(ao_strbuf_str(&sb), sb.len, &ops, &err), -EINVAL,
                   "depth: one level more is refused");
        tap_is_str(err.msg, "m.json:1:1024: operation 0: nested deeper than 1000 levels", "depth: message");

        /* Far deeper than any stack would take if something recursed: refused, not crashed. */
        ao_strbuf_reset(&sb);
        nested(&sb, 1000000);
        tap_is_int(parse(ao_strbuf_str(&sb), sb.len, &ops, &err), -EINVAL, "depth: a million levels refused");
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "{\"x\":");
        for (size_t i = 0; i < 1000000; i++)
                ao_strbuf_append(&sb, "{\"a\":");
        tap_is_int(parse(ao_strbuf_str(&sb), sb.len, &ops, &err), -EINVAL,
                   "depth: a million unclosed objects refused");
        tap_is_str(err.msg, "m.json:1:5001: operation 0: nested deeper than 1000 levels",
                   "depth: ... at the first level too deep");
        ao_strbuf_done(&sb);
}

/* An operation with @n labels l0, l1, ... */
static void labels_op(struct ao_strbuf *sb, int n)
{
        ao_strbuf_reset(sb);
        ao_strbuf_append(sb, "{\"name\":\"m\",\"add\":1,\"labels\":{");
        for (int i = 0; i < n; i++)
                ao_strbuf_appendf(sb, "%s\"l%d\":\"v\"", i ? "," : "", i);
        ao_strbuf_append(sb, "}}");
}

/* An observation with @n buckets 0, 1, ... */
static void buckets_op(struct ao_strbuf *sb, int n)
{
        ao_strbuf_reset(sb);
        ao_strbuf_append(sb, "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[");
        for (int i = 0; i < n; i++)
                ao_strbuf_appendf(sb, "%s%d", i ? "," : "", i);
        ao_strbuf_append(sb, "]}");
}

/* An operation of @n JSON values: the object, 3 names, 2 values and x's array make 7, zeros the rest. */
static void values_op(struct ao_strbuf *sb, int n)
{
        ao_strbuf_reset(sb);
        ao_strbuf_append(sb, "{\"name\":\"m\",\"add\":1,\"x\":[");
        for (int i = 7; i < n; i++)
                ao_strbuf_append(sb, i > 7 ? ",0" : "0");
        ao_strbuf_append(sb, "]}");
}

static void test_limits(void)
{
        struct ao_strbuf sb = {0};
        struct ao_metric_ops ops = {0};
        struct ao_error err = {0};
        int r;

        /* Input size, checked before anything is read. */
        size_t big = AO_METRIC_OPS_MAX_INPUT + 1;
        char *spaces = malloc(big);
        if (!spaces)
                tap_bail("out of memory");
        memset(spaces, ' ', big);
        tap_is_int(parse(spaces, big, &ops, &err), -EFBIG, "limits: input over the size limit");
        tap_is_str(err.msg, "m.json: metrics file is larger than 16777216 bytes", "limits: size message");
        tap_is_int(parse(spaces, big - 1, &ops, &err), 0, "limits: input of exactly the size limit");
        tap_is_int(ops.n, 0, "limits: ... of spaces has no operations");
        free(spaces);

        /* Operation count. */
        for (size_t i = 0; i < AO_METRIC_OPS_MAX_OPS; i++)
                ao_strbuf_append(&sb, "{\"name\":\"a\",\"set\":1}\n");
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, 0, "limits: %d operations", AO_METRIC_OPS_MAX_OPS);
        tap_is_int(ops.n, AO_METRIC_OPS_MAX_OPS, "limits: ... all read");
        ao_metric_ops_done(&ops);
        ao_strbuf_append(&sb, "{\"name\":\"a\",\"set\":1}\n");
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, -E2BIG, "limits: one operation more");
        tap_is_str(err.msg, "m.json:100001:1: operation 100000: more than 100000 operations",
                   "limits: operations message");

        labels_op(&sb, AO_METRIC_OPS_MAX_LABELS);
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, 0, "limits: %d labels", AO_METRIC_OPS_MAX_LABELS);
        tap_ok(ops.n == 1 && ops.ops[0].n_labels == AO_METRIC_OPS_MAX_LABELS &&
                   strcmp(ops.ops[0].labels[0].name, "l0") == 0 &&
                   strcmp(ops.ops[0].labels[1].name, "l1") == 0 &&
                   strcmp(ops.ops[0].labels[2].name, "l10") == 0,
               "limits: ... all kept, sorted as strings");
        ao_metric_ops_done(&ops);
        labels_op(&sb, AO_METRIC_OPS_MAX_LABELS + 1);
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, -E2BIG, "limits: one label more");
        tap_is_str(err.msg, "m.json:1:1: operation 0: more than 64 labels", "limits: labels message");

        buckets_op(&sb, AO_METRIC_OPS_MAX_BUCKETS);
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, 0, "limits: %d buckets", AO_METRIC_OPS_MAX_BUCKETS);
        tap_ok(ops.n == 1 && ops.ops[0].n_buckets == AO_METRIC_OPS_MAX_BUCKETS, "limits: ... all kept");
        ao_metric_ops_done(&ops);
        buckets_op(&sb, AO_METRIC_OPS_MAX_BUCKETS + 1);
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, -E2BIG, "limits: one bucket more");
        tap_is_str(err.msg, "m.json:1:1: operation 0: more than 256 buckets", "limits: buckets message");

        values_op(&sb, AO_METRIC_OPS_MAX_OP_VALUES);
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, 0, "limits: %d values in one operation", AO_METRIC_OPS_MAX_OP_VALUES);
        ao_metric_ops_done(&ops);
        values_op(&sb, AO_METRIC_OPS_MAX_OP_VALUES + 1);
        r = parse(ao_strbuf_str(&sb), sb.len, &ops, &err);
        tap_is_int(r, -E2BIG, "limits: one value more");
        tap_is_str(err.msg, "m.json:1:1: operation 0: more than 4096 JSON values in one operation",
                   "limits: values message");
        ao_strbuf_done(&sb);
}

int main(void)
{
        test_ok();
        test_fail();
        test_struct();
        test_to_json();
        test_depth();
        test_limits();
        return tap_done();
}
