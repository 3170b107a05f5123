/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/reactor/: the source and reactor structures and the ops
 * table that the epoll and io_uring backends implement.
 *
 * Kernel registrations are named by a 64-bit token, (generation << 32) |
 * slot index, never by a pointer. A slot's generation changes whenever its
 * registration is dropped, so an event that the kernel queued before the
 * drop (an epoll event of a pidfd that another process still holds open, an
 * io_uring completion in flight) is recognised as stale and ignored instead
 * of reaching freed or reused memory.
 */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao-build-config.h"
#include "ao/reactor.h"

enum source_type {
        SOURCE_IO,
        SOURCE_TIME,
        SOURCE_SIGNAL,
        SOURCE_CHILD,
        SOURCE_DEFER,
        SOURCE_POST,
        SOURCE_WAKEUP,
        /* The reactor's own fds: its timerfd and its signalfd. */
        SOURCE_INTERNAL_TIMERFD,
        SOURCE_INTERNAL_SIGNALFD,
};

struct source_list_node {
        struct ao_source *prev, *next;
};

struct ao_source {
        enum source_type type;
        struct ao_reactor *reactor; /* borrowed, outlives the source */
        enum ao_source_enable enabled;
        bool floating; /* owned by the reactor */
        bool dead;     /* freed by its owner; memory released after the iteration */
        char *description;
        void *userdata;

        uint32_t slot; /* kernel registration slot, UINT32_MAX when not registered */

        struct source_list_node all;     /* every live source of the reactor */
        struct source_list_node pending; /* defer or post list membership */
        struct ao_source *next_garbage;

        union {
                struct {
                        int fd;
                        uint32_t events;
                        ao_io_handler *cb;
                } io;
                struct {
                        uint64_t usec;
                        size_t heap_index; /* SIZE_MAX when not in the heap */
                        uint64_t armed_iteration;
                        bool due; /* popped for dispatch in this iteration */
                        ao_time_handler *cb;
                } time;
                struct {
                        int sig;
                        ao_signal_handler *cb;
                } signal;
                struct {
                        pid_t pid;
                        int pidfd;
                        bool own_pidfd;
                        bool exited;
                        ao_child_handler *cb;
                } child;
                struct {
                        int eventfd; /* owned */
                        ao_plain_handler *cb;
                } wakeup;
                struct {
                        ao_plain_handler *cb; /* defer and post */
                } plain;
        };
};

struct reactor_slot {
        struct ao_source *source; /* NULL when free */
        uint32_t generation;
        uint32_t next_free;
        int fd;
        uint32_t events; /* epoll bits, AO_IO_EDGE included */
};

/* One readiness event reported by a backend. */
struct backend_event {
        uint64_t token;
        uint32_t revents;
};

struct backend_ops {
        const char *name;
        /* Create kernel state; on failure fill @reterr, leave nothing behind. */
        int (*init)(struct ao_reactor *r, struct ao_error *reterr);
        void (*done)(struct ao_reactor *r);
        int (*watch)(struct ao_reactor *r, int fd, uint32_t events, uint64_t token);
        /* Replace the registration @old_token of @fd with @events under @new_token. */
        int (*modify)(struct ao_reactor *r, int fd, uint32_t events, uint64_t old_token, uint64_t new_token);
        int (*unwatch)(struct ao_reactor *r, int fd, uint64_t token);
        /* Closing a file's last fd drops its registration (epoll), so unwatch can be skipped then. */
        bool close_unwatches;
        /* Wait up to @timeout_usec, fill at most @max events; returns their count or < 0. */
        int (*wait)(struct ao_reactor *r, uint64_t timeout_usec, struct backend_event *events, size_t max);
};

extern const struct backend_ops reactor_epoll_ops;
#if AO_HAVE_IO_URING
extern const struct backend_ops reactor_uring_ops;
#endif

#define REACTOR_EVENTS_MAX 256

struct ao_reactor {
        const struct backend_ops *ops;
        enum ao_reactor_backend backend;
        void *backend_data; /* owned by the backend */
        char *fallback_reason;

        struct reactor_slot *slots;
        uint32_t n_slots, slots_cap;
        uint32_t free_slot; /* head of the free list, UINT32_MAX when empty */

        struct ao_source *all_sources; /* list via ->all */
        size_t n_sources;
        struct ao_source *defers; /* list via ->pending */
        struct ao_source *posts;  /* list via ->pending */
        struct ao_source *garbage;

        /* Timers: a min-heap on usec and one timerfd armed at its top. */
        struct ao_source **heap;
        size_t heap_len, heap_cap;
        struct ao_source *timerfd_source;
        int timerfd;
        uint64_t timerfd_armed; /* deadline the timerfd is armed for, 0 when disarmed */

        /* Signals: one signalfd for the union of the watched signals. */
        struct ao_source *signalfd_source;
        int signalfd;
        sigset_t signal_mask;
        struct ao_source *signal_sources[_NSIG];

        struct backend_event events[REACTOR_EVENTS_MAX];
        struct ao_source **scratch; /* snapshot of defer/post lists during dispatch */
        size_t scratch_cap;
        struct ao_source **due; /* timers popped for dispatch, earliest first */
        size_t due_cap;

        uint64_t now;
        uint64_t iteration;
        bool running;
        bool exit_requested;
        int exit_code;
};

static inline uint64_t reactor_token(uint32_t slot, uint32_t generation)
{
        return (uint64_t) generation << 32 | slot;
}

/* The slot a token names, or NULL when the token is stale. */
struct reactor_slot *reactor_slot_from_token(struct ao_reactor *r, uint64_t token);
