/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's side of the spawner (src/proc/spawner.c): start it, send
 * it profiles and spawn requests, turn its replies into launched runs, and
 * fall back to in-process launches if it dies. Requests that the socket
 * cannot take right now wait in a FIFO until it is writable: the loop
 * never blocks on the spawner. With lazy replies (see struct ao_proc) the
 * socket is polled for replies only while someone waits for one.
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/fdpass.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/strbuf.h"
#include "internal.h"
#include "protocol.h"

struct outgoing {
        struct outgoing *next;
        char *data;
        size_t len;
        int fds[2];
        size_t n_fds;
};

static void outgoing_free(struct outgoing *o)
{
        for (size_t i = 0; i < o->n_fds; i++)
                (void) close(o->fds[i]);
        free(o->data);
        free(o);
}

/* Try to send one message; returns 1 when sent, 0 when the socket is full, < 0 on error. */
static int send_now(struct spawner *s, struct outgoing *o)
{
        ssize_t n = ao_fdpass_send(s->sock, o->data, o->len, o->fds, o->n_fds, MSG_DONTWAIT);
        if (n < 0)
                return n == -EAGAIN || n == -EWOULDBLOCK ? 0 : (int) n;
        return 1;
}

static bool replies_wanted(const struct spawner *s)
{
        return !s->proc->lazy_replies || s->n_needing > 0 || (s->wants_any && s->n_starting > 0);
}

/* Poll the socket for what is needed now: room for queued requests, replies someone waits for. */
static void update_watch(struct spawner *s)
{
        uint32_t events = (s->queue_head ? AO_IO_OUT : 0) | (replies_wanted(s) ? AO_IO_IN : 0);
        if (!events) {
                (void) ao_source_set_enabled(s->io, AO_SOURCE_OFF);
                return;
        }
        (void) ao_source_set_io_events(s->io, events);
        (void) ao_source_set_enabled(s->io, AO_SOURCE_ON);
}

static int flush_queue(struct spawner *s)
{
        int k = 0;
        while (s->queue_head) {
                struct outgoing *o = s->queue_head;
                k = send_now(s, o);
                if (k <= 0)
                        break;
                k = 0;
                s->queue_head = o->next;
                if (!s->queue_head)
                        s->queue_tail = &s->queue_head;
                outgoing_free(o);
        }
        update_watch(s);
        return k;
}

/* A message that has to wait holds copies of the caller's fds: the caller may close its own first. */
static int copy_fds(struct outgoing *o, const int *fds, size_t n_fds)
{
        for (size_t i = 0; i < n_fds; i++) {
                int copy = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
                if (copy < 0)
                        return ao_negative_errno();
                o->fds[o->n_fds++] = copy;
        }
        return 0;
}

/*
 * Send a message, taking @data; @fds stay the caller's. Sent at once when
 * nothing waits before it and the socket takes it (almost always);
 * otherwise queued with copies of @fds, and sent when the socket is writable.
 */
static int enqueue(struct spawner *s, char *data, size_t len, const int *fds, size_t n_fds)
{
        struct outgoing *o = ao_xcalloc(1, sizeof(*o));
        o->data = data;
        o->len = len;
        int k = 0;
        if (!s->queue_head) {
                if (n_fds)
                        memcpy(o->fds, fds, n_fds * sizeof(int));
                o->n_fds = n_fds;
                k = send_now(s, o);
                o->n_fds = 0; /* borrowed: not closed with the message */
                if (k != 0) {
                        outgoing_free(o);
                        update_watch(s);
                        return k < 0 ? k : 0;
                }
        }
        k = copy_fds(o, fds, n_fds);
        if (k < 0) {
                outgoing_free(o);
                return k;
        }
        *s->queue_tail = o;
        s->queue_tail = &o->next;
        return flush_queue(s);
}

/* Tell a new spawner its profile; it enters it (uid/gid, no_new_privs, filter) before any child. */
static int send_profile(struct spawner *s)
{
        const struct ao_sandbox_profile *profile = s->profile;
        if (profile->n_rlimits > SPAWNER_LIMITS_MAX)
                return -E2BIG;
        size_t bpf_bytes = profile->has_filter ? (size_t) profile->bpf_len * 8 : 0;
        size_t len = sizeof(struct spawner_profile_msg) + bpf_bytes;
        struct spawner_profile_msg *m = ao_xcalloc(1, len);
        m->type = SPAWNER_MSG_PROFILE;
        m->index = s->serial;
        m->bpf_len = profile->has_filter ? profile->bpf_len : 0;
        m->notifies = profile->has_filter;
        m->n_limits = (uint32_t) profile->n_rlimits;
        for (size_t i = 0; i < profile->n_rlimits; i++)
                m->limits[i] = (struct ao_launch_limit){.resource = profile->rlimits[i].resource,
                                                        .limit = profile->rlimits[i].limit};
        m->set_uid = profile->set_uid, m->set_gid = profile->set_gid;
        m->uid = profile->uid, m->gid = profile->gid;
        if (bpf_bytes)
                memcpy(m + 1, profile->bpf, bpf_bytes);
        return enqueue(s, (char *) m, len, NULL, 0);
}

