/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/http.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <h2o.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/metrics.h"
#include "ao/reactor.h"

#include "internal.h"

/*
 * The h2o thread. One evloop, one context, two hosts: "tcp" and "unix",
 * each with a catch-all handler at "/" that routes by itself. Each listener
 * has its own accept context whose host list holds just its host, so h2o
 * never picks a host by the Host header and the debug routes cannot be
 * reached over TCP whatever a client sends.
 *
 * Stopping: the main thread sends stop_message through the context's
 * multithread queue. The thread then closes the listeners, closes the
 * bridge (waiting requests get 503), and lets the open connections finish:
 * shutdown(SHUT_RD) turns every idle keep-alive connection into an EOF that
 * h2o closes, and a response being written still completes. Whatever is
 * left after a second gets SHUT_RDWR. Only when no connection is left can
 * h2o's context be disposed: h2o 2.2 asserts that no timeout is armed, and
 * it has no call that closes a connection from the outside.
 */

#define DRAIN_USEC (1 * AO_USEC_PER_SEC)

static const char metrics_content_type[] = "text/plain; version=0.0.4; charset=utf-8";
static const char text_plain[] = "text/plain; charset=utf-8";

static const char index_text[] = "addon-operator\n"
                                 "\n"
                                 "/metrics          Prometheus metrics of the operator\n"
                                 "/metrics/hooks    Prometheus metrics reported by hooks\n"
                                 "/healthz          liveness probe\n"
                                 "/readyz           readiness probe: 200 once the first converge is done\n"
                                 "/status/converge  converge progress (text; ?output=json for JSON)\n";

static const char *reason_phrase(int status)
{
        switch (status) {
        case 200:
                return "OK";
        case 204:
                return "No Content";
        case 400:
                return "Bad Request";
        case 403:
                return "Forbidden";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 409:
                return "Conflict";
        case 422:
                return "Unprocessable Entity";
        case 500:
                return "Internal Server Error";
        case 501:
                return "Not Implemented";
        case 503:
                return "Service Unavailable";
        default:
                return status < 400 ? "OK" : "Error";
        }
}

void http_respond(struct ao_http *h, h2o_req_t *req, int status, const char *content_type, const char *body,
                  size_t len)
{
        req->res.status = status;
        req->res.reason = reason_phrase(status);
        req->res.content_length = len;
        if (content_type)
                h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type,
                               strlen(content_type));
        if (h->stopping)
                req->http1_is_persistent = 0;
        /* Copies the body into the request's pool; handles HEAD. */
        h2o_send_inline(req, body, len);
}

static void respond_str(struct ao_http *h, h2o_req_t *req, int status, const char *content_type,
                        const char *body)
{
        http_respond(h, req, status, content_type, body, strlen(body));
}

static void respond_metrics(struct ao_http *h, h2o_req_t *req, struct ao_metrics *m)
{
        _cleanup_free_ char *text = m ? ao_metrics_format(m) : NULL;
        respond_str(h, req, 200, metrics_content_type, text ? text : "");
}

static bool iovec_is(h2o_iovec_t v, const char *s)
{
        return h2o_memis(v.base, v.len, s, strlen(s));
}

/* Anything but the fixed endpoints: a request for the main thread (the debug API on the unix socket only). */
static void submit_to_main(struct ao_http *h, struct ao_http_route *route, h2o_req_t *req, bool post)
{
        h2o_iovec_t path = req->path_normalized;
        struct http_submission s = {.post = post, .path = path.base, .path_len = path.len, .query = ""};

        s.format = ao_http_format_from_path(path.base, &s.path_len);
        /* Values and config can hold secrets: the debug API is for the unix socket only. */
        if (!route->debug && !h2o_memis(path.base, s.path_len, H2O_STRLIT("/status/converge"))) {
                respond_str(h, req, 404, text_plain, "404 page not found\n");
                return;
        }
        if (req->query_at != SIZE_MAX) {
                s.query = req->path.base + req->query_at + 1;
                s.query_len = req->path.len - req->query_at - 1;
        }
        if (post) {
                s.body = req->entity.base ? req->entity.base : "";
                s.body_len = req->entity.base ? req->entity.len : 0;
        }
        http_bridge_submit(h, req, &s);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
        struct ao_http_route *route = (struct ao_http_route *) self;
        struct ao_http *h = route->http;
        h2o_iovec_t path = req->path_normalized;
        /* POST changes things (config set): the debug socket's, and the handler says where it applies. */
        bool post = route->debug && iovec_is(req->method, "POST");

        atomic_fetch_add_explicit(&h->requests, 1, memory_order_relaxed);

        if (!iovec_is(req->method, "GET") && !post) {
                h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("GET"));
                respond_str(h, req, 405, text_plain, "405 method not allowed\n");
                return 0;
        }

        if (post)
                submit_to_main(h, route, req, true);
        else if (iovec_is(path, "/"))
                respond_str(h, req, 200, text_plain, index_text);
        else if (iovec_is(path, "/metrics"))
                respond_metrics(h, req, h->metrics);
        else if (iovec_is(path, "/metrics/hooks"))
                respond_metrics(h, req, h->hook_metrics);
        else if (iovec_is(path, "/healthz"))
                respond_str(h, req, 200, NULL, "");
        else if (iovec_is(path, "/readyz"))
                http_readyz_respond(h, req);
        else
                submit_to_main(h, route, req, false);
        return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
        h2o_accept_ctx_t *accept_ctx = listener->data;
        h2o_socket_t *sock;

        if (err)
                return;
        sock = h2o_evloop_socket_accept(listener);
        if (!sock)
                return;
        h2o_accept(accept_ctx, sock);
}

