/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Private to src/hooks/: file names in a run directory, and reading what the hook wrote. */

#include "ao/error.h"
#include "ao/hook-run.h"

struct run_dir;

#define INPUT_BINDING_CONTEXT      "binding-context.json"
#define INPUT_VALUES               "values.json"
#define INPUT_CONFIG_VALUES        "config-values.json"
#define OUTPUT_VALUES_PATCH        "values.json-patch"
#define OUTPUT_CONFIG_VALUES_PATCH "config-values.json-patch"
#define OUTPUT_METRICS             "metrics.json"
#define OUTPUT_KUBERNETES_PATCH    "kubernetes-patch"
#define OUTPUT_ENABLED_RESULT      "module-enabled-result"
#define OUTPUT_ENABLED_REASON      "module-enabled-reason"
#define OUTPUT_CONFIG              "config-output"

/**
 * Read and check the outputs of a run of @mode into @o (@values_key: a module hook's, NULL for
 * global hooks); *@ret_bytes: how many bytes the output files held. Errors name the file.
 * Touches nothing but its arguments and static tables, so it may run on any thread while @rd,
 * @values_key and @o are its alone.
 */
int outputs_read(enum ao_hook_run_mode mode, struct run_dir *rd, const char *values_key,
                 struct ao_hook_outcome *o, size_t *ret_bytes, struct ao_error *reterr);
/** Release what the outputs hold and reset @o. */
void outputs_done(struct ao_hook_outcome *o);
