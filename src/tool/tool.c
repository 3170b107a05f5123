/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/tool.h"

#include <stdbool.h>
#include <string.h>

#include "internal.h"

struct tool_command {
        const char *name;
        const char *usage;
        const char *summary;
        int (*run)(int argc, char *const *args);
        bool hidden; /* run by the operator's children, not by people: not in --help */
};

static const struct tool_command tools[] = {
    {"yaml2json", "FILE|-", "print a YAML (or JSON) document as canonical JSON", tool_yaml2json},
    {"json-patch", "DOC PATCH", "apply an RFC 6902 patch file to a document and print the result",
     tool_json_patch},
    {"validate", "SCHEMA VALUES [--for-helm]", "validate values against an OpenAPI schema file",
     tool_validate},
    {"cron", "'EXPR' [--from RFC3339] [--count N]", "print the next fire times of a cron expression",
     tool_cron},
    {"hook-config", "FILE|- [--module]",
     "check a hook's --config output and print it with defaults filled in", tool_hook_config},
    {"post-render", "LABELS", "helm's post-renderer: stdin's manifest with LABELS on every object",
     tool_post_render, .hidden = true},
};

void ao_tool_print_help(FILE *out)
{
        for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
                if (tools[i].hidden)
                        continue;
                char head[96];
                (void) snprintf(head, sizeof(head), "tool %s %s", tools[i].name, tools[i].usage);
                fprintf(out, "  %-44s %s\n", head, tools[i].summary);
        }
}

int ao_tool_main(int argc, char *const *args)
{
        for (size_t i = 0; argc > 0 && i < sizeof(tools) / sizeof(tools[0]); i++)
                if (strcmp(args[0], tools[i].name) == 0)
                        return tools[i].run(argc - 1, args + 1);
        fprintf(stderr, "addon-operator: unknown tool command '%s'; the tool commands are:\n",
                argc > 0 ? args[0] : "");
        ao_tool_print_help(stderr);
        return 2;
}

int tool_usage(const char *name)
{
        for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
                if (strcmp(name, tools[i].name) == 0)
                        fprintf(stderr, "usage: addon-operator tool %s %s\n", tools[i].name, tools[i].usage);
        return 2;
}
