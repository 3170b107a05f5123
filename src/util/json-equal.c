/* SPDX-License-Identifier: Apache-2.0 */
/* Deep equality of JSON values (see ao/json-equal.h). */
#include "ao/json-equal.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/json-number.h"

static int compare_names(const void *a, const void *b)
{
        const cJSON *x = *(const cJSON *const *) a, *y = *(const cJSON *const *) b;
        return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

static size_t count_children(const cJSON *node, size_t stop)
{
        size_t n = 0;
        for (const cJSON *c = node->child; c && n < stop; c = c->next)
                n++;
        return n;
}

/* The members of object @json, sorted by name (stable for equal names): malloc'd, @n entries. */
static const cJSON **sorted_members(const cJSON *json, size_t n)
{
        const cJSON **members = ao_xreallocarray(NULL, n, sizeof(*members));
        size_t i = 0;
        for (const cJSON *c = json->child; c; c = c->next)
                members[i++] = c;
        qsort(members, n, sizeof(*members), compare_names);
        return members;
}

/*
 * Objects are equal when they have the same names with equal values, in any order. Sorting makes
 * it O(n log n) where looking each name up is O(n²).
 */
static bool equal_objects(const cJSON *a, const cJSON *b)
{
        size_t n = count_children(b, SIZE_MAX);
        bool same = true;

        if (count_children(a, n + 1) != n)
                return false;
        if (n == 0)
                return true;
        const cJSON **x = sorted_members(a, n), **y = sorted_members(b, n);
        for (size_t i = 0; i < n && same; i++)
                same = compare_names(&x[i], &y[i]) == 0 && ao_json_equal(x[i], y[i]);
        free(x);
        free(y);
        return same;
}

bool ao_json_equal(const cJSON *a, const cJSON *b)
{
        if (!a || !b || (a->type & 0xFF) != (b->type & 0xFF))
                return false;
        switch (a->type & 0xFF) {
        case cJSON_NULL:
        case cJSON_True:
        case cJSON_False:
                return true;
        case cJSON_Number:
                return ao_json_number_equal(a, b);
        case cJSON_String:
        case cJSON_Raw:
                return a->valuestring && b->valuestring && strcmp(a->valuestring, b->valuestring) == 0;
        case cJSON_Array: {
                const cJSON *x = a->child, *y = b->child;
                for (; x && y; x = x->next, y = y->next)
                        if (!ao_json_equal(x, y))
                                return false;
                return !x && !y;
        }
        case cJSON_Object:
                return equal_objects(a, b);
        default:
                return false;
        }
}

const char *ao_json_duplicate_name(const cJSON *object)
{
        if (!cJSON_IsObject(object) || count_children(object, 2) < 2)
                return NULL;
        size_t n = count_children(object, SIZE_MAX);
        const cJSON **members = sorted_members(object, n);
        const char *dup = NULL;
        for (size_t i = 1; i < n && !dup; i++)
                if (compare_names(&members[i - 1], &members[i]) == 0)
                        dup = members[i]->string;
        free(members);
        return dup;
}
