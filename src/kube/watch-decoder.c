/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/kube-watch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/json-parse.h"
#include "ao/quote.h"
#include "ao/strbuf.h"
#include "ao/string-table.h"

/*
 * Splitting: the API server writes one event per line (Go's json.Encoder
 * appends "\n"), but a replayed backlog comes in 2 KiB chunks that cut lines
 * anywhere. Every complete line is decoded as soon as its newline arrives,
 * so the buffer only ever holds the start of one line, never a newline:
 * each fed byte is searched by memchr() once and copied at most once, and
 * nothing is rescanned or compacted. Lines that arrive whole (live events
 * come one per chunk) are parsed straight from the caller's bytes, without
 * a copy.
 *
 * Bounds: the held bytes are checked against the cap before they are
 * copied, so a line that never ends fails as soon as it is too long, and
 * the buffer never grows past max_event + 1 bytes (the 1 is a "\r" whose
 * "\n" has not arrived yet). After a line longer than KEEP_MAX the buffer is
 * released, so one huge event does not pin its memory for the life of the
 * watch.
 *
 * Offloading: with an offload handler, a line of at least offload_min bytes is not parsed here
 * but handed over (the held buffer itself, not a copy, when the line came in pieces), and the
 * decoder is busy until its event comes back through ao_watch_decoder_resume(). Whatever is fed
 * meanwhile, and the rest of the chunk that ended the line, waits in the backlog, undecoded, and
 * is decoded on resume: an event never overtakes one before it.
 *
 * Duplicate keys, which the API server never sends, are let through as the
 * parser keeps them (ao/json-parse.h): the events come from the server and
 * go to hooks as JSON again.
 */

#define EXCERPT_MAX    64          /* bytes of a line quoted in an error, "..." included */
#define KEEP_MAX       (64 * 1024) /* buffer capacity kept between lines */
#define CONTEXT_BEFORE 16          /* bytes shown before the position of a syntax error */

static const char *const type_names[_AO_WATCH_EVENT_MAX] = {
    [AO_WATCH_EVENT_ADDED] = "ADDED",     [AO_WATCH_EVENT_MODIFIED] = "MODIFIED",
    [AO_WATCH_EVENT_DELETED] = "DELETED", [AO_WATCH_EVENT_BOOKMARK] = "BOOKMARK",
    [AO_WATCH_EVENT_ERROR] = "ERROR",
};

struct ao_watch_decoder {
        size_t max_event;
        ao_watch_event_handler *cb;
        void *userdata; /* borrowed */
        char *buf;      /* owned: the start of a line whose "\n" has not arrived; never holds "\n" */
        size_t len;
        size_t cap;      /* at most max_event + 1 */
        size_t n_events; /* non-blank lines seen since the last reset: the ordinal in messages */
        bool failed;     /* an error was returned: only reset() or free() are allowed now */
        ao_watch_offload_handler *offload; /* NULL: every line is parsed here */
        size_t offload_min;                /* bytes from which a line is offloaded */
        bool busy;                         /* an offloaded line's event is awaited */
        struct ao_strbuf backlog;          /* owned: bytes fed while busy, not yet looked at */
};

AO_STRING_TABLE(ao_watch_type, enum ao_watch_type, type_names);

struct ao_watch_decoder *ao_watch_decoder_new(size_t max_event, ao_watch_event_handler *cb, void *userdata)
{
        struct ao_watch_decoder *d;

        if (!cb)
                return NULL;
        d = ao_xcalloc(1, sizeof(*d));
        /* Halved SIZE_MAX keeps max_event + 1 and the buffer arithmetic from wrapping. */
        d->max_event = max_event > 0 ? AO_MIN(max_event, SIZE_MAX / 2) : AO_WATCH_EVENT_MAX;
        d->cb = cb;
        d->userdata = userdata;
        return d;
}

struct ao_watch_decoder *ao_watch_decoder_free(struct ao_watch_decoder *d)
{
        if (!d)
                return NULL;
        free(d->buf);
        ao_strbuf_done(&d->backlog);
        free(d);
        return NULL;
}

