/* SPDX-License-Identifier: Apache-2.0 */
/* Retry delays: one formula for the queues, the informers and the ConfigMap writer (see ao/backoff.h). */
#include "ao/backoff.h"

#include <stdbool.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ao/macro.h"

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

uint64_t ao_backoff_random(void)
{
        return rng_next();
}

/* base + first * 2^(failures-1), or max when that reaches the cap (computed without overflow). */
static uint64_t unjittered(const struct ao_backoff *b, unsigned failures, bool *ret_capped)
{
        uint64_t room = b->max_usec > b->base_usec ? b->max_usec - b->base_usec : 0;
        uint64_t doubling = 0;

        if (failures > 0 && b->first_usec > 0) {
                unsigned shift = failures - 1;
                if (shift >= 64 || b->first_usec > (room >> shift))
                        doubling = room;
                else
                        doubling = b->first_usec << shift;
        }
        *ret_capped = b->base_usec >= b->max_usec || doubling >= room;
        return *ret_capped ? b->max_usec : b->base_usec + doubling;
}

uint64_t ao_backoff_delay_usec(const struct ao_backoff *b, unsigned failures)
{
        bool capped;
        uint64_t delay = unjittered(b, failures, &capped);

        switch (b->jitter) {
        case AO_BACKOFF_JITTER_ADD:
                /* The Go formula: no jitter on the first retry nor at the cap. */
                if (failures == 0 || capped)
                        return delay;
                if (b->jitter_usec > 0)
                        delay += rng_next() % b->jitter_usec; /* the modulo bias over 2^64 is negligible */
                if (b->step_usec > 0)
                        delay -= delay % b->step_usec;
                return AO_MIN(delay, b->max_usec);
        case AO_BACKOFF_JITTER_HALF:
                return delay / 2 + rng_next() % (delay / 2 + 1);
        case AO_BACKOFF_JITTER_NONE:
        default:
                return delay;
        }
}

uint64_t ao_backoff_scale_usec(double retry_scale, uint64_t usec)
{
        if (!(retry_scale > 0))
                return usec;
        double scaled = (double) usec * retry_scale;
        /* 2^64 is exact as a double; converting anything at or above it is undefined. */
        return scaled >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t) scaled;
}

uint64_t ao_backoff_wait_usec(const struct ao_backoff *b, unsigned failures, uint64_t at_least_usec)
{
        uint64_t delay = ao_backoff_delay_usec(b, failures);
        return ao_backoff_scale_usec(b->retry_scale, AO_MAX(delay, at_least_usec));
}
