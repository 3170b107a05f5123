/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Syscall numbers to names, for the violation log ("denied 'mount'").
 *
 * libseccomp's seccomp_syscall_resolve_num_arch() returns a strdup'd name
 * on every call. Each name is resolved once and kept for the life of the
 * process in a table of atomic pointers: readers never lock, and two
 * threads resolving the same number at once both succeed, the loser
 * freeing its copy.
 */
#include "ao/sandbox.h"

#include <seccomp.h>
#include <stdlib.h>

#include "ao/macro.h"

/* Above every x86_64 (and aarch64) syscall number; larger numbers are not cached. */
#define NAME_CACHE_SIZE 1024

/* Marks a number libseccomp does not know, so it is not asked again. */
static char unknown_marker;

static char *cache[NAME_CACHE_SIZE];

/*
 * Syscalls newer than the tables of Debian 12's libseccomp 2.5.4, which end
 * at 456 (futex_requeue). Kernels 6.8 and 6.10 added these.
 */
static const char *fallback_name(int nr)
{
#if defined(__x86_64__)
        static const struct {
                int nr;
                const char *name;
        } newer[] = {
            {457, "statmount"},         {458, "listmount"},        {459, "lsm_get_self_attr"},
            {460, "lsm_set_self_attr"}, {461, "lsm_list_modules"}, {462, "mseal"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(newer); i++)
                if (newer[i].nr == nr)
                        return newer[i].name;
#endif
        return NULL;
}

const char *ao_sandbox_syscall_name(int nr)
{
        if (nr < 0 || nr >= NAME_CACHE_SIZE)
                return NULL;

        char *name = __atomic_load_n(&cache[nr], __ATOMIC_ACQUIRE);
        if (!name) {
                char *resolved = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
                char *fresh = resolved ? resolved : &unknown_marker;
                char *expected = NULL;
                if (__atomic_compare_exchange_n(&cache[nr], &expected, fresh, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE))
                        name = fresh;
                else {
                        free(resolved);
                        name = expected;
                }
        }
        return name == &unknown_marker ? fallback_name(nr) : name;
}
