/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * jqFilter programs (of kubernetes bindings, of object patches), run through libjq.
 *
 * Compiling a program costs milliseconds (jq 1.6 builds its whole builtin library each time),
 * so every distinct filter text is compiled once and kept in a cache; running it costs
 * microseconds. Output as the Go operator gives it: one result is that value, several become
 * a JSON array, none is null. A filter is always compiled the same way (with the workarounds
 * for libjq 1.6 defects, src/jq/compile.c), so one that passed ao_jq_check() is exactly the
 * program the cache runs.
 *
 * Non-logging module (jq's own error messages are captured into the error); jv values never
 * leave it. Main thread only: libjq keeps no global state, but a cache is not locked.
 */

#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct cJSON;
struct ao_jq_cache;

/**
 * Whether @filter compiles, for checking a configuration before anything runs: 0, or -EINVAL
 * with libjq's first message as one line in @reason (@reason_size > 0 bytes, cut to fit; "out
 * of memory" when libjq could not even start). The program is compiled as the cache compiles it
 * and thrown away.
 */
int ao_jq_check(const char *filter, char *reason, size_t reason_size);

/** An empty cache. Programs are compiled on first use and kept until the cache is freed. */
struct ao_jq_cache *ao_jq_cache_new(void);
/** Free @c and tear down every compiled program; NULL is accepted. Returns NULL. */
struct ao_jq_cache *ao_jq_cache_free(struct ao_jq_cache *c);

/**
 * Run @filter on @input (borrowed). On success @ret_result is a new cJSON value (caller-owned)
 * and @ret_text, when non-NULL, its canonical JSON text (malloc'd; used for change detection).
 * A compile error or runtime error (jq's "error(...)", a type error, halt_error) returns -EINVAL
 * with jq's message and the filter in @reterr, as one printable line ("jqFilter '.a': Cannot
 * index array with string \"a\""); a filter that does not compile is remembered and reported
 * on every call. -E2BIG: more than 100000 results, or a value nested deeper than 1000 levels
 * (cJSON's own parse limit) in @input or the result. Nothing is written on failure.
 */
int ao_jq_apply(struct ao_jq_cache *c, const char *filter, const struct cJSON *input,
                struct cJSON **ret_result, char **ret_text, struct ao_error *reterr);

/** Programs compiled so far, failed ones included (tests check that the cache is hit). */
size_t ao_jq_cache_size(const struct ao_jq_cache *c);
