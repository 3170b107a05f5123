/* SPDX-License-Identifier: Apache-2.0 */
/*
 * addon-operator-spawner: a tiny process that starts children for the
 * operator. It exists for one reason: a child's max RSS (ru_maxrss) can
 * never be lower than the RSS of the process it was cloned from, so hooks
 * cloned from the operator would all report the operator's size. Cloned
 * from here, with CLONE_PARENT, a hook is still the operator's child (the
 * operator reaps it and gets its rusage) but starts from this process's
 * few hundred KiB.
 *
 * Single-threaded, libc only. Reads requests from fd 3 until EOF, answers
 * each with the pid (and the launch result, when it waited for the exec).
 * Dies with the operator (PR_SET_PDEATHSIG).
 *
 * A child shares this process's memory until it execs, and reads its
 * request from there while it sets up. Each child in that phase has a slot
 * of its own (stack, request, argv); the kernel frees the slot, by zeroing
 * its tid, when the child execs or exits. So the spawner answers and takes
 * the next request while children are still starting (one wait less per
 * run), and waits for an exec only when every slot is busy.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ao/fdpass.h"
#include "ao/macro.h"
#include "ao/launch.h"
#include "protocol.h"

#define CHILD_STACK_SIZE (64 * 1024)
/*
 * Children that may set up at once without the spawner waiting for them; a request beyond them (or
 * too big for a slot) waits for its child's exec, as every request did before slots. Each slot in
 * use costs a few pages that every hook's max RSS starts from, so there are few and they are small.
 */
#define CHILD_SLOTS      4
#define SLOT_MESSAGE_MAX (8 * 1024)
#define SLOT_VECTOR_MAX  256 /* argv and envp entries together, their NULLs included */
#define SLOT_STACK_SIZE  (32 * 1024)

/* This spawner's profile: applied to itself once, except the rlimits, which each child sets. */
static struct {
        struct ao_launch_limit limits[SPAWNER_LIMITS_MAX];
        size_t n_limits;
} profile;

static int devnull = -1;
/* Our only dispositions that are not the default (set in main()); the mask stays empty. */
static const int ignored_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* The request being served; a child that is waited for reads it, and the vectors, from here. */
static union {
        char bytes[SPAWNER_MESSAGE_MAX];
        uint64_t align;
} message;
static char *argv_waited[SPAWNER_MESSAGE_MAX / 16], *envp_waited[SPAWNER_MESSAGE_MAX / 16];
static _Alignas(16) char stack_waited[CHILD_STACK_SIZE];

/* Everything a child that is not waited for reads until its exec: its own copy of the request. */
struct child_slot {
        volatile pid_t tid; /* the child still setting up from this slot; 0: free */
        struct ao_launch launch;
        struct ao_launch_pack pack;
        char *vector[SLOT_VECTOR_MAX];
        union {
                char bytes[SLOT_MESSAGE_MAX];
                uint64_t align;
        } message;
        _Alignas(16) char stack[SLOT_STACK_SIZE];
};

static struct child_slot slots[CHILD_SLOTS];
/* The operator's launch status slots (SPAWNER_STATUS_FD), NULL when they could not be mapped. */
static struct ao_launch_failure *status;

static int drop_user(const struct spawner_profile_msg *m)
{
        if (m->set_gid && (setgroups(0, NULL) < 0 || setresgid(m->gid, m->gid, m->gid) < 0))
                return -errno;
        if (m->set_uid && setresuid(m->uid, m->uid, m->uid) < 0)
                return -errno;
        return 0;
}

/*
 * Enter the profile: uid/gid, no_new_privs and the seccomp filter, on this
 * process, so every child starts inside it. The launcher's own calls
 * (recvmsg, clone, the child's set-up, execve) must be allowed by the
 * profile.
 */
static int enter_profile(const struct spawner_profile_msg *m, size_t len)
{
        if (len < sizeof(*m) || m->n_limits > SPAWNER_LIMITS_MAX || m->bpf_len > 0xffff ||
            len != sizeof(*m) + (size_t) m->bpf_len * 8)
                return -EINVAL;
        memcpy(profile.limits, m->limits, sizeof(profile.limits));
        profile.n_limits = m->n_limits;
        int k = drop_user(m);
        if (k < 0)
                return k;
        /*
         * A change of uid or gid resets "dumpable" to fs.suid_dumpable (with that sysctl at 1, the
         * hooks of this user could read and write our memory) and clears the parent-death signal:
         * set both again.
         */
        if ((m->set_uid || m->set_gid) &&
            (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0))
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        if (!m->bpf_len)
                return 0;
        struct sock_fprog prog = {.len = (unsigned short) m->bpf_len,
                                  .filter = (struct sock_filter *) (m + 1)};
        long listener =
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (listener < 0)
                return -errno;
        if (ao_launch_send_listener(SPAWNER_LISTENER_FD, SPAWNER_LISTENER_TAG | m->index, (int) listener) < 0)
                return -errno;
        return 0;
}

