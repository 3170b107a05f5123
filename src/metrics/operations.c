/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/metric-ops.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/input.h"
#include "ao/quote.h"
#include "ao/strbuf.h"
#include "ao/string-table.h"

/*
 * The stream is cut into operations by a small lexer of our own before cJSON
 * sees any of it. The lexer finds where each top-level object ends (it counts
 * brackets outside strings), and on the way refuses what cJSON would let
 * through although JSON does not allow it: raw control characters (cJSON
 * skips every byte <= 0x20 as whitespace and copies them into strings),
 * "\u0000" (cJSON decodes it into a NUL that cuts the string short) and
 * numbers outside JSON's grammar ("01", "1.", which strtod() takes). It also
 * counts the values of the object and its nesting, so the tree cJSON builds
 * for one operation has at most AO_METRIC_OPS_MAX_OP_VALUES nodes and its
 * recursion (parse, delete) stays within CJSON_NESTING_LIMIT. cJSON then
 * parses exactly that range and reports any syntax error the lexer did not
 * look for. Every tree is freed before the next operation is read, so memory
 * stays proportional to what the operations keep.
 */

#define SHOW_MAX 64 /* bytes of a user string quoted in an error, before escaping */

static const char *const action_names[_AO_METRIC_ACTION_MAX] = {
    [AO_METRIC_ADD] = "add",
    [AO_METRIC_SET] = "set",
    [AO_METRIC_OBSERVE] = "observe",
    [AO_METRIC_EXPIRE] = "expire",
};

AO_STRING_TABLE_TO_STRING(ao_metric_action, enum ao_metric_action, action_names);
AO_PRIVATE_STRING_TABLE_FROM_STRING(action, enum ao_metric_action, action_names);

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static void op_done(struct ao_metric_op *op)
{
        free(op->name);
        free(op->group);
        free(op->buckets);
        for (size_t i = 0; i < op->n_labels; i++) {
                free(op->labels[i].name);
                free(op->labels[i].value);
        }
        free(op->labels);
        *op = (struct ao_metric_op){0};
}

void ao_metric_ops_done(struct ao_metric_ops *ops)
{
        if (!ops)
                return;
        for (size_t i = 0; i < ops->n; i++)
                op_done(&ops->ops[i]);
        free(ops->ops);
        *ops = (struct ao_metric_ops){0};
}

/* ---- errors ---------------------------------------------------------------------------------------- */

struct parser {
        const char *filename;
        const char *text; /* borrowed: NUL-terminated copy of the input */
        size_t len;
        size_t index;          /* of the operation being read */
        size_t op_start;       /* offset of its '{' */
        struct ao_strbuf show; /* owned: user strings escaped for messages */
        struct ao_error *reterr;
};

static int fail_at(struct parser *p, size_t offset, int code, const char *fmt, ...) _printf_(4, 5);
static int fail_at(struct parser *p, size_t offset, int code, const char *fmt, ...)
{
        char reason[AO_ERROR_MSG_MAX];
        size_t line = 1, column = 1;
        va_list ap;

        /* 1-based, the column counting characters; "\r\n" and a lone "\r" end a line as "\n" does. */
        for (const char *c = p->text, *end = p->text + AO_MIN(offset, p->len); c < end; c++) {
                if (*c == '\n' || (*c == '\r' && c[1] != '\n')) {
                        line++;
                        column = 1;
                } else if (*c != '\r' && ((unsigned char) *c & 0xC0) != 0x80) {
                        column++;
                }
        }
        va_start(ap, fmt);
        (void) vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        return ao_error_set(p->reterr, code, "%s:%zu:%zu: operation %zu: %s", p->filename, line, column,
                            p->index, reason);
}

/* A problem with the operation as a whole: reported at its opening brace. */
#define op_fail(p, code, ...) fail_at((p), (p)->op_start, (code), __VA_ARGS__)

/*
 * @s for an error message: at most SHOW_MAX bytes, cut before a character,
 * with "..." when cut, control characters escaped and invalid UTF-8 replaced.
 * Valid until the next call.
 */
