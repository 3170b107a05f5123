/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One hook run on behalf of the lifecycle: compose what the hook sees, run
 * it, apply what it returns, and decide what its value changes cause.
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/config-file.h"
#include "ao/config-map.h"
#include "ao/hook-run.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/values.h"
#include "internal.h"

struct call {
        struct operator_state *op;
        struct module *mod;
        struct ao_hook *hook;
        char *binding_name, *queue, *activation;
        bool allow_failure;
        hook_call_done *done;
        void *userdata;
        struct ao_proc_result result; /* kept while object patches are applied */
        struct hook_call_effects effects;
};

char *hook_identity(const struct module *mod, const struct ao_hook *hook)
{
        return mod ? ao_xasprintf("%s/%s", mod->name, hook->name) : ao_xstrdup(hook->name);
}

/* Log lines about a run carry its module, hook and binding like the hook's own output does. */
static const struct ao_log_context *enter_context(const struct call *c, struct ao_log_context *ctx)
{
        *ctx = (struct ao_log_context){
            .module = c->mod ? c->mod->name : NULL, .hook = c->hook->name, .binding = c->binding_name};
        return ao_log_context_swap(ctx);
}

/*
 * Persist a config patch's result: the config file or the ConfigMap, and the in-memory copy. The
 * ConfigMap gets the patch's operations rather than the section they made, so that an edit of the
 * section stored meanwhile by someone else is patched, not overwritten (ao_config_map_patch()).
 */
