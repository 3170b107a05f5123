/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test hook: attempts what the default sandbox profile forbids and prints
 * one line per attempt, "<call> <errno name or ok>":
 *   ptrace, mount (a tmpfs on argv[1]), unshare (a user namespace), bpf.
 * Outside a sandbox, as root, some of these succeed: only run it sandboxed
 * (the mount target is a scratch directory the test removes).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *call, long result)
{
        printf("%s %s\n", call, result < 0 ? strerrorname_np(errno) : "ok");
}

int main(int argc, char **argv)
{
        const char *target = argc > 1 ? argv[1] : "/nonexistent";
        errno = 0;
        report("ptrace", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
        report("mount", mount("none", target, "tmpfs", 0, NULL));
        report("unshare", unshare(CLONE_NEWUSER));
        report("bpf", syscall(SYS_bpf, 0, NULL, 0));
        return 0;
}
