/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bare limit of running a list of hooks: for each executable path read
 * from stdin, posix_spawn `PATH --config` (stdout on /dev/null) and then
 * `PATH`, each in the executable's directory, one after another, waiting
 * for each. Prints the elapsed milliseconds. bench-converge.sh compares the
 * operator's start-up converge against this, so the reference carries no
 * shell of its own.
 *
 * Usage: bench-spawn-list < PATHS
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void run(const char *path, const char *dir, char *arg)
{
        char *argv[] = {(char *) path, arg, NULL};
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addchdir_np(&fa, dir);
        if (arg)
                posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        pid_t pid;
        int status;
        if (posix_spawn(&pid, path, &fa, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) != pid ||
            !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench-spawn-list: '%s' failed\n", path);
                exit(1);
        }
        posix_spawn_file_actions_destroy(&fa);
}

int main(void)
{
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        char line[4096];
        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\n")] = '\0';
                if (!*line)
                        continue;
                char dir[4096];
                snprintf(dir, sizeof(dir), "%s", line);
                char *slash = strrchr(dir, '/');
                if (slash)
                        *slash = '\0';
                run(line, slash ? dir : ".", "--config");
                run(line, slash ? dir : ".", NULL);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%lld\n", (long long) ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000));
        return 0;
}
