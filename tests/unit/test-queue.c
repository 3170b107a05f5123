/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Task queues on a real reactor. No sleeps: retries use a tiny back-off
 * scale and the loop is driven until a condition holds (with a generous
 * deadline). meson runs this file once per backend with
 * AO_REACTOR=epoll|io_uring; an unavailable io_uring skips (exit 77).
 */
#include <cjson/cJSON.h>

#include "../tap.h"
#include "reactor-backend.h"
#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/queue.h"
#include "ao/reactor.h"

#define USEC 1000000ULL
#define MSEC 1000ULL

/* 5 s becomes 500 µs. */
#define TINY_SCALE 0.0001

static struct ao_reactor *reactor;

/* What happened to one task, kept outside the task so it can be read after the task is gone. */
struct rec {
        unsigned started, removed, freed;
};

struct payload {
        struct rec *rec;
        int phase;
};

static void payload_free(void *p)
{
        struct payload *pl = p;
        pl->rec->freed++;
        free(pl);
}

static struct payload *payload_new(struct rec *rec)
{
        struct payload *pl = ao_xcalloc(1, sizeof(*pl));
        pl->rec = rec;
        return pl;
}

/*
 * The handler's state. What a started task does is chosen by its description's prefix:
 *   "ok:"    finish with SUCCESS at once
 *   "hold:"  stay running until the test finishes it (h.held)
 *   "later:" finish with SUCCESS from a 5 ms timer
 * unless the test installs on_start, which then decides.
 */
struct harness {
        struct ao_queues *qs;
        void (*on_start)(struct harness *h, struct ao_task *t);
        char log[16384];
        size_t n_started;
        size_t n_removed;
        struct ao_task *held[8];
        size_t n_held;
        uint64_t now[8];    /* ao_reactor_now() at the first starts */
        uint64_t wait[8];   /* ao_task_wait_usec() at the first starts */
        unsigned fails[8];  /* ao_task_failures() at the first starts */
        char *contexts[16]; /* the binding contexts of the first starts, as JSON */
        int counter;
};

static struct harness h;

static void log_start(struct ao_task *t)
{
        size_t len = strlen(h.log);
        snprintf(h.log + len, sizeof(h.log) - len, "%s%s", len ? " " : "", ao_task_description(t));
        size_t i = h.n_started++;
        if (i < AO_ARRAY_SIZE(h.now)) {
                h.now[i] = ao_reactor_now(reactor);
                h.wait[i] = ao_task_wait_usec(t);
                h.fails[i] = ao_task_failures(t);
        }
        if (i < AO_ARRAY_SIZE(h.contexts)) {
                cJSON *c = ao_task_binding_contexts(t);
                h.contexts[i] = c ? cJSON_PrintUnformatted(c) : ao_xstrdup("null");
        }
}

static int finish_later(struct ao_source *s, uint64_t now, void *userdata)
{
        ao_task_finish(userdata, AO_TASK_SUCCESS);
        return 0;
}

static void handler(struct ao_task *t, void *userdata)
{
        if (userdata != &h)
                tap_bail("handler: wrong userdata");
        struct payload *pl = ao_task_payload(t);
        if (pl)
                pl->rec->started++;
        log_start(t);
        if (h.on_start) {
                h.on_start(&h, t);
                return;
        }
        const char *d = ao_task_description(t);
        if (strncmp(d, "ok:", 3) == 0)
                ao_task_finish(t, AO_TASK_SUCCESS);
        else if (strncmp(d, "hold:", 5) == 0) {
                if (h.n_held == AO_ARRAY_SIZE(h.held))
                        tap_bail("too many held tasks");
                h.held[h.n_held++] = t;
        } else if (strncmp(d, "later:", 6) == 0) {
                if (ao_reactor_add_time_relative(reactor, NULL, 5 * MSEC, finish_later, t) < 0)
                        tap_bail("adding a timer failed");
        } else
                tap_bail("task without a known prefix");
}

static void on_removed(struct ao_task *t, void *userdata)
{
        h.n_removed++;
        struct payload *pl = ao_task_payload(t);
        if (pl)
                pl->rec->removed++;
}

static void harness_reset(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(h.contexts); i++)
                free(h.contexts[i]);
        memset(&h, 0, sizeof(h));
}

/* The operator's rule for merged contexts: the last of each group stays. */
static void compact(struct cJSON *contexts, void *userdata)
{
        ao_binding_contexts_combine(contexts, NULL);
}

static struct ao_queues *new_queues(double scale)
{
        harness_reset();
        struct ao_queues_options o = {.handler = handler,
                                      .userdata = &h,
                                      .retry_scale = scale,
                                      .on_task_removed = on_removed,
                                      .compact_contexts = compact};
        struct ao_error err = {0};
        if (ao_queues_new(reactor, &o, &h.qs, &err) < 0)
                tap_bail(err.msg);
        return h.qs;
}

/* Take the held task @i (in start order). */
static struct ao_task *held(size_t i)
{
        if (i >= h.n_held)
                tap_bail("no such held task");
        return h.held[i];
}

static struct ao_task *push_full(struct ao_queue *q, const char *description, const char *key, int type,
                                 const char *contexts, struct rec *rec)
{
        struct ao_task_spec spec = {
            .type = type,
            .description = description,
            .combine_key = key,
            .binding_contexts = contexts ? cJSON_Parse(contexts) : NULL,
            .payload = rec ? payload_new(rec) : NULL,
            .payload_free = payload_free,
        };
        if (contexts && !spec.binding_contexts)
                tap_bail("bad JSON in test");
        return ao_queue_push_tail(q, &spec);
}

