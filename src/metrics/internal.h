/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/metrics/: the registry's data structures, shared by
 * registry.c (storage, updates, removal), expo.c (text format) and
 * hook-ops.c (METRICS_PATH operations and their groups).
 *
 * Locking: ao_metrics.lock guards the family list only (creation, lookup,
 * the snapshot a scrape takes). Each family's lock guards its series table,
 * the series values and the sorted cache. Families are never freed before
 * the registry, so a snapshot of family pointers stays valid without the
 * registry lock. A family also keeps its last exposition text, valid until
 * one of its series is created, dropped or updated: a scrape copies the
 * families that did not change instead of formatting them again (10,000
 * hook series change seldom; the operator's own few change with every run).
 * The hook-metric bookkeeping (groups, the group links and
 * batch number of a series) is touched by the main thread only: the scrape
 * never reads it.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/metrics.h"
#include "ao/strbuf.h"

struct ao_metric_group;

/*
 * One series: a label set and its values. Owned by its family, linked in the
 * family's hash table.
 *
 * key holds "name\0value\0" for every label: in the family's label order for
 * fixed families, sorted by name for hook families. Comparing keys bytewise
 * (shorter first on a tie) therefore orders series by label values, label
 * after label, which is the order of the exposition.
 */
struct ao_metric_series {
        struct ao_metric_series *_next; /* hash chain */
        uint64_t hash;
        char *key; /* owned */
        size_t key_len;
        char *text; /* owned: the escaped label pairs without braces, `a="1",b="2"`; "" without labels */

        double value;            /* counter, gauge */
        double sum;              /* histogram */
        uint64_t count;          /* histogram */
        uint64_t *bucket_counts; /* owned, histogram: n_buckets + 1 (the last is +Inf), not cumulative */

        /* Hook metrics; main thread only. */
        struct ao_metric_family *family; /* borrowed: the owner */
        struct ao_metric_group *group;   /* borrowed; NULL when the last write was not grouped */
        struct ao_metric_series *group_prev, *group_next;
        uint64_t batch; /* the ao_metrics_apply_hook_ops() call that wrote it last */
};

struct ao_metric_family {
        char *name; /* owned: full name, prefix included */
        char *help; /* owned */
        enum ao_metric_type type;
        char **label_names; /* owned: fixed label names in the caller's order */
        size_t n_labels;
        bool dynamic_labels; /* hook metric: every series brings its own label set, sorted by name */
        double *buckets;     /* owned, histogram: strictly increasing, +Inf implicit */
        size_t n_buckets;

        pthread_mutex_t lock;            /* guards everything below */
        struct ao_metric_series **table; /* owned: hash buckets, table_size a power of two (or 0) */
        size_t table_size;
        size_t n_series;
        struct ao_metric_series **sorted; /* owned: n_series entries sorted by key when sorted_valid */
        bool sorted_valid;
        struct ao_strbuf
            text; /* the family's exposition when text_valid (for show_empty = text_show_empty) */
        bool text_valid, text_show_empty;
        struct ao_strbuf scratch; /* the key being looked up */
};

/* A group of hook metrics: (hook, module, group name). Main thread only. */
struct ao_metric_group {
        char *hook;                    /* owned */
        char *module;                  /* owned; NULL for global hooks */
        char *name;                    /* owned */
        struct ao_metric_series *head; /* borrowed: the series the group holds, linked by group_next */
        size_t n_series;
        uint64_t batch; /* the last ao_metrics_apply_hook_ops() call that named the group */
};

struct ao_metrics {
        char *prefix;    /* owned */
        bool show_empty; /* print HELP and TYPE of families without series (ao_metrics_set_show_empty) */

        pthread_mutex_t lock;               /* guards families and n_families */
        struct ao_metric_family **families; /* owned, sorted by name */
        size_t n_families;

        /* Hook metrics; main thread only. */
        struct ao_metric_group **groups; /* owned, sorted by (hook, module, name) */
        size_t n_groups;
        uint64_t batch; /* number of ao_metrics_apply_hook_ops() calls so far */
};

/* ---- registry.c ---- */

/**
 * The family @full_name (no prefix added), created on first use. With @dynamic_labels the family has no
 * fixed label names (@label_names is ignored): hook metrics. Main thread.
 */
struct ao_metric_family *metrics_family_raw(struct ao_metrics *m, const char *full_name,
                                            enum ao_metric_type type, const char *help,
                                            const char *const *label_names, bool dynamic_labels,
                                            const double *buckets, size_t n_buckets);

/** The family @full_name or NULL. */
struct ao_metric_family *metrics_family_find(struct ao_metrics *m, const char *full_name);

/**
 * The families, sorted by name, as a malloc'd array of borrowed pointers (valid until the registry is
 * freed); NULL with *ret_n = 0 when there are none. Any thread.
 */
struct ao_metric_family **metrics_families_snapshot(struct ao_metrics *m, size_t *ret_n);

/**
 * The series with labels @names = @values (@n of each; NULL values count as ""), created when absent.
 * The caller holds f->lock. For a fixed family @names are its label names, for a hook family they are
 * sorted by name and unique.
 */
struct ao_metric_series *metric_family_series(struct ao_metric_family *f, size_t n, const char *const *names,
                                              const char *const *values);

/** Remove @s from @f (and from its group) and free it. The caller holds f->lock. */
void metric_family_drop_series(struct ao_metric_family *f, struct ao_metric_series *s);

/** The series sorted by key (n_series of them). The caller holds f->lock. */
struct ao_metric_series *const *metric_family_sorted(struct ao_metric_family *f);

/* Value updates; the caller holds f->lock. */
void metric_series_add(struct ao_metric_family *f, struct ao_metric_series *s, double value);
void metric_series_set(struct ao_metric_family *f, struct ao_metric_series *s, double value);
void metric_series_observe(struct ao_metric_family *f, struct ao_metric_series *s, double value);

/* ---- hook-ops.c ---- */

/** Forget the groups that hold no series any more. Main thread. */
void metrics_groups_gc(struct ao_metrics *m);
/** Free every group (the series must not point at them any more, or be freed next). */
void metrics_groups_free(struct ao_metrics *m);
/** Unlink @s from its group, if any. */
void metric_series_ungroup(struct ao_metric_series *s);
