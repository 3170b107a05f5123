/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The jqFilter cache: one compiled libjq 1.6 program per distinct filter
 * text, in an open-addressing hash table (linear probing, power-of-two
 * size, never shrinks: the texts come from hook configurations, so there
 * are tens to hundreds of them). A filter that does not compile is kept
 * too, with its message, so that every event does not pay for the failed
 * compilation again.
 *
 * Values cross between cJSON and jv by walking the trees, not through JSON
 * text: `.metadata.name` on a 2 KiB pod takes ~17 us per application (-O2),
 * nearly all of it building the input jv (jq's own run is under 1 us);
 * printing and re-parsing costs ~44 us, as jq 1.6's parser is slow.
 * jv values never leave this file.
 */
#include "ao/jq.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <jq.h>

#include "ao/alloc.h"
#include "ao/hashmap.h"
#include "ao/json-number.h"
#include "ao/json-size.h"
#include "ao/quote.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

#include "internal.h"

/*
 * cJSON's own nesting limit (CJSON_NESTING_LIMIT): deeper values could not
 * be parsed back from their text anywhere else, and the conversions recurse.
 */
#define MAX_DEPTH 1000
/*
 * Nodes of all the results of one run together: OUTPUT_FACTOR times the
 * input's, never less than OUTPUT_NODES_MIN. A generator without end
 * (`repeat(.)`) would otherwise take the process down, and `range(N)` or
 * many copies of the input would take the loop for as long as converting
 * them does; a filter picks from its object, so what it returns is about as
 * large as the object at most (docs/SECURITY.md, "Budgets").
 */
#define OUTPUT_FACTOR    4u
#define OUTPUT_NODES_MIN 5000u
/* Bytes of the filter quoted in an error message; the rest is elided. */
#define MAX_QUOTED_FILTER 200

struct program {
        char *filter; /* owned; NULL for an empty slot */
        uint64_t hash;
        jq_state *jq; /* owned; NULL when the filter does not compile */
        char *error;  /* owned: why it does not compile; NULL when it does */
};

struct ao_jq_cache {
        struct program *slots; /* owned: cap slots, cap a power of two */
        size_t cap;
        size_t n; /* slots in use */
};

struct ao_jq_cache *ao_jq_cache_new(void)
{
        struct ao_jq_cache *c = ao_xcalloc(1, sizeof(struct ao_jq_cache));

        c->cap = 16;
        c->slots = ao_xcalloc(c->cap, sizeof(struct program));
        return c;
}

struct ao_jq_cache *ao_jq_cache_free(struct ao_jq_cache *c)
{
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->cap; i++) {
                struct program *p = &c->slots[i];
                free(p->filter);
                free(p->error);
                if (p->jq)
                        jq_teardown(&p->jq);
        }
        free(c->slots);
        free(c);
        return NULL;
}

size_t ao_jq_cache_size(const struct ao_jq_cache *c)
{
        return c->n;
}

/* Fill the empty slot @p with @filter, compiled or with the reason it does not compile. */
static void compile(struct program *p, const char *filter, uint64_t hash)
{
        char reason[AO_ERROR_MSG_MAX];

        p->filter = ao_xstrdup(filter);
        p->hash = hash;
        p->jq = compile_program(filter, reason, sizeof(reason));
        if (!p->jq)
                p->error = ao_xstrdup(reason);
}

/* ---- the table ----------------------------------------------------------------------------------- */

/* FNV-1a: filter texts are short and not chosen to collide (they come from hook configurations). */
static uint64_t hash_text(const char *s)
{
        uint64_t h = 0xcbf29ce484222325ULL;

        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                h ^= *p;
                h *= 0x100000001b3ULL;
        }
        return h;
}

/* The slot holding @filter, or the empty slot where it belongs. */
static struct program *probe(struct program *slots, size_t cap, const char *filter, uint64_t hash)
{
        for (size_t i = hash & (cap - 1);; i = (i + 1) & (cap - 1)) {
                struct program *p = &slots[i];
                if (!p->filter || (p->hash == hash && strcmp(p->filter, filter) == 0))
                        return p;
        }
}