static struct ao_task *push(struct ao_queue *q, const char *description, struct rec *rec)
{
        return push_full(q, description, NULL, 0, NULL, rec);
}

/* Iterate the loop until @cond holds or 10 s pass; evaluates to @cond. */
#define RUN_UNTIL(cond)                                                   \
        ({                                                                \
                uint64_t deadline_ = ao_clock_now_usec() + 10 * USEC;     \
                while (!(cond) && ao_clock_now_usec() < deadline_)        \
                        if (ao_reactor_run_once(reactor, 100 * MSEC) < 0) \
                                tap_bail("ao_reactor_run_once failed");   \
                (cond);                                                   \
        })

/* A few iterations with a short wait each: whatever is due now has happened afterwards. */
static void run_a_little(void)
{
        for (int i = 0; i < 5; i++)
                if (ao_reactor_run_once(reactor, 2 * MSEC) < 0)
                        tap_bail("ao_reactor_run_once failed");
}

static bool always(const struct ao_task *t, void *userdata)
{
        return true;
}

static bool has_type(const struct ao_task *t, void *userdata)
{
        return ao_task_type(t) == *(const int *) userdata;
}

static bool has_description(const struct ao_task *t, void *userdata)
{
        return strcmp(ao_task_description(t), userdata) == 0;
}

static bool recs_once(const struct rec *recs, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (recs[i].removed != 1 || recs[i].freed != 1)
                        return false;
        return true;
}

/* --------------------------------------------------------------------------- */

static void test_fifo(void)
{
        size_t sources = ao_reactor_count_sources(reactor);
        struct ao_queues *qs = new_queues(0);
        struct ao_queue *main_q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        tap_ok(main_q && ao_queues_count(qs) == 1 && ao_queues_at(qs, 0) == main_q,
               "fifo: main exists from the start");
        tap_is_str(ao_queue_name(main_q), "main", "fifo: named main");
        tap_ok(ao_queue_is_idle(main_q), "fifo: main idle at first");

        struct rec recs[3] = {0};
        struct ao_task *a = push(main_q, "ok:a", &recs[0]);
        push(main_q, "ok:b", &recs[1]);
        push(main_q, "ok:c", &recs[2]);
        tap_ok(a && ao_task_queue(a) == main_q && ao_task_type(a) == 0 && !ao_task_combine_key(a) &&
                   !ao_task_allow_failure(a) && ao_task_failures(a) == 0 && ao_task_wait_usec(a) == 0,
               "fifo: a new task's accessors");
        tap_is_str(ao_task_description(a), "ok:a", "fifo: description copied");
        tap_is_int(h.n_started, 0, "fifo: pushing never calls the handler");
        tap_is_int(ao_queue_length(main_q), 3, "fifo: three queued");
        tap_ok(!ao_queue_is_idle(main_q), "fifo: not idle with tasks");

        tap_ok(RUN_UNTIL(h.n_started == 3 && ao_queue_is_idle(main_q)), "fifo: all three ran");
        tap_is_str(h.log, "ok:a ok:b ok:c", "fifo: in push order");
        tap_is_int(ao_queue_length(main_q), 0, "fifo: queue empty");
        tap_is_int(h.n_removed, 3, "fifo: on_task_removed three times");
        tap_ok(recs_once(recs, 3), "fifo: each removed and its payload freed once");

        ao_queues_free(qs);
        tap_is_int(ao_reactor_count_sources(reactor), sources, "fifo: sources released");
}

static void test_two_queues(void)
{
        struct ao_queues *qs = new_queues(0);
        struct ao_queue *qa = ao_queues_get(qs, "a", true);
        struct ao_queue *qb = ao_queues_get(qs, "b", true);
        tap_ok(ao_queues_get(qs, "a", true) == qa && ao_queues_get(qs, "nope", false) == NULL,
               "queues: get finds, creates only when asked");
        tap_ok(ao_queues_count(qs) == 3 && ao_queues_at(qs, 1) == qa && ao_queues_at(qs, 2) == qb &&
                   ao_queues_at(qs, 3) == NULL,
               "queues: in creation order");

        push(qa, "hold:a1", NULL);
        push(qa, "ok:a2", NULL);
        push(qb, "ok:b1", NULL);
        push(qb, "ok:b2", NULL);
        tap_ok(RUN_UNTIL(ao_queue_is_idle(qb)), "queues: b ran while a's first task is still running");
        tap_is_str(h.log, "hold:a1 ok:b1 ok:b2", "queues: a2 waits for a1, b does not");
        tap_is_int(ao_queue_length(qa), 2, "queues: a holds the running task and a2");
        run_a_little();
        tap_is_int(h.n_started, 3, "queues: nothing else starts while a1 runs");

        /* Finishing outside any callback: the next start still comes from the loop. */
        ao_task_finish(held(0), AO_TASK_SUCCESS);
        tap_is_int(h.n_started, 3, "queues: finish does not call the handler");
        tap_ok(RUN_UNTIL(ao_queue_is_idle(qa)), "queues: a2 ran after a1 finished");
        tap_is_str(h.log, "hold:a1 ok:b1 ok:b2 ok:a2", "queues: order");
        ao_queues_free(qs);
}

