/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event → hook-start latency, p50 and p99, at a given event rate, against
 * the bare limit measured in the same run.
 *
 *   events     R events per second, each due at t0 + i/R, spread round-robin
 *              over Q hooks (one named queue each). An event's latency is
 *              counted from the moment it was due, so a late loop counts.
 *   operator   each event is a task with the hook's combine key and a binding
 *              context; events that wait behind a running hook are merged
 *              into its next run, as the operator merges them. The handler
 *              starts an event run of the `#!/bin/sh` + `exit 0` hook
 *              through the hook runner (run directory, binding context,
 *              values, spawner, sandbox profile), as bench-hooks does.
 *   bare       the same events and merging with nothing around them: an
 *              epoll loop on a timerfd and pidfds, posix_spawn of the
 *              script as soon as its hook is idle and has events.
 *   hook start the kernel's own exec timestamp of the hook process
 *              (PROC_EVENT_EXEC from the process events connector, on
 *              CLOCK_MONOTONIC), on both paths: the same clock at the same
 *              point, whatever happens in between.
 *
 * "max" is 20,000 events/s: several times what the hooks can run, so every
 * run covers many events and the latency is how long an event waits for
 * the run in progress plus a start. Rounds alternate bare / operator; the
 * latencies of all rounds are pooled per path.
 *
 * Usage: bench-latency [--rates 100,1000,max] [--queues Q] [--seconds S] [--rounds N] [--spawner PATH]
 * Needs CAP_NET_ADMIN for the connector (root). AO_REACTOR=epoll|io_uring picks the backend.
 * Prints "row:" lines for bench/run's table.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/hook-run.h"
#include "ao/log.h"
#include "ao/proc.h"
#include "ao/queue.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "bench-util.h"

#define MAX_RATE   20000
#define QUEUES_MAX 16
#define EXECS_RING 16384
#define RATES_MAX  8

static char *envp_min[] = {"PATH=/usr/bin:/bin", NULL};

static long arg_rates[RATES_MAX] = {100, 1000, MAX_RATE};
static size_t arg_n_rates = 3;
static int arg_queues = 1;
static double arg_seconds = 2.0;
static int arg_rounds = 3;
static const char *arg_spawner;

/* --- growable sample arrays ------------------------------------------------- */

struct samples {
        double *v;
        size_t n, cap;
};

static void samples_add(struct samples *s, double x)
{
        if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 1024;
                s->v = ao_xrealloc(s->v, s->cap * sizeof(double));
        }
        s->v[s->n++] = x;
}

/* --- exec timestamps from the process events connector ----------------------- */

struct exec_ring {
        int fd;
        pid_t pid[EXECS_RING];
        uint64_t usec[EXECS_RING];
        size_t next;
};

static struct exec_ring execs = {.fd = -1};

static int connector_open(void)
{
        int fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd < 0)
                return -errno;
        int size = 8 << 20;
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
        struct sockaddr_nl addr = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0};
        if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) < 0)
                return -errno;
        struct __attribute__((aligned(NLMSG_ALIGNTO))) {
                struct nlmsghdr nl;
                struct __attribute__((packed)) {
                        struct cn_msg cn;
                        enum proc_cn_mcast_op op;
                } m;
        } req = {0};
        req.nl.nlmsg_len = sizeof(req);
        req.nl.nlmsg_type = NLMSG_DONE;
        req.m.cn.id.idx = CN_IDX_PROC;
        req.m.cn.id.val = CN_VAL_PROC;
        req.m.cn.len = sizeof(enum proc_cn_mcast_op);
        req.m.op = PROC_CN_MCAST_LISTEN;
        if (send(fd, &req, sizeof(req), 0) < 0)
                return -errno;
        execs.fd = fd;
        return 0;
}

