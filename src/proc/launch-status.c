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
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "internal.h"
#include "protocol.h"

#define STATUS_BYTES (SPAWNER_STATUS_SLOTS * sizeof(struct ao_launch_failure))

void ao_proc_launch_status_setup(struct ao_proc *p)
{
        /*
         * Sealed at its size: a spawner could otherwise shrink it under our mapping (SIGBUS here),
         * and the seals tell the spawner that its fd 5 is this memfd and not something inherited.
         */
        p->status_fd = memfd_create("addon-operator-launch-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        void *map = MAP_FAILED;
        if (p->status_fd >= 0 && ftruncate(p->status_fd, (off_t) STATUS_BYTES) == 0 &&
            fcntl(p->status_fd, F_ADD_SEALS, SPAWNER_STATUS_SEALS) == 0)
                map = mmap(NULL, STATUS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, p->status_fd, 0);
        if (map == MAP_FAILED) {
                ao_log_errno(AO_LOG_INFO, -errno,
                             "proc: no launch status memory; spawners wait for each child's exec");
                p->status_fd = ao_safe_close(p->status_fd);
                return;
        }
        p->status = map;
        p->status_free = ao_xcalloc(SPAWNER_STATUS_SLOTS, sizeof(*p->status_free));
        /* Lowest first: the pages in use stay few. */
        for (uint32_t i = 0; i < SPAWNER_STATUS_SLOTS; i++)
                p->status_free[i] = SPAWNER_STATUS_SLOTS - 1 - i;
        p->n_status_free = SPAWNER_STATUS_SLOTS;
}

void ao_proc_launch_status_done(struct ao_proc *p)
{
        if (p->status)
                (void) munmap(p->status, STATUS_BYTES);
        p->status = NULL;
        p->status_fd = ao_safe_close(p->status_fd);
        free(p->status_free);
        p->status_free = NULL;
        p->n_status_free = 0;
}

void ao_proc_launch_status_take(struct ao_proc_run *run)
{
        struct ao_proc *p = run->proc;
        if (!p->status || p->n_status_free == 0)
                return; /* the request names none: the spawner waits for the exec */
        int slot = (int) p->status_free[--p->n_status_free];
        p->status[slot] = (struct ao_launch_failure){.stage = AO_LAUNCH_OK};
        run->status_slot = slot;
}

void ao_proc_launch_status_read(struct ao_proc_run *run)
{
        if (run->status_slot < 0)
                return;
        /* Written by a child of a spawner: trusted no further than the stage names go. */
        struct ao_launch_failure f = run->proc->status[run->status_slot];
        if (f.stage != AO_LAUNCH_OK && f.stage > 0 && f.stage < _AO_LAUNCH_STAGE_MAX) {
                run->result.launch_error = f.error;
                run->result.launch_stage = ao_launch_stage_name(f.stage);
        }
}

void ao_proc_launch_status_release(struct ao_proc_run *run)
{
        /* Only once no child of the run can write there any more: the caller knows. */
        if (run->status_slot < 0)
                return;
        struct ao_proc *p = run->proc;
        p->status_free[p->n_status_free++] = (uint32_t) run->status_slot;
        run->status_slot = -1;
}
