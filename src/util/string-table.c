/* SPDX-License-Identifier: Apache-2.0 */
/* The lookups behind the string-table macros (see ao/string-table.h). */
#include "ao/string-table.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

static int find(const char *const *table, size_t n, const char *s, bool ignore_case)
{
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!table[i])
                        continue;
                if ((ignore_case ? strcasecmp(table[i], s) : strcmp(table[i], s)) == 0)
                        return (int) i;
        }
        return -EINVAL;
}

int ao_string_table_find(const char *const *table, size_t n, const char *s)
{
        return find(table, n, s, false);
}

int ao_string_table_find_case(const char *const *table, size_t n, const char *s)
{
        return find(table, n, s, true);
}
