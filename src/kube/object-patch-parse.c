/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/object-patch.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/input.h"
#include "ao/jsonpatch.h"
#include "ao/quote.h"
#include "ao/strbuf.h"
#include "ao/string-table.h"
#include "ao/yaml.h"

/*
 * As shell-operator's object patcher reads the file: a JSON stream first
 * (ao_json_load_stream), a multi-document YAML stream when that fails
 * (ao_yaml_load_stream); when both fail, the error shown is the JSON one if
 * the text starts like JSON ('{' or '['), else the YAML one. Each document
 * is then checked field by field against one table. null counts as absent
 * and "" as unset, as Go's decoder leaves a field it gets null or "" for at
 * its zero value. Known fields an operation does not use (jqFilter on a
 * Delete, kind beside a Create's object) are type-checked and ignored, as
 * the peer ignores them.
 */

#define SOURCE   "KUBERNETES_PATCH_PATH"
#define SHOW_MAX 128 /* bytes of a user string quoted in an error */

static const char *const type_names[_AO_OBJECT_PATCH_TYPE_MAX] = {
    [AO_OBJECT_PATCH_CREATE] = "Create",
    [AO_OBJECT_PATCH_CREATE_OR_UPDATE] = "CreateOrUpdate",
    [AO_OBJECT_PATCH_CREATE_IF_NOT_EXISTS] = "CreateIfNotExists",
    [AO_OBJECT_PATCH_DELETE] = "Delete",
    [AO_OBJECT_PATCH_DELETE_IN_BACKGROUND] = "DeleteInBackground",
    [AO_OBJECT_PATCH_DELETE_NON_CASCADING] = "DeleteNonCascading",
    [AO_OBJECT_PATCH_JQ_PATCH] = "JQPatch",
    [AO_OBJECT_PATCH_MERGE_PATCH] = "MergePatch",
    [AO_OBJECT_PATCH_JSON_PATCH] = "JSONPatch",
};

AO_STRING_TABLE(ao_object_patch_type, enum ao_object_patch_type, type_names);

static bool is_create(enum ao_object_patch_type t)
{
        return t == AO_OBJECT_PATCH_CREATE || t == AO_OBJECT_PATCH_CREATE_OR_UPDATE ||
               t == AO_OBJECT_PATCH_CREATE_IF_NOT_EXISTS;
}

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static void op_done(struct ao_object_patch_op *op)
{
        free(op->api_version);
        free(op->kind);
        free(op->namespace_);
        free(op->name);
        cJSON_Delete(op->object);
        free(op->jq_filter);
        cJSON_Delete(op->patch);
        free(op->subresource);
        *op = (struct ao_object_patch_op){0};
}

void ao_object_patch_ops_done(struct ao_object_patch_ops *ops)
{
        if (!ops)
                return;
        for (size_t i = 0; i < ops->n; i++)
                op_done(&ops->items[i]);
        free(ops->items);
        *ops = (struct ao_object_patch_ops){0};
}

/* ---- fields -------------------------------------------------------------------------------------- */

enum shape {
        SHAPE_STRING,
        SHAPE_BOOL,
        SHAPE_OBJECT_OR_STRING,
        SHAPE_ARRAY_OR_STRING,
};

/* An operation's fields, borrowed from its document; NULL when absent or null. */
struct fields {
        const cJSON *operation, *api_version, *kind, *namespace_, *name, *subresource;
        cJSON *object, *jq_filter, *merge_patch, *json_patch;
        const cJSON *ignore_missing, *ignore_hook_error;
};

static const struct {
        const char *name;
        size_t offset; /* of the pointer in struct fields */
        enum shape shape;
} field_table[] = {
    {"operation", offsetof(struct fields, operation), SHAPE_STRING},
    {"apiVersion", offsetof(struct fields, api_version), SHAPE_STRING},
    {"kind", offsetof(struct fields, kind), SHAPE_STRING},
    {"namespace", offsetof(struct fields, namespace_), SHAPE_STRING},
    {"name", offsetof(struct fields, name), SHAPE_STRING},
    {"subresource", offsetof(struct fields, subresource), SHAPE_STRING},
    {"object", offsetof(struct fields, object), SHAPE_OBJECT_OR_STRING},
    {"jqFilter", offsetof(struct fields, jq_filter), SHAPE_STRING},
    {"mergePatch", offsetof(struct fields, merge_patch), SHAPE_OBJECT_OR_STRING},
    {"jsonPatch", offsetof(struct fields, json_patch), SHAPE_ARRAY_OR_STRING},
    {"ignoreMissingObject", offsetof(struct fields, ignore_missing), SHAPE_BOOL},
    {"ignoreHookError", offsetof(struct fields, ignore_hook_error), SHAPE_BOOL},
};

