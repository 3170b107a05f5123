/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Cron expressions as hook `schedule` bindings write them: five fields, or
 * six with seconds first; `*`, `/step`, ranges, lists, month and weekday
 * names, `?`; the descriptors @yearly, @annually, @monthly, @weekly,
 * @daily, @midnight, @hourly and `@every <duration>`; an optional
 * `TZ=<zone>` or `CRON_TZ=<zone>` prefix naming the IANA zone the fields are
 * read in (UTC without one), loaded from tzdata when the expression is
 * parsed. Times given and returned are UTC microseconds since the epoch.
 *
 * Non-logging module; thread-safe (a parsed schedule is immutable).
 */

#include <stdint.h>

#include "ao/error.h"

struct ao_cron;

/**
 * Parse @expr. Errors quote the expression and name the field or the zone:
 * "cron '61 * * * *': minute: value 61 out of range 0-59",
 * "cron 'TZ=Mars/Base @daily': time zone 'Mars/Base': no such zone in /usr/share/zoneinfo".
 * Reads the zone's file (see ao_zone_load()); nothing after this does I/O.
 */
int ao_cron_parse(const char *expr, struct ao_cron **ret, struct ao_error *reterr);
struct ao_cron *ao_cron_free(struct ao_cron *c);

/**
 * The first fire time strictly after @after_usec (UTC µs since the epoch), or
 * 0 when there is none within the next 5 years (e.g. "0 0 30 2 *").
 */
uint64_t ao_cron_next(const struct ao_cron *c, uint64_t after_usec);

/** "UTC", or the zone the expression's prefix names ("Europe/Berlin"). */
const char *ao_cron_zone(const struct ao_cron *c);
/** Seconds east of UTC in the expression's zone at @usec (UTC µs since the epoch). */
int32_t ao_cron_utc_offset(const struct ao_cron *c, uint64_t usec);
