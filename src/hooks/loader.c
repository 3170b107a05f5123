/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading hooks: discovery, then `<hook> --config` for each, parsed into its
 * binding configuration. The --config runs are independent, so up to
 * req.max_parallel of them run at once, or as many as a pool shared with
 * other loads allows; the hooks keep discovery order, and a failure is
 * reported as a one-at-a-time load would report it.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/hook-run.h"
#include "ao/hooks.h"
#include "ao/log.h"
#include "ao/sandbox.h"
#include "config-pool.h"

struct load;

/* What one --config run's done callback needs to find its hook. */
struct config_run {
        struct load *load;
        size_t index;
};

struct load {
        struct ao_hook_runner *runner;
        struct ao_hooks_load_request req; /* strings below are owned copies */
        char *root, *module, *module_dir, *default_profile;
        char *python_venv; /* the module's hooks/venv, looked for once per load; NULL: none */
        struct ao_hook_paths paths;
        struct ao_hook *hooks; /* one per path, owned until handed over; unstarted ones are zeroed */
        struct config_run *runs;
        size_t next_start;     /* index of the next hook whose --config starts */
        size_t running;        /* --config runs in flight */
        struct ao_error error; /* the failure of the first hook in discovery order that failed */
        size_t error_index;
        bool failed;                      /* once set, nothing new starts */
        struct config_pool_waiter waiter; /* in the pool's line (req.pool) */
        ao_hooks_loaded_handler *on_loaded;
        void *userdata;
};

static void load_free(struct load *l)
{
        if (l->req.pool)
                hooks_config_pool_forget(l->req.pool, &l->waiter);
        ao_hook_paths_done(&l->paths);
        ao_hooks_free(l->hooks, l->hooks ? l->paths.n : 0);
        free(l->runs);
        free(l->root);
        free(l->module);
        free(l->module_dir);
        free(l->default_profile);
        free(l->python_venv);
        free(l);
}

static void finish(struct load *l)
{
        if (l->failed) {
                l->on_loaded(NULL, 0, &l->error, l->userdata);
        } else {
                struct ao_hook *hooks = l->hooks;
                l->hooks = NULL;
                l->on_loaded(hooks, l->paths.n, NULL, l->userdata);
        }
        load_free(l);
}

/*
 * Report what a one-at-a-time load would: the failure of the first hook in discovery order. Every
 * hook before a failed one has been started (they start in order), and all runs in flight are
 * waited for, so the lowest failing index is known by the time the load finishes.
 */
static void fail(struct load *l, size_t index, const struct ao_error *err)
{
        if (l->failed && l->error_index < index)
                return;
        l->failed = true;
        l->error = *err;
        l->error_index = index;
}

static int select_profile(const struct load *l, const struct ao_hook_path *p,
                          const struct ao_sandbox_profile **ret, struct ao_error *reterr)
{
        _cleanup_free_ char *name = NULL;
        int r = ao_sandbox_select(l->module_dir, p->path, l->default_profile, &name, reterr);
        if (r < 0)
                return ao_error_prefix(reterr, "hook '%s'", p->name);
        const struct ao_sandbox_profile *profile = ao_sandbox_profiles_find(l->req.profiles, name);
        if (!profile)
                return ao_error_set(reterr, -ENOENT, "hook '%s': no sandbox profile named '%s'", p->name,
                                    name);
        *ret = profile;
        return 0;
}

static void start_more(struct load *l, bool slot_in_hand);

static void parse_config(struct load *l, size_t index, const struct ao_hook_outcome *o)
{
        struct ao_hook *hook = &l->hooks[index];
        struct ao_error err = {0};
        if (!o->ok) {
                ao_error_set(&err, o->error.code, "cannot get the configuration of hook '%s': %s", hook->name,
                             o->error.msg);
                fail(l, index, &err);
                return;
        }
        if (ao_hook_config_parse(o->config_text, o->config_len, hook->name, hook->kind, &hook->config, &err) <
            0) {
                ao_error_prefix(&err, "invalid configuration");
                fail(l, index, &err);
                return;
        }
        for (size_t i = 0; i < hook->config.ignored.n; i++)
                ao_log_with(
                    AO_LOG_WARN, AO_LOG_FIELDS({"hook", hook->name}),
                    "hook '%s': %s bindings are accepted but addon-operator does not serve them, ignoring",
                    hook->name, hook->config.ignored.items[i]);
}

static void on_config(struct ao_hook_outcome *o, void *userdata)
{
        struct config_run *run = userdata;
        struct load *l = run->load;
        l->running--;
        /* A failure of an earlier hook decides the load; later results are only waited for. */
        if (!l->failed || run->index < l->error_index)
                parse_config(l, run->index, o);
        start_more(l, true); /* the finished run's slot */
}

