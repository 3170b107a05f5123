/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/helm/storage.c: the release storage objects the real helm
 * 3.17.2 wrote to a real kube-apiserver (tests/unit/data/helm-storage/, made
 * by its make-samples.sh; the directory comes in $AO_HELM_STORAGE_DATA),
 * read through both drivers, then every layer broken on purpose with its
 * exact message: base64, gzip (bad, truncated, trailing data, a bomb past the
 * cap and a stream exactly at it), JSON, and the labels.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include <cjson/cJSON.h>
#include <zlib.h>

#include "ao/alloc.h"
#include "ao/base64.h"
#include "ao/helm-storage.h"
#include "ao/strbuf.h"

#define MANIFEST(name, greeting)                                                                     \
        "---\n# Source: demo/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n" \
        "  name: " name "\ndata:\n  greeting: \"" greeting "\"\n"

static const char *data_dir;

static char *read_file(const char *name, size_t *ret_len)
{
        char path[4096];
        (void) snprintf(path, sizeof(path), "%s/%s", data_dir, name);
        FILE *f = fopen(path, "rb");
        if (!f)
                tap_bail(path);
        struct ao_strbuf sb = {0};
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
                ao_strbuf_append_n(&sb, buf, n);
        fclose(f);
        if (ret_len)
                *ret_len = sb.len;
        char *s = ao_xstrdup(ao_strbuf_str(&sb));
        ao_strbuf_done(&sb);
        return s;
}

static cJSON *read_object(const char *name)
{
        char *text = read_file(name, NULL);
        cJSON *json = cJSON_Parse(text);
        free(text);
        if (!json)
                tap_bail(name);
        return json;
}

static char *b64(const unsigned char *data, size_t len)
{
        static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = ao_xmalloc((len + 2) / 3 * 4 + 1), *o = out;

        for (size_t i = 0; i < len; i += 3) {
                unsigned v = (unsigned) data[i] << 16 | (i + 1 < len ? (unsigned) data[i + 1] << 8 : 0) |
                             (i + 2 < len ? data[i + 2] : 0);
                *o++ = digits[v >> 18 & 63];
                *o++ = digits[v >> 12 & 63];
                *o++ = i + 1 < len ? digits[v >> 6 & 63] : '=';
                *o++ = i + 2 < len ? digits[v & 63] : '=';
        }
        *o = '\0';
        return out;
}

/* @len bytes of @data as one gzip member, at best compression as helm writes it. */
static unsigned char *gz(const void *data, size_t len, size_t *ret_len)
{
        z_stream z = {0};
        if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                tap_bail("deflateInit2");
        size_t cap = deflateBound(&z, len);
        unsigned char *out = ao_xmalloc(cap);
        z.next_in = (unsigned char *) (uintptr_t) data;
        z.avail_in = (uInt) len;
        z.next_out = out;
        z.avail_out = (uInt) cap;
        if (deflate(&z, Z_FINISH) != Z_STREAM_END)
                tap_bail("deflate");
        *ret_len = cap - z.avail_out;
        (void) deflateEnd(&z);
        return out;
}

/* Inflate @len bytes of gzip for the test's own look at what helm stored. */
static char *gunzip_all(const char *data, size_t len)
{
        z_stream z = {0};
        size_t cap = 1 << 20;
        char *out = ao_xmalloc(cap);
        if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
                tap_bail("inflateInit2");
        z.next_in = (unsigned char *) (uintptr_t) data;
        z.avail_in = (uInt) len;
        z.next_out = (unsigned char *) out;
        z.avail_out = (uInt) cap - 1;
        if (inflate(&z, Z_FINISH) != Z_STREAM_END)
                tap_bail("inflate");
        out[cap - 1 - z.avail_out] = '\0';
        (void) inflateEnd(&z);
        return out;
}

