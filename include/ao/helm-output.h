/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the helm binary prints, parsed without running it: the last revision
 * of a release (`helm history`), the releases of a namespace (`helm list`),
 * the module checksum the operator stores among a release's values (`helm get
 * values`), helm's own version (`helm version`) and a rendered manifest
 * (`helm template`, `helm get manifest`), plus the MD5 checksum the Go
 * operator records for a rendered manifest.
 *
 * Text arguments are @len bytes and need not be NUL-terminated. Every parser
 * returns 0 or a negative errno-style code with a one-line message in
 * @reterr naming the command whose output was wrong and what was wrong in it
 * ("helm history output: element 0: revision is not a positive integer");
 * -EBADMSG for malformed output. Out-parameters are written only on success.
 *
 * Non-logging module. Thread-safe except for cJSON's parse-error global
 * (the JSON parsers) and libcrypto's one-time initialisation.
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

/** The last revision of a release, from `helm history REL --max 1 --output json`. */
struct ao_helm_revision {
        int revision; /* 0: no release */
        char status
            [32]; /* "deployed", "failed", "pending-upgrade", ... as helm prints it; "" for revision 0 */
};

/**
 * Parse `helm history --output json`: an array of
 * {"revision":N,"updated":"...","status":"deployed","chart":"x-0.1.0","app_version":"","description":"..."}.
 * The element with the highest revision wins (the first of equals). "[]",
 * "" or whitespace only gives revision 0 and status "".
 *
 * Every element must be an object with a revision that is an integer from 1
 * to INT_MAX and a status of 1 to 31 printable ASCII characters; other
 * members are ignored. Errors: -EBADMSG for text that is not one JSON value,
 * a non-array, an element that is not an object, a missing or bad revision
 * or status.
 */
int ao_helm_parse_history(const char *text, size_t len, struct ao_helm_revision *ret,
                          struct ao_error *reterr);

/**
 * Parse `helm list --all --output json`: an array of
 * {"name":"x","namespace":"ns","revision":"3","updated":"...","status":"deployed","chart":"x-0.1.0",
 * "app_version":""}. Only "name" is read; it must be a non-empty string.
 *
 * On success *@ret_names is a new NULL-terminated array of the names, sorted
 * by strcmp(), without duplicates and without @ignore (when @ignore is
 * neither NULL nor ""). "" or "[]" gives an empty array. The caller frees it
 * with ao_helm_names_free(). Names are as helm printed them: nothing but
 * non-empty, so pass them to helm after "--". Errors as for
 * ao_helm_parse_history().
 */
int ao_helm_parse_list(const char *text, size_t len, const char *ignore, char ***ret_names,
                       struct ao_error *reterr);

/** Free an array from ao_helm_parse_list() and its strings. NULL is accepted. */
void ao_helm_names_free(char **names);

/**
 * Parse `helm get values REL --output json`: the user-supplied values of the
 * last revision, a JSON object, or "null" when there are none. *@ret is a
 * malloc'd copy of the string value of the top-level key
 * "_addonOperatorModuleChecksum", or NULL when that key is absent or not a
 * string, for "null", and for "" or whitespace only. Errors (-EBADMSG): not
 * one JSON value, or a JSON value that is neither an object nor null.
 */
int ao_helm_parse_values_checksum(const char *text, size_t len, char **ret, struct ao_error *reterr);

struct ao_helm_version {
        int major, minor, patch;
};

/**
 * Parse `helm version --short` ("v3.17.2+gcc0bbbd", "v3.2.4+g0ad800e",
 * "v4.0.0", with or without a newline) or `helm version`
 * ("version.BuildInfo{Version:\"v3.17.2\", GitCommit:...}"): the first
 * "vMAJOR.MINOR" or "vMAJOR.MINOR.PATCH" that starts a word (patch 0 when
 * absent; each number at most 9 digits). -EBADMSG when there is none.
 */
int ao_helm_parse_version(const char *text, size_t len, struct ao_helm_version *ret, struct ao_error *reterr);

/** One object of a rendered manifest. */
struct ao_helm_object {
        char *api_version, *kind, *namespace, *name; /* owned, non-empty; namespace NULL when unset */
        bool hook; /* annotated helm.sh/hook: helm makes it around an operation, it is not kept */
};

/** The objects of a rendered manifest, in the order of the text. */
struct ao_helm_manifest {
        struct ao_helm_object *objects; /* owned array of n; NULL when n is 0 */
        size_t n;
};

/**
 * Parse a rendered manifest (`helm template` stdout, `helm get manifest`): a
 * multi-document YAML stream, documents separated by "---" lines and usually
 * preceded by a "# Source: chart/templates/x.yaml" comment. YAML is read as
 * ao_yaml_load_stream() reads it. Documents that are empty or null are
 * skipped. Every other document must be a mapping with a string apiVersion,
 * kind and metadata.name; a kind ending in "List" with an "items" sequence
 * (v1 List, ConfigMapList, ...) stands for its items instead, each checked the
 * same way (items are not expanded further). metadata.namespace is copied
 * when it is a non-empty string; absent, null or "" gives NULL (cluster-scoped,
 * or helm's namespace: the caller decides).
 *
 * A document is named in errors by the path of the nearest "# Source: "
 * comment (at the start of a line, not inside a string) before it, or
 * "document N" (1-based, counting empty documents too) when there is none:
 * "mod/templates/cm.yaml: metadata.name is missing",
 * "mod/templates/list.yaml: items[1]: kind is not a string",
 * "document 2: the document is a sequence, not a mapping".
 * YAML errors read "rendered manifest:LINE:COLUMN: what", positions in the
 * whole text; those found within one document (duplicate key, unknown
 * anchor, bad tag) are prefixed with its name, syntax errors are not. UTF-16
 * input is refused. Errors: -EBADMSG for malformed YAML or a document that
 * is not an object; ao_yaml_load_stream()'s -EFBIG (over AO_YAML_MAX_INPUT,
 * 64 MiB), -E2BIG (its nesting, node and alias limits) and -ENOMEM.
 *
 * On success *@ret is filled (owned by the caller: ao_helm_manifest_clear()).
 */
int ao_helm_manifest_parse(const char *text, size_t len, struct ao_helm_manifest *ret,
                           struct ao_error *reterr);

/** Free the objects of @m and zero it. Safe on a zeroed struct and on NULL. */
void ao_helm_manifest_clear(struct ao_helm_manifest *m);

/**
 * The MD5 of @len bytes of @text as 32 lower-case hex digits and a NUL in
 * @out: the checksum the Go operator records for a rendered manifest, so the
 * two implementations agree. Computed with libcrypto; should it refuse MD5
 * (an OpenSSL configured FIPS-only), @out is "", which never equals a
 * recorded checksum, so a caller comparing them upgrades the release.
 */
void ao_helm_checksum(const char *text, size_t len, char out[33]);
