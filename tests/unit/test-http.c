/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server over real sockets, with libcurl as the client. Requests
 * that only the HTTP thread answers (/metrics, probes, refusals) are made
 * with a blocking curl call in the main thread, which never drives the
 * reactor meanwhile: that they complete proves the main loop is not needed.
 * Requests for the main thread run curl in a helper thread while the main
 * thread drives the reactor. meson runs this file once per backend with
 * AO_REACTOR=epoll|io_uring; an unavailable io_uring skips (exit 77).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "../tap.h"
#include "reactor-backend.h"
#include "ao/alloc.h"
#include "ao/http.h"
#include "ao/metrics.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

#define USEC AO_USEC_PER_SEC

static struct ao_reactor *reactor;
static char socket_path[256];

/* --- the main thread's handler --------------------------------------------- */

struct handler_state {
        unsigned calls;
        char method[8];
        char path[256];
        char query[256];
        char body[256];
        enum ao_http_format format;
        uint64_t deferred; /* the id of the request /later deferred, 0: none */
};

static struct handler_state seen;

static cJSON *hello_doc(void)
{
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddNumberToObject(doc, "a", 1);
        cJSON_AddStringToObject(doc, "b", "x");
        cJSON *list = cJSON_AddArrayToObject(doc, "list");
        cJSON_AddItemToArray(list, cJSON_CreateNumber(1));
        cJSON_AddItemToArray(list, cJSON_CreateString("two"));
        return doc;
}

static int handler(const struct ao_http_request *req, cJSON **ret_body, void *userdata)
{
        struct handler_state *st = userdata;
        const char *path = req->path;
        st->calls++;
        (void) snprintf(st->method, sizeof(st->method), "%s", req->method);
        (void) snprintf(st->path, sizeof(st->path), "%s", path);
        (void) snprintf(st->query, sizeof(st->query), "%s", req->query);
        (void) snprintf(st->body, sizeof(st->body), "%s", req->body);
        st->format = req->format;

        if (strcmp(path, "/echo") == 0 && strcmp(req->method, "POST") == 0) {
                *ret_body = cJSON_CreateString(req->body);
                return 200;
        }
        if (strcmp(req->method, "GET") != 0) {
                *ret_body = cJSON_CreateString("405 method not allowed");
                return 405;
        }
        if (strcmp(path, "/later") == 0) {
                st->deferred = req->id;
                return AO_HTTP_DEFERRED;
        }
        if (strcmp(path, "/hello") == 0 || strcmp(path, "/status/converge") == 0) {
                *ret_body = hello_doc();
                return 200;
        }
        if (strcmp(path, "/text") == 0) {
                *ret_body = cJSON_CreateString("line one\nline two\n");
                return 200;
        }
        if (strcmp(path, "/bad") == 0) {
                *ret_body = cJSON_CreateString("bad request: missing 'x'");
                return 400;
        }
        *ret_body = cJSON_CreateString("404 page not found");
        return 404;
}

/* --- curl ------------------------------------------------------------------ */

struct fetch {
        /* request */
        const char *unix_path; /* NULL: TCP */
        char url[512];
        bool post;
        size_t post_size; /* 0: the form "x=1", else that many bytes */
        /* result */
        CURLcode code;
        long status;
        struct ao_strbuf body;
        char content_type[128];
        atomic_bool done;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct fetch *f = userdata;
        ao_strbuf_append_n(&f->body, ptr, size * nmemb);
        return size * nmemb;
}

static void fetch_init(struct fetch *f, const char *unix_path, const char *fmt, ...) _printf_(3, 4);
static void fetch_init(struct fetch *f, const char *unix_path, const char *fmt, ...)
{
        va_list ap;
        *f = (struct fetch){.unix_path = unix_path};
        va_start(ap, fmt);
        (void) vsnprintf(f->url, sizeof(f->url), fmt, ap);
        va_end(ap);
        atomic_init(&f->done, false);
}

