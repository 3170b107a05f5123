/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/hook-config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/cron.h"
#include "ao/duration.h"
#include "ao/json-type.h"
#include "ao/quote.h"
#include "ao/string-table.h"
#include "ao/yaml.h"
#include "internal.h"

/*
 * The top level, the ordered bindings, settings and schedule entries.
 * Kubernetes entries are in config-kubernetes.c; the helpers every part of
 * the parser shares (typed members, paths, messages) in config-read.c.
 *
 * Every object is read through hook_config_members(), which refuses
 * unknown and repeated keys before any value is looked at, so a typo is
 * reported as a typo rather than as whatever its absence causes. Values are
 * then checked in the order of the key tables, which makes the first error
 * of a configuration with several independent of the document's key order.
 *
 * The result is built in place in a zeroed struct ao_hook_config whose
 * arrays are sized up front and counted as filled, so that
 * ao_hook_config_done() can release whatever a failure leaves half built.
 */

/* ---- top level ---------------------------------------------------------------------------------------- */

enum {
        V0 = 1 << 0,
        V1 = 1 << 1,
        GLOBAL = 1 << AO_HOOK_GLOBAL,
        MODULE = 1 << AO_HOOK_MODULE,
        BOTH = GLOBAL | MODULE,
};

enum top_key {
        TOP_CONFIG_VERSION,
        TOP_ON_STARTUP,
        TOP_BEFORE_ALL,
        TOP_AFTER_ALL,
        TOP_BEFORE_HELM,
        TOP_AFTER_HELM,
        TOP_BEFORE_DELETE_HELM,
        TOP_AFTER_DELETE_HELM,
        TOP_SCHEDULE,
        TOP_KUBERNETES,
        TOP_ON_KUBERNETES_EVENT,
        TOP_SETTINGS,
        TOP_KUBERNETES_VALIDATING,
        TOP_KUBERNETES_MUTATING,
        TOP_KUBERNETES_CONVERSION,
        _TOP_MAX,
};

/*
 * Which versions and hook kinds have each key. beforeDeleteHelm is v1 only,
 * as in the documentation; the ordered bindings other than onStartup are
 * read as unsigned by the Go operator, so they must not be negative.
 */
static const struct {
        const char *name;
        unsigned versions;
        unsigned kinds;
        int order; /* enum ao_binding_type of an ordered binding, or -1 */
        bool unsigned_order;
} top_keys[_TOP_MAX] = {
    [TOP_CONFIG_VERSION] = {"configVersion", V0 | V1, BOTH, -1, false},
    [TOP_ON_STARTUP] = {"onStartup", V0 | V1, BOTH, AO_BINDING_ON_STARTUP, false},
    [TOP_BEFORE_ALL] = {"beforeAll", V0 | V1, GLOBAL, AO_BINDING_BEFORE_ALL, true},
    [TOP_AFTER_ALL] = {"afterAll", V0 | V1, GLOBAL, AO_BINDING_AFTER_ALL, true},
    [TOP_BEFORE_HELM] = {"beforeHelm", V0 | V1, MODULE, AO_BINDING_BEFORE_HELM, true},
    [TOP_AFTER_HELM] = {"afterHelm", V0 | V1, MODULE, AO_BINDING_AFTER_HELM, true},
    [TOP_BEFORE_DELETE_HELM] = {"beforeDeleteHelm", V1, MODULE, AO_BINDING_BEFORE_DELETE_HELM, true},
    [TOP_AFTER_DELETE_HELM] = {"afterDeleteHelm", V0 | V1, MODULE, AO_BINDING_AFTER_DELETE_HELM, true},
    [TOP_SCHEDULE] = {"schedule", V0 | V1, BOTH, -1, false},
    [TOP_KUBERNETES] = {"kubernetes", V1, BOTH, -1, false},
    [TOP_ON_KUBERNETES_EVENT] = {"onKubernetesEvent", V0, BOTH, -1, false},
    [TOP_SETTINGS] = {"settings", V1, BOTH, -1, false},
    [TOP_KUBERNETES_VALIDATING] = {"kubernetesValidating", V1, BOTH, -1, false},
    [TOP_KUBERNETES_MUTATING] = {"kubernetesMutating", V1, BOTH, -1, false},
    [TOP_KUBERNETES_CONVERSION] = {"kubernetesCustomResourceConversion", V1, BOTH, -1, false},
};

