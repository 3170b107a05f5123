/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes HTTP client: libcurl's multi interface on the reactor.
 *
 * curl tells us which sockets to watch (socket callback) and when it next needs a call
 * (timer callback); we turn readiness and the deadline into curl_multi_socket_action() calls
 * and collect finished transfers afterwards. Every transfer is one struct ao_kube_request.
 * Plain requests first pass the token bucket (the waiting list below); streams go straight
 * out.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ao-build-config.h"
#include "ao/alloc.h"
#include "ao/kube-client.h"
#include "ao/kubeconfig.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "ao/throttle.h"

#include "internal.h"

#define DEFAULT_TIMEOUT_USEC  (60ULL * 1000000)
#define CONNECT_TIMEOUT_MS    10000L
#define STREAM_ERROR_BODY_MAX (64u * 1024)
#define USEC_PER_MSEC         1000ULL

enum request_state {
        REQUEST_WAITING, /* in the rate limiter's queue */
        REQUEST_RUNNING, /* added to the multi handle */
};

struct ao_kube_request {
        struct ao_kube_client *client;
        struct ao_kube_request *prev, *next; /* in waiting or running */
        enum request_state state;
        bool stream;
        char *method;
        char *path_query;
        char *content_type;
        char *accept; /* NULL: "application/json" */
        char *body;
        size_t body_len;
        uint64_t idle_timeout_usec;
        CURL *easy;
        struct curl_slist *headers;
        struct curl_slist *connect_to;
        struct ao_strbuf response; /* plain: the body; stream: a non-2xx body */
        char errbuf[CURL_ERROR_SIZE];
        bool data_stopped; /* the data handler asked to stop */
        bool body_too_big;
        uint64_t queued_usec, started_usec;
        ao_kube_data_handler *on_data;
        ao_kube_done_handler *on_done;
        void *userdata;
};

struct request_list {
        struct ao_kube_request *head, *tail;
        size_t n;
};

struct ao_kube_client {
        struct ao_reactor *reactor;
        CURLM *multi;
        struct ao_source *curl_timer;
        struct ao_source *limiter_timer;
        struct ao_throttle limiter;
        struct request_list waiting, running;
        struct kube_credentials creds;
        struct ao_kube_client_options options;
        char *user_agent;
        char *base_url;             /* what URLs start with (the tls-server-name host when given) */
        char *connect_to;           /* "name:port:host:port" when tls-server-name is given */
        char *server;               /* as configured, for logs */
        bool processing;            /* inside process_finished(): no recursion */
        struct ao_source **sockets; /* io sources of curl's sockets */
        size_t n_sockets;
};

/* ---- URLs ------------------------------------------------------------------------------------ */

void kube_query_escape(struct ao_strbuf *q, const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-._~", *p)) {
                        ao_strbuf_append_c(q, (char) *p);
                } else {
                        ao_strbuf_append_c(q, '%');
                        ao_strbuf_append_c(q, hex[*p >> 4]);
                        ao_strbuf_append_c(q, hex[*p & 15]);
                }
        }
}

/* ---- lists ------------------------------------------------------------------------------------ */

static void list_append(struct request_list *l, struct ao_kube_request *r)
{
        r->prev = l->tail;
        r->next = NULL;
        if (l->tail)
                l->tail->next = r;
        else
                l->head = r;
        l->tail = r;
        l->n++;
}

static void list_prepend(struct request_list *l, struct ao_kube_request *r)
{
        r->prev = NULL;
        r->next = l->head;
        if (l->head)
                l->head->prev = r;
        else
                l->tail = r;
        l->head = r;
        l->n++;
}

static void list_remove(struct request_list *l, struct ao_kube_request *r)
{
        if (r->prev)
                r->prev->next = r->next;
        else
                l->head = r->next;
        if (r->next)
                r->next->prev = r->prev;
        else
                l->tail = r->prev;
        r->prev = r->next = NULL;
        l->n--;
}

static void request_free(struct ao_kube_request *r)
{
        if (r->easy)
                curl_easy_cleanup(r->easy);
        curl_slist_free_all(r->headers);
        curl_slist_free_all(r->connect_to);
        ao_strbuf_done(&r->response);
        free(r->method);
        free(r->path_query);
        free(r->content_type);
        free(r->accept);
        free(r->body);
        free(r);
}

