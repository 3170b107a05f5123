/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handlers of TASK_MODULE_RUN, TASK_MODULE_DELETE and TASK_MODULE_PURGE (lifecycle steps 5-7,
 * 14, 15): one module's run or delete (module-job.c does the steps) and a purge, each the whole
 * task; a failure fails the task and its queue retries it.
 */
#include "ao/log.h"
#include "ao/queue.h"
#include "internal.h"

static void on_job_done(struct operator_state *op, struct module *mod, bool ok, void *userdata)
{
        struct ao_task *t = userdata;
        if (ok && mod->isolated) {
                mod->isolated = false;
                readiness_update(op);
        } else if (!ok && ao_task_type(t) == TASK_MODULE_RUN && !tasks_in_isolation_queue(t)) {
                const struct module_task *mt = ao_task_payload(t);
                /* Isolated: the run retries in the module's own queue; this queue goes on. */
                ok = readiness_isolate(op, mod, mt->activation);
        }
        ao_task_finish(t, ok ? AO_TASK_SUCCESS : AO_TASK_FAIL);
}

void module_run_handle(struct operator_state *op, struct ao_task *t)
{
        struct module_task *mt = ao_task_payload(t);
        /*
         * A run queued while a converge was still deciding (a hook's values patch, the release
         * monitor) can come after that converge deleted the module: running it would start its
         * watches and install its release again.
         */
        if (!mt->module->enabled) {
                ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mt->module->name}),
                            "module '%s' is disabled, dropping its run (%s)", mt->module->name,
                            mt->activation);
                if (mt->module->isolated) {
                        mt->module->isolated = false;
                        readiness_update(op);
                }
                ao_task_finish(t, AO_TASK_SUCCESS);
                return;
        }
        /* A run in main succeeded since: the one left in the isolation queue is not needed. */
        if (tasks_in_isolation_queue(t) && !mt->module->isolated) {
                ao_task_finish(t, AO_TASK_SUCCESS);
                return;
        }
        struct module_job_spec spec = {
            .mod = mt->module, .activation = mt->activation, .task = t, .done = on_job_done, .userdata = t};
        module_job_run(op, &spec);
}

void module_delete_handle(struct operator_state *op, struct ao_task *t)
{
        struct module_task *mt = ao_task_payload(t);
        struct module_job_spec spec = {
            .mod = mt->module, .activation = mt->activation, .task = t, .done = on_job_done, .userdata = t};
        module_job_delete(op, &spec);
}

static void on_purged(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        struct ao_task *t = userdata;
        const struct module_task *mt = ao_task_payload(t);
        if (error && error->code == RELEASE_NO_HELM) {
                /* Not a failure to retry: the main queue would wait for helm behind it. */
                ao_log(AO_LOG_WARN,
                       "release '%s' is not purged: %s; the next reload of all modules tries again",
                       mt->release, error->msg);
                ao_task_finish(t, AO_TASK_SUCCESS);
                return;
        }
        if (error) {
                ao_log(AO_LOG_ERROR, "purge of release '%s': %s", mt->release, error->msg);
                ao_task_finish(t, AO_TASK_FAIL);
                return;
        }
        ao_log(AO_LOG_INFO, "release '%s' purged: its module directory is gone", mt->release);
        op_metrics_module_gone(op, mt->release);
        ao_task_finish(t, AO_TASK_SUCCESS);
}

void module_purge_handle(struct operator_state *op, struct ao_task *t)
{
        struct module_task *mt = ao_task_payload(t);
        struct ao_error err = {0};
        if (op->releases->remove(op, mt->release, on_purged, t, &err) < 0) {
                ao_log(AO_LOG_ERROR, "purge of release '%s': %s", mt->release, err.msg);
                ao_task_finish(t, AO_TASK_FAIL);
        }
}