/* Split the packed strings into the path, cwd, argv and envp vectors (pointing into the message). */
static int unpack_strings(const struct spawner_spawn_msg *m, size_t len, const char **path, const char **cwd,
                          char **argv, char **envp)
{
        const char *p = (const char *) (m + 1), *end = p + m->strings_len;
        if (len != sizeof(*m) + m->strings_len || m->strings_len == 0 || end[-1] != '\0')
                return -EINVAL;
        size_t want = 2 + (size_t) m->argc + m->envc, got = 0;
        const char *items[2];
        for (; p < end; p += strlen(p) + 1, got++) {
                if (got < 2)
                        items[got] = p;
                else if (got < 2 + m->argc)
                        argv[got - 2] = (char *) p;
                else if (got < want)
                        envp[got - 2 - m->argc] = (char *) p;
        }
        if (got != want)
                return -EINVAL;
        argv[m->argc] = NULL;
        envp[m->envc] = NULL;
        *path = items[0];
        *cwd = items[1][0] ? items[1] : NULL;
        return 0;
}

static void send_reply(uint64_t id, pid_t pid, const struct ao_launch_failure *failure)
{
        struct spawner_reply_msg r = {.type = SPAWNER_MSG_REPLY, .pid = pid, .id = id};
        if (failure)
                r.failure = *failure;
        /* The operator went away if this fails; the next receive sees EOF. */
        (void) ao_fdpass_send(SPAWNER_CONTROL_FD, &r, sizeof(r), NULL, 0, 0);
}

/* Where a failed launch of @m is to be reported, when it may be reported there; NULL otherwise. */
static struct ao_launch_failure *status_of(const struct spawner_spawn_msg *m)
{
        return status && m->status_slot >= 0 && m->status_slot < SPAWNER_STATUS_SLOTS
                   ? &status[m->status_slot]
                   : NULL;
}

static void fill_launch(struct ao_launch *l, const char *path, const char *cwd, char **argv, char **envp,
                        const int *fds)
{
        *l = (struct ao_launch){
            .path = path,
            .argv = argv,
            .envp = envp,
            .cwd = cwd,
            .stdin_fd = devnull,
            .stdout_fd = fds[0],
            .stderr_fd = fds[1],
            .listener_sock = -1, /* the filter, if any, is the spawner's own: inherited */
            .limits = profile.limits,
            .n_limits = profile.n_limits,
            .non_default_signals = ignored_signals,
            .n_non_default_signals = sizeof(ignored_signals) / sizeof(ignored_signals[0]),
        };
}

/* A slot no child is setting up from (the kernel zeroed its tid at the child's exec or exit); NULL: all busy. */
static struct child_slot *free_slot(void)
{
        for (size_t i = 0; i < CHILD_SLOTS; i++)
                if (__atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE) == 0)
                        return &slots[i];
        return NULL;
}

/*
 * Start request @m's child from a free slot and answer at once; false (nothing done) when no slot
 * is free or the request does not fit one.
 */
static bool spawn_detached(const struct spawner_spawn_msg *m, size_t len, const int *fds,
                           struct ao_launch_failure *failure)
{
        struct child_slot *slot = free_slot();
        if (!slot || len > sizeof(slot->message.bytes) || m->argc + (size_t) m->envc + 2 > SLOT_VECTOR_MAX)
                return false;
        memcpy(slot->message.bytes, m, len);
        m = (const struct spawner_spawn_msg *) slot->message.bytes;
        const char *path, *cwd;
        char **argv = slot->vector, **envp = slot->vector + m->argc + 1;
        if (unpack_strings(m, len, &path, &cwd, argv, envp) < 0)
                return false;
        fill_launch(&slot->launch, path, cwd, argv, envp, fds);
        pid_t pid = ao_launch_clone_detached(&slot->launch, failure, slot->stack, sizeof(slot->stack),
                                             &slot->pack, &slot->tid);
        send_reply(m->id, pid, NULL);
        return true;
}

