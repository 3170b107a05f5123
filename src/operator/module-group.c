/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handler of TASK_MODULE_GROUP_RUN: the runs of the enabled modules of one order, several at
 * once (at most module_job_parallelism()), as the Go operator's parallel module runs do. Modules
 * of different orders keep their order because the group is one task in main: what follows it
 * starts when every member's run has succeeded. A member whose run fails is retried after the
 * queue's back-off on its own while the others go on; the task's description in `queue list`
 * names the members running.
 */
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/backoff.h"
#include "ao/log.h"
#include "ao/queue.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "internal.h"

static void start_members(struct module_group_task *g);

static void describe(struct module_group_task *g)
{
        _cleanup_free_ char *description = tasks_module_group_description(g);
        ao_task_set_description(g->task, description);
        op_metrics_parallel_runs(g->op, g->running);
}

/* Every member is done: the task is. */
static bool finish_if_done(struct module_group_task *g)
{
        if (g->done < g->n)
                return false;
        struct ao_task *t = TAKE_PTR(g->task);
        op_metrics_parallel_runs(g->op, 0);
        ao_task_finish(t, AO_TASK_SUCCESS);
        return true;
}

static int on_retry(struct ao_source *s, uint64_t now, void *userdata)
{
        (void) s, (void) now;
        struct group_member *m = userdata;
        m->state = MEMBER_WAITING;
        start_members(m->group);
        return 0;
}

/* A failed member waits out the queue's back-off; the others are not held back meanwhile. */
static void retry_later(struct group_member *m)
{
        struct operator_state *op = m->group->op;
        uint64_t delay =
            ao_backoff_scale_usec(op->settings->retry_delay_scale, ao_queue_backoff_usec(m->failures++));
        m->state = MEMBER_RETRYING;
        if (!m->retry && ao_reactor_add_time_relative(op->reactor, &m->retry, delay, on_retry, m) < 0) {
                m->state = MEMBER_WAITING; /* no timer: the next start tries it again */
                return;
        }
        (void) ao_source_set_time_relative(m->retry, delay);
        (void) ao_source_set_enabled(m->retry, AO_SOURCE_ONESHOT);
        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", m->module->name}),
                    "module '%s': its run in a parallel group failed, retrying in %.1fs", m->module->name,
                    (double) delay / 1e6);
}

static void on_member_done(struct operator_state *op, struct module *mod, bool ok, void *userdata)
{
        struct group_member *m = userdata;
        struct module_group_task *g = m->group;
        g->running--;
        if (ok && mod->isolated) {
                mod->isolated = false;
                readiness_update(op);
        }
        if (ok || readiness_isolate(op, mod, g->activation)) {
                m->state = MEMBER_DONE;
                g->done++;
        } else {
                retry_later(m);
        }
        start_members(g);
}

static void start_member(struct module_group_task *g, struct group_member *m)
{
        /* As a lone module run: a module disabled since the group was planned is dropped. */
        if (!m->module->enabled) {
                m->state = MEMBER_DONE;
                g->done++;
                return;
        }
        m->state = MEMBER_RUNNING;
        g->running++;
        struct module_job_spec spec = {.mod = m->module,
                                       .activation = g->activation,
                                       .task = g->task,
                                       .done = on_member_done,
                                       .userdata = m};
        module_job_run(g->op, &spec);
}

/*
 * Start waiting members up to the limit. A job may end before module_job_run() returns, and its
 * callback lands here again: the outer call goes on (the flag), so the task is finished, and the
 * group freed, only at the very end of the outermost call.
 */
static void start_members(struct module_group_task *g)
{
        if (g->starting)
                return;
        g->starting = true;
        size_t limit = module_job_parallelism(g->op);
        for (bool started = true; started;) {
                started = false;
                for (size_t i = 0; i < g->n && g->running < limit; i++)
                        if (g->members[i].state == MEMBER_WAITING) {
                                start_member(g, &g->members[i]);
                                started = true;
                        }
        }
        g->starting = false;
        if (!finish_if_done(g))
                describe(g);
}

static void log_group(const struct module_group_task *g, size_t limit)
{
        struct ao_strbuf names = {0};
        for (size_t i = 0; i < g->n; i++)
                ao_strbuf_appendf(&names, "%s'%s'", i ? ", " : "", g->members[i].module->name);
        ao_log(AO_LOG_INFO, "modules %s (order %u) run in parallel, at most %zu at a time", names.buf,
               g->members[0].module->order, limit);
        ao_strbuf_done(&names);
}

void module_group_handle(struct operator_state *op, struct ao_task *t)
{
        struct module_group_task *g = ao_task_payload(t);
        g->op = op;
        g->task = t;
        log_group(g, module_job_parallelism(op));
        start_members(g);
}
