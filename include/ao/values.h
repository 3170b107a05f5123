/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Module names and values sections.
 *
 * A module directory "001-simple-module" is module "simple-module" with
 * order 1; its values live under the key "simpleModule" and its enabled
 * flag under "simpleModuleEnabled". The key is the name in lower camel
 * case, and a name is valid only if converting the key back to kebab case
 * gives the name again, so every name has exactly one key and back.
 *
 * Non-logging module; thread-safe.
 */

#include <stdbool.h>
#include <stdint.h>

#include "ao/error.h"

struct cJSON;

/** A module directory's identity. Strings owned; release with ao_module_name_done(). */
struct ao_module_name {
        char *name;        /* "simple-module" */
        char *values_key;  /* "simpleModule" */
        char *enabled_key; /* "simpleModuleEnabled" */
        uint32_t order;    /* numeric prefix, or the unnumbered order */
        bool numbered;     /* the directory had an NNN- prefix */
};

/**
 * Parse a module directory's base name. The prefix is the leading digits
 * before the first '-', read as an order up to 2^31-1; without one (or on
 * overflow) @unnumbered_order applies. Fails with a message naming the
 * directory when the name does not survive the key round trip.
 */
int ao_module_name_parse(const char *dir_name, uint32_t unnumbered_order, struct ao_module_name *ret,
                         struct ao_error *reterr);
void ao_module_name_done(struct ao_module_name *n);

/** "simple-module" -> "simpleModule". Returns a malloc'd string. */
char *ao_name_to_camel(const char *s);
/** "simpleModule" -> "simple-module". Returns a malloc'd string. */
char *ao_name_to_kebab(const char *s);

/** Check that @name is a valid module name (round trip); the error says why not. */
int ao_module_name_check(const char *name, struct ao_error *reterr);

/**
 * What a top-level values or ConfigMap key means: "global", a module's
 * values key, a module's enabled key ("<key>Enabled"), or its maintenance key.
 */
enum ao_values_key_kind {
        AO_VALUES_KEY_GLOBAL,
        AO_VALUES_KEY_MODULE,
        AO_VALUES_KEY_ENABLED,
        AO_VALUES_KEY_MAINTENANCE,
        _AO_VALUES_KEY_KIND_MAX,
        _AO_VALUES_KEY_KIND_INVALID = -EINVAL,
};

/**
 * Classify @key; for module keys, @ret_module (may be NULL) gets the module
 * name (malloc'd). A key that does not map back to a valid module name is
 * invalid, with the reason in @reterr.
 */
enum ao_values_key_kind ao_values_key_classify(const char *key, char **ret_module, struct ao_error *reterr);

/**
 * Deep-merge @src into @dst: objects merge key by key, recursively; any
 * other value (arrays included) replaces what @dst had. @src is not changed
 * (merged values are copies). Both must be objects.
 */
void ao_values_merge(struct cJSON *dst, const struct cJSON *src);

/**
 * Read a values.yaml: a mapping, or {} when the file is missing, empty or
 * only `null`. Anything else is an error naming the file (and, for YAML
 * errors, the line and column). @ret is a new object.
 */
int ao_values_file_load(const char *path, struct cJSON **ret, struct ao_error *reterr);

struct ao_schema;

/**
 * Where one values section (global, or one module's) comes from. Every
 * pointer is borrowed; any may be NULL / empty.
 */
struct ao_values_sources {
        const char *key; /* "global" or the module's values key: patch paths start with "/<key>" */
        const struct cJSON *const *static_layers; /* in order: each modules/values.yaml's section, then the
                                                     module's own values.yaml section */
        size_t n_static_layers;
        const struct cJSON *config;  /* the ConfigMap (or local config file) section */
        const struct cJSON *patches; /* stored memory patch operations (a JSON Patch array) with paths
                                        as hooks write them: "/<key>/..." */
        const struct ao_schema *schema;
};

/**
 * The config values of a section: the config-values schema's defaults with
 * the config section merged over them. This is what CONFIG_VALUES_PATH holds
 * for the section (the values.yaml files are not part of it). @ret is a new
 * object.
 */
int ao_values_compose_config(const struct ao_values_sources *src, struct cJSON **ret,
                             struct ao_error *reterr);

/**
 * The merged values of a section, in this order: the static layers, the
 * config values (see above), the values schema's defaults, then the stored
 * memory patches, applied so that operations on paths that no longer exist
 * are skipped. This is what VALUES_PATH and helm get for the section.
 */
int ao_values_compose(const struct ao_values_sources *src, struct cJSON **ret, struct ao_error *reterr);

/**
 * The document a consumer receives (VALUES_PATH, CONFIG_VALUES_PATH, the
 * values file helm gets): {"global": @global, "<key>": @section}, copies of
 * both. @key NULL gives the global-only document of global hooks. With
 * @enabled_modules (a NULL-terminated list in execution order), it is added
 * as global.enabledModules, as module hooks and enabled scripts see it;
 * helm gets the document without it (pass NULL).
 */
struct cJSON *ao_values_document(const struct cJSON *global, const char *key, const struct cJSON *section,
                                 const char *const *enabled_modules);
