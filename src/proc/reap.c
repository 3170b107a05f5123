/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator as child subreaper. Hooks that double-fork leave
 * descendants that the kernel re-parents to us; when they die, only we can
 * reap them. On every SIGCHLD: peek at exited children without reaping
 * (WNOWAIT), let the owner reap the ones it knows (a run's child through its
 * own source, which reaps it with rusage and reports), and reap anything
 * else as an orphan.
 *
 * A child started through the spawner is ours before the owner knows its
 * pid (its reply is in flight, or not read yet: see lazy_replies). An
 * unknown pid first makes the owner read the replies that have come. If it
 * is still unknown, it is an orphan, unless the owner holds it (a request
 * sent before it was first seen is still unanswered): then it is left
 * alone, and the reply that ends the wait kicks the reaper again.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "ao/log.h"
#include "ao/reactor.h"
#include "internal.h"

static void reap_exited(struct reaper *r)
{
        bool replies_read = false;
        for (;;) {
                siginfo_t si = {0};
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
                        return;
                enum reap_claim claim = r->ops->on_exit(r->owner, si.si_pid);
                if (claim == REAP_STUCK)
                        return; /* could not reap it now; its own source will */
                if (claim == REAP_REAPED)
                        continue;
                if (!replies_read && r->ops->read_replies(r->owner, si.si_pid)) {
                        replies_read = true;
                        continue; /* look again: it may be known now, or even reaped */
                }
                if (r->ops->hold(r->owner, si.si_pid)) {
                        r->deferred = true;
                        return;
                }
                struct rusage ru;
                int status;
                if (wait4(si.si_pid, &status, WNOHANG, &ru) == si.si_pid) {
                        r->orphans++;
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

int proc_reaper_init(struct reaper *r, struct ao_reactor *reactor, const struct reaper_ops *ops, void *owner)
{
        r->ops = ops;
        r->owner = owner;
        /* COMPAT: the operator is often PID 1 in its container, where this is implied; elsewhere it is not. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                return ao_negative_errno();
        int k = ao_reactor_add_signal(reactor, &r->sigchld, SIGCHLD, on_sigchld, r);
        if (k < 0)
                return k;
        /* A one-shot defer: runs once now (children that exited before we watched SIGCHLD), then on kicks. */
        return ao_reactor_add_defer(reactor, &r->retry, on_retry, r);
}

void proc_reaper_done(struct reaper *r)
{
        r->sigchld = ao_source_free(r->sigchld);
        r->retry = ao_source_free(r->retry);
}

void proc_reaper_kick(struct reaper *r)
{
        /* Only a pass that left a child for later needs another: most replies find nothing to do. */
        if (r->retry && r->deferred) {
                r->deferred = false;
                (void) ao_source_set_enabled(r->retry, AO_SOURCE_ONESHOT);
        }
}
