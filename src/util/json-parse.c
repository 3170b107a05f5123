/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON text to a cJSON tree through libyajl's callbacks (see ao/json-parse.h for why not cJSON's
 * own parser, and for what comes out).
 *
 * yajl does the lexing and the grammar; the callbacks below build the tree as the tokens come,
 * appending each node to the innermost open container. yajl reports errors after the token it
 * refused; the offset callers print is the one cJSON printed, so locate() walks from the last
 * token yajl accepted to the token that broke the text (at most a ',' or ':' lies between).
 */
#include "ao/json-parse.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "ao/json-number.h"
#include "ao/macro.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

#define NO_OFFSET SIZE_MAX

/* What the grammar wants next, as far as the callbacks can tell (',' and ':' have none). */
enum expect {
        EXPECT_VALUE,          /* or ']' right after '[' */
        EXPECT_KEY,            /* or '}' right after '{' */
        EXPECT_COLON,          /* after a key */
        EXPECT_COMMA_OR_CLOSE, /* after a member or element */
};

struct builder {
        yajl_handle yajl; /* owned */
        const char *text; /* borrowed: the caller's text */
        size_t len;
        size_t start;    /* where yajl's input starts in the text: past a byte order mark and white space */
        bool finishing;  /* inside yajl_complete_parse(), whose offsets are not into the text */
        size_t last_end; /* just past the last token a callback saw */
        enum expect expect;
        cJSON *root;  /* owned: everything built so far hangs from it */
        cJSON **open; /* borrowed from root: the containers not closed yet, innermost last */
        size_t depth; /* entries in open */
        char *key;    /* owned: the member name waiting for its value */
        bool done;    /* the value is complete */
        bool failed;  /* error says why */
        struct ao_json_parse_error error;
};

static int fail(struct builder *b, size_t offset, const char *reason)
{
        b->failed = true;
        b->error = (struct ao_json_parse_error){.offset = offset, .reason = reason};
        return 0; /* stops yajl */
}

/* Just past the token yajl has reported. */
static size_t token_end(const struct builder *b)
{
        /* yajl_complete_parse() feeds its own " ": the token it completes is a number ending the text. */
        return b->finishing ? b->len : b->start + yajl_get_bytes_consumed(b->yajl);
}

/* White space between tokens, as yajl's lexer has it. */
static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static size_t skip_space(const struct builder *b, size_t i)
{
        while (i < b->len && is_space(b->text[i]))
                i++;
        return i;
}

static bool in_object(const struct builder *b)
{
        return b->depth > 0 && cJSON_IsObject(b->open[b->depth - 1]);
}

/* The four hex digits at @s as a number, or -1 when they are not four hex digits. */
static long hex4(const char *s)
{
        long v = 0;
        for (size_t i = 0; i < 4; i++) {
                int d = ao_hex_digit(s[i]);
                if (d < 0)
                        return -1;
                v = v << 4 | d;
        }
        return v;
}

/*
 * The first byte in the string body [@from, @to) that cJSON or JSON refuses, or NO_OFFSET: a raw
 * control character, an escape JSON does not have, "\u" without four hex digits, or a UTF-16
 * surrogate escape that is not a high one followed by a low one (cJSON refuses those; yajl would
 * put a '?' or encode the half on its own). An escape is named by its backslash.
 */
static size_t refused_in_string(const char *t, size_t from, size_t to, const char **ret_reason)
{
        for (size_t i = from; i < to; i++) {
                unsigned char c = (unsigned char) t[i];
                if (c < 0x20) {
                        *ret_reason = "control character in a string";
                        return i;
                }
                if (c != '\\')
                        continue;
                *ret_reason = "invalid escape in a string";
                if (i + 1 >= to)
                        return i;
                switch (t[i + 1]) {
                case '"':
                case '\\':
                case '/':
                case 'b':
                case 'f':
                case 'n':
                case 'r':
                case 't':
                        i++;
                        continue;
                case 'u':
                        break;
                default:
                        return i;
                }
                long first = to - i < 6 ? -1 : hex4(t + i + 2);
                if (first < 0)
                        return i;
                if (first < 0xD800 || first > 0xDFFF) {
                        i += 5;
                        continue;
                }
                *ret_reason = "invalid UTF-16 surrogate escape in a string";
                if (first >= 0xDC00 || to - i < 12 || t[i + 6] != '\\' || t[i + 7] != 'u')
                        return i;
                long second = hex4(t + i + 8);
                if (second < 0xDC00 || second > 0xDFFF)
                        return i;
                i += 11;
        }
        return NO_OFFSET;
}

