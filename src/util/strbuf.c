/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ao/alloc.h"

static void reserve(struct ao_strbuf *sb, size_t extra)
{
        if (sb->buf && sb->len + extra < sb->cap)
                return;
        size_t want = sb->len + extra + 1;
        size_t cap = sb->cap ? sb->cap : 64;
        while (cap < want)
                cap *= 2;
        sb->buf = ao_xrealloc(sb->buf, cap);
        sb->cap = cap;
}

void ao_strbuf_append_n(struct ao_strbuf *sb, const char *s, size_t n)
{
        reserve(sb, n);
        memcpy(sb->buf + sb->len, s, n);
        sb->len += n;
        sb->buf[sb->len] = '\0';
}

void ao_strbuf_append(struct ao_strbuf *sb, const char *s)
{
        ao_strbuf_append_n(sb, s, strlen(s));
}

void ao_strbuf_append_c(struct ao_strbuf *sb, char c)
{
        ao_strbuf_append_n(sb, &c, 1);
}

void ao_strbuf_vappendf(struct ao_strbuf *sb, const char *fmt, va_list ap)
{
        va_list again;
        va_copy(again, ap);
        reserve(sb, 0);
        int n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
        if (n < 0) {
                va_end(again);
                return;
        }
        if ((size_t) n >= sb->cap - sb->len) {
                reserve(sb, (size_t) n);
                (void) vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, again);
        }
        va_end(again);
        sb->len += (size_t) n;
}

void ao_strbuf_appendf(struct ao_strbuf *sb, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        ao_strbuf_vappendf(sb, fmt, ap);
        va_end(ap);
}

size_t ao_utf8_sequence_length(const unsigned char *s, size_t n)
{
        if (n == 0)
                return 0;
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;

        size_t len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) {
                len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
                len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
                len = 4, cp = c & 0x07, min = 0x10000;
        } else {
                return 0;
        }
        if (n < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xC0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        return len;
}

enum escape_style {
        ESCAPE_JSON,
        ESCAPE_QUOTED,
        ESCAPE_SANITIZED,
};

/* Escape one ASCII byte per @style; returns false when it can be copied as is. */
static bool append_escaped_ascii(struct ao_strbuf *sb, unsigned char c, enum escape_style style)
{
        const char *short_form = NULL;
        switch (c) {
        case '"':
                short_form = style == ESCAPE_SANITIZED ? NULL : "\\\"";
                break;
        case '\\':
                short_form = style == ESCAPE_SANITIZED ? NULL : "\\\\";
                break;
        case '\n':
                short_form = "\\n";
                break;
        case '\t':
                short_form = "\\t";
                break;
        case '\r':
                short_form = "\\r";
                break;
        default:
                break;
        }
        if (short_form) {
                ao_strbuf_append(sb, short_form);
                return true;
        }
        if (c < 0x20 || c == 0x7F) {
                if (style == ESCAPE_JSON)
                        ao_strbuf_appendf(sb, "\\u%04x", c);
                else
                        ao_strbuf_appendf(sb, "\\x%02x", c);
                return true;
        }
        return false;
}

static void append_escaped(struct ao_strbuf *sb, const char *s, enum escape_style style)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t remaining = strlen(s);
        while (remaining > 0) {
                /* Copy the longest run that needs no escaping in one go. */
                size_t run = 0;
                for (;;) {
                        if (run >= remaining)
                                break;
                        unsigned char c = p[run];
                        if (c < 0x80) {
                                if (c < 0x20 || c == 0x7F || c == '"' || c == '\\')
                                        break;
                                run++;
                                continue;
                        }
                        size_t seq = ao_utf8_sequence_length(p + run, remaining - run);
                        if (seq == 0)
                                break;
                        run += seq;
                }
                ao_strbuf_append_n(sb, (const char *) p, run);
                p += run;
                remaining -= run;
                if (remaining == 0)
                        break;

                if (*p < 0x80) {
                        if (!append_escaped_ascii(sb, *p, style))
                                ao_strbuf_append_c(sb, (char) *p);
                } else {
                        ao_strbuf_append(sb, "\xEF\xBF\xBD"); /* U+FFFD for a byte that is not UTF-8 */
                }
                p++;
                remaining--;
        }
}

void ao_strbuf_append_json_string(struct ao_strbuf *sb, const char *s)
{
        ao_strbuf_append_c(sb, '"');
        append_escaped(sb, s, ESCAPE_JSON);
        ao_strbuf_append_c(sb, '"');
}

void ao_strbuf_append_quoted(struct ao_strbuf *sb, const char *s)
{
        ao_strbuf_append_c(sb, '"');
        append_escaped(sb, s, ESCAPE_QUOTED);
        ao_strbuf_append_c(sb, '"');
}

void ao_strbuf_append_sanitized(struct ao_strbuf *sb, const char *s)
{
        append_escaped(sb, s, ESCAPE_SANITIZED);
}

void ao_strbuf_reset(struct ao_strbuf *sb)
{
        sb->len = 0;
        if (sb->buf)
                sb->buf[0] = '\0';
}

void ao_strbuf_shrink(struct ao_strbuf *sb, size_t max_cap)
{
        if (sb->cap > max_cap)
                ao_strbuf_done(sb);
}

char *ao_strbuf_steal(struct ao_strbuf *sb)
{
        char *s = sb->buf ? sb->buf : ao_xstrdup("");
        *sb = (struct ao_strbuf){0};
        return s;
}

void ao_strbuf_done(struct ao_strbuf *sb)
{
        free(sb->buf);
        *sb = (struct ao_strbuf){0};
}

static bool json_is_digit(char c)
{
        return c >= '0' && c <= '9';
}

size_t ao_json_number_end(const char *t, size_t pos)
{
        size_t i = pos;

        if (t[i] == '-')
                i++;
        if (t[i] == '0')
                i++;
        else if (json_is_digit(t[i]))
                while (json_is_digit(t[i]))
                        i++;
        else
                return 0;
        if (t[i] == '.') {
                if (!json_is_digit(t[++i]))
                        return 0;
                while (json_is_digit(t[i]))
                        i++;
        }
        if (t[i] == 'e' || t[i] == 'E') {
                i++;
                if (t[i] == '+' || t[i] == '-')
                        i++;
                if (!json_is_digit(t[i]))
                        return 0;
                while (json_is_digit(t[i]))
                        i++;
        }
        /* "01", "1.2.3", "1e2e3": a number running on is not one number. */
        if (json_is_digit(t[i]) || t[i] == '.' || t[i] == 'e' || t[i] == 'E' || t[i] == '+' || t[i] == '-')
                return 0;
        return i;
}
