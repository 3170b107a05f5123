/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the reader of helm's release storage objects (src/helm/storage.c) and
 * the base64 decoder under it (src/util/base64.c). The first byte picks what
 * the rest is: 's' a Secret's data.release, 'c' a ConfigMap's, 'S' and 'C' a
 * whole Secret or ConfigMap object as JSON (labels read, then data.release
 * decoded), 'r' helm's encoding before base64 (gzip, or JSON), which the
 * target base64-encodes itself so that mutations reach gzip and JSON; any
 * other byte its value modulo 5 in that order.
 *
 * Besides crashes, leaks and undefined behaviour, it aborts when the contract
 * breaks: on failure the code is negative, the result untouched and the
 * message a single printable line that starts with "release storage"; on
 * success the strings are non-empty (the manifest may be ""), the status
 * printable ASCII without spaces and the version positive; a ConfigMap's text
 * base64'd once more decodes as a Secret to the same release or the same
 * error; labels read from an object name it by its metadata.name; reading
 * an object gives what decoding its data.release does.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/base64.h"
#include "ao/helm-storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Real storage objects are 1 to 3 KiB; gzip inflates 16 KiB to at most ~16 MiB, so runs stay fast. */
#define FUZZ_INPUT_MAX (16 * 1024)

static void check_line(const char *s)
{
        if (!s || strncmp(s, "release storage", 15) != 0)
                abort();
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

static void check_failure(int r, const struct ao_error *err, const struct ao_helm_stored_release *rel)
{
        if (r >= 0 || err->code != r || rel->version != -7 || rel->name || rel->manifest)
                abort();
        check_line(err->msg);
}

static void check_status(const char *s)
{
        if (!s || !s[0] || strlen(s) > 31)
                abort();
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p <= ' ' || *p >= 0x7F)
                        abort();
}

static void check_release(const struct ao_helm_stored_release *rel)
{
        if (!rel->name || !rel->name[0] || !rel->namespace || !rel->namespace[0] || rel->version < 1 ||
            !rel->manifest)
                abort();
        check_status(rel->status);
        if (rel->values_checksum)
                (void) strlen(rel->values_checksum);
}