static int detect_version(struct ao_hook_config_ctx *ctx, const cJSON *doc, int *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "configVersion");
        char buf[AO_HOOK_CONFIG_SHOW_MAX];
        const char *s = NULL;
        int r;

        if (!v) {
                *ret = 0;
                return 0;
        }
        r = hook_config_get_string(ctx, "configVersion", v, true, &s);
        if (r < 0)
                return r;
        if (strcmp(s, "v0") == 0)
                *ret = 0;
        else if (strcmp(s, "v1") == 0)
                *ret = 1;
        else
                return hook_config_fail(ctx, -EINVAL, "configVersion", "'%s' is not one of v0, v1",
                                        hook_config_show(buf, s));
        return 0;
}

/* The keys of the document, checked against what this version and kind may use. */
static int top_members(struct ao_hook_config_ctx *ctx, const cJSON *doc, const cJSON *top[static _TOP_MAX])
{
        unsigned version_bit = ctx->version == 1 ? V1 : V0, kind_bit = 1u << ctx->kind;
        const char *names[_TOP_MAX];
        const cJSON *found[_TOP_MAX];
        enum top_key map[_TOP_MAX];
        size_t n = 0;
        int r;

        /* Before the unknown-key check, so that these get a message of their own. */
        for (size_t t = 0; t < _TOP_MAX; t++) {
                if (!cJSON_GetObjectItemCaseSensitive(doc, top_keys[t].name))
                        continue;
                if ((top_keys[t].versions & version_bit) && !(top_keys[t].kinds & kind_bit))
                        return hook_config_fail(ctx, -EINVAL, top_keys[t].name,
                                                "only %s hooks may use this binding",
                                                ctx->kind == AO_HOOK_GLOBAL ? "module" : "global");
                if (ctx->version == 0 && top_keys[t].versions == V1)
                        return hook_config_fail(ctx, -EINVAL, top_keys[t].name,
                                                "needs configVersion: v1 (this is a v0 configuration)");
        }
        for (size_t t = 0; t < _TOP_MAX; t++)
                if ((top_keys[t].versions & version_bit) && (top_keys[t].kinds & kind_bit)) {
                        names[n] = top_keys[t].name;
                        map[n++] = (enum top_key) t;
                }
        r = hook_config_members(ctx, NULL, doc, names, n, found);
        if (r < 0)
                return r;
        for (size_t t = 0; t < _TOP_MAX; t++)
                top[t] = NULL;
        for (size_t i = 0; i < n; i++)
                top[map[i]] = found[i];
        return 0;
}

static int parse_settings(struct ao_hook_config_ctx *ctx, const cJSON *json, struct ao_hook_config *cfg)
{
        static const char *const names[] = {"executionMinPeriod", "executionMinInterval", "executionBurst"};
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        const cJSON *m[AO_ARRAY_SIZE(names)];
        int r;

        r = hook_config_members(ctx, "settings", json, names, AO_ARRAY_SIZE(names), m);
        if (r < 0)
                return r;
        if (m[0] && m[1])
                return hook_config_fail(ctx, -EINVAL, "settings",
                                        "executionMinPeriod and executionMinInterval are two names of one "
                                        "setting: give only one");
        for (size_t i = 0; i < 2; i++) {
                const char *s = NULL;
                if (!m[i])
                        continue;
                hook_config_path(p, "settings", names[i]);
                r = hook_config_get_string(ctx, p, m[i], true, &s);
                if (r < 0)
                        return r;
                r = ao_parse_duration_usec(s, &cfg->execution_min_period_usec);
                if (r == -ERANGE)
                        return hook_config_fail(ctx, r, p, "'%s' is out of range", hook_config_show(buf, s));
                if (r < 0)
                        return hook_config_fail(ctx, r, p, "'%s' is not a duration (e.g. 500ms, 1m30s, 2h)",
                                                hook_config_show(buf, s));
        }
        if (m[2]) {
                int64_t burst = 0;
                hook_config_path(p, "settings", names[2]);
                r = hook_config_get_integer(ctx, p, m[2], 1, &burst);
                if (r < 0)
                        return r;
                /* The Go operator parses it as a 32-bit int. */
                if (burst > INT32_MAX)
                        return hook_config_fail(ctx, -EINVAL, p, "must be at most %d", INT32_MAX);
                cfg->execution_burst = (uint32_t) burst;
        }
        return 0;
}