static void on_messages(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
        struct ao_http *h = H2O_STRUCT_FROM_MEMBER(struct ao_http, receiver, receiver);

        while (!h2o_linklist_is_empty(messages)) {
                h2o_multithread_message_t *m =
                    H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
                h2o_linklist_unlink(&m->link);
                if (m == &h->stop_message)
                        h->stopping = true;
                else
                        http_bridge_deliver(h, m);
        }
}

/* --- stopping -------------------------------------------------------------- */

static int shutdown_conn(h2o_req_t *req, void *userdata)
{
        int how = *(int *) userdata;
        h2o_socket_t *sock =
            req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;

        if (sock)
                (void) shutdown(h2o_socket_get_fd(sock), how);
        return 0;
}

static bool no_connections(struct ao_http *h)
{
        return h2o_linklist_is_empty(&h->ctx.http1._conns) && h2o_linklist_is_empty(&h->ctx.http2._conns);
}

static bool drain(struct ao_http *h, int how)
{
        uint64_t deadline = ao_clock_now_usec() + DRAIN_USEC;

        if (h->config.http1.callbacks.foreach_request)
                (void) h->config.http1.callbacks.foreach_request(&h->ctx, shutdown_conn, &how);
        while (!no_connections(h) && ao_clock_now_usec() < deadline)
                (void) h2o_evloop_run(h->loop, 10);
        return no_connections(h);
}

static void close_listeners(struct ao_http *h)
{
        if (h->tcp_listener) {
                h2o_socket_read_stop(h->tcp_listener);
                h2o_socket_close(h->tcp_listener);
                h->tcp_listener = NULL;
        }
        if (h->unix_listener) {
                h2o_socket_read_stop(h->unix_listener);
                h2o_socket_close(h->unix_listener);
                h->unix_listener = NULL;
        }
}

/*
 * COMPAT(h2o 2.2.5): request pools take their 4 KiB chunks from a free list
 * kept per thread (memory.c's static mempool_allocator, at most 16 chunks),
 * which nothing empties when the thread exits. Take every cached chunk out
 * through a pool of our own and free it: more than 16 chunks' worth of
 * quarter-chunk allocations, then the pool's chunk list, whose first word
 * links the chunks (struct st_h2o_mem_pool_chunk_t.next), goes to free().
 */
static void release_pool_chunks(void)
{
#if H2O_VERSION_MAJOR == 2 && H2O_VERSION_MINOR == 2
        h2o_mem_pool_t pool;
        void *chunk;

        h2o_mem_init_pool(&pool);
        for (size_t i = 0; i < 17 * 4; i++)
                (void) h2o_mem_alloc_pool(&pool, 1000);
        chunk = pool.chunks;
        while (chunk) {
                void *next = *(void **) chunk;
                free(chunk);
                chunk = next;
        }
        pool.chunks = NULL;
        h2o_mem_clear_pool(&pool);
#endif
}

