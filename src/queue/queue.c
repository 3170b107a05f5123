/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queue engine (shell-operator pkg/task/queue/task_queue.go without its
 * polling): a doubly linked list of tasks per queue, one deferred source for
 * the whole set that starts every head that may start, one timer per queue
 * for back-off and throttling. The Go worker sleeps on a 125 ms ticker; here
 * a push arms the deferred source, so a task reaching an idle queue starts
 * in the next loop iteration.
 *
 * Combine keys are interned per queue in a small chained hash table with a
 * task count, so the compaction check on each push is O(1) and only a key
 * over the threshold pays for a walk of the queue.
 */
#include "ao/queue.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/backoff.h"
#include "ao/log.h"
#include "ao/reactor.h"

#include "internal.h"

/*
 * Tasks one queue may start in one dispatch while their handlers finish at
 * once; then the rest of the loop gets a turn and the dispatch continues in
 * the next iteration.
 */
#define DISPATCH_BUDGET  64
#define KEYS_MIN_BUCKETS 16

/* --- combine keys ----------------------------------------------------------- */

static uint32_t key_hash(const char *s)
{
        uint32_t h = 2166136261u; /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * 16777619u;
        return h;
}

static struct queue_key *key_find(const struct ao_queue *q, const char *key, uint32_t hash)
{
        if (q->n_buckets == 0)
                return NULL;
        for (struct queue_key *e = q->buckets[hash & (q->n_buckets - 1)]; e; e = e->next)
                if (e->hash == hash && strcmp(e->key, key) == 0)
                        return e;
        return NULL;
}

static void keys_grow(struct ao_queue *q)
{
        size_t n = q->n_buckets ? q->n_buckets * 2 : KEYS_MIN_BUCKETS;
        struct queue_key **buckets = ao_xcalloc(n, sizeof(*buckets));
        for (size_t i = 0; i < q->n_buckets; i++) {
                struct queue_key *next;
                for (struct queue_key *e = q->buckets[i]; e; e = next) {
                        next = e->next;
                        e->next = buckets[e->hash & (n - 1)];
                        buckets[e->hash & (n - 1)] = e;
                }
        }
        free(q->buckets);
        q->buckets = buckets;
        q->n_buckets = n;
}

/* The entry of @key in @q, created when missing, with one more task counted. */
static struct queue_key *key_ref(struct ao_queue *q, const char *key)
{
        uint32_t hash = key_hash(key);
        struct queue_key *e = key_find(q, key, hash);
        if (!e) {
                if (q->n_keys >= q->n_buckets)
                        keys_grow(q);
                size_t len = strlen(key);
                e = ao_xmalloc(sizeof(*e) + len + 1);
                e->count = 0;
                e->hash = hash;
                memcpy(e->key, key, len + 1);
                struct queue_key **chain = &q->buckets[hash & (q->n_buckets - 1)];
                e->next = *chain;
                *chain = e;
                q->n_keys++;
        }
        e->count++;
        return e;
}

static void key_unref(struct ao_queue *q, struct queue_key *e)
{
        if (--e->count > 0)
                return;
        struct queue_key **p = &q->buckets[e->hash & (q->n_buckets - 1)];
        while (*p != e)
                p = &(*p)->next;
        *p = e->next;
        q->n_keys--;
        free(e);
}

/* Tasks with key @e that are not running. */
static size_t key_waiting(const struct ao_queue *q, const struct queue_key *e)
{
        return e->count - (q->running && q->running->key == e ? 1 : 0);
}

/* --- tasks and the list ------------------------------------------------------ */

/* Link @t into @q right before @before (NULL: at the tail). */
static void list_insert_before(struct ao_queue *q, struct ao_task *t, struct ao_task *before)
{
        t->next = before;
        t->prev = before ? before->prev : q->tail;
        if (t->prev)
                t->prev->next = t;
        else
                q->head = t;
        if (before)
                before->prev = t;
        else
                q->tail = t;
        q->length++;
}

static void list_unlink(struct ao_queue *q, struct ao_task *t)
{
        if (t->prev)
                t->prev->next = t->next;
        else
                q->head = t->next;
        if (t->next)
                t->next->prev = t->prev;
        else
                q->tail = t->prev;
        t->prev = t->next = NULL;
        q->length--;
}