/* Read every pending process event and keep the exec ones. */
static void connector_drain(void)
{
        char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
        for (;;) {
                ssize_t n = recv(execs.fd, buf, sizeof(buf), 0);
                if (n < 0 && errno == ENOBUFS) {
                        fprintf(stderr,
                                "bench-latency: the connector dropped events; latencies may be missing\n");
                        continue;
                }
                if (n <= 0)
                        return;
                for (struct nlmsghdr *h = (struct nlmsghdr *) buf; NLMSG_OK(h, (size_t) n);
                     h = NLMSG_NEXT(h, n)) {
                        struct cn_msg *cn = NLMSG_DATA(h);
                        struct proc_event *ev = (struct proc_event *) cn->data;
                        if (ev->what != PROC_EVENT_EXEC)
                                continue;
                        size_t i = execs.next++ % EXECS_RING;
                        execs.pid[i] = ev->event_data.exec.process_pid;
                        execs.usec[i] = ev->timestamp_ns / 1000;
                }
        }
}

/* The newest exec of @pid, in µs on CLOCK_MONOTONIC; 0 when none was seen. */
static uint64_t exec_time_of(pid_t pid)
{
        connector_drain();
        size_t seen = AO_MIN(execs.next, (size_t) EXECS_RING);
        for (size_t k = 1; k <= seen; k++) {
                size_t i = (execs.next - k) % EXECS_RING;
                if (execs.pid[i] == pid)
                        return execs.usec[i];
        }
        return 0;
}

/* --- the event source shared by both paths ---------------------------------- */

struct events {
        long rate, total, generated;
        uint64_t t0;
};

static uint64_t event_due(const struct events *e, long i)
{
        return e->t0 + (uint64_t) ((double) i * 1e6 / (double) e->rate);
}

/* --- bare: an epoll loop around posix_spawn ------------------------------------ */

struct bare_hook {
        pid_t pid;
        int pidfd;
        uint64_t *running, *pending; /* due times of the events the run covers / that wait */
        size_t n_running, n_pending, cap_running, cap_pending;
        long runs;
};

static void push_due(uint64_t **v, size_t *n, size_t *cap, uint64_t due)
{
        if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 64;
                *v = ao_xrealloc(*v, *cap * sizeof(uint64_t));
        }
        (*v)[(*n)++] = due;
}

static void bare_start(struct bare_hook *h, const char *path, posix_spawnattr_t *attr, int ep, int index)
{
        char *argv[] = {(char *) path, NULL};
        int r = posix_spawn(&h->pid, path, NULL, attr, argv, envp_min);
        if (r != 0) {
                fprintf(stderr, "posix_spawn: %s\n", strerror(r));
                exit(1);
        }
        h->pidfd = (int) syscall(SYS_pidfd_open, h->pid, 0);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t) index + 1};
        if (h->pidfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, h->pidfd, &ev) < 0) {
                perror("pidfd");
                exit(1);
        }
        /* The waiting events all go with this run. */
        uint64_t *swap = h->running;
        size_t swap_cap = h->cap_running;
        h->running = h->pending, h->cap_running = h->cap_pending, h->n_running = h->n_pending;
        h->pending = swap, h->cap_pending = swap_cap, h->n_pending = 0;
        h->runs++;
}

static void bare_finish(struct bare_hook *h, int ep, struct samples *lat)
{
        siginfo_t si;
        (void) epoll_ctl(ep, EPOLL_CTL_DEL, h->pidfd, NULL);
        (void) waitid(P_PIDFD, (id_t) h->pidfd, &si, WEXITED);
        close(h->pidfd);
        uint64_t start = exec_time_of(h->pid);
        for (size_t i = 0; start && i < h->n_running; i++)
                samples_add(lat, (double) (start - h->running[i]));
        h->pid = 0;
        h->n_running = 0;
}