static int start_one(struct load *l, size_t index, struct ao_error *reterr)
{
        const struct ao_hook_path *p = &l->paths.items[index];
        struct ao_hook *hook = &l->hooks[index];
        *hook = (struct ao_hook){
            .name = ao_xstrdup(p->name),
            .path = ao_xstrdup(p->path),
            .module = l->module ? ao_xstrdup(l->module) : NULL,
            .working_dir = ao_xstrdup(l->root),
            .kind = l->req.kind,
        };
        int r = select_profile(l, p, &hook->profile, reterr);
        if (r < 0)
                return r;
        if (l->req.kind == AO_HOOK_MODULE && ao_hook_is_python(p->path)) {
                if (l->python_venv)
                        hook->python_venv = ao_xstrdup(l->python_venv);
                else
                        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", l->module}, {"hook", p->name}),
                                    "module '%s': hook '%s' is a Python hook but the module has no "
                                    "%s/bin/python3: it runs through its own #! line",
                                    l->module, p->name, AO_HOOKS_PYTHON_VENV);
        }
        l->runs[index] = (struct config_run){.load = l, .index = index};
        struct ao_hook_run_request run = {
            .mode = AO_HOOK_RUN_CONFIG,
            .hook_name = hook->name,
            .path = hook->path,
            .python_venv = hook->python_venv,
            .module = hook->module,
            .working_dir = hook->working_dir,
            .log_context = &(const struct ao_log_context){.binding = "--config"},
            .profile = hook->profile,
            .timeout_usec = l->req.timeout_usec ? l->req.timeout_usec : AO_HOOKS_CONFIG_TIMEOUT_USEC,
            .on_done = on_config,
            .userdata = &l->runs[index],
        };
        return ao_hook_run_start(l->runner, &run, reterr);
}

static bool take_slot(struct load *l)
{
        if (l->req.pool)
                return hooks_config_pool_take(l->req.pool, &l->waiter);
        return l->running < (l->req.max_parallel ? l->req.max_parallel : 1);
}

static void give_slot(struct load *l)
{
        if (l->req.pool)
                hooks_config_pool_give(l->req.pool);
}

/*
 * Start --config runs while slots are to be had: first the one in hand (a
 * finished run's, or one the pool handed over), so a load keeps its slots
 * until it has started all its hooks. Finish once nothing runs and nothing
 * more will start.
 */
static void start_more(struct load *l, bool slot_in_hand)
{
        while (!l->failed && l->next_start < l->paths.n && (slot_in_hand || take_slot(l))) {
                slot_in_hand = false;
                struct ao_error err = {0};
                size_t index = l->next_start++;
                if (start_one(l, index, &err) < 0) {
                        fail(l, index, &err);
                        slot_in_hand = true;
                } else {
                        l->running++;
                }
        }
        if (slot_in_hand)
                give_slot(l);
        if (l->running == 0 && (l->failed || l->next_start == l->paths.n))
                finish(l);
}

static void on_slot(struct config_pool_waiter *w)
{
        struct load *l = (struct load *) (void *) ((char *) w - offsetof(struct load, waiter));
        start_more(l, true);
}

int ao_hooks_load(struct ao_hook_runner *runner, const struct ao_hooks_load_request *req,
                  ao_hooks_loaded_handler *on_loaded, void *userdata, struct ao_error *reterr)
{
        struct load *l = ao_xcalloc(1, sizeof(*l));
        *l = (struct load){
            .runner = runner,
            .req = *req,
            .root = ao_xstrdup(req->root),
            .module = req->module ? ao_xstrdup(req->module) : NULL,
            .module_dir = req->module_dir ? ao_xstrdup(req->module_dir) : NULL,
            .default_profile = ao_xstrdup(req->default_profile ? req->default_profile : "default"),
            .waiter = {.wake = on_slot},
            .on_loaded = on_loaded,
            .userdata = userdata,
        };
        int r = ao_hooks_discover(l->root, req->kind, &l->paths, reterr);
        if (r < 0) {
                load_free(l);
                return r;
        }
        if (req->kind == AO_HOOK_MODULE && req->module_dir)
                l->python_venv = ao_hooks_python_venv(req->module_dir);
        l->hooks = ao_xcalloc(l->paths.n ? l->paths.n : 1, sizeof(*l->hooks));
        l->runs = ao_xcalloc(l->paths.n ? l->paths.n : 1, sizeof(*l->runs));
        start_more(l, false);
        return 0;
}

size_t ao_hooks_config_parallelism(void)
{
        /* --config runs mostly wait for the kernel and the shell: a few per core keep the machine busy. */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        return cores < 1 ? 2 : cores > 8 ? 16 : (size_t) cores * 2;
}

void ao_hook_done(struct ao_hook *hook)
{
        free(hook->name);
        free(hook->path);
        free(hook->module);
        free(hook->working_dir);
        free(hook->python_venv);
        ao_hook_config_done(&hook->config);
        *hook = (struct ao_hook){0};
}

void ao_hooks_free(struct ao_hook *hooks, size_t n)
{
        for (size_t i = 0; hooks && i < n; i++)
                ao_hook_done(&hooks[i]);
        free(hooks);
}
