/* SPDX-License-Identifier: Apache-2.0 */
/*
 * At exit, the processes hooks left behind. A hook's descendant that left
 * the hook's process group (setsid, a daemonizing double fork) escapes the
 * group kill; as child subreaper we inherit it when its parent dies. Once
 * we are gone nothing would ever stop it, so it ends with us, as it would
 * in a container whose PID 1 exits. Spawners, told to stop by then, get a
 * moment to exit on their own first.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "ao/log.h"
#include "ao/proc.h"
#include "ao/strbuf.h"

#define LEFTOVERS_MAX 256
/* Killed processes are gone within milliseconds; one stuck in the kernel (D state) is not waited for. */
#define REAP_POLL_NSEC (10 * 1000 * 1000L)
#define REAP_POLLS     100

/* Every child of this process, running or a zombie, from each thread's children file. */
static size_t list_children(pid_t *pids, size_t max)
{
        DIR *tasks = opendir("/proc/self/task");
        size_t n = 0;
        if (!tasks)
                return 0;
        for (struct dirent *de; (de = readdir(tasks)) && n < max;) {
                char path[sizeof("/proc/self/task//children") + sizeof(de->d_name)];
                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
                FILE *f = fopen(path, "re");
                int pid;
                while (f && n < max && fscanf(f, "%d", &pid) == 1)
                        pids[n++] = pid;
                if (f)
                        (void) fclose(f);
        }
        (void) closedir(tasks);
        return n;
}

/* A zombie has already exited: it is reaped, not reported. */
static bool is_zombie(pid_t pid)
{
        char path[64], buf[512];
        (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        FILE *f = fopen(path, "re");
        size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
                (void) fclose(f);
        buf[len] = '\0';
        const char *after_name = strrchr(buf, ')');
        return after_name && after_name[1] == ' ' && after_name[2] == 'Z';
}

/* Reap whatever has exited, waiting a little for the rest; true once no child is left. */
static bool reap_all(void)
{
        const struct timespec poll = {.tv_nsec = REAP_POLL_NSEC};
        for (int i = 0; i < REAP_POLLS; i++) {
                pid_t r;
                while ((r = waitpid(-1, NULL, WNOHANG)) > 0)
                        ;
                if (r < 0 && errno == ECHILD)
                        return true;
                (void) nanosleep(&poll, NULL);
        }
        return false;
}

/*
 * Give what is exiting anyway a moment: spawners leave once their socket is
 * closed. Returns when no child is left or after the polls.
 */
static void let_exit(void)
{
        const struct timespec poll = {.tv_nsec = REAP_POLL_NSEC};
        pid_t pids[1];
        for (int i = 0; i < REAP_POLLS; i++) {
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                if (list_children(pids, 1) == 0)
                        return;
                (void) nanosleep(&poll, NULL);
        }
}

size_t ao_proc_end_leftovers(void)
{
        pid_t pids[LEFTOVERS_MAX];
        struct ao_strbuf listed = {0};
        size_t total = 0, rounds = 0, n;

        let_exit();
        /* Killing one hands its own children to us: go on until none are left. */
        while ((n = list_children(pids, LEFTOVERS_MAX)) > 0 && rounds < 64) {
                for (size_t i = 0; i < n; i++) {
                        if (is_zombie(pids[i]))
                                continue;
                        (void) kill(-pids[i], SIGKILL); /* its group too, when it leads one */
                        (void) kill(pids[i], SIGKILL);
                        ao_strbuf_appendf(&listed, "%s%d", total ? ", " : "", (int) pids[i]);
                        total++;
                }
                rounds++;
                if (!reap_all())
                        break;
        }
        if (total > 0)
                ao_log(AO_LOG_WARN,
                       "proc: at exit, killed %zu process(es) that hooks left running outside their "
                       "process groups: pids %s",
                       total, ao_strbuf_str(&listed));
        ao_strbuf_done(&listed);
        return total;
}