static int parse_orders(struct ao_hook_config_ctx *ctx, const cJSON *const top[static _TOP_MAX],
                        struct ao_hook_config *cfg)
{
        for (size_t t = 0; t < _TOP_MAX; t++) {
                int64_t v = 0;
                int r;
                if (top_keys[t].order < 0 || !top[t])
                        continue;
                r = hook_config_get_integer(ctx, top_keys[t].name, top[t],
                                            top_keys[t].unsigned_order ? 0 : INT64_MIN, &v);
                if (r < 0)
                        return r;
                cfg->has_order[top_keys[t].order] = true;
                cfg->order[top_keys[t].order] = v;
        }
        return 0;
}

/* The kubernetes binding names of @cfg, sorted, for bsearch(); NULL when there are none. */
static const char **sorted_kubernetes_names(const struct ao_hook_config *cfg)
{
        if (cfg->n_kubernetes == 0)
                return NULL;
        const char **names = ao_xreallocarray(NULL, cfg->n_kubernetes, sizeof(*names));
        for (size_t i = 0; i < cfg->n_kubernetes; i++)
                names[i] = cfg->kubernetes[i].name;
        qsort(names, cfg->n_kubernetes, sizeof(*names), hook_config_compare_strings);
        return names;
}

static int check_snapshots(struct ao_hook_config_ctx *ctx, const char *path, const struct ao_strv *include,
                           const char *const *names, size_t n_names)
{
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];

        for (size_t i = 0; i < include->n; i++)
                if (n_names == 0 ||
                    !bsearch(&include->items[i], names, n_names, sizeof(*names), hook_config_compare_strings))
                        return hook_config_fail(ctx, -EINVAL, hook_config_path_index(p, path, i),
                                                "'%s' is not the name of a kubernetes binding of this hook",
                                                hook_config_show(buf, include->items[i]));
        return 0;
}

enum schedule_key {
        S_NAME,
        S_CRONTAB,
        S_ALLOW_FAILURE,
        S_QUEUE,
        S_GROUP,
        S_INCLUDE_SNAPSHOTS_FROM,
        _S_MAX,
        _S_MAX_V0 = S_ALLOW_FAILURE + 1, /* v0 has the first three */
};

static const char *const schedule_keys[_S_MAX] = {
    [S_NAME] = "name",   [S_CRONTAB] = "crontab", [S_ALLOW_FAILURE] = "allowFailure",
    [S_QUEUE] = "queue", [S_GROUP] = "group",     [S_INCLUDE_SNAPSHOTS_FROM] = "includeSnapshotsFrom",
};

static void cron_freep(struct ao_cron **c)
{
        ao_cron_free(*c);
}