/* One round of @e through posix_spawn; returns the hook runs it took. */
static long bare_round(const char *path, struct events *e, struct samples *lat)
{
        posix_spawnattr_t attr;
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        posix_spawnattr_setsigmask(&attr, &none);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct epoll_event tev = {.events = EPOLLIN, .data.u32 = 0};
        (void) epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);
        struct bare_hook hooks[QUEUES_MAX] = {0};

        e->generated = 0;
        e->t0 = ao_clock_now_usec() + 1000;
        long done = 0, runs = 0;
        while (done < e->total) {
                if (e->generated < e->total) {
                        uint64_t due = event_due(e, e->generated);
                        struct itimerspec its = {
                            .it_value = {.tv_sec = (time_t) (due / AO_USEC_PER_SEC),
                                         .tv_nsec = (long) (due % AO_USEC_PER_SEC) * 1000}};
                        (void) timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
                }
                struct epoll_event evs[QUEUES_MAX + 1];
                int n = epoll_wait(ep, evs, QUEUES_MAX + 1, -1);
                for (int i = 0; i < n; i++) {
                        if (evs[i].data.u32 == 0) {
                                uint64_t ticks;
                                (void) read(tfd, &ticks, sizeof(ticks));
                                continue;
                        }
                        struct bare_hook *h = &hooks[evs[i].data.u32 - 1];
                        done += (long) h->n_running;
                        bare_finish(h, ep, lat);
                }
                /* Every event that is due now goes to its hook; idle hooks with events start. */
                uint64_t now = ao_clock_now_usec();
                while (e->generated < e->total && event_due(e, e->generated) <= now) {
                        struct bare_hook *h = &hooks[e->generated % arg_queues];
                        push_due(&h->pending, &h->n_pending, &h->cap_pending, event_due(e, e->generated));
                        e->generated++;
                }
                for (int q = 0; q < arg_queues; q++)
                        if (hooks[q].pid == 0 && hooks[q].n_pending > 0)
                                bare_start(&hooks[q], path, &attr, ep, q);
        }
        for (int q = 0; q < arg_queues; q++) {
                runs += hooks[q].runs;
                free(hooks[q].running);
                free(hooks[q].pending);
        }
        close(tfd);
        close(ep);
        posix_spawnattr_destroy(&attr);
        return runs;
}

/* --- operator: queues and the hook runner -------------------------------------- */

struct bench {
        struct ao_reactor *reactor;
        struct ao_proc *proc;
        struct ao_hook_runner *runner;
        struct ao_queues *queues;
        struct ao_source *generator, *connector;
        const struct ao_sandbox_profile *profile; /* borrowed */
        const char *hook_path, *hooks_dir;        /* borrowed */
        cJSON *values;                            /* owned */
        struct events *events;
        struct samples *lat;
        long done, runs, failed;
        char first_error[AO_ERROR_MSG_MAX];
};

/* What one started run covers: the due times from its merged binding contexts. */
struct op_run {
        struct bench *b;
        struct ao_task *task;
        uint64_t *due;
        size_t n_due;
};

static void on_hook_done(struct ao_hook_outcome *outcome, void *userdata)
{
        struct op_run *run = userdata;
        struct bench *b = run->b;
        uint64_t start = exec_time_of(outcome->result.pid);
        for (size_t i = 0; start && i < run->n_due; i++)
                samples_add(b->lat, (double) (start - run->due[i]));
        if (!outcome->ok && b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", outcome->error.msg);
        b->done += (long) run->n_due;
        ao_task_finish(run->task, AO_TASK_SUCCESS);
        free(run->due);
        free(run);
}

static void on_task(struct ao_task *t, void *userdata)
{
        struct bench *b = userdata;
        const cJSON *contexts = ao_task_binding_contexts(t);
        struct op_run *run = ao_xcalloc(1, sizeof(*run));
        run->b = b;
        run->task = t;
        run->due = ao_xcalloc((size_t) AO_MAX(cJSON_GetArraySize(contexts), 1), sizeof(uint64_t));
        const cJSON *c;
        cJSON_ArrayForEach(c, contexts)
        {
                const cJSON *due = cJSON_GetObjectItemCaseSensitive(c, "due");
                run->due[run->n_due++] = cJSON_IsNumber(due) ? (uint64_t) due->valuedouble : 0;
        }
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_EVENT,
            .hook_name = "bench.sh",
            .path = b->hook_path,
            .working_dir = b->hooks_dir,
            .log_context =
                &(const struct ao_log_context){.binding = "bench", .queue = ao_queue_name(ao_task_queue(t))},
            .binding_contexts = contexts,
            .values = b->values,
            .config_values = b->values,
            .profile = b->profile,
            .on_done = on_hook_done,
            .userdata = run,
        };
        struct ao_error err = {0};
        b->runs++;
        if (ao_hook_run_start(b->runner, &req, &err) < 0) {
                fprintf(stderr, "bench-latency: %s\n", err.msg);
                exit(1);
        }
}

