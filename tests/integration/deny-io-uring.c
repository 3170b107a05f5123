/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper: run a command with io_uring_setup(2) refused (EPERM), the
 * way container runtimes' default seccomp profiles refuse it.
 * Usage: deny-io-uring COMMAND [ARGS...]
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: deny-io-uring COMMAND [ARGS...]\n");
                return 2;
        }
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(io_uring_setup), 0) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0) {
                perror("deny-io-uring: installing the filter");
                return 1;
        }
        seccomp_release(ctx);
        execvp(argv[1], argv + 1);
        perror("deny-io-uring: exec");
        return 127;
}
