/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TZif files (RFC 8536) from the zoneinfo directory, read into an array of
 * transitions and the POSIX TZ rule that follows them.
 *
 * Only what gives an offset is kept: transition times, the offset each one
 * switches to, and the footer rule. Leap-second records ("right/" zones)
 * are skipped, as Go skips them. Of a version 2+ file only the 64-bit part
 * is read; the 32-bit one cannot reach past 2038.
 *
 * The file comes from outside the program, so every count is checked
 * against the bytes that are there, transition times must ascend (the
 * lookup is a binary search), type indexes must exist, and offsets must be
 * the ones RFC 8536 allows (under 26 hours either way), which keeps the
 * cron arithmetic above far from overflow.
 */
#include "ao/zone.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/macro.h"
#include "internal.h"

#define TZIF_HEADER_SIZE 44
#define TZIF_TYPE_SIZE   6
#define TZIF_TYPES_MAX   256 /* a transition names its type in one byte */
#define TZIF_FOOTER_MAX  256
#define OFFSET_MIN       (-89999) /* RFC 8536: "more than -25 hours" */
#define OFFSET_MAX       93599    /* "and less than 26 hours" */

struct ao_zone {
        char *name;           /* owned */
        size_t n_transitions; /* may be 0: a fixed offset, or the rule alone */
        int64_t *times;       /* owned, n_transitions ascending UTC seconds */
        uint8_t *type_of;     /* owned, n_transitions indexes into offsets */
        int32_t *offsets;     /* owned, the file's local time types: seconds east of UTC */
        bool has_rule;        /* a footer rule governs from the last transition on */
        struct posix_tz rule;
};

/* The six counts of a TZif header, in file order. */
struct tzif_counts {
        uint64_t isut, isstd, leap, time, type, chars;
};

struct reader {
        const uint8_t *p, *end;
};

static uint64_t be(const uint8_t *p, size_t n)
{
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++)
                v = v << 8 | p[i];
        return v;
}

static bool has(const struct reader *r, uint64_t n)
{
        return n <= (uint64_t) (r->end - r->p);
}

static int read_header(const char *name, struct reader *r, unsigned *ret_version, struct tzif_counts *ret,
                       struct ao_error *reterr)
{
        if (!has(r, TZIF_HEADER_SIZE) || memcmp(r->p, "TZif", 4) != 0)
                return ao_error_set(reterr, -EINVAL, "time zone '%s': not a TZif file", name);
        uint8_t v = r->p[4];
        if (v != 0 && (v < '2' || v > '4'))
                return ao_error_set(reterr, -EINVAL, "time zone '%s': TZif version 0x%02x is unknown", name,
                                    v);
        *ret_version = v == 0 ? 1 : (unsigned) (v - '0');
        const uint8_t *c = r->p + 20;
        *ret = (struct tzif_counts){be(c, 4),      be(c + 4, 4),  be(c + 8, 4),
                                    be(c + 12, 4), be(c + 16, 4), be(c + 20, 4)};
        r->p += TZIF_HEADER_SIZE;
        if (ret->type == 0 || ret->type > TZIF_TYPES_MAX)
                return ao_error_set(reterr, -EINVAL,
                                    "time zone '%s': %" PRIu64 " local time types (want 1-%d)", name,
                                    ret->type, TZIF_TYPES_MAX);
        return 0;
}

/* Bytes of the data block that follows a header; @time_size is 4 (version 1 part) or 8. */
static uint64_t block_size(const struct tzif_counts *n, unsigned time_size)
{
        return n->time * time_size + n->time + n->type * TZIF_TYPE_SIZE + n->chars +
               n->leap * (time_size + 4) + n->isstd + n->isut;
}

static int read_block(const char *name, struct reader *r, const struct tzif_counts *n, unsigned time_size,
                      struct ao_zone *z, struct ao_error *reterr)
{
        if (!has(r, block_size(n, time_size)))
                return ao_error_set(reterr, -EINVAL, "time zone '%s': the TZif file is cut short", name);
        const uint8_t *times = r->p, *indexes = times + n->time * time_size;
        const uint8_t *types = indexes + n->time;