/* ---- curl's callbacks --------------------------------------------------------------------------- */

static void process_finished(struct ao_kube_client *c);

static int on_socket_ready(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct ao_kube_client *c = userdata;
        int mask = 0;
        if (revents & (AO_IO_IN | AO_IO_HUP | AO_IO_RDHUP))
                mask |= CURL_CSELECT_IN;
        if (revents & AO_IO_OUT)
                mask |= CURL_CSELECT_OUT;
        if (revents & AO_IO_ERR)
                mask |= CURL_CSELECT_ERR;
        int running = 0;
        curl_multi_socket_action(c->multi, fd, mask, &running);
        process_finished(c);
        return 0;
}

/* Sockets are tracked so that freeing the client releases them even if curl never says REMOVE. */
static void forget_socket(struct ao_kube_client *c, struct ao_source *src)
{
        for (size_t i = 0; i < c->n_sockets; i++) {
                if (c->sockets[i] != src)
                        continue;
                c->sockets[i] = c->sockets[--c->n_sockets];
                break;
        }
        ao_source_free(src);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
        struct ao_kube_client *c = userp;
        struct ao_source *src = socketp;
        if (what == CURL_POLL_REMOVE) {
                forget_socket(c, src);
                curl_multi_assign(c->multi, fd, NULL);
                return 0;
        }
        uint32_t events = 0;
        if (what & CURL_POLL_IN)
                events |= AO_IO_IN;
        if (what & CURL_POLL_OUT)
                events |= AO_IO_OUT;
        if (src)
                return ao_source_set_io_events(src, events) < 0 ? -1 : 0;
        if (ao_reactor_add_io(c->reactor, &src, fd, events, on_socket_ready, c) < 0)
                return -1;
        (void) ao_source_set_description(src, "kube-client-socket");
        c->sockets = ao_xreallocarray(c->sockets, c->n_sockets + 1, sizeof(*c->sockets));
        c->sockets[c->n_sockets++] = src;
        curl_multi_assign(c->multi, fd, src);
        return 0;
}

static int on_curl_deadline(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_kube_client *c = userdata;
        int running = 0;
        curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        process_finished(c);
        return 0;
}

/* curl asks to be called back in @timeout_ms (-1: never). Only arm the timer here: calling
 * curl_multi_socket_action() from inside this callback is not allowed. */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
        struct ao_kube_client *c = userp;
        if (timeout_ms < 0)
                return ao_source_set_enabled(c->curl_timer, AO_SOURCE_OFF) < 0 ? -1 : 0;
        return ao_source_set_time_relative(c->curl_timer, (uint64_t) timeout_ms * USEC_PER_MSEC) < 0 ? -1 : 0;
}

static bool status_is_success(long status)
{
        return status >= 200 && status < 300;
}

static size_t on_curl_write(char *data, size_t size, size_t n, void *userdata)
{
        struct ao_kube_request *r = userdata;
        size_t len = size * n;
        if (r->stream) {
                long status = 0;
                curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
                if (status_is_success(status)) {
                        if (r->on_data(data, len, r->userdata) < 0) {
                                r->data_stopped = true;
                                return 0; /* aborts the transfer */
                        }
                        return len;
                }
                if (r->response.len + len > STREAM_ERROR_BODY_MAX)
                        len = STREAM_ERROR_BODY_MAX - r->response.len;
                ao_strbuf_append_n(&r->response, data, len);
                return size * n;
        }
        if (r->response.len + len > AO_KUBE_BODY_MAX) {
                r->body_too_big = true;
                return 0;
        }
        ao_strbuf_append_n(&r->response, data, len);
        return len;
}

/* ---- finishing -------------------------------------------------------------------------------- */

static void fill_transport_error(const struct ao_kube_request *r, CURLcode result, const char *errbuf,
                                 struct ao_error *err)
{
        if (result == CURLE_OK)
                return;
        if (r->body_too_big)
                ao_error_set(err, -EFBIG, "response body over %u MiB", AO_KUBE_BODY_MAX >> 20);
        else if (r->data_stopped)
                ao_error_set(err, -ECANCELED, "stopped by the reader");
        else
                ao_error_set(err, -EIO, "%s", errbuf && *errbuf ? errbuf : curl_easy_strerror(result));
}

