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
 *
 * Which children are known (spawners, runs' leaders) is the owner's to say,
 * through the ops it gave.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define CHILDREN_TEXT_MAX 4096

bool proc_group_gone(pid_t pid)
{
        return pid > 0 && kill(-pid, 0) < 0 && errno == ESRCH;
}

pid_t proc_group_of(pid_t pid)
{
        char path[64], buf[512];
        (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        (void) close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        const char *after_name = strrchr(buf, ')');
        int pgrp;
        if (!after_name || sscanf(after_name + 2, "%*c %*d %d", &pgrp) != 1)
                return -1;
        return pgrp;
}

void proc_tree_init(struct tree *t, bool subreaper, const struct tree_ops *ops, void *owner)
{
        *t = (struct tree){.ops = ops, .owner = owner, .subreaper = subreaper, .children_fd = -1};
}

/* Whether every pid in the children file is a child the owner knows; false when the file cannot be read. */
static bool children_known(struct tree *t)
{
        if (t->children_fd == -1) {
                char path[64];
                (void) snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int) getpid());
                t->children_fd = open(path, O_RDONLY | O_CLOEXEC);
                if (t->children_fd < 0) {
                        t->children_fd = -2; /* CONFIG_PROC_CHILDREN off, or no /proc: never ask again */
                        return false;
                }
        }
        if (t->children_fd < 0)
                return false;
        char text[CHILDREN_TEXT_MAX];
        /* A seq_file: reading from offset 0 lists the children as they are now. */
        ssize_t n = pread(t->children_fd, text, sizeof(text) - 1, 0);
        if (n < 0 || (size_t) n == sizeof(text) - 1)
                return false; /* unreadable, or too many to check here */
        text[n] = '\0';
        for (char *s = text, *end; *s; s = end) {
                long pid = strtol(s, &end, 10);
                if (end == s)
                        break;
                if (!t->ops->known(t->owner, (pid_t) pid))
                        return false;
        }
        return true;
}

bool proc_tree_gone(struct tree *t)
{
        if (!t->subreaper)
                return false;
        if (children_known(t))
                return true;
        /* A child of a run whose reply is not read yet looks unknown: read what has come, look again. */
        if (!t->ops->read_replies(t->owner))
                return false;
        return children_known(t);
}

void proc_tree_done(struct tree *t)
{
        if (t->children_fd >= 0)
                (void) close(t->children_fd);
        t->children_fd = -1;
}
