/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Informers: the objects of one resource that match one (namespace, label selector, field
 * selector), kept current by LIST (paged, limit=500) and then WATCH from the list's
 * resourceVersion.
 *
 *   - A watch that ends cleanly (timeoutSeconds rotation, 5-10 min at random) is resumed from
 *     the last resourceVersion seen (an event's or a bookmark's).
 *   - 410 Gone in any form (HTTP 410 on the watch or list, or an ERROR event with code 410)
 *     means the resourceVersion is too old: the informer lists again and delivers the
 *     difference against what it had as ADDED / MODIFIED / DELETED, so subscribers miss
 *     nothing and see nothing twice.
 *   - Transport errors, 5xx, 429, garbage and truncated streams: retried after a jittered
 *     exponential back-off (0.8 s doubling to 30 s; Retry-After honoured), resuming the watch
 *     from the last resourceVersion (a truncated event was not applied, so it comes again).
 *
 * Identical informers are shared: subscribing twice to the same query (resource, namespace,
 * selectors, mode) gives two subscriptions of one informer and one watch on the server.
 *
 * Metadata-only mode (ao_informer_query.metadata_only), as client-go's metadata informers: for
 * subscribers that need only the objects' metadata (deletions, labels, ownerReferences), the
 * LIST asks for "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,
 * application/json" and the WATCH for "...;as=PartialObjectMetadata;...". Every server since
 * 1.15 then sends {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{..}}
 * objects: the whole metadata (name, namespace, uid, resourceVersion, labels, annotations,
 * ownerReferences, finalizers, deletionTimestamp, managedFields) and nothing else, which saves
 * the bandwidth and the parsing of the rest. The informer hands them on as the server sent
 * them: a server that does not know the media type falls back to the second one and sends full
 * objects with the resource's own kind and apiVersion, and those go out as they are too. So a
 * subscriber in this mode reads "metadata" only and does not look at kind and apiVersion (it
 * knows the resource from its query). A re-list's DELETED stub (see ops.event) carries kind
 * PartialObjectMetadata and apiVersion meta.k8s.io/v1 in this mode. Everything else (410
 * handling, back-off, sharing, memory) is the same in both modes; a metadata-only informer and
 * a full one of the same resource, namespace and selectors are two informers with two watches.
 *
 * Lists are paged (limit=500): each page is parsed, handed to the subscribers and dropped before
 * the next, whose request goes out before the page is handed out. Only the list's first page
 * takes a token from the client's rate limiter. Subscribers building their initial state get
 * every listed object as an ADDED event before their synced callback; a list that has to start
 * over (its continue token expired) gives them its objects again, and DELETED for those it no
 * longer has. Subscribers already synced get a re-list's difference as it is found, each change
 * once, and DELETED at its end for what it did not find.
 *
 * Memory: the informer keeps each object's key, resourceVersion and the number of the list that
 * last saw it (what a re-list's difference needs), never the objects: subscribers keep what they
 * need of them (monitors: the jqFilter result, the object only with keepFullObjectsInMemory). The
 * peak while listing is one page. A subscriber that joins once a list has handed out objects gets
 * them from a new LIST (the other subscribers see only what changed, as after a 410).
 *
 * Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/kube-watch.h"

struct cJSON;
struct ao_kube_client;
struct ao_kube_resource;
struct ao_reactor;
struct ao_informers;
struct ao_informer_sub;

/** Why a watch or list failed, for kubernetes_client_watch_errors_total{error_type}. */
typedef void ao_informer_error_observer(const char *error_type, void *userdata);

/** What an informer counts, for the kube_informer_*_total families (docs/METRICS.md). */
enum ao_informer_stat {
        AO_INFORMER_RELIST,        /* a list after the first one finished and replaced the store */
        AO_INFORMER_EXPIRED,       /* 410: the watch's resourceVersion or the list's continue token is gone */
        AO_INFORMER_WATCH_RESTART, /* a watch started again from its resourceVersion (not after a list) */
        AO_INFORMER_RECOVERED, /* an event a re-list's difference found, not the watch (@event says which) */
};

/** Which informer counted: its resource ("v1/configmaps"), namespace ("" for all), selectors and mode. */
struct ao_informer_identity {
        const char *resource, *ns, *label_selector, *field_selector; /* selectors "" when none */
        bool metadata_only;
};

typedef void ao_informer_stat_observer(const struct ao_informer_identity *who, enum ao_informer_stat stat,
                                       enum ao_watch_type event, void *userdata);

struct ao_informers_options {
        ao_informer_error_observer *on_error; /* may be NULL */
        ao_informer_stat_observer *on_stat;   /* may be NULL */
        void *userdata;
        double retry_scale; /* multiplies the back-off (tests make it faster); <= 0 means 1 */
        unsigned page_size; /* LIST limit; 0: 500 */
};

struct ao_informers *ao_informers_new(struct ao_reactor *r, struct ao_kube_client *client,
                                      const struct ao_informers_options *options);
/** Stop every informer (subscriptions must be gone). NULL is accepted. */
struct ao_informers *ao_informers_free(struct ao_informers *reg);

/** Informers running (for tests and the debug dump). */
size_t ao_informers_count(const struct ao_informers *reg);

struct ao_informer_sub_ops {
        /*
         * The subscription has its initial state: the events before this one built it. Called
         * once, from the loop (never from inside subscribe).
         */
        void (*synced)(struct ao_informer_sub *sub, void *userdata);
        /*
         * Before synced (ao_informer_sub_synced() false), the initial state being built: ADDED for
         * each listed object (again if the list started over: the later one wins), DELETED for one
         * an interrupted attempt of the list gave that the one that finished did not have. After
         * synced, a change: ADDED, MODIFIED or DELETED with the object (borrowed). A DELETED
         * found by a re-list, when the informer no longer has the object's last state, comes with
         * @partial set and a stub @object: apiVersion, kind and metadata (name, namespace,
         * resourceVersion) only; the subscriber knows what it kept of that object.
         */
        void (*event)(struct ao_informer_sub *sub, enum ao_watch_type type, const struct cJSON *object,
                      bool partial, void *userdata);
};

/** What a subscription watches. Every pointer is borrowed for the call only, except @resource. */
struct ao_informer_query {
        const struct ao_kube_resource *resource; /* must outlive the subscription */
        const char *ns;             /* NULL or "": all namespaces, or a cluster-scoped resource */
        const char *label_selector; /* in the API's query syntax; NULL or "": none */
        const char *field_selector; /* likewise */
        bool metadata_only;         /* PartialObjectMetadata objects (see the top of this file) */
};

/**
 * Subscribe to the informer for @q (copied), starting it if it is new. Subscriptions with equal
 * queries share one informer. Fails only with -ENOMEM (the informer's timer could not be added).
 */
int ao_informers_subscribe(struct ao_informers *reg, const struct ao_informer_query *q,
                           const struct ao_informer_sub_ops *ops, void *userdata,
                           struct ao_informer_sub **ret, struct ao_error *reterr);
/** End a subscription; the informer stops with its last one. NULL is accepted. */
void ao_informer_unsubscribe(struct ao_informer_sub *sub);

/** The synced callback has come (events are changes now, not the initial state). */
bool ao_informer_sub_synced(const struct ao_informer_sub *sub);

/** Objects the subscription's informer holds. */
size_t ao_informer_sub_count(const struct ao_informer_sub *sub);
