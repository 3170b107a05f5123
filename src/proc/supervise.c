/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandbox violations. A sandboxed child installs its seccomp filter with a
 * user-notification listener and, before exec, sends that listener to the
 * operator over listener_rx, tagged with its run id. Each syscall the
 * profile denies then waits for the operator's answer here: it is logged by
 * name (at most a few per run, then counted) and refused with EPERM, or the
 * process group is killed when the profile says so.
 */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/fdpass.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "internal.h"
#include "protocol.h"

#define VIOLATIONS_LOGGED_PER_RUN 10

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

static void log_violation(struct ao_proc_run *run, pid_t pid, int nr)
{
        run->result.violations++;
        if (run->violations_logged >= VIOLATIONS_LOGGED_PER_RUN)
                return;
        run->violations_logged++;
        const char *name = ao_sandbox_syscall_name(nr);
        char number[16];
        (void) snprintf(number, sizeof(number), "%d", nr);
        const char *profile = run->profile ? run->profile->name : "none";
        bool kill_it = run->profile && run->profile->on_violation == AO_SANDBOX_DENY_KILL;
        const struct ao_log_context *prev = ao_log_context_swap(&run->log_context);
        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"syscall", name ? name : number}, {"profile", profile}),
                    "sandbox violation: pid %d called %s, %s by profile '%s'%s", (int) pid,
                    name ? name : number, kill_it ? "killed" : "denied (EPERM)", profile,
                    run->violations_logged == VIOLATIONS_LOGGED_PER_RUN
                        ? "; further violations are only counted"
                        : "");
        ao_log_context_swap(prev);
}

/* Deal with one denied call of @run: kill first when the profile says so, then log, then answer. */
static void settle(struct ao_proc_run *run, int listener, uint64_t id, pid_t pid, int nr)
{
        if (run->result.killed) {
                /* Already being killed for an earlier violation: just release the caller. */
                (void) answer(listener, id, EPERM);
                return;
        }
        /* Kill before answering: the caller must not run one more instruction after a violation. */
        if (run->profile && run->profile->on_violation == AO_SANDBOX_DENY_KILL)
                ao_proc_run_kill(run);
        log_violation(run, pid, nr);
        (void) answer(listener, id, EPERM);
}

static int on_notification(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct ao_proc_run *run = userdata;
        if (!(revents & AO_IO_IN)) {
                /* HUP: every process using the filter is gone. */
                ao_proc_supervise_run_done(run);
                return 0;
        }
        union notif_request n;
        if (receive(fd, &n))
                settle(run, fd, n.req.id, (pid_t) n.req.pid, n.req.data.nr);
        return 0;
}

/* --- a spawner's listener: one filter shared by every child of that spawner ---------- */

/* The process group of @pid: a hook's descendants share their hook's group (its pid). */
static pid_t process_group_of(pid_t pid)
{
        char path[64], buf[512];
        (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        (void) close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        const char *after_name = strrchr(buf, ')');
        int pgrp;
        if (!after_name || sscanf(after_name + 2, "%*c %*d %d", &pgrp) != 1)
                return -1;
        return pgrp;
}

static struct ao_proc_run *run_by_leader(struct ao_proc *p, pid_t pid)
{
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->pid == pid && r->state != RUN_STARTING)
                        return r;
        return NULL;
}

static struct ao_proc_run *run_of_caller(struct ao_proc *p, pid_t pid)
{
        struct ao_proc_run *run = run_by_leader(p, pid);
        return run ? run : run_by_leader(p, process_group_of(pid));
}

static void settle_unknown(struct spawner *s, uint64_t id, pid_t pid, int nr)
{
        const char *name = ao_sandbox_syscall_name(nr);
        ao_log(AO_LOG_WARN,
               "sandbox violation: pid %d (no longer a known hook) called %s, denied by profile '%s'",
               (int) pid, name ? name : "an unknown syscall", s->profile ? s->profile->name : "none");
        (void) answer(s->listener, id, EPERM);
}

static int on_spawner_notification(struct ao_source *src, int fd, uint32_t revents, void *userdata)
{
        struct spawner *s = userdata;
        if (!(revents & AO_IO_IN))
                return 0; /* HUP only when the spawner and all its children are gone */
        union notif_request n;
        if (!receive(fd, &n))
                return 0;
        const struct seccomp_notif *req = &n.req;
        pid_t pid = (pid_t) req->pid;
        struct ao_proc *p = s->proc;
        struct ao_proc_run *run = run_of_caller(p, pid);
        if (run) {
                settle(run, fd, req->id, pid, req->data.nr);
                return 0;
        }
        /* Most likely a hook that ran into the sandbox before its spawn reply was read: park it. */
        struct parked_notification parked = {
            .id = req->id, .pid = pid, .nr = req->data.nr, .horizon = p->next_id};
        if (s->n_starting > 0 && s->n_parked < PARKED_MAX) {
                s->parked[s->n_parked++] = parked;
                ao_proc_spawners_collect(p); /* reads this spawner's replies and unparks */
        } else {
                settle_unknown(s, req->id, pid, req->data.nr);
        }
        return 0;
}

