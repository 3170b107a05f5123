/* SPDX-License-Identifier: Apache-2.0 */
/* Composing values sections: the seeds' worked examples, defaults and stored patches. */
#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/jsonpatch.h"
#include "ao/schema.h"
#include "ao/values.h"
#include "ao/yaml.h"

static cJSON *load(const char *yaml)
{
        cJSON *j = NULL;
        struct ao_error err = {0};
        if (ao_yaml_load(yaml, strlen(yaml), "test", &j, &err) < 0)
                tap_bail(err.msg);
        return j;
}

static cJSON *patch(const char *text)
{
        cJSON *ops = NULL;
        struct ao_error err = {0};
        if (ao_jsonpatch_parse(text, strlen(text), "patch", &ops, &err) < 0)
                tap_bail(err.msg);
        return ops;
}

static char *compose(const struct ao_values_sources *src, bool config_only)
{
        cJSON *out = NULL;
        struct ao_error err = {0};
        int k = config_only ? ao_values_compose_config(src, &out, &err) : ao_values_compose(src, &out, &err);
        if (k < 0) {
                tap_diag("compose: %s", err.msg);
                return strdup("error");
        }
        char *text = ao_json_canonical(out);
        cJSON_Delete(out);
        return text;
}

/* The VALUES seed's example: modules/values.yaml, the module's values.yaml, the ConfigMap, a config patch. */
static void test_seed_example(void)
{
        cJSON *common = load("global: {param1: 100, param2: \"Yes\"}");
        cJSON *module_file = load("someModule: {param1: \"String\"}");
        cJSON *cm_global = load("param1: 200");
        cJSON *cm_module = load("param1: \"Long string\"\nparam2: \"FOO\"");

        const cJSON *global_static[] = {cJSON_GetObjectItem(common, "global")};
        struct ao_values_sources global = {
            .key = "global", .static_layers = global_static, .n_static_layers = 1, .config = cm_global};
        const cJSON *module_static[] = {cJSON_GetObjectItem(common, "someModule"),
                                        cJSON_GetObjectItem(module_file, "someModule")};
        struct ao_values_sources module = {
            .key = "someModule", .static_layers = module_static, .n_static_layers = 2, .config = cm_module};

        char *s;
        tap_is_str(s = compose(&global, true), "{\"param1\":200}", "seed: CONFIG_VALUES_PATH global");
        free(s);
        tap_is_str(s = compose(&module, true), "{\"param1\":\"Long string\",\"param2\":\"FOO\"}",
                   "seed: CONFIG_VALUES_PATH someModule");
        free(s);
        tap_is_str(s = compose(&global, false), "{\"param1\":200,\"param2\":\"Yes\"}",
                   "seed: VALUES_PATH global");
        free(s);
        tap_is_str(s = compose(&module, false), "{\"param1\":\"Long string\",\"param2\":\"FOO\"}",
                   "seed: VALUES_PATH someModule");
        free(s);

        /* The hook's CONFIG_VALUES_JSON_PATCH_PATH patch lands in the ConfigMap section. */
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, "someModule", cJSON_Duplicate(cm_module, true));
        cJSON *ops = patch("  [{\"op\":\"add\", \"path\":\"/someModule/param3\", \"value\":\"newValue\"}]\n");
        struct ao_error err = {0};
        tap_is_int(ao_jsonpatch_apply(doc, ops, 0, &err), 0, "seed: config patch applies");
        module.config = cJSON_GetObjectItem(doc, "someModule");
        tap_is_str(s = compose(&module, true),
                   "{\"param1\":\"Long string\",\"param2\":\"FOO\",\"param3\":\"newValue\"}",
                   "seed: CONFIG_VALUES_PATH after the patch");
        free(s);
        tap_is_str(s = compose(&module, false),
                   "{\"param1\":\"Long string\",\"param2\":\"FOO\",\"param3\":\"newValue\"}",
                   "seed: VALUES_PATH after the patch");
        free(s);
        cJSON_Delete(ops);
        cJSON_Delete(doc);
        cJSON_Delete(common), cJSON_Delete(module_file), cJSON_Delete(cm_global), cJSON_Delete(cm_module);
}

