/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One message plus file descriptors over a Unix socket (SCM_RIGHTS), as the
 * operator, its spawners and the hooks' launch code exchange them. Plain
 * libc, no allocation: usable between clone() and execve().
 */

#include <stddef.h>
#include <sys/types.h>

#define AO_FDPASS_MAX_FDS 4

/**
 * Send @len bytes of @data with @n_fds descriptors (at most
 * AO_FDPASS_MAX_FDS) in one sendmsg(); MSG_NOSIGNAL is always added to
 * @flags. Returns the bytes sent or -errno (errno is left set too).
 */
ssize_t ao_fdpass_send(int sock, const void *data, size_t len, const int *fds, size_t n_fds, int flags);

/**
 * Receive one message into @data (@len bytes) and up to @max_fds
 * descriptors into @fds (their count in @ret_n_fds, always written), with
 * MSG_CMSG_CLOEXEC added to @flags. Returns the bytes received, 0 at EOF,
 * or -errno; -EMSGSIZE when the message or its descriptors did not fit
 * (the descriptors that arrived are still returned, for the caller to close).
 */
ssize_t ao_fdpass_recv(int sock, void *data, size_t len, int *fds, size_t max_fds, size_t *ret_n_fds,
                       int flags);