static void test_finish_later(void)
{
        struct ao_queues *qs = new_queues(0);
        struct ao_queue *q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        push(q, "later:a", NULL);
        push(q, "ok:b", NULL);
        push(q, "later:c", NULL);
        push(q, "ok:d", NULL);
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "later: all ran");
        tap_is_str(h.log, "later:a ok:b later:c ok:d", "later: each waits for the one before");
        tap_ok(h.wait[1] >= 5 * MSEC && h.wait[3] >= 5 * MSEC,
               "later: the task behind a 5 ms one waited >= 5 ms (%" PRIu64 ", %" PRIu64 " µs)", h.wait[1],
               h.wait[3]);
        tap_ok(h.now[1] >= h.now[0] + 5 * MSEC, "later: started after the timer");
        tap_ok(ao_queue_wait_usec_total(q) >= h.wait[0] + h.wait[1] + h.wait[2] + h.wait[3] &&
                   ao_queue_wait_usec_total(q) >= 10 * MSEC,
               "later: the queue sums the waits (%" PRIu64 " µs)", ao_queue_wait_usec_total(q));
        ao_queues_free(qs);
}

/* "flaky" fails until its fourth start; "behind" must wait for it. */
static void on_start_flaky(struct harness *hh, struct ao_task *t)
{
        struct ao_queue *q = ao_task_queue(t);
        if (strcmp(ao_task_description(t), "flaky") != 0) {
                ao_task_finish(t, AO_TASK_SUCCESS);
                return;
        }
        if (ao_queue_length(q) != 2 || ao_queue_find(q, true, always, NULL) != t)
                hh->counter = -1000; /* not at the head with "behind" after it */
        if (ao_task_failures(t) < 3)
                ao_task_finish(t, AO_TASK_FAIL);
        else
                ao_task_finish(t, AO_TASK_SUCCESS);
}

static void test_fail_retry(void)
{
        struct ao_queues *qs = new_queues(TINY_SCALE);
        h.on_start = on_start_flaky;
        struct ao_queue *q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        struct rec rec = {0};
        push(q, "flaky", &rec);
        push(q, "behind", NULL);

        tap_ok(RUN_UNTIL(h.n_started >= 1), "fail: first attempt");
        struct ao_task *t = ao_queue_find(q, true, always, NULL);
        tap_ok(t && strcmp(ao_task_description(t), "flaky") == 0 && ao_task_failures(t) == 1,
               "fail: the task stays at the head with one failure");
        tap_is_int(ao_queue_length(q), 2, "fail: nothing removed");
        tap_is_str(h.log, "flaky", "fail: 'behind' did not start");

        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "fail: retried until it succeeded");
        tap_is_str(h.log, "flaky flaky flaky flaky behind", "fail: 'behind' waited for the success");
        tap_ok(h.fails[0] == 0 && h.fails[1] == 1 && h.fails[2] == 2 && h.fails[3] == 3,
               "fail: failures counted 0, 1, 2, 3 at the starts");
        tap_is_int(h.counter, 0, "fail: at every attempt it was the head with 'behind' waiting");
        /* Each retry waited at least the scaled back-off: 5 s, 6 s, 7 s minimum → 500, 600, 700 µs. */
        tap_ok(h.wait[1] >= 500 && h.wait[2] >= 600 && h.wait[3] >= 700,
               "fail: retries waited the back-off (%" PRIu64 ", %" PRIu64 ", %" PRIu64 " µs)", h.wait[1],
               h.wait[2], h.wait[3]);
        tap_ok(rec.started == 4 && rec.removed == 1 && rec.freed == 1,
               "fail: removed once, after the success");
        tap_is_int(ao_queue_allowed_failures(q), 0, "fail: no allowed failures");
        ao_queues_free(qs);
}

static void on_start_fail(struct harness *hh, struct ao_task *t)
{
        ao_task_finish(t, strncmp(ao_task_description(t), "fail:", 5) == 0 ? AO_TASK_FAIL : AO_TASK_SUCCESS);
}

static void test_allow_failure(void)
{
        struct ao_queues *qs = new_queues(TINY_SCALE);
        h.on_start = on_start_fail;
        struct ao_queue *q = ao_queues_get(qs, "w", true);
        struct rec recs[3] = {0};
        for (int i = 0; i < 2; i++) {
                struct ao_task_spec spec = {.description = "fail:allowed",
                                            .allow_failure = true,
                                            .payload = payload_new(&recs[i]),
                                            .payload_free = payload_free};
                struct ao_task *t = ao_queue_push_tail(q, &spec);
                tap_ok(ao_task_allow_failure(t), "allow_failure: set on task %d", i);
        }
        push(q, "next", &recs[2]);
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "allow_failure: the queue drained");
        tap_is_str(h.log, "fail:allowed fail:allowed next", "allow_failure: no retry");
        tap_is_int(ao_queue_allowed_failures(q), 2, "allow_failure: counted twice");
        tap_ok(recs_once(recs, 3), "allow_failure: each removed and freed once");
        ao_queues_free(qs);
}

/* A phase machine: phase 0 pushes two subtasks before itself and returns KEEP; phase 1 finishes. */
static void on_start_phases(struct harness *hh, struct ao_task *t)
{
        struct payload *pl = ao_task_payload(t);
        if (strcmp(ao_task_description(t), "machine") != 0 || !pl || pl->phase != 0) {
                ao_task_finish(t, AO_TASK_SUCCESS);
                return;
        }
        struct ao_queue *q = ao_task_queue(t);
        ao_queue_push_before(t, &(struct ao_task_spec){.description = "sub1"});
        ao_queue_push_before(t, &(struct ao_task_spec){.description = "sub2"});
        /* A push_head while the machine runs at the head: first among the waiting tasks. */
        ao_queue_push_head(q, &(struct ao_task_spec){.description = "first"});
        /* push_after the running task. */
        ao_queue_push_after(t, &(struct ao_task_spec){.description = "after"});
        hh->counter = (int) ao_queue_length(q);
        pl->phase = 1;
        ao_task_set_description(t, "machine:phase1");
        ao_task_finish(t, AO_TASK_KEEP);
}