/* helm's encoding of @json: base64(gzip(json)), once more base64 for a Secret. */
static char *encode(const char *json, size_t len, bool secret)
{
        size_t n;
        unsigned char *z = gz(json, len, &n);
        char *text = b64(z, n);
        free(z);
        if (secret) {
                char *outer = b64((const unsigned char *) text, strlen(text));
                free(text);
                text = outer;
        }
        return text;
}

/* ---- the real objects ----------------------------------------------------------------------------- */

struct sample {
        const char *file;
        bool secret;
        const char *name, *status, *label_checksum, *manifest, *values_checksum, *hook;
        int version;
};

static const struct sample samples[] = {
    {"sh.helm.release.v1.demo-secret.v1", true, "demo-secret", "superseded",
     "0123456789abcdef0123456789abcdef", MANIFEST("demo-secret-config", "hi"), "abc", "demo-secret-hook", 1},
    {"sh.helm.release.v1.demo-secret.v2", true, "demo-secret", "deployed", "fedcba9876543210fedcba9876543210",
     MANIFEST("demo-secret-config", "again"), "abc", "demo-secret-hook", 2},
    {"sh.helm.release.v1.demo-cm.v1", false, "demo-cm", "deployed", "0123456789abcdef0123456789abcdef",
     MANIFEST("demo-cm-config", "hi"), "abc", "demo-cm-hook", 1},
    {"sh.helm.release.v1.plain.v1", true, "plain", "uninstalled", NULL, MANIFEST("plain-config", "hello"),
     NULL, "plain-hook", 1},
};

static void test_sample(const struct sample *s)
{
        char file[256];
        (void) snprintf(file, sizeof(file), "%s.json", s->file);
        cJSON *object = read_object(file);
        struct ao_helm_storage_meta meta = {0};
        struct ao_helm_stored_release rel = {0};
        struct ao_error err = {0};

        tap_is_int(ao_helm_storage_labels(object, &meta, &err), 0, "%s: labels read", s->file);
        tap_is_str(meta.object, s->file, "%s: object name", s->file);
        tap_is_str(meta.name, s->name, "%s: label name", s->file);
        tap_is_int(meta.version, s->version, "%s: label version", s->file);
        tap_is_str(meta.status, s->status, "%s: label status", s->file);
        tap_is_str(meta.module_checksum, s->label_checksum, "%s: label moduleChecksum", s->file);
        ao_helm_storage_meta_clear(&meta);
        tap_ok(!meta.object && !meta.name && !meta.status && !meta.module_checksum && meta.version == 0,
               "%s: meta cleared", s->file);

        int r = ao_helm_storage_read(object, s->secret, &rel, &err);
        tap_is_int(r, 0, "%s: decoded", s->file);
        if (r < 0)
                tap_diag("%s", err.msg);
        tap_is_str(rel.name, s->name, "%s: name", s->file);
        tap_is_str(rel.namespace, "helm-storage", "%s: namespace", s->file);
        tap_is_int(rel.version, s->version, "%s: version", s->file);
        tap_is_str(rel.status, s->status, "%s: status (info.status, as the label)", s->file);
        tap_is_str(rel.manifest, s->manifest, "%s: manifest", s->file);
        tap_is_str(rel.values_checksum, s->values_checksum, "%s: values checksum", s->file);
        tap_ok(rel.manifest && !strstr(rel.manifest, "hook"), "%s: the helm hook is not in the manifest",
               s->file);
        ao_helm_stored_release_clear(&rel);
        tap_ok(!rel.name && !rel.manifest && rel.version == 0, "%s: release cleared", s->file);

        /* The hook is in the stored release, only not in its manifest. */
        const char *text = cJSON_GetObjectItem(cJSON_GetObjectItem(object, "data"), "release")->valuestring;
        char *once, *raw;
        size_t n, n2;
        tap_is_int(ao_base64_decode_dup(text, strlen(text), &once, &n), 0, "%s: data is base64", s->file);
        if (s->secret) {
                tap_is_int(ao_base64_decode_dup(once, n, &raw, &n2), 0, "%s: Secret data is base64 twice",
                           s->file);
                free(once);
        } else {
                raw = once;
                n2 = n;
        }
        tap_ok(n2 > 3 && memcmp(raw, "\x1f\x8b\x08", 3) == 0, "%s: helm's encoding is gzip", s->file);
        char *json = gunzip_all(raw, n2);
        char hook[128];
        (void) snprintf(hook, sizeof(hook), "\"hooks\":[{\"name\":\"%s\",\"kind\":\"ConfigMap\"", s->hook);
        tap_ok(strstr(json, hook) != NULL, "%s: the stored release has the hook %s", s->file, s->hook);
        tap_ok(strstr(json, "moduleChecksum") == NULL, "%s: the release's labels are not in its JSON",
               s->file);
        free(json);
        free(raw);

        /* The other driver's decoding fails in the layer where the difference shows. */
        r = ao_helm_storage_read(object, !s->secret, &rel, &err);
        tap_is_int(r, -EBADMSG, "%s: read as the other driver: -EBADMSG", s->file);
        char want[256];
        (void) snprintf(want, sizeof(want), "release storage '%s': %s", s->file,
                        s->secret ? "release JSON: invalid JSON at byte 0"
                                  : "release data: not valid base64");
        tap_is_str(err.msg, want, "%s: read as the other driver: message", s->file);
        tap_ok(!rel.name && !rel.manifest, "%s: nothing written on failure", s->file);
        cJSON_Delete(object);
}

