/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/json-writer.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

/*
 * Canonical JSON, for checksums and for the files hooks read. One walker writes it into a
 * writer's buffer, which is either the whole text (ao_json_canonical()) or flushed to a file in
 * chunks as the walk goes. The walk is iterative with its own stack: trees handed in may come
 * from cJSON_Parse (nesting up to 1000) or be built by code, so the C stack is never at the
 * mercy of the input.
 */

/* Integers this large print with an exponent, as in JavaScript and Go's encoding/json. */
#define PLAIN_INTEGER_LIMIT 1e21
/* From here on every double is an integer. */
#define EXACT_INTEGER_LIMIT 9007199254740992.0

/* One open array or object: its children in output order. */
struct level {
        const cJSON **items; /* owned array of borrowed children */
        size_t n, next;
        bool object;
};

/* Code points libyaml would not read back verbatim inside a JSON string. */
static bool needs_unicode_escape(uint32_t cp)
{
        /*
         * C1 controls are refused by libyaml's reader, except U+0085 (NEL) which,
         * like U+2028/U+2029, YAML 1.1 treats as a line break and folds inside
         * quotes. U+FFFE and U+FFFF are refused too.
         */
        return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFFFE || cp == 0xFFFF;
}

static uint32_t decode_utf8(const unsigned char *s, size_t n)
{
        if (n == 1)
                return s[0];
        uint32_t cp = s[0] & (0x7F >> n);
        for (size_t i = 1; i < n; i++)
                cp = (cp << 6) | (s[i] & 0x3F);
        return cp;
}

/* Find the first code point that needs_unicode_escape(); returns its length in *ret_len, or NULL. */
static const char *find_escape(const char *s, uint32_t *ret_cp, size_t *ret_len)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t remaining = strlen(s);
        while (remaining > 0) {
                size_t n = *p < 0x80 ? 1 : ao_utf8_sequence_length(p, remaining);
                if (n == 0) {
                        n = 1; /* invalid byte: ao_strbuf_append_json_string() replaces it */
                } else if (n > 1 && needs_unicode_escape(decode_utf8(p, n))) {
                        *ret_cp = decode_utf8(p, n);
                        *ret_len = n;
                        return (const char *) p;
                }
                p += n;
                remaining -= n;
        }
        return NULL;
}

/* Append @n bytes of @s escaped as the inside of a JSON string, without quotes. */
static void append_json_fragment(struct ao_strbuf *sb, const char *s, size_t n)
{
        char *copy = ao_xstrndup(s, n);
        size_t start = sb->len;
        ao_strbuf_append_json_string(sb, copy);
        free(copy);
        memmove(sb->buf + start, sb->buf + start + 1, sb->len - start - 2);
        sb->len -= 2;
        sb->buf[sb->len] = '\0';
}

static void append_string(struct ao_strbuf *sb, const char *s)
{
        uint32_t cp;
        size_t len;
        const char *special = find_escape(s, &cp, &len);
        if (!special) {
                ao_strbuf_append_json_string(sb, s);
                return;
        }
        /* Rare: split around the code points that need a \u escape. */
        ao_strbuf_append_c(sb, '"');
        while (special) {
                append_json_fragment(sb, s, (size_t) (special - s));
                ao_strbuf_appendf(sb, "\\u%04x", (unsigned) cp);
                s = special + len;
                special = find_escape(s, &cp, &len);
        }
        append_json_fragment(sb, s, strlen(s));
        ao_strbuf_append_c(sb, '"');
}

/* printf the shortest of %.15g, %.16g, %.17g (or %e with @exp) that reads back as @d. */
static void shortest(char *buf, size_t size, double d, bool exp)
{
        for (int prec = 15; prec <= 17; prec++) {
                if (exp)
                        (void) snprintf(buf, size, "%.*e", prec - 1, d);
                else
                        (void) snprintf(buf, size, "%.*g", prec, d);
                if (strtod(buf, NULL) == d)
                        return;
        }
}

/*
 * An integral double below 1e21 as plain digits: the shortest digits that
 * round-trip padded with zeros ("12345678901234567000" for 2^64-ish values),
 * the way JavaScript and Go print them, rather than the exact binary value.
 */
