/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Stored configuration: the data of ConfigMap/addon-operator, or of the
 * local config file that stands in for it without a cluster. Each key is
 *   global                  YAML text of the global section
 *   <valuesKey>             YAML text of a module's section
 *   <valuesKey>Enabled      "true" or "false"
 *   <valuesKey>Maintenance  a string (kept, passed on)
 * and is parsed into a JSON object of the same keys: sections as objects
 * (an empty or null document is {}), enabled flags as booleans,
 * maintenance values as strings. The local file may also hold the
 * sections as YAML mappings and the flags as booleans directly.
 *
 * Any bad key or value makes the whole data invalid (the caller keeps the
 * previous data): errors name the source and the key,
 * "config.yaml: key 'simpleModule': 3:5: mapping values are not allowed here".
 *
 * Non-logging; thread-safe except for cJSON's parse-error global.
 */

#include "ao/error.h"

struct cJSON;

/**
 * Parse @raw, an object of key -> string (or, for the local file, mapping /
 * boolean) into @ret (a new object). @source names the input in errors.
 * Returns 0, -EINVAL, or the loader's -E2BIG / -EFBIG for a section over
 * its limits (see yaml.h).
 */
int ao_config_data_parse(const struct cJSON *raw, const char *source, struct cJSON **ret,
                         struct ao_error *reterr);

/**
 * The other direction: @data (parsed form) as ConfigMap data, each section
 * as YAML text (ao_yaml_emit()), flags as "true"/"false". Returns a new
 * object of strings; parsing it gives @data back (same canonical JSON).
 */
struct cJSON *ao_config_data_format(const struct cJSON *data);
