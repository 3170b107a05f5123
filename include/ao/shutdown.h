/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Graceful shutdown. The first SIGTERM or SIGINT stops new work, lets what
 * is running finish for up to a grace period (--shutdown-timeout), then
 * kills what is left and ends the loop with exit code 0. A second signal
 * kills what is left at once and ends the loop with 128 + signal number.
 *
 * Subsystems that own running work (hook children, helm, ...) register as
 * participants and report progress; the coordinator never needs to know
 * what they run. Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/macro.h"

struct ao_reactor;
struct ao_shutdown;

struct ao_shutdown_participant {
        const char *name; /* for logs; borrowed, outlives the registration */
        /* Stop accepting new work. May be NULL. */
        void (*begin)(void *userdata);
        /* How much work is still running; shutdown completes when every participant reports 0. */
        size_t (*pending)(void *userdata);
        /* The grace period is over or a second signal came: kill everything still running (SIGKILL to
         * process groups). Work killed this way must still be reported through pending(). */
        void (*force)(void *userdata);
};

/* Once force() was called, how long to wait for the killed work to be reaped before giving up. */
#define AO_SHUTDOWN_REAP_TIMEOUT_USEC (5 * AO_USEC_PER_SEC)

/**
 * Create the coordinator and hook SIGTERM and SIGINT on @reactor (both must
 * be blocked). @grace_usec is the grace period. Returns 0 or a negative errno.
 */
int ao_shutdown_new(struct ao_reactor *reactor, uint64_t grace_usec, struct ao_shutdown **ret);
struct ao_shutdown *ao_shutdown_free(struct ao_shutdown *sd);

/** Add a participant; @p is borrowed and must outlive the coordinator. At most 16. */
int ao_shutdown_register(struct ao_shutdown *sd, const struct ao_shutdown_participant *p, void *userdata);

/** A participant's pending count went down: check whether shutdown can complete now. */
void ao_shutdown_progress(struct ao_shutdown *sd);

/** Start a graceful shutdown as if @signo had arrived (0: requested internally). Idempotent. */
void ao_shutdown_begin(struct ao_shutdown *sd, int signo);

/** True once shutdown began: subsystems stop taking new tasks. */
bool ao_shutdown_in_progress(const struct ao_shutdown *sd);