static void append_integer(struct ao_strbuf *sb, double d)
{
        char buf[64], digits[32];
        size_t n = 0;
        shortest(buf, sizeof(buf), d, true);

        const char *p = buf;
        if (*p == '-') {
                ao_strbuf_append_c(sb, '-');
                p++;
        }
        for (; *p && *p != 'e'; p++)
                if (*p != '.')
                        digits[n++] = *p;
        while (n > 1 && digits[n - 1] == '0')
                n--;
        long exponent = *p == 'e' ? strtol(p + 1, NULL, 10) : 0;
        if ((long) n > exponent + 1) {
                /* Not reached for integral values (their shortest digits have no fraction); stay correct anyway. */
                shortest(buf, sizeof(buf), d < 0 ? -d : d, false);
                ao_strbuf_append(sb, buf);
                return;
        }
        ao_strbuf_append_n(sb, digits, n);
        for (long i = (long) n; i <= exponent; i++)
                ao_strbuf_append_c(sb, '0');
}

static void append_number(struct ao_strbuf *sb, double d)
{
        if (!isfinite(d)) {
                ao_strbuf_append(sb, "null");
                return;
        }
        if (d == 0) {
                ao_strbuf_append_c(sb, '0'); /* -0 too: YAML reads "-0" as the integer 0 */
                return;
        }
        double magnitude = d < 0 ? -d : d;
        /* Below 2^53 the cast is exact and in range; no libm needed. */
        bool integral = magnitude >= EXACT_INTEGER_LIMIT || d == (double) (int64_t) d;
        if (integral && magnitude < EXACT_INTEGER_LIMIT) {
                /*
                 * Every integer up to 2^53 is a double, so no shorter digits read back as this one:
                 * its exact digits are the shortest. The common case (replicas, ports) skips the
                 * printf and strtod rounds of shortest().
                 */
                char buf[24];
                int n = snprintf(buf, sizeof(buf), "%" PRId64, (int64_t) d);
                ao_strbuf_append_n(sb, buf, (size_t) n);
                return;
        }
        if (integral && magnitude < PLAIN_INTEGER_LIMIT) {
                append_integer(sb, d);
                return;
        }
        char buf[64];
        shortest(buf, sizeof(buf), d, false);
        ao_strbuf_append(sb, buf);
}

struct keyed {
        const cJSON *item;
        size_t index;
};

static int compare_keyed(const void *a, const void *b)
{
        const struct keyed *x = a, *y = b;
        int r = strcmp(x->item->string ? x->item->string : "", y->item->string ? y->item->string : "");
        if (r != 0)
                return r;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* Open @node's level: its children, sorted by key (stable) for an object. */
static void open_level(struct level *lv, const cJSON *node)
{
        size_t n = 0;
        for (const cJSON *c = node->child; c; c = c->next)
                n++;
        *lv = (struct level){.n = n, .object = cJSON_IsObject(node)};
        if (n == 0)
                return;
        lv->items = ao_xreallocarray(NULL, n, sizeof(*lv->items));
        if (!lv->object) {
                size_t i = 0;
                for (const cJSON *c = node->child; c; c = c->next)
                        lv->items[i++] = c;
                return;
        }
        struct keyed *keyed = ao_xreallocarray(NULL, n, sizeof(*keyed));
        size_t i = 0;
        for (const cJSON *c = node->child; c; c = c->next, i++)
                keyed[i] = (struct keyed){c, i};
        qsort(keyed, n, sizeof(*keyed), compare_keyed);
        for (i = 0; i < n; i++)
                lv->items[i] = keyed[i].item;
        free(keyed);
}

/* Append a scalar; returns false for an array or object, which the caller opens. */
static bool append_scalar(struct ao_strbuf *sb, const cJSON *node)
{
        if (cJSON_IsArray(node) || cJSON_IsObject(node))
                return false;
        if (cJSON_IsTrue(node))
                ao_strbuf_append(sb, "true");
        else if (cJSON_IsFalse(node))
                ao_strbuf_append(sb, "false");
        else if (cJSON_IsNumber(node))
                append_number(sb, node->valuedouble);
        else if (cJSON_IsString(node))
                append_string(sb, node->valuestring ? node->valuestring : "");
        else if (cJSON_IsRaw(node) && node->valuestring)
                ao_strbuf_append(sb, node->valuestring); /* already JSON by contract of cJSON_CreateRaw */
        else
                ao_strbuf_append(sb, "null");
        return true;
}

/* ---- the writer ------------------------------------------------------------------------------ */

void ao_json_writer_init(struct ao_json_writer *w, int fd)
{
        *w = (struct ao_json_writer){._fd = fd < 0 ? -1 : fd, .chunk = AO_JSON_WRITER_CHUNK};
}

void ao_json_writer_done(struct ao_json_writer *w)
{
        ao_strbuf_done(&w->_buf);
}

int ao_json_writer_error(const struct ao_json_writer *w)
{
        return w->_error;
}

static void fail(struct ao_json_writer *w, int r)
{
        if (w->_error == 0)
                w->_error = r;
}

/* The buffer to the file, at the offset after what went before; after an error it is dropped. */
static void flush(struct ao_json_writer *w)
{
        const char *p = w->_buf.buf;
        size_t len = w->_buf.len;
        while (w->_error == 0 && len > 0) {
                ssize_t n = pwrite(w->_fd, p, len, w->_offset);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        fail(w, n < 0 ? ao_negative_errno() : -EIO);
                        break;
                }
                p += n;
                len -= (size_t) n;
                w->_offset += n;
        }
        ao_strbuf_reset(&w->_buf);
}

