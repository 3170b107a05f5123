/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event loop's longest stall while a large input is processed, with its parse on the loop
 * ("inline": no worker pool) and on the worker pool, alternating in the same run.
 *
 *   patch   a hook run through the hook runner whose values patch is a 16 MiB file (the cap):
 *           59,500 `add` operations of ~280 bytes under /global (the hook is `cat FILE >
 *           "$VALUES_JSON_PATCH_PATH"`). From the start of the run to its done callback.
 *   list    an informer's LIST of one page of 500 ConfigMaps of 200 KiB each (100 MB), served by
 *           a plain HTTP thread in this process over loopback, through the kube client and the
 *           informer, to a subscriber that counts the objects. From the subscription to the
 *           subscriber's synced callback.
 *
 * The stall is the longest gap between two consecutive ticks of a 1 ms timer on the loop,
 * minus the 1 ms: how long the loop was kept from anything else (a watch, a probe, another
 * hook). An idle loop shows a few µs of that. On a loaded machine the loop's thread also waits
 * for a CPU, so the loop thread's own CPU time between two ticks is printed too: the work that
 * held it, whatever the load. Each round runs inline then worker for the patch,
 * then for the list (the order flips every round); the maximum and the median of the rounds
 * are printed per case, with the median time to done.
 *
 * Usage: bench-offload [--rounds N] [--worker-only]   (default 5 rounds)
 * --worker-only skips the inline cases: a profiler attached then sees what stays on the loop.
 * AO_REACTOR=epoll|io_uring picks the backend; AO_SPAWNER (or the build tree's) the spawner.
 * Prints "row:" lines for bench/run's table.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/hook-run.h"
#include "ao/informer.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/kubeconfig.h"
#include "ao/log.h"
#include "ao/proc.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "ao/worker.h"
#include "bench-util.h"

#define ROUNDS_MAX    50
#define PATCH_OPS     59500 /* 16.66 MB: just under the cap */
#define LIST_ITEMS    500
#define ITEM_BYTES    (200 * 1024)
#define TICK_USEC     1000
#define DEADLINE_USEC (120 * AO_USEC_PER_SEC)

static int arg_rounds = 5;
static bool arg_worker_only;
static char *envp_min[] = {"PATH=/usr/bin:/bin", NULL};

struct bench {
        struct ao_reactor *reactor;
        struct ao_worker *worker;
        struct ao_proc *proc;
        struct ao_hook_runner *runner[2]; /* inline, worker */
        struct ao_kube_client *client;
        struct ao_informers *informers[2];
        char *hook_path;
        bool done;
        bool ok;
        char error[AO_ERROR_MSG_MAX];
        size_t objects;
        uint64_t last_tick, max_gap;
        uint64_t last_cpu, max_cpu; /* the loop thread's CPU time between two ticks: its own work */
        uint64_t ticks_after_done;  /* ticks since done: the iteration that finished is measured too */
        struct ao_source *tick;
};

/* ---- the loop's stalls ----------------------------------------------------------------------- */

static uint64_t thread_cpu_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * AO_USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static int on_tick(struct ao_source *s, uint64_t now, void *userdata)
{
        struct bench *b = userdata;
        uint64_t t = ao_clock_now_usec(), cpu = thread_cpu_usec();
        if (b->last_tick && t - b->last_tick > b->max_gap)
                b->max_gap = t - b->last_tick;
        if (b->last_tick && cpu - b->last_cpu > b->max_cpu)
                b->max_cpu = cpu - b->last_cpu;
        b->last_tick = t;
        b->last_cpu = cpu;
        if (b->done)
                b->ticks_after_done++;
        (void) ao_source_set_time_relative(s, TICK_USEC);
        return 0;
}

/*
 * Run the loop until done (or the deadline), and on until the timer ticked twice after it, so
 * the iteration that finished and what it left for the next (frees, deferred callbacks) count;
 * the longest stall in µs.
 */
static uint64_t run_until_done(struct bench *b)
{
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while ((!b->done || b->ticks_after_done < 2) && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(b->reactor, 100 * AO_USEC_PER_MSEC);
        if (!b->done) {
                fprintf(stderr, "bench-offload: a case never finished\n");
                exit(1);
        }
        return b->max_gap > TICK_USEC ? b->max_gap - TICK_USEC : 0;
}

static void start_measuring(struct bench *b)
{
        b->done = false;
        b->ok = false;
        b->objects = 0;
        b->last_tick = 0;
        b->max_gap = 0;
        b->max_cpu = 0;
        b->ticks_after_done = 0;
        (void) ao_source_set_time_relative(b->tick, TICK_USEC);
}

/* ---- the values patch -------------------------------------------------------------------------- */

static char *write_patch(const char *dir)
{
        char *path = ao_xasprintf("%s/patch.json", dir);
        FILE *f = fopen(path, "w");
        if (!f)
                return NULL;
        fputc('[', f);
        for (int i = 0; i < PATCH_OPS; i++)
                fprintf(
                    f,
                    "%s{\"op\":\"add\",\"path\":\"/global/item-%06d\",\"value\":{\"name\":\"item-%06d\","
                    "\"labels\":{\"app\":\"bench\",\"tier\":\"backend\"},\"replicas\":%d,\"enabled\":true,"
                    "\"image\":\"registry.example.com/bench/app:1.2.3\",\"ports\":[8080,8443,9090],"
                    "\"note\":\"padding padding padding padding padding padding padding\"}}",
                    i ? "," : "", i, i, i % 7);
        fputc(']', f);
        fclose(f);
        return path;
}

static int make_hook(const char *dir, const char *patch, char **ret)
{
        char *path = ao_xasprintf("%s/hook.sh", dir);
        FILE *f = fopen(path, "w");
        if (!f) {
                free(path);
                return -errno;
        }
        fprintf(f, "#!/bin/sh\ncat '%s' > \"$VALUES_JSON_PATCH_PATH\"\n", patch);
        fclose(f);
        chmod(path, 0755);
        *ret = path;
        return 0;
}

static void on_hook_done(struct ao_hook_outcome *o, void *userdata)
{
        struct bench *b = userdata;
        b->done = true;
        /* Not counted here: walking 59,500 operations would be a stall of this benchmark's own. */
        b->ok = o->ok && o->values_patch && o->values_patch->child;
        snprintf(b->error, sizeof(b->error), "%s", o->error.msg);
}

static uint64_t run_patch(struct bench *b, int offloaded, uint64_t *ret_wall)
{
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_EVENT,
            .hook_name = "bench/patch.sh",
            .path = b->hook_path,
            .on_done = on_hook_done,
            .userdata = b,
        };
        struct ao_error err = {0};
        start_measuring(b);
        uint64_t t0 = ao_clock_now_usec();
        if (ao_hook_run_start(b->runner[offloaded], &req, &err) < 0) {
                fprintf(stderr, "bench-offload: %s\n", err.msg);
                exit(1);
        }
        uint64_t stall = run_until_done(b);
        *ret_wall = ao_clock_now_usec() - t0;
        if (!b->ok) {
                fprintf(stderr, "bench-offload: the hook run failed: %s\n", b->error);
                exit(1);
        }
        return stall;
}

/* ---- the list -------------------------------------------------------------------------------------- */

struct server {
        int fd;
        char *list; /* the response to a LIST: headers and body */
        size_t list_len;
};

static bool send_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false;
                p += k;
                n -= (size_t) k;
        }
        return true;
}

