/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/values/schema-*.c: the seeds' examples (docs/VALUES.md:
 * validation, x-extend, defaults, x-required-for-helm), then tables of
 * positive and negative cases for every keyword, the injected
 * additionalProperties: false, $ref, regexes, combinators, defaults and load
 * errors. schema-internal.h is included to compare effective schemas.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/schema.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"
#include "../../src/values/schema-internal.h"

static cJSON *yaml(const char *text)
{
        struct ao_error err = {0};
        cJSON *json = NULL;

        if (!text)
                return NULL;
        if (ao_yaml_load(text, strlen(text), "test.yaml", &json, &err) < 0) {
                tap_diag("yaml: %s", err.msg);
                tap_bail("bad test YAML");
        }
        return json;
}

/* The NUL-separated error list joined with newlines; "" when valid. Caller frees. */
static char *join_errors(const char *errors)
{
        struct ao_strbuf sb = {0};

        for (const char *e = errors; e && *e; e += strlen(e) + 1) {
                if (sb.len)
                        ao_strbuf_append_c(&sb, '\n');
                ao_strbuf_append(&sb, e);
        }
        return ao_strbuf_steal(&sb);
}

static struct ao_schema *build(const char *config_yaml, const char *values_yaml)
{
        cJSON *config = yaml(config_yaml), *values = yaml(values_yaml);
        struct ao_error err = {0};
        struct ao_schema *s = NULL;

        if (ao_schema_from_json(config, values, &s, &err) < 0) {
                tap_diag("schema: %s", err.msg);
                tap_bail("bad test schema");
        }
        cJSON_Delete(config);
        cJSON_Delete(values);
        return s;
}

/* Validate @value_yaml against @s's @kind; the joined errors (caller frees), and the result in @ret_r. */
static char *check(const struct ao_schema *s, enum ao_schema_kind kind, const char *root,
                   const char *value_yaml, int *ret_r)
{
        cJSON *value = yaml(value_yaml);
        char *errors = NULL, *joined;
        int r = ao_schema_validate(s, kind, root, value, &errors);

        joined = join_errors(errors);
        if ((r == 0) != (errors == NULL))
                tap_diag("result %d does not agree with the error list", r);
        if (ret_r)
                *ret_r = r;
        free(errors);
        cJSON_Delete(value);
        return joined;
}

static void expect(const struct ao_schema *s, enum ao_schema_kind kind, const char *root,
                   const char *value_yaml, const char *want, const char *name)
{
        int r;
        char *got = check(s, kind, root, value_yaml, &r);

        tap_is_str(got, want, "%s: %s", name, value_yaml);
        if (r != (*want ? -EINVAL : 0))
                tap_ok(false, "%s: return code %d", name, r);
        free(got);
}

/* ---- the seeds -------------------------------------------------------------------------------- */

static const char seed_config[] = "type: object\n"
                                  "additionalProperties: false\n"
                                  "required:\n"
                                  "  - project\n"
                                  "  - clusterName\n"
                                  "minProperties: 2\n"
                                  "properties:\n"
                                  "  project:\n"
                                  "    type: string\n"
                                  "  clusterName:\n"
                                  "    type: string\n"
                                  "  clusterHostname:\n"
                                  "    type: string\n"
                                  "  discovery:\n"
                                  "    type: object\n";

static void test_seed_validation(void)
{
        struct ao_schema *s = build(seed_config, NULL);

        tap_ok(ao_schema_has(s, AO_SCHEMA_CONFIG) && !ao_schema_has(s, AO_SCHEMA_VALUES) &&
                   !ao_schema_has(s, AO_SCHEMA_HELM),
               "seed: config-values only");
        expect(s, AO_SCHEMA_CONFIG, "global", "project: myProject",
               "global: 'clusterName' is required (required)\n"
               "global: must have at least 2 properties (minProperties)",
               "seed: ConfigMap without clusterName");
        expect(s, AO_SCHEMA_CONFIG, "global", "{project: p, clusterName: c}", "", "seed: valid ConfigMap");
        expect(s, AO_SCHEMA_CONFIG, "global", "{project: p, clusterName: c, clusterHostname: {}}",
               "global.clusterHostname: must be a string (type)", "seed: patch sets clusterHostname to {}");
        /* The patch's "value":"{}" is the string "{}", which is a string. */
        expect(s, AO_SCHEMA_CONFIG, "global", "{project: p, clusterName: c, clusterHostname: '{}'}", "",
               "seed: the string '{}'");
        expect(s, AO_SCHEMA_CONFIG, "global", "{project: p, clusterName: c, discovery: {}}", "",
               "seed: discovery object");
        /* The seed: discovery is "an optional object with no restrictions on keys". */
        expect(s, AO_SCHEMA_CONFIG, "global", "{project: p, clusterName: c, discovery: {a: 1}}", "",
               "seed: discovery takes any keys");
        expect(s, AO_SCHEMA_CONFIG, "global", "{project: p, clusterName: c, param1: value1}",
               "global: 'param1' is not allowed (additionalProperties)", "seed: unknown key");
        ao_schema_free(s);
}

static void test_seed_extend(void)
{
        static const char config[] = "type: object\n"
                                     "additionalProperties: false\n"
                                     "required:\n"
                                     "  - project\n"
                                     "  - clusterName\n"
                                     "properties:\n"
                                     "  project:\n"
                                     "    type: string\n"
                                     "  clusterName:\n"
                                     "    type: string\n"
                                     "  clusterHostname:\n"
                                     "    type: string\n";
        static const char values[] = "x-extend:\n"
                                     "  schema: config-values.yaml\n"
                                     "type: object\n"
                                     "additionalProperties: false\n"
                                     "required:\n"
                                     "  - discovery\n"
                                     "  - param1\n"
                                     "properties:\n"
                                     "  discovery:\n"
                                     "    type: object\n"
                                     "  param1:\n"
                                     "    type: string\n";
        /* The seed's effective schema, plus x-extend itself and the injected additionalProperties. */
        static const char effective[] =
            "{\"additionalProperties\":false,"
            "\"properties\":{\"clusterHostname\":{\"type\":\"string\"},"
            "\"clusterName\":{\"type\":\"string\"},"
            "\"discovery\":{\"type\":\"object\"},"
            "\"param1\":{\"type\":\"string\"},"
            "\"project\":{\"type\":\"string\"}},"
            "\"required\":[\"project\",\"clusterName\",\"discovery\",\"param1\"],"
            "\"type\":\"object\",\"x-extend\":{\"schema\":\"config-values.yaml\"}}";
        struct ao_schema *s = build(config, values);
        char *text = ao_json_canonical(s->docs[AO_SCHEMA_VALUES].root);

        tap_is_str(text, effective, "seed x-extend: effective schema");
        free(text);
        expect(s, AO_SCHEMA_VALUES, "global", "{}",
               "global: 'project' is required (required)\n"
               "global: 'clusterName' is required (required)\n"
               "global: 'discovery' is required (required)\n"
               "global: 'param1' is required (required)",
               "seed x-extend: required union, parent first");
        expect(s, AO_SCHEMA_VALUES, "global", "{project: p, clusterName: c, discovery: {}, param1: x}", "",
               "seed x-extend: valid");
        expect(s, AO_SCHEMA_VALUES, "global",
               "{project: p, clusterName: c, clusterHostname: 1, discovery: {}, param1: x}",
               "global.clusterHostname: must be a string (type)", "seed x-extend: parent property");
        expect(s, AO_SCHEMA_CONFIG, "global", "{project: p, clusterName: c, param1: x}",
               "global: 'param1' is not allowed (additionalProperties)", "seed x-extend: config unchanged");
        ao_schema_free(s);
}

