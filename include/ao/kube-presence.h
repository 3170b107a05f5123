/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Which of a set of objects are missing from the cluster: a GET for each,
 * a few at a time, stopping at the first 404. Release auto-healing and the
 * release de-duplication use it to tell whether something helm created was
 * deleted behind its back.
 *
 * Main thread only.
 */

#include <stddef.h>

#include "ao/error.h"

struct ao_reactor;
struct ao_kube_client;
struct ao_kube_discovery;
struct ao_kube_presence;

struct ao_kube_object_ref {
        const char *api_version, *kind;
        const char *namespace; /* NULL: cluster-scoped, or namespaced without one (then absent) */
        const char *name;
};

/*
 * @absent: the first object found missing (valid during the call), or NULL when every object
 * exists. On a transport error or an unexpected status, @absent is NULL and @error says which
 * object could not be checked.
 */
typedef void ao_kube_presence_done(const struct ao_kube_object_ref *absent, const struct ao_error *error,
                                   void *userdata);

/**
 * Check @n objects (copied) with at most @parallel requests at a time (0: 5). A kind the
 * discovery table does not know counts as absent: its objects cannot exist. @done runs exactly
 * once, never from inside this call, unless cancelled. @ret (may be NULL) is valid until then.
 */
int ao_kube_find_absent(struct ao_reactor *reactor, struct ao_kube_client *client,
                        const struct ao_kube_discovery *discovery, const struct ao_kube_object_ref *objects,
                        size_t n, unsigned parallel, ao_kube_presence_done *done, void *userdata,
                        struct ao_kube_presence **ret, struct ao_error *reterr);

/** Stop a check; its callback does not run. NULL is accepted. */
void ao_kube_presence_cancel(struct ao_kube_presence *p);