static void fetch_perform(struct fetch *f)
{
        CURL *c = curl_easy_init();
        if (!c)
                tap_bail("curl_easy_init");
        curl_easy_setopt(c, CURLOPT_URL, f->url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
        if (f->unix_path)
                curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, f->unix_path);
        _cleanup_free_ char *big = NULL;
        struct curl_slist *expect = NULL;
        if (f->post && f->post_size) {
                big = ao_xmalloc(f->post_size);
                memset(big, 'a', f->post_size);
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long) f->post_size);
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, big);
                /* h2o answers 413 from the headers and closes. A body already sent and never read
                   turns that close into a reset which can reach the client before the answer; so
                   the client waits for the server's word before it sends the body. */
                expect = curl_slist_append(NULL, "Expect: 100-continue");
                curl_easy_setopt(c, CURLOPT_HTTPHEADER, expect);
                curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 30000L);
        } else if (f->post) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
        }
        f->code = curl_easy_perform(c);
        (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
        char *ct = NULL;
        if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
                (void) snprintf(f->content_type, sizeof(f->content_type), "%s", ct);
        curl_easy_cleanup(c);
        curl_slist_free_all(expect);
        atomic_store(&f->done, true);
}

static void fetch_done(struct fetch *f)
{
        ao_strbuf_done(&f->body);
}

static void *fetch_thread(void *userdata)
{
        fetch_perform(userdata);
        return NULL;
}

static pthread_t fetch_start(struct fetch *f)
{
        pthread_t t;
        if (pthread_create(&t, NULL, fetch_thread, f) != 0)
                tap_bail("pthread_create");
        return t;
}

/* Drive the reactor until @f completes (the main thread answers it meanwhile). */
static void fetch_finish(struct fetch *f, pthread_t t)
{
        uint64_t deadline = ao_clock_now_usec() + 30 * USEC;
        while (!atomic_load(&f->done) && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        (void) pthread_join(t, NULL);
}

static void fetch_via_main(struct fetch *f)
{
        fetch_finish(f, fetch_start(f));
}

/* Wait (without driving the reactor) until the server has seen @n requests. */
static bool wait_requests(struct ao_http *h, uint64_t n)
{
        uint64_t deadline = ao_clock_now_usec() + 10 * USEC;
        while (ao_http_requests(h) < n && ao_clock_now_usec() < deadline)
                (void) usleep(1000);
        return ao_http_requests(h) >= n;
}

/* --- helpers --------------------------------------------------------------- */

static unsigned count_fds(void)
{
        unsigned n = 0;
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return 0;
        while (readdir(d))
                n++;
        (void) closedir(d);
        return n;
}

/* A socket file nobody listens on, as a crashed run leaves it. */
static void make_stale_socket(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa.sun_path))
                tap_bail("socket path too long");
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                tap_bail("cannot create a stale socket");
        (void) close(fd);
}

static struct ao_http *start(const char *address, uint16_t port, const char *unix_socket,
                             struct ao_metrics *m, struct ao_metrics *hm)
{
        struct ao_http_options o = {
            .listen_address = address,
            .listen_port = port,
            .unix_socket = unix_socket,
            .metrics = m,
            .hook_metrics = hm,
            .handler = handler,
            .userdata = &seen,
        };
        struct ao_http *h = NULL;
        struct ao_error err = {0};
        if (ao_http_start(reactor, &o, &h, &err) < 0)
                tap_bail(err.msg);
        return h;
}

/* --- tests ----------------------------------------------------------------- */

