/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * For tests registered once per event-loop backend: the reactor named by
 * AO_REACTOR (epoll when unset). io_uring refused by the kernel or a
 * container profile skips the whole test (exit 77); anything else bails.
 */

#include <stdlib.h>

#include "../tap.h"
#include "ao/reactor.h"

static inline struct ao_reactor *test_reactor_new(void)
{
        const char *want = getenv("AO_REACTOR");
        enum ao_reactor_backend backend = ao_reactor_backend_from_string(want ? want : "epoll");
        if (backend < 0)
                tap_bail("AO_REACTOR must be epoll or io_uring");
        struct ao_reactor *r = NULL;
        struct ao_error err = {0};
        if (ao_reactor_new(backend, &r, &err) < 0) {
                if (backend == AO_REACTOR_BACKEND_IO_URING)
                        tap_skip_all(err.msg);
                tap_bail(err.msg);
        }
        tap_is_str(ao_reactor_backend_name(r), ao_reactor_backend_to_string(backend), "backend is %s",
                   want ? want : "epoll");
        return r;
}
