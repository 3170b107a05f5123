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
 * The top level, the ordered bindings, settings and schedule entries; the
 * helpers every part of the parser shares (typed members, paths, messages).
 * Kubernetes entries are in config-kubernetes.c.
 *
 * Every object is read through ao_hook_config_members(), which refuses
 * unknown and repeated keys before any value is looked at, so a typo is
 * reported as a typo rather than as whatever its absence causes. Values are
 * then checked in the order of the key tables, which makes the first error
 * of a configuration with several independent of the document's key order.
 *
 * The result is built in place in a zeroed struct ao_hook_config whose
 * arrays are sized up front and counted as filled, so that
 * ao_hook_config_done() can release whatever a failure leaves half built.
 */

/* Go's float64 carries integers exactly up to 2^53; JSON numbers here are doubles too. */
#define ORDER_MAX 9007199254740991.0 /* 2^53 - 1 */

/* ---- messages, paths ------------------------------------------------------------------------------ */

const char *ao_hook_config_show(char buf[static AO_HOOK_CONFIG_SHOW_MAX], const char *s)
{
        return ao_quote_bytes(buf, AO_HOOK_CONFIG_SHOW_MAX, s ? s : "", s ? strlen(s) : 0);
}

int ao_hook_config_fail(struct ao_hook_config_ctx *ctx, int code, const char *path, const char *fmt, ...)
{
        char reason[AO_ERROR_MSG_MAX], raw[AO_ERROR_MSG_MAX + 256];
        va_list ap;

        if (code >= 0)
                code = -EINVAL;
        if (!ctx->reterr)
                return code;
        va_start(ap, fmt);
        (void) vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        if (path && path[0] != '\0')
                (void) snprintf(raw, sizeof(raw), "%s: %s: %s", ctx->hook, path, reason);
        else
                (void) snprintf(raw, sizeof(raw), "%s: %s", ctx->hook, reason);
        /* Hook names and libraries' messages (ao_cron, ao_yaml) may carry raw user bytes too. */
        (void) ao_quote_bytes(ctx->reterr->msg, sizeof(ctx->reterr->msg), raw, strlen(raw));
        ctx->reterr->code = code;
        return code;
}

/* Append @s to the path in @buf (@len bytes so far), cut at AO_HOOK_CONFIG_PATH_MAX; returns the new length. */
static size_t path_append(char buf[static AO_HOOK_CONFIG_PATH_MAX], size_t len, const char *s)
{
        size_t n = strlen(s);

        if (n > AO_HOOK_CONFIG_PATH_MAX - 1 - len)
                n = AO_HOOK_CONFIG_PATH_MAX - 1 - len;
        memmove(buf + len, s, n);
        buf[len + n] = '\0';
        return len + n;
}

/* The parent path copied into @buf, as path_append() starts from it; @buf may be @parent. */
static size_t path_start(char buf[static AO_HOOK_CONFIG_PATH_MAX], const char *parent)
{
        if (parent == buf)
                return strlen(buf);
        buf[0] = '\0';
        return path_append(buf, 0, parent ? parent : "");
}

const char *ao_hook_config_path(char buf[static AO_HOOK_CONFIG_PATH_MAX], const char *parent, const char *key)
{
        size_t len = path_start(buf, parent);

        if (len > 0)
                len = path_append(buf, len, ".");
        (void) path_append(buf, len, key);
        return buf;
}

const char *ao_hook_config_path_index(char buf[static AO_HOOK_CONFIG_PATH_MAX], const char *parent, size_t i)
{
        char index[32];

        (void) snprintf(index, sizeof(index), "[%zu]", i);
        (void) path_append(buf, path_start(buf, parent), index);
        return buf;
}

const char *ao_hook_config_type_name(const cJSON *json)
{
        return ao_json_type_name(json, AO_JSON_WORDS_JSON);
}

/* ---- typed members ---------------------------------------------------------------------------------- */

