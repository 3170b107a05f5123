/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The debug commands: `addon-operator queue list`, `global values`,
 * `module list`, ... ask a running operator over its debug socket
 * (DEBUG_UNIX_SOCKET, HTTP) and print the answer as text, YAML or JSON
 * (`-o`). docs/DEBUG.md lists them.
 */

#include <stdbool.h>
#include <stdio.h>

struct ao_cli;

/** Whether @words (the command words) name a debug command. */
bool ao_debug_is_command(char *const *words);

/** Run the debug command in @cli->command. Returns the exit code: 0, 1 (operator error), 2 (usage). */
int ao_debug_main(const struct ao_cli *cli);

/** The debug commands' usage lines, for --help. */
void ao_debug_print_help(FILE *out);
