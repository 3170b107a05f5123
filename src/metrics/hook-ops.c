/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/metrics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/error.h"
#include "ao/metric-ops.h"

#include "internal.h"

/*
 * METRICS_PATH operations, with the semantics the addon-operator
 * documentation describes (its hook1.sh/hook2.sh example is a unit test):
 *
 * - Every series gets the label hook=<hook> (and module=<module> for module
 *   hooks); they override labels of the same name the hook wrote.
 * - A series remembers the group and hook that wrote it last. Groups belong
 *   to a hook: (hook, module, group name).
 * - When a batch names a group, the group's series that the batch did not
 *   write disappear once the batch is applied; those it wrote keep their
 *   value, so counters go on counting.
 * - expire drops the group's series there and then.
 * - Ungrouped series persist (and accumulate).
 *
 * Each group links its series, so a group costs what it holds, not what the
 * registry holds.
 */

static const enum ao_metric_type action_types[] = {
    [AO_METRIC_ADD] = AO_METRIC_COUNTER,
    [AO_METRIC_SET] = AO_METRIC_GAUGE,
    [AO_METRIC_OBSERVE] = AO_METRIC_HISTOGRAM,
};

static const char *const type_names[_AO_METRIC_TYPE_MAX] = {
    [AO_METRIC_COUNTER] = "counter",
    [AO_METRIC_GAUGE] = "gauge",
    [AO_METRIC_HISTOGRAM] = "histogram",
};

/* ---- groups ------------------------------------------------------------------------------------------ */

static int strcmp_null(const char *a, const char *b)
{
        if (!a || !b)
                return (a != NULL) - (b != NULL);
        return strcmp(a, b);
}

static int group_compare(const struct ao_metric_group *g, const char *hook, const char *module,
                         const char *name)
{
        int c = strcmp(g->hook, hook);

        if (c == 0)
                c = strcmp_null(g->module, module);
        if (c == 0)
                c = strcmp(g->name, name);
        return c;
}

