/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared between schema-load.c, schema-validate.c and schema-defaults.c;
 * never included outside src/values/.
 *
 * A loaded schema stays a cJSON tree (after the transforms of
 * schema-load.c) that validation walks directly. What is worked out once at
 * load, the compiled regular expressions and the targets of $refs, is kept
 * in a table sorted by the address of the cJSON node it belongs to.
 */

#include <stdbool.h>
#include <stddef.h>

#include <oniguruma.h>

#include "ao/schema.h"

/* Nesting of schemas and of values (plus $ref hops) that any walk accepts. */
#define AO_SCHEMA_MAX_DEPTH 256
/* Lines in one validation report, the last one saying that more were cut. */
#define AO_SCHEMA_MAX_ERRORS 100
/* Schema nodes visited by one validation: bounds anyOf/oneOf over recursive $refs. */
#define AO_SCHEMA_MAX_STEPS 1000000u
/* Backtracking steps for one regex search (oniguruma's retry limits). */
#define AO_SCHEMA_REGEX_RETRY_MATCH  100000u
#define AO_SCHEMA_REGEX_RETRY_SEARCH 1000000u

/* One of: a compiled regex (@re) or a resolved $ref (@target). */
struct ao_schema_compiled {
        const struct cJSON *node; /* borrowed from the doc: "pattern", "$ref" or a patternProperties member */
        OnigRegex re;             /* owned; NULL for a $ref */
        const struct cJSON *target; /* borrowed from the doc: the definition a $ref names */
};

struct ao_schema_doc {
        struct cJSON *root;                  /* owned; NULL when this kind has no schema */
        struct ao_schema_compiled *compiled; /* owned, sorted by node */
        size_t n_compiled;
};

struct ao_schema {
        struct ao_schema_doc docs[_AO_SCHEMA_KIND_MAX];
};

/* The compiled regex of @node (see struct ao_schema_compiled), or NULL. */
OnigRegex schema_regex_find(const struct ao_schema_doc *doc, const struct cJSON *node);

/*
 * Search @s (NUL-terminated) for @re with the retry limits in @mp. Returns 1
 * on a match, 0 on none (also for invalid UTF-8, which oniguruma must not
 * see), -E2BIG when a retry limit was hit.
 */
int schema_regex_search(OnigRegex re, const char *s, OnigMatchParam *mp);

/* The definition that the "$ref" string @node points at, or NULL. */
const struct cJSON *schema_ref_target(const struct ao_schema_doc *doc, const struct cJSON *node);