void ao_proc_supervise_unpark(struct spawner *s)
{
        size_t kept = 0;
        for (size_t i = 0; i < s->n_parked; i++) {
                struct parked_notification n = s->parked[i];
                struct ao_proc_run *run = run_of_caller(s->proc, n.pid);
                if (run)
                        settle(run, s->listener, n.id, n.pid, n.nr);
                else if (ao_proc_reply_owed(s->proc, s, n.horizon))
                        s->parked[kept++] = n;
                else
                        settle_unknown(s, n.id, n.pid, n.nr);
        }
        s->n_parked = kept;
        if (kept > 0)
                s->wants_any = true; /* the caller waits in its system call: read the next reply at once */
}

static void attach_spawner_listener(struct ao_proc *p, uint32_t serial, int listener)
{
        struct spawner *s = NULL;
        for (int i = 0; i < SPAWNERS_MAX && !s; i++)
                if (p->spawners[i] && p->spawners[i]->serial == serial)
                        s = p->spawners[i];
        if (!s || s->listener >= 0) {
                (void) close(listener);
                return;
        }
        s->listener = listener;
        int k = ao_reactor_add_io(p->reactor, &s->listener_source, listener, AO_IO_IN,
                                  on_spawner_notification, s);
        if (k < 0) {
                /* Unanswered, a denied call would block its hook forever: stop this spawner instead. */
                ao_log_errno(AO_LOG_ERROR, k,
                             "proc: cannot watch the sandbox listener of a spawner, stopping it");
                (void) kill(s->pid, SIGKILL);
        }
}

/* --- a run's own listener (in-process launches install the filter per child) ---------- */

static void attach_listener(struct ao_proc *p, uint64_t id, int listener)
{
        if (id & SPAWNER_LISTENER_TAG) {
                attach_spawner_listener(p, (uint32_t) (id & ~SPAWNER_LISTENER_TAG), listener);
                return;
        }
        struct ao_proc_run *run = ao_proc_run_find(p, id);
        if (!run || run->listener >= 0) {
                (void) close(listener);
                return;
        }
        run->listener = listener;
        int k =
            ao_reactor_add_io(p->reactor, &run->listener_source, listener, AO_IO_IN, on_notification, run);
        if (k < 0) {
                /* Without supervision a denied call would block forever: do not let the hook run. */
                ao_log_errno(AO_LOG_ERROR, k,
                             "proc: cannot watch the seccomp listener of run %llu, killing it",
                             (unsigned long long) id);
                ao_proc_supervise_run_done(run);
                ao_proc_run_kill(run);
        }
}

/* A child sent its listener: one message, the run id as payload, the fd as SCM_RIGHTS. */
static int on_listener_message(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct ao_proc *p = userdata;
        for (;;) {
                uint64_t id = 0;
                int fds[AO_FDPASS_MAX_FDS];
                size_t n_fds;
                ssize_t n = ao_fdpass_recv(fd, &id, sizeof(id), fds, AO_FDPASS_MAX_FDS, &n_fds, MSG_DONTWAIT);
                if (n < 0 && n != -EMSGSIZE)
                        return 0;
                for (size_t i = 1; i < n_fds; i++)
                        (void) close(fds[i]);
                if (n_fds == 0)
                        continue;
                if (n != (ssize_t) sizeof(id)) {
                        (void) close(fds[0]);
                        continue;
                }
                attach_listener(p, id, fds[0]);
        }
}

int ao_proc_supervise_setup(struct ao_proc *p)
{
        struct seccomp_notif_sizes sizes = {0};
        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 &&
            (sizes.seccomp_notif > NOTIF_BUFFER_SIZE || sizes.seccomp_notif_resp > NOTIF_BUFFER_SIZE))
                return -EOVERFLOW; /* a future kernel with far larger structs: do not guess */
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                return ao_negative_errno();
        p->listener_rx = sv[0];
        p->listener_tx = sv[1];
        /* Children block on their end rather than fail when the operator is slow to read. */
        if (fcntl(p->listener_tx, F_SETFL, 0) < 0)
                return ao_negative_errno();
        return ao_reactor_add_io(p->reactor, &p->listener_rx_source, p->listener_rx, AO_IO_IN,
                                 on_listener_message, p);
}

void ao_proc_supervise_done(struct ao_proc *p)
{
        p->listener_rx_source = ao_source_free(p->listener_rx_source);
        p->listener_rx = ao_safe_close(p->listener_rx);
        p->listener_tx = ao_safe_close(p->listener_tx);
}

void ao_proc_supervise_run_done(struct ao_proc_run *run)
{
        run->listener_source = ao_source_free(run->listener_source);
        run->listener = ao_safe_close(run->listener);
}
