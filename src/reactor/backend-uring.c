/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_uring backend: readiness through IORING_OP_POLL_ADD.
 *
 * Level-triggered registrations use one-shot polls that are re-armed on the
 * next wait, after their callbacks ran; the kernel checks readiness again
 * when a poll is armed, so data left unread produces another completion,
 * exactly as level-triggered epoll would. Re-arming after the callbacks
 * means a source freed by its callback (a pipe at EOF, a reaped child) is
 * not armed again only to be removed. Edge-triggered registrations use
 * multishot polls (kernel 5.13+), which post a completion per wake-up and
 * stay armed. A registration's token is the SQE's user_data.
 *
 * Arms go to the kernel with the next wait's io_uring_enter. Removals are
 * submitted at once, so the kernel drops its file reference before the
 * caller closes the fd (a peer must see a closed socket as closed), and are
 * skipped for a poll that completed and was not armed again.
 */
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>

#include <liburing.h>

#include "ao/alloc.h"
#include "internal.h"

#define RING_ENTRIES 256
/* user_data of requests whose completions carry nothing (poll removals). Generation 0 is never handed out. */
#define TOKEN_IGNORE 0

struct uring_backend {
        struct io_uring ring;
        bool multishot;  /* IORING_POLL_ADD_MULTI works on this kernel */
        uint64_t *rearm; /* tokens of one-shot polls that completed, armed again on the next wait */
        size_t n_rearm, rearm_cap;
};

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
        struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
        if (sqe)
                return sqe;
        /* Submission queue full: hand what is queued to the kernel and try again. */
        (void) io_uring_submit(ring);
        return io_uring_get_sqe(ring);
}

/*
 * Does multishot poll work here? Arm one on an eventfd that is already
 * readable and check that the completion says "more to come". Done on a
 * throw-away ring so the real one starts clean.
 */
static bool probe_multishot(void)
{
        struct io_uring ring;
        if (io_uring_queue_init(4, &ring, 0) < 0)
                return false;
        bool ok = false;
        int efd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
        struct io_uring_sqe *sqe = efd >= 0 ? io_uring_get_sqe(&ring) : NULL;
        if (sqe) {
                io_uring_prep_poll_multishot(sqe, efd, POLLIN);
                io_uring_sqe_set_data64(sqe, 1);
                struct io_uring_cqe *cqe;
                if (io_uring_submit_and_wait(&ring, 1) >= 0 && io_uring_peek_cqe(&ring, &cqe) == 0)
                        ok = cqe->res > 0 && (cqe->res & POLLIN) && (cqe->flags & IORING_CQE_F_MORE);
        }
        io_uring_queue_exit(&ring);
        (void) ao_safe_close(efd);
        return ok;
}

static int check_kernel_features(struct io_uring *ring, unsigned features, struct ao_error *reterr)
{
        /* NODROP: completions are never lost on overflow. EXT_ARG: timed waits without a timeout SQE. */
        if (!(features & IORING_FEAT_NODROP))
                return ao_error_set(reterr, -EOPNOTSUPP, "io_uring lacks IORING_FEAT_NODROP (kernel < 5.5)");
        if (!(features & IORING_FEAT_EXT_ARG))
                return ao_error_set(reterr, -EOPNOTSUPP,
                                    "io_uring lacks IORING_FEAT_EXT_ARG (kernel < 5.11)");

        struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
        if (!probe)
                return ao_error_set(reterr, -EOPNOTSUPP, "io_uring opcode probe is not supported");
        bool ok = io_uring_opcode_supported(probe, IORING_OP_POLL_ADD) &&
                  io_uring_opcode_supported(probe, IORING_OP_POLL_REMOVE);
        io_uring_free_probe(probe);
        if (!ok)
                return ao_error_set(reterr, -EOPNOTSUPP, "io_uring lacks POLL_ADD/POLL_REMOVE");
        return 0;
}

static int uring_init(struct ao_reactor *r, struct ao_error *reterr)
{
        struct uring_backend *b = ao_xcalloc(1, sizeof(*b));
        struct io_uring_params params = {0};
        int k = io_uring_queue_init_params(RING_ENTRIES, &b->ring, &params);
        if (k < 0) {
                free(b);
                /* EPERM/ENOSYS: seccomp profiles of container runtimes and io_uring_disabled=2. */
                return ao_error_set(reterr, k, "io_uring_setup: %s", strerror(-k));
        }
        k = check_kernel_features(&b->ring, params.features, reterr);
        if (k < 0) {
                io_uring_queue_exit(&b->ring);
                free(b);
                return k;
        }
        b->multishot = probe_multishot();
        r->backend_data = b;
        return 0;
}

static void uring_done(struct ao_reactor *r)
{
        struct uring_backend *b = r->backend_data;
        if (!b)
                return;
        io_uring_queue_exit(&b->ring);
        free(b->rearm);
        free(b);
        r->backend_data = NULL;
}

