/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ao_json_parse() (libyajl, numbers kept exactly) against cJSON_ParseWithLength(), the parser it
 * replaced, on the same texts in the same run:
 *
 *   values     a values document of about 1 MB, as the operator reads from values.yaml files, the
 *              ConfigMap and hook outputs: nested objects of modules with strings, integers,
 *              doubles, booleans, short lists, a few integers beyond 2^53;
 *   list       a kube List body of about 10 MB: ConfigMaps with metadata (labels, annotations,
 *              managedFields) and data, as a paginated LIST or a first synchronisation reads;
 *   event      one item of that list as a watch event line (about 1 KB): the parse every watch
 *              event costs.
 *
 * The documents are generated here (deterministic). The two parsers take turns, one parse each,
 * rounds x parses times, and the median time per parse of each is reported; the tree is freed
 * outside the clock. After a large document, so is glibc's deferred work for it: freed small
 * blocks are merged only when something next asks for 1 KB or more, and merging the ~600,000
 * blocks of a 10 MB tree takes about as long as parsing it, so whichever parser asked first would
 * carry it (the trim threshold is raised so that merging does not hand the heap back to the kernel
 * either). The event is parsed as a watch stream parses it, one after the other, the previous
 * event's tree freed just before. The ratio is ours / cJSON's time, so < 1 is faster; the goal is
 * at most 1.3. Prints "row:" lines for bench/run's table.
 *
 * Usage: bench-json-parse [--rounds N] [--values-mb N] [--list-mb N]
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ao/json-parse.h"
#include "ao/strbuf.h"
#include "bench-util.h"

#define GOAL 1.3

static long arg_rounds = 9, arg_values_mb = 1, arg_list_mb = 10;

static double now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

/* A values document of at least @bytes. */
static char *values_document(size_t bytes)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "{\"global\":{\"clusterName\":\"production-eu-1\",\"enabledModules\":[");
        for (int i = 0; i < 50; i++)
                ao_strbuf_appendf(&sb, "%s\"module-%d\"", i ? "," : "", i);
        ao_strbuf_append(&sb, "],\"discovery\":{\"kubernetesVersion\":\"1.29.4\",\"clusterUUID\":"
                              "\"6f0d2c1e-2a4b-4c8e-9d1f-0b7a3e5c9d21\"}}");
        for (unsigned i = 0; sb.len < bytes; i++)
                ao_strbuf_appendf(
                    &sb,
                    ",\"module%u\":{\"enabled\":%s,\"replicas\":%u,\"ratio\":%u.%03u,\"port\":%u,"
                    "\"image\":{\"repository\":\"registry.example.com/team/module-%u\",\"tag\":\"v1.%u.%u\","
                    "\"pullPolicy\":\"IfNotPresent\"},\"resources\":{\"requests\":{\"cpu\":\"%um\","
                    "\"memory\":"
                    "\"%uMi\"},\"limits\":{\"cpu\":\"%um\",\"memory\":\"%uMi\"}},\"nodeSelector\":{"
                    "\"node-role.kubernetes.io/"
                    "worker\":\"\"},\"tolerations\":[{\"key\":\"dedicated\",\"operator\":"
                    "\"Equal\",\"value\":\"module-%u\",\"effect\":\"NoSchedule\"}],\"extraArgs\":[\"--v=%u\","
                    "\"--log-format=json\",\"--leader-elect=true\"],\"checksum\":%llu,\"internal\":{"
                    "\"generation\":%u,\"ready\":%s,\"weights\":[%u,%u,%u,0.5,1e-3]}}",
                    i, i % 3 ? "true" : "false", i % 5 + 1, i % 1000, i % 997, 8000 + i % 1000, i, i % 30,
                    i % 7, 100 + i % 900, 128 + i % 512, 200 + i % 1800, 256 + i % 1024, i, i % 5,
                    9007199254740993ULL + i, i, i % 2 ? "true" : "false", i % 100, i % 1000, i % 10000);
        ao_strbuf_append(&sb, "}");
        return ao_strbuf_steal(&sb);
}