static void finish_request(struct ao_kube_client *c, struct ao_kube_request *r, CURLcode result)
{
        struct ao_kube_response resp = {0};
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.status);
        curl_off_t retry_after = 0;
        if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0)
                resp.retry_after_usec = (uint64_t) retry_after * 1000000ULL;
        fill_transport_error(r, result, r->errbuf, &resp.error);
        /* A body cut short is no answer: its status must not make callers parse half a document. */
        if (!r->stream && resp.error.code)
                resp.status = 0;
        if (!r->stream || !status_is_success(resp.status)) {
                resp.body = ao_strbuf_str(&r->response);
                resp.len = r->response.len;
        }
        uint64_t now = ao_reactor_now(c->reactor);
        resp.latency_usec = now > r->started_usec ? now - r->started_usec : 0;
        if (resp.status == 401)
                kube_credentials_invalidate(&c->creds);

        curl_multi_remove_handle(c->multi, r->easy);
        list_remove(&c->running, r);
        if (c->options.observe) {
                char *q = strchr(r->path_query, '?');
                if (q)
                        *q = '\0';
                c->options.observe(r->method, r->path_query, resp.status, resp.latency_usec,
                                   r->started_usec - r->queued_usec, c->options.observe_userdata);
        }
        r->on_done(&resp, r->userdata);
        request_free(r);
}

static void process_finished(struct ao_kube_client *c)
{
        if (c->processing)
                return;
        c->processing = true;
        CURLMsg *msg;
        int left = 0;
        while ((msg = curl_multi_info_read(c->multi, &left))) {
                if (msg->msg != CURLMSG_DONE)
                        continue;
                struct ao_kube_request *r = NULL;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &r);
                finish_request(c, r, msg->data.result);
        }
        c->processing = false;
}

/* ---- starting --------------------------------------------------------------------------------- */

