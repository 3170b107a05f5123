/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Running a hook: the file protocol around one sandboxed child.
 *
 * Each run gets a private directory of its own name (mode 0700; owned by
 * the profile's uid when the profile drops privileges) inside the
 * operator's own directory under the temp dir, which is on tmpfs when one
 * is available. The inputs are written there before the child starts:
 *
 *   event runs      BINDING_CONTEXT_PATH, VALUES_PATH, CONFIG_VALUES_PATH in;
 *                   VALUES_JSON_PATCH_PATH, CONFIG_VALUES_JSON_PATCH_PATH,
 *                   METRICS_PATH, KUBERNETES_PATCH_PATH out (created empty)
 *   enabled scripts VALUES_PATH, CONFIG_VALUES_PATH in;
 *                   MODULE_ENABLED_RESULT, MODULE_ENABLED_REASON out
 *   --config runs   none; stdout goes to a file instead of the log
 *
 * plus WORKING_DIR (the hooks root, where `lib` lives) on top of the
 * operator's own environment. The child runs in its own directory (cwd).
 *
 * After a successful exit the outputs are read, never following symbolic
 * links and never more than their caps, and parsed; a malformed output
 * fails the run with the file, position and reason. Output files are only
 * read after exit code 0, as in the Go operator. Afterwards the directory is
 * removed; or, when the run succeeded, no process of its group is left, its
 * inputs were at most 64 KiB and it holds exactly the protocol files (plain
 * files of the run's user), its outputs are emptied and it is kept idle for
 * the next run of the same kind for the same module (global hooks among
 * themselves) under the same profile, which renames it to its own name and
 * rewrites the inputs in place (refusing links and second names: then it
 * gets a new directory). Creating and removing the seven files was most of
 * what a run cost the operator. With DEBUG_KEEP_TMP_FILES every run gets a
 * new directory and nothing is removed.
 *
 * Patches are also checked for where they write: a global hook may patch
 * /global/... and the top-level /<module>Enabled flags, a module hook only
 * /<its values key>/...
 *
 * The binding context file is written as it is produced (ao_binding_contexts_write()
 * into the file in chunks): the snapshots' items go from their source to the file
 * one by one, never held whole as a tree or a string. So is every other input.
 *
 * After a run with at least 1 MiB of inputs (a large snapshot), and once its
 * done callback returned, the runner hands free heap memory back to the
 * system (malloc_trim), so such a run's transient allocations do not stay in RSS.
 *
 * Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/metric-ops.h"
#include "ao/proc.h"

struct cJSON;
struct ao_proc;
struct ao_sandbox_profile;
struct ao_snapshot_source;
struct ao_hook_runner;

#define AO_HOOK_OUTPUT_MAX (16u * 1024 * 1024) /* bytes read from any one output file */

enum ao_hook_run_mode {
        AO_HOOK_RUN_CONFIG,  /* `<hook> --config`: capture the binding configuration */
        AO_HOOK_RUN_EVENT,   /* a hook run for binding contexts */
        AO_HOOK_RUN_ENABLED, /* a module's enabled script */
        _AO_HOOK_RUN_MODE_MAX,
        _AO_HOOK_RUN_MODE_INVALID = -EINVAL,
};

/** What a finished run produced. Owned by the runner; valid during the done callback only. */
struct ao_hook_outcome {
        struct ao_proc_result result; /* exit status, rusage, wall time */
        bool ok;                      /* exit code 0 and every output file valid */
        struct ao_error error;        /* why not ok: exit status and last stderr line, or the bad file */
        char *config_text;            /* CONFIG: stdout (NUL-terminated); else NULL */
        size_t config_len;
        struct cJSON *values_patch;        /* EVENT: operations array, NULL when the file was empty */
        struct cJSON *config_values_patch; /* EVENT: likewise */
        struct ao_metric_ops metrics;      /* EVENT */
        char *kubernetes_patch;            /* EVENT: the raw file (NUL-terminated), NULL when empty */
        size_t kubernetes_patch_len;
        int enabled;          /* ENABLED: 1 or 0 (-1 before the run finished) */
        char *enabled_reason; /* ENABLED: the reason file when the result is false, else NULL */
};

/*
 * The run ended. The outcome is the runner's and released when the handler returns, but the
 * handler may take any output it keeps for later (the patches, the metric operations, the
 * kubernetes patch text): it sets the member to NULL (or zero) and owns what it took.
 */
typedef void ao_hook_done_handler(struct ao_hook_outcome *outcome, void *userdata);

/** One run. Every pointer is borrowed for the duration of ao_hook_run_start() only. */
struct ao_hook_run_request {
        enum ao_hook_run_mode mode;
        const char *hook_name;   /* for logs and errors: "hooks/pods.sh" */
        const char *path;        /* the executable */
        const char *python_venv; /* set: run `<venv>/bin/python3 <path>` with PYTHONHOME=<venv> */
        const char *module;      /* module name, NULL for global hooks */
        const char *values_key;  /* the module's values key ("simpleModule"), NULL for global hooks */
        const char *working_dir; /* WORKING_DIR: the hooks root */
        /*
         * What the run's log records carry besides module and hook (which come from the fields
         * above): binding, queue, task, ... Borrowed for the call; may be NULL.
         */
        const struct ao_log_context *log_context;
        const struct cJSON *binding_contexts;       /* EVENT: the array */
        const struct ao_snapshot_source *snapshots; /* EVENT: their items; NULL: as they are */
        const struct cJSON *values;                 /* EVENT, ENABLED: the VALUES_PATH document */
        const struct cJSON *config_values;          /* EVENT, ENABLED: the CONFIG_VALUES_PATH document */
        const struct ao_sandbox_profile *profile;   /* NULL: unsandboxed */
        uint64_t timeout_usec;                      /* 0: none */
        ao_hook_done_handler *on_done;              /* required; called exactly once, after start succeeded */
        void *userdata;
};

struct ao_hook_runner_options {
        const char *tmp_dir;      /* TMP_DIR */
        bool tmp_dir_explicit;    /* the user chose it: use it even when it is not tmpfs */
        bool keep_files;          /* DEBUG_KEEP_TMP_FILES */
        char *const *environment; /* the operator's environment, copied; NULL: environ */
};

/**
 * Create a runner: its private directory (cleaning up those of earlier
 * operator processes that no longer run) and the environment base.
 */
int ao_hook_runner_new(struct ao_proc *proc, const struct ao_hook_runner_options *options,
                       struct ao_hook_runner **ret, struct ao_error *reterr);
/** Kill nothing (the proc owns the children) but remove the private directory. NULL is accepted. */
struct ao_hook_runner *ao_hook_runner_free(struct ao_hook_runner *runner);

/** The directory runs are created in (for logs and tests). */
const char *ao_hook_runner_dir(const struct ao_hook_runner *runner);
/** Runs started and not yet finished. */
size_t ao_hook_runner_active(const struct ao_hook_runner *runner);

/**
 * Start a run. Fails at once (no callback) when the inputs cannot be written
 * or the child cannot be started (-ESHUTDOWN while shutting down), with the
 * hook named in @reterr.
 */
int ao_hook_run_start(struct ao_hook_runner *runner, const struct ao_hook_run_request *req,
                      struct ao_error *reterr);

/**
 * Check that every operation of @ops (a parsed patch) writes where a hook may:
 * @values_key NULL for global hooks. @file names the patch in the error.
 */
int ao_hook_patch_check_scope(const struct cJSON *ops, const char *values_key, const char *file,
                              struct ao_error *reterr);