int ao_proc_spawner_request(struct spawner *s, struct ao_proc_run *run, char *const *argv, char *const *envp,
                            const char *cwd, int stdout_fd, int stderr_fd)
{
        struct ao_strbuf strings = {0};
        ao_strbuf_append_n(&strings, run->path, strlen(run->path) + 1);
        ao_strbuf_append_n(&strings, cwd ? cwd : "", strlen(cwd ? cwd : "") + 1);
        uint32_t argc = 0, envc = 0;
        for (; argv[argc]; argc++)
                ao_strbuf_append_n(&strings, argv[argc], strlen(argv[argc]) + 1);
        for (; envp[envc]; envc++)
                ao_strbuf_append_n(&strings, envp[envc], strlen(envp[envc]) + 1);
        if (sizeof(struct spawner_spawn_msg) + strings.len > SPAWNER_MESSAGE_MAX) {
                ao_strbuf_done(&strings);
                return -E2BIG;
        }

        size_t len = sizeof(struct spawner_spawn_msg) + strings.len;
        struct spawner_spawn_msg *m = ao_xmalloc(len);
        *m = (struct spawner_spawn_msg){.type = SPAWNER_MSG_SPAWN,
                                        .status_slot = run->status_slot,
                                        .id = run->id,
                                        .argc = argc,
                                        .envc = envc,
                                        .strings_len = (uint32_t) strings.len};
        memcpy(m + 1, strings.buf, strings.len);
        ao_strbuf_done(&strings);
        int fds[2] = {stdout_fd, stderr_fd};
        /* Counted first: the send may fail after queueing, and the caller then frees the run. */
        s->n_starting++;
        int k = enqueue(s, (char *) m, len, fds, 2);
        if (k < 0)
                s->n_starting--;
        return k;
}

/* --- replies --------------------------------------------------------------- */

/* @run has its reply (or never will): it no longer counts as starting. */
static void stop_waiting(struct spawner *s, struct ao_proc_run *run)
{
        s->n_starting--;
        if (run->needs_pid)
                s->n_needing--;
        run->needs_pid = false;
        run->spawner = NULL;
}

static struct ao_proc_run *starting_run(struct spawner *s, const struct spawner_reply_msg *r)
{
        struct ao_proc_run *run = ao_proc_run_find(s->proc, r->id);
        return run && run->state == RUN_STARTING && run->spawner == s ? run : NULL;
}

static void handle_reply(struct spawner *s, const struct spawner_reply_msg *r)
{
        struct ao_proc_run *run = starting_run(s, r);
        if (!run)
                return;
        stop_waiting(s, run);
        if (r->pid < 0)
                ao_proc_launch_status_release(run); /* nothing was started that could write there */
        /* Should it have to be watched, the reactor opens a pidfd from the pid: the child is ours, not reaped yet. */
        ao_proc_run_launched(run, r->pid, -1, &r->failure);
}

/* Only the pid, for killing: nothing is watched or reported (the launcher is going away). */
static void learn_pid(struct spawner *s, const struct spawner_reply_msg *r)
{
        struct ao_proc_run *run = starting_run(s, r);
        if (!run)
                return;
        stop_waiting(s, run);
        if (r->pid > 0) {
                run->pid = r->pid;
                run->state = RUN_RUNNING;
        }
}

typedef void reply_handler(struct spawner *s, const struct spawner_reply_msg *r);

enum drain {
        DRAIN_ALL,      /* until the socket is empty: it polled readable, and must not stay so */
        DRAIN_ANSWERED, /* until no request is left unanswered (a reply for a run freed meanwhile stays) */
};