        z->offsets = ao_xcalloc(n->type, sizeof(*z->offsets));
        for (size_t i = 0; i < n->type; i++) {
                const uint8_t *t = types + i * TZIF_TYPE_SIZE;
                int32_t off = (int32_t) (uint32_t) be(t, 4);
                if (off < OFFSET_MIN || off > OFFSET_MAX)
                        return ao_error_set(reterr, -EINVAL,
                                            "time zone '%s': local time type %zu has offset %" PRId32
                                            " s, 26 hours or more from UTC",
                                            name, i, off);
                if (t[5] >= n->chars)
                        return ao_error_set(
                            reterr, -EINVAL,
                            "time zone '%s': local time type %zu names abbreviation %u of %" PRIu64, name, i,
                            t[5], n->chars);
                z->offsets[i] = off;
        }

        z->n_transitions = n->time;
        z->times = ao_xcalloc(AO_MAX(n->time, 1), sizeof(*z->times));
        z->type_of = ao_xcalloc(AO_MAX(n->time, 1), sizeof(*z->type_of));
        for (size_t i = 0; i < n->time; i++) {
                uint64_t raw = be(times + i * time_size, time_size);
                int64_t t = time_size == 4 ? (int64_t) (int32_t) (uint32_t) raw : (int64_t) raw;
                if (i > 0 && t <= z->times[i - 1])
                        return ao_error_set(reterr, -EINVAL,
                                            "time zone '%s': transition %zu is not after the one before it",
                                            name, i);
                if (indexes[i] >= n->type)
                        return ao_error_set(
                            reterr, -EINVAL,
                            "time zone '%s': transition %zu names local time type %u of %" PRIu64, name, i,
                            indexes[i], n->type);
                z->times[i] = t;
                z->type_of[i] = indexes[i];
        }
        r->p += block_size(n, time_size);
        return 0;
}

/* "\n<POSIX TZ string>\n" after the version 2+ data; an empty string means none. */
static int read_footer(const char *name, struct reader *r, struct ao_zone *z, struct ao_error *reterr)
{
        size_t n = (size_t) (r->end - r->p);
        const char *s = (const char *) r->p;
        if (n == 0)
                return 0;
        if (n < 2 || s[0] != '\n' || s[n - 1] != '\n' || memchr(s + 1, '\n', n - 2) || memchr(s, '\0', n))
                return ao_error_set(reterr, -EINVAL, "time zone '%s': unexpected bytes after the TZif data",
                                    name);
        if (n == 2)
                return 0;
        if (n - 2 > TZIF_FOOTER_MAX || posix_tz_parse(s + 1, n - 2, &z->rule) < 0)
                return ao_error_set(reterr, -EINVAL, "time zone '%s': footer '%.*s' is not a POSIX TZ rule",
                                    name, (int) AO_MIN(n - 2, (size_t) TZIF_FOOTER_MAX), s + 1);
        z->has_rule = true;
        return 0;
}

static int parse_into(const char *name, const void *data, size_t size, struct ao_zone *z,
                      struct ao_error *reterr)
{
        struct reader r = {data, (const uint8_t *) data + size};
        struct tzif_counts n;
        unsigned version;
        int e = read_header(name, &r, &version, &n, reterr);
        if (e < 0)
                return e;
        if (version == 1)
                return read_block(name, &r, &n, 4, z, reterr);

        /* The version 1 part is only skipped: its 32-bit times say less than the 64-bit part. */
        if (!has(&r, block_size(&n, 4)))
                return ao_error_set(reterr, -EINVAL, "time zone '%s': the TZif file is cut short", name);
        r.p += block_size(&n, 4);
        unsigned version2;
        e = read_header(name, &r, &version2, &n, reterr);
        if (e < 0)
                return e;
        e = read_block(name, &r, &n, 8, z, reterr);
        if (e < 0)
                return e;
        return read_footer(name, &r, z, reterr);
}

int ao_zone_parse(const char *name, const void *data, size_t size, struct ao_zone **ret,
                  struct ao_error *reterr)
{
        struct ao_zone *z = ao_xcalloc(1, sizeof(*z));
        int e = parse_into(name, data, size, z, reterr);
        if (e < 0) {
                ao_zone_free(z);
                return e;
        }
        z->name = ao_xstrdup(name);
        *ret = z;
        return 0;
}

