/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The values store: layering, enabled flags, stored patches and their
 * compaction, two-phase patches, config patches, the documents hooks and
 * helm read, checksums.
 */
#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/jsonpatch.h"
#include "ao/schema.h"
#include "ao/values-store.h"
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

static struct ao_schema *schema(const char *config_values, const char *values)
{
        cJSON *c = config_values ? load(config_values) : NULL, *v = values ? load(values) : NULL;
        struct ao_schema *s = NULL;
        struct ao_error err = {0};
        if (ao_schema_from_json(c, v, &s, &err) < 0)
                tap_bail(err.msg);
        cJSON_Delete(c);
        cJSON_Delete(v);
        return s;
}

/* Canonical text of @json (deleted), or "error: <message>" when @r failed. */
static char *text_of(int r, cJSON *json, const struct ao_error *err)
{
        char *text = r >= 0 ? ao_json_canonical(json) : NULL;
        if (r < 0 && asprintf(&text, "error: %s", err->msg) < 0)
                tap_bail("asprintf");
        cJSON_Delete(json);
        return text;
}

static char *values_of(struct ao_values_store *s, struct ao_values_section *section)
{
        cJSON *v = NULL;
        struct ao_error err = {0};
        int r = ao_values_store_values(s, section, &v, &err);
        return text_of(r, v, &err);
}

static char *config_values_of(struct ao_values_store *s, struct ao_values_section *section)
{
        cJSON *v = NULL;
        struct ao_error err = {0};
        int r = ao_values_store_config_values(s, section, &v, &err);
        return text_of(r, v, &err);
}

static char *canon(const cJSON *json)
{
        return ao_json_canonical(json);
}

#define is_text(expr, want, ...)                      \
        do {                                          \
                char *got__ = (expr);                 \
                tap_is_str(got__, want, __VA_ARGS__); \
                free(got__);                          \
        } while (0)

/* Apply (or only check) patch text to @section: 0, or "error: <message>". */
static char *patch_result(struct ao_values_store *s, struct ao_values_section *section, const char *text,
                          bool check_only)
{
        cJSON *ops = patch(text);
        struct ao_error err = {0};
        int r = check_only ? ao_values_store_check_patch(s, section, ops, &err)
                           : ao_values_store_apply_patch(s, section, ops, &err);
        cJSON_Delete(ops);
        char *out = NULL;
        if (asprintf(&out, r >= 0 ? "ok" : "error: %s", err.msg) < 0)
                tap_bail("asprintf");
        return out;
}

/* Everything observable about the store, for "nothing changed" checks. */
static char *state_of(struct ao_values_store *s, struct ao_values_section *const *sections, size_t n)
{
        char *out = ao_values_store_checksum(s, ao_values_store_global(s));
        for (size_t i = 0; i < n; i++) {
                char *sum = ao_values_store_checksum(s, sections[i]);
                char *patches = canon(ao_values_store_patches(s, sections[i]));
                char *config = canon(ao_values_store_config(s));
                char *joined = NULL;
                if (asprintf(&joined, "%s | %s %s %s %d", out, sum, patches, config,
                             ao_values_store_enabled(s, sections[i])) < 0)
                        tap_bail("asprintf");
                free(out), free(sum), free(patches), free(config);
                out = joined;
        }
        char *patches = canon(ao_values_store_patches(s, ao_values_store_global(s)));
        char *joined = NULL;
        if (asprintf(&joined, "%s | %s", out, patches) < 0)
                tap_bail("asprintf");
        free(out), free(patches);
        return joined;
}

/* ---- layering ---------------------------------------------------------------------------------- */

