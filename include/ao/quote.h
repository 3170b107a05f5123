/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Quoting a user's string into an error message. Every parser used to carry
 * its own copy of "escape it, cut it, add '...'", and the copies disagreed at
 * the edges (one cut inside a UTF-8 character, one counted the cut after
 * escaping, ...). These are the two styles the messages use, in one place:
 *
 *   - ao_quote_bytes(): bytes whose values matter (a wire line, a file path,
 *     a JSON Pointer): every control byte and every byte that is not valid
 *     UTF-8 becomes \xNN, so "\x0a" tells a newline from the two characters
 *     "\n". The result fits a caller's buffer.
 *   - ao_quote_text(): text people wrote (a name, a value): \n, \t and \r
 *     as such, other controls as \xNN, invalid UTF-8 as U+FFFD
 *     (ao_strbuf_append_sanitized()), at most @max bytes of the input.
 *
 * Both keep a message on one line and never split a UTF-8 character.
 * Non-logging; thread-safe (no shared state).
 */

#include <stddef.h>

struct ao_strbuf;

/**
 * Copy @len bytes of @s (which may hold NULs) into @buf (@size >= 4 bytes):
 * controls, DEL and bytes that are not valid UTF-8 as \xNN, whole characters
 * otherwise. When the next character or escape would leave no room for "..."
 * and the NUL, stop there and end with "...". Returns @buf.
 */
const char *ao_quote_bytes(char *buf, size_t size, const char *s, size_t len);

/**
 * Append to @sb the first @max bytes of @s (@len bytes; a NUL ends it
 * early), cut before a character that does not fit whole, made printable by
 * ao_strbuf_append_sanitized(), followed by "..." when anything was cut.
 */
void ao_quote_text(struct ao_strbuf *sb, const char *s, size_t len, size_t max);

/**
 * Cut what @sb holds after byte @from to at most @max bytes, before a
 * character that does not fit whole, and append "..."; nothing happens when
 * it is not longer than @max. For limits on the escaped form, as where a
 * message must fit a fixed buffer.
 */
void ao_quote_cut(struct ao_strbuf *sb, size_t from, size_t max);
