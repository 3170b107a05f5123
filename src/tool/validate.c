/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tool validate SCHEMA VALUES [--for-helm] : check VALUES against the
 * OpenAPI schema file SCHEMA, with the operator's rules (additionalProperties
 * false where unset; with --for-helm, x-required-for-helm counts as
 * required). Exit 0 when valid; else 1 and one error per line on stderr.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/schema.h"
#include "internal.h"

static void print_errors(const char *list)
{
        for (const char *line = list; line && *line; line += strlen(line) + 1)
                fprintf(stderr, "%s\n", line);
}

int tool_validate(int argc, char *const *args)
{
        bool for_helm = argc == 3 && strcmp(args[2], "--for-helm") == 0;
        if (argc != 2 && !for_helm)
                return tool_usage("validate");

        cJSON *schema_doc = NULL, *values = NULL;
        struct ao_schema *schema = NULL;
        struct ao_error err = {0};
        int code = 1;
        if (tool_load(args[0], &schema_doc, &err) < 0 || tool_load(args[1], &values, &err) < 0 ||
            ao_schema_from_json(NULL, schema_doc, &schema, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                goto out;
        }
        char *errors = NULL;
        if (ao_schema_validate(schema, for_helm ? AO_SCHEMA_HELM : AO_SCHEMA_VALUES, "", values, &errors) <
            0) {
                print_errors(errors);
                free(errors);
                goto out;
        }
        code = 0;
out:
        ao_schema_free(schema);
        cJSON_Delete(values);
        cJSON_Delete(schema_doc);
        return code;
}