static void flush_if_full(struct ao_json_writer *w)
{
        if (w->_fd >= 0 && w->_buf.len >= w->chunk)
                flush(w);
}

void ao_json_write_raw(struct ao_json_writer *w, const char *text)
{
        ao_strbuf_append(&w->_buf, text);
        flush_if_full(w);
}

void ao_json_write_with(struct ao_json_writer *w, const cJSON *json, ao_json_write_substitute *substitute,
                        void *userdata)
{
        struct ao_strbuf *sb = &w->_buf;
        struct level *stack = NULL;
        size_t depth = 0, cap = 0;
        const cJSON *node = json;

        for (;;) {
                int written = node && substitute ? substitute(node, w, userdata) : 0;
                if (written < 0) {
                        fail(w, written);
                } else if (written > 0) {
                        /* the substitute wrote it */
                } else if (node && !append_scalar(sb, node)) {
                        if (depth == cap) {
                                cap = cap ? 2 * cap : 16;
                                stack = ao_xreallocarray(stack, cap, sizeof(*stack));
                        }
                        open_level(&stack[depth], node);
                        ao_strbuf_append_c(sb, stack[depth].object ? '{' : '[');
                        depth++;
                } else if (!node) {
                        ao_strbuf_append(sb, "null");
                }
                flush_if_full(w);
                if (w->_error < 0)
                        break;

                /* Close finished levels, then move to the next child of the innermost open one. */
                node = NULL;
                while (depth > 0) {
                        struct level *lv = &stack[depth - 1];
                        if (lv->next < lv->n) {
                                node = lv->items[lv->next];
                                if (lv->next++ > 0)
                                        ao_strbuf_append_c(sb, ',');
                                if (lv->object) {
                                        append_string(sb, node->string ? node->string : "");
                                        ao_strbuf_append_c(sb, ':');
                                }
                                break;
                        }
                        ao_strbuf_append_c(sb, lv->object ? '}' : ']');
                        free(lv->items);
                        depth--;
                }
                if (!node)
                        break;
        }
        /* Levels still open after an error. */
        while (depth > 0)
                free(stack[--depth].items);
        free(stack);
}

void ao_json_write(struct ao_json_writer *w, const cJSON *json)
{
        ao_json_write_with(w, json, NULL, NULL);
}

int ao_json_writer_finish(struct ao_json_writer *w, size_t *ret_len)
{
        if (w->_fd >= 0)
                flush(w);
        if (w->_error < 0)
                return w->_error;
        if (ret_len)
                *ret_len = w->_fd >= 0 ? (size_t) w->_offset : w->_buf.len;
        return 0;
}

char *ao_json_writer_steal(struct ao_json_writer *w)
{
        return ao_strbuf_steal(&w->_buf);
}

char *ao_json_canonical(const struct cJSON *json)
{
        struct ao_json_writer w;
        ao_json_writer_init(&w, -1);
        ao_json_write(&w, json);
        return ao_json_writer_steal(&w);
}
