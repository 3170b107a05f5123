/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wall-clock schedules. Most tests drive ticks with a test clock and
 * ao_schedule_dispatch_due(); the real-clock tests go through the timerfd
 * and the reactor. meson runs this file once per backend with
 * AO_REACTOR=epoll|io_uring; an unavailable io_uring skips (exit 77).
 */
#include <dirent.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "../tap.h"
#include "reactor-backend.h"
#include "ao/reactor.h"
#include "ao/schedule.h"

#define USEC 1000000ULL
#define MSEC 1000ULL

static struct ao_reactor *reactor;

/* "2026-01-01T00:00:00Z" to UTC µs. */
static uint64_t at(const char *s)
{
        struct tm tm = {0};
        const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!rest || *rest != 'Z')
                tap_bail("bad time literal in test");
        return (uint64_t) timegm(&tm) * USEC;
}

struct fake_clock {
        uint64_t now;
};

static uint64_t fake_clock_now(void *userdata)
{
        const struct fake_clock *c = userdata;
        return c->now;
}

/* What a handler saw, and what it does to the schedule while it runs. */
struct rec {
        struct ao_schedule *schedule;
        size_t calls;
        uint64_t first_scheduled, last_scheduled, last_now;
        uint64_t scheduled[4]; /* the first four ticks */

        bool remove_self;
        struct ao_schedule_entry **victim; /* removed (once) and cleared */
        const char *add_crontab;           /* added (once) with add_rec */
        struct rec *add_rec;
        struct ao_schedule_entry *added;
        bool redispatch; /* call ao_schedule_dispatch_due() from inside */
        size_t redispatch_calls;
        struct fake_clock *move_clock; /* set to move_to and report the change (once) */
        uint64_t move_to;
};

static void on_tick(struct ao_schedule_entry *e, uint64_t scheduled_usec, uint64_t now_usec, void *userdata)
{
        struct rec *r = userdata;
        if (r->calls < AO_ARRAY_SIZE(r->scheduled))
                r->scheduled[r->calls] = scheduled_usec;
        if (r->calls == 0)
                r->first_scheduled = scheduled_usec;
        r->calls++;
        r->last_scheduled = scheduled_usec;
        r->last_now = now_usec;

        if (r->victim && *r->victim) {
                ao_schedule_remove(*r->victim);
                *r->victim = NULL;
        }
        if (r->add_crontab) {
                struct ao_error err = {0};
                if (ao_schedule_add(r->schedule, r->add_crontab, on_tick, r->add_rec, &r->added, &err) < 0)
                        tap_bail(err.msg);
                r->add_crontab = NULL;
        }
        if (r->redispatch)
                r->redispatch_calls += ao_schedule_dispatch_due(r->schedule);
        if (r->move_clock) {
                r->move_clock->now = r->move_to;
                ao_schedule_clock_changed(r->schedule);
                r->move_clock = NULL;
        }
        if (r->remove_self)
                ao_schedule_remove(e);
}

static struct ao_schedule *new_schedule(struct fake_clock *clock)
{
        struct ao_schedule *s = NULL;
        struct ao_error err = {0};
        if (ao_schedule_new(reactor, &s, &err) < 0)
                tap_bail(err.msg);
        if (clock)
                ao_schedule_set_clock(s, fake_clock_now, clock);
        return s;
}

static struct ao_schedule_entry *add(struct ao_schedule *s, const char *crontab, struct rec *r)
{
        struct ao_schedule_entry *e = NULL;
        struct ao_error err = {0};
        if (ao_schedule_add(s, crontab, on_tick, r, &e, &err) < 0)
                tap_bail(err.msg);
        return e;
}

/*
 * The schedule's CLOCK_REALTIME timerfd as the kernel sees it (the
 * reactor's own is CLOCK_MONOTONIC): time left until it fires (0 when
 * disarmed) and its settime flags. Returns false when there is none.
 */