static void test_extend_rules(void)
{
        static const char config[] = "title: parent title\n"
                                     "description: parent text\n"
                                     "x-custom: 1\n"
                                     "x-both: parent\n"
                                     "definitions: {port: {type: integer}, name: {type: string}}\n"
                                     "properties: {a: {type: string}, b: {type: string}}\n"
                                     "patternProperties: {'^p-': {type: integer}}\n";
        static const char values[] = "x-extend: {schema: config-values.yaml}\n"
                                     "description: ''\n"
                                     "title: child title\n"
                                     "x-both: child\n"
                                     "definitions: {name: {type: integer}}\n"
                                     "properties: {b: {type: integer}, c: {$ref: '#/definitions/name'},"
                                     " d: {$ref: '#/definitions/port'}}\n";
        struct ao_schema *s = build(config, values);
        const cJSON *root = s->docs[AO_SCHEMA_VALUES].root;
        char *text;

        tap_is_str(cJSON_GetObjectItem(root, "title")->valuestring, "child title",
                   "x-extend: child title wins");
        tap_is_str(cJSON_GetObjectItem(root, "description")->valuestring, "parent text",
                   "x-extend: empty description inherited");
        tap_is_int(cJSON_GetObjectItem(root, "x-custom")->valuedouble, 1, "x-extend: x-* copied");
        tap_is_str(cJSON_GetObjectItem(root, "x-both")->valuestring, "child", "x-extend: child x-* wins");
        text = ao_json_canonical(cJSON_GetObjectItem(root, "definitions"));
        tap_is_str(text, "{\"name\":{\"type\":\"integer\"},\"port\":{\"type\":\"integer\"}}",
                   "x-extend: definitions merged, child wins");
        free(text);
        expect(s, AO_SCHEMA_VALUES, "m", "{a: x, b: 1, c: 2, d: 3, p-x: 4}", "",
               "x-extend: merged properties");
        expect(s, AO_SCHEMA_VALUES, "m", "{a: 1, b: x, c: x, p-x: x}",
               "m.a: must be a string (type)\n"
               "m.b: must be an integer (type)\n"
               "m.c: must be an integer (type)\n"
               "m.p-x: must be an integer (type)",
               "x-extend: merged properties checked");
        ao_schema_free(s);

        /* Without x-extend the config schema is not merged. */
        s = build(config, "properties: {b: {type: integer}}");
        expect(s, AO_SCHEMA_VALUES, "m", "{a: x}", "m: 'a' is not allowed (additionalProperties)",
               "no x-extend: nothing merged");
        ao_schema_free(s);
        /* x-extend without a config schema is a no-op. */
        s = build(NULL, "{x-extend: {schema: config-values.yaml}, properties: {b: {type: integer}}}");
        expect(s, AO_SCHEMA_VALUES, "m", "{b: 1}", "", "x-extend without parent");
        ao_schema_free(s);
}

static void test_seed_defaults(void)
{
        static const char values[] = "x-extend:\n"
                                     "  schema: config-values.yaml\n"
                                     "type: object\n"
                                     "additionalProperties: false\n"
                                     "required:\n"
                                     "  - param1\n"
                                     "properties:\n"
                                     "  discovery:\n"
                                     "    type: object\n"
                                     "    default:\n"
                                     "      {}\n"
                                     "  param1:\n"
                                     "    type: string\n";
        struct ao_schema *s = build(NULL, values);
        cJSON *v = yaml("param1: x");
        char *text;

        ao_schema_apply_defaults(s, AO_SCHEMA_VALUES, v);
        text = ao_json_canonical(v);
        tap_is_str(text, "{\"discovery\":{},\"param1\":\"x\"}", "seed defaults: discovery added");
        free(text);
        cJSON_Delete(v);

        v = yaml("{param1: x, discovery: {}}");
        ao_schema_apply_defaults(s, AO_SCHEMA_VALUES, v);
        text = ao_json_canonical(v);
        tap_is_str(text, "{\"discovery\":{},\"param1\":\"x\"}", "seed defaults: present key kept");
        free(text);
        cJSON_Delete(v);
        ao_schema_free(s);
}

static void test_seed_required_for_helm(void)
{
        static const char values[] = "type: object\n"
                                     "x-required-for-helm:\n"
                                     "  - param1\n"
                                     "  - param2\n"
                                     "properties:\n"
                                     "  param1:\n"
                                     "    type: string\n"
                                     "  param2:\n"
                                     "    type: string\n";
        static const char after_hook[] =
            "{\"additionalProperties\":false,"
            "\"properties\":{\"param1\":{\"type\":\"string\"},"
            "\"param2\":{\"type\":\"string\"}},"
            "\"type\":\"object\",\"x-required-for-helm\":[\"param1\",\"param2\"]}";
        static const char before_helm[] =
            "{\"additionalProperties\":false,"
            "\"properties\":{\"param1\":{\"type\":\"string\"},"
            "\"param2\":{\"type\":\"string\"}},"
            "\"required\":[\"param1\",\"param2\"],"
            "\"type\":\"object\",\"x-required-for-helm\":[\"param1\",\"param2\"]}";
        struct ao_schema *s = build(NULL, values);
        char *text;

        text = ao_json_canonical(s->docs[AO_SCHEMA_VALUES].root);
        tap_is_str(text, after_hook, "seed helm: schema after each hook");
        free(text);
        text = ao_json_canonical(s->docs[AO_SCHEMA_HELM].root);
        tap_is_str(text, before_helm, "seed helm: schema before helm");
        free(text);
        expect(s, AO_SCHEMA_VALUES, "global", "{param1: a}", "", "seed helm: hook may set only param1");
        expect(s, AO_SCHEMA_HELM, "global", "{param1: a}", "global: 'param2' is required (required)",
               "seed helm: helm needs param2");
        expect(s, AO_SCHEMA_HELM, "global", "{}",
               "global: 'param1' is required (required)\nglobal: 'param2' is required (required)",
               "seed helm: helm needs both");
        expect(s, AO_SCHEMA_HELM, "global", "{param1: a, param2: b}", "", "seed helm: complete");
        ao_schema_free(s);

        /* String form, nested levels and items, merged with an existing required without duplicates. */
        s = build(NULL, "required: [a]\n"
                        "x-required-for-helm: a\n"
                        "properties:\n"
                        "  a: {type: object, x-required-for-helm: b, properties: {b: {}, c: {}}}\n"
                        "  l: {type: array, items: {x-required-for-helm: [c], properties: {c: {}}}}\n");
        expect(s, AO_SCHEMA_VALUES, "m", "{a: {}, l: [{}]}", "", "helm nested: values kind ignores it");
        expect(s, AO_SCHEMA_HELM, "m", "{a: {}, l: [{}]}",
               "m.a: 'b' is required (required)\nm.l[0]: 'c' is required (required)",
               "helm nested: helm kind");
        expect(s, AO_SCHEMA_HELM, "m", "{}", "m: 'a' is required (required)", "helm: no duplicate required");
        ao_schema_free(s);
}

