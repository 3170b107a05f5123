/* SPDX-License-Identifier: Apache-2.0 */
/*
 * List + watch informers, shared between identical subscriptions (include/ao/informer.h).
 *
 * One informer is a small state machine:
 *
 *   LIST (pages) ──► WATCH ──(clean end)──► WATCH from the last resourceVersion
 *        ▲             │
 *        └──(410)──────┤
 *                      └──(error)──► back-off ──► WATCH from the last resourceVersion
 *
 * A list is taken in page by page: each page is parsed, handed to the subscribers and dropped
 * before the next arrives, so the memory a list needs is one page, not the whole collection.
 * The next page is asked for before the current one is handed out: the server prepares it while
 * the subscribers work. Subscribers still building their initial state get every listed object;
 * those already synced (a re-list after a 410) get only what differs from the store, as it is
 * found, and at the end DELETED for what the list no longer has.
 *
 * Subscribers' callbacks may subscribe and unsubscribe, so dispatching never frees a
 * subscription or an informer under the loop's feet: they are marked and reaped afterwards,
 * and an informer left without subscribers is stopped from a deferred callback (curl does not
 * allow removing a transfer from inside its own write callback).
 *
 * What is kept per object: its key in the store, its resourceVersion and the number of the list
 * that last saw it, ~100 bytes with the hash slot. Objects themselves are the subscribers'
 * business (a monitor keeps its jqFilter result). A subscriber that joins while a list is under
 * way, or after it, gets its objects from a new list.
 */
#include <cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/backoff.h"
#include "ao/hashmap.h"
#include "ao/informer.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"

#include "internal.h"

#define PAGE_SIZE_DEFAULT     500u
#define WATCH_TIMEOUT_MIN_SEC 300 /* the server ends each watch after 5-10 min, at random */
#define WATCH_TIMEOUT_SPREAD  300
#define WATCH_IDLE_GRACE_SEC  60 /* no byte for timeoutSeconds + this: the connection is dead */

/*
 * Metadata-only informers ask for PartialObjectMetadata, falling back to full objects (servers
 * before 1.15). A watch needs the object type: the list type there makes a real server end the
 * stream at the first event, and a list needs the list type (the object type is 406).
 */
#define ACCEPT_METADATA_LIST \
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define ACCEPT_METADATA      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#define METADATA_API_VERSION "meta.k8s.io/v1"
#define METADATA_KIND        "PartialObjectMetadata"

enum informer_phase {
        PHASE_LISTING,
        PHASE_WATCHING,
        PHASE_BACKOFF,
};

/* One object as the informer keeps it. */
struct stored_object {
        uint64_t list;           /* the list that last saw it (informer.lists when it did) */
        char resource_version[]; /* "" when the object had none */
};

/* Where a subscription is on its way to its initial state. */
enum sub_state {
        SUB_WAITING, /* joined while a list was under way: it needs a list of its own */
        SUB_LISTING, /* gets every object of the list under way */
        SUB_LISTED,  /* has them all; its synced callback is on its way, changes reach it */
        SUB_SYNCED,
};

struct ao_informer_sub {
        struct informer *inf;
        struct ao_informer_sub *next;
        struct ao_informer_sub_ops ops;
        void *userdata;
        enum sub_state state;
        uint64_t first_list; /* the first list it got objects from (a failed attempt's, maybe) */
        bool gone;           /* unsubscribed during a dispatch; freed afterwards */
        struct ao_source *sync_defer;
};

struct informer {
        struct ao_informers *reg;
        char *key;
        const struct ao_kube_resource *res;
        char *ns, *label_selector, *field_selector;
        bool metadata_only;
        char *collection; /* the resource's path for this namespace */
        enum informer_phase phase;
        struct ao_hashmap *objects;     /* "ns/name" → stored_object */
        uint64_t lists;                 /* lists started (attempts that started over included) */
        size_t pages_taken;             /* of the list under way: none yet, and a subscriber may join it */
        struct ao_source *relist_defer; /* a subscriber came after the list it could have had */
        char *continue_token;
        char *resource_version; /* where the next watch starts */
        bool synced;            /* the first list is done */
        bool watch_resumes;     /* the next watch resumes a stream, rather than following a list */
        bool relist_after_backoff;
        struct ao_kube_request *request; /* the list page or the watch in flight */
        struct ao_watch_decoder *decoder;
        struct ao_error stream_error; /* what the decoder refused, if anything */
        bool stream_gone;             /* the stream carried a 410 ERROR event */
        struct ao_source *retry_timer;
        struct ao_source *stop_defer;
        unsigned failures; /* in a row, since the watch last worked: the back-off's exponent */
        struct ao_informer_sub *subs;
        size_t n_subs;
        unsigned dispatching;
};

