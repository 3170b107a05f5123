/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/helm-storage.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "ao/alloc.h"
#include "ao/base64.h"
#include "ao/json-type.h"
#include "ao/quote.h"

/*
 * helm's storage drivers (pkg/storage/driver in helm 3) write a release with encodeRelease():
 * JSON, gzip at best compression, base64. decodeRelease() reads it back: base64, then gunzip when
 * the bytes start with gzip's magic, then JSON. A Secret's data is base64'd once more by the API.
 *
 * Memory: the text is decoded once into a buffer and the second base64 layer in place; that
 * buffer is freed once inflated, the inflated JSON once parsed, and the manifest string is taken
 * out of the parsed tree rather than copied.
 */

#define SHOW_MAX   128 /* bytes of a user string quoted in an error */
#define STATUS_MAX 31  /* longest status accepted, as ao_helm_parse_history() does */

#define CHECKSUM_KEY         "_addonOperatorModuleChecksum"
#define CHECKSUM_LABEL       "moduleChecksum"
#define INPUT_CHECKSUM_LABEL "moduleInputChecksum"
#define OBJECT_PREFIX        "sh.helm.release.v1."

static const unsigned char gzip_magic[3] = {0x1f, 0x8b, 0x08};

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static const char *show(char buf[static SHOW_MAX + 4], const char *s)
{
        return ao_quote_bytes(buf, SHOW_MAX + 4, s, strlen(s));
}

static const cJSON *member(const cJSON *object, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, key);
        return cJSON_IsNull(v) ? NULL : v;
}

/* Printable ASCII without spaces: helm's statuses are lower-case words with dashes. */
static bool is_status(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > STATUS_MAX)
                return false;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p <= ' ' || *p >= 0x7F)
                        return false;
        return true;
}

/* "release storage 'x': " before what @reterr holds, keeping its code. */
static int prefix(struct ao_error *reterr, int r, const char *object)
{
        char buf[SHOW_MAX + 4];

        if (object)
                (void) ao_error_prefix(reterr, "release storage '%s'", show(buf, object));
        else
                (void) ao_error_prefix(reterr, "release storage");
        return r;
}

/* ---- labels -------------------------------------------------------------------------------------- */

void ao_helm_storage_meta_clear(struct ao_helm_storage_meta *m)
{
        if (!m)
                return;
        free(m->object);
        free(m->name);
        free(m->status);
        free(m->module_checksum);
        free(m->input_checksum);
        *m = (struct ao_helm_storage_meta){0};
}

static void meta_clearp(struct ao_helm_storage_meta *m)
{
        ao_helm_storage_meta_clear(m);
}

/* metadata.name of @object, or NULL when it is not a non-empty string. */
static const char *object_name(const cJSON *object)
{
        const cJSON *name = member(member(object, "metadata"), "name");
        return cJSON_IsString(name) && name->valuestring[0] ? name->valuestring : NULL;
}

/* Label @key as a string; NULL when absent. */
static int label(const cJSON *labels, const char *key, const char **ret, struct ao_error *reterr)
{
        const cJSON *v = member(labels, key);

        if (v && !cJSON_IsString(v))
                return ao_error_set(reterr, -EBADMSG, "label %s is %s, not a string", key,
                                    ao_json_type_name(v, AO_JSON_WORDS_JSON));
        *ret = v ? v->valuestring : NULL;
        return 0;
}

/* A positive int written as helm's strconv.Itoa() writes it. */
static bool parse_version(const char *s, int *ret)
{
        long long v = 0;

        if (s[0] < '1' || s[0] > '9' || strlen(s) > 10)
                return false;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return false;
                v = v * 10 + (*p - '0');
        }
        if (v > INT_MAX)
                return false;
        *ret = (int) v;
        return true;
}