static void *http_thread(void *userdata)
{
        struct ao_http *h = userdata;

        /*
         * h2o keeps up to 16 freed socket buffers per thread for reuse; those
         * would be lost when this thread exits. Free them right away instead.
         */
        h2o_socket_buffer_prototype.allocator.max = 0;

        while (!h->stopping)
                (void) h2o_evloop_run(h->loop, INT32_MAX);

        close_listeners(h);
        /*
         * What h2o_context_request_shutdown() does for HTTP/1 (no keep-alive
         * for requests parsed from now on), without its HTTP/2 part: that arms
         * a one-second GOAWAY timer h2o 2.2.5 never disarms, and
         * h2o_context_dispose() then asserts on it.
         */
        h->ctx.shutdown_requested = 1;
        http_bridge_close(h);
        http_readyz_close(h);
        h->drained = drain(h, SHUT_RD) || drain(h, SHUT_RDWR);
        release_pool_chunks();
        return NULL;
}

/* --- listeners ------------------------------------------------------------- */

static int listen_tcp(struct ao_http *h, struct ao_error *reterr)
{
        const char *address = h->listen_address;
        bool v6 = strchr(address, ':') != NULL;
        char port[8];
        struct addrinfo hints = {
            .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
            .ai_family = AF_UNSPEC,
            .ai_socktype = SOCK_STREAM,
        };
        struct addrinfo *ai = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        (void) snprintf(port, sizeof(port), "%u", (unsigned) h->port);
        r = getaddrinfo(address, port, &hints, &ai);
        if (r != 0)
                return ao_error_set(reterr, r == EAI_SYSTEM ? ao_negative_errno() : -EINVAL,
                                    "http: invalid listen address '%s%s%s:%s': %s", v6 ? "[" : "", address,
                                    v6 ? "]" : "", port, gai_strerror(r));

        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
                r = ao_negative_errno();
                goto fail;
        }
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
                r = ao_negative_errno();
                goto fail;
        }
        freeaddrinfo(ai);

        struct sockaddr_storage sa;
        socklen_t salen = sizeof(sa);
        if (getsockname(fd, (struct sockaddr *) &sa, &salen) < 0) {
                r = ao_negative_errno();
                return ao_error_set(reterr, r, "http: getsockname: %s", strerror(-r));
        }
        h->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &sa)->sin6_port
                                                 : ((struct sockaddr_in *) &sa)->sin_port);
        h->tcp_fd = TAKE_FD(fd);
        return 0;

fail:
        freeaddrinfo(ai);
        return ao_error_set(reterr, r, "http: cannot listen on '%s%s%s:%s': %s", v6 ? "[" : "", address,
                            v6 ? "]" : "", port, strerror(-r));
}

static int unix_error(struct ao_error *reterr, const char *what, const char *path)
{
        int r = ao_negative_errno();
        return ao_error_set(reterr, r, "http: %s '%s': %s", what, path, strerror(-r));
}

static int listen_unix(struct ao_http *h, struct ao_error *reterr)
{
        const char *path = h->unix_socket;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (strlen(path) >= sizeof(sa.sun_path))
                return ao_error_set(reterr, -ENAMETOOLONG, "http: debug socket path '%s' is too long", path);
        strcpy(sa.sun_path, path);

        /* A socket file left by a previous run makes bind() fail; anything else is not ours to remove. */
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return ao_error_set(reterr, -EEXIST,
                                            "http: debug socket '%s' exists and is not a socket", path);
                if (unlink(path) < 0 && errno != ENOENT)
                        return unix_error(reterr, "cannot remove the stale debug socket", path);
        } else if (errno != ENOENT)
                return unix_error(reterr, "cannot stat the debug socket", path);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return unix_error(reterr, "cannot create the debug socket", path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return unix_error(reterr, "cannot bind the debug socket", path);
        h->unix_bound = true;
        if (lstat(path, &st) == 0) {
                h->unix_dev = st.st_dev;
                h->unix_ino = st.st_ino;
        }
        /*
         * Restrict the mode before listen(): until then a connect() is refused
         * anyway, so the umask-derived mode bind() gave the file is never usable.
         */
        if (chmod(path, 0600) < 0)
                return unix_error(reterr, "cannot chmod the debug socket", path);
        if (listen(fd, SOMAXCONN) < 0)
                return unix_error(reterr, "cannot listen on the debug socket", path);
        h->unix_fd = TAKE_FD(fd);
        return 0;
}