static bool realtime_timerfd(uint64_t *ret_left_usec, unsigned *ret_flags)
{
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                tap_bail("cannot open /proc/self/fd");
        bool found = false;
        struct dirent *de;
        while (!found && (de = readdir(d))) {
                char path[300], target[64];
                snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
                ssize_t n = readlink(path, target, sizeof(target) - 1);
                if (n < 0)
                        continue;
                target[n] = '\0';
                if (strcmp(target, "anon_inode:[timerfd]") != 0)
                        continue;

                snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", de->d_name);
                FILE *f = fopen(path, "re");
                if (!f)
                        continue;
                char line[256];
                int clockid = -1;
                unsigned flags = 0;
                long long sec = -1, nsec = -1;
                while (fgets(line, sizeof(line), f)) {
                        (void) sscanf(line, "clockid: %d", &clockid);
                        (void) sscanf(line, "settime flags: %o", &flags);
                        (void) sscanf(line, "it_value: (%lld, %lld)", &sec, &nsec);
                }
                fclose(f);
                if (clockid != CLOCK_REALTIME || sec < 0 || nsec < 0)
                        continue;
                *ret_left_usec = (uint64_t) sec * USEC + (uint64_t) nsec / 1000;
                *ret_flags = flags;
                found = true;
        }
        closedir(d);
        return found;
}

/* ---- tests --------------------------------------------------------------- */

static void test_shared_crontab(void)
{
        struct fake_clock clock = {at("2026-01-01T00:00:03Z")};
        struct ao_schedule *s = new_schedule(&clock);
        struct rec ra = {0}, rb = {0}, rc = {0};

        struct ao_schedule_entry *a = add(s, "*/5 * * * * *", &ra);
        struct ao_schedule_entry *b = add(s, "*/5 * * * * *", &rb);
        tap_is_int(ao_schedule_count_crontabs(s), 1, "shared: two entries, one crontab");
        tap_is_int(ao_schedule_count_entries(s), 2, "shared: two entries");
        tap_is_str(ao_schedule_entry_crontab(b), "*/5 * * * * *", "shared: entry keeps its crontab text");
        tap_ok(ao_schedule_entry_next(a) == at("2026-01-01T00:00:05Z") &&
                   ao_schedule_entry_next(b) == at("2026-01-01T00:00:05Z"),
               "shared: both next at :05");

        struct ao_schedule_entry *c = add(s, "*/5  * * * * *", &rc);
        tap_is_int(ao_schedule_count_crontabs(s), 2, "shared: different text is a different crontab");

        clock.now = at("2026-01-01T00:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 3, "shared: :05 calls all three handlers");
        tap_ok(ra.calls == 1 && rb.calls == 1 && rc.calls == 1, "shared: each handler once");

        ao_schedule_remove(a);
        ao_schedule_remove(c);
        tap_is_int(ao_schedule_count_crontabs(s), 1, "shared: removing one entry keeps the shared crontab");
        tap_is_int(ao_schedule_count_entries(s), 1, "shared: one entry left");
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "shared: :10 calls the remaining handler only");
        tap_ok(rb.calls == 2 && rb.last_scheduled == at("2026-01-01T00:00:10Z"),
               "shared: remaining entry fired for :10");
        tap_is_int(ra.calls, 1, "shared: removed entry not called again");

        ao_schedule_remove(b);
        tap_is_int(ao_schedule_count_crontabs(s), 0, "shared: last entry takes the crontab with it");
        tap_is_int(ao_schedule_count_entries(s), 0, "shared: no entries");
        ao_schedule_remove(NULL);
        ao_schedule_free(s);
}

