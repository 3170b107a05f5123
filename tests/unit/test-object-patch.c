/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/kube/object-patch-parse.c: every operation with its fields,
 * JSON and YAML streams, objects and patches given as strings, the exact
 * error messages, describe().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/object-patch.h"
#include "ao/yaml.h"

static int parse(const char *text, struct ao_object_patch_ops *ops, struct ao_error *err)
{
        *ops = (struct ao_object_patch_ops){0};
        ao_error_clear(err);
        return ao_object_patch_parse(text, strlen(text), ops, err);
}

/* The canonical JSON of @json, compared with @want. */
static void is_json(const cJSON *json, const char *want, const char *what)
{
        char *got = json ? ao_json_canonical(json) : NULL;
        tap_is_str(got, want, "%s", what);
        free(got);
}

static void is_described(const struct ao_object_patch_op *op, const char *want)
{
        char *got = ao_object_patch_op_describe(op);
        tap_is_str(got, want, "describe: %s", want);
        free(got);
}

static void test_types(void)
{
        for (int t = 0; t < _AO_OBJECT_PATCH_TYPE_MAX; t++)
                tap_is_int(ao_object_patch_type_from_string(ao_object_patch_type_to_string(t)), t,
                           "type %s round-trips", ao_object_patch_type_to_string(t));
        tap_is_int(ao_object_patch_type_from_string("delete"), _AO_OBJECT_PATCH_TYPE_INVALID,
                   "type names are case-sensitive");
        tap_is_int(ao_object_patch_type_from_string(NULL), _AO_OBJECT_PATCH_TYPE_INVALID, "NULL type");
        tap_ok(ao_object_patch_type_to_string(_AO_OBJECT_PATCH_TYPE_MAX) == NULL, "type out of range");
}

static void test_create(void)
{
        static const char *const names[] = {"Create", "CreateOrUpdate", "CreateIfNotExists"};
        struct ao_object_patch_ops ops;
        struct ao_error err;
        char text[512];

        for (size_t i = 0; i < AO_ARRAY_SIZE(names); i++) {
                (void) snprintf(
                    text, sizeof(text),
                    "{\"operation\":\"%s\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                    "\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"},\"data\":{\"a\":\"b\"}}}",
                    names[i]);
                int r = parse(text, &ops, &err);
                tap_is_int(r, 0, "%s: parses", names[i]);
                if (r < 0 || ops.n != 1) {
                        tap_diag("%s", err.msg);
                        continue;
                }
                struct ao_object_patch_op *op = &ops.items[0];
                tap_is_int(op->type, (int) i, "%s: type", names[i]);
                tap_is_str(op->api_version, "v1", "%s: apiVersion from the object", names[i]);
                tap_is_str(op->kind, "ConfigMap", "%s: kind from the object", names[i]);
                tap_is_str(op->namespace_, "default", "%s: namespace from the object", names[i]);
                tap_is_str(op->name, "x", "%s: name from the object", names[i]);
                is_json(op->object,
                        "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"b\"},\"kind\":\"ConfigMap\","
                        "\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"}}",
                        "Create: the object");
                tap_ok(!op->patch && !op->jq_filter && !op->subresource, "%s: nothing else", names[i]);
                is_described(op, i == 0   ? "Create ConfigMap default/x"
                                 : i == 1 ? "CreateOrUpdate ConfigMap default/x"
                                          : "CreateIfNotExists ConfigMap default/x");
                ao_object_patch_ops_done(&ops);
        }

        /* Cluster-scoped, object as a YAML string, top-level kind ignored. */
        tap_is_int(parse("operation: Create\nkind: Ignored\nobject: |\n  apiVersion: v1\n  kind: Namespace\n"
                         "  metadata:\n    name: ns1\n",
                         &ops, &err),
                   0, "Create: object as a YAML string");
        if (ops.n == 1) {
                tap_is_str(ops.items[0].kind, "Namespace", "Create: string object's kind");
                tap_ok(ops.items[0].namespace_ == NULL, "Create: no namespace");
                is_json(ops.items[0].object,
                        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns1\"}}",
                        "Create: string object parsed");
                is_described(&ops.items[0], "Create Namespace ns1");
        }
        ao_object_patch_ops_done(&ops);

        tap_is_int(parse("{\"operation\":\"Create\",\"object\":\"{\\\"apiVersion\\\":\\\"v1\\\",\\\"kind\\\":"
                         "\\\"Pod\\\","
                         "\\\"metadata\\\":{\\\"name\\\":\\\"p\\\",\\\"namespace\\\":\\\"ns\\\"}}\"}",
                         &ops, &err),
                   0, "Create: object as a JSON string");
        if (ops.n == 1)
                is_described(&ops.items[0], "Create Pod ns/p");
        ao_object_patch_ops_done(&ops);
}