/* A ConfigMapList body of at least @bytes. */
static char *list_document(size_t bytes)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(
            &sb, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                 "\"48213977\",\"continue\":\"\"},\"items\":[");
        for (unsigned i = 0; sb.len < bytes; i++)
                ao_strbuf_appendf(
                    &sb,
                    "%s{\"metadata\":{\"name\":\"config-%u\",\"namespace\":\"team-%u\",\"uid\":"
                    "\"%08x-1c2d-4e5f-8a9b-%012x\",\"resourceVersion\":\"%u\",\"creationTimestamp\":"
                    "\"2026-03-%02uT10:%02u:%02uZ\",\"labels\":{\"app.kubernetes.io/name\":\"service-%u\","
                    "\"app.kubernetes.io/"
                    "managed-by\":\"Helm\",\"heritage\":\"addon-operator\"},\"annotations\":{"
                    "\"meta.helm.sh/release-name\":\"release-%u\",\"meta.helm.sh/"
                    "release-namespace\":\"team-%u\"},"
                    "\"managedFields\":[{\"manager\":\"helm\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
                    "\"time\":\"2026-03-%02uT10:%02u:%02uZ\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:"
                    "data\":{"
                    "\".\":{},\"f:config.yaml\":{},\"f:replicas\":{}},\"f:metadata\":{\"f:labels\":{\".\":{}}"
                    "}}}]},"
                    "\"data\":{\"config.yaml\":\"server:\\n  port: %u\\n  workers: %u\\nfeatures:\\n  - a\\n "
                    " - "
                    "b\\n\",\"replicas\":\"%u\",\"note\":\"caf\\u00e9 \\u2013 %u\"}}",
                    i ? "," : "", i, i % 40, i, i * 2654435761u, 48000000 + i, i % 28 + 1, i % 60, i % 60,
                    i % 300, i % 300, i % 40, i % 28 + 1, i % 60, i % 60, 8000 + i % 1000, i % 16 + 1, i % 9,
                    i);
        ao_strbuf_append(&sb, "]}");
        return ao_strbuf_steal(&sb);
}

static cJSON *parse_cjson(const char *text, size_t len)
{
        return cJSON_ParseWithLength(text, len);
}

static cJSON *parse_ours(const char *text, size_t len)
{
        return ao_json_parse(text, len, NULL, NULL);
}

/* Median over the rounds of the time per parse (µs) of each parser, alternating them. */
static void measure(const char *name, const char *text, int parses, bool merge)
{
        size_t len = strlen(text), n = (size_t) arg_rounds * (size_t) parses;
        double *times[2] = {ao_xcalloc(n, sizeof(double)), ao_xcalloc(n, sizeof(double))};
        cJSON *(*parsers[2])(const char *, size_t) = {parse_cjson, parse_ours};

        /* The two parse in turn, so that both meet the same load on a shared machine. */
        for (size_t k = 0; k < n; k++)
                for (int p = 0; p < 2; p++) {
                        double start = now_usec();
                        cJSON *json = parsers[p](text, len);
                        times[p][k] = now_usec() - start;
                        if (!json) {
                                fprintf(stderr, "%s: %s refused the document\n", name,
                                        p ? "ao_json_parse" : "cJSON");
                                exit(1);
                        }
                        cJSON_Delete(json);
                        if (merge) {
                                void *volatile large = malloc(4096); /* glibc merges the freed blocks */
                                free(large);
                        }
                }
        qsort(times[0], n, sizeof(double), bench_compare_doubles);
        qsort(times[1], n, sizeof(double), bench_compare_doubles);
        double t = times[0][n / 2], o = times[1][n / 2], mb = (double) len / 1e6;
        printf("%-7s %9zu bytes  cJSON %10.1f us (%5.1f MB/s)  ao_json_parse %10.1f us (%5.1f MB/s)  ratio "
               "%.2f\n",
               name, len, t, mb / (t / 1e6), o, mb / (o / 1e6), o / t);
        printf("row: JSON parse, %s (%zu bytes)|%.1f us|%.1f us (cJSON)|%.2f|<= %.1f|%s\n", name, len, o, t,
               o / t, GOAL, o / t <= GOAL ? "yes" : "no");
        free(times[0]);
        free(times[1]);
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
            {"rounds", required_argument, NULL, 'r'},
            {"values-mb", required_argument, NULL, 'v'},
            {"list-mb", required_argument, NULL, 'l'},
            {0},
        };
        int c;
        while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
                long *arg = c == 'r'   ? &arg_rounds
                            : c == 'v' ? &arg_values_mb
                            : c == 'l' ? &arg_list_mb
                                       : NULL;
                if (!arg || (*arg = strtol(optarg, NULL, 10)) < 1) {
                        fprintf(stderr, "usage: %s [--rounds N] [--values-mb N] [--list-mb N]\n", argv[0]);
                        return 2;
                }
        }
        (void) mallopt(M_TRIM_THRESHOLD, 1 << 30);
        char *values = values_document((size_t) arg_values_mb * 1000 * 1000);
        char *list = list_document((size_t) arg_list_mb * 1000 * 1000);
        char *event = list_document(500); /* one item */
        const char *item = strstr(event, "{\"metadata\":{\"name\"");
        char *line =
            ao_xasprintf("{\"type\":\"MODIFIED\",\"object\":%.*s}\n", (int) (strlen(item) - 2), item);
        measure("values", values, 20, true);
        measure("list", list, 2, true);
        measure("event", line, 2000, false);
        free(values);
        free(list);
        free(event);
        free(line);
        return 0;
}
