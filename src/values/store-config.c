/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config data in the values store (ConfigMap or config file): replacing
 * it, validating it section by section, and the config values patches hooks
 * return. A config section is always judged with the config-values
 * schema's defaults under it, as hooks see it in CONFIG_VALUES_PATH.
 */
#include "ao/values-store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/jsonpatch.h"
#include "ao/schema.h"
#include "ao/values.h"
#include "store-internal.h"

int values_schema_error(struct ao_error *reterr, const char *what, char *errors)
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

const cJSON *values_store_config_section(const struct ao_values_store *store,
                                         const struct ao_values_section *section)
{
        return cJSON_GetObjectItemCaseSensitive(store->config, section->key);
}

void ao_values_store_set_config(struct ao_values_store *store, const cJSON *config)
{
        cJSON *copy = config ? cJSON_Duplicate(config, true) : cJSON_CreateObject();
        if (!copy)
                abort(); /* as ao_xmalloc */
        cJSON_Delete(store->config);
        store->config = copy;
}

const cJSON *ao_values_store_config(const struct ao_values_store *store)
{
        return store->config;
}

void ao_values_store_set_config_section_take(struct ao_values_store *store,
                                             const struct ao_values_section *section, cJSON *new_section)
{
        cJSON_DeleteItemFromObjectCaseSensitive(store->config, section->key);
        if (new_section)
                cJSON_AddItemToObject(store->config, section->key, new_section);
}

/* Whether @config_section (may be NULL) over the config-values defaults passes @section's schema. */
static int validate_section(const struct ao_values_section *section, const cJSON *config_section,
                            const char *what, struct ao_error *reterr)
{
        if (!section->schema)
                return 0;
        _cleanup_json_ cJSON *with_defaults = cJSON_CreateObject();
        if (!with_defaults)
                abort(); /* as ao_xmalloc */
        ao_schema_apply_defaults(section->schema, AO_SCHEMA_CONFIG, with_defaults);
        if (config_section)
                ao_values_merge(with_defaults, config_section);
        char *errors = NULL;
        if (ao_schema_validate(section->schema, AO_SCHEMA_CONFIG, section->key, with_defaults, &errors) < 0)
                return values_schema_error(reterr, what, errors);
        return 0;
}

int ao_values_store_validate_config(const struct ao_values_store *store, const cJSON *config,
                                    struct ao_error *reterr)
{
        const char *what = "config values are invalid";
        int r = validate_section(&store->global, cJSON_GetObjectItemCaseSensitive(config, "global"), what,
                                 reterr);
        for (size_t i = 0; r >= 0 && i < store->n_modules; i++) {
                const struct ao_values_section *section = store->modules[i];
                r = validate_section(section, cJSON_GetObjectItemCaseSensitive(config, section->key), what,
                                     reterr);
        }
        return r;
}

/* @ops applied to a copy of @section's config section ({} when it has none), as {"<key>": section}. */
static int patched_config_section(const struct ao_values_store *store,
                                  const struct ao_values_section *section, const cJSON *ops, cJSON **ret,
                                  struct ao_error *reterr)
{
        const cJSON *current = values_store_config_section(store, section);
        _cleanup_json_ cJSON *doc = cJSON_CreateObject();
        cJSON *copy = current ? cJSON_Duplicate(current, true) : cJSON_CreateObject();
        if (!doc || !copy || !cJSON_AddItemToObject(doc, section->key, copy))
                abort(); /* as ao_xmalloc */
        if (ao_jsonpatch_apply(doc, ops, 0, reterr) < 0)
                return ao_error_prefix(reterr, "config values patch");
        cJSON *patched = cJSON_DetachItemFromObjectCaseSensitive(doc, section->key);
        if (cJSON_IsObject(patched)) {
                *ret = patched;
                return 0;
        }
        /* The patch removed the section or made it a scalar: what is left is an empty one. */
        cJSON_Delete(patched);
        *ret = cJSON_CreateObject();
        if (!*ret)
                abort();
        return 0;
}

int ao_values_store_check_config_patch(const struct ao_values_store *store,
                                       const struct ao_values_section *section, const cJSON *ops,
                                       cJSON **ret_section, struct ao_error *reterr)
{
        _cleanup_json_ cJSON *patched = NULL;
        int r = patched_config_section(store, section, ops, &patched, reterr);
        if (r >= 0)
                r = validate_section(section, patched, "config values patch makes the config invalid",
                                     reterr);
        if (r < 0)
                return r;
        *ret_section = TAKE_PTR(patched);
        return 0;
}