/* Replies already in the socket, to @handle; returns without waiting for more. */
static void drain_replies(struct spawner *s, reply_handler *handle, enum drain until)
{
        while (until == DRAIN_ALL || s->n_starting > 0) {
                struct spawner_reply_msg r;
                int fds[AO_FDPASS_MAX_FDS];
                size_t n_fds;
                ssize_t n =
                    ao_fdpass_recv(s->sock, &r, sizeof(r), fds, AO_FDPASS_MAX_FDS, &n_fds, MSG_DONTWAIT);
                if (n <= 0 && n != -EMSGSIZE)
                        break;
                /* Replies carry none: whatever came along is not ours to keep. */
                for (size_t i = 0; i < n_fds; i++)
                        (void) close(fds[i]);
                if (n == (ssize_t) sizeof(r) && r.type == SPAWNER_MSG_REPLY)
                        handle(s, &r);
        }
}

/*
 * Read what has come. Whoever waited for "any reply" (an unknown pid) looks
 * again now, and asks again if it still has to wait.
 */
static void read_replies(struct spawner *s, enum drain until)
{
        drain_replies(s, handle_reply, until);
        s->wants_any = false;
        ao_proc_supervise_unpark(s);
        ao_proc_reaper_kick(s->proc);
        update_watch(s);
}

void ao_proc_spawner_want_reply(struct ao_proc_run *run)
{
        struct spawner *s = run->spawner;
        if (!s || run->state != RUN_STARTING || run->needs_pid)
                return;
        run->needs_pid = true;
        s->n_needing++;
        update_watch(s);
}

void ao_proc_spawner_collect(struct ao_proc_run *run)
{
        struct ao_proc *p = run->proc;
        struct spawner *s = run->spawner;
        uint64_t id = run->id;
        if (!s)
                return;
        read_replies(s, DRAIN_ANSWERED);
        run = ao_proc_run_find(p, id); /* it may be gone: launched, reaped and reported */
        if (run && run->state == RUN_STARTING)
                ao_proc_spawner_want_reply(run);
}

void ao_proc_spawners_collect(struct ao_proc *p)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && p->spawners[i]->n_starting > 0)
                        read_replies(p->spawners[i], DRAIN_ANSWERED);
}

void ao_proc_spawners_want_any(struct ao_proc *p)
{
        for (int i = 0; i < SPAWNERS_MAX; i++) {
                struct spawner *s = p->spawners[i];
                if (s && s->n_starting > 0 && !s->wants_any) {
                        s->wants_any = true;
                        update_watch(s);
                }
        }
}

bool ao_proc_replies_outstanding(const struct ao_proc *p)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && p->spawners[i]->n_starting > 0)
                        return true;
        return false;
}

bool ao_proc_reply_owed(const struct ao_proc *p, const struct spawner *s, uint64_t horizon)
{
        for (const struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->state == RUN_STARTING && r->spawner && (!s || r->spawner == s) && r->id <= horizon)
                        return true;
        return false;
}

void ao_proc_spawners_learn_pids(struct ao_proc *p)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i])
                        drain_replies(p->spawners[i], learn_pid, DRAIN_ALL);
}

static int on_socket(struct ao_source *src, int fd, uint32_t revents, void *userdata)
{
        struct spawner *s = userdata;
        if (revents & AO_IO_IN)
                read_replies(s, DRAIN_ALL);
        if (revents & AO_IO_OUT)
                (void) flush_queue(s);
        return 0;
}

/*
 * A spawner died: its runs waiting for a reply will never get one. Their
 * children may exist (they are ours and the subreaper collects them); the
 * runs are reported as launch failures. The next run with this profile
 * starts a new spawner.
 */
static int on_spawner_exit(struct ao_source *src, const siginfo_t *si, const struct rusage *ru,
                           void *userdata)
{
        struct spawner *s = userdata;
        struct ao_proc *p = s->proc;
        ao_log(AO_LOG_ERROR, "proc: the spawner process for profile '%s' (pid %d) exited (%s %d)",
               s->profile ? s->profile->name : "none", (int) s->pid,
               si->si_code == CLD_EXITED ? "status" : "signal", si->si_status);
        /* Replies it sent before dying still count: those children exist and are ours. */
        drain_replies(s, handle_reply, DRAIN_ALL);
        p->spawners[s->index] = NULL;
        for (struct ao_proc_run *run = p->runs, *next; run; run = next) {
                next = run->next;
                if (run->state == RUN_STARTING && run->spawner == s) {
                        stop_waiting(s, run);
                        ao_proc_run_launched(run, -EPIPE, -1, NULL);
                }
        }
        ao_proc_spawner_stop(s);
        ao_proc_reaper_kick(p);
        return 0;
}

/* --- lifecycle ------------------------------------------------------------- */

