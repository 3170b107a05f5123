/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queues as text and JSON for `queue list` and the debug socket. The
 * words differ from the Go operator's ("sleep after fail for 7s (2s left of
 * 7s delay)"): nothing parses them, and ours say which retry comes next.
 */
#include "ao/queue.h"

#include <cjson/cJSON.h>
#include <inttypes.h>

#include "ao/alloc.h"
#include "ao/reactor.h"

#include "internal.h"

#define TENTH_USEC (AO_USEC_PER_SEC / 10)

char *ao_queue_status(const struct ao_queue *q)
{
        if (q->running)
                return ao_xasprintf("running %s", q->running->description);
        if (q->length == 0)
                return ao_xstrdup("idle");
        if (q->set->stopped)
                return ao_xstrdup("stopped");
        if (q->wait == QUEUE_WAIT_NONE)
                return ao_xstrdup("starting");

        /* Tenths of a second left, rounded up: "0.0s" only once the time is up. */
        uint64_t now = ao_clock_now_usec();
        uint64_t left = q->wait_until > now ? q->wait_until - now : 0;
        uint64_t tenths = (left + TENTH_USEC - 1) / TENTH_USEC;
        if (q->wait == QUEUE_WAIT_BACKOFF)
                return ao_xasprintf("retry %u in %" PRIu64 ".%" PRIu64 "s after failure", q->retry,
                                    tenths / 10, tenths % 10);
        return ao_xasprintf("waiting for a token %" PRIu64 ".%" PRIu64 "s", tenths / 10, tenths % 10);
}

static cJSON *dump_task(const struct ao_task *t, uint64_t now)
{
        cJSON *o = cJSON_CreateObject();
        uint64_t waited = t->running ? t->wait_usec : now > t->ready_usec ? now - t->ready_usec : 0;
        cJSON_AddStringToObject(o, "description", t->description);
        cJSON_AddNumberToObject(o, "failures", t->failures);
        cJSON_AddNumberToObject(o, "waitingSeconds", (double) (waited / AO_USEC_PER_SEC));
        cJSON_AddNumberToObject(o, "contexts", t->contexts ? cJSON_GetArraySize(t->contexts) : 0);
        return o;
}

cJSON *ao_queues_dump(const struct ao_queues *qs)
{
        uint64_t now = ao_clock_now_usec();
        cJSON *all = cJSON_CreateArray();
        for (size_t i = 0; all && i < qs->n_queues; i++) {
                const struct ao_queue *q = qs->queues[i];
                cJSON *o = cJSON_CreateObject();
                cJSON_AddItemToArray(all, o);
                cJSON_AddStringToObject(o, "name", q->name);
                cJSON_AddNumberToObject(o, "length", (double) q->length);
                _cleanup_free_ char *status = ao_queue_status(q);
                cJSON_AddStringToObject(o, "status", status);
                cJSON *tasks = cJSON_AddArrayToObject(o, "tasks");
                for (const struct ao_task *t = q->head; tasks && t; t = t->next)
                        cJSON_AddItemToArray(tasks, dump_task(t, now));
        }
        return all;
}