struct ao_informers {
        struct ao_reactor *reactor;
        struct ao_kube_client *client;
        struct ao_informers_options options;
        struct ao_backoff backoff;
        struct ao_hashmap *informers; /* key → informer */
};

/*
 * 0.8 s doubling to 30 s, and of that a uniform pick in [d/2, d]: replicas that lost the same
 * server do not come back in step.
 */
static const struct ao_backoff informer_backoff = {
    .first_usec = 800 * AO_USEC_PER_MSEC,
    .max_usec = 30 * AO_USEC_PER_SEC,
    .jitter = AO_BACKOFF_JITTER_HALF,
};

static void start_list(struct informer *inf);
static void start_watch(struct informer *inf);
static void request_relist(struct informer *inf);

/* ---- stored objects --------------------------------------------------------------------------- */

static void stored_free(void *p)
{
        free(p);
}

static const char *json_string_at(const cJSON *obj, const char *a, const char *b)
{
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, a);
        x = cJSON_GetObjectItemCaseSensitive(x, b);
        return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* "namespace/name", or "name" for cluster-scoped objects; NULL without a name. malloc'd. */
static char *object_key(const cJSON *obj)
{
        const char *name = json_string_at(obj, "metadata", "name");
        if (!name)
                return NULL;
        const char *ns = json_string_at(obj, "metadata", "namespace");
        return ns && *ns ? ao_xasprintf("%s/%s", ns, name) : ao_xstrdup(name);
}

static const char *resource_version_of(const cJSON *obj)
{
        const char *rv = json_string_at(obj, "metadata", "resourceVersion");
        return rv ? rv : "";
}

/* @rv as seen by list number @list. */
static struct stored_object *stored_new(const char *rv, uint64_t list)
{
        size_t n = strlen(rv) + 1;
        struct stored_object *o = ao_xmalloc(sizeof(*o) + n);
        o->list = list;
        memcpy(o->resource_version, rv, n);
        return o;
}

/* What subscribers get for an object a re-list no longer has: who it was, at which version. */
static cJSON *stub_object(const struct informer *inf, const char *key, const struct stored_object *o)
{
        cJSON *obj = cJSON_CreateObject(), *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(obj, "apiVersion",
                                inf->metadata_only ? METADATA_API_VERSION : inf->res->api_version);
        cJSON_AddStringToObject(obj, "kind", inf->metadata_only ? METADATA_KIND : inf->res->kind);
        cJSON_AddItemToObject(obj, "metadata", meta);
        /* Keys are "namespace/name" or, cluster-scoped, "name": neither part can hold a '/'. */
        const char *slash = strchr(key, '/');
        cJSON_AddStringToObject(meta, "name", slash ? slash + 1 : key);
        if (slash) {
                char *ns = ao_xstrndup(key, (size_t) (slash - key));
                cJSON_AddStringToObject(meta, "namespace", ns);
                free(ns);
        }
        if (*o->resource_version)
                cJSON_AddStringToObject(meta, "resourceVersion", o->resource_version);
        return obj;
}

/* ---- subscribers ------------------------------------------------------------------------------ */

static void sub_free(struct ao_informer_sub *sub)
{
        ao_source_free(sub->sync_defer);
        free(sub);
}

static void schedule_stop(struct informer *inf);

/* Free subscriptions marked gone; called when no dispatch is running. */
static void reap_subs(struct informer *inf)
{
        struct ao_informer_sub **pp = &inf->subs;
        while (*pp) {
                struct ao_informer_sub *sub = *pp;
                if (!sub->gone) {
                        pp = &sub->next;
                        continue;
                }
                *pp = sub->next;
                sub_free(sub);
        }
        if (inf->n_subs == 0)
                schedule_stop(inf);
}

