/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/shutdown.h"

#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/reactor.h"

#define PARTICIPANTS_MAX 16

enum shutdown_phase {
        PHASE_RUNNING,
        PHASE_DRAINING, /* waiting for work to finish, grace timer armed */
        PHASE_FORCED,   /* work was killed; waiting for it to be reaped */
        PHASE_DONE,
};

struct participant {
        const struct ao_shutdown_participant *ops;
        void *userdata;
};

struct ao_shutdown {
        struct ao_reactor *reactor; /* borrowed, outlives the coordinator */
        uint64_t grace_usec;
        enum shutdown_phase phase;
        int exit_code;
        struct ao_source *sigterm, *sigint;
        struct ao_source *timer; /* grace period, then reap timeout */
        struct ao_source *check; /* deferred completion check */
        struct participant participants[PARTICIPANTS_MAX];
        size_t n_participants;
};

static size_t total_pending(const struct ao_shutdown *sd)
{
        size_t n = 0;
        for (size_t i = 0; i < sd->n_participants; i++)
                n += sd->participants[i].ops->pending(sd->participants[i].userdata);
        return n;
}

static void finish(struct ao_shutdown *sd)
{
        sd->phase = PHASE_DONE;
        (void) ao_source_set_enabled(sd->timer, AO_SOURCE_OFF);
        ao_reactor_exit(sd->reactor, sd->exit_code);
}

static void force_all(struct ao_shutdown *sd)
{
        for (size_t i = 0; i < sd->n_participants; i++) {
                const struct participant *p = &sd->participants[i];
                size_t left = p->ops->pending(p->userdata);
                if (left == 0)
                        continue;
                ao_log(AO_LOG_WARN, "shutdown: killing %zu unfinished %s", left, p->ops->name);
                if (p->ops->force)
                        p->ops->force(p->userdata);
        }
        sd->phase = PHASE_FORCED;
        (void) ao_source_set_time_relative(sd->timer, AO_SHUTDOWN_REAP_TIMEOUT_USEC);
}

static int on_check(struct ao_source *s, void *userdata)
{
        struct ao_shutdown *sd = userdata;
        if ((sd->phase == PHASE_DRAINING || sd->phase == PHASE_FORCED) && total_pending(sd) == 0)
                finish(sd);
        return 0;
}

static int on_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_shutdown *sd = userdata;
        if (sd->phase == PHASE_DRAINING) {
                ao_log(AO_LOG_WARN, "shutdown: grace period of %llu s is over",
                       (unsigned long long) (sd->grace_usec / AO_USEC_PER_SEC));
                force_all(sd);
                (void) ao_source_set_enabled(sd->check, AO_SOURCE_ONESHOT);
        } else if (sd->phase == PHASE_FORCED) {
                ao_log(AO_LOG_ERROR, "shutdown: %zu killed processes were not reaped in time, exiting anyway",
                       total_pending(sd));
                finish(sd);
        }
        return 0;
}

void ao_shutdown_begin(struct ao_shutdown *sd, int signo)
{
        if (sd->phase != PHASE_RUNNING)
                return;
        sd->phase = PHASE_DRAINING;
        sd->exit_code = 0;
        size_t pending = total_pending(sd);
        ao_log(AO_LOG_INFO, "shutdown: %s%s received, stopping; %zu running, grace period %llu ms",
               signo ? "SIG" : "", signo ? sigabbrev_np(signo) : "request", pending,
               (unsigned long long) (sd->grace_usec / AO_USEC_PER_MSEC));
        for (size_t i = 0; i < sd->n_participants; i++)
                if (sd->participants[i].ops->begin)
                        sd->participants[i].ops->begin(sd->participants[i].userdata);
        (void) ao_source_set_time_relative(sd->timer, sd->grace_usec);
        (void) ao_source_set_enabled(sd->check, AO_SOURCE_ONESHOT);
}

static int on_signal(struct ao_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct ao_shutdown *sd = userdata;
        int signo = (int) si->ssi_signo;
        if (sd->phase == PHASE_RUNNING) {
                ao_shutdown_begin(sd, signo);
                return 0;
        }
        if (sd->phase == PHASE_DONE)
                return 0;
        /* Second signal: the user does not want to wait. */
        ao_log(AO_LOG_WARN, "shutdown: second signal SIG%s, exiting now", sigabbrev_np(signo));
        if (sd->phase == PHASE_DRAINING)
                force_all(sd);
        sd->exit_code = 128 + signo;
        finish(sd);
        return 0;
}

int ao_shutdown_new(struct ao_reactor *reactor, uint64_t grace_usec, struct ao_shutdown **ret)
{
        struct ao_shutdown *sd = ao_xcalloc(1, sizeof(*sd));
        sd->reactor = reactor;
        sd->grace_usec = grace_usec;
        int k = ao_reactor_add_signal(reactor, &sd->sigterm, SIGTERM, on_signal, sd);
        if (k >= 0)
                k = ao_reactor_add_signal(reactor, &sd->sigint, SIGINT, on_signal, sd);
        if (k >= 0)
                k = ao_reactor_add_time(reactor, &sd->timer, 0, on_timer, sd);
        if (k >= 0)
                k = ao_reactor_add_defer(reactor, &sd->check, on_check, sd);
        if (k < 0) {
                ao_shutdown_free(sd);
                return k;
        }
        (void) ao_source_set_description(sd->timer, "shutdown-timer");
        (void) ao_source_set_enabled(sd->timer, AO_SOURCE_OFF);
        (void) ao_source_set_enabled(sd->check, AO_SOURCE_OFF);
        *ret = sd;
        return 0;
}

struct ao_shutdown *ao_shutdown_free(struct ao_shutdown *sd)
{
        if (!sd)
                return NULL;
        ao_source_free(sd->sigterm);
        ao_source_free(sd->sigint);
        ao_source_free(sd->timer);
        ao_source_free(sd->check);
        free(sd);
        return NULL;
}

int ao_shutdown_register(struct ao_shutdown *sd, const struct ao_shutdown_participant *p, void *userdata)
{
        if (!p || !p->pending)
                return -EINVAL;
        if (sd->n_participants == PARTICIPANTS_MAX)
                return -ENOSPC;
        sd->participants[sd->n_participants++] = (struct participant){.ops = p, .userdata = userdata};
        return 0;
}

void ao_shutdown_progress(struct ao_shutdown *sd)
{
        if (sd->phase == PHASE_DRAINING || sd->phase == PHASE_FORCED)
                (void) ao_source_set_enabled(sd->check, AO_SOURCE_ONESHOT);
}

bool ao_shutdown_in_progress(const struct ao_shutdown *sd)
{
        return sd->phase != PHASE_RUNNING;
}
