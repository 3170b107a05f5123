/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The values store: every values section the operator knows (a section is
 * "global" or one module's values key), kept as layers and composed on
 * demand (docs/VALUES.md "Where values come from"):
 *
 *   1. static layers: the section in each common values.yaml (one per
 *      MODULES_DIR, in order), then, for a module, its own values.yaml;
 *   2. the config (ConfigMap or config file) section, over the
 *      config-values schema's defaults;
 *   3. the values schema's defaults;
 *   4. the memory patches hooks returned.
 *
 * Patches are kept as operations, not as the values they produced: each
 * composition replays them over the layers as they are now. A stored
 * result would freeze every key at the moment of the last patch; replayed
 * operations let a later config edit or values.yaml change show through
 * wherever no hook wrote (a remove or replace whose target is gone is
 * skipped). The list is compacted as it grows: an add, replace or remove
 * of P drops earlier operations on P or below it.
 *
 * Besides its sections the store holds what is not per section: the common
 * values.yaml documents, the config data, and the "<key>Enabled" flags that
 * global hooks set (dynamic flags). A module's enabled flag is, last one
 * set wins: common values.yaml files, its own values.yaml, dynamic, config.
 *
 * Hook outputs go in two phases so that a run is all or nothing: check
 * everything it returned (ao_values_store_check_patch(),
 * ao_values_store_check_config_patch(): no side effects), persist the config
 * section, then ao_values_store_apply_patch() and only after it
 * ao_values_store_set_config_section_take() (both checks saw the config as
 * it was before the run, so the values patch must land before the new
 * section does).
 *
 * Error texts are the operator's ("values patch: ...", "config values are
 * invalid: ...", "values are not ready for helm: ..."). Schema violations
 * name their path from the section key ("simpleModule.replicas: ...") and
 * are joined with "; ", except in the helm check, which gives the first.
 *
 * Non-logging module. Not thread-safe: one thread (the operator's) owns a
 * store. Functions returning cJSON trees return new ones, owned by the
 * caller; "borrowed" results stay valid until the store or section changes.
 */

#include <stdbool.h>

#include "ao/error.h"

struct cJSON;
struct ao_schema;
struct ao_values_store;
/* One section of a store; owned by it, valid until ao_values_store_free(). */
struct ao_values_section;

/** A store with an empty global section, no modules and an empty config ({}). Never fails. */
struct ao_values_store *ao_values_store_new(void);
/** Free @store and everything it owns (its sections too). NULL is accepted; returns NULL. */
struct ao_values_store *ao_values_store_free(struct ao_values_store *store);

/**
 * Add one MODULES_DIR's values.yaml document @doc (taken; an object, e.g.
 * from ao_values_file_load()). Call once per directory, in MODULES_DIR
 * order: later documents win. Its "global" member is a static layer of the
 * global section, its "<key>" members of the modules', its
 * "<key>Enabled" booleans the first source of the enabled flags.
 */
void ao_values_store_add_common_take(struct ao_values_store *store, struct cJSON *doc);

/** The global section (key "global"). */
struct ao_values_section *ao_values_store_global(struct ao_values_store *store);

/** Give the global section its schema (taken; NULL: none), replacing any earlier one. */
void ao_values_store_set_global_schema_take(struct ao_values_store *store, struct ao_schema *schema);

/**
 * Add a module's section. @values_key ("simpleModule") and @enabled_key
 * ("simpleModuleEnabled") are copied. @own_values (taken, may be NULL) is
 * the "<key>" member of the module's values.yaml (anything but an object
 * counts as empty); @own_enabled its "<key>Enabled": -1 unset, 0 or 1.
 * @schema (taken, may be NULL) is the module's openapi/ schema. Add modules
 * in run order: ao_values_store_validate_config() reports the first invalid
 * section in this order. The store does not check that keys are unique.
 */
struct ao_values_section *ao_values_store_add_module_take(struct ao_values_store *store,
                                                          const char *values_key, const char *enabled_key,
                                                          struct cJSON *own_values, int own_enabled,
                                                          struct ao_schema *schema);

/** "global" or the module's values key. */
const char *ao_values_section_key(const struct ao_values_section *section);
/** The module's enabled key; NULL for the global section. */
const char *ao_values_section_enabled_key(const struct ao_values_section *section);
/** The section's schema (borrowed), or NULL. */
const struct ao_schema *ao_values_section_schema(const struct ao_values_section *section);

/* ---- the config --------------------------------------------------------------------------------- */

/** Replace the config data (ConfigMap or config file, see config-data.h) with a copy of @config (NULL: {}). */
void ao_values_store_set_config(struct ao_values_store *store, const struct cJSON *config);
/** The config data (borrowed; an object, {} until set). */
const struct cJSON *ao_values_store_config(const struct ao_values_store *store);

/**
 * Check @config (not stored) section by section, the global section first,
 * then the modules in the order they were added: the config-values
 * schema's defaults with the section over them must be valid. The first
 * invalid section fails with "config values are invalid: <violations>".
 */
int ao_values_store_validate_config(const struct ao_values_store *store, const struct cJSON *config,
                                    struct ao_error *reterr);

/**
 * What a config values patch @ops (a hook's CONFIG_VALUES_JSON_PATCH_PATH,
 * paths "/<key>/...") would make of @section's config section, without
 * changing anything: the new section (a new object; whatever is not an
 * object after the patch becomes {}) in @ret_section. Fails with "config
 * values patch: <operation error>" or "config values patch makes the
 * config invalid: <violations>" (checked with the config-values defaults).
 */
int ao_values_store_check_config_patch(const struct ao_values_store *store,
                                       const struct ao_values_section *section, const struct cJSON *ops,
                                       struct cJSON **ret_section, struct ao_error *reterr);

/** Replace @section's member of the config data with @new_section (taken; NULL removes it). */
void ao_values_store_set_config_section_take(struct ao_values_store *store,
                                             const struct ao_values_section *section,
                                             struct cJSON *new_section);

/* ---- composed values ---------------------------------------------------------------------------- */

/**
 * @section's values (all layers) in @ret. Fails only when a stored patch
 * no longer applies ("<key>: applying stored values patches: ...", e.g. a
 * stored test operation that now fails).
 */
int ao_values_store_values(const struct ao_values_store *store, const struct ao_values_section *section,
                           struct cJSON **ret, struct ao_error *reterr);

/** @section's config values in @ret: the config-values schema's defaults with the config section over them. */
int ao_values_store_config_values(const struct ao_values_store *store,
                                  const struct ao_values_section *section, struct cJSON **ret,
                                  struct ao_error *reterr);

/**
 * The two documents a hook or an enabled script reads: VALUES_PATH in
 * @ret_values, CONFIG_VALUES_PATH in @ret_config. For the global section
 * (global hooks) they are {"global": ...}; for a module's,
 * {"global": ..., "<key>": ...}. With @enabled_modules (a NULL-terminated
 * list of module names) the values document gets it as
 * global.enabledModules: module hooks pass the enabled modules in run
 * order, enabled scripts the ones enabled before them (possibly an empty
 * list); global hooks pass NULL. The config document never has it.
 * Both out-parameters are written only on success.
 */
int ao_values_store_hook_documents(const struct ao_values_store *store,
                                   const struct ao_values_section *section,
                                   const char *const *enabled_modules, struct cJSON **ret_values,
                                   struct cJSON **ret_config, struct ao_error *reterr);

/**
 * The values document helm gets for @section (a module's): as the hook
 * values document without enabledModules, once the section's values pass
 * the helm variant of its schema (x-required-for-helm). Fails with "values
 * are not ready for helm: <first violation>".
 */
int ao_values_store_helm_document(const struct ao_values_store *store,
                                  const struct ao_values_section *section, struct cJSON **ret,
                                  struct ao_error *reterr);

/**
 * Canonical text of what @section's consumers depend on, to compare before
 * and after a change (malloc'd): its values, or "(invalid)" when they do
 * not compose. The global section's also covers the dynamic enabled flags,
 * since changing them changes which modules run.
 */
char *ao_values_store_checksum(const struct ao_values_store *store, const struct ao_values_section *section);

/**
 * A module's enabled flag before its enabled script: the last of common
 * values.yaml files, own values.yaml, dynamic flag, config that sets it;
 * false when none does. True for the global section.
 */
bool ao_values_store_enabled(const struct ao_values_store *store, const struct ao_values_section *section);

/* ---- memory patches ----------------------------------------------------------------------------- */

/**
 * Check a hook's values patch @ops (an array from ao_jsonpatch_parse(),
 * scope-checked with ao_hook_patch_check_scope()) for @section,
 * changing nothing. The patch must apply strictly to the section's current
 * values and leave them valid against its values schema. For the global
 * section, top-level "/<key>Enabled" operations set or remove dynamic
 * flags instead and must be add or replace of true/false, or remove.
 * Errors: "values patch: <operation error>", "values patch makes the values
 * invalid: <violations>", "values patch: '<path>' takes add or remove of
 * true/false", or a composition error (ao_values_store_values()).
 */
int ao_values_store_check_patch(const struct ao_values_store *store, const struct ao_values_section *section,
                                const struct cJSON *ops, struct ao_error *reterr);

/**
 * Check @ops as ao_values_store_check_patch() does, then store its
 * operations (compacted) and, for the global section, its flag changes.
 * On failure nothing changed.
 */
int ao_values_store_apply_patch(struct ao_values_store *store, struct ao_values_section *section,
                                const struct cJSON *ops, struct ao_error *reterr);

/** The stored patch operations of @section (borrowed; a JSON Patch array, for the debug API). */
const struct cJSON *ao_values_store_patches(const struct ao_values_store *store,
                                            const struct ao_values_section *section);

/** Drop @section's stored patches (its module was deleted: it starts again from its layers). */
void ao_values_store_reset_patches(struct ao_values_store *store, struct ao_values_section *section);
