/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/reactor.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/string-table.h"
#include "heap.h"
#include "internal.h"

#define SLOT_NONE UINT32_MAX

static const char *const backend_names[_AO_REACTOR_BACKEND_MAX] = {
    [AO_REACTOR_BACKEND_AUTO] = "auto",
    [AO_REACTOR_BACKEND_IO_URING] = "io_uring",
    [AO_REACTOR_BACKEND_EPOLL] = "epoll",
};

enum ao_reactor_backend ao_reactor_backend_from_string(const char *s)
{
        int i = ao_string_table_find_case(backend_names, AO_ARRAY_SIZE(backend_names), s);
        if (i >= 0)
                return i;
        if (s && (strcasecmp(s, "uring") == 0 || strcasecmp(s, "iouring") == 0))
                return AO_REACTOR_BACKEND_IO_URING;
        return _AO_REACTOR_BACKEND_INVALID;
}

AO_STRING_TABLE_TO_STRING(ao_reactor_backend, enum ao_reactor_backend, backend_names);

/* --- lists ----------------------------------------------------------------- */

#define LIST_PREPEND(head, node, field)              \
        do {                                         \
                (node)->field.prev = NULL;           \
                (node)->field.next = (head);         \
                if (head)                            \
                        (head)->field.prev = (node); \
                (head) = (node);                     \
        } while (0)

#define LIST_REMOVE(head, node, field)                                       \
        do {                                                                 \
                if ((node)->field.prev)                                      \
                        (node)->field.prev->field.next = (node)->field.next; \
                else                                                         \
                        (head) = (node)->field.next;                         \
                if ((node)->field.next)                                      \
                        (node)->field.next->field.prev = (node)->field.prev; \
                (node)->field.prev = (node)->field.next = NULL;              \
        } while (0)

static struct ao_source **pending_list(struct ao_reactor *r, struct ao_source *s)
{
        return s->type == SOURCE_DEFER ? &r->defers : &r->posts;
}

/* --- kernel registration slots --------------------------------------------- */

struct reactor_slot *reactor_slot_from_token(struct ao_reactor *r, uint64_t token)
{
        uint32_t index = (uint32_t) token;
        uint32_t generation = (uint32_t) (token >> 32);
        if (index >= r->n_slots)
                return NULL;
        struct reactor_slot *slot = &r->slots[index];
        if (!slot->source || slot->generation != generation)
                return NULL;
        return slot;
}

static uint32_t slot_acquire(struct ao_reactor *r, struct ao_source *s, int fd, uint32_t events)
{
        uint32_t index;
        if (r->free_slot != SLOT_NONE) {
                index = r->free_slot;
                r->free_slot = r->slots[index].next_free;
        } else {
                if (r->n_slots == r->slots_cap) {
                        r->slots_cap = r->slots_cap ? r->slots_cap * 2 : 64;
                        r->slots = ao_xreallocarray(r->slots, r->slots_cap, sizeof(*r->slots));
                }
                index = r->n_slots++;
                r->slots[index] = (struct reactor_slot){.generation = 1};
        }
        struct reactor_slot *slot = &r->slots[index];
        slot->source = s;
        slot->fd = fd;
        slot->events = events;
        slot->next_free = SLOT_NONE;
        return index;
}

static void slot_release(struct ao_reactor *r, uint32_t index)
{
        struct reactor_slot *slot = &r->slots[index];
        slot->source = NULL;
        slot->generation++; /* every token handed out so far is now stale */
        if (slot->generation == 0)
                slot->generation = 1;
        slot->next_free = r->free_slot;
        r->free_slot = index;
}

/* Register @fd with the backend for @s. */
static int source_watch(struct ao_source *s, int fd, uint32_t events)
{
        struct ao_reactor *r = s->reactor;
        uint32_t index = slot_acquire(r, s, fd, events);
        int k = r->ops->watch(r, fd, events, reactor_token(index, r->slots[index].generation));
        if (k < 0) {
                slot_release(r, index);
                return k;
        }
        s->slot = index;
        return 0;
}

static void source_unwatch(struct ao_source *s)
{
        if (s->slot == SLOT_NONE)
                return;
        struct ao_reactor *r = s->reactor;
        struct reactor_slot *slot = &r->slots[s->slot];
        int k = r->ops->unwatch(r, slot->fd, reactor_token(s->slot, slot->generation));
        if (k < 0)
                ao_log_errno(AO_LOG_DEBUG, k, "reactor: unwatching fd %d failed", slot->fd);
        slot_release(r, s->slot);
        s->slot = SLOT_NONE;
}

