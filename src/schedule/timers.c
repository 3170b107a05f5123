/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wall-clock schedules on one CLOCK_REALTIME timerfd.
 *
 * Entries with the same crontab text form a group: one parsed ao_cron, one
 * next fire time, a list of entries. Groups that will fire again sit in a
 * binary min-heap keyed by that time; the timerfd is armed (absolute, so
 * it cannot drift) at the heap's top. A tick pops every due group, moves
 * its time on from "now" first, then calls its entries' handlers.
 *
 * Handlers may add and remove entries while a dispatch runs, so nothing is
 * freed during one: a removed entry is marked dead and moved to a
 * graveyard, a group whose last entry went is taken out of the heap and
 * the lookup list at once and waits in the graveyard too, and both are
 * swept when the dispatch ends (sd-event defers source frees the same
 * way). Entries added during a dispatch carry its generation and are
 * skipped by it: they have not been armed for the tick being delivered.
 *
 * Group lookup by text is a linear scan. It only runs when an entry is
 * added (hook loading), and a few hundred distinct crontabs cost nothing
 * next to parsing one; ticks never search.
 */
#include "ao/schedule.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/cron.h"
#include "ao/log.h"
#include "ao/macro.h"
#include "ao/reactor.h"

/* The timerfd's arming is not known (after a tick or a clock change): the next arm() must call settime. */
#define ARMED_UNKNOWN UINT64_MAX
#define NOT_IN_HEAP   SIZE_MAX

struct group {
        struct ao_schedule *schedule; /* borrowed, outlives the group */
        char *crontab;                /* owned */
        struct ao_cron *cron;         /* owned */
        uint64_t next;                /* UTC µs; 0: never fires again */
        size_t heap_idx;              /* index in schedule->heap, NOT_IN_HEAP when not armed */
        size_t n_live;                /* entries not removed */
        struct ao_schedule_entry *entries_head, *entries_tail; /* owned; dead ones included */
        struct group *prev, *next_group;                       /* schedule->groups, live groups only */
        struct group *next_dead;                               /* schedule->dead_groups */
};

struct ao_schedule_entry {
        struct group *group; /* borrowed: the group lives as long as any of its entries */
        ao_schedule_handler *cb;
        void *userdata;    /* borrowed */
        uint64_t added_in; /* generation of the dispatch that added it, 0 when added outside one */
        bool dead;         /* removed during a dispatch; freed by the sweep */
        struct ao_schedule_entry *prev, *next;
        struct ao_schedule_entry *next_dead; /* schedule->dead_entries */
};

struct ao_schedule {
        struct ao_reactor *reactor; /* borrowed, outlives the schedule */
        struct ao_source *source;   /* owned: the io source watching fd */
        int fd;                     /* owned: the timerfd */
        uint64_t armed_usec;        /* what fd is armed for; 0: disarmed; ARMED_UNKNOWN */

        ao_schedule_clock *clock; /* NULL: CLOCK_REALTIME */
        void *clock_userdata;

        struct group *groups; /* owned: live groups, for lookup by text */
        struct group **heap;  /* owned array of borrowed pointers: groups with next != 0 */
        size_t n_heap, heap_cap;

        size_t n_entries, n_groups; /* live ones */

        bool dispatching;
        uint64_t generation;   /* incremented by every dispatch */
        uint64_t n_recomputes; /* incremented by every clock change */
        struct ao_schedule_entry *dead_entries;
        struct group *dead_groups;
};

static uint64_t schedule_now(const struct ao_schedule *s)
{
        if (s->clock)
                return s->clock(s->clock_userdata);

        struct timespec ts;
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        /* Before 1970 (a machine without an RTC): cron times start at the epoch. */
        if (ts.tv_sec < 0)
                return 0;
        return (uint64_t) ts.tv_sec * AO_USEC_PER_SEC + (uint64_t) ts.tv_nsec / AO_NSEC_PER_USEC;
}

/* ---- heap of groups by next fire time ------------------------------------ */

static void heap_place(struct ao_schedule *s, size_t i, struct group *g)
{
        s->heap[i] = g;
        g->heap_idx = i;
}

static void heap_sift_up(struct ao_schedule *s, size_t i)
{
        struct group *g = s->heap[i];
        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (s->heap[parent]->next <= g->next)
                        break;
                heap_place(s, i, s->heap[parent]);
                i = parent;
        }
        heap_place(s, i, g);
}

