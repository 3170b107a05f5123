/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reactor tests. meson runs this file once per backend with
 * AO_REACTOR=epoll|io_uring; an unavailable io_uring skips (exit 77).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/reactor.h"

static struct ao_reactor *reactor;

static void make_pipe(int fds[2])
{
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
                tap_bail("pipe2 failed");
}

/* ---- io ------------------------------------------------------------------ */

struct io_counter {
        int calls;
        uint32_t last_revents;
        bool read_one_byte;
        bool free_self;
        bool fail;
        struct ao_source *self;
        struct ao_source *victim; /* freed by this callback */
};

static int on_io(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct io_counter *c = userdata;
        c->calls++;
        c->last_revents = revents;
        if (c->read_one_byte) {
                char b;
                (void) !read(fd, &b, 1);
        }
        if (c->victim)
                c->victim = ao_source_free(c->victim);
        if (c->free_self)
                c->self = ao_source_free(s);
        return c->fail ? -EIO : 0;
}

static void test_io_level(void)
{
        int p[2];
        make_pipe(p);
        struct io_counter c = {.read_one_byte = true};
        struct ao_source *s;
        tap_is_int(ao_reactor_add_io(reactor, &s, p[0], AO_IO_IN, on_io, &c), 0, "io: add level source");
        tap_is_int(write(p[1], "ab", 2), 2, "io: write two bytes");
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "io: first iteration dispatches");
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1,
                   "io: level-triggered fires again for unread data");
        tap_is_int(c.calls, 2, "io: two dispatches for two single-byte reads");
        tap_ok(c.last_revents & AO_IO_IN, "io: revents carries AO_IO_IN");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "io: drained pipe stays quiet");
        ao_source_free(s);
        close(p[0]);
        close(p[1]);
}

static void test_io_edge(void)
{
        int p[2];
        make_pipe(p);
        struct io_counter c = {.read_one_byte = true};
        struct ao_source *s;
        tap_is_int(ao_reactor_add_io(reactor, &s, p[0], AO_IO_IN | AO_IO_EDGE, on_io, &c), 0,
                   "edge: add source");
        (void) !write(p[1], "ab", 2);
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "edge: first write dispatches");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0,
                   "edge: unread byte alone does not re-fire");
        (void) !write(p[1], "c", 1);
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "edge: a new write fires again");
        tap_is_int(c.calls, 2, "edge: exactly two dispatches");
        ao_source_free(s);
        close(p[0]);
        close(p[1]);
}

static void test_io_events_change_and_disable(void)
{
        int p[2];
        make_pipe(p);
        struct io_counter c = {0};
        struct ao_source *s;
        tap_is_int(ao_reactor_add_io(reactor, &s, p[1], AO_IO_IN, on_io, &c), 0,
                   "events: watch write end for IN");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0,
                   "events: write end never readable");
        tap_is_int(ao_source_set_io_events(s, AO_IO_OUT), 0, "events: switch to OUT");
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "events: empty pipe is writable");
        tap_ok(c.last_revents & AO_IO_OUT, "events: revents has AO_IO_OUT");
        tap_is_int(ao_source_set_enabled(s, AO_SOURCE_OFF), 0, "events: disable");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0,
                   "events: disabled source is silent");
        tap_is_int(ao_source_set_enabled(s, AO_SOURCE_ONESHOT), 0, "events: enable as oneshot");
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "events: oneshot fires");
        tap_is_int(ao_source_get_enabled(s), AO_SOURCE_OFF, "events: oneshot turned itself off");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "events: and stays quiet");
        tap_is_int(c.calls, 2, "events: two dispatches in all");
        ao_source_free(s);
        close(p[0]);
        close(p[1]);
}