static int read_labels(const cJSON *labels, struct ao_helm_storage_meta *m, struct ao_error *reterr)
{
        const char *owner = NULL, *name = NULL, *version = NULL, *status = NULL, *checksum = NULL,
                   *input = NULL;
        char buf[SHOW_MAX + 4];
        int r;

        if (!labels)
                return ao_error_set(reterr, -EBADMSG, "metadata.labels is missing");
        if (!cJSON_IsObject(labels))
                return ao_error_set(reterr, -EBADMSG, "metadata.labels is %s, not an object",
                                    ao_json_type_name(labels, AO_JSON_WORDS_JSON));
        if ((r = label(labels, "owner", &owner, reterr)) < 0 ||
            (r = label(labels, "name", &name, reterr)) < 0 ||
            (r = label(labels, "version", &version, reterr)) < 0 ||
            (r = label(labels, "status", &status, reterr)) < 0 ||
            (r = label(labels, CHECKSUM_LABEL, &checksum, reterr)) < 0 ||
            (r = label(labels, INPUT_CHECKSUM_LABEL, &input, reterr)) < 0)
                return r;
        if (!owner)
                return ao_error_set(reterr, -EBADMSG, "label owner is missing");
        if (strcmp(owner, "helm") != 0)
                return ao_error_set(reterr, -EBADMSG, "label owner is '%s', not 'helm'", show(buf, owner));
        if (!name || !name[0])
                return ao_error_set(reterr, -EBADMSG, "label name is %s", name ? "empty" : "missing");
        if (!version)
                return ao_error_set(reterr, -EBADMSG, "label version is missing");
        if (!parse_version(version, &m->version))
                return ao_error_set(reterr, -EBADMSG, "label version '%s' is not a positive integer",
                                    show(buf, version));
        if (!status)
                return ao_error_set(reterr, -EBADMSG, "label status is missing");
        if (!is_status(status))
                return ao_error_set(
                    reterr, -EBADMSG,
                    "label status '%s' is not 1 to 31 printable ASCII characters without spaces",
                    show(buf, status));
        m->name = ao_xstrdup(name);
        m->status = ao_xstrdup(status);
        m->module_checksum = checksum ? ao_xstrdup(checksum) : NULL;
        m->input_checksum = input ? ao_xstrdup(input) : NULL;
        return 0;
}

int ao_helm_storage_name_parse(const char *object, struct ao_helm_storage_meta *ret, struct ao_error *reterr)
{
        char buf[SHOW_MAX + 4];
        size_t prefix_len = strlen(OBJECT_PREFIX);
        const char *v = object ? strrchr(object, '.') : NULL;
        int version = 0;
        if (!object || strncmp(object, OBJECT_PREFIX, prefix_len) != 0 || !v || v < object + prefix_len + 1 ||
            v[1] != 'v' || !parse_version(v + 2, &version))
                return ao_error_set(reterr, -EBADMSG,
                                    "'%s' is not named sh.helm.release.v1.<release>.v<revision>",
                                    show(buf, object ? object : ""));
        *ret = (struct ao_helm_storage_meta){
            .object = ao_xstrdup(object),
            .name = ao_xstrndup(object + prefix_len, (size_t) (v - object - (ptrdiff_t) prefix_len)),
            .version = version,
        };
        return 0;
}

int ao_helm_storage_labels(const cJSON *object, struct ao_helm_storage_meta *ret, struct ao_error *reterr)
{
        _cleanup_(meta_clearp) struct ao_helm_storage_meta m = {0};

        if (!cJSON_IsObject(object))
                return ao_error_set(reterr, -EBADMSG, "release storage object: expected an object, got %s",
                                    ao_json_type_name(object, AO_JSON_WORDS_JSON));
        const char *name = object_name(object);
        if (!name)
                return ao_error_set(reterr, -EBADMSG, "release storage object: metadata.name is missing");
        int r = read_labels(member(member(object, "metadata"), "labels"), &m, reterr);
        if (r < 0)
                return prefix(reterr, r, name);
        m.object = ao_xstrdup(name);
        *ret = m;
        m = (struct ao_helm_storage_meta){0};
        return 0;
}

/* ---- data ---------------------------------------------------------------------------------------- */