/* ---- keyword tables --------------------------------------------------------------------------- */

struct vcase {
        const char *schema; /* config-values schema (YAML) */
        const char *value;  /* YAML */
        const char *errors; /* joined lines, "" when valid */
};

static const struct vcase cases[] = {
    /* type */
    {"{type: string}", "abc", ""},
    {"{type: string}", "5", "m: must be a string (type)"},
    {"{type: string}", "'5'", ""},
    {"{type: integer}", "5", ""},
    {"{type: integer}", "-5.0", ""},
    {"{type: integer}", "5.5", "m: must be an integer (type)"},
    {"{type: integer}", "'5'", "m: must be an integer (type)"},
    {"{type: number}", "5.5", ""},
    {"{type: number}", "7", ""},
    {"{type: number}", "'5'", "m: must be a number (type)"},
    {"{type: boolean}", "true", ""},
    {"{type: boolean}", "yes", ""},
    {"{type: boolean}", "'yes'", "m: must be a boolean (type)"},
    {"{type: object}", "{}", ""},
    {"{type: object}", "[]", "m: must be an object (type)"},
    {"{type: array}", "[]", ""},
    {"{type: array}", "{}", "m: must be an array (type)"},
    {"{type: string}", "null", "m: must be a string (type)"},
    {"{type: string, nullable: true}", "null", ""},
    {"{type: string, nullable: false}", "~", "m: must be a string (type)"},
    {"{type: object, nullable: true}", "null", ""},
    {"{type: [string, integer]}", "1", ""},
    {"{type: [string, integer]}", "x", ""},
    {"{type: [string, integer]}", "true", "m: must be a string or an integer (type)"},
    {"{type: [string, integer, array]}", "{}", "m: must be a string, an integer or an array (type)"},
    {"{type: 'null'}", "null", ""},
    {"{type: 'null'}", "0", "m: must be null (type)"},
    {"{}", "null", ""},
    {"{}", "[1, x]", ""},
    {"{type: string, minimum: 3}", "1", "m: must be a string (type)"},
    /* format */
    {"{format: date-time}", "2023-01-02T03:04:05Z", ""},
    {"{format: date-time}", "2023-01-02T03:04:05.123+02:00", ""},
    {"{format: date-time}", "2023-01-02t03:04:05z", ""},
    {"{format: date-time}", "2024-02-29T23:59:60-0130", ""},
    {"{format: date-time}", "2023-02-29T00:00:00Z", "m: must be a valid date-time (format)"},
    {"{format: date-time}", "'2023-01-02'", "m: must be a valid date-time (format)"},
    {"{format: date-time}", "2023-01-02T24:00:00Z", "m: must be a valid date-time (format)"},
    {"{format: date}", "2024-02-29", ""},
    {"{format: date}", "2023-02-29", "m: must be a valid date (format)"},
    {"{format: date}", "2023-1-2", "m: must be a valid date (format)"},
    {"{format: email}", "user@example.com", ""},
    {"{format: email}", "user.example.com", "m: must be a valid email (format)"},
    {"{format: email}", "a@b@c", "m: must be a valid email (format)"},
    {"{format: hostname}", "my-host.example.com", ""},
    {"{format: hostname}", "localhost", ""},
    {"{format: hostname}", "-bad.example.com", "m: must be a valid hostname (format)"},
    {"{format: hostname}", "a..b", "m: must be a valid hostname (format)"},
    {"{format: hostname}", "under_score", "m: must be a valid hostname (format)"},
    {"{format: ipv4}", "192.168.0.1", ""},
    {"{format: ipv4}", "256.1.1.1", "m: must be a valid ipv4 (format)"},
    {"{format: ipv4}", "'::1'", "m: must be a valid ipv4 (format)"},
    {"{format: ipv6}", "'::1'", ""},
    {"{format: ipv6}", "'fe80::1:2'", ""},
    {"{format: ipv6}", "'1::2::3'", "m: must be a valid ipv6 (format)"},
    {"{format: uri}", "https://example.com/a?b=c", ""},
    {"{format: uri}", "urn:isbn:123", ""},
    {"{format: uri}", "not a uri", "m: must be a valid uri (format)"},
    {"{format: uri}", "/relative/path", "m: must be a valid uri (format)"},
    {"{format: uuid}", "123e4567-e89b-12d3-a456-426614174000", ""},
    {"{format: uuid}", "123e4567-e89b-12d3-a456-42661417400", "m: must be a valid uuid (format)"},
    {"{format: uuid}", "123e4567xe89b-12d3-a456-426614174000", "m: must be a valid uuid (format)"},
    {"{format: byte}", "aGVsbG8=", ""},
    {"{format: byte}", "''", ""},
    {"{format: byte}", "aGVsbG8", "m: must be a valid byte (format)"},
    {"{format: byte}", "aG=sbG8=", "m: must be a valid byte (format)"},
    {"{format: int32}", "2147483647", ""},
    {"{format: int32}", "2147483648", "m: must be a valid int32 (format)"},
    {"{format: int32}", "-2147483648", ""},
    {"{format: int64}", "9007199254740992", ""},
    {"{format: int64}", "1e19", "m: must be a valid int64 (format)"},
    {"{format: my-own-format}", "anything", ""},
    {"{format: email}", "42", ""},
    /* enum, const */
    {"{enum: [a, b]}", "a", ""},
    {"{enum: [a, b]}", "c", "m: must be one of 'a', 'b' (enum)"},
    {"{enum: [1, '1']}", "1", ""},
    {"{enum: [1]}", "'1'", "m: must be one of 1 (enum)"},
    {"{additionalProperties: true, enum: [{a: 1}, [1, 2], null]}", "{a: 1}", ""},
    {"{enum: [{a: 1}, [1, 2], null]}", "null", ""},
    {"{enum: [{a: 1}, [1, 2], null]}", "[2, 1]", "m: must be one of {\"a\":1}, [1,2], null (enum)"},
    {"{const: 3}", "3", ""},
    {"{const: 3}", "4", "m: must be equal to 3 (const)"},
    {"{const: x}", "y", "m: must be equal to 'x' (const)"},
    /* numbers */
    {"{minimum: 1}", "1", ""},
    {"{minimum: 1}", "0", "m: must be >= 1 (minimum)"},
    {"{minimum: 1, exclusiveMinimum: true}", "1", "m: must be > 1 (exclusiveMinimum)"},
    {"{minimum: 1, exclusiveMinimum: true}", "1.5", ""},
    {"{minimum: 1, exclusiveMinimum: false}", "1", ""},
    {"{maximum: 10}", "10", ""},
    {"{maximum: 10}", "10.5", "m: must be <= 10 (maximum)"},
    {"{maximum: 10, exclusiveMaximum: true}", "10", "m: must be < 10 (exclusiveMaximum)"},
    {"{exclusiveMinimum: 0}", "0", "m: must be > 0 (exclusiveMinimum)"},
    {"{exclusiveMinimum: 0}", "0.1", ""},
    {"{exclusiveMaximum: 5}", "5", "m: must be < 5 (exclusiveMaximum)"},
    {"{minimum: 0.1}", "0.05", "m: must be >= 0.1 (minimum)"},
    {"{minimum: -3, maximum: 3}", "-4", "m: must be >= -3 (minimum)"},
    {"{minimum: 5}", "abc", ""},
    {"{multipleOf: 0.1}", "0.3", ""},
    {"{multipleOf: 0.01}", "19.99", ""},
    {"{multipleOf: 3}", "9", ""},
    {"{multipleOf: 3}", "10", "m: must be a multiple of 3 (multipleOf)"},
    {"{multipleOf: 0.5}", "1.25", "m: must be a multiple of 0.5 (multipleOf)"},
    /* strings */
    {"{minLength: 2}", "a", "m: must be at least 2 characters long (minLength)"},
    {"{minLength: 1}", "''", "m: must be at least 1 characters long (minLength)"},
    {"{minLength: 2}", "ab", ""},
    {"{maxLength: 3}", "héé", ""},
    {"{maxLength: 3}", "abcd", "m: must be at most 3 characters long (maxLength)"},
    {"{maxLength: 1}", "🙂", ""},
    {"{pattern: '^[a-z]+$'}", "abc", ""},
    {"{pattern: '^[a-z]+$'}", "ab1", "m: must match '^[a-z]+$' (pattern)"},
    {"{pattern: b}", "abc", ""},
    {"{pattern: '^\\d{3}$'}", "'123'", ""},
    {"{pattern: '^\\d{3}$'}", "12a", "m: must match '^\\d{3}$' (pattern)"},
    {"{pattern: '^.{2}$'}", "éé", ""},
    {"{pattern: '^(?=.*[A-Z]).+$'}", "aB", ""},
    {"{pattern: '^(?=.*[A-Z]).+$'}", "ab", "m: must match '^(?=.*[A-Z]).+$' (pattern)"},
    {"{pattern: '^(?<year>[0-9]{4})-\\k<year>$'}", "2024-2024", ""},
    {"{pattern: '^x'}", "5", ""},
    /* arrays */
    {"{minItems: 1}", "[]", "m: must have at least 1 items (minItems)"},
    {"{minItems: 1}", "[1]", ""},
    {"{maxItems: 1}", "[1, 2]", "m: must have at most 1 items (maxItems)"},
    {"{uniqueItems: true}", "[1, 2, 1]",
     "m: must not contain duplicates ([0] and [2] are equal) (uniqueItems)"},
    {"{uniqueItems: true}", "[3, 1, 2, 2, 1]",
     "m: must not contain duplicates ([2] and [3] are equal) (uniqueItems)"},
    {"{uniqueItems: true}", "[{a: 1, b: [2]}, {b: [2], a: 1.0}]",
     "m: must not contain duplicates ([0] and [1] are equal) (uniqueItems)"},
    {"{uniqueItems: true}", "[1, '1', [1], {a: 1}]", ""},
    {"{uniqueItems: false}", "[1, 1]", ""},
    {"{items: {type: string}}", "[a, 1, b, 2]",
     "m[1]: must be a string (type)\nm[3]: must be a string (type)"},
    {"{items: [{type: string}, {type: integer}]}", "[a, 1, true]", ""},
    {"{items: [{type: string}, {type: integer}]}", "[1]", "m[0]: must be a string (type)"},
    {"{items: {items: {enum: [1]}}}", "[[1], [1, 2]]", "m[1][1]: must be one of 1 (enum)"},
    /* tuples (items as a list) and additionalItems, as JSON Schema draft 4 */
    {"{items: [{type: string}, {type: integer}], additionalItems: false}", "[a, 1, true]",
     "m: must have at most 2 items, has 3 (additionalItems)"},
    {"{items: [{type: string}, {type: integer}], additionalItems: false}", "[a, 1]", ""},
    {"{items: [{type: string}, {type: integer}], additionalItems: false}", "[a]", ""},
    {"{items: [{type: string}, {type: integer}], additionalItems: false}", "[]", ""},
    {"{items: [{type: string}, {type: integer}], additionalItems: false}", "[1, x, z, w]",
     "m[0]: must be a string (type)\nm[1]: must be an integer (type)\n"
     "m: must have at most 2 items, has 4 (additionalItems)"},
    {"{items: [{type: string}, {type: integer}], additionalItems: true}", "[a, 1, true, {}]", ""},
    {"{items: [{type: string}], additionalItems: {type: integer}}", "[a, 1, x, 2, y]",
     "m[2]: must be an integer (type)\nm[4]: must be an integer (type)"},
    {"{items: [{type: string}, {type: integer}], additionalItems: {type: integer}}", "[a, 1, x]",
     "m[2]: must be an integer (type)"},
    {"{items: [{type: string}, {type: integer}], additionalItems: {type: integer}}", "[a, 1, 2, 3]", ""},
    /* additionalItems has no say next to a single items schema, without items, or next to an empty list */
    {"{items: {type: string}, additionalItems: false}", "[a, b, c]", ""},
    {"{items: {type: string}, additionalItems: {type: integer}}", "[a, b]", ""},
    {"{additionalItems: false}", "[1, 2]", ""},
    {"{items: [], additionalItems: false}", "[1]", ""},
    {"{items: [], additionalItems: {type: string}}", "[1]", ""},
    /* with minItems, maxItems and uniqueItems */
    {"{items: [{type: integer}, {type: integer}], additionalItems: false, minItems: 2}", "[1]",
     "m: must have at least 2 items (minItems)"},
    {"{items: [{type: integer}, {type: integer}], additionalItems: false, uniqueItems: true}", "[1, 1, 1]",
     "m: must not contain duplicates ([0] and [1] are equal) (uniqueItems)\n"
     "m: must have at most 2 items, has 3 (additionalItems)"},
    {"{items: [{}], additionalItems: false, maxItems: 0}", "[1, 2]",
     "m: must have at most 0 items (maxItems)\nm: must have at most 1 items, has 2 (additionalItems)"},
    /* nested tuples, under anyOf, through $ref, and the injected additionalProperties */
    {"{items: [{items: [{type: string}], additionalItems: false}, {type: integer}], additionalItems: {type: "
     "boolean}}",
     "[[a, b], 1, true, 2]",
     "m[0]: must have at most 1 items, has 2 (additionalItems)\nm[3]: must be a boolean (type)"},
    {"{anyOf: [{items: [{type: string}], additionalItems: false}, {type: string}]}", "[a, b]",
     "m: must match at least one of the schemas (anyOf)"},
    {"{anyOf: [{items: [{type: string}], additionalItems: false}, {type: string}]}", "[a]", ""},
    {"{definitions: {num: {type: integer}}, items: [{type: string}], additionalItems: {$ref: "
     "'#/definitions/num'}}",
     "[a, 1, x]", "m[2]: must be an integer (type)"},
    {"{items: [{properties: {a: {}}}], additionalItems: {properties: {b: {}}}}",
     "[{a: 1, z: 1}, {b: 1, z: 2}]", "m[0]: 'z' is not allowed (additionalProperties)"},
    /* objects */
    {"{type: object, properties: {a: {type: string}}}", "{a: x}", ""},
    {"{type: object, properties: {a: {type: string}}}", "{a: x, b: 1}",
     "m: 'b' is not allowed (additionalProperties)"},
    {"{additionalProperties: true, properties: {a: {type: string}}}", "{a: x, b: 1}", ""},
    {"{additionalProperties: {type: integer}}", "{b: 1, c: x}", "m.c: must be an integer (type)"},
    {"{additionalProperties: true, minProperties: 2}", "{a: 1}",
     "m: must have at least 2 properties (minProperties)"},
    {"{additionalProperties: true, maxProperties: 1}", "{a: 1, b: 2}",
     "m: must have at most 1 properties (maxProperties)"},
    {"{required: [a, b], properties: {a: {}, b: {}}}", "{a: 1}", "m: 'b' is required (required)"},
    {"{required: [a, b], properties: {a: {}, b: {}}}", "{b: 1, a: null}", ""},
    {"{required: [a], properties: {a: {}}}", "[]", ""},
    {"{properties: {'a.b': {type: string}, 'c d': {}}}", "{'a.b': 1, 'c d': 1, 'e\"': 1}",
     "m[\"a.b\"]: must be a string (type)\nm: 'e\"' is not allowed (additionalProperties)"},
    {"{properties: {a: {properties: {b: {properties: {c: {type: integer}}}}}}}", "{a: {b: {c: x}}}",
     "m.a.b.c: must be an integer (type)"},
    {"{patternProperties: {'^x-': {type: string}}}", "{x-a: s}", ""},
    {"{patternProperties: {'^x-': {type: string}}}", "{x-a: 1}", "m.x-a: must be a string (type)"},
    {"{patternProperties: {'^x-': {type: string}}}", "{q: 1}",
     "m: 'q' is not allowed (additionalProperties)"},
    {"{properties: {xa: {type: string}}, patternProperties: {'^x': {maxLength: 1}}}", "{xa: ab}",
     "m.xa: must be at most 1 characters long (maxLength)"},
    {"{patternProperties: {'^a': {type: string}, 'b$': {minLength: 2}}}", "{ab: c}",
     "m.ab: must be at least 2 characters long (minLength)"},
    /* the injected additionalProperties: false */
    {"{properties: {a: {type: object, properties: {x: {type: string}}}}}", "{a: {q: 1}}",
     "m.a: 'q' is not allowed (additionalProperties)"},
    {"{properties: {a: {additionalProperties: true, properties: {b: {type: object}}}}}", "{a: {b: {z: 1}}}",
     ""},
    {"{properties: {a: {properties: {b: {type: object}}}}}", "{a: {b: {z: 1}}}", ""},
    {"{type: array, items: {type: object}}", "[{x: 1}]", ""},
    {"{items: {additionalProperties: true, properties: {p: {type: object}}}}", "[{q: 1, p: {r: 1}}]", ""},
    {"{properties: {a: {type: object, x-kubernetes-preserve-unknown-fields: true}}}", "{a: {q: 1}}", ""},
    {"{x-kubernetes-preserve-unknown-fields: true}", "{q: 1}", ""},
    /* The root names no keys itself (only its allOf does): it stays open. */
    {"{allOf: [{properties: {a: {type: string}}}]}", "{a: s}", ""},
    {"{additionalProperties: true, allOf: [{properties: {a: {type: object}}}]}", "{a: {b: 1}}", ""},
    /* combinators */
    {"{allOf: [{type: integer}, {minimum: 3}]}", "2", "m: must be >= 3 (minimum)"},
    {"{allOf: [{type: integer}, {minimum: 3}]}", "3", ""},
    {"{allOf: [{type: string}, {minimum: 3}, {maxLength: 1}]}", "1",
     "m: must be a string (type)\nm: must be >= 3 (minimum)"},
    {"{anyOf: [{type: string}, {type: integer}]}", "1", ""},
    {"{anyOf: [{type: string}, {type: integer}]}", "true",
     "m: must match at least one of the schemas (anyOf)"},
    {"{oneOf: [{type: integer}, {minimum: 0}]}", "-1", ""},
    {"{oneOf: [{type: integer}, {minimum: 0}]}", "0.5", ""},
    {"{oneOf: [{type: integer}, {minimum: 0}]}", "5",
     "m: must match exactly one of the schemas, matches more than one (oneOf)"},
    {"{oneOf: [{type: integer}, {minimum: 0}]}", "-0.5",
     "m: must match exactly one of the schemas, matches none (oneOf)"},
    {"{not: {type: string}}", "x", "m: must not match the schema (not)"},
    {"{not: {type: string}}", "1", ""},
    {"{allOf: [{oneOf: [{type: string, pattern: '^a'}, {type: string, pattern: '^b'}]}, {maxLength: 3}]}",
     "abcd", "m: must be at most 3 characters long (maxLength)"},
    {"{allOf: [{oneOf: [{type: string, pattern: '^a'}, {type: string, pattern: '^b'}]}, {maxLength: 3}]}",
     "cab", "m: must match exactly one of the schemas, matches none (oneOf)"},
    {"{allOf: [{oneOf: [{type: string, pattern: '^a'}, {type: string, pattern: '^b'}]}, {maxLength: 3}]}",
     "ab", ""},
    {"{properties: {a: {anyOf: [{type: string}, {type: array, items: {type: integer}}]}}}", "{a: [1, x]}",
     "m.a: must match at least one of the schemas (anyOf)"},
    {"{properties: {a: {anyOf: [{type: string}, {type: array, items: {type: integer}}]}}}", "{a: [1, 2]}",
     ""},
    {"{not: {anyOf: [{enum: [a]}, {not: {type: string}}]}}", "b", ""},
    {"{not: {anyOf: [{enum: [a]}, {not: {type: string}}]}}", "a", "m: must not match the schema (not)"},
    {"{not: {anyOf: [{enum: [a]}, {not: {type: string}}]}}", "1", "m: must not match the schema (not)"},
    /* $ref */
    {"{definitions: {a: {anyOf: [{$ref: '#/definitions/a'}, {$ref: '#/definitions/a'}]}}, "
     "properties: {p: {$ref: '#/definitions/a'}}}",
     "{p: 5}", "m.p: must match at least one of the schemas (anyOf)"},
    {"{definitions: {port: {type: integer, minimum: 1, maximum: 65535}}, properties: {p: {$ref: "
     "'#/definitions/port'}}}",
     "{p: 0}", "m.p: must be >= 1 (minimum)"},
    {"{definitions: {port: {type: integer, minimum: 1, maximum: 65535}}, properties: {p: {$ref: "
     "'#/definitions/port'}}}",
     "{p: 80}", ""},
    {"{definitions: {obj: {type: object, properties: {x: {type: string}}}}, properties: {o: {$ref: "
     "'#/definitions/obj'}}}",
     "{o: {q: 1}}", "m.o: 'q' is not allowed (additionalProperties)"},
    {"{definitions: {'a/b': {type: string}, 'c~d': {type: integer}}, properties: {x: {$ref: "
     "'#/definitions/a~1b'},"
     " w: {$ref: '#/definitions/c~0d'}}}",
     "{x: 1, w: z}", "m.x: must be a string (type)\nm.w: must be an integer (type)"},
    {"{definitions: {a: {$ref: '#/definitions/b'}, b: {type: integer}}, items: {$ref: '#/definitions/a'}}",
     "[1, x]", "m[1]: must be an integer (type)"},
    {"{definitions: {node: {type: object, properties: {name: {type: string}, children: {type: array, items: "
     "{$ref: '#/definitions/node'}}}}}, properties: {tree: {$ref: '#/definitions/node'}}}",
     "{tree: {name: a, children: [{name: b, children: [{name: 1}]}]}}",
     "m.tree.children[0].children[0].name: must be a string (type)"},
    {"{definitions: {a: {$ref: '#/definitions/a'}}, properties: {x: {$ref: '#/definitions/a'}}}", "{x: 1}",
     "m.x: '#/definitions/a' leads back to itself for the same value ($ref)"},
    {"{definitions: {s: {type: string}}, $ref: '#/definitions/s'}", "1", "m: must be a string (type)"},
    {"{definitions: {s: {type: string}}, properties: {a: {$ref: '#/definitions/s', type: integer}}}",
     "{a: x}", ""},
};

