/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch streams and list bodies. Input: byte 0 chooses how the rest is cut
 * into chunks (bits 0-2), a small event cap (bit 3, so -E2BIG is reached),
 * a handler that fails on the third event (bit 4) and the item kind passed
 * to the list parser (bit 5); the rest is the body. It is fed to a decoder
 * whole and to another one in chunks, then both are finished. Besides
 * crashes, leaks and undefined behaviour, it aborts when an invariant
 * breaks: the chunked feed must deliver the same events (type,
 * resourceVersion and canonical object text) and end with the same code as
 * the whole one, resource_version must point into the object, errors must
 * be a single printable line, and a parsed list must hold only objects with
 * a name, a kind and an apiVersion.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/kube-watch.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Large enough for a backlog of a few hundred objects; beyond that only slower. */
#define FUZZ_INPUT_MAX (256 * 1024)
#define SMALL_CAP      512

struct recorder {
        struct ao_strbuf text;
        size_t n;
        bool fail_third;
};

static void check_message(const char *msg)
{
        if (msg[0] == '\0')
                abort();
        for (const unsigned char *p = (const unsigned char *) msg; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

static const char *string_member(const cJSON *obj, const char *name)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, name);
        return cJSON_IsString(m) ? m->valuestring : NULL;
}

static int record(struct ao_watch_event *ev, void *userdata)
{
        struct recorder *rec = userdata;
        const char *type = ao_watch_type_to_string(ev->type);
        const char *rv =
            string_member(cJSON_GetObjectItemCaseSensitive(ev->object, "metadata"), "resourceVersion");
        struct ao_kube_status st;

        if (!type || !cJSON_IsObject(ev->object) || rv != ev->resource_version)
                abort();
        if (ao_kube_status_from_json(ev->object, &st) == 0 && (!st.reason || !st.message))
                abort();
        char *canon = ao_json_canonical(ev->object);
        ao_strbuf_appendf(&rec->text, "%s %s %s\n", type, rv ? rv : "-", canon);
        free(canon);
        cJSON_Delete(ev->object);
        return rec->fail_third && ++rec->n == 3 ? -ECANCELED : 0;
}

/* Chunk lengths; @state is private to the pattern. */
static size_t next_chunk(unsigned pattern, const char *s, size_t off, size_t len, uint64_t *state)
{
        size_t left = len - off;
        const char *nl;

        switch (pattern) {
        case 0:
                return 1;
        case 1:
                return 2048; /* a replaying kube-apiserver */
        case 2:
                return 7;
        case 3: /* pseudo-random, 1..512 */
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                return 1 + *state % 512;
        case 4: /* ending right after each newline: one event per chunk, as live events come */
                nl = memchr(s + off, '\n', left);
                return nl ? (size_t) (nl - (s + off)) + 1 : left;
        case 5: /* ending right before each newline */
                nl = memchr(s + off + 1, '\n', left - 1);
                return nl ? (size_t) (nl - (s + off)) : left;
        case 6: /* growing: 1, 2, 3, ... */
                return (size_t)++ * state;
        default: /* two halves */
                return len / 2 > 0 && off == 0 ? len / 2 : left;
        }
}

/* Feed and finish; returns the first error code, with its message checked. */
static int decode(const char *s, size_t len, size_t max_event, int pattern, bool fail_third,
                  struct recorder *rec)
{
        struct ao_watch_decoder *d = ao_watch_decoder_new(max_event, record, rec);
        struct ao_error err = {0};
        uint64_t state = pattern == 6 ? 0 : 0x9E3779B97F4A7C15ULL ^ len;
        int r = 0;

        rec->fail_third = fail_third;
        for (size_t off = 0; off < len && r >= 0;) {
                size_t n = pattern < 0 ? len : next_chunk((unsigned) pattern, s, off, len, &state);
                if (n > len - off)
                        n = len - off;
                r = ao_watch_decoder_feed(d, s + off, n, &err);
                off += n;
        }
        if (r >= 0)
                r = ao_watch_decoder_finish(d, &err);
        if (r < 0) {
                check_message(err.msg);
                if (err.code != r)
                        abort();
                /* An error sticks until reset; reset makes the decoder usable again. */
                if (ao_watch_decoder_feed(d, "\n", 1, NULL) != -EINVAL)
                        abort();
                ao_watch_decoder_reset(d);
                if (ao_watch_decoder_feed(d, "\n", 1, NULL) != 0 || ao_watch_decoder_finish(d, NULL) != 0)
                        abort();
        }
        ao_watch_decoder_free(d);
        return r;
}

static void check_list(const char *s, size_t len, bool explicit_kind)
{
        struct ao_kube_list l = {0};
        struct ao_error err = {0};

        int r = ao_kube_list_parse(s, len, explicit_kind ? "Thing" : NULL,
                                   explicit_kind ? "example.com/v1" : NULL, &l, &err);
        if (r < 0) {
                check_message(err.msg);
                if (l.items || l.resource_version || l.continue_token)
                        abort();
                return;
        }
        if (!cJSON_IsArray(l.items) || (l.continue_token && l.continue_token[0] == '\0'))
                abort();
        for (const cJSON *item = l.items->child; item; item = item->next) {
                const char *name = string_member(cJSON_GetObjectItemCaseSensitive(item, "metadata"), "name");
                if (!name || !name[0] || !string_member(item, "kind") || !string_member(item, "apiVersion"))
                        abort();
        }
        ao_kube_list_done(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || size > FUZZ_INPUT_MAX)
                return 0;
        unsigned mode = data[0];
        const char *s = (const char *) data + 1;
        size_t len = size - 1;
        size_t max_event = mode & 8 ? SMALL_CAP : 0;
        bool fail_third = mode & 16;
        struct recorder whole = {0}, chunked = {0};

        int want = decode(s, len, max_event, -1, fail_third, &whole);
        int got = decode(s, len, max_event, (int) (mode & 7), fail_third, &chunked);
        if (got != want || whole.text.len != chunked.text.len ||
            strcmp(ao_strbuf_str(&whole.text), ao_strbuf_str(&chunked.text)) != 0)
                abort();
        ao_strbuf_done(&whole.text);
        ao_strbuf_done(&chunked.text);

        check_list(s, len, mode & 32);
        return 0;
}