static int store_config_section(struct operator_state *op, const char *key, const cJSON *ops, cJSON *section,
                                struct ao_error *reterr)
{
        int r = 0;
        if (op->config_file)
                r = ao_config_file_set(op->config_file, key, section, reterr);
        else if (op->config_map)
                r = ao_config_map_patch(op->config_map, key, ops, reterr);
        if (r < 0) {
                cJSON_Delete(section);
                return r;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(op->values.config, key);
        cJSON_AddItemToObject(op->values.config, key, section);
        return 0;
}

/* Checksums of the global values and of the run's module's values; NULL for what does not apply. */
static void values_checksums(struct call *c, char **ret_global, char **ret_module)
{
        struct operator_state *op = c->op;
        *ret_global = values_global_checksum(&op->values);
        *ret_module = c->mod ? values_module_checksum(&op->values, &op->modules, c->mod) : NULL;
}

static bool differ(const char *a, const char *b)
{
        return a && b && strcmp(a, b) != 0;
}

static int apply_patches(struct call *c, const struct ao_hook_outcome *o, struct ao_error *reterr)
{
        struct operator_state *op = c->op;
        int r = 0;
        if (o->values_patch)
                r = values_apply_patch(&op->values, &op->modules, c->mod, o->values_patch, reterr);
        if (r >= 0 && o->config_values_patch) {
                cJSON *section = NULL;
                r = values_apply_config_patch(&op->values, &op->modules, c->mod, o->config_values_patch,
                                              &section, reterr);
                if (r >= 0)
                        r = store_config_section(op, c->mod ? c->mod->values_key : "global",
                                                 o->config_values_patch, section, reterr);
        }
        return r;
}

static int apply_outcome(struct call *c, const struct ao_hook_outcome *o, struct ao_error *reterr)
{
        struct operator_state *op = c->op;
        int r = 0;
        if (o->values_patch || o->config_values_patch) {
                _cleanup_free_ char *global_before = NULL, *module_before = NULL;
                _cleanup_free_ char *global_after = NULL, *module_after = NULL;
                values_checksums(c, &global_before, &module_before);
                r = apply_patches(c, o, reterr);
                values_checksums(c, &global_after, &module_after);
                c->effects.global_values_changed = differ(global_before, global_after);
                c->effects.module_values_changed = differ(module_before, module_after);
        }
        if (r >= 0 && o->metrics.n > 0)
                metrics_hook_ops(op, c->mod, c->hook, &o->metrics);
        if (r >= 0 && o->kubernetes_patch && !op->kube) {
                struct ao_log_context ctx;
                const struct ao_log_context *prev = enter_context(c, &ctx);
                ao_log(AO_LOG_WARN, "hook '%s': object patches need a cluster, ignoring them", c->hook->name);
                ao_log_context_swap(prev);
        }
        return r;
}

static void call_free(struct call *c)
{
        if (c->mod)
                c->mod->busy--;
        free(c->binding_name);
        free(c->queue);
        free(c->activation);
        free(c);
}

/* The run is over, its object patches applied if it had any: log, count, tell the caller. */
static void finish_call(struct call *c, bool ok, const struct ao_error *err,
                        const struct ao_proc_result *result)
{
        struct ao_log_context ctx;
        const struct ao_log_context *prev = enter_context(c, &ctx);
        if (ok)
                ao_log(AO_LOG_INFO, "hook '%s' succeeded in %llu ms", c->hook->name,
                       (unsigned long long) (result->wall_usec / 1000));
        else
                ao_log(AO_LOG_ERROR, "%s", err->msg);
        ao_log_context_swap(prev);
        struct hook_run_info info = {.binding_name = c->binding_name,
                                     .queue = c->queue,
                                     .activation = c->activation,
                                     .allow_failure = c->allow_failure};
        metrics_hook_run(c->op, c->mod, c->hook, &info, result, ok);
        c->done(c->op, ok, &c->effects, c->userdata);
        call_free(c);
}

static void on_patches_applied(const struct ao_error *error, void *userdata)
{
        struct call *c = userdata;
        struct ao_error err = {0};
        if (error) {
                err = *error;
                ao_error_prefix(&err, "hook '%s': object patches", c->hook->name);
        }
        finish_call(c, !error, &err, &c->result);
}

static void on_hook_done(const struct ao_hook_outcome *o, void *userdata)
{
        struct call *c = userdata;
        struct ao_error err = {0};
        bool ok = o->ok;
        if (!ok)
                err = o->error;
        else if (apply_outcome(c, o, &err) < 0) {
                ok = false;
                ao_error_prefix(&err, "hook '%s'", c->hook->name);
        }
        if (ok && o->kubernetes_patch && c->op->kube) {
                /* A failed operation fails the hook, so the hook's success waits for the cluster. */
                c->result = o->result;
                if (kube_apply_object_patches(c->op, c->mod, o->kubernetes_patch, o->kubernetes_patch_len,
                                              on_patches_applied, c, &err) >= 0)
                        return;
                ok = false;
                ao_error_prefix(&err, "hook '%s'", c->hook->name);
        }
        finish_call(c, ok, &err, &o->result);
}

int hook_call(struct operator_state *op, struct module *mod, struct ao_hook *hook,
              const struct hook_run_info *info, const cJSON *contexts, hook_call_done *done, void *userdata)
{
        struct ao_error err = {0};
        cJSON *global = NULL, *global_config = NULL, *section = NULL, *section_config = NULL;
        int r = values_global(&op->values, &global, &err);
        if (r >= 0)
                r = values_global_config(&op->values, &global_config, &err);
        if (r >= 0 && mod)
                r = values_module(&op->values, &op->modules, mod, &section, &err);
        if (r >= 0 && mod)
                r = values_module_config(&op->values, &op->modules, mod, &section_config, &err);
        cJSON *values = NULL, *config = NULL;
        if (r >= 0) {
                const char *key = mod ? mod->values_key : NULL;
                values = ao_values_document(global, key, section,
                                            mod ? (const char *const *) op->enabled_modules : NULL);
                config = ao_values_document(global_config, key, section_config, NULL);
                struct call *c = ao_xcalloc(1, sizeof(*c));
                *c = (struct call){.op = op,
                                   .mod = mod,
                                   .hook = hook,
                                   .binding_name = ao_xstrdup(info->binding_name),
                                   .queue = ao_xstrdup(info->queue ? info->queue : AO_QUEUE_MAIN),
                                   .activation = ao_xstrdup(info->activation ? info->activation : ""),
                                   .allow_failure = info->allow_failure,
                                   .done = done,
                                   .userdata = userdata};
                if (mod)
                        mod->busy++; /* the release monitor waits while a module hook runs */
                struct ao_hook_run_request req = {
                    .mode = AO_HOOK_RUN_EVENT,
                    .hook_name = hook->name,
                    .path = hook->path,
                    .module = mod ? mod->name : NULL,
                    .values_key = key,
                    .working_dir = hook->working_dir,
                    .binding = info->binding_name,
                    .queue = info->queue,
                    .binding_contexts = contexts,
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
        cJSON_Delete(global), cJSON_Delete(global_config), cJSON_Delete(section),
            cJSON_Delete(section_config);
        cJSON_Delete(values), cJSON_Delete(config);
        return r;
}

/* ---- hook run tasks ---------------------------------------------------------------------------- */

struct task_call {
        struct ao_task *task;
        struct hook_task *ht;
};

/*
 * What a schedule or kubernetes run's changes cause (steps 9-12): global values or enabled flags
 * changed → reload all modules; a module's values changed → run that module again.
 */
static void react_to_changes(struct operator_state *op, struct task_call *tc,
                             const struct hook_call_effects *effects)
{
        struct hook_task *ht = tc->ht;
        if (ht->binding != AO_BINDING_SCHEDULE && ht->binding != AO_BINDING_KUBERNETES)
                return;
        if (effects->global_values_changed) {
                converge_queue(op, "GlobalValuesChanged");
                return;
        }
        if (!ht->module || !ht->module->enabled)
                return;
        if (effects->module_values_changed && !module_run_pending(op, ht->module))
                module_run_queue(op, ht->module, NULL, "ModuleValuesChanged");
}

static void on_task_hook_done(struct operator_state *op, bool ok, const struct hook_call_effects *effects,
                              void *userdata)
{
        struct task_call *tc = userdata;
        if (ok)
                react_to_changes(op, tc, effects);
        struct ao_task *t = tc->task;
        free(tc);
        ao_task_finish(t, ok ? AO_TASK_SUCCESS : AO_TASK_FAIL);
}

void hook_task_handle(struct operator_state *op, struct ao_task *t)
{
        struct hook_task *ht = ao_task_payload(t);
        struct task_call *tc = ao_xcalloc(1, sizeof(*tc));
        tc->task = t;
        tc->ht = ht;
        struct hook_run_info info = {.binding_name = ht->binding_name,
                                     .queue = ao_queue_name(ao_task_queue(t)),
                                     .activation = ht->activation,
                                     .allow_failure = ao_task_allow_failure(t)};
        metrics_task_wait(op, ht->module, ht->hook, &info, ao_task_wait_usec(t));
        if (ht->kube_sync)
                kube_unlock(op, ht->module, ht->hook, (int) ht->kube_binding);
        kube_refresh_contexts(op, ht->module, ht->hook, ao_task_binding_contexts(t));
        if (hook_call(op, ht->module, ht->hook, &info, ao_task_binding_contexts(t), on_task_hook_done, tc) <
            0) {
                free(tc);
                ao_task_finish(t, AO_TASK_FAIL);
        }
}

void hook_task_free(void *payload)
{
        struct hook_task *ht = payload;
        free(ht->binding_name);
        free(ht->activation);
        free(ht);
}

struct ao_task_spec hook_task_spec(struct module *mod, struct ao_hook *hook, enum ao_binding_type binding,
                                   const char *binding_name, const char *activation, cJSON *contexts,
                                   bool allow_failure, struct ao_throttle *throttle, char **ret_description,
                                   char **ret_key)
{
        struct hook_task *ht = ao_xcalloc(1, sizeof(*ht));
        *ht = (struct hook_task){.module = mod,
                                 .hook = hook,
                                 .binding = binding,
                                 .binding_name = ao_xstrdup(binding_name),
                                 .activation = ao_xstrdup(activation ? activation : "")};
        *ret_key = hook_identity(mod, hook);
        *ret_description =
            ao_xasprintf("%s:%s:%s", mod ? "ModuleHookRun" : "GlobalHookRun", binding_name, *ret_key);
        return (struct ao_task_spec){
            .type = mod ? TASK_MODULE_HOOK_RUN : TASK_GLOBAL_HOOK_RUN,
            .description = *ret_description,
            .combine_key = *ret_key,
            .binding_contexts = contexts,
            .allow_failure = allow_failure,
            .throttle = throttle,
            .payload = ht,
            .payload_free = hook_task_free,
        };
}

/* (order, name) as the documentation orders hooks of one binding. */
struct ordered {
        struct ao_hook *hook;
        int64_t order;
};

static int compare_ordered(const void *a, const void *b)
{
        const struct ordered *x = a, *y = b;
        if (x->order != y->order)
                return x->order < y->order ? -1 : 1;
        return strcmp(x->hook->name, y->hook->name);
}

static struct ao_throttle *throttle_of(struct operator_state *op, struct module *mod, size_t i)
{
        return mod ? (mod->throttles ? &mod->throttles[i] : NULL)
                   : (op->global_throttles ? &op->global_throttles[i] : NULL);
}

void push_ordered_hook_runs(struct operator_state *op, struct ao_task *before, struct module *mod,
                            struct ao_hook *hooks, size_t n, enum ao_binding_type type,
                            const char *activation)
{
        struct ordered *list = ao_xcalloc(n + 1, sizeof(*list));
        size_t count = 0;
        for (size_t i = 0; i < n; i++)
                if (hooks[i].config.has_order[type])
                        list[count++] = (struct ordered){&hooks[i], hooks[i].config.order[type]};
        qsort(list, count, sizeof(*list), compare_ordered);
        for (size_t i = 0; i < count; i++) {
                struct ao_hook *hook = list[i].hook;
                cJSON *contexts = cJSON_CreateArray();
                cJSON_AddItemToArray(contexts, ao_binding_context_ordered(&hook->config, type, NULL));
                _cleanup_free_ char *description = NULL, *key = NULL;
                struct ao_task_spec spec =
                    hook_task_spec(mod, hook, type, ao_binding_type_to_string(type), activation, contexts,
                                   false, throttle_of(op, mod, (size_t) (hook - hooks)), &description, &key);
                if (before)
                        ao_queue_push_before(before, &spec);
                else
                        ao_queue_push_tail(operator_queue(op, AO_QUEUE_MAIN), &spec);
        }
        free(list);
}