static void test_cases(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                struct ao_schema *s = build(cases[i].schema, NULL);

                expect(s, AO_SCHEMA_CONFIG, "m", cases[i].value, cases[i].errors, cases[i].schema);
                ao_schema_free(s);
        }
}

static void test_paths_and_limits(void)
{
        struct ao_schema *s = build("{items: {type: string}}", NULL);
        struct ao_strbuf v = {0};
        char *got;
        int r, lines = 1;

        expect(s, AO_SCHEMA_CONFIG, "global", "[a, b, 3]", "global[2]: must be a string (type)", "root name");
        expect(s, AO_SCHEMA_CONFIG, "", "[a, b, 3]", "[2]: must be a string (type)", "empty root name");
        expect(s, AO_SCHEMA_CONFIG, NULL, "[a, b, 3]", "[2]: must be a string (type)", "NULL root name");

        ao_strbuf_append_c(&v, '[');
        for (int i = 0; i < 150; i++)
                ao_strbuf_appendf(&v, "%s%d", i ? "," : "", i);
        ao_strbuf_append_c(&v, ']');
        got = check(s, AO_SCHEMA_CONFIG, "m", ao_strbuf_str(&v), &r);
        for (const char *p = got; *p; p++)
                lines += *p == '\n';
        tap_is_int(lines, AO_SCHEMA_MAX_ERRORS, "error lines capped");
        tap_ok(strstr(got, "m[98]: must be a string (type)\nm: too many errors, the rest are not shown") &&
                   !strstr(got, "m[99]"),
               "last line says errors were cut");
        tap_is_int(r, -EINVAL, "capped result is invalid");
        free(got);
        ao_strbuf_done(&v);
        ao_schema_free(s);

        s = build("{type: object, properties: {a: {type: string}, b: {minimum: 2}}}", NULL);
        expect(s, AO_SCHEMA_CONFIG, "m", "{z: 1, b: 1, a: 1, q: 2}",
               "m: 'z' is not allowed (additionalProperties)\n"
               "m.b: must be >= 2 (minimum)\n"
               "m.a: must be a string (type)\n"
               "m: 'q' is not allowed (additionalProperties)",
               "errors in document order");
        tap_is_int(ao_schema_validate(s, AO_SCHEMA_CONFIG, "m", NULL, NULL), -EINVAL,
                   "NULL value is null; NULL ret_errors");
        tap_is_int(ao_schema_validate(s, AO_SCHEMA_VALUES, "m", NULL, NULL), 0, "no schema: valid");
        ao_schema_free(s);

        /*
         * anyOf over two equal $refs, on a value 40 arrays deep with a bad leaf: every level tries
         * both branches, 2^40 steps in all. The budget stops it.
         */
        s = build("{definitions: {t: {type: array, items: {anyOf: [{$ref: '#/definitions/t'},"
                  " {$ref: '#/definitions/t'}]}}}, properties: {x: {$ref: '#/definitions/t'}}}",
                  NULL);
        expect(s, AO_SCHEMA_CONFIG, "m",
               "{x: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
               "m: validation stopped: the schema takes too many steps for this value", "step budget");
        ao_schema_free(s);

        /* The same through the items past a tuple: additionalItems counts against the budget too. */
        s = build("{definitions: {t: {type: array, items: [{type: integer}], additionalItems: {anyOf:"
                  " [{$ref: '#/definitions/t'}, {$ref: '#/definitions/t'}]}}},"
                  " properties: {x: {$ref: '#/definitions/t'}}}",
                  NULL);
        expect(s, AO_SCHEMA_CONFIG, "m",
               "{x: [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0,"
               " [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, [0, x]"
               "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
               "m: validation stopped: the schema takes too many steps for this value",
               "step budget through additionalItems");
        ao_schema_free(s);

        /* Catastrophic backtracking hits oniguruma's retry limit. */
        s = build("{pattern: '^(a+)+$'}", NULL);
        expect(s, AO_SCHEMA_CONFIG, "m", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
               "m: matching '^(a+)+$' takes too long (pattern)", "regex retry limit");
        ao_schema_free(s);
}

