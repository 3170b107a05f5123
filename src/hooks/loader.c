/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading hooks: discovery, then `<hook> --config` for each in turn, parsed
 * into its binding configuration.
 */
#include <string.h>

#include "ao/alloc.h"
#include "ao/hook-run.h"
#include "ao/hooks.h"
#include "ao/log.h"
#include "ao/sandbox.h"

struct load {
        struct ao_hook_runner *runner;
        struct ao_hooks_load_request req; /* strings below are owned copies */
        char *root, *module, *module_dir, *default_profile;
        struct ao_hook_paths paths;
        struct ao_hook *hooks; /* owned until handed over */
        size_t next;           /* index of the hook whose --config runs now */
        ao_hooks_loaded_handler *on_loaded;
        void *userdata;
};

static void load_free(struct load *l)
{
        ao_hook_paths_done(&l->paths);
        ao_hooks_free(l->hooks, l->next);
        free(l->root);
        free(l->module);
        free(l->module_dir);
        free(l->default_profile);
        free(l);
}

static void finish(struct load *l, const struct ao_error *error)
{
        if (error) {
                l->on_loaded(NULL, 0, error, l->userdata);
        } else {
                struct ao_hook *hooks = l->hooks;
                size_t n = l->next;
                l->hooks = NULL;
                l->next = 0;
                l->on_loaded(hooks, n, NULL, l->userdata);
        }
        load_free(l);
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

static void start_next(struct load *l);

static void on_config(const struct ao_hook_outcome *o, void *userdata)
{
        struct load *l = userdata;
        /* Counted as loaded from here on, so that load_free() releases it whatever happens. */
        struct ao_hook *hook = &l->hooks[l->next++];
        struct ao_error err = {0};
        if (!o->ok) {
                ao_error_set(&err, o->error.code, "cannot get the configuration of hook '%s': %s", hook->name,
                             o->error.msg);
                finish(l, &err);
                return;
        }
        if (ao_hook_config_parse(o->config_text, o->config_len, hook->name, hook->kind, &hook->config, &err) <
            0) {
                ao_error_prefix(&err, "invalid configuration");
                finish(l, &err);
                return;
        }
        for (size_t i = 0; i < hook->config.ignored.n; i++)
                ao_log_with(
                    AO_LOG_WARN, AO_LOG_FIELDS({"hook", hook->name}),
                    "hook '%s': %s bindings are accepted but addon-operator does not serve them, ignoring",
                    hook->name, hook->config.ignored.items[i]);
        start_next(l);
}

static void start_next(struct load *l)
{
        if (l->next == l->paths.n) {
                finish(l, NULL);
                return;
        }
        const struct ao_hook_path *p = &l->paths.items[l->next];
        struct ao_hook *hook = &l->hooks[l->next];
        *hook = (struct ao_hook){
            .name = ao_xstrdup(p->name),
            .path = ao_xstrdup(p->path),
            .module = l->module ? ao_xstrdup(l->module) : NULL,
            .working_dir = ao_xstrdup(l->root),
            .kind = l->req.kind,
        };
        struct ao_error err = {0};
        int r = select_profile(l, p, &hook->profile, &err);
        if (r >= 0) {
                struct ao_hook_run_request run = {
                    .mode = AO_HOOK_RUN_CONFIG,
                    .hook_name = hook->name,
                    .path = hook->path,
                    .module = hook->module,
                    .working_dir = hook->working_dir,
                    .binding = "--config",
                    .profile = hook->profile,
                    .timeout_usec = l->req.timeout_usec ? l->req.timeout_usec : AO_HOOKS_CONFIG_TIMEOUT_USEC,
                    .on_done = on_config,
                    .userdata = l,
                };
                r = ao_hook_run_start(l->runner, &run, &err);
        }
        if (r < 0) {
                /* The half-made hook counts as loaded so that load_free() releases it. */
                l->next++;
                finish(l, &err);
        }
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
            .on_loaded = on_loaded,
            .userdata = userdata,
        };
        int r = ao_hooks_discover(l->root, req->kind, &l->paths, reterr);
        if (r < 0) {
                load_free(l);
                return r;
        }
        l->hooks = ao_xcalloc(l->paths.n, sizeof(*l->hooks));
        start_next(l);
        return 0;
}

void ao_hook_done(struct ao_hook *hook)
{
        free(hook->name);
        free(hook->path);
        free(hook->module);
        free(hook->working_dir);
        ao_hook_config_done(&hook->config);
        *hook = (struct ao_hook){0};
}

void ao_hooks_free(struct ao_hook *hooks, size_t n)
{
        for (size_t i = 0; hooks && i < n; i++)
                ao_hook_done(&hooks[i]);
        free(hooks);
}