/* Binding contexts are arrays; a lone context given by mistake is wrapped rather than lost. */
static cJSON *contexts_as_array(cJSON *contexts)
{
        if (!contexts || cJSON_IsArray(contexts))
                return contexts;
        cJSON *array = cJSON_CreateArray();
        if (!array || !cJSON_AddItemToArray(array, contexts)) {
                cJSON_Delete(array);
                cJSON_Delete(contexts);
                ao_log(AO_LOG_WARN, "queue: binding contexts dropped (out of memory), ignoring");
                return NULL;
        }
        return array;
}

static struct ao_task *task_new(struct ao_queue *q, const struct ao_task_spec *spec)
{
        struct ao_task *t = ao_xcalloc(1, sizeof(*t));
        t->queue = q;
        t->type = spec->type;
        t->description = ao_xstrdup(spec->description ? spec->description : "");
        t->key = spec->combine_key ? key_ref(q, spec->combine_key) : NULL;
        t->contexts = contexts_as_array(spec->binding_contexts);
        t->allow_failure = spec->allow_failure;
        t->throttle = spec->throttle;
        t->payload = spec->payload;
        t->payload_free = spec->payload_free;
        t->ready_usec = ao_clock_now_usec();
        return t;
}

/* Unlink @t (not running), tell the owner, release it. */
static void task_remove(struct ao_task *t)
{
        struct ao_queue *q = t->queue;
        struct ao_queues *qs = q->set;

        list_unlink(q, t);
        if (q->running == t)
                q->running = NULL;
        if (qs->options.on_task_removed)
                qs->options.on_task_removed(t, qs->options.userdata);
        if (t->payload_free && t->payload)
                t->payload_free(t->payload);
        if (t->key)
                key_unref(q, t->key);
        cJSON_Delete(t->contexts);
        free(t->description);
        free(t);
}

/*
 * Append the contexts of @from to @into's. Compaction is left to
 * contexts_compact() once all merged tasks are in: the owner's rule runs
 * once per merge instead of once per merged task, so merging many tasks is
 * linear in the number of contexts instead of quadratic. (For binding
 * contexts, compacting once after appending everything gives what
 * compacting after each append would: the rule keeps the last context of
 * every run of one group, and runs only grow by appending.)
 */
static void contexts_move(struct ao_task *into, struct ao_task *from)
{
        cJSON *more = TAKE_PTR(from->contexts);
        if (!more)
                return;
        if (!into->contexts) {
                into->contexts = more;
                return;
        }
        while (more->child)
                cJSON_AddItemToArray(into->contexts, cJSON_DetachItemViaPointer(more, more->child));
        cJSON_Delete(more);
}

/* The owner's compaction rule (options.compact_contexts) on @t's contexts, after a merge. */
static void contexts_compact(struct ao_task *t)
{
        const struct ao_queues_options *o = &t->queue->set->options;

        if (t->contexts && o->compact_contexts)
                o->compact_contexts(t->contexts, o->userdata);
}

/* Merge the tasks right behind @head with its key and type into it (the Go operator's head combine). */
static void combine_head(struct ao_task *head)
{
        if (!head->key)
                return;
        size_t merged = 0;
        struct ao_task *n;
        while ((n = head->next) && n->key == head->key && n->type == head->type && !n->running) {
                contexts_move(head, n);
                task_remove(n);
                merged++;
        }
        if (merged == 0)
                return;
        if (!head->contexts)
                head->contexts = cJSON_CreateArray();
        contexts_compact(head);
        ao_log(AO_LOG_DEBUG, "queue '%s': %zu tasks combined into '%s'", head->queue->name, merged,
               head->description);
}

/*
 * Merge every waiting task with @t's key into the first waiting one of its
 * type, wherever they are (shell-operator's queue compaction). Returns the
 * task that holds @t's work afterwards.
 */
static struct ao_task *compact(struct ao_queue *q, struct ao_task *t)
{
        struct first {
                int type;
                struct ao_task *task;
        };
        _cleanup_free_ struct first *firsts = NULL;
        size_t n_firsts = 0, cap = 0, merged = 0;
        struct queue_key *key = t->key;
        struct ao_task *survivor = t, *next;

