/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handler of a queued hook run (global or module hook): run it with its contexts, their
 * snapshots written into its binding context file as it starts (queued contexts carry none),
 * and request what its value changes cause.
 */
#include <stdlib.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/queue.h"
#include "internal.h"

struct task_call {
        struct ao_task *task;
        struct hook_task *ht;
};

/*
 * What a schedule or kubernetes run's changes cause (steps 9-12): global values or enabled flags
 * changed → reload all modules; a module's values changed → run that module again.
 */
static void react_to_changes(struct operator_state *op, const struct hook_task *ht,
                             const struct hook_call_effects *effects)
{
        if (ht->binding != AO_BINDING_SCHEDULE && ht->binding != AO_BINDING_KUBERNETES)
                return;
        if (effects->global_values_changed) {
                tasks_request_converge(op, "GlobalValuesChanged");
                return;
        }
        struct module *mod = ht->owner->module;
        if (mod && mod->enabled && effects->module_values_changed)
                tasks_request_module_run(op, mod, NULL, "ModuleValuesChanged");
}

static void on_task_hook_done(struct operator_state *op, bool ok, const struct hook_call_effects *effects,
                              void *userdata)
{
        struct task_call *tc = userdata;
        if (ok)
                react_to_changes(op, tc->ht, effects);
        struct ao_task *t = tc->task;
        free(tc);
        ao_task_finish(t, ok ? AO_TASK_SUCCESS : AO_TASK_FAIL);
}

void hook_task_handle(struct operator_state *op, struct ao_task *t)
{
        struct hook_task *ht = ao_task_payload(t);
        struct task_call *tc = ao_xcalloc(1, sizeof(*tc));
        *tc = (struct task_call){.task = t, .ht = ht};
        struct hook_run_info info = {.binding_name = ht->binding_name,
                                     .binding_type = ht->binding,
                                     .queue = ao_queue_name(ao_task_queue(t)),
                                     .task = tasks_type_name(ao_task_type(t)),
                                     .activation = ht->activation,
                                     .allow_failure = ao_task_allow_failure(t)};
        op_metrics_task_wait(op, ht->owner->module, ht->hook, &info, ao_task_wait_usec(t));
        if (ht->kube_sync)
                bindings_unlock(ht->owner, ht->hook, ht->kube_binding);
        /* The snapshots, and a Synchronization's objects, as they are when the run starts. */
        struct ao_snapshot_source src = bindings_run_snapshot_source(op, ht->owner, ht->hook);
        if (hook_call(op, ht->owner, ht->hook, &info, ao_task_binding_contexts(t), &src, on_task_hook_done,
                      tc) < 0) {
                free(tc);
                ao_task_finish(t, AO_TASK_FAIL);
        }
}