/* Remove the socket file, unless it is no longer the one we bound (a newer instance's). */
static void remove_unix_socket(struct ao_http *h)
{
        struct stat st;

        if (!h->unix_bound)
                return;
        h->unix_bound = false;
        if (lstat(h->unix_socket, &st) < 0 || !S_ISSOCK(st.st_mode))
                return;
        if (h->unix_ino != 0 && (st.st_dev != h->unix_dev || st.st_ino != h->unix_ino))
                return;
        (void) unlink(h->unix_socket);
}

/* --- h2o setup and teardown ------------------------------------------------ */

/*
 * COMPAT(h2o 2.2.5): h2o_evloop_destroy() never closes the loop's epoll fd
 * (upstream fixed it with evloop_do_dispose()). The fd is the int right
 * after the public h2o_evloop_t in the epoll backend's struct
 * st_h2o_evloop_epoll_t; take it only if it really is an epoll instance.
 */
static int evloop_epoll_fd(h2o_evloop_t *loop)
{
#if H2O_VERSION_MAJOR == 2 && H2O_VERSION_MINOR == 2
        int fd = *(const int *) ((const char *) loop + sizeof(h2o_evloop_t));
        char proc[64], link[64];
        ssize_t n;

        if (fd < 0)
                return -1;
        (void) snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        n = readlink(proc, link, sizeof(link) - 1);
        if (n < 0)
                return -1;
        link[n] = '\0';
        return strcmp(link, "anon_inode:[eventpoll]") == 0 ? fd : -1;
#else
        return -1;
#endif
}

static struct ao_http_route *add_route(struct ao_http *h, const char *host, bool debug)
{
        h2o_hostconf_t *hostconf =
            h2o_config_register_host(&h->config, h2o_iovec_init(host, strlen(host)), 65535);
        h2o_pathconf_t *pathconf = h2o_config_register_path(hostconf, "/", 0);
        struct ao_http_route *route = (struct ao_http_route *) h2o_create_handler(pathconf, sizeof(*route));

        route->super.on_req = on_req;
        route->http = h;
        route->debug = debug;
        if (debug)
                h->unix_hosts[0] = hostconf;
        else
                h->tcp_hosts[0] = hostconf;
        return route;
}

static h2o_socket_t *add_listener(struct ao_http *h, int *fd, h2o_accept_ctx_t *accept_ctx,
                                  h2o_hostconf_t **hosts)
{
        h2o_socket_t *sock;

        accept_ctx->ctx = &h->ctx;
        accept_ctx->hosts = hosts;
        sock = h2o_evloop_socket_create(h->loop, TAKE_FD(*fd), H2O_SOCKET_FLAG_DONT_READ);
        sock->data = accept_ctx;
        h2o_socket_read_start(sock, on_accept);
        return sock;
}

static void setup_h2o(struct ao_http *h)
{
        h2o_config_init(&h->config);
        h->config_inited = true;
        /*
         * No "Server:" header. HTTP/1.1 only: h2o stops reading an HTTP/1
         * connection while its request is handled, so a request is never
         * disposed of while the main thread works on it (an HTTP/2 stream
         * could be reset meanwhile; the bridge's guard would cope, but there
         * is no need for HTTP/2 here).
         */
        h->config.server_name = h2o_iovec_init(H2O_STRLIT(""));
        h->config.http1.upgrade_to_http2 = 0;
        /* Only `config set` sends a body, a short form: a larger one is answered 413 by h2o. */
        h->config.max_request_entity_size = AO_HTTP_BODY_MAX;

        (void) add_route(h, "tcp", false);
        (void) add_route(h, "unix", true);

        /*
         * Created here in the main thread, before the HTTP thread exists:
         * h2o sets FD_CLOEXEC on the epoll fd only after epoll_create(), and
         * no child can be spawned in between while this is the only thread.
         */
        h->loop = h2o_evloop_create();
        h->loop_epoll_fd = evloop_epoll_fd(h->loop);
        h2o_context_init(&h->ctx, h->loop, &h->config);
        h->ctx_inited = true;
        h2o_multithread_register_receiver(h->ctx.queue, &h->receiver, on_messages);
        h->receiver_registered = true;
        http_readyz_init(h);

        h->tcp_listener = add_listener(h, &h->tcp_fd, &h->tcp_accept, h->tcp_hosts);
        if (h->unix_fd >= 0)
                h->unix_listener = add_listener(h, &h->unix_fd, &h->unix_accept, h->unix_hosts);
}

