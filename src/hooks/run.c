/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hook runs: write the inputs, start the sandboxed child, read the outputs
 * when it exits (see hook-run.h).
 */
#include "ao/hook-run.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/log.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"
#include "outputs.h"
#include "workspace.h"

#define STDERR_TAIL_MAX 512

extern char **environ;

/* Every file the protocol may create in a run directory (removed by name after the run). */
static const char *const run_files[] = {
    INPUT_BINDING_CONTEXT,      INPUT_VALUES,   INPUT_CONFIG_VALUES,     OUTPUT_VALUES_PATCH,
    OUTPUT_CONFIG_VALUES_PATCH, OUTPUT_METRICS, OUTPUT_KUBERNETES_PATCH, OUTPUT_ENABLED_RESULT,
    OUTPUT_ENABLED_REASON,      OUTPUT_CONFIG,
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
        char *hook_name, *module, *values_key, *binding, *queue; /* owned */
        char *dir;                                               /* owned: the run directory */
        char stderr_tail[STDERR_TAIL_MAX];                       /* the last line the hook wrote to stderr */
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
        if (run->dir)
                workspace_remove_run_dir(&runner->workspace, run->dir, run_files, AO_ARRAY_SIZE(run_files));
        outputs_done(&run->outcome);
        free(run->hook_name);
        free(run->module);
        free(run->values_key);
        free(run->binding);
        free(run->queue);
        free(run->dir);
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
        run->binding = dup_or_null(req->binding);
        run->queue = dup_or_null(req->queue);
        run->on_done = req->on_done;
        run->userdata = req->userdata;
        run->outcome.enabled = -1;
        run->next = runner->active;
        if (runner->active)
                runner->active->prev = run;
        runner->active = run;
        runner->n_active++;
        return run;
}

static int write_json(const struct hook_run *run, const char *name, const cJSON *doc,
                      const struct ao_sandbox_profile *profile, struct ao_error *reterr)
{
        _cleanup_free_ char *text = doc ? ao_json_canonical(doc) : ao_xstrdup("{}");
        return workspace_write(run->dir, name, text, strlen(text), profile, reterr);
}