static void test_partial(void)
{
        cJSON *object = read_object("partial.sh.helm.release.v1.demo-secret.v2.json");
        struct ao_helm_storage_meta meta = {0};
        struct ao_helm_stored_release rel = {0};
        struct ao_error err = {0};

        tap_is_int(ao_helm_storage_labels(object, &meta, &err), 0, "PartialObjectMetadata: labels read");
        tap_is_str(meta.object, "sh.helm.release.v1.demo-secret.v2", "PartialObjectMetadata: object");
        tap_is_str(meta.name, "demo-secret", "PartialObjectMetadata: name");
        tap_is_int(meta.version, 2, "PartialObjectMetadata: version");
        tap_is_str(meta.status, "deployed", "PartialObjectMetadata: status");
        tap_is_str(meta.module_checksum, "fedcba9876543210fedcba9876543210",
                   "PartialObjectMetadata: checksum");
        ao_helm_storage_meta_clear(&meta);

        tap_is_int(ao_helm_storage_read(object, true, &rel, &err), -EBADMSG,
                   "PartialObjectMetadata: no data");
        tap_is_str(err.msg, "release storage 'sh.helm.release.v1.demo-secret.v2': data.release is missing",
                   "PartialObjectMetadata: no data: message");
        cJSON_Delete(object);
}

/* ---- decoding, layer by layer --------------------------------------------------------------------- */

#define RELEASE_JSON                                                                                         \
        "{\"name\":\"web\",\"info\":{\"status\":\"deployed\"},\"config\":{\"_addonOperatorModuleChecksum\":" \
        "\"abc\"},\"manifest\":\"---\\nkind: A\\n\",\"version\":3,\"namespace\":\"ns\"}"

#define OBJ "sh.helm.release.v1.web.v3"

static void is_decoded(const char *text, size_t len, bool secret, const char *manifest, const char *checksum,
                       const char *what)
{
        struct ao_helm_stored_release rel = {0};
        struct ao_error err = {0};
        int r = ao_helm_storage_decode(OBJ, text, len, secret, &rel, &err);

        tap_is_int(r, 0, "%s: decoded", what);
        if (r < 0)
                tap_diag("%s", err.msg);
        tap_is_str(rel.name, "web", "%s: name", what);
        tap_is_str(rel.namespace, "ns", "%s: namespace", what);
        tap_is_int(rel.version, 3, "%s: version", what);
        tap_is_str(rel.status, "deployed", "%s: status", what);
        tap_is_str(rel.manifest, manifest, "%s: manifest", what);
        tap_is_str(rel.values_checksum, checksum, "%s: checksum", what);
        ao_helm_stored_release_clear(&rel);
}

