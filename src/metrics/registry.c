/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/metrics.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"

#include "internal.h"

/*
 * Series live in a chained hash table per family, keyed by their label set
 * ("name\0value\0..."), so an update costs one hash of its labels whatever
 * the number of series. The scrape wants them sorted: the sorted array is
 * cached and rebuilt only after series were added or removed, so scraping
 * a stable registry sorts nothing.
 */

const double ao_metrics_buckets_seconds[] = {0,   0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                             0.1, 0.2,   0.5,   1,     2,    5,    10};
const size_t ao_metrics_n_buckets_seconds = AO_ARRAY_SIZE(ao_metrics_buckets_seconds);

static void mutex_init(pthread_mutex_t *lock)
{
        /* Default attributes: pthread_mutex_init() cannot fail on Linux then. */
        int r = pthread_mutex_init(lock, NULL);
        assert(r == 0);
        (void) r;
}

struct ao_metrics *ao_metrics_new(const char *prefix)
{
        struct ao_metrics *m = ao_xcalloc(1, sizeof(*m));

        m->prefix = ao_xstrdup(prefix ? prefix : "");
        mutex_init(&m->lock);
        return m;
}

static void series_free(struct ao_metric_series *s)
{
        free(s->key);
        free(s->text);
        free(s->bucket_counts);
        free(s);
}

static void family_free(struct ao_metric_family *f)
{
        for (size_t i = 0; i < f->table_size; i++)
                for (struct ao_metric_series *s = f->table[i], *next; s; s = next) {
                        next = s->_next;
                        series_free(s);
                }
        free(f->table);
        free(f->sorted);
        ao_strbuf_done(&f->text);
        ao_strbuf_done(&f->scratch);
        for (size_t i = 0; i < f->n_labels; i++)
                free(f->label_names[i]);
        free(f->label_names);
        free(f->buckets);
        free(f->name);
        free(f->help);
        (void) pthread_mutex_destroy(&f->lock);
        free(f);
}

struct ao_metrics *ao_metrics_free(struct ao_metrics *m)
{
        if (!m)
                return NULL;
        /* The groups only point at series; the series go with their families. */
        metrics_groups_free(m);
        for (size_t i = 0; i < m->n_families; i++)
                family_free(m->families[i]);
        free(m->families);
        free(m->prefix);
        (void) pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}

/* ---- families ---------------------------------------------------------------------------------------- */

/* Index of the family @name in the sorted list, or where it would go. The caller holds m->lock. */
static size_t family_index(const struct ao_metrics *m, const char *name, bool *ret_found)
{
        size_t lo = 0, hi = m->n_families;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(m->families[mid]->name, name);
                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = false;
        return lo;
}

struct ao_metric_family *metrics_family_find(struct ao_metrics *m, const char *full_name)
{
        struct ao_metric_family *f = NULL;
        bool found;

        pthread_mutex_lock(&m->lock);
        size_t i = family_index(m, full_name, &found);
        if (found)
                f = m->families[i];
        pthread_mutex_unlock(&m->lock);
        return f;
}

static struct ao_metric_family *family_new(const char *full_name, enum ao_metric_type type, const char *help,
                                           const char *const *label_names, bool dynamic_labels,
                                           const double *buckets, size_t n_buckets)
{
        struct ao_metric_family *f = ao_xcalloc(1, sizeof(*f));

        assert(type >= 0 && type < _AO_METRIC_TYPE_MAX);
        f->name = ao_xstrdup(full_name);
        f->help = ao_xstrdup(help ? help : "");
        f->type = type;
        f->dynamic_labels = dynamic_labels;
        if (!dynamic_labels && label_names) {
                while (label_names[f->n_labels])
                        f->n_labels++;
                assert(f->n_labels <= AO_METRICS_MAX_LABELS);
                f->label_names = ao_xcalloc(f->n_labels ? f->n_labels : 1, sizeof(char *));
                for (size_t i = 0; i < f->n_labels; i++)
                        f->label_names[i] = ao_xstrdup(label_names[i]);
        }
        if (type == AO_METRIC_HISTOGRAM && n_buckets > 0) {
                f->buckets = ao_xreallocarray(NULL, n_buckets, sizeof(double));
                memcpy(f->buckets, buckets, n_buckets * sizeof(double));
                f->n_buckets = n_buckets;
        }
        mutex_init(&f->lock);
        return f;
}