static void test_keep(void)
{
        struct ao_queues *qs = new_queues(TINY_SCALE);
        h.on_start = on_start_phases;
        struct ao_queue *q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        struct rec rec = {0};
        push(q, "machine", &rec);
        push(q, "tail", NULL);
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "keep: all done");
        /*
         * While "machine" ran: [first sub1 sub2 machine after tail] — push_head went before sub1
         * because the head (sub1) was not running; the running task was no longer the head.
         */
        tap_is_str(h.log, "machine first sub1 sub2 machine:phase1 after tail",
                   "keep: subtasks first, then the machine again, then the rest");
        tap_is_int(h.counter, 6, "keep: six tasks while the machine ran");
        tap_ok(h.fails[4] == 0, "keep: KEEP does not count a failure");
        tap_ok(rec.started == 2 && rec.removed == 1 && rec.freed == 1, "keep: removed once, at the end");

        /* push_head with a running head goes right after it. */
        ao_queues_free(qs);
        qs = new_queues(0);
        q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        push(q, "hold:h", NULL);
        push(q, "ok:w", NULL);
        tap_ok(RUN_UNTIL(h.n_started == 1), "push_head: head running");
        ao_queue_push_head(q, &(struct ao_task_spec){.description = "ok:x"});
        struct ao_task *second = ao_queue_find(q, false, always, NULL);
        tap_is_str(second ? ao_task_description(second) : NULL, "ok:x",
                   "push_head: right after the running head");
        ao_task_finish(held(0), AO_TASK_SUCCESS);
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "push_head: drained");
        tap_is_str(h.log, "hold:h ok:x ok:w", "push_head: order");

        /* Before anything runs, push_head is simply the head. */
        push(q, "ok:y", NULL);
        ao_queue_push_head(q, &(struct ao_task_spec){.description = "ok:z"});
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "push_head: drained again");
        tap_is_str(h.log, "hold:h ok:x ok:w ok:z ok:y", "push_head: idle queue, at the head");
        ao_queues_free(qs);
}

static void test_combine(void)
{
        struct ao_queues *qs = new_queues(TINY_SCALE);
        struct ao_queue *q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        struct rec recs[11] = {0};
        push(q, "hold:block", &recs[0]);
        push_full(q, "ok:h1-1", "hook1", 1, "[{\"binding\":\"a\",\"groupName\":\"g\"}]", &recs[1]);
        push_full(q, "ok:h1-2", "hook1", 1, "[{\"binding\":\"b\",\"groupName\":\"g\"}]", &recs[2]);
        push_full(q, "ok:h1-3", "hook1", 1, "[{\"binding\":\"c\"}]", &recs[3]);
        push_full(q, "ok:h1-type2", "hook1", 2, "[{\"binding\":\"d\"}]", &recs[4]);
        push_full(q, "ok:h1-4", "hook1", 1, "[{\"binding\":\"e\"}]", &recs[5]);
        push_full(q, "ok:h2", "hook2", 1, "[{\"binding\":\"f\"}]", &recs[6]);
        push_full(q, "ok:h1-5", "hook1", 1, "[{\"binding\":\"g\"}]", &recs[7]);
        /* Missing contexts: an array appears when something is merged. */
        push_full(q, "ok:h3-1", "hook3", 1, NULL, &recs[8]);
        push_full(q, "ok:h3-2", "hook3", 1, "[{\"binding\":\"x\"}]", &recs[9]);
        push_full(q, "ok:h4-1", "hook4", 1, NULL, &recs[10]);
        push_full(q, "ok:h4-2", "hook4", 1, NULL, NULL);
        push(q, "ok:nokey", NULL);
        push(q, "ok:nokey", NULL);
        tap_is_int(ao_queue_length(q), 14, "combine: fourteen queued");
        tap_ok(RUN_UNTIL(h.n_started == 1), "combine: blocker running");
        tap_is_int(ao_queue_length(q), 14, "combine: nothing merged before a task reaches the head");

        ao_task_finish(held(0), AO_TASK_SUCCESS);
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "combine: drained");
        tap_is_str(h.log,
                   "hold:block ok:h1-1 ok:h1-type2 ok:h1-4 ok:h2 ok:h1-5 ok:h3-1 ok:h4-1 ok:nokey ok:nokey",
                   "combine: merged runs start once, a different type or key stops the merge");
        tap_is_str(h.contexts[1], "[{\"binding\":\"b\",\"groupName\":\"g\"},{\"binding\":\"c\"}]",
                   "combine: contexts appended, the earlier one of the group dropped");
        tap_is_str(h.contexts[2], "[{\"binding\":\"d\"}]", "combine: other type alone");
        tap_is_str(h.contexts[3], "[{\"binding\":\"e\"}]", "combine: stopped by another key");
        tap_is_str(h.contexts[6], "[{\"binding\":\"x\"}]", "combine: head without contexts takes the merged");
        tap_is_str(h.contexts[7], "[]", "combine: nothing at all gives an empty array");
        tap_is_str(h.contexts[8], "null", "combine: unmerged without contexts stays without");
        tap_is_int(h.n_removed, 14, "combine: on_task_removed for every task, merged ones included");
        tap_ok(recs_once(recs, 11), "combine: each removed and freed once");
        tap_ok(recs[2].started == 0 && recs[3].started == 0 && recs[9].started == 0,
               "combine: merged tasks never started");
        ao_queues_free(qs);
}

