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
 * A (re)list fills a fresh store; when its last page arrives the store replaces the old one and
 * the difference goes out as events (none on the first list: subscribers read the whole store
 * when they are told they are synced).
 *
 * Subscribers' callbacks may subscribe and unsubscribe, so dispatching never frees a
 * subscription or an informer under the loop's feet: they are marked and reaped afterwards,
 * and an informer left without subscribers is stopped from a deferred callback (curl does not
 * allow removing a transfer from inside its own write callback).
 *
 * What is kept per object: its key in the store and its resourceVersion, ~100 bytes with the
 * hash slot. The compact JSON texts go into an arena of mmap'd blocks while a list is read, so
 * that subscribers can be handed the objects when they are told they are synced; once none is
 * waiting any more the arena is unmapped in one piece. (Texts malloc'd one by one and freed
 * between the keys that stay would leave the heap as large as before: 100,000 ConfigMaps kept
 * ~25 MB that way.) A subscriber arriving after that gets a fresh LIST.
 */
#include <cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
#define WATCH_IDLE_GRACE_SEC  60           /* no byte for timeoutSeconds + this: the connection is dead */
#define TEXT_BLOCK_FIRST      (64u * 1024) /* text arena blocks double from here ... */
#define TEXT_BLOCK_MAX        (8u * 1024 * 1024) /* ... to here (larger only for one larger object) */

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

/* JSON texts, appended to blocks of their own mappings: all of them go back to the system at once. */
struct text_block {
        struct text_block *next;
        size_t used, size; /* size: the whole mapping */
        char data[];
};

/* One object as the informer keeps it. */
struct stored_object {
        const char *json;        /* compact text in its store's arena; NULL when not kept */
        char resource_version[]; /* "" when the object had none */
};

struct ao_informer_sub {
        struct informer *inf;
        struct ao_informer_sub *next;
        struct ao_informer_sub_ops ops;
        void *userdata;
        bool synced;
        bool gone; /* unsubscribed during a dispatch; freed afterwards */
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
        struct ao_hashmap *objects;       /* "ns/name" → stored_object */
        struct text_block *texts;         /* the objects' texts while texts_held */
        bool texts_held;                  /* until no subscriber waits for its synced callback */
        struct ao_hashmap *listing;       /* the store a (re)list is filling */
        struct text_block *listing_texts; /* its texts */
        struct ao_source *relist_defer;   /* a subscriber came after the texts were dropped */
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

/* ---- stored objects --------------------------------------------------------------------------- */

static void texts_free(struct text_block *b)
{
        while (b) {
                struct text_block *next = b->next;
                (void) munmap(b, b->size);
                b = next;
        }
}

/* A copy of @text (@len bytes and a NUL) in the arena at *@head. */
static const char *texts_put(struct text_block **head, const char *text, size_t len)
{
        struct text_block *b = *head;
        if (!b || b->size - b->used < len + 1) {
                size_t size = b ? AO_MIN((size_t) b->size * 2, (size_t) TEXT_BLOCK_MAX) : TEXT_BLOCK_FIRST;
                size_t page = (size_t) sysconf(_SC_PAGESIZE);
                size = AO_MAX(size, (sizeof(*b) + len + 1 + page - 1) / page * page);
                struct text_block *fresh =
                    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (fresh == MAP_FAILED)
                        abort(); /* out of memory: as ao_x* do */
                *fresh = (struct text_block){.next = b, .used = sizeof(*fresh), .size = size};
                *head = b = fresh;
        }
        char *copy = (char *) b + b->used;
        memcpy(copy, text, len);
        copy[len] = '\0';
        b->used += len + 1;
        return copy;
}

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

/* @obj's resourceVersion and, with @texts, its compact text in that arena. */
static struct stored_object *stored_new(const cJSON *obj, struct text_block **texts)
{
        const char *rv = json_string_at(obj, "metadata", "resourceVersion");
        size_t rv_len = rv ? strlen(rv) : 0;
        struct stored_object *o = ao_xmalloc(sizeof(*o) + rv_len + 1);
        memcpy(o->resource_version, rv ? rv : "", rv_len + 1);
        o->json = NULL;
        if (texts) {
                char *json = cJSON_PrintUnformatted(obj);
                if (!json)
                        abort(); /* allocation failure: as ao_x* do */
                o->json = texts_put(texts, json, strlen(json));
                free(json);
        }
        return o;
}

/* What subscribers get for a deleted object whose text is gone: who it was, at which version. */
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

/* The object as it was, or a stub when its text is gone. */
static cJSON *stored_object_json(const struct informer *inf, const char *key, const struct stored_object *o,
                                 bool *ret_partial)
{
        *ret_partial = !o->json;
        return o->json ? cJSON_Parse(o->json) : stub_object(inf, key, o);
}

/* ---- subscribers ------------------------------------------------------------------------------ */

static void sub_free(struct ao_informer_sub *sub)
{
        ao_source_free(sub->sync_defer);
        free(sub);
}

static void schedule_stop(struct informer *inf);
static void maybe_drop_texts(struct informer *inf);

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
        maybe_drop_texts(inf); /* the subscriber the texts were kept for may be among them */
        if (inf->n_subs == 0)
                schedule_stop(inf);
}

