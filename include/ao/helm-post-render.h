/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The labels every object of a chart gets: heritage=addon-operator and
 * ADDON_OPERATOR_CRD_EXTRA_LABELS, put into each rendered object's
 * metadata.labels by helm's post-renderer, which is the operator's own
 * binary (`addon-operator tool post-render LABELS`, src/tool/post-render.c)
 * reading the manifest helm rendered on stdin.
 *
 * Non-logging module. Thread-safe.
 */

#include <stddef.h>

#include "ao/error.h"

/* The most a rendered manifest may be: as for every YAML input (AO_YAML_MAX_INPUT). */
#define AO_HELM_POST_RENDER_MAX_INPUT (64u * 1024 * 1024)

struct ao_helm_label {
        char *key, *value; /* owned */
};

/** Labels in the order they are applied; keys are unique. */
struct ao_helm_labels {
        struct ao_helm_label *items; /* owned array of n */
        size_t n;
};

/**
 * Parse "k=v,k2=v2" (label syntax, as ADDON_OPERATOR_CRD_EXTRA_LABELS): blanks
 * around keys and values are trimmed, empty items are skipped, and a key given
 * again replaces the earlier value in its place. Syntax beyond that (which
 * characters a key or value may have) is the settings' to check; here only
 * printable ASCII is required. -EINVAL for an item without '=', with an empty
 * key or another byte, naming the item: "labels: 'foo' is not key=value",
 * "labels: 'a=\t' is not printable ASCII". On success *@ret is filled (owned
 * by the caller: ao_helm_labels_clear()).
 */
int ao_helm_labels_parse(const char *text, struct ao_helm_labels *ret, struct ao_error *reterr);

/** @labels as "k=v,k2=v2" (malloc'd; "" when there are none): what ao_helm_labels_parse() reads back. */
char *ao_helm_labels_format(const struct ao_helm_labels *labels);

/** Free the labels and zero @labels. Safe on a zeroed struct and on NULL. */
void ao_helm_labels_clear(struct ao_helm_labels *labels);

/**
 * The rendered manifest @text (@len bytes, a multi-document YAML stream as
 * helm renders it) with @labels in every object's metadata.labels, as helm's
 * post-renderer: a label the object has already gets the new value in its
 * place, the others are appended; metadata and metadata.labels are made when
 * missing or null. An object is a document that is a mapping, or, when its
 * kind ends in "List" and it has an "items" sequence, each of those items
 * (the List itself is left as it is). Empty and null documents are dropped.
 *
 * Everything else is kept as it is: key order, scalars with their style and
 * tags (so each means what it meant), collections' block or flow style,
 * anchors and aliases (a labels or metadata mapping that an alias shares is
 * copied first, so a selector aliasing the labels is not changed), and the
 * comment lines between documents ("# Source: chart/templates/x.yaml").
 * Comments inside a document are dropped, and each document is written
 * anew: "---", then its comments, then the document, two spaces per level.
 *
 * Errors name the document by its "# Source: " comment, or "document N"
 * (1-based, counting every document): "web/templates/cm.yaml: metadata.labels
 * is a sequence, not a mapping", "document 2: the document is a scalar, not
 * a mapping", "web/templates/list.yaml: items[1] is a scalar, not a mapping",
 * "web/templates/cm.yaml: metadata comes from a merge key (<<): labels cannot
 * be added". YAML errors read "rendered manifest:LINE:COLUMN: what". Codes:
 * -EBADMSG (malformed YAML, or a document labels cannot be put in; UTF-16
 * input), -EFBIG (more than AO_HELM_POST_RENDER_MAX_INPUT), -E2BIG (nesting
 * deeper than AO_YAML_MAX_DEPTH, more than AO_YAML_MAX_NODES nodes), -ENOMEM.
 *
 * On success *@ret is the new text (malloc'd, NUL-terminated, *@ret_len bytes
 * without the NUL). Out-parameters are written only on success.
 */
int ao_helm_post_render(const char *text, size_t len, const struct ao_helm_labels *labels, char **ret,
                        size_t *ret_len, struct ao_error *reterr);
