/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP server: h2o (libh2o-evloop) in its own thread, so a scrape or a
 * probe is answered even while the main loop is busy or stalled.
 *
 * Two listeners share one event loop in that thread:
 *   TCP  (ADDON_OPERATOR_LISTEN_ADDRESS:PORT) /  /metrics  /metrics/hooks
 *        /healthz  /readyz  /status/converge
 *   unix (DEBUG_UNIX_SOCKET, mode 0600, a stale socket file replaced)
 *        all of the above plus the debug API (values and config can hold
 *        secrets, so they are never served over TCP), and POST (the debug
 *        API's `config set`; TCP takes GET only)
 *
 * /metrics and /metrics/hooks are formatted in the HTTP thread from the
 * thread-safe registries; /healthz always answers 200; /readyz reads a flag
 * the main thread sets, or on an HA follower asks the leader's /readyz from
 * this thread's loop. Everything else is a request to the main thread:
 * it goes through a mutex-protected list and a reactor wake-up source, the
 * main thread's handler answers with a JSON document (consistent: built in
 * one main-loop callback) or defers its answer (ao_http_answer()), and the
 * reply travels back through h2o's multithread queue. The path's suffix picks the format: ".json", ".yaml",
 * ".text" (text: strings raw, anything else JSON); without a suffix a string answer is text
 * and anything else JSON.
 *
 * Main thread API unless noted.
 */

#include <stdbool.h>
#include <stdint.h>

#include "ao/debug-request.h"
#include "ao/error.h"

struct cJSON;
struct ao_metrics;
struct ao_reactor;
struct ao_http;

/* What the main thread's handler gets. Strings are borrowed for the call. */
struct ao_http_request {
        const char *method; /* "GET", or "POST" (the unix socket only) */
        const char *path;   /* without the format suffix: "/queue/list", "/module/echo-server/values" */
        const char *query;  /* the raw query string, or "" */
        enum ao_http_format format;
        const char *body; /* a POST's body (NUL-terminated, at most AO_HTTP_BODY_MAX bytes), else "" */
        size_t body_len;
        uint64_t id; /* names the request to ao_http_answer() when the handler defers its answer */
};

/* The longest request body accepted; a longer one is answered 413 by the HTTP thread. */
#define AO_HTTP_BODY_MAX (64u * 1024)

/* A handler's return value: the answer comes later, through ao_http_answer() with the request's id. */
#define AO_HTTP_DEFERRED 0

/**
 * A request for the main thread. Return 200 and set *ret_body (taken: a
 * JSON document, or a string node for plain text), or an HTTP status (404,
 * 400, 405, 500) with *ret_body a string node holding the message (sent as
 * text/plain plus a newline, whatever the suffix, as Go's http.Error()
 * does). Or return AO_HTTP_DEFERRED (with *ret_body untouched) and answer
 * later with ao_http_answer(): an answer that needs a child process must not
 * hold the loop.
 */
typedef int ao_http_main_handler(const struct ao_http_request *req, struct cJSON **ret_body, void *userdata);

struct ao_http_options {
        const char *listen_address;      /* "0.0.0.0" */
        uint16_t listen_port;            /* 0: any free port (see ao_http_port) */
        const char *unix_socket;         /* "" or NULL: no debug socket */
        struct ao_metrics *metrics;      /* borrowed, outlives the server */
        struct ao_metrics *hook_metrics; /* borrowed, outlives the server; NULL: /metrics/hooks is empty */
        ao_http_main_handler *handler; /* called in the main thread; NULL: 404 for everything it would get */
        void *userdata;
};

/**
 * Bind the listeners (errors name the address or socket path; a missing
 * socket directory is an error the caller may treat as a warning: -ENOENT)
 * and start the thread. The thread starts with every signal blocked,
 * whatever the calling thread's mask.
 */
int ao_http_start(struct ao_reactor *reactor, const struct ao_http_options *options, struct ao_http **ret,
                  struct ao_error *reterr);
/**
 * Stop the thread (requests still waiting for the main thread, deferred
 * ones too, are answered 503) and release everything. Main thread, not from inside the handler.
 * NULL is accepted; returns NULL.
 */
struct ao_http *ao_http_stop(struct ao_http *h);

/** The TCP port actually bound. */
uint16_t ao_http_port(const struct ao_http *h);
/** /readyz answers 200 from now on (false: 500 again). Any thread. */
void ao_http_set_ready(struct ao_http *h, bool ready);
/**
 * What /readyz answers with its 500 (a line ending in '\n'; NULL or "": "Startup converge in
 * progress"). Copied, cut at 255 bytes. Any thread.
 */
void ao_http_set_not_ready_reason(struct ao_http *h, const char *reason);
/**
 * Answer the deferred request @id (see AO_HTTP_DEFERRED) with @status and
 * @body (taken, as a handler's *ret_body). A request that is no longer
 * waiting (the server stopped and answered it 503; @h NULL after
 * ao_http_stop()) is dropped quietly. Main thread.
 */
void ao_http_answer(struct ao_http *h, uint64_t id, int status, struct cJSON *body);
/**
 * HA: this replica follows @leader (the Lease holder's identity; "" or NULL: none known yet)
 * and /readyz answers as the leader's does: it asks http://@address:<our port>/readyz, 3 s at
 * most, and answers 200 "HA mode is enabled and waiting for acquiring the lock." when that
 * says 200, else 500 saying why. @address is an IP address; NULL when the identity names none.
 * Copied. Any thread.
 */
void ao_http_follow_leader(struct ao_http *h, const char *leader, const char *address);
/** /readyz answers with this replica's own readiness again (the default). Any thread. */
void ao_http_stop_following(struct ao_http *h);
/** Requests received since start, both listeners together (for tests and metrics). Any thread. */
uint64_t ao_http_requests(const struct ao_http *h);