struct ao_metric_family *metrics_family_raw(struct ao_metrics *m, const char *full_name,
                                            enum ao_metric_type type, const char *help,
                                            const char *const *label_names, bool dynamic_labels,
                                            const double *buckets, size_t n_buckets)
{
        struct ao_metric_family *f;
        bool found;

        /*
         * Only the main thread creates families, so the lookup and the insertion need not be atomic;
         * the lock is there for the scrape's snapshot.
         */
        f = metrics_family_find(m, full_name);
        if (f)
                return f;
        f = family_new(full_name, type, help, label_names, dynamic_labels, buckets, n_buckets);

        pthread_mutex_lock(&m->lock);
        size_t i = family_index(m, full_name, &found);
        assert(!found);
        if ((m->n_families & (m->n_families - 1)) == 0) /* capacity: the next power of two */
                m->families = ao_xreallocarray(m->families, m->n_families ? m->n_families * 2 : 1,
                                               sizeof(*m->families));
        memmove(m->families + i + 1, m->families + i, (m->n_families - i) * sizeof(*m->families));
        m->families[i] = f;
        m->n_families++;
        pthread_mutex_unlock(&m->lock);
        return f;
}

struct ao_metric_family *ao_metrics_family(struct ao_metrics *m, const char *name, enum ao_metric_type type,
                                           const char *help, const char *const *label_names,
                                           const double *buckets, size_t n_buckets)
{
        _cleanup_free_ char *full_name = ao_xasprintf("%s%s", m->prefix, name);

        return metrics_family_raw(m, full_name, type, help, label_names, false, buckets, n_buckets);
}

struct ao_metric_family *ao_metrics_family_unprefixed(struct ao_metrics *m, const char *name,
                                                      enum ao_metric_type type, const char *help,
                                                      const char *const *label_names, const double *buckets,
                                                      size_t n_buckets)
{
        return metrics_family_raw(m, name, type, help, label_names, false, buckets, n_buckets);
}

struct ao_metric_family **metrics_families_snapshot(struct ao_metrics *m, size_t *ret_n)
{
        struct ao_metric_family **list = NULL;

        pthread_mutex_lock(&m->lock);
        *ret_n = m->n_families;
        if (m->n_families > 0) {
                list = ao_xreallocarray(NULL, m->n_families, sizeof(*list));
                memcpy(list, m->families, m->n_families * sizeof(*list));
        }
        pthread_mutex_unlock(&m->lock);
        return list;
}

/* ---- series ------------------------------------------------------------------------------------------ */

/* FNV-1a: label sets come from our own code and from hooks, which the operator's configuration trusts. */
static uint64_t hash_bytes(const char *p, size_t n)
{
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char) p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static void build_key(struct ao_strbuf *sb, size_t n, const char *const *names, const char *const *values)
{
        ao_strbuf_shrink(sb, 64 * 1024); /* one huge label set does not pin its memory */
        ao_strbuf_reset(sb);
        for (size_t i = 0; i < n; i++) {
                const char *v = values && values[i] ? values[i] : "";
                ao_strbuf_append_n(sb, names[i], strlen(names[i]) + 1);
                ao_strbuf_append_n(sb, v, strlen(v) + 1);
        }
}

