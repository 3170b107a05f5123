/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event-loop overhead, as a ratio against the bare kernel interface measured
 * in the same run:
 *
 *   io ping-pong   one byte bounces between two pipes N times. Each hop is
 *                  one readiness event, one read and one write. Bare: an
 *                  epoll_wait loop doing the same with no reactor around it.
 *   io (edge)      the same with AO_IO_EDGE sources (multishot polls on
 *                  io_uring), against the same bare loop.
 *   timer chain    each timer's callback arms the next one, due at once, N
 *                  times: one kernel timer expiry and one loop wake-up per
 *                  timer. Bare: a timerfd armed and read N times in a loop.
 *
 * Usage: bench-reactor [N]   (default 200000). N is split into 5 rounds,
 * each running the bare loops and both backends back to back; prints the
 * medians of the rates and of the per-round ratios (reactor rate / bare
 * rate, 1.0 = no overhead) for both backends, and "row:" lines for
 * bench/run's table.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ao/reactor.h"
#include "bench-util.h"

struct pingpong {
        int a[2], b[2];
        long remaining;
};

static void make_pipes(struct pingpong *p)
{
        if (pipe2(p->a, O_NONBLOCK | O_CLOEXEC) < 0 || pipe2(p->b, O_NONBLOCK | O_CLOEXEC) < 0) {
                perror("pipe2");
                exit(1);
        }
}

static void close_pipes(struct pingpong *p)
{
        close(p->a[0]), close(p->a[1]), close(p->b[0]), close(p->b[1]);
}

/* Read the byte from one pipe, send it down the other. */
static void hop(struct pingpong *p, int from, int to)
{
        char c;
        if (read(from, &c, 1) == 1 && --p->remaining > 0)
                (void) !write(to, &c, 1);
}

static double bare_pingpong(long n)
{
        struct pingpong p = {.remaining = n};
        make_pipes(&p);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = p.a[0]};
        epoll_ctl(ep, EPOLL_CTL_ADD, p.a[0], &ev);
        ev.data.fd = p.b[0];
        epoll_ctl(ep, EPOLL_CTL_ADD, p.b[0], &ev);

        uint64_t start = ao_clock_now_usec();
        (void) !write(p.a[1], "x", 1);
        while (p.remaining > 0) {
                struct epoll_event out[8];
                int k = epoll_wait(ep, out, 8, -1);
                for (int i = 0; i < k; i++) {
                        if (out[i].data.fd == p.a[0])
                                hop(&p, p.a[0], p.b[1]);
                        else
                                hop(&p, p.b[0], p.a[1]);
                }
        }
        uint64_t elapsed = ao_clock_now_usec() - start;
        close(ep);
        close_pipes(&p);
        return (double) n * 1e6 / (double) elapsed;
}

static int on_readable(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct pingpong *p = userdata;
        hop(p, fd, fd == p->a[0] ? p->b[1] : p->a[1]);
        if (p->remaining <= 0)
                ao_reactor_exit(ao_source_get_reactor(s), 0);
        return 0;
}

static double reactor_pingpong(enum ao_reactor_backend backend, long n, uint32_t extra_flags)
{
        struct ao_reactor *r;
        struct ao_error err = {0};
        if (ao_reactor_new(backend, &r, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 0;
        }
        struct pingpong p = {.remaining = n};
        make_pipes(&p);
        struct ao_source *sa, *sb;
        ao_reactor_add_io(r, &sa, p.a[0], AO_IO_IN | extra_flags, on_readable, &p);
        ao_reactor_add_io(r, &sb, p.b[0], AO_IO_IN | extra_flags, on_readable, &p);

        uint64_t start = ao_clock_now_usec();
        (void) !write(p.a[1], "x", 1);
        ao_reactor_run(r);
        uint64_t elapsed = ao_clock_now_usec() - start;
        ao_source_free(sa);
        ao_source_free(sb);
        ao_reactor_free(r);
        close_pipes(&p);
        return (double) n * 1e6 / (double) elapsed;
}

static double bare_timers(long n)
{
        int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        struct itimerspec its = {.it_value = {.tv_nsec = 1}};
        uint64_t start = ao_clock_now_usec();
        for (long i = 0; i < n; i++) {
                uint64_t expirations;
                timerfd_settime(tfd, 0, &its, NULL);
                (void) !read(tfd, &expirations, sizeof(expirations));
        }
        uint64_t elapsed = ao_clock_now_usec() - start;
        close(tfd);
        return (double) n * 1e6 / (double) elapsed;
}

static int on_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        long *left = userdata;
        if (--*left == 0)
                ao_reactor_exit(ao_source_get_reactor(s), 0);
        else
                (void) ao_source_set_time(s, now); /* the next link of the chain, due at once */
        return 0;
}

