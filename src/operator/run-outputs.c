/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a hook run returned, all or nothing. Every output is read and checked before anything is
 * applied: the values patch against the values schema, the config patch against the config
 * schema, the object patches parsed and their kinds resolved. Then they are applied in a fixed
 * order: object patches (the only ones that can fail far away: hook-call.c sends them first),
 * the config patch persisted, the values patch, the config patch in memory, the metric
 * operations. A run that fails anywhere changes
 * nothing here, so its retry applies its patches exactly once.
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/config-file.h"
#include "ao/config-map.h"
#include "ao/hook-run.h"
#include "ao/log.h"
#include "ao/metric-ops.h"
#include "ao/object-patch.h"
#include "ao/values-store.h"
#include "internal.h"

void run_outputs_done(struct checked_outputs *c)
{
        cJSON_Delete(c->values_patch);
        cJSON_Delete(c->config_patch);
        ao_metric_ops_done(&c->metrics);
        if (c->object_patches) {
                ao_object_patch_ops_done(c->object_patches);
                free(c->object_patches);
        }
        *c = (struct checked_outputs){0};
}

static int check_object_patches(struct operator_state *op, const struct ao_hook_outcome *o,
                                struct checked_outputs *c, struct ao_error *reterr)
{
        if (!o->kubernetes_patch)
                return 0;
        if (!op->kube) {
                c->patches_need_cluster = true;
                return 0;
        }
        struct ao_object_patch_ops *ops = ao_xcalloc(1, sizeof(*ops));
        int r = ao_object_patch_parse(o->kubernetes_patch, o->kubernetes_patch_len, ops, reterr);
        if (r < 0) {
                free(ops);
                return r;
        }
        c->object_patches = ops;
        return cluster_resolve_object_patches(op, ops, reterr);
}

int run_outputs_check(struct operator_state *op, struct hook_owner *owner, const struct ao_hook *hook,
                      struct ao_hook_outcome *o, struct checked_outputs *ret, struct ao_error *reterr)
{
        (void) hook;
        *ret = (struct checked_outputs){.values_patch = TAKE_PTR(o->values_patch),
                                        .config_patch = TAKE_PTR(o->config_values_patch),
                                        .metrics = o->metrics};
        o->metrics = (struct ao_metric_ops){0};
        int r = 0;
        if (ret->values_patch)
                r = ao_values_store_check_patch(op->values, owner->values, ret->values_patch, reterr);
        if (r >= 0 && ret->config_patch) {
                cJSON *section = NULL;
                r = ao_values_store_check_config_patch(op->values, owner->values, ret->config_patch, &section,
                                                       reterr);
                cJSON_Delete(section);
        }
        if (r >= 0)
                r = check_object_patches(op, o, ret, reterr);
        return r;
}

/*
 * Persist a config patch's result in the config file or the ConfigMap. The ConfigMap gets the
 * patch's operations rather than the section they made, so that an edit of the section stored
 * meanwhile by someone else is patched, not overwritten (ao_config_map_patch()).
 */
static int persist_config_section(struct operator_state *op, const char *key, const cJSON *ops,
                                  const cJSON *section, struct ao_error *reterr)
{
        if (op->config_file)
                return ao_config_file_set(op->config_file, key, section, reterr);
        if (op->config_map)
                return ao_config_map_patch(op->config_map, key, ops, reterr);
        return 0;
}

/*
 * The patches, in the order that keeps a failure harmless: the config section is computed and
 * persisted first (the only step that can fail on its own: a file write, a ConfigMap write that
 * cannot be queued), then the values patch is stored, then the config section replaces the old
 * one in memory. Both patches were checked against the config as it was before the run, so the
 * values patch lands before the new section does.
 */
static int apply_patches(struct operator_state *op, struct hook_owner *owner, const struct checked_outputs *c,
                         struct ao_error *reterr)
{
        cJSON *section = NULL;
        int r = 0;
        if (c->config_patch) {
                r = ao_values_store_check_config_patch(op->values, owner->values, c->config_patch, &section,
                                                       reterr);
                if (r >= 0)
                        r = persist_config_section(op, ao_values_section_key(owner->values), c->config_patch,
                                                   section, reterr);
        }
        if (r >= 0 && c->values_patch)
                r = ao_values_store_apply_patch(op->values, owner->values, c->values_patch, reterr);
        if (r >= 0 && section)
                ao_values_store_set_config_section_take(op->values, owner->values, TAKE_PTR(section));
        cJSON_Delete(section);
        return r;
}

/* Checksums of the global values and of the run's module's values; NULL for what does not apply. */
static void values_checksums(struct operator_state *op, const struct hook_owner *owner, char **ret_global,
                             char **ret_module)
{
        *ret_global = ao_values_store_checksum(op->values, op->global.values);
        *ret_module = owner->module ? ao_values_store_checksum(op->values, owner->values) : NULL;
}

static bool differ(const char *a, const char *b)
{
        return a && b && strcmp(a, b) != 0;
}

int run_outputs_apply_local(struct operator_state *op, struct hook_owner *owner, const struct ao_hook *hook,
                            const struct checked_outputs *c, struct hook_call_effects *ret,
                            struct ao_error *reterr)
{
        *ret = (struct hook_call_effects){0};
        if (c->values_patch || c->config_patch) {
                _cleanup_free_ char *global_before = NULL, *module_before = NULL;
                _cleanup_free_ char *global_after = NULL, *module_after = NULL;
                values_checksums(op, owner, &global_before, &module_before);
                int r = apply_patches(op, owner, c, reterr);
                if (r < 0)
                        return r;
                values_checksums(op, owner, &global_after, &module_after);
                ret->global_values_changed = differ(global_before, global_after);
                ret->module_values_changed = differ(module_before, module_after);
        }
        if (c->metrics.n > 0)
                op_metrics_hook_ops(op, owner->module, hook, &c->metrics);
        if (c->patches_need_cluster)
                ao_log(AO_LOG_WARN, "hook '%s': object patches need a cluster, ignoring them", hook->name);
        return 0;
}

void run_outputs_note_deletions(struct operator_state *op, struct hook_owner *owner,
                                const struct ao_object_patch_ops *ops)
{
        for (size_t i = 0; owner->module && i < ops->n; i++) {
                const struct ao_object_patch_op *o = &ops->items[i];
                if (o->type == AO_OBJECT_PATCH_DELETE || o->type == AO_OBJECT_PATCH_DELETE_IN_BACKGROUND ||
                    o->type == AO_OBJECT_PATCH_DELETE_NON_CASCADING)
                        release_monitor_note_deleted(op, owner->module, o->kind, o->namespace_, o->name);
        }
}