static const char *const shape_problems[] = {
    [SHAPE_STRING] = "must be a string",
    [SHAPE_BOOL] = "must be a boolean",
    [SHAPE_OBJECT_OR_STRING] = "must be an object or a string holding one",
    [SHAPE_ARRAY_OR_STRING] = "must be an array or a string holding one",
};

struct parser {
        size_t index; /* of the operation being read */
        struct ao_strbuf show;
        struct ao_error *reterr;
};

static int op_fail(struct parser *p, int code, const char *fmt, ...) _printf_(3, 4);
static int op_fail(struct parser *p, int code, const char *fmt, ...)
{
        char what[AO_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        return ao_error_set(p->reterr, code, SOURCE ": operation %zu: %s", p->index, what);
}

/* @s for a message: control characters escaped, cut at SHOW_MAX bytes. Valid until the next call. */
static const char *show(struct parser *p, const char *s)
{
        ao_strbuf_reset(&p->show);
        ao_quote_text(&p->show, s, strlen(s), SHOW_MAX);
        return ao_strbuf_str(&p->show);
}

static bool shape_fits(const cJSON *json, enum shape shape)
{
        switch (shape) {
        case SHAPE_STRING:
                return cJSON_IsString(json);
        case SHAPE_BOOL:
                return cJSON_IsBool(json);
        case SHAPE_OBJECT_OR_STRING:
                return cJSON_IsObject(json) || cJSON_IsString(json);
        case SHAPE_ARRAY_OR_STRING:
                return cJSON_IsArray(json) || cJSON_IsString(json);
        }
        return false;
}

static int read_fields(struct parser *p, cJSON *doc, struct fields *ret)
{
        struct fields f = {0};

        for (cJSON *m = doc->child; m; m = m->next) {
                size_t i = 0;
                while (i < AO_ARRAY_SIZE(field_table) && strcmp(field_table[i].name, m->string) != 0)
                        i++;
                if (i == AO_ARRAY_SIZE(field_table))
                        return op_fail(p, -EINVAL, "unknown field '%s'", show(p, m->string));
                if (cJSON_IsNull(m))
                        continue;
                if (!shape_fits(m, field_table[i].shape))
                        return op_fail(p, -EINVAL, "%s: %s", field_table[i].name,
                                       shape_problems[field_table[i].shape]);
                *(cJSON **) ((char *) &f + field_table[i].offset) = m;
        }
        *ret = f;
        return 0;
}

/* A copy of the string in @json, or NULL when absent or "". */
static char *dup_string(const cJSON *json)
{
        return json && json->valuestring[0] ? ao_xstrdup(json->valuestring) : NULL;
}

static int require(struct parser *p, const cJSON *json, const char *field, enum ao_object_patch_type t)
{
        if (!json || (cJSON_IsString(json) && json->valuestring[0] == '\0'))
                return op_fail(p, -EINVAL, "%s: required for %s", field, type_names[t]);
        return 0;
}

/*
 * The value of @field, a document or a string holding YAML or JSON text of
 * one: detached from @doc, or parsed. Must be an object (@array: an array).
 */
static int take_document(struct parser *p, cJSON *doc, cJSON *json, const char *field, bool array,
                         cJSON **ret)
{
        _cleanup_(json_deletep) cJSON *value = NULL;
        struct ao_error err = {0};

        if (cJSON_IsString(json)) {
                const char *text = json->valuestring;
                if (ao_yaml_load(text, strlen(text), field, &value, &err) < 0)
                        return op_fail(p, err.code, "%s", err.msg);
        } else {
                value = cJSON_DetachItemViaPointer(doc, json);
        }
        if (array ? !cJSON_IsArray(value) : !cJSON_IsObject(value))
                return op_fail(p, -EINVAL, "%s: %s", field,
                               shape_problems[array ? SHAPE_ARRAY_OR_STRING : SHAPE_OBJECT_OR_STRING]);
        *ret = TAKE_PTR(value);
        return 0;
}

/* A string member of @object at @where ("object: metadata.name"): copied to @ret, NULL when absent. */
static int object_string(struct parser *p, const cJSON *object, const char *key, const char *where,
                         bool required, char **ret)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(object, key);

        if (!m || cJSON_IsNull(m) || (cJSON_IsString(m) && m->valuestring[0] == '\0')) {
                if (required)
                        return op_fail(p, -EINVAL, "object: %s: required", where);
                *ret = NULL;
                return 0;
        }
        if (!cJSON_IsString(m))
                return op_fail(p, -EINVAL, "object: %s: must be a string", where);
        *ret = ao_xstrdup(m->valuestring);
        return 0;
}