static void test_delete(void)
{
        static const char *const names[] = {"Delete", "DeleteInBackground", "DeleteNonCascading"};
        struct ao_object_patch_ops ops;
        struct ao_error err;
        char text[256];

        for (size_t i = 0; i < AO_ARRAY_SIZE(names); i++) {
                (void) snprintf(text, sizeof(text),
                                "{\"operation\":\"%s\",\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                "\"namespace\":\"d8\",\"name\":\"web\"}",
                                names[i]);
                tap_is_int(parse(text, &ops, &err), 0, "%s: parses", names[i]);
                if (ops.n != 1)
                        continue;
                const struct ao_object_patch_op *op = &ops.items[0];
                tap_is_int(op->type, AO_OBJECT_PATCH_DELETE + (int) i, "%s: type", names[i]);
                tap_is_str(op->api_version, "apps/v1", "%s: apiVersion", names[i]);
                tap_is_str(op->kind, "Deployment", "%s: kind", names[i]);
                tap_is_str(op->namespace_, "d8", "%s: namespace", names[i]);
                tap_is_str(op->name, "web", "%s: name", names[i]);
                tap_ok(!op->object && !op->patch && !op->ignore_missing, "%s: nothing else", names[i]);
                ao_object_patch_ops_done(&ops);
        }
        tap_is_int(parse("{\"operation\":\"Delete\",\"kind\":\"Namespace\",\"name\":\"x\",\"namespace\":\"\","
                         "\"apiVersion\":null}",
                         &ops, &err),
                   0, "Delete: cluster-scoped, empty namespace and null apiVersion");
        if (ops.n == 1) {
                tap_ok(!ops.items[0].namespace_ && !ops.items[0].api_version, "Delete: both unset");
                is_described(&ops.items[0], "Delete Namespace x");
        }
        ao_object_patch_ops_done(&ops);
}

