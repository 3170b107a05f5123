/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ConfigMap config store (include/ao/config-map.h).
 *
 * State: the data the server has (parsed), the resourceVersion it came with, and what the
 * operator changed that the server has not accepted yet: JSON patch operations on a key's section
 * ("pending_ops"). What callers see is the server's data with them applied, computed again
 * whenever the server's data changes: a config patch of a hook stays a patch until it is stored, so a user's edit of the same
 * section that lands first is kept, and the patch is applied on top of it.
 *
 * One write is in flight at a time; it carries every pending key, as callers see it. When it
 * lands, the keys it carried leave pending unless they were changed again meanwhile (each key
 * remembers the generation of its last change).
 */
#include <cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/backoff.h"
#include "ao/config-data.h"
#include "ao/config-map.h"
#include "ao/informer.h"
#include "ao/jsonpatch.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/yaml.h"

/* 0.5 s doubling to 30 s, no jitter: one writer per operator, nobody to fall in step with. */
static const struct ao_backoff write_backoff = {
    .first_usec = 500 * AO_USEC_PER_MSEC,
    .max_usec = 30 * AO_USEC_PER_SEC,
    .jitter = AO_BACKOFF_JITTER_NONE,
};

struct ao_config_map {
        struct ao_config_map_options options;
        char *namespace_, *name, *display;
        char *path; /* the object's API path */
        struct ao_informer_sub *sub;
        cJSON *server;             /* parsed data as the server had it when last valid */
        cJSON *server_raw;         /* the server's data as it is now, valid or not (key → text) */
        char *resource_version;    /* of that data; NULL: the object does not exist */
        cJSON *pending_ops;        /* key → JSON patch operations on {key: section}, not yet stored */
        cJSON *pending_generation; /* key → generation of its last change */
        cJSON *data;               /* server + pending, what callers see */
        unsigned generation;
        struct ao_kube_request *write;
        cJSON *in_flight_generation; /* key → generation the write in flight carries */
        char *written_over;          /* resourceVersion known when the write in flight was sent */
        cJSON *listed;               /* before the informer's sync: the object as listed, if any */
        struct ao_source *retry;
        struct ao_backoff backoff; /* write_backoff with the options' retry_scale */
        unsigned failures;         /* writes and reads failed in a row: the back-off's exponent */
        bool ready;
};

/* ---- the data callers see ------------------------------------------------------------------------ */

/*
 * Apply @key's pending operations to its section in @data, one at a time: an operation that no
 * longer applies (the section was edited on the server) is dropped for good, with a warning.
 * @data may lack the section: the operations then start from an empty one.
 */
static void replay_ops(struct ao_config_map *cm, cJSON *data, const char *key, cJSON *ops)
{
        cJSON *doc = cJSON_CreateObject();
        cJSON *section = cJSON_DetachItemFromObjectCaseSensitive(data, key);
        if (section && !cJSON_IsObject(section))
                section = (cJSON_Delete(section), NULL);
        cJSON_AddItemToObject(doc, key, section ? section : cJSON_CreateObject());
        cJSON *op = ops->child;
        while (op) {
                cJSON *next = op->next, *one = cJSON_CreateArray();
                cJSON_AddItemToArray(one, cJSON_Duplicate(op, true));
                struct ao_error err = {0};
                if (ao_jsonpatch_apply(doc, one, 0, &err) < 0) {
                        char *text = cJSON_PrintUnformatted(op);
                        ao_log(
                            AO_LOG_WARN,
                            "config: ConfigMap %s: key '%s' was edited on the server before a config patch "
                            "was stored, and its operation %s no longer applies (%s): dropped",
                            cm->display, key, text ? text : "?", err.msg);
                        free(text);
                        cJSON_Delete(cJSON_DetachItemViaPointer(ops, op));
                }
                cJSON_Delete(one);
                op = next;
        }
        cJSON_AddItemToObject(data, key, cJSON_DetachItemFromObjectCaseSensitive(doc, key));
        cJSON_Delete(doc);
}

