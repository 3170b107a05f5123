/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "Reload all modules" (lifecycle steps 3-8) as one task that keeps its
 * place in the main queue while the work it pushes before itself runs:
 *
 *   BEFORE_ALL  push the global beforeAll hook runs
 *   DISCOVER    enabled flags, enabled scripts, hooks of newly enabled
 *               modules; push the CRDs of newly enabled modules (with a
 *               cluster), module runs, deletes and purges
 *   AFTER_ALL   remember the global values, push the afterAll hook runs
 *   CHECK       values changed by afterAll: start over at BEFORE_ALL;
 *               else done
 *
 * A discovery failure (an enabled script or a module hook's --config)
 * fails the task, which the queue retries with back-off while the main
 * queue waits. The enabled scripts run one module after another (each sees
 * the modules enabled before it); the hooks of all newly enabled modules
 * then load at once, sharing one limit on --config runs in flight.
 */
#include <cjson/cJSON.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/hook-run.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/values-store.h"
#include "internal.h"

/* afterAll hooks that keep changing global values would loop forever: stop after this many rounds. */
#define MAX_AFTER_ALL_LOOPS  10
#define DISCOVERY_RETRY_USEC (5 * AO_USEC_PER_SEC)

struct discovery;

/* One module's hook load: what its done handler needs. */
struct module_load {
        struct discovery *d;
        size_t index;
};

/* One discovery in progress (the converge task waits for it). */
struct discovery {
        struct operator_state *op;
        struct ao_task *task;
        bool *enabled; /* per module, being decided */
        size_t next;   /* module whose state is being decided */
        char **so_far; /* enabled modules decided so far (the enabled script's enabledModules) */
        size_t n_so_far;

        /* Loading the hooks of enabled modules, all at once. */
        struct module_load *loads; /* one per module */
        struct ao_hooks_config_pool *pool;
        size_t loads_pending;
        char *load_error; /* the failure of the first module, in module order, whose hooks failed */
        size_t load_error_index;
};

static void discovery_free(struct discovery *d)
{
        for (size_t i = 0; i < d->n_so_far; i++)
                free(d->so_far[i]);
        free(d->so_far);
        free(d->enabled);
        free(d->loads);
        ao_hooks_config_pool_free(d->pool);
        free(d->load_error);
        free(d);
}

static void discovery_step(struct discovery *d);

static void discovery_fail(struct discovery *d, const char *msg)
{
        ao_log(AO_LOG_ERROR, "module discovery failed, retrying in 5 s: %s", msg);
        op_metrics_discover_error(d->op);
        struct ao_task *t = d->task;
        discovery_free(d);
        /* Documented: discovery restarts every 5 seconds (not with the growing back-off). */
        ao_task_set_retry_delay(t, DISCOVERY_RETRY_USEC);
        ao_task_finish(t, AO_TASK_FAIL);
}

static void note_enabled(struct discovery *d, size_t i)
{
        d->enabled[i] = true;
        d->so_far = ao_xreallocarray(d->so_far, d->n_so_far + 2, sizeof(char *));
        d->so_far[d->n_so_far++] = ao_xstrdup(d->op->modules.items[i].name);
        d->so_far[d->n_so_far] = NULL;
}

/*
 * Discovery goes on from callbacks: what it logs there carries its ConvergeModules task's context.
 * The task stays queued until the converge is done, so its strings outlive the installation.
 */
static struct ao_log_context discovery_log_context(const struct discovery *d)
{
        return tasks_log_context(d->task);
}

static void enabled_script_done(struct ao_hook_outcome *o, struct discovery *d)
{
        struct module *mod = &d->op->modules.items[d->next];
        if (!o->ok) {
                discovery_fail(d, o->error.msg);
                return;
        }
        if (o->enabled == 1)
                note_enabled(d, d->next);
        else
                ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}),
                            "module '%s' disabled by its enabled script%s%s", mod->name,
                            o->enabled_reason ? ": " : "", o->enabled_reason ? o->enabled_reason : "");
        d->next++;
        discovery_step(d);
}

static void on_enabled_script(struct ao_hook_outcome *o, void *userdata)
{
        struct ao_log_context ctx = discovery_log_context(userdata);
        const struct ao_log_context *prev = ao_log_context_swap(&ctx);
        enabled_script_done(o, userdata);
        ao_log_context_swap(prev);
}

