/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/jsonpatch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/input.h"
#include "ao/quote.h"
#include "ao/string-table.h"

/*
 * Parsing: the stream is walked one top-level value at a time with
 * cJSON_ParseWithLengthOpts(), which reports where each value ends. cJSON is
 * laxer than JSON in ways that would change meaning, so before a value is
 * accepted its text is scanned for what cJSON lets through silently: raw
 * control characters (cJSON skips any byte <= 0x20 as whitespace and copies
 * them into strings) and "\u0000", which cJSON decodes into a NUL that cuts
 * the string short ("/a\u0000b" would become "/a"). Objects with a key
 * twice are refused too: cJSON keeps both, Go's encoding/json the last.
 *
 * Applying: the operations run on a copy of the document (cJSON_Duplicate)
 * that is swapped into the caller's root node at the end, so a failure
 * anywhere leaves the document untouched, and an operation on "" can replace
 * the whole document although the caller holds a pointer to its root.
 *
 * Depth: cJSON_Duplicate and cJSON_Delete recurse. Every operation that
 * puts a value somewhere checks that it ends up at most
 * AO_JSONPATCH_MAX_DEPTH deep (with an iterative walk), so the working copy
 * never nests deeper than the caller's document or that limit, whichever is
 * more, and the recursion stays bounded. Values in the operations themselves
 * nest at most CJSON_NESTING_LIMIT (1000) deep, which bounds the recursion of
 * equal() and find_duplicate_key().
 */

#define SHOW_MAX   128 /* bytes of a user string quoted in an error, "..." included */
#define REASON_MAX 256 /* why an operation is invalid */

static const char *const op_names[_AO_JSONPATCH_OP_MAX] = {
    [AO_JSONPATCH_ADD] = "add",   [AO_JSONPATCH_REMOVE] = "remove", [AO_JSONPATCH_REPLACE] = "replace",
    [AO_JSONPATCH_MOVE] = "move", [AO_JSONPATCH_COPY] = "copy",     [AO_JSONPATCH_TEST] = "test",
};

/* One operation, decoded; the strings and value are borrowed from its JSON object. */
struct op {
        enum ao_jsonpatch_op_type type;
        const char *path;
        const char *from;   /* NULL unless move or copy */
        const cJSON *value; /* NULL unless add, replace or test */
};

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static bool is_container(const cJSON *node)
{
        return cJSON_IsObject(node) || cJSON_IsArray(node);
}

/* The first @len bytes of @s for an error message (ao_quote_bytes(): "\x0a" for a newline). */
static const char *show(char buf[static SHOW_MAX], const char *s, size_t len)
{
        return ao_quote_bytes(buf, SHOW_MAX, s, len);
}

static const char *show_str(char buf[static SHOW_MAX], const char *s)
{
        return show(buf, s, strlen(s));
}

/* ---- operations: decoding and validation -------------------------------------------------------- */

AO_PRIVATE_STRING_TABLE_FROM_STRING(op, enum ao_jsonpatch_op_type, op_names);

