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
 * Usage: bench-reactor [N]   (default 200000). Prints events/s and ratios
 * (reactor rate / bare rate, 1.0 = no overhead) for both backends.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ao/reactor.h"

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

int main(int argc, char **argv)
{
        long n = argc > 1 ? atol(argv[1]) : 200000;
        if (n <= 0)
                n = 200000;

        printf("# bench-reactor N=%ld (rates in events/s; ratio = reactor / bare, same run)\n", n);
        double bare_io = bare_pingpong(n);
        double bare_tm = bare_timers(n);
        printf("%-10s %-14s %12.0f\n", "bare", "io-pingpong", bare_io);
        printf("%-10s %-14s %12.0f\n", "bare", "timerfd", bare_tm);
        static const enum ao_reactor_backend backends[] = {AO_REACTOR_BACKEND_EPOLL,
                                                           AO_REACTOR_BACKEND_IO_URING};
        for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
                const char *name = ao_reactor_backend_to_string(backends[i]);
                double io = reactor_pingpong(backends[i], n, 0);
                if (io == 0) {
                        printf("%-10s unavailable\n", name);
                        continue;
                }
                double edge = reactor_pingpong(backends[i], n, AO_IO_EDGE);
                double tm = reactor_timers(backends[i], n);
                printf("%-10s %-14s %12.0f  ratio %.2f\n", name, "io-pingpong", io, io / bare_io);
                printf("%-10s %-14s %12.0f  ratio %.2f\n", name, "io-edge", edge, edge / bare_io);
                printf("%-10s %-14s %12.0f  ratio %.2f\n", name, "timer-chain", tm, tm / bare_tm);
        }
        return 0;
}