static void is_error(const char *object, const char *text, size_t len, bool secret, int code, const char *msg,
                     const char *what)
{
        struct ao_helm_stored_release rel = {.version = -7};
        struct ao_error err = {0};

        tap_is_int(ao_helm_storage_decode(object, text, len, secret, &rel, &err), code, "%s: code", what);
        tap_is_str(err.msg, msg, "%s: message", what);
        tap_ok(rel.version == -7 && !rel.name && !rel.manifest, "%s: nothing written", what);
}

/* The release JSON @json gzipped, then base64'd for a ConfigMap. */
static void is_json_error(const char *json, const char *msg, const char *what)
{
        char *text = encode(json, strlen(json), false);
        char want[AO_ERROR_MSG_MAX];
        (void) snprintf(want, sizeof(want), "release storage '" OBJ "': release JSON: %s", msg);
        is_error(OBJ, text, strlen(text), false, -EBADMSG, want, what);
        free(text);
}

static void test_layers(void)
{
        char *text = encode(RELEASE_JSON, strlen(RELEASE_JSON), true);
        is_decoded(text, strlen(text), true, "---\nkind: A\n", "abc", "Secret");
        free(text);
        text = encode(RELEASE_JSON, strlen(RELEASE_JSON), false);
        is_decoded(text, strlen(text), false, "---\nkind: A\n", "abc", "ConfigMap");

        /* Only @len bytes are read: the same text with more after it. */
        char *longer = ao_xasprintf("%s!!!!", text);
        is_decoded(longer, strlen(text), false, "---\nkind: A\n", "abc", "length, not NUL");
        free(longer);
        free(text);

        /* Not compressed: helm's decodeRelease() takes plain JSON too. */
        text = b64((const unsigned char *) RELEASE_JSON, strlen(RELEASE_JSON));
        is_decoded(text, strlen(text), false, "---\nkind: A\n", "abc", "uncompressed JSON");
        free(text);

        /* Two gzip members are one stream, as Go's gzip.Reader reads them. */
        size_t half = strlen(RELEASE_JSON) / 2, n1, n2;
        unsigned char *z1 = gz(RELEASE_JSON, half, &n1),
                      *z2 = gz(RELEASE_JSON + half, strlen(RELEASE_JSON) - half, &n2);
        unsigned char *both = ao_xmalloc(n1 + n2 + 3);
        memcpy(both, z1, n1);
        memcpy(both + n1, z2, n2);
        text = b64(both, n1 + n2);
        is_decoded(text, strlen(text), false, "---\nkind: A\n", "abc", "two gzip members");
        free(text);

        /* Base64 layers. */
        is_error(OBJ, "SDRzSQ=", 7, true, -EBADMSG,
                 "release storage '" OBJ "': Secret data: not valid base64", "Secret layer cut short");
        is_error(OBJ, "H4sI*AAA", 8, false, -EBADMSG,
                 "release storage '" OBJ "': release data: not valid base64", "helm layer with a bad symbol");
        /* "H4s" is base64 of nothing: a group cut short. */
        is_error(OBJ, "SDRz", 4, true, -EBADMSG, "release storage '" OBJ "': release data: not valid base64",
                 "Secret layer fine, helm layer not base64");
        is_error(NULL, "%%%%", 4, false, -EBADMSG, "release storage: release data: not valid base64",
                 "no object name");

        /* gzip: the stream cut short, in the data and in the trailer. */
        size_t n;
        unsigned char *z = gz(RELEASE_JSON, strlen(RELEASE_JSON), &n);
        static const struct {
                size_t keep;
                const char *what;
        } cuts[] = {
            {3, "gzip cut after the magic"}, {10, "gzip cut after the header"}, {40, "gzip cut in the data"}};
        for (size_t i = 0; i < AO_ARRAY_SIZE(cuts); i++) {
                text = b64(z, cuts[i].keep);
                is_error(OBJ, text, strlen(text), false, -EBADMSG,
                         "release storage '" OBJ "': gzip: unexpected end of data", cuts[i].what);
                free(text);
        }
        text = b64(z, n - 1);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: unexpected end of data",
                 "gzip without the last byte of its trailer");
        free(text);

        /* gzip: corrupt. */
        unsigned char *bad = ao_xmalloc(n + 8);
        memcpy(bad, z, n);
        bad[n - 8] ^= 1; /* CRC-32 */
        text = b64(bad, n);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: incorrect data check", "gzip with a wrong CRC");
        free(text);
        memcpy(bad, z, n);
        bad[n - 1] ^= 1; /* ISIZE */
        text = b64(bad, n);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: incorrect length check", "gzip with a wrong length");
        free(text);
        static const unsigned char reserved_block[] = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0x02, 0xff, 0x07};
        text = b64(reserved_block, sizeof(reserved_block));
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: invalid block type", "gzip with a reserved block type");
        free(text);
        static const unsigned char bad_flags[] = {0x1f, 0x8b, 0x08, 0xe0, 0, 0, 0, 0, 0x02, 0xff, 0x03, 0};
        text = b64(bad_flags, sizeof(bad_flags));
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: unknown header flags set",
                 "gzip with reserved header flags");
        free(text);

        /* gzip: what follows the stream. */
        memcpy(bad, z, n);
        memcpy(bad + n, "xyz", 3);
        text = b64(bad, n + 3);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: 3 bytes after the compressed data",
                 "gzip with trailing garbage");
        free(text);
        memset(bad + n, 0, 8);
        text = b64(bad, n + 8);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: 8 bytes after the compressed data",
                 "gzip with trailing zeros");
        free(text);
        memcpy(bad + n, "\x1f\x8b\x08", 3);
        text = b64(bad, n + 3);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: unexpected end of data",
                 "gzip with the start of a second member");
        free(text);
        memcpy(bad + n, "\x1f\x8b\x07\x00", 4);
        text = b64(bad, n + 4);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: unknown compression method",
                 "gzip with a bad second member");
        free(text);
        memcpy(both + n1 + n2, "zz", 2);
        text = b64(both, n1 + n2 + 2);
        is_error(OBJ, text, strlen(text), false, -EBADMSG,
                 "release storage '" OBJ "': gzip: 2 bytes after the compressed data",
                 "two gzip members and trailing garbage");
        free(text);

        free(bad);
        free(z);
        free(z1);
        free(z2);
        free(both);
}