void ao_watch_decoder_set_offload(struct ao_watch_decoder *d, size_t min_bytes,
                                  ao_watch_offload_handler *offload)
{
        d->offload = offload;
        d->offload_min = AO_MAX(min_bytes, (size_t) 1);
}

bool ao_watch_decoder_busy(const struct ao_watch_decoder *d)
{
        return d->busy;
}

static void release_buffer(struct ao_watch_decoder *d)
{
        d->len = 0;
        if (d->cap > KEEP_MAX) {
                free(d->buf);
                d->buf = NULL;
                d->cap = 0;
        }
}

void ao_watch_decoder_reset(struct ao_watch_decoder *d)
{
        release_buffer(d);
        d->n_events = 0;
        d->failed = false;
        d->busy = false;
        ao_strbuf_done(&d->backlog);
}

/* ---- errors ---------------------------------------------------------------------------------------- */

static int fail(size_t ordinal, struct ao_error *reterr, int code, const char *line, size_t len,
                const char *reason)
{
        char buf[EXCERPT_MAX];

        return ao_error_set(reterr, code, "watch event %zu: %s: '%s'", ordinal, reason,
                            ao_quote_bytes(buf, EXCERPT_MAX, line, len));
}

/* ---- lines ------------------------------------------------------------------------------------------- */

static bool is_blank(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
                        return false;
        return true;
}

/* The length a line counts against the cap: a "\r" before the "\n" is part of the line ending. */
static size_t content_length(size_t len, char last)
{
        return len > 0 && last == '\r' ? len - 1 : len;
}

static int too_big(struct ao_watch_decoder *d, struct ao_error *reterr)
{
        return ao_error_set(reterr, -E2BIG, "watch event %zu: longer than %zu bytes", d->n_events + 1,
                            d->max_event);
}

static const char *resource_version_of(const cJSON *object)
{
        const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(object, "metadata");
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(metadata, "resourceVersion");

        return cJSON_IsString(rv) ? rv->valuestring : NULL;
}

/* Check the envelope of a parsed line and take its object out of it. */
static int unwrap(size_t ordinal, cJSON *root, const char *line, size_t len, struct ao_watch_event *ret,
                  struct ao_error *reterr)
{
        char buf[EXCERPT_MAX];

        if (!cJSON_IsObject(root))
                return fail(ordinal, reterr, -EBADMSG, line, len, "not a JSON object");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
        if (!type)
                return fail(ordinal, reterr, -EBADMSG, line, len, "missing \"type\"");
        if (!cJSON_IsString(type))
                return fail(ordinal, reterr, -EBADMSG, line, len, "\"type\" is not a string");
        enum ao_watch_type t = ao_watch_type_from_string(type->valuestring);
        if (t < 0)
                return ao_error_set(
                    reterr, -EBADMSG, "watch event %zu: unknown type '%s'", ordinal,
                    ao_quote_bytes(buf, EXCERPT_MAX, type->valuestring, strlen(type->valuestring)));
        cJSON *object = cJSON_GetObjectItemCaseSensitive(root, "object");
        if (!object)
                return fail(ordinal, reterr, -EBADMSG, line, len, "missing \"object\"");
        if (!cJSON_IsObject(object))
                return fail(ordinal, reterr, -EBADMSG, line, len, "\"object\" is not an object");

        *ret = (struct ao_watch_event){
            .type = t,
            .object = cJSON_DetachItemViaPointer(root, object),
            .resource_version = resource_version_of(object),
            .size = len,
        };
        return 0;
}

int ao_watch_event_parse(const char *line, size_t len, size_t ordinal, struct ao_watch_event *ret,
                         struct ao_error *reterr)
{
        const char *end = NULL;
        cJSON *root;

