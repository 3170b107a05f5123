/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * The command line: flags as pflag reads them (--name value, --name=value,
 * bare --bool), anywhere among the command words, until "--". Resolution
 * against the environment and defaults happens in settings.c.
 */

static void origins_free(struct ao_cli_origin *origins)
{
        if (!origins)
                return;
        for (size_t i = 0; i < setting_defs_count; i++)
                free(origins[i].value);
        free(origins);
}

void ao_cli_done(struct ao_cli *cli)
{
        if (!cli)
                return;
        ao_settings_done(&cli->settings);
        (void) config_strv_free(cli->command);
        for (size_t i = 0; i < cli->n_notices; i++)
                free(cli->notices[i].text);
        free(cli->notices);
        free(cli->output);
        origins_free(cli->_origins);
        memset(cli, 0, sizeof(*cli));
}

/* Flags and words seen on the command line, before they are resolved against the environment. */
struct argv_scan {
        const char **flag_values; /* borrowed from argv, one per table row, NULL if not given */
        const char **flag_names;  /* static, the spelling that was typed */
        char **words;             /* owned, NULL-terminated */
        size_t n_words;
};

static int add_word(struct argv_scan *scan, const char *word, struct ao_error *reterr)
{
        char *copy = strdup(word);
        if (!copy)
                return ao_error_set(reterr, -ENOMEM, "out of memory while reading the command line");
        scan->words[scan->n_words++] = copy;
        return 0;
}

static int unknown_flag(const char *arg, size_t len, struct ao_error *reterr)
{
        char name[256], q[128];
        (void) snprintf(name, sizeof(name), "%.*s", (int) AO_MIN(len, sizeof(name) - 1), arg);
        return ao_error_set(reterr, -EINVAL, "unknown flag '%s'", config_escape(name, q, sizeof(q)));
}

/* One "--name[=value]" argument; may consume argv[*i + 1] as the value. */
static int scan_long_flag(struct argv_scan *scan, int argc, char *const *argv, int *i,
                          struct ao_error *reterr)
{
        const char *arg = argv[*i], *name = arg + 2, *eq = strchr(name, '='), *spelling, *value;
        size_t len = eq ? (size_t) (eq - name) : strlen(name);
        const struct ao_setting_def *d = setting_def_by_flag(name, len, &spelling);

        if (!d) {
                if ((len == 4 && memcmp(name, "help", 4) == 0) ||
                    (len == 7 && memcmp(name, "version", 7) == 0))
                        return ao_error_set(reterr, -EINVAL, "flag '--%.*s' takes no value", (int) len, name);
                return unknown_flag(arg, len + 2, reterr);
        }

        if (eq)
                value = eq + 1;
        else if (d->type == AO_SETTING_TYPE_BOOL)
                value =
                    "true"; /* a bare boolean flag; "--ha false" would make "false" a command word, as in pflag */
        else if (*i + 1 < argc && argv[*i + 1])
                value = argv
                    [++*i]; /* taken whatever it looks like, as pflag does: "--namespace --x" is a value */
        else
                return ao_error_set(reterr, -EINVAL, "flag '--%s' needs a value", spelling);

        /* A repeated flag overrides the earlier one. */
        size_t idx = (size_t) (d - setting_defs);
        scan->flag_values[idx] = value;
        scan->flag_names[idx] = spelling;
        return 0;
}

/* The debug commands' "-o text|yaml|json" ("--output", "--output=...", "-oyaml" too). */
static bool is_output_flag(const char *arg)
{
        return strncmp(arg, "-o", 2) == 0 || strcmp(arg, "--output") == 0 ||
               strncmp(arg, "--output=", 9) == 0;
}

static int take_output(struct ao_cli *cli, int argc, char *const *argv, int *i, struct ao_error *reterr)
{
        const char *arg = argv[*i], *value;
        if (strncmp(arg, "--output=", 9) == 0)
                value = arg + 9;
        else if (arg[1] == 'o' && arg[2] != '\0')
                value = arg + 2;
        else if (*i + 1 < argc && argv[*i + 1])
                value = argv[++*i];
        else
                return ao_error_set(reterr, -EINVAL, "flag -o needs a value: text, yaml or json");
        if (strcmp(value, "text") != 0 && strcmp(value, "yaml") != 0 && strcmp(value, "json") != 0) {
                /* Values come from anywhere: escaped, so the message stays one line. */
                char q[128];
                return ao_error_set(reterr, -EINVAL, "flag -o: '%s' is not one of text, yaml, json",
                                    config_escape(value, q, sizeof(q)));
        }
        free(cli->output);
        cli->output = strdup(value);
        return cli->output ? 0 : -ENOMEM;
}