static void test_test_clock(void)
{
        struct fake_clock clock = {at("2026-01-01T00:00:03Z")};
        struct ao_schedule *s = new_schedule(&clock);
        struct rec r = {0};
        struct ao_schedule_entry *e = add(s, "*/5 * * * * *", &r);

        tap_ok(ao_schedule_entry_next(e) == at("2026-01-01T00:00:05Z"), "clock: at :03 next is :05");
        tap_is_int(ao_schedule_dispatch_due(s), 0, "clock: nothing due at :03");

        uint64_t left = 1;
        unsigned flags = 1;
        bool found = realtime_timerfd(&left, &flags);
        tap_ok(found && left == 0, "clock: timerfd left disarmed under a test clock (%" PRIu64 " µs left)",
               left);

        clock.now = at("2026-01-01T00:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "clock: :05 fires once");
        tap_ok(r.last_scheduled == at("2026-01-01T00:00:05Z"), "clock: scheduled :05");
        tap_ok(r.last_now == at("2026-01-01T00:00:05Z"), "clock: now :05");
        tap_ok(ao_schedule_entry_next(e) == at("2026-01-01T00:00:10Z"), "clock: next :10");
        tap_is_int(ao_schedule_dispatch_due(s), 0, "clock: :05 again fires nothing");

        /* Late by 17 s: :10, :15, :20 and :25 collapse into one tick for the armed time. */
        clock.now = at("2026-01-01T00:00:27Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "clock: jump to :27 fires exactly once");
        tap_ok(r.last_scheduled == at("2026-01-01T00:00:10Z"), "clock: with the armed time :10 as scheduled");
        tap_ok(r.last_now == at("2026-01-01T00:00:27Z"), "clock: and now :27");
        tap_ok(ao_schedule_entry_next(e) == at("2026-01-01T00:00:30Z"), "clock: next :30, not :15");
        tap_is_int(r.calls, 2, "clock: two ticks in all");
        ao_schedule_free(s);
}

static void test_no_drift(void)
{
        const uint64_t start = at("2026-03-01T00:00:00Z"), end = start + 86400 * USEC;
        struct fake_clock clock = {start};
        struct ao_schedule *s = new_schedule(&clock);
        struct rec r = {0};
        struct ao_schedule_entry *e = add(s, "*/10 * * * * *", &r);

        uint32_t rng = 0x9e3779b9u; /* xorshift32, fixed seed: reproducible lateness */
        size_t fires = 0, calls = 0, off_grid = 0, wrong_time = 0, dispatches = 0;
        uint64_t want = start + 10 * USEC;
        while (ao_schedule_entry_next(e) <= end) {
                uint64_t next = ao_schedule_entry_next(e);
                rng ^= rng << 13;
                rng ^= rng >> 17;
                rng ^= rng << 5;
                clock.now = next + rng % (900 * MSEC + 1);
                size_t before = r.calls;
                calls += ao_schedule_dispatch_due(s);
                dispatches++;
                if (r.calls != before + 1)
                        break;
                fires++;
                if (r.last_scheduled % (10 * USEC) != 0)
                        off_grid++;
                if (r.last_scheduled != want)
                        wrong_time++;
                want += 10 * USEC;
        }
        tap_is_int(fires, 8640, "drift: 24 h of */10 s is exactly 8640 ticks");
        tap_is_int(calls, 8640, "drift: dispatch_due counted 8640 calls");
        tap_is_int(dispatches, 8640, "drift: one dispatch per tick");
        tap_is_int(off_grid, 0, "drift: every scheduled time is on a 10 s boundary");
        tap_is_int(wrong_time, 0, "drift: no tick skipped or repeated");
        tap_ok(r.last_scheduled == end, "drift: the last tick is midnight the next day");
        ao_schedule_free(s);
}

static void test_remove_in_handler(void)
{
        struct fake_clock clock = {at("2026-01-01T00:00:00Z")};
        struct ao_schedule *s = new_schedule(&clock);

        /* Removing itself: the others in its group still run. */
        struct rec ra = {.remove_self = true}, rb = {0};
        add(s, "*/5 * * * * *", &ra);
        add(s, "*/5 * * * * *", &rb);
        clock.now = at("2026-01-01T00:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 2, "remove self: both handlers ran");
        tap_is_int(ao_schedule_count_entries(s), 1, "remove self: entry gone");
        tap_is_int(ao_schedule_count_crontabs(s), 1, "remove self: crontab still shared by the other");
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "remove self: next tick calls the survivor only");
        tap_ok(ra.calls == 1 && rb.calls == 2, "remove self: 1 and 2 calls");
        ao_schedule_free(s);

        /* Removing a later entry of the same group: it is not called. */
        clock.now = at("2026-01-01T00:00:00Z");
        s = new_schedule(&clock);
        struct ao_schedule_entry *victim = NULL;
        struct rec rk = {.victim = &victim}, rv = {0}, rw = {0};
        add(s, "*/5 * * * * *", &rk);
        victim = add(s, "*/5 * * * * *", &rv);
        add(s, "*/5 * * * * *", &rw);
        clock.now = at("2026-01-01T00:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 2, "remove other: two calls");
        tap_ok(rk.calls == 1 && rv.calls == 0 && rw.calls == 1, "remove other: victim skipped, the rest ran");
        tap_ok(victim == NULL && ao_schedule_count_entries(s) == 2, "remove other: victim gone");

        ao_schedule_free(s);

        /* Removing an entry that already ran in this dispatch. */
        clock.now = at("2026-01-01T00:00:00Z");
        s = new_schedule(&clock);
        struct rec rr = {0};
        struct ao_schedule_entry *ran = add(s, "*/5 * * * * *", &rr);
        struct rec rl = {.victim = &ran};
        add(s, "*/5 * * * * *", &rl);
        clock.now = at("2026-01-01T00:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 2, "remove earlier: both ran");
        tap_ok(ran == NULL && rr.calls == 1 && ao_schedule_count_entries(s) == 1,
               "remove earlier: entry gone afterwards");
        ao_schedule_free(s);

        /*
         * Two groups due in the same dispatch, each removing the other's only
         * entry: whichever runs first takes the other group with it.
         */
        clock.now = at("2026-01-01T00:00:00Z");
        s = new_schedule(&clock);
        struct ao_schedule_entry *e5 = NULL, *e10 = NULL;
        struct rec r5 = {.victim = &e10}, r10 = {.victim = &e5};
        e5 = add(s, "*/5 * * * * *", &r5);
        e10 = add(s, "*/10 * * * * *", &r10);
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "remove group: only one of two due groups ran");
        tap_ok(r5.calls + r10.calls == 1 && (e5 == NULL) != (e10 == NULL), "remove group: the other is gone");
        tap_is_int(ao_schedule_count_crontabs(s), 1, "remove group: one crontab left");
        tap_is_int(ao_schedule_count_entries(s), 1, "remove group: one entry left");
        ao_schedule_free(s);
}

static void test_add_in_handler(void)
{
        struct fake_clock clock = {at("2026-01-01T00:00:00Z")};
        struct ao_schedule *s = new_schedule(&clock);

        /* Joining the group being fired: not called by this dispatch, called by the next. */
        struct rec joined = {0}, other = {0};
        struct rec adder = {.schedule = s, .add_crontab = "*/5 * * * * *", .add_rec = &joined};
        add(s, "*/5 * * * * *", &adder);
        /* A new crontab whose first time is the very next second. */
        struct rec adder2 = {.schedule = s, .add_crontab = "* * * * * *", .add_rec = &other};
        add(s, "*/5 * * * * *", &adder2);

        clock.now = at("2026-01-01T00:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 2,
                   "add: the dispatch calls only the entries it was armed for");
        tap_ok(joined.calls == 0 && other.calls == 0, "add: entries added by handlers did not run");
        tap_is_int(ao_schedule_count_entries(s), 4, "add: four entries");
        tap_is_int(ao_schedule_count_crontabs(s), 2, "add: two crontabs");
        tap_ok(ao_schedule_entry_next(adder.added) == at("2026-01-01T00:00:10Z"),
               "add: joined entry shares the advanced time :10");
        tap_ok(ao_schedule_entry_next(adder2.added) == at("2026-01-01T00:00:06Z"),
               "add: new crontab armed for :06, after the dispatch's now");

        clock.now = at("2026-01-01T00:00:06Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "add: :06 calls the every-second entry");
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 4, "add: :10 calls all four");
        tap_ok(joined.calls == 1 && other.calls == 2 && joined.last_scheduled == at("2026-01-01T00:00:10Z"),
               "add: added entries ran from the next tick on");
        ao_schedule_free(s);

        /* Replacing itself: the group dies with its last entry and a new one takes the text. */
        clock.now = at("2026-01-01T00:00:00Z");
        s = new_schedule(&clock);
        struct rec fresh = {0};
        struct rec old = {
            .schedule = s, .remove_self = true, .add_crontab = "*/5 * * * * *", .add_rec = &fresh};
        add(s, "*/5 * * * * *", &old);
        clock.now = at("2026-01-01T00:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "replace: one call");
        tap_ok(old.calls == 1 && fresh.calls == 0, "replace: the replacement did not run yet");
        tap_ok(ao_schedule_count_entries(s) == 1 && ao_schedule_count_crontabs(s) == 1,
               "replace: one entry, one crontab");
        tap_ok(ao_schedule_entry_next(old.added) == at("2026-01-01T00:00:10Z"), "replace: next :10");
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "replace: :10 calls the replacement");
        tap_ok(old.calls == 1 && fresh.calls == 1, "replace: the old entry is gone");
        ao_schedule_free(s);

        /* Dispatching from inside a handler does nothing. */
        clock.now = at("2026-01-01T00:00:00Z");
        s = new_schedule(&clock);
        struct rec again = {.schedule = s, .redispatch = true}, second = {0};
        add(s, "*/5 * * * * *", &again);
        add(s, "*/10 * * * * *", &second);
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 2, "nested dispatch: two calls");
        tap_ok(again.redispatch_calls == 0 && second.calls == 1, "nested dispatch: no call twice");
        ao_schedule_free(s);
}

static void test_many(void)
{
        /* 300 crontabs "@every Ns", 10 entries each, ticked second by second for 20 minutes. */
        enum {
                N_GROUPS = 300,
                PER_GROUP = 10,
                PHASE = 600
        };
        const uint64_t start = at("2026-01-01T00:00:00Z");
        struct fake_clock clock = {start};
        struct ao_schedule *s = new_schedule(&clock);
        static struct rec recs[N_GROUPS][PER_GROUP];
        static struct ao_schedule_entry *entries[N_GROUPS][PER_GROUP];
        memset(recs, 0, sizeof(recs));
        for (size_t g = 0; g < N_GROUPS; g++)
                for (size_t i = 0; i < PER_GROUP; i++) {
                        char crontab[32];
                        snprintf(crontab, sizeof(crontab), "@every %zus", g + 1);
                        entries[g][i] = add(s, crontab, &recs[g][i]);
                }
        tap_is_int(ao_schedule_count_crontabs(s), N_GROUPS, "many: 300 crontabs");
        tap_is_int(ao_schedule_count_entries(s), N_GROUPS * PER_GROUP, "many: 3000 entries");

        size_t calls = 0, late = 0;
        for (uint64_t t = 1; t <= PHASE; t++) {
                clock.now = start + t * USEC;
                calls += ao_schedule_dispatch_due(s);
        }
        size_t want = 0, wrong = 0;
        for (size_t g = 0; g < N_GROUPS; g++)
                for (size_t i = 0; i < PER_GROUP; i++) {
                        size_t w = PHASE / (g + 1);
                        want += w;
                        if (recs[g][i].calls != w)
                                wrong++;
                        if (recs[g][i].calls && recs[g][i].last_now != recs[g][i].last_scheduled)
                                late++;
                }
        tap_is_int(calls, want, "many: phase 1 call count");
        tap_is_int(wrong, 0, "many: every entry fired floor(600/N) times");
        tap_is_int(late, 0, "many: every tick delivered at its own second");

        /* Drop every third group whole and a scattering of single entries, from the middle of the heap. */
        size_t removed = 0;
        for (size_t g = 0; g < N_GROUPS; g++)
                for (size_t i = 0; i < PER_GROUP; i++)
                        if ((g + 1) % 3 == 0 || (g * 7 + i) % 11 == 0) {
                                ao_schedule_remove(entries[g][i]);
                                entries[g][i] = NULL;
                                removed++;
                        }
        tap_is_int(ao_schedule_count_crontabs(s), N_GROUPS - N_GROUPS / 3, "many: 200 crontabs left");
        tap_is_int(ao_schedule_count_entries(s), N_GROUPS * PER_GROUP - removed, "many: entries left");

        for (size_t g = 0; g < N_GROUPS; g++)
                for (size_t i = 0; i < PER_GROUP; i++)
                        recs[g][i].calls = 0;
        calls = 0;
        for (uint64_t t = PHASE + 1; t <= 2 * PHASE; t++) {
                clock.now = start + t * USEC;
                calls += ao_schedule_dispatch_due(s);
        }
        want = 0;
        wrong = 0;
        for (size_t g = 0; g < N_GROUPS; g++)
                for (size_t i = 0; i < PER_GROUP; i++) {
                        size_t w = entries[g][i] ? 2 * PHASE / (g + 1) - PHASE / (g + 1) : 0;
                        want += w;
                        if (recs[g][i].calls != w)
                                wrong++;
                }
        tap_is_int(calls, want, "many: phase 2 call count");
        tap_is_int(wrong, 0, "many: survivors kept their rhythm, removed entries stayed silent");
        ao_schedule_free(s);
}

static void test_bad_crontab(void)
{
        struct fake_clock clock = {at("2026-01-01T00:00:00Z")};
        struct ao_schedule *s = new_schedule(&clock);
        struct ao_schedule_entry *e = (struct ao_schedule_entry *) &clock; /* must stay untouched */
        struct ao_error err = {0};
        struct rec r = {0};

        tap_is_int(ao_schedule_add(s, "61 * * * *", on_tick, &r, &e, &err), -EINVAL, "bad: rejected");
        tap_ok(strstr(err.msg, "'61 * * * *'") != NULL, "bad: message quotes the expression: %s", err.msg);
        tap_ok(strstr(err.msg, "minute") != NULL, "bad: and names the field");
        tap_ok(e == (struct ao_schedule_entry *) &clock, "bad: ret_entry not written");
        tap_ok(ao_schedule_count_entries(s) == 0 && ao_schedule_count_crontabs(s) == 0, "bad: nothing added");

        /* A bad expression does not disturb a good one with a similar text. */
        add(s, "1 * * * *", &r);
        tap_is_int(ao_schedule_add(s, "1 * * * * * *", on_tick, &r, NULL, &err), -EINVAL,
                   "bad: seven fields rejected");
        tap_ok(ao_schedule_count_entries(s) == 1 && ao_schedule_count_crontabs(s) == 1,
               "bad: one entry kept");
        ao_schedule_free(s);
}

static void test_never_fires(void)
{
        struct fake_clock clock = {at("2026-01-01T00:00:00Z")};
        struct ao_schedule *s = new_schedule(&clock);
        struct rec r = {0};
        struct ao_schedule_entry *e = add(s, "0 0 30 2 *", &r);
        tap_ok(ao_schedule_entry_next(e) == 0, "never: next is 0");
        tap_is_int(ao_schedule_count_crontabs(s), 1, "never: counted as a crontab");
        clock.now = at("2026-02-28T23:59:59Z");
        tap_is_int(ao_schedule_dispatch_due(s), 0, "never: nothing on Feb 28");
        clock.now = at("2030-12-31T23:59:59Z");
        tap_is_int(ao_schedule_dispatch_due(s), 0, "never: nothing years later");
        ao_schedule_free(s);

        /* On the real clock: the timerfd is never armed for it. */
        s = new_schedule(NULL);
        e = add(s, "0 0 30 2 *", &r);
        uint64_t left = 1;
        unsigned flags = 1;
        tap_ok(realtime_timerfd(&left, &flags) && left == 0, "never: timerfd stays disarmed");
        tap_is_int(ao_reactor_run_once(reactor, 20 * MSEC), 0, "never: the loop stays quiet");
        tap_is_int(r.calls, 0, "never: no call");

        /* A firing entry arms it; removing that entry disarms it again. */
        struct rec hourly = {0};
        struct ao_schedule_entry *h = add(s, "@hourly", &hourly);
        bool armed = realtime_timerfd(&left, &flags);
        tap_ok(armed && left > 0 && left <= 3600 * USEC,
               "never: an hourly entry arms the timerfd (%" PRIu64 " ms left)", (uint64_t) (left / MSEC));
        tap_is_int(flags, 3, "never: armed with TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET");
        ao_schedule_remove(h);
        tap_ok(realtime_timerfd(&left, &flags) && left == 0, "never: disarmed when it goes");
        ao_schedule_free(s);
}

static void test_clock_change(void)
{
        struct fake_clock clock = {at("2026-01-01T12:00:03Z")};
        struct ao_schedule *s = new_schedule(&clock);
        struct rec r5 = {0}, rh = {0};
        struct ao_schedule_entry *e5 = add(s, "*/5 * * * * *", &r5);
        struct ao_schedule_entry *eh = add(s, "30 0 * * * *", &rh); /* :00:30 every hour */
        tap_ok(ao_schedule_entry_next(e5) == at("2026-01-01T12:00:05Z") &&
                   ao_schedule_entry_next(eh) == at("2026-01-01T12:00:30Z"),
               "clock change: armed for 12:00:05 and 12:00:30");

        /* An hour back: nothing fires, and the times follow the clock back. */
        clock.now = at("2026-01-01T11:00:03Z");
        ao_schedule_clock_changed(s);
        tap_ok(r5.calls == 0 && rh.calls == 0, "clock change: backwards fires nothing");
        tap_ok(ao_schedule_entry_next(e5) == at("2026-01-01T11:00:05Z"), "clock change: */5 next 11:00:05");
        tap_ok(ao_schedule_entry_next(eh) == at("2026-01-01T11:00:30Z"),
               "clock change: hourly next 11:00:30");
        tap_is_int(ao_schedule_dispatch_due(s), 0, "clock change: nothing due at 11:00:03");
        clock.now = at("2026-01-01T11:00:05Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "clock change: 11:00:05 fires");
        tap_ok(r5.last_scheduled == at("2026-01-01T11:00:05Z"), "clock change: for 11:00:05");

        /* Two hours forward: the times in between are skipped, not fired. */
        clock.now = at("2026-01-01T13:00:07Z");
        ao_schedule_clock_changed(s);
        tap_ok(r5.calls == 1 && rh.calls == 0, "clock change: forwards fires nothing");
        tap_ok(ao_schedule_entry_next(e5) == at("2026-01-01T13:00:10Z"), "clock change: */5 next 13:00:10");
        tap_ok(ao_schedule_entry_next(eh) == at("2026-01-01T13:00:30Z"),
               "clock change: hourly next 13:00:30");
        tap_is_int(ao_schedule_dispatch_due(s), 0, "clock change: nothing due at 13:00:07");

        /* Reported from a handler: the rest of that dispatch is stale and does not run. */
        ao_schedule_free(s);
        clock.now = at("2026-01-01T00:00:00Z");
        s = new_schedule(&clock);
        uint64_t back = at("2026-01-01T00:00:02Z");
        struct rec m5 = {.schedule = s, .move_clock = &clock, .move_to = back};
        struct rec m10 = {.schedule = s, .move_clock = &clock, .move_to = back};
        e5 = add(s, "*/5 * * * * *", &m5);
        struct ao_schedule_entry *e10 = add(s, "*/10 * * * * *", &m10);
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 1, "clock change in a handler: the other due crontab waits");
        tap_ok(ao_schedule_entry_next(e5) == at("2026-01-01T00:00:05Z") &&
                   ao_schedule_entry_next(e10) == at("2026-01-01T00:00:10Z"),
               "clock change in a handler: times recomputed from :02");
        tap_ok(m5.calls + m10.calls == 1 && (m5.move_clock == NULL) != (m10.move_clock == NULL),
               "clock change in a handler: exactly one handler ran");
        m5.move_clock = m10.move_clock = NULL;
        clock.now = at("2026-01-01T00:00:10Z");
        tap_is_int(ao_schedule_dispatch_due(s), 2, "clock change in a handler: both fire at :10 again");

        /* Installing another clock recomputes the same way. */
        ao_schedule_free(s);
        s = new_schedule(&clock);
        e5 = add(s, "*/5 * * * * *", &r5);
        struct fake_clock other = {at("2026-06-01T00:00:00Z")};
        ao_schedule_set_clock(s, fake_clock_now, &other);
        tap_ok(ao_schedule_entry_next(e5) == at("2026-06-01T00:00:05Z"),
               "clock change: set_clock recomputes");
        tap_ok(r5.calls == 1 && rh.calls == 0, "clock change: set_clock fires nothing");
        ao_schedule_free(s);
}

/* Iterate the loop until @r has @calls ticks or @deadline (CLOCK_MONOTONIC µs) passes. */
static void run_until(const struct rec *r, size_t calls, uint64_t deadline)
{
        for (;;) {
                uint64_t now = ao_clock_now_usec();
                if (r->calls >= calls || now >= deadline)
                        return;
                int k = ao_reactor_run_once(reactor, deadline - now);
                if (k < 0)
                        tap_bail("ao_reactor_run_once failed");
        }
}

static void test_real_clock(void)
{
        struct ao_schedule *s = new_schedule(NULL);
        struct rec r = {0};
        add(s, "* * * * * *", &r);

        uint64_t t0 = ao_clock_now_usec();
        /* Generous deadlines: a loaded CI machine may stall the loop; the tick must still come. */
        run_until(&r, 1, t0 + 10 * USEC);
        uint64_t took = ao_clock_now_usec() - t0;
        if (!tap_ok(r.calls == 1, "real: every-second entry fired through the reactor (%zu calls)",
                    r.calls)) {
                ao_schedule_free(s);
                return;
        }
        tap_diag("real: first tick after %" PRIu64 " ms", (uint64_t) (took / MSEC));
        tap_ok(r.scheduled[0] % USEC == 0, "real: scheduled on a whole second");
        tap_ok(r.last_now >= r.scheduled[0], "real: now >= scheduled (%" PRIu64 " µs late)",
               r.last_now - r.scheduled[0]);

        /*
         * The timerfd re-arms itself: two more ticks, each on a later whole second
         * (1 s apart unless the machine stalled the loop past a tick, which then collapses).
         */
        run_until(&r, 3, ao_clock_now_usec() + 10 * USEC);
        tap_is_int(r.calls, 3, "real: two consecutive ticks after the first");
        tap_ok(r.scheduled[1] > r.scheduled[0] && r.scheduled[2] > r.scheduled[1] &&
                   (r.scheduled[1] - r.scheduled[0]) % USEC == 0 &&
                   (r.scheduled[2] - r.scheduled[1]) % USEC == 0,
               "real: later ticks land on later whole seconds");
        tap_ok(r.last_now >= r.scheduled[2], "real: now >= scheduled on the third tick");
        ao_schedule_free(s);
}

static void test_free_with_entries(void)
{
        size_t sources = ao_reactor_count_sources(reactor);
        struct ao_schedule *s = new_schedule(NULL);
        tap_is_int(ao_reactor_count_sources(reactor), sources + 1, "free: the schedule has one io source");
        struct rec r = {0};
        add(s, "* * * * * *", &r);
        add(s, "* * * * * *", &r);
        add(s, "@every 1h", &r);
        add(s, "0 0 30 2 *", &r);
        tap_ok(ao_schedule_count_entries(s) == 4 && ao_schedule_count_crontabs(s) == 3,
               "free: four entries in three crontabs");
        tap_ok(ao_schedule_free(s) == NULL, "free: returns NULL");
        tap_is_int(ao_reactor_count_sources(reactor), sources, "free: io source released");
        uint64_t left;
        unsigned flags;
        tap_ok(!realtime_timerfd(&left, &flags), "free: timerfd closed");
        tap_ok(ao_schedule_free(NULL) == NULL, "free: NULL accepted");
        tap_is_int(ao_reactor_run_once(reactor, 10 * MSEC), 0, "free: the loop stays quiet");
}

int main(void)
{
        reactor = test_reactor_new();

        test_shared_crontab();
        test_test_clock();
        test_no_drift();
        test_remove_in_handler();
        test_add_in_handler();
        test_many();
        test_bad_crontab();
        test_never_fires();
        test_clock_change();
        test_real_clock();
        test_free_with_entries();

        tap_is_int(ao_reactor_count_sources(reactor), 0, "no sources left behind");
        ao_reactor_free(reactor);
        return tap_done();
}
