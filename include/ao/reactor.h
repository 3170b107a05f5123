/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The event loop that drives everything in the main thread: fd readiness
 * (libcurl sockets, hook output pipes), timers, signals, child exits,
 * deferred callbacks and wake-ups from other threads. One API, two kernel
 * backends: io_uring and epoll, chosen at run time.
 *
 * Sources. Each ao_reactor_add_*() creates a source. With a non-NULL
 * @ret_source the caller owns it and releases it with ao_source_free();
 * with NULL the source is "floating": the reactor owns it, frees a floating
 * one-shot source after its dispatch, and frees the rest in
 * ao_reactor_free(). ao_source_free() may be called from any callback,
 * including the source's own: the memory is released after the current
 * iteration, and no event for a freed source is ever dispatched.
 *
 * Callbacks return >= 0 on success. A callback that returns < 0 gets its
 * source disabled (AO_SOURCE_OFF) and the failure logged; the loop goes on.
 *
 * Time is in microseconds on CLOCK_MONOTONIC everywhere.
 *
 * Threads: a reactor and its sources belong to the thread that runs it. The
 * only calls allowed from other threads are ao_source_wakeup() and
 * ao_reactor_backend_name().
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>

#include "ao/error.h"

struct rusage;
struct signalfd_siginfo;
struct ao_reactor;
struct ao_source;

enum ao_reactor_backend {
        AO_REACTOR_BACKEND_AUTO, /* io_uring, falling back to epoll when it is unavailable */
        AO_REACTOR_BACKEND_IO_URING,
        AO_REACTOR_BACKEND_EPOLL,
        _AO_REACTOR_BACKEND_MAX,
        _AO_REACTOR_BACKEND_INVALID = -EINVAL,
};

/** Enable states (sd-event's ON / OFF / ONESHOT). */
enum ao_source_enable {
        AO_SOURCE_OFF = 0,
        AO_SOURCE_ON = 1,
        AO_SOURCE_ONESHOT = -1, /* dispatch once, then turn OFF */
};

/* I/O event bits are epoll's: AO_IO_IN == EPOLLIN, and so on. */
#define AO_IO_IN    EPOLLIN
#define AO_IO_OUT   EPOLLOUT
#define AO_IO_PRI   EPOLLPRI
#define AO_IO_ERR   EPOLLERR
#define AO_IO_HUP   EPOLLHUP
#define AO_IO_RDHUP EPOLLRDHUP
/* Request edge-triggered delivery; the default is level-triggered. */
#define AO_IO_EDGE EPOLLET

typedef int ao_io_handler(struct ao_source *s, int fd, uint32_t revents, void *userdata);
/** @now is the loop's current time, >= the deadline that fired. */
typedef int ao_time_handler(struct ao_source *s, uint64_t now, void *userdata);
typedef int ao_signal_handler(struct ao_source *s, const struct signalfd_siginfo *si, void *userdata);
/**
 * The child has exited and is reaped. @si->si_code is CLD_EXITED, CLD_KILLED
 * or CLD_DUMPED with si_status the exit code or signal; @ru is its resource
 * usage. If another waiter reaped the child first, si_signo is 0 and @ru is
 * all zero.
 */
typedef int ao_child_handler(struct ao_source *s, const siginfo_t *si, const struct rusage *ru,
                             void *userdata);
/** Used by defer, post and wakeup sources. */
typedef int ao_plain_handler(struct ao_source *s, void *userdata);

/**
 * Create a reactor on @backend. AUTO tries io_uring and silently falls back
 * to epoll when io_uring_setup() fails or the kernel lacks a needed feature;
 * ao_reactor_fallback_reason() then says why. An explicit IO_URING fails with
 * a message instead of falling back.
 */
int ao_reactor_new(enum ao_reactor_backend backend, struct ao_reactor **ret, struct ao_error *reterr);

/** Free the reactor and every source still attached to it (floating or not). NULL is accepted. */
struct ao_reactor *ao_reactor_free(struct ao_reactor *r);

enum ao_reactor_backend ao_reactor_get_backend(const struct ao_reactor *r);
/** "io_uring" or "epoll". */
const char *ao_reactor_backend_name(const struct ao_reactor *r);
/** Why AUTO did not pick io_uring, or NULL. Owned by the reactor. */
const char *ao_reactor_fallback_reason(const struct ao_reactor *r);

enum ao_reactor_backend ao_reactor_backend_from_string(const char *s);
const char *ao_reactor_backend_to_string(enum ao_reactor_backend b);

/**
 * Watch @fd (borrowed: the caller closes it after freeing the source) for
 * @events (AO_IO_* bits, AO_IO_EDGE for edge-triggered). Enabled ON.
 */
int ao_reactor_add_io(struct ao_reactor *r, struct ao_source **ret_source, int fd, uint32_t events,
                      ao_io_handler *cb, void *userdata);

/** A timer firing at the absolute CLOCK_MONOTONIC time @usec (0 = as soon as possible). ONESHOT. */
int ao_reactor_add_time(struct ao_reactor *r, struct ao_source **ret_source, uint64_t usec,
                        ao_time_handler *cb, void *userdata);
/** A timer firing @usec from now. ONESHOT. */
int ao_reactor_add_time_relative(struct ao_reactor *r, struct ao_source **ret_source, uint64_t usec,
                                 ao_time_handler *cb, void *userdata);