        for (struct ao_task *c = q->head; c; c = next) {
                next = c->next;
                if (c->key != key || c->running)
                        continue;
                size_t i = 0;
                while (i < n_firsts && firsts[i].type != c->type)
                        i++;
                if (i == n_firsts) {
                        if (n_firsts == cap) {
                                cap = cap ? cap * 2 : 4;
                                firsts = ao_xreallocarray(firsts, cap, sizeof(*firsts));
                        }
                        firsts[n_firsts++] = (struct first){c->type, c};
                        continue;
                }
                contexts_move(firsts[i].task, c);
                if (c == t)
                        survivor = firsts[i].task;
                task_remove(c); /* the key entry survives: the first still holds it */
                merged++;
        }
        for (size_t i = 0; i < n_firsts; i++)
                contexts_compact(firsts[i].task);
        ao_log(AO_LOG_DEBUG, "queue '%s': compacted %zu tasks of '%s' into %zu", q->name, merged, key->key,
               n_firsts);
        return survivor;
}

/* --- dispatch ----------------------------------------------------------------- */

static void schedule_dispatch(struct ao_queues *qs)
{
        if (qs->stopped || qs->free_requested)
                return;
        if (ao_source_get_enabled(qs->defer) == AO_SOURCE_OFF)
                (void) ao_source_set_enabled(qs->defer, AO_SOURCE_ONESHOT);
}

static int on_timer(struct ao_source *s _unused_, uint64_t now _unused_, void *userdata)
{
        struct ao_queue *q = userdata;
        q->wait = QUEUE_WAIT_NONE;
        schedule_dispatch(q->set);
        return 0;
}

static void arm_timer(struct ao_queue *q, enum queue_wait wait, uint64_t until)
{
        int r;
        if (!q->timer) {
                r = ao_reactor_add_time(q->set->reactor, &q->timer, until, on_timer, q);
                if (r >= 0)
                        (void) ao_source_set_description(q->timer, "queue");
        } else
                r = ao_source_set_time(q->timer, until);
        if (r < 0) {
                /* Only a broken reactor gets here; retrying now beats a queue stuck for good. */
                (void) ao_log_errno(AO_LOG_ERROR, r, "queue '%s': arming the timer failed, not waiting",
                                    q->name);
                q->wait = QUEUE_WAIT_NONE;
                schedule_dispatch(q->set);
                return;
        }
        q->wait = wait;
        q->wait_until = until;
}

static void disarm_timer(struct ao_queue *q)
{
        if (q->wait == QUEUE_WAIT_NONE)
                return;
        (void) ao_source_set_enabled(q->timer, AO_SOURCE_OFF);
        q->wait = QUEUE_WAIT_NONE;
}

static void start(struct ao_queues *qs, struct ao_queue *q, struct ao_task *t)
{
        uint64_t now = ao_clock_now_usec();
        t->wait_usec = now > t->ready_usec ? now - t->ready_usec : 0;
        q->wait_usec_total += t->wait_usec;
        t->running = true;
        q->running = t;
        ao_log(AO_LOG_DEBUG, "queue '%s': starting '%s' (waited %" PRIu64 " ms)", q->name, t->description,
               (uint64_t) (t->wait_usec / AO_USEC_PER_MSEC));
        qs->options.handler(t, qs->options.userdata);
}

/* Start @q's head when it may start; again while handlers finish at once, up to the budget. */
static void dispatch_queue(struct ao_queues *qs, struct ao_queue *q)
{
        for (unsigned budget = DISPATCH_BUDGET; budget > 0; budget--) {
                if (qs->stopped || qs->free_requested || q->running || q->wait == QUEUE_WAIT_BACKOFF)
                        return;
                struct ao_task *t = q->head;
                if (!t) {
                        disarm_timer(q);
                        return;
                }
                combine_head(t);
                if (t->throttle) {
                        uint64_t now = ao_reactor_now(qs->reactor);
                        uint64_t left = ao_throttle_take(t->throttle, now);
                        if (left > 0) {
                                if (q->wait != QUEUE_WAIT_THROTTLE || q->wait_until != now + left)
                                        arm_timer(q, QUEUE_WAIT_THROTTLE, now + left);
                                return;
                        }
                }
                disarm_timer(q);
                start(qs, q, t); /* @t may be gone when this returns */
        }
        schedule_dispatch(qs);
}

static int on_dispatch(struct ao_source *s _unused_, void *userdata)
{
        struct ao_queues *qs = userdata;
        qs->dispatching++;
        /* By index: a handler may create queues, which moves the array. */
        for (size_t i = 0; i < qs->n_queues && !qs->free_requested; i++)
                dispatch_queue(qs, qs->queues[i]);
        qs->dispatching--;
        if (qs->free_requested && qs->dispatching == 0)
                (void) ao_queues_free(qs);
        return 0;
}

/* --- the set ------------------------------------------------------------------- */

