/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The child side of starting a hook: what runs between clone() and
 * execve(). It makes system calls only — no allocation, no locks, no stdio —
 * because it runs in a vfork-style child that shares the parent's memory
 * (and, in the operator itself, a process with other threads).
 *
 * Used by the spawner process (src/proc/spawner.c) and by the operator's
 * in-process fallback. Links against libc alone.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

struct sock_filter;

/* Where a failed launch stopped, reported with its errno. */
enum ao_launch_stage {
        AO_LAUNCH_OK,
        AO_LAUNCH_SETSID,
        AO_LAUNCH_FDS,
        AO_LAUNCH_SIGNALS,
        AO_LAUNCH_CHDIR,
        AO_LAUNCH_RLIMIT,
        AO_LAUNCH_USER,
        AO_LAUNCH_NO_NEW_PRIVS,
        AO_LAUNCH_SECCOMP,
        AO_LAUNCH_LISTENER,
        AO_LAUNCH_EXEC,
        _AO_LAUNCH_STAGE_MAX,
};

struct ao_launch_limit {
        int resource; /* RLIMIT_* */
        struct rlimit limit;
};

/** Everything the child needs; every pointer is borrowed and must stay valid until exec. */
struct ao_launch {
        const char *path;      /* the executable; no PATH search */
        char *const *argv;     /* NULL-terminated */
        char *const *envp;     /* NULL-terminated */
        const char *cwd;       /* NULL: inherit */
        int stdin_fd;          /* becomes fd 0 */
        int stdout_fd;         /* becomes fd 1 */
        int stderr_fd;         /* becomes fd 2 */
        int listener_sock;     /* the seccomp listener is sent here (SCM_RIGHTS); -1: none */
        uint64_t listener_tag; /* sent with the listener so the receiver knows whose it is */
        bool
            no_new_privs; /* PR_SET_NO_NEW_PRIVS (every sandbox profile sets it; an unsandboxed run does not) */
        const struct sock_filter *bpf; /* NULL: no seccomp filter */
        unsigned short bpf_len;
        bool bpf_notifies; /* the filter has SECCOMP_RET_USER_NOTIF actions: install with a listener */
        const struct ao_launch_limit *limits;
        size_t n_limits;
        bool set_gid, set_uid;
        gid_t gid;
        uid_t uid;
        /*
         * NULL: reset every signal disposition and empty the mask. Otherwise the caller vouches that
         * its mask is empty and every disposition but these is already the default (the spawner
         * ignores four signals and nothing else), which saves the child ~60 system calls.
         */
        const int *non_default_signals;
        size_t n_non_default_signals;
};

/** Written by a failed child into memory it shares with its parent (CLONE_VM). */
struct ao_launch_failure {
        int stage; /* enum ao_launch_stage; AO_LAUNCH_OK when exec succeeded */
        int error; /* errno */
};

/**
 * Set the child up as @l describes and exec. Never returns: on failure it
 * records the stage and errno in @ret_failure and calls _exit(127).
 * Order: new session (own process group), fd 0-2 from the given fds, every
 * other fd close-on-exec, all signal dispositions default and the mask
 * empty, cwd, rlimits, gid/uid, no_new_privs, seccomp, exec.
 */
_Noreturn void ao_launch_exec(const struct ao_launch *l, struct ao_launch_failure *ret_failure);

/**
 * Send a seccomp listener fd over @sock (SCM_RIGHTS, @tag as the payload)
 * and close it. System calls only. Returns 0, or -1 with errno set.
 */
int ao_launch_send_listener(int sock, uint64_t tag, int listener);

/**
 * Every signal disposition to the default (the raw system call reaches the two real-time signals
 * glibc keeps for itself) and an empty mask. System calls only. Returns 0, or -1 with errno set.
 */
int ao_launch_reset_all_signals(void);

/** "chdir", "seccomp", "execve", ... for messages. */
const char *ao_launch_stage_name(int stage);

/**
 * Start a child running ao_launch_exec(@l) with clone(CLONE_VM | CLONE_VFORK
 * [| CLONE_PIDFD] [| CLONE_PARENT]) on @stack (@stack_size bytes, owned by the
 * caller). Returns the pid, and a pidfd in @ret_pidfd unless it is NULL;
 * @ret_failure tells whether the exec happened. The caller is suspended until
 * the child execs or exits, as with vfork.
 */
pid_t ao_launch_clone(const struct ao_launch *l, bool as_sibling, void *stack, size_t stack_size,
                      int *ret_pidfd, struct ao_launch_failure *ret_failure);

/** What a child started by ao_launch_clone_detached() reads while it sets up. */
struct ao_launch_pack {
        const struct ao_launch *launch;
        struct ao_launch_failure *failure;
};

/**
 * Start a child running ao_launch_exec(@l) as our parent's child (CLONE_VM |
 * CLONE_PARENT), without waiting for its exec. Until the child has exec'd or
 * exited, it runs on @stack and reads @pack, @l and everything @l points at:
 * the caller keeps all of them unchanged until *@tid is 0 again. The kernel
 * sets *@tid to the child's tid before this returns and zeroes it (with a
 * futex wake) when the child execs or exits. A failed launch is written to
 * @failure (left alone on success), which must be memory the caller's
 * parent reads, since nobody waits here. Returns the pid, or -errno.
 */
pid_t ao_launch_clone_detached(const struct ao_launch *l, struct ao_launch_failure *failure, void *stack,
                               size_t stack_size, struct ao_launch_pack *pack, volatile pid_t *tid);
