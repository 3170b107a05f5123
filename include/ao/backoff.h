/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Retry delays. The task queues, the informers and the ConfigMap writer each
 * computed theirs by hand and took the test-only scale under three names and
 * two types; this is the one formula, parameterised by what differs:
 *
 *     delay(0) = base                                  (the queue's first retry)
 *     delay(n) = base + first * 2^(n-1), at most max   (n >= 1 failures before)
 *
 * plus a jitter: none; ADD up to @jitter_usec before the cap, truncated to
 * @step_usec (the Go operator's queue formula); or HALF, a uniform pick in
 * [d/2, d] after the cap (replicas that lost the same API server do not come
 * back in step). The scale multiplies every delay of a process (tests make
 * them short: ADDON_OPERATOR_RETRY_DELAY_SCALE).
 *
 * Non-logging. The jitter's generator is not locked: main thread only.
 */

#include <stdint.h>

enum ao_backoff_jitter {
        AO_BACKOFF_JITTER_NONE,
        AO_BACKOFF_JITTER_ADD,
        AO_BACKOFF_JITTER_HALF,
};

/** A formula; a constant per user, with the caller's retry_scale. */
struct ao_backoff {
        uint64_t base_usec;  /* part of every delay; delay(0) */
        uint64_t first_usec; /* the doubling term after the first failure */
        uint64_t max_usec;   /* the cap */
        enum ao_backoff_jitter jitter;
        uint64_t jitter_usec; /* ADD: the jitter is [0, jitter_usec) */
        uint64_t step_usec;   /* ADD: the delay is truncated to a multiple of it; 0: not */
        double retry_scale;   /* multiplies every delay; <= 0 (or NaN) means 1 */
};

/** The delay before retry number @failures + 1, jitter included, before scaling. */
uint64_t ao_backoff_delay_usec(const struct ao_backoff *b, unsigned failures);
/**
 * A pseudo-random number for jitter, from the generator the back-off uses: seeded from
 * getrandom() once per process, so replicas and restarts spread differently (random() unseeded
 * gives every process the same sequence). Not for secrets. Main thread only.
 */
uint64_t ao_backoff_random(void);

/** @usec multiplied by @retry_scale (<= 0 or NaN: 1), saturating at UINT64_MAX. */
uint64_t ao_backoff_scale_usec(double retry_scale, uint64_t usec);

/** The scaled delay before retry @failures + 1, at least @at_least_usec (a Retry-After) before scaling. */
uint64_t ao_backoff_wait_usec(const struct ao_backoff *b, unsigned failures, uint64_t at_least_usec);