static void queues_freep(struct ao_queues **qs)
{
        ao_queues_free(*qs);
}

int ao_queues_new(struct ao_reactor *reactor, const struct ao_queues_options *options, struct ao_queues **ret,
                  struct ao_error *reterr)
{
        if (!reactor || !options || !options->handler)
                return ao_error_set(reterr, -EINVAL, "queues: a reactor and a task handler are required");
        if (!(options->retry_scale >= 0))
                return ao_error_set(reterr, -EINVAL, "queues: back-off scale %g is not >= 0",
                                    options->retry_scale);

        _cleanup_(queues_freep) struct ao_queues *qs = ao_xcalloc(1, sizeof(*qs));
        qs->reactor = reactor;
        qs->options = *options;
        int r = ao_reactor_add_defer(reactor, &qs->defer, on_dispatch, qs);
        if (r < 0)
                return ao_error_set(reterr, r, "queues: adding the dispatch source failed");
        (void) ao_source_set_enabled(qs->defer, AO_SOURCE_OFF);
        (void) ao_source_set_description(qs->defer, "queues");
        (void) ao_queues_get(qs, AO_QUEUE_MAIN, true);

        *ret = TAKE_PTR(qs);
        return 0;
}

static void queue_free(struct ao_queue *q)
{
        if (q->running) {
                q->running->running = false;
                q->running = NULL;
        }
        while (q->head)
                task_remove(q->head);
        free(q->buckets);
        ao_source_free(q->timer);
        free(q->name);
        free(q);
}

struct ao_queues *ao_queues_free(struct ao_queues *qs)
{
        if (!qs)
                return NULL;
        if (qs->dispatching > 0) {
                /* From inside the handler: on_dispatch() finishes the job when it returns. */
                qs->free_requested = true;
                return NULL;
        }
        for (size_t i = 0; i < qs->n_queues; i++)
                queue_free(qs->queues[i]);
        free(qs->queues);
        ao_source_free(qs->defer);
        free(qs);
        return NULL;
}

struct ao_queue *ao_queues_get(struct ao_queues *qs, const char *name, bool create)
{
        for (size_t i = 0; i < qs->n_queues; i++)
                if (strcmp(qs->queues[i]->name, name) == 0)
                        return qs->queues[i];
        if (!create)
                return NULL;

        struct ao_queue *q = ao_xcalloc(1, sizeof(*q));
        q->set = qs;
        q->name = ao_xstrdup(name);
        if (qs->n_queues == qs->queues_cap) {
                qs->queues_cap = qs->queues_cap ? qs->queues_cap * 2 : 8;
                qs->queues = ao_xreallocarray(qs->queues, qs->queues_cap, sizeof(*qs->queues));
        }
        qs->queues[qs->n_queues++] = q;
        return q;
}

size_t ao_queues_count(const struct ao_queues *qs)
{
        return qs->n_queues;
}

struct ao_queue *ao_queues_at(const struct ao_queues *qs, size_t i)
{
        return i < qs->n_queues ? qs->queues[i] : NULL;
}

void ao_queues_stop(struct ao_queues *qs)
{
        qs->stopped = true;
        (void) ao_source_set_enabled(qs->defer, AO_SOURCE_OFF);
}

/* --- adding and finishing ------------------------------------------------------- */

static struct ao_task *push(struct ao_queue *q, const struct ao_task_spec *spec, struct ao_task *before)
{
        struct ao_task *t = task_new(q, spec);
        list_insert_before(q, t, before);
        if (t->key && q->length > AO_QUEUE_COMPACT_THRESHOLD &&
            key_waiting(q, t->key) > AO_QUEUE_COMPACT_THRESHOLD)
                t = compact(q, t);
        schedule_dispatch(q->set);
        return t;
}

struct ao_task *ao_queue_push_tail(struct ao_queue *q, const struct ao_task_spec *spec)
{
        return push(q, spec, NULL);
}

struct ao_task *ao_queue_push_head(struct ao_queue *q, const struct ao_task_spec *spec)
{
        return push(q, spec, q->head && q->head->running ? q->head->next : q->head);
}

struct ao_task *ao_queue_push_before(struct ao_task *t, const struct ao_task_spec *spec)
{
        return push(t->queue, spec, t);
}

struct ao_task *ao_queue_push_after(struct ao_task *t, const struct ao_task_spec *spec)
{
        return push(t->queue, spec, t->next);
}