/* "queue list -w --interval S" (also "-t S" and "--watchInterval S", the Go operator's spellings). */
static bool is_interval_flag(const char *arg)
{
        return strcmp(arg, "-t") == 0 || strcmp(arg, "--interval") == 0 ||
               strcmp(arg, "--watchInterval") == 0 || strncmp(arg, "--interval=", 11) == 0;
}

static int take_interval(struct ao_cli *cli, int argc, char *const *argv, int *i, struct ao_error *reterr)
{
        const char *arg = argv[*i], *value;
        if (strncmp(arg, "--interval=", 11) == 0)
                value = arg + 11;
        else if (*i + 1 < argc && argv[*i + 1])
                value = argv[++*i];
        else
                return ao_error_set(reterr, -EINVAL, "flag --interval needs a value in seconds");
        char *end = NULL;
        double seconds = strtod(value, &end);
        if (end == value || *end != '\0' || !(seconds >= 0.1 && seconds <= 3600)) {
                char q[128];
                return ao_error_set(reterr, -EINVAL,
                                    "flag --interval: '%s' is not a number of seconds from 0.1 to 3600",
                                    config_escape(value, q, sizeof(q)));
        }
        cli->watch_interval = seconds;
        return 0;
}

static int scan_argv(struct argv_scan *scan, struct ao_cli *cli, int argc, char *const *argv,
                     struct ao_error *reterr)
{
        bool flags_done = false;
        int r;

