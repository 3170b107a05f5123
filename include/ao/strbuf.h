/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Growable NUL-terminated byte buffer.
 *
 * Invariants (as git's strbuf): a zero-initialised struct is a valid empty
 * buffer; once anything was appended, buf[len] == '\0' and len < cap. The
 * buffer owns buf. Allocation failure aborts (ao_xrealloc): these buffers
 * hold log lines and small documents, never data sized by an attacker
 * without a cap applied first by the caller.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "ao/macro.h"

struct ao_strbuf {
        char *buf; /* owned; NULL until the first append */
        size_t len;
        size_t cap;
};

/** The contents as a C string; "" for a buffer never appended to. */
static inline const char *ao_strbuf_str(const struct ao_strbuf *sb)
{
        return sb->buf ? sb->buf : "";
}

void ao_strbuf_append_n(struct ao_strbuf *sb, const char *s, size_t n);
void ao_strbuf_append(struct ao_strbuf *sb, const char *s);
void ao_strbuf_append_c(struct ao_strbuf *sb, char c);
void ao_strbuf_appendf(struct ao_strbuf *sb, const char *fmt, ...) _printf_(2, 3);
void ao_strbuf_vappendf(struct ao_strbuf *sb, const char *fmt, va_list ap) _printf_(2, 0);

/** Append @s as a JSON string literal, quotes included. Invalid UTF-8 becomes U+FFFD. */
void ao_strbuf_append_json_string(struct ao_strbuf *sb, const char *s);
/** Append @s double-quoted with C-style escapes (\" \\ \n \t \xNN); invalid UTF-8 becomes U+FFFD. */
void ao_strbuf_append_quoted(struct ao_strbuf *sb, const char *s);
/** Append @s unquoted with control characters escaped and invalid UTF-8 replaced: safe on a terminal. */
void ao_strbuf_append_sanitized(struct ao_strbuf *sb, const char *s);

/** Empty the buffer, keeping its memory. */
void ao_strbuf_reset(struct ao_strbuf *sb);
/** Release the memory when more than @max_cap bytes are held, so one huge line does not pin it. */
void ao_strbuf_shrink(struct ao_strbuf *sb, size_t max_cap);
/** Hand the string to the caller (never NULL) and leave @sb empty. */
char *ao_strbuf_steal(struct ao_strbuf *sb);
void ao_strbuf_done(struct ao_strbuf *sb);

/**
 * Length of the valid UTF-8 sequence at @s (at most @n bytes), or 0 when it is
 * invalid (overlong, surrogate, beyond U+10FFFF, truncated). ASCII is 1.
 */
size_t ao_utf8_sequence_length(const unsigned char *s, size_t n);

/**
 * The end of the JSON number starting at @t[@pos], or 0 when the text there is not exactly one
 * number by RFC 8259 §6 ("01", "1.", "1e2e3" are not). @t must be NUL-terminated.
 */
size_t ao_json_number_end(const char *t, size_t pos);