/* ---- defaults --------------------------------------------------------------------------------- */

struct dcase {
        const char *schema;
        const char *value;
        const char *result; /* canonical JSON */
};

static const struct dcase dcases[] = {
    {"{properties: {a: {default: 1}}}", "{}", "{\"a\":1}"},
    {"{properties: {a: {default: 1}}}", "{a: 2}", "{\"a\":2}"},
    {"{properties: {a: {default: 1}}}", "{a: null}", "{\"a\":null}"},
    {"{properties: {a: {default: [1, {b: 2}]}}}", "{}", "{\"a\":[1,{\"b\":2}]}"},
    {"{properties: {a: {type: object, default: {}, properties: {b: {default: 5}, c: {default: x}}}}}", "{}",
     "{\"a\":{\"b\":5,\"c\":\"x\"}}"},
    {"{properties: {a: {type: object, properties: {b: {default: 5}}}}}", "{}", "{}"},
    {"{properties: {a: {type: object, properties: {b: {default: 5}}}}}", "{a: {}}", "{\"a\":{\"b\":5}}"},
    {"{properties: {a: {type: object, default: {b: 1}, properties: {b: {default: 5}, c: {default: 6}}}}}",
     "{}", "{\"a\":{\"b\":1,\"c\":6}}"},
    {"{properties: {l: {type: array, items: {type: object, properties: {x: {default: 1}}}}}}",
     "{l: [{}, {x: 2}, 3]}", "{\"l\":[{\"x\":1},{\"x\":2},3]}"},
    /* A tuple and additionalItems get no defaults: addon-operator reads only a single items schema. */
    {"{items: [{properties: {a: {default: 1}}}, {properties: {b: {default: 2}}}]}", "[{}, {}, {}]",
     "[{},{},{}]"},
    {"{items: [{}], additionalItems: {properties: {b: {default: 2}}}}", "[{}, {}]", "[{},{}]"},
    {"{definitions: {d: {properties: {x: {default: 7}}}}, properties: {r: {$ref: '#/definitions/d'}}}",
     "{r: {}}", "{\"r\":{\"x\":7}}"},
    {"{allOf: [{properties: {a: {default: 1}}}]}", "{}", "{}"},
    {"{additionalProperties: {properties: {a: {default: 1}}}}", "{k: {}}", "{\"k\":{}}"},
    {"{patternProperties: {'.': {properties: {a: {default: 1}}}}}", "{k: {}}", "{\"k\":{}}"},
    {"{properties: {a: {default: 1}}}", "[1]", "[1]"},
    {"{properties: {a: {default: 1}}}", "x", "\"x\""},
};

