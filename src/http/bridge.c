/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Requests for the main thread.
 *
 * A call is owned by exactly one side at a time:
 *   1. the HTTP thread creates it and appends it to the pending list (under
 *      the lock), then wakes the main thread's reactor;
 *   2. the main thread's wake-up callback takes the whole list, runs the
 *      handler for each call (the answer is one consistent cJSON document,
 *      built inside one main-loop callback) and sends the call back as an
 *      h2o multithread message; a handler that defers its answer (it waits
 *      for a child process) leaves the call in the main thread's deferred
 *      list until ao_http_answer() finds it by its id and sends it back;
 *   3. the HTTP thread formats the document for the requested suffix,
 *      answers the request and frees the call.
 *
 * The HTTP side remembers its h2o_req_t in the call, guarded by an object
 * in the request's memory pool: if h2o disposes of the request first, the
 * guard clears the pointer and the late answer is dropped. At stop the HTTP
 * thread closes the list and answers what is still waiting with 503; calls
 * the main thread took earlier have been sent back already (it is the main
 * thread that calls ao_http_stop()) and arrive before the stop message, as
 * a receiver's messages are delivered in order; deferred calls are answered
 * 503 by ao_http_stop() before it sends the stop message, and a later
 * ao_http_answer() for them finds nothing. So a main thread that never
 * answers costs nothing but a 503.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <h2o.h>

#include "ao/alloc.h"
#include "ao/http.h"
#include "ao/reactor.h"
#include "ao/yaml.h"

#include "internal.h"

struct call_guard;

struct ao_http_call {
        h2o_multithread_message_t message; /* the reply travels as this message */
        struct ao_http_call *next;         /* in the pending list */

        /* Set by the HTTP thread at submission, then read-only. */
        enum ao_http_format format;
        bool post;
        char *path;  /* owned */
        char *query; /* owned */
        char *body;  /* owned: a POST's body, NUL-terminated */
        size_t body_len;

        /* The main thread's: the id ao_http_answer() names, and the deferred list. */
        uint64_t id;
        struct ao_http_call *deferred_next;

        /* The HTTP thread's view: NULL once h2o disposed of the request. */
        h2o_req_t *req;
        struct call_guard *guard; /* in req's pool */

        /* The main thread's answer. */
        int status;
        cJSON *answer; /* owned */
};

/* Lives in the request's pool; h2o calls guard_dispose() when the pool is cleared. */
struct call_guard {
        struct ao_http_call *call; /* NULL once the call was answered */
};

static const char *const content_types[_AO_HTTP_FORMAT_MAX] = {
    [AO_HTTP_FORMAT_JSON] = "application/json",
    [AO_HTTP_FORMAT_YAML] = "application/yaml",
    [AO_HTTP_FORMAT_TEXT] = "text/plain; charset=utf-8",
    [AO_HTTP_FORMAT_DEFAULT] = "application/json",
};

static const char text_plain[] = "text/plain; charset=utf-8";

static void call_free(struct ao_http_call *c)
{
        if (!c)
                return;
        free(c->path);
        free(c->query);
        free(c->body);
        cJSON_Delete(c->answer);
        free(c);
}

static void guard_dispose(void *p)
{
        struct call_guard *g = p;
        if (g->call) {
                g->call->req = NULL;
                g->call->guard = NULL;
        }
}

/* --- main thread ----------------------------------------------------------- */

/* A handler's answer, checked: no answer or no handler is a 404. */
static void call_set_answer(struct ao_http *h, struct ao_http_call *c, int status, cJSON *answer)
{
        if (!h->handler || (status == 404 && !answer)) {
                cJSON_Delete(answer);
                answer = cJSON_CreateString("404 page not found");
        }
        c->status = status;
        c->answer = answer;
}

/* Run the handler; false when it deferred its answer (the call then waits in h->deferred). */
static bool call_run(struct ao_http *h, struct ao_http_call *c)
{
        cJSON *answer = NULL;
        int status = 404;

        c->id = ++h->last_call_id;
        if (h->handler) {
                struct ao_http_request req = {
                    .method = c->post ? "POST" : "GET",
                    .path = c->path,
                    .query = c->query,
                    .format = c->format,
                    .body = c->body ? c->body : "",
                    .body_len = c->body_len,
                    .id = c->id,
                };
                status = h->handler(&req, &answer, h->userdata);
        }
        if (h->handler && status == AO_HTTP_DEFERRED) {
                cJSON_Delete(answer);
                c->deferred_next = h->deferred;
                h->deferred = c;
                return false;
        }
        call_set_answer(h, c, status, answer);
        return true;
}

/* Take every waiting call off the list at once (and refuse new ones when @close). */
static struct ao_http_call *take_pending(struct ao_http *h, bool close)
{
        pthread_mutex_lock(&h->lock);
        if (close)
                h->closed = true;
        struct ao_http_call *list = h->pending;
        h->pending = NULL;
        h->pending_tail = &h->pending;
        pthread_mutex_unlock(&h->lock);
        return list;
}

static int on_wakeup(struct ao_source *s, void *userdata)
{
        struct ao_http *h = userdata;
        struct ao_http_call *list = take_pending(h, false);

        while (list) {
                struct ao_http_call *c = list;
                list = c->next;
                c->next = NULL;
                if (call_run(h, c))
                        h2o_multithread_send_message(&h->receiver, &c->message);
        }
        return 0;
}

void ao_http_answer(struct ao_http *h, uint64_t id, int status, cJSON *answer)
{
        struct ao_http_call **p = h ? &h->deferred : NULL;
        while (p && *p && (*p)->id != id)
                p = &(*p)->deferred_next;
        if (!p || !*p) {
                cJSON_Delete(answer);
                return;
        }
        struct ao_http_call *c = *p;
        *p = c->deferred_next;
        c->deferred_next = NULL;
        call_set_answer(h, c, status, answer);
        h2o_multithread_send_message(&h->receiver, &c->message);
}

