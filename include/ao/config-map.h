/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The config store in a cluster: ConfigMap <namespace>/<name> (ADDON_OPERATOR_NAMESPACE /
 * ADDON_OPERATOR_CONFIG_MAP), in the data shape config-data.h describes. The same contract as
 * the local config file (config-file.h), over the API:
 *
 *   - read through an informer (a watch with a metadata.name field selector); a missing
 *     ConfigMap is empty data, a deleted one resets the data to empty;
 *   - a change that parses is reported with the new data; one that does not is reported as
 *     invalid and the previous data stays;
 *   - writes (config patches from hooks) change the current data at once and go to the server
 *     as JSON merge patches of the keys written, with the resourceVersion they were based on as
 *     a precondition: a 409 means the object moved, so the store waits for (or fetches) the
 *     newer version and sends the same keys again; keys edited by others are never touched. A
 *     missing ConfigMap is created. Failed writes are retried with back-off until they land:
 *     a patch is never dropped. Keys written but not yet accepted are laid over what the server
 *     reports, so the operator never sees its own change undone in between.
 *
 * Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct cJSON;
struct ao_informers;
struct ao_kube_client;
struct ao_kube_resource;
struct ao_reactor;
struct ao_config_map;

typedef void ao_config_map_changed_handler(const struct cJSON *data, void *userdata);
typedef void ao_config_map_invalid_handler(const struct ao_error *error, void *userdata);
/** The first state is known (@error NULL), or the ConfigMap as it is at start is invalid. Once. */
typedef void ao_config_map_ready_handler(const struct ao_error *error, void *userdata);

struct ao_config_map_options {
        struct ao_reactor *reactor;
        struct ao_kube_client *client;
        struct ao_informers *informers;
        const struct ao_kube_resource *resource; /* v1 configmaps, from discovery; must outlive the store */
        const char *namespace_;
        const char *name;
        ao_config_map_ready_handler *on_ready;
        ao_config_map_changed_handler *on_change;
        ao_config_map_invalid_handler *on_invalid;
        void *userdata;
        double retry_scale; /* multiplies the write back-off (tests); <= 0: 1 */
};

int ao_config_map_open(const struct ao_config_map_options *options, struct ao_config_map **ret,
                       struct ao_error *reterr);
struct ao_config_map *ao_config_map_free(struct ao_config_map *cm);

/** The current data (parsed form, borrowed): the server's, with unsent writes laid over it. */
const struct cJSON *ao_config_map_data(const struct ao_config_map *cm);

/**
 * Apply the RFC 6902 operations @ops to @key's section (paths start with "/<key>/") and send the
 * result. Until the server accepts it, the operations stay pending as operations, not as the
 * section they made: when the section changes on the server meanwhile (a user's edit), they are
 * applied again on top of what is there now, so neither the edit nor the patch is lost. An
 * operation that no longer applies to the edited section is dropped with a warning naming it.
 */
int ao_config_map_patch(struct ao_config_map *cm, const char *key, const struct cJSON *ops,
                        struct ao_error *reterr);

/** Keys written and not yet accepted by the server. */
size_t ao_config_map_pending(const struct ao_config_map *cm);

/** "namespace/name", for logs. */
const char *ao_config_map_name(const struct ao_config_map *cm);
