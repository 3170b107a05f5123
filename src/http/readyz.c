/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /readyz. This replica's own readiness (a flag and a reason the main thread sets), or, on an
 * HA follower, the leader's, answered as the Go operator answers it: the follower asks
 * http://<leader>:<our port>/readyz, for 3 s at most, and says
 *
 *   200 "HA mode is enabled and waiting for acquiring the lock."  the leader answered 200;
 *   500 "... the leader's status response code isn't OK"           it answered anything else;
 *   500 "... couldn't send a request to the leader"                no answer (refused, reset,
 *                                                                  timed out);
 *   500 "... couldn't craft a request to the leader"               its identity names no address;
 *   500 "... no leader is elected"                                 the Lease names no holder (yet).
 *
 * The leader is asked from this thread's own loop with h2o's HTTP/1 client, so a probe waits
 * without holding anything up: not the main loop (which may be busy, and the probe must be
 * answered anyway), not the other requests of this thread (scrapes of /metrics go on).
 *
 * Each probe connects through a socket pool of its own, made from the leader's address: h2o
 * then connects at once, IPv4 or IPv6, and never hands a name to its lookup threads (a lookup
 * still running at stop would answer into a freed queue). The client closes its socket after
 * our last callback returns, which touches the pool: a finished probe is freed on the next
 * loop iteration (ctx.zero_timeout), or at stop once every client is gone.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <h2o.h>
#include <h2o/http1client.h>
#include <h2o/socketpool.h>

#include "ao/alloc.h"
#include "ao/http.h"

#include "internal.h"

/* The Go operator's limit for the question to the leader. */
#define PROBE_TIMEOUT_MSEC 3000
/* Probes waiting for the leader at once; more are answered 503 (each holds a connection). */
#define PROBES_MAX 32

static const char text_plain[] = "text/plain; charset=utf-8";

static const char leader_ok[] = "HA mode is enabled and waiting for acquiring the lock.\n";
static const char leader_not_ok[] = "HA mode is enabled but the leader's status response code isn't OK\n";
static const char cannot_send[] = "HA mode is enabled but couldn't send a request to the leader\n";
static const char cannot_craft[] = "HA mode is enabled but couldn't craft a request to the leader\n";
static const char no_leader[] = "HA mode is enabled but no leader is elected\n";
static const char stopping[] = "the HTTP server is shutting down\n";

struct probe_guard;

struct leader_probe {
        struct http_readyz *owner;
        struct leader_probe *next; /* every probe, waiting or finished */
        h2o_req_t *req;            /* the probe to answer; NULL once answered or gone */
        struct probe_guard *guard; /* in req's pool */
        h2o_socketpool_t pool;     /* the leader's address */
        h2o_http1client_t *client; /* NULL once finished */
        h2o_timeout_entry_t deadline;
        char request[160];
        h2o_iovec_t reqbuf;
        bool finished;
};

/* Lives in the request's pool: h2o disposing of the request clears the probe's pointer. */
struct probe_guard {
        struct leader_probe *probe;
};

struct http_readyz {
        struct ao_http *http;
        h2o_timeout_t timeout; /* PROBE_TIMEOUT_MSEC: each probe's deadline and the client's I/O */
        h2o_http1client_ctx_t client_ctx;
        h2o_timeout_entry_t sweep; /* on ctx.zero_timeout: free the finished probes */
        struct leader_probe *probes;
        size_t waiting;
        bool closed; /* stopping: a probe that comes in while connections drain is not started */
};

/* --- this replica's own readiness ------------------------------------------------------------ */

/* 500 with what the operator said holds readiness back (a module that does not converge), if anything. */
static void respond_own(struct ao_http *h, h2o_req_t *req)
{
        if (atomic_load(&h->ready)) {
                http_respond(h, req, 200, text_plain, H2O_STRLIT("Startup converge done.\n"));
                return;
        }
        char text[sizeof(h->not_ready) + 1];
        pthread_mutex_lock(&h->lock);
        (void) snprintf(text, sizeof(text), "%s", h->not_ready);
        pthread_mutex_unlock(&h->lock);
        if (text[0] == '\0')
                (void) snprintf(text, sizeof(text), "Startup converge in progress\n");
        http_respond(h, req, 500, text_plain, text, strlen(text));
}

