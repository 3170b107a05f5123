/* SPDX-License-Identifier: Apache-2.0 */
#include "member-index.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/hashmap.h"
#include "ao/jsonpatch.h"

/*
 * One map for every indexed object: "<object address>/<name>" to the member, and "<object
 * address>" to the object itself, which marks it indexed.
 */
struct member_index {
        struct ao_hashmap *names;
        const cJSON *array; /* the array last walked, with the element reached there */
        cJSON *element;
        size_t position;
};

struct member_index *member_index_new(void)
{
        struct member_index *ix = ao_xcalloc(1, sizeof(*ix));
        ix->names = ao_hashmap_new(NULL);
        return ix;
}

struct member_index *member_index_free(struct member_index *ix)
{
        if (ix) {
                ao_hashmap_free(ix->names);
                free(ix);
        }
        return NULL;
}

/* The object's address in hex, then "/" and @name when there is one (without printf: it is hot). */
static char *key_of(const cJSON *object, const char *name)
{
        uintptr_t a = (uintptr_t) object;
        size_t n = name ? strlen(name) : 0;
        char *key = ao_xmalloc(2 * sizeof(a) + 1 + n + 1), *k = key;
        for (int shift = (int) (8 * sizeof(a)) - 4; shift >= 0; shift -= 4)
                *k++ = "0123456789abcdef"[(a >> shift) & 0xF];
        if (name) {
                *k++ = '/';
                memcpy(k, name, n);
                k += n;
        }
        *k = '\0';
        return key;
}

static char *object_key(const cJSON *object)
{
        return key_of(object, NULL);
}

static char *name_key(const cJSON *object, const char *name)
{
        return key_of(object, name);
}

static bool is_indexed(const struct member_index *ix, const cJSON *object)
{
        _cleanup_free_ char *key = object_key(object);
        return ao_hashmap_get(ix->names, key) != NULL;
}

static bool is_wide(const cJSON *object)
{
        size_t n = 0;
        for (const cJSON *c = object->child; c && n < MEMBER_INDEX_MIN; c = c->next)
                n++;
        return n >= MEMBER_INDEX_MIN;
}

/* Index every member of @object; the first of two with one name wins, as in a walk. */
static void build(struct member_index *ix, const cJSON *object)
{
        _cleanup_free_ char *key = object_key(object);
        for (cJSON *m = object->child; m; m = m->next) {
                if (!m->string)
                        continue;
                _cleanup_free_ char *k = name_key(object, m->string);
                if (!ao_hashmap_get(ix->names, k))
                        ao_hashmap_put(ix->names, k, m);
        }
        ao_hashmap_put(ix->names, key, (void *) object);
}

cJSON *member_index_member(struct member_index *ix, const cJSON *object, const char *segment, size_t len)
{
        if (!is_indexed(ix, object)) {
                if (!is_wide(object))
                        return ao_json_pointer_member(object, segment, len);
                build(ix, object);
        }
        _cleanup_free_ char *name = ao_json_pointer_unescape(segment, len);
        _cleanup_free_ char *key = name_key(object, name);
        return ao_hashmap_get(ix->names, key);
}

void member_index_set(struct member_index *ix, const cJSON *object, const char *name, cJSON *node)
{
        if (!is_indexed(ix, object))
                return;
        _cleanup_free_ char *key = name_key(object, name);
        if (node)
                ao_hashmap_put(ix->names, key, node);
        else
                (void) ao_hashmap_take(ix->names, key);
}

cJSON *member_index_element(struct member_index *ix, const cJSON *array, size_t index, size_t *ret_length,
                            size_t *steps)
{
        cJSON *c = array->child;
        size_t at = 0;
        /* Walk on from the element reached last when it is on the way. */
        if (ix->array == array && ix->element && ix->position <= index) {
                c = ix->element;
                at = ix->position;
        }
        for (; c && at < index; at++) {
                c = c->next;
                (*steps)++;
        }
        if (!c) {
                *ret_length = at;
                return NULL;
        }
        ix->array = array;
        ix->element = c;
        ix->position = index;
        return c;
}

void member_index_array_changed(struct member_index *ix, const cJSON *array)
{
        if (ix->array == array) {
                ix->array = NULL;
                ix->element = NULL;
        }
}
