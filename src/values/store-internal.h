/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared between store.c, store-config.c and store-patch.c; never included
 * outside src/values/. See include/ao/values-store.h for what the store is.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ao/values-store.h"

struct ao_values_section {
        char *key;                /* owned: "global" or the module's values key */
        char *enabled_key;        /* owned: "<key>Enabled"; NULL for the global section */
        struct cJSON *own_values; /* owned: the module's values.yaml section, or NULL */
        int own_enabled;          /* the module's values.yaml "<key>Enabled": -1 unset, 0, 1 */
        struct ao_schema *schema; /* owned, or NULL */
        struct cJSON *patches;    /* owned: stored memory patch operations (an array), paths "/<key>/..." */
};

struct ao_values_store {
        struct cJSON **commons; /* owned: each MODULES_DIR's values.yaml document, in order */
        size_t n_commons;
        struct ao_values_section global;
        struct ao_values_section **modules; /* owned, each allocated alone so that sections never move */
        size_t n_modules;
        struct cJSON *dynamic_enabled; /* owned: {"<key>Enabled": bool} set by global hooks */
        struct cJSON *config;          /* owned: the config data, an object */
};

static inline bool values_store_is_global(const struct ao_values_store *store,
                                          const struct ao_values_section *section)
{
        return section == &store->global;
}

static inline void values_json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}
#define _cleanup_json_ _cleanup_(values_json_deletep)

/* The config data's member for @section (borrowed), or NULL. */
const cJSON *values_store_config_section(const struct ao_values_store *store,
                                         const struct ao_values_section *section);

/*
 * Fail with "@what: v1; v2; ..." from a schema violation list (@errors, the
 * NUL-separated list of ao_schema_validate(); taken), cut to fit.
 */
int values_schema_error(struct ao_error *reterr, const char *what, char *errors);
