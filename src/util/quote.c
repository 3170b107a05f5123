/* SPDX-License-Identifier: Apache-2.0 */
/* User strings in error messages: escaped, one line, cut whole-character (see ao/quote.h). */
#include "ao/quote.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"

static bool is_continuation(char c)
{
        return ((unsigned char) c & 0xC0) == 0x80;
}

const char *ao_quote_bytes(char *buf, size_t size, const char *s, size_t len)
{
        const unsigned char *u = (const unsigned char *) s;
        size_t n = 0;

        for (size_t i = 0; i < len;) {
                size_t seq = ao_utf8_sequence_length(u + i, len - i);
                bool escape = seq == 0 || u[i] < 0x20 || u[i] == 0x7F;
                /* Keep room for "..." and the NUL whatever comes next. */
                if (n + (escape ? 4 : seq) > size - 4) {
                        memcpy(buf + n, "...", 3);
                        n += 3;
                        break;
                }
                if (escape) {
                        n += (size_t) snprintf(buf + n, size - n, "\\x%02x", u[i]);
                        i++;
                } else {
                        memcpy(buf + n, s + i, seq);
                        n += seq;
                        i += seq;
                }
        }
        buf[n] = '\0';
        return buf;
}

void ao_quote_text(struct ao_strbuf *sb, const char *s, size_t len, size_t max)
{
        size_t n = len < max ? len : max;

        /* At a continuation byte the character started before the limit: leave it out whole. */
        while (n > 0 && n < len && is_continuation(s[n]))
                n--;
        _cleanup_free_ char *head = ao_xstrndup(s, n);
        ao_strbuf_append_sanitized(sb, head);
        if (n < len)
                ao_strbuf_append(sb, "...");
}

void ao_quote_cut(struct ao_strbuf *sb, size_t from, size_t max)
{
        if (sb->len - from <= max)
                return;
        size_t len = from + max;
        while (len > from && is_continuation(sb->buf[len]))
                len--;
        sb->len = len;
        sb->buf[len] = '\0';
        ao_strbuf_append(sb, "...");
}
