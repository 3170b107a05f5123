/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the benchmarks share: CPU time of this and other processes, sorting for medians and
 * percentiles, the reactor backend from $AO_REACTOR, and where the spawner binary is.
 */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/macro.h"
#include "ao/reactor.h"

/* user + system CPU of getrusage(@who), in µs. */
static inline uint64_t bench_rusage_usec(int who)
{
        struct rusage ru;
        getrusage(who, &ru);
        return (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * AO_USEC_PER_SEC +
               (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* utime + stime of another process (from /proc/<pid>/stat), in µs; 0 when it cannot be read. */
static inline uint64_t bench_proc_cpu_usec(pid_t pid)
{
        if (pid <= 0)
                return 0;
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        FILE *f = fopen(path, "r");
        if (!f)
                return 0;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        unsigned long long utime = 0, stime = 0;
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
                return 0;
        return (utime + stime) * AO_USEC_PER_SEC / (uint64_t) sysconf(_SC_CLK_TCK);
}

/* qsort() comparison of doubles, for medians. */
static inline int bench_compare_doubles(const void *a, const void *b)
{
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* The @p-th percentile (0-100) of @n sorted values: nearest rank. */
static inline double bench_percentile(const double *sorted, size_t n, double p)
{
        if (n == 0)
                return 0;
        size_t rank = (size_t) (p / 100.0 * (double) n + 0.999999);
        return sorted[rank == 0 ? 0 : AO_MIN(rank, n) - 1];
}

/* $AO_REACTOR (epoll, io_uring or auto, as the tests use it); epoll, the operator's default, when unset. Exits 2 on a bad value. */
static inline enum ao_reactor_backend bench_backend(void)
{
        const char *s = getenv("AO_REACTOR");
        if (!s || !*s)
                return AO_REACTOR_BACKEND_EPOLL;
        enum ao_reactor_backend b = ao_reactor_backend_from_string(s);
        if (b < 0) {
                fprintf(stderr, "AO_REACTOR='%s': expected auto, epoll or io_uring\n", s);
                exit(2);
        }
        return b;
}

/* @given, else $AO_SPAWNER, else addon-operator-spawner next to this binary or one directory up; NULL: none. */
static inline char *bench_find_spawner(const char *given)
{
        if (given)
                return ao_xstrdup(given);
        const char *env = getenv("AO_SPAWNER");
        if (env)
                return ao_xstrdup(env);
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return NULL;
        self[n] = '\0';
        for (int up = 0; up < 2; up++) {
                char *slash = strrchr(self, '/');
                if (!slash)
                        return NULL;
                *slash = '\0';
                char *path = ao_xasprintf("%s/addon-operator-spawner", self);
                if (access(path, X_OK) == 0)
                        return path;
                free(path);
        }
        return NULL;
}
