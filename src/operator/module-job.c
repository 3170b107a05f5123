/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One module run or delete as a step machine (lifecycle steps 5, 6, 14, 15), for whichever task
 * runs it (module-run.c: one module; module-group.c: several of one order at once); it reports
 * to its caller through a callback.
 *
 * A module run runs its steps in turn: onStartup hooks
 * (until a run of the module has succeeded since it was enabled: a failed
 * first run starts over from onStartup, as documented), then with a cluster
 * the kubernetes bindings' Synchronization runs (hooks in name order, each
 * binding in turn; bindings that do not wait for synchronization get a task
 * in their queue instead), beforeHelm hooks,
 * the values check for helm (x-required-for-helm), the release, afterHelm
 * hooks. Any failure ends the job as failed (its task retries it). afterHelm
 * hooks that change the module's values request another run right after the job's task.
 */
#include <cjson/cJSON.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/schema.h"
#include "ao/values-store.h"
#include "internal.h"

enum step {
        STEP_ON_STARTUP,
        STEP_KUBE_SYNC,
        STEP_BEFORE_HELM,
        STEP_HELM,
        STEP_AFTER_HELM,
        STEP_DONE,
        /* module delete */
        STEP_BEFORE_DELETE_HELM,
        STEP_DELETE_HELM,
        STEP_AFTER_DELETE_HELM,
        STEP_DELETED,
};

/* One binding's Synchronization run inside a module run. */
struct sync_run {
        size_t hook_index;
        size_t binding;
};

/* A run in progress: the hooks of the current step, in (order, name) order, and where we are. */
struct module_job {
        struct operator_state *op;
        struct ao_task *task; /* the task the job runs for: a follow-up run goes right after it */
        char *activation;     /* owned: why it runs, a metric label */
        bool deleting;        /* a ModuleDelete, not a run */
        module_job_done *done;
        void *userdata;
        struct module *mod;
        enum step step;
        uint64_t started_usec;
        struct ao_hook **hooks;
        size_t n_hooks, next;
        struct sync_run *syncs; /* STEP_KUBE_SYNC: the in-line Synchronization runs */
        size_t n_syncs, next_sync;
        char *checksum_before_after_helm;
        uint64_t helm_started_usec;
        bool has_release; /* ModuleDelete: there is a release to delete */
};

static enum ao_binding_type binding_of(enum step s)
{
        switch (s) {
        case STEP_ON_STARTUP:
                return AO_BINDING_ON_STARTUP;
        case STEP_BEFORE_HELM:
                return AO_BINDING_BEFORE_HELM;
        case STEP_AFTER_HELM:
                return AO_BINDING_AFTER_HELM;
        case STEP_BEFORE_DELETE_HELM:
                return AO_BINDING_BEFORE_DELETE_HELM;
        case STEP_AFTER_DELETE_HELM:
                return AO_BINDING_AFTER_DELETE_HELM;
        default:
                return _AO_BINDING_TYPE_INVALID;
        }
}

static struct module_job *job_new(struct operator_state *op, const struct module_job_spec *spec,
                                  enum step first)
{
        struct module_job *j = ao_xcalloc(1, sizeof(*j));
        *j = (struct module_job){.op = op,
                                 .task = spec->task,
                                 .activation = ao_xstrdup(spec->activation),
                                 .deleting = first == STEP_BEFORE_DELETE_HELM,
                                 .done = spec->done,
                                 .userdata = spec->userdata,
                                 .mod = spec->mod,
                                 .step = first,
                                 .started_usec = ao_clock_now_usec()};
        spec->mod->busy++;
        return j;
}

static void job_free(struct module_job *j)
{
        if (--j->mod->busy == 0)
                release_monitor_module_idle(j->op, j->mod);
        free(j->hooks);
        free(j->syncs);
        free(j->checksum_before_after_helm);
        free(j->activation);
        free(j);
}

static void job_finish(struct module_job *j, bool ok)
{
        if (!j->deleting)
                op_metrics_module_run(j->op, j->mod, j->activation, ao_clock_now_usec() - j->started_usec,
                                      ok);
        else if (!ok)
                op_metrics_module_delete_failed(j->op, j->mod);
        struct operator_state *op = j->op;
        struct module *mod = j->mod;
        module_job_done *done = j->done;
        void *userdata = j->userdata;
        job_free(j);
        done(op, mod, ok, userdata);
}