static cJSON *overlay(struct ao_config_map *cm)
{
        cJSON *data = cm->server ? cJSON_Duplicate(cm->server, true) : cJSON_CreateObject();
        for (cJSON *ops = cm->pending_ops->child; ops; ops = ops->next)
                replay_ops(cm, data, ops->string, ops);
        return data;
}

static bool same(const cJSON *a, const cJSON *b)
{
        char *x = ao_json_canonical(a), *y = ao_json_canonical(b);
        bool eq = strcmp(x, y) == 0;
        free(x);
        free(y);
        return eq;
}

/* Recompute what callers see; tell them when it changed and they asked to be told. */
static void refresh(struct ao_config_map *cm, bool report)
{
        cJSON *fresh = overlay(cm);
        bool changed = !cm->data || !same(cm->data, fresh);
        cJSON_Delete(cm->data);
        cm->data = fresh;
        if (changed && report && cm->ready && cm->options.on_change)
                cm->options.on_change(cm->data, cm->options.userdata);
}

/* ---- reading ------------------------------------------------------------------------------------- */

static const char *meta_string(const cJSON *obj, const char *field)
{
        const cJSON *v =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), field);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void set_resource_version(struct ao_config_map *cm, const char *rv)
{
        free(cm->resource_version);
        cm->resource_version = rv ? ao_xstrdup(rv) : NULL;
}

/* The object as the server has it now (NULL: it is gone). Returns < 0 when its data is invalid. */
static int take_object(struct ao_config_map *cm, const cJSON *obj, struct ao_error *reterr)
{
        cJSON *parsed = NULL;
        cJSON_Delete(cm->server_raw);
        cm->server_raw = NULL;
        if (obj) {
                const cJSON *raw = cJSON_GetObjectItemCaseSensitive(obj, "data");
                cm->server_raw = cJSON_IsObject(raw) ? cJSON_Duplicate(raw, true) : NULL;
                cJSON *empty = cJSON_CreateObject();
                int r = ao_config_data_parse(raw && !cJSON_IsNull(raw) ? raw : empty, cm->display, &parsed,
                                             reterr);
                cJSON_Delete(empty);
                /* The version moves on even when the data is refused: writes must base on it. */
                set_resource_version(cm, meta_string(obj, "resourceVersion"));
                if (r < 0)
                        return r;
        } else {
                set_resource_version(cm, NULL);
                parsed = cJSON_CreateObject();
        }
        cJSON_Delete(cm->server);
        cm->server = parsed;
        return 0;
}

static void report_invalid(struct ao_config_map *cm, const struct ao_error *err)
{
        if (cm->options.on_invalid)
                cm->options.on_invalid(err, cm->options.userdata);
}

/* The object the list found (its events came before this), or none. */
static void on_synced(struct ao_informer_sub *sub, void *userdata)
{
        struct ao_config_map *cm = userdata;
        cJSON *listed = TAKE_PTR(cm->listed);
        bool exists = listed != NULL;
        struct ao_error err = {0};
        int r = take_object(cm, listed, &err);
        cJSON_Delete(listed);
        refresh(cm, false);
        cm->ready = true;
        if (!exists)
                ao_log(AO_LOG_INFO, "config: ConfigMap %s does not exist: empty config", cm->display);
        if (cm->options.on_ready)
                cm->options.on_ready(r < 0 ? &err : NULL, cm->options.userdata);
}

static void on_event(struct ao_informer_sub *sub, enum ao_watch_type type, const cJSON *obj, bool partial,
                     void *userdata)
{
        struct ao_config_map *cm = userdata;
        struct ao_error err = {0};
        if (!ao_informer_sub_synced(sub)) {
                /* The list under way: keep what it found (the field selector lets one object through). */
                cJSON_Delete(TAKE_PTR(cm->listed));
                if (type != AO_WATCH_EVENT_DELETED)
                        cm->listed = cJSON_Duplicate(obj, true);
                return;
        }
        if (type == AO_WATCH_EVENT_DELETED)
                ao_log(AO_LOG_WARN, "config: ConfigMap %s was deleted: the config is empty now", cm->display);
        if (take_object(cm, type == AO_WATCH_EVENT_DELETED ? NULL : obj, &err) < 0) {
                report_invalid(cm, &err);
                return;
        }
        refresh(cm, true);
}