/* A label value as the text format writes it: \\, \" and \n escaped. */
static void append_label_value(struct ao_strbuf *sb, const char *v)
{
        for (const char *p = v; *p;) {
                size_t n = strcspn(p, "\\\"\n");
                ao_strbuf_append_n(sb, p, n);
                p += n;
                if (!*p)
                        break;
                ao_strbuf_append(sb, *p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\");
                p++;
        }
}

static char *label_text(const char *key, size_t key_len)
{
        struct ao_strbuf sb = {0};

        for (const char *p = key; p < key + key_len;) {
                const char *name = p;
                p += strlen(p) + 1;
                if (name != key)
                        ao_strbuf_append_c(&sb, ',');
                ao_strbuf_append(&sb, name);
                ao_strbuf_append(&sb, "=\"");
                append_label_value(&sb, p);
                ao_strbuf_append_c(&sb, '"');
                p += strlen(p) + 1;
        }
        return ao_strbuf_steal(&sb);
}

static void table_grow(struct ao_metric_family *f)
{
        size_t size = f->table_size ? f->table_size * 2 : 16;
        struct ao_metric_series **table = ao_xcalloc(size, sizeof(*table));

        for (size_t i = 0; i < f->table_size; i++)
                for (struct ao_metric_series *s = f->table[i], *next; s; s = next) {
                        next = s->_next;
                        s->_next = table[s->hash & (size - 1)];
                        table[s->hash & (size - 1)] = s;
                }
        free(f->table);
        f->table = table;
        f->table_size = size;
}

/* The series whose key is in f->scratch, or NULL. */
static struct ao_metric_series *series_lookup(const struct ao_metric_family *f, uint64_t hash)
{
        if (f->table_size == 0)
                return NULL;
        for (struct ao_metric_series *s = f->table[hash & (f->table_size - 1)]; s; s = s->_next)
                if (s->hash == hash && s->key_len == f->scratch.len &&
                    memcmp(s->key, ao_strbuf_str(&f->scratch), s->key_len) == 0)
                        return s;
        return NULL;
}

struct ao_metric_series *metric_family_series(struct ao_metric_family *f, size_t n, const char *const *names,
                                              const char *const *values)
{
        struct ao_metric_series *s;
        uint64_t hash;

        build_key(&f->scratch, n, names, values);
        hash = hash_bytes(ao_strbuf_str(&f->scratch), f->scratch.len);
        s = series_lookup(f, hash);
        if (s)
                return s;

        if (f->n_series >= f->table_size) /* load factor at most 1 */
                table_grow(f);
        s = ao_xcalloc(1, sizeof(*s));
        s->hash = hash;
        s->key_len = f->scratch.len;
        s->key = ao_xmalloc(s->key_len + 1);
        memcpy(s->key, ao_strbuf_str(&f->scratch), s->key_len);
        s->key[s->key_len] = '\0';
        s->text = label_text(s->key, s->key_len);
        if (f->type == AO_METRIC_HISTOGRAM)
                s->bucket_counts = ao_xcalloc(f->n_buckets + 1, sizeof(uint64_t));
        s->family = f;
        s->_next = f->table[hash & (f->table_size - 1)];
        f->table[hash & (f->table_size - 1)] = s;
        f->n_series++;
        f->sorted_valid = false;
        f->text_valid = false;
        return s;
}

static void drop_unlinked(struct ao_metric_family *f, struct ao_metric_series *s)
{
        metric_series_ungroup(s);
        series_free(s);
        f->n_series--;
        f->sorted_valid = false;
        f->text_valid = false;
}

void metric_family_drop_series(struct ao_metric_family *f, struct ao_metric_series *s)
{
        for (struct ao_metric_series **pp = &f->table[s->hash & (f->table_size - 1)]; *pp; pp = &(*pp)->_next)
                if (*pp == s) {
                        *pp = s->_next;
                        drop_unlinked(f, s);
                        return;
                }
        assert(!"series not in its family");
}

static int series_compare(const void *a, const void *b)
{
        const struct ao_metric_series *x = *(struct ao_metric_series *const *) a;
        const struct ao_metric_series *y = *(struct ao_metric_series *const *) b;
        int c = memcmp(x->key, y->key, AO_MIN(x->key_len, y->key_len));

        if (c != 0)
                return c;
        return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

struct ao_metric_series *const *metric_family_sorted(struct ao_metric_family *f)
{
        size_t n = 0;

        if (f->sorted_valid)
                return f->sorted;
        free(f->sorted);
        f->sorted = ao_xreallocarray(NULL, f->n_series ? f->n_series : 1, sizeof(*f->sorted));
        for (size_t i = 0; i < f->table_size; i++)
                for (struct ao_metric_series *s = f->table[i]; s; s = s->_next)
                        f->sorted[n++] = s;
        assert(n == f->n_series);
        qsort(f->sorted, n, sizeof(*f->sorted), series_compare);
        f->sorted_valid = true;
        return f->sorted;
}

/* ---- updates ----------------------------------------------------------------------------------------- */

void metric_series_add(struct ao_metric_family *f, struct ao_metric_series *s, double value)
{
        if (f->type == AO_METRIC_HISTOGRAM)
                return;
        s->value += value;
        f->text_valid = false;
}

void metric_series_set(struct ao_metric_family *f, struct ao_metric_series *s, double value)
{
        if (f->type == AO_METRIC_HISTOGRAM)
                return;
        s->value = value;
        f->text_valid = false;
}

void metric_series_observe(struct ao_metric_family *f, struct ao_metric_series *s, double value)
{
        size_t lo = 0, hi = f->n_buckets;

        if (f->type != AO_METRIC_HISTOGRAM)
                return;
        f->text_valid = false;
        /* The first bucket whose upper bound is >= value (Go's sort.SearchFloat64s); NaN lands in +Inf. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (f->buckets[mid] >= value)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        s->bucket_counts[lo]++;
        s->count++;
        s->sum += value;
}

typedef void (*update_fn)(struct ao_metric_family *f, struct ao_metric_series *s, double value);

static void update(struct ao_metric_family *f, const char *const *label_values, double value, update_fn fn)
{
        pthread_mutex_lock(&f->lock);
        struct ao_metric_series *s =
            metric_family_series(f, f->n_labels, (const char *const *) f->label_names, label_values);
        fn(f, s, value);
        pthread_mutex_unlock(&f->lock);
}

void ao_metric_add(struct ao_metric_family *f, const char *const *label_values, double value)
{
        update(f, label_values, value, metric_series_add);
}

void ao_metric_set(struct ao_metric_family *f, const char *const *label_values, double value)
{
        update(f, label_values, value, metric_series_set);
}

void ao_metric_observe(struct ao_metric_family *f, const char *const *label_values, double value)
{
        update(f, label_values, value, metric_series_observe);
}

void ao_metric_replace(struct ao_metric_family *f, const char *const *const *rows, size_t n, double value)
{
        pthread_mutex_lock(&f->lock);
        for (size_t b = 0; b < f->table_size; b++)
                while (f->table[b]) {
                        struct ao_metric_series *s = f->table[b];
                        f->table[b] = s->_next;
                        drop_unlinked(f, s);
                }
        for (size_t i = 0; i < n; i++)
                metric_series_set(
                    f, metric_family_series(f, f->n_labels, (const char *const *) f->label_names, rows[i]),
                    value);
        pthread_mutex_unlock(&f->lock);
}

double ao_metric_value(struct ao_metric_family *f, const char *const *label_values)
{
        double v = 0;

        pthread_mutex_lock(&f->lock);
        build_key(&f->scratch, f->n_labels, (const char *const *) f->label_names, label_values);
        struct ao_metric_series *s = series_lookup(f, hash_bytes(ao_strbuf_str(&f->scratch), f->scratch.len));
        if (s)
                v = s->value;
        pthread_mutex_unlock(&f->lock);
        return v;
}

/* ---- removal and counting ---------------------------------------------------------------------------- */

static bool series_has_label(const struct ao_metric_series *s, const char *label, const char *value)
{
        for (const char *p = s->key; p < s->key + s->key_len;) {
                const char *name = p;
                p += strlen(p) + 1;
                if (strcmp(name, label) == 0)
                        return strcmp(p, value) == 0;
                p += strlen(p) + 1;
        }
        return false;
}

static bool family_in(const struct ao_metric_family *f, struct ao_metric_family *const *set, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (set[i] == f)
                        return true;
        return false;
}

size_t ao_metrics_remove_series(struct ao_metrics *m, const char *label, const char *value)
{
        return ao_metrics_remove_series_except(m, label, value, NULL, 0);
}

size_t ao_metrics_remove_series_except(struct ao_metrics *m, const char *label, const char *value,
                                       struct ao_metric_family *const *keep, size_t n_keep)
{
        struct ao_metric_family **families;
        size_t n_families, removed = 0;

        families = metrics_families_snapshot(m, &n_families);
        for (size_t i = 0; i < n_families; i++) {
                struct ao_metric_family *f = families[i];
                if (family_in(f, keep, n_keep))
                        continue;
                pthread_mutex_lock(&f->lock);
                for (size_t b = 0; b < f->table_size; b++)
                        for (struct ao_metric_series **pp = &f->table[b]; *pp;) {
                                struct ao_metric_series *s = *pp;
                                if (!series_has_label(s, label, value ? value : "")) {
                                        pp = &s->_next;
                                        continue;
                                }
                                *pp = s->_next;
                                drop_unlinked(f, s);
                                removed++;
                        }
                pthread_mutex_unlock(&f->lock);
        }
        free(families);
        metrics_groups_gc(m);
        return removed;
}

size_t ao_metrics_count_series(struct ao_metrics *m)
{
        struct ao_metric_family **families;
        size_t n_families, n = 0;

        families = metrics_families_snapshot(m, &n_families);
        for (size_t i = 0; i < n_families; i++) {
                pthread_mutex_lock(&families[i]->lock);
                n += families[i]->n_series;
                pthread_mutex_unlock(&families[i]->lock);
        }
        free(families);
        return n;
}

void ao_metrics_set_show_empty(struct ao_metrics *m, bool show)
{
        __atomic_store_n(&m->show_empty, show, __ATOMIC_RELAXED);
}