static void test_layering(void)
{
        struct ao_values_store *s = ao_values_store_new();
        ao_values_store_add_common_take(s, load("global: {a: 1, b: 1, nested: {x: 1, w: 1}}\n"
                                                "someModule: {p: 1, q: 1, r: 1, s: 1, list: [1, 2]}\n"));
        ao_values_store_add_common_take(
            s, load("global: {b: 2, nested: {w: 2}}\nsomeModule: {q: 2, list: [3]}\n"));
        struct ao_schema *sch = schema("type: object\n"
                                       "properties:\n"
                                       "  s: {type: integer}\n"
                                       "  t: {type: string, default: cdef}\n",
                                       "x-extend: {schema: config-values.yaml}\n"
                                       "type: object\n"
                                       "properties:\n"
                                       "  p: {type: integer}\n"
                                       "  q: {type: integer}\n"
                                       "  r: {type: integer, default: 99}\n"
                                       "  u: {type: string, default: vdef}\n"
                                       "  list: {type: array}\n");
        struct ao_values_section *m = ao_values_store_add_module_take(s, "someModule", "someModuleEnabled",
                                                                      load("{r: 3, s: 3}"), -1, sch);
        struct ao_values_section *g = ao_values_store_global(s);

        tap_is_str(ao_values_section_key(g), "global", "layering: the global section's key");
        tap_ok(!ao_values_section_enabled_key(g), "layering: the global section has no enabled key");
        tap_is_str(ao_values_section_key(m), "someModule", "layering: a module section's key");
        tap_is_str(ao_values_section_enabled_key(m), "someModuleEnabled", "layering: its enabled key");
        tap_ok(ao_values_section_schema(m) == sch && !ao_values_section_schema(g), "layering: schemas");

        is_text(values_of(s, g), "{\"a\":1,\"b\":2,\"nested\":{\"w\":2,\"x\":1}}",
                "layering: global: common files merge in order, maps key by key");
        is_text(values_of(s, m),
                "{\"list\":[3],\"p\":1,\"q\":2,\"r\":3,\"s\":3,\"t\":\"cdef\",\"u\":\"vdef\"}",
                "layering: module: common files, its own file (arrays replace), defaults only where unset");
        is_text(config_values_of(s, m), "{\"t\":\"cdef\"}", "layering: config values: defaults only");

        cJSON *config = load("global: {c: 3, nested: {x: 3}}\nsomeModule: {s: 4}\n");
        ao_values_store_set_config(s, config);
        cJSON_Delete(config); /* copied */
        is_text(values_of(s, g), "{\"a\":1,\"b\":2,\"c\":3,\"nested\":{\"w\":2,\"x\":3}}",
                "layering: global: the config section over the files");
        is_text(values_of(s, m),
                "{\"list\":[3],\"p\":1,\"q\":2,\"r\":3,\"s\":4,\"t\":\"cdef\",\"u\":\"vdef\"}",
                "layering: module: the config section over its own file");
        is_text(config_values_of(s, m), "{\"s\":4,\"t\":\"cdef\"}",
                "layering: config values: the config section over the config-values defaults");
        is_text(config_values_of(s, g), "{\"c\":3,\"nested\":{\"x\":3}}",
                "layering: global config values: the config section alone");

        is_text(patch_result(s, m,
                             "[{\"op\":\"replace\",\"path\":\"/someModule/s\",\"value\":5},"
                             "{\"op\":\"replace\",\"path\":\"/someModule/u\",\"value\":\"patched\"}]",
                             false),
                "ok", "layering: a module patch applies");
        is_text(values_of(s, m),
                "{\"list\":[3],\"p\":1,\"q\":2,\"r\":3,\"s\":5,\"t\":\"cdef\",\"u\":\"patched\"}",
                "layering: patches last, over config and schema defaults");
        is_text(config_values_of(s, m), "{\"s\":4,\"t\":\"cdef\"}",
                "layering: patches stay out of config values");

        /* Patches are replayed over the layers as they are now: a new config value shows where no hook wrote. */
        config = load("global: {c: 3}\nsomeModule: {s: 6, p: 7}\n");
        ao_values_store_set_config(s, config);
        cJSON_Delete(config);
        is_text(values_of(s, m),
                "{\"list\":[3],\"p\":7,\"q\":2,\"r\":3,\"s\":5,\"t\":\"cdef\",\"u\":\"patched\"}",
                "layering: a config change shows through, patched keys keep the patch");

        /* A common document added after the module still counts, after the earlier ones. */
        ao_values_store_add_common_take(s, load("global: {a: 10}\nsomeModule: {q: 30, r: 30}\n"));
        is_text(values_of(s, g), "{\"a\":10,\"b\":2,\"c\":3,\"nested\":{\"w\":2,\"x\":1}}",
                "layering: a later common document wins over earlier ones");
        is_text(values_of(s, m),
                "{\"list\":[3],\"p\":7,\"q\":30,\"r\":3,\"s\":5,\"t\":\"cdef\",\"u\":\"patched\"}",
                "layering: ... for modules too, still under the module's own file (r)");

        ao_values_store_reset_patches(s, m);
        is_text(canon(ao_values_store_patches(s, m)), "[]", "reset: no stored patches");
        is_text(values_of(s, m),
                "{\"list\":[3],\"p\":7,\"q\":30,\"r\":3,\"s\":6,\"t\":\"cdef\",\"u\":\"vdef\"}",
                "reset: the module's values come from its layers again");

        ao_values_store_set_config(s, NULL);
        is_text(canon(ao_values_store_config(s)), "{}", "config: NULL sets an empty config");
        ao_values_store_free(s);
}