static const struct ao_informer_sub_ops watch_ops = {.synced = on_synced, .event = on_event};

/* ---- writing ------------------------------------------------------------------------------------- */

static void send_pending(struct ao_config_map *cm);
static void refetch(struct ao_config_map *cm);

static int on_retry(struct ao_source *s, uint64_t now, void *userdata)
{
        send_pending(userdata);
        return 0;
}

static void retry_later(struct ao_config_map *cm, uint64_t at_least_usec)
{
        if (cm->failures < UINT_MAX)
                cm->failures++;
        (void) ao_source_set_time_relative(cm->retry,
                                           ao_backoff_wait_usec(&cm->backoff, cm->failures, at_least_usec));
}

/* The keys of the write that landed leave pending, unless they were set again meanwhile. */
static void settle(struct ao_config_map *cm)
{
        for (const cJSON *g = cm->in_flight_generation->child; g; g = g->next) {
                const cJSON *now = cJSON_GetObjectItemCaseSensitive(cm->pending_generation, g->string);
                if (!now || now->valuedouble != g->valuedouble)
                        continue;
                cJSON_DeleteItemFromObjectCaseSensitive(cm->pending_ops, g->string);
                cJSON_DeleteItemFromObjectCaseSensitive(cm->pending_generation, g->string);
        }
        cJSON_Delete(cm->in_flight_generation);
        cm->in_flight_generation = NULL;
}

/* Whether two resourceVersions (NULL: the object did not exist) are the same. */
static bool same_version(const char *a, const char *b)
{
        return a && b ? strcmp(a, b) == 0 : a == b;
}

static void on_written(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_config_map *cm = userdata;
        cm->write = NULL;
        if (resp->status == 200 || resp->status == 201) {
                cJSON *obj = cJSON_ParseWithLength(resp->body, resp->len);
                const char *rv = meta_string(obj, "resourceVersion");
                /*
                 * Our own write; the watch brings the same version, which then changes nothing. Only
                 * when the watch brought nothing since the write was sent: otherwise what it brought
                 * may be newer than our write (someone's edit landing right after it), and taking
                 * the write's answer would step back to before that edit, which the watch has
                 * already delivered and will not deliver again.
                 */
                if (rv && same_version(cm->resource_version, cm->written_over) &&
                    !same_version(rv, cm->resource_version)) {
                        struct ao_error err = {0};
                        if (take_object(cm, obj, &err) < 0)
                                report_invalid(cm, &err);
                }
                cJSON_Delete(obj);
                settle(cm);
                cm->failures = 0;
                refresh(cm, true);
                if (cJSON_GetArraySize(cm->pending_generation) > 0)
                        send_pending(cm);
                return;
        }
        cJSON_Delete(cm->in_flight_generation);
        cm->in_flight_generation = NULL;
        if (resp->status == 409 || resp->status == 404) {
                /* It moved, came or went: read it again, then send the same keys on top of what is there. */
                ao_log(AO_LOG_INFO, "config: ConfigMap %s changed under a write (HTTP %ld); writing again",
                       cm->display, resp->status);
                refetch(cm);
                return;
        }
        if (resp->status)
                ao_log(AO_LOG_WARN, "config: writing ConfigMap %s: HTTP %ld: %.200s; retrying", cm->display,
                       resp->status, resp->body ? resp->body : "");
        else
                ao_log(AO_LOG_WARN, "config: writing ConfigMap %s: %s; retrying", cm->display,
                       resp->error.msg);
        retry_later(cm, resp->retry_after_usec);
}

static void on_refetched(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_config_map *cm = userdata;
        cm->write = NULL;
        struct ao_error err = {0};
        if (resp->status == 200 || resp->status == 404) {
                cJSON *obj = resp->status == 200 ? cJSON_ParseWithLength(resp->body, resp->len) : NULL;
                if (take_object(cm, obj, &err) < 0)
                        report_invalid(cm, &err);
                cJSON_Delete(obj);
                refresh(cm, true);
                send_pending(cm);
                return;
        }
        ao_log(AO_LOG_WARN, "config: reading ConfigMap %s: %s; retrying", cm->display,
               resp->status ? "unexpected HTTP status" : resp->error.msg);
        retry_later(cm, resp->retry_after_usec);
}

