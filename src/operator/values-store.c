/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The values every hook and release sees, kept as their layers (values.yaml
 * files, the stored config, schema defaults, patches hooks returned) and
 * composed on demand, so a change to any layer shows everywhere at once.
 * Patches are stored, not their results: they are re-applied on top of the
 * current layers every time (see docs/VALUES.md).
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/jsonpatch.h"
#include "ao/schema.h"
#include "ao/values.h"
#include "ao/yaml.h"
#include "internal.h"

int values_store_init(struct values_store *vs, const struct ao_settings *settings, const struct modules *m,
                      struct ao_error *reterr)
{
        *vs = (struct values_store){
            .global_patches = cJSON_CreateArray(),
            .dynamic_enabled = cJSON_CreateObject(),
            .config = cJSON_CreateObject(),
        };
        vs->global_layers = ao_xcalloc(m->n_common_values + 1, sizeof(cJSON *));
        for (size_t i = 0; i < m->n_common_values; i++) {
                cJSON *g = cJSON_GetObjectItemCaseSensitive(m->common_values[i], "global");
                if (g)
                        vs->global_layers[vs->n_global_layers++] = g;
        }
        _cleanup_free_ char *openapi = ao_xasprintf("%s/openapi", settings->global_hooks_dir);
        int r = ao_schema_load_dir(openapi, &vs->global_schema, reterr);
        if (r < 0)
                return ao_error_prefix(reterr, "global values");
        return 0;
}

void values_store_done(struct values_store *vs)
{
        free(vs->global_layers);
        ao_schema_free(vs->global_schema);
        cJSON_Delete(vs->global_patches);
        cJSON_Delete(vs->dynamic_enabled);
        cJSON_Delete(vs->config);
        *vs = (struct values_store){0};
}

static struct ao_values_sources global_sources(const struct values_store *vs)
{
        return (struct ao_values_sources){
            .key = "global",
            .static_layers = (const cJSON *const *) vs->global_layers,
            .n_static_layers = vs->n_global_layers,
            .config = cJSON_GetObjectItemCaseSensitive(vs->config, "global"),
            .patches = vs->global_patches,
            .schema = vs->global_schema,
        };
}

/* The module's static layers: its section in each common values.yaml, then in its own values.yaml. */
struct module_layers {
        const cJSON *items[64];
        size_t n;
};

static void module_layers(const struct modules *m, const struct module *mod, struct module_layers *ret)
{
        ret->n = 0;
        for (size_t i = 0; i < m->n_common_values && ret->n + 1 < AO_ARRAY_SIZE(ret->items); i++) {
                const cJSON *s = cJSON_GetObjectItemCaseSensitive(m->common_values[i], mod->values_key);
                if (s)
                        ret->items[ret->n++] = s;
        }
        if (mod->own_values)
                ret->items[ret->n++] = mod->own_values;
}

static struct ao_values_sources module_sources(const struct values_store *vs, const struct module *mod,
                                               const struct module_layers *layers)
{
        return (struct ao_values_sources){
            .key = mod->values_key,
            .static_layers = layers->items,
            .n_static_layers = layers->n,
            .config = cJSON_GetObjectItemCaseSensitive(vs->config, mod->values_key),
            .patches = mod->patches,
            .schema = mod->schema,
        };
}

int values_global(const struct values_store *vs, cJSON **ret, struct ao_error *reterr)
{
        struct ao_values_sources src = global_sources(vs);
        return ao_values_compose(&src, ret, reterr);
}

int values_global_config(const struct values_store *vs, cJSON **ret, struct ao_error *reterr)
{
        struct ao_values_sources src = global_sources(vs);
        return ao_values_compose_config(&src, ret, reterr);
}

int values_module(const struct values_store *vs, const struct modules *m, const struct module *mod,
                  cJSON **ret, struct ao_error *reterr)
{
        struct module_layers layers;
        module_layers(m, mod, &layers);
        struct ao_values_sources src = module_sources(vs, mod, &layers);
        return ao_values_compose(&src, ret, reterr);
}

