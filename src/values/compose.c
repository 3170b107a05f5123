/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Composing one values section from its layers. The order is the contract
 * users read in the docs: values.yaml files, then the ConfigMap, then the
 * temporary patches hooks made; schema defaults fill in keys that none of
 * the layers before them set (config-values defaults before the ConfigMap,
 * values defaults before the patches). Config values, what
 * CONFIG_VALUES_PATH shows, are the ConfigMap section alone (with the
 * config-values defaults), not merged with the values.yaml files.
 */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ao/jsonpatch.h"
#include "ao/schema.h"
#include "ao/values.h"

static cJSON *new_object(void)
{
        cJSON *o = cJSON_CreateObject();
        if (!o)
                abort(); /* as ao_xmalloc */
        return o;
}

static void merge_layer(cJSON *dst, const cJSON *layer)
{
        if (cJSON_IsObject(layer))
                ao_values_merge(dst, layer);
}

/* The config-values schema's defaults, then the config section on top. */
static cJSON *config_values(const struct ao_values_sources *src)
{
        cJSON *values = new_object();
        if (src->schema)
                ao_schema_apply_defaults(src->schema, AO_SCHEMA_CONFIG, values);
        merge_layer(values, src->config);
        return values;
}

int ao_values_compose_config(const struct ao_values_sources *src, cJSON **ret, struct ao_error *reterr)
{
        *ret = config_values(src);
        return 0;
}

int ao_values_compose(const struct ao_values_sources *src, cJSON **ret, struct ao_error *reterr)
{
        cJSON *values = new_object();
        for (size_t i = 0; i < src->n_static_layers; i++)
                merge_layer(values, src->static_layers[i]);
        cJSON *config = config_values(src);
        ao_values_merge(values, config);
        cJSON_Delete(config);
        int k = 0;
        if (src->schema)
                ao_schema_apply_defaults(src->schema, AO_SCHEMA_VALUES, values);
        if (src->patches && cJSON_GetArraySize(src->patches) > 0) {
                /* Hooks patch "/<key>/...": apply to {key: values}, then take the section back out. */
                cJSON *doc = new_object();
                cJSON_AddItemToObject(doc, src->key, values);
                k = ao_jsonpatch_apply(doc, src->patches, AO_JSONPATCH_IGNORE_MISSING, reterr);
                values = cJSON_DetachItemFromObjectCaseSensitive(doc, src->key);
                cJSON_Delete(doc);
                if (k < 0) {
                        cJSON_Delete(values);
                        return ao_error_prefix(reterr, "%s: applying stored values patches", src->key);
                }
                if (!cJSON_IsObject(values)) {
                        /* A patch removed or replaced the whole section: what is left is an empty one. */
                        cJSON_Delete(values);
                        values = new_object();
                }
        }
        *ret = values;
        return 0;
}

cJSON *ao_values_document(const cJSON *global, const char *key, const cJSON *section,
                          const char *const *enabled_modules)
{
        cJSON *doc = new_object();
        cJSON *g = global ? cJSON_Duplicate(global, true) : new_object();
        if (!g)
                abort();
        if (enabled_modules) {
                cJSON *list = cJSON_CreateArray();
                for (size_t i = 0; list && enabled_modules[i]; i++)
                        cJSON_AddItemToArray(list, cJSON_CreateString(enabled_modules[i]));
                if (!list)
                        abort();
                cJSON_DeleteItemFromObjectCaseSensitive(g, "enabledModules");
                cJSON_AddItemToObject(g, "enabledModules", list);
        }
        cJSON_AddItemToObject(doc, "global", g);
        if (key) {
                cJSON *m = section ? cJSON_Duplicate(section, true) : new_object();
                if (!m)
                        abort();
                cJSON_AddItemToObject(doc, key, m);
        }
        return doc;
}
