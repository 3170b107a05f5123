/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Errors that users read. Functions whose failure must be explained take a
 * caller-owned `struct ao_error *reterr` as their last parameter and return
 * a negative errno-style code; the message is formatted inline so the error
 * path never allocates. Passing NULL for reterr is allowed: only the code is
 * returned then.
 */

#include "ao/macro.h"

#define AO_ERROR_MSG_MAX 512

struct ao_error {
        int code;                   /* negative errno-style code, 0 when unset */
        char msg[AO_ERROR_MSG_MAX]; /* NUL-terminated, truncated to fit */
};

/**
 * Record an error and return its code (always negative: a non-negative @code
 * becomes -EINVAL), so callers can write `return ao_error_set(reterr, ...)`.
 * Thread-safe as long as @reterr is not shared.
 */
int ao_error_set(struct ao_error *reterr, int code, const char *fmt, ...) _printf_(3, 4);

/**
 * Like ao_error_set(), but prefixes the message that @reterr already holds
 * with new context: "context: previous message". Used when an error travels
 * up through layers that each know one more name (file, then key, ...).
 */
int ao_error_prefix(struct ao_error *reterr, const char *fmt, ...) _printf_(2, 3);

/** Clear @reterr (code 0, empty message). NULL is accepted. */
void ao_error_clear(struct ao_error *reterr);