static void test_compaction(void)
{
        struct ao_queues *qs = new_queues(TINY_SCALE);
        struct ao_queue *q = ao_queues_get(qs, "c", true);
        push(q, "hold:block", NULL);
        tap_ok(RUN_UNTIL(h.n_started == 1), "compaction: blocker running");
        push_full(q, "ok:A-type2", "A", 2, "[{\"binding\":\"X\"}]", NULL);

        struct ao_task *first_a = NULL, *first_b = NULL, *got_198 = NULL;
        bool new_196 = false;
        for (int i = 0; i < 250; i++) {
                char d[32], ctx[64];
                const char *key = i % 2 ? "B" : "A";
                snprintf(d, sizeof(d), "ok:%s%d", key, i);
                snprintf(ctx, sizeof(ctx), "[{\"binding\":\"%s%d\"}]", key, i);
                size_t before = ao_queue_length(q);
                struct ao_task *t = push_full(q, d, key, 1, ctx, NULL);
                if (i == 0)
                        first_a = t;
                if (i == 1)
                        first_b = t;
                if (i == 198) {
                        got_198 = t;
                        tap_is_int(ao_queue_length(q), before + 1 - 99,
                                   "compaction: A's 100th push merged 100 tasks into one");
                }
                if (i == 196)
                        new_196 = t != first_a && strcmp(ao_task_description(t), "ok:A196") == 0;
        }
        tap_ok(got_198 == first_a, "compaction: the push that compacts returns the surviving task");
        tap_ok(new_196, "compaction: pushes below the threshold return the new task");
        /*
         * A (type 1) hit 101 waiting (with the type-2 task) on its 100th push: 100 merged into the
         * first; B on its 101st push (i = 201). Then 25 more A and 24 more B.
         */
        tap_is_int(ao_queue_length(q), 1 + 1 + 1 + 1 + 25 + 24, "compaction: length afterwards");
        tap_is_int(h.n_removed, 99 + 100, "compaction: removed tasks reported");
        cJSON *ca = ao_task_binding_contexts(first_a), *cb = ao_task_binding_contexts(first_b);
        tap_is_int(cJSON_GetArraySize(ca), 100, "compaction: A's first holds 100 contexts");
        tap_is_int(cJSON_GetArraySize(cb), 101, "compaction: B's first holds 101 contexts");
        tap_is_str(cJSON_GetObjectItem(cJSON_GetArrayItem(ca, 0), "binding")->valuestring, "A0",
                   "compaction: in queue order (first)");
        tap_is_str(cJSON_GetObjectItem(cJSON_GetArrayItem(ca, 99), "binding")->valuestring, "A198",
                   "compaction: in queue order (last)");
        tap_is_str(cJSON_GetObjectItem(cJSON_GetArrayItem(cb, 100), "binding")->valuestring, "B201",
                   "compaction: B in queue order");
        int type2 = 2;
        struct ao_task *x = ao_queue_find(q, true, has_type, &type2);
        tap_ok(x && cJSON_GetArraySize(ao_task_binding_contexts(x)) == 1, "compaction: other type untouched");

        ao_task_finish(held(0), AO_TASK_SUCCESS);
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "compaction: drained");
        /* [X A0 B1 A200 A202 B203 A204 ... B249]: A200 and A202 are adjacent and combine at the head. */
        tap_is_int(h.n_started, 52, "compaction: every surviving task ran once, A200 with A202");
        tap_is_str(h.contexts[4], "[{\"binding\":\"A200\"},{\"binding\":\"A202\"}]",
                   "compaction: then head-combined");
        ao_queues_free(qs);

        /* Many tasks and keys: nothing quadratic gets in the way of draining 20000 tasks. */
        qs = new_queues(TINY_SCALE);
        q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        for (int i = 0; i < 20000; i++) {
                char key[16];
                snprintf(key, sizeof(key), "k%d", i % 1000);
                struct ao_task_spec spec = {.description = "ok:many", .combine_key = key, .type = i % 3};
                ao_queue_push_tail(q, &spec);
        }
        tap_ok(ao_queue_length(q) == 20000, "many: 20000 queued");
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "many: drained (%zu starts)", h.n_started);
        tap_is_int(h.n_removed, 20000, "many: every task removed once");
        ao_queues_free(qs);
}

static void test_throttle(void)
{
        struct ao_queues *qs = new_queues(TINY_SCALE);
        struct ao_queue *q = ao_queues_get(qs, "t", true);
        const uint64_t period = 20 * MSEC;
        struct ao_throttle th = {.period_usec = period, .burst = 2};
        for (int i = 0; i < 3; i++) {
                char d[16];
                snprintf(d, sizeof(d), "ok:t%d", i);
                ao_queue_push_tail(q, &(struct ao_task_spec){.description = d, .throttle = &th});
        }
        tap_ok(RUN_UNTIL(h.n_started >= 2), "throttle: two started");
        tap_is_int(h.n_started, 2, "throttle: the third waits");
        tap_ok(h.now[1] == h.now[0], "throttle: the burst of two started at once");
        _cleanup_free_ char *status = ao_queue_status(q);
        tap_ok(strncmp(status, "waiting for a token ", 20) == 0, "throttle: status '%s'", status);
        tap_ok(RUN_UNTIL(h.n_started == 3), "throttle: the third started");
        tap_ok(h.now[2] >= h.now[0] + period,
               "throttle: not before a period passed (%" PRIu64 " µs after the first)", h.now[2] - h.now[0]);
        tap_ok(ao_queue_is_idle(q), "throttle: drained");

        /* An unthrottled task put before a throttled one does not wait for a token. */
        ao_queue_push_tail(q, &(struct ao_task_spec){.description = "ok:t3", .throttle = &th});
        ao_queue_push_head(q, &(struct ao_task_spec){.description = "ok:free"});
        tap_ok(RUN_UNTIL(ao_queue_is_idle(q)), "throttle: drained again");
        tap_is_str(h.log, "ok:t0 ok:t1 ok:t2 ok:free ok:t3", "throttle: order");
        ao_queues_free(qs);
}