static void test_defaults(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(dcases); i++) {
                struct ao_schema *s = build(dcases[i].schema, NULL);
                cJSON *v = yaml(dcases[i].value);
                char *text;

                ao_schema_apply_defaults(s, AO_SCHEMA_CONFIG, v);
                text = ao_json_canonical(v);
                tap_is_str(text, dcases[i].result, "defaults: %s on %s", dcases[i].schema, dcases[i].value);
                free(text);
                cJSON_Delete(v);
                ao_schema_free(s);
        }

        /* Defaults are deep copies: changing one result leaves the schema and later results alone. */
        struct ao_schema *s = build("{properties: {a: {default: {b: [1]}}}}", NULL);
        cJSON *v1 = yaml("{}"), *v2 = yaml("{}");
        char *text;

        ao_schema_apply_defaults(s, AO_SCHEMA_CONFIG, v1);
        cJSON_AddNumberToObject(cJSON_GetObjectItem(v1, "a"), "c", 2);
        ao_schema_apply_defaults(s, AO_SCHEMA_CONFIG, v2);
        text = ao_json_canonical(v2);
        tap_is_str(text, "{\"a\":{\"b\":[1]}}", "defaults: deep copy");
        free(text);
        ao_schema_apply_defaults(s, AO_SCHEMA_VALUES, v1); /* no values schema: no-op */
        ao_schema_apply_defaults(s, AO_SCHEMA_CONFIG, NULL);
        ao_schema_apply_defaults(NULL, AO_SCHEMA_CONFIG, v1);
        text = ao_json_canonical(v1);
        tap_is_str(text, "{\"a\":{\"b\":[1],\"c\":2}}", "defaults: no schema, NULL value");
        free(text);
        cJSON_Delete(v1);
        cJSON_Delete(v2);
        ao_schema_free(s);

        /* config-values and values kinds have their own defaults. */
        s = build("{properties: {a: {default: 1}}}",
                  "{x-extend: {schema: config-values.yaml}, properties: {b: {default: 2}}}");
        v1 = yaml("{}");
        ao_schema_apply_defaults(s, AO_SCHEMA_CONFIG, v1);
        text = ao_json_canonical(v1);
        tap_is_str(text, "{\"a\":1}", "defaults: config kind");
        free(text);
        ao_schema_apply_defaults(s, AO_SCHEMA_VALUES, v1);
        text = ao_json_canonical(v1);
        tap_is_str(text, "{\"a\":1,\"b\":2}", "defaults: values kind (extended)");
        free(text);
        cJSON_Delete(v1);
        ao_schema_free(s);
}