int ao_hook_config_members(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                           const char *const *names, size_t n, const cJSON **ret_members)
{
        char buf[AO_HOOK_CONFIG_SHOW_MAX];

        if (!cJSON_IsObject(json))
                return ao_hook_config_fail(ctx, -EINVAL, path, "must be an object, not %s",
                                           ao_hook_config_type_name(json));
        for (size_t i = 0; i < n; i++)
                ret_members[i] = NULL;
        for (const cJSON *m = json->child; m; m = m->next) {
                const char *key = m->string ? m->string : "";
                size_t i = 0;
                while (i < n && strcmp(names[i], key) != 0)
                        i++;
                if (i == n) {
                        char allowed[AO_ERROR_MSG_MAX];
                        size_t len = 0;
                        allowed[0] = '\0';
                        for (size_t j = 0; j < n && len < sizeof(allowed); j++)
                                len += (size_t) snprintf(allowed + len, sizeof(allowed) - len, "%s%s",
                                                         j > 0 ? ", " : "", names[j]);
                        return ao_hook_config_fail(ctx, -EINVAL, path, "unknown key '%s' (allowed: %s)",
                                                   ao_hook_config_show(buf, key), allowed);
                }
                /* ao_yaml_load() refuses duplicate keys; a tree built elsewhere may still have them. */
                if (ret_members[i])
                        return ao_hook_config_fail(ctx, -EINVAL, path, "key '%s' is given twice", names[i]);
                ret_members[i] = m;
        }
        return 0;
}

int ao_hook_config_get_string(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                              bool allow_empty, const char **ret)
{
        if (!cJSON_IsString(json) || !json->valuestring)
                return ao_hook_config_fail(ctx, -EINVAL, path, "must be a string, not %s",
                                           ao_hook_config_type_name(json));
        if (!allow_empty && json->valuestring[0] == '\0')
                return ao_hook_config_fail(ctx, -EINVAL, path, "must not be empty");
        *ret = json->valuestring;
        return 0;
}

int ao_hook_config_get_bool(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json, bool *ret)
{
        if (!cJSON_IsBool(json))
                return ao_hook_config_fail(ctx, -EINVAL, path, "must be a boolean, not %s",
                                           ao_hook_config_type_name(json));
        *ret = cJSON_IsTrue(json);
        return 0;
}

