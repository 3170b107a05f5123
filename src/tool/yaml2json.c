/* SPDX-License-Identifier: Apache-2.0 */
/* tool yaml2json FILE|- : the document as canonical JSON (sorted keys), or the parse error. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "internal.h"

int tool_yaml2json(int argc, char *const *args)
{
        if (argc != 1)
                return tool_usage("yaml2json");
        cJSON *doc = NULL;
        struct ao_error err = {0};
        if (tool_load(args[0], &doc, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        int code = tool_print_json(doc);
        cJSON_Delete(doc);
        return code;
}