int values_module_config(const struct values_store *vs, const struct modules *m, const struct module *mod,
                         cJSON **ret, struct ao_error *reterr)
{
        struct module_layers layers;
        module_layers(m, mod, &layers);
        struct ao_values_sources src = module_sources(vs, mod, &layers);
        return ao_values_compose_config(&src, ret, reterr);
}

static char *checksum_of(int r, cJSON *values)
{
        char *text = r >= 0 ? ao_json_canonical(values) : ao_xstrdup("(invalid)");
        cJSON_Delete(values);
        return text;
}

char *values_global_checksum(const struct values_store *vs)
{
        cJSON *v = NULL;
        int r = values_global(vs, &v, NULL);
        char *text = checksum_of(r, v);
        /* Enabled flags set by global hooks count as global changes (they re-run discovery). */
        char *flags = ao_json_canonical(vs->dynamic_enabled);
        char *both = ao_xasprintf("%s %s", text, flags);
        free(text);
        free(flags);
        return both;
}

char *values_module_checksum(const struct values_store *vs, const struct modules *m, const struct module *mod)
{
        cJSON *v = NULL;
        int r = values_module(vs, m, mod, &v, NULL);
        return checksum_of(r, v);
}

int values_module_enabled_flag(const struct values_store *vs, const struct modules *m,
                               const struct module *mod)
{
        int enabled = 0;
        for (size_t i = 0; i < m->n_common_values; i++) {
                const cJSON *f = cJSON_GetObjectItemCaseSensitive(m->common_values[i], mod->enabled_key);
                if (cJSON_IsBool(f))
                        enabled = cJSON_IsTrue(f);
        }
        if (mod->own_enabled >= 0)
                enabled = mod->own_enabled;
        const cJSON *dynamic = cJSON_GetObjectItemCaseSensitive(vs->dynamic_enabled, mod->enabled_key);
        if (cJSON_IsBool(dynamic))
                enabled = cJSON_IsTrue(dynamic);
        const cJSON *config = cJSON_GetObjectItemCaseSensitive(vs->config, mod->enabled_key);
        if (cJSON_IsBool(config))
                enabled = cJSON_IsTrue(config);
        return enabled;
}

/* A schema violation list (NUL-separated) as one message line: "a: ...; b: ...". */
static int schema_error(struct ao_error *reterr, const char *what, char *errors)
{
        char buf[AO_ERROR_MSG_MAX];
        size_t used = 0;
        buf[0] = '\0';
        for (const char *e = errors; e && *e; e += strlen(e) + 1) {
                int n = snprintf(buf + used, sizeof(buf) - used, "%s%s", used ? "; " : "", e);
                if (n < 0 || (size_t) n >= sizeof(buf) - used)
                        break;
                used += (size_t) n;
        }
        free(errors);
        return ao_error_set(reterr, -EINVAL, "%s: %s", what, buf);
}

/* A global patch's top-level /<key>Enabled operations go to the enabled flags, the rest stays. */
static int split_enabled_ops(struct values_store *vs, const cJSON *ops, cJSON **ret_rest,
                             struct ao_error *reterr)
{
        cJSON *rest = cJSON_CreateArray();
        for (const cJSON *op = ops->child; op; op = op->next) {
                const char *path = cJSON_GetObjectItemCaseSensitive(op, "path")->valuestring;
                const char *kind = cJSON_GetObjectItemCaseSensitive(op, "op")->valuestring;
                if (strncmp(path, "/global/", 8) == 0 || strcmp(path, "/global") == 0) {
                        cJSON_AddItemToArray(rest, cJSON_Duplicate(op, true));
                        continue;
                }
                const char *key = path + 1;
                if (strcmp(kind, "remove") == 0) {
                        cJSON_DeleteItemFromObjectCaseSensitive(vs->dynamic_enabled, key);
                        continue;
                }
                const cJSON *value = cJSON_GetObjectItemCaseSensitive(op, "value");
                if (!cJSON_IsBool(value) || (strcmp(kind, "add") != 0 && strcmp(kind, "replace") != 0)) {
                        cJSON_Delete(rest);
                        return ao_error_set(reterr, -EINVAL,
                                            "values patch: '%s' takes add or remove of true/false", path);
                }
                cJSON_DeleteItemFromObjectCaseSensitive(vs->dynamic_enabled, key);
                cJSON_AddItemToObject(vs->dynamic_enabled, key, cJSON_Duplicate(value, false));
        }
        *ret_rest = rest;
        return 0;
}

