/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /global/discovery/apiVersions: the sorted "group/version/Kind" of every version of every CRD
 * that the modules' crds/ put in the cluster since the start, for templates that ask whether a
 * kind is served (Deckhouse-style modules read .Values.global.discovery.apiVersions). The Go
 * operator injects it with Deckhouse's module loader: a values patch of the global section, set
 * once the CRD step of a converge is over. So it is here, and so hooks, helm and the debug
 * routes see it, and a hook's patch of the same path replaces it until the next CRD step.
 *
 * The list only grows, as the Go operator's does: CRDs stay in the cluster when their module is
 * disabled, and so do their kinds.
 *
 * The Go operator leaves the patch out with its file-system loader because a stored patch that
 * the global values schema refuses (a schema listing its keys without `discovery`) makes every
 * later global values patch fail. Here the patch is checked like a hook's before it is stored; a
 * refused one is not stored, and a warning names the schema.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/values-store.h"
#include "internal.h"

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The string items of @a and @b, sorted (byte order, as Go's sort.Strings), each once. */
static cJSON *sorted_union(const cJSON *a, const cJSON *b)
{
        size_t n = (size_t) cJSON_GetArraySize(a) + (size_t) cJSON_GetArraySize(b), k = 0;
        const char **all = ao_xcalloc(n + 1, sizeof(*all));
        const cJSON *lists[] = {a, b}, *item;
        for (size_t l = 0; l < AO_ARRAY_SIZE(lists); l++)
                cJSON_ArrayForEach(item, lists[l])
                {
                        if (cJSON_IsString(item))
                                all[k++] = item->valuestring;
                }
        qsort(all, k, sizeof(*all), compare_strings);
        cJSON *sorted = cJSON_CreateArray();
        for (size_t i = 0; i < k; i++)
                if (i == 0 || strcmp(all[i], all[i - 1]) != 0)
                        cJSON_AddItemToArray(sorted, cJSON_CreateString(all[i]));
        free(all);
        return sorted;
}

void api_versions_add(struct operator_state *op, cJSON *kinds)
{
        cJSON *sorted = sorted_union(op->crd_api_versions, kinds);
        cJSON_Delete(op->crd_api_versions);
        cJSON_Delete(kinds);
        op->crd_api_versions = sorted;
}

static void add_operation(cJSON *ops, const char *path, cJSON *value)
{
        cJSON *op = cJSON_CreateObject();
        cJSON_AddStringToObject(op, "op", "add");
        cJSON_AddStringToObject(op, "path", path);
        cJSON_AddItemToObject(op, "value", value);
        cJSON_AddItemToArray(ops, op);
}

/*
 * The patch: the Go operator's one operation, after one that makes the `discovery` object when
 * the global values have none (Deckhouse's global schema gives it a default; a global section
 * of a drop-in setup usually has no such key, and an add below a missing object fails).
 */
static cJSON *discovery_patch(const cJSON *global, const cJSON *api_versions)
{
        cJSON *ops = cJSON_CreateArray();
        if (!cJSON_GetObjectItemCaseSensitive(global, "discovery"))
                add_operation(ops, "/global/discovery", cJSON_CreateObject());
        add_operation(ops, "/global/discovery/apiVersions", cJSON_Duplicate(api_versions, true));
        return ops;
}

/* The store's documented error for a patch the values schema refuses. */
#define SCHEMA_REFUSAL "values patch makes the values invalid"

static void warn_refused(const struct operator_state *op, const char *why)
{
        if (strncmp(why, SCHEMA_REFUSAL, strlen(SCHEMA_REFUSAL)) != 0) {
                ao_log(AO_LOG_WARN, "global values: /global/discovery/apiVersions is not set: %s", why);
                return;
        }
        _cleanup_free_ char *file = ao_xasprintf("%s/openapi/values.yaml", op->settings->global_hooks_dir);
        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"path", file}),
                    "global values: /global/discovery/apiVersions is not set: the global values schema '%s' "
                    "refuses it: %s (declare discovery.apiVersions, a list of strings, to get it)",
                    file, why);
}

void api_versions_publish(struct operator_state *op)
{
        int n = cJSON_GetArraySize(op->crd_api_versions);
        if (n == 0)
                return;
        struct ao_error err = {0};
        cJSON *global = NULL;
        int r = ao_values_store_values(op->values, op->global.values, &global, &err);
        if (r >= 0) {
                cJSON *ops = discovery_patch(global, op->crd_api_versions);
                r = ao_values_store_apply_patch(op->values, op->global.values, ops, &err);
                cJSON_Delete(ops);
        }
        cJSON_Delete(global);
        if (r < 0) {
                warn_refused(op, err.msg);
                return;
        }
        ao_log(AO_LOG_INFO,
               "global values: /global/discovery/apiVersions lists the %d kinds of the modules' CRDs", n);
}

void api_versions_done(struct operator_state *op)
{
        cJSON_Delete(op->crd_api_versions);
        op->crd_api_versions = NULL;
}
