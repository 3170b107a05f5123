/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the operator adds to a helm call, as a ratio against the bare limit
 * measured in the same run: N `helm template RELEASE CHART --values FILE`
 * through the operator's helm client (spawner, helm sandbox profile, stdout
 * in a memfd, stderr logged, then the manifest parsed and its MD5 taken, as
 * the release step does) against N plain posix_spawn + waitpid of the same
 * command with stdout on /dev/null.
 *
 * Usage: bench-helm HELM CHART_DIR [N [OPERATOR_BINARY]]   (default N: 50)
 * Rounds alternate bare / operator; the median per-round ratio is printed
 * (operator calls per second / bare calls per second; 1.0 = no overhead).
 *
 * With OPERATOR_BINARY, a third arm alternates with those two: the same
 * calls with the operator's post-renderer (`--post-renderer OPERATOR_BINARY
 * --post-renderer-args tool ... post-render ... heritage=addon-operator`), as
 * the release step runs them; its ratio is against the operator arm without
 * it, measured in the same rounds: what stamping the labels costs per render.
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ao/helm-output.h"
#include "ao/helm.h"
#include "ao/log.h"
#include "ao/proc.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "bench-util.h"

extern char **environ;

#define ROUNDS 5

static const char *helm_path, *chart;
static char values_file[] = "/tmp/bench-helm-values.XXXXXX";

static double bare(long n)
{
        char *argv[] = {(char *) helm_path, "template",  "bench", (char *) chart,
                        "--values",         values_file, NULL};
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        uint64_t start = ao_clock_now_usec();
        for (long i = 0; i < n; i++) {
                pid_t pid;
                int status;
                if (posix_spawn(&pid, helm_path, &fa, NULL, argv, environ) != 0 ||
                    waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "bare helm template failed\n");
                        exit(1);
                }
        }
        posix_spawn_file_actions_destroy(&fa);
        return (double) n * 1e6 / (double) (ao_clock_now_usec() - start);
}

struct driver {
        struct ao_helm *helm;
        const struct ao_helm_post_renderer *post_renderer; /* NULL: none */
        long n, started, finished, failed;
        size_t objects;
        uint64_t parse_usec;
};

static void start_one(struct driver *d);

static void on_done(const struct ao_helm_result *res, void *userdata)
{
        struct driver *d = userdata;
        d->finished++;
        if (res->code < 0) {
                fprintf(stderr, "%s\n", res->error);
                d->failed++;
        } else {
                uint64_t t0 = ao_clock_now_usec();
                char sum[33];
                struct ao_helm_manifest m = {0};
                ao_helm_checksum(res->output, res->output_len, sum);
                if (ao_helm_manifest_parse(res->output, res->output_len, &m, NULL) < 0)
                        d->failed++;
                d->objects = m.n;
                ao_helm_manifest_clear(&m);
                d->parse_usec += ao_clock_now_usec() - t0;
        }
        if (d->started < d->n)
                start_one(d);
}

static void start_one(struct driver *d)
{
        char **args = ao_helm_args_template("bench", chart, values_file, d->post_renderer);
        struct ao_error err = {0};
        if (ao_helm_call(d->helm, "template", args, NULL, on_done, d, NULL, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                exit(1);
        }
        ao_helm_args_free(args);
        d->started++;
}

static double through_operator(struct ao_reactor *r, struct driver *d, long n)
{
        uint64_t start = ao_clock_now_usec();
        d->n += n;
        start_one(d);
        while (d->finished < d->n)
                ao_reactor_run_once(r, AO_USEC_INFINITY);
        return (double) n * 1e6 / (double) (ao_clock_now_usec() - start);
}

int main(int argc, char **argv)
{
        if (argc < 3) {
                fprintf(stderr, "usage: bench-helm HELM CHART_DIR [N]\n");
                return 2;
        }
        helm_path = argv[1];
        chart = argv[2];
        long n = argc > 3 ? atol(argv[3]) : 50;
        char *post_render_args[] = {"tool", "post-render", "heritage=addon-operator", NULL};
        struct ao_helm_post_renderer post_renderer = {.path = argc > 4 ? argv[4] : NULL,
                                                      .args = post_render_args};
        if (n < ROUNDS)
                return 2;
        int fd = mkstemp(values_file);
        if (fd < 0 || write(fd, "global: {}\n", 11) != 11)
                return 1;
        close(fd);

        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        struct ao_log_options lo = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_WARN, .fd = -1};
        ao_log_setup(&lo);
        struct ao_reactor *r;
        struct ao_sandbox_profiles *profiles = NULL;
        struct ao_proc *proc;
        struct ao_error err = {0};
        struct ao_proc_options po = {.spawner_path = getenv("AO_SPAWNER"), .subreaper = true};
        if (ao_reactor_new(bench_backend(), &r, &err) < 0 ||
            ao_sandbox_profiles_load(NULL, &profiles, &err) < 0 || ao_proc_new(r, &po, &proc, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        struct ao_helm_options ho = {
            .bin_path = helm_path, .envp = environ, .profile = ao_sandbox_profiles_find(profiles, "helm")};
        struct driver d = {0}, pd = {.post_renderer = post_renderer.path ? &post_renderer : NULL};
        d.helm = pd.helm = ao_helm_new(proc, &ho);
        if (ao_helm_find(d.helm, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }

        (void) bare(2);
        (void) through_operator(r, &d, 2);
        if (pd.post_renderer)
                (void) through_operator(r, &pd, 2);
        d.parse_usec = 0;
        long measured_before = d.finished;
        double bare_rates[ROUNDS], op_rates[ROUNDS], ratios[ROUNDS], pr_rates[ROUNDS], pr_ratios[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
                bare_rates[i] = bare(n / ROUNDS);
                op_rates[i] = through_operator(r, &d, n / ROUNDS);
                ratios[i] = op_rates[i] / bare_rates[i];
                if (pd.post_renderer) {
                        pr_rates[i] = through_operator(r, &pd, n / ROUNDS);
                        pr_ratios[i] = pr_rates[i] / op_rates[i];
                }
        }
        qsort(bare_rates, ROUNDS, sizeof(double), bench_compare_doubles);
        qsort(op_rates, ROUNDS, sizeof(double), bench_compare_doubles);
        qsort(ratios, ROUNDS, sizeof(double), bench_compare_doubles);
        long runs = d.finished - measured_before;

        printf("# bench-helm N=%ld chart=%s objects=%zu launcher=%s (medians of %d rounds)\n", n, chart,
               d.objects, ao_proc_uses_spawner(proc) ? "spawner" : "in-process", ROUNDS);
        printf("bare helm template           %7.1f calls/s\n", bare_rates[ROUNDS / 2]);
        printf("operator (sandbox+parse+md5) %7.1f calls/s  ratio %.3f (rounds %.3f-%.3f)  failed %ld\n",
               op_rates[ROUNDS / 2], ratios[ROUNDS / 2], ratios[0], ratios[ROUNDS - 1], d.failed);
        printf("manifest parse + MD5         %7.1f us per call\n", (double) d.parse_usec / (double) runs);
        printf("row: helm template through the operator, %zu objects|%.1f calls/s|%.1f calls/s "
               "(posix_spawn)|%.2f|report|-\n",
               d.objects, op_rates[ROUNDS / 2], bare_rates[ROUNDS / 2], ratios[ROUNDS / 2]);
        if (pd.post_renderer) {
                qsort(pr_rates, ROUNDS, sizeof(double), bench_compare_doubles);
                qsort(pr_ratios, ROUNDS, sizeof(double), bench_compare_doubles);
                printf("with the post-renderer       %7.1f calls/s  ratio %.3f to the operator arm (rounds "
                       "%.3f-%.3f)  failed %ld\n",
                       pr_rates[ROUNDS / 2], pr_ratios[ROUNDS / 2], pr_ratios[0], pr_ratios[ROUNDS - 1],
                       pd.failed);
                printf("row: helm template with the operator's post-renderer|%.1f calls/s|%.1f calls/s "
                       "(without)|%.2f|report|-\n",
                       pr_rates[ROUNDS / 2], op_rates[ROUNDS / 2], pr_ratios[ROUNDS / 2]);
        }

        ao_helm_free(d.helm);
        ao_proc_free(proc);
        ao_sandbox_profiles_free(profiles);
        ao_reactor_free(r);
        unlink(values_file);
        return d.failed || pd.failed ? 1 : 0;
}