/* ---- loading ---------------------------------------------------------------------------------- */

struct lcase {
        const char *config; /* NULL: no such file */
        const char *values;
        const char *error; /* with "DIR" for the directory; NULL when loading succeeds */
};

static const struct lcase lcases[] = {
    {NULL, "properties: {a: {type: strin}}", "DIR/values.yaml: properties.a.type: unknown type 'strin'"},
    {"{type: [string, 5]}", NULL, "DIR/config-values.yaml: type: unknown type '(not a string)'"},
    {"{type: []}", NULL, "DIR/config-values.yaml: type: must be a type name or a list of them"},
    {"{properties: {a: {pattern: '('}}}", NULL,
     "DIR/config-values.yaml: properties.a.pattern: invalid regular expression '(': end pattern with "
     "unmatched "
     "parenthesis"},
    {"{patternProperties: {'[a': {}}}", NULL,
     "DIR/config-values.yaml: patternProperties: invalid regular expression '[a': premature end of "
     "char-class"},
    {"{properties: {a: {$ref: '#/definitions/nope'}}}", NULL,
     "DIR/config-values.yaml: properties.a.$ref: '#/definitions/nope' not found"},
    {"{properties: {a: {$ref: 'other.yaml#/a'}}}", NULL,
     "DIR/config-values.yaml: properties.a.$ref: 'other.yaml#/a' is not a local reference "
     "'#/definitions/<name>'"},
    {"{items: [{minLength: -1}]}", NULL,
     "DIR/config-values.yaml: items[0].minLength: must be a non-negative integer"},
    {"{maxItems: 1.5}", NULL, "DIR/config-values.yaml: maxItems: must be a non-negative integer"},
    {"{multipleOf: 0}", NULL, "DIR/config-values.yaml: multipleOf: must be a number greater than 0"},
    {"{anyOf: []}", NULL, "DIR/config-values.yaml: anyOf: must be a non-empty list of schemas"},
    {"{allOf: [{}, 1]}", NULL, "DIR/config-values.yaml: allOf: must be a non-empty list of schemas"},
    {"{oneOf: [{not: []}]}", NULL, "DIR/config-values.yaml: oneOf[0].not: must be a schema"},
    {"{required: a}", NULL, "DIR/config-values.yaml: required: must be a list of strings"},
    {"{enum: a}", NULL, "DIR/config-values.yaml: enum: must be a list"},
    {"{minimum: a}", NULL, "DIR/config-values.yaml: minimum: must be a number"},
    {"{exclusiveMaximum: a}", NULL,
     "DIR/config-values.yaml: exclusiveMaximum: must be a boolean or a number"},
    {"{nullable: 1}", NULL, "DIR/config-values.yaml: nullable: must be a boolean"},
    {"{uniqueItems: yes please}", NULL, "DIR/config-values.yaml: uniqueItems: must be a boolean"},
    {"{additionalProperties: 1}", NULL,
     "DIR/config-values.yaml: additionalProperties: must be a boolean or a schema"},
    {"{properties: {a: 1}}", NULL, "DIR/config-values.yaml: properties: must be a mapping of schemas"},
    {"{properties: {a: }}", NULL, "DIR/config-values.yaml: properties: must be a mapping of schemas"},
    {"{definitions: {d: {type: bad}}}", NULL,
     "DIR/config-values.yaml: definitions.d.type: unknown type 'bad'"},
    {"{format: 1}", NULL, "DIR/config-values.yaml: format: must be a string"},
    {"{items: 1}", NULL, "DIR/config-values.yaml: items: must be a schema or a list of schemas"},
    {"{items: [{}], additionalItems: 1}", NULL,
     "DIR/config-values.yaml: additionalItems: must be a boolean or a schema"},
    {"{items: [{}], additionalItems: {type: bad}}", NULL,
     "DIR/config-values.yaml: additionalItems.type: unknown type 'bad'"},
    {"{items: [{}], additionalItems: {$ref: '#/definitions/nope'}}", NULL,
     "DIR/config-values.yaml: additionalItems.$ref: '#/definitions/nope' not found"},
    {"{items: [{}], additionalItems: {pattern: '('}}", NULL,
     "DIR/config-values.yaml: additionalItems.pattern: invalid regular expression '(': end pattern with "
     "unmatched parenthesis"},
    {"{x-required-for-helm: 1}", NULL,
     "DIR/config-values.yaml: x-required-for-helm: must be a string or a list of strings"},
    {NULL, "{x-extend: config-values.yaml}",
     "DIR/values.yaml: x-extend: must be a mapping with a 'schema' file name"},
    {"[1, 2]", NULL, "DIR/config-values.yaml: a schema must be a mapping"},
    {"{type: object}", "a: [",
     "DIR/values.yaml:2:1: did not find expected node content (while parsing a flow node that starts at "
     "2:1)"},
    {"{type: object}", "{a: 1, a: 2}", "DIR/values.yaml:1:8: duplicate key 'a'"},
    {"{pattern: \"\\x01(\"}", NULL,
     "DIR/config-values.yaml: pattern: invalid regular expression '\\x01(': end pattern with unmatched "
     "parenthesis"},
    {"", "", NULL},
    {"# nothing\n", "{type: object}", NULL},
};

