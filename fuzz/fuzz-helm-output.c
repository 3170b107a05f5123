/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the parsers of helm's output (src/helm/output.c, manifest.c). The
 * first byte picks the parser: 'h' history, 'l' list, 'v' get values,
 * 'V' version, 'm' manifest, any other byte its value modulo 5 in that
 * order. For list, the first line after it (up to 63 bytes) is the name to
 * leave out. Besides crashes, leaks and undefined behaviour, it aborts when
 * the contract breaks: on failure the code is negative, the result untouched
 * and the message a single printable line; on success a history revision is
 * >= 0 with a printable status (empty exactly for revision 0), list names
 * are non-empty, strictly ascending and never the ignored one, a version has
 * no negative part, manifest objects have a non-empty apiVersion, kind and
 * name (and a namespace that is NULL or non-empty) and are, in order, those
 * of ao_yaml_load_stream()'s documents (so the parser's own cutting of the
 * stream into documents changes nothing), and the checksum of the text is 32
 * lower-case hex digits.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/helm-output.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* helm's outputs for one release or module are small; the cap keeps runs fast. */
#define FUZZ_INPUT_MAX  (64 * 1024)
#define FUZZ_IGNORE_MAX 63

static void check_line(const char *s)
{
        if (!s || s[0] == '\0')
                abort();
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

static void check_failure(int r, const struct ao_error *err)
{
        if (r >= 0 || err->code != r)
                abort();
        check_line(err->msg);
}

static void fuzz_history(const char *text, size_t len)
{
        struct ao_helm_revision rev = {.revision = -7};
        struct ao_error err = {0};
        int r = ao_helm_parse_history(text, len, &rev, &err);

        if (r < 0) {
                check_failure(r, &err);
                if (rev.revision != -7)
                        abort();
                return;
        }
        if (r != 0 || rev.revision < 0 || !memchr(rev.status, '\0', sizeof(rev.status)))
                abort();
        if ((rev.revision == 0) != (rev.status[0] == '\0'))
                abort();
        for (const char *p = rev.status; *p; p++)
                if (*p <= ' ' || *p >= 0x7F)
                        abort();
}

static void fuzz_list(const char *text, size_t len)
{
        char ignore[FUZZ_IGNORE_MAX + 1] = "";
        const char *nl = memchr(text, '\n', AO_MIN(len, (size_t) FUZZ_IGNORE_MAX + 1));
        char **names = (char **) ignore;
        struct ao_error err = {0};

        if (nl) {
                memcpy(ignore, text, (size_t) (nl - text));
                ignore[nl - text] = '\0';
                len -= (size_t) (nl - text) + 1;
                text = nl + 1;
        }
        int r = ao_helm_parse_list(text, len, ignore, &names, &err);
        if (r < 0) {
                check_failure(r, &err);
                if (names != (char **) ignore)
                        abort();
                return;
        }
        if (r != 0 || !names)
                abort();
        for (char **n = names; *n; n++) {
                if ((*n)[0] == '\0' || strcmp(*n, ignore) == 0 || (n != names && strcmp(n[-1], *n) >= 0))
                        abort();
        }
        ao_helm_names_free(names);
}

static void fuzz_values(const char *text, size_t len)
{
        char *checksum = (char *) text;
        struct ao_error err = {0};
        int r = ao_helm_parse_values_checksum(text, len, &checksum, &err);

        if (r < 0) {
                check_failure(r, &err);
                if (checksum != text)
                        abort();
                return;
        }
        if (r != 0 || checksum == text)
                abort();
        if (checksum)
                (void) strlen(checksum);
        free(checksum);
}

static void fuzz_version(const char *text, size_t len)
{
        struct ao_helm_version v = {-7, -7, -7};
        struct ao_error err = {0};
        int r = ao_helm_parse_version(text, len, &v, &err);

        if (r < 0) {
                check_failure(r, &err);
                if (v.major != -7 || v.minor != -7 || v.patch != -7)
                        abort();
                return;
        }
        if (r != 0 || v.major < 0 || v.minor < 0 || v.patch < 0)
                abort();
}

static bool is_nonempty(const char *s)
{
        return s && s[0];
}

static bool same_string(const cJSON *parent, const char *key, const char *want)
{
        const cJSON *json = cJSON_GetObjectItemCaseSensitive(parent, key);
        const char *got = cJSON_IsString(json) && json->valuestring[0] ? json->valuestring : NULL;
        return got && want ? strcmp(got, want) == 0 : got == want;
}

static bool same_object(const cJSON *json, const struct ao_helm_object *o)
{
        const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(json, "metadata");
        return same_string(json, "apiVersion", o->api_version) && same_string(json, "kind", o->kind) &&
               same_string(metadata, "name", o->name) && same_string(metadata, "namespace", o->namespace);
}

/*
 * The manifest is cut into documents by the parser's own first pass: what it
 * found must be what ao_yaml_load_stream() finds in the whole text, object
 * for object (Lists expanded the same way).
 */
static void check_against_stream(const char *text, size_t len, const struct ao_helm_manifest *m)
{
        cJSON *docs = NULL;
        size_t i = 0;

        /* Only the stream-wide limits may refuse what document-wise loading took. */
        if (ao_yaml_load_stream(text, len, NULL, &docs, NULL) < 0)
                return;
        for (const cJSON *doc = docs->child; doc; doc = doc->next) {
                const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
                const cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items");
                if (!cJSON_IsString(kind))
                        abort(); /* the parser accepted a document without a kind */
                size_t n = strlen(kind->valuestring);
                if (n >= 4 && strcmp(kind->valuestring + n - 4, "List") == 0 && cJSON_IsArray(items)) {
                        for (const cJSON *item = items->child; item; item = item->next)
                                if (i >= m->n || !same_object(item, &m->objects[i++]))
                                        abort();
                } else if (i >= m->n || !same_object(doc, &m->objects[i++])) {
                        abort();
                }
        }
        if (i != m->n)
                abort();
        cJSON_Delete(docs);
}

static void fuzz_manifest(const char *text, size_t len)
{
        struct ao_helm_manifest m = {.n = 12345};
        struct ao_error err = {0};
        char sum[33];
        int r = ao_helm_manifest_parse(text, len, &m, &err);

        if (r < 0) {
                check_failure(r, &err);
                if (m.n != 12345 || m.objects)
                        abort();
        } else {
                if (r != 0 || (m.n > 0) != (m.objects != NULL))
                        abort();
                for (size_t i = 0; i < m.n; i++) {
                        const struct ao_helm_object *o = &m.objects[i];
                        if (!is_nonempty(o->api_version) || !is_nonempty(o->kind) || !is_nonempty(o->name) ||
                            (o->namespace && !o->namespace[0]))
                                abort();
                }
                check_against_stream(text, len, &m);
                ao_helm_manifest_clear(&m);
                if (m.n != 0 || m.objects)
                        abort();
        }
        ao_helm_checksum(text, len, sum);
        if (strlen(sum) != 32 || strspn(sum, "0123456789abcdef") != 32)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char selectors[] = "hlvVm";

        if (size < 1 || size > FUZZ_INPUT_MAX)
                return 0;
        const char *sel = memchr(selectors, data[0], 5);
        size_t which = sel ? (size_t) (sel - selectors) : data[0] % 5;
        const char *text = (const char *) data + 1;
        size -= 1;

        switch (which) {
        case 0:
                fuzz_history(text, size);
                break;
        case 1:
                fuzz_list(text, size);
                break;
        case 2:
                fuzz_values(text, size);
                break;
        case 3:
                fuzz_version(text, size);
                break;
        default:
                fuzz_manifest(text, size);
                break;
        }
        return 0;
}
