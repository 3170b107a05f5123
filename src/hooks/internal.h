/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/hooks/: what the hook-configuration parser's two files
 * share: config.c defines the helpers and the parse context, and
 * config-kubernetes.c the per-binding parsers config.c calls. Never
 * included outside src/hooks/. The other private headers are config-pool.h
 * (config-pool.c, loader.c), outputs.h (outputs.c, run.c) and workspace.h
 * (workspace.c, outputs.c, run.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/hook-config.h"

struct cJSON;

/* Longest field path ("kubernetes[12].labelSelector.matchExpressions[3].values[0]"). */
#define AO_HOOK_CONFIG_PATH_MAX 192
/* Bytes of a user string quoted in an error, "..." included. */
#define AO_HOOK_CONFIG_SHOW_MAX 80
/* Bytes of the reason libjq gives for a filter that does not compile. */
#define AO_HOOK_CONFIG_JQ_REASON_MAX 256

/* State of one parse: names for messages and the budgets. */
struct ao_hook_config_ctx {
        const char *hook; /* borrowed: the hook name that starts every message */
        enum ao_hook_kind kind;
        int version;             /* 0 or 1 */
        size_t n_items;          /* held list entries so far, against AO_HOOK_CONFIG_MAX_ITEMS */
        struct ao_error *reterr; /* borrowed, may be NULL */
};

/**
 * Record "<hook>: <path>: <reason>" (just "<hook>: <reason>" when @path is
 * "" or NULL) in ctx->reterr, with control characters escaped, and return
 * @code.
 */
int hook_config_fail(struct ao_hook_config_ctx *ctx, int code, const char *path, const char *fmt, ...)
    _printf_(4, 5);

/**
 * @s for an error message: at most AO_HOOK_CONFIG_SHOW_MAX bytes, cut at a
 * character boundary with "...", control characters as \xNN. Returns @buf.
 */
const char *hook_config_show(char buf[static AO_HOOK_CONFIG_SHOW_MAX], const char *s);

/** "<parent>.<key>" (or "<key>" at the root) into @buf; returns @buf. */
const char *hook_config_path(char buf[static AO_HOOK_CONFIG_PATH_MAX], const char *parent, const char *key);
/** "<parent>[<i>]" into @buf; returns @buf. */
const char *hook_config_path_index(char buf[static AO_HOOK_CONFIG_PATH_MAX], const char *parent, size_t i);

/**
 * Check that @json (at @path) is an object whose keys are all among @names
 * (@n of them, each at most once), and store the member for names[i] in
 * ret_members[i] (NULL when absent). Unknown and repeated keys are errors
 * that name the key and list @names.
 */
int hook_config_members(struct ao_hook_config_ctx *ctx, const char *path, const struct cJSON *json,
                        const char *const *names, size_t n, const struct cJSON **ret_members);

/** ao_json_type_name() in JSON words: "null", "a boolean", ..., "an array", "an object"; "an invalid value". */
const char *hook_config_type_name(const struct cJSON *json);

/* Typed members; @json may be NULL only where noted. Strings are borrowed from @json. */
int hook_config_get_string(struct ao_hook_config_ctx *ctx, const char *path, const struct cJSON *json,
                           bool allow_empty, const char **ret);
int hook_config_get_bool(struct ao_hook_config_ctx *ctx, const char *path, const struct cJSON *json,
                         bool *ret);
/** An array of at least @min_items entries; returns the count. */
int hook_config_get_array(struct ao_hook_config_ctx *ctx, const char *path, const struct cJSON *json,
                          size_t min_items, size_t *ret_n);
/**
 * Account for @n list entries that the result will hold (strings, selector
 * requirements) against AO_HOOK_CONFIG_MAX_ITEMS; -E2BIG past it. What is
 * only looked at (event names, ignored bindings) is bounded by the loader's
 * node limit instead. Charging what the result holds, and not what the text
 * spells, keeps the count of ao_hook_config_to_json()'s output the same.
 */
int hook_config_charge(struct ao_hook_config_ctx *ctx, const char *path, size_t n);
/** An integral JSON number in [max(@min, -(2^53 - 1)), 2^53 - 1] into @ret. */
int hook_config_get_integer(struct ao_hook_config_ctx *ctx, const char *path, const struct cJSON *json,
                            int64_t min, int64_t *ret);
/** strcmp() of two `const char *` array elements, for qsort() and bsearch(). */
int hook_config_compare_strings(const void *a, const void *b);
/** An array of strings (at least @min_items; each listed once when @unique) into @ret (filled on success). */
int hook_config_get_strv(struct ao_hook_config_ctx *ctx, const char *path, const struct cJSON *json,
                         size_t min_items, bool unique, struct ao_strv *ret);

/** A malloc'd copy of @s, or NULL for NULL and "" (Go's "not given"). */
char *hook_config_strdup_nonempty(const char *s);

/* Per-binding-entry parsers of config-kubernetes.c: fill cfg->kubernetes[i] from @json. */
int hook_config_parse_kubernetes(struct ao_hook_config_ctx *ctx, struct ao_hook_config *cfg, size_t i,
                                 const struct cJSON *json);
int hook_config_parse_on_kubernetes_event(struct ao_hook_config_ctx *ctx, struct ao_hook_config *cfg,
                                          size_t i, const struct cJSON *json);
