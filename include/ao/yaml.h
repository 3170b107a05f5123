/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * YAML and JSON documents as cJSON trees: the loader every file from users
 * goes through (values.yaml, hook configs, sandbox profiles, kubeconfig).
 *
 * Scalars resolve the way Kubernetes users expect (YAML 1.2 core schema plus
 * the YAML 1.1 booleans Kubernetes tooling accepts): true/false (also
 * True/TRUE/yes/no/on/off... see yaml.c), null/~/empty, integers (decimal,
 * 0x, 0o), floats (.inf, .nan included), and every quoted scalar stays a
 * string. Anchors and aliases are supported with a cap on expanded nodes
 * (no billion-laughs); duplicate mapping keys are an error; non-string keys
 * are converted to their string form. Errors carry "file:line:column: what".
 *
 * Non-logging module: callers log. Thread-safe (no global state).
 */

#include <stddef.h>

#include "ao/error.h"

struct cJSON;

/* Limits applied while loading; exceeding one is an error, never a crash. */
#define AO_YAML_MAX_INPUT   (64u * 1024 * 1024) /* bytes */
#define AO_YAML_MAX_DEPTH   256                 /* nesting of mappings and sequences */
#define AO_YAML_MAX_NODES   (4u * 1024 * 1024)  /* nodes after alias expansion */

/**
 * Parse one YAML (or JSON, which is YAML) document from @text (@len bytes,
 * need not be NUL-terminated) into a new cJSON tree in @ret (owned by the
 * caller). An empty document gives a cJSON null. More than one document is
 * an error. @filename names the input in error messages (may be NULL: "<input>").
 */
int ao_yaml_load(const char *text, size_t len, const char *filename, struct cJSON **ret,
                 struct ao_error *reterr);

/** Read and parse the file at @path (capped at AO_YAML_MAX_INPUT). */
int ao_yaml_load_file(const char *path, struct cJSON **ret, struct ao_error *reterr);

/**
 * Canonical JSON text of @json: object keys sorted by byte value at every
 * level, no insignificant whitespace, numbers in the shortest form that
 * round-trips. Equal documents give equal text: used for checksums.
 * Returns a malloc'd string (caller frees) or NULL on allocation failure.
 */
char *ao_json_canonical(const struct cJSON *json);