/* A release JSON padded with spaces to @size bytes, gzipped, base64'd for a ConfigMap. */
static char *padded_release(size_t size)
{
        char *json = ao_xmalloc(size);
        size_t len = strlen(RELEASE_JSON);
        memcpy(json, RELEASE_JSON, len);
        memset(json + len, ' ', size - len);
        char *text = encode(json, size, false);
        free(json);
        return text;
}

static void test_cap(void)
{
        char *text = padded_release(AO_HELM_STORAGE_JSON_MAX);
        is_decoded(text, strlen(text), false, "---\nkind: A\n", "abc",
                   "exactly AO_HELM_STORAGE_JSON_MAX bytes");
        free(text);

        text = padded_release((size_t) AO_HELM_STORAGE_JSON_MAX + 1);
        tap_ok(strlen(text) < 100 * 1024, "the bomb is %zu bytes of base64", strlen(text));
        is_error(OBJ, text, strlen(text), false, -EFBIG,
                 "release storage '" OBJ "': gzip: larger than 67108864 bytes decompressed",
                 "one byte over the cap (a gzip bomb)");
        free(text);

        /* The cap counts every member together. */
        size_t each = AO_HELM_STORAGE_JSON_MAX / 2 + 1, n;
        char *spaces = ao_xmalloc(each);
        memset(spaces, ' ', each);
        unsigned char *z = gz(spaces, each, &n);
        unsigned char *two = ao_xmalloc(2 * n);
        memcpy(two, z, n);
        memcpy(two + n, z, n);
        text = b64(two, 2 * n);
        is_error(OBJ, text, strlen(text), false, -EFBIG,
                 "release storage '" OBJ "': gzip: larger than 67108864 bytes decompressed",
                 "two members over the cap together");
        free(text);
        free(two);
        free(z);
        free(spaces);
}

