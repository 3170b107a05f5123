/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/kube/watch-decoder.c and list.c: watch streams as the API
 * server sends them (one event per line, backlogs cut into 2 KiB chunks,
 * CRLF, bookmarks, 410 ERROR events), every way of cutting a stream giving
 * the same events, the error cases with their messages, the cap, reset and
 * handler failures; list bodies with kind/apiVersion filled into items,
 * continue tokens, empty and null item lists and Status replies.
 * Events are compared as "TYPE rv canonical-object" lines.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/kube-watch.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

/* ---- recording events ------------------------------------------------------------------------------ */

struct recorder {
        struct ao_strbuf text; /* one line per event */
        size_t n;
        size_t fail_at; /* 1-based event on which the handler fails; 0: never */
        int types[_AO_WATCH_EVENT_MAX];
        bool rv_points_into_object; /* every non-NULL resource_version was the object's own string */
};

static int record(struct ao_watch_event *ev, void *userdata)
{
        struct recorder *rec = userdata;
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(ev->object, "metadata");
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
        char *canon = ao_json_canonical(ev->object);

        if (ev->resource_version && (!cJSON_IsString(rv) || rv->valuestring != ev->resource_version))
                rec->rv_points_into_object = false;
        if (!ev->resource_version && cJSON_IsString(rv))
                rec->rv_points_into_object = false;
        ao_strbuf_appendf(&rec->text, "%s %s %s\n", ao_watch_type_to_string(ev->type),
                          ev->resource_version ? ev->resource_version : "-", canon);
        free(canon);
        cJSON_Delete(ev->object);
        rec->types[ev->type]++;
        rec->n++;
        return rec->fail_at && rec->n == rec->fail_at ? -ECANCELED : 0;
}

static void recorder_init(struct recorder *rec)
{
        *rec = (struct recorder){.rv_points_into_object = true};
}

/* Feed @s in chunks of the sizes @next_chunk returns, then finish; returns the first error. */
typedef size_t chunker(size_t offset, void *state);

static int run(const char *s, size_t len, size_t max_event, chunker *next, void *state, struct recorder *rec,
               struct ao_error *err)
{
        struct ao_watch_decoder *d = ao_watch_decoder_new(max_event, record, rec);
        int r = 0;

        for (size_t off = 0; off < len && r >= 0;) {
                size_t n = next ? next(off, state) : len;
                n = AO_MIN(n, len - off);
                r = ao_watch_decoder_feed(d, s + off, n, err);
                off += n;
        }
        if (r >= 0)
                r = ao_watch_decoder_finish(d, err);
        ao_watch_decoder_free(d);
        return r;
}

static size_t chunk_fixed(size_t offset, void *state)
{
        (void) offset;
        return *(size_t *) state;
}

