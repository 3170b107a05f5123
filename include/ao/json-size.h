/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The size of a cJSON tree in nodes: what the work budgets of the parsers are relative to
 * (docs/SECURITY.md, "Budgets"). Non-logging; thread-safe.
 */

#include <stddef.h>

struct cJSON;

/**
 * Nodes of @json and everything below it (its siblings not included): 1 for a scalar. Iterative,
 * so any depth is fine. Allocation failure aborts.
 */
size_t ao_json_count_nodes(const struct cJSON *json);
