/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hook runs: write the inputs, start the sandboxed child, read the outputs
 * when it exits (see hook-run.h).
 */
#include "ao/hook-run.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/json-writer.h"
#include "ao/log.h"
#include "ao/strbuf.h"
#include "outputs.h"
#include "workspace.h"

#define STDERR_TAIL_MAX 512
/*
 * Inputs larger than this in all are not left lying in an idle run directory: the next run
 * rewrites them anyway, and a big module's values would hold tmpfs memory until then.
 */
#define REUSE_INPUT_MAX (64 * 1024)
/*
 * After a run with this much input, free heap memory goes back to the system: such a run
 * allocated and dropped large blocks (its values documents, the sort arrays of big snapshots:
 * 16 bytes per item, the walks of their objects), which would otherwise stay in the process's
 * RSS as holes between long-lived allocations. The snapshots themselves are streamed into the
 * file and never held whole. malloc_trim costs a few ms on a large heap, against tens for the run.
 */
#define TRIM_AFTER_INPUT (1024 * 1024)

extern char **environ;

/* The files each kind of run has in its directory (removed by name, or kept for the next run). */
static const char *const event_inputs[] = {INPUT_BINDING_CONTEXT, INPUT_VALUES, INPUT_CONFIG_VALUES};
static const char *const event_outputs[] = {OUTPUT_VALUES_PATCH, OUTPUT_CONFIG_VALUES_PATCH, OUTPUT_METRICS,
                                            OUTPUT_KUBERNETES_PATCH};
static const char *const enabled_inputs[] = {INPUT_VALUES, INPUT_CONFIG_VALUES};
static const char *const enabled_outputs[] = {OUTPUT_ENABLED_RESULT, OUTPUT_ENABLED_REASON};
static const char *const config_outputs[] = {OUTPUT_CONFIG};
static const struct run_files files_of_mode[_AO_HOOK_RUN_MODE_MAX] = {
    [AO_HOOK_RUN_CONFIG] = {NULL, 0, config_outputs, AO_ARRAY_SIZE(config_outputs)},
    [AO_HOOK_RUN_EVENT] = {event_inputs, AO_ARRAY_SIZE(event_inputs), event_outputs,
                           AO_ARRAY_SIZE(event_outputs)},
    [AO_HOOK_RUN_ENABLED] = {enabled_inputs, AO_ARRAY_SIZE(enabled_inputs), enabled_outputs,
                             AO_ARRAY_SIZE(enabled_outputs)},
};

/* Variables the operator sets for every run; copies from its own environment are dropped. */
static const char *const protocol_variables[] = {
    "BINDING_CONTEXT_PATH",          "VALUES_PATH",  "CONFIG_VALUES_PATH",    "VALUES_JSON_PATCH_PATH",
    "CONFIG_VALUES_JSON_PATCH_PATH", "METRICS_PATH", "KUBERNETES_PATCH_PATH", "MODULE_ENABLED_RESULT",
    "MODULE_ENABLED_REASON",         "WORKING_DIR",
};

struct hook_run {
        struct ao_hook_runner *runner;
        struct hook_run *prev, *next; /* the runner's active list */
        enum ao_hook_run_mode mode;
        char *hook_name, *module, *values_key;    /* owned */
        struct run_dir dir;                       /* owned: the run directory; path NULL: none */
        char *key;                                /* owned: whose idle directory it may reuse; NULL: none */
        const struct ao_sandbox_profile *profile; /* borrowed: outlives the run, as for the proc layer */
        bool reusable;                            /* the run went cleanly: its directory may serve the next */
        size_t input_bytes;                       /* written into the inputs */
        char stderr_tail[STDERR_TAIL_MAX];        /* the last line the hook wrote to stderr */
        ao_hook_done_handler *on_done;
        void *userdata;
        struct ao_hook_outcome outcome;
};

struct ao_hook_runner {
        struct ao_proc *proc; /* borrowed */
        struct workspace workspace;
        char **base_env; /* owned: the operator's environment minus the protocol variables */
        size_t n_base_env;
        struct hook_run *active;
        size_t n_active;
        char *cwd; /* owned: ours, asked once (the operator never changes it); NULL if unknown */
};