static uint64_t xorshift(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

static size_t chunk_random(size_t offset, void *state)
{
        (void) offset;
        return 1 + xorshift(state) % 300;
}

/* Two chunks, cut at *state. */
static size_t chunk_split(size_t offset, void *state)
{
        size_t at = *(size_t *) state;
        return offset < at ? at - offset : SIZE_MAX;
}

/* ---- streams ----------------------------------------------------------------------------------------- */

#define CM(rv, name, data)                                                                                   \
        "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                       \
        "\",\"namespace\":\"default\",\"uid\":\"6c2bd5a4-7f0e-4e5a-9c1d-0b1f2e3d4c5b\",\"resourceVersion\":" \
        "\"" rv "\",\"creationTimestamp\":\"2024-03-01T10:00:00Z\"},\"data\":" data "}"

static const char small_stream[] = "{\"type\":\"ADDED\",\"object\":" CM(
    "101", "cm-a",
    "{\"k\":\"v\"}") "}\n"
                     "{\"type\":\"MODIFIED\",\"object\":" CM(
                         "102", "cm-a",
                         "{\"k\":\"w \\u00e9\\n\"}") "}\n"
                                                     "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\","
                                                     "\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
                                                     "\"namespace\":\"default\",\"resourceVersion\":\"103\","
                                                     "\"labels\":{\"app\":\"x\"}},\"spec\":{"
                                                     "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
                                                     "\"args\":[\"sleep\",\"3600\"]}]},"
                                                     "\"status\":{\"phase\":\"Pending\",\"qosClass\":"
                                                     "\"BestEffort\"}}}\n"
                                                     "{\"type\":\"DELETED\",\"object\":" CM(
                                                         "104", "cm-a",
                                                         "{}") "}\n"
                                                               "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":"
                                                               "\"ConfigMap\",\"apiVersion\":\"v1\","
                                                               "\"metadata\":{"
                                                               "\"resourceVersion\":\"324\","
                                                               "\"creationTimestamp\":null}}}\n"
                                                               "{\"type\":\"ERROR\",\"object\":{\"kind\":"
                                                               "\"Status\",\"apiVersion\":\"v1\","
                                                               "\"metadata\":{},\"status\":"
                                                               "\"Failure\",\"message\":\"too old resource "
                                                               "version: 150 "
                                                               "(213)\",\"reason\":\"Expired\",\"code\":410}}"
                                                               "\n";

/* A backlog of @n configmaps, MODIFIED and ADDED alternating, with data of varying length. */
static char *backlog(size_t n, size_t *ret_len)
{
        struct ao_strbuf sb = {0};

        for (size_t i = 0; i < n; i++) {
                ao_strbuf_appendf(
                    &sb,
                    "{\"type\":\"%s\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
                    "\"metadata\":{\"name\":\"cm-%zu\",\"namespace\":\"ns\",\"resourceVersion\":"
                    "\"%zu\"},\"data\":{\"v\":\"",
                    i % 2 ? "MODIFIED" : "ADDED", i, 1000 + i);
                for (size_t k = 0; k < i % 97; k++)
                        ao_strbuf_append_c(&sb, (char) ('a' + k % 26));
                ao_strbuf_append(&sb, "\"}}}\n");
        }
        *ret_len = sb.len;
        return ao_strbuf_steal(&sb);
}

/* ---- splitting -------------------------------------------------------------------------------------- */

static void test_whole_stream(void)
{
        struct recorder rec;
        struct ao_error err = {0};

        recorder_init(&rec);
        int r = run(small_stream, strlen(small_stream), 0, NULL, NULL, &rec, &err);
        tap_is_int(r, 0, "whole stream: decodes (%s)", err.msg);
        tap_is_int(rec.n, 6, "whole stream: six events");
        tap_is_int(rec.types[AO_WATCH_EVENT_ADDED], 2, "whole stream: two ADDED");
        tap_is_int(rec.types[AO_WATCH_EVENT_MODIFIED], 1, "whole stream: one MODIFIED");
        tap_is_int(rec.types[AO_WATCH_EVENT_DELETED], 1, "whole stream: one DELETED");
        tap_is_int(rec.types[AO_WATCH_EVENT_BOOKMARK], 1, "whole stream: one BOOKMARK");
        tap_is_int(rec.types[AO_WATCH_EVENT_ERROR], 1, "whole stream: one ERROR");
        tap_ok(rec.rv_points_into_object, "whole stream: resource_version points into the object");
        tap_ok(strstr(ao_strbuf_str(&rec.text),
                      "MODIFIED 102 {\"apiVersion\":\"v1\",\"data\":{\"k\":\"w \xc3\xa9\\n\"}") != NULL,
               "whole stream: escapes decoded");
        tap_ok(strstr(ao_strbuf_str(&rec.text),
                      "BOOKMARK 324 {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                      "\"metadata\":{\"creationTimestamp\":null,\"resourceVersion\":\"324\"}}\n") != NULL,
               "whole stream: bookmark with only metadata.resourceVersion");
        tap_ok(strstr(ao_strbuf_str(&rec.text), "ERROR - {") != NULL,
               "whole stream: ERROR has no resourceVersion");
        ao_strbuf_done(&rec.text);
}

/* Every way of cutting @s must give the events of feeding it whole. */
static void check_cuts(const char *name, const char *s, size_t len, bool every_split)
{
        struct recorder whole, rec;
        struct ao_error err = {0};
        bool same = true;

        recorder_init(&whole);
        int want = run(s, len, 0, NULL, NULL, &whole, &err);
        tap_is_int(want, 0, "%s: whole (%s)", name, err.msg);

        size_t sizes[] = {1, 2, 3, 7, 2048, 4096};
        for (size_t i = 0; i < AO_ARRAY_SIZE(sizes); i++) {
                recorder_init(&rec);
                int r = run(s, len, 0, chunk_fixed, &sizes[i], &rec, &err);
                if (!tap_ok(r == want && strcmp(ao_strbuf_str(&rec.text), ao_strbuf_str(&whole.text)) == 0,
                            "%s: chunks of %zu bytes give the same events", name, sizes[i]))
                        tap_diag("r=%d n=%zu (%s)", r, rec.n, err.msg);
                ao_strbuf_done(&rec.text);
        }
        for (uint64_t seed = 1; seed <= 20; seed++) {
                uint64_t state = seed * 0x9E3779B97F4A7C15ULL;
                recorder_init(&rec);
                int r = run(s, len, 0, chunk_random, &state, &rec, &err);
                same = same && r == want && strcmp(ao_strbuf_str(&rec.text), ao_strbuf_str(&whole.text)) == 0;
                ao_strbuf_done(&rec.text);
        }
        tap_ok(same, "%s: 20 random chunkings give the same events", name);

        if (every_split) {
                size_t bad = SIZE_MAX;
                for (size_t at = 0; at <= len && bad == SIZE_MAX; at++) {
                        recorder_init(&rec);
                        int r = run(s, len, 0, chunk_split, &at, &rec, &err);
                        if (r != want || strcmp(ao_strbuf_str(&rec.text), ao_strbuf_str(&whole.text)) != 0)
                                bad = at;
                        ao_strbuf_done(&rec.text);
                }
                if (!tap_ok(bad == SIZE_MAX,
                            "%s: a cut at each of the %zu byte boundaries gives the same events", name,
                            len + 1))
                        tap_diag("differs when cut at %zu", bad);
        }
        ao_strbuf_done(&whole.text);
}

static void test_cuts(void)
{
        size_t len;
        char *big = backlog(300, &len);

        check_cuts("small stream", small_stream, strlen(small_stream), true);
        check_cuts("backlog", big, len, false);
        free(big);
}

/* CRLF line endings and blank lines (empty, spaces, a lone CR) change nothing. */
static void test_crlf_and_blank_lines(void)
{
        struct ao_strbuf crlf = {0};
        struct recorder want, rec;
        struct ao_error err = {0};

        ao_strbuf_append(&crlf, "\n\r\n   \n\t\r\n");
        for (const char *p = small_stream; *p; p++) {
                if (*p == '\n')
                        ao_strbuf_append(&crlf, "\r\n\n");
                else
                        ao_strbuf_append_c(&crlf, *p);
        }
        ao_strbuf_append(&crlf, "  \r\n");

        recorder_init(&want);
        (void) run(small_stream, strlen(small_stream), 0, NULL, NULL, &want, &err);
        recorder_init(&rec);
        int r = run(crlf.buf, crlf.len, 0, NULL, NULL, &rec, &err);
        tap_is_int(r, 0, "crlf: decodes (%s)", err.msg);
        tap_is_str(ao_strbuf_str(&rec.text), ao_strbuf_str(&want.text), "crlf and blank lines: same events");
        ao_strbuf_done(&rec.text);
        check_cuts("crlf stream", crlf.buf, crlf.len, true);
        ao_strbuf_done(&want.text);
        ao_strbuf_done(&crlf);
}

/* A large backlog in 2 KiB chunks, as a replaying apiserver sends it: linear time, every event. */
static void test_large_backlog(void)
{
        struct recorder rec;
        struct ao_error err = {0};
        size_t len, chunk = 2048;
        char *big = backlog(100000, &len);

        recorder_init(&rec);
        int r = run(big, len, 0, chunk_fixed, &chunk, &rec, &err);
        tap_is_int(r, 0, "100k events in 2 KiB chunks: decodes (%s)", err.msg);
        tap_is_int(rec.n, 100000, "100k events in 2 KiB chunks: every event");
        tap_ok(strstr(ao_strbuf_str(&rec.text), "MODIFIED 100999 {") != NULL, "100k events: the last one");
        ao_strbuf_done(&rec.text);
        free(big);
}

/* ---- errors ------------------------------------------------------------------------------------------ */

struct error_case {
        const char *name;
        const char *stream;
        int code;
        const char *msg; /* a substring of the message */
        size_t events;   /* delivered before the error */
};

static const struct error_case error_cases[] = {
    {"unknown type", "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"FOO\",\"object\":{}}\n", -EBADMSG,
     "watch event 2: unknown type 'FOO'", 1},
    {"lower-case type", "{\"type\":\"added\",\"object\":{}}\n", -EBADMSG,
     "watch event 1: unknown type 'added'", 0},
    {"type not a string", "{\"type\":1,\"object\":{}}\n", -EBADMSG, "watch event 1: \"type\" is not a string",
     0},
    {"missing type", "{\"object\":{}}\n", -EBADMSG, "watch event 1: missing \"type\": '{\"object\":{}}'", 0},
    {"object is a string", "{\"type\":\"ADDED\",\"object\":\"x\"}\n", -EBADMSG,
     "watch event 1: \"object\" is not an object", 0},
    {"object is an array", "{\"type\":\"ADDED\",\"object\":[]}\n", -EBADMSG,
     "watch event 1: \"object\" is not an object", 0},
    {"object is null", "{\"type\":\"ADDED\",\"object\":null}\n", -EBADMSG,
     "watch event 1: \"object\" is not an object", 0},
    {"missing object", "{\"type\":\"ADDED\"}\n", -EBADMSG, "watch event 1: missing \"object\"", 0},
    {"array line", "[1]\n", -EBADMSG, "watch event 1: not a JSON object: '[1]'", 0},
    {"invalid JSON", "{\"type\":\"ADDED\",\"object\":{}}\n\n{\"type\":\"ADDED\",\"object\":{x}}\n", -EBADMSG,
     "watch event 2: invalid JSON at byte 27: 'DED\",\"object\":{x}}'", 1},
    {"two objects on a line", "{\"type\":\"ADDED\",\"object\":{}} {\"type\":\"ADDED\",\"object\":{}}\n",
     -EBADMSG, "watch event 1: text after the event", 0},
    /* cJSON takes every byte <= 0x20 for whitespace, and gives up at the last one. */
    {"control characters in excerpt", "\x01\x02\n", -EBADMSG,
     "watch event 1: invalid JSON at byte 1: '\\x01\\x02'", 0},
    {"truncated stream", "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"MODIFIED\",\"obj", -EBADMSG,
     "watch stream: truncated inside event 2 after 23 bytes: '{\"type\":\"MODIFIED\",\"obj'", 1},
    {"truncated after CR", "{\"type\":\"ADDED\",\"object\":{}}\r", -EBADMSG,
     "watch stream: truncated inside event 1 after 29 bytes", 0},
};

static void test_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(error_cases); i++) {
                const struct error_case *c = &error_cases[i];
                struct recorder rec;
                struct ao_error err = {0};
                size_t one = 1;

                recorder_init(&rec);
                int r = run(c->stream, strlen(c->stream), 0, NULL, NULL, &rec, &err);
                tap_is_int(r, c->code, "%s: code", c->name);
                if (!tap_ok(strstr(err.msg, c->msg) != NULL, "%s: message", c->name))
                        tap_diag("got '%s', want '%s'", err.msg, c->msg);
                tap_is_int(rec.n, c->events, "%s: events before the error", c->name);
                ao_strbuf_done(&rec.text);

                /* Byte by byte: the same error after the same events. */
                struct ao_error err1 = {0};
                recorder_init(&rec);
                r = run(c->stream, strlen(c->stream), 0, chunk_fixed, &one, &rec, &err1);
                tap_ok(r == c->code && strcmp(err.msg, err1.msg) == 0 && rec.n == c->events,
                       "%s: same error byte by byte", c->name);
                ao_strbuf_done(&rec.text);
        }
}

