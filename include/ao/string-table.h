/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Enum <-> name tables. Each `_to_string`/`_from_string` pair was written by
 * hand around a `static const char *const names[_AO_X_MAX]` table; the
 * macros below write them from the table, as systemd's string-table.h does.
 * The enum must follow the project's template (`_AO_X_INVALID = -EINVAL`),
 * which is what a failed lookup returns. A NULL entry (a hole in the table)
 * has no name and is never found. Non-logging; thread-safe.
 *
 *     static const char *const color_names[_AO_COLOR_MAX] = {[AO_COLOR_RED] = "red", ...};
 *     AO_STRING_TABLE(ao_color, enum ao_color, color_names);
 *
 * defines ao_color_to_string() (NULL when out of range) and
 * ao_color_from_string() (exact match; NULL or unknown: -EINVAL). Names
 * compared without case, or with aliases, take ao_string_table_find_case()
 * in a hand-written _from_string.
 */

#include <stddef.h>

#include "ao/macro.h"

/** The index of @s among the @n names of @table, compared exactly; -EINVAL when absent or @s is NULL. */
int ao_string_table_find(const char *const *table, size_t n, const char *s);
/** Like ao_string_table_find(), ignoring ASCII case. */
int ao_string_table_find_case(const char *const *table, size_t n, const char *s);

#define _AO_STRING_TABLE_TO_STRING(scope, name, type, table)                            \
        scope const char *name##_to_string(type i)                                      \
        {                                                                               \
                return i < 0 || (size_t) i >= AO_ARRAY_SIZE(table) ? NULL : (table)[i]; \
        }

#define _AO_STRING_TABLE_FROM_STRING(scope, name, type, table)                      \
        scope type name##_from_string(const char *s)                                \
        {                                                                           \
                return (type) ao_string_table_find(table, AO_ARRAY_SIZE(table), s); \
        }

/* Takes the semicolon after a use, so that uses read as declarations. */
#define _AO_STRING_TABLE_END(table) _Static_assert(AO_ARRAY_SIZE(table) > 0, #table " is empty")

/** name##_to_string() over @table, public (declared in a header). */
#define AO_STRING_TABLE_TO_STRING(name, type, table)    \
        _AO_STRING_TABLE_TO_STRING(, name, type, table) \
        _AO_STRING_TABLE_END(table)
/** name##_from_string() over @table, public. */
#define AO_STRING_TABLE_FROM_STRING(name, type, table)    \
        _AO_STRING_TABLE_FROM_STRING(, name, type, table) \
        _AO_STRING_TABLE_END(table)
/** name##_from_string() over @table, static to the file. */
#define AO_PRIVATE_STRING_TABLE_FROM_STRING(name, type, table)  \
        _AO_STRING_TABLE_FROM_STRING(static, name, type, table) \
        _AO_STRING_TABLE_END(table)
/** Both, public. */
#define AO_STRING_TABLE(name, type, table)                \
        _AO_STRING_TABLE_TO_STRING(, name, type, table)   \
        _AO_STRING_TABLE_FROM_STRING(, name, type, table) \
        _AO_STRING_TABLE_END(table)