struct ao_zone *ao_zone_free(struct ao_zone *z)
{
        if (!z)
                return NULL;
        free(z->name);
        free(z->times);
        free(z->type_of);
        free(z->offsets);
        free(z);
        return NULL;
}

const char *ao_zone_name(const struct ao_zone *z)
{
        return z->name;
}

int32_t ao_zone_offset(const struct ao_zone *z, int64_t t)
{
        size_t n = z->n_transitions;
        if (z->has_rule && (n == 0 || t >= z->times[n - 1]))
                return posix_tz_offset(&z->rule, t);
        /* RFC 8536: type 0 applies before the first transition (and to a file that lists none). */
        if (n == 0 || t < z->times[0])
                return z->offsets[0];
        size_t lo = 0, hi = n; /* times[lo] <= t < times[hi] */
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (t < z->times[mid])
                        hi = mid;
                else
                        lo = mid;
        }
        return z->offsets[z->type_of[lo]];
}

/* ---- loading by name ------------------------------------------------------ */

/*
 * IANA names are ASCII letters, digits, '/', '_', '-', '+' and '.'. Go's
 * time.LoadLocation refuses a leading '/' and any "..", so that a name stays
 * inside the zoneinfo directory; so does this, and everything else a zone
 * name never has.
 */
static bool is_zone_name(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > AO_ZONE_NAME_MAX || name[0] == '/' || strstr(name, ".."))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      strchr("/_-+.", c)))
                        return false;
        }
        return true;
}

static const char *zone_dir(void)
{
        const char *dir = getenv("TZDIR");
        return dir && *dir ? dir : AO_ZONE_DIR_DEFAULT;
}

static int read_all(int fd, uint8_t *buf, size_t size)
{
        size_t done = 0;
        while (done < size) {
                ssize_t k = pread(fd, buf + done, size - done, (off_t) done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return ao_negative_errno();
                if (k == 0)
                        return -EIO; /* shrank under us */
                done += (size_t) k;
        }
        return 0;
}

static int open_zone_file(const char *name, const char *dir, const char *path, int *ret_fd, size_t *ret_size,
                          struct ao_error *reterr)
{
        /* O_NONBLOCK: a FIFO planted in the directory must not stall the caller. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
                if (access(dir, F_OK) < 0)
                        return ao_error_set(reterr, -ENOENT,
                                            "time zone '%s': no zoneinfo directory %s (is the tzdata package "
                                            "installed?)",
                                            name, dir);
                return ao_error_set(reterr, -ENOENT, "time zone '%s': no such zone in %s", name, dir);
        }
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "time zone '%s': %s: %m", name, path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "time zone '%s': %s: %m", name, path);
        if (!S_ISREG(st.st_mode))
                return ao_error_set(reterr, -EINVAL, "time zone '%s': %s is not a zone file", name, path);
        if (st.st_size > AO_ZONE_FILE_MAX)
                return ao_error_set(reterr, -EINVAL, "time zone '%s': %s is larger than %d bytes", name, path,
                                    AO_ZONE_FILE_MAX);
        *ret_size = (size_t) st.st_size;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int ao_zone_load(const char *name, struct ao_zone **ret, struct ao_error *reterr)
{
        if (!is_zone_name(name))
                return ao_error_set(reterr, -EINVAL,
                                    "time zone '%s' is not a zone name (zones are named like Europe/Berlin)",
                                    name);
        const char *dir = zone_dir();
        char path[PATH_MAX];
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return ao_error_set(reterr, -ENAMETOOLONG, "time zone '%s': path too long under %s", name,
                                    dir);

        _cleanup_close_ int fd = -1;
        size_t size = 0;
        int e = open_zone_file(name, dir, path, &fd, &size, reterr);
        if (e < 0)
                return e;
        _cleanup_free_ uint8_t *buf = ao_xmalloc(AO_MAX(size, 1));
        e = read_all(fd, buf, size);
        if (e < 0) {
                errno = -e;
                return ao_error_set(reterr, e, "time zone '%s': reading %s: %m", name, path);
        }
        return ao_zone_parse(name, buf, size, ret, reterr);
}