static void heap_sift_down(struct ao_schedule *s, size_t i)
{
        struct group *g = s->heap[i];
        for (;;) {
                size_t child = 2 * i + 1;
                if (child >= s->n_heap)
                        break;
                if (child + 1 < s->n_heap && s->heap[child + 1]->next < s->heap[child]->next)
                        child++;
                if (g->next <= s->heap[child]->next)
                        break;
                heap_place(s, i, s->heap[child]);
                i = child;
        }
        heap_place(s, i, g);
}

static void heap_push(struct ao_schedule *s, struct group *g)
{
        assert(g->heap_idx == NOT_IN_HEAP);
        assert(g->next != 0);
        if (s->n_heap == s->heap_cap) {
                s->heap_cap = AO_MAX(s->heap_cap * 2, 16);
                s->heap = ao_xreallocarray(s->heap, s->heap_cap, sizeof(*s->heap));
        }
        s->heap[s->n_heap++] = g;
        heap_sift_up(s, s->n_heap - 1);
}

static void heap_remove(struct ao_schedule *s, struct group *g)
{
        size_t i = g->heap_idx;
        if (i == NOT_IN_HEAP)
                return;
        g->heap_idx = NOT_IN_HEAP;
        struct group *last = s->heap[--s->n_heap];
        if (i == s->n_heap)
                return;
        heap_place(s, i, last);
        heap_sift_down(s, i);
        heap_sift_up(s, last->heap_idx);
}

/* After g->next changed: put the group where it belongs, or out of the heap when it never fires. */
static void heap_update(struct ao_schedule *s, struct group *g)
{
        if (g->next == 0) {
                heap_remove(s, g);
                return;
        }
        if (g->heap_idx == NOT_IN_HEAP) {
                heap_push(s, g);
                return;
        }
        heap_sift_down(s, g->heap_idx);
        heap_sift_up(s, g->heap_idx);
}

/* ---- timerfd ------------------------------------------------------------- */

/*
 * Arm the timerfd at the earliest next fire time, or disarm it when nothing
 * is armed or a test clock drives the schedule. A time already past fires
 * at once (ABSTIME), so no tick is lost between computing and arming.
 */
static int schedule_arm(struct ao_schedule *s)
{
        if (s->dispatching)
                return 0; /* the dispatch arms once it is done */

        uint64_t want = s->clock || s->n_heap == 0 ? 0 : s->heap[0]->next;
        if (want == s->armed_usec)
                return 0;

        struct itimerspec its = {0};
        int flags = 0;
        if (want != 0) {
                its.it_value.tv_sec = (time_t) (want / AO_USEC_PER_SEC);
                its.it_value.tv_nsec = (long) (want % AO_USEC_PER_SEC * AO_NSEC_PER_USEC);
                flags = TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET;
        }
        /* Disarming without TFD_TIMER_CANCEL_ON_SET also stops clock changes from waking an idle loop. */
        if (timerfd_settime(s->fd, flags, &its, NULL) < 0) {
                s->armed_usec = ARMED_UNKNOWN;
                return ao_log_errno(AO_LOG_DEBUG, ao_negative_errno(), "schedule: arming the timerfd failed");
        }
        s->armed_usec = want;
        return 0;
}

/* ---- groups and entries -------------------------------------------------- */

static struct group *group_find(struct ao_schedule *s, const char *crontab)
{
        for (struct group *g = s->groups; g; g = g->next_group)
                if (strcmp(g->crontab, crontab) == 0)
                        return g;
        return NULL;
}

static void group_free(struct group *g)
{
        struct ao_schedule_entry *e = g->entries_head;
        while (e) {
                struct ao_schedule_entry *next = e->next;
                free(e);
                e = next;
        }
        ao_cron_free(g->cron);
        free(g->crontab);
        free(g);
}

/* Take a group out of the heap and the lookup list; it no longer counts. */
static void group_unlink(struct ao_schedule *s, struct group *g)
{
        heap_remove(s, g);
        if (g->prev)
                g->prev->next_group = g->next_group;
        else
                s->groups = g->next_group;
        if (g->next_group)
                g->next_group->prev = g->prev;
        g->prev = g->next_group = NULL;
        s->n_groups--;
}

