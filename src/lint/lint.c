/* SPDX-License-Identifier: Apache-2.0 */
/*
 * addon-operator lint: the whole tree checked the way the operator would
 * read it, without running the operator. Problems go to stdout, one per
 * line ("path: error: message"), sorted by file; a summary line follows.
 * Exit 0 when there is no error (warnings allowed), 1 otherwise.
 */
#include "ao/lint.h"

#include <stdio.h>
#include <string.h>

#include "ao/log.h"
#include "ao/settings.h"
#include "internal.h"

/*
 * The operator's own log lines would only repeat what the report says, so
 * lint logs errors alone, as text, unless the user asked for a level.
 */
static void quiet_logging(const struct ao_cli *cli)
{
        enum ao_setting_origin origin = AO_SETTING_DEFAULT;
        (void) ao_cli_setting_origin(cli, "log-level", &origin, NULL);
        struct ao_log_options options = {
            .format = AO_LOG_FORMAT_TEXT,
            .level = origin == AO_SETTING_DEFAULT ? AO_LOG_ERROR : cli->settings.log_level,
            .no_time = true,
            .fd = -1,
        };
        (void) ao_log_setup(&options);
}

static bool wants_json(const struct ao_cli *cli, bool *ret_bad)
{
        *ret_bad = cli->output && strcmp(cli->output, "json") != 0 && strcmp(cli->output, "text") != 0;
        return cli->output && strcmp(cli->output, "json") == 0;
}

static void print_summary(const struct lint_report *r, size_t n_modules, int n_hooks)
{
        size_t errors = lint_report_errors(r), warnings = lint_report_warnings(r);
        printf("lint: %zu module%s, %d hook%s: ", n_modules, n_modules == 1 ? "" : "s", n_hooks,
               n_hooks == 1 ? "" : "s");
        if (errors + warnings == 0)
                printf("no problems\n");
        else
                printf("%zu error%s, %zu warning%s\n", errors, errors == 1 ? "" : "s", warnings,
                       warnings == 1 ? "" : "s");
}

int ao_lint_main(const struct ao_cli *cli)
{
        bool bad_output;
        bool json = wants_json(cli, &bad_output);
        if (bad_output) {
                fprintf(stderr, "addon-operator lint: -o takes text or json, not '%s'\n", cli->output);
                return 2;
        }
        quiet_logging(cli);

        struct lint_report *report = lint_report_new();
        struct lint_tree tree;
        lint_tree_load(&cli->settings, report, &tree);
        lint_values(&tree, cli->settings.global_hooks_dir, report);
        int n_hooks = lint_hooks(&cli->settings, &tree, report);

        if (json) {
                lint_report_print_json(report, tree.n_modules, n_hooks < 0 ? 0 : (size_t) n_hooks);
        } else {
                lint_report_print_text(report);
                print_summary(report, tree.n_modules, n_hooks < 0 ? 0 : n_hooks);
        }
        int code = lint_report_errors(report) > 0 ? 1 : 0;
        lint_tree_done(&tree);
        lint_report_free(report);
        return code;
}