static bool path_within(const char *path, const char *prefix)
{
        size_t n = strlen(prefix);
        return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * Keep the stored list short: an add, replace or remove of P makes every earlier operation on P or
 * below it pointless. Order is kept (the Go operator sorts by path, which reorders /a/10 before /a/2).
 */
static void store_ops(cJSON *stored, const cJSON *ops)
{
        for (const cJSON *op = ops->child; op; op = op->next) {
                const char *kind = cJSON_GetObjectItemCaseSensitive(op, "op")->valuestring;
                const char *path = cJSON_GetObjectItemCaseSensitive(op, "path")->valuestring;
                bool overrides = !strcmp(kind, "add") || !strcmp(kind, "replace") || !strcmp(kind, "remove");
                size_t len = strlen(path);
                bool appends = len >= 2 && path[len - 1] == '-' && path[len - 2] == '/';
                for (cJSON *old = stored->child; overrides && !appends && old;) {
                        cJSON *next = old->next;
                        const char *old_path = cJSON_GetObjectItemCaseSensitive(old, "path")->valuestring;
                        if (path_within(old_path, path))
                                cJSON_Delete(cJSON_DetachItemViaPointer(stored, old));
                        old = next;
                }
                cJSON_AddItemToArray(stored, cJSON_Duplicate(op, true));
        }
}

/* Apply @ops strictly to {key: values} and validate the result: what a stored patch must survive. */
static int try_patch(const char *key, cJSON *values, const struct ao_schema *schema, const cJSON *ops,
                     struct ao_error *reterr)
{
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, key, values);
        int r = ao_jsonpatch_apply(doc, ops, 0, reterr);
        if (r >= 0) {
                char *errors = NULL;
                const cJSON *section = cJSON_GetObjectItemCaseSensitive(doc, key);
                if (schema && ao_schema_validate(schema, AO_SCHEMA_VALUES, key, section, &errors) < 0)
                        r = schema_error(reterr, "values patch makes the values invalid", errors);
        } else {
                ao_error_prefix(reterr, "values patch");
        }
        cJSON_Delete(doc);
        return r;
}

int values_apply_patch(struct values_store *vs, const struct modules *m, struct module *mod, const cJSON *ops,
                       struct ao_error *reterr)
{
        cJSON *values = NULL;
        int r;
        if (mod) {
                if ((r = values_module(vs, m, mod, &values, reterr)) < 0)
                        return r;
                if ((r = try_patch(mod->values_key, values, mod->schema, ops, reterr)) < 0)
                        return r;
                store_ops(mod->patches, ops);
                return 0;
        }
        cJSON *saved_flags = cJSON_Duplicate(vs->dynamic_enabled, true);
        cJSON *rest = NULL;
        if ((r = split_enabled_ops(vs, ops, &rest, reterr)) >= 0 &&
            (r = values_global(vs, &values, reterr)) >= 0 &&
            (r = try_patch("global", values, vs->global_schema, rest, reterr)) >= 0)
                store_ops(vs->global_patches, rest);
        if (r < 0) {
                cJSON_Delete(vs->dynamic_enabled);
                vs->dynamic_enabled = saved_flags;
        } else {
                cJSON_Delete(saved_flags);
        }
        cJSON_Delete(rest);
        return r;
}