static bool is_protocol_variable(const char *entry)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(protocol_variables); i++) {
                size_t n = strlen(protocol_variables[i]);
                if (strncmp(entry, protocol_variables[i], n) == 0 && entry[n] == '=')
                        return true;
        }
        return false;
}

static void copy_environment(struct ao_hook_runner *runner, char *const *env)
{
        size_t n = 0;
        while (env && env[n])
                n++;
        runner->base_env = ao_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
                if (!is_protocol_variable(env[i]))
                        runner->base_env[runner->n_base_env++] = ao_xstrdup(env[i]);
}

int ao_hook_runner_new(struct ao_proc *proc, const struct ao_hook_runner_options *options,
                       struct ao_hook_runner **ret, struct ao_error *reterr)
{
        struct ao_hook_runner *runner = ao_xcalloc(1, sizeof(*runner));
        runner->proc = proc;
        int r = workspace_open(&runner->workspace, options->tmp_dir, options->tmp_dir_explicit,
                               options->keep_files, reterr);
        if (r < 0) {
                free(runner);
                return r;
        }
        copy_environment(runner, options->environment ? options->environment : environ);
        runner->cwd = getcwd(NULL, 0);
        *ret = runner;
        return 0;
}

static void run_free(struct hook_run *run)
{
        struct ao_hook_runner *runner = run->runner;
        if (run->prev)
                run->prev->next = run->next;
        else if (runner->active == run)
                runner->active = run->next;
        if (run->next)
                run->next->prev = run->prev;
        runner->n_active--;
        if (run->dir.path)
                workspace_release_run_dir(&runner->workspace, &run->dir, run->key, run->profile,
                                          run->reusable);
        outputs_done(&run->outcome);
        free(run->hook_name);
        free(run->module);
        free(run->values_key);
        free(run->key);
        free(run);
}

struct ao_hook_runner *ao_hook_runner_free(struct ao_hook_runner *runner)
{
        if (!runner)
                return NULL;
        /* Runs still here were abandoned by a proc that is gone: nobody will report them. */
        while (runner->active)
                run_free(runner->active);
        workspace_close(&runner->workspace);
        for (size_t i = 0; i < runner->n_base_env; i++)
                free(runner->base_env[i]);
        free(runner->base_env);
        free(runner->cwd);
        free(runner);
        return NULL;
}

const char *ao_hook_runner_dir(const struct ao_hook_runner *runner)
{
        return runner->workspace.dir;
}

size_t ao_hook_runner_active(const struct ao_hook_runner *runner)
{
        return runner->n_active;
}

static char *dup_or_null(const char *s)
{
        return s ? ao_xstrdup(s) : NULL;
}

static struct hook_run *run_new(struct ao_hook_runner *runner, const struct ao_hook_run_request *req)
{
        struct hook_run *run = ao_xcalloc(1, sizeof(*run));
        run->runner = runner;
        run->mode = req->mode;
        run->hook_name = ao_xstrdup(req->hook_name);
        run->module = dup_or_null(req->module);
        run->values_key = dup_or_null(req->values_key);
        run->on_done = req->on_done;
        run->userdata = req->userdata;
        run->profile = req->profile;
        /*
         * Who may get this run's directory next: runs of the same kind for the same module (global
         * hooks among themselves). Whatever a hook could leave for a later run to find, that run's
         * hook could have written itself: the same values, under the same profile.
         */
        run->key = ao_xasprintf("%d %s", (int) req->mode, req->module ? req->module : "");
        run->outcome.enabled = -1;
        run->next = runner->active;
        if (runner->active)
                runner->active->prev = run;
        runner->active = run;
        runner->n_active++;
        return run;
}

/* An input: created in a new directory, rewritten in place in a reused one, as it is produced. */
static int write_input(struct hook_run *run, const char *name, workspace_producer *produce,
                       const void *userdata, struct ao_error *reterr)
{
        size_t len = 0;
        int r = workspace_write_input(&run->dir, name, run->profile, produce, userdata, &len, reterr);
        run->input_bytes += len;
        return r;
}

static int produce_document(struct ao_json_writer *out, const void *userdata)
{
        const cJSON *doc = userdata;
        if (doc)
                ao_json_write(out, doc);
        else
                ao_json_write_raw(out, "{}");
        return ao_json_writer_error(out);
}

