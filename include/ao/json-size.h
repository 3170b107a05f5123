/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The size of a cJSON tree: what the work budgets of the parsers are relative to
 * (docs/SECURITY.md, "Budgets"). Non-logging; thread-safe.
 */

#include <stddef.h>

struct cJSON;

/**
 * Nodes of @json and everything below it (its siblings not included): 1 for a scalar. Iterative,
 * so any depth is fine. Allocation failure aborts.
 */
size_t ao_json_count_nodes(const struct cJSON *json);

/** As ao_json_count_nodes(), and the bytes of the string values in @ret_string_bytes. */
size_t ao_json_count(const struct cJSON *json, size_t *ret_string_bytes);