static void test_local_routes(struct ao_http *h, struct ao_metrics *m, struct ao_metrics *hm)
{
        uint16_t port = ao_http_port(h);
        struct fetch f;

        fetch_init(&f, NULL, "http://127.0.0.1:%u/healthz", port);
        fetch_perform(&f);
        tap_is_int(f.code, CURLE_OK, "/healthz: transfer ok");
        tap_is_int(f.status, 200, "/healthz: 200");
        tap_is_str(ao_strbuf_str(&f.body), "", "/healthz: empty body");
        fetch_done(&f);

        fetch_init(&f, NULL, "http://127.0.0.1:%u/readyz", port);
        fetch_perform(&f);
        tap_is_int(f.status, 500, "/readyz before ready: 500");
        tap_is_str(ao_strbuf_str(&f.body), "Startup converge in progress\n", "/readyz: in progress");
        fetch_done(&f);

        ao_http_set_ready(h, true);
        fetch_init(&f, NULL, "http://127.0.0.1:%u/readyz", port);
        fetch_perform(&f);
        tap_is_int(f.status, 200, "/readyz when ready: 200");
        tap_is_str(ao_strbuf_str(&f.body), "Startup converge done.\n", "/readyz: done");
        fetch_done(&f);

        _cleanup_free_ char *want = ao_metrics_format(m);
        fetch_init(&f, NULL, "http://127.0.0.1:%u/metrics", port);
        fetch_perform(&f);
        tap_is_int(f.status, 200, "/metrics: 200");
        tap_is_str(f.content_type, "text/plain; version=0.0.4; charset=utf-8", "/metrics: content type");
        tap_is_str(ao_strbuf_str(&f.body), want, "/metrics: the registry's exposition");
        tap_ok(strstr(ao_strbuf_str(&f.body), "addon_operator_test_total 3") != NULL,
               "/metrics: has the counter");
        fetch_done(&f);

        _cleanup_free_ char *want_hooks = ao_metrics_format(hm);
        fetch_init(&f, NULL, "http://127.0.0.1:%u/metrics/hooks", port);
        fetch_perform(&f);
        tap_is_int(f.status, 200, "/metrics/hooks: 200");
        tap_is_str(ao_strbuf_str(&f.body), want_hooks, "/metrics/hooks: the hook registry's exposition");
        fetch_done(&f);

        fetch_init(&f, NULL, "http://127.0.0.1:%u/", port);
        fetch_perform(&f);
        tap_is_int(f.status, 200, "/: 200");
        tap_ok(strstr(ao_strbuf_str(&f.body), "/metrics/hooks") != NULL, "/: lists the endpoints");
        fetch_done(&f);

        fetch_init(&f, NULL, "http://127.0.0.1:%u/healthz", port);
        f.post = true;
        fetch_perform(&f);
        tap_is_int(f.status, 405, "POST /healthz: 405");
        fetch_done(&f);

        /* The debug API is not served over TCP: refused in the HTTP thread, the handler never sees it. */
        unsigned calls = seen.calls;
        const char *debug_paths[] = {"/hello.json", "/queue/list", "/module/echo/values.yaml"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(debug_paths); i++) {
                fetch_init(&f, NULL, "http://127.0.0.1:%u%s", port, debug_paths[i]);
                fetch_perform(&f);
                tap_is_int(f.status, 404, "TCP %s: 404", debug_paths[i]);
                fetch_done(&f);
        }
        tap_is_int(seen.calls, calls, "TCP: the handler was not called for the debug paths");

        /* /status/converge is the one main-thread route over TCP. */
        fetch_init(&f, NULL, "http://127.0.0.1:%u/status/converge.json", port);
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "TCP /status/converge.json: 200");
        tap_is_str(seen.path, "/status/converge", "TCP /status/converge.json: handler path without suffix");
        tap_is_str(f.content_type, "application/json", "TCP /status/converge.json: JSON");
        fetch_done(&f);
}

