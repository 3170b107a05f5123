/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/schema.h"

#include <cjson/cJSON.h>

#include "schema-internal.h"

/*
 * Defaults as addon-operator applies them (pkg/values/validation/defaulting.go):
 * only properties[*].default, only where the key is absent, recursing into
 * properties and items, including objects a default has just created. Not
 * through allOf & co, patternProperties, additionalProperties, a list of
 * items schemas (tuple) or additionalItems, as there.
 * $refs were expanded at load; circular ones are not followed.
 */

static void apply(const cJSON *s, cJSON *v, int depth);

static void apply_properties(const cJSON *props, cJSON *v, int depth)
{
        const cJSON *p, *def;
        cJSON *member, *copy;

        cJSON_ArrayForEach(p, props)
        {
                if (!cJSON_IsObject(p))
                        continue;
                member = cJSON_GetObjectItemCaseSensitive(v, p->string);
                def = cJSON_GetObjectItemCaseSensitive(p, "default");
                if (!member && def) {
                        copy = cJSON_Duplicate(def, true);
                        /* Allocation failure leaves the default out; validation then reports what is missing. */
                        if (!copy || !cJSON_AddItemToObject(v, p->string, copy)) {
                                cJSON_Delete(copy);
                                continue;
                        }
                        member = copy;
                }
                if (member)
                        apply(p, member, depth + 1);
        }
}

static void apply(const cJSON *s, cJSON *v, int depth)
{
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
        cJSON *e;

        if (depth > AO_SCHEMA_MAX_DEPTH)
                return;
        if (cJSON_IsObject(v) && cJSON_IsObject(props))
                apply_properties(props, v, depth);
        /* Only a single items schema: addon-operator reads Items.Schema, which a tuple leaves empty. */
        if (!cJSON_IsArray(v) || !cJSON_IsObject(items))
                return;
        cJSON_ArrayForEach(e, v) apply(items, e, depth + 1);
}

void ao_schema_apply_defaults(const struct ao_schema *s, enum ao_schema_kind kind, cJSON *value)
{
        if (!ao_schema_has(s, kind) || !value)
                return;
        apply(s->docs[kind].root, value, 0);
}