static int run_enabled_script(struct discovery *d, struct module *mod, struct ao_error *reterr)
{
        struct operator_state *op = d->op;
        _cleanup_free_ char *profile_name = NULL;
        int r = ao_sandbox_select(mod->dir, mod->enabled_script, op->settings->sandbox_profile, &profile_name,
                                  reterr);
        if (r < 0)
                return r;
        const struct ao_sandbox_profile *profile = ao_sandbox_profiles_find(op->profiles, profile_name);
        if (!profile)
                return ao_error_set(reterr, -ENOENT, "module '%s': no sandbox profile named '%s'", mod->name,
                                    profile_name);
        const char *empty[] = {NULL};
        cJSON *values = NULL, *config = NULL;
        r = ao_values_store_hook_documents(op->values, mod->owner.values,
                                           d->so_far ? (const char *const *) d->so_far : empty, &values,
                                           &config, reterr);
        if (r < 0)
                return r;
        _cleanup_free_ char *name = ao_xasprintf("%s/enabled", mod->name);
        struct ao_log_context ctx = tasks_log_context(d->task);
        ctx.binding = "enabled";
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_ENABLED,
            .hook_name = name,
            .path = mod->enabled_script,
            .module = mod->name,
            .values_key = mod->values_key,
            .working_dir = mod->dir,
            .log_context = &ctx,
            .values = values,
            .config_values = config,
            .profile = profile,
            .timeout_usec = op->settings->hook_timeout_usec,
            .on_done = on_enabled_script,
            .userdata = d,
        };
        r = ao_hook_run_start(op->runner, &req, reterr);
        cJSON_Delete(values);
        cJSON_Delete(config);
        return r;
}

static void discovery_finish(struct discovery *d);

/* Keep the failure a one-module-at-a-time load would have reported: the first module's. */
static void note_load_failure(struct discovery *d, size_t index, const char *msg)
{
        if (d->load_error && d->load_error_index < index)
                return;
        free(d->load_error);
        d->load_error = ao_xstrdup(msg);
        d->load_error_index = index;
}

/* A module's load ended: the last one to end decides the discovery. */
static void load_ended(struct discovery *d)
{
        if (--d->loads_pending > 0)
                return;
        if (d->load_error) {
                _cleanup_free_ char *msg = d->load_error;
                d->load_error = NULL;
                discovery_fail(d, msg);
                return;
        }
        discovery_finish(d);
}

static void module_hooks_loaded(struct ao_hook *hooks, size_t n, const struct ao_error *error,
                                struct module_load *ml)
{
        struct discovery *d = ml->d;
        struct module *mod = &d->op->modules.items[ml->index];
        if (error) {
                /* Modules loaded meanwhile keep their hooks: the retry loads only the rest. */
                note_load_failure(d, ml->index, error->msg);
                load_ended(d);
                return;
        }
        hook_owner_set_hooks(&mod->owner, hooks, n);
        op_metrics_binding_count(d->op, mod, hooks, n);
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; !d->op->kube && j < hooks[i].config.n_kubernetes; j++)
                        ao_log_with(AO_LOG_WARN,
                                    AO_LOG_FIELDS({"module", mod->name}, {"hook", hooks[i].name}),
                                    "hook '%s': kubernetes binding '%s' needs a cluster, skipping it",
                                    hooks[i].name, hooks[i].config.kubernetes[j].name);
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}), "module '%s': %zu hooks loaded",
                    mod->name, n);
        load_ended(d);
}

static void on_module_hooks_loaded(struct ao_hook *hooks, size_t n, const struct ao_error *error,
                                   void *userdata)
{
        struct module_load *ml = userdata;
        struct ao_log_context ctx = discovery_log_context(ml->d);
        const struct ao_log_context *prev = ao_log_context_swap(&ctx);
        module_hooks_loaded(hooks, n, error, ml);
        ao_log_context_swap(prev);
}

static int load_module_hooks(struct discovery *d, size_t index, struct ao_error *reterr)
{
        struct operator_state *op = d->op;
        struct module *mod = &op->modules.items[index];
        struct ao_hooks_load_request req = {
            .root = mod->hooks_root,
            .kind = AO_HOOK_MODULE,
            .module = mod->name,
            .module_dir = mod->dir,
            .profiles = op->profiles,
            .default_profile = op->settings->sandbox_profile,
            .timeout_usec = op->settings->hook_timeout_usec,
            .pool = d->pool,
        };
        d->loads[index] = (struct module_load){.d = d, .index = index};
        return ao_hooks_load(op->runner, &req, on_module_hooks_loaded, &d->loads[index], reterr);
}

/*
 * Start the hook loads of every enabled module not loaded yet. The pool
 * serves them in module order. A load that cannot even start (its hooks
 * directory is unreadable) stops further starts; the discovery ends when
 * the last started load does.
 */
