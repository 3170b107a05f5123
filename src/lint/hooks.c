/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every hook answers --config exactly as it would for the operator: found
 * by the same discovery, started by the same launcher in its sandbox
 * profile, its output parsed by the same parser. Several run at once, so a
 * tree of a few hundred hooks is checked in about the time of its slowest
 * few.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/hook-config.h"
#include "ao/hook-run.h"
#include "ao/hooks.h"
#include "ao/proc.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/settings.h"
#include "internal.h"

struct hooks_lint;

/* One hook to ask. */
struct job {
        struct hooks_lint *owner;
        char *name;             /* owned: "hooks/pods.sh" */
        char *path;             /* owned: the executable, where problems are reported */
        char *root;             /* owned: WORKING_DIR */
        char *python_venv;      /* owned: a Python module hook's hooks/venv; NULL: it runs itself */
        const char *module;     /* borrowed from the tree; NULL for global hooks */
        const char *module_dir; /* likewise */
        enum ao_hook_kind kind;
};

struct hooks_lint {
        const struct ao_settings *settings;
        struct lint_report *report;
        struct job *jobs;
        size_t n_jobs, next, running, finished;
        size_t max_running;
        struct ao_reactor *reactor;
        struct ao_proc *proc;
        struct ao_hook_runner *runner;
        struct ao_sandbox_profiles *profiles;
        struct ao_source *interrupt[2];
};

static void add_jobs(struct hooks_lint *h, const char *root, enum ao_hook_kind kind,
                     const struct lint_module *m)
{
        struct ao_hook_paths paths;
        struct ao_error err = {0};
        if (ao_hooks_discover(root, kind, &paths, &err) < 0) {
                lint_error(h->report, root, "%s", err.msg);
                return;
        }
        for (size_t i = 0; i < paths.n_skipped; i++)
                lint_warning(h->report, paths.skipped[i].path, "not a hook: %s", paths.skipped[i].reason);
        h->jobs = ao_xreallocarray(h->jobs, h->n_jobs + paths.n, sizeof(*h->jobs));
        _cleanup_free_ char *venv = kind == AO_HOOK_MODULE && m ? ao_hooks_python_venv(m->dir) : NULL;
        for (size_t i = 0; i < paths.n; i++) {
                bool python = venv && ao_hook_is_python(paths.items[i].path);
                h->jobs[h->n_jobs++] = (struct job){
                    .owner = h,
                    .name = TAKE_PTR(paths.items[i].name),
                    .path = TAKE_PTR(paths.items[i].path),
                    .root = ao_xstrdup(root),
                    .python_venv = python ? ao_xstrdup(venv) : NULL,
                    .module = m ? m->name : NULL,
                    .module_dir = m ? m->dir : NULL,
                    .kind = kind,
                };
        }
        ao_hook_paths_done(&paths);
}

static void collect_jobs(struct hooks_lint *h, const struct lint_tree *t)
{
        _cleanup_free_ char *global_root = ao_hooks_global_root(h->settings->global_hooks_dir);
        add_jobs(h, global_root, AO_HOOK_GLOBAL, NULL);
        for (size_t i = 0; i < t->n_modules; i++) {
                _cleanup_free_ char *root = ao_xasprintf("%s/hooks", t->modules[i].dir);
                add_jobs(h, root, AO_HOOK_MODULE, &t->modules[i]);
        }
}

/* Messages from the runner and the parser name the hook; the report already gives its path. */
static const char *without_hook_name(const char *message, const char *name)
{
        _cleanup_free_ char *quoted = ao_xasprintf("hook '%s' ", name);
        _cleanup_free_ char *plain = ao_xasprintf("%s: ", name);
        if (strncmp(message, quoted, strlen(quoted)) == 0)
                return message + strlen(quoted);
        if (strncmp(message, plain, strlen(plain)) == 0)
                return message + strlen(plain);
        return message;
}

static void check_config(struct hooks_lint *h, const struct job *j, const char *text, size_t len)
{
        struct ao_hook_config cfg;
        struct ao_error err = {0};
        if (ao_hook_config_parse(text, len, j->name, j->kind, &cfg, &err) < 0) {
                lint_error(h->report, j->path, "invalid --config output: %s",
                           without_hook_name(err.msg, j->name));
                return;
        }
        for (size_t i = 0; i < cfg.ignored.n; i++)
                lint_warning(h->report, j->path, "%s bindings are accepted but not served, ignored",
                             cfg.ignored.items[i]);
        ao_hook_config_done(&cfg);
}

static void start_jobs(struct hooks_lint *h);

static void on_config(struct ao_hook_outcome *o, void *userdata)
{
        struct job *j = userdata;
        struct hooks_lint *h = j->owner;
        if (!o->ok)
                lint_error(h->report, j->path, "--config %s", without_hook_name(o->error.msg, j->name));
        else
                check_config(h, j, o->config_text, o->config_len);
        h->running--;
        h->finished++;
        start_jobs(h);
}