static void grow(struct ao_jq_cache *c)
{
        size_t cap = c->cap * 2;
        struct program *slots = ao_xcalloc(cap, sizeof(struct program));

        for (size_t i = 0; i < c->cap; i++)
                if (c->slots[i].filter)
                        *probe(slots, cap, c->slots[i].filter, c->slots[i].hash) = c->slots[i];
        free(c->slots);
        c->slots = slots;
        c->cap = cap;
}

static struct program *lookup(struct ao_jq_cache *c, const char *filter)
{
        uint64_t hash = hash_text(filter);
        struct program *p = probe(c->slots, c->cap, filter, hash);

        if (p->filter)
                return p;
        /* Keep the load at most 3/4 so that probe() always finds an empty slot quickly. */
        if ((c->n + 1) * 4 > c->cap * 3) {
                grow(c);
                p = probe(c->slots, c->cap, filter, hash);
        }
        compile(p, filter, hash);
        c->n++;
        return p;
}

/* ---- exact numbers ------------------------------------------------------------------------------- */

/*
 * libjq 1.6 holds every number as a double, so a number kept as its text (ao/json-number.h:
 * 9007199254740993, 1e400) would leave a filter rounded. jq 1.7 keeps the literal of a number
 * that passes through a program unchanged; the same is done here from outside: while the input
 * is converted, each text is remembered by its double, and a result number whose double is the
 * double of one remembered text gets that text back. A double shared by two different texts, or
 * by a text and a number without one, is ambiguous and stays a double. The edge: a computed
 * result equal to the double of a text gets the text too (`.a + 1` on 9007199254740993 is the
 * double 2^53, which is that text's double, so it gives 9007199254740993).
 *
 * Texts only stand for doubles from 2^53 on and infinities, so numbers without text are noted
 * only there (where they can make a text ambiguous), and a result is looked up only there.
 */
struct exact_numbers {
        struct ao_hashmap *by_double; /* owned, NULL until needed: bits (hex) -> text, or AMBIGUOUS */
};

/* A value of by_double: the double is not one text's. */
static char ambiguous_mark;
#define AMBIGUOUS (&ambiguous_mark)

static bool may_have_text(double d)
{
        return !(fabs(d) < AO_JSON_EXACT_INTEGER_LIMIT) && !isnan(d);
}

static void double_key(double d, char key[static 17])
{
        uint64_t bits;

        memcpy(&bits, &d, sizeof(bits));
        (void) snprintf(key, 17, "%016" PRIx64, bits);
}

/* Note number @item of the input: its text (borrowed from the input, which outlives the run). */
static void remember_number(struct exact_numbers *x, const cJSON *item)
{
        const char *text = ao_json_number_text(item);
        char key[17];

        if (!text && !may_have_text(item->valuedouble))
                return;
        if (!x->by_double)
                x->by_double = ao_hashmap_new(NULL);
        double_key(item->valuedouble, key);
        const char *known = ao_hashmap_get(x->by_double, key);
        if (!known)
                (void) ao_hashmap_put(x->by_double, key, text ? (void *) text : AMBIGUOUS);
        else if (known != AMBIGUOUS && (!text || strcmp(known, text) != 0))
                (void) ao_hashmap_put(x->by_double, key, AMBIGUOUS);
}

/* The text result number @d stands for, or NULL. */
static const char *recall_number(const struct exact_numbers *x, double d)
{
        char key[17];

        if (!x->by_double || !may_have_text(d))
                return NULL;
        double_key(d, key);
        const char *text = ao_hashmap_get(x->by_double, key);
        return text == AMBIGUOUS ? NULL : text;
}

/* ---- cJSON <-> jv -------------------------------------------------------------------------------- */

static jv to_jv(const cJSON *item, int depth, struct exact_numbers *x);