/* The shortest of %.15g..%.17g that reads back as @v, for numbers in messages. */
static const char *format_number(char buf[static 32], double v)
{
        for (int precision = 15; precision <= 17; precision++) {
                (void) snprintf(buf, 32, "%.*g", precision, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        return buf;
}

/* An integral JSON number in [max(min, -ORDER_MAX), ORDER_MAX]. */
static int get_integer(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json, int64_t min,
                       int64_t *ret)
{
        char buf[32];

        if (!cJSON_IsNumber(json))
                return ao_hook_config_fail(ctx, -EINVAL, path, "must be an integer, not %s",
                                           ao_hook_config_type_name(json));
        double v = json->valuedouble;
        if (!isfinite(v))
                return ao_hook_config_fail(ctx, -EINVAL, path, "must be an integer, not %s",
                                           isnan(v) ? "NaN" : "infinite");
        if (v < -ORDER_MAX || v > ORDER_MAX)
                return ao_hook_config_fail(ctx, -EINVAL, path, "%s is out of range (-2^53, 2^53)",
                                           format_number(buf, v));
        if ((double) (int64_t) v != v)
                return ao_hook_config_fail(ctx, -EINVAL, path, "%s is not an integer", format_number(buf, v));
        if ((int64_t) v < min)
                return ao_hook_config_fail(ctx, -EINVAL, path, "must be at least %" PRId64 ", not %" PRId64,
                                           min, (int64_t) v);
        *ret = (int64_t) v;
        return 0;
}

int ao_hook_config_get_array(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                             size_t min_items, size_t *ret_n)
{
        size_t n = 0;

        if (!cJSON_IsArray(json))
                return ao_hook_config_fail(ctx, -EINVAL, path, "must be an array, not %s",
                                           ao_hook_config_type_name(json));
        for (const cJSON *c = json->child; c; c = c->next)
                n++;
        if (n < min_items)
                return ao_hook_config_fail(ctx, -EINVAL, path, "must not be empty");
        *ret_n = n;
        return 0;
}

int ao_hook_config_charge(struct ao_hook_config_ctx *ctx, const char *path, size_t n)
{
        if (n > AO_HOOK_CONFIG_MAX_ITEMS - ctx->n_items)
                return ao_hook_config_fail(ctx, -E2BIG, path,
                                           "too many list entries: more than %u in the configuration",
                                           AO_HOOK_CONFIG_MAX_ITEMS);
        ctx->n_items += n;
        return 0;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The first string of @v (@n of them) that occurs twice, or NULL. */
static const char *find_duplicate(char *const *items, size_t n)
{
        const char *dup = NULL;

        if (n < 2)
                return NULL;
        const char **sorted = ao_xreallocarray(NULL, n, sizeof(*sorted));
        memcpy(sorted, items, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), compare_strings);
        for (size_t i = 1; i < n && !dup; i++)
                if (strcmp(sorted[i - 1], sorted[i]) == 0)
                        dup = sorted[i];
        free(sorted);
        return dup;
}

int ao_hook_config_get_strv(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                            size_t min_items, bool unique, struct ao_strv *ret)
{
        _cleanup_(ao_strv_done) struct ao_strv v = {0};
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        size_t n = 0;
        int r;

        r = ao_hook_config_get_array(ctx, path, json, min_items, &n);
        if (r < 0)
                return r;
        r = ao_hook_config_charge(ctx, path, n);
        if (r < 0)
                return r;
        if (n > 0)
                v.items = ao_xcalloc(n, sizeof(*v.items));
        for (const cJSON *c = json->child; c; c = c->next) {
                const char *s = NULL;
                r = ao_hook_config_get_string(ctx, ao_hook_config_path_index(p, path, v.n), c, true, &s);
                if (r < 0)
                        return r;
                v.items[v.n++] = ao_xstrdup(s);
        }
        if (unique) {
                const char *dup = find_duplicate(v.items, v.n);
                if (dup) {
                        /* Name the second occurrence. */
                        size_t i = 0, seen = 0;
                        for (; i < v.n; i++)
                                if (strcmp(v.items[i], dup) == 0 && ++seen == 2)
                                        break;
                        return ao_hook_config_fail(ctx, -EINVAL, ao_hook_config_path_index(p, path, i),
                                                   "'%s' is listed twice", ao_hook_config_show(buf, dup));
                }
        }
        *ret = v;
        v = (struct ao_strv){0};
        return 0;
}

char *ao_hook_config_strdup_nonempty(const char *s)
{
        return s && s[0] != '\0' ? ao_xstrdup(s) : NULL;
}

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
        r = ao_hook_config_get_string(ctx, "configVersion", v, true, &s);
        if (r < 0)
                return r;
        if (strcmp(s, "v0") == 0)
                *ret = 0;
        else if (strcmp(s, "v1") == 0)
                *ret = 1;
        else
                return ao_hook_config_fail(ctx, -EINVAL, "configVersion", "'%s' is not one of v0, v1",
                                           ao_hook_config_show(buf, s));
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
                        return ao_hook_config_fail(ctx, -EINVAL, top_keys[t].name,
                                                   "only %s hooks may use this binding",
                                                   ctx->kind == AO_HOOK_GLOBAL ? "module" : "global");
                if (ctx->version == 0 && top_keys[t].versions == V1)
                        return ao_hook_config_fail(ctx, -EINVAL, top_keys[t].name,
                                                   "needs configVersion: v1 (this is a v0 configuration)");
        }
        for (size_t t = 0; t < _TOP_MAX; t++)
                if ((top_keys[t].versions & version_bit) && (top_keys[t].kinds & kind_bit)) {
                        names[n] = top_keys[t].name;
                        map[n++] = (enum top_key) t;
                }
        r = ao_hook_config_members(ctx, NULL, doc, names, n, found);
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

        r = ao_hook_config_members(ctx, "settings", json, names, AO_ARRAY_SIZE(names), m);
        if (r < 0)
                return r;
        if (m[0] && m[1])
                return ao_hook_config_fail(ctx, -EINVAL, "settings",
                                           "executionMinPeriod and executionMinInterval are two names of one "
                                           "setting: give only one");
        for (size_t i = 0; i < 2; i++) {
                const char *s = NULL;
                if (!m[i])
                        continue;
                ao_hook_config_path(p, "settings", names[i]);
                r = ao_hook_config_get_string(ctx, p, m[i], true, &s);
                if (r < 0)
                        return r;
                r = ao_parse_duration_usec(s, &cfg->execution_min_period_usec);
                if (r == -ERANGE)
                        return ao_hook_config_fail(ctx, r, p, "'%s' is out of range",
                                                   ao_hook_config_show(buf, s));
                if (r < 0)
                        return ao_hook_config_fail(ctx, r, p,
                                                   "'%s' is not a duration (e.g. 500ms, 1m30s, 2h)",
                                                   ao_hook_config_show(buf, s));
        }
        if (m[2]) {
                int64_t burst = 0;
                ao_hook_config_path(p, "settings", names[2]);
                r = get_integer(ctx, p, m[2], 1, &burst);
                if (r < 0)
                        return r;
                /* The Go operator parses it as a 32-bit int. */
                if (burst > INT32_MAX)
                        return ao_hook_config_fail(ctx, -EINVAL, p, "must be at most %d", INT32_MAX);
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
                r = get_integer(ctx, top_keys[t].name, top[t], top_keys[t].unsigned_order ? 0 : INT64_MIN,
                                &v);
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
        qsort(names, cfg->n_kubernetes, sizeof(*names), compare_strings);
        return names;
}

static int check_snapshots(struct ao_hook_config_ctx *ctx, const char *path, const struct ao_strv *include,
                           const char *const *names, size_t n_names)
{
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];

        for (size_t i = 0; i < include->n; i++)
                if (n_names == 0 ||
                    !bsearch(&include->items[i], names, n_names, sizeof(*names), compare_strings))
                        return ao_hook_config_fail(
                            ctx, -EINVAL, ao_hook_config_path_index(p, path, i),
                            "'%s' is not the name of a kubernetes binding of this hook",
                            ao_hook_config_show(buf, include->items[i]));
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

        ao_hook_config_path_index(path, "schedule", i);
        r = ao_hook_config_members(ctx, path, json, schedule_keys, ctx->version == 1 ? _S_MAX : _S_MAX_V0, m);
        if (r < 0)
                return r;
        if (ctx->version == 0)
                m[S_QUEUE] = m[S_GROUP] = m[S_INCLUDE_SNAPSHOTS_FROM] = NULL;
        if (!m[S_CRONTAB])
                return ao_hook_config_fail(ctx, -EINVAL, path, "missing crontab");

        if (m[S_NAME]) {
                r = ao_hook_config_get_string(ctx, ao_hook_config_path(p, path, "name"), m[S_NAME], true, &s);
                if (r < 0)
                        return r;
                b->name = ao_hook_config_strdup_nonempty(s);
        }
        if (!b->name)
                b->name = ao_xstrdup("schedule");

        ao_hook_config_path(p, path, "crontab");
        r = ao_hook_config_get_string(ctx, p, m[S_CRONTAB], true, &s);
        if (r < 0)
                return r;
        _cleanup_(cron_freep) struct ao_cron *cron = NULL;
        struct ao_error err = {0};
        r = ao_cron_parse(s, &cron, &err);
        if (r < 0)
                return ao_hook_config_fail(ctx, r, p, "%s", err.msg);
        b->crontab = ao_xstrdup(s);

        if (m[S_ALLOW_FAILURE]) {
                r = ao_hook_config_get_bool(ctx, ao_hook_config_path(p, path, "allowFailure"),
                                            m[S_ALLOW_FAILURE], &b->allow_failure);
                if (r < 0)
                        return r;
        }
        if (m[S_QUEUE]) {
                r = ao_hook_config_get_string(ctx, ao_hook_config_path(p, path, "queue"), m[S_QUEUE], false,
                                              &s);
                if (r < 0)
                        return r;
                b->queue = ao_xstrdup(s);
        } else {
                b->queue = ao_xstrdup("main");
        }
        if (m[S_GROUP]) {
                r = ao_hook_config_get_string(ctx, ao_hook_config_path(p, path, "group"), m[S_GROUP], true,
                                              &s);
                if (r < 0)
                        return r;
                b->group = ao_hook_config_strdup_nonempty(s);
        }
        if (m[S_INCLUDE_SNAPSHOTS_FROM]) {
                ao_hook_config_path(p, path, "includeSnapshotsFrom");
                r = ao_hook_config_get_strv(ctx, p, m[S_INCLUDE_SNAPSHOTS_FROM], 1, true,
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

        r = ao_hook_config_get_array(ctx, key, json, 1, &n);
        if (r < 0)
                return r;
        for (const cJSON *c = json->child; c; c = c->next, i++) {
                const char *s = NULL;
                ao_hook_config_path_index(p, key, i);
                if (!cJSON_IsObject(c))
                        return ao_hook_config_fail(ctx, -EINVAL, p, "must be an object, not %s",
                                                   ao_hook_config_type_name(c));
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
                if (!name)
                        return ao_hook_config_fail(ctx, -EINVAL, p, "missing name");
                r = ao_hook_config_get_string(ctx, ao_hook_config_path(q, p, "name"), name, true, &s);
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
                return ao_hook_config_fail(ctx, -EINVAL, NULL, "the configuration must be an object, not %s",
                                           ao_hook_config_type_name(doc));
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
                return ao_hook_config_fail(ctx, -EINVAL, NULL,
                                           "no bindings: the configuration has no key "
                                           "besides configVersion");

        /* Sizes first: nothing is allocated for a configuration over the limit. */
        kube_key = ctx->version == 1 ? TOP_KUBERNETES : TOP_ON_KUBERNETES_EVENT;
        if (top[TOP_SCHEDULE]) {
                r = ao_hook_config_get_array(ctx, "schedule", top[TOP_SCHEDULE], ctx->version == 1,
                                             &n_schedules);
                if (r < 0)
                        return r;
        }
        if (top[kube_key]) {
                r = ao_hook_config_get_array(ctx, top_keys[kube_key].name, top[kube_key], ctx->version == 1,
                                             &n_kubernetes);
                if (r < 0)
                        return r;
        }
        if (n_schedules + n_kubernetes > AO_HOOK_CONFIG_MAX_BINDINGS)
                return ao_hook_config_fail(ctx, -E2BIG, NULL,
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
                        r = ctx->version == 1 ? ao_hook_config_parse_kubernetes(ctx, cfg, i, c)
                                              : ao_hook_config_parse_on_kubernetes_event(ctx, cfg, i, c);
                        if (r < 0)
                                return r;
                }
        }

        /* includeSnapshotsFrom may name any kubernetes binding, later ones and the binding itself included. */
        _cleanup_free_ const char **kube_names = sorted_kubernetes_names(cfg);
        for (size_t i = 0; i < cfg->n_kubernetes; i++) {
                char path[AO_HOOK_CONFIG_PATH_MAX], p[AO_HOOK_CONFIG_PATH_MAX];
                ao_hook_config_path(p, ao_hook_config_path_index(path, "kubernetes", i),
                                    "includeSnapshotsFrom");
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
                return ao_hook_config_fail(&ctx, -EINVAL, NULL, "invalid hook kind %d", (int) kind);
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
                return ao_hook_config_fail(&ctx, -EFBIG, NULL, "the configuration is larger than %u bytes",
                                           AO_HOOK_CONFIG_MAX_INPUT);
        r = ao_yaml_load(text ? text : "", text ? len : 0, "config", &doc, &err);
        if (r < 0)
                return ao_hook_config_fail(&ctx, r, NULL, "%s", err.msg);
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