static void test_io_free_in_callbacks(void)
{
        int a[2], b[2];
        make_pipe(a);
        make_pipe(b);
        struct io_counter ca = {.free_self = true}, cb = {.free_self = true};
        tap_is_int(ao_reactor_add_io(reactor, &ca.self, a[0], AO_IO_IN, on_io, &ca), 0, "free: add a");
        tap_is_int(ao_reactor_add_io(reactor, &cb.self, b[0], AO_IO_IN, on_io, &cb), 0, "free: add b");
        /* Whichever runs first frees the other: exactly one of them may be dispatched. */
        ca.victim = cb.self;
        cb.victim = ca.self;
        ca.free_self = cb.free_self = false;
        (void) !write(a[1], "x", 1);
        (void) !write(b[1], "x", 1);
        size_t before = ao_reactor_count_sources(reactor);
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "free: iteration with both ready");
        tap_is_int(ca.calls + cb.calls, 1, "free: a source freed by a sibling is not dispatched");
        tap_is_int(ao_reactor_count_sources(reactor), before - 1, "free: sibling gone");
        struct ao_source *survivor = ca.calls ? ca.self : cb.self;

        struct io_counter *sc = ca.calls ? &ca : &cb;
        sc->victim = NULL;
        sc->free_self = true;
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "free: survivor dispatched again");
        tap_ok(sc->self == NULL, "free: survivor freed itself inside its callback");
        tap_is_int(ao_reactor_count_sources(reactor), before - 2, "free: both gone");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "free: nothing left to dispatch");
        (void) survivor;
        close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

static void test_io_failure_disables(void)
{
        int p[2];
        make_pipe(p);
        struct io_counter c = {.fail = true};
        struct ao_source *s;
        (void) ao_reactor_add_io(reactor, &s, p[0], AO_IO_IN, on_io, &c);
        (void) ao_source_set_description(s, "failing-io");
        (void) !write(p[1], "x", 1);
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "fail: dispatched once");
        tap_is_int(ao_source_get_enabled(s), AO_SOURCE_OFF, "fail: a failing callback disables its source");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "fail: no further dispatch");
        tap_is_int(c.calls, 1, "fail: one call");
        ao_source_free(s);
        close(p[0]);
        close(p[1]);
}

/* ---- time ---------------------------------------------------------------- */

struct time_counter {
        int calls;
        int rearm; /* re-arm this many more times */
        uint64_t last_now;
        bool free_self;
        struct ao_source *victim;
        struct ao_source *self;
};

static int on_time(struct ao_source *s, uint64_t now, void *userdata)
{
        struct time_counter *c = userdata;
        c->calls++;
        c->last_now = now;
        if (c->rearm-- > 0)
                (void) ao_source_set_time_relative(s, 1000);
        if (c->victim)
                c->victim = ao_source_free(c->victim);
        if (c->free_self)
                c->self = ao_source_free(s);
        return 0;
}

static void test_time_basic(void)
{
        struct time_counter c = {0};
        struct ao_source *s;
        uint64_t start = ao_clock_now_usec();
        tap_is_int(ao_reactor_add_time_relative(reactor, &s, 2000, on_time, &c), 0, "time: add 2 ms timer");
        bool done = false;
        for (int i = 0; i < 50 && !done; i++) {
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
                done = c.calls > 0;
        }
        tap_is_int(c.calls, 1, "time: fired once");
        tap_ok(c.last_now >= start + 2000, "time: not before its deadline (%llu >= %llu)",
               (unsigned long long) c.last_now, (unsigned long long) (start + 2000));
        tap_is_int(ao_source_get_enabled(s), AO_SOURCE_OFF, "time: one-shot after firing");

        c.rearm = 3;
        tap_is_int(ao_source_set_time_relative(s, 1000), 0, "time: re-arm");
        for (int i = 0; i < 50 && c.calls < 5; i++)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_is_int(c.calls, 5, "time: a callback re-arming itself three times fires four more times");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "time: then stays quiet");
        ao_source_free(s);
}

