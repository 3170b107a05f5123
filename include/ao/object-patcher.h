/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Applying object patches (object-patch.h) to the cluster, after the hook that wrote them
 * succeeded. Operations run one after another; every one runs even when an earlier one failed,
 * and the failures are reported together, each naming its operation and object:
 *
 *   "CreateOrUpdate ConfigMap default/x: HTTP 422: ConfigMap \"x\" is invalid: ..."
 *
 *   Create              POST; an existing object is an error
 *   CreateIfNotExists   POST; an existing object is fine
 *   CreateOrUpdate      POST; when it exists, GET its resourceVersion and PUT (again on 409, 5 times)
 *   Delete              DELETE (Foreground); then GET every second, up to 20 s, until it is gone;
 *                       a missing object is fine
 *   DeleteInBackground  DELETE (Background), no waiting
 *   DeleteNonCascading  DELETE (Orphan), no waiting
 *   JQPatch             GET, run the jqFilter on it, PUT the result when it differs (again on 409)
 *   MergePatch          PATCH application/merge-patch+json
 *   JSONPatch           PATCH application/json-patch+json
 *
 * The patch operations go to the subresource when one is named; ignoreMissingObject turns a
 * missing object into success for them. Requests go through the client given (the operator
 * gives the patcher its own, with OBJECT_PATCHER_KUBE_CLIENT_QPS / _BURST / _TIMEOUT).
 *
 * Main thread only.
 */

#include "ao/error.h"

struct ao_jq_cache;
struct ao_kube_client;
struct ao_kube_discovery;
struct ao_object_patch_ops;
struct ao_reactor;
struct ao_object_patch_run;

/** How the run ended: @error NULL when every operation succeeded. */
typedef void ao_object_patch_done_handler(const struct ao_error *error, void *userdata);

struct ao_object_patcher_env {
        struct ao_reactor *reactor;
        struct ao_kube_client *client;
        const struct ao_kube_discovery *discovery; /* must outlive the run */
        struct ao_jq_cache *jq;
        double retry_scale; /* multiplies the 1 s Delete poll interval (tests); <= 0: 1 */
};

/**
 * Start applying @ops (taken). @done is called exactly once, from the loop, unless the run is
 * cancelled. @ret (optional) stays valid until then.
 */
int ao_object_patch_apply(const struct ao_object_patcher_env *env, struct ao_object_patch_ops *ops,
                          ao_object_patch_done_handler *done, void *userdata,
                          struct ao_object_patch_run **ret, struct ao_error *reterr);
/** Stop: no more requests, @done is not called. NULL is accepted. */
void ao_object_patch_run_cancel(struct ao_object_patch_run *run);
