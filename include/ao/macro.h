/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Small language helpers shared by every module: attributes, scope-bound
 * cleanup and ownership hand-off. Modelled on systemd's macro.h and
 * fd-util.h; kept deliberately tiny so every header may include it.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_     __attribute__((noreturn))
#define _unused_       __attribute__((unused))
#define _pure_         __attribute__((pure))
#define _nonnull_(...) __attribute__((nonnull(__VA_ARGS__)))
#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _likely_(x)    __builtin_expect(!!(x), 1)
#define _unlikely_(x)  __builtin_expect(!!(x), 0)

#define AO_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define AO_MIN(a, b)     ((a) < (b) ? (a) : (b))
#define AO_MAX(a, b)     ((a) > (b) ? (a) : (b))

#define AO_USEC_PER_SEC  1000000ULL
#define AO_USEC_PER_MSEC 1000ULL
#define AO_NSEC_PER_USEC 1000ULL
#define AO_USEC_INFINITY UINT64_MAX

/* Hand a pointer (or fd) out of a _cleanup_ scope: returns it and clears the variable. */
#define TAKE_PTR(p)                          \
        ({                                   \
                __typeof__(p) _taken_ = (p); \
                (p) = NULL;                  \
                _taken_;                     \
        })
#define TAKE_FD(fd)                    \
        ({                             \
                int _taken_fd_ = (fd); \
                (fd) = -EBADF;         \
                _taken_fd_;            \
        })

static inline void ao_freep(void *p)
{
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(ao_freep)

/* close() that keeps errno and accepts a negative fd; returns -EBADF for `fd = ao_safe_close(fd)`. */
static inline int ao_safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void ao_closep(int *fd)
{
        *fd = ao_safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(ao_closep)

/* Read errno as a negative code, never 0, for "return -errno" paths after libc calls. */
static inline int ao_negative_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}
