/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Metrics registry and Prometheus text exposition (format 0.0.4).
 *
 * A registry holds families (counter, gauge, histogram), each with a fixed
 * list of label names, and their series keyed by label values. Family names
 * get the registry's prefix ("addon_operator_") unless the family is
 * created raw (hook metrics are used as-is) or unprefixed. Updates come from the main
 * thread, scrapes from the HTTP thread: every family has its own lock, held
 * only for one update or while one family is formatted, so a scrape never
 * stalls the main loop for longer than formatting one family.
 *
 * Series go away explicitly: ao_metrics_remove_series() drops every series
 * whose label has a value (a module that was removed, a hook that went
 * away), so series never grow without bound.
 *
 * Hook metrics (METRICS_PATH) are applied with ao_metrics_apply_hook_ops():
 * the operator adds the `hook` label (and `module`), grouped operations
 * replace their group's previous series (series re-reported in the batch
 * keep their value, so counters go on counting; series not re-reported
 * disappear), `expire` drops a group.
 *
 * Thread-safe as described above.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct ao_metrics;
struct ao_metric_family;
struct ao_metric_ops;

enum ao_metric_type {
        AO_METRIC_COUNTER,
        AO_METRIC_GAUGE,
        AO_METRIC_HISTOGRAM,
        _AO_METRIC_TYPE_MAX,
        _AO_METRIC_TYPE_INVALID = -EINVAL,
};

#define AO_METRICS_MAX_LABELS 16

/** A new registry; @prefix (copied) goes in front of every family name created with ao_metrics_family(). */
struct ao_metrics *ao_metrics_new(const char *prefix);
struct ao_metrics *ao_metrics_free(struct ao_metrics *m);

/**
 * The family @name (prefixed), created on first use with @type, @help and
 * @label_names (NULL-terminated, at most AO_METRICS_MAX_LABELS) and, for
 * histograms, @buckets (strictly increasing; +Inf implicit). Later calls
 * with the same name return the same family (the other arguments are then
 * ignored). Main thread. Never NULL.
 */
struct ao_metric_family *ao_metrics_family(struct ao_metrics *m, const char *name, enum ao_metric_type type,
                                           const char *help, const char *const *label_names,
                                           const double *buckets, size_t n_buckets);

/**
 * As ao_metrics_family(), named @name as it is, without the registry's prefix: the few families
 * whose names the Go operator fixes whatever its prefix (d8_telemetry_module_enabled). Main thread.
 */
struct ao_metric_family *ao_metrics_family_unprefixed(struct ao_metrics *m, const char *name,
                                                      enum ao_metric_type type, const char *help,
                                                      const char *const *label_names, const double *buckets,
                                                      size_t n_buckets);

/*
 * Updates. @label_values is in the family's label order, one per label name
 * (NULL counts as ""). An update that does not fit the family's type
 * (observe on a gauge, add on a histogram) is ignored. Main thread.
 */
/** Counter or gauge: value += @value. */
void ao_metric_add(struct ao_metric_family *f, const char *const *label_values, double value);
/** Gauge (a counter too): value = @value. */
void ao_metric_set(struct ao_metric_family *f, const char *const *label_values, double value);
/** Histogram: one observation of @value. */
void ao_metric_observe(struct ao_metric_family *f, const char *const *label_values, double value);

/**
 * Print families without series too (HELP and TYPE lines only): the operator's registry does, so
 * every metric it can export is visible from the start; hook metrics do not. Main thread, before
 * the first scrape.
 */
void ao_metrics_set_show_empty(struct ao_metrics *m, bool show);

/** Current value of a counter or gauge series (0 when absent); for tests. */
double ao_metric_value(struct ao_metric_family *f, const char *const *label_values);

/**
 * Make @n series the only ones of @f: row i holds the label values of one (in the family's label
 * order, as for ao_metric_set()), each set to @value; every other series goes. One step under the
 * family's lock, so a scrape sees the old set or the new one, never a mix: info gauges whose label
 * values change as a whole (the head task of each queue, the state of each module). Main thread.
 */
void ao_metric_replace(struct ao_metric_family *f, const char *const *const *rows, size_t n, double value);

/** Drop every series, in every family, that has label @label with value @value. Returns how many. */
size_t ao_metrics_remove_series(struct ao_metrics *m, const char *label, const char *value);
/** As ao_metrics_remove_series(), leaving the @n_keep families of @keep alone. */
size_t ao_metrics_remove_series_except(struct ao_metrics *m, const char *label, const char *value,
                                       struct ao_metric_family *const *keep, size_t n_keep);

/** Number of series in the registry (histograms count once per label set). */
size_t ao_metrics_count_series(struct ao_metrics *m);

/**
 * Apply hook metric operations (see above) from hook @hook of @module (NULL
 * for global hooks). An operation that conflicts with an existing family (a
 * counter name used as a gauge, different buckets) is skipped; @reterr then
 * names the first such operation and the function returns -EINVAL, having
 * applied every other operation. Hook families are raw: named as the hook
 * names them, whatever the registry's prefix, with the name as help text;
 * each series has its own label set (sorted by name). Main thread.
 */
int ao_metrics_apply_hook_ops(struct ao_metrics *m, const struct ao_metric_ops *ops, const char *hook,
                              const char *module, struct ao_error *reterr);

/**
 * The registry in Prometheus text format 0.0.4: families sorted by name,
 * "# HELP" and "# TYPE" lines, series sorted by label values, label values
 * escaped (\\, \", \n), histograms as _bucket{le=...} (cumulative, with
 * +Inf), _sum and _count. Numbers as Go's strconv.FormatFloat(v, 'g', -1)
 * writes them (+Inf, -Inf, NaN spelled so; 123456789 is "1.23456789e+08").
 * Families without series are left out. Any thread. Returns a malloc'd
 * string ("" when empty).
 */
char *ao_metrics_format(struct ao_metrics *m);

/** The bucket sets the Go operator uses: hook and module timings (0 .. 10 s). */
extern const double ao_metrics_buckets_seconds[];
extern const size_t ao_metrics_n_buckets_seconds;
