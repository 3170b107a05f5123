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
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <jq.h>

#include "ao/alloc.h"
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
 * Results of one run. A generator without end (`repeat(.)`) would otherwise
 * take the process down; no sensible filter produces this many values from
 * one object.
 */
#define MAX_OUTPUTS 100000
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

/* ---- cJSON <-> jv -------------------------------------------------------------------------------- */

static jv to_jv(const cJSON *item, int depth);

static jv array_to_jv(const cJSON *item, int depth)
{
        jv a = jv_array_sized(cJSON_GetArraySize(item));
        const cJSON *child;
        int i = 0;

        cJSON_ArrayForEach(child, item)
        {
                jv v = to_jv(child, depth + 1);
                if (!jv_is_valid(v)) {
                        jv_free(a);
                        return v;
                }
                a = jv_array_set(a, i++, v);
        }
        return a;
}

static jv object_to_jv(const cJSON *item, int depth)
{
        jv o = jv_object();
        const cJSON *child;

        cJSON_ArrayForEach(child, item)
        {
                jv v = to_jv(child, depth + 1);
                if (!jv_is_valid(v)) {
                        jv_free(o);
                        return v;
                }
                o = jv_object_set(o, jv_string(child->string ? child->string : ""), v);
        }
        return o;
}

/* A new jv for @item, or an invalid one with a message. */
static jv to_jv(const cJSON *item, int depth)
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
                return jv_number(item->valuedouble);
        case cJSON_String:
                return jv_string(item->valuestring ? item->valuestring : "");
        case cJSON_Array:
                return array_to_jv(item, depth);
        case cJSON_Object:
                return object_to_jv(item, depth);
        case cJSON_Raw:
                return jv_parse(item->valuestring ? item->valuestring : "null");
        default:
                return jv_null();
        }
}

static cJSON *from_jv(jv v, int depth, bool *too_deep);

/* Adds the converted @v (consumed) to @parent under @key (NULL: array element). */
static bool add_from_jv(cJSON *parent, const char *key, jv v, int depth, bool *too_deep)
{
        cJSON *item = from_jv(v, depth + 1, too_deep);

        if (!item)
                return false;
        if (key)
                cJSON_AddItemToObject(parent, key, item);
        else
                cJSON_AddItemToArray(parent, item);
        return true;
}

static cJSON *array_from_jv(jv v, int depth, bool *too_deep)
{
        cJSON *a = cJSON_CreateArray();
        int n = jv_array_length(jv_copy(v));

        for (int i = 0; a && i < n; i++)
                if (!add_from_jv(a, NULL, jv_array_get(jv_copy(v), i), depth, too_deep)) {
                        cJSON_Delete(a);
                        a = NULL;
                }
        jv_free(v);
        return a;
}

static cJSON *object_from_jv(jv v, int depth, bool *too_deep)
{
        cJSON *o = cJSON_CreateObject();

        for (int it = jv_object_iter(v); o && jv_object_iter_valid(v, it); it = jv_object_iter_next(v, it)) {
                jv key = jv_object_iter_key(v, it);
                if (!add_from_jv(o, jv_string_value(key), jv_object_iter_value(v, it), depth, too_deep)) {
                        cJSON_Delete(o);
                        o = NULL;
                }
                jv_free(key);
        }
        jv_free(v);
        return o;
}

/* jq 1.6 prints NaN as null and infinities as +-DBL_MAX: results are what `jq -c` shows. */
static cJSON *number_from_jv(jv v)
{
        double d = jv_number_value(v);

        jv_free(v);
        if (isnan(d))
                return cJSON_CreateNull();
        if (isinf(d))
                d = d > 0 ? DBL_MAX : -DBL_MAX;
        return cJSON_CreateNumber(d);
}

static cJSON *string_from_jv(jv v)
{
        cJSON *s = cJSON_CreateString(jv_string_value(v));

        jv_free(v);
        return s;
}

/*
 * A new cJSON value for @v (consumed). NULL when cJSON runs out of memory,
 * or, with *too_deep set, when @v is nested deeper than MAX_DEPTH.
 */
static cJSON *from_jv(jv v, int depth, bool *too_deep)
{
        jv_kind kind = jv_get_kind(v);

        if ((kind == JV_KIND_ARRAY || kind == JV_KIND_OBJECT) && depth >= MAX_DEPTH) {
                *too_deep = true;
                jv_free(v);
                return NULL;
        }
        switch (kind) {
        case JV_KIND_NUMBER:
                return number_from_jv(v);
        case JV_KIND_STRING:
                return string_from_jv(v);
        case JV_KIND_ARRAY:
                return array_from_jv(v, depth, too_deep);
        case JV_KIND_OBJECT:
                return object_from_jv(v, depth, too_deep);
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

/* Run @p on @input (consumed): one output is itself, several an array, none null. */
static int run(struct program *p, jv input, jv *ret, struct ao_error *reterr)
{
        jv results = jv_array();
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
                if (++n > MAX_OUTPUTS) {
                        jv_free(v);
                        jv_free(results);
                        return filter_error(reterr, -E2BIG, p->filter, "more than 100000 results");
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
        bool too_deep = false;
        cJSON *result;
        jv in, out;
        int r;

        if (!p->jq)
                return filter_error(reterr, -EINVAL, filter, p->error);
        in = to_jv(input, 0);
        if (!jv_is_valid(in))
                return runtime_error(reterr, filter, jv_invalid_get_msg(in));
        r = run(p, in, &out, reterr);
        if (r < 0)
                return r;
        result = from_jv(out, 0, &too_deep);
        if (!result && too_deep)
                return filter_error(reterr, -E2BIG, filter, "result nested deeper than 1000 levels");
        if (!result)
                return filter_error(reterr, -ENOMEM, filter, "out of memory");
        if (ret_text)
                *ret_text = ao_json_canonical(result);
        *ret_result = result;
        return 0;
}
