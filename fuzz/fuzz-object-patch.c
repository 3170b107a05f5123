/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz object patch parsing (KUBERNETES_PATCH_PATH): a JSON stream, else a
 * multi-document YAML stream, with objects and patches possibly given as
 * strings to parse again. Besides crashes, leaks and undefined behaviour, it
 * aborts when the contract breaks: on success every operation has the fields
 * its type requires (kind and name always; the object for Create*, jqFilter
 * for JQPatch, an object for MergePatch, an array for JSONPatch) and a
 * one-line description; on failure the code is negative, the result
 * untouched and the message a single printable line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/object-patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Patch files from hooks are small; the cap keeps runs fast (the real bound is the 16 MiB output cap). */
#define FUZZ_INPUT_MAX (64 * 1024)

static void check_line(const char *s)
{
        if (!s || s[0] == '\0')
                abort();
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

static void check_op(const struct ao_object_patch_op *op)
{
        if (!ao_object_patch_type_to_string(op->type) || !op->kind || !op->name || !op->kind[0] ||
            !op->name[0])
                abort();
        switch (op->type) {
        case AO_OBJECT_PATCH_CREATE:
        case AO_OBJECT_PATCH_CREATE_OR_UPDATE:
        case AO_OBJECT_PATCH_CREATE_IF_NOT_EXISTS:
                if (!cJSON_IsObject(op->object) || !op->api_version || op->patch || op->jq_filter)
                        abort();
                break;
        case AO_OBJECT_PATCH_JQ_PATCH:
                if (!op->jq_filter || op->object || op->patch)
                        abort();
                break;
        case AO_OBJECT_PATCH_MERGE_PATCH:
                if (!cJSON_IsObject(op->patch) || op->object)
                        abort();
                break;
        case AO_OBJECT_PATCH_JSON_PATCH:
                if (!cJSON_IsArray(op->patch) || op->object)
                        abort();
                break;
        default:
                if (op->object || op->patch || op->jq_filter)
                        abort();
        }
        if (op->subresource && (op->subresource[0] == '\0' || op->subresource[0] == '/'))
                abort();
        char *desc = ao_object_patch_op_describe(op);
        check_line(desc);
        free(desc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_object_patch_ops ops = {.n = 12345};
        struct ao_error err = {0};

        if (size > FUZZ_INPUT_MAX)
                return 0;
        int r = ao_object_patch_parse((const char *) data, size, &ops, &err);
        if (r < 0) {
                if (err.code != r || ops.n != 12345 || ops.items)
                        abort();
                check_line(err.msg);
                return 0;
        }
        if (r != 0 || ops.n > AO_OBJECT_PATCH_MAX_OPERATIONS || (ops.n > 0 && !ops.items))
                abort();
        for (size_t i = 0; i < ops.n; i++)
                check_op(&ops.items[i]);
        ao_object_patch_ops_done(&ops);
        ao_object_patch_ops_done(NULL);
        return 0;
}
