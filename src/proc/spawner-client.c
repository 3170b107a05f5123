/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's side of one spawner (src/proc/spawner.c): start it, send
 * it its profile and spawn requests, and hand its replies to the owner
 * (on_reply), as well as its death (on_exit). Which run a reply is for is
 * the owner's business: this file counts the replies owed and the ones
 * someone waits for, and knows nothing of runs. Requests that the socket
 * cannot take right now wait in a FIFO until it is writable: the loop
 * never blocks on the spawner. With lazy replies (see struct
 * spawner_setup) the socket is polled for replies only while someone waits
 * for one.
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
        return !s->lazy_replies || s->n_needing > 0 || (s->wants_any && s->n_starting > 0);
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

int proc_spawner_request(struct spawner *s, uint64_t id, int status_slot, const char *path, char *const *argv,
                         char *const *envp, const char *cwd, int stdout_fd, int stderr_fd)
{
        struct ao_strbuf strings = {0};
        ao_strbuf_append_n(&strings, path, strlen(path) + 1);
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
                                        .status_slot = status_slot,
                                        .id = id,
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

void proc_spawner_settle(struct spawner *s, bool needed)
{
        s->n_starting--;
        if (needed)
                s->n_needing--;
}

void proc_spawner_drain(struct spawner *s, spawner_reply_handler *handle, enum spawner_drain until)
{
        while (until == SPAWNER_DRAIN_ALL || s->n_starting > 0) {
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
                        handle(s->owner, &r);
        }
}

/*
 * Whoever waited for "any reply" (an unknown pid) looks again once replies
 * are read, and says whether it still has to wait.
 */
void proc_spawner_read_replies(struct spawner *s, enum spawner_drain until)
{
        proc_spawner_drain(s, s->ops->on_reply, until);
        s->wants_any = s->ops->on_replies_read(s->owner);
        update_watch(s);
}

void proc_spawner_need_reply(struct spawner *s)
{
        s->n_needing++;
        update_watch(s);
}

void proc_spawner_want_any(struct spawner *s)
{
        if (s->n_starting > 0 && !s->wants_any) {
                s->wants_any = true;
                update_watch(s);
        }
}

static int on_socket(struct ao_source *src, int fd, uint32_t revents, void *userdata)
{
        struct spawner *s = userdata;
        if (revents & AO_IO_IN)
                proc_spawner_read_replies(s, SPAWNER_DRAIN_ALL);
        if (revents & AO_IO_OUT)
                (void) flush_queue(s);
        return 0;
}

/*
 * A spawner died: the requests it owes will never be answered. Their
 * children may exist (they are ours and the subreaper collects them); the
 * owner fails their runs and stops this spawner, so the next run with this
 * profile starts a new one.
 */
static int on_spawner_exit(struct ao_source *src, const siginfo_t *si, const struct rusage *ru,
                           void *userdata)
{
        struct spawner *s = userdata;
        ao_log(AO_LOG_ERROR, "proc: the spawner process for profile '%s' (pid %d) exited (%s %d)",
               s->profile ? s->profile->name : "none", (int) s->pid,
               si->si_code == CLD_EXITED ? "status" : "signal", si->si_status);
        /* Replies it sent before dying still count: those children exist and are ours. */
        proc_spawner_drain(s, s->ops->on_reply, SPAWNER_DRAIN_ALL);
        s->ops->on_exit(s->owner); /* frees @s */
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

/* The spawner process, with @sock (taken) as its end of the socket. */
static int start_process(struct spawner_setup *setup, int sock, pid_t *ret_pid, struct ao_error *reterr)
{
        /* Keep the fds the child gets above its targets (3, 4, 5), so each dup2 really copies. */
        int control = fcntl(sock, F_DUPFD_CLOEXEC, 6),
            listener = fcntl(setup->listener_fd, F_DUPFD_CLOEXEC, 6);
        int status = setup->status_fd >= 0 ? fcntl(setup->status_fd, F_DUPFD_CLOEXEC, 6) : -1;
        (void) close(sock);
        int k = control < 0 || listener < 0 || (setup->status_fd >= 0 && status < 0)
                    ? -EMFILE
                    : launch_spawner(setup->path, control, listener, status, ret_pid);
        (void) ao_safe_close(control);
        (void) ao_safe_close(listener);
        (void) ao_safe_close(status);
        if (k < 0)
                return ao_error_set(reterr, k, "starting %s: %s", setup->path, strerror(-k));
        return 0;
}

int proc_spawner_init(struct spawner *s, struct spawner_setup *setup,
                      const struct ao_sandbox_profile *profile, void *owner, struct ao_error *reterr)
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "socketpair: %s", strerror(errno));
        pid_t pid = 0;
        int k = start_process(setup, sv[1], &pid, reterr);
        if (k < 0) {
                (void) close(sv[0]);
                return k;
        }

        *s = (struct spawner){
            .ops = setup->ops,
            .owner = owner,
            .lazy_replies = setup->lazy_replies,
            .serial = ++setup->last_serial,
            .profile = profile,
            .pid = pid,
            .sock = sv[0],
        };
        s->queue_tail = &s->queue_head;
        if (fcntl(s->sock, F_SETFL, O_NONBLOCK) < 0 ||
            ao_reactor_add_io(setup->reactor, &s->io, s->sock, AO_IO_IN, on_socket, s) < 0 ||
            ao_reactor_add_child(setup->reactor, &s->child, pid, -1, 0, on_spawner_exit, s) < 0 ||
            (profile && send_profile(s) < 0)) {
                (void) kill(pid, SIGKILL);
                proc_spawner_done(s);
                return ao_error_set(reterr, -EIO, "setting up the spawner failed");
        }
        ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"path", setup->path}),
                    "proc: spawner for profile '%s' started as pid %d", profile ? profile->name : "none",
                    (int) pid);
        return 0;
}

void proc_spawner_done(struct spawner *s)
{
        while (s->queue_head) {
                struct outgoing *o = s->queue_head;
                s->queue_head = o->next;
                outgoing_free(o);
        }
        s->io = ao_source_free(s->io);
        /* Closing the socket is the spawner's signal to exit; the subreaper collects it. */
        s->sock = ao_safe_close(s->sock);
        s->child = ao_source_free(s->child);
}

int proc_spawner_reap(struct spawner *s)
{
        return s->child ? ao_source_child_reap(s->child) : 0;
}
