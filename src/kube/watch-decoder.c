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
 * cJSON is lax in ways the API server never exercises (raw control
 * characters in strings, duplicate keys): they are let through, as the
 * events come from the server and go to hooks as JSON again.
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
        free(d);
        return NULL;
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
}

/* ---- errors ---------------------------------------------------------------------------------------- */

static int fail(struct ao_watch_decoder *d, struct ao_error *reterr, int code, const char *line, size_t len,
                const char *reason)
{
        char buf[EXCERPT_MAX];

        return ao_error_set(reterr, code, "watch event %zu: %s: '%s'", d->n_events, reason,
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
static int unwrap(struct ao_watch_decoder *d, cJSON *root, const char *line, size_t len,
                  struct ao_watch_event *ret, struct ao_error *reterr)
{
        char buf[EXCERPT_MAX];

        if (!cJSON_IsObject(root))
                return fail(d, reterr, -EBADMSG, line, len, "not a JSON object");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
        if (!type)
                return fail(d, reterr, -EBADMSG, line, len, "missing \"type\"");
        if (!cJSON_IsString(type))
                return fail(d, reterr, -EBADMSG, line, len, "\"type\" is not a string");
        enum ao_watch_type t = ao_watch_type_from_string(type->valuestring);
        if (t < 0)
                return ao_error_set(
                    reterr, -EBADMSG, "watch event %zu: unknown type '%s'", d->n_events,
                    ao_quote_bytes(buf, EXCERPT_MAX, type->valuestring, strlen(type->valuestring)));
        cJSON *object = cJSON_GetObjectItemCaseSensitive(root, "object");
        if (!object)
                return fail(d, reterr, -EBADMSG, line, len, "missing \"object\"");
        if (!cJSON_IsObject(object))
                return fail(d, reterr, -EBADMSG, line, len, "\"object\" is not an object");

        *ret = (struct ao_watch_event){
            .type = t,
            .object = cJSON_DetachItemViaPointer(root, object),
            .resource_version = resource_version_of(object),
        };
        return 0;
}

/*
 * Parse one line (without its "\n"). Sets ret->object to NULL for a blank
 * line. The line is not needed any more when this returns.
 */
static int parse_line(struct ao_watch_decoder *d, const char *line, size_t len, struct ao_watch_event *ret,
                      struct ao_error *reterr)
{
        const char *end = NULL;
        cJSON *root;

        len = content_length(len, len > 0 ? line[len - 1] : 0);
        if (len > d->max_event)
                return too_big(d, reterr);
        if (is_blank(line, len)) {
                *ret = (struct ao_watch_event){0};
                return 0;
        }
        d->n_events++;

        root = cJSON_ParseWithLengthOpts(line, len, &end, false);
        if (!root) {
                /* cJSON points at or just after the offending byte (the last one when the text ran out). */
                size_t at = end && end >= line && end <= line + len ? (size_t) (end - line) : 0;
                size_t from = at > CONTEXT_BEFORE ? at - CONTEXT_BEFORE : 0;
                char buf[EXCERPT_MAX];
                return ao_error_set(reterr, -EBADMSG, "watch event %zu: invalid JSON at byte %zu: '%s'",
                                    d->n_events, at,
                                    ao_quote_bytes(buf, EXCERPT_MAX, line + from, len - from));
        }
        if (!is_blank(end, (size_t) (line + len - end))) {
                cJSON_Delete(root);
                return fail(d, reterr, -EBADMSG, line, len, "text after the event");
        }
        int r = unwrap(d, root, line, len, ret, reterr);
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

/* A line whose "\n" is at @data + @len: straight from @data when nothing is held, else via the buffer. */
static int complete_line(struct ao_watch_decoder *d, const char *data, size_t len, struct ao_error *reterr)
{
        struct ao_watch_event ev;
        int r;

        if (d->len == 0) {
                r = parse_line(d, data, len, &ev, reterr);
        } else {
                r = hold(d, data, len, reterr);
                if (r < 0)
                        return r;
                r = parse_line(d, d->buf, d->len, &ev, reterr);
                release_buffer(d);
        }
        if (r < 0)
                return r;
        return deliver(d, &ev, reterr);
}

static int refuse_after_error(struct ao_error *reterr)
{
        return ao_error_set(reterr, -EINVAL, "watch stream: decoder used after an error without a reset");
}

int ao_watch_decoder_feed(struct ao_watch_decoder *d, const char *data, size_t len, struct ao_error *reterr)
{
        int r = 0;

        if (d->failed)
                return refuse_after_error(reterr);
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
        }
        if (r < 0)
                d->failed = true;
        return r;
}

int ao_watch_decoder_finish(struct ao_watch_decoder *d, struct ao_error *reterr)
{
        char buf[EXCERPT_MAX];

        if (d->failed)
                return refuse_after_error(reterr);
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
