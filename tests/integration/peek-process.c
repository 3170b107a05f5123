/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper: what a hook can do to other processes and what it was given.
 * Run from a hook under test (tests/integration/test-security.sh).
 *
 *   peek-process fds FILE
 *       writes one line to FILE: each fd open at the start as "N:what"
 *       ("/dev/null", "pipe", "socket", or the link target); FILE is opened
 *       only after the listing, and the listing's own fd is left out.
 *   peek-process LABEL=PID...
 *       one line per target: "LABEL readv=R attach=R signal=R pgid=P sid=S"
 *       where R is "ok" or the errno name of process_vm_readv(2),
 *       ptrace(PTRACE_ATTACH) and kill(PID, 0), and P/S say whether the
 *       target's process group and session are this process's ("same") or
 *       not ("other"). PID "child" is a child forked for the purpose: the
 *       control that shows the calls work where they are allowed.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *result(int r)
{
        if (r >= 0)
                return "ok";
        const char *name = strerrorname_np(errno);
        return name ? name : "unknown";
}

/* Read one word at @address of @pid: the address is our own, which a forked child shares. */
static int try_readv(pid_t pid, void *address)
{
        long word;
        struct iovec local = {.iov_base = &word, .iov_len = sizeof(word)};
        struct iovec remote = {.iov_base = address, .iov_len = sizeof(word)};
        return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t) sizeof(word) ? 0 : -1;
}

/* Attach, and if that worked, wait for the stop and let go again at once. */
static int try_attach(pid_t pid)
{
        if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) < 0)
                return -1;
        (void) waitpid(pid, NULL, __WALL);
        (void) ptrace(PTRACE_DETACH, pid, NULL, NULL);
        return 0;
}

static const char *same(pid_t a, pid_t b)
{
        return a >= 0 && a == b ? "same" : "other";
}

static void probe(const char *label, pid_t pid)
{
        static long marker = 0x5eed;
        const char *readv = result(try_readv(pid, &marker));
        const char *attach = result(try_attach(pid));
        const char *signal = result(kill(pid, 0));
        printf("%s readv=%s attach=%s signal=%s pgid=%s sid=%s\n", label, readv, attach, signal,
               same(getpgid(pid), getpgid(0)), same(getsid(pid), getsid(0)));
}

static pid_t fork_control(void)
{
        pid_t pid = fork();
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

static int list_fds(const char *file)
{
        DIR *d = opendir("/proc/self/fd");
        if (!d) {
                perror("peek-process: /proc/self/fd");
                return 1;
        }
        char line[4096] = "";
        size_t used = 0;
        const char *sep = "";
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
                        continue;
                char path[300], target[256];
                (void) snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
                ssize_t n = readlink(path, target, sizeof(target) - 1);
                target[n > 0 ? n : 0] = '\0';
                /* "pipe:[1234]" and "socket:[1234]": the inode number changes every run. */
                char *bracket = strstr(target, ":[");
                if (bracket)
                        *bracket = '\0';
                int w = snprintf(line + used, sizeof(line) - used, "%s%s:%s", sep, e->d_name, target);
                if (w > 0 && (size_t) w < sizeof(line) - used)
                        used += (size_t) w;
                sep = " ";
        }
        closedir(d);
        FILE *f = fopen(file, "w");
        if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) != 0) {
                perror(file);
                return 1;
        }
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 3 && strcmp(argv[1], "fds") == 0)
                return list_fds(argv[2]);
        if (argc < 2) {
                fprintf(stderr, "usage: peek-process fds FILE | peek-process LABEL=PID...\n");
                return 2;
        }
        for (int i = 1; i < argc; i++) {
                char *eq = strchr(argv[i], '=');
                if (!eq) {
                        fprintf(stderr, "peek-process: '%s': expected LABEL=PID\n", argv[i]);
                        return 2;
                }
                *eq = '\0';
                bool control = strcmp(eq + 1, "child") == 0;
                pid_t pid = control ? fork_control() : (pid_t) atoi(eq + 1);
                probe(argv[i], pid);
                if (control) {
                        (void) kill(pid, SIGKILL);
                        (void) waitpid(pid, NULL, 0);
                }
        }
        return 0;
}
