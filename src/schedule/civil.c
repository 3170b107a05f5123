/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Calendar arithmetic on seconds since the epoch, for cron schedules and
 * time zone rules: Howard Hinnant's days_from_civil / civil_from_days on the
 * proleptic Gregorian calendar. No libc: gmtime_r() stops at the range of
 * time_t years in struct tm, and nothing here may depend on the process's TZ.
 */
#include "internal.h"

bool civil_is_leap(int64_t year)
{
        return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

/* Floor division: the eras and days before the epoch round towards minus infinity. */
static int64_t floor_div(int64_t a, int64_t b)
{
        return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int64_t civil_days_from_month(int64_t year, unsigned month)
{
        int64_t y = year - (month <= 2);
        int64_t era = floor_div(y, 400);
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

void civil_from_secs(int64_t secs, struct civil *ret)
{
        int64_t days = floor_div(secs, CIVIL_SEC_PER_DAY);
        int64_t rem = secs - days * CIVIL_SEC_PER_DAY;
        int64_t z = days + 719468;
        int64_t era = floor_div(z, 146097);
        int64_t doe = z - era * 146097;
        int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        int64_t mp = (5 * doy + 2) / 153;
        ret->day = (unsigned) (doy - (153 * mp + 2) / 5 + 1);
        ret->month = (unsigned) (mp < 10 ? mp + 3 : mp - 9);
        ret->year = yoe + era * 400 + (ret->month <= 2);
        ret->hour = (unsigned) (rem / 3600);
        ret->min = (unsigned) (rem / 60 % 60);
        ret->sec = (unsigned) (rem % 60);
        /* 1970-01-01 was a Thursday. */
        ret->wday = (unsigned) (days - floor_div(days + 4, 7) * 7 + 4);
}
