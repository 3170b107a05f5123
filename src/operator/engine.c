/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task engine: the queues, the one table that says which handler works which task type,
 * and what happens when a task leaves its queue. Handlers never call each other; they queue
 * work through tasks.c.
 */
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/queue.h"
#include "ao/reactor.h"
#include "internal.h"

#define QUEUE_SAMPLE_USEC (5 * AO_USEC_PER_SEC)

typedef void task_handler(struct operator_state *op, struct ao_task *t);

static task_handler *const handlers[_TASK_TYPE_MAX] = {
    [TASK_GLOBAL_HOOK_RUN] = hook_task_handle,
    [TASK_MODULE_HOOK_RUN] = hook_task_handle,
    [TASK_CONVERGE] = converge_handle,
    [TASK_MODULE_RUN] = module_run_handle,
    [TASK_MODULE_DELETE] = module_delete_handle,
    [TASK_MODULE_PURGE] = module_purge_handle,
    [TASK_KUBE_SYNC] = global_sync_handle,
    [TASK_MODULE_GROUP_RUN] = module_group_handle,
    [TASK_MODULE_ENSURE_CRDS] = module_crds_handle,
};

/*
 * What the handler logs while it starts the task carries the task's context (tasks_log_context),
 * copied: a handler that finishes the task at once frees the strings the context points at.
 */
static void handle_task(struct ao_task *t, void *userdata)
{
        struct ao_log_context_copy ctx;
        struct ao_log_context from = tasks_log_context(t);
        ao_log_context_copy_init(&ctx, &from);
        const struct ao_log_context *prev = ao_log_context_swap(&ctx.ctx);
        handlers[ao_task_type(t)](userdata, t);
        ao_log_context_swap(prev);
        ao_log_context_copy_done(&ctx);
}

/* A Synchronization run merged into the one starting now: its binding goes live too. */
static void unlock_merged_sync(const struct ao_task *t)
{
        int type = ao_task_type(t);
        if (type != TASK_GLOBAL_HOOK_RUN && type != TASK_MODULE_HOOK_RUN)
                return;
        const struct hook_task *ht = ao_task_payload(t);
        if (ht->kube_sync)
                bindings_unlock(ht->owner, ht->hook, ht->kube_binding);
}

/* During the start-up converge, say how far it got, at most once a second: "converge: 12/40 tasks". */
static void log_progress(struct operator_state *op)
{
        if (op->first_converge_done || !op->converge_running)
                return;
        op->converge_tasks_done++;
        uint64_t now = ao_clock_now_usec();
        if (now - op->converge_progress_usec < AO_USEC_PER_SEC)
                return;
        op->converge_progress_usec = now;
        size_t waiting = ao_queue_length(tasks_queue(op, AO_QUEUE_MAIN));
        /* About the whole converge, not the task whose end is logged: none of its context. */
        const struct ao_log_context *prev = ao_log_context_swap(NULL);
        ao_log(AO_LOG_INFO, "converge: %zu/%zu tasks", op->converge_tasks_done,
               op->converge_tasks_done + waiting);
        ao_log_context_swap(prev);
}

static void on_task_removed(struct ao_task *t, void *userdata)
{
        unlock_merged_sync(t);
        log_progress(userdata);
}

/* Queued runs of one hook that merge keep only the last context of each group (binding-context.h). */
static void compact_binding_contexts(struct cJSON *contexts, void *userdata)
{
        ao_binding_contexts_combine(contexts, NULL);
}

/* ---- sampling: tasks_queue_length and tasks_queue_head_info ------------------------------------ */

static bool any_task(const struct ao_task *t, void *userdata)
{
        (void) t, (void) userdata;
        return true;
}

/*
 * What @t is about. A group run names no module, as the Go operator reports its
 * ParallelModuleRun, so that joins on the module label find only a module's own tasks.
 */
static struct queue_head head_of(struct ao_queue *q, const struct ao_task *t)
{
        struct queue_head h = {.queue = ao_queue_name(q),
                               .module = "",
                               .task_type = tasks_type_name(ao_task_type(t)),
                               .hook = ""};
        switch ((enum task_type) ao_task_type(t)) {
        case TASK_GLOBAL_HOOK_RUN:
        case TASK_MODULE_HOOK_RUN: {
                const struct hook_task *ht = ao_task_payload(t);
                const char *module = hook_owner_module_name(ht->owner);
                h.module = module ? module : "";
                h.hook = ht->hook->name;
                break;
        }
        case TASK_MODULE_RUN:
        case TASK_MODULE_DELETE:
        case TASK_MODULE_PURGE:
        case TASK_MODULE_ENSURE_CRDS: {
                const struct module_task *mt = ao_task_payload(t);
                h.module = mt->module ? mt->module->name : mt->release;
                break;
        }
        default:
                break;
        }
        return h;
}

static void sample_queues(struct operator_state *op)
{
        op_metrics_sample_queues(op);
        size_t n = 0, n_queues = ao_queues_count(op->queues);
        struct queue_head *heads = ao_xcalloc(n_queues + 1, sizeof(*heads));
        for (size_t i = 0; i < n_queues; i++) {
                struct ao_queue *q = ao_queues_at(op->queues, i);
                struct ao_task *t = ao_queue_find(q, true, any_task, NULL);
                if (t)
                        heads[n++] = head_of(q, t);
        }
        op_metrics_queue_heads(op, heads, n);
        free(heads);
}

static int on_queue_sample(struct ao_source *s, uint64_t now, void *userdata)
{
        sample_queues(userdata);
        return ao_source_set_time(s, now + QUEUE_SAMPLE_USEC);
}

int engine_start(struct operator_state *op, struct ao_error *reterr)
{
        struct ao_queues_options options = {
            .handler = handle_task,
            .on_task_removed = on_task_removed,
            .compact_contexts = compact_binding_contexts,
            .userdata = op,
            .retry_scale = op->settings->retry_delay_scale,
        };
        int r = ao_queues_new(op->reactor, &options, &op->queues, reterr);
        if (r < 0)
                return r;
        r = ao_reactor_add_time_relative(op->reactor, &op->queue_sampler, QUEUE_SAMPLE_USEC, on_queue_sample,
                                         op);
        if (r < 0)
                return ao_error_set(reterr, r, "cannot arm the queue sampling timer: %s", strerror(-r));
        return 0;
}

void engine_done(struct operator_state *op)
{
        op->queue_sampler = ao_source_free(op->queue_sampler);
        op->queues = ao_queues_free(op->queues);
}