static void entry_unlink(struct ao_schedule_entry *e)
{
        struct group *g = e->group;
        if (e->prev)
                e->prev->next = e->next;
        else
                g->entries_head = e->next;
        if (e->next)
                e->next->prev = e->prev;
        else
                g->entries_tail = e->prev;
        e->prev = e->next = NULL;
}

/* Free what handlers removed during the dispatch that just ended. Entries first: they unlink from groups. */
static void schedule_sweep(struct ao_schedule *s)
{
        while (s->dead_entries) {
                struct ao_schedule_entry *e = s->dead_entries;
                s->dead_entries = e->next_dead;
                entry_unlink(e);
                free(e);
        }
        while (s->dead_groups) {
                struct group *g = s->dead_groups;
                s->dead_groups = g->next_dead;
                group_free(g);
        }
}

static void schedule_recompute(struct ao_schedule *s)
{
        uint64_t now = schedule_now(s);
        s->n_recomputes++;
        s->n_heap = 0;
        for (struct group *g = s->groups; g; g = g->next_group) {
                g->next = ao_cron_next(g->cron, now);
                g->heap_idx = NOT_IN_HEAP;
                if (g->next != 0)
                        heap_push(s, g);
        }
}

static size_t schedule_dispatch(struct ao_schedule *s)
{
        /* A handler calling ao_schedule_dispatch_due(): the running dispatch already covers "now". */
        if (s->dispatching)
                return 0;

        uint64_t now = schedule_now(s), recomputes = s->n_recomputes;
        size_t calls = 0;
        s->dispatching = true;
        s->generation++;

        /*
         * Every group's next time is moved past "now" before its handlers
         * run, and groups created by handlers start past "now" as well, so
         * this terminates and no group fires twice. A handler that reports
         * a clock change has every time recomputed from another "now": what
         * is left of this dispatch is stale then, so it stops.
         */
        while (s->n_heap > 0 && s->heap[0]->next <= now && s->n_recomputes == recomputes) {
                struct group *g = s->heap[0];
                uint64_t scheduled = g->next;
                g->next = ao_cron_next(g->cron, now);
                /* ao_cron_next() is strictly after "now"; guard the loop against a parser bug anyway. */
                if (g->next <= now)
                        g->next = 0;
                heap_update(s, g);

                /* Entries are only marked dead during a dispatch, so the list stays walkable. */
                for (struct ao_schedule_entry *e = g->entries_head; e; e = e->next) {
                        if (e->dead || e->added_in == s->generation)
                                continue;
                        e->cb(e, scheduled, now, e->userdata);
                        calls++;
                }
        }

        s->dispatching = false;
        schedule_sweep(s);
        (void) schedule_arm(s);
        return calls;
}

static int on_timer(struct ao_source *source _unused_, int fd, uint32_t revents _unused_, void *userdata)
{
        struct ao_schedule *s = userdata;
        uint64_t expirations;

        /* The expiry consumed here is gone: whatever arm() remembers, the next one must call settime. */
        s->armed_usec = ARMED_UNKNOWN;
        if (read(fd, &expirations, sizeof(expirations)) < 0) {
                if (errno == ECANCELED) {
                        /* TFD_TIMER_CANCEL_ON_SET: the realtime clock was set. */
                        ao_log(AO_LOG_DEBUG, "schedule: wall clock changed, recomputing fire times");
                        ao_schedule_clock_changed(s);
                        return 0;
                }
                if (errno != EAGAIN && errno != EINTR)
                        return ao_log_errno(AO_LOG_DEBUG, ao_negative_errno(),
                                            "schedule: reading the timerfd failed");
        }

        /* A test clock owns the ticks; a wake-up that was already queued when it was set is dropped. */
        if (s->clock)
                return 0;
        /* A stale wake-up (settime raced with the poll) finds nothing due and only re-arms. */
        (void) schedule_dispatch(s);
        return 0;
}

/* ---- public API ---------------------------------------------------------- */

int ao_schedule_new(struct ao_reactor *reactor, struct ao_schedule **ret, struct ao_error *reterr)
{
        assert(reactor);
        assert(ret);

        _cleanup_close_ int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
        if (fd < 0) {
                int r = ao_negative_errno();
                return ao_error_set(reterr, r, "schedule: timerfd_create: %s", strerror(-r));
        }

        struct ao_schedule *s = ao_xcalloc(1, sizeof(*s));
        s->reactor = reactor;
        s->fd = fd;
        int r = ao_reactor_add_io(reactor, &s->source, fd, AO_IO_IN, on_timer, s);
        if (r < 0) {
                free(s);
                return ao_error_set(reterr, r, "schedule: watching the timerfd: %s", strerror(-r));
        }
        (void) ao_source_set_description(s->source, "schedule");
        TAKE_FD(fd);

        *ret = s;
        return 0;
}