static void test_backoff(void)
{
        tap_is_int(ao_queue_backoff_usec(0), 5 * USEC, "backoff: 0 failures before: exactly 5 s");
        for (unsigned n = 1; n <= 8; n++) {
                uint64_t lo = n <= 5 ? 5 * USEC + (USEC << (n - 1)) : 32 * USEC;
                uint64_t hi = n <= 5 ? lo + USEC - 100 * MSEC : 32 * USEC;
                bool ok = true, varied = false;
                uint64_t first = ao_queue_backoff_usec(n);
                for (int i = 0; i < 300; i++) {
                        uint64_t d = ao_queue_backoff_usec(n);
                        if (d < lo || d > hi || d % (100 * MSEC) != 0 || d > 32 * USEC)
                                ok = false;
                        if (d != first)
                                varied = true;
                }
                tap_ok(ok, "backoff: %u: within [%" PRIu64 ", %" PRIu64 "] ms, 100 ms steps", n,
                       (uint64_t) (lo / MSEC), (uint64_t) (hi / MSEC));
                if (n <= 5)
                        tap_ok(varied, "backoff: %u: jittered", n);
                else
                        tap_ok(!varied, "backoff: %u: the cap, no jitter", n);
        }
}

static void test_remove_find(void)
{
        struct ao_queues *qs = new_queues(TINY_SCALE);
        struct ao_queue *q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        struct rec recs[5] = {0};
        struct ao_task *run = push_full(q, "hold:run", NULL, 2, NULL, &recs[0]);
        tap_ok(RUN_UNTIL(h.n_started == 1), "remove: head running");
        push_full(q, "w1", NULL, 1, NULL, &recs[1]);
        push_full(q, "w2", NULL, 2, NULL, &recs[2]);
        push_full(q, "w3", NULL, 1, NULL, &recs[3]);
        push_full(q, "w4", NULL, 2, NULL, &recs[4]);

        int type = 2;
        tap_ok(ao_queue_find(q, true, has_type, &type) == run, "find: the running task when included");
        struct ao_task *w2 = ao_queue_find(q, false, has_type, &type);
        tap_is_str(w2 ? ao_task_description(w2) : NULL, "w2", "find: the first waiting match otherwise");
        tap_ok(ao_queue_find(q, true, has_description, "none") == NULL, "find: NULL without a match");

        tap_is_int(ao_queue_remove_if(q, has_type, &type), 2, "remove_if: w2 and w4, not the running task");
        tap_ok(recs[2].removed == 1 && recs[4].removed == 1 && recs[2].freed == 1 && recs[4].freed == 1,
               "remove_if: on_task_removed and payload_free for the removed");
        tap_ok(recs[0].removed == 0 && recs[1].removed == 0, "remove_if: the others untouched");
        tap_is_int(ao_queue_length(q), 3, "remove_if: three left");
        tap_is_int(ao_queue_remove_if(q, always, NULL), 2, "remove_if: everything but the running task");
        tap_is_int(ao_queue_length(q), 1, "remove_if: the running task stays");
        ao_task_finish(run, AO_TASK_SUCCESS);
        tap_ok(ao_queue_is_idle(q), "remove_if: idle after the finish");
        tap_ok(recs_once(recs, 5), "remove_if: every task removed once");
        run_a_little();
        tap_is_int(h.n_started, 1, "remove_if: removed tasks never started");
        ao_queues_free(qs);
}

/* For test_dump: hold "running", fail "fail:*", finish the rest. */
static void on_start_dump(struct harness *hh, struct ao_task *t)
{
        if (strcmp(ao_task_description(t), "running") == 0) {
                hh->held[hh->n_held++] = t;
                return;
        }
        on_start_fail(hh, t);
}

/* The number right after @prefix in @text ("retry 1 in 4.9s" -> 4.9), or -1. */
static double seconds_after(const char *text, const char *prefix)
{
        const char *p = strstr(text, prefix);
        return p ? strtod(p + strlen(prefix), NULL) : -1;
}

/* Replace the number after @prefix with @with (shorter than any number: the rest moves up). */
static void mask_seconds(char *text, const char *prefix, const char *with)
{
        char *p = strstr(text, prefix);
        if (!p)
                return;
        p += strlen(prefix);
        char *end = p;
        while ((*end >= '0' && *end <= '9') || *end == '.')
                end++;
        size_t n = strlen(with);
        if ((size_t) (end - p) < n)
                return;
        memcpy(p, with, n);
        memmove(p + n, end, strlen(end) + 1);
}

/* @text with the seconds of both waiting statuses masked (they depend on this machine's speed). */
static char *masked(char *text)
{
        mask_seconds(text, "retry 1 in ", "N");
        mask_seconds(text, "token ", "N");
        return text;
}

