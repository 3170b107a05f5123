/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Child-side launch: system calls only, between clone() and execve().
 * See include/ao/launch.h for the contract. Every step that fails records
 * its stage and errno in memory shared with the parent and exits 127, so
 * the operator can report "seccomp: Invalid argument" instead of a bare 127.
 */
#include "ao/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ao/fdpass.h"

#define FD_SCRATCH_MIN 10 /* where the three stdio sources are parked before dup2 */

_Noreturn static void fail(struct ao_launch_failure *f, int stage)
{
        f->stage = stage;
        f->error = errno ? errno : EIO;
        _exit(127);
}

/*
 * Put the three given fds on 0, 1 and 2. They may themselves be 0-2 in any
 * order, so first park copies above FD_SCRATCH_MIN, then dup2 down: dup2
 * also clears close-on-exec on the targets.
 */
static int setup_stdio(const struct ao_launch *l)
{
        int sources[3] = {l->stdin_fd, l->stdout_fd, l->stderr_fd};
        if (sources[0] > 2 && sources[1] > 2 && sources[2] > 2) {
                /* No source is a target (the spawner's case): copy straight down. */
                for (int i = 0; i < 3; i++)
                        if (dup2(sources[i], i) < 0)
                                return -1;
                return 0;
        }
        int parked[3];
        for (int i = 0; i < 3; i++) {
                parked[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, FD_SCRATCH_MIN);
                if (parked[i] < 0)
                        return -1;
        }
        for (int i = 0; i < 3; i++)
                if (dup2(parked[i], i) < 0)
                        return -1;
        return 0;
}

/*
 * Hooks must start with default signal handling: the operator blocks every
 * signal (signalfd) and a parent may have left SIGPIPE or SIGCHLD ignored.
 * Neither the mask nor SIG_IGN dispositions are reset by exec. The raw
 * system call reaches every signal, including the two real-time signals
 * glibc keeps for itself (its sigaction() refuses those), which an ignored
 * disposition would otherwise carry into the hook.
 */
struct kernel_sigaction {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        uint64_t mask;
};

int ao_launch_reset_all_signals(void)
{
        struct kernel_sigaction dfl = {.handler = SIG_DFL};
        for (int sig = 1; sig < _NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP)
                        continue;
                if (syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask)) < 0)
                        return -1;
        }
        uint64_t none = 0;
        return (int) syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
}

static int reset_signals(const struct ao_launch *l)
{
        if (!l->non_default_signals)
                return ao_launch_reset_all_signals();
        struct kernel_sigaction dfl = {.handler = SIG_DFL};
        for (size_t i = 0; i < l->n_non_default_signals; i++)
                if (syscall(SYS_rt_sigaction, l->non_default_signals[i], &dfl, NULL, sizeof(dfl.mask)) < 0)
                        return -1;
        return 0;
}

static int apply_limits(const struct ao_launch *l)
{
        for (size_t i = 0; i < l->n_limits; i++)
                if (setrlimit(l->limits[i].resource, &l->limits[i].limit) < 0)
                        return -1;
        return 0;
}

static int drop_privileges(const struct ao_launch *l, int *ret_stage)
{
        *ret_stage = AO_LAUNCH_USER;
        if (l->set_gid && (setgroups(0, NULL) < 0 || setresgid(l->gid, l->gid, l->gid) < 0))
                return -1;
        if (l->set_uid && setresuid(l->uid, l->uid, l->uid) < 0)
                return -1;
        return 0;
}

int ao_launch_send_listener(int sock, uint64_t tag, int listener)
{
        ssize_t n = ao_fdpass_send(sock, &tag, sizeof(tag), &listener, 1, 0);
        int saved = errno;
        (void) close(listener);
        errno = saved;
        return n == (ssize_t) sizeof(tag) ? 0 : -1;
}

