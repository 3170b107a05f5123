/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes binding entries: `kubernetes` (v1) and `onKubernetesEvent`
 * (v0), with their name, label, field and namespace selectors and the jq
 * check of jqFilter.
 *
 * Defaults follow the Go operator (shell-operator pkg/hook/config): a
 * binding without executeHookOnEvent (or its older name watchEvent) gets
 * every event, an empty list none (a snapshot-only binding).
 * waitForSynchronization can only be switched off for a binding with its own
 * queue: on the main queue the operator must not start before the first
 * synchronization, so it is forced back on. v0 bindings never run on
 * synchronization, keep no full objects (v0 contexts carry none) and always
 * use the main queue.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/jq.h"
#include "internal.h"

static const char *const v1_event_names[] = {"Added", "Modified", "Deleted"};
static const char *const v0_event_names[] = {"add", "update", "delete"};

static const char *const selector_op_names[_AO_SELECTOR_OP_MAX] = {
    [AO_SELECTOR_IN] = "In",
    [AO_SELECTOR_NOT_IN] = "NotIn",
    [AO_SELECTOR_EXISTS] = "Exists",
    [AO_SELECTOR_DOES_NOT_EXIST] = "DoesNotExist",
};

/* ---- pieces shared by v0 and v1 -------------------------------------------------------------------- */

/* An array of event names (@names: Added/Modified/Deleted or add/update/delete) as a mask of AO_WATCH_*. */
static int parse_events(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                        const char *const names[static 3], unsigned *ret)
{
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        unsigned mask = 0;
        size_t n = 0, i = 0;
        int r;

        r = hook_config_get_array(ctx, path, json, 0, &n);
        if (r < 0)
                return r;
        for (const cJSON *c = json->child; c; c = c->next, i++) {
                const char *s = NULL;
                size_t k = 0;
                hook_config_path_index(p, path, i);
                r = hook_config_get_string(ctx, p, c, true, &s);
                if (r < 0)
                        return r;
                while (k < 3 && strcmp(names[k], s) != 0)
                        k++;
                if (k == 3)
                        return hook_config_fail(ctx, -EINVAL, p, "'%s' is not one of %s, %s, %s",
                                                hook_config_show(buf, s), names[0], names[1], names[2]);
                mask |= 1u << k; /* AO_WATCH_ADDED, _MODIFIED, _DELETED in this order */
        }
        *ret = mask;
        return 0;
}