/* The Go operator's documents and text, from the queues test_dump() sets up. */
static void test_peer_documents(struct ao_queues *qs)
{
        static const char active[] = "Queue 'main': length 2, status: 'running running'\n\n"
                                     " 1. running\n"
                                     " 2. waiting\n"
                                     "\n"
                                     "Queue 'fresh': length 1, status: 'starting'\n\n"
                                     " 1. new\n"
                                     "\n"
                                     "Queue 'retry': length 1, status: 'retry 1 in Ns after failure'\n\n"
                                     " 1. fail:once:failures 1\n"
                                     "\n"
                                     "Queue 'throttled': length 1, status: 'waiting for a token Ns'\n\n"
                                     " 1. t2\n";
        static const char summary[] = "\nSummary:\n"
                                      "- 'main' queue: 2 tasks.\n"
                                      "- 4 other queues (3 active, 1 empty): 3 tasks.\n"
                                      "- total 5 tasks to handle.\n";
        _cleanup_free_ char *text = masked(ao_queues_text_list(qs, false));
        _cleanup_free_ char *want = ao_xasprintf("%s%s", active, summary);
        tap_is_str(text, want, "queue list text: active queues, main first, then the summary");
        _cleanup_free_ char *text_empty = masked(ao_queues_text_list(qs, true));
        _cleanup_free_ char *want_empty = ao_xasprintf("%s\nEmpty queues (1):\n- empty\n%s", active, summary);
        tap_is_str(text_empty, want_empty, "queue list -e text: the empty queues listed");

        cJSON *doc = ao_queues_dump_list(qs, true);
        _cleanup_free_ char *json = masked(cJSON_PrintUnformatted(doc));
        cJSON_Delete(doc);
        tap_is_str(
            json,
            "{\"active\":[{\"name\":\"main\",\"tasksCount\":2,\"status\":\"running running\",\"tasks\":["
            "{\"index\":1,\"description\":\"running\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":2},"
            "{\"index\":2,\"description\":\"waiting\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":0}]},"
            "{\"name\":\"fresh\",\"tasksCount\":1,\"status\":\"starting\",\"tasks\":["
            "{\"index\":1,\"description\":\"new\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":0}]},"
            "{\"name\":\"retry\",\"tasksCount\":1,\"status\":\"retry 1 in Ns after failure\",\"tasks\":["
            "{\"index\":1,\"description\":\"fail:once\",\"failures\":1,\"waitingSeconds\":0,\"contexts\":1}]}"
            ","
            "{\"name\":\"throttled\",\"tasksCount\":1,\"status\":\"waiting for a token Ns\",\"tasks\":["
            "{\"index\":1,\"description\":\"t2\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":0}]}],"
            "\"empty\":[{\"name\":\"empty\",\"tasksCount\":0}],"
            "\"summary\":{\"mainQueueTasks\":2,\"otherQueues\":{\"active\":3,\"empty\":1,\"tasks\":3},"
            "\"totalTasks\":5}}",
            "queue list JSON: the Go operator's keys, ours added to each task");
        doc = ao_queues_dump_list(qs, false);
        tap_ok(!cJSON_GetObjectItemCaseSensitive(doc, "empty"), "queue list JSON without -e: no empty list");
        cJSON_Delete(doc);

        _cleanup_free_ char *main_text = ao_queues_text_main(qs);
        tap_is_str(main_text,
                   "Queue 'main': length 2, status: 'running running'\n\n 1. running\n 2. waiting\n",
                   "queue main text");
        doc = ao_queues_dump_main(qs);
        _cleanup_free_ char *main_json = cJSON_PrintUnformatted(doc);
        cJSON_Delete(doc);
        tap_is_str(
            main_json,
            "{\"name\":\"main\",\"tasksCount\":2,\"status\":\"running running\",\"tasks\":["
            "{\"index\":1,\"description\":\"running\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":2},"
            "{\"index\":2,\"description\":\"waiting\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":0}]}",
            "queue main JSON");
}

/* Only the main queue, empty: the Go operator lists no queue, not even with -e. */
static void test_lone_main(void)
{
        struct ao_queues *qs = new_queues(1.0);
        static const char want[] = "Summary:\n- 'main' queue: empty.\n- no tasks to handle.\n";
        _cleanup_free_ char *text = ao_queues_text_list(qs, false);
        tap_is_str(text, want, "lone main: only the summary");
        _cleanup_free_ char *text_empty = ao_queues_text_list(qs, true);
        tap_is_str(text_empty, want, "lone main, -e: the empty main queue is not listed");
        cJSON *doc = ao_queues_dump_list(qs, true);
        _cleanup_free_ char *json = cJSON_PrintUnformatted(doc);
        cJSON_Delete(doc);
        tap_is_str(
            json,
            "{\"active\":[],\"summary\":{\"mainQueueTasks\":0,\"otherQueues\":{\"active\":0,\"empty\":0,"
            "\"tasks\":0},\"totalTasks\":0}}",
            "lone main, -e: JSON without an empty list");
        doc = ao_queues_dump_main(qs);
        _cleanup_free_ char *main_json = cJSON_PrintUnformatted(doc);
        cJSON_Delete(doc);
        tap_is_str(main_json, "{\"name\":\"main\",\"tasksCount\":0,\"status\":\"idle\"}",
                   "lone main: queue main without tasks");
        ao_queues_free(qs);
}