/* Merged runs are compacted as the operator compacts them (src/operator/lifecycle.c). */
static void compact(struct cJSON *contexts, void *userdata)
{
        ao_binding_contexts_combine(contexts, NULL);
}

/* Push every event that is due as a task on its hook's queue, then sleep until the next one. */
static int on_generate(struct ao_source *s, uint64_t now, void *userdata)
{
        struct bench *b = userdata;
        struct events *e = b->events;
        while (e->generated < e->total && event_due(e, e->generated) <= now) {
                char queue[24], key[24];
                int q = (int) (e->generated % arg_queues);
                snprintf(queue, sizeof(queue), "q%d", q);
                snprintf(key, sizeof(key), "bench-%d", q);
                cJSON *contexts = cJSON_CreateArray(), *c = cJSON_CreateObject();
                cJSON_AddStringToObject(c, "binding", "bench");
                cJSON_AddStringToObject(c, "type", "Event");
                cJSON_AddNumberToObject(c, "due", (double) event_due(e, e->generated));
                cJSON_AddItemToArray(contexts, c);
                struct ao_task_spec spec = {
                    .description = "HookRun:bench.sh", .combine_key = key, .binding_contexts = contexts};
                (void) ao_queue_push_tail(ao_queues_get(b->queues, queue, true), &spec);
                e->generated++;
                now = ao_clock_now_usec();
        }
        if (e->generated < e->total) {
                (void) ao_source_set_time(s, event_due(e, e->generated));
                (void) ao_source_set_enabled(s, AO_SOURCE_ONESHOT);
        }
        return 0;
}

static int on_connector(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        connector_drain();
        return 0;
}

static long operator_round(struct bench *b, struct events *e, struct samples *lat)
{
        b->events = e;
        b->lat = lat;
        b->done = b->runs = 0;
        e->generated = 0;
        e->t0 = ao_clock_now_usec() + 1000;
        (void) ao_source_set_time(b->generator, e->t0);
        (void) ao_source_set_enabled(b->generator, AO_SOURCE_ONESHOT);
        while (b->done < e->total)
                (void) ao_reactor_run_once(b->reactor, AO_USEC_INFINITY);
        return b->runs;
}

/* --- measuring -------------------------------------------------------------- */

static void report(const char *label, struct samples *s, long runs, long events)
{
        qsort(s->v, s->n, sizeof(double), bench_compare_doubles);
        printf("%-9s p50 %8.0f us  p99 %8.0f us  events %ld (%zu timed)  runs %ld (%.1f events per run)\n",
               label, bench_percentile(s->v, s->n, 50), bench_percentile(s->v, s->n, 99), events, s->n, runs,
               runs ? (double) events / (double) runs : 0);
}