        struct ao_json_parse_error bad;
        root = ao_json_parse(line, len, &end, &bad);
        if (!root) {
                /* The offending byte (the last one when the text ran out). */
                size_t at = ao_json_parse_error_byte(&bad, len);
                size_t from = at > CONTEXT_BEFORE ? at - CONTEXT_BEFORE : 0;
                char buf[EXCERPT_MAX];
                return ao_error_set(reterr, -EBADMSG, "watch event %zu: invalid JSON at byte %zu: '%s'",
                                    ordinal, at, ao_quote_bytes(buf, EXCERPT_MAX, line + from, len - from));
        }
        if (!is_blank(end, (size_t) (line + len - end))) {
                cJSON_Delete(root);
                return fail(ordinal, reterr, -EBADMSG, line, len, "text after the event");
        }
        int r = unwrap(ordinal, root, line, len, ret, reterr);
        cJSON_Delete(root);
        return r;
}

static int deliver(struct ao_watch_decoder *d, struct ao_watch_event *ev, struct ao_error *reterr)
{
        if (!ev->object)
                return 0;
        enum ao_watch_type type = ev->type;
        int r = d->cb(ev, d->userdata);
        if (r >= 0)
                return 0;
        /* The handler may have said why in this very struct (the informer does): keep that. */
        if (reterr && reterr->code != 0)
                return r;
        return ao_error_set(reterr, r, "watch event %zu (%s): handler failed: %s", d->n_events,
                            ao_watch_type_to_string(type), strerror(-r));
}

/* Add @len bytes of a line to the buffer, or fail when the line gets longer than the cap. */
static int hold(struct ao_watch_decoder *d, const char *data, size_t len, struct ao_error *reterr)
{
        if (len == 0)
                return 0;
        /* Held bytes are at most max_event + 1, so the room cannot wrap; @len may be anything. */
        size_t room = d->max_event + 1 - d->len;
        if (len > room || content_length(d->len + len, data[len - 1]) > d->max_event)
                return too_big(d, reterr);
        if (d->len + len > d->cap) {
                size_t cap = AO_MAX(d->cap * 2, AO_MAX(d->len + len, (size_t) 256));
                d->cap = AO_MIN(cap, d->max_event + 1);
                d->buf = ao_xrealloc(d->buf, d->cap);
        }
        memcpy(d->buf + d->len, data, len);
        d->len += len;
        return 0;
}

/* Hand line @line (@len bytes, held in the buffer when @held) to the offload handler; busy until resumed. */
static void offload_line(struct ao_watch_decoder *d, const char *line, size_t len, bool held)
{
        char *copy;
        if (held) {
                /* The buffer goes with the line (a 16 MiB event is not copied); the next line gets a new one. */
                copy = ao_xrealloc(d->buf, len + 1);
                d->buf = NULL;
                d->len = d->cap = 0;
        } else {
                copy = ao_xmalloc(len + 1);
                memcpy(copy, line, len);
        }
        copy[len] = '\0';
        d->busy = true;
        d->offload(copy, len, d->n_events, d->userdata);
}

/*
 * Decode one line (without its "\n"), at @line or, when @held, in the buffer: blank lines are
 * skipped, long ones offloaded, the rest parsed and delivered. The line is not needed any more
 * when this returns.
 */
static int decode_line(struct ao_watch_decoder *d, const char *line, size_t len, bool held,
                       struct ao_error *reterr)
{
        struct ao_watch_event ev;

        len = content_length(len, len > 0 ? line[len - 1] : 0);
        if (len > d->max_event)
                return too_big(d, reterr);
        if (is_blank(line, len)) {
                if (held)
                        release_buffer(d);
                return 0;
        }
        d->n_events++;
        if (d->offload && len >= d->offload_min) {
                offload_line(d, line, len, held);
                return 0;
        }
        int r = ao_watch_event_parse(line, len, d->n_events, &ev, reterr);
        if (held)
                release_buffer(d);
        if (r < 0)
                return r;
        return deliver(d, &ev, reterr);
}

