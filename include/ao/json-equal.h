/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Deep equality of JSON values as RFC 6902 §4.6 (the JSON patch "test") and JSON Schema (enum,
 * const) define it: members of an object in any order, numbers by value (1 and 1.0 are equal;
 * 9007199254740993 and 9007199254740992 are not, see ao/json-number.h). cJSON_Compare() is not
 * this: it compares numbers within an epsilon and looks each member up linearly.
 *
 * Recursion is bounded by the depth of the trees, which every parser of this project limits.
 * Non-logging; thread-safe.
 */

#include <stdbool.h>

struct cJSON;

/** Whether @a and @b are equal values (NULL equals nothing, itself included). */
bool ao_json_equal(const struct cJSON *a, const struct cJSON *b);

/**
 * A member name that occurs twice among the members of object @object (this level only; cJSON
 * keeps both where Go keeps the last), or NULL; also NULL for what is not an object. Borrowed
 * from @object.
 */
const char *ao_json_duplicate_name(const struct cJSON *object);