/* A module whose own values.yaml section is not a mapping (`someModule:` alone is null) adds nothing. */
static void test_null_own_values(void)
{
        struct ao_values_store *s = ao_values_store_new();
        ao_values_store_add_common_take(s, load("someModule: {a: 1}\n"));
        struct ao_values_section *m = ao_values_store_add_module_take(s, "someModule", "someModuleEnabled",
                                                                      cJSON_CreateNull(), -1, NULL);
        is_text(values_of(s, m), "{\"a\":1}", "layering: a null own section is ignored");
        tap_ok(ao_values_store_free(s) == NULL, "free: returns NULL");
        tap_ok(ao_values_store_free(NULL) == NULL, "free: accepts NULL");
}

/* ---- enabled flags ----------------------------------------------------------------------------- */

static void test_enabled(void)
{
        struct ao_values_store *s = ao_values_store_new();
        ao_values_store_add_common_take(s, load("aEnabled: true\nbEnabled: true\ncEnabled: true\n"
                                                "dEnabled: false\neEnabled: true\n"));
        ao_values_store_add_common_take(s, load("eEnabled: false\nbEnabled: yes-but-not-a-bool\n"));
        struct ao_values_section *a = ao_values_store_add_module_take(s, "a", "aEnabled", NULL, -1, NULL);
        struct ao_values_section *b = ao_values_store_add_module_take(s, "b", "bEnabled", NULL, 0, NULL);
        struct ao_values_section *c = ao_values_store_add_module_take(s, "c", "cEnabled", NULL, 0, NULL);
        struct ao_values_section *d = ao_values_store_add_module_take(s, "d", "dEnabled", NULL, 1, NULL);
        struct ao_values_section *e = ao_values_store_add_module_take(s, "e", "eEnabled", NULL, -1, NULL);
        struct ao_values_section *f = ao_values_store_add_module_take(s, "f", "fEnabled", NULL, -1, NULL);
        struct ao_values_section *g = ao_values_store_global(s);

        tap_ok(ao_values_store_enabled(s, a), "enabled: a common file's true");
        tap_ok(!ao_values_store_enabled(s, b), "enabled: the own file's false wins over common files");
        tap_ok(ao_values_store_enabled(s, d), "enabled: the own file's true wins over common files");
        tap_ok(!ao_values_store_enabled(s, e), "enabled: a later common file wins");
        tap_ok(!ao_values_store_enabled(s, f), "enabled: no source: disabled");
        tap_ok(ao_values_store_enabled(s, g), "enabled: the global section always is");

        is_text(patch_result(s, g,
                             "[{\"op\":\"add\",\"path\":\"/bEnabled\",\"value\":true},"
                             "{\"op\":\"replace\",\"path\":\"/cEnabled\",\"value\":true},"
                             "{\"op\":\"add\",\"path\":\"/dEnabled\",\"value\":false}]",
                             false),
                "ok", "enabled: a global hook sets flags");
        tap_ok(ao_values_store_enabled(s, b), "enabled: a dynamic true wins over the own file");
        tap_ok(ao_values_store_enabled(s, c), "enabled: replace works as add");
        tap_ok(!ao_values_store_enabled(s, d), "enabled: a dynamic false wins over the own file");
        is_text(canon(ao_values_store_patches(s, g)), "[]",
                "enabled: flag operations are not stored patches");

        cJSON *config = load("bEnabled: false\ndEnabled: \"true\"\n");
        ao_values_store_set_config(s, config);
        cJSON_Delete(config);
        tap_ok(!ao_values_store_enabled(s, b), "enabled: the config wins over a dynamic flag");
        tap_ok(!ao_values_store_enabled(s, d), "enabled: a config value that is not a boolean is ignored");

        is_text(patch_result(s, g, "{\"op\":\"remove\",\"path\":\"/cEnabled\"}", false), "ok",
                "enabled: a global hook removes a flag");
        tap_ok(!ao_values_store_enabled(s, c), "enabled: without the dynamic flag the own file counts again");
        is_text(patch_result(s, g, "{\"op\":\"remove\",\"path\":\"/fEnabled\"}", false), "ok",
                "enabled: removing an unset flag is fine");
        ao_values_store_free(s);
}

