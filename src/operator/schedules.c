/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Schedule bindings: each armed on the wall-clock schedule while its hook
 * is active (global hooks: from start; module hooks: once the module ran,
 * until it is deleted); a tick queues a hook run in the binding's queue.
 * Ticks before the first converge has finished are dropped, as in the Go
 * operator: hooks must not act on a half-started system.
 */
#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/log.h"
#include "ao/schedule.h"
#include "internal.h"

struct schedule_ref {
        struct operator_state *op;
        struct module *mod;
        struct ao_hook *hook;
        size_t hook_index;
        const struct ao_schedule_binding *binding;
        struct ao_schedule_entry *entry;
};

struct schedule_set {
        struct schedule_ref *refs;
        size_t n;
};

static void on_tick(struct ao_schedule_entry *e, uint64_t scheduled_usec, uint64_t now_usec, void *userdata)
{
        (void) e, (void) scheduled_usec, (void) now_usec;
        struct schedule_ref *ref = userdata;
        struct operator_state *op = ref->op;
        if (!op->first_converge_done) {
                ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"hook", ref->hook->name}),
                            "schedule '%s' ticked before the first converge finished, dropping the tick",
                            ref->binding->name);
                return;
        }
        cJSON *contexts = cJSON_CreateArray();
        cJSON_AddItemToArray(contexts, ao_binding_context_schedule(&ref->hook->config, ref->binding, NULL));
        struct ao_throttle *throttles = ref->mod ? ref->mod->throttles : op->global_throttles;
        _cleanup_free_ char *description = NULL, *key = NULL;
        struct ao_task_spec spec = hook_task_spec(
            ref->mod, ref->hook, AO_BINDING_SCHEDULE, ref->binding->name, "Schedule", contexts,
            ref->binding->allow_failure, throttles ? &throttles[ref->hook_index] : NULL, &description, &key);
        ao_queue_push_tail(operator_queue(op, ref->binding->queue), &spec);
}

void schedules_enable(struct operator_state *op, struct module *mod)
{
        struct schedule_set **slot = mod ? &mod->schedules : &op->global_schedules;
        if (*slot)
                return;
        struct ao_hook *hooks = mod ? mod->hooks : op->global_hooks;
        size_t n_hooks = mod ? mod->n_hooks : op->n_global_hooks;
        struct schedule_set *set = ao_xcalloc(1, sizeof(*set));
        for (size_t i = 0; i < n_hooks; i++)
                set->n += hooks[i].config.n_schedules;
        set->refs = ao_xcalloc(set->n + 1, sizeof(*set->refs));
        size_t k = 0;
        for (size_t i = 0; i < n_hooks; i++)
                for (size_t j = 0; j < hooks[i].config.n_schedules; j++) {
                        struct schedule_ref *ref = &set->refs[k++];
                        *ref = (struct schedule_ref){.op = op,
                                                     .mod = mod,
                                                     .hook = &hooks[i],
                                                     .hook_index = i,
                                                     .binding = &hooks[i].config.schedules[j]};
                        struct ao_error err = {0};
                        /* The crontab was parsed when the configuration was read: this cannot fail on it. */
                        if (ao_schedule_add(op->schedule, ref->binding->crontab, on_tick, ref, &ref->entry,
                                            &err) < 0)
                                ao_log(AO_LOG_ERROR, "hook '%s': %s", hooks[i].name, err.msg);
                }
        *slot = set;
}

void schedules_disable(struct operator_state *op, struct module *mod)
{
        (void) op;
        struct schedule_set **slot = mod ? &mod->schedules : &op->global_schedules;
        struct schedule_set *set = *slot;
        if (!set)
                return;
        for (size_t i = 0; i < set->n; i++)
                ao_schedule_remove(set->refs[i].entry);
        free(set->refs);
        free(set);
        *slot = NULL;
}

struct ao_throttle *throttles_new(const struct ao_hook *hooks, size_t n)
{
        struct ao_throttle *t = ao_xcalloc(n + 1, sizeof(*t));
        for (size_t i = 0; i < n; i++)
                t[i] = (struct ao_throttle){
                    .period_usec = hooks[i].config.execution_min_period_usec,
                    .burst = hooks[i].config.execution_burst ? hooks[i].config.execution_burst : 1};
        return t;
}
