/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * RFC 6902 JSON Patch on cJSON documents, and the patch files hooks write
 * (VALUES_JSON_PATCH_PATH, CONFIG_VALUES_JSON_PATCH_PATH).
 *
 * A patch file is a JSON stream: any sequence of operation arrays and/or
 * single operation objects (one per line is common); an empty file is an
 * empty patch. Applying is atomic: on any failure the document is left
 * exactly as it was. Errors name the operation index and path:
 * "operation 2 (remove /a/b): path not found".
 *
 * Non-logging module. Thread-safe (no global state).
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct cJSON;

#define AO_JSONPATCH_MAX_INPUT (16u * 1024 * 1024) /* bytes of patch text */
#define AO_JSONPATCH_MAX_OPS   100000

enum ao_jsonpatch_op_type {
        AO_JSONPATCH_ADD,
        AO_JSONPATCH_REMOVE,
        AO_JSONPATCH_REPLACE,
        AO_JSONPATCH_MOVE,
        AO_JSONPATCH_COPY,
        AO_JSONPATCH_TEST,
        _AO_JSONPATCH_OP_MAX,
        _AO_JSONPATCH_OP_INVALID = -EINVAL,
};

/** Apply options. */
enum {
        /* A remove (or replace) of a path that does not exist is skipped instead of failing:
         * how stored memory patches are re-applied to recomputed values. */
        AO_JSONPATCH_IGNORE_MISSING = 1 << 0,
};

/**
 * Parse patch text (@len bytes, need not be NUL-terminated) into a cJSON
 * array of operation objects, validated (op known, path a JSON Pointer,
 * value present where needed, from present for move/copy). @filename names
 * the input in errors (may be NULL).
 */
int ao_jsonpatch_parse(const char *text, size_t len, const char *filename, struct cJSON **ret_ops,
                       struct ao_error *reterr);

/** Apply the validated operations @ops to @doc in place, atomically. @flags: AO_JSONPATCH_*. */
int ao_jsonpatch_apply(struct cJSON *doc, const struct cJSON *ops, unsigned flags, struct ao_error *reterr);

/**
 * Resolve JSON Pointer @pointer (RFC 6901: "" is the whole document, "/a/0",
 * "~0" and "~1" escapes) in @doc. Returns the node or NULL.
 */
struct cJSON *ao_json_pointer_get(struct cJSON *doc, const char *pointer);
