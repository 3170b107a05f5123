/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The bodies the API server sends: watch streams, lists and Status objects.
 *
 * A watch body is a stream of JSON objects {"type":..,"object":{..}}, one per line. Chunk
 * boundaries mean nothing (a replayed backlog arrives in 2 KiB chunks that cut objects in
 * half), so the decoder buffers bytes and splits on newlines; a line over the event cap is an
 * error (the caller drops the connection and re-lists), never a crash or an unbounded buffer.
 *
 * Non-logging module; thread-safe per decoder.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct cJSON;

#define AO_WATCH_EVENT_MAX (16u * 1024 * 1024) /* bytes of one watch event */

enum ao_watch_type {
        AO_WATCH_EVENT_ADDED,
        AO_WATCH_EVENT_MODIFIED,
        AO_WATCH_EVENT_DELETED,
        AO_WATCH_EVENT_BOOKMARK,
        AO_WATCH_EVENT_ERROR,
        _AO_WATCH_EVENT_MAX,
        _AO_WATCH_EVENT_INVALID = -EINVAL,
};

/** "ADDED", ... */
const char *ao_watch_type_to_string(enum ao_watch_type t);
enum ao_watch_type ao_watch_type_from_string(const char *s);

/** A decoded event; @object is handed to the callback, which takes it (must free or keep it). */
struct ao_watch_event {
        enum ao_watch_type type;
        struct cJSON *object;
        const char *resource_version; /* object.metadata.resourceVersion (points into @object), or NULL */
};

/**
 * Called once per event, in order, from inside ao_watch_decoder_feed(). It takes @ev->object
 * whatever it returns. Return < 0 to stop decoding: feed returns that code, and sets its
 * @reterr only when that holds no error yet (code 0), so a handler that records its own reason
 * in the same struct ao_error (through @userdata) keeps it. The handler must not feed, reset or
 * free the decoder.
 */
typedef int ao_watch_event_handler(struct ao_watch_event *ev, void *userdata);

struct ao_watch_decoder;

/**
 * A decoder for one stream at a time. @max_event caps one line, in bytes without its line
 * ending; 0 means AO_WATCH_EVENT_MAX. The decoder never holds more than @max_event + 1 bytes.
 * @cb is required (NULL: returns NULL); @userdata is borrowed. Allocation failure aborts.
 */
struct ao_watch_decoder *ao_watch_decoder_new(size_t max_event, ao_watch_event_handler *cb, void *userdata);
struct ao_watch_decoder *ao_watch_decoder_free(struct ao_watch_decoder *d);

/**
 * Feed @len bytes. Every complete line ("\n", or "\r\n") is decoded and delivered; blank lines
 * are skipped. A line that is not a JSON object with a known "type" and an object "object", or
 * longer than the cap, fails with -EBADMSG / -E2BIG and a message with the event's ordinal
 * number (1-based, since the last reset) and a short excerpt; -E2BIG comes as soon as the held
 * part of a line is over the cap, without waiting for its newline. Events before the failing
 * line have been delivered. After an error (a handler's included) the decoder must be reset
 * before it is fed again: until then feed and finish fail with -EINVAL.
 */
int ao_watch_decoder_feed(struct ao_watch_decoder *d, const char *data, size_t len, struct ao_error *reterr);

/**
 * At the end of the stream: -EBADMSG when a partial line is left over (truncated stream: a last
 * event without its newline counts as truncated, as the API server always ends events with
 * one), else 0 and the decoder may be fed again.
 */
int ao_watch_decoder_finish(struct ao_watch_decoder *d, struct ao_error *reterr);

/** Drop buffered bytes, the event count and any error (new connection). */
void ao_watch_decoder_reset(struct ao_watch_decoder *d);

/** A metav1.Status: what errors and ERROR events carry. Strings point into the parsed object. */
struct ao_kube_status {
        int code;            /* "code"; 0 when absent */
        const char *reason;  /* "Expired", "Conflict", ...; "" when absent */
        const char *message; /* ""  when absent */
};

/** Read @obj as a Status. Returns 0 when it is {"kind":"Status",...}, -EINVAL otherwise. */
int ao_kube_status_from_json(const struct cJSON *obj, struct ao_kube_status *ret);

/** A decoded list response. @items is taken out of the document (caller owns it). */
struct ao_kube_list {
        struct cJSON *items;    /* owned array (possibly empty) */
        char *resource_version; /* owned: metadata.resourceVersion, or NULL */
        char *continue_token;   /* owned: metadata.continue when non-empty, or NULL */
};

/**
 * Parse a list response body. Items without metadata.name are an error; "kind" and
 * "apiVersion" of the list's items ("PodList" → "Pod") are filled into items that lack them,
 * as client-go does, so hooks see complete objects. @item_kind/@item_api_version may be NULL
 * (derived from the list's own kind and apiVersion).
 */
int ao_kube_list_parse(const char *body, size_t len, const char *item_kind, const char *item_api_version,
                       struct ao_kube_list *ret, struct ao_error *reterr);
void ao_kube_list_done(struct ao_kube_list *l);