/* What a hook's own sandbox.yaml (or its module's) selects, else the default profile. */
static const struct ao_sandbox_profile *select_profile(struct hooks_lint *h, const struct job *j)
{
        _cleanup_free_ char *name = NULL;
        struct ao_error err = {0};
        if (ao_sandbox_select(j->module_dir, j->path, h->settings->sandbox_profile, &name, &err) < 0) {
                lint_error_message(h->report, j->path, err.msg);
                return NULL;
        }
        const struct ao_sandbox_profile *p = ao_sandbox_profiles_find(h->profiles, name);
        if (!p)
                lint_error(h->report, j->path, "no sandbox profile named '%s'", name);
        return p;
}

/* Start @j; a hook that cannot even start is finished here and then. */
static void start_job(struct hooks_lint *h, struct job *j)
{
        const struct ao_sandbox_profile *profile = select_profile(h, j);
        if (!profile) {
                h->finished++;
                return;
        }
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_CONFIG,
            .hook_name = j->name,
            .path = j->path,
            .python_venv = j->python_venv,
            .module = j->module,
            .working_dir = j->root,
            .log_context = &(const struct ao_log_context){.binding = "--config"},
            .profile = profile,
            .timeout_usec = AO_HOOKS_CONFIG_TIMEOUT_USEC,
            .on_done = on_config,
            .userdata = j,
        };
        struct ao_error err = {0};
        if (ao_hook_run_start(h->runner, &req, &err) < 0) {
                lint_error(h->report, j->path, "--config cannot start: %s", err.msg);
                h->finished++;
                return;
        }
        h->running++;
}

/* Fill the free slots; the loop ends with the last hook. */
static void start_jobs(struct hooks_lint *h)
{
        while (h->next < h->n_jobs && h->running < h->max_running)
                start_job(h, &h->jobs[h->next++]);
        if (h->finished == h->n_jobs)
                ao_reactor_exit(h->reactor, 0);
}

static int on_interrupt(struct ao_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct hooks_lint *h = userdata;
        lint_error(h->report, h->settings->global_hooks_dir, "interrupted: %zu of %zu hooks not checked",
                   h->n_jobs - h->finished, h->n_jobs);
        ao_reactor_exit(h->reactor, -EINTR);
        return 0;
}

static int setup(struct hooks_lint *h)
{
        const struct ao_settings *s = h->settings;
        struct ao_error err = {0};
        const char *what = "event loop";
        int k = ao_reactor_new(AO_REACTOR_BACKEND_AUTO, &h->reactor, &err);
        if (k >= 0) {
                what = "sandbox profiles";
                k = ao_sandbox_profiles_load(s->sandbox_profiles_dir, &h->profiles, &err);
        }
        if (k >= 0) {
                what = "hook launcher";
                struct ao_proc_options options = {.spawner_path =
                                                      s->spawner_path[0] ? s->spawner_path : NULL};
                k = ao_proc_new(h->reactor, &options, &h->proc, &err);
        }
        if (k >= 0) {
                what = "hook runs";
                struct ao_hook_runner_options options = {.tmp_dir = s->tmp_dir};
                k = ao_hook_runner_new(h->proc, &options, &h->runner, &err);
        }
        if (k >= 0) {
                what = "signals";
                k = ao_reactor_add_signal(h->reactor, &h->interrupt[0], SIGINT, on_interrupt, h);
                if (k >= 0)
                        k = ao_reactor_add_signal(h->reactor, &h->interrupt[1], SIGTERM, on_interrupt, h);
        }
        if (k < 0)
                lint_error(h->report, s->global_hooks_dir, "cannot run hooks (%s): %s", what,
                           err.msg[0] ? err.msg : strerror(-k));
        return k;
}

static void teardown(struct hooks_lint *h)
{
        for (size_t i = 0; i < h->n_jobs; i++) {
                free(h->jobs[i].name);
                free(h->jobs[i].path);
                free(h->jobs[i].root);
                free(h->jobs[i].python_venv);
        }
        free(h->jobs);
        for (size_t i = 0; i < AO_ARRAY_SIZE(h->interrupt); i++)
                h->interrupt[i] = ao_source_free(h->interrupt[i]);
        h->runner = ao_hook_runner_free(h->runner);
        h->proc = ao_proc_free(h->proc);
        h->profiles = ao_sandbox_profiles_free(h->profiles);
        h->reactor = ao_reactor_free(h->reactor);
}

int lint_hooks(const struct ao_settings *s, const struct lint_tree *t, struct lint_report *r)
{
        struct hooks_lint h = {.settings = s, .report = r, .max_running = ao_hooks_config_parallelism()};
        collect_jobs(&h, t);
        int k = 0;
        if (h.n_jobs > 0 && (k = setup(&h)) >= 0) {
                start_jobs(&h);
                if (h.finished < h.n_jobs)
                        k = ao_reactor_run(h.reactor);
        }
        size_t n = h.n_jobs;
        teardown(&h);
        return k < 0 ? k : (int) n;
}