void ao_task_finish(struct ao_task *t, enum ao_task_result result)
{
        struct ao_queue *q = t->queue;
        struct ao_queues *qs = q->set;

        if (!t->running || q->running != t) {
                ao_log(AO_LOG_ERROR, "queue '%s': task '%s' finished while not running, ignoring", q->name,
                       t->description);
                return;
        }
        if (result < 0 || result >= _AO_TASK_RESULT_MAX) {
                ao_log(AO_LOG_ERROR, "queue '%s': task '%s' finished with bad result %d, taken as a failure",
                       q->name, t->description, (int) result);
                result = AO_TASK_FAIL;
        }
        t->running = false;
        q->running = NULL;
        uint64_t now = ao_clock_now_usec();

        switch (result) {
        case AO_TASK_FAIL:
                if (t->allow_failure) {
                        q->allowed_failures++;
                        ao_log(AO_LOG_WARN,
                               "queue '%s': task '%s' failed, allowed (allowFailure): not retrying", q->name,
                               t->description);
                        task_remove(t);
                        break;
                }
                uint64_t base =
                    t->retry_delay_usec ? t->retry_delay_usec : ao_queue_backoff_usec(t->failures);
                t->retry_delay_usec = 0;
                uint64_t delay = ao_backoff_scale_usec(qs->options.retry_scale, base);
                t->failures++;
                t->ready_usec = now;
                q->retry = t->failures;
                ao_log(AO_LOG_WARN, "queue '%s': task '%s' failed (%u in a row), retrying in %" PRIu64 " ms",
                       q->name, t->description, t->failures, (uint64_t) (delay / AO_USEC_PER_MSEC));
                arm_timer(q, QUEUE_WAIT_BACKOFF, now + delay);
                return; /* the timer dispatches */
        case AO_TASK_KEEP:
                t->ready_usec = now;
                break;
        default:
                task_remove(t);
                break;
        }
        schedule_dispatch(qs);
}

/* --- lookups ---------------------------------------------------------------------- */

size_t ao_queue_remove_if(struct ao_queue *q, bool (*pred)(const struct ao_task *t, void *userdata),
                          void *userdata)
{
        size_t n = 0;
        struct ao_task *next;
        for (struct ao_task *t = q->head; t; t = next) {
                next = t->next;
                if (t->running || !pred(t, userdata))
                        continue;
                task_remove(t);
                n++;
        }
        if (n > 0)
                schedule_dispatch(q->set); /* the head may have changed (a throttled one, say) */
        return n;
}

struct ao_task *ao_queue_find(struct ao_queue *q, bool include_running,
                              bool (*pred)(const struct ao_task *t, void *userdata), void *userdata)
{
        for (struct ao_task *t = q->head; t; t = t->next)
                if ((include_running || !t->running) && pred(t, userdata))
                        return t;
        return NULL;
}

const char *ao_queue_name(const struct ao_queue *q)
{
        return q->name;
}

size_t ao_queue_length(const struct ao_queue *q)
{
        return q->length;
}

bool ao_queue_is_idle(const struct ao_queue *q)
{
        return q->length == 0; /* the running task is on the list */
}

uint64_t ao_queue_wait_usec_total(const struct ao_queue *q)
{
        return q->wait_usec_total;
}

uint64_t ao_queue_allowed_failures(const struct ao_queue *q)
{
        return q->allowed_failures;
}

struct ao_queue *ao_task_queue(const struct ao_task *t)
{
        return t->queue;
}

int ao_task_type(const struct ao_task *t)
{
        return t->type;
}

const char *ao_task_description(const struct ao_task *t)
{
        return t->description;
}

const char *ao_task_combine_key(const struct ao_task *t)
{
        return t->key ? t->key->key : NULL;
}

void *ao_task_payload(const struct ao_task *t)
{
        return t->payload;
}

struct cJSON *ao_task_binding_contexts(const struct ao_task *t)
{
        return t->contexts;
}

bool ao_task_allow_failure(const struct ao_task *t)
{
        return t->allow_failure;
}

unsigned ao_task_failures(const struct ao_task *t)
{
        return t->failures;
}

uint64_t ao_task_wait_usec(const struct ao_task *t)
{
        return t->wait_usec;
}

void ao_task_set_retry_delay(struct ao_task *t, uint64_t usec)
{
        t->retry_delay_usec = usec;
}

void ao_task_set_description(struct ao_task *t, const char *description)
{
        char *copy = ao_xstrdup(description ? description : "");
        free(t->description);
        t->description = copy;
}
