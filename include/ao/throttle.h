/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A token bucket: limits how often hook tasks start (a hook's settings.executionMinPeriod /
 * executionBurst, in the queues) and how often the Kubernetes client sends requests
 * (KUBE_CLIENT_QPS / KUBE_CLIENT_BURST).
 */

#include <stdint.h>

/**
 * The bucket. A queue whose head task has no token waits for one, as in the
 * Go operator.
 */
struct ao_throttle {
        uint64_t period_usec; /* one token per period; 0: no limit */
        uint32_t burst;       /* bucket size, >= 1 */
        /*
         * State, zero-initialised: the "theoretical arrival time" of the
         * generic cell rate algorithm, the exact integer form of a token
         * bucket that starts full (no floating-point drift at refill edges).
         */
        uint64_t _tat_usec;
};

/**
 * Take a token at @now (µs): 0 when one was there (and is now used), else how
 * long until one will be (nothing taken). A NULL bucket or a zero period never waits.
 */
uint64_t ao_throttle_take(struct ao_throttle *t, uint64_t now);