static void load_enabled_modules(struct discovery *d)
{
        struct modules *m = &d->op->modules;
        d->loads = ao_xcalloc(m->n + 1, sizeof(*d->loads));
        d->pool = ao_hooks_config_pool_new(ao_hooks_config_parallelism());
        d->loads_pending =
            1; /* this function's own: loads that end at once cannot end the discovery under it */
        for (size_t i = 0; i < m->n; i++) {
                if (!d->enabled[i] || m->items[i].owner.loaded)
                        continue;
                struct ao_error err = {0};
                d->loads_pending++;
                if (load_module_hooks(d, i, &err) < 0) {
                        note_load_failure(d, i, err.msg);
                        d->loads_pending--;
                        break;
                }
        }
        load_ended(d);
}

/* Decide one module at a time, then load the hooks of the enabled ones. */
static void discovery_step(struct discovery *d)
{
        struct modules *m = &d->op->modules;
        struct ao_error err = {0};
        while (d->next < m->n) {
                struct module *mod = &m->items[d->next];
                if (!ao_values_store_enabled(d->op->values, mod->owner.values)) {
                        d->next++;
                        continue;
                }
                if (!mod->enabled_script) {
                        note_enabled(d, d->next++);
                        continue;
                }
                if (access(mod->enabled_script, X_OK) < 0) {
                        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", mod->name}),
                                    "module '%s': enabled script '%s' is not executable, assuming enabled",
                                    mod->name, mod->enabled_script);
                        note_enabled(d, d->next++);
                        continue;
                }
                if (run_enabled_script(d, mod, &err) < 0) {
                        discovery_fail(d, err.msg);
                        return;
                }
                return; /* on_enabled_script continues */
        }
        load_enabled_modules(d);
}

static void set_enabled_modules(struct operator_state *op, char **names, size_t n)
{
        for (char **p = op->enabled_modules; p && *p; p++)
                free(*p);
        free(op->enabled_modules);
        op->enabled_modules = ao_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
                op->enabled_modules[i] = ao_xstrdup(names[i]);
}

static void discovery_done(struct discovery *d)
{
        struct ao_task *t = d->task;
        discovery_free(d);
        struct converge_task *ct = ao_task_payload(t);
        ct->phase = CONVERGE_AFTER_ALL;
        ao_task_finish(t, AO_TASK_KEEP);
}

/* Step 7: releases without a module directory are purged (after the runs and deletes). */
static void releases_listed(struct operator_state *op, char **releases, const struct ao_error *error,
                            struct discovery *d)
{
        const char *reason = ((struct converge_task *) ao_task_payload(d->task))->reason;
        if (!releases)
                ao_log(AO_LOG_ERROR, "cannot list releases to purge: %s",
                       error ? error->msg : "unknown error");
        for (char **r = releases; r && *r; r++) {
                if (!modules_find(&op->modules, *r))
                        tasks_push_module_purge(d->task, *r, reason);
                free(*r);
        }
        free(releases);
        discovery_done(d);
}

static void on_releases_listed(struct operator_state *op, char **releases, const struct ao_error *error,
                               void *userdata)
{
        struct ao_log_context ctx = discovery_log_context(userdata);
        const struct ao_log_context *prev = ao_log_context_swap(&ctx);
        releases_listed(op, releases, error, userdata);
        ao_log_context_swap(prev);
}

/* The runs of @n modules of one order: one group task when they may run at once. */
static void push_order_group(struct operator_state *op, struct ao_task *t, struct module **mods, size_t n,
                             const char *reason)
{
        if (n >= 2 && module_job_parallelism(op) > 1) {
                tasks_push_module_group(t, mods, n, reason);
                return;
        }
        for (size_t i = 0; i < n; i++)
                tasks_push_module_run(t, mods[i], reason);
}

/* Step 5: the enabled modules' runs, order by order; modules of one order may run at once. */
static void push_module_runs(struct discovery *d, struct ao_task *t, const char *reason)
{
        struct modules *m = &d->op->modules;
        struct module **group = ao_xcalloc(m->n + 1, sizeof(*group));
        size_t n = 0;
        for (size_t i = 0; i < m->n; i++) {
                if (!d->enabled[i])
                        continue;
                if (n > 0 && group[0]->order != m->items[i].order) {
                        push_order_group(d->op, t, group, n, reason);
                        n = 0;
                }
                group[n++] = &m->items[i];
        }
        push_order_group(d->op, t, group, n, reason);
        free(group);
}

/*
 * Before any module run, as the Go operator's ModuleEnsureCRDs tasks: the crds/ of every enabled
 * module whose CRDs did not go to the cluster since it was enabled.
 */
