/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * OpenAPI (v3 subset, as addon-operator modules write them) schemas for
 * config values and values: loading with the operator's transforms, default
 * application, and validation with errors that give the JSON path and rule.
 *
 * Schemas live in openapi/config-values.yaml and openapi/values.yaml (a
 * module's, or GLOBAL_HOOKS_DIR's for global values). A values schema may
 * `x-extend: {schema: config-values.yaml}`. Wherever a schema object does
 * not set additionalProperties, it is false. x-required-for-helm adds to
 * required only in the helm variant.
 *
 * Non-logging module. Thread-safe for concurrent validation of one loaded
 * schema set (validation does not modify it).
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct cJSON;
struct ao_schema;

enum ao_schema_kind {
        AO_SCHEMA_CONFIG, /* config-values.yaml */
        AO_SCHEMA_VALUES, /* values.yaml, x-extend applied */
        AO_SCHEMA_HELM,   /* the values schema with x-required-for-helm merged into required */
        _AO_SCHEMA_KIND_MAX,
};

/**
 * Load the schemas of one openapi/ directory (@dir; a missing directory or
 * file means "no schema": everything is valid). Errors name the file and
 * the schema path ("openapi/values.yaml: properties.a.type: unknown type 'strin'").
 */
int ao_schema_load_dir(const char *dir, struct ao_schema **ret, struct ao_error *reterr);
/** Build from already-parsed documents (either may be NULL); used by tests and `tool validate`. */
int ao_schema_from_json(const struct cJSON *config_values, const struct cJSON *values, struct ao_schema **ret,
                        struct ao_error *reterr);
struct ao_schema *ao_schema_free(struct ao_schema *s);

/** True when @kind has a schema. */
bool ao_schema_has(const struct ao_schema *s, enum ao_schema_kind kind);

/**
 * Validate @value (the section itself, e.g. the module's values object) against
 * @kind. Every violation is one line in @ret_errors (a NUL-separated,
 * double-NUL-terminated list, owned by the caller; NULL when valid), e.g.
 * "simpleModule.replicas: must be >= 1 (minimum)". @root_name prefixes the
 * paths (the values key; NULL or "" for none). Keys that are not plain
 * identifiers are written ["a.b"], array indices [i]. At most 100 lines, in
 * document order; the 100th then says that the rest were cut. @value NULL
 * is validated as null; @ret_errors may be NULL. Returns 0 when valid,
 * -EINVAL when not, -ENOMEM when oniguruma cannot allocate.
 */
int ao_schema_validate(const struct ao_schema *s, enum ao_schema_kind kind, const char *root_name,
                       const struct cJSON *value, char **ret_errors);

/**
 * Fill in `default`s from @kind's schema where @value lacks the key, recursing into properties and a
 * single items schema.
 */
void ao_schema_apply_defaults(const struct ao_schema *s, enum ao_schema_kind kind, struct cJSON *value);
