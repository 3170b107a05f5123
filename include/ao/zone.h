/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * IANA time zones, read from the system's tzdata (TZif files, RFC 8536)
 * once, then consulted without I/O: the offset from UTC a zone has at an
 * instant. Each zone is its own object, so schedules in different zones
 * need no process-wide TZ (glibc's localtime_r() has one, which tzset()
 * would have to switch around every computation, under every thread's feet).
 *
 * Non-logging module; thread-safe (a loaded zone is immutable).
 */

#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct ao_zone;

/* Where zones are read from when $TZDIR is unset or empty (Debian's tzdata package). */
#define AO_ZONE_DIR_DEFAULT "/usr/share/zoneinfo"
/* The largest TZif file read; tzdata's largest is a few KiB. */
#define AO_ZONE_FILE_MAX (256 * 1024)
#define AO_ZONE_NAME_MAX 255

/**
 * Load the zone @name ("Europe/Berlin") from $TZDIR, or AO_ZONE_DIR_DEFAULT.
 * A name that could leave that directory (absolute, with "..") or has a
 * character no zone name has is refused without touching the disk. Errors:
 * -EINVAL (not a zone name; not a TZif file), -ENOENT (no such zone, or no
 * zoneinfo directory), another -errno when reading fails; the message
 * starts with "time zone '@name': ".
 */
int ao_zone_load(const char *name, struct ao_zone **ret, struct ao_error *reterr);

/**
 * Parse the TZif file @data (@size bytes) as the zone @name (for messages
 * and ao_zone_name()). Errors: -EINVAL with "time zone '@name': ..." naming
 * what is wrong.
 */
int ao_zone_parse(const char *name, const void *data, size_t size, struct ao_zone **ret,
                  struct ao_error *reterr);

struct ao_zone *ao_zone_free(struct ao_zone *z);

const char *ao_zone_name(const struct ao_zone *z);

/**
 * Seconds east of UTC that @z has at @t (UTC seconds since the epoch):
 * from the file's transitions, and past the last one from its POSIX TZ
 * rule, as Go's time package reads the same file.
 */
int32_t ao_zone_offset(const struct ao_zone *z, int64_t t);
