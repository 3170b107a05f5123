/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/jsonpatch.h"

#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"

/*
 * RFC 6901 JSON Pointers over cJSON trees. Segments stay escaped while they
 * are compared with member names, so resolving a pointer allocates nothing.
 * The escapes have one spelling each ("~0" is '~', "~1" is '/', nothing else
 * may follow '~'), so two pointers name the same location exactly when they
 * are the same string: jsonpatch.c relies on that for move's prefix rule.
 */

bool ao_json_pointer_valid(const char *pointer)
{
        if (pointer[0] != '\0' && pointer[0] != '/')
                return false;
        for (const char *p = pointer; *p; p++)
                if (*p == '~' && p[1] != '0' && p[1] != '1')
                        return false;
        return true;
}

/* Whether the escaped segment @segment (@len bytes) decodes to @name. */
static bool segment_is(const char *segment, size_t len, const char *name)
{
        size_t i = 0;
        for (; i < len; i++, name++) {
                char c = segment[i];
                if (c == '~' && i + 1 < len)
                        c = segment[++i] == '0' ? '~' : '/';
                if (*name != c)
                        return false;
        }
        return *name == '\0';
}

struct cJSON *ao_json_pointer_member(const struct cJSON *object, const char *segment, size_t len)
{
        for (cJSON *m = object->child; m; m = m->next)
                if (m->string && segment_is(segment, len, m->string))
                        return m;
        return NULL;
}

int ao_json_pointer_index(const char *segment, size_t len, size_t *ret_index)
{
        size_t index = 0;

        if (len == 1 && segment[0] == '-')
                return 1;
        if (len == 0 || (segment[0] == '0' && len > 1))
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (segment[i] < '0' || segment[i] > '9')
                        return -EINVAL;
                unsigned digit = (unsigned) (segment[i] - '0');
                index = index > (SIZE_MAX - digit) / 10 ? SIZE_MAX : index * 10 + digit;
        }
        *ret_index = index;
        return 0;
}

char *ao_json_pointer_unescape(const char *segment, size_t len)
{
        char *name = ao_xmalloc(len + 1), *out = name;
        for (size_t i = 0; i < len; i++) {
                char c = segment[i];
                if (c == '~' && i + 1 < len)
                        c = segment[++i] == '0' ? '~' : '/';
                *out++ = c;
        }
        *out = '\0';
        return name;
}

/* The child of container @node named by @segment, or NULL. */
static cJSON *child(const cJSON *node, const char *segment, size_t len)
{
        size_t index;

        if (cJSON_IsObject(node))
                return ao_json_pointer_member(node, segment, len);
        if (!cJSON_IsArray(node) || ao_json_pointer_index(segment, len, &index) != 0)
                return NULL;
        cJSON *c = node->child;
        for (; c && index > 0; index--)
                c = c->next;
        return c;
}

struct cJSON *ao_json_pointer_get(struct cJSON *doc, const char *pointer)
{
        if (!ao_json_pointer_valid(pointer))
                return NULL;
        cJSON *node = doc;
        for (const char *p = pointer; node && *p;) {
                const char *segment = p + 1;
                size_t len = strcspn(segment, "/");
                node = child(node, segment, len);
                p = segment + len;
        }
        return node;
}
