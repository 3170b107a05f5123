/* SPDX-License-Identifier: Apache-2.0 */
/* The one table of JSON type names for messages (see ao/json-type.h). */
#include "ao/json-type.h"

#include <cjson/cJSON.h>

#include "ao/macro.h"

static const char *const container_words[_AO_JSON_WORDS_MAX][2] = {
    [AO_JSON_WORDS_JSON] = {"an array", "an object"},
    [AO_JSON_WORDS_KUBECTL] = {"a list", "a mapping"},
    [AO_JSON_WORDS_YAML] = {"a sequence", "a mapping"},
};

const char *ao_json_type_name(const cJSON *node, enum ao_json_words words)
{
        if ((unsigned) words >= AO_ARRAY_SIZE(container_words))
                return "an invalid value";
        if (cJSON_IsNull(node))
                return "null";
        if (cJSON_IsBool(node))
                return "a boolean";
        if (cJSON_IsNumber(node))
                return "a number";
        if (cJSON_IsString(node))
                return "a string";
        if (cJSON_IsArray(node))
                return container_words[words][0];
        if (cJSON_IsObject(node))
                return container_words[words][1];
        return "an invalid value";
}
