/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator as child subreaper. Hooks that double-fork leave
 * descendants that the kernel re-parents to us; when they die, only we can
 * reap them. On every SIGCHLD: peek at exited children without reaping
 * (WNOWAIT), hand a known run's child to its own pidfd source (which reaps
 * it with rusage and reports), and reap anything else as an orphan.
 *
 * A child started through the spawner is ours before we know its pid (its
 * reply is in flight, or not read yet: see lazy_replies). An unknown pid
 * first makes us read the replies that have come. If it is still unknown, it
 * is an orphan, unless a request sent before it was first seen is still
 * unanswered: then it is left alone, and the reply that ends the wait kicks
 * the reaper again.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "ao/reactor.h"
#include "internal.h"

static struct spawner *spawner_by_pid(struct ao_proc *p, pid_t pid)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && ao_proc_spawner_pid(p->spawners[i]) == pid)
                        return p->spawners[i];
        return NULL;
}

/* Whether @pid could be the child of a run whose reply has not come: a request before it is unanswered. */
static bool may_await_reply(struct ao_proc *p, pid_t pid)
{
        if (!ao_proc_replies_outstanding(p))
                return false;
        if (pid != p->unknown_pid) {
                p->unknown_pid = pid;
                p->unknown_horizon = p->next_id;
        }
        return ao_proc_reply_owed(p, NULL, p->unknown_horizon);
}

static void reap_exited(struct ao_proc *p)
{
        bool collected = false;
        for (;;) {
                siginfo_t si = {0};
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
                        return;
                struct ao_proc_run *run = ao_proc_run_find_pid(p, si.si_pid);
                if (run && run->child) {
                        if (ao_source_child_reap(run->child) <= 0)
                                return; /* could not reap it now; its pidfd source will */
                        continue;
                }
                struct spawner *spawner = spawner_by_pid(p, si.si_pid);
                if (spawner) {
                        if (ao_proc_spawner_reap(spawner) <= 0)
                                return;
                        continue;
                }
                if (!collected && ao_proc_replies_outstanding(p)) {
                        collected = true;
                        p->exited_pid = si.si_pid;
                        ao_proc_spawners_collect(p);
                        p->exited_pid = 0;
                        continue; /* look again: it may be known now, or even reaped */
                }
                if (may_await_reply(p, si.si_pid)) {
                        p->reap_deferred = true;
                        ao_proc_spawners_want_any(p);
                        return;
                }
                struct rusage ru;
                int status;
                if (wait4(si.si_pid, &status, WNOHANG, &ru) == si.si_pid) {
                        p->orphans++;
                        ao_log(AO_LOG_DEBUG, "proc: reaped orphaned process %d", (int) si.si_pid);
                }
        }
}

static int on_sigchld(struct ao_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        reap_exited(userdata);
        return 0;
}

static int on_retry(struct ao_source *s, void *userdata)
{
        reap_exited(userdata);
        return 0;
}

int ao_proc_reaper_setup(struct ao_proc *p)
{
        /* COMPAT: the operator is often PID 1 in its container, where this is implied; elsewhere it is not. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                return ao_negative_errno();
        int k = ao_reactor_add_signal(p->reactor, &p->sigchld, SIGCHLD, on_sigchld, p);
        if (k < 0)
                return k;
        p->lazy_replies = true; /* SIGCHLD now tells of every exit, whatever holds the output open */
        /* A one-shot defer: runs once now (children that exited before we watched SIGCHLD), then on kicks. */
        return ao_reactor_add_defer(p->reactor, &p->reaper_retry, on_retry, p);
}

void ao_proc_reaper_done(struct ao_proc *p)
{
        p->sigchld = ao_source_free(p->sigchld);
        p->reaper_retry = ao_source_free(p->reaper_retry);
}

void ao_proc_reaper_kick(struct ao_proc *p)
{
        /* Only a pass that left a child for later needs another: most replies find nothing to do. */
        if (p->reaper_retry && p->reap_deferred) {
                p->reap_deferred = false;
                (void) ao_source_set_enabled(p->reaper_retry, AO_SOURCE_ONESHOT);
        }
}