static jv array_to_jv(const cJSON *item, int depth, struct exact_numbers *x)
{
        jv a = jv_array_sized(cJSON_GetArraySize(item));
        const cJSON *child;
        int i = 0;

        cJSON_ArrayForEach(child, item)
        {
                jv v = to_jv(child, depth + 1, x);
                if (!jv_is_valid(v)) {
                        jv_free(a);
                        return v;
                }
                a = jv_array_set(a, i++, v);
        }
        return a;
}

static jv object_to_jv(const cJSON *item, int depth, struct exact_numbers *x)
{
        jv o = jv_object();
        const cJSON *child;

        cJSON_ArrayForEach(child, item)
        {
                jv v = to_jv(child, depth + 1, x);
                if (!jv_is_valid(v)) {
                        jv_free(o);
                        return v;
                }
                o = jv_object_set(o, jv_string(child->string ? child->string : ""), v);
        }
        return o;
}

/* A new jv for @item, or an invalid one with a message; its numbers' texts go to @x. */
static jv to_jv(const cJSON *item, int depth, struct exact_numbers *x)
{
        bool container = cJSON_IsArray(item) || cJSON_IsObject(item);

        /* @depth containers enclose @item; like cJSON, count containers only */
        if (container && depth >= MAX_DEPTH)
                return jv_invalid_with_msg(jv_string("input nested deeper than 1000 levels"));
        switch (item->type & 0xFF) {
        case cJSON_False:
                return jv_false();
        case cJSON_True:
                return jv_true();
        case cJSON_Number:
                remember_number(x, item);
                return jv_number(item->valuedouble);
        case cJSON_String:
                return jv_string(item->valuestring ? item->valuestring : "");
        case cJSON_Array:
                return array_to_jv(item, depth, x);
        case cJSON_Object:
                return object_to_jv(item, depth, x);
        case cJSON_Raw:
                return jv_parse(item->valuestring ? item->valuestring : "null");
        default:
                return jv_null();
        }
}

static cJSON *from_jv(jv v, int depth, const struct exact_numbers *x, bool *too_deep);

/* Adds the converted @v (consumed) to @parent under @key (NULL: array element). */
static bool add_from_jv(cJSON *parent, const char *key, jv v, int depth, const struct exact_numbers *x,
                        bool *too_deep)
{
        cJSON *item = from_jv(v, depth + 1, x, too_deep);

        if (!item)
                return false;
        if (key)
                cJSON_AddItemToObject(parent, key, item);
        else
                cJSON_AddItemToArray(parent, item);
        return true;
}

static cJSON *array_from_jv(jv v, int depth, const struct exact_numbers *x, bool *too_deep)
{
        cJSON *a = cJSON_CreateArray();
        int n = jv_array_length(jv_copy(v));

        for (int i = 0; a && i < n; i++)
                if (!add_from_jv(a, NULL, jv_array_get(jv_copy(v), i), depth, x, too_deep)) {
                        cJSON_Delete(a);
                        a = NULL;
                }
        jv_free(v);
        return a;
}

static cJSON *object_from_jv(jv v, int depth, const struct exact_numbers *x, bool *too_deep)
{
        cJSON *o = cJSON_CreateObject();

        for (int it = jv_object_iter(v); o && jv_object_iter_valid(v, it); it = jv_object_iter_next(v, it)) {
                jv key = jv_object_iter_key(v, it);
                if (!add_from_jv(o, jv_string_value(key), jv_object_iter_value(v, it), depth, x, too_deep)) {
                        cJSON_Delete(o);
                        o = NULL;
                }
                jv_free(key);
        }
        jv_free(v);
        return o;
}

/*
 * The text of an input number the result passed through unchanged (see above); else as jq 1.6
 * prints it, NaN as null and infinities as +-DBL_MAX: what `jq -c` shows.
 */
static cJSON *number_from_jv(jv v, const struct exact_numbers *x)
{
        double d = jv_number_value(v);
        const char *text = recall_number(x, d);

        jv_free(v);
        if (text)
                return ao_json_number_from_literal(text, strlen(text));
        if (isnan(d))
                return cJSON_CreateNull();
        if (isinf(d))
                d = d > 0 ? DBL_MAX : -DBL_MAX;
        return ao_json_number_from_double(d);
}