/* Start the child of request @m (@len bytes, @fds its stdout and stderr) and answer. */
static void spawn(const struct spawner_spawn_msg *m, size_t len, const int *fds, size_t n_fds)
{
        /*
         * No pidfd: the child is the operator's (CLONE_PARENT) and stays unreaped until the operator
         * reaps it, so its pid cannot name another process meanwhile. A request that a slot takes is
         * unpacked there; the others (and a malformed one, refused below) here.
         */
        struct ao_launch_failure *failure = status_of(m);
        if (n_fds == 2 && failure && spawn_detached(m, len, fds, failure))
                return;
        const char *path, *cwd;
        if (n_fds != 2 || m->argc + (size_t) m->envc + 2 > AO_ARRAY_SIZE(argv_waited) ||
            unpack_strings(m, len, &path, &cwd, argv_waited, envp_waited) < 0) {
                send_reply(m->id, -EINVAL, NULL);
                return;
        }
        struct ao_launch l;
        fill_launch(&l, path, cwd, argv_waited, envp_waited, fds);
        struct ao_launch_failure waited;
        pid_t pid = ao_launch_clone(&l, true, stack_waited, sizeof(stack_waited), NULL, &waited);
        send_reply(m->id, pid, &waited);
}

/*
 * Map the operator's launch status slots, when fd 5 is that memfd (its seals say so: whatever else
 * was left on fd 5 by whoever started the operator is never written to). Without them every
 * request waits for its child's exec.
 */
static void map_status(void)
{
        size_t size = SPAWNER_STATUS_SLOTS * sizeof(struct ao_launch_failure);
        struct stat st;
        if (fcntl(SPAWNER_STATUS_FD, F_GET_SEALS) == SPAWNER_STATUS_SEALS &&
            fstat(SPAWNER_STATUS_FD, &st) == 0 && st.st_size == (off_t) size) {
                void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, SPAWNER_STATUS_FD, 0);
                status = map == MAP_FAILED ? NULL : map;
        }
        (void) close(SPAWNER_STATUS_FD);
}

/*
 * Keep only stdio and the two fds of the protocol. Whatever else the operator had open when it
 * started us came along through exec: libcurl does not make its sockets close-on-exec, so a
 * spawner started after the first requests held API-server connections the operator had long
 * closed (a cancelled watch stayed open on the server for as long as the spawner ran).
 */
static void close_inherited_fds(void)
{
        if (syscall(SYS_close_range, SPAWNER_STATUS_FD + 1, ~0U, 0) == 0)
                return;
        /* COMPAT(kernel 5.9): no close_range. */
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = SPAWNER_STATUS_FD + 1; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
                (void) close((int) fd);
}

int main(void)
{
        /* The operator is our parent: die with it, and never outlive it holding children. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        close_inherited_fds();
        /*
         * Hooks run as our user (unless their profile drops it): keep them out of our memory through
         * /proc/<pid>/mem and ptrace, as the operator keeps them out of its own. A spawner still
         * outside any profile could otherwise be made to start processes with no filter. Each hook's
         * execve makes the hook itself dumpable again.
         */
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        /*
         * Terminal and supervisor signals (Ctrl-C, `timeout`, a container runtime's SIGTERM to the
         * group) are for the operator, which shuts down in order and then closes our socket. Hooks
         * get default dispositions back from the launcher.
         */
        /*
         * Whoever started us may have left signals ignored or blocked. Children are launched on the
         * promise that our mask is empty and only ignored_signals differ from the default: make it
         * true once here instead of in every child.
         */
        if (ao_launch_reset_all_signals() < 0) {
                perror("addon-operator-spawner: resetting signals");
                return 1;
        }
        for (size_t i = 0; i < sizeof(ignored_signals) / sizeof(ignored_signals[0]); i++)
                (void) signal(ignored_signals[i], SIG_IGN);
        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0) {
                perror("addon-operator-spawner: /dev/null");
                return 1;
        }
        map_status();
        for (;;) {
                int fds[AO_FDPASS_MAX_FDS];
                size_t n_fds;
                ssize_t n = ao_fdpass_recv(SPAWNER_CONTROL_FD, message.bytes, sizeof(message.bytes), fds,
                                           AO_FDPASS_MAX_FDS, &n_fds, 0);
                if (n == 0)
                        return 0; /* the operator closed the socket */
                if (n < 0 && n != -EMSGSIZE)
                        return 1;
                if (n >= (ssize_t) sizeof(uint32_t)) {
                        uint32_t type;
                        memcpy(&type, message.bytes, sizeof(type));
                        if (type == SPAWNER_MSG_PROFILE) {
                                int k = enter_profile((const struct spawner_profile_msg *) message.bytes,
                                                      (size_t) n);
                                if (k < 0) {
                                        /* Never run children outside the profile they were sent for. */
                                        fprintf(stderr, "addon-operator-spawner: entering the profile: %s\n",
                                                strerror(-k));
                                        return 1;
                                }
                        } else if (type == SPAWNER_MSG_SPAWN &&
                                   (size_t) n >= sizeof(struct spawner_spawn_msg))
                                spawn((const struct spawner_spawn_msg *) message.bytes, (size_t) n, fds,
                                      n_fds);
                }
                for (size_t i = 0; i < n_fds; i++)
                        (void) close(fds[i]);
        }
}
