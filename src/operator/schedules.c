/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Schedule bindings: each armed on the wall-clock schedule while its hook
 * is active (global hooks: from start; module hooks: once the module ran,
 * until it is deleted); a tick queues a hook run in the binding's queue.
 * Ticks before the first converge has finished are dropped, as in the Go
 * operator: hooks must not act on a half-started system.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/log.h"
#include "ao/schedule.h"
#include "internal.h"

struct schedule_ref {
        struct operator_state *op;
        struct hook_owner *owner;
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
        cJSON_AddItemToArray(contexts, ao_binding_context_schedule(&ref->hook->config, ref->binding));
        struct hook_run_spec s = {.owner = ref->owner,
                                  .hook_index = ref->hook_index,
                                  .binding = AO_BINDING_SCHEDULE,
                                  .binding_name = ref->binding->name,
                                  .activation = "Schedule",
                                  .contexts = contexts,
                                  .allow_failure = ref->binding->allow_failure};
        tasks_push_hook_run(op, ref->binding->queue, &s);
}

void schedules_enable(struct operator_state *op, struct hook_owner *owner)
{
        if (owner->schedules)
                return;
        struct ao_hook *hooks = owner->hooks;
        size_t n_hooks = owner->n_hooks;
        struct schedule_set *set = ao_xcalloc(1, sizeof(*set));
        for (size_t i = 0; i < n_hooks; i++)
                set->n += hooks[i].config.n_schedules;
        set->refs = ao_xcalloc(set->n + 1, sizeof(*set->refs));
        size_t k = 0;
        for (size_t i = 0; i < n_hooks; i++)
                for (size_t j = 0; j < hooks[i].config.n_schedules; j++) {
                        struct schedule_ref *ref = &set->refs[k++];
                        *ref = (struct schedule_ref){.op = op,
                                                     .owner = owner,
                                                     .hook = &hooks[i],
                                                     .hook_index = i,
                                                     .binding = &hooks[i].config.schedules[j]};
                        struct ao_error err = {0};
                        /*
                         * The crontab was parsed when the configuration was read; parsing it again
                         * (and reading its zone's file) fails only if tzdata lost the zone since.
                         */
                        if (ao_schedule_add(op->schedule, ref->binding->crontab, on_tick, ref, &ref->entry,
                                            &err) < 0)
                                ao_log(AO_LOG_ERROR, "hook '%s': %s", hooks[i].name, err.msg);
                }
        owner->schedules = set;
}

void schedules_disable(struct hook_owner *owner)
{
        struct schedule_set *set = TAKE_PTR(owner->schedules);
        if (!set)
                return;
        for (size_t i = 0; i < set->n; i++)
                ao_schedule_remove(set->refs[i].entry);
        free(set->refs);
        free(set);
}