static void push_module_crds(struct discovery *d, struct ao_task *t, const char *reason)
{
        struct modules *m = &d->op->modules;
        for (size_t i = 0; d->op->kube && i < m->n; i++)
                if (d->enabled[i] && !m->items[i].crds_applied && modules_has_crds(&m->items[i]))
                        tasks_push_module_ensure_crds(t, &m->items[i], reason);
}

/* Steps 5-7 in the documented order: run the enabled, delete the newly disabled, purge the orphaned. */
static void discovery_finish(struct discovery *d)
{
        struct operator_state *op = d->op;
        struct modules *m = &op->modules;
        struct ao_task *t = d->task;
        const char *reason = ((struct converge_task *) ao_task_payload(t))->reason;
        set_enabled_modules(op, d->so_far, d->n_so_far);
        ao_log(AO_LOG_INFO, "modules discovered: %zu of %zu enabled", d->n_so_far, m->n);
        push_module_crds(d, t, reason);
        push_module_runs(d, t, reason);
        for (size_t i = m->n; i-- > 0;)
                if (!d->enabled[i] && m->items[i].enabled)
                        tasks_push_module_delete(t, &m->items[i], reason);
        for (size_t i = 0; i < m->n; i++)
                m->items[i].enabled = d->enabled[i];
        op_metrics_modules_state(op);
        struct ao_error err = {0};
        if (op->releases->list(op, on_releases_listed, d, &err) < 0) {
                ao_log(AO_LOG_ERROR, "cannot list releases to purge: %s", err.msg);
                discovery_done(d);
        }
}

static void discover(struct operator_state *op, struct ao_task *t)
{
        struct discovery *d = ao_xcalloc(1, sizeof(*d));
        *d = (struct discovery){.op = op, .task = t, .enabled = ao_xcalloc(op->modules.n + 1, sizeof(bool))};
        discovery_step(d);
}

static void converge_done(struct operator_state *op, struct ao_task *t, struct converge_task *ct)
{
        uint64_t took = ao_reactor_now(op->reactor) - op->converge_started_usec;
        op->converges++;
        op->converge_running = false;
        if (!op->first_converge_done)
                ao_log(AO_LOG_INFO, "first converge done in %llu ms (%s)", (unsigned long long) (took / 1000),
                       ct->reason);
        else
                ao_log(AO_LOG_INFO, "converge done in %llu ms (%s)", (unsigned long long) (took / 1000),
                       ct->reason);
        op->first_converge_done = true;
        op_metrics_converge_done(op, ct->reason, took);
        readiness_update(op);
        ao_task_finish(t, AO_TASK_SUCCESS);
}

void converge_handle(struct operator_state *op, struct ao_task *t)
{
        struct converge_task *ct = ao_task_payload(t);
        switch (ct->phase) {
        case CONVERGE_BEFORE_ALL:
                if (!op->converge_running) {
                        op->converge_running = true;
                        op->converge_started_usec = ao_reactor_now(op->reactor);
                        ao_log(AO_LOG_INFO, "converge started (%s)", ct->reason);
                }
                tasks_push_ordered_hook_runs(op, t, &op->global, AO_BINDING_BEFORE_ALL, ct->reason);
                ct->phase = CONVERGE_DISCOVER;
                ao_task_finish(t, AO_TASK_KEEP);
                return;
        case CONVERGE_DISCOVER:
                discover(op, t);
                return;
        case CONVERGE_AFTER_ALL:
                free(ct->global_checksum);
                ct->global_checksum = ao_values_store_checksum(op->values, op->global.values);
                tasks_push_ordered_hook_runs(op, t, &op->global, AO_BINDING_AFTER_ALL, ct->reason);
                ct->phase = CONVERGE_CHECK;
                ao_task_finish(t, AO_TASK_KEEP);
                return;
        case CONVERGE_CHECK: {
                _cleanup_free_ char *now = ao_values_store_checksum(op->values, op->global.values);
                if (strcmp(now, ct->global_checksum) == 0) {
                        converge_done(op, t, ct);
                        return;
                }
                if (++ct->loops > MAX_AFTER_ALL_LOOPS) {
                        ao_log(
                            AO_LOG_ERROR,
                            "afterAll hooks changed the global values %d times in a row; not reloading again",
                            MAX_AFTER_ALL_LOOPS);
                        converge_done(op, t, ct);
                        return;
                }
                ao_log(AO_LOG_INFO, "afterAll hooks changed the global values: reloading all modules again");
                ct->phase = CONVERGE_BEFORE_ALL;
                ao_task_finish(t, AO_TASK_KEEP);
                return;
        }
        }
}
