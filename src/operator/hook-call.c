/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One hook run on behalf of the lifecycle: compose what the hook sees, run it, and have its
 * outputs checked and applied all or nothing (run-outputs.c). Object patches go to the cluster
 * first; only when they all succeeded does the rest apply.
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/hook-run.h"
#include "ao/log.h"
#include "ao/object-patch.h"
#include "ao/values-store.h"
#include "internal.h"

struct call {
        struct operator_state *op;
        struct hook_owner *owner;
        struct ao_hook *hook;
        char *binding_name, *queue, *activation;
        enum ao_binding_type binding_type;
        const char *task;  /* static: a task type name, or NULL */
        char *watch_event; /* the first context's, or NULL */
        bool allow_failure;
        hook_call_done *done;
        void *userdata;
        struct ao_proc_result result; /* kept while object patches are applied */
        struct checked_outputs outputs;
        struct hook_call_effects effects;
};

/* What the run's records carry, the hook's own output lines and the operator's about the run alike. */
static struct ao_log_context run_context(const struct call *c)
{
        return (struct ao_log_context){.module = hook_owner_module_name(c->owner),
                                       .hook = c->hook->name,
                                       .hook_type = c->owner->module ? "module" : "global",
                                       .binding = c->binding_name,
                                       .event = ao_binding_type_to_string(c->binding_type),
                                       .watch_event = c->watch_event,
                                       .queue = c->queue,
                                       .task = c->task,
                                       .event_type = c->activation[0] ? c->activation : NULL};
}

static const struct ao_log_context *enter_context(const struct call *c, struct ao_log_context *ctx)
{
        *ctx = run_context(c);
        return ao_log_context_swap(ctx);
}

static void call_free(struct call *c)
{
        if (c->owner->module && --c->owner->module->busy == 0)
                release_monitor_module_idle(c->op, c->owner->module);
        run_outputs_done(&c->outputs);
        free(c->binding_name);
        free(c->queue);
        free(c->activation);
        free(c->watch_event);
        free(c);
}

/* The run is over, its outputs applied or not: log, count, tell the caller. */
static void finish_call(struct call *c, bool ok, const struct ao_error *err)
{
        struct ao_log_context ctx;
        const struct ao_log_context *prev = enter_context(c, &ctx);
        if (ok)
                ao_log(AO_LOG_INFO, "hook '%s' succeeded in %llu ms", c->hook->name,
                       (unsigned long long) (c->result.wall_usec / 1000));
        else
                ao_log(AO_LOG_ERROR, "%s", err->msg);
        ao_log_context_swap(prev);
        struct hook_run_info info = {.binding_name = c->binding_name,
                                     .queue = c->queue,
                                     .activation = c->activation,
                                     .allow_failure = c->allow_failure};
        op_metrics_hook_run(c->op, c->owner->module, c->hook, &info, &c->result, ok);
        c->done(c->op, ok, &c->effects, c->userdata);
        call_free(c);
}

/* The object patches are in (or there were none): apply the rest. */
static void apply_local(struct call *c)
{
        struct ao_error err = {0};
        struct ao_log_context ctx;
        const struct ao_log_context *prev = enter_context(c, &ctx);
        int r = run_outputs_apply_local(c->op, c->owner, c->hook, &c->outputs, &c->effects, &err);
        ao_log_context_swap(prev);
        if (r < 0)
                ao_error_prefix(&err, "hook '%s'", c->hook->name);
        finish_call(c, r >= 0, &err);
}

static void on_patches_applied(const struct ao_error *error, void *userdata)
{
        struct call *c = userdata;
        if (!error) {
                apply_local(c);
                return;
        }
        struct ao_error err = *error;
        ao_error_prefix(&err, "hook '%s': object patches", c->hook->name);
        finish_call(c, false, &err);
}