static int setup_tls(struct ao_kube_client *c, CURL *e)
{
        const struct kube_credentials *cr = &c->creds;
        if (cr->insecure) {
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (cr->ca_file)
                curl_easy_setopt(e, CURLOPT_CAINFO, cr->ca_file);
        if (cr->ca_data) {
                struct curl_blob blob = {.data = cr->ca_data, .len = cr->ca_len, .flags = CURL_BLOB_NOCOPY};
                curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
        }
        const char *cert = kube_credentials_cert(cr), *key = kube_credentials_key(cr);
        if (cert && key) {
                struct curl_blob cb = {.data = (void *) cert, .len = strlen(cert), .flags = CURL_BLOB_COPY};
                struct curl_blob kb = {.data = (void *) key, .len = strlen(key), .flags = CURL_BLOB_COPY};
                curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
                curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
                curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
                curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        } else if (cr->cert_file && cr->key_file) {
                curl_easy_setopt(e, CURLOPT_SSLCERT, cr->cert_file);
                curl_easy_setopt(e, CURLOPT_SSLKEY, cr->key_file);
        }
        return 0;
}

static struct curl_slist *build_headers(struct ao_kube_client *c, const struct ao_kube_request *r)
{
        char *accept = ao_xasprintf("Accept: %s", r->accept ? r->accept : "application/json");
        struct curl_slist *h = curl_slist_append(NULL, accept);
        free(accept);
        if (r->content_type) {
                char *ct = ao_xasprintf("Content-Type: %s", r->content_type);
                h = curl_slist_append(h, ct);
                free(ct);
        }
        const char *token = kube_credentials_token(&c->creds, ao_reactor_now(c->reactor));
        if (token) {
                char *auth = ao_xasprintf("Authorization: Bearer %s", token);
                h = curl_slist_append(h, auth);
                explicit_bzero(auth, strlen(auth));
                free(auth);
        }
        return h;
}

static int start_transfer(struct ao_kube_client *c, struct ao_kube_request *r)
{
        CURL *e = curl_easy_init();
        if (!e)
                return -ENOMEM;
        r->easy = e;
        char *url = ao_xasprintf("%s%s", c->base_url, r->path_query);
        curl_easy_setopt(e, CURLOPT_URL, url);
        free(url);
        curl_easy_setopt(e, CURLOPT_PRIVATE, r);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
        /*
         * No Accept-Encoding: responses come uncompressed. With libcurl 7.88 (Debian 12), a gzip'd list
         * page on the HTTP/2 connection the watches share could stop a few hundred bytes before its
         * end until the 60 s timeout (half the starts with 10,000 objects on kube-apiserver 1.20;
         * never without gzip), and at 100,000 objects the retries outlived the continue token: the
         * first list never finished. On the networks an operator and its API server share, the
         * server's compression also cost more time than it saved (PERFORMANCE.md).
         */
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_curl_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
        if (strcmp(r->method, "HEAD") == 0)
                curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        if (r->body) {
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) r->body_len);
        }
        if (c->connect_to) {
                r->connect_to = curl_slist_append(NULL, c->connect_to);
                curl_easy_setopt(e, CURLOPT_CONNECT_TO, r->connect_to);
        }
        struct curl_slist *h = build_headers(c, r);
        r->headers = h;
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        if (c->creds.username) {
                curl_easy_setopt(e, CURLOPT_USERNAME, c->creds.username);
                curl_easy_setopt(e, CURLOPT_PASSWORD, c->creds.password ? c->creds.password : "");
        }
        if (c->creds.proxy_url)
                curl_easy_setopt(e, CURLOPT_PROXY, c->creds.proxy_url);
        setup_tls(c, e);
        if (r->stream) {
                if (r->idle_timeout_usec) {
                        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
                        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                                         (long) (r->idle_timeout_usec / 1000000 + 1));
                }
        } else {
                uint64_t t = c->options.timeout_usec ? c->options.timeout_usec : DEFAULT_TIMEOUT_USEC;
                curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) (t / USEC_PER_MSEC));
        }
        r->started_usec = ao_reactor_now(c->reactor);
        CURLMcode mc = curl_multi_add_handle(c->multi, e);
        if (mc == CURLM_RECURSIVE_API_CALL)
                return -EAGAIN; /* asked from inside one of curl's callbacks (a watch event's handler) */
        if (mc != CURLM_OK)
                return -EIO;
        r->state = REQUEST_RUNNING;
        list_append(&c->running, r);
        return 0;
}

/* The request could not be handed to curl: report it like a transport error, from the loop. */
static int on_start_failed(struct ao_source *s, void *userdata)
{
        struct ao_kube_request *r = userdata;
        struct ao_kube_response resp = {0};
        ao_error_set(&resp.error, -EIO, "cannot start the request");
        r->on_done(&resp, r->userdata);
        request_free(r);
        return 0;
}

/* Returns false when @r has to wait for the next loop iteration (it is back at the head of the queue). */
static bool start_or_fail(struct ao_kube_client *c, struct ao_kube_request *r)
{
        int k = start_transfer(c, r);
        if (k >= 0)
                return true;
        if (r->easy) {
                curl_easy_cleanup(r->easy);
                r->easy = NULL;
        }
        curl_slist_free_all(r->headers);
        r->headers = NULL;
        curl_slist_free_all(r->connect_to);
        r->connect_to = NULL;
        if (k == -EAGAIN) {
                r->state = REQUEST_WAITING;
                list_prepend(&c->waiting, r);
                (void) ao_source_set_time_relative(c->limiter_timer, 1);
                return false;
        }
        if (ao_reactor_add_defer(c->reactor, NULL, on_start_failed, r) < 0)
                request_free(r); /* out of memory for a defer: nothing sane left to report to */
        return true;
}

/* ---- the rate limiter --------------------------------------------------------------------------- */

/* Start waiting requests while the bucket has tokens; re-arm for the next one. */
static void drain_waiting(struct ao_kube_client *c)
{
        while (c->waiting.head) {
                uint64_t wait = ao_throttle_take(&c->limiter, ao_reactor_now(c->reactor));
                if (wait > 0) {
                        (void) ao_source_set_time_relative(c->limiter_timer, wait);
                        return;
                }
                struct ao_kube_request *r = c->waiting.head;
                list_remove(&c->waiting, r);
                if (!start_or_fail(c, r))
                        return;
        }
}

