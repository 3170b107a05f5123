/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a reaped run left any process behind.
 *
 * Its process group being empty is not enough: a descendant may have left
 * the group (setsid, setpgid) and still hold the run's output pipes or
 * write to its directory's paths. But take the topmost such survivor: its
 * parent is either alive in the group (then the group is not empty) or
 * dead, and then the kernel handed it to the nearest child subreaper above
 * it, which is the operator (every live ancestor between would be a higher
 * survivor). So once the group is empty, a survivor shows up as a child of
 * ours that is neither a spawner nor a run's child. The main thread's
 * children file lists them (one pread on a held fd): hooks are its children
 * (the spawners clone them with CLONE_PARENT; in-process launches are its
 * own), and orphans go to the first thread of a subreaper.
 *
 * Without the subreaper (prctl refused) survivors go elsewhere, and the
 * answer is always "maybe not": the callers then take the careful way.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define CHILDREN_TEXT_MAX 4096

bool ao_proc_group_gone(pid_t pid)
{
        return pid > 0 && kill(-pid, 0) < 0 && errno == ESRCH;
}

static bool known_child(const struct ao_proc *p, pid_t pid)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && ao_proc_spawner_pid(p->spawners[i]) == pid)
                        return true;
        for (const struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->pid == pid && r->state != RUN_STARTING)
                        return true;
        return false;
}

/* Each pid of the children file is a child we know; false when one is not, or the file cannot be read. */
static bool children_known(struct ao_proc *p)
{
        if (p->children_fd < 0) {
                char path[64];
                (void) snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int) getpid());
                p->children_fd = open(path, O_RDONLY | O_CLOEXEC);
                if (p->children_fd < 0) {
                        p->children_fd = -2; /* CONFIG_PROC_CHILDREN off, or no /proc: never ask again */
                        return false;
                }
        }
        if (p->children_fd < 0)
                return false;
        char text[CHILDREN_TEXT_MAX];
        /* A seq_file: reading from offset 0 lists the children as they are now. */
        ssize_t n = pread(p->children_fd, text, sizeof(text) - 1, 0);
        if (n < 0 || (size_t) n == sizeof(text) - 1)
                return false; /* unreadable, or too many to check here */
        text[n] = '\0';
        for (char *s = text, *end; *s; s = end) {
                long pid = strtol(s, &end, 10);
                if (end == s)
                        break;
                if (!known_child(p, (pid_t) pid))
                        return false;
        }
        return true;
}

bool ao_proc_tree_gone(struct ao_proc *p)
{
        if (!p->sigchld)
                return false;
        if (children_known(p))
                return true;
        /* A child of a run whose reply is not read yet looks unknown: read what has come, look again. */
        if (!ao_proc_replies_outstanding(p))
                return false;
        ao_proc_spawners_collect(p);
        return children_known(p);
}

void ao_proc_tree_done(struct ao_proc *p)
{
        if (p->children_fd >= 0)
                (void) close(p->children_fd);
        p->children_fd = -1;
}