static void test_patches(void)
{
        struct ao_object_patch_ops ops;
        struct ao_error err;

        tap_is_int(
            parse(
                "{\"operation\":\"JQPatch\",\"kind\":\"ConfigMap\",\"namespace\":\"ns\",\"name\":\"c\","
                "\"jqFilter\":\".data.a = \\\"1\\\"\",\"ignoreMissingObject\":true,\"ignoreHookError\":true}",
                &ops, &err),
            0, "JQPatch: parses");
        if (ops.n == 1) {
                const struct ao_object_patch_op *op = &ops.items[0];
                tap_is_int(op->type, AO_OBJECT_PATCH_JQ_PATCH, "JQPatch: type");
                tap_is_str(op->jq_filter, ".data.a = \"1\"", "JQPatch: jqFilter");
                tap_ok(op->ignore_missing && op->ignore_hook_error, "JQPatch: both booleans");
                tap_ok(op->api_version == NULL, "JQPatch: no apiVersion");
                is_described(op, "JQPatch ConfigMap ns/c");
        }
        ao_object_patch_ops_done(&ops);

        tap_is_int(parse("{\"operation\":\"MergePatch\",\"kind\":\"Pod\",\"namespace\":\"kube-system\","
                         "\"name\":\"web-0\","
                         "\"subresource\":\"/status\",\"mergePatch\":{\"status\":{\"phase\":\"Ok\"}},"
                         "\"ignoreMissingObject\":false}",
                         &ops, &err),
                   0, "MergePatch: parses");
        if (ops.n == 1) {
                const struct ao_object_patch_op *op = &ops.items[0];
                tap_is_int(op->type, AO_OBJECT_PATCH_MERGE_PATCH, "MergePatch: type");
                is_json(op->patch, "{\"status\":{\"phase\":\"Ok\"}}", "MergePatch: the patch");
                tap_is_str(op->subresource, "status", "MergePatch: '/status' becomes 'status'");
                tap_ok(!op->ignore_missing, "MergePatch: ignoreMissingObject false");
                is_described(op, "MergePatch Pod kube-system/web-0 (status)");
        }
        ao_object_patch_ops_done(&ops);

        tap_is_int(parse("operation: MergePatch\nkind: Pod\nname: p\nsubresource: status\n"
                         "mergePatch: '{\"metadata\": {\"labels\": {\"a\": \"b\"}}}'\n",
                         &ops, &err),
                   0, "MergePatch: patch as a string");
        if (ops.n == 1) {
                is_json(ops.items[0].patch, "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
                        "MergePatch: string parsed");
                tap_is_str(ops.items[0].subresource, "status", "MergePatch: subresource status");
        }
        ao_object_patch_ops_done(&ops);

        tap_is_int(parse("{\"operation\":\"JSONPatch\",\"kind\":\"ConfigMap\",\"name\":\"c\",\"jsonPatch\":["
                         "{\"op\":\"add\",\"path\":\"/data/"
                         "a\",\"value\":\"1\"},{\"op\":\"remove\",\"path\":\"/data/b\"},"
                         "{\"op\":\"replace\",\"path\":\"/x\",\"value\":2},{\"op\":\"move\",\"from\":\"/"
                         "a\",\"path\":\"/b\"},"
                         "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"},{\"op\":\"test\",\"path\":\"/"
                         "d\",\"value\":null}]}",
                         &ops, &err),
                   0, "JSONPatch: all six ops");
        if (ops.n == 1) {
                tap_is_int(ops.items[0].type, AO_OBJECT_PATCH_JSON_PATCH, "JSONPatch: type");
                tap_is_int(cJSON_GetArraySize(ops.items[0].patch), 6, "JSONPatch: six operations");
                is_described(&ops.items[0], "JSONPatch ConfigMap c");
        }
        ao_object_patch_ops_done(&ops);

        tap_is_int(parse("operation: JSONPatch\nkind: ConfigMap\nname: c\njsonPatch: |\n"
                         "  - op: add\n    path: /data/x\n    value: z\n",
                         &ops, &err),
                   0, "JSONPatch: patch as a YAML string");
        if (ops.n == 1)
                is_json(ops.items[0].patch, "[{\"op\":\"add\",\"path\":\"/data/x\",\"value\":\"z\"}]",
                        "JSONPatch: string parsed");
        ao_object_patch_ops_done(&ops);
}

static void test_streams(void)
{
        static const char *const json_streams[] = {
            "{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\"}"
            "{\"operation\":\"Delete\",\"kind\":\"B\",\"name\":\"b\"}"
            "{\"operation\":\"Delete\",\"kind\":\"C\",\"name\":\"c\"}",
            "\n{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\"}\n"
            "{\"operation\":\"Delete\",\"kind\":\"B\",\"name\":\"b\"}\r\n\t "
            "{\n  \"operation\": \"Delete\",\n  \"kind\": \"C\",\n  \"name\": \"c\"\n}\n\n",
            "---\noperation: Delete\nkind: A\nname: a\n---\n---\noperation: Delete\nkind: B\nname: b\n...\n"
            "---\n{operation: Delete, kind: C, name: c}\n",
        };
        static const char *const what[] = {"JSON stream without whitespace", "JSON stream with whitespace",
                                           "YAML multi-document"};
        struct ao_object_patch_ops ops;
        struct ao_error err;

        for (size_t i = 0; i < AO_ARRAY_SIZE(json_streams); i++) {
                tap_is_int(parse(json_streams[i], &ops, &err), 0, "%s: parses", what[i]);
                tap_is_int(ops.n, 3, "%s: three operations", what[i]);
                if (ops.n == 3)
                        tap_ok(strcmp(ops.items[0].kind, "A") == 0 && strcmp(ops.items[1].kind, "B") == 0 &&
                                   strcmp(ops.items[2].kind, "C") == 0,
                               "%s: in order", what[i]);
                ao_object_patch_ops_done(&ops);
        }
        static const char *const empty[] = {"", "  \n\t\r\n", "\xEF\xBB\xBF\n", "---\n", "# nothing\n"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(empty); i++) {
                ops = (struct ao_object_patch_ops){.n = 99};
                tap_is_int(ao_object_patch_parse(empty[i], strlen(empty[i]), &ops, &err), 0,
                           "empty %zu: parses", i);
                tap_is_int(ops.n, 0, "empty %zu: no operation", i);
                ao_object_patch_ops_done(&ops);
        }
        /* Not NUL-terminated: the length counts. */
        const char *two = "{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\"}garbage";
        tap_is_int(ao_object_patch_parse(two, strlen(two) - 7, &ops, &err), 0, "the length is honoured");
        tap_is_int(ops.n, 1, "the length is honoured: one operation");
        ao_object_patch_ops_done(&ops);
}

