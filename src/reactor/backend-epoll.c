/* SPDX-License-Identifier: Apache-2.0 */
/*
 * epoll backend. The registration token travels in epoll_event.data.u64;
 * the reactor core turns it back into a source and drops stale ones.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "ao/alloc.h"
#include "internal.h"

struct epoll_backend {
        int epfd;
        bool have_pwait2;
        struct epoll_event events[REACTOR_EVENTS_MAX];
};

static int epoll_init(struct ao_reactor *r, struct ao_error *reterr)
{
        int fd = epoll_create1(EPOLL_CLOEXEC);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "reactor: epoll_create1: %s",
                                    strerror(errno));
        /* Keep the loop's fd away from 0-2 even if the operator was started with stdio closed. */
        if (fd < 3) {
                int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                (void) close(fd);
                if (moved < 0)
                        return ao_error_set(reterr, ao_negative_errno(), "reactor: fcntl: %s",
                                            strerror(errno));
                fd = moved;
        }
        struct epoll_backend *b = ao_xcalloc(1, sizeof(*b));
        b->epfd = fd;
        b->have_pwait2 = true;
        r->backend_data = b;
        return 0;
}

static void epoll_done(struct ao_reactor *r)
{
        struct epoll_backend *b = r->backend_data;
        if (!b)
                return;
        (void) ao_safe_close(b->epfd);
        free(b);
        r->backend_data = NULL;
}

static int epoll_watch(struct ao_reactor *r, int fd, uint32_t events, uint64_t token)
{
        struct epoll_backend *b = r->backend_data;
        struct epoll_event ev = {.events = events, .data.u64 = token};
        return epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? ao_negative_errno() : 0;
}

static int epoll_modify(struct ao_reactor *r, int fd, uint32_t events, uint64_t old_token, uint64_t new_token)
{
        struct epoll_backend *b = r->backend_data;
        struct epoll_event ev = {.events = events, .data.u64 = new_token};
        return epoll_ctl(b->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? ao_negative_errno() : 0;
}

static int epoll_unwatch(struct ao_reactor *r, int fd, uint64_t token)
{
        struct epoll_backend *b = r->backend_data;
        /* ENOENT/EBADF: the fd was closed before its source was freed; nothing is left to remove. */
        if (epoll_ctl(b->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 && errno != ENOENT && errno != EBADF)
                return ao_negative_errno();
        return 0;
}

static int wait_events(struct epoll_backend *b, uint64_t timeout_usec, size_t max)
{
        if (b->have_pwait2) {
                struct timespec ts = {.tv_sec = (time_t) (timeout_usec / AO_USEC_PER_SEC),
                                      .tv_nsec = (long) (timeout_usec % AO_USEC_PER_SEC * AO_NSEC_PER_USEC)};
                int n = epoll_pwait2(b->epfd, b->events, (int) max,
                                     timeout_usec == AO_USEC_INFINITY ? NULL : &ts, NULL);
                if (n >= 0 || errno != ENOSYS)
                        return n;
                /* COMPAT(kernel < 5.11): no epoll_pwait2, millisecond timeouts it is. */
                b->have_pwait2 = false;
        }
        int ms = timeout_usec == AO_USEC_INFINITY
                     ? -1
                     : (int) AO_MIN((timeout_usec + 999) / 1000, (uint64_t) INT32_MAX);
        return epoll_wait(b->epfd, b->events, (int) max, ms);
}

static int epoll_wait_events(struct ao_reactor *r, uint64_t timeout_usec, struct backend_event *events,
                             size_t max)
{
        struct epoll_backend *b = r->backend_data;
        max = AO_MIN(max, (size_t) REACTOR_EVENTS_MAX);
        int n = wait_events(b, timeout_usec, max);
        if (n < 0)
                return ao_negative_errno();
        for (int i = 0; i < n; i++)
                events[i] =
                    (struct backend_event){.token = b->events[i].data.u64, .revents = b->events[i].events};
        return n;
}

const struct backend_ops reactor_epoll_ops = {
    .name = "epoll",
    .init = epoll_init,
    .done = epoll_done,
    .watch = epoll_watch,
    .modify = epoll_modify,
    .unwatch = epoll_unwatch,
    .close_unwatches = true,
    .wait = epoll_wait_events,
};
