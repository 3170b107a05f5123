/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hook throughput through the operator's hook path, as a ratio against the
 * bare limit measured in the same run.
 *
 *   operator   N tasks spread round-robin over Q named queues (one task at a
 *              time per queue, so at most Q hooks in flight). Each task's
 *              handler starts an event run of a `#!/bin/sh\nexit 0` hook
 *              through the hook runner (private run directory on tmpfs,
 *              binding context, values and config values written, outputs
 *              created, the child started through the launcher under the
 *              sandbox profile, outputs read and parsed, directory removed)
 *              and finishes the task in the run's done callback.
 *   bare       N posix_spawn + waitpid of the same script, Q in flight.
 *
 * Each (profile, Q) pair runs 5 rounds that alternate bare / operator, so a
 * change in machine load hits both; the medians are reported, with the
 * ratio operator rate / bare rate (1.0 = no overhead). "Operator CPU" is
 * this process (getrusage RUSAGE_SELF, hooks excluded) plus the spawner of
 * the profile (from /proc/<pid>/stat, clock-tick resolution). "Hook's own
 * CPU" is the hooks' rusage on both paths, to show the gap is not in them.
 *
 * Usage: bench-hooks [--runs N] [--queues 1,2,4] [--profiles default,none] [--quick] [--spawner PATH]
 *                    [--operator-only]
 * --operator-only skips the bare rounds (and so the ratios): a profiler attached to this process
 * then sees the operator's path alone.
 * The spawner is --spawner, else $AO_SPAWNER, else addon-operator-spawner
 * next to this binary or one directory up (the build tree). AO_REACTOR=epoll
 * or io_uring picks the event loop backend (default: epoll, the operator's default).
 * Each configuration also prints "row:" lines for bench/run's table.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/hook-run.h"
#include "ao/log.h"
#include "bench-util.h"
#include "ao/proc.h"
#include "ao/queue.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"

#define ROUNDS     5
#define QUEUES_MAX 64

static char *envp_min[] = {"PATH=/usr/bin:/bin", NULL};

static long arg_runs = 2000;
static int arg_queues[QUEUES_MAX] = {1, 2, 4};
static size_t arg_n_queues = 3;
static const char *arg_spawner;
static bool arg_profile_default = true, arg_profile_none = true;
static bool arg_operator_only; /* for profilers: no bare rounds, no ratios */

/*
 * N plain posix_spawn + waitpid of @path, @in_flight at a time; runs/s. This process's CPU is added to
 * *cpu, the hooks' own to *hook_cpu.
 */
static double bare(const char *path, long n, int in_flight, uint64_t *cpu, uint64_t *hook_cpu)
{
        char *argv[] = {(char *) path, NULL};
        posix_spawnattr_t attr;
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        posix_spawnattr_setsigmask(&attr, &none);

        uint64_t start = ao_clock_now_usec(), cpu0 = bench_rusage_usec(RUSAGE_SELF),
                 children0 = bench_rusage_usec(RUSAGE_CHILDREN);
        long started = 0, reaped = 0;
        while (reaped < n) {
                while (started < n && started - reaped < in_flight) {
                        pid_t pid;
                        int r = posix_spawn(&pid, path, NULL, &attr, argv, envp_min);
                        if (r != 0) {
                                fprintf(stderr, "posix_spawn: %s\n", strerror(r));
                                exit(1);
                        }
                        started++;
                }
                int status;
                if (waitpid(-1, &status, 0) > 0)
                        reaped++;
        }
        uint64_t elapsed = ao_clock_now_usec() - start;
        *cpu += bench_rusage_usec(RUSAGE_SELF) - cpu0;
        *hook_cpu += bench_rusage_usec(RUSAGE_CHILDREN) - children0;
        posix_spawnattr_destroy(&attr);
        return (double) n * 1e6 / (double) elapsed;
}

struct bench {
        struct ao_reactor *reactor;
        struct ao_proc *proc;
        struct ao_hook_runner *runner;
        struct ao_queues *queues;
        const struct ao_sandbox_profile *profile; /* borrowed; NULL: unsandboxed */
        const char *hook_path, *hooks_dir;        /* borrowed */
        cJSON *contexts; /* owned: the binding context array every task gets a copy of */
        cJSON *values;   /* owned: values and config values */
        long finished, failed;
        uint64_t hook_cpu; /* µs the hooks themselves used (their rusage) */
        char first_error[AO_ERROR_MSG_MAX];
};

static void run_finished(struct bench *b, struct ao_task *t, bool ok, const char *error)
{
        b->finished++;
        if (!ok && b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", error);
        ao_task_finish(t, AO_TASK_SUCCESS);
}

static void on_hook_done(struct ao_hook_outcome *outcome, void *userdata)
{
        struct ao_task *t = userdata;
        struct bench *b = ao_task_payload(t);
        b->hook_cpu += outcome->result.user_usec + outcome->result.system_usec;
        run_finished(b, t, outcome->ok, outcome->error.msg);
}

static void on_task(struct ao_task *t, void *userdata)
{
        struct bench *b = userdata;
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_EVENT,
            .hook_name = "bench.sh",
            .path = b->hook_path,
            .working_dir = b->hooks_dir,
            .log_context = &(const struct ao_log_context){.binding = "schedule",
                                                          .queue = ao_queue_name(ao_task_queue(t))},
            .binding_contexts = ao_task_binding_contexts(t),
            .values = b->values,
            .config_values = b->values,
            .profile = b->profile,
            .on_done = on_hook_done,
            .userdata = t,
        };
        struct ao_error err = {0};
        if (ao_hook_run_start(b->runner, &req, &err) < 0)
                run_finished(b, t, false, err.msg);
}

/* N tasks over @n_queues queues; runs/s, this process's CPU added to *cpu and the spawner's to *spawner_cpu. */
static double through_operator(struct bench *b, long n, int n_queues, uint64_t *cpu, uint64_t *spawner_cpu)
{
        pid_t spawner = ao_proc_spawner_pid_of(b->proc, b->profile);
        uint64_t spawner0 = bench_proc_cpu_usec(spawner);
        uint64_t start = ao_clock_now_usec(), cpu0 = bench_rusage_usec(RUSAGE_SELF);
        long target = b->finished + n;
        for (long i = 0; i < n; i++) {
                char name[32];
                snprintf(name, sizeof(name), "q%ld", i % n_queues);
                struct ao_task_spec spec = {
                    .description = "HookRun:bench.sh",
                    .binding_contexts = cJSON_Duplicate(b->contexts, true),
                    .payload = b,
                };
                (void) ao_queue_push_tail(ao_queues_get(b->queues, name, true), &spec);
        }
        while (b->finished < target)
                (void) ao_reactor_run_once(b->reactor, AO_USEC_INFINITY);
        uint64_t elapsed = ao_clock_now_usec() - start;
        *cpu += bench_rusage_usec(RUSAGE_SELF) - cpu0;
        *spawner_cpu += bench_proc_cpu_usec(spawner) - spawner0;
        return (double) n * 1e6 / (double) elapsed;
}

static void measure(struct bench *b, const char *profile_name, int n_queues)
{
        uint64_t bare_cpu = 0, bare_hook_cpu = 0, cpu = 0, spawner_cpu = 0, hook_cpu0 = b->hook_cpu;
        long per_round = arg_runs / ROUNDS, failed0 = b->failed;
        double bare_rates[ROUNDS], op_rates[ROUNDS], ratios[ROUNDS];
        if (arg_operator_only) {
                struct rusage ru0, ru1;
                getrusage(RUSAGE_SELF, &ru0);
                uint64_t reused0 = ao_proc_pipes_reused(b->proc);
                for (int i = 0; i < ROUNDS; i++)
                        (void) through_operator(b, per_round, n_queues, &cpu, &spawner_cpu);
                getrusage(RUSAGE_SELF, &ru1);
                double runs = (double) (per_round * ROUNDS);
                printf("operator-only: operator CPU per hook %.1f us (operator %.1f + spawner %.1f), "
                       "%.2f waits per hook, %.0f%% of runs on reused pipes\n",
                       (double) (cpu + spawner_cpu) / runs, (double) cpu / runs, (double) spawner_cpu / runs,
                       (double) (ru1.ru_nvcsw - ru0.ru_nvcsw) / runs,
                       100.0 * (double) (ao_proc_pipes_reused(b->proc) - reused0) / 2 / runs);
                return;
        }
        for (int i = 0; i < ROUNDS; i++) {
                bare_rates[i] = bare(b->hook_path, per_round, n_queues, &bare_cpu, &bare_hook_cpu);
                op_rates[i] = through_operator(b, per_round, n_queues, &cpu, &spawner_cpu);
                ratios[i] = op_rates[i] / bare_rates[i];
        }
        qsort(bare_rates, ROUNDS, sizeof(double), bench_compare_doubles);
        qsort(op_rates, ROUNDS, sizeof(double), bench_compare_doubles);
        qsort(ratios, ROUNDS, sizeof(double), bench_compare_doubles);

        double runs = (double) (per_round * ROUNDS);
        printf("# bench-hooks N=%ld profile=%s queues=%d launcher=%s backend=%s (medians of %d rounds)\n",
               per_round * ROUNDS, profile_name, n_queues,
               ao_proc_uses_spawner(b->proc) ? "spawner" : "in-process", ao_reactor_backend_name(b->reactor),
               ROUNDS);
        printf("bare posix_spawn+waitpid  %8.0f runs/s  CPU per hook %.1f us  hook's own CPU %.0f us\n",
               bare_rates[ROUNDS / 2], (double) bare_cpu / runs, (double) bare_hook_cpu / runs);
        printf("operator                  %8.0f runs/s  ratio %.2f (rounds %.2f-%.2f)  failed %ld\n",
               op_rates[ROUNDS / 2], ratios[ROUNDS / 2], ratios[0], ratios[ROUNDS - 1], b->failed - failed0);
        double cpu_per_hook = (double) (cpu + spawner_cpu) / runs,
               bare_cpu_per_hook = (double) bare_cpu / runs;
        printf("operator CPU per hook     %8.1f us (operator %.1f + spawner %.1f)  hook's own CPU %.0f us\n",
               cpu_per_hook, (double) cpu / runs, (double) spawner_cpu / runs,
               (double) (b->hook_cpu - hook_cpu0) / runs);
        const char *backend = ao_reactor_backend_name(b->reactor);
        printf("row: hook throughput, %s, %d queue%s, %s|%.0f runs/s|%.0f runs/s (posix_spawn)|%.2f|>= "
               "0.90|%s\n",
               profile_name, n_queues, n_queues == 1 ? "" : "s", backend, op_rates[ROUNDS / 2],
               bare_rates[ROUNDS / 2], ratios[ROUNDS / 2], ratios[ROUNDS / 2] >= 0.90 ? "yes" : "no");
        printf("row: operator CPU per hook, %s, %d queue%s, %s|%.0f us|%.0f us (posix_spawn parent)|%.2f|<= "
               "120 us|%s\n",
               profile_name, n_queues, n_queues == 1 ? "" : "s", backend, cpu_per_hook, bare_cpu_per_hook,
               cpu_per_hook / bare_cpu_per_hook, cpu_per_hook <= 120 ? "yes" : "no");
        fflush(stdout);
}

static void help(void)
{
        printf("Usage: bench-hooks [--runs N] [--queues 1,2,4] [--profiles default,none] [--quick] "
               "[--spawner PATH] [--operator-only]\n"
               "Hook runs through the operator's queues, hook runner and launcher against bare\n"
               "posix_spawn + waitpid of the same script, for the default profile and unsandboxed.\n"
               "  --runs N        hook runs per configuration (default 2000)\n"
               "  --queues LIST   queue counts (= hooks in flight) to measure (default 1,2,4)\n"
               "  --profiles LIST default (the default sandbox profile), none (unsandboxed) or both\n"
               "  --quick         300 runs per configuration (smoke run)\n"
               "  --spawner PATH  the spawner binary (default: $AO_SPAWNER, else found next to this binary)\n"
               "  --operator-only no bare rounds and no ratios (to profile the operator's path alone)\n"
               "AO_REACTOR=epoll|io_uring picks the event loop backend.\n");
}

static int parse_queues(const char *s)
{
        arg_n_queues = 0;
        while (*s) {
                char *end;
                long q = strtol(s, &end, 10);
                if (end == s || q <= 0 || q > 1024 || arg_n_queues == QUEUES_MAX || (*end && *end != ','))
                        return -EINVAL;
                arg_queues[arg_n_queues++] = (int) q;
                s = *end ? end + 1 : end;
        }
        return arg_n_queues > 0 ? 0 : -EINVAL;
}

static int parse_profiles(const char *s)
{
        arg_profile_default = arg_profile_none = false;
        _cleanup_free_ char *copy = ao_xstrdup(s);
        for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                if (strcmp(tok, "default") == 0)
                        arg_profile_default = true;
                else if (strcmp(tok, "none") == 0 || strcmp(tok, "unsandboxed") == 0)
                        arg_profile_none = true;
                else
                        return -EINVAL;
        return arg_profile_default || arg_profile_none ? 0 : -EINVAL;
}

static int parse_argv(int argc, char **argv)
{
        static const struct option options[] = {
            {"runs", required_argument, NULL, 'n'},    {"queues", required_argument, NULL, 'q'},
            {"quick", no_argument, NULL, 'Q'},         {"spawner", required_argument, NULL, 's'},
            {"help", no_argument, NULL, 'h'},          {"profiles", required_argument, NULL, 'p'},
            {"operator-only", no_argument, NULL, 'o'}, {},
        };
        bool runs_set = false, quick = false;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'n': {
                        char *end;
                        arg_runs = strtol(optarg, &end, 10);
                        if (*end || arg_runs < ROUNDS) {
                                fprintf(stderr, "--runs: '%s': expected a number >= %d\n", optarg, ROUNDS);
                                return -EINVAL;
                        }
                        runs_set = true;
                        break;
                }
                case 'q':
                        if (parse_queues(optarg) < 0) {
                                fprintf(stderr, "--queues: '%s': expected a list like 1,2,4\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case 'Q':
                        quick = true;
                        break;
                case 'p':
                        if (parse_profiles(optarg) < 0) {
                                fprintf(stderr, "--profiles: '%s': expected default, none or both\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case 's':
                        arg_spawner = optarg;
                        break;
                case 'o':
                        arg_operator_only = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (quick && !runs_set)
                arg_runs = 300;
        return 1;
}

/* A scratch directory (0755) with the hook script in it. */
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

        char scratch[] = "/tmp/bench-hooks.XXXXXX";
        _cleanup_free_ char *hook_path = NULL;
        if (make_hook(scratch, &hook_path) < 0) {
                perror("bench-hooks: cannot write the hook");
                return 1;
        }

        struct bench b = {.hook_path = hook_path, .hooks_dir = scratch};
        struct ao_sandbox_profiles *profiles = NULL;
        struct ao_error err = {0};
        _cleanup_free_ char *spawner = bench_find_spawner(arg_spawner);
        struct ao_proc_options po = {.spawner_path = spawner ? spawner : "", .subreaper = true};
        struct ao_hook_runner_options ro = {.tmp_dir = scratch, .environment = envp_min};
        struct ao_queues_options qo = {.handler = on_task, .userdata = &b};
        if (ao_reactor_new(bench_backend(), &b.reactor, &err) < 0 ||
            ao_sandbox_profiles_load(NULL, &profiles, &err) < 0 ||
            ao_proc_new(b.reactor, &po, &b.proc, &err) < 0 ||
            ao_hook_runner_new(b.proc, &ro, &b.runner, &err) < 0 ||
            ao_queues_new(b.reactor, &qo, &b.queues, &err) < 0) {
                fprintf(stderr, "bench-hooks: %s\n", err.msg);
                return 1;
        }
        const struct ao_sandbox_profile *sandboxed = ao_sandbox_profiles_find(profiles, "default");
        if (!sandboxed) {
                fprintf(stderr, "bench-hooks: no profile 'default'\n");
                return 1;
        }
        b.contexts = cJSON_Parse("[{\"binding\":\"schedule\",\"type\":\"Schedule\"}]");
        b.values = cJSON_Parse("{\"global\":{\"a\":1}}");

        printf("# bench-hooks hook=%s runs in %s (rates in runs/s; ratio = operator / bare, same run)\n",
               hook_path, ao_hook_runner_dir(b.runner));
        static const char *const names[] = {"default", "unsandboxed"};
        for (size_t p = 0; p < AO_ARRAY_SIZE(names); p++) {
                if (!(p == 0 ? arg_profile_default : arg_profile_none))
                        continue;
                b.profile = p == 0 ? sandboxed : NULL;
                /* Warm both paths (page cache, the profile's spawner) before measuring. */
                uint64_t ignored = 0;
                (void) bare(hook_path, 20, 1, &ignored, &ignored);
                (void) through_operator(&b, 20, 1, &ignored, &ignored);
                b.failed = 0;
                for (size_t i = 0; i < arg_n_queues; i++)
                        measure(&b, names[p], arg_queues[i]);
        }
        if (b.failed)
                fprintf(stderr, "bench-hooks: %ld runs failed, the first: %s\n", b.failed, b.first_error);

        ao_queues_free(b.queues);
        ao_hook_runner_free(b.runner);
        ao_proc_free(b.proc);
        ao_sandbox_profiles_free(profiles);
        ao_reactor_free(b.reactor);
        cJSON_Delete(b.contexts);
        cJSON_Delete(b.values);
        (void) unlink(hook_path);
        (void) rmdir(scratch);
        return b.failed ? 1 : 0;
}