static void test_json(void)
{
        is_json_error("", "invalid JSON at byte 0", "empty JSON");
        is_json_error("{\"name\":", "invalid JSON at byte 7", "cut JSON (cJSON names its last byte)");
        is_json_error("[1]", "expected an object, got an array", "an array");
        is_json_error("null", "expected an object, got null", "null");
        is_json_error(RELEASE_JSON " {}", "unexpected text after the JSON value at byte 149", "two values");
        is_json_error("{\"info\":{\"status\":\"deployed\"},\"version\":3,\"namespace\":\"ns\"}",
                      "name is missing", "no name");
        is_json_error("{\"name\":7}", "name is a number, not a string", "name a number");
        is_json_error("{\"name\":\"web\",\"namespace\":\"\"}", "namespace is empty", "empty namespace");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\"}", "version is missing", "no version");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\",\"version\":\"3\"}",
                      "version is not a positive integer", "version a string");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\",\"version\":0}",
                      "version is not a positive integer", "version 0");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\",\"version\":1.5}",
                      "version is not a positive integer", "version 1.5");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\",\"version\":2147483648}",
                      "version is not a positive integer", "version past INT_MAX");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3}", "info is missing", "no info");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3,\"info\":[]}",
                      "info is an array, not an object", "info an array");
        is_json_error("{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3,\"info\":{}}",
                      "info.status is missing", "no status");
        is_json_error(
            "{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3,\"info\":{\"status\":\"de ployed\"}}",
            "info.status 'de ployed' is not 1 to 31 printable ASCII characters without spaces",
            "status with a space");
        is_json_error(
            "{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3,\"info\":{\"status\":\"deployed\"},"
            "\"config\":[]}",
            "config is an array, not an object", "config an array");
        is_json_error(
            "{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3,\"info\":{\"status\":\"deployed\"},"
            "\"manifest\":1}",
            "manifest is a number, not a string", "manifest a number");

        /* What may be absent. */
        static const char minimal[] =
            "{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3,\"info\":{\"status\":"
            "\"deployed\"}}";
        char *text = encode(minimal, strlen(minimal), false);
        is_decoded(text, strlen(text), false, "", NULL, "no manifest, no config");
        free(text);
        static const char nulls[] =
            "\n {\"name\":\"web\",\"namespace\":\"ns\",\"version\":3.0,\"info\":{\"status\":"
            "\"deployed\"},\"manifest\":null,\"config\":null} \n";
        text = encode(nulls, strlen(nulls), false);
        is_decoded(text, strlen(text), false, "", NULL, "null manifest and config, white space, 3.0");
        free(text);
        static const char other[] =
            "{\"name\":\"web\",\"namespace\":\"ns\",\"version\":3,\"info\":{\"status\":"
            "\"deployed\"},\"config\":{\"_addonOperatorModuleChecksum\":5,\"x\":1}}";
        text = encode(other, strlen(other), false);
        is_decoded(text, strlen(text), false, "", NULL, "checksum not a string");
        free(text);
}

/* ---- labels --------------------------------------------------------------------------------------- */

