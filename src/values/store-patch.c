/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory patches in the values store. Checking and applying share one
 * step, planning: work out on copies what the patch would make of the
 * section's stored operations (and of the dynamic enabled flags, for the
 * global section). A check throws the plan away, an apply swaps it in, so
 * an apply that fails, or any check, leaves the store as it was.
 */
#include "ao/values-store.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/jsonpatch.h"
#include "ao/schema.h"
#include "store-internal.h"

/* What a patch would change. */
struct patch_plan {
        cJSON *patches; /* owned: the section's stored operations with the patch's added */
        cJSON *flags;   /* owned: the new dynamic enabled flags; NULL for a module's section */
};

static void plan_done(struct patch_plan *plan)
{
        cJSON_Delete(plan->patches);
        cJSON_Delete(plan->flags);
}

static cJSON *copy_json(const cJSON *json)
{
        cJSON *copy = cJSON_Duplicate(json, true);
        if (!copy)
                abort(); /* as ao_xmalloc */
        return copy;
}

/* A string member of an operation, "" when absent: operations come parsed, but never crash on one. */
static const char *op_member(const cJSON *op, const char *name)
{
        const cJSON *member = cJSON_GetObjectItemCaseSensitive(op, name);
        return cJSON_IsString(member) ? member->valuestring : "";
}

/* A global hook's "/<key>Enabled" operation, applied to @flags. */
static int set_flag(cJSON *flags, const cJSON *op, const char *path, struct ao_error *reterr)
{
        const char *kind = op_member(op, "op");
        const char *key = *path ? path + 1 : path;
        if (strcmp(kind, "remove") == 0) {
                cJSON_DeleteItemFromObjectCaseSensitive(flags, key);
                return 0;
        }
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(op, "value");
        if (!cJSON_IsBool(value) || (strcmp(kind, "add") != 0 && strcmp(kind, "replace") != 0))
                return ao_error_set(reterr, -EINVAL, "values patch: '%s' takes add or remove of true/false",
                                    path);
        cJSON_DeleteItemFromObjectCaseSensitive(flags, key);
        cJSON_AddItemToObject(flags, key, copy_json(value));
        return 0;
}

/*
 * A global patch's top-level operations outside /global are enabled flags (scope checking allowed
 * nothing else there): they go to @flags, the rest, in order, to @ret_rest.
 */
static int split_enabled_ops(cJSON *flags, const cJSON *ops, cJSON **ret_rest, struct ao_error *reterr)
{
        _cleanup_json_ cJSON *rest = cJSON_CreateArray();
        if (!rest)
                abort();
        for (const cJSON *op = ops->child; op; op = op->next) {
                const char *path = op_member(op, "path");
                int r = 0;
                if (strncmp(path, "/global/", 8) == 0 || strcmp(path, "/global") == 0)
                        cJSON_AddItemToArray(rest, copy_json(op));
                else
                        r = set_flag(flags, op, path, reterr);
                if (r < 0)
                        return r;
        }
        *ret_rest = TAKE_PTR(rest);
        return 0;
}

static bool path_within(const char *path, const char *prefix)
{
        size_t n = strlen(prefix);
        return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * Keep the stored list short: an add, replace or remove of P makes every earlier operation on P or
 * below it pointless. Appends ("/-") add rather than set, so they drop nothing. Order is kept (the
 * Go operator sorts by path, which reorders /a/10 before /a/2).
 */
static void store_ops(cJSON *stored, const cJSON *ops)
{
        for (const cJSON *op = ops->child; op; op = op->next) {
                const char *kind = op_member(op, "op");
                const char *path = op_member(op, "path");
                bool overrides = !strcmp(kind, "add") || !strcmp(kind, "replace") || !strcmp(kind, "remove");
                size_t len = strlen(path);
                bool appends = len >= 2 && path[len - 1] == '-' && path[len - 2] == '/';
                for (cJSON *old = stored->child; overrides && !appends && old;) {
                        cJSON *next = old->next;
                        if (path_within(op_member(old, "path"), path))
                                cJSON_Delete(cJSON_DetachItemViaPointer(stored, old));
                        old = next;
                }
                cJSON_AddItemToArray(stored, copy_json(op));
        }
}

/* Apply @ops strictly to {key: @values (taken)} and validate the result: what a stored patch must survive. */
static int try_patch(const struct ao_values_section *section, cJSON *values, const cJSON *ops,
                     struct ao_error *reterr)
{
        _cleanup_json_ cJSON *doc = cJSON_CreateObject();
        if (!doc)
                abort();
        cJSON_AddItemToObject(doc, section->key, values);
        int r = ao_jsonpatch_apply(doc, ops, 0, reterr);
        if (r < 0) {
                (void) ao_error_prefix(reterr, "values patch");
                return r;
        }
        char *errors = NULL;
        const cJSON *patched = cJSON_GetObjectItemCaseSensitive(doc, section->key);
        if (section->schema &&
            ao_schema_validate(section->schema, AO_SCHEMA_VALUES, section->key, patched, &errors) < 0)
                return values_schema_error(reterr, "values patch makes the values invalid", errors);
        return 0;
}

/* Work out what @ops would change in @section, on copies; @ret is written only on success. */
static int plan_patch(const struct ao_values_store *store, const struct ao_values_section *section,
                      const cJSON *ops, struct patch_plan *ret, struct ao_error *reterr)
{
        _cleanup_json_ cJSON *flags = NULL, *rest = NULL, *values = NULL;
        int r;
        if (values_store_is_global(store, section)) {
                flags = copy_json(store->dynamic_enabled);
                if ((r = split_enabled_ops(flags, ops, &rest, reterr)) < 0)
                        return r;
                ops = rest;
        }
        if ((r = ao_values_store_values(store, section, &values, reterr)) < 0)
                return r;
        if ((r = try_patch(section, TAKE_PTR(values), ops, reterr)) < 0)
                return r;
        cJSON *patches = copy_json(section->patches);
        store_ops(patches, ops);
        *ret = (struct patch_plan){.patches = patches, .flags = TAKE_PTR(flags)};
        return 0;
}

int ao_values_store_check_patch(const struct ao_values_store *store, const struct ao_values_section *section,
                                const cJSON *ops, struct ao_error *reterr)
{
        struct patch_plan plan;
        int r = plan_patch(store, section, ops, &plan, reterr);
        if (r >= 0)
                plan_done(&plan);
        return r;
}

int ao_values_store_apply_patch(struct ao_values_store *store, struct ao_values_section *section,
                                const cJSON *ops, struct ao_error *reterr)
{
        struct patch_plan plan;
        int r = plan_patch(store, section, ops, &plan, reterr);
        if (r < 0)
                return r;
        cJSON_Delete(section->patches);
        section->patches = plan.patches;
        if (plan.flags) {
                cJSON_Delete(store->dynamic_enabled);
                store->dynamic_enabled = plan.flags;
        }
        return 0;
}

const cJSON *ao_values_store_patches(const struct ao_values_store *store,
                                     const struct ao_values_section *section)
{
        (void) store;
        return section->patches;
}

void ao_values_store_reset_patches(struct ao_values_store *store, struct ao_values_section *section)
{
        (void) store;
        cJSON_Delete(section->patches);
        section->patches = cJSON_CreateArray();
        if (!section->patches)
                abort();
}