/* Create*: the object, which names itself. */
static int decode_object(struct parser *p, cJSON *doc, const struct fields *f, struct ao_object_patch_op *op)
{
        const cJSON *metadata;
        int r;

        if ((r = require(p, f->object, "object", op->type)) < 0)
                return r;
        if ((r = take_document(p, doc, f->object, "object", false, &op->object)) < 0)
                return r;
        if ((r = object_string(p, op->object, "apiVersion", "apiVersion", true, &op->api_version)) < 0 ||
            (r = object_string(p, op->object, "kind", "kind", true, &op->kind)) < 0)
                return r;
        metadata = cJSON_GetObjectItemCaseSensitive(op->object, "metadata");
        if (!metadata || cJSON_IsNull(metadata))
                return op_fail(p, -EINVAL, "object: metadata.name: required");
        if (!cJSON_IsObject(metadata))
                return op_fail(p, -EINVAL, "object: metadata: must be an object");
        if ((r = object_string(p, metadata, "name", "metadata.name", true, &op->name)) < 0)
                return r;
        return object_string(p, metadata, "namespace", "metadata.namespace", false, &op->namespace_);
}

/*
 * Validate the RFC 6902 operations in @op->patch with ao_jsonpatch_parse(),
 * which takes text: the array is printed for it, and its validated copy kept.
 */
static int check_json_patch(struct parser *p, struct ao_object_patch_op *op)
{
        _cleanup_free_ char *text = cJSON_PrintUnformatted(op->patch);
        struct ao_error err = {0};
        cJSON *ops = NULL;

        if (!text)
                return op_fail(p, -ENOMEM, "out of memory");
        if (ao_jsonpatch_parse(text, strlen(text), "jsonPatch", &ops, &err) < 0) {
                /*
                 * "jsonPatch:1:1: operation 2: unknown op 'x'": the position in the printed text means
                 * nothing to the user, so it goes, and the index becomes "jsonPatch[2]".
                 */
                const char *why = strstr(err.msg, ": ");
                size_t i = 0;
                int skip = 0;
                why = why ? why + 2 : err.msg;
                if (sscanf(why, "operation %zu: %n", &i, &skip) == 1 && skip > 0)
                        return op_fail(p, err.code, "jsonPatch[%zu]: %s", i, why + skip);
                return op_fail(p, err.code, "jsonPatch: %s", why);
        }
        cJSON_Delete(op->patch);
        op->patch = ops;
        return 0;
}

/* "status" and "/status" both name the status subresource; a name is one lowercase word. */
static int decode_subresource(struct parser *p, const cJSON *json, struct ao_object_patch_op *op)
{
        const char *s;

        if (!json)
                return 0;
        s = json->valuestring + (json->valuestring[0] == '/');
        if (s[0] == '\0')
                return json->valuestring[0] ? op_fail(p, -EINVAL, "subresource: '/' names none") : 0;
        if (strspn(s, "abcdefghijklmnopqrstuvwxyz") != strlen(s))
                return op_fail(p, -EINVAL, "subresource: '%s' is not a subresource name",
                               show(p, json->valuestring));
        op->subresource = ao_xstrdup(s);
        return 0;
}

/* The target of a non-Create operation, named by its fields. */
static int decode_target(struct parser *p, const struct fields *f, struct ao_object_patch_op *op)
{
        int r;

        if ((r = require(p, f->kind, "kind", op->type)) < 0 ||
            (r = require(p, f->name, "name", op->type)) < 0)
                return r;
        op->api_version = dup_string(f->api_version);
        op->kind = dup_string(f->kind);
        op->namespace_ = dup_string(f->namespace_);
        op->name = dup_string(f->name);
        return 0;
}

static int decode_by_type(struct parser *p, cJSON *doc, const struct fields *f, struct ao_object_patch_op *op)
{
        int r;

        if (is_create(op->type))
                return decode_object(p, doc, f, op);
        if ((r = decode_target(p, f, op)) < 0)
                return r;
        switch (op->type) {
        case AO_OBJECT_PATCH_JQ_PATCH:
                if ((r = require(p, f->jq_filter, "jqFilter", op->type)) < 0)
                        return r;
                op->jq_filter = ao_xstrdup(f->jq_filter->valuestring);
                return 0;
        case AO_OBJECT_PATCH_MERGE_PATCH:
                if ((r = require(p, f->merge_patch, "mergePatch", op->type)) < 0)
                        return r;
                return take_document(p, doc, f->merge_patch, "mergePatch", false, &op->patch);
        case AO_OBJECT_PATCH_JSON_PATCH:
                if ((r = require(p, f->json_patch, "jsonPatch", op->type)) < 0 ||
                    (r = take_document(p, doc, f->json_patch, "jsonPatch", true, &op->patch)) < 0)
                        return r;
                return check_json_patch(p, op);
        default:
                return 0;
        }
}

