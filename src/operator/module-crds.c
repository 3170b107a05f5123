/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handler of TASK_MODULE_ENSURE_CRDS, the Go operator's ModuleEnsureCRDs: the CRDs of a newly
 * enabled module's crds/ go to the cluster (created, or replaced when they exist; never deleted).
 * Discovery queues one per such module ahead of every module run of its converge, so that the
 * kinds are served before any module's hooks or release use them. The last one of the step sets
 * /global/discovery/apiVersions (api-versions.c), which every module run after it then sees.
 * A failure fails the task: main waits while it retries, as in the Go operator.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/object-patch.h"
#include "ao/queue.h"
#include "internal.h"

struct crds_job {
        struct operator_state *op;
        struct ao_task *task;
        cJSON *kinds; /* owned: what the CRDs serve, until they are applied */
        size_t n;     /* CRDs */
};

/* Once no other module's CRDs wait, the step is over: the kinds go to the global values. */
static void finish(struct operator_state *op, struct ao_task *t, bool ok)
{
        if (ok && !tasks_ensure_crds_pending(op))
                api_versions_publish(op);
        ao_task_finish(t, ok ? AO_TASK_SUCCESS : AO_TASK_FAIL);
}

static void fail(struct operator_state *op, struct ao_task *t, const char *msg)
{
        const struct module *mod = ((const struct module_task *) ao_task_payload(t))->module;
        ao_log_with(AO_LOG_ERROR, AO_LOG_FIELDS({"module", mod->name}), "module '%s': CRDs of '%s/crds': %s",
                    mod->name, mod->dir, msg);
        finish(op, t, false);
}

static void on_applied(const struct ao_error *error, void *userdata)
{
        struct crds_job j = *(struct crds_job *) userdata;
        free(userdata);
        struct module *mod = ((struct module_task *) ao_task_payload(j.task))->module;
        if (error) {
                cJSON_Delete(j.kinds);
                fail(j.op, j.task, error->msg);
                return;
        }
        mod->crds_applied = true;
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}),
                    "module '%s': crds/ applied (%zu CRDs)", mod->name, j.n);
        api_versions_add(j.op, j.kinds);
        finish(j.op, j.task, true);
}

void module_crds_handle(struct operator_state *op, struct ao_task *t)
{
        struct module *mod = ((struct module_task *) ao_task_payload(t))->module;
        if (!mod->enabled || mod->crds_applied) {
                finish(op, t, true);
                return;
        }
        _cleanup_free_ char *text = NULL;
        cJSON *kinds = NULL;
        struct ao_error err = {0};
        int r = chart_crd_operations(op, mod, &text, &kinds, &err);
        if (r == 0) {
                mod->crds_applied = true;
                finish(op, t, true);
                return;
        }
        struct ao_object_patch_ops ops = {0};
        if (r > 0)
                r = ao_object_patch_parse(text, strlen(text), &ops, &err);
        if (r < 0) {
                cJSON_Delete(kinds);
                fail(op, t, err.msg);
                return;
        }
        struct crds_job *j = ao_xcalloc(1, sizeof(*j));
        *j = (struct crds_job){.op = op, .task = t, .kinds = kinds, .n = ops.n};
        if (cluster_apply_object_patches(op, &ops, on_applied, j, &err) < 0) {
                free(j);
                cJSON_Delete(kinds);
                fail(op, t, err.msg);
        }
}