/* Read the object now (the watch may lag behind a conflict); the write goes out after that. */
static void refetch(struct ao_config_map *cm)
{
        struct ao_error err = {0};
        if (ao_kube_request(cm->options.client, "GET", cm->path, NULL, NULL, 0, on_refetched, cm, &cm->write,
                            &err) < 0) {
                cm->write = NULL;
                ao_log(AO_LOG_WARN, "config: reading ConfigMap %s: %s; retrying", cm->display, err.msg);
                retry_later(cm, 0);
        }
}

/*
 * @key's section as the server has it now, parsed alone: other keys may hold what the operator
 * refuses (the config callers see then stays the last valid one), but a write replaces only this
 * key, so it must start from this key's current text. When that text itself does not parse, the
 * section of the last valid data. NULL when neither has it.
 */
static cJSON *current_section(const struct ao_config_map *cm, const char *key)
{
        const cJSON *raw = cJSON_GetObjectItemCaseSensitive(cm->server_raw, key);
        if (raw) {
                cJSON *one = cJSON_CreateObject(), *parsed = NULL;
                cJSON_AddItemToObject(one, key, cJSON_Duplicate(raw, true));
                struct ao_error err = {0};
                int r = ao_config_data_parse(one, cm->display, &parsed, &err);
                cJSON_Delete(one);
                if (r >= 0) {
                        cJSON *section = cJSON_DetachItemFromObjectCaseSensitive(parsed, key);
                        cJSON_Delete(parsed);
                        return section;
                }
        }
        const cJSON *valid = cJSON_GetObjectItemCaseSensitive(cm->server, key);
        return valid ? cJSON_Duplicate(valid, true) : NULL;
}

/*
 * The merge patch (or, for a missing object, the object) carrying every pending key: the
 * server's current section with the pending operations applied.
 */
static char *write_body(struct ao_config_map *cm, bool create)
{
        cJSON *values = cJSON_CreateObject();
        for (cJSON *ops = cm->pending_ops->child; ops; ops = ops->next) {
                cJSON *section = current_section(cm, ops->string);
                if (section)
                        cJSON_AddItemToObject(values, ops->string, section);
                replay_ops(cm, values, ops->string, ops);
        }
        cJSON *data = ao_config_data_format(values);
        cJSON *body = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(body, "metadata");
        if (create) {
                cJSON_AddStringToObject(body, "apiVersion", "v1");
                cJSON_AddStringToObject(body, "kind", "ConfigMap");
                cJSON_AddStringToObject(meta, "name", cm->name);
                cJSON_AddStringToObject(meta, "namespace", cm->namespace_);
        } else {
                cJSON_AddStringToObject(meta, "resourceVersion", cm->resource_version);
        }
        cJSON_AddItemToObject(body, "data", data);
        char *text = cJSON_PrintUnformatted(body);
        cJSON_Delete(body);
        cJSON_Delete(values);
        return text;
}

static void send_pending(struct ao_config_map *cm)
{
        if (cm->write || cJSON_GetArraySize(cm->pending_generation) == 0)
                return;
        (void) ao_source_set_enabled(cm->retry, AO_SOURCE_OFF);
        bool create = !cm->resource_version;
        char *body = write_body(cm, create);
        cm->in_flight_generation = cJSON_Duplicate(cm->pending_generation, true);
        free(cm->written_over);
        cm->written_over = cm->resource_version ? ao_xstrdup(cm->resource_version) : NULL;
        char *collection = NULL;
        if (create)
                collection = ao_kube_resource_path(cm->options.resource, cm->namespace_, NULL);
        struct ao_error err = {0};
        int r = ao_kube_request(cm->options.client, create ? "POST" : "PATCH", create ? collection : cm->path,
                                create ? "application/json" : "application/merge-patch+json", body,
                                strlen(body), on_written, cm, &cm->write, &err);
        free(body);
        free(collection);
        if (r < 0) {
                cm->write = NULL;
                cJSON_Delete(cm->in_flight_generation);
                cm->in_flight_generation = NULL;
                ao_log(AO_LOG_WARN, "config: writing ConfigMap %s: %s; retrying", cm->display, err.msg);
                retry_later(cm, 0);
        }
}

