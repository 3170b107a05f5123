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
 * What every part of the --config parser reads values with: typed members of
 * an object (unknown and repeated keys refused first), JSON paths for
 * messages, the budget that caps a configuration's size, and the messages
 * themselves. config.c (the top level) and config-kubernetes.c (kubernetes
 * entries) both build on it.
 */

/* Go's float64 carries integers exactly up to 2^53; JSON numbers here are doubles too. */
#define ORDER_MAX 9007199254740991.0 /* 2^53 - 1 */

/* ---- messages, paths ------------------------------------------------------------------------------ */

const char *hook_config_show(char buf[static AO_HOOK_CONFIG_SHOW_MAX], const char *s)
{
        return ao_quote_bytes(buf, AO_HOOK_CONFIG_SHOW_MAX, s ? s : "", s ? strlen(s) : 0);
}

int hook_config_fail(struct ao_hook_config_ctx *ctx, int code, const char *path, const char *fmt, ...)
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

const char *hook_config_path(char buf[static AO_HOOK_CONFIG_PATH_MAX], const char *parent, const char *key)
{
        size_t len = path_start(buf, parent);

        if (len > 0)
                len = path_append(buf, len, ".");
        (void) path_append(buf, len, key);
        return buf;
}

const char *hook_config_path_index(char buf[static AO_HOOK_CONFIG_PATH_MAX], const char *parent, size_t i)
{
        char index[32];

        (void) snprintf(index, sizeof(index), "[%zu]", i);
        (void) path_append(buf, path_start(buf, parent), index);
        return buf;
}

const char *hook_config_type_name(const cJSON *json)
{
        return ao_json_type_name(json, AO_JSON_WORDS_JSON);
}

/* ---- typed members ---------------------------------------------------------------------------------- */

int hook_config_members(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                        const char *const *names, size_t n, const cJSON **ret_members)
{
        char buf[AO_HOOK_CONFIG_SHOW_MAX];

        if (!cJSON_IsObject(json))
                return hook_config_fail(ctx, -EINVAL, path, "must be an object, not %s",
                                        hook_config_type_name(json));
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
                        return hook_config_fail(ctx, -EINVAL, path, "unknown key '%s' (allowed: %s)",
                                                hook_config_show(buf, key), allowed);
                }
                /* ao_yaml_load() refuses duplicate keys; a tree built elsewhere may still have them. */
                if (ret_members[i])
                        return hook_config_fail(ctx, -EINVAL, path, "key '%s' is given twice", names[i]);
                ret_members[i] = m;
        }
        return 0;
}

int hook_config_get_string(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                           bool allow_empty, const char **ret)
{
        if (!cJSON_IsString(json) || !json->valuestring)
                return hook_config_fail(ctx, -EINVAL, path, "must be a string, not %s",
                                        hook_config_type_name(json));
        if (!allow_empty && json->valuestring[0] == '\0')
                return hook_config_fail(ctx, -EINVAL, path, "must not be empty");
        *ret = json->valuestring;
        return 0;
}

int hook_config_get_bool(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json, bool *ret)
{
        if (!cJSON_IsBool(json))
                return hook_config_fail(ctx, -EINVAL, path, "must be a boolean, not %s",
                                        hook_config_type_name(json));
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
int hook_config_get_integer(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json, int64_t min,
                            int64_t *ret)
{
        char buf[32];

        if (!cJSON_IsNumber(json))
                return hook_config_fail(ctx, -EINVAL, path, "must be an integer, not %s",
                                        hook_config_type_name(json));
        double v = json->valuedouble;
        if (!isfinite(v))
                return hook_config_fail(ctx, -EINVAL, path, "must be an integer, not %s",
                                        isnan(v) ? "NaN" : "infinite");
        if (v < -ORDER_MAX || v > ORDER_MAX)
                return hook_config_fail(ctx, -EINVAL, path, "%s is out of range (-2^53, 2^53)",
                                        format_number(buf, v));
        if ((double) (int64_t) v != v)
                return hook_config_fail(ctx, -EINVAL, path, "%s is not an integer", format_number(buf, v));
        if ((int64_t) v < min)
                return hook_config_fail(ctx, -EINVAL, path, "must be at least %" PRId64 ", not %" PRId64, min,
                                        (int64_t) v);
        *ret = (int64_t) v;
        return 0;
}

int hook_config_get_array(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                          size_t min_items, size_t *ret_n)
{
        size_t n = 0;

        if (!cJSON_IsArray(json))
                return hook_config_fail(ctx, -EINVAL, path, "must be an array, not %s",
                                        hook_config_type_name(json));
        for (const cJSON *c = json->child; c; c = c->next)
                n++;
        if (n < min_items)
                return hook_config_fail(ctx, -EINVAL, path, "must not be empty");
        *ret_n = n;
        return 0;
}

int hook_config_charge(struct ao_hook_config_ctx *ctx, const char *path, size_t n)
{
        if (n > AO_HOOK_CONFIG_MAX_ITEMS - ctx->n_items)
                return hook_config_fail(ctx, -E2BIG, path,
                                        "too many list entries: more than %u in the configuration",
                                        AO_HOOK_CONFIG_MAX_ITEMS);
        ctx->n_items += n;
        return 0;
}

int hook_config_compare_strings(const void *a, const void *b)
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
        qsort(sorted, n, sizeof(*sorted), hook_config_compare_strings);
        for (size_t i = 1; i < n && !dup; i++)
                if (strcmp(sorted[i - 1], sorted[i]) == 0)
                        dup = sorted[i];
        free(sorted);
        return dup;
}

int hook_config_get_strv(struct ao_hook_config_ctx *ctx, const char *path, const cJSON *json,
                         size_t min_items, bool unique, struct ao_strv *ret)
{
        _cleanup_(ao_strv_done) struct ao_strv v = {0};
        char p[AO_HOOK_CONFIG_PATH_MAX], buf[AO_HOOK_CONFIG_SHOW_MAX];
        size_t n = 0;
        int r;

        r = hook_config_get_array(ctx, path, json, min_items, &n);
        if (r < 0)
                return r;
        r = hook_config_charge(ctx, path, n);
        if (r < 0)
                return r;
        if (n > 0)
                v.items = ao_xcalloc(n, sizeof(*v.items));
        for (const cJSON *c = json->child; c; c = c->next) {
                const char *s = NULL;
                r = hook_config_get_string(ctx, hook_config_path_index(p, path, v.n), c, true, &s);
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
                        return hook_config_fail(ctx, -EINVAL, hook_config_path_index(p, path, i),
                                                "'%s' is listed twice", hook_config_show(buf, dup));
                }
        }
        *ret = v;
        v = (struct ao_strv){0};
        return 0;
}

char *hook_config_strdup_nonempty(const char *s)
{
        return s && s[0] != '\0' ? ao_xstrdup(s) : NULL;
}