static char *write_dir(const struct lcase *lc)
{
        char tmpl[] = "/tmp/test-schema-XXXXXX";
        char path[256];
        FILE *f;

        if (!mkdtemp(tmpl))
                tap_bail("mkdtemp");
        if (lc->config) {
                snprintf(path, sizeof(path), "%s/config-values.yaml", tmpl);
                f = fopen(path, "w");
                fputs(lc->config, f);
                fclose(f);
        }
        if (lc->values) {
                snprintf(path, sizeof(path), "%s/values.yaml", tmpl);
                f = fopen(path, "w");
                fputs(lc->values, f);
                fclose(f);
        }
        return strdup(tmpl);
}

static void remove_dir(const char *dir)
{
        char path[256];

        snprintf(path, sizeof(path), "%s/config-values.yaml", dir);
        (void) unlink(path);
        snprintf(path, sizeof(path), "%s/values.yaml", dir);
        (void) unlink(path);
        (void) rmdir(dir);
}

static char *replace_dir(const char *pattern, const char *dir)
{
        struct ao_strbuf sb = {0};
        const char *p = strstr(pattern, "DIR");

        if (!p)
                return strdup(pattern);
        ao_strbuf_append_n(&sb, pattern, (size_t) (p - pattern));
        ao_strbuf_append(&sb, dir);
        ao_strbuf_append(&sb, p + 3);
        return ao_strbuf_steal(&sb);
}

static void test_load(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(lcases); i++) {
                const struct lcase *lc = &lcases[i];
                char *dir = write_dir(lc), *want = lc->error ? replace_dir(lc->error, dir) : NULL;
                struct ao_error err = {0};
                struct ao_schema *s = NULL;
                int r = ao_schema_load_dir(dir, &s, &err);

                if (want) {
                        tap_is_int(r, -EINVAL, "load case %zu: code", i);
                        tap_is_str(err.msg, want, "load: message");
                        tap_ok(s == NULL, "load: nothing returned on error");
                } else {
                        tap_is_int(r, 0, "load case %zu: loads", i);
                        if (r < 0)
                                tap_diag("%s", err.msg);
                }
                ao_schema_free(s);
                free(want);
                remove_dir(dir);
                free(dir);
        }
}

static void test_load_dir(void)
{
        const struct lcase lc = {"{properties: {a: {type: integer, default: 1}}}",
                                 "{x-extend: {schema: config-values.yaml}, x-required-for-helm: [b],"
                                 " properties: {b: {type: string}}}",
                                 NULL};
        char *dir = write_dir(&lc);
        struct ao_error err = {0};
        struct ao_schema *s = NULL;
        char path[300];

        tap_is_int(ao_schema_load_dir(dir, &s, &err), 0, "load dir: both files");
        tap_ok(ao_schema_has(s, AO_SCHEMA_CONFIG) && ao_schema_has(s, AO_SCHEMA_VALUES) &&
                   ao_schema_has(s, AO_SCHEMA_HELM),
               "load dir: three kinds");
        expect(s, AO_SCHEMA_VALUES, "mod", "{a: 1, b: x}", "", "load dir: values valid");
        expect(s, AO_SCHEMA_CONFIG, "mod", "{a: 1, b: x}", "mod: 'b' is not allowed (additionalProperties)",
               "load dir: config");
        expect(s, AO_SCHEMA_HELM, "mod", "{a: 1}", "mod: 'b' is required (required)", "load dir: helm");
        s = ao_schema_free(s);
        tap_ok(s == NULL && !ao_schema_has(NULL, AO_SCHEMA_CONFIG), "free returns NULL; has(NULL) is false");

        /* Only values.yaml. */
        snprintf(path, sizeof(path), "%s/config-values.yaml", dir);
        (void) unlink(path);
        tap_is_int(ao_schema_load_dir(dir, &s, &err), 0, "load dir: values only");
        tap_ok(!ao_schema_has(s, AO_SCHEMA_CONFIG) && ao_schema_has(s, AO_SCHEMA_VALUES),
               "load dir: values kind only");
        expect(s, AO_SCHEMA_VALUES, "mod", "{a: 1}", "mod: 'a' is not allowed (additionalProperties)",
               "load dir: x-extend without config-values.yaml");
        ao_schema_free(s);
        remove_dir(dir);

        /* A missing directory means no schema. */
        tap_is_int(ao_schema_load_dir(dir, &s, &err), 0, "load dir: missing directory");
        tap_ok(!ao_schema_has(s, AO_SCHEMA_CONFIG) && !ao_schema_has(s, AO_SCHEMA_VALUES),
               "load dir: nothing");
        expect(s, AO_SCHEMA_CONFIG, "mod", "{anything: 1}", "", "load dir: no schema, all valid");
        ao_schema_free(s);
        free(dir);

        /* ao_schema_from_json() names the files by their usual names. */
        cJSON *bad = yaml("{properties: {a: {minItems: x}}}");
        tap_is_int(ao_schema_from_json(NULL, bad, &s, &err), -EINVAL, "from_json: error");
        tap_is_str(err.msg, "values.yaml: properties.a.minItems: must be a non-negative integer",
                   "from_json: message");
        cJSON_Delete(bad);
}

int main(void)
{
        test_seed_validation();
        test_seed_extend();
        test_extend_rules();
        test_seed_defaults();
        test_seed_required_for_helm();
        test_cases();
        test_paths_and_limits();
        test_defaults();
        test_load();
        test_load_dir();
        return tap_done();
}