static const char *show(struct parser *p, const char *s)
{
        ao_strbuf_reset(&p->show);
        ao_quote_text(&p->show, s, strlen(s), SHOW_MAX);
        return ao_strbuf_str(&p->show);
}

/* ---- lexing: where an operation ends ---------------------------------------------------------------- */

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/*
 * Find the end of the object opening at p->op_start. Returns 0 with the
 * offset after its closing brace in @ret_end; 1 when the input ends first,
 * with @ret_end at the string left open or at the end of the input; or a
 * negative code with the error set. The text relies on its NUL terminator:
 * no look-ahead passes it.
 */
static int scan_op(struct parser *p, size_t *ret_end)
{
        const char *t = p->text;
        size_t depth = 0, values = 0, i = p->op_start;

        while (i < p->len) {
                unsigned char c = (unsigned char) t[i];

                if (c == '{' || c == '[' || c == '"' || c == '-' || is_digit((char) c) ||
                    (c >= 'a' && c <= 'z')) {
                        if (++values > AO_METRIC_OPS_MAX_OP_VALUES)
                                return op_fail(p, -E2BIG, "more than %d JSON values in one operation",
                                               AO_METRIC_OPS_MAX_OP_VALUES);
                }
                if (c == '{' || c == '[') {
                        if (++depth > CJSON_NESTING_LIMIT)
                                return fail_at(p, i, -EINVAL, "nested deeper than %d levels",
                                               CJSON_NESTING_LIMIT);
                        i++;
                } else if (c == '}' || c == ']') {
                        i++;
                        if (--depth == 0) {
                                *ret_end = i;
                                return 0;
                        }
                } else if (c == '"') {
                        size_t open = i++;
                        for (;; i++) {
                                if (i >= p->len) {
                                        *ret_end = open;
                                        return 1;
                                }
                                c = (unsigned char) t[i];
                                if (c == '"')
                                        break;
                                if (c < 0x20)
                                        return fail_at(p, i, -EINVAL, "control character 0x%02x in a string",
                                                       c);
                                if (c == '\\') {
                                        if (strncmp(t + i + 1, "u0000", 5) == 0)
                                                return fail_at(p, i, -EINVAL,
                                                               "\\u0000 in a string is not supported");
                                        if (i + 1 < p->len)
                                                i++;
                                }
                        }
                        i++;
                } else if (c == '-' || is_digit((char) c)) {
                        size_t end = ao_json_number_end(t, i);
                        if (end == 0 || end > p->len)
                                return fail_at(p, i, -EINVAL, "invalid number");
                        i = end;
                } else if (c >= 'a' && c <= 'z') {
                        /* true, false, null, or garbage for cJSON to refuse: one value either way. */
                        while (i < p->len && t[i] >= 'a' && t[i] <= 'z')
                                i++;
                } else if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                        return fail_at(p, i, -EINVAL, "control character 0x%02x outside a string", c);
                } else {
                        i++; /* whitespace, ',' and ':', or a byte cJSON will refuse */
                }
        }
        *ret_end = p->len;
        return 1;
}

/* Parse the operation at p->op_start into a cJSON object in @ret, and return the offset after it in @ret_end. */
static int parse_json(struct parser *p, cJSON **ret, size_t *ret_end)
{
        const char *start = p->text + p->op_start, *stop = NULL;
        size_t end = 0;
        int r = scan_op(p, &end);

        if (r < 0)
                return r;
        if (r > 0) {
                /*
                 * Cut short. cJSON may still find an earlier syntax error; hand it the NUL too, so an error
                 * at the very end is not clamped onto the last byte.
                 */
                cJSON *json = cJSON_ParseWithLengthOpts(start, p->len + 1 - p->op_start, &stop, 0);
                cJSON_Delete(json);
                if (stop && stop < p->text + end)
                        return fail_at(p, (size_t) (stop - p->text), -EINVAL, "invalid JSON");
                if (end < p->len)
                        return fail_at(p, end, -EINVAL, "unterminated string");
                return fail_at(p, p->len, -EINVAL, "unexpected end of input");
        }
        _cleanup_(json_deletep) cJSON *json = cJSON_ParseWithLengthOpts(start, end - p->op_start, &stop, 0);
        if (!json || stop != p->text + end)
                return fail_at(p, stop ? (size_t) (stop - p->text) : p->op_start, -EINVAL, "invalid JSON");
        *ret = TAKE_PTR(json);
        *ret_end = end;
        return 0;
}

