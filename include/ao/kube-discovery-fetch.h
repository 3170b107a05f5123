/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Filling a discovery table from the server: GET /api/v1 and /apis, then every group/version
 * the group list names, all in parallel through the client. A group/version that fails (an
 * aggregated API that is down answers 503) is logged and left out, as kubectl does; only the
 * core group or the group list failing fails the fetch.
 *
 * Main thread only.
 */

#include "ao/error.h"

struct ao_kube_client;
struct ao_kube_discovery;
struct ao_kube_discovery_fetch;

/** @error is NULL on success. */
typedef void ao_kube_discovery_done(const struct ao_error *error, void *userdata);

/**
 * Fill @d (a new, empty table: monitors keep pointers into the one they were started with, so a
 * refresh goes into a fresh table); @done is called once, from the loop. @ret (optional) can cancel
 * it; it stays valid until @done runs.
 */
int ao_kube_discovery_fetch(struct ao_kube_client *c, struct ao_kube_discovery *d,
                            ao_kube_discovery_done *done, void *userdata,
                            struct ao_kube_discovery_fetch **ret, struct ao_error *reterr);
/** Cancel: @done is not called. NULL is accepted. */
void ao_kube_discovery_fetch_cancel(struct ao_kube_discovery_fetch *f);