static void test_time_free_in_callbacks(void)
{
        struct time_counter a = {0}, b = {0}, self = {.free_self = true};
        uint64_t at = ao_clock_now_usec() + 1000;
        (void) ao_reactor_add_time(reactor, &a.self, at, on_time, &a);
        (void) ao_reactor_add_time(reactor, &b.self, at + 1, on_time, &b);
        (void) ao_reactor_add_time(reactor, &self.self, at, on_time, &self);
        a.victim = b.self; /* a runs first (earlier deadline) and frees b, due in the same pass */
        size_t before = ao_reactor_count_sources(reactor);
        for (int i = 0; i < 50 && a.calls == 0; i++)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        tap_is_int(a.calls, 1, "time-free: a fired");
        tap_is_int(b.calls, 0, "time-free: b, freed by a, never fired");
        tap_is_int(self.calls, 1, "time-free: self-freeing timer fired");
        tap_ok(self.self == NULL, "time-free: and freed itself");
        tap_is_int(ao_reactor_count_sources(reactor), before - 2, "time-free: two sources gone");
        ao_source_free(a.self);
}

struct many_timers {
        int fired;
        bool ordered;
        uint64_t last_deadline;
        int *hits;
};

static int on_many(struct ao_source *s, uint64_t now, void *userdata)
{
        struct many_timers *m = ao_source_get_userdata(s);
        (void) userdata;
        uint64_t deadline = ao_source_get_time(s);
        if (deadline < m->last_deadline || now < deadline)
                m->ordered = false;
        m->last_deadline = deadline;
        m->fired++;
        return 0;
}

