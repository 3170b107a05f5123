/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Launch status slots: a memfd the operator shares with its spawners
 * (SPAWNER_STATUS_FD, see protocol.h). A spawner answers a request as soon
 * as the child is cloned; should the child's set-up or exec then fail, the
 * child writes why into the run's slot before it exits, and the run reads
 * it once the child is reaped (after which nothing writes there). Without
 * the memfd (no memfd_create, no memory) requests name no slot and the
 * spawner waits for each exec, as it did before.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "internal.h"
#include "protocol.h"

#define STATUS_BYTES (SPAWNER_STATUS_SLOTS * sizeof(struct ao_launch_failure))

void proc_launch_status_setup(struct launch_status *ls)
{
        /*
         * Sealed at its size: a spawner could otherwise shrink it under our mapping (SIGBUS here),
         * and the seals tell the spawner that its fd 5 is this memfd and not something inherited.
         */
        ls->fd = memfd_create("addon-operator-launch-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        void *map = MAP_FAILED;
        if (ls->fd >= 0 && ftruncate(ls->fd, (off_t) STATUS_BYTES) == 0 &&
            fcntl(ls->fd, F_ADD_SEALS, SPAWNER_STATUS_SEALS) == 0)
                map = mmap(NULL, STATUS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, ls->fd, 0);
        if (map == MAP_FAILED) {
                ao_log_errno(AO_LOG_INFO, -errno,
                             "proc: no launch status memory; spawners wait for each child's exec");
                ls->fd = ao_safe_close(ls->fd);
                return;
        }
        ls->slots = map;
        ls->free_slots = ao_xcalloc(SPAWNER_STATUS_SLOTS, sizeof(*ls->free_slots));
        /* Lowest first: the pages in use stay few. */
        for (uint32_t i = 0; i < SPAWNER_STATUS_SLOTS; i++)
                ls->free_slots[i] = SPAWNER_STATUS_SLOTS - 1 - i;
        ls->n_free = SPAWNER_STATUS_SLOTS;
}

void proc_launch_status_done(struct launch_status *ls)
{
        if (ls->slots)
                (void) munmap(ls->slots, STATUS_BYTES);
        ls->slots = NULL;
        ls->fd = ao_safe_close(ls->fd);
        free(ls->free_slots);
        ls->free_slots = NULL;
        ls->n_free = 0;
}

int proc_launch_status_take(struct launch_status *ls)
{
        if (!ls->slots || ls->n_free == 0)
                return -1; /* the request names none: the spawner waits for the exec */
        int slot = (int) ls->free_slots[--ls->n_free];
        ls->slots[slot] = (struct ao_launch_failure){.stage = AO_LAUNCH_OK};
        return slot;
}

bool proc_launch_status_read(const struct launch_status *ls, int slot, struct ao_launch_failure *ret)
{
        if (slot < 0)
                return false;
        /* Written by a child of a spawner: trusted no further than the stage names go. */
        struct ao_launch_failure f = ls->slots[slot];
        if (f.stage == AO_LAUNCH_OK || f.stage <= 0 || f.stage >= _AO_LAUNCH_STAGE_MAX)
                return false;
        *ret = f;
        return true;
}

void proc_launch_status_release(struct launch_status *ls, int *slot)
{
        /* Only once no child of the run can write there any more: the caller knows. */
        if (*slot < 0)
                return;
        ls->free_slots[ls->n_free++] = (uint32_t) *slot;
        *slot = -1;
}