static int launch_spawner(const char *path, int control, int listener, int status, pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_adddup2(&fa, control, SPAWNER_CONTROL_FD);
        posix_spawn_file_actions_adddup2(&fa, listener, SPAWNER_LISTENER_FD);
        if (status >= 0)
                posix_spawn_file_actions_adddup2(&fa, status, SPAWNER_STATUS_FD);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        char *argv[] = {(char *) path, NULL};
        char *envp[] = {NULL};
        int k = posix_spawn(ret_pid, path, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return -k;
}

static int spawner_start(struct ao_proc *p, uint32_t index, const struct ao_sandbox_profile *profile,
                         struct ao_error *reterr)
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "socketpair: %s", strerror(errno));
        /* Keep the fds the child gets above its targets (3, 4, 5), so each dup2 really copies. */
        int control = fcntl(sv[1], F_DUPFD_CLOEXEC, 6), listener = fcntl(p->listener_tx, F_DUPFD_CLOEXEC, 6);
        int status = p->status_fd >= 0 ? fcntl(p->status_fd, F_DUPFD_CLOEXEC, 6) : -1;
        (void) close(sv[1]);
        pid_t pid = 0;
        int k = control < 0 || listener < 0 || (p->status_fd >= 0 && status < 0)
                    ? -EMFILE
                    : launch_spawner(p->spawner_path, control, listener, status, &pid);
        (void) ao_safe_close(control);
        (void) ao_safe_close(listener);
        (void) ao_safe_close(status);
        if (k < 0) {
                (void) close(sv[0]);
                return ao_error_set(reterr, k, "starting %s: %s", p->spawner_path, strerror(-k));
        }

        struct spawner *s = ao_xcalloc(1, sizeof(*s));
        s->proc = p;
        s->index = index;
        s->serial = ++p->next_spawner_serial;
        s->profile = profile;
        s->pid = pid;
        s->sock = sv[0];
        s->listener = -1;
        s->queue_tail = &s->queue_head;
        if (fcntl(s->sock, F_SETFL, O_NONBLOCK) < 0 ||
            ao_reactor_add_io(p->reactor, &s->io, s->sock, AO_IO_IN, on_socket, s) < 0 ||
            ao_reactor_add_child(p->reactor, &s->child, pid, -1, 0, on_spawner_exit, s) < 0 ||
            (profile && send_profile(s) < 0)) {
                (void) kill(pid, SIGKILL);
                ao_proc_spawner_stop(s);
                return ao_error_set(reterr, -EIO, "setting up the spawner failed");
        }
        p->spawners[index] = s;
        ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"path", p->spawner_path}),
                    "proc: spawner for profile '%s' started as pid %d", profile ? profile->name : "none",
                    (int) pid);
        return 0;
}

struct spawner *ao_proc_spawner_for(struct ao_proc *p, const struct ao_sandbox_profile *profile)
{
        if (!p->spawner_path)
                return NULL;
        uint32_t free_slot = SPAWNERS_MAX;
        for (uint32_t i = 0; i < SPAWNERS_MAX; i++) {
                if (p->spawners[i] && p->spawners[i]->profile == profile)
                        return p->spawners[i];
                if (!p->spawners[i] && free_slot == SPAWNERS_MAX)
                        free_slot = i;
        }
        struct ao_error err = {0};
        if (free_slot == SPAWNERS_MAX) {
                ao_log(AO_LOG_WARN,
                       "proc: more than %d sandbox profiles in use; starting '%s' hooks in process",
                       SPAWNERS_MAX, profile ? profile->name : "none");
                return NULL;
        }
        if (spawner_start(p, free_slot, profile, &err) < 0) {
                ao_log(AO_LOG_ERROR, "proc: %s; starting hooks in process", err.msg);
                return NULL;
        }
        return p->spawners[free_slot];
}

struct spawner *ao_proc_spawner_stop(struct spawner *s)
{
        if (!s)
                return NULL;
        while (s->queue_head) {
                struct outgoing *o = s->queue_head;
                s->queue_head = o->next;
                outgoing_free(o);
        }
        s->io = ao_source_free(s->io);
        s->listener_source = ao_source_free(s->listener_source);
        s->listener = ao_safe_close(s->listener);
        /* Closing the socket is the spawner's signal to exit; the subreaper collects it. */
        s->sock = ao_safe_close(s->sock);
        s->child = ao_source_free(s->child);
        free(s);
        return NULL;
}

pid_t ao_proc_spawner_pid(const struct spawner *s)
{
        return s->pid;
}

int ao_proc_spawner_reap(struct spawner *s)
{
        return s->child ? ao_source_child_reap(s->child) : 0;
}