static double reactor_timers(enum ao_reactor_backend backend, long n)
{
        struct ao_reactor *r;
        struct ao_error err = {0};
        if (ao_reactor_new(backend, &r, &err) < 0)
                return 0;
        long left = n;
        struct ao_source *s;
        uint64_t start = ao_clock_now_usec();
        ao_reactor_add_time(r, &s, 0, on_timer, &left);
        ao_reactor_run(r);
        uint64_t elapsed = ao_clock_now_usec() - start;
        ao_source_free(s);
        ao_reactor_free(r);
        return (double) n * 1e6 / (double) elapsed;
}

#define ROUNDS 5

enum {
        BARE_IO,
        BARE_TIMER,
        EPOLL_IO,
        EPOLL_EDGE,
        EPOLL_TIMER,
        URING_IO,
        URING_EDGE,
        URING_TIMER,
        _N_MEASURES
};

/* One round of everything, bare and reactors back to back, so a change in machine load hits all. */
static void round_once(long n, double *v)
{
        v[BARE_IO] = bare_pingpong(n);
        v[BARE_TIMER] = bare_timers(n);
        static const enum ao_reactor_backend backends[] = {AO_REACTOR_BACKEND_EPOLL,
                                                           AO_REACTOR_BACKEND_IO_URING};
        for (size_t i = 0; i < 2; i++) {
                double *b = v + EPOLL_IO + 3 * i;
                b[0] = reactor_pingpong(backends[i], n, 0);
                b[1] = b[0] ? reactor_pingpong(backends[i], n, AO_IO_EDGE) : 0;
                b[2] = b[0] ? reactor_timers(backends[i], n) : 0;
        }
}

static double median_of(double rounds[][_N_MEASURES], int m)
{
        double v[ROUNDS];
        for (int i = 0; i < ROUNDS; i++)
                v[i] = rounds[i][m];
        qsort(v, ROUNDS, sizeof(double), bench_compare_doubles);
        return v[ROUNDS / 2];
}

/* The median over rounds of the per-round ratio of measure @m to bare measure @bare. */
static double median_ratio(double rounds[][_N_MEASURES], int m, int bare)
{
        double v[ROUNDS];
        for (int i = 0; i < ROUNDS; i++)
                v[i] = rounds[i][bare] > 0 ? rounds[i][m] / rounds[i][bare] : 0;
        qsort(v, ROUNDS, sizeof(double), bench_compare_doubles);
        return v[ROUNDS / 2];
}

int main(int argc, char **argv)
{
        long n = argc > 1 ? atol(argv[1]) : 200000;
        if (n < ROUNDS)
                n = 200000;
        double rounds[ROUNDS][_N_MEASURES];
        for (int i = 0; i < ROUNDS; i++)
                round_once(n / ROUNDS, rounds[i]);

        printf("# bench-reactor N=%ld in %d rounds (rates in events/s, medians; ratio = reactor / bare, same "
               "round)\n",
               n, ROUNDS);
        printf("%-10s %-14s %12.0f\n", "bare", "io-pingpong", median_of(rounds, BARE_IO));
        printf("%-10s %-14s %12.0f\n", "bare", "timerfd", median_of(rounds, BARE_TIMER));
        static const char *const names[] = {"epoll", "io_uring"};
        static const char *const workloads[] = {"io-pingpong", "io-edge", "timer-chain"};
        static const char *const units[] = {"events/s", "events/s", "timers/s"};
        static const char *const refs[] = {"epoll_wait loop", "epoll_wait loop", "timerfd loop"};
        for (int b = 0; b < 2; b++) {
                if (median_of(rounds, EPOLL_IO + 3 * b) == 0) {
                        printf("%-10s unavailable\n", names[b]);
                        continue;
                }
                for (int w = 0; w < 3; w++) {
                        int m = EPOLL_IO + 3 * b + w, bare = w == 2 ? BARE_TIMER : BARE_IO;
                        double rate = median_of(rounds, m), ratio = median_ratio(rounds, m, bare);
                        printf("%-10s %-14s %12.0f  ratio %.2f\n", names[b], workloads[w], rate, ratio);
                        printf("row: reactor %s, %s|%.0f %s|%.0f %s (%s)|%.2f|report|-\n", workloads[w],
                               names[b], rate, units[w], median_of(rounds, bare), units[w], refs[w], ratio);
                }
        }
        return 0;
}
