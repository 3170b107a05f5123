/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Object patches: what a hook writes to KUBERNETES_PATCH_PATH, the operations the operator then
 * applies to the cluster in order. The file is a stream of operation objects: JSON values one
 * after another (whitespace between them), or, when that does not parse, a multi-document YAML
 * stream ("---" between documents). Each operation:
 *
 *   operation    Create | CreateOrUpdate | CreateIfNotExists | Delete | DeleteInBackground |
 *                DeleteNonCascading | JQPatch | MergePatch | JSONPatch
 *   object       Create*: the object, a mapping or a YAML/JSON string of one (it names its own
 *                apiVersion, kind, metadata.name and metadata.namespace)
 *   apiVersion, kind, namespace, name
 *                the other operations: which object (kind and name required; apiVersion optional:
 *                the server's preferred version)
 *   jqFilter     JQPatch: the program that turns the object into its new form
 *   mergePatch   MergePatch: an object, or a string holding one
 *   jsonPatch    JSONPatch: an array of RFC 6902 operations, or a string holding one
 *   subresource  optional, for the patch operations ("status")
 *   ignoreMissingObject  optional bool: a missing object is not an error for the patch operations
 *   ignoreHookError      optional bool: accepted (only Go hooks of the Go operator honour it)
 *
 * Unknown fields and wrong types are errors naming the operation's index and the field:
 *   "KUBERNETES_PATCH_PATH: operation 2: mergePatch: must be an object or a string holding one"
 *
 * Non-logging module; thread-safe except for cJSON's parse-error global.
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct cJSON;

#define AO_OBJECT_PATCH_MAX_OPERATIONS 10000

enum ao_object_patch_type {
        AO_OBJECT_PATCH_CREATE,
        AO_OBJECT_PATCH_CREATE_OR_UPDATE,
        AO_OBJECT_PATCH_CREATE_IF_NOT_EXISTS,
        AO_OBJECT_PATCH_DELETE,
        AO_OBJECT_PATCH_DELETE_IN_BACKGROUND,
        AO_OBJECT_PATCH_DELETE_NON_CASCADING,
        AO_OBJECT_PATCH_JQ_PATCH,
        AO_OBJECT_PATCH_MERGE_PATCH,
        AO_OBJECT_PATCH_JSON_PATCH,
        _AO_OBJECT_PATCH_TYPE_MAX,
        _AO_OBJECT_PATCH_TYPE_INVALID = -EINVAL,
};

const char *ao_object_patch_type_to_string(enum ao_object_patch_type t);
enum ao_object_patch_type ao_object_patch_type_from_string(const char *s);

/** One operation. Strings owned (NULL when absent). */
struct ao_object_patch_op {
        enum ao_object_patch_type type;
        char *api_version, *kind, *namespace_, *name; /* for Create*: taken from the object */
        struct cJSON *object;                         /* Create*: the object (owned) */
        char *jq_filter;                              /* JQPatch */
        struct cJSON *patch;                          /* MergePatch: an object; JSONPatch: an array (owned) */
        char *subresource;                            /* "status", or NULL */
        bool ignore_missing;
        bool ignore_hook_error;
};

struct ao_object_patch_ops {
        struct ao_object_patch_op *items; /* owned */
        size_t n;
};

/**
 * Parse @text (@len bytes; need not be NUL-terminated). Whitespace only is no operation.
 * Returns 0, -EINVAL (message names the operation and field), -E2BIG (over
 * AO_OBJECT_PATCH_MAX_OPERATIONS or the YAML limits) or -ENOMEM. @ret is written only on success.
 */
int ao_object_patch_parse(const char *text, size_t len, struct ao_object_patch_ops *ret,
                          struct ao_error *reterr);
void ao_object_patch_ops_done(struct ao_object_patch_ops *ops);

/** "Create ConfigMap default/x", "MergePatch Pod kube-system/web-0 (status)": for messages. malloc'd. */
char *ao_object_patch_op_describe(const struct ao_object_patch_op *op);
