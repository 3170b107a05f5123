/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * HTTP to the Kubernetes API on libcurl's multi interface, driven by the reactor: curl's sockets
 * become io sources and its timeout one time source, so no request ever blocks the main thread.
 *
 * Two kinds of requests:
 *   - plain requests (GET, LIST, POST, PUT, PATCH, DELETE): the whole body is collected and
 *     handed to the done callback. They pass a token bucket first (KUBE_CLIENT_QPS /
 *     KUBE_CLIENT_BURST), as client-go's limiter does; a request waiting for a token is queued
 *     in order.
 *   - streams (watches): not rate limited; body bytes go to a data callback as they arrive,
 *     then the done callback says how the stream ended.
 *
 * HTTP/2 is used when the server offers it over TLS (all requests share one connection); plain
 * http speaks HTTP/1.1 with chunked watch bodies. Both are the same to callers.
 *
 * Credentials: bearer token (a token file is re-read every minute: service-account tokens
 * rotate), client certificate, basic auth, or an exec plugin (run again when its credential
 * expires or the server answers 401).
 *
 * Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct ao_kube_config;
struct ao_reactor;
struct ao_kube_client;
struct ao_kube_request;

#define AO_KUBE_BODY_MAX (256u * 1024 * 1024) /* bytes of one plain response */

/** How a request ended. Valid during the done callback only. */
struct ao_kube_response {
        long status;      /* HTTP status; 0 when no complete response arrived (transport error in @error):
                           * a plain request cut short after its headers counts as none */
        const char *body; /* plain requests: the body (NUL-terminated); streams: NULL */
        size_t len;
        uint64_t retry_after_usec; /* Retry-After, 0 when absent */
        uint64_t latency_usec;     /* from the send (after the rate limiter) to the end */
        struct ao_error error;     /* transport error ("connection refused", "timeout"), or empty */
};

typedef void ao_kube_done_handler(const struct ao_kube_response *resp, void *userdata);
/** Stream bytes as they come (only for a 2xx status). Return < 0 to abort the stream. */
typedef int ao_kube_data_handler(const char *data, size_t len, void *userdata);
/** Observes every finished request (metrics): @path is without the query string. */
typedef void ao_kube_observe_handler(const char *method, const char *path, long status, uint64_t latency_usec,
                                     uint64_t wait_usec, void *userdata);

struct ao_kube_client_options {
        double qps;                       /* tokens per second for plain requests; <= 0: no limit */
        int64_t burst;                    /* bucket size; < 1 means 1 */
        uint64_t timeout_usec;            /* plain requests; 0: 60 s */
        const char *user_agent;           /* NULL: "addon-operator/<version>" */
        ao_kube_observe_handler *observe; /* may be NULL */
        void *observe_userdata;
};

/**
 * A client for @config (copied). Runs the exec plugin once when the config has one (before the
 * loop starts: that is the one blocking step, bounded by a 30 s timeout).
 */
int ao_kube_client_new(struct ao_reactor *r, const struct ao_kube_config *config,
                       const struct ao_kube_client_options *options, struct ao_kube_client **ret,
                       struct ao_error *reterr);
/** Cancel every request (no callbacks) and free. NULL is accepted. */
struct ao_kube_client *ao_kube_client_free(struct ao_kube_client *c);

/** "https://host:port", for logs. */
const char *ao_kube_client_server(const struct ao_kube_client *c);

/**
 * Start a plain request. @path_query is "/api/v1/namespaces/x/configmaps?limit=500". @body may
 * be NULL; @content_type is required with a body. @done is called exactly once (never from
 * inside this call) unless the request is cancelled. @ret, when non-NULL, gets a handle valid
 * until @done runs.
 */
int ao_kube_request(struct ao_kube_client *c, const char *method, const char *path_query,
                    const char *content_type, const char *body, size_t len, ao_kube_done_handler *done,
                    void *userdata, struct ao_kube_request **ret, struct ao_error *reterr);
/**
 * ao_kube_request() with @accept (copied) as the Accept header's value instead of
 * "application/json" (NULL: that one). The informers' metadata-only lists ask for
 * PartialObjectMetadataList this way.
 */
int ao_kube_request_accept(struct ao_kube_client *c, const char *accept, const char *method,
                           const char *path_query, const char *content_type, const char *body, size_t len,
                           ao_kube_done_handler *done, void *userdata, struct ao_kube_request **ret,
                           struct ao_error *reterr);

/**
 * A GET that follows up one that took a rate-limiter token, started at once without taking one:
 * the later pages of a paged LIST (@path_query carries the continue token), discovery's
 * group/versions after /apis. One LIST, one token however many pages it has, as a client-go
 * informer's first LIST is one request; one discovery, the tokens of its first two requests. A
 * list's pages come one after the other; discovery runs at start and at most every 10 s after.
 * Otherwise as ao_kube_request_accept().
 */
int ao_kube_request_follow_up(struct ao_kube_client *c, const char *accept, const char *path_query,
                              ao_kube_done_handler *done, void *userdata, struct ao_kube_request **ret,
                              struct ao_error *reterr);

/**
 * Start a stream (GET, not rate limited). For a 2xx status body bytes go to @data; a non-2xx
 * body is collected (capped at 64 KiB) and given to @done. @done is called exactly once when
 * the stream ends for any reason (server closed it, transport error, @data asked to stop)
 * unless cancelled. @accept: the Accept header's value (copied; NULL: "application/json").
 * @idle_timeout_usec: end the stream when no byte arrives for that long (0: never).
 */
int ao_kube_stream(struct ao_kube_client *c, const char *path_query, const char *accept,
                   uint64_t idle_timeout_usec, ao_kube_data_handler *data, ao_kube_done_handler *done,
                   void *userdata, struct ao_kube_request **ret, struct ao_error *reterr);

/** Abort a request or stream; its callbacks are never called afterwards. NULL is accepted. */
void ao_kube_request_cancel(struct ao_kube_request *req);

/** Requests started and not yet done (queued ones included). */
size_t ao_kube_client_active(const struct ao_kube_client *c);