struct error_case {
        const char *text;
        int code;
        const char *msg;
};

#define P "KUBERNETES_PATCH_PATH: operation "

static const struct error_case errors[] = {
    {"{\"operation\":\"Patch\",\"kind\":\"A\",\"name\":\"a\"}", -EINVAL,
     P "0: operation: 'Patch' is not one of Create, CreateOrUpdate, CreateIfNotExists, Delete, "
       "DeleteInBackground, DeleteNonCascading, JQPatch, MergePatch, JSONPatch"},
    {"{\"kind\":\"A\",\"name\":\"a\"}", -EINVAL, P "0: operation: required"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\",\"labelSelector\":{}}", -EINVAL,
     P "0: unknown field 'labelSelector'"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\"}\n{\"operation\":\"Create\"}", -EINVAL,
     P "1: object: required for Create"},
    {"{\"operation\":\"Delete\",\"name\":\"a\"}", -EINVAL, P "0: kind: required for Delete"},
    {"{\"operation\":\"MergePatch\",\"kind\":\"A\",\"mergePatch\":{}}", -EINVAL,
     P "0: name: required for MergePatch"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"\"}", -EINVAL, P "0: name: required for Delete"},
    {"{\"operation\":\"JQPatch\",\"kind\":\"A\",\"name\":\"a\"}", -EINVAL,
     P "0: jqFilter: required for JQPatch"},
    {"{\"operation\":\"MergePatch\",\"kind\":\"A\",\"name\":\"a\"}", -EINVAL,
     P "0: mergePatch: required for MergePatch"},
    {"{\"operation\":\"JSONPatch\",\"kind\":\"A\",\"name\":\"a\"}", -EINVAL,
     P "0: jsonPatch: required for JSONPatch"},
    {"{\"operation\":\"Delete\",\"kind\":1,\"name\":\"a\"}", -EINVAL, P "0: kind: must be a string"},
    {"{\"operation\":true}", -EINVAL, P "0: operation: must be a string"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\",\"ignoreMissingObject\":\"true\"}", -EINVAL,
     P "0: ignoreMissingObject: must be a boolean"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\",\"ignoreHookError\":1}", -EINVAL,
     P "0: ignoreHookError: must be a boolean"},
    {"{\"operation\":\"MergePatch\",\"kind\":\"A\",\"name\":\"a\",\"mergePatch\":[1]}", -EINVAL,
     P "0: mergePatch: must be an object or a string holding one"},
    {"{\"operation\":\"MergePatch\",\"kind\":\"A\",\"name\":\"a\",\"mergePatch\":\"[1]\"}", -EINVAL,
     P "0: mergePatch: must be an object or a string holding one"},
    {"{\"operation\":\"JSONPatch\",\"kind\":\"A\",\"name\":\"a\",\"jsonPatch\":{}}", -EINVAL,
     P "0: jsonPatch: must be an array or a string holding one"},
    {"{\"operation\":\"Create\",\"object\":[]}", -EINVAL,
     P "0: object: must be an object or a string holding one"},
    {"{\"operation\":\"JSONPatch\",\"kind\":\"A\",\"name\":\"a\",\"jsonPatch\":[{\"op\":\"update\",\"path\":"
     "\"/a\"}]}",
     -EINVAL, P "0: jsonPatch[0]: unknown op 'update'"},
    {"{\"operation\":\"JSONPatch\",\"kind\":\"A\",\"name\":\"a\",\"jsonPatch\":[{\"op\":\"remove\",\"path\":"
     "\"/a\"},"
     "{\"path\":\"/a\"}]}",
     -EINVAL, P "0: jsonPatch[1]: missing 'op'"},
    {"{\"operation\":\"JSONPatch\",\"kind\":\"A\",\"name\":\"a\",\"jsonPatch\":[{\"op\":\"add\"}]}", -EINVAL,
     P "0: jsonPatch[0]: missing 'path'"},
    {"{\"operation\":\"JSONPatch\",\"kind\":\"A\",\"name\":\"a\",\"jsonPatch\":[1]}", -EINVAL,
     P "0: jsonPatch[0]: expected an operation object"},
    {"{\"operation\":\"Create\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{}}}",
     -EINVAL, P "0: object: metadata.name: required"},
    {"{\"operation\":\"Create\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}}", -EINVAL,
     P "0: object: metadata.name: required"},
    {"{\"operation\":\"Create\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":7}}"
     "}",
     -EINVAL, P "0: object: metadata.name: must be a string"},
    {"{\"operation\":\"Create\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":\"x\"}}",
     -EINVAL, P "0: object: metadata: must be an object"},
    {"{\"operation\":\"Create\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}}", -EINVAL,
     P "0: object: apiVersion: required"},
    {"{\"operation\":\"Create\",\"object\":{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\"}}}", -EINVAL,
     P "0: object: kind: required"},
    {"{\"operation\":\"Create\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
     "\"p\","
     "\"namespace\":[]}}}",
     -EINVAL, P "0: object: metadata.namespace: must be a string"},
    {"{\"operation\":\"Create\",\"object\":\"{\\\"apiVersion\\\": \"}", -EINVAL,
     P "0: object:2:1: did not find expected node content (while parsing a flow node that starts at 2:1)"},
    {"{\"operation\":\"MergePatch\",\"kind\":\"A\",\"name\":\"a\",\"mergePatch\":\"a: [\"}", -EINVAL,
     P
     "0: mergePatch:2:1: did not find expected node content (while parsing a flow node that starts at 2:1)"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\",\"subresource\":\"st/atus\"}", -EINVAL,
     P "0: subresource: 'st/atus' is not a subresource name"},
    {"[1]", -EINVAL, P "0: must be an object"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\"} {\"operation\":", -EINVAL,
     "KUBERNETES_PATCH_PATH:1:59: unexpected end of input"},
    {"{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\",\"name\":\"b\"}", -EINVAL,
     "KUBERNETES_PATCH_PATH:1:1: duplicate key 'name'"},
    {"operation: Delete\nkind: [\n", -EINVAL,
     "KUBERNETES_PATCH_PATH:3:1: did not find expected node content (while parsing a flow node that starts "
     "at 3:1)"},
};