/* What the job's own records carry: its task's queue and type, the module, why it runs. */
static struct ao_log_context job_log_context(const struct module_job *j)
{
        struct ao_log_context ctx = tasks_log_context(j->task);
        ctx.module = j->mod->name;
        ctx.event_type = j->activation[0] ? j->activation : NULL;
        return ctx;
}

/* A step failed: the job fails (and its task is retried). */
static void job_failed(struct module_job *j, const char *message)
{
        struct ao_log_context ctx = job_log_context(j);
        const struct ao_log_context *prev = ao_log_context_swap(&ctx);
        ao_log(AO_LOG_ERROR, "module '%s': %s", j->mod->name, message);
        ao_log_context_swap(prev);
        job_finish(j, false);
}

static int compare_by_order(const void *a, const void *b, void *userdata)
{
        enum ao_binding_type type = *(const enum ao_binding_type *) userdata;
        const struct ao_hook *x = *(struct ao_hook *const *) a, *y = *(struct ao_hook *const *) b;
        if (x->config.order[type] != y->config.order[type])
                return x->config.order[type] < y->config.order[type] ? -1 : 1;
        return strcmp(x->name, y->name);
}

static void select_hooks(struct module_job *j, enum ao_binding_type type)
{
        free(j->hooks);
        const struct hook_owner *owner = &j->mod->owner;
        j->hooks = ao_xcalloc(owner->n_hooks + 1, sizeof(*j->hooks));
        j->n_hooks = 0;
        j->next = 0;
        for (size_t i = 0; i < owner->n_hooks; i++)
                if (owner->hooks[i].config.has_order[type])
                        j->hooks[j->n_hooks++] = &owner->hooks[i];
        qsort_r(j->hooks, j->n_hooks, sizeof(*j->hooks), compare_by_order, &type);
}

static void job_step(struct module_job *j);
static void enter_step(struct module_job *j, enum step s);

static void on_step_hook_done(struct operator_state *op, bool ok, const struct hook_call_effects *effects,
                              void *userdata)
{
        (void) op, (void) effects;
        struct module_job *j = userdata;
        if (!ok) {
                job_finish(j, false);
                return;
        }
        j->next++;
        job_step(j);
}

/* The queue of the job's task: "main", or the module's own while its runs are isolated. */
static const char *job_queue(const struct module_job *j)
{
        return ao_queue_name(ao_task_queue(j->task));
}

/* Run the next hook of the current step; true when one was started (its callback continues). */
static bool run_next_hook(struct module_job *j)
{
        if (j->next >= j->n_hooks)
                return false;
        struct ao_hook *hook = j->hooks[j->next];
        enum ao_binding_type type = binding_of(j->step);
        cJSON *contexts = cJSON_CreateArray();
        struct ao_snapshot_source src = bindings_run_snapshot_source(j->op, &j->mod->owner, hook);
        cJSON_AddItemToArray(contexts, ao_binding_context_ordered(&hook->config, type));
        struct hook_run_info info = {.binding_name = ao_binding_type_to_string(type),
                                     .binding_type = type,
                                     .queue = job_queue(j),
                                     .task = tasks_type_name(ao_task_type(j->task)),
                                     .activation = j->activation};
        int r = hook_call(j->op, &j->mod->owner, hook, &info, contexts, &src, on_step_hook_done, j);
        cJSON_Delete(contexts);
        if (r < 0)
                job_finish(j, false);
        return true;
}

static void on_sync_hook_done(struct operator_state *op, bool ok, const struct hook_call_effects *effects,
                              void *userdata)
{
        (void) op, (void) effects;
        struct module_job *j = userdata;
        if (!ok) {
                job_finish(j, false);
                return;
        }
        j->next_sync++;
        job_step(j);
}

