/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Binding contexts: the JSON a hook finds at BINDING_CONTEXT_PATH, an array
 * with one object per event the run covers. Shapes, in the Go operator's
 * exact form (keys are written sorted, as Go writes maps):
 *
 *   onStartup                {"binding":"onStartup"}
 *   beforeAll ... afterDeleteHelm
 *                            {"binding":"beforeHelm","snapshots":{<every kubernetes binding>}}
 *                            (no "type"; "snapshots" is {} without kubernetes bindings)
 *   schedule                 {"binding":"<name>","type":"Schedule"[,"snapshots"]}
 *   kubernetes sync          {"binding":"<name>","type":"Synchronization","objects":[items][,"snapshots"]}
 *   kubernetes event         {"binding":"<name>","type":"Event","watchEvent":"Added|Modified|Deleted",
 *                             "object":..,"filterResult":..[,"snapshots"]}
 *   any binding with a group {"binding":"<name>","type":"Group","groupName":"<group>","snapshots":{..}}
 *
 * "snapshots" maps binding names to item arrays: for schedule and
 * kubernetes bindings the bindings named in includeSnapshotsFrom plus every
 * kubernetes binding of the same group; written only when that set is not
 * empty (grouped contexts always carry it). An item is {"object":..,
 * "filterResult":..}: "object" absent with keepFullObjectsInMemory: false,
 * "filterResult" present only when the binding has a jqFilter.
 *
 * Hooks with configVersion v0 get the legacy shapes: {"binding":"<name>"}
 * for everything but kubernetes events, which are {"binding","resourceEvent":
 * "add|update|delete","resourceNamespace","resourceKind","resourceName"}.
 *
 * Main thread only (cJSON trees are not shared).
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/hook-config.h"

struct cJSON;

/**
 * Where snapshot items come from (the kubernetes layer). @get returns a new
 * JSON array of the items of @binding, sorted by namespace then name, or
 * NULL when it has none yet. A NULL source, or NULL @get, means every
 * snapshot is empty.
 */
struct ao_snapshot_source {
        struct cJSON *(*get)(void *userdata, const char *binding);
        void *userdata;
};

/** Context of an ordered binding (onStartup, beforeAll, ..., afterDeleteHelm). Returns a new object. */
struct cJSON *ao_binding_context_ordered(const struct ao_hook_config *cfg, enum ao_binding_type type,
                                         const struct ao_snapshot_source *snapshots);

/** Context of a tick of schedule binding @b of @cfg. Returns a new object. */
struct cJSON *ao_binding_context_schedule(const struct ao_hook_config *cfg,
                                          const struct ao_schedule_binding *b,
                                          const struct ao_snapshot_source *snapshots);

/**
 * Context of the Synchronization of kubernetes binding @b: @objects (taken,
 * may be NULL for []) is the array of its current items.
 */
struct cJSON *ao_binding_context_synchronization(const struct ao_hook_config *cfg,
                                                 const struct ao_kubernetes_binding *b, struct cJSON *objects,
                                                 const struct ao_snapshot_source *snapshots);

/**
 * Context of one watch event (@watch_event: one AO_WATCH_* bit) of kubernetes
 * binding @b about @item (taken; {"object":..,"filterResult":..} as above).
 * For v0 hooks @item must hold the object (its kind and metadata are read).
 */
struct cJSON *ao_binding_context_event(const struct ao_hook_config *cfg,
                                       const struct ao_kubernetes_binding *b, unsigned watch_event,
                                       struct cJSON *item, const struct ao_snapshot_source *snapshots);

/** "Added", "Modified", "Deleted" for one AO_WATCH_* bit; NULL otherwise. */
const char *ao_watch_event_to_string(unsigned watch_event);

/**
 * Append the contexts of @more (an array, taken) to @contexts (an array),
 * then drop every grouped context that is followed by another of the same
 * group: a run of events for one group needs only its last context, which
 * carries the current snapshots. This is how queued runs of one hook are
 * merged into one.
 */
void ao_binding_contexts_combine(struct cJSON *contexts, struct cJSON *more);

/**
 * Read the snapshots again just before a run (the Go operator does the same): every
 * "snapshots" entry of every context in @contexts is replaced with the current items of its
 * binding, and so are the "objects" of Synchronization contexts. Events that happened between
 * queueing and running are then part of what the hook sees, so none is lost.
 */
void ao_binding_contexts_refresh(struct cJSON *contexts, const struct ao_snapshot_source *snapshots);

/** The file contents: compact JSON with sorted keys and a trailing newline. Returns a malloc'd string. */
char *ao_binding_contexts_format(const struct cJSON *contexts);
