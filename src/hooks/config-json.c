/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A parsed configuration as JSON in the v1 vocabulary, every default filled
 * in (the shape is documented at ao_hook_config_to_json()). The output is
 * itself a valid configuration once "kind" and "ignored" are dropped (and
 * configVersion set to "v1" for a v0 source): parsing it again gives the
 * same JSON, which the fuzz target checks.
 */
#include "ao/hook-config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Adding to a tree remembers the first allocation failure, so the building code stays linear. */
struct builder {
        bool failed;
};

static cJSON *add(struct builder *b, cJSON *parent, const char *key, cJSON *item)
{
        if (!item || !parent) {
                cJSON_Delete(item);
                b->failed = true;
                return NULL;
        }
        if (!(key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item))) {
                cJSON_Delete(item);
                b->failed = true;
                return NULL;
        }
        return item;
}

static void add_string(struct builder *b, cJSON *parent, const char *key, const char *s)
{
        (void) add(b, parent, key, cJSON_CreateString(s));
}

static void add_bool(struct builder *b, cJSON *parent, const char *key, bool v)
{
        (void) add(b, parent, key, cJSON_CreateBool(v));
}

static void add_strv(struct builder *b, cJSON *parent, const char *key, const struct ao_strv *v)
{
        cJSON *array = add(b, parent, key, cJSON_CreateArray());
        for (size_t i = 0; i < v->n; i++)
                add_string(b, array, NULL, v->items[i]);
}

/* @usec as time.Duration.String() writes it, at microsecond precision: "0s", "1µs", "1.5ms", "1m30s", "2h0m0s". */
static void format_duration(uint64_t usec, char buf[static 64])
{
        uint64_t h = usec / (3600 * 1000000ULL), m = usec / (60 * 1000000ULL) % 60;
        uint64_t s = usec / 1000000ULL % 60, frac = usec % 1000000ULL;
        size_t len = 0;
        int digits = 6;

        if (usec == 0) {
                (void) snprintf(buf, 64, "0s");
                return;
        }
        if (usec < 1000) {
                (void) snprintf(buf, 64, "%" PRIu64 "\xc2\xb5s", usec);
                return;
        }
        if (usec < 1000000) {
                s = usec / 1000;
                frac = usec % 1000;
                digits = 3;
        } else if (h > 0) {
                len = (size_t) snprintf(buf, 64, "%" PRIu64 "h%" PRIu64 "m", h, m);
        } else if (m > 0) {
                len = (size_t) snprintf(buf, 64, "%" PRIu64 "m", m);
        }
        len += (size_t) snprintf(buf + len, 64 - len, "%" PRIu64, s);
        if (frac > 0) {
                while (frac % 10 == 0) {
                        frac /= 10;
                        digits--;
                }
                len += (size_t) snprintf(buf + len, 64 - len, ".%0*" PRIu64, digits, frac);
        }
        (void) snprintf(buf + len, 64 - len, "%s", usec < 1000000 ? "ms" : "s");
}

static const char *const v1_event_names[] = {"Added", "Modified", "Deleted"};
static const char *const selector_op_names[_AO_SELECTOR_OP_MAX] = {
    [AO_SELECTOR_IN] = "In",
    [AO_SELECTOR_NOT_IN] = "NotIn",
    [AO_SELECTOR_EXISTS] = "Exists",
    [AO_SELECTOR_DOES_NOT_EXIST] = "DoesNotExist",
};

/* Every requirement as a matchExpressions entry (matchLabels became In with one value). */
static void add_label_selector(struct builder *b, cJSON *parent, const char *key,
                               const struct ao_label_selector *sel)
{
        cJSON *obj = add(b, parent, key, cJSON_CreateObject());
        cJSON *exprs = add(b, obj, "matchExpressions", cJSON_CreateArray());

        for (size_t i = 0; i < sel->n_requirements; i++) {
                const struct ao_label_requirement *req = &sel->requirements[i];
                cJSON *e = add(b, exprs, NULL, cJSON_CreateObject());
                add_string(b, e, "key", req->key);
                add_string(b, e, "operator", selector_op_names[req->op]);
                if (req->values.n > 0)
                        add_strv(b, e, "values", &req->values);
        }
}

static void add_name_selector(struct builder *b, cJSON *parent, const char *key, const struct ao_strv *names)
{
        add_strv(b, add(b, parent, key, cJSON_CreateObject()), "matchNames", names);
}