/* ---- one operation: the members as Go's decoder types them ------------------------------------------ */

/* The members an operation may have; borrowed from its cJSON object, NULL when absent or null. */
struct members {
        const cJSON *name, *action, *value, *add, *set, *buckets, *labels, *group;
        const cJSON **label_list; /* owned: the members of labels, sorted by name */
        size_t n_labels;
};

static void members_done(struct members *m)
{
        free(m->label_list);
}

static int compare_keys(const void *a, const void *b)
{
        return strcmp((*(const cJSON *const *) a)->string, (*(const cJSON *const *) b)->string);
}

/*
 * The members of @object sorted by name in @ret (malloc'd, NULL when empty),
 * refusing a name twice: cJSON keeps both, Go's decoder the last.
 */
static int sorted_members(struct parser *p, const cJSON *object, const cJSON ***ret, size_t *ret_n)
{
        _cleanup_free_ const cJSON **list = NULL;
        size_t n = 0, i = 0;

        for (const cJSON *c = object->child; c; c = c->next)
                n++;
        if (n > 0) {
                list = ao_xreallocarray(NULL, n, sizeof(*list));
                for (const cJSON *c = object->child; c; c = c->next)
                        list[i++] = c;
                qsort(list, n, sizeof(*list), compare_keys);
        }
        for (i = 1; i < n; i++)
                if (compare_keys(&list[i - 1], &list[i]) == 0)
                        return op_fail(p, -EINVAL, "duplicate key '%s'", show(p, list[i]->string));
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

/* Member @key of @object; null reads as absent, as Go's decoder leaves the field unset. */
static const cJSON *member(const cJSON *object, const char *key)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(object, key);
        return cJSON_IsNull(m) ? NULL : m;
}

/* Why @json is not a usable number, or NULL. JSON has no NaN, but 1e999 parses as infinity. */
static const char *number_problem(const cJSON *json)
{
        if (!cJSON_IsNumber(json))
                return "is not a number";
        if (!isfinite(json->valuedouble))
                return "is not a finite number";
        return NULL;
}

static int check_string(struct parser *p, const cJSON *m, const char *key)
{
        if (m && !cJSON_IsString(m))
                return op_fail(p, -EINVAL, "'%s' is not a string", key);
        return 0;
}

static int check_number(struct parser *p, const cJSON *m, const char *key)
{
        const char *problem = m ? number_problem(m) : NULL;
        if (problem)
                return op_fail(p, -EINVAL, "'%s' %s", key, problem);
        return 0;
}

static int check_buckets(struct parser *p, const cJSON *buckets)
{
        size_t i = 0;

        if (!buckets)
                return 0;
        if (!cJSON_IsArray(buckets))
                return op_fail(p, -EINVAL, "'buckets' is not an array");
        for (const cJSON *c = buckets->child; c; c = c->next, i++) {
                const char *problem = number_problem(c);
                if (problem)
                        return op_fail(p, -EINVAL, "bucket %zu %s", i, problem);
        }
        return 0;
}

static int check_labels(struct parser *p, struct members *m)
{
        int r;

        if (!m->labels)
                return 0;
        if (!cJSON_IsObject(m->labels))
                return op_fail(p, -EINVAL, "'labels' is not an object");
        r = sorted_members(p, m->labels, &m->label_list, &m->n_labels);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_labels; i++)
                if (!cJSON_IsString(m->label_list[i]))
                        return op_fail(p, -EINVAL, "label '%s': value is not a string",
                                       show(p, m->label_list[i]->string));
        return 0;
}

