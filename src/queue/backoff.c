/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The retry delay of a failed task, as the Go operator computes it
 * (shell-operator pkg/utils/exponential_backoff): n failures before this
 * one give 5 s for n == 0, 5 s + 2^(n-1) s + up to 1 s of jitter, truncated
 * to 100 ms, for 1 <= n <= 5, and the 32 s cap beyond. The formula itself is
 * ao_backoff's (shared with the informers and the ConfigMap writer).
 */
#include "ao/queue.h"

#include "ao/backoff.h"

static const struct ao_backoff go_backoff = {
    .base_usec = 5 * AO_USEC_PER_SEC,
    .first_usec = AO_USEC_PER_SEC,
    .max_usec = 32 * AO_USEC_PER_SEC,
    .jitter = AO_BACKOFF_JITTER_ADD,
    .jitter_usec = AO_USEC_PER_SEC,
    .step_usec = 100 * AO_USEC_PER_MSEC,
};

uint64_t ao_queue_backoff_usec(unsigned failures)
{
        return ao_backoff_delay_usec(&go_backoff, failures);
}
