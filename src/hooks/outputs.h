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

/** Read and check the outputs of an event run into @o; errors name the file. */
int outputs_read_event(struct run_dir *rd, const char *values_key, struct ao_hook_outcome *o,
                       struct ao_error *reterr);
int outputs_read_enabled(struct run_dir *rd, struct ao_hook_outcome *o, struct ao_error *reterr);
int outputs_read_config(struct run_dir *rd, struct ao_hook_outcome *o, struct ao_error *reterr);
/** Release what the outputs hold and reset @o. */
void outputs_done(struct ao_hook_outcome *o);
