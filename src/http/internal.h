/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by server.c (the h2o thread) and bridge.c (requests answered by the
 * main thread). Never included outside src/http/.
 *
 * Thread affinity of struct ao_http, field by field:
 *   - set by ao_http_start() before the thread exists, then read-only:
 *     options, port, loop, config, hosts, accept contexts;
 *   - the HTTP thread only, while it runs (the main thread again after
 *     pthread_join()): ctx, listeners, stopping, drained, inflight;
 *   - any thread: ready, requests (atomics), and the pending list, not_ready and leader under
 *     lock;
 *   - readyz: made by the main thread before the thread exists, then the HTTP thread's (the
 *     main thread's again after pthread_join());
 *   - the main thread only: wakeup, deferred, last_call_id.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <h2o.h>

#include "ao/debug-request.h"
#include "ao/http.h"

struct ao_source;
struct ao_http_call;
struct http_readyz;

/* Whom /readyz follows (readyz.c). */
struct http_leader {
        bool following;                  /* an HA follower: /readyz answers as the leader's */
        bool known;                      /* the Lease names a holder */
        struct sockaddr_storage address; /* where its /readyz is; AF_UNSPEC: its identity names none */
};

/* At most this many requests wait for the main thread; more are answered 503 (no unbounded queue). */
#define AO_HTTP_MAX_INFLIGHT 256

/* The h2o handler of one listener; allocated (and freed) by h2o_config. */
struct ao_http_route {
        h2o_handler_t super;
        struct ao_http *http; /* borrowed: the server outlives its h2o config */
        bool debug;           /* the unix socket: every path may go to the main thread */
};

struct ao_http {
        /* Options, copied. */
        char *listen_address;            /* owned */
        char *unix_socket;               /* owned; NULL: no debug socket */
        struct ao_metrics *metrics;      /* borrowed */
        struct ao_metrics *hook_metrics; /* borrowed, may be NULL */
        ao_http_main_handler *handler;   /* may be NULL */
        void *userdata;

        uint16_t port;
        atomic_bool ready;
        atomic_uint_fast64_t requests;

        /* Listening fds until h2o sockets take them over. */
        int tcp_fd;
        int unix_fd;
        bool unix_bound; /* the socket file is ours: removed at stop */
        dev_t unix_dev;
        ino_t unix_ino;

        /* h2o. */
        h2o_evloop_t *loop;      /* owned */
        int loop_epoll_fd;       /* the loop's epoll fd (see server.c: h2o 2.2.5 leaks it), -1 unknown */
        h2o_globalconf_t config; /* owns the hosts and the two ao_http_route handlers */
        bool config_inited;
        h2o_context_t ctx;
        bool ctx_inited;
        h2o_hostconf_t *tcp_hosts[2];  /* NULL-terminated, borrowed from config */
        h2o_hostconf_t *unix_hosts[2]; /* NULL-terminated, borrowed from config */
        h2o_accept_ctx_t tcp_accept;
        h2o_accept_ctx_t unix_accept;
        h2o_socket_t *tcp_listener;          /* owned (closes the fd) */
        h2o_socket_t *unix_listener;         /* owned (closes the fd) */
        h2o_multithread_receiver_t receiver; /* on ctx.queue: main-thread replies and the stop message */
        bool receiver_registered;
        h2o_multithread_message_t stop_message;
        bool stopping;   /* the stop message arrived */
        bool drained;    /* every connection closed: h2o may be torn down */
        size_t inflight; /* calls handed to the main thread and not answered yet */

        pthread_t thread;
        bool thread_started;

        struct http_readyz *readyz; /* owned: the follower's probes of the leader */

        /* The bridge (bridge.c). */
        struct ao_source *wakeup; /* owned; a wake-up source on the main thread's reactor */
        pthread_mutex_t lock;
        bool lock_inited;
        struct ao_http_call *pending; /* under lock: submitted, not yet taken by the main thread */
        char not_ready[256];          /* under lock: what /readyz says while not ready; "": the default */
        struct http_leader leader;    /* under lock */
        struct ao_http_call **pending_tail; /* under lock */
        bool closed;                        /* under lock: no more submissions */
        struct ao_http_call *deferred;      /* main thread: handlers answer these later */
        uint64_t last_call_id;              /* main thread */
};

/*
 * server.c: answer @req with @status, a Content-Type (NULL: none) and
 * @body (copied). HTTP thread.
 */
void http_respond(struct ao_http *h, h2o_req_t *req, int status, const char *content_type, const char *body,
                  size_t len);

/* readyz.c */

/** The probes' timeout and client context, on h->loop. Main thread, in setup. */
void http_readyz_init(struct ao_http *h);
/** Answer /readyz: this replica's readiness, or as a follower the leader's. HTTP thread. */
void http_readyz_respond(struct ao_http *h, h2o_req_t *req);
/**
 * Cancel the probes still waiting for the leader (answered 503), free them all, and answer any
 * probe that comes in while the connections drain with 503. HTTP thread, at stop.
 */
void http_readyz_close(struct ao_http *h);
/** Release the rest, before the context and the loop go. Main thread, after the HTTP thread. */
void http_readyz_done(struct ao_http *h);

/* bridge.c */

/** The wake-up source on @reactor and the pending list. Main thread, before the HTTP thread starts. */
int http_bridge_init(struct ao_http *h, struct ao_reactor *reactor);
/** Free the source, the lock and any call still listed. Main thread, after the HTTP thread is gone. */
void http_bridge_done(struct ao_http *h);

/* What a request asks of the main thread; every string is copied by http_bridge_submit(). */
struct http_submission {
        bool post;
        const char *path; /* the suffix already stripped */
        size_t path_len;
        enum ao_http_format format;
        const char *query;
        size_t query_len;
        const char *body; /* a POST's */
        size_t body_len;
};

/**
 * Hand @req to the main thread. Answered 503 at once when the bridge is
 * closed or too many requests are waiting. HTTP thread.
 */
void http_bridge_submit(struct ao_http *h, h2o_req_t *req, const struct http_submission *s);

/** Answer every deferred call 503: the server stops. Main thread, before the stop message. */
void http_bridge_answer_deferred(struct ao_http *h);

/** A reply message arrived on h->receiver: answer its request (if still there) and free it. HTTP thread. */
void http_bridge_deliver(struct ao_http *h, h2o_multithread_message_t *message);

/** Refuse further submissions and answer everything still waiting with 503. HTTP thread, at stop. */
void http_bridge_close(struct ao_http *h);

/**
 * The format named by the last path segment's suffix; *@len is shortened
 * to drop it. No suffix: JSON.
 */