static int on_limiter_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        drain_waiting(userdata);
        return 0;
}

/* ---- public API ------------------------------------------------------------------------------- */

static struct ao_kube_request *request_new(struct ao_kube_client *c, const char *method,
                                           const char *path_query, const char *accept,
                                           ao_kube_done_handler *done, void *userdata)
{
        struct ao_kube_request *r = ao_xcalloc(1, sizeof(*r));
        r->client = c;
        r->method = ao_xstrdup(method);
        r->path_query = ao_xstrdup(path_query);
        r->accept = accept ? ao_xstrdup(accept) : NULL;
        r->on_done = done;
        r->userdata = userdata;
        r->queued_usec = ao_reactor_now(c->reactor);
        return r;
}

int ao_kube_request_accept(struct ao_kube_client *c, const char *accept, const char *method,
                           const char *path_query, const char *content_type, const char *body, size_t len,
                           ao_kube_done_handler *done, void *userdata, struct ao_kube_request **ret,
                           struct ao_error *reterr)
{
        if (!done || !path_query || path_query[0] != '/')
                return ao_error_set(reterr, -EINVAL, "bad request '%s'", path_query ? path_query : "(null)");
        if (body && !content_type)
                return ao_error_set(reterr, -EINVAL, "%s %s: a body needs a content type", method,
                                    path_query);
        struct ao_kube_request *r = request_new(c, method, path_query, accept, done, userdata);
        if (body) {
                r->body = ao_xmalloc(len + 1);
                memcpy(r->body, body, len);
                r->body[len] = '\0';
                r->body_len = len;
                r->content_type = ao_xstrdup(content_type);
        }
        r->state = REQUEST_WAITING;
        list_append(&c->waiting, r);
        if (ret)
                *ret = r;
        drain_waiting(c);
        return 0;
}

int ao_kube_request_follow_up(struct ao_kube_client *c, const char *accept, const char *path_query,
                              ao_kube_done_handler *done, void *userdata, struct ao_kube_request **ret,
                              struct ao_error *reterr)
{
        if (!done || !path_query || path_query[0] != '/')
                return ao_error_set(reterr, -EINVAL, "bad request '%s'", path_query ? path_query : "(null)");
        struct ao_kube_request *r = request_new(c, "GET", path_query, accept, done, userdata);
        if (ret)
                *ret = r;
        (void) start_or_fail(c, r); /* a failure is reported from the loop, as for any request */
        return 0;
}

int ao_kube_request(struct ao_kube_client *c, const char *method, const char *path_query,
                    const char *content_type, const char *body, size_t len, ao_kube_done_handler *done,
                    void *userdata, struct ao_kube_request **ret, struct ao_error *reterr)
{
        return ao_kube_request_accept(c, NULL, method, path_query, content_type, body, len, done, userdata,
                                      ret, reterr);
}

int ao_kube_stream(struct ao_kube_client *c, const char *path_query, const char *accept,
                   uint64_t idle_timeout_usec, ao_kube_data_handler *data, ao_kube_done_handler *done,
                   void *userdata, struct ao_kube_request **ret, struct ao_error *reterr)
{
        if (!done || !data || !path_query || path_query[0] != '/')
                return ao_error_set(reterr, -EINVAL, "bad stream '%s'", path_query ? path_query : "(null)");
        struct ao_kube_request *r = request_new(c, "GET", path_query, accept, done, userdata);
        r->stream = true;
        r->on_data = data;
        r->idle_timeout_usec = idle_timeout_usec;
        if (ret)
                *ret = r;
        start_or_fail(c, r);
        return 0;
}

void ao_kube_request_cancel(struct ao_kube_request *r)
{
        if (!r)
                return;
        struct ao_kube_client *c = r->client;
        if (r->state == REQUEST_WAITING) {
                list_remove(&c->waiting, r);
        } else {
                curl_multi_remove_handle(c->multi, r->easy);
                list_remove(&c->running, r);
        }
        request_free(r);
}