static void add_kubernetes(struct builder *b, cJSON *array, const struct ao_kubernetes_binding *k)
{
        cJSON *o = add(b, array, NULL, cJSON_CreateObject());

        add_string(b, o, "name", k->name);
        if (k->api_version)
                add_string(b, o, "apiVersion", k->api_version);
        add_string(b, o, "kind", k->kind);
        cJSON *events = add(b, o, "executeHookOnEvent", cJSON_CreateArray());
        for (unsigned i = 0; i < 3; i++)
                if (k->event_mask & (1u << i))
                        add_string(b, events, NULL, v1_event_names[i]);
        add_bool(b, o, "executeHookOnSynchronization", k->execute_hook_on_synchronization);
        add_bool(b, o, "waitForSynchronization", k->wait_for_synchronization);
        add_bool(b, o, "keepFullObjectsInMemory", k->keep_full_objects_in_memory);
        add_bool(b, o, "allowFailure", k->allow_failure);
        add_string(b, o, "queue", k->queue);
        if (k->group)
                add_string(b, o, "group", k->group);
        if (k->jq_filter)
                add_string(b, o, "jqFilter", k->jq_filter);
        if (k->name_selector.n > 0)
                add_name_selector(b, o, "nameSelector", &k->name_selector);
        if (k->label_selector.present)
                add_label_selector(b, o, "labelSelector", &k->label_selector);
        if (k->n_field_selector > 0) {
                cJSON *fs = add(b, o, "fieldSelector", cJSON_CreateObject());
                cJSON *exprs = add(b, fs, "matchExpressions", cJSON_CreateArray());
                for (size_t i = 0; i < k->n_field_selector; i++) {
                        cJSON *e = add(b, exprs, NULL, cJSON_CreateObject());
                        add_string(b, e, "field", k->field_selector[i].field);
                        add_string(b, e, "operator", k->field_selector[i].negated ? "!=" : "=");
                        add_string(b, e, "value", k->field_selector[i].value);
                }
        }
        if (k->namespace_names.n > 0 || k->namespace_labels.present) {
                cJSON *ns = add(b, o, "namespace", cJSON_CreateObject());
                if (k->namespace_names.n > 0)
                        add_name_selector(b, ns, "nameSelector", &k->namespace_names);
                if (k->namespace_labels.present)
                        add_label_selector(b, ns, "labelSelector", &k->namespace_labels);
        }
        if (k->include_snapshots_from.n > 0)
                add_strv(b, o, "includeSnapshotsFrom", &k->include_snapshots_from);
        if (k->resynchronization_period)
                add_string(b, o, "resynchronizationPeriod", k->resynchronization_period);
}

static void add_schedule(struct builder *b, cJSON *array, const struct ao_schedule_binding *s)
{
        cJSON *o = add(b, array, NULL, cJSON_CreateObject());

        add_string(b, o, "name", s->name);
        add_string(b, o, "crontab", s->crontab);
        add_bool(b, o, "allowFailure", s->allow_failure);
        add_string(b, o, "queue", s->queue);
        if (s->group)
                add_string(b, o, "group", s->group);
        if (s->include_snapshots_from.n > 0)
                add_strv(b, o, "includeSnapshotsFrom", &s->include_snapshots_from);
}

cJSON *ao_hook_config_to_json(const struct ao_hook_config *cfg)
{
        struct builder b = {0};
        char duration[64];
        cJSON *root = cJSON_CreateObject();

        if (!root)
                return NULL;
        add_string(&b, root, "configVersion", cfg->version == 1 ? "v1" : "v0");
        add_string(&b, root, "kind", cfg->kind == AO_HOOK_MODULE ? "module" : "global");
        for (size_t t = 0; t < AO_BINDING_ORDERED_MAX; t++)
                if (cfg->has_order[t])
                        (void) add(&b, root, ao_binding_type_to_string((enum ao_binding_type) t),
                                   cJSON_CreateNumber((double) cfg->order[t]));
        if (cfg->n_schedules > 0) {
                cJSON *array = add(&b, root, "schedule", cJSON_CreateArray());
                for (size_t i = 0; i < cfg->n_schedules; i++)
                        add_schedule(&b, array, &cfg->schedules[i]);
        }
        if (cfg->n_kubernetes > 0) {
                cJSON *array = add(&b, root, "kubernetes", cJSON_CreateArray());
                for (size_t i = 0; i < cfg->n_kubernetes; i++)
                        add_kubernetes(&b, array, &cfg->kubernetes[i]);
        }
        cJSON *settings = add(&b, root, "settings", cJSON_CreateObject());
        format_duration(cfg->execution_min_period_usec, duration);
        add_string(&b, settings, "executionMinPeriod", duration);
        (void) add(&b, settings, "executionBurst", cJSON_CreateNumber(cfg->execution_burst));
        if (cfg->ignored.n > 0)
                add_strv(&b, root, "ignored", &cfg->ignored);

        if (b.failed) {
                cJSON_Delete(root);
                return NULL;
        }
        return root;
}