/* Which subscribers a dispatch reaches. */
enum audience {
        TO_CURRENT = 1, /* those that have (or are about to have) the store: changes */
        TO_LISTING = 2, /* those building their initial state from the list under way */
};

static bool reaches(const struct ao_informer_sub *sub, unsigned audience)
{
        if (sub->gone)
                return false;
        if (sub->state == SUB_LISTED || sub->state == SUB_SYNCED)
                return audience & TO_CURRENT;
        return sub->state == SUB_LISTING && (audience & TO_LISTING);
}

static void dispatch(struct informer *inf, unsigned audience, enum ao_watch_type type, const cJSON *obj,
                     bool partial)
{
        inf->dispatching++;
        for (struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                if (reaches(sub, audience) && sub->ops.event)
                        sub->ops.event(sub, type, obj, partial, sub->userdata);
        if (--inf->dispatching == 0)
                reap_subs(inf);
}

static void notify(struct informer *inf, enum ao_watch_type type, const cJSON *obj, bool partial)
{
        dispatch(inf, TO_CURRENT, type, obj, partial);
}

static int on_sub_synced(struct ao_source *s, void *userdata)
{
        struct ao_informer_sub *sub = userdata;
        struct informer *inf = sub->inf;
        sub->sync_defer = ao_source_free(sub->sync_defer);
        if (sub->gone)
                return 0;
        sub->state = SUB_SYNCED;
        inf->dispatching++;
        if (sub->ops.synced)
                sub->ops.synced(sub, sub->userdata);
        if (--inf->dispatching == 0)
                reap_subs(inf);
        return 0;
}

/* @sub has the whole store: it follows the changes from now on and is told it is synced, from the loop. */
static void sub_listed(struct ao_informer_sub *sub)
{
        sub->state = SUB_LISTED;
        if (ao_reactor_add_defer(sub->inf->reg->reactor, &sub->sync_defer, on_sub_synced, sub) < 0)
                ao_log(AO_LOG_ERROR, "informer %s: cannot schedule a subscriber's sync", sub->inf->key);
}

static bool any_sub_in(const struct informer *inf, enum sub_state state)
{
        for (const struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                if (sub->state == state && !sub->gone)
                        return true;
        return false;
}

/* ---- errors and back-off ---------------------------------------------------------------------- */

static void report_error(struct informer *inf, const char *error_type)
{
        if (inf->reg->options.on_error)
                inf->reg->options.on_error(error_type, inf->reg->options.userdata);
}

static void count(struct informer *inf, enum ao_informer_stat stat, enum ao_watch_type event)
{
        if (!inf->reg->options.on_stat)
                return;
        char resource[256];
        snprintf(resource, sizeof(resource), "%s/%s", inf->res->api_version, inf->res->name);
        struct ao_informer_identity who = {
            resource, inf->ns ? inf->ns : "", inf->label_selector ? inf->label_selector : "",
            inf->field_selector ? inf->field_selector : "", inf->metadata_only};
        inf->reg->options.on_stat(&who, stat, event, inf->reg->options.userdata);
}

/* A 410: what the informer knew is compacted away, it lists again. */
static void report_expired(struct informer *inf)
{
        report_error(inf, "expired");
        count(inf, AO_INFORMER_EXPIRED, 0);
}

/* Wait, then watch again from the last resourceVersion, or list again if @relist. */
static void retry_later(struct informer *inf, uint64_t retry_after_usec, bool relist)
{
        if (inf->failures < UINT_MAX)
                inf->failures++;
        inf->phase = PHASE_BACKOFF;
        inf->relist_after_backoff = relist || !inf->resource_version;
        (void) ao_source_set_time_relative(
            inf->retry_timer, ao_backoff_wait_usec(&inf->reg->backoff, inf->failures, retry_after_usec));
}

static int on_retry(struct ao_source *s, uint64_t now, void *userdata)
{
        struct informer *inf = userdata;
        if (inf->relist_after_backoff)
                start_list(inf);
        else
                start_watch(inf);
        return 0;
}

/* ---- listing ---------------------------------------------------------------------------------- */

static void append_selectors(struct ao_strbuf *q, const struct informer *inf)
{
        if (inf->label_selector) {
                ao_strbuf_append(q, "&labelSelector=");
                kube_query_escape(q, inf->label_selector);
        }
        if (inf->field_selector) {
                ao_strbuf_append(q, "&fieldSelector=");
                kube_query_escape(q, inf->field_selector);
        }
}

/*
 * One listed object: the store learns its version; subscribers building their initial state get
 * it, those that have the store get it only when it differs (a re-list's difference).
 */
static void take_listed(struct informer *inf, const cJSON *obj)
{
        char *key = object_key(obj);
        if (!key)
                return;
        const char *rv = resource_version_of(obj);
        struct stored_object *before = ao_hashmap_get(inf->objects, key);
        unsigned audience = TO_LISTING;
        enum ao_watch_type type = AO_WATCH_EVENT_ADDED;
        if (before && strcmp(before->resource_version, rv) == 0) {
                before->list = inf->lists;
        } else {
                audience |= TO_CURRENT;
                type = before ? AO_WATCH_EVENT_MODIFIED : AO_WATCH_EVENT_ADDED;
                ao_hashmap_put(inf->objects, key, stored_new(rv, inf->lists));
        }
        free(key);
        if ((audience & TO_CURRENT) && inf->synced)
                count(inf, AO_INFORMER_RECOVERED, type);
        inf->dispatching++;
        for (struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next) {
                if (!reaches(sub, audience) || !sub->ops.event)
                        continue;
                bool listing = sub->state == SUB_LISTING;
                sub->ops.event(sub, listing ? AO_WATCH_EVENT_ADDED : type, obj, false, sub->userdata);
        }
        if (--inf->dispatching == 0)
                reap_subs(inf);
}

static int compare_keys(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A listing subscriber saw @o when an earlier attempt of its list (one it got objects from) did. */
static bool saw(const struct ao_informer_sub *sub, const struct stored_object *o)
{
        return sub->state != SUB_LISTING || o->list >= sub->first_list;
}

/*
 * The list is complete: what it did not see is gone. Those with the store get DELETED stubs; so do
 * listing subscribers for objects an interrupted attempt of their list had handed them.
 */
static void drop_unlisted(struct informer *inf)
{
        size_t iter = 0, n = 0;
        const char *key;
        void *value;
        char **gone = NULL;
        while (ao_hashmap_next(inf->objects, &iter, &key, &value))
                if (((struct stored_object *) value)->list != inf->lists) {
                        gone = ao_xreallocarray(gone, n + 1, sizeof(*gone));
                        gone[n++] = ao_xstrdup(key);
                }
        if (n > 1)
                qsort(gone, n, sizeof(*gone), compare_keys); /* events in a stable order */
        inf->dispatching++;
        for (size_t i = 0; i < n; i++) {
                struct stored_object *o = ao_hashmap_take(inf->objects, gone[i]);
                cJSON *stub = stub_object(inf, gone[i], o);
                if (inf->synced)
                        count(inf, AO_INFORMER_RECOVERED, AO_WATCH_EVENT_DELETED);
                for (struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                        if (reaches(sub, TO_CURRENT | TO_LISTING) && saw(sub, o) && sub->ops.event)
                                sub->ops.event(sub, AO_WATCH_EVENT_DELETED, stub, true, sub->userdata);
                cJSON_Delete(stub);
                stored_free(o);
                free(gone[i]);
        }
        free(gone);
        if (--inf->dispatching == 0)
                reap_subs(inf);
}

static void list_finished(struct informer *inf, const char *resource_version)
{
        free(inf->resource_version);
        inf->resource_version = resource_version ? ao_xstrdup(resource_version) : NULL;
        if (inf->synced)
                count(inf, AO_INFORMER_RELIST, 0);
        drop_unlisted(inf);
        inf->synced = true;
        for (struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                if (sub->state == SUB_LISTING && !sub->gone)
                        sub_listed(sub);
        inf->watch_resumes = false;
        start_watch(inf);
        /* Those that came while it was under way: a list of their own, from the loop. */
        if (any_sub_in(inf, SUB_WAITING))
                request_relist(inf);
}

static void take_page(struct informer *inf, const cJSON *items)
{
        inf->pages_taken++;
        const cJSON *item;
        cJSON_ArrayForEach(item, items)
        {
                take_listed(inf, item);
        }
}

static void on_list_page(const struct ao_kube_response *resp, void *userdata)
{
        struct informer *inf = userdata;
        inf->request = NULL;
        if (resp->status == 410) {
                /* An expired continue token: the list starts over. */
                ao_log(AO_LOG_INFO, "informer %s: list expired (410), listing again", inf->key);
                report_expired(inf);
                free(inf->continue_token);
                inf->continue_token = NULL;
                start_list(inf);
                return;
        }
        if (resp->status != 200) {
                if (resp->status)
                        ao_log(AO_LOG_WARN, "informer %s: list: HTTP %ld: %.200s", inf->key, resp->status,
                               resp->body ? resp->body : "");
                else
                        ao_log(AO_LOG_WARN, "informer %s: list: %s", inf->key, resp->error.msg);
                report_error(inf, "fail");
                retry_later(inf, resp->retry_after_usec,
                            true); /* from the same page, if it has not expired */
                return;
        }
        struct ao_kube_list list = {0};
        struct ao_error err = {0};
        /*
         * Items without kind and apiVersion get the resource's. A PartialObjectMetadataList's items
         * carry theirs; a server that fell back to full objects sends the resource's list, whose
         * kind and apiVersion say the same as the resource.
         */
        const char *kind = inf->metadata_only ? NULL : inf->res->kind;
        const char *api_version = inf->metadata_only ? NULL : inf->res->api_version;
        if (ao_kube_list_parse(resp->body, resp->len, kind, api_version, &list, &err) < 0) {
                ao_log(AO_LOG_WARN, "informer %s: bad list response: %s", inf->key, err.msg);
                report_error(inf, "fail");
                retry_later(inf, 0, true);
                return;
        }
        bool last_page = !list.continue_token;
        free(inf->continue_token);
        inf->continue_token = TAKE_PTR(list.continue_token);
        /*
         * Ask for the next page first: the server prepares it while this one is handed out. (Should
         * that request fail to start, the retry takes this page again: its objects count once.)
         */
        if (!last_page)
                start_list(inf);
        take_page(inf, list.items);
        if (last_page)
                list_finished(inf, list.resource_version);
        ao_kube_list_done(&list);
}

/*
 * A list's first page starts a new attempt: subscribers waiting for their initial state get it
 * from this one. The pages after it are not rate limited (one list, one request's worth).
 */
static void start_list(struct informer *inf)
{
        inf->phase = PHASE_LISTING;
        bool first_page = !inf->continue_token;
        if (first_page) {
                inf->lists++;
                inf->pages_taken = 0;
                for (struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                        if (sub->state == SUB_WAITING) {
                                sub->state = SUB_LISTING;
                                sub->first_list = inf->lists;
                        }
        }
        struct ao_strbuf q = {0};
        unsigned limit = inf->reg->options.page_size ? inf->reg->options.page_size : PAGE_SIZE_DEFAULT;
        ao_strbuf_appendf(&q, "%s?limit=%u", inf->collection, limit);
        if (!first_page) {
                ao_strbuf_append(&q, "&continue=");
                kube_query_escape(&q, inf->continue_token);
        }
        append_selectors(&q, inf);
        struct ao_error err = {0};
        const char *accept = inf->metadata_only ? ACCEPT_METADATA_LIST : NULL;
        int r = first_page ? ao_kube_request_accept(inf->reg->client, accept, "GET", ao_strbuf_str(&q), NULL,
                                                    NULL, 0, on_list_page, inf, &inf->request, &err)
                           : ao_kube_request_follow_up(inf->reg->client, accept, ao_strbuf_str(&q),
                                                       on_list_page, inf, &inf->request, &err);
        if (r < 0) {
                ao_log(AO_LOG_ERROR, "informer %s: %s", inf->key, err.msg);
                retry_later(inf, 0, true);
        }
        ao_strbuf_done(&q);
}

/* ---- watching --------------------------------------------------------------------------------- */

static void apply_event(struct informer *inf, enum ao_watch_type type, const cJSON *obj)
{
        char *key = object_key(obj);
        if (!key)
                return;
        if (type == AO_WATCH_EVENT_DELETED) {
                bool known = ao_hashmap_remove(inf->objects, key);
                if (known)
                        notify(inf, type, obj, false);
        } else {
                struct stored_object *o = stored_new(resource_version_of(obj), inf->lists);
                bool added = ao_hashmap_put(inf->objects, key, o);
                /* A MODIFIED for an object we never saw (or an ADDED we had) is what it is now. */
                notify(inf, added ? AO_WATCH_EVENT_ADDED : AO_WATCH_EVENT_MODIFIED, obj, false);
        }
        free(key);
}

static int on_watch_event(struct ao_watch_event *ev, void *userdata)
{
        struct informer *inf = userdata;
        if (ev->type == AO_WATCH_EVENT_ERROR) {
                struct ao_kube_status st = {0};
                if (ao_kube_status_from_json(ev->object, &st) >= 0 && st.code == 410)
                        inf->stream_gone = true;
                else
                        ao_error_set(&inf->stream_error, -EPROTO, "ERROR event: %s",
                                     st.message && *st.message ? st.message : "(no message)");
                cJSON_Delete(ev->object);
                return -1; /* nothing after an ERROR event is trusted */
        }
        if (ev->resource_version && *ev->resource_version) {
                free(inf->resource_version);
                inf->resource_version = ao_xstrdup(ev->resource_version);
        }
        if (ev->type != AO_WATCH_EVENT_BOOKMARK)
                apply_event(inf, ev->type, ev->object);
        inf->failures = 0; /* the watch works: the next failure starts the back-off afresh */
        cJSON_Delete(ev->object);
        return 0;
}

static int on_watch_data(const char *data, size_t len, void *userdata)
{
        struct informer *inf = userdata;
        if (inf->stream_gone || inf->stream_error.code)
                return -1;
        int r = ao_watch_decoder_feed(inf->decoder, data, len, &inf->stream_error);
        if (r < 0 && !inf->stream_gone && inf->stream_error.code == 0)
                ao_error_set(&inf->stream_error, r, "watch stream stopped");
        return r < 0 ? -1 : 0;
}

static void on_watch_done(const struct ao_kube_response *resp, void *userdata)
{
        struct informer *inf = userdata;
        inf->request = NULL;
        if (inf->stream_gone || resp->status == 410) {
                ao_log(AO_LOG_INFO, "informer %s: resourceVersion %s is too old (410), listing again",
                       inf->key, inf->resource_version ? inf->resource_version : "?");
                report_expired(inf);
                start_list(inf);
                return;
        }
        if (inf->stream_error.code) {
                ao_log(AO_LOG_WARN, "informer %s: %s; watching again", inf->key, inf->stream_error.msg);
                report_error(inf, "fail");
                retry_later(inf, 0, false);
                return;
        }
        if (resp->status != 200) {
                if (resp->status)
                        ao_log(AO_LOG_WARN, "informer %s: watch: HTTP %ld: %.200s", inf->key, resp->status,
                               resp->body ? resp->body : "");
                else /* no answer: the connection failed */
                        ao_log(AO_LOG_WARN, "informer %s: watch: %s", inf->key, resp->error.msg);
                report_error(inf, "fail");
                retry_later(inf, resp->retry_after_usec, resp->status == 404 || resp->status == 403);
                return;
        }
        struct ao_error err = {0};
        if (resp->error.code || ao_watch_decoder_finish(inf->decoder, &err) < 0) {
                ao_log(AO_LOG_WARN, "informer %s: watch ended: %s; watching again", inf->key,
                       resp->error.code ? resp->error.msg : err.msg);
                report_error(inf, resp->error.code ? "unexpected-eof" : "eof");
                retry_later(inf, 0, false);
                return;
        }
        ao_log(AO_LOG_DEBUG, "informer %s: watch ended at resourceVersion %s, resuming", inf->key,
               inf->resource_version ? inf->resource_version : "?");
        start_watch(inf);
}

static void start_watch(struct informer *inf)
{
        if (!inf->resource_version) {
                start_list(inf);
                return;
        }
        if (inf->watch_resumes)
                count(inf, AO_INFORMER_WATCH_RESTART, 0);
        inf->watch_resumes = true; /* any later watch without a list between resumes this one */
        inf->phase = PHASE_WATCHING;
        inf->stream_gone = false;
        ao_error_clear(&inf->stream_error);
        ao_watch_decoder_reset(inf->decoder);
        unsigned timeout = WATCH_TIMEOUT_MIN_SEC + (unsigned) (ao_backoff_random() % WATCH_TIMEOUT_SPREAD);
        struct ao_strbuf q = {0};
        ao_strbuf_appendf(&q, "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u&resourceVersion=",
                          inf->collection, timeout);
        kube_query_escape(&q, inf->resource_version);
        append_selectors(&q, inf);
        struct ao_error err = {0};
        uint64_t idle = (uint64_t) (timeout + WATCH_IDLE_GRACE_SEC) * 1000000ULL;
        if (ao_kube_stream(inf->reg->client, ao_strbuf_str(&q), inf->metadata_only ? ACCEPT_METADATA : NULL,
                           idle, on_watch_data, on_watch_done, inf, &inf->request, &err) < 0) {
                ao_log(AO_LOG_ERROR, "informer %s: %s", inf->key, err.msg);
                retry_later(inf, 0, false);
        }
        ao_strbuf_done(&q);
}

/* ---- lifetime --------------------------------------------------------------------------------- */

static void informer_free(struct informer *inf)
{
        ao_kube_request_cancel(inf->request);
        ao_source_free(inf->retry_timer);
        ao_source_free(inf->stop_defer);
        ao_source_free(inf->relist_defer);
        ao_watch_decoder_free(inf->decoder);
        ao_hashmap_free(inf->objects);
        while (inf->subs) {
                struct ao_informer_sub *next = inf->subs->next;
                sub_free(inf->subs);
                inf->subs = next;
        }
        free(inf->key);
        free(inf->ns);
        free(inf->label_selector);
        free(inf->field_selector);
        free(inf->collection);
        free(inf->continue_token);
        free(inf->resource_version);
        free(inf);
}

static int on_stop(struct ao_source *s, void *userdata)
{
        struct informer *inf = userdata;
        inf->stop_defer = ao_source_free(inf->stop_defer);
        if (inf->n_subs > 0)
                return 0;
        ao_log(AO_LOG_DEBUG, "informer %s: no subscribers left, stopping", inf->key);
        ao_hashmap_take(inf->reg->informers, inf->key);
        informer_free(inf);
        return 0;
}

static void schedule_stop(struct informer *inf)
{
        if (inf->stop_defer)
                return;
        if (ao_reactor_add_defer(inf->reg->reactor, &inf->stop_defer, on_stop, inf) < 0)
                ao_log(AO_LOG_ERROR, "informer %s: cannot schedule its stop", inf->key);
}

static char *dup_nonempty(const char *s)
{
        return s && *s ? ao_xstrdup(s) : NULL;
}

static struct informer *informer_new(struct ao_informers *reg, const char *key,
                                     const struct ao_informer_query *q)
{
        const struct ao_kube_resource *res = q->resource;
        struct informer *inf = ao_xcalloc(1, sizeof(*inf));
        inf->reg = reg;
        inf->key = ao_xstrdup(key);
        inf->res = res;
        inf->ns = res->namespaced ? dup_nonempty(q->ns) : NULL;
        inf->label_selector = dup_nonempty(q->label_selector);
        inf->field_selector = dup_nonempty(q->field_selector);
        inf->metadata_only = q->metadata_only;
        inf->collection = ao_kube_resource_path(res, inf->ns, NULL);
        inf->objects = ao_hashmap_new(stored_free);
        inf->decoder = ao_watch_decoder_new(AO_WATCH_EVENT_MAX, on_watch_event, inf);
        if (ao_reactor_add_time(reg->reactor, &inf->retry_timer, 0, on_retry, inf) < 0) {
                informer_free(inf);
                return NULL;
        }
        (void) ao_source_set_enabled(inf->retry_timer, AO_SOURCE_OFF);
        (void) ao_source_set_description(inf->retry_timer, "informer-retry");
        return inf;
}

/* ---- late subscribers ------------------------------------------------------------------------- */

static int on_relist(struct ao_source *s, void *userdata)
{
        struct informer *inf = userdata;
        inf->relist_defer = ao_source_free(inf->relist_defer);
        if (inf->phase != PHASE_WATCHING || !any_sub_in(inf, SUB_WAITING))
                return 0;
        ao_log(AO_LOG_DEBUG, "informer %s: a new subscriber: listing again", inf->key);
        ao_kube_request_cancel(inf->request);
        inf->request = NULL;
        start_list(inf);
        return 0;
}

/*
 * A subscriber joined after a list began: it gets the objects from a new list. After a back-off
 * the informer lists instead of watching; a running watch is replaced from the loop (curl forbids
 * removing a transfer inside its own callbacks); a list under way asks for this when it ends.
 */
static void request_relist(struct informer *inf)
{
        if (inf->phase == PHASE_BACKOFF)
                inf->relist_after_backoff = true;
        if (inf->phase != PHASE_WATCHING || inf->relist_defer)
                return;
        if (ao_reactor_add_defer(inf->reg->reactor, &inf->relist_defer, on_relist, inf) < 0)
                ao_log(AO_LOG_ERROR, "informer %s: cannot schedule a list for a new subscriber", inf->key);
}

/* ---- public API ------------------------------------------------------------------------------- */

struct ao_informers *ao_informers_new(struct ao_reactor *r, struct ao_kube_client *client,
                                      const struct ao_informers_options *options)
{
        struct ao_informers *reg = ao_xcalloc(1, sizeof(*reg));
        reg->reactor = r;
        reg->client = client;
        if (options)
                reg->options = *options;
        reg->backoff = informer_backoff;
        reg->backoff.retry_scale = reg->options.retry_scale;
        reg->informers = ao_hashmap_new(NULL);
        return reg;
}

struct ao_informers *ao_informers_free(struct ao_informers *reg)
{
        if (!reg)
                return NULL;
        size_t iter = 0;
        void *value;
        while (ao_hashmap_next(reg->informers, &iter, NULL, &value))
                informer_free(value);
        ao_hashmap_free(reg->informers);
        free(reg);
        return NULL;
}

size_t ao_informers_count(const struct ao_informers *reg)
{
        return ao_hashmap_size(reg->informers);
}

int ao_informers_subscribe(struct ao_informers *reg, const struct ao_informer_query *q,
                           const struct ao_informer_sub_ops *ops, void *userdata,
                           struct ao_informer_sub **ret, struct ao_error *reterr)
{
        const struct ao_kube_resource *res = q->resource;
        const char *scoped_ns = res->namespaced && q->ns ? q->ns : "";
        /*
         * The key names the informer in logs. A metadata-only one is "v1/configmaps:metadata|...": a
         * resource's name has no ':', so no full informer's key can look like it.
         */
        char *key = ao_xasprintf(
            "%s/%s%s|%s|%s|%s", res->api_version, res->name, q->metadata_only ? ":metadata" : "", scoped_ns,
            q->label_selector ? q->label_selector : "", q->field_selector ? q->field_selector : "");
        struct informer *inf = ao_hashmap_get(reg->informers, key);
        bool fresh = !inf;
        if (fresh) {
                inf = informer_new(reg, key, q);
                if (!inf) {
                        free(key);
                        return ao_error_set(reterr, -ENOMEM, "cannot start an informer for %s", res->name);
                }
                ao_hashmap_put(reg->informers, key, inf);
        }
        free(key);
        struct ao_informer_sub *sub = ao_xcalloc(1, sizeof(*sub));
        sub->inf = inf;
        sub->ops = *ops;
        sub->userdata = userdata;
        /* Append: dispatch walks the list in subscription order. */
        struct ao_informer_sub **pp = &inf->subs;
        while (*pp)
                pp = &(*pp)->next;
        *pp = sub;
        inf->n_subs++;
        if (fresh) {
                start_list(inf); /* it is listing from the first page */
        } else if (inf->phase == PHASE_LISTING && inf->pages_taken == 0) {
                sub->state = SUB_LISTING; /* the list under way has handed out nothing yet */
                sub->first_list = inf->lists;
        } else {
                request_relist(inf); /* a list under way asks for it when it ends */
        }
        *ret = sub;
        return 0;
}

void ao_informer_unsubscribe(struct ao_informer_sub *sub)
{
        if (!sub || sub->gone)
                return;
        struct informer *inf = sub->inf;
        sub->gone = true;
        inf->n_subs--;
        if (inf->dispatching == 0)
                reap_subs(inf);
}

bool ao_informer_sub_synced(const struct ao_informer_sub *sub)
{
        return sub->state == SUB_SYNCED;
}

size_t ao_informer_sub_count(const struct ao_informer_sub *sub)
{
        return ao_hashmap_size(sub->inf->objects);
}