static void teardown_h2o(struct ao_http *h)
{
        if (h->ctx_inited) {
                h2o_multithread_queue_t *queue = h->ctx.queue;

                if (h->receiver_registered) {
                        h2o_multithread_unregister_receiver(queue, &h->receiver);
                        h->receiver_registered = false;
                }
                http_readyz_done(h);
                h2o_context_dispose(&h->ctx);
                h->ctx_inited = false;
#if H2O_VERSION_MAJOR == 2 && H2O_VERSION_MINOR == 2
                /* COMPAT(h2o 2.2.5): h2o_multithread_destroy_queue() does not free the queue itself. */
                free(queue);
#endif
        }
        if (h->loop) {
                if (h->loop_epoll_fd >= 0)
                        (void) close(h->loop_epoll_fd);
                h2o_evloop_destroy(h->loop);
                h->loop = NULL;
        }
        if (h->config_inited) {
                h2o_config_dispose(&h->config);
                h->config_inited = false;
        }
}

/* --- public API ------------------------------------------------------------ */

struct ao_http *ao_http_stop(struct ao_http *h)
{
        if (!h)
                return NULL;

        if (h->thread_started) {
                http_bridge_answer_deferred(h);
                h2o_multithread_send_message(&h->receiver, &h->stop_message);
                (void) pthread_join(h->thread, NULL);
                h->thread_started = false;
        } else {
                /* Never ran: nothing is connected, only the listeners exist. */
                close_listeners(h);
                h->drained = true;
        }

        http_bridge_done(h);
        if (h->drained)
                teardown_h2o(h);
        else
                /* h2o cannot dispose of a context with live connections; leave its state behind. */
                ao_log(AO_LOG_WARN, "http: connections still open after %u s, leaking the server's state",
                       (unsigned) (2 * DRAIN_USEC / AO_USEC_PER_SEC));

        h->tcp_fd = ao_safe_close(h->tcp_fd);
        h->unix_fd = ao_safe_close(h->unix_fd);
        remove_unix_socket(h);
        free(h->listen_address);
        free(h->unix_socket);
        free(h);
        return NULL;
}

static void http_stopp(struct ao_http **h)
{
        *h = ao_http_stop(*h);
}

int ao_http_start(struct ao_reactor *reactor, const struct ao_http_options *options, struct ao_http **ret,
                  struct ao_error *reterr)
{
        _cleanup_(http_stopp) struct ao_http *h = ao_xcalloc(1, sizeof(*h));
        sigset_t all, saved;
        int r;

        h->tcp_fd = h->unix_fd = -EBADF;
        h->loop_epoll_fd = -1;
        h->listen_address = ao_xstrdup(
            options->listen_address && *options->listen_address ? options->listen_address : "0.0.0.0");
        if (options->unix_socket && *options->unix_socket)
                h->unix_socket = ao_xstrdup(options->unix_socket);
        h->port = options->listen_port;
        h->metrics = options->metrics;
        h->hook_metrics = options->hook_metrics;
        h->handler = options->handler;
        h->userdata = options->userdata;
        atomic_init(&h->ready, false);
        atomic_init(&h->requests, 0);

        r = listen_tcp(h, reterr);
        if (r < 0)
                return r;
        if (h->unix_socket) {
                r = listen_unix(h, reterr);
                if (r < 0)
                        return r;
        }
        r = http_bridge_init(h, reactor);
        if (r < 0)
                return ao_error_set(reterr, r, "http: cannot set up the main-thread bridge: %s",
                                    strerror(-r));

        setup_h2o(h);

        /* The thread must never take a signal: it starts with all blocked, whatever the caller's mask. */
        sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = pthread_create(&h->thread, NULL, http_thread, h);
        (void) pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r != 0)
                return ao_error_set(reterr, -r, "http: cannot start the server thread: %s", strerror(r));
        h->thread_started = true;
        (void) pthread_setname_np(h->thread, "ao-http");

        *ret = TAKE_PTR(h);
        return 0;
}

uint16_t ao_http_port(const struct ao_http *h)
{
        return h->port;
}

void ao_http_set_not_ready_reason(struct ao_http *h, const char *reason)
{
        pthread_mutex_lock(&h->lock);
        (void) snprintf(h->not_ready, sizeof(h->not_ready), "%s", reason ? reason : "");
        pthread_mutex_unlock(&h->lock);
}

void ao_http_set_ready(struct ao_http *h, bool ready)
{
        atomic_store(&h->ready, ready);
}

uint64_t ao_http_requests(const struct ao_http *h)
{
        return atomic_load_explicit(&h->requests, memory_order_relaxed);
}
