/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Leader election on a coordination.k8s.io/v1 Lease, the way client-go's leader elector does it:
 *
 *   - every retry period, try to acquire or renew: a missing Lease is created with this identity;
 *     one held by someone else is taken over only when its record has not changed for a whole
 *     lease duration, measured on our own clock from when we last saw it change (so clocks of
 *     the replicas need not agree); conflicts (409) mean someone else won this round;
 *   - the leader renews every retry period; when renewing has failed for the renew deadline,
 *     leadership is lost (reported once; the operator then stops, as the Go operator exits);
 *   - stopping as the leader releases the Lease (empty holder, 1 s duration) so a follower takes
 *     over at once.
 *
 * Main thread only.
 */

#include <stdint.h>

#include "ao/error.h"

struct ao_kube_client;
struct ao_kube_resource;
struct ao_reactor;
struct ao_lease;

struct ao_lease_options {
        struct ao_reactor *reactor;
        struct ao_kube_client *client;
        const struct ao_kube_resource *resource; /* coordination.k8s.io/v1 leases; must outlive the elector */
        const char *namespace_;
        const char *name;             /* "addon-operator-leader-election" */
        const char *identity;         /* this replica */
        uint64_t lease_duration_usec; /* 35 s */
        uint64_t renew_deadline_usec; /* 30 s */
        uint64_t retry_period_usec;   /* 10 s */
        void (*on_acquired)(void *userdata);
        void (*on_lost)(void *userdata);
        /* The holder read from the Lease changed ("": none, as in a released Lease); may be NULL. */
        void (*on_holder)(const char *holder, void *userdata);
        void *userdata;
};

int ao_lease_start(const struct ao_lease_options *options, struct ao_lease **ret, struct ao_error *reterr);
/** Stop; as the leader, release the Lease first (the request is sent, not awaited). NULL is accepted. */
struct ao_lease *ao_lease_free(struct ao_lease *l);