/* Change the events of a registration; the token changes too, so old events are dropped. */
static int source_rewatch(struct ao_source *s, uint32_t events)
{
        struct ao_reactor *r = s->reactor;
        struct reactor_slot *slot = &r->slots[s->slot];
        uint64_t old_token = reactor_token(s->slot, slot->generation);
        int fd = slot->fd;

        slot_release(r, s->slot);
        uint32_t index = slot_acquire(r, s, fd, events);
        int k = r->ops->modify(r, fd, events, old_token, reactor_token(index, r->slots[index].generation));
        if (k < 0) {
                slot_release(r, index);
                s->slot = SLOT_NONE;
                return k;
        }
        s->slot = index;
        return 0;
}

/* --- timers ---------------------------------------------------------------- */

/* Point the timerfd at the earliest deadline, touching the kernel only when it moved. */
static int timerfd_sync(struct ao_reactor *r)
{
        struct ao_source *top = reactor_heap_top(r);
        uint64_t want = top ? AO_MAX(top->time.usec, 1) : 0;
        if (want == r->timerfd_armed)
                return 0;

        /* A zero it_value disarms; deadlines are clamped to >= 1 µs above, so 0 only means "none". */
        struct itimerspec its = {
            .it_value = {.tv_sec = (time_t) (want / AO_USEC_PER_SEC),
                         .tv_nsec = (long) (want % AO_USEC_PER_SEC * AO_NSEC_PER_USEC)},
        };
        if (timerfd_settime(r->timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
                return ao_negative_errno();
        r->timerfd_armed = want;
        return 0;
}

static void time_disarm(struct ao_source *s)
{
        s->time.due = false;
        reactor_heap_remove(s->reactor, s);
}

static void time_arm(struct ao_source *s)
{
        struct ao_reactor *r = s->reactor;
        time_disarm(s);
        s->time.armed_iteration = r->iteration;
        reactor_heap_push(r, s);
}

/* --- signals --------------------------------------------------------------- */

static int signalfd_sync(struct ao_reactor *r)
{
        int fd = signalfd(r->signalfd, &r->signal_mask, SFD_NONBLOCK | SFD_CLOEXEC);
        return fd < 0 ? ao_negative_errno() : 0;
}

static bool signal_blocked_here(int sig)
{
        sigset_t current;
        if (pthread_sigmask(SIG_SETMASK, NULL, &current) != 0)
                return false;
        return sigismember(&current, sig) == 1;
}

/* --- source lifecycle ------------------------------------------------------ */

static struct ao_source *source_new(struct ao_reactor *r, enum source_type type, void *userdata)
{
        struct ao_source *s = ao_xcalloc(1, sizeof(*s));
        s->type = type;
        s->reactor = r;
        s->userdata = userdata;
        s->slot = SLOT_NONE;
        LIST_PREPEND(r->all_sources, s, all);
        r->n_sources++;
        return s;
}

/* Hand a new source to the caller, or mark it floating. */
static int source_publish(struct ao_source *s, struct ao_source **ret_source)
{
        if (ret_source)
                *ret_source = s;
        else
                s->floating = true;
        return 0;
}

/* Stop every kernel-facing activity of @s; after this no event can reach it. */
static void source_detach(struct ao_source *s)
{
        struct ao_reactor *r = s->reactor;
        switch (s->type) {
        case SOURCE_IO:
        case SOURCE_WAKEUP:
        case SOURCE_INTERNAL_TIMERFD:
        case SOURCE_INTERNAL_SIGNALFD:
                source_unwatch(s);
                break;
        case SOURCE_TIME:
                time_disarm(s);
                break;
        case SOURCE_SIGNAL:
                if (r->signal_sources[s->signal.sig] == s) {
                        r->signal_sources[s->signal.sig] = NULL;
                        (void) sigdelset(&r->signal_mask, s->signal.sig);
                        (void) signalfd_sync(r);
                }
                break;
        case SOURCE_CHILD:
                /* EPOLL_CTL_DEL before close: a pidfd copy held elsewhere would keep firing. */
                source_unwatch(s);
                if (s->child.own_pidfd)
                        s->child.pidfd = ao_safe_close(s->child.pidfd);
                break;
        case SOURCE_DEFER:
        case SOURCE_POST:
                if (s->enabled != AO_SOURCE_OFF)
                        LIST_REMOVE(*pending_list(r, s), s, pending);
                break;
        }
        if (s->type == SOURCE_WAKEUP)
                s->wakeup.eventfd = ao_safe_close(s->wakeup.eventfd);
}

static void source_release_memory(struct ao_source *s)
{
        free(s->description);
        free(s);
}

struct ao_source *ao_source_free_closing_fd(struct ao_source *s)
{
        if (!s || s->dead)
                return NULL;
        int fd = s->type == SOURCE_IO ? s->io.fd : -1;
        if (fd >= 0 && s->reactor->ops->close_unwatches && s->slot != SLOT_NONE) {
                /* The slot goes with the close: an event of this fd still queued is stale now. */
                slot_release(s->reactor, s->slot);
                s->slot = SLOT_NONE;
        }
        (void) ao_source_free(s);
        (void) ao_safe_close(fd);
        return NULL;
}

struct ao_source *ao_source_free(struct ao_source *s)
{
        if (!s || s->dead)
                return NULL;
        struct ao_reactor *r = s->reactor;
        source_detach(s);
        LIST_REMOVE(r->all_sources, s, all);
        r->n_sources--;
        s->dead = true;
        if (r->running) {
                /* A callback may still hold @s (it may be its own): release after the iteration. */
                s->next_garbage = r->garbage;
                r->garbage = s;
        } else {
                source_release_memory(s);
        }
        return NULL;
}

static void collect_garbage(struct ao_reactor *r)
{
        while (r->garbage) {
                struct ao_source *s = r->garbage;
                r->garbage = s->next_garbage;
                source_release_memory(s);
        }
}

/* --- creating sources ------------------------------------------------------ */

int ao_reactor_add_io(struct ao_reactor *r, struct ao_source **ret_source, int fd, uint32_t events,
                      ao_io_handler *cb, void *userdata)
{
        if (fd < 0 || !cb)
                return -EINVAL;
        struct ao_source *s = source_new(r, SOURCE_IO, userdata);
        s->io.fd = fd;
        s->io.events = events;
        s->io.cb = cb;
        int k = source_watch(s, fd, events);
        if (k < 0) {
                (void) ao_source_free(s);
                return k;
        }
        s->enabled = AO_SOURCE_ON;
        return source_publish(s, ret_source);
}

int ao_reactor_add_time(struct ao_reactor *r, struct ao_source **ret_source, uint64_t usec,
                        ao_time_handler *cb, void *userdata)
{
        if (!cb)
                return -EINVAL;
        struct ao_source *s = source_new(r, SOURCE_TIME, userdata);
        s->time.cb = cb;
        s->time.usec = usec;
        s->time.heap_index = SIZE_MAX;
        s->enabled = AO_SOURCE_ONESHOT;
        time_arm(s);
        return source_publish(s, ret_source);
}

int ao_reactor_add_time_relative(struct ao_reactor *r, struct ao_source **ret_source, uint64_t usec,
                                 ao_time_handler *cb, void *userdata)
{
        uint64_t now = ao_clock_now_usec();
        uint64_t at = usec > UINT64_MAX - now ? UINT64_MAX : now + usec;
        return ao_reactor_add_time(r, ret_source, at, cb, userdata);
}

int ao_reactor_add_signal(struct ao_reactor *r, struct ao_source **ret_source, int sig, ao_signal_handler *cb,
                          void *userdata)
{
        if (sig <= 0 || sig >= _NSIG || !cb)
                return -EINVAL;
        if (r->signal_sources[sig])
                return -EEXIST;
        if (!signal_blocked_here(sig))
                return -EBUSY;

        struct ao_source *s = source_new(r, SOURCE_SIGNAL, userdata);
        s->signal.sig = sig;
        s->signal.cb = cb;
        s->enabled = AO_SOURCE_ON;
        r->signal_sources[sig] = s;
        (void) sigaddset(&r->signal_mask, sig);
        int k = signalfd_sync(r);
        if (k < 0) {
                (void) ao_source_free(s);
                return k;
        }
        return source_publish(s, ret_source);
}

static int pidfd_open_raw(pid_t pid)
{
        /* COMPAT(glibc 2.36): no pidfd_open() wrapper yet. */
        long fd = syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? ao_negative_errno() : (int) fd;
}

int ao_reactor_add_child(struct ao_reactor *r, struct ao_source **ret_source, pid_t pid, int pidfd,
                         unsigned flags, ao_child_handler *cb, void *userdata)
{
        if (pid <= 0 || !cb)
                return -EINVAL;
        bool own = flags & AO_CHILD_OWN_PIDFD;
        if (flags & AO_CHILD_UNWATCHED) {
                if (pidfd >= 0)
                        return -EINVAL;
                struct ao_source *s = source_new(r, SOURCE_CHILD, userdata);
                s->child.pid = pid;
                s->child.pidfd = -1;
                s->child.cb = cb;
                s->enabled = AO_SOURCE_ON;
                return source_publish(s, ret_source);
        }
        if (pidfd < 0) {
                pidfd = pidfd_open_raw(pid);
                if (pidfd < 0)
                        return pidfd;
                own = true;
        }

        struct ao_source *s = source_new(r, SOURCE_CHILD, userdata);
        s->child.pid = pid;
        s->child.pidfd = pidfd;
        s->child.own_pidfd = own;
        s->child.cb = cb;
        int k = source_watch(s, pidfd, EPOLLIN);
        if (k < 0) {
                (void) ao_source_free(s);
                return k;
        }
        s->enabled = AO_SOURCE_ON;
        return source_publish(s, ret_source);
}

static int add_plain(struct ao_reactor *r, struct ao_source **ret_source, enum source_type type,
                     enum ao_source_enable enabled, ao_plain_handler *cb, void *userdata)
{
        if (!cb)
                return -EINVAL;
        struct ao_source *s = source_new(r, type, userdata);
        s->plain.cb = cb;
        (void) ao_source_set_enabled(s, enabled);
        return source_publish(s, ret_source);
}

int ao_reactor_add_defer(struct ao_reactor *r, struct ao_source **ret_source, ao_plain_handler *cb,
                         void *userdata)
{
        return add_plain(r, ret_source, SOURCE_DEFER, AO_SOURCE_ONESHOT, cb, userdata);
}

int ao_reactor_add_post(struct ao_reactor *r, struct ao_source **ret_source, ao_plain_handler *cb,
                        void *userdata)
{
        return add_plain(r, ret_source, SOURCE_POST, AO_SOURCE_ON, cb, userdata);
}

int ao_reactor_add_wakeup(struct ao_reactor *r, struct ao_source **ret_source, ao_plain_handler *cb,
                          void *userdata)
{
        if (!cb)
                return -EINVAL;
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return ao_negative_errno();
        struct ao_source *s = source_new(r, SOURCE_WAKEUP, userdata);
        s->wakeup.eventfd = efd;
        s->wakeup.cb = cb;
        /* Edge-triggered: the handler drains the counter, so one wake-up is one completion. */
        int k = source_watch(s, efd, EPOLLIN | EPOLLET);
        if (k < 0) {
                (void) ao_source_free(s);
                return k;
        }
        s->enabled = AO_SOURCE_ON;
        return source_publish(s, ret_source);
}

void ao_source_wakeup(struct ao_source *s)
{
        uint64_t one = 1;
        /* EAGAIN means the counter is saturated: a wake-up is pending anyway. */
        (void) !write(s->wakeup.eventfd, &one, sizeof(one));
}

/* --- source properties ----------------------------------------------------- */

static bool has_kernel_watch(const struct ao_source *s)
{
        return s->type == SOURCE_IO || s->type == SOURCE_WAKEUP ||
               (s->type == SOURCE_CHILD && !s->child.exited && s->child.pidfd >= 0);
}

static int watch_fd_of(const struct ao_source *s, uint32_t *ret_events)
{
        switch (s->type) {
        case SOURCE_IO:
                *ret_events = s->io.events;
                return s->io.fd;
        case SOURCE_WAKEUP:
                *ret_events = EPOLLIN | EPOLLET;
                return s->wakeup.eventfd;
        default:
                *ret_events = EPOLLIN;
                return s->child.pidfd;
        }
}

int ao_source_set_enabled(struct ao_source *s, enum ao_source_enable enabled)
{
        if (s->dead)
                return -ESTALE;
        if (enabled != AO_SOURCE_OFF && enabled != AO_SOURCE_ON && enabled != AO_SOURCE_ONESHOT)
                return -EINVAL;
        enum ao_source_enable old = s->enabled;
        struct ao_reactor *r = s->reactor;
        if ((old == AO_SOURCE_OFF) == (enabled == AO_SOURCE_OFF)) {
                s->enabled = enabled;
                return 0;
        }

        switch (s->type) {
        case SOURCE_TIME:
                if (enabled == AO_SOURCE_OFF)
                        time_disarm(s);
                else
                        time_arm(s);
                break;
        case SOURCE_DEFER:
        case SOURCE_POST:
                if (enabled == AO_SOURCE_OFF)
                        LIST_REMOVE(*pending_list(r, s), s, pending);
                else
                        LIST_PREPEND(*pending_list(r, s), s, pending);
                break;
        case SOURCE_SIGNAL:
                /* The signal stays in the signalfd mask; a disabled source just ignores it. */
                break;
        default:
                if (!has_kernel_watch(s))
                        return -ESRCH; /* an exited child cannot be watched again */
                if (enabled == AO_SOURCE_OFF) {
                        source_unwatch(s);
                } else {
                        uint32_t events;
                        int fd = watch_fd_of(s, &events);
                        int k = source_watch(s, fd, events);
                        if (k < 0)
                                return k;
                }
                break;
        }
        s->enabled = enabled;
        return 0;
}

enum ao_source_enable ao_source_get_enabled(const struct ao_source *s)
{
        return s->enabled;
}

int ao_source_set_io_events(struct ao_source *s, uint32_t events)
{
        if (s->type != SOURCE_IO || s->dead)
                return -EINVAL;
        if (events == s->io.events)
                return 0;
        s->io.events = events;
        if (s->slot == SLOT_NONE)
                return 0; /* disabled: takes effect when enabled */
        return source_rewatch(s, events);
}

int ao_source_get_io_fd(const struct ao_source *s)
{
        return s->type == SOURCE_IO ? s->io.fd : -EINVAL;
}

int ao_source_set_time(struct ao_source *s, uint64_t usec)
{
        if (s->type != SOURCE_TIME || s->dead)
                return -EINVAL;
        s->time.usec = usec;
        s->enabled = AO_SOURCE_ONESHOT;
        time_arm(s);
        return 0;
}

int ao_source_set_time_relative(struct ao_source *s, uint64_t usec)
{
        uint64_t now = ao_clock_now_usec();
        return ao_source_set_time(s, usec > UINT64_MAX - now ? UINT64_MAX : now + usec);
}

uint64_t ao_source_get_time(const struct ao_source *s)
{
        return s->type == SOURCE_TIME ? s->time.usec : 0;
}

pid_t ao_source_get_child_pid(const struct ao_source *s)
{
        return s->type == SOURCE_CHILD ? s->child.pid : -EINVAL;
}

int ao_source_set_description(struct ao_source *s, const char *description)
{
        free(s->description);
        s->description = description ? ao_xstrdup(description) : NULL;
        return 0;
}

void *ao_source_get_userdata(const struct ao_source *s)
{
        return s->userdata;
}

void ao_source_set_userdata(struct ao_source *s, void *userdata)
{
        s->userdata = userdata;
}

struct ao_reactor *ao_source_get_reactor(const struct ao_source *s)
{
        return s->reactor;
}

/* --- reactor --------------------------------------------------------------- */

static int setup_internal_fds(struct ao_reactor *r)
{
        r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (r->timerfd < 0)
                return ao_negative_errno();
        (void) sigemptyset(&r->signal_mask);
        r->signalfd = signalfd(-1, &r->signal_mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (r->signalfd < 0)
                return ao_negative_errno();

        /* Both are drained completely on every event, so edge-triggered is enough. */
        r->timerfd_source = source_new(r, SOURCE_INTERNAL_TIMERFD, NULL);
        int k = source_watch(r->timerfd_source, r->timerfd, EPOLLIN | EPOLLET);
        if (k < 0)
                return k;
        r->signalfd_source = source_new(r, SOURCE_INTERNAL_SIGNALFD, NULL);
        return source_watch(r->signalfd_source, r->signalfd, EPOLLIN | EPOLLET);
}

static int init_backend(struct ao_reactor *r, enum ao_reactor_backend backend, struct ao_error *reterr)
{
#if AO_HAVE_IO_URING
        if (backend != AO_REACTOR_BACKEND_EPOLL) {
                struct ao_error uring_error = {0};
                r->ops = &reactor_uring_ops;
                r->backend = AO_REACTOR_BACKEND_IO_URING;
                int k = r->ops->init(r, &uring_error);
                if (k >= 0)
                        return 0;
                if (backend == AO_REACTOR_BACKEND_IO_URING)
                        return ao_error_set(reterr, k, "%s", uring_error.msg);
                r->fallback_reason = ao_xstrdup(uring_error.msg);
        }
#else
        if (backend == AO_REACTOR_BACKEND_IO_URING)
                return ao_error_set(reterr, -EOPNOTSUPP, "reactor: this build has no io_uring backend");
        if (backend == AO_REACTOR_BACKEND_AUTO)
                r->fallback_reason = ao_xstrdup("this build has no io_uring backend");
#endif
        r->ops = &reactor_epoll_ops;
        r->backend = AO_REACTOR_BACKEND_EPOLL;
        return r->ops->init(r, reterr);
}

int ao_reactor_new(enum ao_reactor_backend backend, struct ao_reactor **ret, struct ao_error *reterr)
{
        if (backend < 0 || backend >= _AO_REACTOR_BACKEND_MAX)
                return ao_error_set(reterr, -EINVAL, "reactor: unknown backend %d", (int) backend);

        struct ao_reactor *r = ao_xcalloc(1, sizeof(*r));
        r->free_slot = SLOT_NONE;
        r->timerfd = -EBADF;
        r->signalfd = -EBADF;
        int k = init_backend(r, backend, reterr);
        if (k < 0) {
                r->ops = NULL;
                (void) ao_reactor_free(r);
                return k;
        }
        k = setup_internal_fds(r);
        if (k < 0) {
                (void) ao_reactor_free(r);
                return ao_error_set(reterr, k, "reactor: cannot create timerfd/signalfd: %s", strerror(-k));
        }
        r->now = ao_clock_now_usec();
        *ret = r;
        return 0;
}

struct ao_reactor *ao_reactor_free(struct ao_reactor *r)
{
        if (!r)
                return NULL;
        r->running = false; /* release memory right away from here on (never called from a callback) */
        while (r->all_sources)
                (void) ao_source_free(r->all_sources);
        collect_garbage(r);
        if (r->ops)
                r->ops->done(r);
        (void) ao_safe_close(r->timerfd);
        (void) ao_safe_close(r->signalfd);
        free(r->slots);
        free(r->heap);
        free(r->scratch);
        free(r->due);
        free(r->fallback_reason);
        free(r);
        return NULL;
}

enum ao_reactor_backend ao_reactor_get_backend(const struct ao_reactor *r)
{
        return r->backend;
}

const char *ao_reactor_backend_name(const struct ao_reactor *r)
{
        return r->ops->name;
}

const char *ao_reactor_fallback_reason(const struct ao_reactor *r)
{
        return r->fallback_reason;
}

uint64_t ao_reactor_now(const struct ao_reactor *r)
{
        return r->now;
}

size_t ao_reactor_count_sources(const struct ao_reactor *r)
{
        /* The timerfd and signalfd sources are the reactor's own, not the caller's. */
        return r->n_sources - 2;
}

void ao_reactor_exit(struct ao_reactor *r, int code)
{
        r->exit_requested = true;
        r->exit_code = code;
}

bool ao_reactor_exiting(const struct ao_reactor *r)
{
        return r->exit_requested;
}

/* --- dispatch -------------------------------------------------------------- */

static const char *source_type_name(const struct ao_source *s)
{
        static const char *const names[] = {
            [SOURCE_IO] = "io",
            [SOURCE_TIME] = "time",
            [SOURCE_SIGNAL] = "signal",
            [SOURCE_CHILD] = "child",
            [SOURCE_DEFER] = "defer",
            [SOURCE_POST] = "post",
            [SOURCE_WAKEUP] = "wakeup",
            [SOURCE_INTERNAL_TIMERFD] = "timerfd",
            [SOURCE_INTERNAL_SIGNALFD] = "signalfd",
        };
        return names[s->type];
}

/* After a callback: honour ONESHOT, handle failure, and free floating one-shots. */
static void after_callback(struct ao_source *s, int result)
{
        if (s->dead)
                return;
        if (result < 0) {
                ao_log_errno(AO_LOG_ERROR, result, "reactor: %s source '%s' failed, disabling it",
                             source_type_name(s), s->description ? s->description : "unnamed");
                (void) ao_source_set_enabled(s, AO_SOURCE_OFF);
        }
        if (s->floating && s->enabled == AO_SOURCE_OFF)
                (void) ao_source_free(s);
}

/* ONESHOT sources turn OFF before their callback runs, so the callback may re-enable them. */
static void consume_oneshot(struct ao_source *s)
{
        if (s->enabled == AO_SOURCE_ONESHOT)
                (void) ao_source_set_enabled(s, AO_SOURCE_OFF);
}

static void dispatch_io(struct ao_source *s, uint32_t revents)
{
        if (s->enabled == AO_SOURCE_OFF)
                return;
        consume_oneshot(s);
        after_callback(s, s->io.cb(s, s->io.fd, revents, s->userdata));
}

static void dispatch_wakeup(struct ao_source *s)
{
        /* io_uring's multishot poll posts one completion per write; only the first finds a count. */
        uint64_t counter;
        bool woken = false;
        while (read(s->wakeup.eventfd, &counter, sizeof(counter)) > 0)
                woken = true;
        if (!woken || s->enabled == AO_SOURCE_OFF)
                return;
        consume_oneshot(s);
        after_callback(s, s->wakeup.cb(s, s->userdata));
}

/* @idtype P_PIDFD or P_PID. */
static int waitid_rusage(int idtype, int id, siginfo_t *si, struct rusage *ru)
{
        /* COMPAT(glibc): waitid() has no rusage argument; the system call does. */
        long k = syscall(SYS_waitid, idtype, id, si, WEXITED | WNOHANG, ru);
        return k < 0 ? ao_negative_errno() : 0;
}

int ao_child_reap(pid_t pid, siginfo_t *si, struct rusage *ru)
{
        *si = (siginfo_t){0};
        int k = waitid_rusage(P_PID, pid, si, ru);
        return k < 0 ? k : si->si_pid != 0;
}

/* Reap the child if it has exited and dispatch; returns 1 when reaped, 0 when still running. */
static int dispatch_child(struct ao_source *s)
{
        siginfo_t si = {0};
        struct rusage ru = {0};
        int k = s->child.pidfd >= 0 ? waitid_rusage(P_PIDFD, s->child.pidfd, &si, &ru)
                                    : waitid_rusage(P_PID, s->child.pid, &si, &ru);
        if (k == 0 && si.si_pid == 0)
                return 0; /* spurious readiness: not exited yet */
        if (k < 0 && k != -ECHILD)
                return ao_log_errno(AO_LOG_WARN, k, "reactor: waitid on pid %d failed", (int) s->child.pid);
        if (k == -ECHILD) {
                /* Someone else reaped it; say so through si_signo == 0. */
                si = (siginfo_t){0};
                si.si_pid = s->child.pid;
        }

        /* Gone for good: drop the watch now, the pidfd would stay readable forever. */
        source_unwatch(s);
        s->child.exited = true;
        s->enabled = AO_SOURCE_OFF;
        after_callback(s, s->child.cb(s, &si, &ru, s->userdata));
        return 1;
}

int ao_source_child_reap(struct ao_source *s)
{
        if (s->type != SOURCE_CHILD || s->dead)
                return -EINVAL;
        /* Only inside a dispatch: frees are deferred there, so touching @s after its callback is safe. */
        if (!s->reactor->running)
                return -EBUSY;
        if (s->child.exited)
                return 0;
        return dispatch_child(s);
}

/*
 * One signal per read: a callback may free its source or another one, and a
 * signal read in a batch for a source freed meanwhile would be lost, where
 * one left in the kernel stays pending for whoever watches it next.
 */
static void dispatch_signals(struct ao_reactor *r)
{
        struct signalfd_siginfo si;
        while (read(r->signalfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                int sig = (int) si.ssi_signo;
                struct ao_source *s = sig > 0 && sig < _NSIG ? r->signal_sources[sig] : NULL;
                if (!s || s->enabled == AO_SOURCE_OFF)
                        continue;
                consume_oneshot(s);
                after_callback(s, s->signal.cb(s, &si, s->userdata));
        }
}

/*
 * Pop every timer that is due, then run them earliest first. Timers armed by
 * a callback during this pass stay in the heap for the next iteration, so a
 * timer that re-arms itself at "now" cannot starve the loop.
 */
static size_t pop_due_timers(struct ao_reactor *r)
{
        size_t n = 0;
        for (;;) {
                struct ao_source *s = reactor_heap_top(r);
                if (!s || s->time.usec > r->now || s->time.armed_iteration == r->iteration)
                        break;
                time_disarm(s);
                s->time.due = true;
                if (n == r->due_cap) {
                        r->due_cap = r->due_cap ? r->due_cap * 2 : 64;
                        r->due = ao_xreallocarray(r->due, r->due_cap, sizeof(*r->due));
                }
                r->due[n++] = s;
        }
        return n;
}

static void dispatch_timers(struct ao_reactor *r)
{
        uint64_t expirations;
        while (read(r->timerfd, &expirations, sizeof(expirations)) > 0)
                ;
        r->timerfd_armed = 0; /* it fired: the kernel timer is disarmed now */

        size_t n = pop_due_timers(r);
        for (size_t i = 0; i < n; i++) {
                struct ao_source *s = r->due[i];
                if (s->dead || !s->time.due)
                        continue; /* freed, disabled or re-armed by an earlier callback */
                s->time.due = false;
                s->enabled = AO_SOURCE_OFF;
                after_callback(s, s->time.cb(s, r->now, s->userdata));
        }
}

/* Snapshot a defer/post list: callbacks may add or remove entries while we walk it. */
static size_t snapshot_list(struct ao_reactor *r, struct ao_source *head)
{
        size_t n = 0;
        for (struct ao_source *s = head; s; s = s->pending.next) {
                if (n == r->scratch_cap) {
                        r->scratch_cap = r->scratch_cap ? r->scratch_cap * 2 : 16;
                        r->scratch = ao_xreallocarray(r->scratch, r->scratch_cap, sizeof(*r->scratch));
                }
                r->scratch[n++] = s;
        }
        return n;
}

static int dispatch_plain_list(struct ao_reactor *r, struct ao_source *head)
{
        size_t n = snapshot_list(r, head);
        /* The list is newest-first; run oldest-first so order matches creation. */
        for (size_t i = n; i-- > 0;) {
                struct ao_source *s = r->scratch[i];
                if (s->dead || s->enabled == AO_SOURCE_OFF)
                        continue;
                consume_oneshot(s);
                after_callback(s, s->plain.cb(s, s->userdata));
        }
        return (int) n;
}

/* Returns false for a stale event, one whose registration was dropped after the kernel queued it. */
static bool dispatch_event(struct ao_reactor *r, const struct backend_event *ev)
{
        struct reactor_slot *slot = reactor_slot_from_token(r, ev->token);
        if (!slot)
                return false;
        struct ao_source *s = slot->source;
        switch (s->type) {
        case SOURCE_IO:
                dispatch_io(s, ev->revents);
                break;
        case SOURCE_WAKEUP:
                dispatch_wakeup(s);
                break;
        case SOURCE_CHILD:
                (void) dispatch_child(s);
                break;
        case SOURCE_INTERNAL_TIMERFD:
                dispatch_timers(r);
                break;
        case SOURCE_INTERNAL_SIGNALFD:
                dispatch_signals(r);
                break;
        default:
                break;
        }
        return true;
}

/* Timers due now are dispatched even when the timerfd has not reported yet. */
static bool timers_due(const struct ao_reactor *r)
{
        struct ao_source *top = reactor_heap_top(r);
        return top && top->time.usec <= r->now && top->time.armed_iteration != r->iteration;
}

int ao_reactor_run_once(struct ao_reactor *r, uint64_t timeout_usec)
{
        if (r->running)
                return -EBUSY;
        r->running = true;
        r->iteration++;
        r->now = ao_clock_now_usec();

        int dispatched = 0;
        if (r->defers)
                dispatched += dispatch_plain_list(r, r->defers);

        int k = timerfd_sync(r);
        if (k < 0) {
                r->running = false;
                return ao_log_errno(AO_LOG_ERROR, k, "reactor: arming the timerfd failed");
        }

        /*
         * Block unless something is due at once: a defer armed again, an exit, or post sources that
         * must run after the defers' work (they run after the wait, and should not wait for it).
         */
        uint64_t timeout = (r->defers || r->exit_requested || (dispatched && r->posts)) ? 0 : timeout_usec;
        int n = r->ops->wait(r, timeout, r->events, REACTOR_EVENTS_MAX);
        r->now = ao_clock_now_usec();
        if (n < 0 && n != -EINTR) {
                r->running = false;
                collect_garbage(r);
                return n;
        }

        bool timers_seen = false;
        for (int i = 0; i < n; i++) {
                struct reactor_slot *slot = reactor_slot_from_token(r, r->events[i].token);
                if (slot && slot->source->type == SOURCE_INTERNAL_TIMERFD)
                        timers_seen = true;
                if (dispatch_event(r, &r->events[i]))
                        dispatched++;
        }
        if (!timers_seen && timers_due(r)) {
                dispatch_timers(r);
                dispatched++;
        }

        if (dispatched && r->posts)
                (void) dispatch_plain_list(r, r->posts);

        r->running = false;
        collect_garbage(r);
        return dispatched > 0 ? 1 : 0;
}

int ao_reactor_run(struct ao_reactor *r)
{
        while (!r->exit_requested) {
                int k = ao_reactor_run_once(r, AO_USEC_INFINITY);
                if (k < 0)
                        return k;
        }
        return r->exit_code;
}