static void is_labels_error(const char *json, const char *msg, const char *what)
{
        cJSON *object = cJSON_Parse(json);
        struct ao_helm_storage_meta meta = {.version = -7};
        struct ao_error err = {0};

        if (!object)
                tap_bail(json);
        tap_is_int(ao_helm_storage_labels(object, &meta, &err), -EBADMSG, "labels: %s: -EBADMSG", what);
        tap_is_str(err.msg, msg, "labels: %s: message", what);
        tap_ok(meta.version == -7 && !meta.object && !meta.name, "labels: %s: nothing written", what);
        cJSON_Delete(object);
}

#define LABELS(x) "{\"metadata\":{\"name\":\"" OBJ "\",\"labels\":{" x "}}}"
#define PREFIX    "release storage '" OBJ "': "

static void test_labels(void)
{
        is_labels_error("[]", "release storage object: expected an object, got an array", "not an object");
        is_labels_error("{\"metadata\":{\"labels\":{}}}", "release storage object: metadata.name is missing",
                        "no name");
        is_labels_error("{\"metadata\":{\"name\":\"\"}}", "release storage object: metadata.name is missing",
                        "empty name");
        is_labels_error("{\"metadata\":{\"name\":\"" OBJ "\"}}", PREFIX "metadata.labels is missing",
                        "no labels");
        is_labels_error("{\"metadata\":{\"name\":\"" OBJ "\",\"labels\":[]}}",
                        PREFIX "metadata.labels is an array, not an object", "labels an array");
        is_labels_error(LABELS(""), PREFIX "label owner is missing", "no owner");
        is_labels_error(LABELS("\"owner\":\"tiller\""), PREFIX "label owner is 'tiller', not 'helm'",
                        "owner tiller");
        is_labels_error(LABELS("\"owner\":\"helm\""), PREFIX "label name is missing", "no release name");
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"\""), PREFIX "label name is empty",
                        "empty release name");
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"web\""), PREFIX "label version is missing",
                        "no version");
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":3"),
                        PREFIX "label version is a number, not a string", "version a number");
        static const char *const versions[] = {"",   "0",   "03", "+3",         "-3",
                                               "3x", "0x3", " 3", "2147483648", "99999999999"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(versions); i++) {
                char json[256], msg[256], what[64];
                (void) snprintf(json, sizeof(json),
                                LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"%s\""),
                                versions[i]);
                (void) snprintf(msg, sizeof(msg), PREFIX "label version '%s' is not a positive integer",
                                versions[i]);
                (void) snprintf(what, sizeof(what), "version '%s'", versions[i]);
                is_labels_error(json, msg, what);
        }
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"3\""),
                        PREFIX "label status is missing", "no status");
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"3\",\"status\":\"\""),
                        PREFIX "label status '' is not 1 to 31 printable ASCII characters without spaces",
                        "empty status");
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"3\",\"status\":\"a\\nb\""),
                        PREFIX
                        "label status 'a\\x0ab' is not 1 to 31 printable ASCII characters without spaces",
                        "status with a newline");
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"3\",\"status\":"
                               "\"deployed\",\"moduleChecksum\":1"),
                        PREFIX "label moduleChecksum is a number, not a string", "checksum a number");

        /* The largest version, null labels as absent, other labels ignored. */
        cJSON *object =
            cJSON_Parse(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"2147483647\","
                               "\"status\":\"pending-upgrade\",\"moduleChecksum\":null,\"x\":\"y\""));
        struct ao_helm_storage_meta meta = {0};
        struct ao_error err = {0};
        tap_is_int(ao_helm_storage_labels(object, &meta, &err), 0, "labels: largest version: read");
        tap_is_int(meta.version, 2147483647, "labels: largest version");
        tap_is_str(meta.status, "pending-upgrade", "labels: status");
        tap_ok(meta.module_checksum == NULL, "labels: null checksum is absent");
        ao_helm_storage_meta_clear(&meta);
        ao_helm_storage_meta_clear(NULL);
        ao_helm_stored_release_clear(NULL);
        cJSON_Delete(object);

        struct ao_helm_stored_release rel = {0};
        object = cJSON_Parse("{\"metadata\":{\"name\":\"" OBJ "\"},\"data\":{\"release\":5}}");
        tap_is_int(ao_helm_storage_read(object, true, &rel, &err), -EBADMSG, "read: data.release a number");
        tap_is_str(err.msg, PREFIX "data.release is not a string", "read: data.release a number: message");
        cJSON_Delete(object);
        object = cJSON_Parse("{\"data\":{}}");
        tap_is_int(ao_helm_storage_read(object, true, &rel, &err), -EBADMSG, "read: no name, no data");
        tap_is_str(err.msg, "release storage: data.release is missing", "read: no name, no data: message");
        cJSON_Delete(object);
        object = cJSON_Parse("\"x\"");
        tap_is_int(ao_helm_storage_read(object, true, &rel, &err), -EBADMSG, "read: not an object");
        tap_is_str(err.msg, "release storage object: expected an object, got a string",
                   "read: not an object: message");
        cJSON_Delete(object);
}

