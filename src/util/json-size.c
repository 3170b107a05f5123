/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/json-size.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"

static size_t string_bytes(const cJSON *json)
{
        return cJSON_IsString(json) && json->valuestring ? strlen(json->valuestring) : 0;
}

size_t ao_json_count(const cJSON *json, size_t *ret_string_bytes)
{
        size_t nodes = 1, bytes = string_bytes(json), depth = 0, cap = 16;
        const cJSON **stack =
            ao_xreallocarray(NULL, cap, sizeof(*stack)); /* per open container: its next child */

        if (json->child)
                stack[depth++] = json->child;
        while (depth > 0) {
                const cJSON *c = stack[depth - 1];
                if (!c) {
                        depth--;
                        continue;
                }
                stack[depth - 1] = c->next;
                nodes++;
                bytes += string_bytes(c);
                if (!c->child)
                        continue;
                if (depth == cap) {
                        cap *= 2;
                        stack = ao_xreallocarray(stack, cap, sizeof(*stack));
                }
                stack[depth++] = c->child;
        }
        free(stack);
        if (ret_string_bytes)
                *ret_string_bytes = bytes;
        return nodes;
}

size_t ao_json_count_nodes(const cJSON *json)
{
        return ao_json_count(json, NULL);
}
