/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/fdpass.h"

#include <errno.h>
#include <string.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

union fd_control {
        char buf[CMSG_SPACE(AO_FDPASS_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
};

ssize_t ao_fdpass_send(int sock, const void *data, size_t len, const int *fds, size_t n_fds, int flags)
{
        if (n_fds > AO_FDPASS_MAX_FDS) {
                errno = EINVAL;
                return -EINVAL;
        }
        struct iovec iov = {.iov_base = (void *) data, .iov_len = len};
        union fd_control control;
        memset(&control, 0, sizeof(control));
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        if (n_fds) {
                msg.msg_control = control.buf;
                msg.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
        }
        ssize_t n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
        return n < 0 ? -errno : n;
}

ssize_t ao_fdpass_recv(int sock, void *data, size_t len, int *fds, size_t max_fds, size_t *ret_n_fds,
                       int flags)
{
        struct iovec iov = {.iov_base = data, .iov_len = len};
        union fd_control control;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf)};
        *ret_n_fds = 0;
        ssize_t n;
        do
                n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        bool overflow = false;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (*ret_n_fds < max_fds)
                                fds[(*ret_n_fds)++] = fd;
                        else {
                                (void) close(fd); /* more than the caller takes: never leak one */
                                overflow = true;
                        }
                }
        }
        if (overflow || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
                return -EMSGSIZE;
        return n;
}