static int parse_schedule(struct ao_hook_config_ctx *ctx, const cJSON *json, const char *const *kube_names,
                          size_t n_kube_names, size_t i, struct ao_schedule_binding *b)
{
        char path[AO_HOOK_CONFIG_PATH_MAX], p[AO_HOOK_CONFIG_PATH_MAX];
        const cJSON *m[_S_MAX];
        const char *s = NULL;
        int r;

        hook_config_path_index(path, "schedule", i);
        r = hook_config_members(ctx, path, json, schedule_keys, ctx->version == 1 ? _S_MAX : _S_MAX_V0, m);
        if (r < 0)
                return r;
        if (ctx->version == 0)
                m[S_QUEUE] = m[S_GROUP] = m[S_INCLUDE_SNAPSHOTS_FROM] = NULL;
        if (!m[S_CRONTAB])
                return hook_config_fail(ctx, -EINVAL, path, "missing crontab");

        if (m[S_NAME]) {
                r = hook_config_get_string(ctx, hook_config_path(p, path, "name"), m[S_NAME], true, &s);
                if (r < 0)
                        return r;
                b->name = hook_config_strdup_nonempty(s);
        }
        if (!b->name)
                b->name = ao_xstrdup("schedule");

        hook_config_path(p, path, "crontab");
        r = hook_config_get_string(ctx, p, m[S_CRONTAB], true, &s);
        if (r < 0)
                return r;
        _cleanup_(cron_freep) struct ao_cron *cron = NULL;
        struct ao_error err = {0};
        r = ao_cron_parse(s, &cron, &err);
        if (r < 0)
                return hook_config_fail(ctx, r, p, "%s", err.msg);
        b->crontab = ao_xstrdup(s);

        if (m[S_ALLOW_FAILURE]) {
                r = hook_config_get_bool(ctx, hook_config_path(p, path, "allowFailure"), m[S_ALLOW_FAILURE],
                                         &b->allow_failure);
                if (r < 0)
                        return r;
        }
        if (m[S_QUEUE]) {
                r = hook_config_get_string(ctx, hook_config_path(p, path, "queue"), m[S_QUEUE], false, &s);
                if (r < 0)
                        return r;
                b->queue = ao_xstrdup(s);
        } else {
                b->queue = ao_xstrdup("main");
        }
        if (m[S_GROUP]) {
                r = hook_config_get_string(ctx, hook_config_path(p, path, "group"), m[S_GROUP], true, &s);
                if (r < 0)
                        return r;
                b->group = hook_config_strdup_nonempty(s);
        }
        if (m[S_INCLUDE_SNAPSHOTS_FROM]) {
                hook_config_path(p, path, "includeSnapshotsFrom");
                r = hook_config_get_strv(ctx, p, m[S_INCLUDE_SNAPSHOTS_FROM], 1, true,
                                         &b->include_snapshots_from);
                if (r < 0)
                        return r;
                r = check_snapshots(ctx, p, &b->include_snapshots_from, kube_names, n_kube_names);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * kubernetesValidating, kubernetesMutating, kubernetesCustomResourceConversion:
 * addon-operator serves no webhooks, so they are only checked for the shape
 * the Go operator's schema insists on everywhere (a non-empty array of
 * objects with a string name) and reported in cfg->ignored.
 */
static int parse_ignored(struct ao_hook_config_ctx *ctx, const char *key, const cJSON *json,
                         struct ao_hook_config *cfg)
{
        char p[AO_HOOK_CONFIG_PATH_MAX], q[AO_HOOK_CONFIG_PATH_MAX];
        size_t n = 0, i = 0;
        int r;

        r = hook_config_get_array(ctx, key, json, 1, &n);
        if (r < 0)
                return r;
        for (const cJSON *c = json->child; c; c = c->next, i++) {
                const char *s = NULL;
                hook_config_path_index(p, key, i);
                if (!cJSON_IsObject(c))
                        return hook_config_fail(ctx, -EINVAL, p, "must be an object, not %s",
                                                hook_config_type_name(c));
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
                if (!name)
                        return hook_config_fail(ctx, -EINVAL, p, "missing name");
                r = hook_config_get_string(ctx, hook_config_path(q, p, "name"), name, true, &s);
                if (r < 0)
                        return r;
        }
        cfg->ignored.items = ao_xreallocarray(cfg->ignored.items, cfg->ignored.n + 1, sizeof(char *));
        cfg->ignored.items[cfg->ignored.n++] = ao_xstrdup(key);
        return 0;
}

static int parse_document(struct ao_hook_config_ctx *ctx, const cJSON *doc, struct ao_hook_config *cfg)
{
        const cJSON *top[_TOP_MAX];
        size_t n_schedules = 0, n_kubernetes = 0, n_members = 0;
        enum top_key kube_key;
        int r;

        if (!cJSON_IsObject(doc))
                return hook_config_fail(ctx, -EINVAL, NULL, "the configuration must be an object, not %s",
                                        hook_config_type_name(doc));
        r = detect_version(ctx, doc, &ctx->version);
        if (r < 0)
                return r;
        cfg->version = ctx->version;
        cfg->kind = ctx->kind;
        cfg->execution_burst = 1;

        r = top_members(ctx, doc, top);
        if (r < 0)
                return r;
        /* The Go operator's schemas: minProperties 2 with configVersion required (v1), 1 (v0). */
        for (const cJSON *c = doc->child; c; c = c->next)
                n_members++;
        if (n_members == (top[TOP_CONFIG_VERSION] ? 1u : 0u))
                return hook_config_fail(ctx, -EINVAL, NULL,
                                        "no bindings: the configuration has no key "
                                        "besides configVersion");

        /* Sizes first: nothing is allocated for a configuration over the limit. */
        kube_key = ctx->version == 1 ? TOP_KUBERNETES : TOP_ON_KUBERNETES_EVENT;
        if (top[TOP_SCHEDULE]) {
                r = hook_config_get_array(ctx, "schedule", top[TOP_SCHEDULE], ctx->version == 1,
                                          &n_schedules);
                if (r < 0)
                        return r;
        }
        if (top[kube_key]) {
                r = hook_config_get_array(ctx, top_keys[kube_key].name, top[kube_key], ctx->version == 1,
                                          &n_kubernetes);
                if (r < 0)
                        return r;
        }
        if (n_schedules + n_kubernetes > AO_HOOK_CONFIG_MAX_BINDINGS)
                return hook_config_fail(ctx, -E2BIG, NULL,
                                        "%zu schedule and kubernetes bindings, more than the %d allowed",
                                        n_schedules + n_kubernetes, AO_HOOK_CONFIG_MAX_BINDINGS);

        if (top[TOP_SETTINGS]) {
                r = parse_settings(ctx, top[TOP_SETTINGS], cfg);
                if (r < 0)
                        return r;
        }
        r = parse_orders(ctx, top, cfg);
        if (r < 0)
                return r;

        if (n_kubernetes > 0) {
                size_t i = 0;
                cfg->kubernetes = ao_xcalloc(n_kubernetes, sizeof(*cfg->kubernetes));
                cfg->n_kubernetes = n_kubernetes;
                for (const cJSON *c = top[kube_key]->child; c; c = c->next, i++) {
                        r = ctx->version == 1 ? hook_config_parse_kubernetes(ctx, cfg, i, c)
                                              : hook_config_parse_on_kubernetes_event(ctx, cfg, i, c);
                        if (r < 0)
                                return r;
                }
        }

        /* includeSnapshotsFrom may name any kubernetes binding, later ones and the binding itself included. */
        _cleanup_free_ const char **kube_names = sorted_kubernetes_names(cfg);
        for (size_t i = 0; i < cfg->n_kubernetes; i++) {
                char path[AO_HOOK_CONFIG_PATH_MAX], p[AO_HOOK_CONFIG_PATH_MAX];
                hook_config_path(p, hook_config_path_index(path, "kubernetes", i), "includeSnapshotsFrom");
                r = check_snapshots(ctx, p, &cfg->kubernetes[i].include_snapshots_from, kube_names,
                                    cfg->n_kubernetes);
                if (r < 0)
                        return r;
        }

        if (n_schedules > 0) {
                size_t i = 0;
                cfg->schedules = ao_xcalloc(n_schedules, sizeof(*cfg->schedules));
                cfg->n_schedules = n_schedules;
                for (const cJSON *c = top[TOP_SCHEDULE]->child; c; c = c->next, i++) {
                        r = parse_schedule(ctx, c, kube_names, cfg->n_kubernetes, i, &cfg->schedules[i]);
                        if (r < 0)
                                return r;
                }
        }

        for (size_t t = TOP_KUBERNETES_VALIDATING; t <= TOP_KUBERNETES_CONVERSION; t++)
                if (top[t]) {
                        r = parse_ignored(ctx, top_keys[t].name, top[t], cfg);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* ---- entry points ------------------------------------------------------------------------------------- */

int ao_hook_config_from_json(const cJSON *doc, const char *hook_name, enum ao_hook_kind kind,
                             struct ao_hook_config *ret, struct ao_error *reterr)
{
        struct ao_hook_config_ctx ctx = {
            .hook = hook_name ? hook_name : "hook",
            .kind = kind,
            .reterr = reterr,
        };
        _cleanup_(ao_hook_config_done) struct ao_hook_config cfg = {0};
        int r;

        if (kind != AO_HOOK_GLOBAL && kind != AO_HOOK_MODULE)
                return hook_config_fail(&ctx, -EINVAL, NULL, "invalid hook kind %d", (int) kind);
        r = parse_document(&ctx, doc, &cfg);
        if (r < 0)
                return r;
        *ret = cfg;
        cfg = (struct ao_hook_config){0};
        return 0;
}

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

int ao_hook_config_parse(const char *text, size_t len, const char *hook_name, enum ao_hook_kind kind,
                         struct ao_hook_config *ret, struct ao_error *reterr)
{
        struct ao_hook_config_ctx ctx = {
            .hook = hook_name ? hook_name : "hook", .kind = kind, .reterr = reterr};
        _cleanup_(json_deletep) cJSON *doc = NULL;
        struct ao_error err = {0};
        int r;

        if (len > AO_HOOK_CONFIG_MAX_INPUT)
                return hook_config_fail(&ctx, -EFBIG, NULL, "the configuration is larger than %u bytes",
                                        AO_HOOK_CONFIG_MAX_INPUT);
        r = ao_yaml_load(text ? text : "", text ? len : 0, "config", &doc, &err);
        if (r < 0)
                return hook_config_fail(&ctx, r, NULL, "%s", err.msg);
        return ao_hook_config_from_json(doc, hook_name, kind, ret, reterr);
}

static void label_selector_done(struct ao_label_selector *sel)
{
        for (size_t i = 0; i < sel->n_requirements; i++) {
                free(sel->requirements[i].key);
                ao_strv_done(&sel->requirements[i].values);
        }
        free(sel->requirements);
        *sel = (struct ao_label_selector){0};
}

static void kubernetes_binding_done(struct ao_kubernetes_binding *b)
{
        free(b->name);
        free(b->api_version);
        free(b->kind);
        free(b->queue);
        free(b->group);
        free(b->jq_filter);
        ao_strv_done(&b->name_selector);
        label_selector_done(&b->label_selector);
        for (size_t i = 0; i < b->n_field_selector; i++) {
                free(b->field_selector[i].field);
                free(b->field_selector[i].value);
        }
        free(b->field_selector);
        ao_strv_done(&b->namespace_names);
        label_selector_done(&b->namespace_labels);
        ao_strv_done(&b->include_snapshots_from);
        free(b->resynchronization_period);
}

void ao_hook_config_done(struct ao_hook_config *cfg)
{
        if (!cfg)
                return;
        for (size_t i = 0; i < cfg->n_schedules; i++) {
                struct ao_schedule_binding *b = &cfg->schedules[i];
                free(b->name);
                free(b->crontab);
                free(b->queue);
                free(b->group);
                ao_strv_done(&b->include_snapshots_from);
        }
        free(cfg->schedules);
        for (size_t i = 0; i < cfg->n_kubernetes; i++)
                kubernetes_binding_done(&cfg->kubernetes[i]);
        free(cfg->kubernetes);
        ao_strv_done(&cfg->ignored);
        *cfg = (struct ao_hook_config){0};
}

/* ---- queries -------------------------------------------------------------------------------------------- */

static const char *const binding_type_names[_AO_BINDING_TYPE_MAX] = {
    [AO_BINDING_ON_STARTUP] = "onStartup",
    [AO_BINDING_BEFORE_ALL] = "beforeAll",
    [AO_BINDING_AFTER_ALL] = "afterAll",
    [AO_BINDING_BEFORE_HELM] = "beforeHelm",
    [AO_BINDING_AFTER_HELM] = "afterHelm",
    [AO_BINDING_BEFORE_DELETE_HELM] = "beforeDeleteHelm",
    [AO_BINDING_AFTER_DELETE_HELM] = "afterDeleteHelm",
    [AO_BINDING_SCHEDULE] = "schedule",
    [AO_BINDING_KUBERNETES] = "kubernetes",
};

AO_STRING_TABLE(ao_binding_type, enum ao_binding_type, binding_type_names);

bool ao_hook_config_has(const struct ao_hook_config *cfg, enum ao_binding_type t)
{
        if (t >= 0 && t < AO_BINDING_ORDERED_MAX)
                return cfg->has_order[t];
        if (t == AO_BINDING_SCHEDULE)
                return cfg->n_schedules > 0;
        if (t == AO_BINDING_KUBERNETES)
                return cfg->n_kubernetes > 0;
        return false;
}

const struct ao_kubernetes_binding *ao_hook_config_find_kubernetes(const struct ao_hook_config *cfg,
                                                                   const char *name)
{
        if (!name)
                return NULL;
        for (size_t i = 0; i < cfg->n_kubernetes; i++)
                if (strcmp(cfg->kubernetes[i].name, name) == 0)
                        return &cfg->kubernetes[i];
        return NULL;
}