/* Pick out the known members of @json and check their types, as decoding into Go's struct would. */
static int read_members(struct parser *p, const cJSON *json, struct members *m)
{
        _cleanup_free_ const cJSON **keys = NULL;
        size_t n_keys;
        int r;

        r = sorted_members(p, json, &keys, &n_keys);
        if (r < 0)
                return r;
        m->name = member(json, "name");
        m->action = member(json, "action");
        m->value = member(json, "value");
        m->add = member(json, "add");
        m->set = member(json, "set");
        m->buckets = member(json, "buckets");
        m->labels = member(json, "labels");
        m->group = member(json, "group");
        if ((r = check_string(p, m->name, "name")) < 0 || (r = check_string(p, m->action, "action")) < 0 ||
            (r = check_number(p, m->value, "value")) < 0 || (r = check_number(p, m->add, "add")) < 0 ||
            (r = check_number(p, m->set, "set")) < 0 || (r = check_buckets(p, m->buckets)) < 0 ||
            (r = check_labels(p, m)) < 0 || (r = check_string(p, m->group, "group")) < 0)
                return r;
        return 0;
}

/* ---- one operation: the rules ----------------------------------------------------------------------- */

static bool utf8_valid(const char *s)
{
        const unsigned char *u = (const unsigned char *) s;
        size_t n = strlen(s);

        while (n > 0) {
                size_t k = ao_utf8_sequence_length(u, n);
                if (k == 0)
                        return false;
                u += k;
                n -= k;
        }
        return true;
}

