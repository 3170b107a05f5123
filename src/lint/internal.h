/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `addon-operator lint`, inside: lint.c runs the command; the tree is read
 * once into a struct lint_tree (tree.c, one module's files in module.c), its
 * values are checked against the schemas (values.c), every hook answers
 * --config in the sandbox (hooks.c), and every problem goes to the report
 * (report.c), which prints them sorted by file at the end. Nothing stops at
 * the first problem.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/macro.h"

struct cJSON;
struct ao_schema;
struct ao_settings;

/* ---- report.c ------------------------------------------------------------------------------- */

enum lint_severity {
        LINT_ERROR,   /* the operator would refuse it, fail on it, or silently do something else */
        LINT_WARNING, /* the operator goes on, but ignores or skips something */
};

struct lint_report;

struct lint_report *lint_report_new(void);
struct lint_report *lint_report_free(struct lint_report *r);

/** Record a problem with @path (a file or directory, as the user wrote the tree's roots). */
void lint_problem(struct lint_report *r, enum lint_severity severity, const char *path, const char *fmt, ...)
    _printf_(4, 5);
#define lint_error(r, path, ...)   lint_problem(r, LINT_ERROR, path, __VA_ARGS__)
#define lint_warning(r, path, ...) lint_problem(r, LINT_WARNING, path, __VA_ARGS__)

/**
 * Record an error whose message came from a parser: when @message starts
 * with @path (and maybe ":line:column"), that prefix becomes the problem's
 * path, so the line reads "values.yaml:3:1: error: ..." and not the file twice.
 */
void lint_error_message(struct lint_report *r, const char *path, const char *message);

size_t lint_report_errors(const struct lint_report *r);
size_t lint_report_warnings(const struct lint_report *r);

/** Print every problem, sorted by path (then in the order found): text lines, or one JSON document. */
void lint_report_print_text(const struct lint_report *r);
void lint_report_print_json(const struct lint_report *r, size_t n_modules, size_t n_hooks);

/* ---- tree.c --------------------------------------------------------------------------------- */

struct lint_module {
        char *name;        /* owned */
        char *values_key;  /* owned */
        char *enabled_key; /* owned */
        char *dir;         /* owned */
        uint32_t order;
        struct cJSON *own_section; /* owned: its section in its values.yaml, or NULL */
        struct ao_schema *schema;  /* owned; NULL when openapi/ is broken (reported) */
        bool schema_ok;            /* openapi/ loaded (or absent): its values can be checked */
};

struct lint_tree {
        struct lint_module *modules; /* owned, sorted by (order, name) */
        size_t n_modules;
        struct cJSON **common; /* owned: each MODULES_DIR's values.yaml ({} when missing or broken) */
        char **common_paths;   /* owned: their paths */
        size_t n_common;
        struct ao_schema *global_schema; /* owned: GLOBAL_HOOKS_DIR/openapi */
        bool global_schema_ok;
        struct cJSON *config; /* owned: the local config file's data (ADDON_OPERATOR_CONFIG_FILE), or NULL */
        char *config_path;    /* owned: that file, or NULL */
        bool config_broken;   /* the file is set but unreadable (reported): config values are not checked */
};

/**
 * Read one module directory @parent/@entry into @ret and report what is
 * wrong with its files (values.yaml, openapi/, enabled, Chart.yaml, crds/).
 * Returns false, with nothing in @ret, when the directory name is no valid
 * module name (reported): such a directory is not a module at all.
 */
bool lint_module_load(const char *parent, const char *entry, const struct ao_settings *s,
                      struct lint_report *r, struct lint_module *ret);
void lint_module_done(struct lint_module *m);

/** Read the modules directories, the global schema and the config file; report what is wrong with them. */
void lint_tree_load(const struct ao_settings *s, struct lint_report *r, struct lint_tree *ret);
void lint_tree_done(struct lint_tree *t);

/* ---- values.c ------------------------------------------------------------------------------- */

/** Check the global section and every module's config values and values against their schemas. */
void lint_values(const struct lint_tree *t, const char *global_hooks_dir, struct lint_report *r);

/* ---- hooks.c -------------------------------------------------------------------------------- */

/**
 * Discover the global hooks and every module's hooks, run each with
 * --config under its sandbox profile (several at once) and check the
 * output. Returns the number of hooks found, or a negative errno when the
 * hook machinery itself cannot start (reported).
 */
int lint_hooks(const struct ao_settings *s, const struct lint_tree *t, struct lint_report *r);