/* --- probes of the leader -------------------------------------------------------------------- */

static void guard_dispose(void *p)
{
        struct probe_guard *g = p;
        if (g->probe) {
                g->probe->req = NULL;
                g->probe->guard = NULL;
        }
}

static void free_finished(struct http_readyz *z)
{
        struct leader_probe **pp = &z->probes;
        while (*pp) {
                struct leader_probe *p = *pp;
                if (!p->finished) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                h2o_socketpool_dispose(&p->pool);
                free(p);
        }
}

static void on_sweep(h2o_timeout_entry_t *entry)
{
        free_finished(H2O_STRUCT_FROM_MEMBER(struct http_readyz, sweep, entry));
}

/* Answer the probe (if its request is still there); the client is done with it or cancelled. */
static void probe_finish(struct leader_probe *p, int status, const char *body)
{
        struct http_readyz *z = p->owner;
        struct ao_http *h = z->http;
        h2o_timeout_unlink(&p->deadline);
        p->client = NULL;
        p->finished = true;
        z->waiting--;
        if (p->guard)
                p->guard->probe = NULL;
        p->guard = NULL;
        if (p->req)
                http_respond(h, p->req, status, text_plain, body, strlen(body));
        p->req = NULL;
        if (!h2o_timeout_is_linked(&z->sweep))
                h2o_timeout_link(h->loop, &h->ctx.zero_timeout, &z->sweep);
}

/* The leader's status line is all that counts, as for the Go operator; the body is not read. */
static h2o_http1client_body_cb on_head(h2o_http1client_t *client, const char *errstr, int minor_version,
                                       int status, h2o_iovec_t msg, struct st_h2o_header_t *headers,
                                       size_t num_headers, int rlen)
{
        (void) minor_version, (void) msg, (void) headers, (void) num_headers, (void) rlen;
        struct leader_probe *p = client->data;
        if (errstr && errstr != h2o_http1client_error_is_eos)
                probe_finish(p, 500, cannot_send);
        else if (status != 200)
                probe_finish(p, 500, leader_not_ok);
        else
                probe_finish(p, 200, leader_ok);
        return NULL; /* the client closes the connection */
}

static h2o_http1client_head_cb on_connect(h2o_http1client_t *client, const char *errstr,
                                          h2o_iovec_t **reqbufs, size_t *reqbufcnt, int *method_is_head)
{
        struct leader_probe *p = client->data;
        if (errstr) {
                probe_finish(p, 500, cannot_send);
                return NULL;
        }
        *reqbufs = &p->reqbuf;
        *reqbufcnt = 1;
        *method_is_head = 0;
        return on_head;
}

static void on_deadline(h2o_timeout_entry_t *entry)
{
        struct leader_probe *p = H2O_STRUCT_FROM_MEMBER(struct leader_probe, deadline, entry);
        h2o_http1client_cancel(p->client);
        probe_finish(p, 500, cannot_send);
}

