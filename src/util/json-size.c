/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/json-size.h"

#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"

size_t ao_json_count_nodes(const cJSON *json)
{
        size_t nodes = 1, depth = 0, cap = 16;
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
                if (!c->child)
                        continue;
                if (depth == cap) {
                        cap *= 2;
                        stack = ao_xreallocarray(stack, cap, sizeof(*stack));
                }
                stack[depth++] = c->child;
        }
        free(stack);
        return nodes;
}