void http_bridge_answer_deferred(struct ao_http *h)
{
        while (h->deferred)
                ao_http_answer(h, h->deferred->id, 503, cJSON_CreateString("the operator is shutting down"));
}

int http_bridge_init(struct ao_http *h, struct ao_reactor *reactor)
{
        int r = pthread_mutex_init(&h->lock, NULL);
        if (r != 0)
                return -r;
        h->lock_inited = true;
        h->pending = NULL;
        h->pending_tail = &h->pending;

        r = ao_reactor_add_wakeup(reactor, &h->wakeup, on_wakeup, h);
        if (r < 0)
                return r;
        (void) ao_source_set_description(h->wakeup, "http-bridge");
        return 0;
}

void http_bridge_done(struct ao_http *h)
{
        h->wakeup = ao_source_free(h->wakeup);
        if (!h->lock_inited)
                return;
        /* Only a server whose thread never ran can have calls left here; they have no request. */
        while (h->pending) {
                struct ao_http_call *c = h->pending;
                h->pending = c->next;
                call_free(c);
        }
        h->pending_tail = &h->pending;
        (void) pthread_mutex_destroy(&h->lock);
        h->lock_inited = false;
}

/* --- HTTP thread ----------------------------------------------------------- */

static void respond_unavailable(struct ao_http *h, h2o_req_t *req, const char *why)
{
        _cleanup_free_ char *text = ao_xasprintf("%s\n", why);
        http_respond(h, req, 503, text_plain, text, strlen(text));
}

void http_bridge_submit(struct ao_http *h, h2o_req_t *req, const struct http_submission *s)
{
        if (h->inflight >= AO_HTTP_MAX_INFLIGHT) {
                respond_unavailable(h, req, "too many requests waiting for the main loop");
                return;
        }

        struct ao_http_call *c = ao_xcalloc(1, sizeof(*c));
        c->format = s->format;
        c->post = s->post;
        c->path = ao_xstrndup(s->path, s->path_len);
        c->query = ao_xstrndup(s->query, s->query_len);
        if (s->post) {
                c->body = ao_xstrndup(s->body, s->body_len);
                c->body_len = strlen(c->body); /* a NUL in a form body ends it */
        }
        c->req = req;
        c->guard = h2o_mem_alloc_shared(&req->pool, sizeof(struct call_guard), guard_dispose);
        c->guard->call = c;

        bool closed;
        pthread_mutex_lock(&h->lock);
        closed = h->closed;
        if (!closed) {
                *h->pending_tail = c;
                h->pending_tail = &c->next;
        }
        pthread_mutex_unlock(&h->lock);
        if (closed) {
                c->guard->call = NULL;
                call_free(c);
                respond_unavailable(h, req, "the HTTP server is shutting down");
                return;
        }

        /* The call now belongs to the main thread until its message comes back. */
        h->inflight++;
        ao_source_wakeup(h->wakeup);
}

/* The document as text for @format. Returns a malloc'd string and its Content-Type. */
static char *format_body(const cJSON *body, enum ao_http_format format, const char **ret_content_type)
{
        *ret_content_type = content_types[format];
        switch (format) {
        case AO_HTTP_FORMAT_YAML:
                return ao_yaml_emit(body);
        case AO_HTTP_FORMAT_TEXT:
        case AO_HTTP_FORMAT_DEFAULT:
                if (cJSON_IsString(body)) {
                        *ret_content_type = content_types[AO_HTTP_FORMAT_TEXT];
                        return ao_xstrdup(body->valuestring);
                }
                break;
        default:
                break;
        }

        char *json = cJSON_PrintUnformatted(body);
        if (!json)
                return NULL;
        char *text = ao_xasprintf("%s\n", json);
        cJSON_free(json);
        return text;
}

static void respond_call(struct ao_http *h, h2o_req_t *req, struct ao_http_call *c)
{
        _cleanup_free_ char *text = NULL;
        const char *content_type = text_plain;
        int status = c->status;

        if (status < 100 || status > 599) {
                text = ao_xasprintf("internal error: the handler returned %d\n", status);
                status = 500;
        } else if (!c->answer) {
                text = ao_xstrdup("");
        } else if (status >= 400 && cJSON_IsString(c->answer)) {
                /* Errors read as Go's http.Error() writes them: the message and a newline, in plain text. */
                const char *msg = c->answer->valuestring;
                size_t n = strlen(msg);
                text = n > 0 && msg[n - 1] == '\n' ? ao_xstrdup(msg) : ao_xasprintf("%s\n", msg);
        } else {
                text = format_body(c->answer, c->format, &content_type);
                if (!text) {
                        text = ao_xstrdup("internal error: cannot format the answer\n");
                        content_type = text_plain;
                        status = 500;
                }
        }
        http_respond(h, req, status, content_type, text, strlen(text));
}

void http_bridge_deliver(struct ao_http *h, h2o_multithread_message_t *message)
{
        struct ao_http_call *c = H2O_STRUCT_FROM_MEMBER(struct ao_http_call, message, message);

        h->inflight--;
        if (c->guard)
                c->guard->call = NULL;
        if (c->req)
                respond_call(h, c->req, c);
        call_free(c);
}

void http_bridge_close(struct ao_http *h)
{
        struct ao_http_call *list = take_pending(h, true);

        while (list) {
                struct ao_http_call *c = list;
                list = c->next;
                c->next = NULL;
                c->status = 503;
                c->answer = cJSON_CreateString("the HTTP server is shutting down");
                http_bridge_deliver(h, &c->message);
        }
}