/*
 * Whether yajl's decoding of a string (@s, @len bytes) may come from a UTF-16 surrogate escape:
 * it writes a pair, or a high half followed by any "\u", as four bytes (lead 0xF0-0xF4), a low
 * half alone as three (lead 0xED), a high half alone as '?'. Text without those bytes needs no
 * second look.
 */
static bool may_hold_surrogate(const unsigned char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (s[i] == '?' || s[i] == 0xED || s[i] >= 0xF0)
                        return true;
        return false;
}

/* The string yajl hands over as a C string (malloc'd; cut at a NUL from "\u0000", as cJSON's), or NULL. */
static char *take_string(struct builder *b, const unsigned char *s, size_t len)
{
        uintptr_t p = (uintptr_t) s, text = (uintptr_t) b->text;

        if ((p < text || p >= text + b->len) && may_hold_surrogate(s, len)) {
                /* Decoded into yajl's buffer from escapes, which cJSON reads more strictly. */
                size_t quote = skip_space(b, b->last_end);
                if (quote < b->len && (b->text[quote] == ',' || b->text[quote] == ':'))
                        quote = skip_space(b, quote + 1);
                const char *reason = NULL;
                size_t bad = refused_in_string(b->text, quote + 1, token_end(b) - 1, &reason);
                if (bad != NO_OFFSET) {
                        (void) fail(b, bad, reason);
                        return NULL;
                }
        }
        char *copy = malloc(len + 1);
        if (!copy) {
                (void) fail(b, b->last_end, "out of memory");
                return NULL;
        }
        memcpy(copy, s, len);
        copy[len] = '\0';
        return copy;
}

/* Hang @node (owned; NULL when out of memory) where the text has it. */
static bool attach(struct builder *b, cJSON *node)
{
        if (!node)
                return false;
        if (b->depth == 0) {
                b->root = node;
                return true;
        }
        cJSON *parent = b->open[b->depth - 1];
        if (parent->type == cJSON_Object)
                node->string = TAKE_PTR(b->key);
        /* Members and elements are one list, linked as cJSON links it: the head's prev is the tail. */
        if (!parent->child) {
                parent->child = node;
        } else {
                cJSON *tail = parent->child->prev;
                tail->next = node;
                node->prev = tail;
        }
        parent->child->prev = node;
        return true;
}

/* A value ended at the last token: the whole text's value, or one more in a container. */
static int value_done(struct builder *b)
{
        b->last_end = token_end(b);
        if (b->depth == 0) {
                b->done = true;
                return 0; /* stops yajl: what follows is the caller's */
        }
        b->expect = EXPECT_COMMA_OR_CLOSE;
        return 1;
}

static int add_scalar(struct builder *b, cJSON *node)
{
        if (!attach(b, node))
                return fail(b, b->last_end, "out of memory");
        return value_done(b);
}

static int on_null(void *ctx)
{
        return add_scalar(ctx, cJSON_CreateNull());
}

static int on_boolean(void *ctx, int value)
{
        cJSON *node = cJSON_CreateBool(value);
        if (node && value)
                node->valueint = 1; /* as cJSON's parser leaves it */
        return add_scalar(ctx, node);
}

static int on_number(void *ctx, const char *literal, size_t len)
{
        return add_scalar(ctx, ao_json_number_from_literal(literal, len));
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
        struct builder *b = ctx;
        char *value = take_string(b, s, len);
        if (!value)
                return 0;
        cJSON *node = cJSON_CreateNull();
        if (!node) {
                free(value);
                return fail(b, b->last_end, "out of memory");
        }
        node->type = cJSON_String;
        node->valuestring = value;
        return add_scalar(b, node);
}

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
        struct builder *b = ctx;
        b->key = take_string(b, s, len);
        if (!b->key)
                return 0;
        b->last_end = token_end(b);
        b->expect = EXPECT_COLON;
        return 1;
}

