/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/metrics/registry.c, expo.c and hook-ops.c: the exposition
 * text, exactly (counter, gauge, histogram, escaping, empty label values,
 * Go's number formatting), series removal and counting, METRICS_PATH
 * operations (the documentation's hook1.sh/hook2.sh example scrape by
 * scrape, conflicts, groups, the operator's labels), a scrape thread racing
 * an update thread, and a registry of 10k series.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "ao/error.h"
#include "ao/metric-ops.h"
#include "ao/metrics.h"

/* Parse @text as METRICS_PATH content and apply it as @hook of @module; bails out on a parse error. */
static int apply(struct ao_metrics *m, const char *text, const char *hook, const char *module,
                 struct ao_error *reterr)
{
        struct ao_metric_ops ops = {0};
        struct ao_error perr = {0};
        int r;

        if (ao_metric_ops_parse(text, strlen(text), "metrics.json", &ops, &perr) < 0) {
                tap_diag("parse error: %s", perr.msg);
                tap_bail("test input does not parse");
        }
        r = ao_metrics_apply_hook_ops(m, &ops, hook, module, reterr);
        ao_metric_ops_done(&ops);
        return r;
}

#define is_format(m, want, ...)                       \
        do {                                          \
                char *got__ = ao_metrics_format(m);   \
                tap_is_str(got__, want, __VA_ARGS__); \
                free(got__);                          \
        } while (0)

/* ---- numbers ----------------------------------------------------------------------------------------- */

struct number_case {
        double v;
        const char *want;
};

static void test_numbers(void)
{
        static const struct number_case cases[] = {
            {0, "0"},
            {-0.0, "0"},
            {1, "1"},
            {-1, "-1"},
            {-2, "-2"},
            {300, "300"},
            {100000, "100000"},
            {999999, "999999"},
            {1e6, "1e+06"},
            {1234567, "1.234567e+06"},
            {123456789, "1.23456789e+08"},
            {1e21, "1e+21"},
            {9007199254740992.0, "9.007199254740992e+15"},
            {1e22, "1e+22"},
            {DBL_MAX, "1.7976931348623157e+308"},
            {0.5, "0.5"},
            {-2.5, "-2.5"},
            {1.5, "1.5"},
            {0.001, "0.001"},
            {0.0001, "0.0001"},
            {0.00001, "1e-05"},
            {1e-07, "1e-07"},
            {0.1 + 0.2, "0.30000000000000004"},
            {1.0 / 3, "0.3333333333333333"},
            {123456.7, "123456.7"},
            {1234567.5, "1.2345675e+06"},
            {5e-324, "5e-324"},
            {DBL_MIN, "2.2250738585072014e-308"},
            {1e100, "1e+100"},
            {1.25e-100, "1.25e-100"},
            {NAN, "NaN"},
            {INFINITY, "+Inf"},
            {-INFINITY, "-Inf"},
        };
        struct ao_metrics *m = ao_metrics_new("");
        struct ao_metric_family *f =
            ao_metrics_family(m, "n", AO_METRIC_GAUGE, "numbers", (const char *const[]){"c", NULL}, NULL, 0);
        char want[4096] = "# HELP n numbers\n# TYPE n gauge\n";

        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                char label[8];
                snprintf(label, sizeof(label), "%02zu", i);
                ao_metric_set(f, (const char *const[]){label}, cases[i].v);
                snprintf(want + strlen(want), sizeof(want) - strlen(want), "n{c=\"%s\"} %s\n", label,
                         cases[i].want);
        }
        is_format(m, want, "numbers: Go's FormatFloat(v, 'g', -1), +Inf, -Inf, NaN");
        ao_metrics_free(m);
}

/* ---- the registry ------------------------------------------------------------------------------------ */

static void test_exposition(void)
{
        struct ao_metrics *m = ao_metrics_new("addon_operator_");
        struct ao_metric_family *runs, *live, *dur, *unused, *again;
        const char *const module_hook[] = {"module", "hook", NULL};
        const char *const module[] = {"module", NULL};

        is_format(m, "", "empty registry formats as \"\"");

        runs = ao_metrics_family(m, "hook_runs_total", AO_METRIC_COUNTER, "Hook runs.\nWith a \\ backslash",
                                 module_hook, NULL, 0);
        live = ao_metrics_family(m, "live_ticks", AO_METRIC_GAUGE, "Live ticks.", NULL, NULL, 0);
        dur = ao_metrics_family(m, "hook_run_seconds", AO_METRIC_HISTOGRAM, "Hook run time.", module,
                                ao_metrics_buckets_seconds, ao_metrics_n_buckets_seconds);
        unused = ao_metrics_family(m, "unused", AO_METRIC_GAUGE, "No series.", NULL, NULL, 0);
        again = ao_metrics_family(m, "hook_runs_total", AO_METRIC_GAUGE, "other", NULL, NULL, 0);
        tap_ok(again == runs, "same name, same family (other arguments ignored)");
        (void) unused;

        ao_metric_add(runs, (const char *const[]){"m1", "h1"}, 1);
        ao_metric_add(runs, (const char *const[]){"m1", "h1"}, 1);
        ao_metric_add(runs, (const char *const[]){"a\"b\\c\nd", ""}, 0.5);
        ao_metric_add(runs, (const char *const[]){NULL, "global.sh"}, 3);
        ao_metric_set(live, NULL, 3.5);
        ao_metric_add(live, NULL, -1);
        ao_metric_observe(dur, (const char *const[]){"m1"}, 0);
        ao_metric_observe(dur, (const char *const[]){"m1"}, 0.25);
        ao_metric_observe(dur, (const char *const[]){"m1"}, 0.5);
        ao_metric_observe(dur, (const char *const[]){"m1"}, 7);
        ao_metric_observe(dur, (const char *const[]){"m1"}, 20);
        ao_metric_observe(dur, (const char *const[]){""}, 0.001);

        tap_is_int(ao_metric_value(runs, (const char *const[]){"m1", "h1"}), 2, "value of a counter series");
        tap_ok(ao_metric_value(runs, (const char *const[]){"", "global.sh"}) == 3,
               "NULL label value is \"\"");
        tap_ok(ao_metric_value(runs, (const char *const[]){"m2", "h1"}) == 0, "absent series reads 0");
        tap_ok(ao_metric_value(live, NULL) == 2.5, "gauge set then add");
        tap_is_int(ao_metrics_count_series(m), 6, "count_series: histograms count once per label set");

        is_format(m,
                  "# HELP addon_operator_hook_run_seconds Hook run time.\n"
                  "# TYPE addon_operator_hook_run_seconds histogram\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0\"} 0\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.001\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.002\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.005\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.01\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.02\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.05\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.1\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.2\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"0.5\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"1\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"2\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"5\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"10\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"\",le=\"+Inf\"} 1\n"
                  "addon_operator_hook_run_seconds_sum{module=\"\"} 0.001\n"
                  "addon_operator_hook_run_seconds_count{module=\"\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.001\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.002\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.005\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.01\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.02\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.05\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.1\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.2\"} 1\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"0.5\"} 3\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"1\"} 3\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"2\"} 3\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"5\"} 3\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"10\"} 4\n"
                  "addon_operator_hook_run_seconds_bucket{module=\"m1\",le=\"+Inf\"} 5\n"
                  "addon_operator_hook_run_seconds_sum{module=\"m1\"} 27.75\n"
                  "addon_operator_hook_run_seconds_count{module=\"m1\"} 5\n"
                  "# HELP addon_operator_hook_runs_total Hook runs.\\nWith a \\\\ backslash\n"
                  "# TYPE addon_operator_hook_runs_total counter\n"
                  "addon_operator_hook_runs_total{module=\"\",hook=\"global.sh\"} 3\n"
                  "addon_operator_hook_runs_total{module=\"a\\\"b\\\\c\\nd\",hook=\"\"} 0.5\n"
                  "addon_operator_hook_runs_total{module=\"m1\",hook=\"h1\"} 2\n"
                  "# HELP addon_operator_live_ticks Live ticks.\n"
                  "# TYPE addon_operator_live_ticks gauge\n"
                  "addon_operator_live_ticks 2.5\n",
                  "exposition: prefix, sorted families and series, escaping, empty values, histogram");

        /* A histogram without labels: le alone in the braces. */
        struct ao_metrics *m2 = ao_metrics_new("p_");
        struct ao_metric_family *h =
            ao_metrics_family(m2, "h", AO_METRIC_HISTOGRAM, "", NULL, (const double[]){-1, 1e-07, 1e6}, 3);
        ao_metric_observe(h, NULL, -5);
        ao_metric_observe(h, NULL, 1e6);
        ao_metric_observe(h, NULL, NAN);
        is_format(m2,
                  "# HELP p_h \n"
                  "# TYPE p_h histogram\n"
                  "p_h_bucket{le=\"-1\"} 1\n"
                  "p_h_bucket{le=\"1e-07\"} 1\n"
                  "p_h_bucket{le=\"1e+06\"} 2\n"
                  "p_h_bucket{le=\"+Inf\"} 3\n"
                  "p_h_sum NaN\n"
                  "p_h_count 3\n",
                  "histogram without labels: le bounds as Go writes them, NaN into +Inf");
        ao_metrics_free(m2);
        ao_metrics_free(m);
}

static void test_remove_series(void)
{
        struct ao_metrics *m = ao_metrics_new("x_");
        const char *const mh[] = {"module", "hook", NULL};
        const char *const mo[] = {"module", NULL};
        struct ao_metric_family *a = ao_metrics_family(m, "a", AO_METRIC_COUNTER, "A", mh, NULL, 0);
        struct ao_metric_family *b =
            ao_metrics_family(m, "b", AO_METRIC_HISTOGRAM, "B", mo, (double[]){1}, 1);
        struct ao_metric_family *c = ao_metrics_family(m, "c", AO_METRIC_GAUGE, "C", NULL, NULL, 0);

        ao_metric_add(a, (const char *const[]){"one", "h1"}, 1);
        ao_metric_add(a, (const char *const[]){"one", "h2"}, 1);
        ao_metric_add(a, (const char *const[]){"two", "h1"}, 1);
        ao_metric_add(a, (const char *const[]){"", "one"}, 1);
        ao_metric_observe(b, (const char *const[]){"one"}, 0.5);
        ao_metric_observe(b, (const char *const[]){"two"}, 0.5);
        ao_metric_set(c, NULL, 1);
        tap_is_int(ao_metrics_count_series(m), 7, "count_series before removal");
        tap_is_int(ao_metrics_remove_series(m, "module", "one"), 3,
                   "remove_series: module=one in every family");
        tap_is_int(ao_metrics_count_series(m), 4, "count_series after removal");
        tap_is_int(ao_metrics_remove_series(m, "module", "one"), 0, "remove_series again: nothing left");
        tap_is_int(ao_metrics_remove_series(m, "nolabel", ""), 0, "remove_series of an unknown label");
        is_format(m,
                  "# HELP x_a A\n# TYPE x_a counter\n"
                  "x_a{module=\"\",hook=\"one\"} 1\n"
                  "x_a{module=\"two\",hook=\"h1\"} 1\n"
                  "# HELP x_b B\n# TYPE x_b histogram\n"
                  "x_b_bucket{module=\"two\",le=\"1\"} 1\n"
                  "x_b_bucket{module=\"two\",le=\"+Inf\"} 1\n"
                  "x_b_sum{module=\"two\"} 0.5\n"
                  "x_b_count{module=\"two\"} 1\n"
                  "# HELP x_c C\n# TYPE x_c gauge\n"
                  "x_c 1\n",
                  "exposition after removal");
        tap_is_int(ao_metrics_remove_series(m, "module", "two"), 2, "remove_series: module=two");
        ao_metric_add(a, (const char *const[]){"two", "h1"}, 5);
        tap_ok(ao_metric_value(a, (const char *const[]){"two", "h1"}) == 5, "a removed series starts afresh");
        ao_metrics_free(m);
}

static void test_remove_series_except(void)
{
        struct ao_metrics *m = ao_metrics_new("x_");
        const char *const mo[] = {"module", NULL};
        struct ao_metric_family *runs = ao_metrics_family(m, "runs", AO_METRIC_COUNTER, "R", mo, NULL, 0);
        struct ao_metric_family *info = ao_metrics_family(m, "info", AO_METRIC_GAUGE, "I", mo, NULL, 0);

        ao_metric_add(runs, (const char *const[]){"one"}, 1);
        ao_metric_set(info, (const char *const[]){"one"}, 1);
        tap_is_int(ao_metrics_remove_series_except(m, "module", "one", &info, 1), 1,
                   "remove_series_except: only the family not kept loses its series");
        is_format(m, "# HELP x_info I\n# TYPE x_info gauge\nx_info{module=\"one\"} 1\n",
                  "remove_series_except: the kept family's series stays");
        ao_metrics_free(m);
}

static void test_unprefixed(void)
{
        struct ao_metrics *m = ao_metrics_new("x_");
        const char *const mv[] = {"module", "version", NULL};
        struct ao_metric_family *own = ao_metrics_family(m, "enabled", AO_METRIC_GAUGE, "E", mv, NULL, 0);
        struct ao_metric_family *twin =
            ao_metrics_family_unprefixed(m, "t_enabled", AO_METRIC_GAUGE, "T", mv, NULL, 0);
        ao_metric_set(own, (const char *const[]){"a", "1.0.0"}, 1);
        ao_metric_set(twin, (const char *const[]){"a", "1.0.0"}, 1);
        is_format(m,
                  "# HELP t_enabled T\n# TYPE t_enabled gauge\nt_enabled{module=\"a\",version=\"1.0.0\"} 1\n"
                  "# HELP x_enabled E\n# TYPE x_enabled gauge\nx_enabled{module=\"a\",version=\"1.0.0\"} 1\n",
                  "unprefixed: the family is named as given, beside the prefixed ones");
        tap_ok(ao_metrics_family_unprefixed(m, "t_enabled", AO_METRIC_GAUGE, "T", mv, NULL, 0) == twin,
               "unprefixed: the same name gives the same family");
        ao_metrics_free(m);
}

static void test_replace(void)
{
        struct ao_metrics *m = ao_metrics_new("x_");
        const char *const qm[] = {"queue", "module", NULL};
        struct ao_metric_family *head = ao_metrics_family(m, "head", AO_METRIC_GAUGE, "H", qm, NULL, 0);

        const char *const main_a[] = {"main", "a"}, *const side_b[] = {"side", "b"},
                          *const main_c[] = {"main", "c"};
        ao_metric_replace(head, (const char *const *const[]){main_a, side_b}, 2, 1);
        is_format(m,
                  "# HELP x_head H\n# TYPE x_head gauge\n"
                  "x_head{queue=\"main\",module=\"a\"} 1\n"
                  "x_head{queue=\"side\",module=\"b\"} 1\n",
                  "replace: the rows, each with the value");
        ao_metric_replace(head, (const char *const *const[]){main_c}, 1, 1);
        is_format(m, "# HELP x_head H\n# TYPE x_head gauge\nx_head{queue=\"main\",module=\"c\"} 1\n",
                  "replace: series not in the new rows are gone");
        ao_metric_replace(head, (const char *const *const[]){main_c}, 1, 2);
        tap_ok(ao_metric_value(head, main_c) == 2, "replace: a row already there takes the new value");
        ao_metric_replace(head, NULL, 0, 1);
        tap_is_int(ao_metrics_count_series(m), 0, "replace with no rows: no series");
        ao_metrics_free(m);
}

/* ---- hook metrics ------------------------------------------------------------------------------------ */

#define HOOK1_RUN1                                                                                    \
        "{\"group\":\"hook1\", \"name\":\"hook_metric\", \"action\":\"add\", \"value\":1, "           \
        "\"labels\":{\"kind\":\"pod\"}}\n"                                                            \
        "{\"group\":\"hook1\", \"name\":\"hook_metric\", \"action\":\"add\", \"value\":1, "           \
        "\"labels\":{\"kind\":\"replicaset\"}}\n"                                                     \
        "{\"group\":\"hook1\", \"name\":\"hook_metric\", \"action\":\"add\", \"value\":1, "           \
        "\"labels\":{\"kind\":\"deployment\"}}\n"                                                     \
        "{\"group\":\"hook1\", \"name\":\"hook1_special_metric\", \"action\":\"set\", \"value\":12, " \
        "\"labels\":{\"label1\":\"value1\"}}\n"                                                       \
        "{\"group\":\"hook1\", \"name\":\"common_metric\", \"action\":\"set\", \"value\":300, "       \
        "\"labels\":{\"source\":\"source3\"}}\n"                                                      \
        "{\"name\":\"common_metric\", \"action\":\"set\", \"value\":100, "                            \
        "\"labels\":{\"source\":\"source1\"}}\n"
#define HOOK2_RUN1                                                                                     \
        "{\"group\":\"hook2\", \"name\":\"hook_metric\",\"action\":\"add\", \"value\":1, "             \
        "\"labels\":{\"kind\":\"configmap\"}}\n"                                                       \
        "{\"group\":\"hook2\", \"name\":\"hook_metric\",\"action\":\"add\", \"value\":1, "             \
        "\"labels\":{\"kind\":\"secret\"}}\n"                                                          \
        "{\"group\":\"hook2\", \"name\":\"hook2_special_metric\", \"action\":\"set\", \"value\":42}\n" \
        "{\"name\":\"common_metric\", \"action\":\"set\", \"value\":200, "                             \
        "\"labels\":{\"source\":\"source2\"}}\n"
#define HOOK1_RUN2                                                                          \
        "{\"group\":\"hook1\", \"name\":\"hook_metric\", \"action\":\"add\", \"value\":1, " \
        "\"labels\":{\"kind\":\"pod\"}}\n"
#define HOOK2_RUN2 "{\"group\":\"hook2\", \"action\":\"expire\"}\n"

static void test_documentation_example(void)
{
        struct ao_metrics *m = ao_metrics_new("");
        struct ao_error err = {0};

        tap_is_int(apply(m, HOOK1_RUN1, "hook1.sh", NULL, &err), 0, "doc: hook1.sh run 1");
        tap_is_int(apply(m, HOOK2_RUN1, "hook2.sh", NULL, &err), 0, "doc: hook2.sh run 1");
        is_format(m,
                  "# HELP common_metric common_metric\n"
                  "# TYPE common_metric gauge\n"
                  "common_metric{hook=\"hook1.sh\",source=\"source1\"} 100\n"
                  "common_metric{hook=\"hook1.sh\",source=\"source3\"} 300\n"
                  "common_metric{hook=\"hook2.sh\",source=\"source2\"} 200\n"
                  "# HELP hook1_special_metric hook1_special_metric\n"
                  "# TYPE hook1_special_metric gauge\n"
                  "hook1_special_metric{hook=\"hook1.sh\",label1=\"value1\"} 12\n"
                  "# HELP hook2_special_metric hook2_special_metric\n"
                  "# TYPE hook2_special_metric gauge\n"
                  "hook2_special_metric{hook=\"hook2.sh\"} 42\n"
                  "# HELP hook_metric hook_metric\n"
                  "# TYPE hook_metric counter\n"
                  "hook_metric{hook=\"hook1.sh\",kind=\"deployment\"} 1\n"
                  "hook_metric{hook=\"hook1.sh\",kind=\"pod\"} 1\n"
                  "hook_metric{hook=\"hook1.sh\",kind=\"replicaset\"} 1\n"
                  "hook_metric{hook=\"hook2.sh\",kind=\"configmap\"} 1\n"
                  "hook_metric{hook=\"hook2.sh\",kind=\"secret\"} 1\n",
                  "doc: scrape 1");

        tap_is_int(apply(m, HOOK1_RUN2, "hook1.sh", NULL, &err), 0, "doc: hook1.sh run 2");
        is_format(m,
                  "# HELP common_metric common_metric\n"
                  "# TYPE common_metric gauge\n"
                  "common_metric{hook=\"hook1.sh\",source=\"source1\"} 100\n"
                  "common_metric{hook=\"hook2.sh\",source=\"source2\"} 200\n"
                  "# HELP hook2_special_metric hook2_special_metric\n"
                  "# TYPE hook2_special_metric gauge\n"
                  "hook2_special_metric{hook=\"hook2.sh\"} 42\n"
                  "# HELP hook_metric hook_metric\n"
                  "# TYPE hook_metric counter\n"
                  "hook_metric{hook=\"hook1.sh\",kind=\"pod\"} 2\n"
                  "hook_metric{hook=\"hook2.sh\",kind=\"configmap\"} 1\n"
                  "hook_metric{hook=\"hook2.sh\",kind=\"secret\"} 1\n",
                  "doc: scrape 2 (group hook1 replaced, its counter went on counting)");

        tap_is_int(apply(m, HOOK2_RUN2, "hook2.sh", NULL, &err), 0, "doc: hook2.sh run 2");
        is_format(m,
                  "# HELP common_metric common_metric\n"
                  "# TYPE common_metric gauge\n"
                  "common_metric{hook=\"hook1.sh\",source=\"source1\"} 100\n"
                  "common_metric{hook=\"hook2.sh\",source=\"source2\"} 200\n"
                  "# HELP hook_metric hook_metric\n"
                  "# TYPE hook_metric counter\n"
                  "hook_metric{hook=\"hook1.sh\",kind=\"pod\"} 2\n",
                  "doc: scrape 3 (group hook2 expired)");
        tap_is_int(ao_metrics_count_series(m), 3, "doc: three series left");
        ao_metrics_free(m);
}

static void test_conflicts(void)
{
        struct ao_metrics *m = ao_metrics_new("");
        struct ao_error err = {0};

        tap_is_int(apply(m,
                         "{\"name\":\"c\",\"add\":1}\n"
                         "{\"name\":\"c\",\"set\":5}\n"
                         "{\"name\":\"h\",\"action\":\"observe\",\"value\":1.5,\"buckets\":[1,2]}\n"
                         "{\"name\":\"h\",\"action\":\"observe\",\"value\":1.5,\"buckets\":[1,3]}\n"
                         "{\"name\":\"c\",\"action\":\"observe\",\"value\":1,\"buckets\":[1]}\n"
                         "{\"name\":\"g\",\"set\":7,\"labels\":{\"a\":\"b\"}}\n"
                         "{\"name\":\"c\",\"add\":2}\n",
                         "h.sh", NULL, &err),
                   -EINVAL, "conflicts: -EINVAL");
        tap_is_int(err.code, -EINVAL, "conflicts: error code");
        tap_is_str(err.msg, "metric 'c' is a counter; operation 1 (set) skipped",
                   "conflicts: the first one named");
        is_format(m,
                  "# HELP c c\n# TYPE c counter\n"
                  "c{hook=\"h.sh\"} 3\n"
                  "# HELP g g\n# TYPE g gauge\n"
                  "g{a=\"b\",hook=\"h.sh\"} 7\n"
                  "# HELP h h\n# TYPE h histogram\n"
                  "h_bucket{hook=\"h.sh\",le=\"1\"} 0\n"
                  "h_bucket{hook=\"h.sh\",le=\"2\"} 1\n"
                  "h_bucket{hook=\"h.sh\",le=\"+Inf\"} 1\n"
                  "h_sum{hook=\"h.sh\"} 1.5\n"
                  "h_count{hook=\"h.sh\"} 1\n",
                  "conflicts: every other operation applied");

        err = (struct ao_error){0};
        tap_is_int(apply(m,
                         "{\"name\":\"g\",\"add\":1}\n"
                         "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[1,2,5]}\n",
                         "other.sh", NULL, &err),
                   -EINVAL, "conflict with a family of an earlier batch");
        tap_is_str(err.msg, "metric 'g' is a gauge; operation 0 (add) skipped", "... names the first");

        err = (struct ao_error){0};
        tap_is_int(apply(m, "{\"name\":\"h\",\"action\":\"observe\",\"value\":1,\"buckets\":[1,2,5]}\n",
                         "x.sh", NULL, &err),
                   -EINVAL, "bucket conflict alone");
        tap_is_str(err.msg, "metric 'h' is a histogram with other buckets; operation 0 (observe) skipped",
                   "bucket conflict message");

        err = (struct ao_error){0};
        tap_is_int(apply(m,
                         "{\"name\":\"h2\",\"action\":\"observe\",\"value\":1,\"buckets\":[1],"
                         "\"labels\":{\"le\":\"x\"}}\n",
                         "x.sh", NULL, &err),
                   -EINVAL, "histogram with a label 'le'");
        tap_is_str(err.msg,
                   "metric 'h2': label 'le' is reserved for histogram buckets; operation 0 (observe) skipped",
                   "label 'le' message");

        err = (struct ao_error){0};
        tap_is_int(apply(m, "{\"name\":\"h\",\"action\":\"observe\",\"value\":9,\"buckets\":[1,2]}\n", "x.sh",
                         NULL, &err),
                   0, "same buckets: no conflict");
        tap_is_int(err.code, 0, "... and no error recorded");
        tap_is_int(apply(m, "", "x.sh", NULL, NULL), 0, "empty batch");
        tap_is_int(ao_metrics_count_series(m), 4, "series after the conflicts");
        ao_metrics_free(m);
}

static void test_operator_labels(void)
{
        struct ao_metrics *m = ao_metrics_new("");

        tap_is_int(
            apply(
                m,
                "{\"name\":\"m\",\"set\":1,\"labels\":{\"hook\":\"evil\",\"module\":\"evil\",\"z\":\"1\"}}\n"
                "{\"name\":\"m\",\"set\":2,\"labels\":{\"a\":\"\"}}\n",
                "hooks/h.sh", "mod-a", NULL),
            0, "module hook batch");
        tap_is_int(apply(m, "{\"name\":\"m\",\"set\":3,\"labels\":{\"hook\":\"evil\",\"module\":\"mine\"}}\n",
                         "global.sh", NULL, NULL),
                   0, "global hook batch");
        is_format(m,
                  "# HELP m m\n# TYPE m gauge\n"
                  "m{a=\"\",hook=\"hooks/h.sh\",module=\"mod-a\"} 2\n"
                  "m{hook=\"global.sh\",module=\"mine\"} 3\n"
                  "m{hook=\"hooks/h.sh\",module=\"mod-a\",z=\"1\"} 1\n",
                  "hook and module labels added and winning; a global hook keeps its own 'module'");
        tap_is_int(ao_metrics_remove_series(m, "module", "mod-a"), 2, "module's hook metrics removed");
        ao_metrics_free(m);
}

static void test_groups(void)
{
        struct ao_metrics *m = ao_metrics_new("");

        /* Same group name in two hooks and in a module: three groups. */
        (void) apply(m, "{\"group\":\"g\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"a\"}}", "h1", NULL,
                     NULL);
        (void) apply(m, "{\"group\":\"g\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"b\"}}", "h2", NULL,
                     NULL);
        (void) apply(m, "{\"group\":\"g\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"c\"}}", "h1", "mod",
                     NULL);
        (void) apply(m, "{\"group\":\"g\",\"action\":\"expire\"}", "h1", NULL, NULL);
        is_format(m,
                  "# HELP c c\n# TYPE c counter\n"
                  "c{hook=\"h1\",k=\"c\",module=\"mod\"} 1\n"
                  "c{hook=\"h2\",k=\"b\"} 1\n",
                  "groups: expire touches only the hook's own group");

        /* Expire in the middle of a batch drops what came before; later writes stay. */
        (void) apply(m,
                     "{\"group\":\"g\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"x\"}}\n"
                     "{\"group\":\"g\",\"action\":\"expire\"}\n"
                     "{\"group\":\"g\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"y\"}}\n"
                     "{\"group\":\"g\",\"action\":\"expire\"}\n"
                     "{\"group\":\"g\",\"name\":\"c\",\"add\":4,\"labels\":{\"k\":\"y\"}}\n",
                     "h2", NULL, NULL);
        is_format(m,
                  "# HELP c c\n# TYPE c counter\n"
                  "c{hook=\"h1\",k=\"c\",module=\"mod\"} 1\n"
                  "c{hook=\"h2\",k=\"y\"} 4\n",
                  "groups: expire mid-batch");

        /* A series leaves its group when written without one, and then persists. */
        (void) apply(m,
                     "{\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"y\"}}\n"
                     "{\"group\":\"g\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"z\"}}\n",
                     "h2", NULL, NULL);
        (void) apply(m,
                     "{\"group\":\"g\",\"action\":\"expire\"}\n{\"group\":\"other\",\"action\":\"expire\"}",
                     "h2", NULL, NULL);
        is_format(m,
                  "# HELP c c\n# TYPE c counter\n"
                  "c{hook=\"h1\",k=\"c\",module=\"mod\"} 1\n"
                  "c{hook=\"h2\",k=\"y\"} 5\n",
                  "groups: an ungrouped write takes the series out of its group");

        /* A series moves between groups of one hook; a batch naming the old group no longer drops it. */
        (void) apply(m, "{\"group\":\"g2\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"c\"}}", "h1", "mod",
                     NULL);
        (void) apply(m, "{\"group\":\"g\",\"name\":\"d\",\"set\":1}", "h1", "mod", NULL);
        is_format(m,
                  "# HELP c c\n# TYPE c counter\n"
                  "c{hook=\"h1\",k=\"c\",module=\"mod\"} 2\n"
                  "c{hook=\"h2\",k=\"y\"} 5\n"
                  "# HELP d d\n# TYPE d gauge\n"
                  "d{hook=\"h1\",module=\"mod\"} 1\n",
                  "groups: the last writer's group owns the series");

        /* Removing a hook's series leaves its groups empty: later batches start from nothing. */
        tap_is_int(ao_metrics_remove_series(m, "module", "mod"), 2, "groups: remove_series of a module");
        (void) apply(m, "{\"group\":\"g2\",\"name\":\"c\",\"add\":1,\"labels\":{\"k\":\"c\"}}", "h1", "mod",
                     NULL);
        (void) apply(m, "{\"group\":\"g2\",\"action\":\"expire\"}", "h1", "mod", NULL);
        tap_is_int(ao_metrics_count_series(m), 1, "groups: after remove, write and expire");

        /* A skipped operation still names its group: the group's older series go. */
        (void) apply(m, "{\"group\":\"q\",\"name\":\"e\",\"set\":1}", "h3", NULL, NULL);
        tap_is_int(apply(m, "{\"group\":\"q\",\"name\":\"c\",\"set\":1}", "h3", NULL, NULL), -EINVAL,
                   "groups: conflicting grouped operation");
        is_format(m,
                  "# HELP c c\n# TYPE c counter\n"
                  "c{hook=\"h2\",k=\"y\"} 5\n",
                  "groups: a batch whose only operation was skipped still replaces its group");
        ao_metrics_free(m);
}

/* ---- threads and size -------------------------------------------------------------------------------- */

#define UPDATES 100000

struct race {
        struct ao_metrics *m;
        atomic_bool done;
};

static void *updater(void *userdata)
{
        struct race *race = userdata;
        struct ao_metric_family *c = ao_metrics_family(race->m, "c_total", AO_METRIC_COUNTER, "c",
                                                       (const char *const[]){"k", NULL}, NULL, 0);
        struct ao_metric_family *h =
            ao_metrics_family(race->m, "h_seconds", AO_METRIC_HISTOGRAM, "h", NULL,
                              ao_metrics_buckets_seconds, ao_metrics_n_buckets_seconds);
        struct ao_metric_family *g = ao_metrics_family(race->m, "churn", AO_METRIC_GAUGE, "g",
                                                       (const char *const[]){"j", NULL}, NULL, 0);

        for (int i = 0; i < UPDATES; i++) {
                char k[16], fam[32];
                snprintf(k, sizeof(k), "%d", i % 100);
                ao_metric_add(c, (const char *const[]){k}, 1);
                ao_metric_observe(h, NULL, (i % 20) * 0.5);
                /* Series come and go, and families appear, while the other thread scrapes. */
                snprintf(k, sizeof(k), "%d", i % 1000);
                ao_metric_set(g, (const char *const[]){k}, i);
                if (i % 1000 == 999)
                        (void) ao_metrics_remove_series(race->m, "j", "7");
                if (i % 5000 == 0) {
                        snprintf(fam, sizeof(fam), "family_%d", i);
                        ao_metric_set(ao_metrics_family(race->m, fam, AO_METRIC_GAUGE, "f", NULL, NULL, 0),
                                      NULL, i);
                }
        }
        atomic_store(&race->done, true);
        return NULL;
}

static void test_threads(void)
{
        struct race race = {.m = ao_metrics_new("t_")};
        pthread_t thread;
        size_t scrapes = 0;
        bool sane = true;

        if (pthread_create(&thread, NULL, updater, &race) != 0)
                tap_bail("pthread_create");
        while (!atomic_load(&race.done) || scrapes == 0) {
                char *text = ao_metrics_format(race.m);
                size_t len = strlen(text);
                if (len > 0 && (text[len - 1] != '\n' || strncmp(text, "# HELP t_", 9) != 0))
                        sane = false;
                free(text);
                (void) ao_metrics_count_series(race.m);
                scrapes++;
        }
        pthread_join(thread, NULL);
        tap_diag("%zu scrapes during %d updates", scrapes, UPDATES);
        tap_ok(sane, "threads: every scrape is whole lines");

        struct ao_metric_family *c =
            ao_metrics_family(race.m, "c_total", AO_METRIC_COUNTER, "", NULL, NULL, 0);
        bool exact = true;
        for (int k = 0; k < 100; k++) {
                char key[16];
                snprintf(key, sizeof(key), "%d", k);
                double want = UPDATES / 100;
                if (ao_metric_value(c, (const char *const[]){key}) != want) {
                        tap_diag("c_total{k=%s} = %g, want %g", key,
                                 ao_metric_value(c, (const char *const[]){key}), want);
                        exact = false;
                }
        }
        tap_ok(exact, "threads: final counter values exact");

        char *text = ao_metrics_format(race.m);
        tap_ok(strstr(text, "t_h_seconds_count 100000\n") != NULL, "threads: histogram count exact");
        tap_ok(strstr(text, "t_h_seconds_sum 475000\n") != NULL, "threads: histogram sum exact");
        tap_ok(strstr(text, "t_h_seconds_bucket{le=\"0\"} 5000\n") != NULL, "threads: first bucket exact");
        tap_ok(strstr(text, "t_churn{j=\"999\"} 99999\n") != NULL, "threads: last gauge value");
        tap_ok(strstr(text, "t_churn{j=\"7\"}") == NULL, "threads: removed series stay removed");
        tap_ok(strstr(text, "t_family_95000 95000\n") != NULL, "threads: families created meanwhile");
        free(text);
        ao_metrics_free(race.m);
}

static bool starts_with(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), k = strlen(suffix);
        return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void test_many_series(void)
{
        struct ao_metrics *m = ao_metrics_new("");
        struct ao_metric_family *f =
            ao_metrics_family(m, "big", AO_METRIC_GAUGE, "big", (const char *const[]){"i", NULL}, NULL, 0);
        char *text, *again;
        size_t lines = 0;

        for (int i = 0; i < 10000; i++) {
                char k[16];
                snprintf(k, sizeof(k), "%d", i);
                ao_metric_set(f, (const char *const[]){k}, i);
        }
        tap_is_int(ao_metrics_count_series(m), 10000, "10k series");
        text = ao_metrics_format(m);
        for (const char *p = text; *p; p++)
                lines += *p == '\n';
        tap_is_int(lines, 10002, "10k series: every one formatted");
        tap_ok(
            starts_with(
                text, "# HELP big big\n# TYPE big gauge\nbig{i=\"0\"} 0\nbig{i=\"1\"} 1\nbig{i=\"10\"} 10\n"),
            "10k series: sorted by label value");
        tap_ok(ends_with(text, "\nbig{i=\"9999\"} 9999\n"), "10k series: the last one last");
        again = ao_metrics_format(m);
        tap_is_int(strcmp(text, again), 0, "10k series: a second scrape is the same");
        free(again);
        free(text);
        tap_is_int(ao_metrics_remove_series(m, "i", "5000"), 1, "10k series: remove one");
        tap_is_int(ao_metrics_count_series(m), 9999, "10k series: one fewer");
        ao_metrics_free(m);
}

/* A registry that shows empty families prints their HELP and TYPE; one that does not prints nothing. */
static void test_show_empty(void)
{
        static const char *const labels[] = {"module", NULL};
        struct ao_metrics *m = ao_metrics_new("p_");
        (void) ao_metrics_family(m, "waiting", AO_METRIC_GAUGE, "Not filled yet", labels, NULL, 0);
        char *text = ao_metrics_format(m);
        tap_is_str(text, "", "show empty: off by default, nothing printed");
        free(text);
        ao_metrics_set_show_empty(m, true);
        text = ao_metrics_format(m);
        tap_is_str(text, "# HELP p_waiting Not filled yet\n# TYPE p_waiting gauge\n",
                   "show empty: HELP and TYPE of a family without series");
        free(text);
        ao_metrics_free(m);
}

/* Scrapes reuse a family's text until it changes: every kind of change must show in the next scrape. */
static void test_kept_text(void)
{
        static const char *const labels[] = {"hook", NULL};
        struct ao_metrics *m = ao_metrics_new("k_");
        struct ao_metric_family *c = ao_metrics_family(m, "runs", AO_METRIC_COUNTER, "Runs", labels, NULL, 0);
        struct ao_metric_family *g = ao_metrics_family(m, "level", AO_METRIC_GAUGE, "Level", NULL, NULL, 0);
        struct ao_metric_family *h =
            ao_metrics_family(m, "took", AO_METRIC_HISTOGRAM, "Took", NULL, (double[]){1}, 1);
        const char *const a[] = {"a"}, *const b[] = {"b"};
        struct ao_error err = {0};

        ao_metric_add(c, a, 1);
        ao_metric_set(g, NULL, 5);
        ao_metric_observe(h, NULL, 0.5);
        const char *head = "# HELP k_level Level\n# TYPE k_level gauge\n";
        const char *runs = "# HELP k_runs Runs\n# TYPE k_runs counter\n";
        const char *took = "# HELP k_took Took\n# TYPE k_took histogram\n";
        char want[1024];
        snprintf(
            want, sizeof(want),
            "%sk_level 5\n%sk_runs{hook=\"a\"} 1\n%sk_took_bucket{le=\"1\"} 1\nk_took_bucket{le=\"+Inf\"} "
            "1\nk_took_sum 0.5\nk_took_count 1\n",
            head, runs, took);
        is_format(m, want, "kept text: the first scrape");
        is_format(m, want, "kept text: an unchanged registry scrapes the same");

        ao_metric_add(c, a, 2);
        ao_metric_set(g, NULL, 7);
        ao_metric_observe(h, NULL, 2);
        snprintf(
            want, sizeof(want),
            "%sk_level 7\n%sk_runs{hook=\"a\"} 3\n%sk_took_bucket{le=\"1\"} 1\nk_took_bucket{le=\"+Inf\"} "
            "2\nk_took_sum 2.5\nk_took_count 2\n",
            head, runs, took);
        is_format(m, want, "kept text: add, set and observe show in the next scrape");

        ao_metric_add(c, b, 1);
        ao_metrics_remove_series(m, "hook", "a");
        snprintf(
            want, sizeof(want),
            "%sk_level 7\n%sk_runs{hook=\"b\"} 1\n%sk_took_bucket{le=\"1\"} 1\nk_took_bucket{le=\"+Inf\"} "
            "2\nk_took_sum 2.5\nk_took_count 2\n",
            head, runs, took);
        is_format(m, want, "kept text: a new series and a removed one show in the next scrape");

        struct ao_metrics *hm = ao_metrics_new("");
        tap_is_int(apply(hm, "{\"name\":\"q\",\"group\":\"g\",\"set\":1,\"labels\":{\"x\":\"1\"}}\n", "h.sh",
                         NULL, &err),
                   0, "kept text: a grouped hook metric");
        is_format(hm, "# HELP q q\n# TYPE q gauge\nq{hook=\"h.sh\",x=\"1\"} 1\n",
                  "kept text: the group's series");
        tap_is_int(apply(hm, "{\"name\":\"q\",\"group\":\"g\",\"set\":2,\"labels\":{\"x\":\"2\"}}\n", "h.sh",
                         NULL, &err),
                   0, "kept text: the group reported again with another series");
        is_format(hm, "# HELP q q\n# TYPE q gauge\nq{hook=\"h.sh\",x=\"2\"} 2\n",
                  "kept text: the group's old series is gone from the next scrape");
        tap_is_int(apply(hm, "{\"action\":\"expire\",\"group\":\"g\"}\n", "h.sh", NULL, &err), 0,
                   "kept text: the group expires");
        is_format(hm, "", "kept text: an expired group is gone from the next scrape");
        ao_metrics_free(hm);
        ao_metrics_free(m);
}

int main(void)
{
        test_numbers();
        test_show_empty();
        test_kept_text();
        test_exposition();
        test_remove_series();
        test_remove_series_except();
        test_replace();
        test_unprefixed();
        test_documentation_example();
        test_conflicts();
        test_operator_labels();
        test_groups();
        test_threads();
        test_many_series();
        return tap_done();
}