static void measure(struct bench *b, long rate)
{
        struct events e = {.rate = rate, .total = AO_MAX((long) (arg_seconds * (double) rate), 10)};
        struct samples bare = {0}, op = {0};
        long bare_runs = 0, op_runs = 0;
        for (int round = 0; round < arg_rounds; round++) {
                bare_runs += bare_round(b->hook_path, &e, &bare);
                op_runs += operator_round(b, &e, &op);
        }
        const char *backend = ao_reactor_backend_name(b->reactor);
        char rate_name[32];
        if (rate == MAX_RATE)
                snprintf(rate_name, sizeof(rate_name), "max (%d/s)", MAX_RATE);
        else
                snprintf(rate_name, sizeof(rate_name), "%ld/s", rate);
        printf("# bench-latency rate=%s queues=%d rounds=%d events per round=%ld backend=%s\n", rate_name,
               arg_queues, arg_rounds, e.total, backend);
        long events = e.total * arg_rounds;
        report("bare", &bare, bare_runs, events);
        report("operator", &op, op_runs, events);
        double pct[] = {50, 99};
        for (size_t i = 0; i < AO_ARRAY_SIZE(pct); i++) {
                double o = bench_percentile(op.v, op.n, pct[i]), r = bench_percentile(bare.v, bare.n, pct[i]);
                printf("row: event to hook start p%.0f, %s, %d queue%s, %s|%.0f us|%.0f us "
                       "(posix_spawn)|%.2f|report|-\n",
                       pct[i], rate_name, arg_queues, arg_queues == 1 ? "" : "s", backend, o, r,
                       r > 0 ? o / r : 0);
        }
        fflush(stdout);
        free(bare.v);
        free(op.v);
}

/* --- set-up ------------------------------------------------------------------- */

static int parse_rates(const char *s)
{
        arg_n_rates = 0;
        _cleanup_free_ char *copy = ao_xstrdup(s);
        for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *end;
                long r = strcmp(tok, "max") == 0 ? MAX_RATE : strtol(tok, &end, 10);
                if (arg_n_rates == RATES_MAX || r <= 0 || r > MAX_RATE || (strcmp(tok, "max") != 0 && *end))
                        return -EINVAL;
                arg_rates[arg_n_rates++] = r;
        }
        return arg_n_rates ? 0 : -EINVAL;
}