static void test_ten_thousand_timers(void)
{
        enum {
                N = 10000
        };
        struct many_timers m = {.ordered = true};
        uint64_t base = ao_clock_now_usec() + 5000;
        size_t before = ao_reactor_count_sources(reactor);
        unsigned seed = 12345;
        for (int i = 0; i < N; i++) {
                seed = seed * 1103515245u + 12345u;
                uint64_t at = base + (seed >> 8) % 50000; /* spread over 50 ms */
                if (ao_reactor_add_time(reactor, NULL, at, on_many, &m) < 0)
                        tap_bail("adding a timer failed");
        }
        tap_is_int(ao_reactor_count_sources(reactor), before + N, "10k: all timers attached");
        uint64_t give_up = ao_clock_now_usec() + 30 * AO_USEC_PER_SEC;
        while (m.fired < N && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_is_int(m.fired, N, "10k: every timer fired exactly once");
        tap_ok(m.ordered, "10k: in deadline order, none early");
        tap_is_int(ao_reactor_count_sources(reactor), before,
                   "10k: floating one-shot timers freed themselves");
}

/* ---- signals ------------------------------------------------------------- */

struct signal_counter {
        int calls;
        int last_signo;
        int next_value; /* expected sigqueue payload */
        bool in_order;
        bool free_self;
        struct ao_source *self;
};

static int on_signal(struct ao_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct signal_counter *c = userdata;
        c->calls++;
        c->last_signo = (int) si->ssi_signo;
        if (si->ssi_code == SI_QUEUE) {
                if (si->ssi_int != c->next_value)
                        c->in_order = false;
                c->next_value++;
        }
        if (c->free_self)
                c->self = ao_source_free(s);
        return 0;
}

static void test_signals(void)
{
        struct signal_counter c = {.in_order = true};
        struct ao_source *s;

        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR2);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        tap_is_int(ao_reactor_add_signal(reactor, &s, SIGUSR2, on_signal, &c), -EBUSY,
                   "signal: an unblocked signal is refused");
        pthread_sigmask(SIG_BLOCK, &set, NULL);

        tap_is_int(ao_reactor_add_signal(reactor, &s, SIGUSR1, on_signal, &c), 0, "signal: add SIGUSR1");
        struct ao_source *dup;
        tap_is_int(ao_reactor_add_signal(reactor, &dup, SIGUSR1, on_signal, &c), -EEXIST,
                   "signal: a second source for one signal is refused");
        raise(SIGUSR1);
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "signal: dispatched");
        tap_is_int(c.last_signo, SIGUSR1, "signal: with its number");
        ao_source_free(s);

        /* Real-time signals queue instead of coalescing: a burst of 1000 must arrive as 1000, in order. */
        enum {
                BURST = 1000
        };
        struct rlimit rl;
        if (getrlimit(RLIMIT_SIGPENDING, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < BURST) {
                tap_ok(true, "signal burst: skipped, RLIMIT_SIGPENDING is %llu # SKIP",
                       (unsigned long long) rl.rlim_cur);
                return;
        }
        int rt = SIGRTMIN + 1;
        struct signal_counter burst = {.in_order = true};
        tap_is_int(ao_reactor_add_signal(reactor, &s, rt, on_signal, &burst), 0,
                   "signal burst: add SIGRTMIN+1");
        for (int i = 0; i < BURST; i++)
                if (sigqueue(getpid(), rt, (union sigval){.sival_int = i}) < 0)
                        tap_bail("sigqueue failed");
        for (int i = 0; i < 100 && burst.calls < BURST; i++)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_is_int(burst.calls, BURST, "signal burst: all 1000 queued signals dispatched");
        tap_ok(burst.in_order, "signal burst: payloads arrived in order");

        burst.free_self = true;
        burst.self = s;
        sigqueue(getpid(), rt, (union sigval){.sival_int = BURST});
        sigqueue(getpid(), rt, (union sigval){.sival_int = BURST + 1});
        (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_is_int(burst.calls, BURST + 1,
                   "signal free: a source freed in its callback gets no more signals");
        tap_ok(burst.self == NULL, "signal free: source freed itself");
        /* The second queued signal is still pending but nobody watches it now: drain it. */
        struct timespec zero = {0};
        sigset_t rtset;
        sigemptyset(&rtset);
        sigaddset(&rtset, rt);
        tap_ok(sigtimedwait(&rtset, NULL, &zero) == rt, "signal free: the undelivered signal stayed pending");
}

/* ---- children ------------------------------------------------------------ */

struct child_counter {
        int calls;
        int code;
        int status;
        pid_t pid;
        long maxrss;
        bool free_self;
        struct ao_source *self;
};

static int on_child(struct ao_source *s, const siginfo_t *si, const struct rusage *ru, void *userdata)
{
        struct child_counter *c = userdata;
        c->calls++;
        c->code = si->si_code;
        c->status = si->si_status;
        c->pid = si->si_pid;
        c->maxrss = ru->ru_maxrss;
        if (c->free_self)
                c->self = ao_source_free(s);
        return 0;
}

static pid_t spawn_exit(int code)
{
        pid_t pid = fork();
        if (pid == 0)
                _exit(code);
        if (pid < 0)
                tap_bail("fork failed");
        return pid;
}

static void test_children(void)
{
        struct child_counter c = {0};
        struct ao_source *s;
        pid_t pid = spawn_exit(7);
        tap_is_int(ao_reactor_add_child(reactor, &s, pid, -1, 0, on_child, &c), 0, "child: add");
        bool done = false;
        for (int i = 0; i < 50 && !done; i++) {
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
                done = c.calls > 0;
        }
        tap_is_int(c.calls, 1, "child: reaped once");
        tap_is_int(c.code, CLD_EXITED, "child: CLD_EXITED");
        tap_is_int(c.status, 7, "child: exit status 7");
        tap_is_int(c.pid, pid, "child: pid matches");
        tap_ok(c.maxrss > 0, "child: rusage filled (maxrss %ld KiB)", c.maxrss);
        tap_is_int(ao_source_get_enabled(s), AO_SOURCE_OFF, "child: source off after exit");
        tap_is_int(waitpid(pid, NULL, WNOHANG), -1, "child: really reaped (no zombie left)");
        ao_source_free(s);

        /* Killed by a signal, source frees itself. */
        struct child_counter k = {.free_self = true};
        pid = fork();
        if (pid == 0) {
                pause();
                _exit(0);
        }
        (void) ao_reactor_add_child(reactor, &k.self, pid, -1, AO_CHILD_OWN_PIDFD, on_child, &k);
        kill(pid, SIGKILL);
        for (int i = 0; i < 50 && k.calls == 0; i++)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_is_int(k.code, CLD_KILLED, "child: CLD_KILLED");
        tap_is_int(k.status, SIGKILL, "child: by SIGKILL");
        tap_ok(k.self == NULL, "child: freed itself in its callback");

        /*
         * A freed child source must never fire, even while another copy of its
         * pidfd keeps the file open (the stale-epoll-registration bug).
         */
        struct child_counter gone = {0};
        struct ao_source *g;
        pid = fork();
        if (pid == 0) {
                pause();
                _exit(0);
        }
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        int pidfd_copy = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
        tap_ok(pidfd >= 0 && pidfd_copy >= 0, "child: pidfd and a second reference to it");
        (void) ao_reactor_add_child(reactor, &g, pid, pidfd, AO_CHILD_OWN_PIDFD, on_child, &gone);
        ao_source_free(g);
        kill(pid, SIGKILL);
        tap_is_int(waitpid(pid, NULL, 0), pid, "child: freed source left the child for us to reap");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0,
                   "child: freed source never dispatched");
        tap_is_int(gone.calls, 0, "child: no callback for a freed source");
        close(pidfd_copy);
}