static int install_seccomp(const struct ao_launch *l, int *ret_stage)
{
        *ret_stage = AO_LAUNCH_NO_NEW_PRIVS;
        if (l->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -1;
        if (!l->bpf)
                return 0;

        *ret_stage = AO_LAUNCH_SECCOMP;
        struct sock_fprog prog = {.len = l->bpf_len, .filter = (struct sock_filter *) l->bpf};
        unsigned int flags = l->bpf_notifies ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
        long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
        if (listener < 0)
                return -1;
        if (!l->bpf_notifies)
                return 0;

        *ret_stage = AO_LAUNCH_LISTENER;
        if (l->listener_sock < 0) {
                /* Nobody would answer: a denied call would hang. Refuse to run like that. */
                errno = EINVAL;
                return -1;
        }
        return ao_launch_send_listener(l->listener_sock, l->listener_tag, (int) listener);
}

_Noreturn void ao_launch_exec(const struct ao_launch *l, struct ao_launch_failure *f)
{
        errno = 0;
        if (setsid() < 0)
                fail(f, AO_LAUNCH_SETSID);
        if (setup_stdio(l) < 0)
                fail(f, AO_LAUNCH_FDS);
        /* Every other fd closes at exec; the listener socket stays usable until then. */
        if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                fail(f, AO_LAUNCH_FDS);
        if (reset_signals(l) < 0)
                fail(f, AO_LAUNCH_SIGNALS);
        if (l->cwd && chdir(l->cwd) < 0)
                fail(f, AO_LAUNCH_CHDIR);
        if (apply_limits(l) < 0)
                fail(f, AO_LAUNCH_RLIMIT);
        int stage;
        if (drop_privileges(l, &stage) < 0 || install_seccomp(l, &stage) < 0)
                fail(f, stage);
        execve(l->path, l->argv, l->envp);
        fail(f, AO_LAUNCH_EXEC);
}

const char *ao_launch_stage_name(int stage)
{
        static const char *const names[_AO_LAUNCH_STAGE_MAX] = {
            [AO_LAUNCH_OK] = "ok",
            [AO_LAUNCH_SETSID] = "setsid",
            [AO_LAUNCH_FDS] = "setting up file descriptors",
            [AO_LAUNCH_SIGNALS] = "resetting signals",
            [AO_LAUNCH_CHDIR] = "chdir",
            [AO_LAUNCH_RLIMIT] = "setrlimit",
            [AO_LAUNCH_USER] = "switching user",
            [AO_LAUNCH_NO_NEW_PRIVS] = "no_new_privs",
            [AO_LAUNCH_SECCOMP] = "installing the seccomp filter",
            [AO_LAUNCH_LISTENER] = "handing over the seccomp listener",
            [AO_LAUNCH_EXEC] = "execve",
        };
        return stage >= 0 && stage < _AO_LAUNCH_STAGE_MAX ? names[stage] : "unknown stage";
}

static int child_main(void *arg)
{
        const struct ao_launch_pack *a = arg;
        ao_launch_exec(a->launch, a->failure);
}

pid_t ao_launch_clone(const struct ao_launch *l, bool as_sibling, void *stack, size_t stack_size,
                      int *ret_pidfd, struct ao_launch_failure *ret_failure)
{
        *ret_failure = (struct ao_launch_failure){.stage = AO_LAUNCH_OK};
        struct ao_launch_pack args = {.launch = l, .failure = ret_failure};
        int flags = CLONE_VM | CLONE_VFORK | (ret_pidfd ? CLONE_PIDFD : 0) | SIGCHLD;
        if (as_sibling)
                flags |= CLONE_PARENT; /* the spawner's parent (the operator) reaps it */
        int pidfd = -1;
        /* The stack grows down on every architecture we build for. */
        pid_t pid = clone(child_main, (char *) stack + stack_size, flags, &args, &pidfd);
        if (pid < 0)
                return -errno;
        if (ret_pidfd)
                *ret_pidfd = pidfd;
        return pid;
}

pid_t ao_launch_clone_detached(const struct ao_launch *l, struct ao_launch_failure *failure, void *stack,
                               size_t stack_size, struct ao_launch_pack *pack, volatile pid_t *tid)
{
        *pack = (struct ao_launch_pack){.launch = l, .failure = failure};
        /*
         * The child shares our memory but not our stack or @pack; it does touch our errno (the same
         * thread-local slot), which only matters to a call of ours failing in that very instant.
         */
        int flags = CLONE_VM | CLONE_PARENT | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD;
        pid_t pid =
            clone(child_main, (char *) stack + stack_size, flags, pack, (pid_t *) tid, NULL, (pid_t *) tid);
        return pid < 0 ? -errno : pid;
}
