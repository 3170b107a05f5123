/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The values store: its sections and layers, and what is composed from
 * them (values, the documents hooks and helm read, checksums, enabled
 * flags). The config is in store-config.c, memory patches in store-patch.c.
 */
#include "ao/values-store.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/schema.h"
#include "ao/values.h"
#include "ao/yaml.h"
#include "store-internal.h"

static cJSON *new_json(cJSON *json)
{
        if (!json)
                abort(); /* as ao_xmalloc */
        return json;
}

static void section_init(struct ao_values_section *section, const char *key, const char *enabled_key)
{
        *section = (struct ao_values_section){
            .key = ao_xstrdup(key),
            .enabled_key = enabled_key ? ao_xstrdup(enabled_key) : NULL,
            .own_enabled = -1,
            .patches = new_json(cJSON_CreateArray()),
        };
}

static void section_done(struct ao_values_section *section)
{
        free(section->key);
        free(section->enabled_key);
        cJSON_Delete(section->own_values);
        ao_schema_free(section->schema);
        cJSON_Delete(section->patches);
}

struct ao_values_store *ao_values_store_new(void)
{
        struct ao_values_store *store = ao_xcalloc(1, sizeof(*store));
        section_init(&store->global, "global", NULL);
        store->dynamic_enabled = new_json(cJSON_CreateObject());
        store->config = new_json(cJSON_CreateObject());
        return store;
}

struct ao_values_store *ao_values_store_free(struct ao_values_store *store)
{
        if (!store)
                return NULL;
        for (size_t i = 0; i < store->n_commons; i++)
                cJSON_Delete(store->commons[i]);
        free(store->commons);
        section_done(&store->global);
        for (size_t i = 0; i < store->n_modules; i++) {
                section_done(store->modules[i]);
                free(store->modules[i]);
        }
        free(store->modules);
        cJSON_Delete(store->dynamic_enabled);
        cJSON_Delete(store->config);
        free(store);
        return NULL;
}

void ao_values_store_add_common_take(struct ao_values_store *store, cJSON *doc)
{
        store->commons = ao_xreallocarray(store->commons, store->n_commons + 1, sizeof(*store->commons));
        store->commons[store->n_commons++] = doc;
}

struct ao_values_section *ao_values_store_global(struct ao_values_store *store)
{
        return &store->global;
}

void ao_values_store_set_global_schema_take(struct ao_values_store *store, struct ao_schema *schema)
{
        ao_schema_free(store->global.schema);
        store->global.schema = schema;
}

struct ao_values_section *ao_values_store_add_module_take(struct ao_values_store *store,
                                                          const char *values_key, const char *enabled_key,
                                                          cJSON *own_values, int own_enabled,
                                                          struct ao_schema *schema)
{
        struct ao_values_section *section = ao_xmalloc(sizeof(*section));
        section_init(section, values_key, enabled_key);
        section->own_values = own_values;
        section->own_enabled = own_enabled;
        section->schema = schema;
        store->modules = ao_xreallocarray(store->modules, store->n_modules + 1, sizeof(*store->modules));
        store->modules[store->n_modules++] = section;
        return section;
}

const char *ao_values_section_key(const struct ao_values_section *section)
{
        return section->key;
}

const char *ao_values_section_enabled_key(const struct ao_values_section *section)
{
        return section->enabled_key;
}

const struct ao_schema *ao_values_section_schema(const struct ao_values_section *section)
{
        return section->schema;
}

/* ---- composition ------------------------------------------------------------------------------- */

/*
 * The static layers of @section, borrowed from the store, in a malloc'd array: its member of each
 * common values.yaml, then its own values.yaml section. Looked up on every composition, so a common
 * document added after a module still counts.
 */
static const cJSON **static_layers(const struct ao_values_store *store,
                                   const struct ao_values_section *section, size_t *ret_n)
{
        const cJSON **layers = ao_xcalloc(store->n_commons + 1, sizeof(*layers));
        size_t n = 0;
        for (size_t i = 0; i < store->n_commons; i++) {
                const cJSON *layer = cJSON_GetObjectItemCaseSensitive(store->commons[i], section->key);
                if (layer)
                        layers[n++] = layer;
        }
        if (section->own_values)
                layers[n++] = section->own_values;
        *ret_n = n;
        return layers;
}

