/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the files of src/schedule share, lowest layer first: civil.c
 * (calendar arithmetic), posix-tz.c (the POSIX TZ rule at the end of a
 * TZif file), zone.c (include/ao/zone.h), cron.c and timers.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- civil.c: the proleptic Gregorian calendar, no time zone, no libc ---- */

#define CIVIL_SEC_PER_DAY 86400

/* A wall-clock reading: what an instant shows in some zone. */
struct civil {
        int64_t year;
        unsigned month; /* 1-12 */
        unsigned day;   /* 1-31 */
        unsigned hour, min, sec;
        unsigned wday; /* 0 is Sunday */
};

bool civil_is_leap(int64_t year);
/* Days from 1970-01-01 to the first day of @month (1-12) of @year. */
int64_t civil_days_from_month(int64_t year, unsigned month);
/* @secs since 1970-01-01T00:00:00 (negative before it) as a wall-clock reading. */
void civil_from_secs(int64_t secs, struct civil *ret);

/* ---- posix-tz.c: "CET-1CEST,M3.5.0,M10.5.0/3", the rule a zone follows after its last transition ---- */

enum posix_tz_date {
        POSIX_TZ_JULIAN,    /* Jn: day n of 1-365, February 29th never counted */
        POSIX_TZ_DAY,       /* n: day n of 0-365, counting February 29th */
        POSIX_TZ_MONTH_DAY, /* Mm.w.d: weekday d of week w (5: the last) of month m */
};

struct posix_tz_rule {
        enum posix_tz_date kind;
        unsigned day, week, month;
        int32_t time; /* seconds after local midnight, -167h to 167h */
};

struct posix_tz {
        int32_t std_offset; /* seconds east of UTC */
        bool has_dst;
        int32_t dst_offset;
        struct posix_tz_rule start, end; /* of daylight time, in the local time then in force */
};

/* Parse @n bytes of @s; -EINVAL when it is not a POSIX TZ string. */
int posix_tz_parse(const char *s, size_t n, struct posix_tz *ret);
/* Seconds east of UTC that @tz gives at @t (UTC seconds since the epoch). */
int32_t posix_tz_offset(const struct posix_tz *tz, int64_t t);
