/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Private to src/tool/: one function per tool command, and shared helpers. */

#include "ao/error.h"

struct cJSON;

int tool_yaml2json(int argc, char *const *args);
int tool_json_patch(int argc, char *const *args);
int tool_validate(int argc, char *const *args);
int tool_cron(int argc, char *const *args);
int tool_hook_config(int argc, char *const *args);
/* Ends the process itself (_exit): see post-render.c. */
int tool_post_render(int argc, char *const *args);

/** Print the usage line of tool @name to stderr; returns 2 (the usage-error exit code). */
int tool_usage(const char *name);

/** Load a YAML/JSON document from @path, or from stdin when @path is "-". */
int tool_load(const char *path, struct cJSON **ret, struct ao_error *reterr);

/** Read all of @path ("-": stdin) into a malloc'd buffer, capped at @max bytes. */
int tool_read(const char *path, size_t max, char **ret, size_t *ret_len, struct ao_error *reterr);

/** Print @json canonically on stdout with a newline; returns 0 or 1 when stdout fails. */
int tool_print_json(const struct cJSON *json);