static int decode_op(struct parser *p, cJSON *doc, struct ao_object_patch_op *ret)
{
        struct ao_object_patch_op op = {0};
        struct fields f = {0};
        int r;

        if (!cJSON_IsObject(doc))
                return op_fail(p, -EINVAL, "must be an object");
        if ((r = read_fields(p, doc, &f)) < 0)
                return r;
        if (!f.operation || f.operation->valuestring[0] == '\0')
                return op_fail(p, -EINVAL, "operation: required");
        op.type = ao_object_patch_type_from_string(f.operation->valuestring);
        if (op.type < 0)
                return op_fail(
                    p, -EINVAL,
                    "operation: '%s' is not one of Create, CreateOrUpdate, CreateIfNotExists, "
                    "Delete, DeleteInBackground, DeleteNonCascading, JQPatch, MergePatch, JSONPatch",
                    show(p, f.operation->valuestring));
        op.ignore_missing = f.ignore_missing && cJSON_IsTrue(f.ignore_missing);
        op.ignore_hook_error = f.ignore_hook_error && cJSON_IsTrue(f.ignore_hook_error);
        r = decode_subresource(p, f.subresource, &op);
        if (r >= 0)
                r = decode_by_type(p, doc, &f, &op);
        if (r < 0) {
                op_done(&op);
                return r;
        }
        *ret = op;
        return 0;
}

/* ---- the stream ---------------------------------------------------------------------------------- */

/* Whether the text, past whitespace and a byte order mark, starts like JSON. */
static bool looks_like_json(const char *text, size_t len)
{
        size_t i = ao_input_bom(text, len);
        while (i < len && strchr(" \t\r\n", text[i]) && text[i] != '\0')
                i++;
        return i < len && (text[i] == '{' || text[i] == '[');
}

/* The documents of the stream, JSON first, then YAML. */
static int load_documents(const char *text, size_t len, cJSON **ret, struct ao_error *reterr)
{
        struct ao_error json_err = {0}, yaml_err = {0};
        cJSON *docs = NULL;

        if (ao_json_load_stream(text, len, SOURCE, &docs, &json_err) >= 0 ||
            ao_yaml_load_stream(text, len, SOURCE, &docs, &yaml_err) >= 0) {
                *ret = docs;
                return 0;
        }
        const struct ao_error *err = looks_like_json(text, len) ? &json_err : &yaml_err;
        return ao_error_set(reterr, err->code, "%s", err->msg);
}

int ao_object_patch_parse(const char *text, size_t len, struct ao_object_patch_ops *ret,
                          struct ao_error *reterr)
{
        _cleanup_(ao_object_patch_ops_done) struct ao_object_patch_ops ops = {0};
        _cleanup_(json_deletep) cJSON *docs = NULL;
        struct parser p = {.reterr = reterr};
        size_t n = 0;
        int r;

        if ((r = load_documents(text, len, &docs, reterr)) < 0)
                return r;
        for (const cJSON *d = docs->child; d; d = d->next)
                n++;
        if (n > AO_OBJECT_PATCH_MAX_OPERATIONS)
                return ao_error_set(reterr, -E2BIG, SOURCE ": more than %d operations",
                                    AO_OBJECT_PATCH_MAX_OPERATIONS);
        if (n > 0)
                ops.items = ao_xcalloc(n, sizeof(*ops.items));
        for (cJSON *d = docs->child; d; d = d->next) {
                r = decode_op(&p, d, &ops.items[ops.n]);
                if (r < 0)
                        break;
                ops.n++;
                p.index++;
        }
        ao_strbuf_done(&p.show);
        if (r < 0)
                return r;
        *ret = ops;
        ops = (struct ao_object_patch_ops){0};
        return 0;
}

/* ---- messages ------------------------------------------------------------------------------------ */

char *ao_object_patch_op_describe(const struct ao_object_patch_op *op)
{
        const char *type = ao_object_patch_type_to_string(op->type);
        struct ao_strbuf sb = {0};

        ao_strbuf_append(&sb, type ? type : "?");
        ao_strbuf_append_c(&sb, ' ');
        ao_strbuf_append_sanitized(&sb, op->kind ? op->kind : "?");
        ao_strbuf_append_c(&sb, ' ');
        if (op->namespace_) {
                ao_strbuf_append_sanitized(&sb, op->namespace_);
                ao_strbuf_append_c(&sb, '/');
        }
        ao_strbuf_append_sanitized(&sb, op->name ? op->name : "?");
        if (op->subresource)
                ao_strbuf_appendf(&sb, " (%s)", op->subresource);
        return ao_strbuf_steal(&sb);
}