static int compare_members(const void *a, const void *b)
{
        const cJSON *x = *(const cJSON *const *) a, *y = *(const cJSON *const *) b;
        return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* A label key and, unless NULL, a value the API server would accept; see label-syntax.c. */
static int check_label(struct ao_hook_config_ctx *ctx, const char *path, const char *key, const char *value)
{
        char buf[AO_HOOK_CONFIG_SHOW_MAX];
        const char *why = ao_label_key_problem(key);

        if (why)
                return hook_config_fail(ctx, -EINVAL, path, "label key '%s' %s", hook_config_show(buf, key),
                                        why);
        why = value ? ao_label_value_problem(value) : NULL;
        if (why)
                return hook_config_fail(ctx, -EINVAL, path, "label value '%s' of '%s' %s",
                                        hook_config_show(buf, value), key, why);
        return 0;
}

/* matchLabels: key → value, appended to @sel as In requirements with one value, sorted by key. */
static int parse_match_labels(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                              struct ao_label_selector *sel)
{
        char buf[AO_HOOK_CONFIG_SHOW_MAX];
        size_t n = 0, i = 0;
        int r;

        for (const cJSON *c = json->child; c; c = c->next)
                n++;
        if (n == 0)
                return 0;
        _cleanup_free_ const cJSON **members = ao_xreallocarray(NULL, n, sizeof(*members));
        for (const cJSON *c = json->child; c; c = c->next)
                members[i++] = c;
        qsort(members, n, sizeof(*members), compare_members);

        for (i = 0; i < n; i++) {
                const char *key = members[i]->string ? members[i]->string : "";
                const char *value;
                if (key[0] == '\0')
                        return hook_config_fail(ctx, -EINVAL, path, "empty key");
                if (i > 0 && compare_members(&members[i - 1], &members[i]) == 0)
                        return hook_config_fail(ctx, -EINVAL, path, "key '%s' is given twice",
                                                hook_config_show(buf, key));
                if (!cJSON_IsString(members[i]) || !members[i]->valuestring)
                        return hook_config_fail(ctx, -EINVAL, path, "value of '%s' must be a string, not %s",
                                                hook_config_show(buf, key),
                                                hook_config_type_name(members[i]));
                value = members[i]->valuestring;
                r = check_label(ctx, path, key, value);
                if (r < 0)
                        return r;

                struct ao_label_requirement *req = &sel->requirements[sel->n_requirements++];
                req->key = ao_xstrdup(key);
                req->op = AO_SELECTOR_IN;
                req->values.items = ao_xcalloc(1, sizeof(char *));
                req->values.items[0] = ao_xstrdup(value);
                req->values.n = 1;
        }
        return 0;
}

static int parse_match_expression(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                                  struct ao_label_selector *sel)
{
        static const char *const names[] = {"key", "operator", "values"};
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        const cJSON *m[AO_ARRAY_SIZE(names)];
        const char *key = NULL, *op = NULL;
        size_t k = 0;
        int r;

        r = hook_config_members(ctx, path, json, names, AO_ARRAY_SIZE(names), m);
        if (r < 0)
                return r;
        if (!m[0])
                return hook_config_fail(ctx, -EINVAL, path, "missing key");
        if (!m[1])
                return hook_config_fail(ctx, -EINVAL, path, "missing operator");
        r = hook_config_get_string(ctx, hook_config_path(p, path, "key"), m[0], false, &key);
        if (r < 0)
                return r;
        r = hook_config_get_string(ctx, hook_config_path(p, path, "operator"), m[1], true, &op);
        if (r < 0)
                return r;
        while (k < _AO_SELECTOR_OP_MAX && strcmp(selector_op_names[k], op) != 0)
                k++;
        if (k == _AO_SELECTOR_OP_MAX)
                return hook_config_fail(ctx, -EINVAL, p, "'%s' is not one of In, NotIn, Exists, DoesNotExist",
                                        hook_config_show(buf, op));

        struct ao_label_requirement *req = &sel->requirements[sel->n_requirements++];
        req->key = ao_xstrdup(key);
        req->op = (enum ao_selector_op) k;
        hook_config_path(p, path, "values");
        if (m[2]) {
                r = hook_config_get_strv(ctx, p, m[2], 0, false, &req->values);
                if (r < 0)
                        return r;
        }
        /* As k8s.io/apimachinery labels.NewRequirement checks them. */
        if ((req->op == AO_SELECTOR_IN || req->op == AO_SELECTOR_NOT_IN) && req->values.n == 0)
                return hook_config_fail(ctx, -EINVAL, p, "must not be empty for operator %s", op);
        if ((req->op == AO_SELECTOR_EXISTS || req->op == AO_SELECTOR_DOES_NOT_EXIST) && req->values.n > 0)
                return hook_config_fail(ctx, -EINVAL, p, "must be empty for operator %s", op);
        r = check_label(ctx, path, key, NULL);
        for (size_t i = 0; r >= 0 && i < req->values.n; i++)
                r = check_label(ctx, p, key, req->values.items[i]);
        return r;
}

/* A metav1.LabelSelector: matchLabels and/or matchExpressions, ANDed. */
static int parse_label_selector(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                                struct ao_label_selector *sel)
{
        static const char *const names[] = {"matchLabels", "matchExpressions"};
        char p[AO_HOOK_CONFIG_PATH_MAX], q[AO_HOOK_CONFIG_PATH_MAX];
        const cJSON *m[AO_ARRAY_SIZE(names)];
        size_t n_labels = 0, n_expressions = 0, i = 0;
        int r;

        r = hook_config_members(ctx, path, json, names, AO_ARRAY_SIZE(names), m);
        if (r < 0)
                return r;
        if (!m[0] && !m[1])
                return hook_config_fail(ctx, -EINVAL, path, "needs matchLabels or matchExpressions");
        if (m[0]) {
                hook_config_path(p, path, "matchLabels");
                if (!cJSON_IsObject(m[0]))
                        return hook_config_fail(ctx, -EINVAL, p, "must be an object, not %s",
                                                hook_config_type_name(m[0]));
                for (const cJSON *c = m[0]->child; c; c = c->next)
                        n_labels++;
                /* A requirement and its value each. */
                r = hook_config_charge(ctx, p, 2 * n_labels);
                if (r < 0)
                        return r;
        }
        if (m[1]) {
                hook_config_path(p, path, "matchExpressions");
                r = hook_config_get_array(ctx, p, m[1], 0, &n_expressions);
                if (r < 0)
                        return r;
                r = hook_config_charge(ctx, p, n_expressions);
                if (r < 0)
                        return r;
        }

        sel->present = true;
        if (n_labels + n_expressions > 0)
                sel->requirements = ao_xcalloc(n_labels + n_expressions, sizeof(*sel->requirements));
        if (m[0]) {
                r = parse_match_labels(ctx, hook_config_path(p, path, "matchLabels"), m[0], sel);
                if (r < 0)
                        return r;
        }
        if (m[1]) {
                hook_config_path(p, path, "matchExpressions");
                for (const cJSON *c = m[1]->child; c; c = c->next, i++) {
                        r = parse_match_expression(ctx, hook_config_path_index(q, p, i), c, sel);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* nameSelector: {matchNames: [...]}. */
static int parse_name_selector(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                               struct ao_strv *ret)
{
        static const char *const names[] = {"matchNames"};
        char p[AO_HOOK_CONFIG_PATH_MAX];
        const cJSON *m[1];
        int r;

        r = hook_config_members(ctx, path, json, names, 1, m);
        if (r < 0)
                return r;
        if (!m[0])
                return hook_config_fail(ctx, -EINVAL, path, "missing matchNames");
        return hook_config_get_strv(ctx, hook_config_path(p, path, "matchNames"), m[0], 0, false, ret);
}

static int parse_field_requirement(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                                   struct ao_field_requirement *ret)
{
        static const char *const names[] = {"field", "operator", "value"};
        static const struct {
                const char *name;
                bool negated;
        } ops[] = {{"=", false}, {"==", false}, {"Equals", false}, {"!=", true}, {"NotEquals", true}};
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        const cJSON *m[AO_ARRAY_SIZE(names)];
        const char *field = NULL, *op = NULL, *value = NULL;
        size_t k = 0;
        int r;

        r = hook_config_members(ctx, path, json, names, AO_ARRAY_SIZE(names), m);
        if (r < 0)
                return r;
        for (size_t i = 0; i < AO_ARRAY_SIZE(names); i++)
                if (!m[i])
                        return hook_config_fail(ctx, -EINVAL, path, "missing %s", names[i]);
        r = hook_config_get_string(ctx, hook_config_path(p, path, "field"), m[0], false, &field);
        if (r < 0)
                return r;
        r = hook_config_get_string(ctx, hook_config_path(p, path, "operator"), m[1], true, &op);
        if (r < 0)
                return r;
        while (k < AO_ARRAY_SIZE(ops) && strcmp(ops[k].name, op) != 0)
                k++;
        if (k == AO_ARRAY_SIZE(ops))
                return hook_config_fail(ctx, -EINVAL, p, "'%s' is not one of =, ==, Equals, !=, NotEquals",
                                        hook_config_show(buf, op));
        r = hook_config_get_string(ctx, hook_config_path(p, path, "value"), m[2], true, &value);
        if (r < 0)
                return r;
        const char *why = ao_field_name_problem(field);
        if (why)
                return hook_config_fail(ctx, -EINVAL, hook_config_path(p, path, "field"), "'%s' %s",
                                        hook_config_show(buf, field), why);
        ret->field = ao_xstrdup(field);
        ret->negated = ops[k].negated;
        ret->value = ao_xstrdup(value);
        return 0;
}

/* fieldSelector: {matchExpressions: [{field, operator, value}]}. */
static int parse_field_selector(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                                struct ao_kubernetes_binding *b)
{
        static const char *const names[] = {"matchExpressions"};
        char p[AO_HOOK_CONFIG_PATH_MAX], q[AO_HOOK_CONFIG_PATH_MAX];
        const cJSON *m[1];
        size_t n = 0, i = 0;
        int r;

        r = hook_config_members(ctx, path, json, names, 1, m);
        if (r < 0)
                return r;
        if (!m[0])
                return hook_config_fail(ctx, -EINVAL, path, "missing matchExpressions");
        hook_config_path(p, path, "matchExpressions");
        r = hook_config_get_array(ctx, p, m[0], 0, &n);
        if (r < 0)
                return r;
        r = hook_config_charge(ctx, p, n);
        if (r < 0)
                return r;
        if (n > 0)
                b->field_selector = ao_xcalloc(n, sizeof(*b->field_selector));
        for (const cJSON *c = m[0]->child; c; c = c->next, i++) {
                r = parse_field_requirement(ctx, hook_config_path_index(q, p, i), c,
                                            &b->field_selector[b->n_field_selector]);
                if (r < 0)
                        return r;
                b->n_field_selector++;
        }
        return 0;
}

/* namespace: {nameSelector, labelSelector}. */
static int parse_namespace(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                           struct ao_kubernetes_binding *b)
{
        static const char *const names[] = {"nameSelector", "labelSelector"};
        char p[AO_HOOK_CONFIG_PATH_MAX];
        const cJSON *m[AO_ARRAY_SIZE(names)];
        int r;

        r = hook_config_members(ctx, path, json, names, AO_ARRAY_SIZE(names), m);
        if (r < 0)
                return r;
        if (!m[0] && !m[1])
                return hook_config_fail(ctx, -EINVAL, path, "needs nameSelector or labelSelector");
        if (m[0]) {
                r = parse_name_selector(ctx, hook_config_path(p, path, "nameSelector"), m[0],
                                        &b->namespace_names);
                if (r < 0)
                        return r;
        }
        if (m[1]) {
                r = parse_label_selector(ctx, hook_config_path(p, path, "labelSelector"), m[1],
                                         &b->namespace_labels);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * jqFilter: compiled once per distinct program of the hook (libjq 1.6
 * compiles its builtins with every program, some 15 ms each, and bindings
 * often share a filter).
 */
static int parse_jq_filter(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                           const struct ao_hook_config *cfg, size_t i, char **ret)
{
        char reason[AO_HOOK_CONFIG_JQ_REASON_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        const char *s = NULL;
        int r;

        r = hook_config_get_string(ctx, path, json, true, &s);
        if (r < 0)
                return r;
        if (s[0] == '\0')
                return 0; /* no filter, as in the Go operator */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
                seen = cfg->kubernetes[j].jq_filter && strcmp(cfg->kubernetes[j].jq_filter, s) == 0;
        if (!seen) {
                r = ao_jq_check(s, reason, sizeof(reason));
                if (r == -EINVAL)
                        return hook_config_fail(ctx, r, path, "'%s' does not compile: %s",
                                                hook_config_show(buf, s), reason);
                if (r < 0)
                        return hook_config_fail(ctx, r, path, "cannot compile the filter: %s", strerror(-r));
        }
        *ret = ao_xstrdup(s);
        return 0;
}

/* k8s.io/apimachinery schema.ParseGroupVersion, stricter: "v1" or "group/version", both parts non-empty. */
static bool api_version_valid(const char *s)
{
        const char *slash = strchr(s, '/');

        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p <= 0x20 || *p == 0x7F)
                        return false;
        if (!slash)
                return s[0] != '\0';
        return slash != s && slash[1] != '\0' && !strchr(slash + 1, '/');
}

static int check_name_exclusion(struct ao_hook_config_ctx *ctx, const char *path,
                                const struct ao_kubernetes_binding *b)
{
        /* The watch puts matchNames into a metadata.name field selector (one watch per name). */
        if (b->name_selector.n == 0)
                return 0;
        for (size_t i = 0; i < b->n_field_selector; i++)
                if (strcmp(b->field_selector[i].field, "metadata.name") == 0)
                        return hook_config_fail(ctx, -EINVAL, path,
                                                "fieldSelector 'metadata.name' and nameSelector.matchNames "
                                                "exclude each other");
        return 0;
}

/* ---- v1: kubernetes ------------------------------------------------------------------------------------ */

enum kube_key {
        K_NAME,
        K_API_VERSION,
        K_KIND,
        K_EXECUTE_HOOK_ON_EVENT,
        K_WATCH_EVENT,
        K_EXECUTE_HOOK_ON_SYNCHRONIZATION,
        K_WAIT_FOR_SYNCHRONIZATION,
        K_KEEP_FULL_OBJECTS_IN_MEMORY,
        K_NAME_SELECTOR,
        K_LABEL_SELECTOR,
        K_FIELD_SELECTOR,
        K_NAMESPACE,
        K_JQ_FILTER,
        K_ALLOW_FAILURE,
        K_QUEUE,
        K_GROUP,
        K_INCLUDE_SNAPSHOTS_FROM,
        K_RESYNCHRONIZATION_PERIOD,
        _K_MAX,
};

static const char *const kube_keys[_K_MAX] = {
    [K_NAME] = "name",
    [K_API_VERSION] = "apiVersion",
    [K_KIND] = "kind",
    [K_EXECUTE_HOOK_ON_EVENT] = "executeHookOnEvent",
    [K_WATCH_EVENT] = "watchEvent",
    [K_EXECUTE_HOOK_ON_SYNCHRONIZATION] = "executeHookOnSynchronization",
    [K_WAIT_FOR_SYNCHRONIZATION] = "waitForSynchronization",
    [K_KEEP_FULL_OBJECTS_IN_MEMORY] = "keepFullObjectsInMemory",
    [K_NAME_SELECTOR] = "nameSelector",
    [K_LABEL_SELECTOR] = "labelSelector",
    [K_FIELD_SELECTOR] = "fieldSelector",
    [K_NAMESPACE] = "namespace",
    [K_JQ_FILTER] = "jqFilter",
    [K_ALLOW_FAILURE] = "allowFailure",
    [K_QUEUE] = "queue",
    [K_GROUP] = "group",
    [K_INCLUDE_SNAPSHOTS_FROM] = "includeSnapshotsFrom",
    [K_RESYNCHRONIZATION_PERIOD] = "resynchronizationPeriod",
};

/* A string member that may be empty, copied; "" and absence give NULL. */
static int optional_string(struct ao_hook_config_ctx *ctx, const char *path, const char *key,
                           const cJSON *json, char **ret)
{
        char p[AO_HOOK_CONFIG_PATH_MAX];
        const char *s = NULL;
        int r;

        if (!json)
                return 0;
        r = hook_config_get_string(ctx, hook_config_path(p, path, key), json, true, &s);
        if (r < 0)
                return r;
        *ret = hook_config_strdup_nonempty(s);
        return 0;
}

static int optional_bool(struct ao_hook_config_ctx *ctx, const char *path, const char *key, const cJSON *json,
                         bool *ret)
{
        char p[AO_HOOK_CONFIG_PATH_MAX];

        if (!json)
                return 0;
        return hook_config_get_bool(ctx, hook_config_path(p, path, key), json, ret);
}

int hook_config_parse_kubernetes(struct ao_hook_config_ctx *ctx, struct ao_hook_config *cfg, size_t i,
                                 const cJSON *json)
{
        struct ao_kubernetes_binding *b = &cfg->kubernetes[i];
        char path[AO_HOOK_CONFIG_PATH_MAX], p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        const cJSON *m[_K_MAX];
        bool wait = true;
        const char *s = NULL;
        int r;

        hook_config_path_index(path, "kubernetes", i);
        r = hook_config_members(ctx, path, json, kube_keys, _K_MAX, m);
        if (r < 0)
                return r;
        if (!m[K_KIND])
                return hook_config_fail(ctx, -EINVAL, path, "missing kind");

        b->event_mask = AO_WATCH_ALL;
        b->execute_hook_on_synchronization = true;
        b->keep_full_objects_in_memory = true;

        r = optional_string(ctx, path, "name", m[K_NAME], &b->name);
        if (r < 0)
                return r;
        if (!b->name)
                b->name = ao_xstrdup("kubernetes");
        r = optional_string(ctx, path, "apiVersion", m[K_API_VERSION], &b->api_version);
        if (r < 0)
                return r;
        if (b->api_version && !api_version_valid(b->api_version))
                return hook_config_fail(ctx, -EINVAL, hook_config_path(p, path, "apiVersion"),
                                        "'%s' is not a group/version (e.g. v1, apps/v1)",
                                        hook_config_show(buf, b->api_version));
        r = hook_config_get_string(ctx, hook_config_path(p, path, "kind"), m[K_KIND], false, &s);
        if (r < 0)
                return r;
        b->kind = ao_xstrdup(s);

        /* Both are checked; executeHookOnEvent, read last, wins, as in the Go operator. */
        if (m[K_WATCH_EVENT]) {
                r = parse_events(ctx, hook_config_path(p, path, "watchEvent"), m[K_WATCH_EVENT],
                                 v1_event_names, &b->event_mask);
                if (r < 0)
                        return r;
        }
        if (m[K_EXECUTE_HOOK_ON_EVENT]) {
                r = parse_events(ctx, hook_config_path(p, path, "executeHookOnEvent"),
                                 m[K_EXECUTE_HOOK_ON_EVENT], v1_event_names, &b->event_mask);
                if (r < 0)
                        return r;
        }

        r = optional_bool(ctx, path, "executeHookOnSynchronization", m[K_EXECUTE_HOOK_ON_SYNCHRONIZATION],
                          &b->execute_hook_on_synchronization);
        if (r < 0)
                return r;
        r = optional_bool(ctx, path, "waitForSynchronization", m[K_WAIT_FOR_SYNCHRONIZATION], &wait);
        if (r < 0)
                return r;
        r = optional_bool(ctx, path, "keepFullObjectsInMemory", m[K_KEEP_FULL_OBJECTS_IN_MEMORY],
                          &b->keep_full_objects_in_memory);
        if (r < 0)
                return r;
        r = optional_bool(ctx, path, "allowFailure", m[K_ALLOW_FAILURE], &b->allow_failure);
        if (r < 0)
                return r;

        if (m[K_QUEUE]) {
                r = hook_config_get_string(ctx, hook_config_path(p, path, "queue"), m[K_QUEUE], false, &s);
                if (r < 0)
                        return r;
                b->queue = ao_xstrdup(s);
                b->queue_given = true;
        } else {
                b->queue = ao_xstrdup("main");
        }
        b->wait_for_synchronization = b->queue_given ? wait : true;

        r = optional_string(ctx, path, "group", m[K_GROUP], &b->group);
        if (r < 0)
                return r;
        if (m[K_JQ_FILTER]) {
                r = parse_jq_filter(ctx, hook_config_path(p, path, "jqFilter"), m[K_JQ_FILTER], cfg, i,
                                    &b->jq_filter);
                if (r < 0)
                        return r;
        }
        if (m[K_NAME_SELECTOR]) {
                r = parse_name_selector(ctx, hook_config_path(p, path, "nameSelector"), m[K_NAME_SELECTOR],
                                        &b->name_selector);
                if (r < 0)
                        return r;
        }
        if (m[K_LABEL_SELECTOR]) {
                r = parse_label_selector(ctx, hook_config_path(p, path, "labelSelector"), m[K_LABEL_SELECTOR],
                                         &b->label_selector);
                if (r < 0)
                        return r;
        }
        if (m[K_FIELD_SELECTOR]) {
                r = parse_field_selector(ctx, hook_config_path(p, path, "fieldSelector"), m[K_FIELD_SELECTOR],
                                         b);
                if (r < 0)
                        return r;
        }
        if (m[K_NAMESPACE]) {
                r = parse_namespace(ctx, hook_config_path(p, path, "namespace"), m[K_NAMESPACE], b);
                if (r < 0)
                        return r;
        }
        if (m[K_INCLUDE_SNAPSHOTS_FROM]) {
                r = hook_config_get_strv(ctx, hook_config_path(p, path, "includeSnapshotsFrom"),
                                         m[K_INCLUDE_SNAPSHOTS_FROM], 1, true, &b->include_snapshots_from);
                if (r < 0)
                        return r;
        }
        r = optional_string(ctx, path, "resynchronizationPeriod", m[K_RESYNCHRONIZATION_PERIOD],
                            &b->resynchronization_period);
        if (r < 0)
                return r;
        return check_name_exclusion(ctx, path, b);
}

/* ---- v0: onKubernetesEvent --------------------------------------------------------------------------------- */

enum v0_key {
        E_NAME,
        E_EVENT,
        E_KIND,
        E_SELECTOR,
        E_OBJECT_NAME,
        E_NAMESPACE_SELECTOR,
        E_JQ_FILTER,
        E_ALLOW_FAILURE,
        E_DISABLE_DEBUG,
        _E_MAX,
};

static const char *const v0_keys[_E_MAX] = {
    [E_NAME] = "name",
    [E_EVENT] = "event",
    [E_KIND] = "kind",
    [E_SELECTOR] = "selector",
    [E_OBJECT_NAME] = "objectName",
    [E_NAMESPACE_SELECTOR] = "namespaceSelector",
    [E_JQ_FILTER] = "jqFilter",
    [E_ALLOW_FAILURE] = "allowFailure",
    [E_DISABLE_DEBUG] = "disableDebug",
};

/* namespaceSelector: {matchNames: [...], any: bool}; any (or no matchNames) means every namespace. */
static int parse_v0_namespace_selector(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                                       struct ao_strv *ret)
{
        static const char *const names[] = {"matchNames", "any"};
        _cleanup_(ao_strv_done) struct ao_strv v = {0};
        char p[AO_HOOK_CONFIG_PATH_MAX];
        const cJSON *m[AO_ARRAY_SIZE(names)];
        bool any = false;
        int r;

        r = hook_config_members(ctx, path, json, names, AO_ARRAY_SIZE(names), m);
        if (r < 0)
                return r;
        if (m[0]) {
                r = hook_config_get_strv(ctx, hook_config_path(p, path, "matchNames"), m[0], 0, false, &v);
                if (r < 0)
                        return r;
        }
        r = optional_bool(ctx, path, "any", m[1], &any);
        if (r < 0)
                return r;
        if (!any) {
                *ret = v;
                v = (struct ao_strv){0};
        }
        return 0;
}

int hook_config_parse_on_kubernetes_event(struct ao_hook_config_ctx *ctx, struct ao_hook_config *cfg,
                                          size_t i, const cJSON *json)
{
        struct ao_kubernetes_binding *b = &cfg->kubernetes[i];
        char path[AO_HOOK_CONFIG_PATH_MAX], p[AO_HOOK_CONFIG_PATH_MAX];
        const cJSON *m[_E_MAX];
        bool disable_debug = false;
        char *object_name = NULL;
        const char *s = NULL;
        int r;

        hook_config_path_index(path, "onKubernetesEvent", i);
        r = hook_config_members(ctx, path, json, v0_keys, _E_MAX, m);
        if (r < 0)
                return r;
        if (!m[E_KIND])
                return hook_config_fail(ctx, -EINVAL, path, "missing kind");

        b->event_mask = AO_WATCH_ALL;
        b->execute_hook_on_synchronization = false;
        b->wait_for_synchronization = true;
        b->keep_full_objects_in_memory = false;
        b->queue = ao_xstrdup("main");

        r = optional_string(ctx, path, "name", m[E_NAME], &b->name);
        if (r < 0)
                return r;
        if (!b->name)
                b->name = ao_xstrdup("onKubernetesEvent");
        if (m[E_EVENT]) {
                r = parse_events(ctx, hook_config_path(p, path, "event"), m[E_EVENT], v0_event_names,
                                 &b->event_mask);
                if (r < 0)
                        return r;
        }
        r = hook_config_get_string(ctx, hook_config_path(p, path, "kind"), m[E_KIND], false, &s);
        if (r < 0)
                return r;
        b->kind = ao_xstrdup(s);
        if (m[E_SELECTOR]) {
                r = parse_label_selector(ctx, hook_config_path(p, path, "selector"), m[E_SELECTOR],
                                         &b->label_selector);
                if (r < 0)
                        return r;
        }
        r = optional_string(ctx, path, "objectName", m[E_OBJECT_NAME], &object_name);
        if (r < 0)
                return r;
        if (object_name) {
                r = hook_config_charge(ctx, hook_config_path(p, path, "objectName"), 1);
                if (r < 0) {
                        free(object_name);
                        return r;
                }
                b->name_selector.items = ao_xcalloc(1, sizeof(char *));
                b->name_selector.items[0] = object_name;
                b->name_selector.n = 1;
        }
        if (m[E_NAMESPACE_SELECTOR]) {
                r = parse_v0_namespace_selector(ctx, hook_config_path(p, path, "namespaceSelector"),
                                                m[E_NAMESPACE_SELECTOR], &b->namespace_names);
                if (r < 0)
                        return r;
        }
        if (m[E_JQ_FILTER]) {
                r = parse_jq_filter(ctx, hook_config_path(p, path, "jqFilter"), m[E_JQ_FILTER], cfg, i,
                                    &b->jq_filter);
                if (r < 0)
                        return r;
        }
        r = optional_bool(ctx, path, "allowFailure", m[E_ALLOW_FAILURE], &b->allow_failure);
        if (r < 0)
                return r;
        /* Accepted for old hooks; it switched off debug logging of the binding in the Go operator. */
        return optional_bool(ctx, path, "disableDebug", m[E_DISABLE_DEBUG], &disable_debug);
}
