/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Helm 3's release storage, read without running helm: what `helm history`,
 * `helm get values` and `helm get manifest` would print can be taken from
 * the objects helm keeps each revision of a release in.
 *
 * Helm 3 (checked against v3.17.2) stores revision N of release REL in
 * namespace NS as one object named "sh.helm.release.v1.REL.vN":
 *
 *   - the Secret driver (the default, HELM_DRIVER=secret): a Secret of type
 *     "helm.sh/release.v1";
 *   - HELM_DRIVER=configmap: a ConfigMap.
 *
 * Both carry the labels name=REL, owner=helm, status=<the revision's status>,
 * version=N, modifiedAt=<unix seconds> once the revision has been updated,
 * and (helm >= 3.13) the release's own labels (`helm upgrade --labels`; the
 * operator passes moduleChecksum=<md5>). data.release holds helm's encoding
 * of the release, base64(gzip(JSON)); in a Secret that string is base64'd
 * once more, as Kubernetes encodes every Secret's data. The JSON has the
 * release's name, namespace, version, info.status, config (the values the
 * user supplied), manifest (the rendered objects, helm hooks not included:
 * they are in "hooks"), the chart and the hooks; the release's labels are
 * not in it.
 *
 * Errors are -EBADMSG for malformed data, -EFBIG past
 * AO_HELM_STORAGE_JSON_MAX and -ENOMEM when zlib cannot allocate; the
 * message is one line naming the storage object and the layer that failed:
 *
 *   release storage 'sh.helm.release.v1.web.v3': gzip: unexpected end of data
 *
 * Out-parameters are written only on success. Non-logging module.
 * Thread-safe except for cJSON's parse-error global.
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct cJSON;

/*
 * The most bytes a release's JSON may decompress to. A Secret or ConfigMap
 * holds at most ~1 MiB, which gzip could inflate a thousandfold: the cap
 * keeps such a bomb from taking the operator's memory, far above any real
 * release (a chart with its templates and a rendered manifest of megabytes).
 */
#define AO_HELM_STORAGE_JSON_MAX (64u * 1024 * 1024)

/** What a storage object's metadata says, without decoding its data. */
struct ao_helm_storage_meta {
        char *object;          /* owned; metadata.name, "sh.helm.release.v1.web.v3" */
        char *name;            /* owned; label "name", the release; non-empty */
        int version;           /* label "version", the revision: 1 to INT_MAX */
        char *status;          /* owned; label "status": "deployed", "superseded", "pending-upgrade", ... */
        char *module_checksum; /* owned; label "moduleChecksum", NULL when absent */
        char *input_checksum;  /* owned; label "moduleInputChecksum" (this operator's), NULL when absent */
};

/**
 * Read the metadata of a storage object: a Secret or ConfigMap as the API
 * returns it (full or as a PartialObjectMetadata), or an item of a list of
 * them. @object must be a JSON object whose metadata.name is a non-empty
 * string, whose metadata.labels has owner "helm", a non-empty name, a
 * version that is a decimal integer from 1 to INT_MAX written as helm writes
 * it (digits only, no leading zero), a status of 1 to 31 printable ASCII
 * characters without spaces, and, when present, a string moduleChecksum (a
 * null label counts as absent). Other labels
 * (modifiedAt, the release's own) are ignored, and so is whether the object's
 * name matches its labels (helm itself never checks).
 *
 * Errors (-EBADMSG) name the object, or say it has no name: "release
 * storage 'sh.helm.release.v1.web.v3': label version '0x3' is not a positive
 * integer", "release storage object: metadata.name is missing". On success *@ret is filled (owned by the caller:
 * ao_helm_storage_meta_clear()).
 */
int ao_helm_storage_labels(const struct cJSON *object, struct ao_helm_storage_meta *ret,
                           struct ao_error *reterr);

/** Free the strings of @m and zero it. Safe on a zeroed struct and on NULL. */
void ao_helm_storage_meta_clear(struct ao_helm_storage_meta *m);

/**
 * The release and revision a storage object's name says ("sh.helm.release.v1.web.v3": web, 3),
 * for a deleted object whose labels are not known: @ret gets object, name and version only.
 * -EBADMSG for any other name.
 */
int ao_helm_storage_name_parse(const char *object, struct ao_helm_storage_meta *ret, struct ao_error *reterr);

/** One revision of a release, from its storage object's data. */
struct ao_helm_stored_release {
        char *name, *namespace, *status; /* owned, non-empty; status is info.status */
        int version;                     /* 1 to INT_MAX */
        char *manifest;        /* owned; the rendered manifest, helm hooks not included; "" when none */
        char *values_checksum; /* owned; config._addonOperatorModuleChecksum when a string, else NULL */
};

/**
 * Decode a storage object's data.release: @text is the string as the API
 * returned it (@len bytes, need not be NUL-terminated); @secret is true for
 * the Secret driver (one more base64 layer), false for a ConfigMap. @object
 * is the object's name for messages (NULL: "release storage: ...").
 *
 * The layers, each named in its errors ("Secret data", "release data",
 * "gzip", "release JSON"): base64 as ao_base64_decode() reads it (white space
 * skipped, padding required); then gunzip, when the data starts with gzip's
 * magic (1f 8b 08), as helm reads it: concatenated gzip members are one
 * stream, and anything else after the last member is refused, as are a
 * stream cut short, a bad checksum or length and more than
 * AO_HELM_STORAGE_JSON_MAX bytes decompressed (-EFBIG); data without the magic
 * is taken as JSON as it is (helm accepts it too). The JSON must be one
 * object (white space around it only) with a non-empty string name and
 * namespace, a version that is an integer from 1 to INT_MAX, an info object
 * with a status as ao_helm_storage_labels() wants it, a manifest that is a
 * string (absent or null: ""), and a config that is an object (absent or
 * null: no checksum). Other members are not looked at.
 *
 * Members are matched case-sensitively and the first of duplicates wins
 * (Go's encoding/json would match "Manifest" too and take the last); helm
 * writes each once, in lower case. The manifest is handed over from the
 * parsed JSON, not copied. On success
 * *@ret is filled (owned by the caller: ao_helm_stored_release_clear()).
 */
int ao_helm_storage_decode(const char *object, const char *text, size_t len, bool secret,
                           struct ao_helm_stored_release *ret, struct ao_error *reterr);

/**
 * ao_helm_storage_decode() on a whole storage object as the API returns it
 * (@object: a JSON object), named by its metadata.name: its data.release
 * must be a string ("release storage 'x': data.release is missing").
 * Whether it is a Secret is the caller's to say: items of a list carry no
 * kind.
 */
int ao_helm_storage_read(const struct cJSON *object, bool secret, struct ao_helm_stored_release *ret,
                         struct ao_error *reterr);

/** Free the strings of @r and zero it. Safe on a zeroed struct and on NULL. */
void ao_helm_stored_release_clear(struct ao_helm_stored_release *r);