/* The binding contexts, their snapshots read now from the request's source. */
static int produce_contexts(struct ao_json_writer *out, const void *userdata)
{
        const struct ao_hook_run_request *req = userdata;
        if (req->binding_contexts)
                return ao_binding_contexts_write(req->binding_contexts, req->snapshots, out);
        ao_json_write_raw(out, "[]\n");
        return ao_json_writer_error(out);
}

/*
 * The files of the run: inputs written, outputs created empty (a reused directory's are empty
 * already). --config output goes to a file, handed over as *@ret_stdout_fd: a configuration may
 * be one long JSON line, which the log would cut.
 */
static int write_inputs(struct hook_run *run, const struct ao_hook_run_request *req, int *ret_stdout_fd,
                        struct ao_error *reterr)
{
        const struct run_files *files = &files_of_mode[req->mode];
        int r = 0;
        if (req->mode == AO_HOOK_RUN_CONFIG) {
                if (!run->dir.reused)
                        r = workspace_create_output(&run->dir, OUTPUT_CONFIG, run->profile, reterr);
                return r < 0 ? r
                             : workspace_open_output(&run->dir, OUTPUT_CONFIG, run->profile, ret_stdout_fd,
                                                     reterr);
        }
        if (req->mode == AO_HOOK_RUN_EVENT)
                r = write_input(run, INPUT_BINDING_CONTEXT, produce_contexts, req, reterr);
        for (size_t i = 0; r >= 0 && !run->dir.reused && i < files->n_outputs; i++)
                r = workspace_create_output(&run->dir, files->outputs[i], run->profile, reterr);
        if (r >= 0)
                r = write_input(run, INPUT_VALUES, produce_document, req->values, reterr);
        if (r >= 0)
                r = write_input(run, INPUT_CONFIG_VALUES, produce_document, req->config_values, reterr);
        return r;
}

/* A run directory with the files written: a reused one when an earlier run left one. */
static int prepare_dir(struct hook_run *run, const struct ao_hook_run_request *req, int *ret_stdout_fd,
                       struct ao_error *reterr)
{
        struct workspace *w = &run->runner->workspace;
        const struct run_files *files = &files_of_mode[run->mode];
        int r =
            workspace_acquire_run_dir(w, run->key, req->hook_name, req->profile, files, &run->dir, reterr);
        if (r >= 0)
                r = write_inputs(run, req, ret_stdout_fd, reterr);
        if (r >= 0 || !run->dir.reused)
                return r;
        /* What was left there is refused (another name of an input...): start afresh. */
        workspace_release_run_dir(w, &run->dir, run->key, run->profile, false);
        run->input_bytes = 0;
        ao_error_clear(reterr);
        r = workspace_acquire_run_dir(w, NULL, req->hook_name, req->profile, files, &run->dir, reterr);
        return r >= 0 ? write_inputs(run, req, ret_stdout_fd, reterr) : r;
}

struct env_builder {
        char **env;
        size_t n;
        char **owned; /* the strings added here */
        size_t n_owned;
};

static void env_set(struct env_builder *b, const char *name, const char *dir, const char *file)
{
        char *entry = file ? ao_xasprintf("%s=%s/%s", name, dir, file) : ao_xasprintf("%s=%s", name, dir);
        b->env[b->n++] = entry;
        b->owned[b->n_owned++] = entry;
}

/*
 * The child starts in its hook's directory, so a path relative to ours
 * (MODULES_DIR=modules) would name nothing there: make it absolute.
 */
static char *absolute_path(const struct ao_hook_runner *runner, const char *path)
{
        if (path[0] == '/' || !runner->cwd)
                return ao_xstrdup(path);
        return ao_xasprintf("%s/%s", runner->cwd, path);
}

static bool is_python_home(const char *entry)
{
        return strncmp(entry, "PYTHONHOME=", strlen("PYTHONHOME=")) == 0;
}

/*
 * The operator's environment plus the paths this mode hands over, and for a hook run with its
 * module's venv, PYTHONHOME naming that venv (replacing the operator's own, if it has one).
 */