static void test_dump(void)
{
        size_t sources = ao_reactor_count_sources(reactor);
        struct ao_queues *qs = new_queues(1.0);
        h.on_start = on_start_dump;
        struct ao_queue *main_q = ao_queues_get(qs, AO_QUEUE_MAIN, false);
        (void) ao_queues_get(qs, "empty", true);
        struct ao_queue *retry = ao_queues_get(qs, "retry", true);
        struct ao_queue *thr = ao_queues_get(qs, "throttled", true);
        struct ao_queue *fresh = ao_queues_get(qs, "fresh", true);

        /* main: a running task with two contexts (held by a handler that does not finish it). */
        struct rec recs[5] = {0};
        push_full(main_q, "running", NULL, 0, "[{\"binding\":\"a\"},{\"binding\":\"b\"}]", &recs[0]);
        push_full(main_q, "waiting", NULL, 0, NULL, &recs[1]);
        push_full(retry, "fail:once", NULL, 0, "[{\"binding\":\"c\"}]", &recs[2]);
        struct ao_throttle th = {.period_usec = 10 * USEC, .burst = 1};
        ao_queue_push_tail(thr, &(struct ao_task_spec){.description = "t1", .throttle = &th});
        ao_queue_push_tail(thr, &(struct ao_task_spec){.description = "t2",
                                                       .throttle = &th,
                                                       .payload = payload_new(&recs[3]),
                                                       .payload_free = payload_free});
        tap_ok(RUN_UNTIL(h.n_started == 3), "dump: running, failing, throttled");
        push_full(fresh, "new", NULL, 0, NULL, &recs[4]);

        cJSON *dump = ao_queues_dump(qs);
        char *text = cJSON_PrintUnformatted(dump);
        /* Seconds left depend on how long this machine took to get here: checked apart, then masked. */
        double retry_left = seconds_after(text, "retry 1 in "), token_left = seconds_after(text, "token ");
        tap_ok(retry_left > 0 && retry_left <= 5.0, "dump: retry due within 5 s (%.1f)", retry_left);
        tap_ok(token_left > 0 && token_left <= 10.0, "dump: token due within 10 s (%.1f)", token_left);
        mask_seconds(text, "retry 1 in ", "N");
        mask_seconds(text, "token ", "N");
        tap_is_str(text,
                   "[{\"name\":\"main\",\"length\":2,\"status\":\"running running\",\"tasks\":["
                   "{\"description\":\"running\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":2},"
                   "{\"description\":\"waiting\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":0}]},"
                   "{\"name\":\"empty\",\"length\":0,\"status\":\"idle\",\"tasks\":[]},"
                   "{\"name\":\"retry\",\"length\":1,\"status\":\"retry 1 in Ns after failure\",\"tasks\":["
                   "{\"description\":\"fail:once\",\"failures\":1,\"waitingSeconds\":0,\"contexts\":1}]},"
                   "{\"name\":\"throttled\",\"length\":1,\"status\":\"waiting for a token Ns\",\"tasks\":["
                   "{\"description\":\"t2\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":0}]},"
                   "{\"name\":\"fresh\",\"length\":1,\"status\":\"starting\",\"tasks\":["
                   "{\"description\":\"new\",\"failures\":0,\"waitingSeconds\":0,\"contexts\":0}]}]",
                   "dump: exact JSON");
        free(text);
        cJSON_Delete(dump);
        test_peer_documents(qs);

        /* Stop: nothing new starts, the running task may still finish. */
        ao_queues_stop(qs);
        _cleanup_free_ char *s1 = ao_queue_status(fresh);
        tap_is_str(s1, "stopped", "stop: status of a queue with waiting tasks");
        run_a_little();
        tap_is_int(h.n_started, 3, "stop: the fresh task did not start");
        ao_task_finish(held(0), AO_TASK_SUCCESS);
        run_a_little();
        tap_is_int(h.n_started, 3, "stop: nothing starts after the running task finished");
        _cleanup_free_ char *s2 = ao_queue_status(main_q);
        tap_is_str(s2, "stopped", "stop: main stopped with 'waiting' left");
        tap_ok(recs[0].removed == 1 && recs[0].freed == 1, "stop: the finished task was removed");

        /* Free with tasks pending: each one removed and released, the sources too. */
        size_t removed = h.n_removed;
        ao_queues_free(qs);
        tap_is_int(h.n_removed, removed + 4, "free: on_task_removed for the four pending tasks");
        tap_ok(recs_once(recs, 5), "free: every payload freed once");
        tap_is_int(ao_reactor_count_sources(reactor), sources,
                   "free: the dispatch source and timers released");
}

static void on_start_free(struct harness *hh, struct ao_task *t)
{
        ao_queues_free(hh->qs);
        hh->counter++;
}

static void test_free_in_handler(void)
{
        size_t sources = ao_reactor_count_sources(reactor);
        struct ao_queues *qs = new_queues(TINY_SCALE);
        h.on_start = on_start_free;
        struct rec recs[3] = {0};
        push(ao_queues_get(qs, AO_QUEUE_MAIN, false), "first", &recs[0]);
        push(ao_queues_get(qs, AO_QUEUE_MAIN, false), "second", &recs[1]);
        push(ao_queues_get(qs, "other", true), "third", &recs[2]);
        tap_ok(RUN_UNTIL(h.counter == 1), "free in handler: the first task freed the set");
        run_a_little();
        tap_is_int(h.n_started, 1, "free in handler: nothing started afterwards");
        tap_ok(recs_once(recs, 3), "free in handler: every task removed and freed once");
        tap_is_int(ao_reactor_count_sources(reactor), sources, "free in handler: sources released");
        tap_ok(ao_queues_free(NULL) == NULL, "free: NULL accepted");
}

static void test_bad_options(void)
{
        struct ao_queues *qs = NULL;
        struct ao_error err = {0};
        struct ao_queues_options o = {0};
        tap_is_int(ao_queues_new(reactor, &o, &qs, &err), -EINVAL, "options: a handler is required");
        tap_ok(qs == NULL && err.msg[0], "options: with a message ('%s')", err.msg);
        o = (struct ao_queues_options){.handler = handler, .retry_scale = -1};
        tap_is_int(ao_queues_new(reactor, &o, &qs, &err), -EINVAL, "options: negative scale refused");
}

int main(void)
{
        reactor = test_reactor_new();

        test_fifo();
        test_two_queues();
        test_finish_later();
        test_fail_retry();
        test_allow_failure();
        test_keep();
        test_combine();
        test_compaction();
        test_throttle();
        test_backoff();
        test_remove_find();
        test_dump();
        test_lone_main();
        test_free_in_handler();
        test_bad_options();

        harness_reset();
        run_a_little();
        tap_is_int(ao_reactor_count_sources(reactor), 0, "no sources left behind");
        ao_reactor_free(reactor);
        return tap_done();
}