size_t ao_kube_client_active(const struct ao_kube_client *c)
{
        return c->waiting.n + c->running.n;
}

const char *ao_kube_client_server(const struct ao_kube_client *c)
{
        return c->server;
}

/*
 * With tls-server-name the URL must name that host (curl sends it as SNI and verifies the
 * certificate against it) while the connection goes to the configured address: CONNECT_TO.
 */
static int setup_urls(struct ao_kube_client *c, const struct ao_kube_config *config, struct ao_error *reterr)
{
        c->server = ao_xstrdup(config->server);
        if (!config->tls_server_name) {
                c->base_url = ao_xstrdup(config->server);
                return 0;
        }
        CURLU *u = curl_url();
        char *scheme = NULL, *host = NULL, *port = NULL;
        int r = 0;
        if (!u || curl_url_set(u, CURLUPART_URL, config->server, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
                r = ao_error_set(reterr, -EINVAL, "cannot parse server URL '%s'", config->server);
        } else {
                c->base_url = ao_xasprintf("%s://%s:%s", scheme, config->tls_server_name, port);
                c->connect_to = ao_xasprintf("%s:%s:%s:%s", config->tls_server_name, port, host, port);
        }
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
        curl_url_cleanup(u);
        return r;
}

int ao_kube_client_new(struct ao_reactor *reactor, const struct ao_kube_config *config,
                       const struct ao_kube_client_options *options, struct ao_kube_client **ret,
                       struct ao_error *reterr)
{
        static bool curl_ready;
        if (!curl_ready) {
                if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                        return ao_error_set(reterr, -EIO, "curl_global_init failed");
                curl_ready = true;
        }
        struct ao_kube_client *c = ao_xcalloc(1, sizeof(*c));
        c->reactor = reactor;
        if (options)
                c->options = *options;
        c->user_agent =
            ao_xstrdup(c->options.user_agent ? c->options.user_agent : "addon-operator/" AO_VERSION);
        if (c->options.qps > 0) {
                c->limiter.period_usec = (uint64_t) (1e6 / c->options.qps);
                c->limiter.burst = c->options.burst > 1 ? (uint32_t) c->options.burst : 1;
        }
        int r = setup_urls(c, config, reterr);
        if (r >= 0)
                r = kube_credentials_init(&c->creds, config, reterr);
        if (r >= 0 && !(c->multi = curl_multi_init()))
                r = ao_error_set(reterr, -ENOMEM, "curl_multi_init failed");
        if (r >= 0)
                r = ao_reactor_add_time(reactor, &c->curl_timer, 0, on_curl_deadline, c);
        if (r >= 0)
                r = ao_reactor_add_time(reactor, &c->limiter_timer, 0, on_limiter_timer, c);
        if (r < 0) {
                if (!reterr || reterr->code == 0)
                        ao_error_set(reterr, r, "cannot create the Kubernetes client");
                ao_kube_client_free(c);
                return r;
        }
        (void) ao_source_set_enabled(c->curl_timer, AO_SOURCE_OFF);
        (void) ao_source_set_enabled(c->limiter_timer, AO_SOURCE_OFF);
        (void) ao_source_set_description(c->curl_timer, "kube-client-timer");
        (void) ao_source_set_description(c->limiter_timer, "kube-client-limiter");
        curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
        curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
        curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
        curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
        curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long) CURLPIPE_MULTIPLEX);
        *ret = c;
        return 0;
}

struct ao_kube_client *ao_kube_client_free(struct ao_kube_client *c)
{
        if (!c)
                return NULL;
        while (c->waiting.head)
                ao_kube_request_cancel(c->waiting.head);
        while (c->running.head)
                ao_kube_request_cancel(c->running.head);
        if (c->multi)
                curl_multi_cleanup(c->multi);
        while (c->n_sockets > 0)
                forget_socket(c, c->sockets[c->n_sockets - 1]);
        free(c->sockets);
        ao_source_free(c->curl_timer);
        ao_source_free(c->limiter_timer);
        kube_credentials_done(&c->creds);
        free(c->user_agent);
        free(c->base_url);
        free(c->connect_to);
        free(c->server);
        free(c);
        return NULL;
}
