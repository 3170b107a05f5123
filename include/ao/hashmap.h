/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A map from strings to pointers: open addressing with linear probing, keys copied. Used where
 * lookups by name must stay O(1) at 100k entries (watched objects by namespace/name).
 * Not thread-safe. Allocation failure aborts, as everywhere in this project.
 */

#include <stdbool.h>
#include <stddef.h>

struct ao_hashmap;

/** @free_value (may be NULL) releases values on replace, remove_free and free. */
struct ao_hashmap *ao_hashmap_new(void (*free_value)(void *value));
/** NULL is accepted; returns NULL. */
struct ao_hashmap *ao_hashmap_free(struct ao_hashmap *m);

void *ao_hashmap_get(const struct ao_hashmap *m, const char *key);
/** Insert or replace (the old value is released with free_value). Returns true when the key is new. */
bool ao_hashmap_put(struct ao_hashmap *m, const char *key, void *value);
/** Remove and return the value (not released), or NULL. */
void *ao_hashmap_take(struct ao_hashmap *m, const char *key);
/** Remove and release. Returns whether the key was there. */
bool ao_hashmap_remove(struct ao_hashmap *m, const char *key);
size_t ao_hashmap_size(const struct ao_hashmap *m);

/**
 * Iterate: start with *@iter = 0; returns false at the end. The map must not change during an
 * iteration (removal shifts entries back, so collect the keys first).
 */
bool ao_hashmap_next(const struct ao_hashmap *m, size_t *iter, const char **ret_key, void **ret_value);