static void build_env(const struct hook_run *run, const struct ao_hook_run_request *req,
                      const char *python_home, struct env_builder *b)
{
        const struct ao_hook_runner *runner = run->runner;
        size_t max = runner->n_base_env + AO_ARRAY_SIZE(protocol_variables) + 2;
        b->env = ao_xcalloc(max, sizeof(char *));
        b->owned = ao_xcalloc(AO_ARRAY_SIZE(protocol_variables) + 1, sizeof(char *));
        for (size_t i = 0; i < runner->n_base_env; i++)
                if (!python_home || !is_python_home(runner->base_env[i]))
                        b->env[b->n++] = runner->base_env[i];
        if (python_home)
                env_set(b, "PYTHONHOME", python_home, NULL);
        if (req->working_dir) {
                _cleanup_free_ char *working_dir = absolute_path(runner, req->working_dir);
                env_set(b, "WORKING_DIR", working_dir, NULL);
        }
        if (req->mode == AO_HOOK_RUN_CONFIG)
                return;
        const char *dir = run->dir.path;
        env_set(b, "VALUES_PATH", dir, INPUT_VALUES);
        env_set(b, "CONFIG_VALUES_PATH", dir, INPUT_CONFIG_VALUES);
        if (req->mode == AO_HOOK_RUN_ENABLED) {
                env_set(b, "MODULE_ENABLED_RESULT", dir, OUTPUT_ENABLED_RESULT);
                env_set(b, "MODULE_ENABLED_REASON", dir, OUTPUT_ENABLED_REASON);
                return;
        }
        env_set(b, "BINDING_CONTEXT_PATH", dir, INPUT_BINDING_CONTEXT);
        env_set(b, "VALUES_JSON_PATCH_PATH", dir, OUTPUT_VALUES_PATCH);
        env_set(b, "CONFIG_VALUES_JSON_PATCH_PATH", dir, OUTPUT_CONFIG_VALUES_PATCH);
        env_set(b, "METRICS_PATH", dir, OUTPUT_METRICS);
        env_set(b, "KUBERNETES_PATCH_PATH", dir, OUTPUT_KUBERNETES_PATCH);
}

static void env_done(struct env_builder *b)
{
        for (size_t i = 0; i < b->n_owned; i++)
                free(b->owned[i]);
        free(b->owned);
        free(b->env);
}

/* Keep the last stderr line for the error message, and log every line as usual. */
static void on_line(struct ao_proc_run *prun, enum ao_proc_stream stream, const char *line, size_t len,
                    void *userdata)
{
        struct hook_run *run = userdata;
        if (stream == AO_PROC_STDERR && len > 0) {
                size_t n = AO_MIN(len, sizeof(run->stderr_tail) - 1);
                memcpy(run->stderr_tail, line, n);
                run->stderr_tail[n] = '\0';
        }
        ao_proc_log_line(prun, stream, line, len);
}

static void describe_failure(struct hook_run *run, const struct ao_proc_result *result)
{
        char status[256];
        ao_proc_result_describe(result, status, sizeof(status));
        struct ao_strbuf sb = {0};
        ao_strbuf_append_sanitized(&sb, run->stderr_tail);
        if (run->stderr_tail[0])
                ao_error_set(&run->outcome.error, -EIO, "hook '%s' failed: %s: %s", run->hook_name, status,
                             ao_strbuf_str(&sb));
        else
                ao_error_set(&run->outcome.error, -EIO, "hook '%s' failed: %s", run->hook_name, status);
        ao_strbuf_done(&sb);
}

static int read_outputs(struct hook_run *run)
{
        struct ao_error *err = &run->outcome.error;
        int r;
        switch (run->mode) {
        case AO_HOOK_RUN_CONFIG:
                r = outputs_read_config(&run->dir, &run->outcome, err);
                break;
        case AO_HOOK_RUN_ENABLED:
                r = outputs_read_enabled(&run->dir, &run->outcome, err);
                break;
        default:
                r = outputs_read_event(&run->dir, run->values_key, &run->outcome, err);
                break;
        }
        if (r < 0)
                ao_error_prefix(err, "hook '%s'", run->hook_name);
        return r;
}

