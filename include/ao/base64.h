/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Standard base64 (RFC 4648 section 4: A-Z a-z 0-9 + /, '=' padding) as Go's
 * encoding/base64 StdEncoding writes it: kubeconfig []byte fields, Secret
 * data, helm's release encoding. The rules:
 *
 *   - The data is groups of four symbols; the last group may end in "=" or
 *     "==" (1 or 2 bytes). Padding is required: a group cut short is refused.
 *   - Space, tab, CR and LF are skipped wherever they are (the line breaks of
 *     wrapped data; Go itself skips only CR and LF).
 *   - Anything else is refused: another byte (NUL included), a '=' that does
 *     not end a group, a group of "x=y=" or "x===", a symbol after the
 *     padding. The unused low bits of the last symbol before the padding are
 *     not checked, as Go's non-strict decoder does not check them.
 *
 * Non-logging; thread-safe (no shared state).
 */

#include <stddef.h>

/** Bytes @len bytes of base64 decode to at most: what ao_base64_decode()'s @out must hold. */
#define AO_BASE64_DECODED_MAX(len) ((len) / 4 * 3)

/**
 * Decode @len bytes of @text into @out, which holds at least
 * AO_BASE64_DECODED_MAX(@len) bytes and may be @text itself (the decoder
 * never writes ahead of what it has read), and store the number of bytes in
 * *@ret_len. Nothing is NUL-terminated. Returns 0, or -EINVAL for text that
 * breaks the rules above; *@ret_len is written only on success, @out may
 * hold partial output on failure.
 */
int ao_base64_decode(const char *text, size_t len, char *out, size_t *ret_len);

/**
 * Like ao_base64_decode(), into a new buffer with a NUL after the decoded
 * bytes (for callers that want a C string; the data may hold NULs of its
 * own). On success *@ret (owned by the caller, free()) and *@ret_len are
 * written. Aborts only on out of memory.
 */
int ao_base64_decode_dup(const char *text, size_t len, char **ret, size_t *ret_len);
