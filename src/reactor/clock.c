/* SPDX-License-Identifier: Apache-2.0 */
#include <time.h>

#include "ao/reactor.h"

uint64_t ao_clock_now_usec(void)
{
        struct timespec ts;
        /* CLOCK_MONOTONIC cannot fail with a valid pointer; no error path needed. */
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * AO_USEC_PER_SEC + (uint64_t) ts.tv_nsec / AO_NSEC_PER_USEC;
}