static void test_after_error_and_reset(void)
{
        struct recorder rec;
        struct ao_error err = {0};
        const char bad[] = "{\"type\":\"NOPE\",\"object\":{}}\n";
        const char good[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n";

        recorder_init(&rec);
        struct ao_watch_decoder *d = ao_watch_decoder_new(0, record, &rec);
        tap_ok(d != NULL, "decoder_new");
        tap_is_int(ao_watch_decoder_feed(d, bad, strlen(bad), &err), -EBADMSG, "bad event fails");
        tap_is_int(ao_watch_decoder_feed(d, good, strlen(good), &err), -EINVAL,
                   "feed after an error: refused");
        tap_ok(strstr(err.msg, "without a reset") != NULL, "feed after an error: message (%s)", err.msg);
        tap_is_int(ao_watch_decoder_finish(d, &err), -EINVAL, "finish after an error: refused");

        ao_watch_decoder_reset(d);
        tap_is_int(ao_watch_decoder_feed(d, good, strlen(good), &err), 0, "after reset: decodes");
        tap_is_int(rec.n, 1, "after reset: one event");
        tap_is_str(ao_strbuf_str(&rec.text), "ADDED 7 {\"metadata\":{\"resourceVersion\":\"7\"}}\n",
                   "after reset: the event");

        /* A partial line is dropped by reset (a new connection), and ordinals start again. */
        tap_is_int(ao_watch_decoder_feed(d, good, 20, &err), 0, "partial line held");
        ao_watch_decoder_reset(d);
        tap_is_int(ao_watch_decoder_finish(d, &err), 0, "reset dropped the partial line");
        tap_is_int(ao_watch_decoder_feed(d, bad, strlen(bad), &err), -EBADMSG, "after reset: bad event");
        tap_ok(strstr(err.msg, "watch event 1:") != NULL, "after reset: ordinals start at 1 (%s)", err.msg);
        ao_watch_decoder_reset(d);

        /* finish() is not an error after complete lines and blank tails, and leaves the decoder usable. */
        tap_is_int(ao_watch_decoder_feed(d, good, strlen(good), &err), 0, "complete line");
        tap_is_int(ao_watch_decoder_feed(d, " \r", 2, &err), 0, "blank tail");
        tap_is_int(ao_watch_decoder_finish(d, &err), 0, "finish after a blank tail");
        tap_is_int(ao_watch_decoder_feed(d, good, strlen(good), &err), 0, "feed after finish");
        tap_is_int(rec.n, 3, "three events in all");
        ao_watch_decoder_free(d);
        ao_strbuf_done(&rec.text);

        tap_ok(ao_watch_decoder_free(NULL) == NULL, "decoder_free(NULL)");
        tap_ok(ao_watch_decoder_new(0, NULL, NULL) == NULL, "decoder_new without a handler: NULL");
}

struct explaining {
        struct ao_error *err; /* the one passed to feed */
};

static int explain(struct ao_watch_event *ev, void *userdata)
{
        struct explaining *ex = userdata;
        bool stop = ev->type == AO_WATCH_EVENT_ERROR;

        cJSON_Delete(ev->object);
        return stop ? ao_error_set(ex->err, -EPROTO, "ERROR event: too old") : 0;
}

/* The handler stops decoding: its code comes back and later events stay undelivered. */
static void test_handler_failure(void)
{
        struct recorder rec;
        struct ao_error err = {0};

        recorder_init(&rec);
        rec.fail_at = 2;
        struct ao_watch_decoder *d = ao_watch_decoder_new(0, record, &rec);
        int r = ao_watch_decoder_feed(d, small_stream, strlen(small_stream), &err);
        tap_is_int(r, -ECANCELED, "handler failure: code propagated");
        tap_is_int(rec.n, 2, "handler failure: nothing after the failing event");
        tap_ok(strstr(err.msg, "watch event 2 (MODIFIED): handler failed: ") != NULL,
               "handler failure: message (%s)", err.msg);
        tap_is_int(ao_watch_decoder_feed(d, "\n", 1, &err), -EINVAL, "handler failure: reset needed");
        ao_watch_decoder_free(d);
        ao_strbuf_done(&rec.text);

        /* A handler that explains itself in the caller's ao_error keeps its message. */
        struct explaining ex = {.err = &err};
        ao_error_clear(&err);
        d = ao_watch_decoder_new(0, explain, &ex);
        tap_is_int(ao_watch_decoder_feed(d, small_stream, strlen(small_stream), &err), -EPROTO,
                   "explaining handler: its code");
        tap_is_str(err.msg, "ERROR event: too old", "explaining handler: its message kept");
        ao_watch_decoder_free(d);
}

static void test_resource_version(void)
{
        const char stream[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":5}}}\n"
                              "{\"type\":\"ADDED\",\"object\":{\"metadata\":\"x\"}}\n"
                              "{\"type\":\"ADDED\",\"object\":{}}\n"
                              "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"\"}}}\n";
        struct recorder rec;
        struct ao_error err = {0};

        recorder_init(&rec);
        tap_is_int(run(stream, strlen(stream), 0, NULL, NULL, &rec, &err), 0, "resource versions: decodes");
        tap_ok(rec.rv_points_into_object, "resource versions: point into the object, NULL when not a string");
        tap_is_str(ao_strbuf_str(&rec.text),
                   "ADDED - {\"metadata\":{\"resourceVersion\":5}}\n"
                   "ADDED - {\"metadata\":\"x\"}\n"
                   "ADDED - {}\n"
                   "ADDED  {\"metadata\":{\"resourceVersion\":\"\"}}\n",
                   "resource versions: the events");
        ao_strbuf_done(&rec.text);
}

/* ---- the cap ------------------------------------------------------------------------------------------- */

static char *line_of(size_t len, const char *ending)
{
        /* {"type":"ADDED","object":{"x":"aaa…"}} padded to exactly @len bytes before @ending */
        const char head[] = "{\"type\":\"ADDED\",\"object\":{\"x\":\"", tail[] = "\"}}";
        size_t fixed = strlen(head) + strlen(tail);
        char *s = malloc(len + strlen(ending) + 1);

        memcpy(s, head, strlen(head));
        memset(s + strlen(head), 'a', len - fixed);
        memcpy(s + len - strlen(tail), tail, strlen(tail));
        strcpy(s + len, ending);
        return s;
}

static void test_cap(void)
{
        const size_t cap = 100;
        struct recorder rec;
        struct ao_error err = {0};
        size_t one = 1;

        char *exact = line_of(cap, "\n");
        recorder_init(&rec);
        tap_is_int(run(exact, strlen(exact), cap, chunk_fixed, &one, &rec, &err), 0,
                   "cap: a line of exactly cap");
        free(exact);
        char *exact_crlf = line_of(cap, "\r\n");
        tap_is_int(run(exact_crlf, strlen(exact_crlf), cap, chunk_fixed, &one, &rec, &err), 0,
                   "cap: a line of exactly cap, CRLF, byte by byte");
        tap_is_int(run(exact_crlf, strlen(exact_crlf), cap, NULL, NULL, &rec, &err), 0,
                   "cap: a line of exactly cap, CRLF, whole");
        free(exact_crlf);
        tap_is_int(rec.n, 3, "cap: all three delivered");
        ao_strbuf_done(&rec.text);

        char *over = line_of(cap + 1, "\n");
        recorder_init(&rec);
        tap_is_int(run(over, strlen(over), cap, NULL, NULL, &rec, &err), -E2BIG, "cap: one byte over, whole");
        tap_is_str(err.msg, "watch event 1: longer than 100 bytes", "cap: message");
        tap_is_int(run(over, strlen(over), cap, chunk_fixed, &one, &rec, &err), -E2BIG,
                   "cap: one byte over, byte by byte");
        free(over);

        /* No newline ever: the error comes as soon as the line is one byte over, not at the end. */
        struct ao_watch_decoder *d = ao_watch_decoder_new(cap, record, &rec);
        int r = 0;
        size_t fed = 0;
        for (; fed < 1000 && r == 0; fed++)
                r = ao_watch_decoder_feed(d, "x", 1, &err);
        tap_is_int(r, -E2BIG, "cap: endless line fails");
        tap_is_int(fed, cap + 1, "cap: fails on byte cap + 1, without waiting for the newline");
        ao_watch_decoder_free(d);

        /* A CR at the cap is not yet over it: it may be the start of the line ending. */
        d = ao_watch_decoder_new(cap, record, &rec);
        char *pending = line_of(cap, "\r");
        tap_is_int(ao_watch_decoder_feed(d, pending, strlen(pending), &err), 0,
                   "cap: cap bytes and a CR held");
        tap_is_int(ao_watch_decoder_feed(d, "x", 1, &err), -E2BIG, "cap: a byte after that CR is over");
        ao_watch_decoder_free(d);
        free(pending);

        /* One huge chunk without a newline fails before anything is copied. */
        size_t huge = 8u << 20;
        char *blob = malloc(huge);
        memset(blob, 'x', huge);
        d = ao_watch_decoder_new(cap, record, &rec);
        tap_is_int(ao_watch_decoder_feed(d, blob, huge, &err), -E2BIG, "cap: an 8 MiB chunk fails");
        ao_watch_decoder_reset(d);
        /* ...and after complete lines, in the same chunk. */
        memcpy(blob, "{\"type\":\"ADDED\",\"object\":{}}\n", 29);
        tap_is_int(ao_watch_decoder_feed(d, blob, huge, &err), -E2BIG, "cap: after a complete line too");
        tap_ok(strstr(err.msg, "watch event 2:") != NULL, "cap: ordinal of the long line (%s)", err.msg);
        ao_watch_decoder_free(d);
        free(blob);
        ao_strbuf_done(&rec.text);

        /* A huge cap (or none) does not overflow the arithmetic. */
        d = ao_watch_decoder_new(SIZE_MAX, record, &rec);
        recorder_init(&rec);
        tap_is_int(ao_watch_decoder_feed(d, small_stream, 10, &err), 0, "cap SIZE_MAX: partial line");
        tap_is_int(ao_watch_decoder_feed(d, small_stream + 10, strlen(small_stream) - 10, &err), 0,
                   "cap SIZE_MAX: rest");
        tap_is_int(rec.n, 6, "cap SIZE_MAX: every event");
        ao_watch_decoder_free(d);
        ao_strbuf_done(&rec.text);
}

/* Messages stay one short line whatever the input; big lines do not break the buffer. */
static void test_long_lines(void)
{
        struct recorder rec;
        struct ao_error err = {0};
        struct ao_strbuf sb = {0};

        ao_strbuf_append(&sb, "{\"type\":\"ADDED\",\"object\":{\"data\":\"");
        for (size_t i = 0; i < 100000; i++)
                ao_strbuf_append_c(&sb, (char) ('a' + i % 26));
        ao_strbuf_append(&sb, "\"},\"extra\":[\"\xff\xfe\x01\xc3\xa9\"]}\n");

        /* A 100 KB event cut in two: held in the buffer, which is released afterwards. */
        size_t half = sb.len / 2;
        recorder_init(&rec);
        tap_is_int(run(sb.buf, sb.len, 0, chunk_split, &half, &rec, &err), 0,
                   "100 KB event in two chunks (%s)", err.msg);
        tap_is_int(rec.n, 1, "100 KB event delivered");
        ao_strbuf_done(&rec.text);

        /* The same line, made invalid at its end: the excerpt is short, escaped and marked as cut. */
        sb.buf[sb.len - 3] = ',';
        recorder_init(&rec);
        tap_is_int(run(sb.buf, sb.len, 0, NULL, NULL, &rec, &err), -EBADMSG, "long invalid line fails");
        tap_ok(strlen(err.msg) < 120, "long invalid line: short message (%zu bytes)", strlen(err.msg));
        tap_ok(strstr(err.msg, "\\xff\\xfe\\x01\xc3\xa9") != NULL, "invalid UTF-8 and controls escaped (%s)",
               err.msg);
        sb.buf[sb.len - 3] = '}';
        sb.buf[1] = 'X';
        tap_is_int(run(sb.buf, sb.len, 0, NULL, NULL, &rec, &err), -EBADMSG, "long line without type fails");
        tap_ok(strlen(err.msg) < 120 && strstr(err.msg, "...'") != NULL,
               "long line: excerpt cut with '...' (%s)", err.msg);
        ao_strbuf_done(&rec.text);

        struct ao_kube_list l = {0};
        tap_is_int(ao_kube_list_parse(sb.buf + 7, sb.len - 7, NULL, NULL, &l, &err), -EBADMSG,
                   "long list body");
        tap_ok(strlen(err.msg) < 120 && strstr(err.msg, "...'") != NULL, "list excerpt cut with '...' (%s)",
               err.msg);
        tap_is_int(ao_kube_list_parse("\x01\xff{", 3, NULL, NULL, &l, &err), -EBADMSG, "binary list body");
        tap_ok(strstr(err.msg, "'\\x01\\xff{'") != NULL, "binary list body: escaped (%s)", err.msg);
        tap_is_int(ao_kube_list_parse(NULL, 0, NULL, NULL, &l, &err), -EBADMSG, "NULL list body");
        ao_strbuf_done(&sb);

        /* The line goes over the cap when its newline arrives, after part of it was held. */
        struct ao_watch_decoder *d = ao_watch_decoder_new(100, record, &rec);
        char *line = line_of(120, "\n");
        tap_is_int(ao_watch_decoder_feed(d, line, 60, &err), 0, "cap: first 60 bytes held");
        tap_is_int(ao_watch_decoder_feed(d, line + 60, strlen(line) - 60, &err), -E2BIG,
                   "cap: over when the rest arrives with the newline");
        ao_watch_decoder_free(d);
        free(line);
}

/* ---- types and Status --------------------------------------------------------------------------------- */

static void test_types(void)
{
        const char *names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

        for (int t = 0; t < _AO_WATCH_EVENT_MAX; t++) {
                tap_is_str(ao_watch_type_to_string(t), names[t], "type %d to string", t);
                tap_is_int(ao_watch_type_from_string(names[t]), t, "type %s from string", names[t]);
        }
        tap_ok(ao_watch_type_to_string(_AO_WATCH_EVENT_MAX) == NULL, "type out of range: NULL");
        tap_ok(ao_watch_type_to_string(_AO_WATCH_EVENT_INVALID) == NULL, "invalid type: NULL");
        tap_is_int(ao_watch_type_from_string("Added"), _AO_WATCH_EVENT_INVALID,
                   "type names are case-sensitive");
        tap_is_int(ao_watch_type_from_string(""), _AO_WATCH_EVENT_INVALID, "empty type name");
        tap_is_int(ao_watch_type_from_string(NULL), _AO_WATCH_EVENT_INVALID, "NULL type name");
}

static int keep_first_error(struct ao_watch_event *ev, void *userdata)
{
        cJSON **kept = userdata;
        if (ev->type == AO_WATCH_EVENT_ERROR && !*kept)
                *kept = ev->object;
        else
                cJSON_Delete(ev->object);
        return 0;
}

static void test_status(void)
{
        cJSON *obj = NULL;
        struct ao_error err = {0};
        struct ao_kube_status st = {0};

        /* A watch from a too old resourceVersion: HTTP 200 with a single ERROR event. */
        struct ao_watch_decoder *d = ao_watch_decoder_new(0, keep_first_error, &obj);
        tap_is_int(ao_watch_decoder_feed(d, small_stream, strlen(small_stream), &err), 0,
                   "410 stream decodes");
        ao_watch_decoder_free(d);
        tap_ok(obj != NULL, "the ERROR event's object");
        tap_is_int(ao_kube_status_from_json(obj, &st), 0, "ERROR object is a Status");
        tap_is_int(st.code, 410, "status code 410");
        tap_is_str(st.reason, "Expired", "status reason");
        tap_is_str(st.message, "too old resource version: 150 (213)", "status message");
        cJSON_Delete(obj);

        obj = cJSON_Parse("{\"kind\":\"Status\"}");
        st = (struct ao_kube_status){0};
        tap_is_int(ao_kube_status_from_json(obj, &st), 0, "bare Status");
        tap_ok(st.code == 0 && strcmp(st.reason, "") == 0 && strcmp(st.message, "") == 0,
               "bare Status: code 0, empty reason and message");
        cJSON_Delete(obj);

        obj = cJSON_Parse("{\"kind\":\"Status\",\"code\":\"410\",\"reason\":7,\"message\":null}");
        tap_is_int(ao_kube_status_from_json(obj, &st), 0, "Status with odd types");
        tap_ok(st.code == 0 && strcmp(st.reason, "") == 0 && strcmp(st.message, "") == 0,
               "Status with odd types: treated as absent");
        cJSON_Delete(obj);

        st = (struct ao_kube_status){.code = 99};
        const char *not_status[] = {"{\"kind\":\"ConfigMap\",\"code\":410}", "{\"code\":410}", "[\"Status\"]",
                                    "{\"kind\":1}", "\"Status\""};
        for (size_t i = 0; i < AO_ARRAY_SIZE(not_status); i++) {
                obj = cJSON_Parse(not_status[i]);
                tap_is_int(ao_kube_status_from_json(obj, &st), -EINVAL, "not a Status: %s", not_status[i]);
                cJSON_Delete(obj);
        }
        tap_is_int(ao_kube_status_from_json(NULL, &st), -EINVAL, "not a Status: NULL");
        tap_is_int(st.code, 99, "not a Status: result untouched");
}

/* ---- lists ------------------------------------------------------------------------------------------------ */

static int parse_list(const char *body, const char *kind, const char *api_version, struct ao_kube_list *ret,
                      struct ao_error *err)
{
        return ao_kube_list_parse(body, strlen(body), kind, api_version, ret, err);
}

static void test_list_fill(void)
{
        const char body[] =
            "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"555\"},"
            "\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"default\",\"resourceVersion\":\"500\"},"
            "\"data\":{\"k\":\"v\"}},"
            "{\"kind\":\"Other\",\"apiVersion\":\"x/v2\",\"metadata\":{\"name\":\"b\"}},"
            "{\"apiVersion\":\"v1beta1\",\"metadata\":{\"name\":\"c\"}}]}\n";
        struct ao_kube_list l = {0};
        struct ao_error err = {0};

        tap_is_int(parse_list(body, NULL, NULL, &l, &err), 0, "ConfigMapList parses (%s)", err.msg);
        tap_is_int(cJSON_GetArraySize(l.items), 3, "three items");
        tap_is_str(l.resource_version, "555", "list resourceVersion");
        tap_ok(l.continue_token == NULL, "no continue token");
        char *first = ao_json_canonical(cJSON_GetArrayItem(l.items, 0));
        tap_is_str(
            first,
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
            "\"a\",\"namespace\":\"default\",\"resourceVersion\":\"500\"}}",
            "kind and apiVersion filled in");
        free(first);
        tap_is_str(l.items->child->child->string, "apiVersion",
                   "apiVersion comes first, as kubectl prints it");
        tap_is_str(l.items->child->child->next->string, "kind", "then kind");
        const cJSON *b = cJSON_GetArrayItem(l.items, 1), *c = cJSON_GetArrayItem(l.items, 2);
        tap_is_str(cJSON_GetObjectItem(b, "kind")->valuestring, "Other", "an item's own kind is kept");
        tap_is_str(cJSON_GetObjectItem(b, "apiVersion")->valuestring, "x/v2",
                   "an item's own apiVersion is kept");
        tap_is_str(cJSON_GetObjectItem(c, "kind")->valuestring, "ConfigMap", "partial item: kind filled");
        tap_is_str(cJSON_GetObjectItem(c, "apiVersion")->valuestring, "v1beta1",
                   "partial item: apiVersion kept");
        ao_kube_list_done(&l);
        tap_ok(l.items == NULL && l.resource_version == NULL, "list_done empties the list");
        ao_kube_list_done(&l);
        ao_kube_list_done(NULL);

        /* The caller's kind and apiVersion win over what the list implies. */
        tap_is_int(parse_list(body, "Thing", "example.com/v1", &l, &err), 0, "explicit item kind");
        const cJSON *a = cJSON_GetArrayItem(l.items, 0);
        tap_is_str(cJSON_GetObjectItem(a, "kind")->valuestring, "Thing", "explicit kind used");
        tap_is_str(cJSON_GetObjectItem(a, "apiVersion")->valuestring, "example.com/v1",
                   "explicit apiVersion used");
        ao_kube_list_done(&l);

        const char apps[] = "{\"kind\":\"DeploymentList\",\"apiVersion\":\"apps/v1\",\"metadata\":{},"
                            "\"items\":[{\"metadata\":{\"name\":\"d\"}}]}";
        tap_is_int(parse_list(apps, NULL, NULL, &l, &err), 0, "DeploymentList parses");
        a = cJSON_GetArrayItem(l.items, 0);
        tap_is_str(cJSON_GetObjectItem(a, "kind")->valuestring, "Deployment", "Deployment kind derived");
        tap_is_str(cJSON_GetObjectItem(a, "apiVersion")->valuestring, "apps/v1", "apps/v1 from the list");
        tap_ok(l.resource_version == NULL, "no resourceVersion in the list: NULL");
        ao_kube_list_done(&l);
}

static void test_list_pages(void)
{
        const char page[] =
            "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9001\","
            "\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTAwMSwic3RhcnQiOiJwMVx1MDAwMCJ9\","
            "\"remainingItemCount\":41},\"items\":[{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\"},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]},\"status\":{\"phase\":"
            "\"Pending\"}}]}";
        const char last[] = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                            "\"9001\",\"continue\":\"\"},\"items\":[]}";
        const char null_items[] =
            "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
            "\"12\"},\"items\":null}";
        struct ao_kube_list l = {0};
        struct ao_error err = {0};

        tap_is_int(parse_list(page, NULL, NULL, &l, &err), 0, "PodList page parses (%s)", err.msg);
        tap_is_str(l.continue_token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTAwMSwic3RhcnQiOiJwMVx1MDAwMCJ9",
                   "continue token");
        tap_is_str(l.resource_version, "9001", "page resourceVersion");
        tap_is_str(cJSON_GetObjectItem(l.items->child, "kind")->valuestring, "Pod", "Pod kind derived");
        ao_kube_list_done(&l);

        tap_is_int(parse_list(last, NULL, NULL, &l, &err), 0, "last page parses");
        tap_ok(l.continue_token == NULL, "empty continue: NULL");
        tap_ok(cJSON_IsArray(l.items) && cJSON_GetArraySize(l.items) == 0, "items []: empty array");
        ao_kube_list_done(&l);

        tap_is_int(parse_list(null_items, NULL, NULL, &l, &err), 0, "items null parses");
        tap_ok(cJSON_IsArray(l.items) && cJSON_GetArraySize(l.items) == 0, "items null: empty array");
        tap_is_str(l.resource_version, "12", "items null: resourceVersion");
        ao_kube_list_done(&l);
}

struct list_error_case {
        const char *name;
        const char *body;
        int code;
        const char *msg;
};

static const struct list_error_case list_errors[] = {
    {"missing items", "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{}}", -EBADMSG,
     "list: missing \"items\""},
    {"items an object", "{\"kind\":\"PodList\",\"items\":{}}", -EBADMSG, "list: \"items\" is not an array"},
    {"item without name",
     "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{"
     "\"name\":\"b\"}},{\"metadata\":{\"name\":\"c\"}},{\"metadata\":{\"namespace\":\"x\"}}]}",
     -EBADMSG, "list: items[3]: metadata.name missing"},
    {"item without metadata", "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{}]}", -EBADMSG,
     "list: items[0]: metadata.name missing"},
    {"name not a string",
     "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":1}}]}", -EBADMSG,
     "list: items[0]: metadata.name is not a string"},
    {"empty name", "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"\"}}]}",
     -EBADMSG, "list: items[0]: metadata.name is empty"},
    {"item not an object", "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[\"p\"]}", -EBADMSG,
     "list: items[0]: not an object"},
    {"kind not a string",
     "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"kind\":5,\"metadata\":{\"name\":\"a\"}}]}",
     -EBADMSG, "list: items[0]: kind is not a string"},
    {"no item kind implied",
     "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", -EBADMSG,
     "list: items[0]: kind missing and not implied by the list (kind 'List')"},
    {"no apiVersion implied", "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", -EBADMSG,
     "list: items[0]: apiVersion missing and not implied by the list (kind 'PodList')"},
    {"410 Status",
     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"The "
     "resourceVersion for the provided list is too old.\",\"reason\":\"Expired\",\"code\":410}",
     -EPROTO,
     "list: the API server answered with a Status: 410 Expired: 'The resourceVersion for the provided list "
     "is "
     "too old.'"},
    {"403 Status",
     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":"
     "\"configmaps "
     "is forbidden: User \\\"system:serviceaccount:ops:limited\\\" cannot list resource \\\"configmaps\\\" "
     "in API "
     "group \\\"\\\" in the namespace \\\"kube-system\\\"\",\"reason\":\"Forbidden\",\"details\":{\"kind\":"
     "\"configmaps\"},\"code\":403}",
     -EPROTO,
     "403 Forbidden: 'configmaps is forbidden: User \"system:serviceaccount:ops:limited\" cannot list"},
    {"not JSON", "<html><body>502 Bad Gateway</body></html>", -EBADMSG,
     "list: invalid JSON at byte 0: '<html><body>502 Bad Gateway</body></html>'"},
    {"cut short", "{\"kind\":\"PodList\",\"items\":[", -EBADMSG, "list: invalid JSON at byte 26"},
    {"trailing text", "{\"kind\":\"PodList\",\"items\":[]} x", -EBADMSG,
     "list: text after the list at byte 30: 'x'"},
    {"an array", "[]", -EBADMSG, "list: not a JSON object"},
    {"empty body", "", -EBADMSG, "list: invalid JSON at byte 0"},
};

static void test_list_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(list_errors); i++) {
                const struct list_error_case *c = &list_errors[i];
                struct ao_kube_list l = {.resource_version = (char *) "untouched"};
                struct ao_error err = {0};

                int r = parse_list(c->body, NULL, NULL, &l, &err);
                tap_is_int(r, c->code, "list %s: code", c->name);
                if (!tap_ok(strstr(err.msg, c->msg) != NULL, "list %s: message", c->name))
                        tap_diag("got '%s', want '%s'", err.msg, c->msg);
                tap_ok(l.items == NULL && strcmp(l.resource_version, "untouched") == 0,
                       "list %s: result untouched", c->name);
        }
}

int main(void)
{
        test_types();
        test_whole_stream();
        test_cuts();
        test_crlf_and_blank_lines();
        test_large_backlog();
        test_errors();
        test_after_error_and_reset();
        test_handler_failure();
        test_resource_version();
        test_cap();
        test_long_lines();
        test_status();
        test_list_fill();
        test_list_pages();
        test_list_errors();
        return tap_done();
}