/* This operator's own label, and a deleted object known only by its name. */
static void test_input_label_and_name(void)
{
        cJSON *object = cJSON_Parse(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"3\","
                                           "\"status\":\"deployed\",\"moduleChecksum\":\"a\","
                                           "\"moduleInputChecksum\":\"b\""));
        struct ao_helm_storage_meta meta = {0};
        struct ao_error err = {0};
        tap_is_int(ao_helm_storage_labels(object, &meta, &err), 0, "labels with moduleInputChecksum: read");
        tap_is_str(meta.input_checksum, "b", "label moduleInputChecksum");
        tap_is_str(meta.module_checksum, "a", "label moduleChecksum beside it");
        ao_helm_storage_meta_clear(&meta);
        cJSON_Delete(object);
        is_labels_error(LABELS("\"owner\":\"helm\",\"name\":\"web\",\"version\":\"3\",\"status\":"
                               "\"deployed\",\"moduleInputChecksum\":[]"),
                        PREFIX "label moduleInputChecksum is an array, not a string",
                        "input checksum an array");

        tap_is_int(ao_helm_storage_name_parse("sh.helm.release.v1.my.web.v12", &meta, &err), 0,
                   "name: a release with a dot");
        tap_is_str(meta.name, "my.web", "name: the release is all between the prefix and the last .v");
        tap_is_int(meta.version, 12, "name: the revision");
        tap_is_str(meta.object, "sh.helm.release.v1.my.web.v12", "name: the object");
        tap_ok(!meta.status && !meta.module_checksum && !meta.input_checksum, "name: nothing else is known");
        ao_helm_storage_meta_clear(&meta);
        static const char *const bad[] = {
            "sh.helm.release.v1.web",   "sh.helm.release.v1..v3", "sh.helm.release.v1.web.v0",
            "sh.helm.release.v1.web.3", "other.web.v3",           "sh.helm.release.v1.web.v3x"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad); i++) {
                char msg[200];
                (void) snprintf(msg, sizeof(msg),
                                "'%s' is not named sh.helm.release.v1.<release>.v<revision>", bad[i]);
                tap_is_int(ao_helm_storage_name_parse(bad[i], &meta, &err), -EBADMSG, "name '%s': refused",
                           bad[i]);
                tap_is_str(err.msg, msg, "name '%s': the message", bad[i]);
        }
}

int main(void)
{
        data_dir = getenv("AO_HELM_STORAGE_DATA");
        if (!data_dir)
                tap_bail("AO_HELM_STORAGE_DATA is not set");
        for (size_t i = 0; i < AO_ARRAY_SIZE(samples); i++)
                test_sample(&samples[i]);
        test_partial();
        test_layers();
        test_cap();
        test_json();
        test_labels();
        test_input_label_and_name();
        return tap_done();
}
