/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handler of TASK_KUBE_SYNC (lifecycle step 2): start the global hooks' monitors, wait for
 * their first state, then queue the Synchronization runs, hooks in name order: those that wait
 * for synchronization right after this task (so the converge behind them sees their effect),
 * the others in their queues.
 */
#include "ao/queue.h"
#include "internal.h"

static void on_global_synced(struct operator_state *op, bool ok, void *userdata)
{
        struct ao_task *t = userdata;
        if (ok)
                bindings_plan_sync(op, &op->global, t, NULL, NULL);
        ao_task_finish(t, ok ? AO_TASK_SUCCESS : AO_TASK_FAIL);
}

void global_sync_handle(struct operator_state *op, struct ao_task *t)
{
        bindings_when_synced(op, &op->global, on_global_synced, t);
}
