/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/jq/: the one compile path, defined in compile.c and used by cache.c (and by
 * ao_jq_check() next to it). Never included outside src/jq/.
 */

#include <stddef.h>

struct jq_state;

/**
 * Compile @filter the one way this project does (compile.c: the workarounds for libjq 1.6).
 * Returns the program (the caller's: jq_teardown()), or NULL with jq's first message in
 * @reason (@reason_size bytes). Named for compile.c, its file (docs/STYLE.md, the prefix rule):
 * jq_ is libjq's and ao_ the public API's.
 */
struct jq_state *compile_program(const char *filter, char *reason, size_t reason_size);