static socklen_t address_length(const struct sockaddr_storage *sa)
{
        return sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* "GET /readyz" with a Host header naming the leader's address and port. */
static void format_request(struct leader_probe *p, const struct sockaddr_storage *sa)
{
        char host[INET6_ADDRSTRLEN] = "";
        uint16_t port;
        if (sa->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
                (void) inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
                port = ntohs(in6->sin6_port);
        } else {
                const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
                (void) inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
                port = ntohs(in->sin_port);
        }
        bool v6 = sa->ss_family == AF_INET6;
        int n = snprintf(p->request, sizeof(p->request),
                         "GET /readyz HTTP/1.1\r\nHost: %s%s%s:%u\r\nConnection: close\r\n\r\n",
                         v6 ? "[" : "", host, v6 ? "]" : "", (unsigned) port);
        p->reqbuf = h2o_iovec_init(p->request, (size_t) n);
}

static void probe_start(struct http_readyz *z, h2o_req_t *req, const struct sockaddr_storage *leader)
{
        struct ao_http *h = z->http;
        if (z->closed) {
                http_respond(h, req, 503, text_plain, stopping, sizeof(stopping) - 1);
                return;
        }
        if (z->waiting >= PROBES_MAX) {
                static const char busy[] = "too many readiness probes waiting for the leader\n";
                http_respond(h, req, 503, text_plain, busy, sizeof(busy) - 1);
                return;
        }
        struct leader_probe *p = ao_xcalloc(1, sizeof(*p));
        p->owner = z;
        p->req = req;
        p->guard = h2o_mem_alloc_shared(&req->pool, sizeof(struct probe_guard), guard_dispose);
        p->guard->probe = p;
        format_request(p, leader);
        h2o_socketpool_init_by_address(&p->pool, (struct sockaddr *) leader, address_length(leader), 0, 1);
        /* COMPAT(h2o 2.2.5): a pool without a timeout reads its clock from a NULL loop on connect. */
        h2o_socketpool_set_timeout(&p->pool, h->loop, PROBE_TIMEOUT_MSEC);
        p->next = z->probes;
        z->probes = p;
        z->waiting++;
        p->deadline.cb = on_deadline;
        h2o_timeout_link(h->loop, &z->timeout, &p->deadline);
        /* A connect that fails at once calls on_connect before this returns: p->client is NULL then. */
        h2o_http1client_connect_with_pool(&p->client, p, &z->client_ctx, &p->pool, on_connect);
}

/* --- the HTTP thread's side ------------------------------------------------------------------ */

void http_readyz_respond(struct ao_http *h, h2o_req_t *req)
{
        pthread_mutex_lock(&h->lock);
        struct http_leader leader = h->leader;
        pthread_mutex_unlock(&h->lock);

        if (!leader.following)
                respond_own(h, req);
        else if (!leader.known)
                http_respond(h, req, 500, text_plain, no_leader, sizeof(no_leader) - 1);
        else if (leader.address.ss_family == AF_UNSPEC)
                http_respond(h, req, 500, text_plain, cannot_craft, sizeof(cannot_craft) - 1);
        else
                probe_start(h->readyz, req, &leader.address);
}

void http_readyz_close(struct ao_http *h)
{
        struct http_readyz *z = h->readyz;
        z->closed = true;
        for (struct leader_probe *p = z->probes; p; p = p->next)
                if (!p->finished) {
                        h2o_http1client_cancel(p->client);
                        probe_finish(p, 503, stopping);
                }
        /* Every client closed its socket synchronously: the pools can go now. */
        h2o_timeout_unlink(&z->sweep);
        free_finished(z);
}

/* --- setup and teardown (main thread, the HTTP thread not running) ---------------------------- */

void http_readyz_init(struct ao_http *h)
{
        struct http_readyz *z = ao_xcalloc(1, sizeof(*z));
        z->http = h;
        h2o_timeout_init(h->loop, &z->timeout, PROBE_TIMEOUT_MSEC);
        /* No name is ever looked up (the pools are made from addresses): no getaddr receiver. */
        z->client_ctx = (h2o_http1client_ctx_t){.loop = h->loop, .io_timeout = &z->timeout};
        z->sweep.cb = on_sweep;
        h->readyz = z;
}

void http_readyz_done(struct ao_http *h)
{
        struct http_readyz *z = h->readyz;
        if (!z)
                return;
        h2o_timeout_unlink(&z->sweep);
        free_finished(z);
        h2o_timeout_dispose(h->loop, &z->timeout);
        free(z);
        h->readyz = NULL;
}

/* --- the main thread's side ------------------------------------------------------------------ */

/* @address (an IP address) with our port, or AF_UNSPEC when it is none. */
static struct sockaddr_storage leader_socket_address(const char *address, uint16_t port)
{
        struct sockaddr_storage sa = {.ss_family = AF_UNSPEC};
        struct sockaddr_in *in = (struct sockaddr_in *) &sa;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &sa;
        if (!address)
                return sa;
        if (inet_pton(AF_INET, address, &in->sin_addr) == 1) {
                in->sin_family = AF_INET;
                in->sin_port = htons(port);
        } else if (inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
        }
        return sa;
}

void ao_http_follow_leader(struct ao_http *h, const char *leader, const char *address)
{
        struct http_leader l = {
            .following = true,
            .known = leader && *leader,
            .address = leader_socket_address(address, h->port),
        };
        pthread_mutex_lock(&h->lock);
        h->leader = l;
        pthread_mutex_unlock(&h->lock);
}

void ao_http_stop_following(struct ao_http *h)
{
        pthread_mutex_lock(&h->lock);
        h->leader.following = false;
        pthread_mutex_unlock(&h->lock);
}
