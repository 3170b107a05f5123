/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Schedules: cron expressions armed on the wall clock.
 *
 * All entries share one CLOCK_REALTIME timerfd, armed with TFD_TIMER_ABSTIME
 * at the earliest next fire time, so ticks land on the second they name and
 * never drift, however long the operator runs. TFD_TIMER_CANCEL_ON_SET makes
 * a clock change (NTP step, manual set) wake the loop, which then recomputes
 * every next fire time from the new "now" without firing.
 *
 * Entries with the same crontab text share one parsed expression and one
 * next-fire time; each entry has its own handler. When the loop wakes late
 * (a stalled main loop, a suspended machine), every entry whose time has
 * passed fires once, with the scheduled time, and its next time is computed
 * from now: missed ticks are not replayed.
 *
 * Main thread only (the reactor's).
 */

#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct ao_reactor;
struct ao_schedule;
struct ao_schedule_entry;

/**
 * A tick. @scheduled_usec is the fire time the entry was armed for (UTC µs
 * since the epoch), @now_usec the wall clock when the tick was handled.
 * The handler may add and remove entries, itself included.
 */
typedef void ao_schedule_handler(struct ao_schedule_entry *e, uint64_t scheduled_usec, uint64_t now_usec,
                                 void *userdata);

/** The wall clock in UTC µs since the epoch (tests pass their own). */
typedef uint64_t ao_schedule_clock(void *userdata);

/**
 * Create an empty schedule whose timerfd is watched by @reactor (borrowed:
 * it must outlive the schedule). Fails only when the timerfd cannot be
 * created or watched.
 */
int ao_schedule_new(struct ao_reactor *reactor, struct ao_schedule **ret, struct ao_error *reterr);
/**
 * Release the schedule, every entry still in it and its reactor source.
 * NULL is accepted. Not from a handler, and before the reactor is freed.
 */
struct ao_schedule *ao_schedule_free(struct ao_schedule *s);

/**
 * Add an entry for @crontab (parsed with ao_cron_parse(); errors come from
 * it). The entry is armed at once. @ret_entry (may be NULL) is borrowed:
 * valid until ao_schedule_remove() or ao_schedule_free(). An entry added by
 * a handler is not called by the dispatch that is running, even when it
 * joins a group that dispatch is firing: it was not armed for that tick.
 */
int ao_schedule_add(struct ao_schedule *s, const char *crontab, ao_schedule_handler *cb, void *userdata,
                    struct ao_schedule_entry **ret_entry, struct ao_error *reterr);
/** Remove and release @e (may be called from its own handler). NULL is accepted. */
void ao_schedule_remove(struct ao_schedule_entry *e);

const char *ao_schedule_entry_crontab(const struct ao_schedule_entry *e);
/** The entry's next fire time (UTC µs), 0 when the expression never fires again. */
uint64_t ao_schedule_entry_next(const struct ao_schedule_entry *e);

/** Number of entries, and of distinct crontab texts among them. */
size_t ao_schedule_count_entries(const struct ao_schedule *s);
size_t ao_schedule_count_crontabs(const struct ao_schedule *s);

/**
 * For tests: replace the wall clock (NULL restores the real one) and run the
 * due-check as if the timer had fired at the clock's "now". Returns the
 * number of handler calls made.
 *
 * While a test clock is set the timerfd stays disarmed: nothing fires
 * unless the test calls ao_schedule_dispatch_due(). Setting or clearing the
 * clock recomputes every next fire time from the new clock's "now", as
 * ao_schedule_clock_changed() does. ao_schedule_dispatch_due() also works
 * on the real clock; called from a handler it does nothing and returns 0.
 */
void ao_schedule_set_clock(struct ao_schedule *s, ao_schedule_clock *clock, void *userdata);
size_t ao_schedule_dispatch_due(struct ao_schedule *s);

/**
 * The wall clock jumped: recompute every next fire time from the clock's
 * "now" without firing anything, and re-arm. The timerfd path calls this
 * when the kernel reports a clock change (read() fails with ECANCELED under
 * TFD_TIMER_CANCEL_ON_SET); tests call it after moving their clock.
 * Called from a handler, it also ends the running dispatch after that
 * handler's crontab: the rest of it was due by the old clock.
 */
void ao_schedule_clock_changed(struct ao_schedule *s);
