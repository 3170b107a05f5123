/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/queue/: the structures behind the opaque types of
 * ao/queue.h, shared by queue.c (the engine) and dump.c (the JSON view);
 * backoff.c (the retry formula) needs none of it. Never included outside
 * src/queue/.
 *
 * Invariants:
 *   - q->length is the number of tasks on q's list, the running one included;
 *   - q->running is NULL or on q's list, and is the only task with running set;
 *   - every task with a combine key points at its queue's key entry, whose
 *     count is the number of tasks on the list pointing at it (an entry with
 *     count 0 does not exist);
 *   - q->wait is BACKOFF while q->timer is armed for a retry (nothing starts
 *     before it fires), THROTTLE while it is armed for the head's next token.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/queue.h"

struct cJSON;
struct ao_source;

/* A combine key interned per queue, with the number of tasks carrying it. */
struct queue_key {
        struct queue_key *next; /* hash chain */
        size_t count;           /* tasks on the list with this key, the running one included */
        uint32_t hash;
        char key[]; /* NUL-terminated */
};

struct ao_task {
        struct ao_queue *queue; /* borrowed: the queue owns the task */
        struct ao_task *prev, *next;
        int type;
        char *description;      /* owned */
        struct queue_key *key;  /* borrowed from the queue's key table, or NULL */
        struct cJSON *contexts; /* owned, or NULL */
        bool allow_failure;
        bool running;
        struct ao_throttle *throttle; /* borrowed */
        void *payload;                /* owned through payload_free */
        void (*payload_free)(void *payload);
        unsigned failures;
        uint64_t retry_delay_usec; /* the next failure waits this long instead of the back-off; 0: back-off */
        uint64_t ready_usec;       /* CLOCK_MONOTONIC: queued, or the end of the last attempt */
        uint64_t wait_usec;        /* the wait of the current or last start */
};

enum queue_wait {
        QUEUE_WAIT_NONE,
        QUEUE_WAIT_BACKOFF,
        QUEUE_WAIT_THROTTLE,
};

struct ao_queue {
        struct ao_queues *set; /* borrowed: the set owns the queue */
        char *name;            /* owned */
        struct ao_task *head, *tail;
        size_t length;
        struct ao_task *running; /* on the list, or NULL */

        struct queue_key **buckets; /* owned, n_buckets (a power of two) chains */
        size_t n_buckets, n_keys;

        struct ao_source *timer; /* owned, created on first use: back-off or throttle */
        enum queue_wait wait;
        uint64_t wait_until; /* CLOCK_MONOTONIC µs the timer fires at */
        unsigned retry;      /* with QUEUE_WAIT_BACKOFF: the retry number that follows */

        uint64_t wait_usec_total;
        uint64_t allowed_failures;
};

struct ao_queues {
        struct ao_reactor *reactor; /* borrowed, outlives the set */
        struct ao_queues_options options;
        struct ao_queue **queues; /* owned, creation order */
        size_t n_queues, queues_cap;
        struct ao_source *defer; /* owned: runs dispatch(), ONESHOT when armed, else OFF */
        bool stopped;
        unsigned dispatching; /* > 0 while the handler may be running */
        bool free_requested;  /* ao_queues_free() called from the handler */
};
