/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `addon-operator tool ...`: commands for module authors (and for anyone
 * checking the operator's parsers) that run one piece of the values engine
 * on files, with no operator around it:
 *
 *   tool yaml2json FILE|-                   the document as canonical JSON
 *   tool json-patch DOC PATCH               DOC with the patch file applied, as JSON
 *   tool validate SCHEMA VALUES [--for-helm] exit 0 when valid, else one error per line
 *
 * Output goes to stdout only on success; errors go to stderr. Exit codes:
 * 0 success, 1 the input is invalid (or the check failed), 2 usage errors.
 */

#include <stdio.h>

/** Run the tool command in @args (args[0] is its name; NULL-terminated). Returns the exit code. */
int ao_tool_main(int argc, char *const *args);

/** List the tool commands for --help. */
void ao_tool_print_help(FILE *out);