static void test_debug_routes(void)
{
        struct fetch f;

        fetch_init(&f, socket_path, "http://localhost/hello.json");
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "unix /hello.json: 200");
        tap_is_str(f.content_type, "application/json", "unix /hello.json: content type");
        tap_is_str(ao_strbuf_str(&f.body), "{\"a\":1,\"b\":\"x\",\"list\":[1,\"two\"]}\n",
                   "unix /hello.json: body");
        tap_is_str(seen.path, "/hello", "unix /hello.json: handler path");
        tap_is_str(seen.query, "", "unix /hello.json: empty query");
        fetch_done(&f);

        cJSON *hello = hello_doc();
        _cleanup_free_ char *yaml = ao_yaml_emit(hello);
        cJSON_Delete(hello);
        fetch_init(&f, socket_path, "http://localhost/hello.yaml");
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "unix /hello.yaml: 200");
        tap_is_str(f.content_type, "application/yaml", "unix /hello.yaml: content type");
        tap_is_str(ao_strbuf_str(&f.body), yaml, "unix /hello.yaml: ao_yaml_emit's text");
        fetch_done(&f);

        fetch_init(&f, socket_path, "http://localhost/hello.text");
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "unix /hello.text: 200");
        tap_is_str(f.content_type, "text/plain; charset=utf-8", "unix /hello.text: content type");
        tap_is_str(ao_strbuf_str(&f.body), "{\"a\":1,\"b\":\"x\",\"list\":[1,\"two\"]}\n",
                   "unix /hello.text: an object as JSON");
        fetch_done(&f);

        fetch_init(&f, socket_path, "http://localhost/text.text");
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "unix /text.text: 200");
        tap_is_str(ao_strbuf_str(&f.body), "line one\nline two\n", "unix /text.text: a string raw");
        fetch_done(&f);

        fetch_init(&f, socket_path, "http://localhost/text");
        fetch_via_main(&f);
        tap_is_str(ao_strbuf_str(&f.body), "line one\nline two\n",
                   "unix /text: without a suffix a string is text");
        fetch_done(&f);

        fetch_init(&f, socket_path, "http://localhost/hello?x=1&y=two");
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "unix /hello?query: 200");
        tap_is_str(f.content_type, "application/json", "unix /hello?query: JSON by default");
        tap_is_str(seen.query, "x=1&y=two", "unix /hello?query: query passed");
        fetch_done(&f);

        unsigned calls = seen.calls;
        fetch_init(&f, socket_path, "http://localhost/no/such/thing.yaml");
        fetch_via_main(&f);
        tap_is_int(f.status, 404, "unix unknown path: 404 from the handler");
        tap_is_int(seen.calls, calls + 1, "unix unknown path: the handler decided");
        tap_is_str(seen.path, "/no/such/thing", "unix unknown path: suffix stripped");
        tap_is_str(ao_strbuf_str(&f.body), "404 page not found\n", "unix unknown path: message");
        fetch_done(&f);

        fetch_init(&f, socket_path, "http://localhost/bad.json");
        fetch_via_main(&f);
        tap_is_int(f.status, 400, "unix /bad: 400");
        tap_is_str(f.content_type, "text/plain; charset=utf-8", "unix /bad: error as text");
        tap_is_str(ao_strbuf_str(&f.body), "bad request: missing 'x'\n", "unix /bad: message and newline");
        fetch_done(&f);

        /* POST goes to the handler on the unix socket, with its body; the handler says where it applies. */
        fetch_init(&f, socket_path, "http://localhost/hello.json");
        f.post = true;
        fetch_via_main(&f);
        tap_is_int(f.status, 405, "unix POST /hello.json: 405 from the handler");
        tap_is_str(seen.method, "POST", "unix POST: the handler sees the method");
        fetch_done(&f);

        fetch_init(&f, socket_path, "http://localhost/echo");
        f.post = true;
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "unix POST /echo: 200");
        tap_is_str(seen.body, "x=1", "unix POST /echo: the handler got the body");
        tap_is_str(ao_strbuf_str(&f.body), "x=1", "unix POST /echo: answered");
        fetch_done(&f);

        /* A body larger than AO_HTTP_BODY_MAX never reaches the main thread. */
        calls = seen.calls;
        fetch_init(&f, socket_path, "http://localhost/echo");
        f.post = true;
        f.post_size = AO_HTTP_BODY_MAX + 1;
        fetch_perform(&f);
        tap_is_int(f.status, 413, "unix POST of AO_HTTP_BODY_MAX + 1 bytes: 413");
        tap_is_int(seen.calls, calls, "unix POST too large: the handler was not called");
        fetch_done(&f);

        fetch_init(&f, socket_path, "http://localhost/metrics");
        fetch_perform(&f);
        tap_is_int(f.status, 200, "unix /metrics: served too");
        fetch_done(&f);
}

/* While a request waits for the main thread, /metrics is still answered: the main loop is not involved. */
static void test_main_blocked(struct ao_http *h)
{
        struct fetch slow, scrape;
        uint64_t before = ao_http_requests(h);

        fetch_init(&slow, socket_path, "http://localhost/hello.json");
        pthread_t t = fetch_start(&slow);
        tap_ok(wait_requests(h, before + 1), "main blocked: the debug request reached the server");

        fetch_init(&scrape, NULL, "http://127.0.0.1:%u/metrics", ao_http_port(h));
        fetch_perform(&scrape);
        tap_is_int(scrape.status, 200, "main blocked: /metrics answered");
        tap_ok(!atomic_load(&slow.done), "main blocked: the debug request still waits");
        fetch_done(&scrape);

        fetch_finish(&slow, t);
        tap_is_int(slow.status, 200, "main blocked: the debug request answered once the loop runs");
        fetch_done(&slow);
        tap_is_int(ao_http_requests(h), before + 2, "requests counted");
}