        for (int i = 1; i < argc; i++) {
                const char *arg = argv[i];
                if (!arg)
                        break;
                /* "-" alone is a word (conventionally stdin), as are all arguments after "--". */
                if (flags_done || arg[0] != '-' || arg[1] == '\0')
                        r = add_word(scan, arg, reterr);
                else if (strcmp(arg, "--") == 0) {
                        flags_done = true;
                        r = 0;
                } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
                        cli->help = true;
                        r = 0;
                } else if (strcmp(arg, "--version") == 0) {
                        cli->version = true;
                        r = 0;
                } else if (is_output_flag(arg)) {
                        r = take_output(cli, argc, argv, &i, reterr);
                } else if (strcmp(arg, "-g") == 0 || strcmp(arg, "--global") == 0) {
                        cli->with_global = true;
                        r = 0;
                } else if (strcmp(arg, "-w") == 0 || strcmp(arg, "--watch") == 0) {
                        cli->watch = true;
                        r = 0;
                } else if (strcmp(arg, "-e") == 0 || strcmp(arg, "--show-empty") == 0) {
                        cli->show_empty = true;
                        r = 0;
                } else if (strcmp(arg, "--debug") == 0) {
                        cli->render_debug = true;
                        r = 0;
                } else if (strcmp(arg, "--diff") == 0) {
                        cli->render_diff = true;
                        r = 0;
                } else if (is_interval_flag(arg)) {
                        r = take_interval(cli, argc, argv, &i, reterr);
                } else if (arg[1] != '-')
                        r = unknown_flag(arg, strlen(arg), reterr);
                else
                        r = scan_long_flag(scan, argc, argv, &i, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int take_command(struct argv_scan *scan, struct ao_cli *cli, struct ao_error *reterr)
{
        if (scan->n_words == 0 && add_word(scan, "start", reterr) < 0)
                return -ENOMEM;
        cli->command = TAKE_PTR(scan->words);
        scan->n_words = 0;
        return 0;
}

int ao_cli_parse(int argc, char *const *argv, char *const *envp, struct ao_cli *ret, struct ao_error *reterr)
{
        _cleanup_(ao_cli_done) struct ao_cli cli = {};
        _cleanup_free_ const char **flag_values = NULL, **flag_names = NULL;
        _cleanup_(config_strv_freep) char **words = NULL;
        int r;

        if (argc < 0 || (argc > 0 && !argv) || !ret)
                return ao_error_set(reterr, -EINVAL, "invalid arguments to ao_cli_parse()");

        flag_values = calloc(setting_defs_count, sizeof(char *));
        flag_names = calloc(setting_defs_count, sizeof(char *));
        /* At most one word per argument, plus "start", plus the terminating NULL. */
        words = calloc((size_t) argc + 2, sizeof(char *));
        cli._origins = calloc(setting_defs_count, sizeof(struct ao_cli_origin));
        if (!flag_values || !flag_names || !words || !cli._origins)
                return ao_error_set(reterr, -ENOMEM, "out of memory while reading the command line");

        struct argv_scan scan = {.flag_values = flag_values, .flag_names = flag_names, .words = words};
        r = scan_argv(&scan, &cli, argc, argv, reterr);
        if (r < 0)
                return r;
        r = take_command(&scan, &cli, reterr);
        if (r < 0)
                return r;
        words = NULL; /* now owned by cli.command */

        r = settings_resolve(&cli, cli._origins, flag_values, flag_names, envp, reterr);
        if (r < 0)
                return r;

        *ret = cli;
        cli = (struct ao_cli){};
        return 0;
}

/* ---- help --------------------------------------------------------------- */

static const char *type_metavar(enum ao_setting_type type)
{
        switch (type) {
        case AO_SETTING_TYPE_PATH_LIST:
                return "DIR[:DIR...]";
        case AO_SETTING_TYPE_COMMA_LIST:
                return "A,B,...";
        case AO_SETTING_TYPE_INT:
                return "N";
        case AO_SETTING_TYPE_FLOAT:
                return "NUM";
        case AO_SETTING_TYPE_PORT:
                return "PORT";
        case AO_SETTING_TYPE_BOOL:
                return "BOOL";
        case AO_SETTING_TYPE_DURATION:
                return "DURATION";
        case AO_SETTING_TYPE_LOG_LEVEL:
                return "LEVEL";
        case AO_SETTING_TYPE_LOG_FORMAT:
                return "FORMAT";
        case AO_SETTING_TYPE_REACTOR:
                return "BACKEND";
        case AO_SETTING_TYPE_METRIC_PREFIX:
                return "PREFIX";
        case AO_SETTING_TYPE_LABELS:
                return "K=V,...";
        default:
                return "VALUE";
        }
}

static void print_flag(FILE *out, const struct ao_setting_def *d)
{
        if (d->type == AO_SETTING_TYPE_BOOL)
                fprintf(out, "  --%s[=BOOL]", d->flags[0]);
        else
                fprintf(out, "  --%s=%s", d->flags[0], d->metavar ?: type_metavar(d->type));
        for (size_t j = 1; j < AO_SETTING_FLAGS_MAX && d->flags[j]; j++)
                fprintf(out, "%s--%s", j == 1 ? "  (alias: " : ", ", d->flags[j]);
        fprintf(out, "%s\n", d->flags[1] ? ")" : "");

        fprintf(out, "        %s\n        env:", d->help);
        for (size_t j = 0; j < AO_SETTING_ENVS_MAX && d->envs[j]; j++)
                fprintf(out, "%s %s", j ? "," : "", d->envs[j]);
        if (d->def[0])
                fprintf(out, "; default: %s\n", d->def);
        else
                fprintf(out, "; default: empty\n");
}

void ao_cli_print_flags(FILE *out)
{
        fputs("Every flag can also be set through the environment variables listed under it;\n"
              "a flag beats the environment, which beats the default. Where a setting has\n"
              "several variables, the first one that is set wins.\n"
              "\n"
              "General:\n"
              "  -h, --help\n"
              "        Print this help and exit\n"
              "  --version\n"
              "        Print the version and exit\n",
              out);

        for (size_t s = 0; s < _AO_SETTING_SECTION_MAX; s++) {
                fprintf(out, "\n%s:\n", ao_setting_section_names[s]);
                for (size_t i = 0; i < setting_defs_count; i++)
                        if (setting_defs[i].section == s)
                                print_flag(out, &setting_defs[i]);
        }
}

void ao_cli_print_settings(const struct ao_cli *cli, FILE *out)
{
        char q[256];

        if (!cli || !cli->_origins)
                return;
        for (size_t i = 0; i < setting_defs_count; i++) {
                const struct ao_setting_def *d = &setting_defs[i];
                const struct ao_cli_origin *o = &cli->_origins[i];
                const char *kind = o->origin == AO_SETTING_FLAG  ? "flag --"
                                   : o->origin == AO_SETTING_ENV ? "env "
                                                                 : "default";
                fprintf(out, "--%s='%s'  (%s%s)\n", d->flags[0], config_escape(o->value ?: "", q, sizeof(q)),
                        kind, o->source ?: "");
        }
}
