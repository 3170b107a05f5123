/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * RFC 6902 JSON Patch on cJSON documents, and the patch files hooks write
 * (VALUES_JSON_PATCH_PATH, CONFIG_VALUES_JSON_PATCH_PATH).
 *
 * A patch file is a JSON stream: any sequence of operation arrays and/or
 * single operation objects (one per line is common); an empty file is an
 * empty patch. All six RFC 6902 operations are supported (add, remove,
 * replace, move, copy, test); the Go addon-operator refuses replace, we do
 * not. Applying is atomic: on any failure the document is left exactly as
 * it was. Errors name the operation by its 0-based index in the whole
 * stream, its op and its path: "operation 2 (remove /a/b): path not found".
 *
 * Non-logging module. No global state of its own, but cJSON's parser stores
 * its error position in a global (cJSON_GetErrorPtr): two threads must not
 * run ao_jsonpatch_parse() (or any cJSON_Parse) at the same time.
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct cJSON;

#define AO_JSONPATCH_MAX_INPUT (16u * 1024 * 1024) /* bytes of patch text */
#define AO_JSONPATCH_MAX_OPS   100000
/*
 * No operation may place a value more than this many objects and arrays
 * deep (as AO_YAML_MAX_DEPTH, so patched values load back), and copy
 * operations together may create at most AO_JSONPATCH_MAX_COPIED_NODES nodes:
 * copying "" into "/a" doubles the document, so a few dozen such operations
 * would otherwise exhaust memory.
 */
#define AO_JSONPATCH_MAX_DEPTH 256
#ifdef AO_FUZZING
/* libFuzzer builds: the same checks at a budget inputs reach in milliseconds, not seconds. */
#define AO_JSONPATCH_MAX_COPIED_NODES (64u * 1024)
#else
#define AO_JSONPATCH_MAX_COPIED_NODES (4u * 1024 * 1024)
#endif

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
 * Parse patch text (@len bytes, need not be NUL-terminated) into a new cJSON
 * array of operation objects in @ret_ops (owned by the caller), validated:
 * op known, path (and from) a JSON Pointer, value present for add, replace
 * and test (null counts), from present for move and copy. Unknown members
 * are ignored (RFC 6902 §4); a key twice in one object is an error, since
 * cJSON would keep both where Go keeps the last. @filename names the input
 * in errors (may be NULL: "<input>"), which read "file:line:column: what",
 * 1-based, the position being that of the offending JSON value or byte:
 * "values.json-patch:3:1: expected an operation object or an array of them",
 * "...:1:1: operation 4: unknown op 'update'".
 *
 * Returns 0, -EINVAL (syntax or content), -EFBIG (over AO_JSONPATCH_MAX_INPUT),
 * -E2BIG (over AO_JSONPATCH_MAX_OPS) or -ENOMEM; @ret_ops is written only on success.
 */
int ao_jsonpatch_parse(const char *text, size_t len, const char *filename, struct cJSON **ret_ops,
                       struct ao_error *reterr);

/**
 * Apply the operations @ops (from ao_jsonpatch_parse(); anything malformed
 * is refused, not trusted) to @doc in place, atomically: they run on a copy,
 * whose contents are swapped into @doc on success. @doc keeps its address,
 * and its place and name when it is a member of a larger tree, even when an
 * operation replaced the whole document ("" path); pointers into its old
 * children are invalid afterwards. @flags: AO_JSONPATCH_*.
 *
 * Returns 0, -ENOENT (a location does not exist, messages like "path not
 * found" or "array index 7 out of range (length 3)"), -E2BIG (a limit above),
 * -ENOMEM, or -EINVAL (anything else, "test failed: value differs" included).
 * Work is linear in the document per operation at worst (cJSON objects are
 * lists, so member look-ups are linear).
 */
int ao_jsonpatch_apply(struct cJSON *doc, const struct cJSON *ops, unsigned flags, struct ao_error *reterr);

/*
 * RFC 6901 JSON Pointers (src/values/jsonpointer.c). A segment is the text
 * between two '/' (or after the last), still escaped: "~0" stands for '~'
 * and "~1" for '/'.
 */

/** Whether @pointer is a JSON Pointer: "" (the whole document) or '/'-led segments, '~' only in ~0 and ~1. */
bool ao_json_pointer_valid(const char *pointer);

/** The member of object @object named by the escaped segment @segment (@len bytes), or NULL. */
struct cJSON *ao_json_pointer_member(const struct cJSON *object, const char *segment, size_t len);

/**
 * Parse the segment @segment (@len bytes) as an array index: decimal digits
 * without leading zeros ("0" alone is fine). Returns 0 with the index in
 * @ret_index (saturating at SIZE_MAX, beyond any array), 1 for "-" (the
 * position after the last element; @ret_index untouched), or -EINVAL.
 */
int ao_json_pointer_index(const char *segment, size_t len, size_t *ret_index);

/** The decoded member name of the escaped segment @segment (@len bytes); malloc'd, caller frees. */
char *ao_json_pointer_unescape(const char *segment, size_t len);

/**
 * Resolve JSON Pointer @pointer (RFC 6901: "" is the whole document, "/a/0",
 * "~0" and "~1" escapes) in @doc. Returns the node (borrowed from @doc) or
 * NULL when it does not exist, @pointer is invalid, or it names "-".
 */
struct cJSON *ao_json_pointer_get(struct cJSON *doc, const char *pointer);
