/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hook launch throughput, as a ratio against the bare limit measured in the
 * same run: N runs of `sh -c true` through the operator's launcher (pipes,
 * process group, signal reset, rlimits, no_new_privs, seccomp filter with a
 * listener, pidfd reaping with rusage, output reading) against N plain
 * posix_spawn + waitpid of the same command.
 *
 * Usage: bench-spawn [N] [PROFILE] [IN_FLIGHT]   (defaults: 2000, default, 1)
 * PROFILE "none" runs without a sandbox. The spawner is found next to the
 * operator binary (AO_SPAWNER overrides).
 * The N runs are split into 5 rounds that alternate bare / operator, so a
 * change in machine load hits both; the median of the per-round ratios is
 * reported (operator rate / bare rate; 1.0 = no overhead), with the
 * operator's own CPU per hook: this process plus the spawner (from
 * /proc/<pid>/stat), hooks excluded.
 */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ao/log.h"
#include "bench-util.h"
#include "ao/proc.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"

extern char **environ;

static char *argv_true[] = {"/bin/sh", "-c", "true", NULL};
static char *envp_min[] = {"PATH=/usr/bin:/bin", NULL};

#define ROUNDS 5

static double bare(long n, int in_flight)
{
        uint64_t start = ao_clock_now_usec();
        long started = 0, reaped = 0;
        while (reaped < n) {
                while (started < n && started - reaped < in_flight) {
                        pid_t pid;
                        if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv_true, envp_min) != 0) {
                                perror("posix_spawn");
                                exit(1);
                        }
                        started++;
                }
                if (waitpid(-1, NULL, 0) > 0)
                        reaped++;
        }
        return (double) n * 1e6 / (double) (ao_clock_now_usec() - start);
}

struct driver {
        struct ao_proc *proc;
        const struct ao_sandbox_profile *profile;
        long n, started, finished, failed;
};

static void start_one(struct driver *d);

static void on_exit_cb(struct ao_proc_run *run, const struct ao_proc_result *r, void *userdata)
{
        struct driver *d = userdata;
        d->finished++;
        if (r->exit_code != 0)
                d->failed++;
        if (d->started < d->n)
                start_one(d);
}

static void start_one(struct driver *d)
{
        struct ao_proc_spec spec = {.path = "/bin/sh",
                                    .argv = argv_true,
                                    .envp = envp_min,
                                    .profile = d->profile,
                                    .on_exit = on_exit_cb,
                                    .userdata = d};
        struct ao_error err = {0};
        if (ao_proc_spawn(d->proc, &spec, NULL, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                exit(1);
        }
        d->started++;
}

/* Run @n more hooks through the launcher; returns runs/s and adds the operator's CPU to *cpu. */
static uint64_t spawner_cpu_total;

static double through_operator(struct ao_reactor *r, struct driver *d, long n, int in_flight, uint64_t *cpu)
{
        pid_t spawner = ao_proc_spawner_pid_of(d->proc, d->profile);
        uint64_t spawner0 = bench_proc_cpu_usec(spawner);
        uint64_t start = ao_clock_now_usec(), cpu0 = bench_rusage_usec(RUSAGE_SELF) + spawner0;
        d->n += n;
        for (int i = 0; i < in_flight && d->started < d->n; i++)
                start_one(d);
        while (d->finished < d->n)
                ao_reactor_run_once(r, AO_USEC_INFINITY);
        uint64_t spawner1 = bench_proc_cpu_usec(spawner);
        spawner_cpu_total += spawner1 - spawner0;
        *cpu += bench_rusage_usec(RUSAGE_SELF) + spawner1 - cpu0;
        return (double) n * 1e6 / (double) (ao_clock_now_usec() - start);
}

int main(int argc, char **argv)
{
        long n = argc > 1 ? atol(argv[1]) : 2000;
        const char *profile_name = argc > 2 ? argv[2] : "default";
        int in_flight = argc > 3 ? atoi(argv[3]) : 1;
        if (n <= 0 || in_flight <= 0)
                return 2;

        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        struct ao_log_options lo = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_WARN, .fd = -1};
        ao_log_setup(&lo);

        struct ao_reactor *r;
        struct ao_error err = {0};
        if (ao_reactor_new(bench_backend(), &r, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        struct ao_sandbox_profiles *profiles = NULL;
        const struct ao_sandbox_profile *profile = NULL;
        if (strcmp(profile_name, "none") != 0) {
                if (ao_sandbox_profiles_load(NULL, &profiles, &err) < 0) {
                        fprintf(stderr, "%s\n", err.msg);
                        return 1;
                }
                profile = ao_sandbox_profiles_find(profiles, profile_name);
                if (!profile) {
                        fprintf(stderr, "no profile '%s'\n", profile_name);
                        return 1;
                }
        }
        struct ao_proc_options po = {.spawner_path = getenv("AO_SPAWNER"), .subreaper = true};
        struct driver d = {.profile = profile};
        if (ao_proc_new(r, &po, &d.proc, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }

        /* Warm both paths (page cache, spawner start) before measuring. */
        uint64_t cpu = 0;
        (void) bare(20, 1);
        (void) through_operator(r, &d, 20, 1, &cpu);
        cpu = 0;
        spawner_cpu_total = 0;
        d.failed = 0;

        double bare_rates[ROUNDS], op_rates[ROUNDS], ratios[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
                bare_rates[i] = bare(n / ROUNDS, in_flight);
                op_rates[i] = through_operator(r, &d, n / ROUNDS, in_flight, &cpu);
                ratios[i] = op_rates[i] / bare_rates[i];
        }
        qsort(bare_rates, ROUNDS, sizeof(double), bench_compare_doubles);
        qsort(op_rates, ROUNDS, sizeof(double), bench_compare_doubles);
        qsort(ratios, ROUNDS, sizeof(double), bench_compare_doubles);

        printf("# bench-spawn N=%ld profile=%s in-flight=%d launcher=%s backend=%s (medians of %d rounds)\n",
               n, profile_name, in_flight, ao_proc_uses_spawner(d.proc) ? "spawner" : "in-process",
               ao_reactor_backend_name(r), ROUNDS);
        printf("bare posix_spawn+waitpid  %8.0f runs/s\n", bare_rates[ROUNDS / 2]);
        printf("operator                  %8.0f runs/s  ratio %.2f (rounds %.2f-%.2f)  failed %ld\n",
               op_rates[ROUNDS / 2], ratios[ROUNDS / 2], ratios[0], ratios[ROUNDS - 1], d.failed);
        long runs = n / ROUNDS * ROUNDS;
        printf("operator CPU per hook     %8.1f us (operator %.1f + spawner %.1f)\n",
               (double) cpu / (double) runs, (double) (cpu - spawner_cpu_total) / (double) runs,
               (double) spawner_cpu_total / (double) runs);
        printf("row: launcher alone (sh -c true), %s, %d in flight, %s|%.0f runs/s|%.0f runs/s "
               "(posix_spawn)|%.2f|report|-\n",
               profile_name, in_flight, ao_reactor_backend_name(r), op_rates[ROUNDS / 2],
               bare_rates[ROUNDS / 2], ratios[ROUNDS / 2]);

        ao_proc_free(d.proc);
        ao_sandbox_profiles_free(profiles);
        ao_reactor_free(r);
        return d.failed ? 1 : 0;
}
