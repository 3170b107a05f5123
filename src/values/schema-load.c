/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/schema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <oniguruma.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"
#include "schema-internal.h"

/*
 * Loading: parse, then the transforms addon-operator applies
 * (pkg/values/validation/schema), in its order:
 *   config-values: $ref expansion, additionalProperties injection;
 *   values: x-extend (with the transformed config schema as parent),
 *           $ref expansion, additionalProperties injection;
 *   helm: a copy of values with x-required-for-helm merged into required.
 * Then every schema object is checked (unknown types, malformed keywords,
 * dangling $refs) and its regular expressions compiled, so validation
 * cannot meet a malformed schema.
 *
 * go-openapi expands $refs when the document is loaded (spec.ExpandSchema),
 * which is why injection and defaults reach into referenced definitions. A
 * $ref met again inside its own expansion stays a $ref and is resolved
 * lazily at validation, as go-openapi leaves circular refs. A $ref at the
 * root stays as well (the root's definitions must remain reachable).
 */

/* cJSON nodes that $ref expansion may copy into one document: definitions can double at each level. */
#define MAX_EXPANDED_NODES 200000u

struct load_ctx {
        const char *file;      /* borrowed: the file name errors give */
        struct ao_strbuf path; /* schema path of the current node, "properties.a" */
        const cJSON *defs;     /* borrowed: the root's definitions (a snapshot while expanding) */
        const char *stack[AO_SCHEMA_MAX_DEPTH]; /* borrowed: definitions being expanded */
        size_t n_stack;
        size_t expand_budget;
        struct ao_schema_compiled *compiled; /* owned until handed to the doc */
        size_t n_compiled;
        size_t cap_compiled;
        struct ao_error *reterr;
};

static size_t path_push(struct ao_strbuf *path, const char *segment)
{
        size_t old = path->len;

        if (path->len > 0)
                ao_strbuf_append_c(path, '.');
        ao_strbuf_append_sanitized(path, segment);
        return old;
}

static size_t path_push_index(struct ao_strbuf *path, const char *keyword, size_t i)
{
        size_t old = path_push(path, keyword);

        ao_strbuf_appendf(path, "[%zu]", i);
        return old;
}

static void path_pop(struct ao_strbuf *path, size_t len)
{
        path->len = len;
        if (path->buf)
                path->buf[len] = '\0';
}

/* "file: path.keyword: message", with the message made a printable single line. */
_printf_(3, 4) static int load_fail(struct load_ctx *c, const char *keyword, const char *fmt, ...)
{
        _cleanup_free_ char *text = NULL;
        struct ao_strbuf msg = {0};
        char raw[AO_ERROR_MSG_MAX];
        size_t old = c->path.len;
        va_list ap;
        int r;

        va_start(ap, fmt);
        (void) vsnprintf(raw, sizeof(raw), fmt, ap);
        va_end(ap);
        ao_strbuf_append_sanitized(&msg, raw);
        text = ao_strbuf_steal(&msg);

        if (keyword)
                (void) path_push(&c->path, keyword);
        if (c->path.len > 0)
                r = ao_error_set(c->reterr, -EINVAL, "%s: %s: %s", c->file, ao_strbuf_str(&c->path), text);
        else
                r = ao_error_set(c->reterr, -EINVAL, "%s: %s", c->file, text);
        path_pop(&c->path, old);
        return r;
}

static int load_oom(struct load_ctx *c)
{
        return ao_error_set(c->reterr, -ENOMEM, "%s: out of memory", c->file);
}

static cJSON *get(const cJSON *s, const char *key)
{
        return cJSON_GetObjectItemCaseSensitive(s, key);
}

/*
 * Call @fn for every subschema of @s with the path set to it: properties,
 * patternProperties (and definitions when asked), allOf/anyOf/oneOf, not,
 * additionalProperties, items and additionalItems. Malformed containers are skipped here;
 * check_keyword() reports them.
 */
