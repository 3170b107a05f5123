/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line entry: parse flags and environment, then dispatch on the
 * command words. `start` (the default) runs the operator; the debug
 * commands (`queue list`, `module list`, ...), `tool ...` and `lint`
 * register in the same table as their subsystems arrive.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <h2o/version.h>
#include <seccomp.h>
#include <yaml.h>

#include "ao-build-config.h"
#include "ao/debug.h"
#include "ao/lint.h"
#include "ao/operator.h"
#include "ao/settings.h"
#include "ao/tool.h"

extern char **environ;

struct command {
        const char *const words[3]; /* the command words, NULL-terminated */
        const char *summary;
        int (*run)(const struct ao_cli *cli);
};

static void print_version(FILE *out)
{
        const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);
        const struct scmp_version *seccomp = seccomp_version();
        fprintf(out, "addon-operator %s\n", AO_VERSION);
        fprintf(out, "event loop: %sepoll\n", AO_HAVE_IO_URING ? "io_uring, " : "");
        fprintf(out, "libcurl %s, libyaml %s, cJSON %s, libseccomp %u.%u.%u, h2o %s, libjq, liburing\n",
                curl->version, yaml_get_version_string(), cJSON_Version(), seccomp->major, seccomp->minor,
                seccomp->micro, H2O_VERSION);
}

static int cmd_version(const struct ao_cli *cli)
{
        print_version(stdout);
        return 0;
}

static int cmd_help(const struct ao_cli *cli);

static const struct command commands[] = {
    {{"start", NULL}, "run the operator (the default)", ao_operator_run},
    {{"lint", NULL}, "check the modules and global hooks without running them (docs/LINT.md)", ao_lint_main},
    {{"version", NULL}, "print the version and the libraries in use", cmd_version},
    {{"help", NULL}, "print this help", cmd_help},
};

static int cmd_help(const struct ao_cli *cli)
{
        printf("Usage: addon-operator [FLAGS] [COMMAND]\n\nCommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                char words[64] = "";
                for (size_t w = 0; commands[i].words[w]; w++) {
                        size_t used = strlen(words);
                        (void) snprintf(words + used, sizeof(words) - used, "%s%s", w ? " " : "",
                                        commands[i].words[w]);
                }
                printf("  %-12s %s\n", words, commands[i].summary);
        }
        ao_debug_print_help(stdout);
        ao_tool_print_help(stdout);
        printf("\n");
        ao_cli_print_flags(stdout);
        return 0;
}

/* The command whose words are a prefix of @words and equal in count to what it needs. */
static const struct command *find_command(char *const *words)
{
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                const struct command *c = &commands[i];
                size_t n = 0;
                while (c->words[n] && words[n] && strcmp(c->words[n], words[n]) == 0)
                        n++;
                if (!c->words[n] && !words[n])
                        return c;
        }
        return NULL;
}

/*
 * Block every asynchronous signal before any thread exists, so they reach
 * the process only through the reactor's signalfd. Synchronous faults stay
 * unblocked: a blocked SIGSEGV is fatal anyway, and unblocked it still
 * reaches the sanitizers' reporters. SIGCHLD may arrive ignored from a
 * careless parent, which would make the kernel reap our children for us.
 */
static void take_over_signals(void)
{
        sigset_t set;
        sigfillset(&set);
        static const int synchronous[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
        for (size_t i = 0; i < sizeof(synchronous) / sizeof(synchronous[0]); i++)
                sigdelset(&set, synchronous[i]);
        (void) sigprocmask(SIG_BLOCK, &set, NULL);
        (void) signal(SIGCHLD, SIG_DFL);
}

int main(int argc, char **argv)
{
        /* Tool commands take their own arguments and need no settings: dispatch them first. */
        if (argc >= 2 && strcmp(argv[1], "tool") == 0)
                return ao_tool_main(argc - 2, argv + 2);

        take_over_signals();

        struct ao_cli cli;
        struct ao_error err = {0};
        if (ao_cli_parse(argc, argv, environ, &cli, &err) < 0) {
                fprintf(stderr, "addon-operator: %s\n", err.msg);
                fprintf(stderr, "Run 'addon-operator --help' for the list of flags and variables.\n");
                return 2;
        }

        int code;
        const struct command *command = find_command(cli.command);
        if (cli.help) {
                code = cmd_help(&cli);
        } else if (cli.version) {
                code = cmd_version(&cli);
        } else if (!command && ao_debug_is_command(cli.command)) {
                /* A client, not the operator: Ctrl-C must end `queue list -w`. */
                sigset_t none;
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                code = ao_debug_main(&cli);
        } else if (!command) {
                fprintf(stderr, "addon-operator: unknown command '%s'\n", cli.command[0]);
                fprintf(stderr, "Run 'addon-operator --help' for the list of commands.\n");
                code = 2;
        } else {
                code = command->run(&cli);
        }
        ao_cli_done(&cli);
        return code;
}
