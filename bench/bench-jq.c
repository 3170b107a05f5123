/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jqFilter per event, as the monitors run it, against the jq CLI and bare
 * libjq on the same object, measured in the same run.
 *
 *   cache hit   ao_jq_apply() with a program already in the cache, on the
 *               object as the informer holds it (a cJSON tree), producing
 *               the result and its canonical text (the change-detection
 *               checksum input): what every watch event costs per binding.
 *   from text   cJSON_Parse() of the object's JSON text plus the above: the
 *               whole per-event path from a watch line.
 *   libjq       the library's own floor for the same work from text:
 *               jv_parse(), jq_start()/jq_next() on a compiled program,
 *               jv_dump_string() of the result.
 *   jq CLI      `jq -c FILTER FILE` spawned and waited for (stdout on
 *               /dev/null): what a hook pays to filter one object itself.
 *
 * Rounds alternate the four; medians of the per-round times are reported.
 * Ratios are "how many times faster than the reference" (reference time /
 * our time), so > 1 is better.
 *
 * Usage: bench-jq [--object FILE] [--events N] [--cli-runs N] [--jq PATH] [FILTER...]
 * (defaults: bench/data/pod.json, 2000, 10, jq from PATH, '.metadata.name' and
 * '{name: .metadata.name, labels: .metadata.labels, images: [.spec.containers[].image]}').
 * Prints "row:" lines for bench/run's table.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <getopt.h>
#include <jq.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/jq.h"
#include "ao/reactor.h"
#include "bench-util.h"

#define ROUNDS      5
#define FILTERS_MAX 8

extern char **environ;

static const char *arg_object = "bench/data/pod.json";
static long arg_events = 2000, arg_cli_runs = 10;
static const char *arg_jq = "jq";
static const char *arg_filters[FILTERS_MAX] = {
    ".metadata.name",
    "{name: .metadata.name, labels: .metadata.labels, images: [.spec.containers[].image]}",
};
static size_t arg_n_filters = 2;

static char *read_file(const char *path)
{
        FILE *f = fopen(path, "r");
        if (!f)
                return NULL;
        char *text = NULL;
        long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
        if (size >= 0 && fseek(f, 0, SEEK_SET) == 0) {
                text = ao_xmalloc((size_t) size + 1);
                text[fread(text, 1, (size_t) size, f)] = '\0';
        }
        fclose(f);
        return text;
}

/* µs per event of ao_jq_apply() on the parsed object (@parse: parse the text first, every event). */
static double ours(struct ao_jq_cache *cache, const char *filter, const char *text, const cJSON *tree,
                   bool parse, long n)
{
        uint64_t start = ao_clock_now_usec();
        for (long i = 0; i < n; i++) {
                cJSON *input = parse ? cJSON_Parse(text) : NULL;
                cJSON *result = NULL;
                char *canonical = NULL;
                struct ao_error err = {0};
                if (ao_jq_apply(cache, filter, parse ? input : tree, &result, &canonical, &err) < 0) {
                        fprintf(stderr, "bench-jq: %s\n", err.msg);
                        exit(1);
                }
                cJSON_Delete(result);
                cJSON_Delete(input);
                free(canonical);
        }
        return (double) (ao_clock_now_usec() - start) / (double) n;
}

/* µs per event of bare libjq from text: parse, run the compiled program, print the results. */
static double libjq(jq_state *jq, const char *text, long n)
{
        uint64_t start = ao_clock_now_usec();
        for (long i = 0; i < n; i++) {
                jv input = jv_parse(text);
                jq_start(jq, input, 0);
                for (jv out = jq_next(jq); jv_is_valid(out); out = jq_next(jq)) {
                        jv s = jv_dump_string(out, 0);
                        jv_free(s);
                }
        }
        return (double) (ao_clock_now_usec() - start) / (double) n;
}

/* µs per run of `jq -c FILTER FILE`, stdout on /dev/null. */
static double cli(const char *filter, long n)
{
        char *argv[] = {(char *) arg_jq, "-c", (char *) filter, (char *) arg_object, NULL};
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        uint64_t start = ao_clock_now_usec();
        for (long i = 0; i < n; i++) {
                pid_t pid;
                int status;
                int r = posix_spawnp(&pid, arg_jq, &fa, NULL, argv, environ);
                if (r != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
                        fprintf(stderr, "bench-jq: '%s -c %s %s' failed\n", arg_jq, filter, arg_object);
                        exit(1);
                }
        }
        posix_spawn_file_actions_destroy(&fa);
        return (double) (ao_clock_now_usec() - start) / (double) n;
}

