/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Hook discovery: which files under a hooks directory are hooks, in which
 * order, and under which name they appear in logs and metrics.
 *
 * A hook is an executable file found by a recursive walk, sorted by its
 * path. Skipped: names starting with '.', directories named `lib` (shared
 * code, reachable as $WORKING_DIR/lib) and, in modules, `venv`; files ending
 * in .yaml, .json, .md or .txt; and files without any execute bit, which are
 * reported once as "chmod +x is required". Symbolic links are followed
 * (links that point back up the tree are skipped).
 *
 * Names: a module hook <module>/hooks/sub/x.sh is "hooks/sub/x.sh" (the
 * module is a separate label); a global hook is its path relative to the
 * global hooks root, with "hooks/" in front when that root is
 * $GLOBAL_HOOKS_DIR/hooks. This is what the Go operator prints for the usual
 * layouts, without its habit of picking up a "/hooks/" component found
 * higher up in the path.
 *
 * Logs warnings (skipped files); main thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/hook-config.h"

#define AO_HOOKS_MAX_DEPTH 32    /* directory levels below the root */
#define AO_HOOKS_MAX_FILES 10000 /* hooks under one root */

struct ao_hook_path {
        char *path; /* owned: the root joined with the relative path */
        char *name; /* owned: see above */
};

/** A file or directory discovery left out (and logged), with why: "is not executable (chmod +x ...)". */
struct ao_hook_skip {
        char *path;   /* owned */
        char *reason; /* owned */
};

struct ao_hook_paths {
        struct ao_hook_path *items; /* owned, sorted by name */
        size_t n;
        struct ao_hook_skip *skipped; /* owned, in walk order */
        size_t n_skipped;
};

/**
 * The directory global hooks are searched in: @global_hooks_dir/hooks when it
 * is a directory, else @global_hooks_dir itself. Returns a malloc'd path.
 */
char *ao_hooks_global_root(const char *global_hooks_dir);

/**
 * Find the hooks under @root for hooks of @kind. A missing @root is an empty
 * result, not an error; an unreadable directory is an error naming it.
 * @ret is written only on success; release it with ao_hook_paths_done().
 */
int ao_hooks_discover(const char *root, enum ao_hook_kind kind, struct ao_hook_paths *ret,
                      struct ao_error *reterr);

void ao_hook_paths_done(struct ao_hook_paths *paths);

/*
 * Python hooks. A module hook whose file name ends in ".py" runs with the module's own Python
 * when <module>/hooks/venv/bin/python3 is there (a file with an execute bit; a link is
 * followed): as `<venv>/bin/python3 <hook> [--config]` with PYTHONHOME=<venv>, as the Go
 * operator runs it. Otherwise, and for global hooks, the file runs itself (its #! line).
 */
#define AO_HOOKS_PYTHON_VENV "hooks/venv"

/** Whether @path names a Python hook (its file name ends in ".py"). */
bool ao_hook_is_python(const char *path);
/** "<@module_dir>/hooks/venv" (malloc'd) when its bin/python3 can run hooks, else NULL. */
char *ao_hooks_python_venv(const char *module_dir);

struct ao_hook_runner;
struct ao_hooks_config_pool;
struct ao_sandbox_profile;
struct ao_sandbox_profiles;

/** A hook with its configuration: what discovery plus the --config run produce. */
struct ao_hook {
        char *name;        /* owned: "hooks/pods.sh" */
        char *path;        /* owned: the executable */
        char *module;      /* owned: the module's name; NULL for global hooks */
        char *working_dir; /* owned: the hooks root, WORKING_DIR for its runs */
        char *python_venv; /* owned: the venv a Python module hook runs with; NULL: it runs itself */
        enum ao_hook_kind kind;
        struct ao_hook_config config;
        const struct ao_sandbox_profile *profile; /* borrowed from the profiles set */
};

/** What to load: every hook under @root, each run with --config. Pointers borrowed for the call. */
struct ao_hooks_load_request {
        const char *root; /* ao_hooks_global_root() or "<module dir>/hooks" */
        enum ao_hook_kind kind;
        const char *module;     /* module name (module hooks) */
        const char *module_dir; /* for the module's sandbox.yaml (module hooks) */
        const struct ao_sandbox_profiles *profiles;
        const char *default_profile; /* ADDON_OPERATOR_SANDBOX_PROFILE */
        uint64_t timeout_usec;       /* for each --config run; 0: AO_HOOKS_CONFIG_TIMEOUT_USEC */
        size_t max_parallel;         /* --config runs at once; 0: one at a time */
        struct ao_hooks_config_pool
            *pool; /* if set: the limit shared with other loads (max_parallel unused) */
};

/** How many --config runs to have in flight on this machine (twice the cores, at most 16). */
size_t ao_hooks_config_parallelism(void);

/**
 * A limit of @limit --config runs in flight for several loads at once
 * (ao_hooks_load_request.pool). Loads are served in the order they start.
 * Free it after the last load using it has finished.
 */
struct ao_hooks_config_pool *ao_hooks_config_pool_new(size_t limit);
struct ao_hooks_config_pool *ao_hooks_config_pool_free(struct ao_hooks_config_pool *pool);

#define AO_HOOKS_CONFIG_TIMEOUT_USEC (60 * AO_USEC_PER_SEC)

/**
 * The result: on success @hooks holds @n hooks in discovery order (the
 * handler takes them: release with ao_hooks_free()); on failure @hooks is
 * NULL and @error names the hook and what is wrong with it.
 */
typedef void ao_hooks_loaded_handler(struct ao_hook *hooks, size_t n, const struct ao_error *error,
                                     void *userdata);

/**
 * Discover the hooks and run each with --config, one after another in
 * order, under its sandbox profile. Fails at once (no handler call) when
 * discovery fails; otherwise the handler is called exactly once, after the
 * last config run or at the first failure, which may be before this
 * function returns (no hooks, or the first one cannot be started).
 */
int ao_hooks_load(struct ao_hook_runner *runner, const struct ao_hooks_load_request *req,
                  ao_hooks_loaded_handler *on_loaded, void *userdata, struct ao_error *reterr);

void ao_hook_done(struct ao_hook *hook);
/** Release @n hooks and the array. NULL is accepted. */
void ao_hooks_free(struct ao_hook *hooks, size_t n);
