/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Durations as Go writes them: "300ms", "1.5h", "2h45m", "0"; units ns, us
 * (µs, μs), ms, s, m, h. Non-logging; thread-safe.
 */

#include <stdint.h>

/**
 * Parse @s into microseconds, rounded up so that a positive duration never
 * becomes 0. A leading '+' is accepted, '-' is not (nothing here may be
 * negative). Returns 0, -EINVAL (syntax, unknown unit) or -ERANGE (beyond
 * 2^63-1 ns, Go's limit).
 */
int ao_parse_duration_usec(const char *s, uint64_t *ret);