/* A client connected over TCP that has sent @partial (maybe nothing) and waits. */
static int connect_tcp(uint16_t port, const char *partial)
{
        struct sockaddr_in sa = {
            .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                tap_bail("cannot connect to the server");
        if (write(fd, partial, strlen(partial)) != (ssize_t) strlen(partial))
                tap_bail("cannot write to the server");
        return fd;
}

/* A handler may answer later (it waits for a child process): the request waits, the loop does not. */
static void test_deferred(struct ao_http *h)
{
        struct fetch f;
        fetch_init(&f, socket_path, "http://localhost/later.text");
        seen.deferred = 0;
        pthread_t t = fetch_start(&f);
        uint64_t deadline = ao_clock_now_usec() + 10 * USEC;
        while (!seen.deferred && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        tap_ok(seen.deferred != 0, "deferred: the handler kept the request's id");
        tap_is_int(seen.format, AO_HTTP_FORMAT_TEXT, "deferred: the handler sees the format");
        for (int i = 0; i < 5; i++)
                (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        tap_ok(!atomic_load(&f.done), "deferred: no answer yet, while the loop runs");

        ao_http_answer(h, seen.deferred + 1000, 200, cJSON_CreateString("not this one\n"));
        ao_http_answer(h, seen.deferred, 200, cJSON_CreateString("rendered\n"));
        fetch_finish(&f, t);
        tap_is_int(f.status, 200, "deferred: answered 200");
        tap_is_str(ao_strbuf_str(&f.body), "rendered\n", "deferred: the later answer");
        fetch_done(&f);
        ao_http_answer(h, seen.deferred, 200, cJSON_CreateString("twice\n")); /* already answered: dropped */
}

static void test_stop_pending(struct ao_http *h, size_t sources_before)
{
        struct fetch f;
        uint64_t before = ao_http_requests(h);
        unsigned calls = seen.calls;

        /* Connections that stop must close: an idle keep-alive one, a silent one, a half-sent request. */
        CURL *keepalive = curl_easy_init();
        char url[128];
        (void) snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", ao_http_port(h));
        curl_easy_setopt(keepalive, CURLOPT_URL, url);
        curl_easy_setopt(keepalive, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(keepalive, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(keepalive, CURLOPT_WRITEDATA, &f);
        fetch_init(&f, NULL, "%s", url);
        tap_is_int(curl_easy_perform(keepalive), CURLE_OK, "stop: a keep-alive connection is open");
        fetch_done(&f);
        int silent = connect_tcp(ao_http_port(h), "");
        int partial = connect_tcp(ao_http_port(h), "GET /heal");
        before++;

        fetch_init(&f, socket_path, "http://localhost/hello.json");
        pthread_t t = fetch_start(&f);
        tap_ok(wait_requests(h, before + 1), "stop: a request waits for the main thread");

        /* The main thread never answers it: stop must answer 503 instead. */
        uint64_t t0 = ao_clock_now_usec();
        (void) ao_http_stop(h);
        uint64_t took = ao_clock_now_usec() - t0;
        tap_ok(took < 900 * AO_USEC_PER_MSEC, "stop: open connections closed at once (%llu ms)",
               (unsigned long long) (took / AO_USEC_PER_MSEC));
        char c;
        /* EOF once accepted and closed by the server; a reset if it was still in the backlog. */
        tap_ok(read(silent, &c, 1) <= 0, "stop: a silent connection is closed");
        tap_ok(read(partial, &c, 1) <= 0, "stop: a half-sent request's connection is closed");
        (void) close(silent);
        (void) close(partial);
        curl_easy_cleanup(keepalive);
        (void) pthread_join(t, NULL);
        tap_is_int(f.code, CURLE_OK, "stop: the waiting request got an answer");
        tap_is_int(f.status, 503, "stop: 503");
        tap_is_int(seen.calls, calls, "stop: the handler never ran");
        fetch_done(&f);

        struct stat st;
        tap_ok(lstat(socket_path, &st) < 0 && errno == ENOENT, "stop: socket file removed");
        tap_is_int(ao_reactor_count_sources(reactor), sources_before, "stop: the wake-up source is gone");

        /* A stale wake-up (the request above) must not run anything now. */
        (void) ao_reactor_run_once(reactor, 0);
        tap_is_int(seen.calls, calls, "stop: nothing dispatched afterwards");
}

/* --- an HA follower's /readyz ------------------------------------------------ */

static void expect_readyz(uint16_t port, long status, const char *body, const char *what)
{
        struct fetch f;
        fetch_init(&f, NULL, "http://127.0.0.2:%u/readyz", port);
        fetch_perform(&f);
        tap_is_int(f.status, status, "follower: %s: %ld", what, status);
        tap_is_str(ao_strbuf_str(&f.body), body, "follower: %s: the text", what);
        fetch_done(&f);
}

/* A socket at @address:@port that accepts (the kernel's backlog) and never answers. */
static int silent_listener(const char *address, uint16_t port)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        (void) inet_pton(AF_INET, address, &sa.sin_addr);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
                tap_bail("cannot listen for the silent leader");
        return fd;
}

static bool can_bind_ipv6_loopback(void)
{
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok = fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
        if (fd >= 0)
                (void) close(fd);
        return ok;
}

/*
 * The leader listens on 127.0.0.1, the follower on 127.0.0.2, on the same port (the follower
 * asks the leader on its own port, as the Go operator does). Every /readyz of the follower is
 * a blocking curl call in the main thread, which never runs the reactor: the follower's HTTP
 * thread alone asks the leader.
 */
static void test_follower(struct ao_metrics *m, struct ao_metrics *hm)
{
        static const char ok_text[] = "HA mode is enabled and waiting for acquiring the lock.\n";
        static const char not_ok_text[] =
            "HA mode is enabled but the leader's status response code isn't OK\n";
        static const char cannot_send[] = "HA mode is enabled but couldn't send a request to the leader\n";
        struct ao_http *leader = start("127.0.0.1", 0, NULL, m, hm);
        uint16_t port = ao_http_port(leader);
        struct ao_http *follower = start("127.0.0.2", port, NULL, m, hm);

        expect_readyz(port, 500, "Startup converge in progress\n", "before it follows, its own readiness");
        ao_http_follow_leader(follower, "", NULL);
        expect_readyz(port, 500, "HA mode is enabled but no leader is elected\n", "no holder in the Lease");
        ao_http_follow_leader(follower, "a.my-host.ha.pod", NULL);
        expect_readyz(port, 500, "HA mode is enabled but couldn't craft a request to the leader\n",
                      "the holder names no address");
        ao_http_follow_leader(follower, "a.127-0-0-1.ha.pod", "127.0.0.1");
        expect_readyz(port, 500, not_ok_text, "the leader has not converged");
        ao_http_set_ready(leader, true);
        expect_readyz(port, 200, ok_text, "the leader is ready");

        if (can_bind_ipv6_loopback()) {
                struct ao_http *leader6 = start("::1", port, NULL, m, hm);
                ao_http_set_ready(leader6, true);
                ao_http_follow_leader(follower, "a.--1.ha.pod", "::1");
                expect_readyz(port, 200, ok_text, "an IPv6 leader is ready");
                (void) ao_http_stop(leader6);
        } else {
                tap_ok(true, "# SKIP no IPv6 loopback");
                tap_ok(true, "# SKIP no IPv6 loopback");
        }

        ao_http_follow_leader(follower, "a.127-0-0-1.ha.pod", "127.0.0.1");
        (void) ao_http_stop(leader);
        expect_readyz(port, 500, cannot_send, "nothing listens at the leader's address");

        /* A leader that accepts and never answers: 3 s, during which the follower serves the rest. */
        int silent = silent_listener("127.0.0.1", port);
        struct fetch probe, scrape;
        uint64_t before = ao_http_requests(follower);
        fetch_init(&probe, NULL, "http://127.0.0.2:%u/readyz", port);
        uint64_t t0 = ao_clock_now_usec();
        pthread_t t = fetch_start(&probe);
        tap_ok(wait_requests(follower, before + 1), "follower: the probe reached the follower");
        fetch_init(&scrape, NULL, "http://127.0.0.2:%u/metrics", port);
        fetch_perform(&scrape);
        tap_is_int(scrape.status, 200, "follower: /metrics is answered while the probe waits for the leader");
        tap_ok(!atomic_load(&probe.done), "follower: the probe still waits");
        fetch_done(&scrape);
        (void) pthread_join(t, NULL);
        uint64_t took = ao_clock_now_usec() - t0;
        tap_is_int(probe.status, 500, "follower: a silent leader: 500");
        tap_is_str(ao_strbuf_str(&probe.body), cannot_send, "follower: a silent leader: the text");
        tap_ok(took >= 2900 * AO_USEC_PER_MSEC && took < 6 * USEC,
               "follower: after the 3 s timeout (%llu ms)", (unsigned long long) (took / AO_USEC_PER_MSEC));
        fetch_done(&probe);

        /* Stopping while a probe waits for the leader answers it at once. */
        before = ao_http_requests(follower);
        fetch_init(&probe, NULL, "http://127.0.0.2:%u/readyz", port);
        t = fetch_start(&probe);
        tap_ok(wait_requests(follower, before + 1), "follower: another probe waits for the silent leader");
        t0 = ao_clock_now_usec();
        (void) ao_http_stop(follower);
        (void) pthread_join(t, NULL);
        took = ao_clock_now_usec() - t0;
        tap_is_int(probe.status, 503, "follower: stopped while a probe waits: 503");
        tap_ok(took < 2 * USEC, "follower: stop did not wait for the leader (%llu ms)",
               (unsigned long long) (took / AO_USEC_PER_MSEC));
        fetch_done(&probe);
        (void) close(silent);

        follower = start("127.0.0.2", port, NULL, m, hm);
        ao_http_follow_leader(follower, "", NULL);
        ao_http_stop_following(follower);
        expect_readyz(port, 500, "Startup converge in progress\n", "leading: its own readiness again");
        (void) ao_http_stop(follower);
}

static void test_errors(const char *dir)
{
        struct ao_http_options o = {.listen_address = "127.0.0.1", .handler = handler, .userdata = &seen};
        struct ao_http *h = NULL, *h2 = NULL;
        struct ao_error err = {0};
        char path[512];
        int r;

        /* Missing socket directory: -ENOENT naming the path (the operator warns and goes on without it). */
        (void) snprintf(path, sizeof(path), "%s/missing/debug.socket", dir);
        o.unix_socket = path;
        r = ao_http_start(reactor, &o, &h, &err);
        tap_is_int(r, -ENOENT, "missing socket directory: -ENOENT");
        tap_ok(strstr(err.msg, path) != NULL, "missing socket directory: message names the path (%s)",
               err.msg);
        tap_ok(h == NULL, "missing socket directory: nothing returned");

        /* A regular file in the way is not removed. */
        (void) snprintf(path, sizeof(path), "%s/regular", dir);
        FILE *fp = fopen(path, "w");
        if (fp)
                (void) fclose(fp);
        err = (struct ao_error){0};
        r = ao_http_start(reactor, &o, &h, &err);
        tap_is_int(r, -EEXIST, "regular file at the socket path: -EEXIST");
        tap_ok(access(path, F_OK) == 0, "regular file at the socket path: left alone");
        (void) unlink(path);

        /* Address in use: the message names address:port. */
        o.unix_socket = NULL;
        err = (struct ao_error){0};
        r = ao_http_start(reactor, &o, &h, &err);
        tap_is_int(r, 0, "start without a unix socket");
        if (r == 0) {
                char want[64];
                o.listen_port = ao_http_port(h);
                (void) snprintf(want, sizeof(want), "'127.0.0.1:%u'", (unsigned) o.listen_port);
                r = ao_http_start(reactor, &o, &h2, &err);
                tap_is_int(r, -EADDRINUSE, "port in use: -EADDRINUSE");
                tap_ok(strstr(err.msg, want) != NULL, "port in use: message names %s (%s)", want, err.msg);
                (void) ao_http_stop(h);
                h = NULL;
                o.listen_port = 0;
        }

        o.listen_address = "not-an-address";
        err = (struct ao_error){0};
        r = ao_http_start(reactor, &o, &h, &err);
        tap_is_int(r, -EINVAL, "invalid address: -EINVAL");
        tap_ok(strstr(err.msg, "'not-an-address:0'") != NULL, "invalid address: named (%s)", err.msg);

        /* IPv6 literal, where the machine has ::1. */
        o.listen_address = "::1";
        err = (struct ao_error){0};
        r = ao_http_start(reactor, &o, &h, &err);
        if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT) {
                tap_ok(true, "IPv6: skipped, no ::1 here (%s)", err.msg);
                return;
        }
        tap_is_int(r, 0, "IPv6 ::1: started");
        if (r < 0)
                return;
        struct fetch f;
        fetch_init(&f, NULL, "http://[::1]:%u/healthz", ao_http_port(h));
        fetch_perform(&f);
        tap_is_int(f.status, 200, "IPv6 ::1: /healthz 200");
        fetch_done(&f);
        (void) ao_http_stop(h);
}

int main(void)
{
        sigset_t all;
        /* As the operator does before any thread starts. */
        sigfillset(&all);
        (void) pthread_sigmask(SIG_BLOCK, &all, NULL);
        if (curl_global_init(CURL_GLOBAL_ALL) != 0)
                tap_bail("curl_global_init");

        reactor = test_reactor_new();
        size_t sources_before = ao_reactor_count_sources(reactor);
        unsigned fds_before = count_fds();

        char dir[] = "/tmp/test-http-XXXXXX";
        if (!mkdtemp(dir))
                tap_bail("mkdtemp");
        (void) snprintf(socket_path, sizeof(socket_path), "%s/debug.socket", dir);

        struct ao_metrics *m = ao_metrics_new("addon_operator_");
        struct ao_metric_family *fam =
            ao_metrics_family(m, "test_total", AO_METRIC_COUNTER, "A test counter.", NULL, NULL, 0);
        ao_metric_add(fam, NULL, 3);
        struct ao_metrics *hm = ao_metrics_new("");
        struct ao_metric_family *hfam = ao_metrics_family(hm, "hook_gauge", AO_METRIC_GAUGE, "A hook gauge.",
                                                          (const char *const[]){"hook", NULL}, NULL, 0);
        ao_metric_set(hfam, (const char *const[]){"h1"}, 7);

        /* A socket file from a previous run is replaced. */
        make_stale_socket(socket_path);
        struct ao_http *h = start("127.0.0.1", 0, socket_path, m, hm);
        tap_ok(ao_http_port(h) != 0, "port 0: bound to %u", ao_http_port(h));

        struct stat st;
        tap_ok(lstat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode), "the debug socket exists");
        tap_is_int(st.st_mode & 07777, 0600, "the debug socket is mode 0600");

        test_local_routes(h, m, hm);
        test_debug_routes();
        test_main_blocked(h);
        test_deferred(h);
        test_stop_pending(h, sources_before);

        /* Restart on the same socket path. */
        h = start("127.0.0.1", 0, socket_path, m, hm);
        struct fetch f;
        fetch_init(&f, socket_path, "http://localhost/hello.json");
        fetch_via_main(&f);
        tap_is_int(f.status, 200, "restart: the same socket path serves again");
        fetch_done(&f);
        fetch_init(&f, NULL, "http://127.0.0.1:%u/readyz", ao_http_port(h));
        fetch_perform(&f);
        tap_is_int(f.status, 500, "restart: not ready again");
        fetch_done(&f);

        /* Answered by the main thread right before stop: the answer, sent first, wins over the 503. */
        unsigned calls = seen.calls;
        fetch_init(&f, socket_path, "http://localhost/hello.json");
        pthread_t t = fetch_start(&f);
        uint64_t deadline = ao_clock_now_usec() + 10 * USEC;
        while (seen.calls == calls && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        (void) ao_http_stop(h);
        (void) pthread_join(t, NULL);
        tap_is_int(f.status, 200, "answered just before stop: 200, not 503");
        fetch_done(&f);
        (void) ao_http_stop(NULL);

        /* A deferred request still waiting at stop is answered 503; its late answer goes nowhere. */
        h = start("127.0.0.1", 0, socket_path, m, hm);
        seen.deferred = 0;
        fetch_init(&f, socket_path, "http://localhost/later");
        t = fetch_start(&f);
        deadline = ao_clock_now_usec() + 10 * USEC;
        while (!seen.deferred && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        h = ao_http_stop(h);
        (void) pthread_join(t, NULL);
        tap_is_int(f.status, 503, "deferred at stop: 503");
        tap_is_str(ao_strbuf_str(&f.body), "the operator is shutting down\n", "deferred at stop: why");
        fetch_done(&f);
        ao_http_answer(h, seen.deferred, 200, cJSON_CreateString("too late\n"));

        test_follower(m, hm);
        test_errors(dir);

        tap_is_int(ao_reactor_count_sources(reactor), sources_before, "no source left behind");
        tap_is_int(count_fds(), fds_before, "no fd left behind (listeners, h2o's epoll fd and queue pipe)");
        (void) rmdir(dir);
        ao_metrics_free(m);
        ao_metrics_free(hm);
        ao_reactor_free(reactor);
        curl_global_cleanup();
        return tap_done();
}