/* Write why an operation is invalid to @reason; returns -EINVAL. */
static int invalid(char reason[static REASON_MAX], const char *fmt, ...) _printf_(2, 3);
static int invalid(char reason[static REASON_MAX], const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(reason, REASON_MAX, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* The JSON Pointer in member @name of @json. */
static int pointer_member(const cJSON *json, const char *name, const char **ret,
                          char reason[static REASON_MAX])
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(json, name);
        char buf[SHOW_MAX];

        if (!m)
                return invalid(reason, "missing '%s'", name);
        if (!cJSON_IsString(m))
                return invalid(reason, "'%s' is not a string", name);
        if (!ao_json_pointer_valid(m->valuestring))
                return invalid(reason, "'%s' is not a JSON Pointer: '%s'", name,
                               show_str(buf, m->valuestring));
        *ret = m->valuestring;
        return 0;
}

static int decode_op(const cJSON *json, struct op *ret, char reason[static REASON_MAX])
{
        struct op op = {0};
        char buf[SHOW_MAX];

        if (!cJSON_IsObject(json))
                return invalid(reason, "expected an operation object");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(json, "op");
        if (!name)
                return invalid(reason, "missing 'op'");
        if (!cJSON_IsString(name))
                return invalid(reason, "'op' is not a string");
        op.type = op_from_string(name->valuestring);
        if (op.type < 0)
                return invalid(reason, "unknown op '%s'", show_str(buf, name->valuestring));
        if (pointer_member(json, "path", &op.path, reason) < 0)
                return -EINVAL;
        if ((op.type == AO_JSONPATCH_MOVE || op.type == AO_JSONPATCH_COPY) &&
            pointer_member(json, "from", &op.from, reason) < 0)
                return -EINVAL;
        if (op.type == AO_JSONPATCH_ADD || op.type == AO_JSONPATCH_REPLACE || op.type == AO_JSONPATCH_TEST) {
                op.value = cJSON_GetObjectItemCaseSensitive(json, "value");
                if (!op.value)
                        return invalid(reason, "missing 'value'");
        }
        *ret = op;
        return 0;
}

static int compare_names(const void *a, const void *b)
{
        const cJSON *x = *(const cJSON *const *) a, *y = *(const cJSON *const *) b;
        return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

static size_t count_children(const cJSON *node, size_t stop)
{
        size_t n = 0;
        for (const cJSON *c = node->child; c && n < stop; c = c->next)
                n++;
        return n;
}

/* The members of object @json, sorted by name: malloc'd, @n entries. */
static const cJSON **sorted_members(const cJSON *json, size_t n)
{
        const cJSON **members = ao_xreallocarray(NULL, n, sizeof(*members));
        size_t i = 0;
        for (const cJSON *c = json->child; c; c = c->next)
                members[i++] = c;
        qsort(members, n, sizeof(*members), compare_names);
        return members;
}

/* A member name that occurs twice in one object of @json (at any depth), or NULL. */
static const char *find_duplicate_key(const cJSON *json)
{
        const char *dup = NULL;
        if (!is_container(json))
                return NULL;
        size_t n = count_children(json, 3);
        if (cJSON_IsObject(json) && n > 1) {
                n = count_children(json, SIZE_MAX);
                const cJSON **members = sorted_members(json, n);
                for (size_t i = 1; i < n && !dup; i++)
                        if (compare_names(&members[i - 1], &members[i]) == 0)
                                dup = members[i]->string;
                free(members);
        }
        for (const cJSON *c = json->child; c && !dup; c = c->next)
                dup = find_duplicate_key(c);
        return dup;
}

/* ---- parsing the stream ---------------------------------------------------------------------------- */

struct stream {
        const char *name;
        const char *text; /* borrowed, NUL-terminated copy of the input */
        size_t len;
        cJSON *ops; /* owned: every operation so far, in order */
        size_t n_ops;
        struct ao_error *reterr;
};

static int stream_fail(const struct stream *s, size_t offset, int code, const char *fmt, ...) _printf_(4, 5);
static int stream_fail(const struct stream *s, size_t offset, int code, const char *fmt, ...)
{
        char what[AO_ERROR_MSG_MAX];
        size_t line = 1, column = 1;
        va_list ap;

        /* 1-based line and column in characters, as ao_yaml_load() reports them. */
        for (size_t i = 0; i < offset && i < s->len; i++) {
                unsigned char c = (unsigned char) s->text[i];
                if (c == '\n' || (c == '\r' && s->text[i + 1] != '\n')) {
                        line++;
                        column = 1;
                } else if (c != '\r' && (c & 0xC0) != 0x80) {
                        column++;
                }
        }
        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        return ao_error_set(s->reterr, code, "%s:%zu:%zu: %s", s->name, line, column, what);
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_space(const struct stream *s, size_t pos)
{
        while (pos < s->len && is_json_space(s->text[pos]))
                pos++;
        return pos;
}

/* Refuse what cJSON accepted in [@start, @end) but JSON does not allow (see the top of the file). */
static int check_text(const struct stream *s, size_t start, size_t end)
{
        bool in_string = false;
        for (size_t i = start; i < end; i++) {
                unsigned char c = (unsigned char) s->text[i];
                if (c < 0x20 && (in_string || !is_json_space((char) c)))
                        return stream_fail(s, i, -EINVAL, "control character 0x%02x %s", c,
                                           in_string ? "in a string" : "outside a string");
                if (c == '"') {
                        in_string = !in_string;
                } else if (c == '\\' && in_string) {
                        if (strncmp(s->text + i + 1, "u0000", 5) == 0)
                                return stream_fail(s, i, -EINVAL, "\\u0000 in a string is not supported");
                        i++;
                }
        }
        return 0;
}

/* Validate the operation @json (owned) found in the value at @start and append it. */
static int add_op(struct stream *s, size_t start, cJSON *json)
{
        _cleanup_(json_deletep) cJSON *owned = json;
        char reason[REASON_MAX], buf[SHOW_MAX];
        struct op op;

        if (s->n_ops >= AO_JSONPATCH_MAX_OPS)
                return stream_fail(s, start, -E2BIG, "more than %d operations", AO_JSONPATCH_MAX_OPS);
        if (decode_op(json, &op, reason) < 0)
                return stream_fail(s, start, -EINVAL, "operation %zu: %s", s->n_ops, reason);
        const char *dup = find_duplicate_key(json);
        if (dup)
                return stream_fail(s, start, -EINVAL, "operation %zu: duplicate key '%s'", s->n_ops,
                                   show_str(buf, dup));
        cJSON_AddItemToArray(s->ops, TAKE_PTR(owned));
        s->n_ops++;
        return 0;
}

/* Parse the value at *@pos, an operation or an array of them, and move past it. */
static int parse_value(struct stream *s, size_t *pos)
{
        size_t start = *pos;
        const char *end = NULL;
        int r;

        if (s->text[start] != '[' && s->text[start] != '{')
                return stream_fail(s, start, -EINVAL, "expected an operation object or an array of them");
        _cleanup_(json_deletep) cJSON *value =
            cJSON_ParseWithLengthOpts(s->text + start, s->len - start, &end, 0);
        if (!value)
                return stream_fail(s, end ? (size_t) (end - s->text) : start, -EINVAL, "invalid JSON");
        r = check_text(s, start, (size_t) (end - s->text));
        if (r < 0)
                return r;
        *pos = (size_t) (end - s->text);
        if (cJSON_IsObject(value))
                return add_op(s, start, TAKE_PTR(value));
        for (cJSON *json; (json = value->child);) {
                r = add_op(s, start, cJSON_DetachItemViaPointer(value, json));
                if (r < 0)
                        return r;
        }
        return 0;
}

int ao_jsonpatch_parse(const char *text, size_t len, const char *filename, struct cJSON **ret_ops,
                       struct ao_error *reterr)
{
        struct stream s = {.name = filename ? filename : "<input>", .len = len, .reterr = reterr};
        _cleanup_(json_deletep) cJSON *ops = NULL;
        _cleanup_free_ char *copy = NULL;
        size_t pos = 0;
        int r;

        /* cJSON reads some tokens with strncmp(), which needs the NUL after the text. */
        r = ao_input_copy(text, len, AO_JSONPATCH_MAX_INPUT, s.name, "patch", &copy, &pos, reterr);
        if (r < 0)
                return r;
        s.text = copy;
        ops = s.ops = cJSON_CreateArray();
        if (!ops)
                return ao_error_set(reterr, -ENOMEM, "%s: out of memory", s.name);
        while ((pos = skip_space(&s, pos)) < len) {
                r = parse_value(&s, &pos);
                if (r < 0)
                        return r;
        }
        *ret_ops = TAKE_PTR(ops);
        return 0;
}

/* ---- applying -------------------------------------------------------------------------------------- */

struct patcher {
        cJSON *root; /* owned: the working copy */
        unsigned flags;
        size_t copied;       /* nodes created by copy operations so far */
        size_t index;        /* of the operation being applied */
        const struct op *op; /* borrowed: the operation being applied */
        struct ao_error err; /* the failure, copied to the caller's only when the patch fails */
};

/* Where a JSON Pointer leads in the working copy. */
struct location {
        cJSON *parent;       /* the container holding the node; NULL for the root */
        cJSON *node;         /* NULL when it does not exist yet (add's target) */
        const char *segment; /* the last segment, escaped: borrowed from the pointer */
        size_t len;
};

static int op_fail(struct patcher *p, int code, const char *fmt, ...) _printf_(3, 4);
static int op_fail(struct patcher *p, int code, const char *fmt, ...)
{
        char what[AO_ERROR_MSG_MAX], buf[SHOW_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (!p->op)
                return ao_error_set(&p->err, code, "operation %zu: %s", p->index, what);
        return ao_error_set(&p->err, code, "operation %zu (%s %s): %s", p->index, op_names[p->op->type],
                            p->op->path[0] ? show_str(buf, p->op->path) : "\"\"", what);
}

static int oom(struct patcher *p)
{
        return op_fail(p, -ENOMEM, "out of memory");
}

/* Failures while resolving @pointer, which is "from" when it is not the operation's path. */
static int locate_fail(struct patcher *p, const char *pointer, int code, const char *fmt, ...) _printf_(4, 5);
static int locate_fail(struct patcher *p, const char *pointer, int code, const char *fmt, ...)
{
        char what[AO_ERROR_MSG_MAX], buf[SHOW_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (pointer != p->op->path)
                return op_fail(p, code, "from '%s': %s", show_str(buf, pointer), what);
        return op_fail(p, code, "%s", what);
}

static const char *type_name(const cJSON *node)
{
        if (cJSON_IsNull(node))
                return "null";
        if (cJSON_IsBool(node))
                return "boolean";
        if (cJSON_IsNumber(node))
                return "number";
        if (cJSON_IsString(node))
                return "string";
        return "not JSON";
}

static size_t count_segments(const char *pointer)
{
        size_t n = 0;
        for (; *pointer; pointer++)
                n += *pointer == '/';
        return n;
}

static cJSON *nth_child(const cJSON *node, size_t n)
{
        cJSON *c = node->child;
        for (; c && n > 0; n--)
                c = c->next;
        return c;
}

/*
 * Find the array element of @parent that @segment names: a valid index below
 * the length, or with @insert up to the length and "-" (add's end of array).
 */
static int locate_element(struct patcher *p, const char *pointer, const cJSON *parent, bool insert,
                          struct location *loc)
{
        char buf[SHOW_MAX];
        size_t index;
        int r = ao_json_pointer_index(loc->segment, loc->len, &index);

        if (r < 0)
                return locate_fail(p, pointer, -EINVAL, "invalid array index '%s'",
                                   show(buf, loc->segment, loc->len));
        if (r > 0 && !insert)
                return locate_fail(p, pointer, -ENOENT, "array index '-' is past the end (length %zu)",
                                   count_children(parent, SIZE_MAX));
        if (r > 0)
                return 0; /* add appends */
        loc->node = nth_child(parent, index);
        if (loc->node || (insert && index == count_children(parent, SIZE_MAX)))
                return 0;
        return locate_fail(p, pointer, -ENOENT, "array index %s out of range (length %zu)",
                           show(buf, loc->segment, loc->len), count_children(parent, SIZE_MAX));
}

/* Find the last segment of @pointer in container @parent (named by the first @parent_len bytes). */
static int locate_in(struct patcher *p, const char *pointer, size_t parent_len, cJSON *parent, bool insert,
                     struct location *loc)
{
        char buf[SHOW_MAX];

        loc->parent = parent;
        if (cJSON_IsArray(parent))
                return locate_element(p, pointer, parent, insert, loc);
        if (!cJSON_IsObject(parent))
                return locate_fail(p, pointer, -ENOENT, "'%s' is a %s, not an object or array",
                                   show(buf, pointer, parent_len), type_name(parent));
        loc->node = ao_json_pointer_member(parent, loc->segment, loc->len);
        if (!loc->node && !insert)
                return locate_fail(p, pointer, -ENOENT, "path not found");
        return 0;
}

/*
 * Resolve @pointer in the working copy. Every segment but the last must name
 * an existing node; the last must too, unless @insert (add's rules: a new
 * object member, or an array position up to the length, "-" included).
 */
static int locate(struct patcher *p, const char *pointer, bool insert, struct location *ret)
{
        struct location loc = {.node = p->root};
        const char *segment = pointer + 1;

        if (pointer[0] == '\0') {
                *ret = loc;
                return 0;
        }
        for (;;) {
                cJSON *parent = loc.node;
                size_t len = strcspn(segment, "/");
                bool last = segment[len] == '\0';

                loc = (struct location){.segment = segment, .len = len};
                int r = locate_in(p, pointer, (size_t) (segment - 1 - pointer), parent, insert && last, &loc);
                if (r < 0)
                        return r;
                if (last)
                        break;
                segment += len + 1;
        }
        *ret = loc;
        return 0;
}

/*
 * Count the nodes of @node into @ret_nodes, checking on the way that it
 * nests at most @max_depth objects and arrays deep (a scalar is 0 deep) and
 * has at most @max_nodes nodes. Returns 0, -ELOOP (too deep) or -E2BIG (too
 * many), as soon as a limit is passed. Iterative: the tree may be deep.
 */
static int measure(const cJSON *node, size_t max_depth, size_t max_nodes, size_t *ret_nodes)
{
        const cJSON *stack[AO_JSONPATCH_MAX_DEPTH]; /* per open container: its next child to visit */
        size_t depth = 0, nodes = 1;

        if (is_container(node)) {
                if (max_depth < 1)
                        return -ELOOP;
                stack[depth++] = node->child;
        }
        while (depth > 0) {
                const cJSON *c = stack[depth - 1];
                if (!c) {
                        depth--;
                        continue;
                }
                stack[depth - 1] = c->next;
                if (++nodes > max_nodes)
                        return -E2BIG;
                if (is_container(c)) {
                        if (depth >= max_depth)
                                return -ELOOP;
                        stack[depth++] = c->child;
                }
        }
        *ret_nodes = nodes;
        return 0;
}

/*
 * Check that @node placed at @pointer nests at most AO_JSONPATCH_MAX_DEPTH
 * deep and, when it is a @copy, fits in what is left of the copy budget.
 */
static int check_size(struct patcher *p, const char *pointer, const cJSON *node, bool copy, size_t *ret_nodes)
{
        size_t above = count_segments(pointer), nodes = 0;
        int r = -ELOOP;

        if (above <= AO_JSONPATCH_MAX_DEPTH)
                r = measure(node, AO_JSONPATCH_MAX_DEPTH - above,
                            copy ? AO_JSONPATCH_MAX_COPIED_NODES - p->copied : SIZE_MAX, &nodes);
        if (r == -ELOOP)
                return op_fail(p, -E2BIG, "the value would nest deeper than %d levels",
                               AO_JSONPATCH_MAX_DEPTH);
        if (r < 0)
                return op_fail(p, -E2BIG, "copies would create more than %u nodes",
                               AO_JSONPATCH_MAX_COPIED_NODES);
        if (ret_nodes)
                *ret_nodes = nodes;
        return 0;
}

/* Give @node the member name @name (NULL: none, for array elements and the root). */
static int set_name(cJSON *node, const char *name)
{
        char *copy = NULL;
        if (name) {
                size_t size = strlen(name) + 1;
                copy = cJSON_malloc(size);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, name, size);
        }
        if (!(node->type & cJSON_StringIsConst))
                cJSON_free(node->string);
        node->string = copy;
        node->type &= ~cJSON_StringIsConst;
        return 0;
}

/*
 * Link @node into the children of @array before @next. Not with
 * cJSON_InsertItemInArray(): Debian 12's libcjson 1.7.15-1+deb12u4 refuses
 * (returns false for) every position but the first and the end.
 */
static void insert_before(cJSON *array, cJSON *next, cJSON *node)
{
        node->next = next;
        node->prev = next->prev; /* the first child's prev is the last child */
        next->prev = node;
        if (next == array->child)
                array->child = node;
        else
                node->prev->next = node;
}

/*
 * Put @node (owned) where @loc says: in an array, before the element there
 * with @insert, else in its place; elsewhere in place of what is there.
 */
static int put_at(struct patcher *p, const struct location *loc, bool insert, cJSON *node)
{
        _cleanup_(json_deletep) cJSON *owned = node;
        _cleanup_free_ char *name = NULL;

        if (!loc->parent) {
                if (set_name(node, NULL) < 0)
                        return oom(p);
                cJSON_Delete(p->root);
                p->root = TAKE_PTR(owned);
                return 0;
        }
        if (cJSON_IsArray(loc->parent)) {
                if (set_name(node, NULL) < 0)
                        return oom(p);
                if (!loc->node)
                        cJSON_AddItemToArray(loc->parent, TAKE_PTR(owned));
                else if (insert)
                        insert_before(loc->parent, loc->node, TAKE_PTR(owned));
                else
                        (void) cJSON_ReplaceItemViaPointer(loc->parent, loc->node, TAKE_PTR(owned));
                return 0;
        }
        name = ao_json_pointer_unescape(loc->segment, loc->len);
        if (set_name(node, name) < 0)
                return oom(p);
        /* Adding an existing member replaces its value in place, keeping the member order (RFC 6902 §4.1). */
        if (loc->node)
                (void) cJSON_ReplaceItemViaPointer(loc->parent, loc->node, TAKE_PTR(owned));
        else
                cJSON_AddItemToArray(loc->parent, TAKE_PTR(owned)); /* appends, keeping the name set above */
        return 0;
}

/* Add @node (owned) at @pointer with add's rules. */
static int put(struct patcher *p, const char *pointer, cJSON *node)
{
        _cleanup_(json_deletep) cJSON *owned = node;
        struct location loc;
        int r = locate(p, pointer, true, &loc);
        if (r < 0)
                return r;
        return put_at(p, &loc, true, TAKE_PTR(owned));
}

/* A copy of the operation's value, checked against the depth limit at @pointer. */
static int copy_value(struct patcher *p, const char *pointer, cJSON **ret)
{
        int r = check_size(p, pointer, p->op->value, false, NULL);
        if (r < 0)
                return r;
        *ret = cJSON_Duplicate(p->op->value, true);
        return *ret ? 0 : oom(p);
}

static int do_add(struct patcher *p)
{
        cJSON *node;
        int r = copy_value(p, p->op->path, &node);
        if (r < 0)
                return r;
        return put(p, p->op->path, node);
}

/* The operation skips a missing target under AO_JSONPATCH_IGNORE_MISSING. */
static bool skip_missing(struct patcher *p, int r)
{
        if (r != -ENOENT || !(p->flags & AO_JSONPATCH_IGNORE_MISSING))
                return false;
        ao_error_clear(&p->err);
        return true;
}

static int do_remove(struct patcher *p)
{
        struct location loc;
        int r;

        if (p->op->path[0] == '\0')
                return op_fail(p, -EINVAL, "cannot remove the whole document");
        r = locate(p, p->op->path, false, &loc);
        if (skip_missing(p, r))
                return 0;
        if (r < 0)
                return r;
        cJSON_Delete(cJSON_DetachItemViaPointer(loc.parent, loc.node));
        return 0;
}

static int do_replace(struct patcher *p)
{
        struct location loc;
        cJSON *node;
        int r = locate(p, p->op->path, false, &loc);

        if (skip_missing(p, r))
                return 0;
        if (r < 0)
                return r;
        r = copy_value(p, p->op->path, &node);
        if (r < 0)
                return r;
        return put_at(p, &loc, false, node);
}

/* Whether @pointer names a location inside the one @prefix names. */
static bool is_proper_prefix(const char *prefix, const char *pointer)
{
        size_t n = strlen(prefix);
        return strncmp(prefix, pointer, n) == 0 && pointer[n] == '/';
}

static int do_move(struct patcher *p)
{
        const struct op *op = p->op;
        char buf[SHOW_MAX], buf2[SHOW_MAX];
        struct location loc;
        int r;

        if (is_proper_prefix(op->from, op->path))
                return op_fail(p, -EINVAL, "cannot move '%s' into its own child '%s'",
                               show_str(buf, op->from), show_str(buf2, op->path));
        r = locate(p, op->from, false, &loc);
        if (r < 0 || strcmp(op->from, op->path) == 0)
                return r;
        /* Moving up cannot nest anything deeper than it already is: only a move down needs the walk. */
        if (count_segments(op->path) > count_segments(op->from)) {
                r = check_size(p, op->path, loc.node, false, NULL);
                if (r < 0)
                        return r;
        }
        /* RFC 6902 §4.4: a remove from "from", then an add at "path" (resolved after the remove). */
        return put(p, op->path, cJSON_DetachItemViaPointer(loc.parent, loc.node));
}

static int do_copy(struct patcher *p)
{
        struct location loc;
        size_t nodes = 0;
        cJSON *node;
        int r = locate(p, p->op->from, false, &loc);

        if (r < 0)
                return r;
        r = check_size(p, p->op->path, loc.node, true, &nodes);
        if (r < 0)
                return r;
        node = cJSON_Duplicate(loc.node, true);
        if (!node)
                return oom(p);
        p->copied += nodes;
        return put(p, p->op->path, node);
}

static bool equal(const cJSON *a, const cJSON *b);

/* Objects are equal when they have the same names with equal values, in any order (RFC 6902 §4.6). */
static bool equal_objects(const cJSON *a, const cJSON *b)
{
        size_t n = count_children(b, SIZE_MAX);
        bool same = true;

        if (count_children(a, n + 1) != n)
                return false;
        if (n == 0)
                return true;
        const cJSON **x = sorted_members(a, n), **y = sorted_members(b, n);
        for (size_t i = 0; i < n && same; i++)
                same = compare_names(&x[i], &y[i]) == 0 && equal(x[i], y[i]);
        free(x);
        free(y);
        return same;
}

static bool equal(const cJSON *a, const cJSON *b)
{
        if ((a->type & 0xFF) != (b->type & 0xFF))
                return false;
        switch (a->type & 0xFF) {
        case cJSON_NULL:
        case cJSON_True:
        case cJSON_False:
                return true;
        case cJSON_Number:
                return a->valuedouble == b->valuedouble; /* 1 and 1.0 are the same number */
        case cJSON_String:
        case cJSON_Raw:
                return a->valuestring && b->valuestring && strcmp(a->valuestring, b->valuestring) == 0;
        case cJSON_Array: {
                const cJSON *x = a->child, *y = b->child;
                for (; x && y; x = x->next, y = y->next)
                        if (!equal(x, y))
                                return false;
                return !x && !y;
        }
        case cJSON_Object:
                return equal_objects(a, b);
        default:
                return false;
        }
}

static int do_test(struct patcher *p)
{
        struct location loc;
        int r = locate(p, p->op->path, false, &loc);
        if (r < 0)
                return r;
        if (!equal(loc.node, p->op->value))
                return op_fail(p, -EINVAL, "test failed: value differs");
        return 0;
}

static int run_op(struct patcher *p)
{
        switch (p->op->type) {
        case AO_JSONPATCH_ADD:
                return do_add(p);
        case AO_JSONPATCH_REMOVE:
                return do_remove(p);
        case AO_JSONPATCH_REPLACE:
                return do_replace(p);
        case AO_JSONPATCH_MOVE:
                return do_move(p);
        case AO_JSONPATCH_COPY:
                return do_copy(p);
        case AO_JSONPATCH_TEST:
                return do_test(p);
        default:
                return op_fail(p, -EINVAL, "unknown op");
        }
}

static int apply_one(struct patcher *p, const cJSON *json)
{
        char reason[REASON_MAX];
        struct op op;

        p->op = NULL;
        if (decode_op(json, &op, reason) < 0)
                return op_fail(p, -EINVAL, "%s", reason);
        p->op = &op;
        int r = run_op(p);
        p->op = NULL;
        return r;
}

/*
 * Exchange the contents of @a and @b: type, value and children. The links
 * (next, prev) and the member name belong to the node's place in its parent
 * and stay, so the caller's root keeps its place in a larger tree.
 */
static void swap_contents(cJSON *a, cJSON *b)
{
        const int place = cJSON_StringIsConst;
        cJSON saved = *a;

        a->type = (b->type & ~place) | (saved.type & place);
        a->child = b->child;
        a->valuestring = b->valuestring;
        a->valueint = b->valueint;
        a->valuedouble = b->valuedouble;
        b->type = (saved.type & ~place) | (b->type & place);
        b->child = saved.child;
        b->valuestring = saved.valuestring;
        b->valueint = saved.valueint;
        b->valuedouble = saved.valuedouble;
}

int ao_jsonpatch_apply(struct cJSON *doc, const struct cJSON *ops, unsigned flags, struct ao_error *reterr)
{
        struct patcher p = {.flags = flags};

        if (!doc || !cJSON_IsArray(ops))
                return ao_error_set(reterr, -EINVAL, "JSON patch: no document, or operations not an array");
        if (!ops->child)
                return 0;
        p.root = cJSON_Duplicate(doc, true);
        if (!p.root)
                return ao_error_set(reterr, -ENOMEM, "JSON patch: out of memory");
        for (const cJSON *json = ops->child; json; json = json->next) {
                int r = apply_one(&p, json);
                if (r < 0) {
                        cJSON_Delete(p.root);
                        return ao_error_set(reterr, r, "%s", p.err.msg);
                }
                p.index++;
        }
        swap_contents(doc, p.root);
        cJSON_Delete(p.root);
        return 0;
}
