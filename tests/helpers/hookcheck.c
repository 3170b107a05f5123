/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test hook: reports what a sandboxed child sees of its environment, one
 * fact per line, so tests can assert exact output:
 *   fds 0,1,2            open file descriptors (the directory handle used to list them excluded)
 *   sigblk <hex>         blocked signals (/proc/self/status SigBlk)
 *   sigign <hex>         ignored signals (SigIgn)
 *   leader yes|no        own session and process group (setsid)
 *   nnp <0|1>            no_new_privs
 *   seccomp <mode>       0 none, 2 filter
 *   cwd <path>
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        if (!d) {
                puts("fds ?");
                return;
        }
        int self = dirfd(d);
        int fds[256], n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n < 256) {
                if (e->d_name[0] == '.')
                        continue;
                int fd = atoi(e->d_name);
                if (fd != self)
                        fds[n++] = fd;
        }
        closedir(d);
        for (int i = 1; i < n; i++)
                for (int j = i; j > 0 && fds[j] < fds[j - 1]; j--) {
                        int t = fds[j];
                        fds[j] = fds[j - 1];
                        fds[j - 1] = t;
                }
        printf("fds ");
        for (int i = 0; i < n; i++)
                printf("%s%d", i ? "," : "", fds[i]);
        printf("\n");
}

static void print_status_fields(void)
{
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
                char value[128];
                if (sscanf(line, "SigBlk: %127s", value) == 1)
                        printf("sigblk %s\n", value);
                else if (sscanf(line, "SigIgn: %127s", value) == 1)
                        printf("sigign %s\n", value);
                else if (sscanf(line, "NoNewPrivs: %127s", value) == 1)
                        printf("nnp %s\n", value);
                else if (sscanf(line, "Seccomp: %127s", value) == 1)
                        printf("seccomp %s\n", value);
        }
        if (f)
                fclose(f);
}

int main(void)
{
        print_fds();
        print_status_fields();
        printf("leader %s\n", getpgrp() == getpid() && getsid(0) == getpid() ? "yes" : "no");
        char cwd[4096];
        printf("cwd %s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
        return 0;
}