static bool same(const char *a, const char *b)
{
        return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool same_release(const struct ao_helm_stored_release *a, const struct ao_helm_stored_release *b)
{
        return same(a->name, b->name) && same(a->namespace, b->namespace) && same(a->status, b->status) &&
               a->version == b->version && same(a->manifest, b->manifest) &&
               same(a->values_checksum, b->values_checksum);
}

static char *encode_base64(const unsigned char *in, size_t len)
{
        static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = ao_xmalloc((len + 2) / 3 * 4 + 1), *o = out;

        for (size_t i = 0; i < len; i += 3) {
                unsigned v = (unsigned) in[i] << 16 | (i + 1 < len ? (unsigned) in[i + 1] << 8 : 0) |
                             (i + 2 < len ? in[i + 2] : 0);
                *o++ = digits[v >> 18 & 63];
                *o++ = digits[v >> 12 & 63];
                *o++ = i + 1 < len ? digits[v >> 6 & 63] : '=';
                *o++ = i + 2 < len ? digits[v & 63] : '=';
        }
        *o = '\0';
        return out;
}

/* Decode @text; returns the code, *@ret filled on success (the caller clears it). */
static int decode(const char *text, size_t len, bool secret, struct ao_helm_stored_release *ret,
                  struct ao_error *err)
{
        struct ao_helm_stored_release rel = {.version = -7};
        int r = ao_helm_storage_decode("sh.helm.release.v1.x.v1", text, len, secret, &rel, err);

        if (r < 0) {
                check_failure(r, err, &rel);
                return r;
        }
        if (r != 0)
                abort();
        check_release(&rel);
        *ret = rel;
        return 0;
}

/* A ConfigMap's text, and the same base64'd once more as a Secret's: one outcome. */
static void fuzz_data(const char *text, size_t len, bool secret)
{
        struct ao_helm_stored_release a = {0}, b = {0};
        struct ao_error err = {0}, err2 = {0};
        int r = decode(text, len, secret, &a, &err);

        if (!secret) {
                char *outer = encode_base64((const unsigned char *) text, len);
                int r2 = decode(outer, strlen(outer), true, &b, &err2);
                free(outer);
                if (r2 != r || (r == 0 && !same_release(&a, &b)) || (r < 0 && strcmp(err.msg, err2.msg) != 0))
                        abort();
        }
        /* The decoder's own base64 layer must agree with the util decoder on validity. */
        size_t n;
        char *once = NULL;
        if (ao_base64_decode_dup(text, len, &once, &n) < 0 && r == 0)
                abort();
        free(once);
        ao_helm_stored_release_clear(&a);
        ao_helm_stored_release_clear(&b);
}

static void fuzz_object(const char *text, size_t len, bool secret)
{
        cJSON *object = cJSON_ParseWithLength(text, len);
        struct ao_helm_storage_meta meta = {.version = -7};
        struct ao_helm_stored_release rel = {.version = -7};
        struct ao_error err = {0};

        if (!object)
                return;
        int r = ao_helm_storage_labels(object, &meta, &err);
        if (r < 0) {
                if (err.code != r || meta.version != -7 || meta.object || meta.name)
                        abort();
                check_line(err.msg);
        } else {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(object, "metadata"), "name");
                if (r != 0 || !cJSON_IsString(name) || !same(meta.object, name->valuestring) || !meta.name ||
                    !meta.name[0] || meta.version < 1)
                        abort();
                check_status(meta.status);
                ao_helm_storage_meta_clear(&meta);
        }
        /* A deleted object is known by its name: the parse agrees with the prefix it requires. */
        const cJSON *object_name =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(object, "metadata"), "name");
        if (cJSON_IsString(object_name)) {
                struct ao_helm_storage_meta named = {.version = -7};
                r = ao_helm_storage_name_parse(object_name->valuestring, &named, &err);
                if (r == 0 && (!named.name || !named.name[0] || named.version < 1 ||
                               strncmp(object_name->valuestring, "sh.helm.release.v1.", 19) != 0 ||
                               !same(named.object, object_name->valuestring)))
                        abort();
                if (r < 0 && (named.version != -7 || named.name || err.code != r))
                        abort();
                ao_helm_storage_meta_clear(&named);
        }

        r = ao_helm_storage_read(object, secret, &rel, &err);
        if (r < 0) {
                check_failure(r, &err, &rel);
        } else {
                check_release(&rel);
                /* The same as decoding data.release by hand. */
                const cJSON *release = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(object, "data"), "release");
                struct ao_helm_stored_release again = {0};
                struct ao_error err2 = {0};
                if (!cJSON_IsString(release) ||
                    ao_helm_storage_decode(NULL, release->valuestring, strlen(release->valuestring), secret,
                                           &again, &err2) != 0 ||
                    !same_release(&rel, &again))
                        abort();
                ao_helm_stored_release_clear(&again);
                ao_helm_stored_release_clear(&rel);
        }
        cJSON_Delete(object);
}

static void fuzz_raw(const char *bytes, size_t len)
{
        char *text = encode_base64((const unsigned char *) bytes, len);
        fuzz_data(text, strlen(text), false);
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char selectors[] = "scSCr";

        if (size < 1 || size > FUZZ_INPUT_MAX)
                return 0;
        const char *sel = memchr(selectors, data[0], 5);
        size_t which = sel ? (size_t) (sel - selectors) : data[0] % 5;
        const char *text = (const char *) data + 1;
        size -= 1;

        switch (which) {
        case 0:
        case 1:
                fuzz_data(text, size, which == 0);
                break;
        case 2:
        case 3:
                fuzz_object(text, size, which == 2);
                break;
        default:
                fuzz_raw(text, size);
                break;
        }
        return 0;
}