static int parse_argv(int argc, char **argv)
{
        static const struct option options[] = {
            {"rates", required_argument, NULL, 'r'},
            {"queues", required_argument, NULL, 'q'},
            {"seconds", required_argument, NULL, 's'},
            {"rounds", required_argument, NULL, 'n'},
            {"spawner", required_argument, NULL, 'S'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'r':
                        if (parse_rates(optarg) < 0) {
                                fprintf(stderr, "--rates: '%s': expected a list like 100,1000,max\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case 'q':
                        arg_queues = atoi(optarg);
                        if (arg_queues < 1 || arg_queues > QUEUES_MAX) {
                                fprintf(stderr, "--queues: 1 to %d\n", QUEUES_MAX);
                                return -EINVAL;
                        }
                        break;
                case 's':
                        arg_seconds = atof(optarg);
                        if (arg_seconds <= 0) {
                                fprintf(stderr, "--seconds: a positive number\n");
                                return -EINVAL;
                        }
                        break;
                case 'n':
                        arg_rounds = atoi(optarg);
                        if (arg_rounds < 1) {
                                fprintf(stderr, "--rounds: at least 1\n");
                                return -EINVAL;
                        }
                        break;
                case 'S':
                        arg_spawner = optarg;
                        break;
                case 'h':
                        printf(
                            "Usage: bench-latency [--rates 100,1000,max] [--queues Q] [--seconds S] "
                            "[--rounds N] [--spawner PATH]\n"
                            "Event to hook-start latency (p50, p99) through the operator's queues and hook\n"
                            "runner against posix_spawn of the same script, same events, same merging.\n"
                            "  --rates LIST   events per second; max = %d (default 100,1000,max)\n"
                            "  --queues Q     hooks, one queue each, events round-robin (default 1)\n"
                            "  --seconds S    events per round = S x rate (default 2)\n"
                            "  --rounds N     rounds per path, alternating (default 3)\n"
                            "AO_REACTOR=epoll|io_uring picks the event loop backend. Needs root (the\n"
                            "process events connector gives the hooks' exec times).\n",
                            MAX_RATE);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static int make_hook(char *dir, char **ret_path)
{
        if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
                return -errno;
        char *path = ao_xasprintf("%s/bench.sh", dir);
        FILE *f = fopen(path, "w");
        if (!f || fputs("#!/bin/sh\nexit 0\n", f) < 0 || fclose(f) != 0 || chmod(path, 0755) < 0) {
                int r = -errno;
                free(path);
                return r;
        }
        *ret_path = path;
        return 0;
}

int main(int argc, char **argv)
{
        int r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        struct ao_log_options lo = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_WARN, .fd = -1};
        ao_log_setup(&lo);
        if ((r = connector_open()) < 0) {
                fprintf(stderr, "bench-latency: the process events connector: %s (needs root)\n",
                        strerror(-r));
                return 77;
        }

        char scratch[] = "/tmp/bench-latency.XXXXXX";
        _cleanup_free_ char *hook_path = NULL;
        if (make_hook(scratch, &hook_path) < 0) {
                perror("bench-latency: cannot write the hook");
                return 1;
        }
        struct bench b = {.hook_path = hook_path, .hooks_dir = scratch};
        struct ao_sandbox_profiles *profiles = NULL;
        struct ao_error err = {0};
        _cleanup_free_ char *spawner = bench_find_spawner(arg_spawner);
        struct ao_proc_options po = {.spawner_path = spawner ? spawner : "", .subreaper = true};
        struct ao_hook_runner_options ro = {.tmp_dir = scratch, .environment = envp_min};
        struct ao_queues_options qo = {.handler = on_task, .userdata = &b, .compact_contexts = compact};
        if (ao_reactor_new(bench_backend(), &b.reactor, &err) < 0 ||
            ao_sandbox_profiles_load(NULL, &profiles, &err) < 0 ||
            ao_proc_new(b.reactor, &po, &b.proc, &err) < 0 ||
            ao_hook_runner_new(b.proc, &ro, &b.runner, &err) < 0 ||
            ao_queues_new(b.reactor, &qo, &b.queues, &err) < 0) {
                fprintf(stderr, "bench-latency: %s\n", err.msg);
                return 1;
        }
        b.profile = ao_sandbox_profiles_find(profiles, "default");
        b.values = cJSON_Parse("{\"global\":{\"a\":1}}");
        if (ao_reactor_add_time(b.reactor, &b.generator, 0, on_generate, &b) < 0 ||
            ao_source_set_enabled(b.generator, AO_SOURCE_OFF) < 0 ||
            ao_reactor_add_io(b.reactor, &b.connector, execs.fd, AO_IO_IN, on_connector, &b) < 0) {
                fprintf(stderr, "bench-latency: cannot add the reactor sources\n");
                return 1;
        }

        printf("# bench-latency hook=%s profile=default launcher=%s (latency = the hook's exec time - the "
               "event's due time)\n",
               hook_path, ao_proc_uses_spawner(b.proc) ? "spawner" : "in-process");
        /* Warm both paths (page cache, the profile's spawner) before measuring. */
        struct events warm = {.rate = 200, .total = 20};
        struct samples ignored = {0};
        (void) bare_round(hook_path, &warm, &ignored);
        (void) operator_round(&b, &warm, &ignored);
        free(ignored.v);
        b.failed = 0;
        for (size_t i = 0; i < arg_n_rates; i++)
                measure(&b, arg_rates[i]);
        if (b.failed)
                fprintf(stderr, "bench-latency: %ld runs failed, the first: %s\n", b.failed, b.first_error);

        ao_source_free(b.generator);
        ao_source_free(b.connector);
        ao_queues_free(b.queues);
        ao_hook_runner_free(b.runner);
        ao_proc_free(b.proc);
        ao_sandbox_profiles_free(profiles);
        ao_reactor_free(b.reactor);
        cJSON_Delete(b.values);
        close(execs.fd);
        (void) unlink(hook_path);
        (void) rmdir(scratch);
        return b.failed ? 1 : 0;
}