static double median(double *v)
{
        qsort(v, ROUNDS, sizeof(double), bench_compare_doubles);
        return v[ROUNDS / 2];
}

static void measure(struct ao_jq_cache *cache, const char *filter, const char *text, size_t len)
{
        cJSON *tree = cJSON_Parse(text);
        jq_state *jq = jq_init();
        if (!tree || !jq || !jq_compile(jq, filter)) {
                fprintf(stderr, "bench-jq: '%s' or '%s' does not work\n", filter, arg_object);
                exit(1);
        }
        /* Compile into the cache and warm everything up. */
        (void) ours(cache, filter, text, tree, false, 10);
        (void) libjq(jq, text, 10);
        (void) cli(filter, 1);

        double hit[ROUNDS], full[ROUNDS], lib[ROUNDS], spawned[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
                hit[i] = ours(cache, filter, text, tree, false, arg_events);
                full[i] = ours(cache, filter, text, tree, true, arg_events);
                lib[i] = libjq(jq, text, arg_events);
                spawned[i] = cli(filter, arg_cli_runs);
        }
        double h = median(hit), f = median(full), l = median(lib), c = median(spawned);
        printf("# bench-jq filter '%s' on %s (%zu bytes), %ld events x %d rounds, jq CLI %ld x %d\n", filter,
               arg_object, len, arg_events, ROUNDS, arg_cli_runs, ROUNDS);
        printf("cache hit (ao_jq_apply on the tree)   %9.1f us per event\n", h);
        printf("from text (cJSON_Parse + ao_jq_apply) %9.1f us per event\n", f);
        printf("bare libjq from text                  %9.1f us per event\n", l);
        printf("jq CLI                                %9.1f us per run\n", c);
        printf("row: jq %s, cache hit per event|%.1f us|%.0f us (jq CLI per run)|%.0f|report|-\n", filter, h,
               c, c / h);
        printf("row: jq %s, per event from text|%.1f us|%.1f us (bare libjq from text)|%.2f|report|-\n",
               filter, f, l, l / f);
        fflush(stdout);
        jq_teardown(&jq);
        cJSON_Delete(tree);
}

static int parse_argv(int argc, char **argv)
{
        static const struct option options[] = {
            {"object", required_argument, NULL, 'o'},   {"events", required_argument, NULL, 'e'},
            {"cli-runs", required_argument, NULL, 'c'}, {"jq", required_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},           {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'o':
                        arg_object = optarg;
                        break;
                case 'e':
                        arg_events = atol(optarg);
                        break;
                case 'c':
                        arg_cli_runs = atol(optarg);
                        break;
                case 'j':
                        arg_jq = optarg;
                        break;
                case 'h':
                        printf(
                            "Usage: bench-jq [--object FILE] [--events N] [--cli-runs N] [--jq PATH] "
                            "[FILTER...]\n"
                            "A jqFilter per event through the operator's filter cache, against bare libjq\n"
                            "and the jq CLI on the same object (default bench/data/pod.json).\n");
                        return 0;
                default:
                        return -EINVAL;
                }
        if (arg_events < 1 || arg_cli_runs < 1) {
                fprintf(stderr, "--events and --cli-runs: at least 1\n");
                return -EINVAL;
        }
        if (optind < argc) {
                arg_n_filters = 0;
                for (int i = optind; i < argc && arg_n_filters < FILTERS_MAX; i++)
                        arg_filters[arg_n_filters++] = argv[i];
        }
        return 1;
}

int main(int argc, char **argv)
{
        int r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        _cleanup_free_ char *text = read_file(arg_object);
        if (!text) {
                fprintf(stderr, "bench-jq: cannot read '%s': %s\n", arg_object, strerror(errno));
                return 1;
        }
        struct ao_jq_cache *cache = ao_jq_cache_new();
        for (size_t i = 0; i < arg_n_filters; i++)
                measure(cache, arg_filters[i], text, strlen(text));
        ao_jq_cache_free(cache);
        return 0;
}
