/* SPDX-License-Identifier: Apache-2.0 */
/* tool json-patch DOC PATCH : DOC with the patch file applied, as canonical JSON. */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ao/jsonpatch.h"
#include "internal.h"

int tool_json_patch(int argc, char *const *args)
{
        if (argc != 2)
                return tool_usage("json-patch");
        cJSON *doc = NULL, *ops = NULL;
        char *text = NULL;
        size_t len;
        struct ao_error err = {0};
        int code = 1;
        if (tool_load(args[0], &doc, &err) < 0 ||
            tool_read(args[1], AO_JSONPATCH_MAX_INPUT, &text, &len, &err) < 0 ||
            ao_jsonpatch_parse(text, len, args[1], &ops, &err) < 0 ||
            ao_jsonpatch_apply(doc, ops, 0, &err) < 0)
                fprintf(stderr, "%s\n", err.msg);
        else
                code = tool_print_json(doc);
        free(text);
        cJSON_Delete(ops);
        cJSON_Delete(doc);
        return code;
}