/* The next in-line Synchronization run; true when one was started (its callback continues). */
static bool run_next_sync(struct module_job *j)
{
        if (j->next_sync >= j->n_syncs)
                return false;
        struct hook_owner *owner = &j->mod->owner;
        struct sync_run *sr = &j->syncs[j->next_sync];
        struct ao_hook *hook = &owner->hooks[sr->hook_index];
        const struct ao_kubernetes_binding *b = &hook->config.kubernetes[sr->binding];
        bindings_unlock(owner, hook, sr->binding);
        cJSON *contexts = bindings_sync_contexts(owner, sr->hook_index, sr->binding);
        struct ao_snapshot_source src = bindings_run_snapshot_source(j->op, owner, hook);
        struct hook_run_info info = {.binding_name = b->name,
                                     .binding_type = AO_BINDING_KUBERNETES,
                                     .queue = job_queue(j),
                                     .task = tasks_type_name(ao_task_type(j->task)),
                                     .activation = "Kubernetes",
                                     .allow_failure = b->allow_failure};
        int r = hook_call(j->op, owner, hook, &info, contexts, &src, on_sync_hook_done, j);
        cJSON_Delete(contexts);
        if (r < 0)
                job_finish(j, false);
        return true;
}

/* A binding that waits for its Synchronization: the module run runs it in line. */
static void plan_inline_sync(void *userdata, size_t hook_index, size_t binding)
{
        struct module_job *j = userdata;
        j->syncs = ao_xreallocarray(j->syncs, j->n_syncs + 1, sizeof(*j->syncs));
        j->syncs[j->n_syncs++] = (struct sync_run){hook_index, binding};
}

/* Every monitor has its objects: plan the Synchronization runs (hooks are sorted by name). */
static void on_module_synced(struct operator_state *op, bool ok, void *userdata)
{
        struct module_job *j = userdata;
        if (!ok) {
                job_finish(j, false);
                return;
        }
        free(j->syncs);
        j->syncs = NULL;
        j->n_syncs = j->next_sync = 0;
        bindings_plan_sync(op, &j->mod->owner, NULL, plan_inline_sync, j);
        job_step(j);
}

static void on_released(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        struct module_job *j = userdata;
        if (error) {
                job_failed(j, error->msg);
                return;
        }
        op_metrics_module_helm(op, j->mod, j->activation, ao_clock_now_usec() - j->helm_started_usec);
        enter_step(j, STEP_AFTER_HELM);
        job_step(j);
}

/* The values helm gets, checked against the helm schema (x-required-for-helm) first. */
static int release(struct module_job *j, struct ao_error *reterr)
{
        struct operator_state *op = j->op;
        cJSON *doc = NULL;
        int r = ao_values_store_helm_document(op->values, j->mod->owner.values, &doc, reterr);
        if (r >= 0) {
                j->helm_started_usec = ao_clock_now_usec();
                r = op->releases->upgrade(op, j->mod, doc, j->activation, on_released, j, reterr);
                cJSON_Delete(doc);
        }
        return r;
}

/* <key>Maintenance: NoResourceReconciliation: the release stays as it is, and is not healed. */
static void skip_release(struct module_job *j)
{
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", j->mod->name}),
                    "module '%s' is in maintenance (NoResourceReconciliation): its release is not reconciled",
                    j->mod->name);
        release_monitor_stop(j->op, j->mod);
        enter_step(j, STEP_AFTER_HELM);
}

static void on_release_removed(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        (void) op;
        struct module_job *j = userdata;
        if (error) {
                job_failed(j, error->msg);
                return;
        }
        enter_step(j, STEP_AFTER_DELETE_HELM);
        job_step(j);
}

static void enter_step(struct module_job *j, enum step s)
{
        j->step = s;
        enum ao_binding_type type = binding_of(s);
        j->n_hooks = j->next = 0;
        if (type >= 0)
                select_hooks(j, type);
        if (s == STEP_AFTER_HELM)
                j->checksum_before_after_helm = ao_values_store_checksum(j->op->values, j->mod->owner.values);
}

static void module_run_done(struct module_job *j)
{
        struct module *mod = j->mod;
        mod->started = true;
        schedules_enable(j->op, &mod->owner);
        _cleanup_free_ char *after = ao_values_store_checksum(j->op->values, mod->owner.values);
        if (strcmp(after, j->checksum_before_after_helm) != 0 && !tasks_module_run_pending(j->op, mod)) {
                ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}),
                            "module '%s': afterHelm hooks changed its values, running it again", mod->name);
                tasks_request_module_run(j->op, mod, j->task, "AfterHelmValuesChanged");
        }
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}), "module '%s' is up to date",
                    mod->name);
        job_finish(j, true);
}