static size_t group_index(const struct ao_metrics *m, const char *hook, const char *module, const char *name,
                          bool *ret_found)
{
        size_t lo = 0, hi = m->n_groups;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = group_compare(m->groups[mid], hook, module, name);
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

static struct ao_metric_group *group_find(struct ao_metrics *m, const char *hook, const char *module,
                                          const char *name)
{
        bool found;
        size_t i = group_index(m, hook, module, name, &found);

        return found ? m->groups[i] : NULL;
}

static struct ao_metric_group *group_get(struct ao_metrics *m, const char *hook, const char *module,
                                         const char *name)
{
        struct ao_metric_group *g;
        bool found;
        size_t i = group_index(m, hook, module, name, &found);

        if (found)
                return m->groups[i];
        g = ao_xcalloc(1, sizeof(*g));
        g->hook = ao_xstrdup(hook);
        g->module = module ? ao_xstrdup(module) : NULL;
        g->name = ao_xstrdup(name);
        if ((m->n_groups & (m->n_groups - 1)) == 0) /* capacity: the next power of two */
                m->groups =
                    ao_xreallocarray(m->groups, m->n_groups ? m->n_groups * 2 : 1, sizeof(*m->groups));
        memmove(m->groups + i + 1, m->groups + i, (m->n_groups - i) * sizeof(*m->groups));
        m->groups[i] = g;
        m->n_groups++;
        return g;
}

static struct ao_metric_group *group_free(struct ao_metric_group *g)
{
        free(g->hook);
        free(g->module);
        free(g->name);
        free(g);
        return NULL;
}

void metrics_groups_gc(struct ao_metrics *m)
{
        size_t n = 0;

        for (size_t i = 0; i < m->n_groups; i++) {
                if (m->groups[i]->n_series == 0)
                        group_free(m->groups[i]);
                else
                        m->groups[n++] = m->groups[i];
        }
        m->n_groups = n;
        if (n == 0) {
                free(m->groups);
                m->groups = NULL;
        }
}

void metrics_groups_free(struct ao_metrics *m)
{
        for (size_t i = 0; i < m->n_groups; i++)
                group_free(m->groups[i]);
        free(m->groups);
        m->groups = NULL;
        m->n_groups = 0;
}

void metric_series_ungroup(struct ao_metric_series *s)
{
        struct ao_metric_group *g = s->group;

        if (!g)
                return;
        if (s->group_prev)
                s->group_prev->group_next = s->group_next;
        else
                g->head = s->group_next;
        if (s->group_next)
                s->group_next->group_prev = s->group_prev;
        s->group = NULL;
        s->group_prev = s->group_next = NULL;
        g->n_series--;
}

static void series_regroup(struct ao_metric_series *s, struct ao_metric_group *g)
{
        if (s->group == g)
                return;
        metric_series_ungroup(s);
        if (!g)
                return;
        s->group = g;
        s->group_next = g->head;
        if (g->head)
                g->head->group_prev = s;
        g->head = s;
        g->n_series++;
}

/* Drop the series of @g, all of them or those that batch @keep did not write (@keep 0: all). */
static void group_drop(struct ao_metric_group *g, uint64_t keep)
{
        for (struct ao_metric_series *s = g->head, *next; s; s = next) {
                next = s->group_next;
                if (keep != 0 && s->batch == keep)
                        continue;
                struct ao_metric_family *f = s->family;
                pthread_mutex_lock(&f->lock);
                metric_family_drop_series(f, s);
                pthread_mutex_unlock(&f->lock);
        }
}

/* ---- operations -------------------------------------------------------------------------------------- */

struct label_pair {
        const char *name;
        const char *value;
};

static int label_pair_compare(const void *a, const void *b)
{
        return strcmp(((const struct label_pair *) a)->name, ((const struct label_pair *) b)->name);
}

static bool same_buckets(const struct ao_metric_family *f, const struct ao_metric_op *op)
{
        if (f->n_buckets != op->n_buckets)
                return false;
        for (size_t i = 0; i < f->n_buckets; i++)
                if (f->buckets[i] != op->buckets[i])
                        return false;
        return true;
}

static int apply_one(struct ao_metrics *m, const struct ao_metric_op *op, size_t index, const char *hook,
                     const char *module, struct ao_metric_group *g, uint64_t batch, struct ao_error *reterr)
{
        struct label_pair pairs[AO_METRIC_OPS_MAX_LABELS + 2];
        const char *names[AO_METRIC_OPS_MAX_LABELS + 2], *values[AO_METRIC_OPS_MAX_LABELS + 2];
        const char *action = ao_metric_action_to_string(op->action);
        enum ao_metric_type type = action_types[op->action];
        struct ao_metric_family *f;
        struct ao_metric_series *s;
        size_t n = 0;

        f = metrics_family_find(m, op->name);
        if (f && !f->dynamic_labels)
                return ao_error_set(reterr, -EINVAL,
                                    "metric '%s' is not a hook metric; operation %zu (%s) skipped", op->name,
                                    index, action);
        if (f && f->type != type)
                return ao_error_set(reterr, -EINVAL, "metric '%s' is a %s; operation %zu (%s) skipped",
                                    op->name, type_names[f->type], index, action);
        if (f && type == AO_METRIC_HISTOGRAM && !same_buckets(f, op))
                return ao_error_set(
                    reterr, -EINVAL,
                    "metric '%s' is a histogram with other buckets; operation %zu (%s) skipped", op->name,
                    index, action);

        /* The operator's labels win over the hook's own of the same name. */
        pairs[n++] = (struct label_pair){"hook", hook};
        if (module)
                pairs[n++] = (struct label_pair){"module", module};
        for (size_t i = 0; i < op->n_labels && i < AO_METRIC_OPS_MAX_LABELS; i++) {
                const char *name = op->labels[i].name;
                if (strcmp(name, "hook") == 0 || (module && strcmp(name, "module") == 0))
                        continue;
                if (type == AO_METRIC_HISTOGRAM && strcmp(name, "le") == 0)
                        return ao_error_set(reterr, -EINVAL,
                                            "metric '%s': label 'le' is reserved for histogram buckets; "
                                            "operation %zu (%s) skipped",
                                            op->name, index, action);
                pairs[n++] = (struct label_pair){name, op->labels[i].value};
        }
        qsort(pairs, n, sizeof(pairs[0]), label_pair_compare);
        for (size_t i = 0; i < n; i++) {
                names[i] = pairs[i].name;
                values[i] = pairs[i].value;
        }

        /* Hook metrics carry their name as help text, as the Go operator's do. */
        if (!f)
                f = metrics_family_raw(m, op->name, type, op->name, NULL, true, op->buckets, op->n_buckets);
        pthread_mutex_lock(&f->lock);
        s = metric_family_series(f, n, names, values);
        switch (op->action) {
        case AO_METRIC_ADD:
                metric_series_add(f, s, op->value);
                break;
        case AO_METRIC_SET:
                metric_series_set(f, s, op->value);
                break;
        default:
                metric_series_observe(f, s, op->value);
                break;
        }
        series_regroup(s, g);
        s->batch = batch;
        pthread_mutex_unlock(&f->lock);
        return 0;
}

int ao_metrics_apply_hook_ops(struct ao_metrics *m, const struct ao_metric_ops *ops, const char *hook,
                              const char *module, struct ao_error *reterr)
{
        uint64_t batch = ++m->batch; /* never 0: group_drop() keeps nothing for 0 */
        int ret = 0;

        hook = hook ? hook : "";
        for (size_t i = 0; ops && i < ops->n; i++) {
                const struct ao_metric_op *op = &ops->ops[i];
                struct ao_metric_group *g = NULL;
                int r;

                if (op->action < 0 || op->action >= _AO_METRIC_ACTION_MAX)
                        continue;
                if (op->action == AO_METRIC_EXPIRE) {
                        g = op->group ? group_find(m, hook, module, op->group) : NULL;
                        if (g)
                                group_drop(g, 0);
                        continue;
                }
                if (op->group) {
                        /* Named by the batch, even when the operation itself is skipped below. */
                        g = group_get(m, hook, module, op->group);
                        g->batch = batch;
                }
                r = apply_one(m, op, i, hook, module, g, batch, ret < 0 ? NULL : reterr);
                if (r < 0 && ret == 0)
                        ret = r;
        }

        /* The groups this batch named keep only what it wrote. */
        for (size_t i = 0; i < m->n_groups; i++)
                if (m->groups[i]->batch == batch)
                        group_drop(m->groups[i], batch);
        metrics_groups_gc(m);
        return ret;
}