static void test_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(errors); i++) {
                struct ao_object_patch_ops ops = {.n = 99};
                struct ao_error err = {0};
                int r = ao_object_patch_parse(errors[i].text, strlen(errors[i].text), &ops, &err);
                tap_is_int(r, errors[i].code, "error %zu: code", i);
                tap_is_str(err.msg, errors[i].msg, "error %zu: message", i);
                tap_is_int(ops.n, 99, "error %zu: result untouched", i);
        }
}

static void test_limits(void)
{
        struct ao_object_patch_ops ops = {0};
        struct ao_error err = {0};
        const char *one = "{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"a\"}\n";
        size_t n = strlen(one), count = AO_OBJECT_PATCH_MAX_OPERATIONS;
        char *text = malloc((count + 1) * n + 1);

        for (size_t i = 0; i <= count; i++)
                memcpy(text + i * n, one, n);
        tap_is_int(ao_object_patch_parse(text, count * n, &ops, &err), 0,
                   "limit: exactly the maximum parses");
        tap_is_int(ops.n, count, "limit: all of them");
        ao_object_patch_ops_done(&ops);
        tap_is_int(ao_object_patch_parse(text, (count + 1) * n, &ops, &err), -E2BIG, "limit: one more fails");
        tap_is_str(err.msg, "KUBERNETES_PATCH_PATH: more than 10000 operations", "limit: message");
        free(text);
}

static void test_describe(void)
{
        struct ao_object_patch_op op = {.type = AO_OBJECT_PATCH_DELETE, .kind = "Name\nspace", .name = "x"};
        is_described(&op, "Delete Name\\nspace x");
        op = (struct ao_object_patch_op){.type = _AO_OBJECT_PATCH_TYPE_INVALID};
        is_described(&op, "? ? ?");
}

int main(void)
{
        test_types();
        test_create();
        test_delete();
        test_patches();
        test_streams();
        test_errors();
        test_limits();
        test_describe();
        return tap_done();
}