static int arm_poll(struct uring_backend *b, int fd, uint32_t events, uint64_t token)
{
        struct io_uring_sqe *sqe = get_sqe(&b->ring);
        if (!sqe)
                return -EBUSY;
        unsigned mask = events & ~(uint32_t) EPOLLET;
        if ((events & EPOLLET) && b->multishot)
                io_uring_prep_poll_multishot(sqe, fd, mask);
        else
                io_uring_prep_poll_add(sqe, fd, mask);
        io_uring_sqe_set_data64(sqe, token);
        return 0;
}

static int queue_removal(struct uring_backend *b, uint64_t token)
{
        struct io_uring_sqe *sqe = get_sqe(&b->ring);
        if (!sqe)
                return -EBUSY;
        io_uring_prep_poll_remove(sqe, token);
        io_uring_sqe_set_data64(sqe, TOKEN_IGNORE);
        return 0;
}

/* A poll that completed and waits for its re-arm is not in the kernel: forget it, nothing to remove. */
static bool take_pending_rearm(struct uring_backend *b, uint64_t token)
{
        for (size_t i = 0; i < b->n_rearm; i++)
                if (b->rearm[i] == token) {
                        b->rearm[i] = b->rearm[--b->n_rearm];
                        return true;
                }
        return false;
}

static int uring_watch(struct ao_reactor *r, int fd, uint32_t events, uint64_t token)
{
        return arm_poll(r->backend_data, fd, events, token);
}

static int uring_unwatch(struct ao_reactor *r, int fd, uint64_t token)
{
        struct uring_backend *b = r->backend_data;
        if (take_pending_rearm(b, token))
                return 0;
        int k = queue_removal(b, token);
        if (k < 0)
                return k;
        /* At once: the kernel holds the file until then, and a closed socket must look closed. */
        k = io_uring_submit(&b->ring);
        return k < 0 ? k : 0;
}

static int uring_modify(struct ao_reactor *r, int fd, uint32_t events, uint64_t old_token, uint64_t new_token)
{
        struct uring_backend *b = r->backend_data;
        if (!take_pending_rearm(b, old_token)) {
                int k = queue_removal(b, old_token);
                if (k < 0)
                        return k;
        }
        return arm_poll(b, fd, events, new_token);
}

/* A poll completed for good (one-shot, or a multishot the kernel ended): arm it again next wait. */
static void defer_rearm(struct uring_backend *b, uint64_t token)
{
        if (b->n_rearm == b->rearm_cap) {
                b->rearm_cap = b->rearm_cap ? b->rearm_cap * 2 : 64;
                b->rearm = ao_xreallocarray(b->rearm, b->rearm_cap, sizeof(*b->rearm));
        }
        b->rearm[b->n_rearm++] = token;
}

/* Arm the completed polls whose registration survived its callbacks (a changed one has a new token). */
static void rearm_live(struct ao_reactor *r, struct uring_backend *b)
{
        for (size_t i = 0; i < b->n_rearm; i++) {
                struct reactor_slot *slot = reactor_slot_from_token(r, b->rearm[i]);
                if (slot)
                        (void) arm_poll(b, slot->fd, slot->events, b->rearm[i]);
        }
        b->n_rearm = 0;
}

static int uring_wait(struct ao_reactor *r, uint64_t timeout_usec, struct backend_event *events, size_t max)
{
        struct uring_backend *b = r->backend_data;
        struct __kernel_timespec ts = {.tv_sec = (long long) (timeout_usec / AO_USEC_PER_SEC),
                                       .tv_nsec =
                                           (long long) (timeout_usec % AO_USEC_PER_SEC * AO_NSEC_PER_USEC)};
        struct io_uring_cqe *cqe;
        rearm_live(r, b);
        int k = io_uring_submit_and_wait_timeout(&b->ring, &cqe, 1,
                                                 timeout_usec == AO_USEC_INFINITY ? NULL : &ts, NULL);
        if (k == -ETIME)
                return 0;
        if (k < 0 && k != -EINTR)
                return k;

        size_t n = 0;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&b->ring, head, cqe)
        {
                if (n == max)
                        break;
                seen++;
                uint64_t token = io_uring_cqe_get_data64(cqe);
                if (token == TOKEN_IGNORE)
                        continue;
                /* Re-arm after a result, not after a failure: a poll on a closed fd would spin. */
                if (!(cqe->flags & IORING_CQE_F_MORE) && (cqe->res >= 0 || cqe->res == -ECANCELED))
                        defer_rearm(b, token);
                if (cqe->res == -ECANCELED)
                        continue;
                /* A failed poll (EBADF: fd closed under us) is reported as an error condition. */
                uint32_t revents = cqe->res < 0 ? (uint32_t) (EPOLLERR | EPOLLHUP) : (uint32_t) cqe->res;
                events[n++] = (struct backend_event){.token = token, .revents = revents};
        }
        io_uring_cq_advance(&b->ring, seen);
        return (int) n;
}

const struct backend_ops reactor_uring_ops = {
    .name = "io_uring",
    .init = uring_init,
    .done = uring_done,
    .watch = uring_watch,
    .modify = uring_modify,
    .unwatch = uring_unwatch,
    .wait = uring_wait,
};