static int write_inputs(struct hook_run *run, const struct ao_hook_run_request *req, struct ao_error *reterr)
{
        const struct ao_sandbox_profile *profile = req->profile;
        int r = 0;
        if (req->mode == AO_HOOK_RUN_EVENT) {
                _cleanup_free_ char *contexts = req->binding_contexts
                                                    ? ao_binding_contexts_format(req->binding_contexts)
                                                    : ao_xstrdup("[]\n");
                r = workspace_write(run->dir, INPUT_BINDING_CONTEXT, contexts, strlen(contexts), profile,
                                    reterr);
                static const char *const outputs[] = {OUTPUT_VALUES_PATCH, OUTPUT_CONFIG_VALUES_PATCH,
                                                      OUTPUT_METRICS, OUTPUT_KUBERNETES_PATCH};
                for (size_t i = 0; r >= 0 && i < AO_ARRAY_SIZE(outputs); i++)
                        r = workspace_write(run->dir, outputs[i], "", 0, profile, reterr);
        }
        if (r >= 0 && req->mode == AO_HOOK_RUN_ENABLED) {
                r = workspace_write(run->dir, OUTPUT_ENABLED_RESULT, "", 0, profile, reterr);
                if (r >= 0)
                        r = workspace_write(run->dir, OUTPUT_ENABLED_REASON, "", 0, profile, reterr);
        }
        if (r >= 0 && req->mode != AO_HOOK_RUN_CONFIG) {
                r = write_json(run, INPUT_VALUES, req->values, profile, reterr);
                if (r >= 0)
                        r = write_json(run, INPUT_CONFIG_VALUES, req->config_values, profile, reterr);
        }
        return r;
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
static char *absolute_path(const char *path)
{
        if (path[0] == '/')
                return ao_xstrdup(path);
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        return cwd ? ao_xasprintf("%s/%s", cwd, path) : ao_xstrdup(path);
}

/* The operator's environment plus the paths this mode hands over. */
static void build_env(const struct hook_run *run, const struct ao_hook_run_request *req,
                      struct env_builder *b)
{
        const struct ao_hook_runner *runner = run->runner;
        size_t max = runner->n_base_env + AO_ARRAY_SIZE(protocol_variables) + 1;
        b->env = ao_xcalloc(max, sizeof(char *));
        b->owned = ao_xcalloc(AO_ARRAY_SIZE(protocol_variables), sizeof(char *));
        memcpy(b->env, runner->base_env, runner->n_base_env * sizeof(char *));
        b->n = runner->n_base_env;
        if (req->working_dir) {
                _cleanup_free_ char *working_dir = absolute_path(req->working_dir);
                env_set(b, "WORKING_DIR", working_dir, NULL);
        }
        if (req->mode == AO_HOOK_RUN_CONFIG)
                return;
        env_set(b, "VALUES_PATH", run->dir, INPUT_VALUES);
        env_set(b, "CONFIG_VALUES_PATH", run->dir, INPUT_CONFIG_VALUES);
        if (req->mode == AO_HOOK_RUN_ENABLED) {
                env_set(b, "MODULE_ENABLED_RESULT", run->dir, OUTPUT_ENABLED_RESULT);
                env_set(b, "MODULE_ENABLED_REASON", run->dir, OUTPUT_ENABLED_REASON);
                return;
        }
        env_set(b, "BINDING_CONTEXT_PATH", run->dir, INPUT_BINDING_CONTEXT);
        env_set(b, "VALUES_JSON_PATCH_PATH", run->dir, OUTPUT_VALUES_PATCH);
        env_set(b, "CONFIG_VALUES_JSON_PATCH_PATH", run->dir, OUTPUT_CONFIG_VALUES_PATCH);
        env_set(b, "METRICS_PATH", run->dir, OUTPUT_METRICS);
        env_set(b, "KUBERNETES_PATCH_PATH", run->dir, OUTPUT_KUBERNETES_PATCH);
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
                r = outputs_read_config(run->dir, &run->outcome, err);
                break;
        case AO_HOOK_RUN_ENABLED:
                r = outputs_read_enabled(run->dir, &run->outcome, err);
                break;
        default:
                r = outputs_read_event(run->dir, run->values_key, &run->outcome, err);
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
        run->on_done(&run->outcome, run->userdata);
        run_free(run);
}

/* --config output goes to a file: a configuration may be one long JSON line, which the log would cut. */
static int open_config_output(const struct hook_run *run, const struct ao_sandbox_profile *profile,
                              int *ret_fd, struct ao_error *reterr)
{
        int r = workspace_write(run->dir, OUTPUT_CONFIG, "", 0, profile, reterr);
        if (r < 0)
                return r;
        _cleanup_free_ char *path = ao_xasprintf("%s/%s", run->dir, OUTPUT_CONFIG);
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "cannot open '%s': %s", path,
                                    strerror(errno));
        *ret_fd = fd;
        return 0;
}

static char *directory_of(const char *path)
{
        const char *slash = strrchr(path, '/');
        if (!slash)
                return ao_xstrdup(".");
        return slash == path ? ao_xstrdup("/") : ao_xstrndup(path, (size_t) (slash - path));
}

static int spawn(struct hook_run *run, const struct ao_hook_run_request *req, struct ao_error *reterr)
{
        _cleanup_close_ int stdout_fd = -1;
        if (req->mode == AO_HOOK_RUN_CONFIG) {
                int r = open_config_output(run, req->profile, &stdout_fd, reterr);
                if (r < 0)
                        return r;
        }
        struct env_builder env = {0};
        build_env(run, req, &env);
        _cleanup_free_ char *path = absolute_path(req->path);
        _cleanup_free_ char *cwd = directory_of(path);
        char *argv[] = {path, req->mode == AO_HOOK_RUN_CONFIG ? (char *) "--config" : NULL, NULL};
        struct ao_proc_spec spec = {
            .path = path,
            .argv = argv,
            .envp = env.env,
            .cwd = cwd,
            .stdout_fd = stdout_fd,
            .profile = req->profile,
            .timeout_usec = req->timeout_usec,
            .log_context = {.module = run->module,
                            .hook = run->hook_name,
                            .binding = run->binding,
                            .queue = run->queue},
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
        int r = workspace_new_run_dir(&runner->workspace, req->hook_name, req->profile, &run->dir, reterr);
        if (r >= 0)
                r = write_inputs(run, req, reterr);
        if (r >= 0)
                r = spawn(run, req, reterr);
        if (r < 0) {
                ao_error_prefix(reterr, "hook '%s'", req->hook_name);
                run_free(run);
        }
        return r;
}