static void notify(struct informer *inf, enum ao_watch_type type, const cJSON *obj, bool partial)
{
        inf->dispatching++;
        for (struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                if (sub->synced && !sub->gone && sub->ops.event)
                        sub->ops.event(sub, type, obj, partial, sub->userdata);
        if (--inf->dispatching == 0)
                reap_subs(inf);
}

/* A subscriber that has not had its synced callback yet (and will read the texts in it). */
static bool sub_waiting(const struct informer *inf)
{
        for (const struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                if (!sub->synced && !sub->gone)
                        return true;
        return false;
}

/* Nobody waits for the objects' texts any more: unmap them, keep keys and versions. */
static void maybe_drop_texts(struct informer *inf)
{
        if (!inf->texts_held || sub_waiting(inf))
                return;
        size_t iter = 0;
        void *value;
        while (ao_hashmap_next(inf->objects, &iter, NULL, &value))
                ((struct stored_object *) value)->json = NULL;
        texts_free(inf->texts);
        inf->texts = NULL;
        inf->texts_held = false;
}

static int on_sub_synced(struct ao_source *s, void *userdata)
{
        struct ao_informer_sub *sub = userdata;
        struct informer *inf = sub->inf;
        sub->sync_defer = ao_source_free(sub->sync_defer);
        if (sub->gone) {
                maybe_drop_texts(inf);
                return 0;
        }
        sub->synced = true;
        inf->dispatching++;
        if (sub->ops.synced)
                sub->ops.synced(sub, sub->userdata);
        if (--inf->dispatching == 0)
                reap_subs(inf);
        maybe_drop_texts(inf);
        return 0;
}

/* Tell @sub it is synced, from the loop. */
static void sub_schedule_synced(struct ao_informer_sub *sub)
{
        if (sub->synced || sub->sync_defer)
                return;
        if (ao_reactor_add_defer(sub->inf->reg->reactor, &sub->sync_defer, on_sub_synced, sub) < 0)
                ao_log(AO_LOG_ERROR, "informer %s: cannot schedule a subscriber's sync", sub->inf->key);
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

/* An event of a re-list's difference reaches the subscribers. */
static void notify_recovered(struct informer *inf, enum ao_watch_type type, const cJSON *obj, bool partial)
{
        count(inf, AO_INFORMER_RECOVERED, type);
        notify(inf, type, obj, partial);
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
 * Emit what changed between the old store and the fresh list, then keep the fresh one.
 *
 * The whole difference is one dispatch: the fresh texts must outlive it. Were each event its own
 * dispatch, the end of the first would find no subscriber waiting for the texts and drop them,
 * and every later Added or Modified of the difference would have no text left to send (a real
 * server's outage showed exactly that: deletions arrived, creations but the first did not).
 */
static void replace_store(struct informer *inf)
{
        struct ao_hashmap *old = inf->objects, *fresh = inf->listing;
        struct text_block *old_texts = inf->texts;
        inf->objects = fresh;
        inf->texts = inf->listing_texts;
        inf->texts_held = true; /* a fresh list has every text, until no subscriber waits for them */
        inf->listing = NULL;
        inf->listing_texts = NULL;
        inf->dispatching++;
        size_t iter = 0;
        const char *key;
        void *value;
        while (inf->synced && ao_hashmap_next(fresh, &iter, &key, &value)) {
                struct stored_object *now = value, *before = ao_hashmap_get(old, key);
                if (before && strcmp(before->resource_version, now->resource_version) == 0)
                        continue;
                cJSON *obj = cJSON_Parse(now->json);
                if (obj)
                        notify_recovered(inf, before ? AO_WATCH_EVENT_MODIFIED : AO_WATCH_EVENT_ADDED, obj,
                                         false);
                cJSON_Delete(obj);
        }
        iter = 0;
        while (inf->synced && ao_hashmap_next(old, &iter, &key, &value)) {
                if (ao_hashmap_get(fresh, key))
                        continue;
                bool partial;
                cJSON *obj = stored_object_json(inf, key, value, &partial);
                if (obj)
                        notify_recovered(inf, AO_WATCH_EVENT_DELETED, obj, partial);
                cJSON_Delete(obj);
        }
        ao_hashmap_free(old);
        texts_free(old_texts);
        if (--inf->dispatching == 0)
                reap_subs(inf);
}

static void list_finished(struct informer *inf, const char *resource_version)
{
        free(inf->resource_version);
        inf->resource_version = resource_version ? ao_xstrdup(resource_version) : NULL;
        if (inf->synced)
                count(inf, AO_INFORMER_RELIST, 0);
        replace_store(inf);
        inf->synced = true;
        /* Those from before the first list, and any that came for a list since. */
        for (struct ao_informer_sub *sub = inf->subs; sub; sub = sub->next)
                if (!sub->gone)
                        sub_schedule_synced(sub);
        maybe_drop_texts(inf);
        inf->watch_resumes = false;
        start_watch(inf);
}

static void store_page(struct informer *inf, cJSON *items)
{
        const cJSON *item;
        cJSON_ArrayForEach(item, items)
        {
                char *key = object_key(item);
                if (key)
                        ao_hashmap_put(inf->listing, key, stored_new(item, &inf->listing_texts));
                free(key);
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
                retry_later(inf, resp->retry_after_usec, true);
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
        store_page(inf, list.items);
        free(inf->continue_token);
        inf->continue_token = list.continue_token;
        list.continue_token = NULL;
        if (inf->continue_token)
                start_list(inf);
        else
                list_finished(inf, list.resource_version);
        ao_kube_list_done(&list);
}

static void start_list(struct informer *inf)
{
        inf->phase = PHASE_LISTING;
        if (!inf->continue_token) {
                ao_hashmap_free(inf->listing);
                texts_free(inf->listing_texts);
                inf->listing = ao_hashmap_new(stored_free);
                inf->listing_texts = NULL;
        }
        struct ao_strbuf q = {0};
        unsigned limit = inf->reg->options.page_size ? inf->reg->options.page_size : PAGE_SIZE_DEFAULT;
        ao_strbuf_appendf(&q, "%s?limit=%u", inf->collection, limit);
        if (inf->continue_token) {
                ao_strbuf_append(&q, "&continue=");
                kube_query_escape(&q, inf->continue_token);
        }
        append_selectors(&q, inf);
        struct ao_error err = {0};
        if (ao_kube_request_accept(inf->reg->client, inf->metadata_only ? ACCEPT_METADATA_LIST : NULL, "GET",
                                   ao_strbuf_str(&q), NULL, NULL, 0, on_list_page, inf, &inf->request,
                                   &err) < 0) {
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
                /* While a subscriber still waits to read the store, it must read this version. */
                struct stored_object *o = stored_new(obj, inf->texts_held ? &inf->texts : NULL);
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
        ao_hashmap_free(inf->listing);
        texts_free(inf->texts);
        texts_free(inf->listing_texts);
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
        if (inf->phase != PHASE_WATCHING || !sub_waiting(inf))
                return 0;
        ao_log(AO_LOG_DEBUG, "informer %s: a new subscriber: listing again", inf->key);
        ao_kube_request_cancel(inf->request);
        inf->request = NULL;
        start_list(inf);
        return 0;
}

/*
 * A subscriber joined after the texts were dropped: it gets the objects from a new list. A list
 * in flight will do; after a back-off the informer lists instead of watching; a running watch
 * is replaced from the loop (curl forbids removing a transfer inside its own callbacks).
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
        if (fresh)
                start_list(inf);
        else if (inf->synced && inf->texts_held)
                sub_schedule_synced(sub);
        else if (inf->synced)
                request_relist(inf);
        /* else: the first list is on its way and syncs it */
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
        return sub->synced;
}

void ao_informer_sub_foreach(struct ao_informer_sub *sub, ao_informer_object_handler *cb, void *userdata)
{
        size_t iter = 0;
        void *value;
        if (!sub->inf->texts_held) {
                ao_log(AO_LOG_DEBUG, "informer %s: objects read outside a synced callback", sub->inf->key);
                return;
        }
        while (ao_hashmap_next(sub->inf->objects, &iter, NULL, &value)) {
                cJSON *obj = cJSON_Parse(((struct stored_object *) value)->json);
                if (obj)
                        cb(obj, userdata);
                cJSON_Delete(obj);
        }
}

size_t ao_informer_sub_count(const struct ao_informer_sub *sub)
{
        return ao_hashmap_size(sub->inf->objects);
}
