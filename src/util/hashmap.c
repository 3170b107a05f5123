/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open addressing with linear probing and backward-shift deletion (no tombstones, so lookups
 * never slow down after many removals). The table doubles at 70 % load and stays a power of two.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/hashmap.h"

struct slot {
        char *key; /* NULL: empty */
        void *value;
        uint64_t hash;
};

struct ao_hashmap {
        struct slot *slots;
        size_t cap; /* power of two, or 0 */
        size_t n;
        void (*free_value)(void *value);
};

/* FNV-1a: short keys, no adversary can choose them to collide cheaply enough to matter here. */
static uint64_t hash_key(const char *key)
{
        uint64_t h = 14695981039346656037ULL;
        for (const unsigned char *p = (const unsigned char *) key; *p; p++)
                h = (h ^ *p) * 1099511628211ULL;
        return h;
}

struct ao_hashmap *ao_hashmap_new(void (*free_value)(void *value))
{
        struct ao_hashmap *m = ao_xcalloc(1, sizeof(*m));
        m->free_value = free_value;
        return m;
}

struct ao_hashmap *ao_hashmap_free(struct ao_hashmap *m)
{
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->cap; i++) {
                if (!m->slots[i].key)
                        continue;
                free(m->slots[i].key);
                if (m->free_value)
                        m->free_value(m->slots[i].value);
        }
        free(m->slots);
        free(m);
        return NULL;
}

static size_t find_slot(const struct ao_hashmap *m, const char *key, uint64_t h)
{
        size_t mask = m->cap - 1;
        for (size_t i = h & mask;; i = (i + 1) & mask) {
                const struct slot *s = &m->slots[i];
                if (!s->key || (s->hash == h && strcmp(s->key, key) == 0))
                        return i;
        }
}

static void grow(struct ao_hashmap *m)
{
        struct slot *old = m->slots;
        size_t old_cap = m->cap;
        m->cap = old_cap ? old_cap * 2 : 16;
        m->slots = ao_xcalloc(m->cap, sizeof(*m->slots));
        for (size_t i = 0; i < old_cap; i++)
                if (old[i].key)
                        m->slots[find_slot(m, old[i].key, old[i].hash)] = old[i];
        free(old);
}

void *ao_hashmap_get(const struct ao_hashmap *m, const char *key)
{
        if (m->n == 0)
                return NULL;
        const struct slot *s = &m->slots[find_slot(m, key, hash_key(key))];
        return s->key ? s->value : NULL;
}

bool ao_hashmap_put(struct ao_hashmap *m, const char *key, void *value)
{
        if ((m->n + 1) * 10 > m->cap * 7)
                grow(m);
        uint64_t h = hash_key(key);
        struct slot *s = &m->slots[find_slot(m, key, h)];
        if (s->key) {
                if (m->free_value && s->value != value)
                        m->free_value(s->value);
                s->value = value;
                return false;
        }
        *s = (struct slot){.key = ao_xstrdup(key), .value = value, .hash = h};
        m->n++;
        return true;
}

/* Close the gap at @i by moving back every later entry of the probe run that may live there. */
static void delete_at(struct ao_hashmap *m, size_t i)
{
        size_t mask = m->cap - 1;
        free(m->slots[i].key);
        m->slots[i].key = NULL;
        m->n--;
        for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
                size_t home = m->slots[j].hash & mask;
                /* Entry j may move to i when its home is not in the cyclic range (i, j]. */
                bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                if (stays)
                        continue;
                m->slots[i] = m->slots[j];
                m->slots[j].key = NULL;
                i = j;
        }
}

void *ao_hashmap_take(struct ao_hashmap *m, const char *key)
{
        if (m->n == 0)
                return NULL;
        size_t i = find_slot(m, key, hash_key(key));
        if (!m->slots[i].key)
                return NULL;
        void *value = m->slots[i].value;
        delete_at(m, i);
        return value;
}

bool ao_hashmap_remove(struct ao_hashmap *m, const char *key)
{
        if (m->n == 0)
                return false;
        size_t i = find_slot(m, key, hash_key(key));
        if (!m->slots[i].key)
                return false;
        void *value = m->slots[i].value;
        delete_at(m, i);
        if (m->free_value)
                m->free_value(value);
        return true;
}

size_t ao_hashmap_size(const struct ao_hashmap *m)
{
        return m->n;
}

bool ao_hashmap_next(const struct ao_hashmap *m, size_t *iter, const char **ret_key, void **ret_value)
{
        for (size_t i = *iter; i < m->cap; i++) {
                if (!m->slots[i].key)
                        continue;
                *iter = i + 1;
                if (ret_key)
                        *ret_key = m->slots[i].key;
                if (ret_value)
                        *ret_value = m->slots[i].value;
                return true;
        }
        *iter = m->cap;
        return false;
}