static void on_child_exit(struct ao_proc_run *prun, const struct ao_proc_result *result, void *userdata)
{
        (void) prun;
        struct hook_run *run = userdata;
        run->outcome.result = *result;
        if (result->exit_code != 0 || result->launch_error)
                describe_failure(run, result);
        else
                run->outcome.ok = read_outputs(run) >= 0;
        /*
         * No process of the run's group is left (the hook leads its own group): none can write into
         * the directory once the next run has it. A zombie still counts, so this errs on the side of
         * a new one. With the whole tree gone, no process of this run can use the directory's name
         * either: the next run may keep it.
         */
        run->reusable = run->outcome.ok && run->input_bytes <= REUSE_INPUT_MAX && result->group_gone;
        run->dir.name_safe = run->reusable && result->tree_gone;
        /*
         * Before the callback: what it starts next (the loader's next --config, a queue's next
         * task) finds this directory idle already. The outcome holds copies, nothing in it.
         */
        workspace_release_run_dir(&run->runner->workspace, &run->dir, run->key, run->profile, run->reusable);
        bool trim = run->input_bytes >= TRIM_AFTER_INPUT;
        run->on_done(&run->outcome, run->userdata);
        run_free(run);
        /* After the callback: the caller's binding contexts are gone with its finished task by now. */
        if (trim)
                (void) malloc_trim(0);
}

static char *directory_of(const char *path)
{
        const char *slash = strrchr(path, '/');
        if (!slash)
                return ao_xstrdup(".");
        return slash == path ? ao_xstrdup("/") : ao_xstrndup(path, (size_t) (slash - path));
}

/* The request's context with the run's module and hook; the proc copies its strings. */
static struct ao_log_context run_log_context(const struct hook_run *run,
                                             const struct ao_hook_run_request *req)
{
        struct ao_log_context ctx = req->log_context ? *req->log_context : (struct ao_log_context){0};
        ctx.module = run->module;
        ctx.hook = run->hook_name;
        return ctx;
}

static int spawn(struct hook_run *run, const struct ao_hook_run_request *req, int stdout_fd,
                 struct ao_error *reterr)
{
        _cleanup_free_ char *path = absolute_path(run->runner, req->path);
        _cleanup_free_ char *cwd = directory_of(path);
        _cleanup_free_ char *venv = req->python_venv ? absolute_path(run->runner, req->python_venv) : NULL;
        _cleanup_free_ char *python = venv ? ao_xasprintf("%s/bin/python3", venv) : NULL;
        struct env_builder env = {0};
        build_env(run, req, venv, &env);
        char *config_flag = req->mode == AO_HOOK_RUN_CONFIG ? (char *) "--config" : NULL;
        /* With a venv, its interpreter runs the hook file, as the Go operator runs Python hooks. */
        char *argv_self[] = {path, config_flag, NULL};
        char *argv_python[] = {python, path, config_flag, NULL};
        struct ao_proc_spec spec = {
            .path = python ? python : path,
            .argv = python ? argv_python : argv_self,
            .envp = env.env,
            .cwd = cwd,
            .stdout_fd = stdout_fd,
            .profile = req->profile,
            .timeout_usec = req->timeout_usec,
            .log_context = run_log_context(run, req),
            .on_line = on_line,
            .on_exit = on_child_exit,
            .userdata = run,
        };
        int r = ao_proc_spawn(run->runner->proc, &spec, NULL, reterr);
        env_done(&env);
        return r;
}

int ao_hook_run_start(struct ao_hook_runner *runner, const struct ao_hook_run_request *req,
                      struct ao_error *reterr)
{
        if (!req->hook_name || !req->path || !req->on_done || req->mode < 0 ||
            req->mode >= _AO_HOOK_RUN_MODE_MAX)
                return ao_error_set(reterr, -EINVAL, "hooks: hook_name, path, mode and on_done are required");
        struct hook_run *run = run_new(runner, req);
        _cleanup_close_ int stdout_fd = -1;
        int r = prepare_dir(run, req, &stdout_fd, reterr);
        if (r >= 0)
                r = spawn(run, req, stdout_fd, reterr);
        if (r < 0) {
                ao_error_prefix(reterr, "hook '%s'", req->hook_name);
                run_free(run);
        }
        return r;
}