static int walk_children(struct load_ctx *c, cJSON *s, bool definitions,
                         int (*fn)(struct load_ctx *c, cJSON *sub, int depth), int depth)
{
        static const char *const maps[] = {"properties", "patternProperties", "definitions"};
        static const char *const lists[] = {"allOf", "anyOf", "oneOf", "items"};
        static const char *const singles[] = {"not", "additionalProperties", "items", "additionalItems"};
        cJSON *m, *sub;
        size_t old, i;
        int r;

        for (i = 0; i < AO_ARRAY_SIZE(maps); i++) {
                if (!definitions && strcmp(maps[i], "definitions") == 0)
                        continue;
                m = get(s, maps[i]);
                if (!cJSON_IsObject(m))
                        continue;
                cJSON_ArrayForEach(sub, m)
                {
                        if (!cJSON_IsObject(sub))
                                continue;
                        old = path_push(&c->path, maps[i]);
                        (void) path_push(&c->path, sub->string);
                        r = fn(c, sub, depth + 1);
                        path_pop(&c->path, old);
                        if (r < 0)
                                return r;
                }
        }
        for (i = 0; i < AO_ARRAY_SIZE(lists); i++) {
                size_t n = 0;

                m = get(s, lists[i]);
                if (!cJSON_IsArray(m))
                        continue;
                cJSON_ArrayForEach(sub, m)
                {
                        if (cJSON_IsObject(sub)) {
                                old = path_push_index(&c->path, lists[i], n);
                                r = fn(c, sub, depth + 1);
                                path_pop(&c->path, old);
                                if (r < 0)
                                        return r;
                        }
                        n++;
                }
        }
        for (i = 0; i < AO_ARRAY_SIZE(singles); i++) {
                sub = get(s, singles[i]);
                if (!cJSON_IsObject(sub))
                        continue;
                old = path_push(&c->path, singles[i]);
                r = fn(c, sub, depth + 1);
                path_pop(&c->path, old);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- x-extend ---------------------------------------------------------------------------------- */

/* Members of parent[@key] first (the child's version where it has one), then the child's own. */
static int merge_members(cJSON *child, const cJSON *parent, const char *key)
{
        const cJSON *pm = get(parent, key), *p;
        cJSON *cm = get(child, key), *merged, *item;

        if (!cJSON_IsObject(pm) || (cm && !cJSON_IsObject(cm)))
                return 0; /* a malformed child is reported by the check */
        merged = cJSON_CreateObject();
        if (!merged)
                return -ENOMEM;
        cJSON_ArrayForEach(p, pm)
        {
                item = cm ? cJSON_DetachItemFromObjectCaseSensitive(cm, p->string) : NULL;
                if (!item)
                        item = cJSON_Duplicate(p, true);
                if (!item || !cJSON_AddItemToObject(merged, p->string, item)) {
                        cJSON_Delete(item);
                        cJSON_Delete(merged);
                        return -ENOMEM;
                }
        }
        while (cm && cm->child) {
                item = cJSON_DetachItemViaPointer(cm, cm->child);
                if (!cJSON_AddItemToObject(merged, item->string, item)) {
                        cJSON_Delete(item);
                        cJSON_Delete(merged);
                        return -ENOMEM;
                }
        }
        if (cm) {
                cm->child = merged->child;
                merged->child = NULL;
                cJSON_Delete(merged);
                return 0;
        }
        return cJSON_AddItemToObject(child, key, merged) ? 0 : (cJSON_Delete(merged), -ENOMEM);
}

static bool array_has_string(const cJSON *a, const char *s)
{
        const cJSON *e;

        cJSON_ArrayForEach(e, a)
        {
                if (cJSON_IsString(e) && strcmp(e->valuestring, s) == 0)
                        return true;
        }
        return false;
}

/* Append @from's strings not yet in @to; anything else is copied so that the check still sees it. */
static int append_unique(cJSON *to, const cJSON *from)
{
        const cJSON *e;
        cJSON *copy;

        cJSON_ArrayForEach(e, from)
        {
                if (cJSON_IsString(e) && array_has_string(to, e->valuestring))
                        continue;
                copy = cJSON_Duplicate(e, true);
                if (!copy || !cJSON_AddItemToArray(to, copy)) {
                        cJSON_Delete(copy);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int merge_required(cJSON *child, const cJSON *parent)
{
        const cJSON *pr = get(parent, "required");
        cJSON *cr = get(child, "required"), *merged;

        if (!cJSON_IsArray(pr) || (cr && !cJSON_IsArray(cr)))
                return 0;
        merged = cJSON_CreateArray();
        if (!merged || append_unique(merged, pr) < 0 || (cr && append_unique(merged, cr) < 0)) {
                cJSON_Delete(merged);
                return -ENOMEM;
        }
        if (cr)
                return cJSON_ReplaceItemInObjectCaseSensitive(child, "required", merged)
                           ? 0
                           : (cJSON_Delete(merged), -ENOMEM);
        return cJSON_AddItemToObject(child, "required", merged) ? 0 : (cJSON_Delete(merged), -ENOMEM);
}

static int add_copy(cJSON *to, const char *key, const cJSON *value)
{
        cJSON *copy = cJSON_Duplicate(value, true);

        if (!copy || !cJSON_AddItemToObject(to, key, copy)) {
                cJSON_Delete(copy);
                return -ENOMEM;
        }
        return 0;
}

/* The parent's x-* extensions that the child does not set. */
static int merge_extensions(cJSON *child, const cJSON *parent)
{
        const cJSON *p;

        cJSON_ArrayForEach(p, parent)
        {
                if (strncmp(p->string, "x-", 2) != 0 || get(child, p->string))
                        continue;
                if (add_copy(child, p->string, p) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* title and description: the parent's only where the child's is missing or empty. */
static int inherit_text(cJSON *child, const cJSON *parent, const char *key)
{
        const cJSON *pv = get(parent, key);
        cJSON *cv = get(child, key);

        if (!pv || (cv && !(cJSON_IsString(cv) && cv->valuestring[0] == '\0')))
                return 0;
        if (cv)
                cJSON_DeleteItemFromObjectCaseSensitive(child, key);
        return add_copy(child, key, pv);
}

static int apply_extend(struct load_ctx *c, cJSON *child, const cJSON *parent)
{
        static const char *const maps[] = {"definitions", "properties", "patternProperties"};
        const cJSON *x = get(child, "x-extend");

        if (!x)
                return 0;
        if (!cJSON_IsObject(x) || !cJSON_IsString(get(x, "schema")))
                return load_fail(c, "x-extend", "must be a mapping with a 'schema' file name");
        /* Like addon-operator, the parent is always config-values.yaml, whatever 'schema' names. */
        if (!parent)
                return 0;
        for (size_t i = 0; i < AO_ARRAY_SIZE(maps); i++)
                if (merge_members(child, parent, maps[i]) < 0)
                        return load_oom(c);
        if (merge_required(child, parent) < 0 || merge_extensions(child, parent) < 0 ||
            inherit_text(child, parent, "title") < 0 || inherit_text(child, parent, "description") < 0)
                return load_oom(c);
        return 0;
}

/* ---- $ref -------------------------------------------------------------------------------------- */

/* The name in "#/definitions/<name>" with JSON-pointer escapes undone (malloc'd), or NULL. */
static char *ref_name(const char *ref)
{
        static const char prefix[] = "#/definitions/";
        struct ao_strbuf name = {0};

        if (strncmp(ref, prefix, sizeof(prefix) - 1) != 0)
                return NULL;
        ref += sizeof(prefix) - 1;
        if (*ref == '\0' || strchr(ref, '/'))
                return NULL;
        /* JSON pointer escapes (RFC 6901): ~1 is '/', ~0 is '~'. */
        for (; *ref; ref++) {
                if (*ref != '~') {
                        ao_strbuf_append_c(&name, *ref);
                        continue;
                }
                if (ref[1] != '0' && ref[1] != '1') {
                        ao_strbuf_done(&name);
                        return NULL;
                }
                ao_strbuf_append_c(&name, ref[1] == '0' ? '~' : '/');
                ref++;
        }
        return ao_strbuf_steal(&name);
}

static size_t count_nodes(const cJSON *n)
{
        size_t count = 1;
        const cJSON *child;

        cJSON_ArrayForEach(child, n) count += count_nodes(child);
        return count;
}

static bool on_stack(const struct load_ctx *c, const char *name)
{
        for (size_t i = 0; i < c->n_stack; i++)
                if (strcmp(c->stack[i], name) == 0)
                        return true;
        return false;
}

static int expand_node(struct load_ctx *c, cJSON *s, int depth);

/* Replace @s's members with a copy of the definition @name, then expand that with @name on the stack. */
static int expand_ref(struct load_ctx *c, cJSON *s, const char *name, const cJSON *target, int depth)
{
        size_t n = count_nodes(target);
        cJSON *copy, *old;
        int r;

        if (n > c->expand_budget)
                return load_fail(c, "$ref", "expanding '#/definitions/%s' makes the schema too large", name);
        if (c->n_stack >= AO_ARRAY_SIZE(c->stack))
                return load_fail(c, "$ref", "chain of references too long");
        c->expand_budget -= n;
        copy = cJSON_Duplicate(target, true);
        if (!copy)
                return load_oom(c);
        /* Swap contents rather than nodes, so @s keeps its key and its place in the parent. */
        old = s->child;
        s->child = copy->child;
        copy->child = old;
        cJSON_Delete(copy);

        c->stack[c->n_stack++] = name;
        r = expand_node(c, s, depth);
        c->n_stack--;
        return r;
}

static int expand_node(struct load_ctx *c, cJSON *s, int depth)
{
        _cleanup_free_ char *name = NULL;
        const cJSON *ref, *target;

        if (depth > AO_SCHEMA_MAX_DEPTH)
                return load_fail(c, NULL, "schema nested more than %d levels deep", AO_SCHEMA_MAX_DEPTH);
        ref = get(s, "$ref");
        if (cJSON_IsString(ref) && (name = ref_name(ref->valuestring)) && !on_stack(c, name)) {
                target = get(c->defs, name);
                if (cJSON_IsObject(target))
                        return expand_ref(c, s, name, target, depth);
        }
        return walk_children(c, s, false, expand_node, depth);
}

static int expand_refs(struct load_ctx *c, cJSON *root)
{
        cJSON *snapshot = NULL;
        int r;

        if (get(root, "definitions")) {
                /* Expansion reads definitions while it rewrites the tree: read from a copy. */
                snapshot = cJSON_Duplicate(get(root, "definitions"), true);
                if (!snapshot)
                        return load_oom(c);
        }
        c->defs = snapshot;
        c->expand_budget = MAX_EXPANDED_NODES;
        r = walk_children(c, root, false, expand_node, 0);
        c->defs = NULL;
        cJSON_Delete(snapshot);
        return r;
}

/* ---- additionalProperties: false --------------------------------------------------------------- */

static bool sets_additional(const cJSON *s)
{
        /* A schema keeping unknown fields (Kubernetes structural schemas) allows them. */
        return get(s, "additionalProperties") || cJSON_IsTrue(get(s, "x-kubernetes-preserve-unknown-fields"));
}

/*
 * additionalProperties is false wherever a schema describes its keys
 * (properties or patternProperties) without setting it: at this schema, in
 * properties that do not set it (recursively), and in items. A property
 * that sets it keeps its subtree as written. An object schema that names no
 * keys at all stays open: the VALUES docs call such a property ("discovery:
 * {type: object}") "an optional object with no restrictions on keys", and
 * the docs are the contract. Neither allOf & co nor definitions are visited.
 */
static bool describes_keys(const cJSON *s)
{
        return get(s, "properties") || get(s, "patternProperties");
}

static int inject_additional(cJSON *s)
{
        cJSON *props = get(s, "properties"), *items = get(s, "items"), *sub;

        if (!sets_additional(s) && describes_keys(s) && !cJSON_AddFalseToObject(s, "additionalProperties"))
                return -ENOMEM;
        if (cJSON_IsObject(props))
                cJSON_ArrayForEach(sub, props)
                {
                        if (cJSON_IsObject(sub) && !sets_additional(sub) && inject_additional(sub) < 0)
                                return -ENOMEM;
                }
        if (cJSON_IsObject(items))
                return inject_additional(items);
        if (cJSON_IsArray(items))
                cJSON_ArrayForEach(sub, items)
                {
                        if (cJSON_IsObject(sub) && inject_additional(sub) < 0)
                                return -ENOMEM;
                }
        return 0;
}

/* ---- x-required-for-helm ----------------------------------------------------------------------- */

static int merge_helm_required(cJSON *s)
{
        const cJSON *x = get(s, "x-required-for-helm");
        cJSON *req = get(s, "required"), *one;
        int r;

        if (!x)
                return 0;
        if (!req) {
                req = cJSON_AddArrayToObject(s, "required");
                if (!req)
                        return -ENOMEM;
        }
        if (!cJSON_IsArray(req))
                return 0;
        if (cJSON_IsArray(x))
                return append_unique(req, x);
        if (!cJSON_IsString(x))
                return 0;
        one = cJSON_CreateArray();
        if (!one || !cJSON_AddItemToArray(one, cJSON_CreateString(x->valuestring))) {
                cJSON_Delete(one);
                return -ENOMEM;
        }
        r = append_unique(req, one);
        cJSON_Delete(one);
        return r;
}

/* Every level reached through properties and items, as addon-operator's RequiredForHelmTransformer. */
static int apply_helm_required(cJSON *s)
{
        cJSON *props = get(s, "properties"), *items = get(s, "items"), *sub;

        if (merge_helm_required(s) < 0)
                return -ENOMEM;
        if (cJSON_IsObject(props))
                cJSON_ArrayForEach(sub, props)
                {
                        if (cJSON_IsObject(sub) && apply_helm_required(sub) < 0)
                                return -ENOMEM;
                }
        if (cJSON_IsObject(items))
                return apply_helm_required(items);
        if (cJSON_IsArray(items))
                cJSON_ArrayForEach(sub, items)
                {
                        if (cJSON_IsObject(sub) && apply_helm_required(sub) < 0)
                                return -ENOMEM;
                }
        return 0;
}

/* ---- checking and compiling -------------------------------------------------------------------- */

static bool utf8_valid(const char *s)
{
        size_t n = strlen(s), len;

        for (size_t i = 0; i < n; i += len) {
                len = ao_utf8_sequence_length((const unsigned char *) s + i, n - i);
                if (len == 0)
                        return false;
        }
        return true;
}

static void add_compiled(struct load_ctx *c, struct ao_schema_compiled entry)
{
        if (c->n_compiled == c->cap_compiled) {
                c->cap_compiled = c->cap_compiled ? 2 * c->cap_compiled : 8;
                c->compiled = ao_xreallocarray(c->compiled, c->cap_compiled, sizeof(*c->compiled));
        }
        c->compiled[c->n_compiled++] = entry;
}

static int compile_regex(struct load_ctx *c, const cJSON *node, const char *pattern, const char *keyword)
{
        OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        OnigErrorInfo einfo = {0};
        OnigRegex re;
        int r;

        if (!utf8_valid(pattern))
                return load_fail(c, keyword, "regular expression '%s' is not valid UTF-8", pattern);
        /* Perl_NG is the oniguruma syntax closest to ECMA 262, which OpenAPI refers to. */
        r = onig_new(&re, (const OnigUChar *) pattern, (const OnigUChar *) pattern + strlen(pattern),
                     ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_PERL_NG, &einfo);
        if (r != ONIG_NORMAL) {
                (void) onig_error_code_to_str(msg, r, &einfo);
                return load_fail(c, keyword, "invalid regular expression '%s': %s", pattern,
                                 (const char *) msg);
        }
        add_compiled(c, (struct ao_schema_compiled){.node = node, .re = re});
        return 0;
}

static const char *const type_names[] = {"string", "number", "integer", "boolean", "object", "array", "null"};

static bool type_name_valid(const cJSON *t)
{
        if (!cJSON_IsString(t))
                return false;
        for (size_t i = 0; i < AO_ARRAY_SIZE(type_names); i++)
                if (strcmp(t->valuestring, type_names[i]) == 0)
                        return true;
        return false;
}

static int check_type(struct load_ctx *c, const cJSON *v)
{
        const cJSON *e;

        if (cJSON_IsString(v))
                return type_name_valid(v) ? 0 : load_fail(c, "type", "unknown type '%s'", v->valuestring);
        if (!cJSON_IsArray(v) || !v->child)
                return load_fail(c, "type", "must be a type name or a list of them");
        cJSON_ArrayForEach(e, v)
        {
                if (!type_name_valid(e))
                        return load_fail(c, "type", "unknown type '%s'",
                                         cJSON_IsString(e) ? e->valuestring : "(not a string)");
        }
        return 0;
}

static bool all_strings(const cJSON *a)
{
        const cJSON *e;

        cJSON_ArrayForEach(e, a)
        {
                if (!cJSON_IsString(e))
                        return false;
        }
        return true;
}

static bool all_objects(const cJSON *a)
{
        const cJSON *e;

        cJSON_ArrayForEach(e, a)
        {
                if (!cJSON_IsObject(e))
                        return false;
        }
        return true;
}

static bool is_count(const cJSON *v)
{
        return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0 &&
               floor(v->valuedouble) == v->valuedouble;
}

static int check_keyword(struct load_ctx *c, const cJSON *kw)
{
        static const char *const counts[] = {"minItems",  "maxItems",      "minLength",
                                             "maxLength", "minProperties", "maxProperties"};
        static const char *const bools[] = {"uniqueItems", "nullable",
                                            "x-kubernetes-preserve-unknown-fields"};
        const char *k = kw->string;
        const cJSON *e;
        _cleanup_free_ char *name = NULL;
        int r;

        for (size_t i = 0; i < AO_ARRAY_SIZE(counts); i++)
                if (strcmp(k, counts[i]) == 0)
                        return is_count(kw) ? 0 : load_fail(c, k, "must be a non-negative integer");
        for (size_t i = 0; i < AO_ARRAY_SIZE(bools); i++)
                if (strcmp(k, bools[i]) == 0)
                        return cJSON_IsBool(kw) ? 0 : load_fail(c, k, "must be a boolean");
        if (strcmp(k, "type") == 0)
                return check_type(c, kw);
        if (strcmp(k, "format") == 0)
                return cJSON_IsString(kw) ? 0 : load_fail(c, k, "must be a string");
        if (strcmp(k, "enum") == 0)
                return cJSON_IsArray(kw) ? 0 : load_fail(c, k, "must be a list");
        if (strcmp(k, "required") == 0)
                return cJSON_IsArray(kw) && all_strings(kw) ? 0
                                                            : load_fail(c, k, "must be a list of strings");
        if (strcmp(k, "x-required-for-helm") == 0)
                return cJSON_IsString(kw) || (cJSON_IsArray(kw) && all_strings(kw))
                           ? 0
                           : load_fail(c, k, "must be a string or a list of strings");
        if (strcmp(k, "properties") == 0 || strcmp(k, "definitions") == 0 ||
            strcmp(k, "patternProperties") == 0) {
                if (!cJSON_IsObject(kw) || !all_objects(kw))
                        return load_fail(c, k, "must be a mapping of schemas");
                if (strcmp(k, "patternProperties") == 0)
                        cJSON_ArrayForEach(e, kw)
                        {
                                r = compile_regex(c, e, e->string, k);
                                if (r < 0)
                                        return r;
                        }
                return 0;
        }
        if (strcmp(k, "additionalProperties") == 0 || strcmp(k, "additionalItems") == 0)
                return cJSON_IsBool(kw) || cJSON_IsObject(kw)
                           ? 0
                           : load_fail(c, k, "must be a boolean or a schema");
        if (strcmp(k, "items") == 0)
                return cJSON_IsObject(kw) || (cJSON_IsArray(kw) && all_objects(kw))
                           ? 0
                           : load_fail(c, k, "must be a schema or a list of schemas");
        if (strcmp(k, "minimum") == 0 || strcmp(k, "maximum") == 0)
                return cJSON_IsNumber(kw) ? 0 : load_fail(c, k, "must be a number");
        if (strcmp(k, "exclusiveMinimum") == 0 || strcmp(k, "exclusiveMaximum") == 0)
                return cJSON_IsNumber(kw) || cJSON_IsBool(kw)
                           ? 0
                           : load_fail(c, k, "must be a boolean or a number");
        if (strcmp(k, "multipleOf") == 0)
                return cJSON_IsNumber(kw) && kw->valuedouble > 0 && isfinite(kw->valuedouble)
                           ? 0
                           : load_fail(c, k, "must be a number greater than 0");
        if (strcmp(k, "pattern") == 0)
                return cJSON_IsString(kw) ? compile_regex(c, kw, kw->valuestring, k)
                                          : load_fail(c, k, "must be a string");
        if (strcmp(k, "allOf") == 0 || strcmp(k, "anyOf") == 0 || strcmp(k, "oneOf") == 0)
                return cJSON_IsArray(kw) && kw->child && all_objects(kw)
                           ? 0
                           : load_fail(c, k, "must be a non-empty list of schemas");
        if (strcmp(k, "not") == 0)
                return cJSON_IsObject(kw) ? 0 : load_fail(c, k, "must be a schema");
        if (strcmp(k, "$ref") == 0) {
                if (!cJSON_IsString(kw))
                        return load_fail(c, k, "must be a string");
                name = ref_name(kw->valuestring);
                if (!name)
                        return load_fail(c, k, "'%s' is not a local reference '#/definitions/<name>'",
                                         kw->valuestring);
                e = get(c->defs, name);
                if (!cJSON_IsObject(e))
                        return load_fail(c, k, "'%s' not found", kw->valuestring);
                add_compiled(c, (struct ao_schema_compiled){.node = kw, .target = e});
                return 0;
        }
        /* Anything else (description, default, example, x-*, ...) is an annotation. */
        return 0;
}

static int check_node(struct load_ctx *c, cJSON *s, int depth)
{
        const cJSON *kw;
        int r;

        if (depth > AO_SCHEMA_MAX_DEPTH)
                return load_fail(c, NULL, "schema nested more than %d levels deep", AO_SCHEMA_MAX_DEPTH);
        cJSON_ArrayForEach(kw, s)
        {
                r = check_keyword(c, kw);
                if (r < 0)
                        return r;
        }
        return walk_children(c, s, true, check_node, depth);
}

static int compare_compiled(const void *a, const void *b)
{
        uintptr_t x = (uintptr_t) ((const struct ao_schema_compiled *) a)->node;
        uintptr_t y = (uintptr_t) ((const struct ao_schema_compiled *) b)->node;

        return x < y ? -1 : x > y;
}

static void free_compiled(struct ao_schema_compiled *compiled, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (compiled[i].re)
                        onig_free(compiled[i].re);
        free(compiled);
}

/* Check @root and compile it into @doc, which takes @root over on success. */
static int finish_doc(struct load_ctx *c, cJSON *root, struct ao_schema_doc *doc)
{
        int r;

        c->defs = get(root, "definitions");
        c->compiled = NULL;
        c->n_compiled = c->cap_compiled = 0;
        r = check_node(c, root, 0);
        c->defs = NULL;
        if (r < 0) {
                free_compiled(c->compiled, c->n_compiled);
                c->compiled = NULL;
                return r;
        }
        if (c->n_compiled > 0)
                qsort(c->compiled, c->n_compiled, sizeof(*c->compiled), compare_compiled);
        *doc = (struct ao_schema_doc){.root = root, .compiled = c->compiled, .n_compiled = c->n_compiled};
        c->compiled = NULL;
        return 0;
}

static const struct ao_schema_compiled *find_compiled(const struct ao_schema_doc *doc, const cJSON *node)
{
        size_t lo = 0, hi = doc->n_compiled;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if ((uintptr_t) doc->compiled[mid].node < (uintptr_t) node)
                        lo = mid + 1;
                else if (doc->compiled[mid].node == node)
                        return &doc->compiled[mid];
                else
                        hi = mid;
        }
        return NULL;
}

OnigRegex schema_regex_find(const struct ao_schema_doc *doc, const cJSON *node)
{
        const struct ao_schema_compiled *e = find_compiled(doc, node);

        return e ? e->re : NULL;
}

const cJSON *schema_ref_target(const struct ao_schema_doc *doc, const cJSON *node)
{
        const struct ao_schema_compiled *e = find_compiled(doc, node);

        return e ? e->target : NULL;
}

/* ---- the documents ----------------------------------------------------------------------------- */

static int prepare_config(struct load_ctx *c, cJSON *root, struct ao_schema_doc *doc)
{
        int r = expand_refs(c, root);

        if (r < 0)
                return r;
        if (inject_additional(root) < 0)
                return load_oom(c);
        return finish_doc(c, root, doc);
}

/* values and helm from @root (taken over on success; on failure the caller still owns it). */
static int prepare_values(struct load_ctx *c, cJSON *root, const cJSON *parent, struct ao_schema *s)
{
        cJSON *helm;
        int r;

        r = apply_extend(c, root, parent);
        if (r < 0)
                return r;
        r = expand_refs(c, root);
        if (r < 0)
                return r;
        if (inject_additional(root) < 0)
                return load_oom(c);
        r = finish_doc(c, root, &s->docs[AO_SCHEMA_VALUES]);
        if (r < 0)
                return r;

        helm = cJSON_Duplicate(root, true);
        if (!helm || apply_helm_required(helm) < 0) {
                cJSON_Delete(helm);
                return load_oom(c);
        }
        r = finish_doc(c, helm, &s->docs[AO_SCHEMA_HELM]);
        if (r < 0)
                cJSON_Delete(helm);
        return r;
}

/* A document that is null (an empty file) means no schema; anything but a mapping is an error. */
static int document_kind(struct load_ctx *c, const cJSON *doc)
{
        if (!doc || cJSON_IsNull(doc))
                return 0;
        if (!cJSON_IsObject(doc))
                return load_fail(c, NULL, "a schema must be a mapping");
        return 1;
}

static int build(const char *config_name, cJSON **config, const char *values_name, cJSON **values,
                 struct ao_schema **ret, struct ao_error *reterr)
{
        struct load_ctx c = {.reterr = reterr};
        struct ao_schema *s = ao_xcalloc(1, sizeof(*s));
        int r;

        c.file = config_name;
        r = document_kind(&c, *config);
        if (r > 0) {
                r = prepare_config(&c, *config, &s->docs[AO_SCHEMA_CONFIG]);
                if (r >= 0)
                        *config = NULL;
        }
        if (r >= 0) {
                c.file = values_name;
                r = document_kind(&c, *values);
                if (r > 0) {
                        r = prepare_values(&c, *values, s->docs[AO_SCHEMA_CONFIG].root, s);
                        if (r >= 0 || s->docs[AO_SCHEMA_VALUES].root == *values)
                                *values = NULL; /* taken over by the values doc */
                }
        }
        ao_strbuf_done(&c.path);
        if (r < 0) {
                ao_schema_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

int ao_schema_from_json(const cJSON *config_values, const cJSON *values, struct ao_schema **ret,
                        struct ao_error *reterr)
{
        cJSON *config = config_values ? cJSON_Duplicate(config_values, true) : NULL;
        cJSON *vals = values ? cJSON_Duplicate(values, true) : NULL;
        int r;

        if ((config_values && !config) || (values && !vals))
                r = ao_error_set(reterr, -ENOMEM, "schema: out of memory");
        else
                r = build("config-values.yaml", &config, "values.yaml", &vals, ret, reterr);
        cJSON_Delete(config);
        cJSON_Delete(vals);
        return r;
}

/* A missing file (or directory) means no schema. */
static int load_optional(const char *path, cJSON **ret, struct ao_error *reterr)
{
        struct ao_error err = {0};
        int r = ao_yaml_load_file(path, ret, &err);

        if (r == -ENOENT || r == -ENOTDIR) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return ao_error_set(reterr, r, "%s", err.msg);
        return 0;
}

int ao_schema_load_dir(const char *dir, struct ao_schema **ret, struct ao_error *reterr)
{
        struct ao_strbuf sb = {0};
        _cleanup_free_ char *config_path = NULL, *values_path = NULL;
        cJSON *config = NULL, *values = NULL;
        int r;

        ao_strbuf_appendf(&sb, "%s/config-values.yaml", dir);
        config_path = ao_strbuf_steal(&sb);
        ao_strbuf_appendf(&sb, "%s/values.yaml", dir);
        values_path = ao_strbuf_steal(&sb);
        r = load_optional(config_path, &config, reterr);
        if (r >= 0)
                r = load_optional(values_path, &values, reterr);
        if (r >= 0)
                r = build(config_path, &config, values_path, &values, ret, reterr);
        cJSON_Delete(config);
        cJSON_Delete(values);
        return r;
}

struct ao_schema *ao_schema_free(struct ao_schema *s)
{
        if (!s)
                return NULL;
        for (size_t i = 0; i < AO_ARRAY_SIZE(s->docs); i++) {
                cJSON_Delete(s->docs[i].root);
                free_compiled(s->docs[i].compiled, s->docs[i].n_compiled);
        }
        free(s);
        return NULL;
}

bool ao_schema_has(const struct ao_schema *s, enum ao_schema_kind kind)
{
        return s && kind >= 0 && kind < _AO_SCHEMA_KIND_MAX && s->docs[kind].root;
}