static void apply_object_patches(struct call *c)
{
        struct ao_error err = {0};
        struct ao_object_patch_ops *ops = TAKE_PTR(c->outputs.object_patches);
        run_outputs_note_deletions(c->op, c->owner, ops);
        int r = cluster_apply_object_patches(c->op, ops, on_patches_applied, c, &err);
        free(ops);
        if (r >= 0)
                return;
        ao_error_prefix(&err, "hook '%s'", c->hook->name);
        finish_call(c, false, &err);
}

static void on_hook_done(struct ao_hook_outcome *o, void *userdata)
{
        struct call *c = userdata;
        struct ao_error err = {0};
        c->result = o->result;
        if (!o->ok) {
                finish_call(c, false, &o->error);
                return;
        }
        if (run_outputs_check(c->op, c->owner, c->hook, o, &c->outputs, &err) < 0) {
                ao_error_prefix(&err, "hook '%s'", c->hook->name);
                finish_call(c, false, &err);
                return;
        }
        if (c->outputs.object_patches) {
                /* A failed operation fails the hook, so the hook's success waits for the cluster. */
                apply_object_patches(c);
                return;
        }
        apply_local(c);
}

/* A kubernetes event run's watchEvent ("Added", ...), as the Go operator logs its first context's. */
static char *first_watch_event(const cJSON *contexts)
{
        const cJSON *w =
            cJSON_GetObjectItemCaseSensitive(cJSON_IsArray(contexts) ? contexts->child : NULL, "watchEvent");
        return cJSON_IsString(w) && w->valuestring[0] ? ao_xstrdup(w->valuestring) : NULL;
}

static struct call *call_new(struct operator_state *op, struct hook_owner *owner, struct ao_hook *hook,
                             const struct hook_run_info *info, const cJSON *contexts, hook_call_done *done,
                             void *userdata)
{
        struct call *c = ao_xcalloc(1, sizeof(*c));
        *c = (struct call){.op = op,
                           .owner = owner,
                           .hook = hook,
                           .binding_name = ao_xstrdup(info->binding_name),
                           .queue = ao_xstrdup(info->queue ? info->queue : AO_QUEUE_MAIN),
                           .activation = ao_xstrdup(info->activation ? info->activation : ""),
                           .binding_type = info->binding_type,
                           .task = info->task,
                           .watch_event = first_watch_event(contexts),
                           .allow_failure = info->allow_failure,
                           .done = done,
                           .userdata = userdata};
        if (owner->module)
                owner->module->busy++; /* the release monitor waits while a module hook runs */
        return c;
}

int hook_call(struct operator_state *op, struct hook_owner *owner, struct ao_hook *hook,
              const struct hook_run_info *info, const cJSON *contexts,
              const struct ao_snapshot_source *snapshots, hook_call_done *done, void *userdata)
{
        struct ao_error err = {0};
        struct module *mod = owner->module;
        cJSON *values = NULL, *config = NULL;
        int r = ao_values_store_hook_documents(op->values, owner->values,
                                               mod ? (const char *const *) op->enabled_modules : NULL,
                                               &values, &config, &err);
        if (r >= 0) {
                struct call *c = call_new(op, owner, hook, info, contexts, done, userdata);
                struct ao_log_context ctx = run_context(c);
                struct ao_hook_run_request req = {
                    .mode = AO_HOOK_RUN_EVENT,
                    .hook_name = hook->name,
                    .path = hook->path,
                    .python_venv = hook->python_venv,
                    .module = mod ? mod->name : NULL,
                    .values_key = mod ? mod->values_key : NULL,
                    .working_dir = hook->working_dir,
                    .log_context = &ctx,
                    .binding_contexts = contexts,
                    .snapshots = snapshots,
                    .values = values,
                    .config_values = config,
                    .profile = hook->profile,
                    .timeout_usec = op->settings->hook_timeout_usec,
                    .on_done = on_hook_done,
                    .userdata = c,
                };
                r = ao_hook_run_start(op->runner, &req, &err);
                if (r < 0)
                        call_free(c);
        }
        if (r < 0)
                ao_log_with(AO_LOG_ERROR, AO_LOG_FIELDS({"hook", hook->name}), "%s", err.msg);
        cJSON_Delete(values);
        cJSON_Delete(config);
        return r;
}
