/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A limit on --config runs in flight, shared by several hook loads: at
 * start-up every enabled module's hooks load at once, and the machine
 * should run a few --config runs per core, not one module's few at a time.
 */
#include "config-pool.h"

#include "ao/alloc.h"

struct ao_hooks_config_pool {
        size_t limit, in_use;
        struct config_pool_waiter *first, **last;
};

struct ao_hooks_config_pool *ao_hooks_config_pool_new(size_t limit)
{
        struct ao_hooks_config_pool *pool = ao_xcalloc(1, sizeof(*pool));
        pool->limit = limit ? limit : 1;
        pool->last = &pool->first;
        return pool;
}

struct ao_hooks_config_pool *ao_hooks_config_pool_free(struct ao_hooks_config_pool *pool)
{
        free(pool);
        return NULL;
}

bool hooks_config_pool_take(struct ao_hooks_config_pool *pool, struct config_pool_waiter *w)
{
        /* Nobody jumps the line: a free slot with waiters is already on its way to the first. */
        if (pool->in_use < pool->limit && !pool->first) {
                pool->in_use++;
                return true;
        }
        if (!w->queued) {
                w->queued = true;
                w->next = NULL;
                *pool->last = w;
                pool->last = &w->next;
        }
        return false;
}

void hooks_config_pool_give(struct ao_hooks_config_pool *pool)
{
        struct config_pool_waiter *w = pool->first;
        if (!w) {
                pool->in_use--;
                return;
        }
        pool->first = w->next;
        if (!pool->first)
                pool->last = &pool->first;
        w->queued = false;
        w->wake(w); /* the slot changes hands: in_use stays */
}

void hooks_config_pool_forget(struct ao_hooks_config_pool *pool, struct config_pool_waiter *w)
{
        if (!w->queued)
                return;
        for (struct config_pool_waiter **p = &pool->first; *p; p = &(*p)->next) {
                if (*p != w)
                        continue;
                *p = w->next;
                if (!*p)
                        pool->last = p;
                break;
        }
        w->queued = false;
}
