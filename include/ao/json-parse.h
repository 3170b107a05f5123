/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The JSON parser of the project: text in, a cJSON tree out. cJSON itself stays the tree (and
 * its printers), but its parser is not used, for two reasons:
 *
 *  - it turns every number into a double on the way in, so an integer beyond 2^53 is already
 *    rounded before anyone can look at it ("9007199254740993" arrives as ...992), and a literal
 *    beyond the double range becomes an infinity;
 *  - every call stores its error position in one variable shared by the whole process, also on
 *    success, so two threads parsing at once race on it.
 *
 * The text is read by libyajl, which hands over each number's literal text; numbers are built
 * with ao_json_number_from_literal() (ao/json-number.h), so they keep that text where a double
 * cannot hold them. Everything else comes out as cJSON_ParseWithLengthOpts() built it: the same
 * node types, members in document order, a key given twice kept twice, strings byte for byte
 * (no UTF-8 check: invalid sequences pass through), a string with "\u0000" ending at the NUL
 * (cJSON's strings are C strings), a lone UTF-16 surrogate escape refused, nesting refused past
 * AO_JSON_PARSE_MAX_DEPTH levels, a UTF-8 byte order mark and any byte up to 0x20 skipped before
 * the value.
 *
 * Where the two differ, on purpose: cJSON reads some text that is not JSON, and this parser
 * refuses it, as the peer's encoding/json does: numbers outside JSON's grammar ("01", "1.",
 * "-.5", "1e"), raw control characters inside strings and between tokens (cJSON copies them or
 * skips them as white space), "\u" followed by anything but four hex digits (cJSON reads a
 * NUL). A number at the top level ends where JSON's grammar ends it: "01" is 0 followed by the
 * caller's trailing byte "1".
 *
 * Errors name the byte offset cJSON named (given the text and a NUL after it), so messages keep
 * their file:line:column: the first byte of the token that cannot continue the text (a value,
 * ',', ':' or a closing bracket where it does not fit; a malformed number or literal by its first
 * byte), with three exceptions cJSON has: a key that is not a string is named by the byte after
 * its first, a string that is never closed by the byte after its opening quote, and a refused
 * escape by its backslash. A text that ends where more is due gives its length, which
 * ao_json_parse_error_byte() turns into its last byte, as cJSON named it given the text alone.
 *
 * Non-logging; thread-safe (no global state: a worker thread may parse while the loop parses).
 */

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

/** Containers nested deeper than this are refused (cJSON's CJSON_NESTING_LIMIT). */
#define AO_JSON_PARSE_MAX_DEPTH 1000

/** Why and where a text is not JSON. */
struct ao_json_parse_error {
        size_t offset;      /* from the start of the text; at most its length (see above) */
        bool at_end;        /* the text ended inside the value (it may be a cut-short prefix) */
        const char *reason; /* static, short, lowercase: "unexpected end of input", ... */
};

/**
 * Parse the one JSON value at the start of @text (@len bytes, no terminator needed); bytes
 * after it are the caller's business. On success returns the tree (owned by the caller) and,
 * when @ret_end is not NULL, sets *@ret_end just past the value. On failure returns NULL and
 * fills @err when it is not NULL (out of memory is reported as the reason "out of memory").
 */
struct cJSON *ao_json_parse(const char *text, size_t len, const char **ret_end,
                            struct ao_json_parse_error *err);

/**
 * ao_json_parse() for a text that is one value and nothing else: after the value only JSON
 * white space (space, tab, CR, LF) may follow, else the reason is "text after the value" at
 * the first other byte.
 */
struct cJSON *ao_json_parse_all(const char *text, size_t len, struct ao_json_parse_error *err);

/**
 * The error's offset as a byte of a @len-byte text: the last byte when the text ended inside
 * the value (0 for an empty text). Messages that quote the text from this byte were always
 * written so, and an excerpt from here is never empty.
 */
static inline size_t ao_json_parse_error_byte(const struct ao_json_parse_error *e, size_t len)
{
        return e->offset < len ? e->offset : len > 0 ? len - 1 : 0;
}