struct unwatched {
        struct ao_source *child;
        int reap_result;
};

static int reap_unwatched(struct ao_source *s, void *userdata)
{
        struct unwatched *u = userdata;
        u->reap_result = ao_source_child_reap(u->child);
        return 0;
}

/* AO_CHILD_UNWATCHED: no pidfd, no event of its own; reaped when the caller says so, inside a dispatch. */
static void test_unwatched_child(void)
{
        struct child_counter c = {0};
        struct unwatched u = {0};
        pid_t pid = spawn_exit(9);
        tap_is_int(ao_reactor_add_child(reactor, &u.child, pid, 0, AO_CHILD_UNWATCHED, on_child, &c), -EINVAL,
                   "unwatched child: refused with a pidfd");
        tap_is_int(ao_reactor_add_child(reactor, &u.child, pid, -1, AO_CHILD_UNWATCHED, on_child, &c), 0,
                   "unwatched child: add");
        siginfo_t si = {0};
        tap_is_int(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0, "unwatched child: it has exited");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0,
                   "unwatched child: its exit alone dispatches nothing");
        tap_is_int(c.calls, 0, "unwatched child: no callback yet");
        struct ao_source *d;
        (void) ao_reactor_add_defer(reactor, &d, reap_unwatched, &u);
        (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        tap_is_int(u.reap_result, 1, "unwatched child: reaped when asked");
        tap_ok(c.calls == 1 && c.code == CLD_EXITED && c.status == 9 && c.pid == pid,
               "unwatched child: the callback has its exit status");
        tap_is_int(waitpid(pid, NULL, WNOHANG), -1, "unwatched child: no zombie left");
        ao_source_free(d);
        ao_source_free(u.child);
}

struct burst_state {
        int reaped;
        int wrong;
};

static int on_burst_child(struct ao_source *s, const siginfo_t *si, const struct rusage *ru, void *userdata)
{
        struct burst_state *b = userdata;
        (void) ru;
        b->reaped++;
        if (si->si_code != CLD_EXITED || si->si_status != (int) (si->si_pid % 100))
                b->wrong++;
        ao_source_free(s);
        return 0;
}