/* The seed's Defaults example: discovery: {} appears when no layer sets it. */
static void test_defaults(void)
{
        cJSON *config_schema = load("type: object\nproperties:\n  param1: {type: string}\n");
        cJSON *values_schema =
            load("x-extend:\n  schema: config-values.yaml\ntype: object\nadditionalProperties: false\n"
                 "required: [param1]\nproperties:\n  discovery:\n    type: object\n    default: {}\n"
                 "  param1:\n    type: string\n");
        struct ao_schema *schema = NULL;
        struct ao_error err = {0};
        if (ao_schema_from_json(config_schema, values_schema, &schema, &err) < 0)
                tap_bail(err.msg);
        cJSON *config = load("param1: abc");
        struct ao_values_sources src = {.key = "global", .config = config, .schema = schema};
        char *s;
        tap_is_str(s = compose(&src, false), "{\"discovery\":{},\"param1\":\"abc\"}",
                   "defaults: discovery added as an empty object");
        free(s);
        tap_is_str(s = compose(&src, true), "{\"param1\":\"abc\"}", "defaults: not in the config values");
        free(s);
        cJSON *set = load("param1: abc\ndiscovery: {a: 1}");
        src.config = set;
        tap_is_str(s = compose(&src, false), "{\"discovery\":{\"a\":1},\"param1\":\"abc\"}",
                   "defaults: a set value is kept");
        free(s);
        cJSON_Delete(set);
        cJSON_Delete(config);
        ao_schema_free(schema);
        cJSON_Delete(config_schema);
        cJSON_Delete(values_schema);
}

static void test_patches(void)
{
        cJSON *static_layer = load("{a: 1, list: [1, 2]}");
        const cJSON *layers[] = {static_layer};
        cJSON *ops = patch("[{\"op\":\"add\",\"path\":\"/someModule/b\",\"value\":{\"c\":3}},"
                           "{\"op\":\"remove\",\"path\":\"/someModule/gone\"},"
                           "{\"op\":\"add\",\"path\":\"/someModule/list/-\",\"value\":3}]");
        struct ao_values_sources src = {
            .key = "someModule", .static_layers = layers, .n_static_layers = 1, .patches = ops};
        char *s;
        tap_is_str(s = compose(&src, false), "{\"a\":1,\"b\":{\"c\":3},\"list\":[1,2,3]}",
                   "patches: applied after the layers; a remove of a missing path is skipped");
        free(s);
        cJSON *wipe = patch("{\"op\":\"remove\",\"path\":\"/someModule\"}");
        src.patches = wipe;
        tap_is_str(s = compose(&src, false), "{}", "patches: removing the whole section leaves it empty");
        free(s);
        cJSON_Delete(wipe);
        cJSON_Delete(ops);
        cJSON_Delete(static_layer);
}

static void test_documents(void)
{
        cJSON *global = load("{param1: 200}"), *module = load("{x: 1}");
        const char *enabled[] = {"cert-manager", "some-module", NULL};
        char *s;
        cJSON *doc = ao_values_document(global, "someModule", module, enabled);
        tap_is_str(s = ao_json_canonical(doc),
                   "{\"global\":{\"enabledModules\":[\"cert-manager\",\"some-module\"],\"param1\":200},"
                   "\"someModule\":{\"x\":1}}",
                   "document: module hooks see global.enabledModules in execution order");
        free(s);
        cJSON_Delete(doc);
        doc = ao_values_document(global, "someModule", module, NULL);
        tap_is_str(s = ao_json_canonical(doc), "{\"global\":{\"param1\":200},\"someModule\":{\"x\":1}}",
                   "document: helm values have no enabledModules");
        free(s);
        cJSON_Delete(doc);
        doc = ao_values_document(global, NULL, NULL, NULL);
        tap_is_str(s = ao_json_canonical(doc), "{\"global\":{\"param1\":200}}", "document: global hooks");
        free(s);
        cJSON_Delete(doc);
        char *g = ao_json_canonical(global);
        tap_is_str(g, "{\"param1\":200}", "document: the inputs are not changed");
        free(g);
        cJSON_Delete(global);
        cJSON_Delete(module);
}

int main(void)
{
        test_documents();
        test_seed_example();
        test_defaults();
        test_patches();
        return tap_done();
}
