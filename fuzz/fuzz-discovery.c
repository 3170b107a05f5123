/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the discovery table. The first byte chooses what to do, the rest is
 * a JSON document:
 *   bits 0-1  the group/version it is added under (v1, apps/v1, example.com/v1, example.com/v1beta1)
 *   bit 2     also add it as an APIGroupList, bit 3: before the resource list, else after
 *   bit 4     add the resource list a second time (a refresh)
 * Then a few kinds are looked up, with and without apiVersion, and so is
 * every kind the document lists; paths are built for what is found.
 *
 * Besides crashes, leaks and undefined behaviour, it aborts when a contract
 * breaks: error messages are one printable line; find() only returns a
 * resource that matches the kind, in the apiVersion asked for; every kind
 * of a document that was added (and is not a subresource or verb-less) is
 * found under its group/version; a refresh with the same document keeps
 * the count; group/versions to fetch are "group/version"; paths consist of
 * unreserved characters, '/' and %XX escapes, and end in the encoded name.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "ao/kube-discovery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Discovery documents are tens of KiB; more only slows the fuzzer down. */
#define FUZZ_INPUT_MAX (64 * 1024)

static const char *const group_versions[] = {"v1", "apps/v1", "example.com/v1", "example.com/v1beta1"};
static const char *const probes[] = {
    "Pod",
    "pods",
    "PO",
    "deploy",
    "Deployment",
    "widget",
    "wg",
    "",
    "x/y",
    /* longer than a quoted string in a message may be */
    ("VeryLongKindVeryLongKindVeryLongKindVeryLongKindVeryLongKindVeryLongKindVeryLongKindVeryLongKind"
     "VeryLongKindVeryLongKindVeryLongKindVeryLongKindVeryLongKindVeryLongKind"),
};

static void check(bool ok)
{
        if (!ok)
                abort();
}

static void check_message(const struct ao_error *err)
{
        check(err->code < 0 && err->msg[0] != '\0');
        for (const unsigned char *p = (const unsigned char *) err->msg; *p; p++)
                check(*p >= 0x20 && *p != 0x7F);
}

static bool unreserved(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '.' || c == '_' || c == '~';
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The path's characters are safe, and its last segment decodes to @name. */
static void check_path(const struct ao_kube_resource *r, const char *ns, const char *name)
{
        char *path = ao_kube_resource_path(r, ns, name), *last, *out;

        check(strncmp(path, r->group[0] ? "/apis/" : "/api/", r->group[0] ? 6 : 5) == 0);
        for (const char *p = path; *p; p++) {
                if (*p == '%') {
                        check(hex_value(p[1]) >= 0 && hex_value(p[2]) >= 0);
                        p += 2;
                        continue;
                }
                check(*p == '/' || unreserved(*p));
        }
        if (name && name[0]) {
                last = strrchr(path, '/') + 1;
                out = last;
                for (const char *p = last; *p; p++) {
                        if (*p == '%') {
                                *out++ = (char) (hex_value(p[1]) * 16 + hex_value(p[2]));
                                p += 2;
                        } else {
                                *out++ = *p;
                        }
                }
                *out = '\0';
                check(strcmp(last, name) == 0);
        }
        free(path);
}

static void probe(const struct ao_kube_discovery *d, const char *api_version, const char *kind)
{
        struct ao_error err = {0};
        const struct ao_kube_resource *r = ao_kube_discovery_find(d, api_version, kind, &err);

        if (!r) {
                check_message(&err);
                return;
        }
        check(ao_kube_resource_matches(r, kind));
        if (api_version && api_version[0])
                check(strcmp(r->api_version, api_version) == 0);
        else
                check(r->preferred);
        check_path(r, "default", kind);
        check_path(r, NULL, NULL);
}

/* Whether resources[i] of an added list must be found by its kind: see parse_resource(). */
static const char *findable_kind(const cJSON *item)
{
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(item, "kind");
        const cJSON *verbs = cJSON_GetObjectItemCaseSensitive(item, "verbs");

        if (!cJSON_IsString(name) || strchr(name->valuestring, '/') || !cJSON_IsString(kind))
                return NULL;
        return cJSON_GetArraySize(verbs) > 0 ? kind->valuestring : NULL;
}

static void check_listed_kinds(const struct ao_kube_discovery *d, const char *gv, const cJSON *doc)
{
        const cJSON *item;

        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "resources"))
        {
                const char *kind = findable_kind(item);
                if (!kind)
                        continue;
                check(ao_kube_discovery_find(d, gv, kind, NULL) != NULL);
                probe(d, gv, kind);
                probe(d, NULL, kind);
        }
}

static void add_groups(struct ao_kube_discovery *d, const cJSON *doc)
{
        struct ao_error err = {0};
        char **gvs = NULL;

        if (ao_kube_discovery_add_groups(d, doc, &gvs, &err) < 0) {
                check_message(&err);
                return;
        }
        for (char **s = gvs; *s; s++) {
                const char *slash = strchr(*s, '/');
                check(slash && slash != *s && slash[1] && !strchr(slash + 1, '/'));
                free(*s);
        }
        free(gvs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_kube_discovery *d;
        struct ao_error err = {0};
        const char *gv;
        cJSON *doc;
        size_t count;
        uint8_t flags;
        int r;

        if (size < 1 || size > FUZZ_INPUT_MAX)
                return 0;
        flags = data[0];
        gv = group_versions[flags & 3];
        doc = cJSON_ParseWithLength((const char *) data + 1, size - 1);
        d = ao_kube_discovery_new();

        if ((flags & 0x0C) == 0x0C)
                add_groups(d, doc);
        r = ao_kube_discovery_add_resources(d, gv, doc, &err);
        if (r < 0)
                check_message(&err);
        if (r == 0 && (flags & 0x10)) {
                count = ao_kube_discovery_count(d);
                check(ao_kube_discovery_add_resources(d, gv, doc, NULL) == 0);
                check(ao_kube_discovery_count(d) == count);
        }
        if ((flags & 0x0C) == 0x04)
                add_groups(d, doc);
        if (r == 0)
                check_listed_kinds(d, gv, doc);

        for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
                probe(d, NULL, probes[i]);
                probe(d, gv, probes[i]);
        }
        probe(d, "apps/v1/x", "Pod");
        ao_kube_discovery_clear(d);
        check(ao_kube_discovery_count(d) == 0);
        ao_kube_discovery_free(d);
        cJSON_Delete(doc);
        return 0;
}