static void module_deleted(struct module_job *j)
{
        struct module *mod = j->mod;
        schedules_disable(&mod->owner);
        bindings_stop(j->op, &mod->owner);
        mod->started = false;
        mod->crds_applied = false;
        if (mod->isolated) { /* a deleted module holds nothing back */
                mod->isolated = false;
                readiness_update(j->op);
        }
        release_monitor_stop(j->op, mod);
        ao_values_store_reset_patches(j->op->values, mod->owner.values);
        op_metrics_module_gone(j->op, mod->name);
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}), "module '%s' deleted", mod->name);
        job_finish(j, true);
}

static void job_advance(struct module_job *j)
{
        struct ao_error err = {0};
        for (;;) {
                if (run_next_hook(j))
                        return;
                switch (j->step) {
                case STEP_ON_STARTUP:
                        if (j->op->kube && hook_owner_has_kube_bindings(&j->mod->owner)) {
                                enter_step(j, STEP_KUBE_SYNC);
                                bindings_when_synced(j->op, &j->mod->owner, on_module_synced, j);
                                return;
                        }
                        enter_step(j, STEP_BEFORE_HELM);
                        break;
                case STEP_KUBE_SYNC:
                        if (run_next_sync(j))
                                return;
                        enter_step(j, STEP_BEFORE_HELM);
                        break;
                case STEP_BEFORE_HELM:
                        enter_step(j, STEP_HELM);
                        break;
                case STEP_HELM:
                        if (modules_in_maintenance(j->mod, ao_values_store_config(j->op->values))) {
                                skip_release(j);
                                break;
                        }
                        /* The release step calls back (maybe at once); nothing of @j is touched after. */
                        if (release(j, &err) < 0)
                                job_failed(j, err.msg);
                        return;
                case STEP_AFTER_HELM:
                        module_run_done(j);
                        return;
                case STEP_BEFORE_DELETE_HELM:
                        enter_step(j, STEP_DELETE_HELM);
                        break;
                case STEP_DELETE_HELM:
                        if (!j->has_release) {
                                enter_step(j, STEP_AFTER_DELETE_HELM);
                                break;
                        }
                        if (j->op->releases->remove(j->op, j->mod->name, on_release_removed, j, &err) < 0)
                                job_failed(j, err.msg);
                        return;
                case STEP_AFTER_DELETE_HELM:
                        module_deleted(j);
                        return;
                default:
                        job_finish(j, true);
                        return;
                }
        }
}

/*
 * Go on with the job in its log context, copied: the job may end, and its strings go, before the
 * records its caller writes next.
 */
static void job_step(struct module_job *j)
{
        struct ao_log_context_copy ctx;
        struct ao_log_context from = job_log_context(j);
        ao_log_context_copy_init(&ctx, &from);
        const struct ao_log_context *prev = ao_log_context_swap(&ctx.ctx);
        job_advance(j);
        ao_log_context_swap(prev);
        ao_log_context_copy_done(&ctx);
}

/* ModuleDelete starts once it is known whether there is a release: beforeDeleteHelm needs one. */
static void on_release_known(struct operator_state *op, int exists, const struct ao_error *error,
                             void *userdata)
{
        (void) op;
        struct module_job *j = userdata;
        if (exists < 0) {
                job_failed(j, error ? error->msg : "cannot tell whether the release exists");
                return;
        }
        j->has_release = exists > 0;
        enter_step(j, j->has_release ? STEP_BEFORE_DELETE_HELM : STEP_DELETE_HELM);
        job_step(j);
}

void module_job_run(struct operator_state *op, const struct module_job_spec *spec)
{
        struct module_job *j = job_new(op, spec, STEP_ON_STARTUP);
        enter_step(j, spec->mod->started ? STEP_BEFORE_HELM : STEP_ON_STARTUP);
        job_step(j);
}

void module_job_delete(struct operator_state *op, const struct module_job_spec *spec)
{
        struct module_job *j = job_new(op, spec, STEP_BEFORE_DELETE_HELM);
        struct ao_error err = {0};
        if (op->releases->exists(op, spec->mod->name, on_release_known, j, &err) < 0)
                job_failed(j, err.msg);
}

size_t module_job_parallelism(const struct operator_state *op)
{
        if (op->settings->parallel_module_runs > 0)
                return (size_t) op->settings->parallel_module_runs;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        return cpus > 2 ? (size_t) cpus : 2;
}
