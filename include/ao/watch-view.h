/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A watch view: what one kubernetes binding of a hook sees of the cluster, the binding's
 * filtered view of the shared informers (src/kube). It subscribes to the informers its
 * selectors need (one per namespace and, with nameSelector, one per name, using a
 * metadata.name field selector as the Go operator does; with namespace.labelSelector it also
 * watches Namespaces and starts and stops per-namespace informers as they match and stop
 * matching), runs the jqFilter on every object and keeps one item per object:
 * {"object": .. (unless keepFullObjectsInMemory is false), "filterResult": .. (with a jqFilter)}.
 *
 * Change detection as in the Go operator: an Added or Modified whose checksum (of the filter
 * result, or of the whole object without a filter) did not change fires nothing; Deleted always
 * fires. Objects of a namespace that stops matching leave as Deleted events once the view has
 * synced (the Go operator drops them silently; docs/MIGRATION.md). Objects of a namespace that
 * starts matching after the view synced arrive as Added events.
 *
 * Part of src/hooks (library ao-hooks-watch), above src/kube: hook-binding logic, where src/kube
 * keeps only generic Kubernetes machinery. Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/hook-config.h"

struct cJSON;
struct ao_informers;
struct ao_json_writer;
struct ao_jq_cache;
struct ao_kube_discovery;
struct ao_watch_view;

/** What views share. All borrowed; they must outlive every view. */
struct ao_watch_view_env {
        struct ao_informers *informers;
        const struct ao_kube_discovery *discovery;
        struct ao_jq_cache *jq;
        /* jqFilter run time, for kube_jq_filter_duration_seconds; may be NULL */
        void (*on_jq)(void *userdata, uint64_t usec);
};

struct ao_watch_view_ops {
        /* Every informer has its initial state: ao_watch_view_write_items() is complete. Once. */
        void (*synced)(struct ao_watch_view *m, void *userdata);
        /*
         * A change the binding's executeHookOnEvent asks for: @watch_event is one AO_WATCH_* bit,
         * @item is taken, @object is the object (borrowed; for v0 contexts and logs).
         */
        void (*event)(struct ao_watch_view *m, unsigned watch_event, struct cJSON *item,
                      const struct cJSON *object, void *userdata);
};

/**
 * Start watching for binding @b (borrowed; must outlive the view) of hook @hook_name (for
 * messages). Fails with -ENOENT when discovery knows no such kind (the caller may refresh
 * discovery and try again), naming the hook, binding, apiVersion and kind.
 */
int ao_watch_view_new(const struct ao_watch_view_env *env, const struct ao_kubernetes_binding *b,
                      const char *hook_name, const struct ao_watch_view_ops *ops, void *userdata,
                      struct ao_watch_view **ret, struct ao_error *reterr);
/** Stop watching and forget every item. NULL is accepted; returns NULL. */
struct ao_watch_view *ao_watch_view_free(struct ao_watch_view *m);

bool ao_watch_view_synced(const struct ao_watch_view *m);
/**
 * Write the items to @out as a JSON array, sorted by namespace then name, one by one as
 * ao_json_writer writes them (what it costs beyond that is one pointer per item, for the sort).
 * Returns ao_json_writer_error(@out).
 */
int ao_watch_view_write_items(const struct ao_watch_view *m, struct ao_json_writer *out);
/** Items held. */
size_t ao_watch_view_count(const struct ao_watch_view *m);
const struct ao_kubernetes_binding *ao_watch_view_binding(const struct ao_watch_view *m);