static int open_container(struct builder *b, cJSON *(*create)(void), enum expect expect)
{
        size_t bracket = token_end(b) - 1;

        /* cJSON's limit, and the same offset: the bracket that would open one level too many. */
        if (b->depth == AO_JSON_PARSE_MAX_DEPTH)
                return fail(b, bracket, "nesting deeper than " STRINGIFY(AO_JSON_PARSE_MAX_DEPTH) " levels");
        cJSON *node = create();
        if (!attach(b, node))
                return fail(b, bracket, "out of memory");
        b->open[b->depth++] = node;
        b->last_end = bracket + 1;
        b->expect = expect;
        return 1;
}

static int close_container(struct builder *b)
{
        b->depth--;
        return value_done(b);
}

static int on_start_map(void *ctx)
{
        return open_container(ctx, cJSON_CreateObject, EXPECT_KEY);
}

static int on_end_map(void *ctx)
{
        return close_container(ctx);
}

static int on_start_array(void *ctx)
{
        return open_container(ctx, cJSON_CreateArray, EXPECT_VALUE);
}

static int on_end_array(void *ctx)
{
        return close_container(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end_map,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end_array,
};

/* The string opening at @quote is what broke the text: cJSON looks for its end first, then reads it. */
static void string_error(struct builder *b, size_t quote)
{
        const char *reason = "invalid string";
        size_t i = quote + 1;

        while (i < b->len && b->text[i] != '"')
                i += b->text[i] == '\\' ? 2 : 1;
        if (i >= b->len) {
                (void) fail(b, quote + 1, "unterminated string");
                return;
        }
        size_t bad = refused_in_string(b->text, quote + 1, i, &reason);
        (void) fail(b, bad != NO_OFFSET ? bad : quote, reason);
}

/* A value was due at @at. */
static void value_error(struct builder *b, size_t at)
{
        char c = b->text[at];

        if (c == '"')
                string_error(b, at);
        else if (c == '-' || (c >= '0' && c <= '9'))
                (void) fail(b, at, "invalid number");
        else if (c == 't' || c == 'f' || c == 'n')
                (void) fail(b, at, "invalid literal");
        else
                (void) fail(b, at, "expected a value");
}

/* yajl refused the text or it ran out (@at_end): find the token that broke it. */
static void locate(struct builder *b, bool at_end)
{
        const char *t = b->text;
        size_t at = skip_space(b, b->last_end);
        enum expect expect = b->expect;

        /* A ',' or ':' that yajl took after the last token a callback saw. */
        if (at < b->len && expect == EXPECT_COLON && t[at] == ':') {
                expect = EXPECT_VALUE;
                at = skip_space(b, at + 1);
        } else if (at < b->len && expect == EXPECT_COMMA_OR_CLOSE && t[at] == ',') {
                expect = in_object(b) ? EXPECT_KEY : EXPECT_VALUE;
                at = skip_space(b, at + 1);
        }
        if (at >= b->len)
                (void) fail(b, b->len, "unexpected end of input");
        else if (expect == EXPECT_VALUE)
                value_error(b, at);
        else if (expect == EXPECT_KEY && t[at] == '"')
                string_error(b, at);
        else if (expect == EXPECT_KEY)
                (void) fail(b, at + 1, "expected a string key"); /* cJSON names the byte after its first */
        else if (expect == EXPECT_COLON)
                (void) fail(b, at, "expected ':' after a key");
        else
                (void) fail(b, at, in_object(b) ? "expected ',' or '}'" : "expected ',' or ']'");
        b->error.at_end = at_end;
}

/*
 * yajl's own blocks for one parse (its handle, lexer, state stack and the buffer it decodes
 * escaped strings into: about 4.5 KB) come from the stack frame of the parse. From malloc() they
 * would cost a dozen calls per parse, and the 2 KB buffer would make glibc merge every block freed
 * since the last such request (it merges only when asked for 1 KB or more) inside the parse: the
 * tree of the previous watch event, say. What does not fit comes from malloc().
 */
#define SCRATCH_SIZE 6144
#define SCRATCH_UNIT sizeof(max_align_t)

struct scratch {
        size_t used; /* bytes handed out from buf */
        _Alignas(max_align_t) unsigned char buf[SCRATCH_SIZE];
};

static bool in_scratch(const struct scratch *s, const void *p)
{
        uintptr_t at = (uintptr_t) p, buf = (uintptr_t) s->buf;
        return at >= buf && at < buf + SCRATCH_SIZE;
}

/* A block of the scratch area starts with a unit holding its size (for realloc). */
static void *scratch_malloc(void *ctx, size_t size)
{
        struct scratch *s = ctx;
        size_t need = SCRATCH_UNIT + (size + SCRATCH_UNIT - 1) / SCRATCH_UNIT * SCRATCH_UNIT;

        if (size > SCRATCH_SIZE || need > SCRATCH_SIZE - s->used)
                return malloc(size);
        unsigned char *block = s->buf + s->used;
        s->used += need;
        memcpy(block, &size, sizeof(size));
        return block + SCRATCH_UNIT;
}

static void *scratch_realloc(void *ctx, void *p, size_t size)
{
        size_t old;

        if (!p)
                return scratch_malloc(ctx, size);
        if (!in_scratch(ctx, p))
                return realloc(p, size);
        memcpy(&old, (unsigned char *) p - SCRATCH_UNIT, sizeof(old));
        if (size <= old)
                return p;
        void *bigger = scratch_malloc(ctx, size);
        if (bigger)
                memcpy(bigger, p, old);
        return bigger;
}

static void scratch_free(void *ctx, void *p)
{
        if (!in_scratch(ctx, p))
                free(p);
}

/* Where the value starts: past what cJSON skips first. */
static size_t value_start(const char *text, size_t len)
{
        size_t i = 0;

        /* COMPAT(cJSON 1.7.15): it skips a byte order mark only when at least two more bytes follow. */
        if (len > 4 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
                i = 3;
        /* Before the value (and only there) cJSON takes every byte up to 0x20 for white space. */
        while (i < len && (unsigned char) text[i] <= 0x20)
                i++;
        return i;
}

cJSON *ao_json_parse(const char *text, size_t len, const char **ret_end, struct ao_json_parse_error *err)
{
        cJSON *open[AO_JSON_PARSE_MAX_DEPTH];
        struct builder b = {.text = text, .len = len, .open = open};
        struct scratch scratch;
        yajl_alloc_funcs allocator = {scratch_malloc, scratch_realloc, scratch_free, &scratch};

        if (!text) /* no text at all: an empty one */
                b.text = "", b.len = 0;

        b.start = b.last_end = value_start(b.text, b.len);
        scratch.used = 0;
        b.yajl = yajl_alloc(&callbacks, &allocator, &b);
        if (!b.yajl) {
                (void) fail(&b, 0, "out of memory");
        } else {
                (void) yajl_config(b.yajl, yajl_dont_validate_strings, 1);
                yajl_status st =
                    yajl_parse(b.yajl, (const unsigned char *) b.text + b.start, b.len - b.start);
                if (st == yajl_status_ok) {
                        /* Not done yet: the text ended inside the value, or with a number yajl could not end. */
                        b.finishing = true;
                        (void) yajl_complete_parse(b.yajl);
                }
                if (!b.done && !b.failed)
                        locate(&b, b.finishing);
                yajl_free(b.yajl);
        }
        if (b.done) {
                if (ret_end)
                        *ret_end = b.text + b.last_end;
                return b.root;
        }
        cJSON_Delete(b.root);
        free(b.key);
        if (err)
                *err = b.error;
        return NULL;
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

cJSON *ao_json_parse_all(const char *text, size_t len, struct ao_json_parse_error *err)
{
        const char *end = NULL;
        cJSON *json = ao_json_parse(text, len, &end, err);

        if (!json)
                return NULL;
        size_t at = (size_t) (end - text); /* not NULL: a value was found in it */
        while (at < len && is_json_space(text[at]))
                at++;
        if (at < len) {
                cJSON_Delete(json);
                if (err)
                        *err = (struct ao_json_parse_error){.offset = at, .reason = "text after the value"};
                return NULL;
        }
        return json;
}