struct connection {
        struct server *srv;
        int fd;
};

/* One connection: LISTs get the list; a watch gets its headers and then nothing until the client goes. */
static void *serve_connection(void *userdata)
{
        struct connection *c = userdata;
        char req[8192];
        size_t len = 0;
        for (;;) {
                ssize_t k = recv(c->fd, req + len, sizeof(req) - 1 - len, 0);
                if (k <= 0)
                        break;
                len += (size_t) k;
                req[len] = '\0';
                char *end = strstr(req, "\r\n\r\n");
                if (!end)
                        continue;
                bool watch = strstr(req, "watch=1") != NULL;
                size_t used = (size_t) (end + 4 - req);
                memmove(req, req + used, len - used);
                len -= used;
                if (watch) {
                        static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                                   "Transfer-Encoding: chunked\r\n\r\n";
                        (void) send_all(c->fd, head, sizeof(head) - 1);
                        while (recv(c->fd, req, sizeof(req), 0) > 0)
                                ;
                        break;
                }
                if (!send_all(c->fd, c->srv->list, c->srv->list_len))
                        break;
        }
        close(c->fd);
        free(c);
        return NULL;
}

static void *serve(void *userdata)
{
        struct server *srv = userdata;
        for (;;) {
                int fd = accept4(srv->fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                struct connection *c = ao_xmalloc(sizeof(*c));
                *c = (struct connection){srv, fd};
                pthread_t t;
                if (pthread_create(&t, NULL, serve_connection, c) == 0)
                        pthread_detach(t);
        }
        return NULL;
}

static void build_list(struct server *srv)
{
        struct ao_strbuf body = {0};
        char *value = ao_xmalloc(ITEM_BYTES + 1);
        for (size_t i = 0; i < ITEM_BYTES; i++)
                value[i] = (char) ('a' + i % 26);
        value[ITEM_BYTES] = '\0';
        ao_strbuf_append(&body, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
                                "{\"resourceVersion\":\"1000\"},\"items\":[");
        for (int i = 0; i < LIST_ITEMS; i++)
                ao_strbuf_appendf(&body,
                                  "%s{\"metadata\":{\"name\":\"cm-%04d\",\"namespace\":\"bench\",\"uid\":"
                                  "\"6c2bd5a4-7f0e-4e5a-9c1d-%012d\",\"resourceVersion\":\"%d\",\"labels\":"
                                  "{\"app\":\"bench\"}},\"data\":{\"a\":\"%.*s\",\"b\":\"%.*s\"}}",
                                  i ? "," : "", i, i, 100 + i, ITEM_BYTES / 2, value, ITEM_BYTES / 2, value);
        ao_strbuf_append(&body, "]}");
        free(value);
        struct ao_strbuf r = {0};
        ao_strbuf_appendf(
            &r, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", body.len);
        ao_strbuf_append_n(&r, body.buf, body.len);
        ao_strbuf_done(&body);
        srv->list_len = r.len;
        srv->list = ao_strbuf_steal(&r);
}

static int start_server(struct server *srv)
{
        srv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t n = sizeof(a);
        if (srv->fd < 0 || bind(srv->fd, (struct sockaddr *) &a, sizeof(a)) < 0 || listen(srv->fd, 16) < 0 ||
            getsockname(srv->fd, (struct sockaddr *) &a, &n) < 0)
                return -errno;
        build_list(srv);
        pthread_t t;
        if (pthread_create(&t, NULL, serve, srv) != 0)
                return -EAGAIN;
        pthread_detach(t);
        return ntohs(a.sin_port);
}

static const struct ao_kube_resource configmaps = {
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .kind = "ConfigMap",
    .name = "configmaps",
    .namespaced = true,
    .watchable = true,
    .preferred = true,
};

static void on_object(struct ao_informer_sub *sub, enum ao_watch_type type, const cJSON *object, bool partial,
                      void *userdata)
{
        ((struct bench *) userdata)->objects++;
}

static void on_synced(struct ao_informer_sub *sub, void *userdata)
{
        struct bench *b = userdata;
        b->done = true;
        b->ok = b->objects == LIST_ITEMS;
}

static const struct ao_informer_sub_ops counting_ops = {.synced = on_synced, .event = on_object};

static uint64_t run_list(struct bench *b, int offloaded, uint64_t *ret_wall)
{
        struct ao_informer_query q = {.resource = &configmaps, .ns = "bench"};
        struct ao_informer_sub *sub = NULL;
        struct ao_error err = {0};
        start_measuring(b);
        uint64_t t0 = ao_clock_now_usec();
        if (ao_informers_subscribe(b->informers[offloaded], &q, &counting_ops, b, &sub, &err) < 0) {
                fprintf(stderr, "bench-offload: %s\n", err.msg);
                exit(1);
        }
        uint64_t stall = run_until_done(b);
        *ret_wall = ao_clock_now_usec() - t0;
        if (!b->ok) {
                fprintf(stderr, "bench-offload: the list gave %zu objects, not %d\n", b->objects, LIST_ITEMS);
                exit(1);
        }
        /* The informer stops from a deferred callback: let it, so the next round lists afresh. */
        ao_informer_unsubscribe(sub);
        while (ao_informers_count(b->informers[offloaded]) > 0)
                (void) ao_reactor_run_once(b->reactor, 100 * AO_USEC_PER_MSEC);
        return stall;
}

/* ---- the report ------------------------------------------------------------------------------------ */

struct series {
        double stall_ms[ROUNDS_MAX], cpu_ms[ROUNDS_MAX], wall_ms[ROUNDS_MAX];
        int n;
};

static void add(struct series *s, uint64_t stall, uint64_t cpu, uint64_t wall)
{
        s->stall_ms[s->n] = (double) stall / 1000.0;
        s->cpu_ms[s->n] = (double) cpu / 1000.0;
        s->wall_ms[s->n] = (double) wall / 1000.0;
        s->n++;
}

static double sorted_percentile(const double *v, int n, double p)
{
        double sorted[ROUNDS_MAX];
        memcpy(sorted, v, (size_t) n * sizeof(double));
        qsort(sorted, (size_t) n, sizeof(double), bench_compare_doubles);
        return bench_percentile(sorted, (size_t) n, p);
}

static void report(const char *input, const char *where, const struct series *s)
{
        double stall = sorted_percentile(s->stall_ms, s->n, 50),
               stall_max = sorted_percentile(s->stall_ms, s->n, 100);
        double cpu = sorted_percentile(s->cpu_ms, s->n, 50),
               cpu_max = sorted_percentile(s->cpu_ms, s->n, 100);
        bool worker = strcmp(where, "worker") == 0;
        printf("%-31s %-6s longest stall %8.2f ms (max %8.2f), loop CPU in a stall %8.2f ms (max %8.2f); "
               "done after %7.1f ms\n",
               input, where, stall, stall_max, cpu, cpu_max, sorted_percentile(s->wall_ms, s->n, 50));
        printf("row: offload %s, %s|%.1f ms stall, %.1f ms loop CPU (max of %d)|-|-|%s|%s\n", input, where,
               stall_max, cpu_max, s->n, worker ? "<= 10 ms" : "report",
               worker ? (cpu_max <= 10.0 ? "yes" : "no") : "-");
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
            {"rounds", required_argument, NULL, 'r'}, {"worker-only", no_argument, NULL, 'w'}, {0}};
        for (int c; (c = getopt_long(argc, argv, "", options, NULL)) != -1;) {
                if (c == 'r') {
                        arg_rounds = AO_MAX(1, AO_MIN(atoi(optarg), ROUNDS_MAX));
                } else if (c == 'w') {
                        arg_worker_only = true;
                } else {
                        fprintf(stderr, "usage: bench-offload [--rounds N] [--worker-only]\n");
                        return 2;
                }
        }
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        struct ao_log_options lo = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_ERROR, .fd = -1};
        ao_log_setup(&lo);

        char scratch[] = "/tmp/bench-offload.XXXXXX";
        if (!mkdtemp(scratch)) {
                perror("bench-offload: mkdtemp");
                return 1;
        }
        _cleanup_free_ char *patch = write_patch(scratch);
        struct bench b = {0};
        if (!patch || make_hook(scratch, patch, &b.hook_path) < 0) {
                perror("bench-offload: cannot write the hook");
                return 1;
        }
        struct stat st;
        (void) stat(patch, &st);

        struct server srv = {0};
        int port = start_server(&srv);
        if (port < 0) {
                fprintf(stderr, "bench-offload: cannot serve the list: %s\n", strerror(-port));
                return 1;
        }
        _cleanup_free_ char *base = ao_xasprintf("http://127.0.0.1:%d", port);

        struct ao_error err = {0};
        _cleanup_free_ char *spawner = bench_find_spawner(NULL);
        struct ao_proc_options po = {.spawner_path = spawner ? spawner : "", .subreaper = true};
        struct ao_kube_config cfg = {.server = base, .source = "bench"};
        struct ao_kube_client_options co = {0};
        if (ao_reactor_new(bench_backend(), &b.reactor, &err) < 0 ||
            ao_worker_new(b.reactor, 1, &b.worker, &err) < 0 ||
            ao_proc_new(b.reactor, &po, &b.proc, &err) < 0 ||
            ao_kube_client_new(b.reactor, &cfg, &co, &b.client, &err) < 0) {
                fprintf(stderr, "bench-offload: %s\n", err.msg);
                return 1;
        }
        /* A directory each: a runner clears what another runner of the same pid left in its own. */
        char *run_dirs[2];
        for (int i = 0; i < 2; i++) {
                run_dirs[i] = ao_xasprintf("%s/runs-%d", scratch, i);
                (void) mkdir(run_dirs[i], 0700);
                struct ao_hook_runner_options ro = {.tmp_dir = run_dirs[i],
                                                    .tmp_dir_explicit = true,
                                                    .environment = envp_min,
                                                    .worker = i ? b.worker : NULL};
                if (ao_hook_runner_new(b.proc, &ro, &b.runner[i], &err) < 0) {
                        fprintf(stderr, "bench-offload: %s\n", err.msg);
                        return 1;
                }
                struct ao_informers_options io = {.worker = i ? b.worker : NULL};
                b.informers[i] = ao_informers_new(b.reactor, b.client, &io);
        }
        if (ao_reactor_add_time_relative(b.reactor, &b.tick, TICK_USEC, on_tick, &b) < 0)
                return 1;

        printf(
            "# bench-offload: %s reactor; patch %lld bytes (%d operations), list %zu bytes (%d items of %d "
            "KiB); %d rounds\n",
            ao_reactor_backend_name(b.reactor), (long long) st.st_size, PATCH_OPS, srv.list_len, LIST_ITEMS,
            ITEM_BYTES / 1024, arg_rounds);
        struct series patch_s[2] = {0}, list_s[2] = {0};
        uint64_t wall;
        for (int w = arg_worker_only; w < 2;
             w++) { /* warm both paths: page cache, the spawner, the connection */
                (void) run_patch(&b, w, &wall);
                (void) run_list(&b, w, &wall);
        }
        for (int round = 0; round < arg_rounds; round++) {
                for (int k = arg_worker_only; k < 2; k++) {
                        int w = round % 2 && !arg_worker_only ? 1 - k : k;
                        uint64_t stall = run_patch(&b, w, &wall);
                        add(&patch_s[w], stall, b.max_cpu, wall);
                }
                for (int k = arg_worker_only; k < 2; k++) {
                        int w = round % 2 && !arg_worker_only ? 1 - k : k;
                        uint64_t stall = run_list(&b, w, &wall);
                        add(&list_s[w], stall, b.max_cpu, wall);
                }
        }
        if (!arg_worker_only)
                report("16 MiB values patch (hook run)", "inline", &patch_s[0]);
        report("16 MiB values patch (hook run)", "worker", &patch_s[1]);
        if (!arg_worker_only)
                report("100 MB list page (informer)", "inline", &list_s[0]);
        report("100 MB list page (informer)", "worker", &list_s[1]);

        ao_source_free(b.tick);
        for (int i = 0; i < 2; i++) {
                ao_informers_free(b.informers[i]);
                ao_hook_runner_free(b.runner[i]);
                (void) rmdir(run_dirs[i]);
                free(run_dirs[i]);
        }
        ao_kube_client_free(b.client);
        ao_worker_free(b.worker);
        ao_proc_free(b.proc);
        ao_reactor_free(b.reactor);
        (void) unlink(b.hook_path);
        (void) unlink(patch);
        (void) rmdir(scratch);
        free(b.hook_path);
        free(srv.list);
        return 0;
}
