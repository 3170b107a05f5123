/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandbox violations. A sandboxed child installs its seccomp filter with a
 * user-notification listener and, before exec, sends that listener to the
 * operator over the supervisor's socket, tagged with its run id (or a
 * spawner's serial, for the one filter all that spawner's children share).
 * The owner decides whose it is and watches it; each syscall the filter
 * denies then waits here for its answer. The owner deals with the caller
 * (logs it, kills its group) and the call is refused with EPERM; a call
 * whose caller is not known yet the owner may keep and answer later.
 */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ao/fdpass.h"
#include "ao/reactor.h"
#include "internal.h"

/*
 * The kernel's notification structs may be larger than our headers say (it
 * reports their sizes): receive into buffers with room to spare, and refuse
 * to supervise on a kernel whose structs outgrow even that.
 */
#define NOTIF_BUFFER_SIZE 512

union notif_request {
        struct seccomp_notif req;
        char bytes[NOTIF_BUFFER_SIZE];
};

union notif_response {
        struct seccomp_notif_resp resp;
        char bytes[NOTIF_BUFFER_SIZE];
};

/* Receive one notification; false when there is none (the caller died before we looked). */
static bool receive(int listener, union notif_request *n)
{
        memset(n, 0, sizeof(*n));
        return ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n->req) == 0;
}

static int answer(int listener, uint64_t id, int error)
{
        union notif_response buffer;
        memset(&buffer, 0, sizeof(buffer));
        struct seccomp_notif_resp *resp = &buffer.resp;
        resp->id = id;
        resp->error = -error;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
                return ao_negative_errno(); /* ENOENT: the caller died meanwhile */
        return 0;
}

void proc_notify_answer(struct notify_listener *l, uint64_t id)
{
        (void) answer(l->fd, id, EPERM);
}

static int on_notification(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct notify_listener *l = userdata;
        if (!(revents & AO_IO_IN)) {
                /* HUP: every process using the filter is gone. */
                if (l->ops->on_hangup)
                        l->ops->on_hangup(l->owner);
                return 0;
        }
        union notif_request n;
        if (!receive(fd, &n))
                return 0;
        const struct denied_call call = {.id = n.req.id, .pid = (pid_t) n.req.pid, .nr = n.req.data.nr};
        /* The owner goes first: a kill must come before the answer lets the caller run on. */
        if (l->ops->on_denied(l->owner, &call))
                (void) answer(fd, call.id, EPERM);
        return 0;
}

int proc_notify_watch(struct notify_listener *l, struct ao_reactor *reactor, int fd,
                      const struct notify_ops *ops, void *owner)
{
        l->fd = fd;
        l->ops = ops;
        l->owner = owner;
        return ao_reactor_add_io(reactor, &l->source, fd, AO_IO_IN, on_notification, l);
}

void proc_notify_done(struct notify_listener *l)
{
        l->source = ao_source_free(l->source);
        l->fd = ao_safe_close(l->fd);
}

/* A child sent its listener: one message, the tag as payload, the fd as SCM_RIGHTS. */
static int on_listener_message(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct supervisor *sv = userdata;
        for (;;) {
                uint64_t tag = 0;
                int fds[AO_FDPASS_MAX_FDS];
                size_t n_fds;
                ssize_t n =
                    ao_fdpass_recv(fd, &tag, sizeof(tag), fds, AO_FDPASS_MAX_FDS, &n_fds, MSG_DONTWAIT);
                if (n < 0 && n != -EMSGSIZE)
                        return 0;
                for (size_t i = 1; i < n_fds; i++)
                        (void) close(fds[i]);
                if (n_fds == 0)
                        continue;
                if (n != (ssize_t) sizeof(tag)) {
                        (void) close(fds[0]);
                        continue;
                }
                sv->ops->on_listener(sv->owner, tag, fds[0]);
        }
}

int proc_supervisor_init(struct supervisor *sv, struct ao_reactor *reactor, const struct supervisor_ops *ops,
                         void *owner)
{
        sv->ops = ops;
        sv->owner = owner;
        struct seccomp_notif_sizes sizes = {0};
        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 &&
            (sizes.seccomp_notif > NOTIF_BUFFER_SIZE || sizes.seccomp_notif_resp > NOTIF_BUFFER_SIZE))
                return -EOVERFLOW; /* a future kernel with far larger structs: do not guess */
        int sv_fds[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv_fds) < 0)
                return ao_negative_errno();
        sv->rx = sv_fds[0];
        sv->tx = sv_fds[1];
        /* Children block on their end rather than fail when the operator is slow to read. */
        if (fcntl(sv->tx, F_SETFL, 0) < 0)
                return ao_negative_errno();
        return ao_reactor_add_io(reactor, &sv->rx_source, sv->rx, AO_IO_IN, on_listener_message, sv);
}

void proc_supervisor_done(struct supervisor *sv)
{
        sv->rx_source = ao_source_free(sv->rx_source);
        sv->rx = ao_safe_close(sv->rx);
        sv->tx = ao_safe_close(sv->tx);
}
