/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a hook leaves in its run directory, read and checked after it exits.
 */
#include "outputs.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "ao/jsonpatch.h"
#include "ao/values.h"
#include "workspace.h"

/* Where a global hook may write: /global/... or a top-level /<module>Enabled flag. */
static int check_global_path(const char *path, const char *file, size_t index, struct ao_error *reterr)
{
        const char *seg = path + 1;
        size_t len = strcspn(seg, "/");
        if (len == 6 && strncmp(seg, "global", 6) == 0 && seg[len] == '/')
                return 0;
        if (seg[len] == '\0' && *seg) {
                _cleanup_free_ char *key = ao_json_pointer_unescape(seg, len);
                if (ao_values_key_classify(key, NULL, NULL) == AO_VALUES_KEY_ENABLED)
                        return 0;
        }
        return ao_error_set(reterr, -EPERM,
                            "%s: operation %zu: path '%s': a global hook may only patch /global/... and "
                            "/<module>Enabled",
                            file, index, path);
}

static int check_module_path(const char *path, const char *values_key, const char *file, size_t index,
                             struct ao_error *reterr)
{
        size_t n = strlen(values_key);
        if (path[0] == '/' && strncmp(path + 1, values_key, n) == 0 && path[1 + n] == '/')
                return 0;
        return ao_error_set(reterr, -EPERM,
                            "%s: operation %zu: path '%s': a module hook may only patch /%s/...", file, index,
                            path, values_key);
}

int ao_hook_patch_check_scope(const cJSON *ops, const char *values_key, const char *file,
                              struct ao_error *reterr)
{
        size_t index = 0;
        for (const cJSON *op = ops ? ops->child : NULL; op; op = op->next, index++) {
                static const char *const keys[] = {"path", "from"};
                for (size_t k = 0; k < AO_ARRAY_SIZE(keys); k++) {
                        const cJSON *p = cJSON_GetObjectItemCaseSensitive(op, keys[k]);
                        if (!cJSON_IsString(p))
                                continue;
                        int r = values_key
                                    ? check_module_path(p->valuestring, values_key, file, index, reterr)
                                : *p->valuestring == '/'
                                    ? check_global_path(p->valuestring, file, index, reterr)
                                    : ao_error_set(reterr, -EPERM,
                                                   "%s: operation %zu: a hook may not replace all "
                                                   "values",
                                                   file, index);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int read_patch(struct run_dir *rd, const char *name, const char *values_key, cJSON **ret,
                      struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = workspace_read(rd, name, AO_JSONPATCH_MAX_INPUT, &text, &len, reterr);
        if (r < 0)
                return r;
        cJSON *ops = NULL;
        if ((r = ao_jsonpatch_parse(text, len, name, &ops, reterr)) < 0)
                return r;
        if ((r = ao_hook_patch_check_scope(ops, values_key, name, reterr)) < 0) {
                cJSON_Delete(ops);
                return r;
        }
        if (cJSON_GetArraySize(ops) == 0) {
                cJSON_Delete(ops);
                ops = NULL;
        }
        *ret = ops;
        return 0;
}

static int read_metrics(struct run_dir *rd, struct ao_metric_ops *ret, struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = workspace_read(rd, OUTPUT_METRICS, AO_METRIC_OPS_MAX_INPUT, &text, &len, reterr);
        return r < 0 ? r : ao_metric_ops_parse(text, len, OUTPUT_METRICS, ret, reterr);
}

static bool is_blank(const char *s)
{
        return s[strspn(s, " \t\r\n")] == '\0';
}

int outputs_read_event(struct run_dir *rd, const char *values_key, struct ao_hook_outcome *o,
                       struct ao_error *reterr)
{
        int r = read_patch(rd, OUTPUT_VALUES_PATCH, values_key, &o->values_patch, reterr);
        if (r >= 0)
                r = read_patch(rd, OUTPUT_CONFIG_VALUES_PATCH, values_key, &o->config_values_patch, reterr);
        if (r >= 0)
                r = read_metrics(rd, &o->metrics, reterr);
        if (r >= 0)
                r = workspace_read(rd, OUTPUT_KUBERNETES_PATCH, AO_HOOK_OUTPUT_MAX, &o->kubernetes_patch,
                                   &o->kubernetes_patch_len, reterr);
        if (r >= 0 && is_blank(o->kubernetes_patch)) {
                free(o->kubernetes_patch);
                o->kubernetes_patch = NULL;
                o->kubernetes_patch_len = 0;
        }
        return r;
}

/* "true" or "false" with surrounding white space, as the Go operator accepts. */
static int parse_enabled(const char *text, bool *ret)
{
        const char *start = text + strspn(text, " \t\r\n");
        size_t len = strlen(start);
        while (len > 0 && strchr(" \t\r\n", start[len - 1]))
                len--;
        if (len == 4 && strncmp(start, "true", 4) == 0)
                *ret = true;
        else if (len == 5 && strncmp(start, "false", 5) == 0)
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

int outputs_read_enabled(struct run_dir *rd, struct ao_hook_outcome *o, struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = workspace_read(rd, OUTPUT_ENABLED_RESULT, 4096, &text, &len, reterr);
        if (r < 0)
                return r;
        bool enabled;
        if (parse_enabled(text, &enabled) < 0)
                return ao_error_set(reterr, -EINVAL, "%s: expected 'true' or 'false', got '%.64s'",
                                    OUTPUT_ENABLED_RESULT, text);
        o->enabled = enabled;
        if (enabled)
                return 0;
        char *reason = NULL;
        if (workspace_read(rd, OUTPUT_ENABLED_REASON, 4096, &reason, &len, NULL) < 0 || is_blank(reason)) {
                free(reason);
                return 0;
        }
        /* One line in logs: the reason without the newline `echo` leaves. */
        size_t n = strlen(reason);
        while (n > 0 && strchr(" \t\r\n", reason[n - 1]))
                reason[--n] = '\0';
        o->enabled_reason = reason;
        return 0;
}

int outputs_read_config(struct run_dir *rd, struct ao_hook_outcome *o, struct ao_error *reterr)
{
        return workspace_read(rd, OUTPUT_CONFIG, AO_HOOK_OUTPUT_MAX, &o->config_text, &o->config_len, reterr);
}

void outputs_done(struct ao_hook_outcome *o)
{
        free(o->config_text);
        cJSON_Delete(o->values_patch);
        cJSON_Delete(o->config_values_patch);
        ao_metric_ops_done(&o->metrics);
        free(o->kubernetes_patch);
        free(o->enabled_reason);
        *o = (struct ao_hook_outcome){.enabled = -1};
}