static void test_child_burst(void)
{
        enum {
                N = 1000
        };
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < N + 64) {
                tap_ok(true, "child burst: skipped, RLIMIT_NOFILE is %llu # SKIP",
                       (unsigned long long) rl.rlim_cur);
                return;
        }
        struct burst_state b = {0};
        for (int i = 0; i < N; i++) {
                pid_t pid = fork();
                if (pid == 0)
                        _exit(getpid() % 100);
                if (pid < 0)
                        tap_bail("fork failed in burst");
                struct ao_source *s;
                if (ao_reactor_add_child(reactor, &s, pid, -1, AO_CHILD_OWN_PIDFD, on_burst_child, &b) < 0)
                        tap_bail("add_child failed in burst");
        }
        for (int i = 0; i < 1000 && b.reaped < N; i++)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_is_int(b.reaped, N, "child burst: 1000 children reaped");
        tap_is_int(b.wrong, 0, "child burst: every exit status matches its child");
        tap_is_int(waitpid(-1, NULL, WNOHANG), -1, "child burst: no child left unreaped");
}

/* ---- defer, post, wakeup, exit -------------------------------------------- */

struct plain_counter {
        int calls;
        bool free_self;
        bool add_defer; /* add another defer from inside the callback */
        struct ao_source *self;
        struct plain_counter *chained;
};

static int on_plain(struct ao_source *s, void *userdata)
{
        struct plain_counter *c = userdata;
        c->calls++;
        if (c->add_defer && c->chained)
                (void) ao_reactor_add_defer(ao_source_get_reactor(s), NULL, on_plain, c->chained);
        if (c->free_self)
                c->self = ao_source_free(s);
        return 0;
}

static void test_defer_and_post(void)
{
        struct plain_counter d = {0}, chained = {0}, post = {0};
        struct ao_source *ds, *ps;
        d.add_defer = true;
        d.chained = &chained;
        tap_is_int(ao_reactor_add_defer(reactor, &ds, on_plain, &d), 0, "defer: add");
        tap_is_int(ao_reactor_add_post(reactor, &ps, on_plain, &post), 0, "post: add");
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "defer: runs without blocking");
        tap_is_int(d.calls, 1, "defer: ran once");
        tap_is_int(chained.calls, 0, "defer: a defer added by a defer waits for the next iteration");
        tap_is_int(post.calls, 1, "post: ran after the iteration that dispatched");
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "defer: chained defer iteration");
        tap_is_int(chained.calls, 1, "defer: chained defer ran");
        tap_is_int(d.calls, 1, "defer: one-shot did not run again");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "post: idle iteration times out");
        tap_is_int(post.calls, 2, "post: not run after an idle iteration");

        tap_is_int(ao_source_set_enabled(ds, AO_SOURCE_ON), 0, "defer: switch to ON");
        (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_is_int(d.calls, 3, "defer: ON runs every iteration");
        d.add_defer = false;
        d.free_self = true;
        d.self = ds;
        (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_ok(d.self == NULL, "defer: freed itself in its callback");
        (void) ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC);
        tap_is_int(d.calls, 4, "defer: never ran after being freed");

        post.free_self = true;
        post.self = ps;
        (void) ao_reactor_add_defer(reactor, NULL, on_plain, &chained);
        (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_ok(post.self == NULL, "post: freed itself in its callback");
}

struct waker {
        struct ao_source *source;
        int wakeups;
        atomic_bool done;
};

static void *wake_thread(void *arg)
{
        struct waker *w = arg;
        for (int i = 0; i < w->wakeups; i++)
                ao_source_wakeup(w->source);
        atomic_store(&w->done, true);
        return NULL;
}

static void test_wakeup(void)
{
        struct plain_counter c = {0};
        struct ao_source *s;
        tap_is_int(ao_reactor_add_wakeup(reactor, &s, on_plain, &c), 0, "wakeup: add");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "wakeup: quiet until woken");

        struct waker w = {.source = s, .wakeups = 100};
        pthread_t t;
        pthread_create(&t, NULL, wake_thread, &w);
        pthread_join(t, NULL);
        tap_is_int(ao_reactor_run_once(reactor, AO_USEC_PER_SEC), 1, "wakeup: woken from another thread");
        tap_is_int(c.calls, 1, "wakeup: 100 wake-ups before the loop ran coalesce into one dispatch");
        tap_is_int(ao_reactor_run_once(reactor, 10 * AO_USEC_PER_MSEC), 0, "wakeup: counter drained");

        c.free_self = true;
        c.self = s;
        ao_source_wakeup(s);
        (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        tap_ok(c.self == NULL, "wakeup: freed itself in its callback");
}

static int on_exit_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        ao_reactor_exit(ao_source_get_reactor(s), 42);
        return 0;
}