static int compose(const struct ao_values_store *store, const struct ao_values_section *section,
                   bool config_only, cJSON **ret, struct ao_error *reterr)
{
        size_t n;
        _cleanup_free_ const cJSON **layers = static_layers(store, section, &n);
        struct ao_values_sources src = {
            .key = section->key,
            .static_layers = layers,
            .n_static_layers = n,
            .config = values_store_config_section(store, section),
            .patches = section->patches,
            .schema = section->schema,
        };
        return config_only ? ao_values_compose_config(&src, ret, reterr)
                           : ao_values_compose(&src, ret, reterr);
}

int ao_values_store_values(const struct ao_values_store *store, const struct ao_values_section *section,
                           cJSON **ret, struct ao_error *reterr)
{
        return compose(store, section, false, ret, reterr);
}

int ao_values_store_config_values(const struct ao_values_store *store,
                                  const struct ao_values_section *section, cJSON **ret,
                                  struct ao_error *reterr)
{
        return compose(store, section, true, ret, reterr);
}

int ao_values_store_hook_documents(const struct ao_values_store *store,
                                   const struct ao_values_section *section,
                                   const char *const *enabled_modules, cJSON **ret_values, cJSON **ret_config,
                                   struct ao_error *reterr)
{
        _cleanup_json_ cJSON *global = NULL, *global_config = NULL, *values = NULL, *config = NULL;
        bool module = !values_store_is_global(store, section);
        int r = compose(store, &store->global, false, &global, reterr);
        if (r >= 0)
                r = compose(store, &store->global, true, &global_config, reterr);
        if (r >= 0 && module)
                r = compose(store, section, false, &values, reterr);
        if (r >= 0 && module)
                r = compose(store, section, true, &config, reterr);
        if (r < 0)
                return r;
        const char *key = module ? section->key : NULL;
        *ret_values = ao_values_document(global, key, values, enabled_modules);
        *ret_config = ao_values_document(global_config, key, config, NULL);
        return 0;
}

/* @values must pass the helm variant of @section's schema (x-required-for-helm). */
static int check_for_helm(const struct ao_values_section *section, const cJSON *values,
                          struct ao_error *reterr)
{
        _cleanup_free_ char *errors = NULL;
        if (!section->schema ||
            ao_schema_validate(section->schema, AO_SCHEMA_HELM, section->key, values, &errors) >= 0)
                return 0;
        /* Only the first violation (@errors is NUL-separated): the message the operator always gave. */
        return ao_error_set(reterr, -EINVAL, "values are not ready for helm: %s", errors ? errors : "");
}

int ao_values_store_helm_document(const struct ao_values_store *store,
                                  const struct ao_values_section *section, cJSON **ret,
                                  struct ao_error *reterr)
{
        _cleanup_json_ cJSON *global = NULL, *values = NULL;
        bool module = !values_store_is_global(store, section);
        int r = compose(store, &store->global, false, &global, reterr);
        if (r >= 0 && module)
                r = compose(store, section, false, &values, reterr);
        if (r >= 0)
                r = check_for_helm(section, module ? values : global, reterr);
        if (r < 0)
                return r;
        *ret = ao_values_document(global, module ? section->key : NULL, values, NULL);
        return 0;
}

char *ao_values_store_checksum(const struct ao_values_store *store, const struct ao_values_section *section)
{
        _cleanup_json_ cJSON *values = NULL;
        char *text = compose(store, section, false, &values, NULL) >= 0 ? ao_json_canonical(values)
                                                                        : ao_xstrdup("(invalid)");
        if (!values_store_is_global(store, section))
                return text;
        /* Enabled flags set by global hooks count as global changes: they change which modules run. */
        _cleanup_free_ char *flags = ao_json_canonical(store->dynamic_enabled);
        char *both = ao_xasprintf("%s %s", text, flags);
        free(text);
        return both;
}

/* @flag's value when it is a boolean, else @current: how each source of enabled flags overrides. */
static bool flag_or(const cJSON *flag, bool current)
{
        return cJSON_IsBool(flag) ? cJSON_IsTrue(flag) : current;
}

bool ao_values_store_enabled(const struct ao_values_store *store, const struct ao_values_section *section)
{
        if (values_store_is_global(store, section))
                return true;
        const char *key = section->enabled_key;
        bool enabled = false;
        for (size_t i = 0; i < store->n_commons; i++)
                enabled = flag_or(cJSON_GetObjectItemCaseSensitive(store->commons[i], key), enabled);
        if (section->own_enabled >= 0)
                enabled = section->own_enabled;
        enabled = flag_or(cJSON_GetObjectItemCaseSensitive(store->dynamic_enabled, key), enabled);
        return flag_or(cJSON_GetObjectItemCaseSensitive(store->config, key), enabled);
}
