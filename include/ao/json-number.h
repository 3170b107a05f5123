/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Numbers kept exactly. cJSON holds every number as a double, which rounds integers beyond 2^53
 * and cannot hold a literal beyond the double range at all. The convention of this project:
 *
 *   a cJSON_Number node's valuedouble is the nearest double (what arithmetic, schema checks and
 *   jq see); its valuestring, when not NULL, is the number's exact text, and that text is what
 *   every printer writes. It is set only where the double is not the number: an integer literal
 *   whose magnitude is 2^53 or more (so "9007199254740993" stays itself and "2^64-1" is not
 *   written as 18446744073709552000), and a literal beyond the double range ("1e400", kept as
 *   written rather than turned into null).
 *
 * Every other number is its double, written in the shortest form that reads back as the same
 * double. cJSON_Delete() frees valuestring and cJSON_Duplicate() copies it, for numbers too, so
 * trees built by these functions need no special care; code that copies a number field by field
 * must copy valuestring as well.
 *
 * Non-logging; thread-safe.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

/** Integers of at least this magnitude keep their text (every smaller integer is a double). */
#define AO_JSON_EXACT_INTEGER_LIMIT 9007199254740992.0 /* 2^53 */

/**
 * A number node for @len bytes of @text, a number literal in JSON syntax (RFC 8259 §6: optional
 * '-', integer part without leading zeros, optional fraction and exponent) that the caller has
 * checked. NULL only when out of memory.
 */
struct cJSON *ao_json_number_from_literal(const char *text, size_t len);

/**
 * A number node for an integer written in decimal digits (@digits, @len of them, no sign, leading
 * zeros allowed: YAML's "007"), negated when @negative. Any length: beyond 2^53 the digits are
 * kept. NULL only when out of memory.
 */
struct cJSON *ao_json_number_from_digits(bool negative, const char *digits, size_t len);

/** A number node for @v (exact: its text is kept when the double is not @v). */
struct cJSON *ao_json_number_from_int64(int64_t v);
struct cJSON *ao_json_number_from_uint64(uint64_t v);

/** A number node for @d, NaN and infinities included (cJSON_CreateNumber's int cast is UB for them). */
struct cJSON *ao_json_number_from_double(double d);

/** The exact text of number node @n when its double is not exact (see above); NULL otherwise. */
const char *ao_json_number_text(const struct cJSON *n);

/* ---- printing and comparing (json-number-format.c, json-number-compare.c) ---- */

/** Room for the text of any double, NUL included. */
#define AO_JSON_NUMBER_DOUBLE_MAX 32

/**
 * The text every printer of this project writes for the finite double @d, into @buf: "0" for
 * both zeros; an integer below 1e21 in plain digits (beyond 2^53 the shortest digits that read
 * back, padded with zeros: 18446744073709552000, as Go and JavaScript print it); any other
 * double in the shortest "%g" text that reads back as @d (0.1, 5e-324, 1.7976931348623157e+308).
 * Returns the length of the text.
 */
size_t ao_json_number_format_double(double d, char buf[static AO_JSON_NUMBER_DOUBLE_MAX]);

/*
 * The value of a number node: its text when it has one, else the decimal it is printed as (a
 * double stands for its shortest text: 0.1 is one tenth, and the double 2^64 is
 * 18446744073709552000, not 18446744073709551616). Infinities are beyond every text, NaN is
 * unordered. Exponents are taken up to ±10^15; beyond that they compare as ±10^15.
 */
#define AO_JSON_NUMBER_UNORDERED 2

/** -1, 0 or 1 as the value of number @a is below, equal to or above @b's; AO_JSON_NUMBER_UNORDERED with NaN. */
int ao_json_number_compare(const struct cJSON *a, const struct cJSON *b);

/** Whether numbers @a and @b have the same value (1 and 1.0 do; 9007199254740993 and 9007199254740992 do not). */
bool ao_json_number_equal(const struct cJSON *a, const struct cJSON *b);

/** Whether the value of number @n is an integer (1e400 is; NaN and infinities are not). */
bool ao_json_number_is_integer(const struct cJSON *n);