static bool is_word_start(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* Prometheus: metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*. */
static bool name_valid(const char *s, bool colon)
{
        if (!is_word_start(s[0]) && !(colon && s[0] == ':'))
                return false;
        for (s++; *s; s++)
                if (!is_word_start(*s) && !is_digit(*s) && !(colon && *s == ':'))
                        return false;
        return true;
}

/* The action, from 'action' or one of the shortcuts, and the value that goes with it. */
static int resolve_action(struct parser *p, const struct members *m, enum ao_metric_action *ret_action,
                          const cJSON **ret_value)
{
        const cJSON *shortcut = m->add ? m->add : m->set;
        const char *shortcut_name = m->add ? "add" : "set";

        if (m->add && m->set)
                return op_fail(p, -EINVAL, "'add' and 'set' are mutually exclusive");
        if (shortcut && m->action)
                return op_fail(p, -EINVAL, "'%s' cannot be combined with 'action'", shortcut_name);
        if (shortcut && m->value)
                return op_fail(p, -EINVAL, "'%s' cannot be combined with 'value'", shortcut_name);
        if (shortcut) {
                *ret_action = m->add ? AO_METRIC_ADD : AO_METRIC_SET;
                *ret_value = shortcut;
                return 0;
        }
        if (!m->action)
                return op_fail(p, -EINVAL, "one of 'action', 'add' or 'set' is required");
        *ret_action = action_from_string(m->action->valuestring);
        if (*ret_action < 0)
                return op_fail(p, -EINVAL, "unknown action '%s' (expected add, set, observe or expire)",
                               show(p, m->action->valuestring));
        *ret_value = m->value;
        return 0;
}

static int take_buckets(struct parser *p, const cJSON *buckets, struct ao_metric_op *op)
{
        size_t n = 0;

        if (!buckets)
                return op_fail(p, -EINVAL, "'buckets' is required for action 'observe'");
        for (const cJSON *c = buckets->child; c; c = c->next)
                if (++n > AO_METRIC_OPS_MAX_BUCKETS)
                        return op_fail(p, -E2BIG, "more than %d buckets", AO_METRIC_OPS_MAX_BUCKETS);
        if (n == 0)
                return op_fail(p, -EINVAL, "'buckets' is empty");
        op->buckets = ao_xreallocarray(NULL, n, sizeof(double));
        for (const cJSON *c = buckets->child; c; c = c->next) {
                double b = c->valuedouble;
                if (op->n_buckets > 0 && !(b > op->buckets[op->n_buckets - 1]))
                        return op_fail(p, -EINVAL,
                                       "buckets are not strictly increasing: bucket %zu (%g) after %g",
                                       op->n_buckets, b, op->buckets[op->n_buckets - 1]);
                op->buckets[op->n_buckets++] = b;
        }
        return 0;
}

static int take_labels(struct parser *p, const struct members *m, struct ao_metric_op *op)
{
        if (m->n_labels == 0)
                return 0;
        if (m->n_labels > AO_METRIC_OPS_MAX_LABELS)
                return op_fail(p, -E2BIG, "more than %d labels", AO_METRIC_OPS_MAX_LABELS);
        op->labels = ao_xcalloc(m->n_labels, sizeof(*op->labels));
        for (size_t i = 0; i < m->n_labels; i++) {
                const char *name = m->label_list[i]->string, *value = m->label_list[i]->valuestring;
                if (!name_valid(name, false))
                        return op_fail(p, -EINVAL, "invalid label name '%s'", show(p, name));
                if (strncmp(name, "__", 2) == 0)
                        return op_fail(p, -EINVAL, "label name '%s' is reserved (starts with \"__\")",
                                       show(p, name));
                if (!utf8_valid(value))
                        return op_fail(p, -EINVAL, "label '%s': value is not valid UTF-8", name);
                op->labels[i] = (struct ao_metric_label){ao_xstrdup(name), ao_xstrdup(value)};
                op->n_labels++;
        }
        return 0;
}

/* Decode and check the operation @json into @ret. */
static int decode_op(struct parser *p, const cJSON *json, struct ao_metric_op *ret)
{
        _cleanup_(members_done) struct members m = {0};
        _cleanup_(op_done) struct ao_metric_op op = {0};
        const cJSON *value = NULL;
        int r;

        r = read_members(p, json, &m);
        if (r < 0)
                return r;
        r = resolve_action(p, &m, &op.action, &value);
        if (r < 0)
                return r;

        if (m.group) {
                if (m.group->valuestring[0] == '\0')
                        return op_fail(p, -EINVAL, "'group' is empty");
                if (!utf8_valid(m.group->valuestring))
                        return op_fail(p, -EINVAL, "'group' is not valid UTF-8");
                if (op.action == AO_METRIC_OBSERVE)
                        return op_fail(p, -EINVAL, "observe is not supported for grouped metrics");
                op.group = ao_xstrdup(m.group->valuestring);
        } else if (op.action == AO_METRIC_EXPIRE) {
                return op_fail(p, -EINVAL, "expire requires a 'group'");
        }
        if (op.action == AO_METRIC_EXPIRE) {
                *ret = op;
                op = (struct ao_metric_op){0};
                return 0;
        }

        if (!m.name)
                return op_fail(p, -EINVAL, "'name' is required for action '%s'", action_names[op.action]);
        if (m.name->valuestring[0] == '\0')
                return op_fail(p, -EINVAL, "'name' is empty");
        if (!name_valid(m.name->valuestring, true))
                return op_fail(p, -EINVAL, "invalid metric name '%s'", show(p, m.name->valuestring));
        op.name = ao_xstrdup(m.name->valuestring);
        if (!value)
                return op_fail(p, -EINVAL, "'value' is required for action '%s'", action_names[op.action]);
        op.value = value->valuedouble;
        if (op.action == AO_METRIC_OBSERVE) {
                r = take_buckets(p, m.buckets, &op);
                if (r < 0)
                        return r;
        }
        r = take_labels(p, &m, &op);
        if (r < 0)
                return r;
        *ret = op;
        op = (struct ao_metric_op){0};
        return 0;
}

/* ---- the stream ------------------------------------------------------------------------------------- */

static int parse_one(struct parser *p, struct ao_metric_ops *ops, size_t *pos)
{
        _cleanup_(json_deletep) cJSON *json = NULL;
        struct ao_metric_op op;
        size_t end = 0;
        char c = p->text[*pos];
        int r;

        p->op_start = *pos;
        if (p->index >= AO_METRIC_OPS_MAX_OPS)
                return op_fail(p, -E2BIG, "more than %d operations", AO_METRIC_OPS_MAX_OPS);
        if (c == '[')
                return op_fail(p, -EINVAL,
                               "an array is not an operation: write one JSON object per operation");
        if (c != '{')
                return op_fail(p, -EINVAL, "expected an operation object");
        r = parse_json(p, &json, &end);
        if (r < 0)
                return r;
        r = decode_op(p, json, &op);
        if (r < 0)
                return r;
        if ((ops->n & (ops->n - 1)) == 0) /* grow at 0, 1, 2, 4, ...: the capacity is the next power of two */
                ops->ops = ao_xreallocarray(ops->ops, ops->n ? ops->n * 2 : 1, sizeof(*ops->ops));
        ops->ops[ops->n++] = op;
        p->index++;
        *pos = end;
        return 0;
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int ao_metric_ops_parse(const char *text, size_t len, const char *filename, struct ao_metric_ops *ret,
                        struct ao_error *reterr)
{
        struct parser p = {.filename = filename ? filename : "<input>", .len = len, .reterr = reterr};
        _cleanup_(ao_metric_ops_done) struct ao_metric_ops ops = {0};
        _cleanup_free_ char *copy = NULL;
        size_t pos = 0;
        int r = 0;

        /* The lexer and cJSON look a few bytes ahead, which the NUL terminator stops. */
        r = ao_input_copy(text, len, AO_METRIC_OPS_MAX_INPUT, p.filename, "metrics file", &copy, &pos,
                          reterr);
        if (r < 0)
                return r;
        p.text = copy;
        for (;;) {
                while (pos < len && is_json_space(copy[pos]))
                        pos++;
                if (pos >= len)
                        break;
                r = parse_one(&p, &ops, &pos);
                if (r < 0)
                        break;
        }
        ao_strbuf_done(&p.show);
        if (r < 0)
                return r;
        *ret = ops;
        ops = (struct ao_metric_ops){0};
        return 0;
}

/* ---- back to JSON ----------------------------------------------------------------------------------- */

static cJSON *op_to_json(const struct ao_metric_op *op)
{
        _cleanup_(json_deletep) cJSON *json = cJSON_CreateObject();
        const char *action = ao_metric_action_to_string(op->action);

        if (!json || !action || !cJSON_AddStringToObject(json, "action", action))
                return NULL;
        if (op->name && !cJSON_AddStringToObject(json, "name", op->name))
                return NULL;
        if (op->group && !cJSON_AddStringToObject(json, "group", op->group))
                return NULL;
        if (op->action == AO_METRIC_EXPIRE)
                return TAKE_PTR(json);
        if (!cJSON_AddNumberToObject(json, "value", op->value))
                return NULL;
        if (op->action == AO_METRIC_OBSERVE) {
                cJSON *buckets = cJSON_AddArrayToObject(json, "buckets");
                if (!buckets)
                        return NULL;
                for (size_t i = 0; i < op->n_buckets; i++) {
                        cJSON *b = cJSON_CreateNumber(op->buckets[i]);
                        if (!b || !cJSON_AddItemToArray(buckets, b)) {
                                cJSON_Delete(b);
                                return NULL;
                        }
                }
        }
        if (op->n_labels > 0) {
                cJSON *labels = cJSON_AddObjectToObject(json, "labels");
                if (!labels)
                        return NULL;
                for (size_t i = 0; i < op->n_labels; i++)
                        if (!cJSON_AddStringToObject(labels, op->labels[i].name, op->labels[i].value))
                                return NULL;
        }
        return TAKE_PTR(json);
}

struct cJSON *ao_metric_ops_to_json(const struct ao_metric_ops *ops)
{
        _cleanup_(json_deletep) cJSON *array = cJSON_CreateArray();

        if (!array)
                return NULL;
        for (size_t i = 0; ops && i < ops->n; i++) {
                cJSON *json = op_to_json(&ops->ops[i]);
                if (!json || !cJSON_AddItemToArray(array, json)) {
                        cJSON_Delete(json);
                        return NULL;
                }
        }
        return TAKE_PTR(array);
}
