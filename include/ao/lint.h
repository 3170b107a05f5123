/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `addon-operator lint [--modules-dir D] [--global-hooks-dir G] [-o text|json]`:
 * check a module tree without running the operator. Reads the modules
 * directories (names, values.yaml files, openapi/ schemas, enabled scripts,
 * Chart.yaml, crds/), checks the values against the schemas, and runs every
 * hook with --config in its sandbox profile, then prints every problem with
 * its file. With ADDON_OPERATOR_CONFIG_FILE set, that file's config values
 * are checked too. Exit 0: no errors; 1: errors; 2: usage.
 * See docs/LINT.md.
 */

struct ao_cli;

int ao_lint_main(const struct ao_cli *cli);
