/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The retry delay of a failed task, as the Go operator computes it
 * (shell-operator pkg/utils/exponential_backoff): n failures before this
 * one give 5 s for n == 0, 5 s + 2^(n-1) s + up to 1 s of jitter, truncated
 * to 100 ms, for 1 <= n <= 5, and the 32 s cap beyond.
 */
#include "ao/queue.h"

#include <stdbool.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_INITIAL_USEC (5 * AO_USEC_PER_SEC)
#define BACKOFF_MAX_USEC     (32 * AO_USEC_PER_SEC)
#define BACKOFF_STEP_USEC    (100 * AO_USEC_PER_MSEC)
#define BACKOFF_MAX_EXPONENT 5

/* splitmix64: the jitter needs spread, not secrecy; seeded once from getrandom(). Main thread only. */
static uint64_t rng_state;
static bool rng_seeded;

static uint64_t rng_next(void)
{
        if (!rng_seeded) {
                if (getrandom(&rng_state, sizeof(rng_state), GRND_NONBLOCK) != (ssize_t) sizeof(rng_state)) {
                        struct timespec ts = {0};
                        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
                        rng_state =
                            ((uint64_t) ts.tv_nsec << 20) ^ (uint64_t) ts.tv_sec ^ (uint64_t) getpid();
                }
                rng_seeded = true;
        }
        uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

uint64_t ao_queue_backoff_usec(unsigned failures)
{
        if (failures == 0)
                return BACKOFF_INITIAL_USEC;
        if (failures > BACKOFF_MAX_EXPONENT)
                return BACKOFF_MAX_USEC;
        uint64_t delay = BACKOFF_INITIAL_USEC + (AO_USEC_PER_SEC << (failures - 1));
        delay += rng_next() % AO_USEC_PER_SEC; /* the modulo bias over 2^64 is negligible */
        delay -= delay % BACKOFF_STEP_USEC;
        return AO_MIN(delay, BACKOFF_MAX_USEC);
}