/* A line whose "\n" is at @data + @len: straight from @data when nothing is held, else via the buffer. */
static int complete_line(struct ao_watch_decoder *d, const char *data, size_t len, struct ao_error *reterr)
{
        if (d->len == 0)
                return decode_line(d, data, len, false, reterr);
        int r = hold(d, data, len, reterr);
        if (r < 0)
                return r;
        return decode_line(d, d->buf, d->len, true, reterr);
}

static int refuse_after_error(struct ao_error *reterr)
{
        return ao_error_set(reterr, -EINVAL, "watch stream: decoder used after an error without a reset");
}

/* Split @data into lines and decode them, until it is used up or a line went to the offload handler. */
static int decode(struct ao_watch_decoder *d, const char *data, size_t len, struct ao_error *reterr)
{
        int r = 0;

        while (len > 0) {
                const char *nl = memchr(data, '\n', len);
                if (!nl) {
                        r = hold(d, data, len, reterr);
                        break;
                }
                size_t n = (size_t) (nl - data);
                r = complete_line(d, data, n, reterr);
                if (r < 0)
                        break;
                data += n + 1;
                len -= n + 1;
                if (d->busy) {
                        ao_strbuf_append_n(&d->backlog, data, len);
                        r = AO_WATCH_DECODER_BUSY;
                        break;
                }
        }
        if (r < 0)
                d->failed = true;
        return r;
}

int ao_watch_decoder_feed(struct ao_watch_decoder *d, const char *data, size_t len, struct ao_error *reterr)
{
        if (d->failed)
                return refuse_after_error(reterr);
        if (d->busy) {
                ao_strbuf_append_n(&d->backlog, data, len);
                return AO_WATCH_DECODER_BUSY;
        }
        return decode(d, data, len, reterr);
}

int ao_watch_decoder_resume(struct ao_watch_decoder *d, int parsed, struct ao_watch_event *ev,
                            struct ao_error *reterr)
{
        if (!d->busy)
                return ao_error_set(reterr, -EINVAL, "watch stream: resumed without an offloaded event");
        d->busy = false;
        int r = parsed;
        if (r >= 0)
                r = deliver(d, ev, reterr);
        /* What waited is decoded from a buffer of its own: a line in it may make a new backlog. */
        struct ao_strbuf waiting = d->backlog;
        d->backlog = (struct ao_strbuf){0};
        if (r >= 0 && waiting.len > 0)
                r = decode(d, waiting.buf, waiting.len, reterr);
        ao_strbuf_done(&waiting);
        if (r < 0)
                d->failed = true;
        return r;
}

int ao_watch_decoder_finish(struct ao_watch_decoder *d, struct ao_error *reterr)
{
        char buf[EXCERPT_MAX];

        if (d->failed)
                return refuse_after_error(reterr);
        if (d->busy)
                return ao_error_set(reterr, -EBUSY, "watch stream: finished while event %zu is being decoded",
                                    d->n_events);
        if (is_blank(d->buf, d->len)) {
                release_buffer(d);
                return 0;
        }
        d->failed = true;
        return ao_error_set(reterr, -EBADMSG,
                            "watch stream: truncated inside event %zu after %zu bytes: '%s'", d->n_events + 1,
                            d->len, ao_quote_bytes(buf, EXCERPT_MAX, d->buf, d->len));
}

/* ---- Status ------------------------------------------------------------------------------------------ */

static const char *string_or_empty(const cJSON *obj, const char *name)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, name);
        return cJSON_IsString(m) ? m->valuestring : "";
}

int ao_kube_status_from_json(const cJSON *obj, struct ao_kube_status *ret)
{
        if (!cJSON_IsObject(obj))
                return -EINVAL;
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Status") != 0)
                return -EINVAL;
        /* valueint is valuedouble saturated to the int range. */
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        *ret = (struct ao_kube_status){
            .code = cJSON_IsNumber(code) ? code->valueint : 0,
            .reason = string_or_empty(obj, "reason"),
            .message = string_or_empty(obj, "message"),
        };
        return 0;
}
