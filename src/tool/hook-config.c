/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tool hook-config FILE|- [--module]: check a hook's --config output as the
 * operator would when it loads the hook (as a global hook, or a module hook
 * with --module) and print the configuration with every default filled in,
 * as canonical JSON. A configuration the operator would refuse exits 1 with
 * the reason on stderr.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/hook-config.h"
#include "internal.h"

int tool_hook_config(int argc, char *const *args)
{
        const char *path = NULL;
        bool module = false;

        for (int i = 0; i < argc; i++) {
                if (strcmp(args[i], "--module") == 0)
                        module = true;
                else if (!path && (strcmp(args[i], "-") == 0 || strncmp(args[i], "--", 2) != 0))
                        path = args[i];
                else
                        return tool_usage("hook-config");
        }
        if (!path)
                return tool_usage("hook-config");

        struct ao_error err = {0};
        struct ao_hook_config cfg;
        char *text;
        size_t len;
        if (tool_read(path, AO_HOOK_CONFIG_MAX_INPUT, &text, &len, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        int r = ao_hook_config_parse(text, len, strcmp(path, "-") == 0 ? "<stdin>" : path,
                                     module ? AO_HOOK_MODULE : AO_HOOK_GLOBAL, &cfg, &err);
        free(text);
        if (r < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        cJSON *json = ao_hook_config_to_json(&cfg);
        ao_hook_config_done(&cfg);
        if (!json) {
                fprintf(stderr, "addon-operator tool hook-config: out of memory\n");
                return 1;
        }
        int code = tool_print_json(json);
        cJSON_Delete(json);
        return code;
}
