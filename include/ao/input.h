/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a parser does with its raw input before it parses: refuse more than
 * its limit, make a NUL-terminated copy (cJSON and the hand-written lexers
 * look a few bytes ahead, which the terminator stops), and step over a UTF-8
 * byte order mark, which most JSON readers tolerate at the very start. The
 * JSON streams, the JSON patch and the metrics file parsers each had this
 * prologue, and two more looked for the mark by hand. Non-logging;
 * thread-safe.
 */

#include <stddef.h>

struct ao_error;

/** Bytes of a UTF-8 byte order mark at the start of @text (@len bytes): 3 or 0. */
size_t ao_input_bom(const char *text, size_t len);

/**
 * 0 when @len <= @max; else -EFBIG and "@name: @what is larger than @max
 * bytes" in @reterr ("@name: larger than @max bytes" when @what is NULL).
 */
int ao_input_check_size(size_t len, size_t max, const char *name, const char *what, struct ao_error *reterr);

/**
 * ao_input_check_size(), then a malloc'd copy of @text with a NUL after its
 * @len bytes in @ret_copy (owned by the caller), and in @ret_start where the
 * text starts: past a byte order mark. Out-parameters are written only on
 * success.
 */
int ao_input_copy(const char *text, size_t len, size_t max, const char *name, const char *what,
                  char **ret_copy, size_t *ret_start, struct ao_error *reterr);