/**
 * Deliver signal @sig through a signalfd. The signal must already be blocked
 * in every thread (-EBUSY otherwise): handlers that run asynchronously are
 * never installed. One source per signal number (-EEXIST otherwise). ON.
 */
int ao_reactor_add_signal(struct ao_reactor *r, struct ao_source **ret_source, int sig, ao_signal_handler *cb,
                          void *userdata);

/* ao_reactor_add_child() flags */
#define AO_CHILD_OWN_PIDFD (1u << 0) /* close the pidfd when the source is freed */
/*
 * No pidfd and no watch (@pidfd must be -1): the caller learns of the exit by
 * other means (SIGCHLD, as child subreaper) and calls ao_source_child_reap().
 * Spares opening, watching and closing a pidfd per child. Such a source
 * cannot be turned off and on again.
 */
#define AO_CHILD_UNWATCHED (1u << 1)

/**
 * Reap child @pid when it exits, with its rusage. @pidfd may be -1, in which
 * case one is opened. ON until the child exits, then OFF. A source freed
 * before the child exits leaves it unreaped for the process-wide reaper.
 */
int ao_reactor_add_child(struct ao_reactor *r, struct ao_source **ret_source, pid_t pid, int pidfd,
                         unsigned flags, ao_child_handler *cb, void *userdata);

/**
 * Reap our child @pid now if it has exited, with its rusage, without a
 * source: 1 when reaped, 0 while it runs, < 0 on error. For callers that
 * learn of a child late and would rather not watch one that is gone.
 */
int ao_child_reap(pid_t pid, siginfo_t *si, struct rusage *ru);

/** Run @cb at the start of the next iteration. ONESHOT; with ON it runs every iteration. */
int ao_reactor_add_defer(struct ao_reactor *r, struct ao_source **ret_source, ao_plain_handler *cb,
                         void *userdata);

/** Run @cb at the end of every iteration that dispatched any other source. ON. */
int ao_reactor_add_post(struct ao_reactor *r, struct ao_source **ret_source, ao_plain_handler *cb,
                        void *userdata);

/**
 * A source that another thread triggers with ao_source_wakeup(); several
 * wake-ups before the loop runs coalesce into one dispatch. ON.
 */
int ao_reactor_add_wakeup(struct ao_reactor *r, struct ao_source **ret_source, ao_plain_handler *cb,
                          void *userdata);

/** Thread-safe: make a wakeup source fire. The source must outlive the call. */
void ao_source_wakeup(struct ao_source *s);

/** Detach and release @s (see the ownership notes above). NULL is accepted; returns NULL. */
struct ao_source *ao_source_free(struct ao_source *s);

/**
 * Release the io source @s and close the fd it watches, which must be the
 * only reference to its open file (never duplicated, inherited or sent).
 * With epoll the close alone drops the registration, which spares a system
 * call. NULL is accepted; returns NULL.
 */
struct ao_source *ao_source_free_closing_fd(struct ao_source *s);

int ao_source_set_enabled(struct ao_source *s, enum ao_source_enable enabled);
enum ao_source_enable ao_source_get_enabled(const struct ao_source *s);
/** Change the watched events of an io source. */
int ao_source_set_io_events(struct ao_source *s, uint32_t events);
int ao_source_get_io_fd(const struct ao_source *s);
/** Re-arm a time source at the absolute time @usec and enable it (ONESHOT). */
int ao_source_set_time(struct ao_source *s, uint64_t usec);
int ao_source_set_time_relative(struct ao_source *s, uint64_t usec);
uint64_t ao_source_get_time(const struct ao_source *s);
pid_t ao_source_get_child_pid(const struct ao_source *s);
/**
 * Reap a child source's process now if it has exited, dispatching its
 * callback before returning (the callback may free @s). Returns 1 when it
 * was reaped, 0 when it is still running (or was reaped before), < 0 on
 * error (-EBUSY outside a callback of @s's reactor). For a process-wide
 * reaper that saw the pid exit through SIGCHLD.
 */
int ao_source_child_reap(struct ao_source *s);
/** Name the source in log messages. The string is copied. */
int ao_source_set_description(struct ao_source *s, const char *description);
void *ao_source_get_userdata(const struct ao_source *s);
void ao_source_set_userdata(struct ao_source *s, void *userdata);
struct ao_reactor *ao_source_get_reactor(const struct ao_source *s);

/**
 * Run one iteration: dispatch pending defers, wait up to @timeout_usec
 * (AO_USEC_INFINITY: no limit) for events, dispatch them and the post
 * sources. Returns 1 if anything was dispatched, 0 on timeout, < 0 on error.
 * Not re-entrant (-EBUSY from inside a callback).
 */
int ao_reactor_run_once(struct ao_reactor *r, uint64_t timeout_usec);

/** Iterate until ao_reactor_exit(); returns the code given to it, or < 0 on a loop error. */
int ao_reactor_run(struct ao_reactor *r);

/** Ask ao_reactor_run() to return @code after the current iteration. */
void ao_reactor_exit(struct ao_reactor *r, int code);
bool ao_reactor_exiting(const struct ao_reactor *r);

/** The loop's notion of now: CLOCK_MONOTONIC µs, refreshed after every wait. */
uint64_t ao_reactor_now(const struct ao_reactor *r);

/** Number of sources attached (floating ones included); for leak checks in tests. */
size_t ao_reactor_count_sources(const struct ao_reactor *r);

/** CLOCK_MONOTONIC now, in µs. */
uint64_t ao_clock_now_usec(void);