void ao_helm_stored_release_clear(struct ao_helm_stored_release *r)
{
        if (!r)
                return;
        free(r->name);
        free(r->namespace);
        free(r->status);
        free(r->manifest);
        free(r->values_checksum);
        *r = (struct ao_helm_stored_release){0};
}

static void release_clearp(struct ao_helm_stored_release *r)
{
        ao_helm_stored_release_clear(r);
}

static void inflate_endp(z_stream **z)
{
        if (*z)
                (void) inflateEnd(*z);
}

/*
 * Inflate the gzip stream of @len bytes at @in into a new NUL-terminated buffer of at most
 * AO_HELM_STORAGE_JSON_MAX bytes. Like Go's gzip.Reader, which helm reads with, members that
 * follow each other are one stream; anything but another member after one is an error.
 */
static int gunzip(const unsigned char *in, size_t len, char **ret, size_t *ret_len, struct ao_error *reterr)
{
        z_stream stream = {0};
        _cleanup_(inflate_endp) z_stream *z = NULL;
        /* A release compresses about 2:1 to 10:1; start there and double. */
        size_t cap = AO_MIN(AO_MAX(len * 4, (size_t) 64 * 1024), (size_t) AO_HELM_STORAGE_JSON_MAX + 1);
        size_t n = 0, pos = 0;
        _cleanup_free_ char *out = NULL;

        int zr = inflateInit2(&stream, 16 + MAX_WBITS); /* gzip only, no zlib or raw deflate */
        if (zr != Z_OK)
                return ao_error_set(reterr, zr == Z_MEM_ERROR ? -ENOMEM : -EIO, "gzip: %s",
                                    stream.msg ? stream.msg : "zlib cannot start");
        z = &stream;
        out = ao_xmalloc(cap + 1);

        for (;;) {
                if (z->avail_in == 0 && pos < len) {
                        size_t chunk = AO_MIN(len - pos, (size_t) UINT_MAX);
                        z->next_in = (unsigned char *) (uintptr_t) (in + pos);
                        z->avail_in = (uInt) chunk;
                        pos += chunk;
                }
                if (n == cap) {
                        /* One byte over the cap is enough to know the cap is exceeded. */
                        if (cap > AO_HELM_STORAGE_JSON_MAX)
                                return ao_error_set(reterr, -EFBIG, "gzip: larger than %u bytes decompressed",
                                                    AO_HELM_STORAGE_JSON_MAX);
                        cap = AO_MIN(cap * 2, (size_t) AO_HELM_STORAGE_JSON_MAX + 1);
                        out = ao_xrealloc(out, cap + 1);
                }
                z->next_out = (unsigned char *) out + n;
                z->avail_out = (uInt) AO_MIN(cap - n, (size_t) UINT_MAX);
                zr = inflate(z, Z_NO_FLUSH);
                n = (size_t) ((char *) z->next_out - out);
                if (zr == Z_OK || (zr == Z_BUF_ERROR && z->avail_out == 0))
                        continue;
                if (zr == Z_BUF_ERROR)
                        return ao_error_set(reterr, -EBADMSG, "gzip: unexpected end of data");
                if (zr == Z_MEM_ERROR)
                        return ao_error_set(reterr, -ENOMEM, "gzip: out of memory");
                if (zr != Z_STREAM_END)
                        return ao_error_set(reterr, -EBADMSG, "gzip: %s", z->msg ? z->msg : "invalid data");

                size_t rest = z->avail_in + (len - pos);
                if (rest == 0)
                        break;
                const unsigned char *next = z->avail_in > 0 ? z->next_in : in + pos;
                size_t avail = z->avail_in > 0 ? z->avail_in : len - pos;
                if (next[0] != gzip_magic[0] || (avail > 1 && next[1] != gzip_magic[1]))
                        return ao_error_set(reterr, -EBADMSG, "gzip: %zu bytes after the compressed data",
                                            rest);
                if (inflateReset(z) != Z_OK)
                        return ao_error_set(reterr, -EIO, "gzip: zlib cannot restart");
        }
        if (n > AO_HELM_STORAGE_JSON_MAX)
                return ao_error_set(reterr, -EFBIG, "gzip: larger than %u bytes decompressed",
                                    AO_HELM_STORAGE_JSON_MAX);
        out[n] = '\0';
        *ret = TAKE_PTR(out);
        *ret_len = n;
        return 0;
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One JSON object, white space around it only, as Go's json.Unmarshal wants it. */
static int parse_object(const char *text, size_t len, cJSON **ret, struct ao_error *reterr)
{
        const char *end = NULL;
        _cleanup_(json_deletep) cJSON *json = cJSON_ParseWithLengthOpts(text, len, &end, false);

        if (!json) {
                size_t at = end && end >= text && end <= text + len ? (size_t) (end - text) : 0;
                return ao_error_set(reterr, -EBADMSG, "release JSON: invalid JSON at byte %zu", at);
        }
        size_t at = (size_t) (end - text);
        while (at < len && is_json_space(text[at]))
                at++;
        if (at < len)
                return ao_error_set(reterr, -EBADMSG,
                                    "release JSON: unexpected text after the JSON value at byte %zu", at);
        if (!cJSON_IsObject(json))
                return ao_error_set(reterr, -EBADMSG, "release JSON: expected an object, got %s",
                                    ao_json_type_name(json, AO_JSON_WORDS_JSON));
        *ret = TAKE_PTR(json);
        return 0;
}

/* @key of @json as a non-empty string, copied; @what names it in errors. */
static int get_name(const cJSON *json, const char *key, const char *what, char **ret, struct ao_error *reterr)
{
        const cJSON *v = member(json, key);

        if (!v)
                return ao_error_set(reterr, -EBADMSG, "release JSON: %s is missing", what);
        if (!cJSON_IsString(v))
                return ao_error_set(reterr, -EBADMSG, "release JSON: %s is %s, not a string", what,
                                    ao_json_type_name(v, AO_JSON_WORDS_JSON));
        if (!v->valuestring[0])
                return ao_error_set(reterr, -EBADMSG, "release JSON: %s is empty", what);
        *ret = ao_xstrdup(v->valuestring);
        return 0;
}

/* The fields of struct ao_helm_stored_release from the parsed release; the manifest is moved out of @json. */
static int read_release(cJSON *json, struct ao_helm_stored_release *rel, struct ao_error *reterr)
{
        char buf[SHOW_MAX + 4];
        int r;

        if ((r = get_name(json, "name", "name", &rel->name, reterr)) < 0 ||
            (r = get_name(json, "namespace", "namespace", &rel->namespace, reterr)) < 0)
                return r;

        const cJSON *version = member(json, "version");
        double d = cJSON_IsNumber(version) ? version->valuedouble : NAN;
        if (!version)
                return ao_error_set(reterr, -EBADMSG, "release JSON: version is missing");
        if (!(d >= 1 && d <= INT_MAX && d == floor(d)))
                return ao_error_set(reterr, -EBADMSG, "release JSON: version is not a positive integer");
        rel->version = (int) d;

        const cJSON *info = member(json, "info");
        if (!info)
                return ao_error_set(reterr, -EBADMSG, "release JSON: info is missing");
        if (!cJSON_IsObject(info))
                return ao_error_set(reterr, -EBADMSG, "release JSON: info is %s, not an object",
                                    ao_json_type_name(info, AO_JSON_WORDS_JSON));
        if ((r = get_name(info, "status", "info.status", &rel->status, reterr)) < 0)
                return r;
        if (!is_status(rel->status))
                return ao_error_set(
                    reterr, -EBADMSG,
                    "release JSON: info.status '%s' is not 1 to 31 printable ASCII characters "
                    "without spaces",
                    show(buf, rel->status));

        const cJSON *config = member(json, "config");
        if (config && !cJSON_IsObject(config))
                return ao_error_set(reterr, -EBADMSG, "release JSON: config is %s, not an object",
                                    ao_json_type_name(config, AO_JSON_WORDS_JSON));
        const cJSON *checksum = member(config, CHECKSUM_KEY);
        rel->values_checksum = cJSON_IsString(checksum) ? ao_xstrdup(checksum->valuestring) : NULL;

        cJSON *manifest = cJSON_GetObjectItemCaseSensitive(json, "manifest");
        if (manifest && !cJSON_IsNull(manifest) && !cJSON_IsString(manifest))
                return ao_error_set(reterr, -EBADMSG, "release JSON: manifest is %s, not a string",
                                    ao_json_type_name(manifest, AO_JSON_WORDS_JSON));
        if (cJSON_IsString(manifest)) {
                /* Taken from the node, which then frees nothing: cJSON allocates with malloc() (no
                   cJSON_InitHooks() anywhere in the program), so the caller's free() matches. */
                rel->manifest = TAKE_PTR(manifest->valuestring);
        } else {
                rel->manifest = ao_xstrdup("");
        }
        return 0;
}

static int decode(const char *text, size_t len, bool secret, struct ao_helm_stored_release *ret,
                  struct ao_error *reterr)
{
        _cleanup_(release_clearp) struct ao_helm_stored_release rel = {0};
        _cleanup_(json_deletep) cJSON *json = NULL;
        _cleanup_free_ char *data = ao_xmalloc(AO_BASE64_DECODED_MAX(len) + 1);
        _cleanup_free_ char *inflated = NULL;
        size_t n = 0, json_len = 0;
        int r;

        if (secret) {
                if (ao_base64_decode(text, len, data, &n) < 0)
                        return ao_error_set(reterr, -EBADMSG, "Secret data: not valid base64");
                text = data;
                len = n;
        }
        if (ao_base64_decode(text, len, data, &n) < 0)
                return ao_error_set(reterr, -EBADMSG, "release data: not valid base64");

        if (n >= sizeof(gzip_magic) && memcmp(data, gzip_magic, sizeof(gzip_magic)) == 0) {
                if ((r = gunzip((const unsigned char *) data, n, &inflated, &json_len, reterr)) < 0)
                        return r;
                free(TAKE_PTR(data));
        } else {
                /* Not compressed: helm's decodeRelease() takes it as JSON too. */
                if (n > AO_HELM_STORAGE_JSON_MAX)
                        return ao_error_set(reterr, -EFBIG, "release JSON: larger than %u bytes",
                                            AO_HELM_STORAGE_JSON_MAX);
                inflated = TAKE_PTR(data);
                inflated[n] = '\0';
                json_len = n;
        }
        if ((r = parse_object(inflated, json_len, &json, reterr)) < 0)
                return r;
        free(TAKE_PTR(inflated));
        if ((r = read_release(json, &rel, reterr)) < 0)
                return r;
        *ret = rel;
        rel = (struct ao_helm_stored_release){0};
        return 0;
}

int ao_helm_storage_decode(const char *object, const char *text, size_t len, bool secret,
                           struct ao_helm_stored_release *ret, struct ao_error *reterr)
{
        int r = decode(text, len, secret, ret, reterr);
        return r < 0 ? prefix(reterr, r, object) : 0;
}

int ao_helm_storage_read(const cJSON *object, bool secret, struct ao_helm_stored_release *ret,
                         struct ao_error *reterr)
{
        if (!cJSON_IsObject(object))
                return ao_error_set(reterr, -EBADMSG, "release storage object: expected an object, got %s",
                                    ao_json_type_name(object, AO_JSON_WORDS_JSON));
        const char *name = object_name(object);
        const cJSON *release = member(member(object, "data"), "release");
        if (!cJSON_IsString(release)) {
                int r = ao_error_set(reterr, -EBADMSG, "data.release is %s",
                                     release ? "not a string" : "missing");
                return prefix(reterr, r, name);
        }
        return ao_helm_storage_decode(name, release->valuestring, strlen(release->valuestring), secret, ret,
                                      reterr);
}
