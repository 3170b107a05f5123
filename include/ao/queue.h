/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Task queues: "main" plus named queues, each a FIFO worked by the reactor,
 * one task at a time per queue, queues independent of each other.
 *
 * A task is handed to the queue set's handler when it reaches the head of
 * its queue (and its throttle, if any, has a token). The handler starts the
 * work and later, from any callback, reports how it went with
 * ao_task_finish():
 *   SUCCESS  the task is removed; the next one starts.
 *   FAIL     the task stays at the head and is retried after a back-off
 *            (the Go operator's formula: 5 s, then 5 s + 2^(n-1) s + up to
 *            1 s of jitter in 100 ms steps, capped at 32 s); with
 *            allow_failure it is removed instead and counted.
 *   KEEP     the task stays where it is without counting a failure: the
 *            handler pushed work before it (ao_queue_push_before) and wants
 *            to be called again when that is done (a phase machine).
 * Nothing is polled: a queue with work is dispatched from a deferred
 * source, back-off and throttling wait on timers.
 *
 * Combining (as the Go operator does): when a task with a combine key
 * reaches the head, the tasks right behind it with the same key and type
 * are merged into it and removed: their binding_contexts arrays are
 * appended to its own in queue order, then the set's compact_contexts
 * callback, if any, drops what the merge made redundant (the operator
 * compacts binding-context groups, see binding-context.h). The queue never
 * looks inside a context. When one key has more
 * than AO_QUEUE_COMPACT_THRESHOLD tasks waiting in a queue longer than
 * that, all of them, wherever they are, are merged into its first (the
 * first waiting one of each type: tasks of different types never merge).
 * This is checked when such a task is pushed.
 *
 * Ordering: a queue runs at most one task at a time. The running task is
 * normally the head, but tasks pushed before it (ao_queue_push_before(),
 * the KEEP pattern) precede it until it finishes; the next start is always
 * the head. The handler is only ever called from a reactor callback (a
 * deferred source owned by the queue set), never from inside a push or
 * ao_task_finish(), so it may push and finish synchronously.
 *
 * The handler, on_task_removed and payload_free must not free the queue set
 * except as ao_queues_free() allows; the latter two and the predicates of
 * ao_queue_remove_if()/ao_queue_find() must not change any queue.
 *
 * Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/throttle.h"

struct cJSON;
struct ao_reactor;
struct ao_queues;
struct ao_queue;
struct ao_task;

#define AO_QUEUE_MAIN              "main"
#define AO_QUEUE_COMPACT_THRESHOLD 100

enum ao_task_result {
        AO_TASK_SUCCESS,
        AO_TASK_FAIL,
        AO_TASK_KEEP,
        _AO_TASK_RESULT_MAX,
        _AO_TASK_RESULT_INVALID = -EINVAL,
};

/** Called when @t reaches the head of its queue; must lead to exactly one ao_task_finish() later or now. */
typedef void ao_task_handler(struct ao_task *t, void *userdata);

struct ao_task_spec {
        int type;                       /* the caller's task type; combined only with the same type */
        const char *description;        /* for logs and `queue list`: "ModuleRun:simple-module"; copied */
        const char *combine_key;        /* hook identity for combining; NULL: never combined; copied */
        struct cJSON *binding_contexts; /* taken (may be NULL): an array, appended when tasks combine */
        bool allow_failure;             /* a failure removes the task instead of retrying it */
        struct ao_throttle *throttle;   /* borrowed, may be NULL; must outlive the task */
        void *payload;                  /* the caller's; released with payload_free when the task goes */
        void (*payload_free)(void *payload); /* may be NULL; not called for a NULL payload */
};

struct ao_queues_options {
        ao_task_handler *handler; /* required */
        void *userdata;
        /*
         * Multiplies every back-off delay (1.0 when 0; negative or NaN is refused): tests shorten
         * retries without sleeping for seconds. The same setting as the informers' and the ConfigMap's.
         */
        double retry_scale;
        /*
         * Called whenever a task is removed (success, allowed failure, merged into another by
         * combining or compaction, ao_queue_remove_if, free), before its payload is released. May be NULL.
         */
        void (*on_task_removed)(struct ao_task *t, void *userdata);
        /*
         * Called once on a task's binding_contexts array (never NULL) after the arrays of the tasks
         * merged into it were appended, in queue order, however many they were: merging n tasks stays
         * linear. It may delete items of @contexts, not @contexts itself. NULL: contexts are only
         * appended. Must not change any queue.
         */
        void (*compact_contexts)(struct cJSON *contexts, void *userdata);
};

int ao_queues_new(struct ao_reactor *reactor, const struct ao_queues_options *options, struct ao_queues **ret,
                  struct ao_error *reterr);
/**
 * Drop every task (on_task_removed called and payloads released for each, no handler calls), the
 * reactor sources included, and free. A task running now must not be finished later. Called from
 * inside the handler, the release happens when the handler returns; no task starts in between.
 */
struct ao_queues *ao_queues_free(struct ao_queues *qs);

/** The queue named @name, created (empty) when @create and it does not exist; else NULL. */
struct ao_queue *ao_queues_get(struct ao_queues *qs, const char *name, bool create);
/** Queues in creation order ("main" first). */
size_t ao_queues_count(const struct ao_queues *qs);
/** The @i-th queue, or NULL past the end. */
struct ao_queue *ao_queues_at(const struct ao_queues *qs, size_t i);

/** Stop starting tasks (shutdown); running ones still finish. */
void ao_queues_stop(struct ao_queues *qs);

/*
 * Adding tasks. Each returns the new task (owned by the queue). When the push
 * triggers the queue-wide compaction and the new task is merged into an
 * earlier one of its key and type, that earlier task is returned instead.
 */
