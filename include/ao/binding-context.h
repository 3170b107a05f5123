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
struct ao_json_writer;

/**
 * Where snapshot items come from (the kubernetes layer). @write writes the JSON array of the
 * items of @binding, sorted by namespace then name, to @out ("[]" when it has none yet), item by
 * item as ao_json_writer writes, and returns ao_json_writer_error(@out) or another -errno. A NULL
 * source, or a NULL @write, leaves the arrays of the contexts as they are.
 */
struct ao_snapshot_source {
        int (*write)(void *userdata, const char *binding, struct ao_json_writer *out);
        void *userdata;
};

/*
 * The context constructors below name the snapshots a context carries, each with an empty
 * array (and a Synchronization's "objects" likewise): the items are written into them by
 * ao_binding_contexts_write() when the run starts, so contexts that wait in a queue carry none.
 */

/** Context of an ordered binding (onStartup, beforeAll, ..., afterDeleteHelm). Returns a new object. */
struct cJSON *ao_binding_context_ordered(const struct ao_hook_config *cfg, enum ao_binding_type type);

/** Context of a tick of schedule binding @b of @cfg. Returns a new object. */
struct cJSON *ao_binding_context_schedule(const struct ao_hook_config *cfg,
                                          const struct ao_schedule_binding *b);

/** Context of the Synchronization of kubernetes binding @b of @cfg. Returns a new object. */
struct cJSON *ao_binding_context_synchronization(const struct ao_hook_config *cfg,
                                                 const struct ao_kubernetes_binding *b);

/**
 * Context of one watch event (@watch_event: one AO_WATCH_* bit) of kubernetes
 * binding @b about @item (taken; {"object":..,"filterResult":..} as above).
 * For v0 hooks @item must hold the object (its kind and metadata are read).
 */
struct cJSON *ao_binding_context_event(const struct ao_hook_config *cfg,
                                       const struct ao_kubernetes_binding *b, unsigned watch_event,
                                       struct cJSON *item);

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
 * Write the file contents for @contexts (an array) to @out: compact JSON with sorted keys
 * (ao_json_canonical()'s text) and a trailing newline. With a @snapshots source whose @write is
 * set, the snapshots are read now, as the Go operator reads them just before a run: every
 * "snapshots" entry of every context is written as the current items of its binding, and so
 * are the "objects" of Synchronization contexts; events that happened between queueing and
 * running are then part of what the hook sees, so none is lost. The items go from the source
 * to @out one by one: no tree, no string of them all. Returns ao_json_writer_error(@out) or
 * the source's error.
 */
int ao_binding_contexts_write(const struct cJSON *contexts, const struct ao_snapshot_source *snapshots,
                              struct ao_json_writer *out);

/**
 * The items @snapshots writes for @binding, as a new array (for the debug routes, which show
 * what the next context would carry); an empty array without a source.
 */
struct cJSON *ao_snapshot_items(const struct ao_snapshot_source *snapshots, const char *binding);