static int on_reenter(struct ao_source *s, void *userdata)
{
        *(int *) userdata = ao_reactor_run_once(ao_source_get_reactor(s), 0);
        return 0;
}

static void test_run_and_exit(void)
{
        int reentry = 0;
        (void) ao_reactor_add_defer(reactor, NULL, on_reenter, &reentry);
        (void) ao_reactor_add_time_relative(reactor, NULL, 1000, on_exit_timer, NULL);
        tap_is_int(ao_reactor_run(reactor), 42, "run: returns the code given to ao_reactor_exit");
        tap_is_int(reentry, -EBUSY, "run: run_once from a callback is refused");
}

/*
 * Last, because it cannot be undone: refuse io_uring_setup with EPERM, as
 * container seccomp profiles do. AUTO must fall back to epoll and say why;
 * an explicit io_uring request must fail with that reason.
 */
static void test_fallback_when_refused(void)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(io_uring_setup), 0) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0)
                tap_bail("installing the seccomp filter failed");
        seccomp_release(ctx);

        struct ao_reactor *r = NULL;
        struct ao_error err = {0};
        tap_is_int(ao_reactor_new(AO_REACTOR_BACKEND_AUTO, &r, &err), 0, "fallback: auto still starts");
        tap_is_str(ao_reactor_backend_name(r), "epoll", "fallback: on epoll");
        tap_is_str(ao_reactor_fallback_reason(r), "io_uring_setup: Operation not permitted",
                   "fallback: reason kept");
        ao_reactor_free(r);

        r = NULL;
        tap_is_int(ao_reactor_new(AO_REACTOR_BACKEND_IO_URING, &r, &err), -EPERM,
                   "fallback: explicit io_uring fails");
        tap_is_str(err.msg, "io_uring_setup: Operation not permitted", "fallback: with the reason");
        tap_ok(r == NULL, "fallback: no reactor returned");
}

int main(void)
{
        const char *want = getenv("AO_REACTOR");
        enum ao_reactor_backend backend = ao_reactor_backend_from_string(want ? want : "epoll");
        if (backend < 0)
                tap_bail("AO_REACTOR must be epoll or io_uring");

        /* As the operator does at start: every signal blocked before anything else. */
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        signal(SIGCHLD, SIG_DFL);

        struct ao_error err = {0};
        if (ao_reactor_new(backend, &reactor, &err) < 0) {
                if (backend == AO_REACTOR_BACKEND_IO_URING)
                        tap_skip_all(err.msg);
                tap_bail(err.msg);
        }
        tap_is_str(ao_reactor_backend_name(reactor), ao_reactor_backend_to_string(backend), "backend is %s",
                   want);

        test_io_level();
        test_io_edge();
        test_io_events_change_and_disable();
        test_io_free_in_callbacks();
        test_io_failure_disables();
        test_time_basic();
        test_time_free_in_callbacks();
        test_ten_thousand_timers();
        test_signals();
        test_children();
        test_unwatched_child();
        test_child_burst();
        test_defer_and_post();
        test_wakeup();
        test_run_and_exit();

        tap_is_int(ao_reactor_count_sources(reactor), 0, "no sources left behind");
        ao_reactor_free(reactor);
        test_fallback_when_refused();
        return tap_done();
}