struct ao_task *ao_queue_push_tail(struct ao_queue *q, const struct ao_task_spec *spec);
/** First among the waiting tasks: at the head, or right after the head when the head is running. */
struct ao_task *ao_queue_push_head(struct ao_queue *q, const struct ao_task_spec *spec);
/** Right before @t (e.g. the running task, which then returns KEEP). */
struct ao_task *ao_queue_push_before(struct ao_task *t, const struct ao_task_spec *spec);
/** Right after @t. */
struct ao_task *ao_queue_push_after(struct ao_task *t, const struct ao_task_spec *spec);

/**
 * Report the outcome of the handler call for @t (see above). @t may be freed before this returns.
 * Calling it for a task that is not running is a bug: it is logged and ignored.
 */
void ao_task_finish(struct ao_task *t, enum ao_task_result result);

/** Remove the tasks for which @pred is true, except a running one; returns how many. */
size_t ao_queue_remove_if(struct ao_queue *q, bool (*pred)(const struct ao_task *t, void *userdata),
                          void *userdata);
/** The first task for which @pred is true (running one included when @include_running), or NULL. */
struct ao_task *ao_queue_find(struct ao_queue *q, bool include_running,
                              bool (*pred)(const struct ao_task *t, void *userdata), void *userdata);

const char *ao_queue_name(const struct ao_queue *q);
size_t ao_queue_length(const struct ao_queue *q); /* running task included */
bool ao_queue_is_idle(const struct ao_queue *q);  /* empty and nothing running */
/** Total µs tasks of this queue waited between being queued and starting. */
uint64_t ao_queue_wait_usec_total(const struct ao_queue *q);
/** Failures with allow_failure, since start. */
uint64_t ao_queue_allowed_failures(const struct ao_queue *q);

struct ao_queue *ao_task_queue(const struct ao_task *t);
int ao_task_type(const struct ao_task *t);
const char *ao_task_description(const struct ao_task *t);
const char *ao_task_combine_key(const struct ao_task *t);
void *ao_task_payload(const struct ao_task *t);
/** The task's binding contexts (borrowed; combined ones included), or NULL. */
struct cJSON *ao_task_binding_contexts(const struct ao_task *t);
bool ao_task_allow_failure(const struct ao_task *t);
/** Failed attempts so far (0 on the first run). */
unsigned ao_task_failures(const struct ao_task *t);
/**
 * µs the current (or last) start waited: since the task was queued for the first start, since its
 * previous attempt ended (FAIL, KEEP) for later ones; 0 before the first start.
 */
uint64_t ao_task_wait_usec(const struct ao_task *t);
/**
 * Make the next failure of @t wait @usec (scaled like the back-off) instead of the back-off
 * formula: module discovery is documented to retry every 5 s. Call before ao_task_finish(FAIL).
 */
void ao_task_set_retry_delay(struct ao_task *t, uint64_t usec);
/** Replace the description (e.g. the phase of a phase machine). */
void ao_task_set_description(struct ao_task *t, const char *description);

/** The delay before retry number @failures + 1 (the Go operator's formula, before scaling). */
uint64_t ao_queue_backoff_usec(unsigned failures);

/**
 * What a queue is doing, for logs and the debug socket (malloc'd). One of:
 *   "running <description>"               a task is running
 *   "idle"                                no task at all
 *   "stopped"                             tasks wait, but ao_queues_stop() was called
 *   "retry <n> in <x.x>s after failure"   back-off before retry number n (the failures so far)
 *   "waiting for a token <x.x>s"          the head's throttle has no token yet
 *   "starting"                            the head starts in the next loop iteration
 * Seconds left have one decimal, rounded up (a 5 s back-off reads "5.0s" right after the failure).
 */
char *ao_queue_status(const struct ao_queue *q);

/**
 * The state of every queue as JSON (a new array), for `queue list` and the debug socket:
 * [{"name":"main","length":2,"status":<ao_queue_status()>,
 *   "tasks":[{"description":..,"failures":..,"waitingSeconds":..,"contexts":N},...]}, ...]
 * in queue order (the running task included where it is). "waitingSeconds" is whole seconds: for
 * the running task the wait before its start, for the others the time since they were queued (or
 * since their last attempt ended). "contexts" counts the binding contexts.
 */
struct cJSON *ao_queues_dump(const struct ao_queues *qs);

/*
 * The Go operator's documents (`queue list`, `queue main`), built from ao_queues_dump():
 *   list: {"active":[queue...],"empty":[...],"summary":{"mainQueueTasks":N,
 *          "otherQueues":{"active":N,"empty":N,"tasks":N},"totalTasks":N}}
 *         "empty" only with @show_empty and a queue besides main; queues main first, then by name;
 *   queue: {"name":..,"tasksCount":N,"status":..,"tasks":[{"index":1,"description":..,
 *          "failures":..,"waitingSeconds":..,"contexts":..}]} (an empty queue: name and tasksCount;
 *          "tasks" left out when there are none; failures, waitingSeconds and contexts are ours).
 * The main queue always exists. The text forms are the Go operator's: each active queue as "Queue 'main': length N, status: '..'",
 * a blank line and " 1. <description>" lines (":failures N" after a failed task's), then with
 * @show_empty "Empty queues (N):", then "Summary:" lines.
 */
struct cJSON *ao_queues_dump_list(const struct ao_queues *qs, bool show_empty);
struct cJSON *ao_queues_dump_main(const struct ao_queues *qs);
char *ao_queues_text_list(const struct ao_queues *qs, bool show_empty);
char *ao_queues_text_main(const struct ao_queues *qs);
