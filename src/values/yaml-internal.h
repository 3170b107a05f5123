/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared between yaml.c (the loader) and yaml-emit.c (the emitter); never
 * included outside src/values/.
 */

#include <stdbool.h>

/**
 * Whether the untagged plain scalar @s (as a value, not a mapping key)
 * loads back as the string @s itself: false for "", null/boolean words,
 * numbers in every spelling the loader accepts and the other special
 * words of yaml.c's table. Says nothing about syntax (indicators, leading
 * spaces, line breaks): libyaml's emitter decides whether @s can be plain.
 */
bool yaml_plain_is_string(const char *s);