/* ---- public API ---------------------------------------------------------------------------------- */

int ao_config_map_patch(struct ao_config_map *cm, const char *key, const cJSON *ops, struct ao_error *reterr)
{
        (void) reterr;
        cJSON *list = cJSON_GetObjectItemCaseSensitive(cm->pending_ops, key);
        if (!list)
                list = cJSON_AddArrayToObject(cm->pending_ops, key);
        const cJSON *op;
        cJSON_ArrayForEach(op, ops)
        {
                cJSON_AddItemToArray(list, cJSON_Duplicate(op, true));
        }
        cJSON_DeleteItemFromObjectCaseSensitive(cm->pending_generation, key);
        cJSON_AddNumberToObject(cm->pending_generation, key, ++cm->generation);
        refresh(cm, false);
        send_pending(cm);
        return 0;
}

const cJSON *ao_config_map_data(const struct ao_config_map *cm)
{
        return cm->data;
}

size_t ao_config_map_pending(const struct ao_config_map *cm)
{
        return (size_t) cJSON_GetArraySize(cm->pending_generation);
}

const char *ao_config_map_name(const struct ao_config_map *cm)
{
        return cm->display;
}

int ao_config_map_open(const struct ao_config_map_options *options, struct ao_config_map **ret,
                       struct ao_error *reterr)
{
        struct ao_config_map *cm = ao_xcalloc(1, sizeof(*cm));
        cm->options = *options;
        cm->backoff = write_backoff;
        cm->backoff.retry_scale = options->retry_scale;
        cm->namespace_ = ao_xstrdup(options->namespace_);
        cm->name = ao_xstrdup(options->name);
        cm->display = ao_xasprintf("%s/%s", options->namespace_, options->name);
        cm->path = ao_kube_resource_path(options->resource, options->namespace_, options->name);
        cm->server = cJSON_CreateObject();
        cm->pending_ops = cJSON_CreateObject();
        cm->pending_generation = cJSON_CreateObject();
        refresh(cm, false);
        int r = ao_reactor_add_time(options->reactor, &cm->retry, 0, on_retry, cm);
        if (r < 0) {
                ao_config_map_free(cm);
                return ao_error_set(reterr, r, "config: cannot create a timer");
        }
        (void) ao_source_set_enabled(cm->retry, AO_SOURCE_OFF);
        char *selector = ao_xasprintf("metadata.name=%s", options->name);
        const struct ao_informer_query q = {
            .resource = options->resource,
            .ns = options->namespace_,
            .field_selector = selector,
        };
        r = ao_informers_subscribe(options->informers, &q, &watch_ops, cm, &cm->sub, reterr);
        free(selector);
        if (r < 0) {
                ao_config_map_free(cm);
                return r;
        }
        *ret = cm;
        return 0;
}

struct ao_config_map *ao_config_map_free(struct ao_config_map *cm)
{
        if (!cm)
                return NULL;
        if (cJSON_GetArraySize(cm->pending_generation) > 0)
                ao_log(AO_LOG_WARN, "config: %d key(s) not yet written to ConfigMap %s at shutdown",
                       cJSON_GetArraySize(cm->pending_generation), cm->display);
        ao_kube_request_cancel(cm->write);
        ao_informer_unsubscribe(cm->sub);
        ao_source_free(cm->retry);
        cJSON_Delete(cm->listed);
        cJSON_Delete(cm->server);
        cJSON_Delete(cm->server_raw);
        cJSON_Delete(cm->pending_ops);
        cJSON_Delete(cm->pending_generation);
        cJSON_Delete(cm->in_flight_generation);
        cJSON_Delete(cm->data);
        free(cm->resource_version);
        free(cm->written_over);
        free(cm->namespace_);
        free(cm->name);
        free(cm->display);
        free(cm->path);
        free(cm);
        return NULL;
}
