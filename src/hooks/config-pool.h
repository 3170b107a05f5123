/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/hooks/ (loader.c): the slots of a struct
 * ao_hooks_config_pool, one per --config run in flight. A load that finds
 * none free waits in line; a slot given back goes straight to the first
 * load in line, so loads are served in the order they asked.
 */

#include <stdbool.h>

#include "ao/hooks.h"

struct config_pool_waiter {
        struct config_pool_waiter *next;
        bool queued;
        /* The pool hands the waiter a slot: it must start a run with it or give it back. */
        void (*wake)(struct config_pool_waiter *w);
};

/** A free slot for @w (true), or @w joins the line (false) and is woken when one is free. */
bool hooks_config_pool_take(struct ao_hooks_config_pool *pool, struct config_pool_waiter *w);
/** A run's slot is free: to the first waiter (woken before this returns), else back to the pool. */
void hooks_config_pool_give(struct ao_hooks_config_pool *pool);
/** @w leaves the line, if it is in it (a load that is done). */
void hooks_config_pool_forget(struct ao_hooks_config_pool *pool, struct config_pool_waiter *w);