static cJSON *string_from_jv(jv v)
{
        cJSON *s = cJSON_CreateString(jv_string_value(v));

        jv_free(v);
        return s;
}

/*
 * A new cJSON value for @v (consumed), numbers exact as @x remembers them. NULL when cJSON runs
 * out of memory, or, with *too_deep set, when @v is nested deeper than MAX_DEPTH.
 */
static cJSON *from_jv(jv v, int depth, const struct exact_numbers *x, bool *too_deep)
{
        jv_kind kind = jv_get_kind(v);

        if ((kind == JV_KIND_ARRAY || kind == JV_KIND_OBJECT) && depth >= MAX_DEPTH) {
                *too_deep = true;
                jv_free(v);
                return NULL;
        }
        switch (kind) {
        case JV_KIND_NUMBER:
                return number_from_jv(v, x);
        case JV_KIND_STRING:
                return string_from_jv(v);
        case JV_KIND_ARRAY:
                return array_from_jv(v, depth, x, too_deep);
        case JV_KIND_OBJECT:
                return object_from_jv(v, depth, x, too_deep);
        default:
                jv_free(v);
                if (kind == JV_KIND_TRUE)
                        return cJSON_CreateTrue();
                if (kind == JV_KIND_FALSE)
                        return cJSON_CreateFalse();
                return cJSON_CreateNull();
        }
}

/* ---- running ------------------------------------------------------------------------------------- */

/* @s made printable (one line, for logs) and cut at @max bytes without splitting a UTF-8 sequence. */
static void append_printable(struct ao_strbuf *sb, const char *s, size_t max)
{
        size_t start = sb->len;

        ao_strbuf_append_sanitized(sb, s);
        ao_quote_cut(sb, start, max);
}

/*
 * Fill @reterr: "jqFilter '<filter>': <what>". Both are made printable, as
 * filters span lines and error("...") messages carry anything.
 */
static int filter_error(struct ao_error *reterr, int code, const char *filter, const char *what)
{
        _cleanup_(ao_strbuf_done) struct ao_strbuf sb = {0};

        ao_strbuf_append(&sb, "jqFilter '");
        append_printable(&sb, filter, MAX_QUOTED_FILTER);
        ao_strbuf_append(&sb, "': ");
        append_printable(&sb, what, AO_ERROR_MSG_MAX);
        return ao_error_set(reterr, code, "%s", ao_strbuf_str(&sb));
}

/* jq's error value as text: a string as it is, anything else as JSON (as the jq CLI shows it). */
static int runtime_error(struct ao_error *reterr, const char *filter, jv msg)
{
        char what[AO_ERROR_MSG_MAX];
        jv text;

        if (jv_get_kind(msg) == JV_KIND_STRING) {
                (void) snprintf(what, sizeof(what), "%s", jv_string_value(msg));
                jv_free(msg);
        } else {
                text = jv_dump_string(msg, 0);
                (void) snprintf(what, sizeof(what), "%s (not a string)", jv_string_value(text));
                jv_free(text);
        }
        return filter_error(reterr, -EINVAL, filter, what);
}

/*
 * `halt` ends the output like the end of the program; `halt_error` is an
 * error with its message (gojq's HaltError, which shell-operator treats so).
 */
static int check_halted(jq_state *jq, const char *filter, struct ao_error *reterr)
{
        jv code;

        if (!jq_halted(jq))
                return 0;
        code = jq_get_exit_code(jq);
        if (!jv_is_valid(code)) {
                jv_free(code);
                return 0;
        }
        jv_free(code);
        return runtime_error(reterr, filter, jq_get_error_message(jq));
}