struct ao_schedule *ao_schedule_free(struct ao_schedule *s)
{
        if (!s)
                return NULL;
        assert(!s->dispatching);

        while (s->groups) {
                struct group *g = s->groups;
                s->groups = g->next_group;
                group_free(g);
        }
        free(s->heap);
        s->source = ao_source_free(s->source);
        s->fd = ao_safe_close(s->fd);
        free(s);
        return NULL;
}

static void ao_cron_freep(struct ao_cron **c)
{
        ao_cron_free(*c);
}

int ao_schedule_add(struct ao_schedule *s, const char *crontab, ao_schedule_handler *cb, void *userdata,
                    struct ao_schedule_entry **ret_entry, struct ao_error *reterr)
{
        assert(s);
        assert(crontab);
        assert(cb);

        struct group *g = group_find(s, crontab);
        if (!g) {
                _cleanup_(ao_cron_freep) struct ao_cron *cron = NULL;
                int r = ao_cron_parse(crontab, &cron, reterr);
                if (r < 0)
                        return r;

                g = ao_xcalloc(1, sizeof(*g));
                g->schedule = s;
                g->crontab = ao_xstrdup(crontab);
                g->cron = TAKE_PTR(cron);
                g->heap_idx = NOT_IN_HEAP;
                g->next = ao_cron_next(g->cron, schedule_now(s));
                g->next_group = s->groups;
                if (s->groups)
                        s->groups->prev = g;
                s->groups = g;
                s->n_groups++;
                if (g->next != 0)
                        heap_push(s, g);
        }

        struct ao_schedule_entry *e = ao_xcalloc(1, sizeof(*e));
        e->group = g;
        e->cb = cb;
        e->userdata = userdata;
        e->added_in = s->dispatching ? s->generation : 0;
        e->prev = g->entries_tail;
        if (g->entries_tail)
                g->entries_tail->next = e;
        else
                g->entries_head = e;
        g->entries_tail = e;
        g->n_live++;
        s->n_entries++;

        /* An arming failure is not the caller's: the entry exists and the next tick or add retries. */
        (void) schedule_arm(s);

        if (ret_entry)
                *ret_entry = e;
        return 0;
}

void ao_schedule_remove(struct ao_schedule_entry *e)
{
        if (!e)
                return;
        struct group *g = e->group;
        struct ao_schedule *s = g->schedule;
        assert(!e->dead);

        s->n_entries--;
        g->n_live--;
        if (g->n_live == 0)
                group_unlink(s, g);

        if (s->dispatching) {
                e->dead = true;
                e->next_dead = s->dead_entries;
                s->dead_entries = e;
                if (g->n_live == 0) {
                        g->next_dead = s->dead_groups;
                        s->dead_groups = g;
                }
                return;
        }

        entry_unlink(e);
        free(e);
        if (g->n_live == 0)
                group_free(g);
        (void) schedule_arm(s);
}

const char *ao_schedule_entry_crontab(const struct ao_schedule_entry *e)
{
        assert(e);
        return e->group->crontab;
}

uint64_t ao_schedule_entry_next(const struct ao_schedule_entry *e)
{
        assert(e);
        return e->group->next;
}

size_t ao_schedule_count_entries(const struct ao_schedule *s)
{
        assert(s);
        return s->n_entries;
}

size_t ao_schedule_count_crontabs(const struct ao_schedule *s)
{
        assert(s);
        return s->n_groups;
}

void ao_schedule_set_clock(struct ao_schedule *s, ao_schedule_clock *clock, void *userdata)
{
        assert(s);
        s->clock = clock;
        s->clock_userdata = userdata;
        ao_schedule_clock_changed(s);
}

void ao_schedule_clock_changed(struct ao_schedule *s)
{
        assert(s);
        schedule_recompute(s);
        /* Also after ECANCELED: only a new settime clears the timerfd's cancelled state. */
        s->armed_usec = ARMED_UNKNOWN;
        (void) schedule_arm(s);
}

size_t ao_schedule_dispatch_due(struct ao_schedule *s)
{
        assert(s);
        return schedule_dispatch(s);
}