int values_apply_config_patch(struct values_store *vs, const struct modules *m, const struct module *mod,
                              const cJSON *ops, cJSON **ret_section, struct ao_error *reterr)
{
        (void) m;
        const char *key = mod ? mod->values_key : "global";
        const struct ao_schema *schema = mod ? mod->schema : vs->global_schema;
        const cJSON *current = cJSON_GetObjectItemCaseSensitive(vs->config, key);
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, key, current ? cJSON_Duplicate(current, true) : cJSON_CreateObject());
        int r = ao_jsonpatch_apply(doc, ops, 0, reterr);
        if (r < 0) {
                cJSON_Delete(doc);
                return ao_error_prefix(reterr, "config values patch");
        }
        cJSON *section = cJSON_DetachItemFromObjectCaseSensitive(doc, key);
        cJSON_Delete(doc);
        if (!cJSON_IsObject(section)) {
                cJSON_Delete(section);
                section = cJSON_CreateObject();
        }
        cJSON *with_defaults = cJSON_CreateObject();
        if (schema)
                ao_schema_apply_defaults(schema, AO_SCHEMA_CONFIG, with_defaults);
        ao_values_merge(with_defaults, section);
        char *errors = NULL;
        if (schema && ao_schema_validate(schema, AO_SCHEMA_CONFIG, key, with_defaults, &errors) < 0) {
                cJSON_Delete(with_defaults);
                cJSON_Delete(section);
                return schema_error(reterr, "config values patch makes the config invalid", errors);
        }
        cJSON_Delete(with_defaults);
        *ret_section = section;
        return 0;
}

static int validate_section(const struct ao_schema *schema, const char *key, const cJSON *section,
                            struct ao_error *reterr)
{
        if (!schema)
                return 0;
        cJSON *with_defaults = cJSON_CreateObject();
        ao_schema_apply_defaults(schema, AO_SCHEMA_CONFIG, with_defaults);
        if (section)
                ao_values_merge(with_defaults, section);
        char *errors = NULL;
        int r = ao_schema_validate(schema, AO_SCHEMA_CONFIG, key, with_defaults, &errors);
        cJSON_Delete(with_defaults);
        return r < 0 ? schema_error(reterr, "config values are invalid", errors) : 0;
}

int values_validate_config(const struct values_store *vs, const struct modules *m, const cJSON *config,
                           struct ao_error *reterr)
{
        int r = validate_section(vs->global_schema, "global",
                                 cJSON_GetObjectItemCaseSensitive(config, "global"), reterr);
        for (size_t i = 0; r >= 0 && i < m->n; i++) {
                const struct module *mod = &m->items[i];
                r = validate_section(mod->schema, mod->values_key,
                                     cJSON_GetObjectItemCaseSensitive(config, mod->values_key), reterr);
        }
        return r;
}

/* What a values patch may change: a copy to go back to. */
struct values_saved {
        cJSON *patches;         /* the section's stored patches */
        cJSON *dynamic_enabled; /* the enabled flags global hooks set */
};

static cJSON **patches_of(struct values_store *vs, struct module *mod)
{
        return mod ? &mod->patches : &vs->global_patches;
}

static struct values_saved values_save(struct values_store *vs, struct module *mod)
{
        return (struct values_saved){.patches = cJSON_Duplicate(*patches_of(vs, mod), true),
                                     .dynamic_enabled = cJSON_Duplicate(vs->dynamic_enabled, true)};
}

static void values_restore(struct values_store *vs, struct module *mod, struct values_saved *saved)
{
        cJSON **patches = patches_of(vs, mod);
        cJSON_Delete(*patches);
        *patches = saved->patches;
        cJSON_Delete(vs->dynamic_enabled);
        vs->dynamic_enabled = saved->dynamic_enabled;
}

static void values_saved_drop(struct values_saved *saved)
{
        cJSON_Delete(saved->patches);
        cJSON_Delete(saved->dynamic_enabled);
}

int values_check_patch(struct values_store *vs, const struct modules *m, struct module *mod, const cJSON *ops,
                       struct ao_error *reterr)
{
        struct values_saved saved = values_save(vs, mod);
        int r = values_apply_patch(vs, m, mod, ops, reterr);
        values_restore(vs, mod, &saved);
        return r;
}

struct values_undo {
        struct module *mod;
        struct values_saved saved;
};

struct values_undo *values_undo_point(struct values_store *vs, struct module *mod)
{
        struct values_undo *u = ao_xcalloc(1, sizeof(*u));
        *u = (struct values_undo){.mod = mod, .saved = values_save(vs, mod)};
        return u;
}

void values_undo(struct values_store *vs, struct values_undo *u)
{
        values_restore(vs, u->mod, &u->saved);
        free(u);
}

void values_undo_drop(struct values_undo *u)
{
        if (!u)
                return;
        values_saved_drop(&u->saved);
        free(u);
}
