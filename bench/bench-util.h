/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the benchmarks share: CPU time of this and other processes, and sorting for medians. */

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include "ao/macro.h"

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