/* ---- stored patches ---------------------------------------------------------------------------- */

/* The operations of the compaction test, as canonical JSON. */
#define APPEND_1  "{\"op\":\"add\",\"path\":\"/m/list/-\",\"value\":1}"
#define APPEND_2  "{\"op\":\"add\",\"path\":\"/m/list/-\",\"value\":2}"
#define ADD_X     "{\"op\":\"add\",\"path\":\"/m/x\",\"value\":{\"y\":1}}"
#define ADD_X_Y   "{\"op\":\"add\",\"path\":\"/m/x/y\",\"value\":2}"
#define REPLACE_X "{\"op\":\"replace\",\"path\":\"/m/x\",\"value\":{\"z\":1}}"
#define TEST_KEEP "{\"op\":\"test\",\"path\":\"/m/keep\",\"value\":1}"
#define COPY_KEEP "{\"from\":\"/m/xx\",\"op\":\"copy\",\"path\":\"/m/keep\"}"
#define REMOVE_L  "{\"op\":\"remove\",\"path\":\"/m/list\"}"

static void test_compaction(void)
{
        struct ao_values_store *s = ao_values_store_new();
        struct ao_values_section *m = ao_values_store_add_module_take(
            s, "m", "mEnabled", load("{list: [0], x: {}, xx: 1, keep: 1}"), -1, NULL);
        /* patch, the stored operations after it, what it shows */
        static const char *const steps[][3] = {
            {"[" APPEND_1 "," ADD_X "]", "[" APPEND_1 "," ADD_X "]",
             "compaction: operations are stored in order"},
            {ADD_X_Y, "[" APPEND_1 "," ADD_X "," ADD_X_Y "]",
             "compaction: an operation below an earlier one keeps it"},
            {REPLACE_X, "[" APPEND_1 "," REPLACE_X "]",
             "compaction: replace of P drops earlier operations on P and below it, not on /m/xx"},
            {"[" APPEND_2 "," TEST_KEEP "]", "[" APPEND_1 "," REPLACE_X "," APPEND_2 "," TEST_KEEP "]",
             "compaction: appends drop nothing and are kept; test is kept"},
            {COPY_KEEP, "[" APPEND_1 "," REPLACE_X "," APPEND_2 "," TEST_KEEP "," COPY_KEEP "]",
             "compaction: copy drops nothing"},
            {REMOVE_L, "[" REPLACE_X "," TEST_KEEP "," COPY_KEEP "," REMOVE_L "]",
             "compaction: remove of P drops the appends to P"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(steps); i++) {
                char *r = patch_result(s, m, steps[i][0], false);
                tap_is_str(r, "ok", "compaction: step %zu applies", i);
                free(r);
                is_text(canon(ao_values_store_patches(s, m)), steps[i][1], "%s", steps[i][2]);
        }
        is_text(values_of(s, m), "{\"keep\":1,\"x\":{\"z\":1},\"xx\":1}", "compaction: the values they make");
        ao_values_store_free(s);
}

/* ---- two phases -------------------------------------------------------------------------------- */

static struct ao_values_store *two_phase_store(struct ao_values_section **ret_module)
{
        struct ao_values_store *s = ao_values_store_new();
        ao_values_store_add_common_take(s, load("global: {a: 1}\nsomeModuleEnabled: true\n"));
        ao_values_store_set_global_schema_take(s, schema(NULL, "type: object\n"
                                                               "properties:\n"
                                                               "  a: {type: integer}\n"
                                                               "  limit: {type: integer, maximum: 10}\n"));
        *ret_module =
            ao_values_store_add_module_take(s, "someModule", "someModuleEnabled", load("{replicas: 2}"), -1,
                                            schema(NULL, "type: object\nproperties:\n  replicas: {type: "
                                                         "integer, minimum: 1}\n  name: {type: string}\n"));
        return s;
}

static void test_check_has_no_side_effects(void)
{
        struct ao_values_section *m;
        struct ao_values_store *s = two_phase_store(&m);
        struct ao_values_section *g = ao_values_store_global(s);
        struct ao_values_section *const sections[] = {m};
        char *before = state_of(s, sections, 1);
        const char *global_patch = "[{\"op\":\"add\",\"path\":\"/global/limit\",\"value\":5},"
                                   "{\"op\":\"add\",\"path\":\"/someModuleEnabled\",\"value\":false}]";

        is_text(patch_result(s, g, global_patch, true), "ok",
                "check: a valid global patch with a flag passes");
        is_text(state_of(s, sections, 1), before, "check: checksums, patches, flags and config unchanged");
        is_text(
            patch_result(s, m, "{\"op\":\"replace\",\"path\":\"/someModule/replicas\",\"value\":3}", true),
            "ok", "check: a valid module patch passes");
        is_text(patch_result(s, g, "{\"op\":\"remove\",\"path\":\"/someModuleEnabled\"}", true), "ok",
                "check: a flag remove passes");
        is_text(state_of(s, sections, 1), before, "check: still nothing changed");

        char *global_sum = ao_values_store_checksum(s, g), *module_sum = ao_values_store_checksum(s, m);
        is_text(patch_result(s, g, global_patch, false), "ok", "apply: the same global patch");
        tap_ok(!ao_values_store_enabled(s, m), "apply: the flag is set");
        is_text(canon(ao_values_store_patches(s, g)),
                "[{\"op\":\"add\",\"path\":\"/global/limit\",\"value\":5}]",
                "apply: only the /global operation is stored");
        char *sum = ao_values_store_checksum(s, g);
        tap_ok(strcmp(sum, global_sum) != 0, "apply: the global checksum changed");
        free(sum);
        is_text(ao_values_store_checksum(s, m), module_sum, "apply: the module's checksum did not");

        /* A flag alone changes the global checksum (it changes which modules run). */
        free(global_sum);
        global_sum = ao_values_store_checksum(s, g);
        is_text(patch_result(s, g, "{\"op\":\"add\",\"path\":\"/someModuleEnabled\",\"value\":true}", false),
                "ok", "apply: a flag alone");
        sum = ao_values_store_checksum(s, g);
        tap_ok(strcmp(sum, global_sum) != 0, "checksum: a dynamic flag changes the global checksum");
        tap_ok(strstr(sum, "{\"someModuleEnabled\":true}") != NULL, "checksum: ... which lists the flags");
        free(sum);
        free(global_sum);
        free(module_sum);
        free(before);
        ao_values_store_free(s);
}

static void test_apply_failure(void)
{
        struct ao_values_section *m;
        struct ao_values_store *s = two_phase_store(&m);
        struct ao_values_section *g = ao_values_store_global(s);
        struct ao_values_section *const sections[] = {m};
        is_text(patch_result(s, g, "{\"op\":\"add\",\"path\":\"/global/a\",\"value\":2}", false), "ok",
                "failure: a first patch is stored");
        char *before = state_of(s, sections, 1);

        static const char *const cases[][3] = {
            {"[{\"op\":\"add\",\"path\":\"/someModuleEnabled\",\"value\":false},"
             "{\"op\":\"add\",\"path\":\"/global/limit\",\"value\":100}]",
             "error: values patch makes the values invalid: global.limit: must be <= 10 (maximum)",
             "failure: schema refusal after a flag operation"},
            {"{\"op\":\"add\",\"path\":\"/someModuleEnabled\",\"value\":\"yes\"}",
             "error: values patch: '/someModuleEnabled' takes add or remove of true/false",
             "failure: a flag set to a string"},
            {"{\"op\":\"copy\",\"from\":\"/global/a\",\"path\":\"/someModuleEnabled\"}",
             "error: values patch: '/someModuleEnabled' takes add or remove of true/false",
             "failure: a flag set by copy"},
            {"[{\"op\":\"add\",\"path\":\"/global/limit\",\"value\":1},{\"op\":\"remove\",\"path\":\"/global/"
             "nope\"}]",
             "error: values patch: operation 1 (remove /global/nope): path not found",
             "failure: an operation that does not apply"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                is_text(patch_result(s, g, cases[i][0], true), cases[i][1], "%s (check)", cases[i][2]);
                is_text(patch_result(s, g, cases[i][0], false), cases[i][1], "%s (apply)", cases[i][2]);
                is_text(state_of(s, sections, 1), before, "%s: nothing changed", cases[i][2]);
        }
        is_text(patch_result(s, m,
                             "[{\"op\":\"add\",\"path\":\"/someModule/name\",\"value\":\"x\"},"
                             "{\"op\":\"replace\",\"path\":\"/someModule/replicas\",\"value\":0},"
                             "{\"op\":\"add\",\"path\":\"/someModule/extra\",\"value\":1}]",
                             false),
                "error: values patch makes the values invalid: someModule.replicas: must be >= 1 (minimum); "
                "someModule: 'extra' is not allowed (additionalProperties)",
                "failure: module patch: every violation, joined");
        is_text(state_of(s, sections, 1), before, "failure: module patch: nothing changed");
        free(before);
        ao_values_store_free(s);
}

/* ---- config ------------------------------------------------------------------------------------ */

static char *config_patch_result(struct ao_values_store *s, struct ao_values_section *section,
                                 const char *text)
{
        cJSON *ops = patch(text), *section_json = NULL;
        struct ao_error err = {0};
        int r = ao_values_store_check_config_patch(s, section, ops, &section_json, &err);
        cJSON_Delete(ops);
        return text_of(r, section_json, &err);
}

static void test_config(void)
{
        struct ao_values_store *s = ao_values_store_new();
        ao_values_store_set_global_schema_take(
            s, schema("type: object\nproperties:\n  project: {type: string}\n", NULL));
        struct ao_values_section *m = ao_values_store_add_module_take(
            s, "someModule", "someModuleEnabled", NULL, -1,
            schema("type: object\nproperties:\n  replicas: {type: integer, minimum: 1}\n"
                   "  mode: {type: string, default: auto}\n",
                   NULL));
        struct ao_values_section *plain =
            ao_values_store_add_module_take(s, "plain", "plainEnabled", NULL, -1, NULL);
        struct ao_values_section *g = ao_values_store_global(s);
        cJSON *config = load("global: {project: p}\nsomeModule: {replicas: 2}\nplain: {anything: 1}\n");
        ao_values_store_set_config(s, config);
        cJSON_Delete(config);
        struct ao_error err = {0};
        tap_is_int(ao_values_store_validate_config(s, ao_values_store_config(s), &err), 0,
                   "validate: a valid config");

        static const char *const invalid[][3] = {
            {"global: {project: 1}\nsomeModule: {replicas: 0}\n",
             "config values are invalid: global.project: must be a string (type)",
             "validate: the global section first"},
            {"global: {}\nsomeModule: {replicas: 0, mode: 1, other: x}\n",
             "config values are invalid: someModule.mode: must be a string (type); "
             "someModule.replicas: must be >= 1 (minimum); "
             "someModule: 'other' is not allowed (additionalProperties)",
             "validate: a module section, every violation"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(invalid); i++) {
                config = load(invalid[i][0]);
                err = (struct ao_error){0};
                tap_is_int(ao_values_store_validate_config(s, config, &err), -EINVAL, "%s: refused",
                           invalid[i][2]);
                tap_is_str(err.msg, invalid[i][1], "%s: message", invalid[i][2]);
                cJSON_Delete(config);
        }
        is_text(canon(ao_values_store_config(s)),
                "{\"global\":{\"project\":\"p\"},\"plain\":{\"anything\":1},\"someModule\":{\"replicas\":2}}",
                "validate: the stored config is not touched");

        char *before = canon(ao_values_store_config(s));
        is_text(
            config_patch_result(s, m, "{\"op\":\"replace\",\"path\":\"/someModule/replicas\",\"value\":0}"),
            "error: config values patch makes the config invalid: someModule.replicas: must be >= 1 "
            "(minimum)",
            "config patch: checked against the config-values schema");
        is_text(config_patch_result(s, m, "{\"op\":\"remove\",\"path\":\"/someModule/nope\"}"),
                "error: config values patch: operation 0 (remove /someModule/nope): path not found",
                "config patch: an operation that does not apply");
        is_text(config_patch_result(s, m, "{\"op\":\"add\",\"path\":\"/someModule/replicas\",\"value\":3}"),
                "{\"replicas\":3}", "config patch: the new section, without the defaults");
        is_text(config_patch_result(s, m, "{\"op\":\"remove\",\"path\":\"/someModule\"}"), "{}",
                "config patch: a removed section is an empty one");
        is_text(config_patch_result(s, plain, "{\"op\":\"add\",\"path\":\"/plain/x\",\"value\":[1]}"),
                "{\"anything\":1,\"x\":[1]}", "config patch: no schema, anything goes");
        is_text(config_patch_result(s, g, "{\"op\":\"add\",\"path\":\"/global/project\",\"value\":\"q\"}"),
                "{\"project\":\"q\"}", "config patch: the global section");
        is_text(canon(ao_values_store_config(s)), before, "config patch: checking stores nothing");
        free(before);

        cJSON *ops = patch("{\"op\":\"add\",\"path\":\"/someModule/replicas\",\"value\":3}"), *section = NULL;
        tap_is_int(ao_values_store_check_config_patch(s, m, ops, &section, &err), 0, "config patch: checked");
        char *sum = ao_values_store_checksum(s, m);
        ao_values_store_set_config_section_take(s, m, section);
        is_text(config_values_of(s, m), "{\"mode\":\"auto\",\"replicas\":3}",
                "config patch: set, with defaults");
        is_text(values_of(s, m), "{\"mode\":\"auto\",\"replicas\":3}", "config patch: in the values");
        char *after = ao_values_store_checksum(s, m);
        tap_ok(strcmp(sum, after) != 0, "checksum: a config section change changes the module's checksum");
        free(sum), free(after);
        cJSON_Delete(ops);

        ao_values_store_set_config_section_take(s, plain, NULL);
        is_text(canon(ao_values_store_config(s)),
                "{\"global\":{\"project\":\"p\"},\"someModule\":{\"replicas\":3}}",
                "config: a NULL section removes it");
        ao_values_store_free(s);
}

/* ---- documents --------------------------------------------------------------------------------- */

static void documents_of(struct ao_values_store *s, struct ao_values_section *section,
                         const char *const *enabled, char **ret_values, char **ret_config)
{
        cJSON *values = NULL, *config = NULL;
        struct ao_error err = {0};
        if (ao_values_store_hook_documents(s, section, enabled, &values, &config, &err) < 0) {
                *ret_values = text_of(-1, NULL, &err);
                *ret_config = strdup("");
                return;
        }
        *ret_values = text_of(0, values, &err);
        *ret_config = text_of(0, config, &err);
}

static void test_documents(void)
{
        struct ao_values_store *s = ao_values_store_new();
        ao_values_store_add_common_take(s, load("global: {a: 1}\nsomeModule: {x: 1}\n"));
        struct ao_values_section *m =
            ao_values_store_add_module_take(s, "someModule", "someModuleEnabled", NULL, -1, NULL);
        cJSON *config = load("global: {c: 1}\nsomeModule: {w: 1}\n");
        ao_values_store_set_config(s, config);
        cJSON_Delete(config);
        char *values, *conf;

        documents_of(s, ao_values_store_global(s), NULL, &values, &conf);
        tap_is_str(values, "{\"global\":{\"a\":1,\"c\":1}}", "documents: global hook values");
        tap_is_str(conf, "{\"global\":{\"c\":1}}", "documents: global hook config values");
        free(values), free(conf);

        const char *enabled[] = {"cert-manager", "some-module", NULL};
        documents_of(s, m, enabled, &values, &conf);
        tap_is_str(values,
                   "{\"global\":{\"a\":1,\"c\":1,\"enabledModules\":[\"cert-manager\",\"some-module\"]},"
                   "\"someModule\":{\"w\":1,\"x\":1}}",
                   "documents: module hook values, with global.enabledModules");
        tap_is_str(conf, "{\"global\":{\"c\":1},\"someModule\":{\"w\":1}}",
                   "documents: module hook config values, without enabledModules");
        free(values), free(conf);

        const char *none[] = {NULL};
        documents_of(s, m, none, &values, &conf);
        tap_is_str(values,
                   "{\"global\":{\"a\":1,\"c\":1,\"enabledModules\":[]},\"someModule\":{\"w\":1,\"x\":1}}",
                   "documents: an enabled script with no module enabled before it");
        free(values), free(conf);

        documents_of(s, m, NULL, &values, &conf);
        tap_is_str(values, "{\"global\":{\"a\":1,\"c\":1},\"someModule\":{\"w\":1,\"x\":1}}",
                   "documents: NULL: no enabledModules key");
        free(values), free(conf);
        ao_values_store_free(s);
}

static char *helm_of(struct ao_values_store *s, struct ao_values_section *section)
{
        cJSON *doc = NULL;
        struct ao_error err = {0};
        int r = ao_values_store_helm_document(s, section, &doc, &err);
        return text_of(r, doc, &err);
}

static void test_helm(void)
{
        struct ao_values_store *s = ao_values_store_new();
        ao_values_store_add_common_take(s, load("global: {a: 1}\n"));
        struct ao_values_section *m =
            ao_values_store_add_module_take(s, "someModule", "someModuleEnabled", load("{replicas: 1}"), -1,
                                            schema(NULL, "type: object\n"
                                                         "x-required-for-helm: [host, port]\n"
                                                         "properties:\n"
                                                         "  replicas: {type: integer}\n"
                                                         "  host: {type: string}\n"
                                                         "  port: {type: integer}\n"));
        is_text(helm_of(s, m),
                "error: values are not ready for helm: someModule: 'host' is required (required)",
                "helm: refused, naming the first missing field only");
        is_text(patch_result(s, m, "{\"op\":\"add\",\"path\":\"/someModule/host\",\"value\":\"h\"}", false),
                "ok", "helm: x-required-for-helm does not apply to hook patches");
        is_text(helm_of(s, m),
                "error: values are not ready for helm: someModule: 'port' is required (required)",
                "helm: the next missing field");
        is_text(patch_result(s, m, "{\"op\":\"add\",\"path\":\"/someModule/port\",\"value\":80}", false),
                "ok", "helm: the last field");
        is_text(helm_of(s, m),
                "{\"global\":{\"a\":1},\"someModule\":{\"host\":\"h\",\"port\":80,\"replicas\":1}}",
                "helm: the document, without enabledModules");
        ao_values_store_free(s);
}

/* A stored patch that no longer applies makes the section's values an error, and its checksum "(invalid)". */
static void test_invalid_stored_patch(void)
{
        struct ao_values_store *s = ao_values_store_new();
        struct ao_values_section *m =
            ao_values_store_add_module_take(s, "someModule", "someModuleEnabled", load("{a: 1}"), -1, NULL);
        is_text(patch_result(s, m, "{\"op\":\"test\",\"path\":\"/someModule/a\",\"value\":1}", false), "ok",
                "stored test: applies while a is 1");
        cJSON *config = load("someModule: {a: 2}\n");
        ao_values_store_set_config(s, config);
        cJSON_Delete(config);
        is_text(values_of(s, m),
                "error: someModule: applying stored values patches: operation 0 (test /someModule/a): test "
                "failed: value differs",
                "stored test: the values fail once a changes");
        is_text(ao_values_store_checksum(s, m), "(invalid)", "stored test: checksum");
        is_text(patch_result(s, m, "{\"op\":\"add\",\"path\":\"/someModule/b\",\"value\":1}", true),
                "error: someModule: applying stored values patches: operation 0 (test /someModule/a): test "
                "failed: value differs",
                "stored test: a new patch cannot be checked either");
        is_text(helm_of(s, m),
                "error: someModule: applying stored values patches: operation 0 (test /someModule/a): test "
                "failed: value differs",
                "stored test: no helm document");
        char *g = ao_values_store_checksum(s, ao_values_store_global(s));
        tap_is_str(g, "{} {}", "checksum: an empty global section and no flags");
        free(g);
        ao_values_store_free(s);
}

int main(void)
{
        test_layering();
        test_null_own_values();
        test_enabled();
        test_compaction();
        test_check_has_no_side_effects();
        test_apply_failure();
        test_config();
        test_documents();
        test_helm();
        test_invalid_stored_patch();
        return tap_done();
}
