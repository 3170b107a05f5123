/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A token bucket (capacity burst, one token per period, starting full) in
 * its generic cell rate algorithm form: a single "theoretical arrival time"
 * (TAT) instead of a token count and a last-refill time. A start at @now is
 * allowed when now >= TAT - (burst - 1) * period; it then moves TAT to
 * max(TAT, now) + period. A full bucket is TAT <= now, which a zeroed
 * struct is. All integers, so a timer armed for the returned delay always
 * finds the token there (a floating-point count can land at 0.999…).
 */
#include "ao/throttle.h"

uint64_t ao_throttle_take(struct ao_throttle *t, uint64_t now)
{
        if (!t || t->period_usec == 0)
                return 0;
        uint64_t burst = t->burst > 0 ? t->burst : 1;
        uint64_t slack = (burst - 1) * t->period_usec;
        uint64_t allowed_at = t->_tat_usec > slack ? t->_tat_usec - slack : 0;
        if (now < allowed_at)
                return allowed_at - now;
        t->_tat_usec = (t->_tat_usec > now ? t->_tat_usec : now) + t->period_usec;
        return 0;
}