/* Nodes of @v (borrowed), counted up to @limit + 1 and MAX_DEPTH levels: from_jv() refuses deeper. */
static size_t jv_nodes(jv v, int depth, size_t limit)
{
        jv_kind kind = jv_get_kind(v);
        size_t n = 1;

        if (depth >= MAX_DEPTH)
                return n;
        if (kind == JV_KIND_ARRAY) {
                int len = jv_array_length(jv_copy(v));
                for (int i = 0; i < len && n <= limit; i++) {
                        jv e = jv_array_get(jv_copy(v), i);
                        n += jv_nodes(e, depth + 1, limit - n);
                        jv_free(e);
                }
        } else if (kind == JV_KIND_OBJECT) {
                for (int it = jv_object_iter(v); jv_object_iter_valid(v, it) && n <= limit;
                     it = jv_object_iter_next(v, it)) {
                        jv e = jv_object_iter_value(v, it);
                        n += jv_nodes(e, depth + 1, limit - n); /* in cJSON the key is on the member's node */
                        jv_free(e);
                }
        }
        return n;
}

/*
 * Run @p on @input (consumed): one output is itself, several an array, none null. The results
 * may have @max_nodes nodes in all.
 */
static int run(struct program *p, jv input, size_t max_nodes, jv *ret, struct ao_error *reterr)
{
        jv results = jv_array();
        size_t nodes = 0;
        int n = 0, r;

        jq_start(p->jq, input, 0);
        for (;;) {
                jv v = jq_next(p->jq);
                if (!jv_is_valid(v)) {
                        if (jv_invalid_has_msg(jv_copy(v))) {
                                jv_free(results);
                                return runtime_error(reterr, p->filter, jv_invalid_get_msg(v));
                        }
                        jv_free(v);
                        break;
                }
                nodes += jv_nodes(v, 0, max_nodes - nodes);
                n++;
                if (nodes > max_nodes) {
                        char why[128];
                        (void) snprintf(why, sizeof(why),
                                        "results of more than %zu nodes (%u times the input, at least %u)",
                                        max_nodes, OUTPUT_FACTOR, OUTPUT_NODES_MIN);
                        jv_free(v);
                        jv_free(results);
                        return filter_error(reterr, -E2BIG, p->filter, why);
                }
                results = jv_array_append(results, v);
        }
        r = check_halted(p->jq, p->filter, reterr);
        if (r < 0) {
                jv_free(results);
                return r;
        }
        if (n == 0) {
                jv_free(results);
                *ret = jv_null();
        } else if (n == 1) {
                *ret = jv_array_get(results, 0);
        } else {
                *ret = results;
        }
        return 0;
}

int ao_jq_apply(struct ao_jq_cache *c, const char *filter, const struct cJSON *input,
                struct cJSON **ret_result, char **ret_text, struct ao_error *reterr)
{
        struct program *p = lookup(c, filter);
        struct exact_numbers x = {0};
        bool too_deep = false;
        cJSON *result;
        jv in, out;
        int r;

        if (!p->jq)
                return filter_error(reterr, -EINVAL, filter, p->error);
        size_t input_nodes = ao_json_count_nodes(input);
        size_t max_nodes =
            AO_MAX((size_t) OUTPUT_NODES_MIN,
                   input_nodes > SIZE_MAX / OUTPUT_FACTOR ? SIZE_MAX : input_nodes * OUTPUT_FACTOR);
        in = to_jv(input, 0, &x);
        if (!jv_is_valid(in)) {
                ao_hashmap_free(x.by_double);
                return runtime_error(reterr, filter, jv_invalid_get_msg(in));
        }
        r = run(p, in, max_nodes, &out, reterr);
        if (r < 0) {
                ao_hashmap_free(x.by_double);
                return r;
        }
        result = from_jv(out, 0, &x, &too_deep);
        ao_hashmap_free(x.by_double);
        if (!result && too_deep)
                return filter_error(reterr, -E2BIG, filter, "result nested deeper than 1000 levels");
        if (!result)
                return filter_error(reterr, -ENOMEM, filter, "out of memory");
        if (ret_text)
                *ret_text = ao_json_canonical(result);
        *ret_result = result;
        return 0;
}
