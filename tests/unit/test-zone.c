/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time zones from TZif files: offsets checked against glibc reading the
 * same file (fat system files, slim fixtures whose footer rule decides
 * everything after 1996, bare POSIX TZ strings), crafted broken files
 * refused with the reason, and names that could leave the zoneinfo
 * directory refused before any file is opened.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/zone.h"

#define YEAR_2026 1767225600LL /* 2026-01-01T00:00:00Z */

static const char *slim_dir(void)
{
        const char *dir = getenv("AO_ZONEINFO_SLIM");
        if (!dir)
                tap_bail("AO_ZONEINFO_SLIM is not set (meson sets it)");
        return dir;
}

static void set_tzdir(const char *dir)
{
        if (dir)
                setenv("TZDIR", dir, 1);
        else
                unsetenv("TZDIR");
}

/* glibc's offset at @t in the zone tzset() last read. */
static long glibc_offset(time_t t)
{
        struct tm tm;
        if (!localtime_r(&t, &tm))
                tap_bail("localtime_r failed");
        return tm.tm_gmtoff;
}

/*
 * Every 20011 s (so that the probes drift across every hour and minute)
 * from 1970 to 2100, against glibc given @glibc_tz as TZ (":Europe/Berlin"
 * reads that file under TZDIR, anything else is a POSIX TZ string). This
 * test is single-threaded, so switching the process's TZ is harmless here.
 */
static void check_against_glibc(const struct ao_zone *z, const char *glibc_tz, const char *what)
{
        setenv("TZ", glibc_tz, 1);
        tzset();
        unsigned probes = 0, wrong = 0;
        time_t first_wrong = 0;
        for (time_t t = 0; t < 4102444800; t += 20011, probes++)
                if (ao_zone_offset(z, t) != glibc_offset(t) && wrong++ == 0)
                        first_wrong = t;
        if (!tap_ok(wrong == 0, "%s: offsets 1970-2100 match glibc's at %u instants", what, probes))
                tap_diag("%u differ; the first at %lld: %d, glibc %ld", wrong, (long long) first_wrong,
                         ao_zone_offset(z, first_wrong), glibc_offset(first_wrong));
        unsetenv("TZ");
        tzset();
}

static void check_zone_file(const char *dir, const char *name, const char *what)
{
        set_tzdir(dir);
        struct ao_zone *z = NULL;
        struct ao_error err = {0};
        if (!tap_ok(ao_zone_load(name, &z, &err) == 0, "%s: %s loads", what, name)) {
                tap_diag("%s", err.msg);
                return;
        }
        tap_is_str(ao_zone_name(z), name, "%s: the zone keeps its name", what);
        char tz[300];
        snprintf(tz, sizeof(tz), ":%s", name);
        check_against_glibc(z, tz, what);
        ao_zone_free(z);
}

static void test_files(void)
{
        static const char *const zones[] = {"Europe/Berlin", "America/New_York", "Australia/Sydney",
                                            "Australia/Lord_Howe"};
        for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
                check_zone_file(NULL, zones[i], "system (fat) file");
                check_zone_file(slim_dir(), zones[i], "slim file");
        }
        check_zone_file(NULL, "Asia/Kolkata", "system (fat) file");
        check_zone_file(NULL, "Etc/GMT+5", "system (fat) file");
        set_tzdir(NULL);
}

/* The instants either side of a change, exactly. */
static void test_exact_changes(void)
{
        struct ao_zone *z = NULL;
        set_tzdir(NULL);
        if (ao_zone_load("Europe/Berlin", &z, NULL) < 0)
                tap_bail("Europe/Berlin does not load: is tzdata installed?");
        /* 2026-03-29 01:00 UTC: 02:00 CET becomes 03:00 CEST; 2026-10-25 01:00 UTC: back. */
        tap_is_int(ao_zone_offset(z, 1774746000 - 1), 3600, "Berlin: CET until 2026-03-29T01:00Z");
        tap_is_int(ao_zone_offset(z, 1774746000), 7200, "Berlin: CEST from 2026-03-29T01:00Z");
        tap_is_int(ao_zone_offset(z, 1792890000 - 1), 7200, "Berlin: CEST until 2026-10-25T01:00Z");
        tap_is_int(ao_zone_offset(z, 1792890000), 3600, "Berlin: CET from 2026-10-25T01:00Z");
        /* 2041-03-31 01:00 UTC: past the last transition the fat file lists (2037), from the footer. */
        tap_is_int(ao_zone_offset(z, 2248304400 - 1), 3600, "Berlin: CET until 2041-03-31T01:00Z (footer)");
        tap_is_int(ao_zone_offset(z, 2248304400), 7200, "Berlin: CEST from 2041-03-31T01:00Z (footer)");
        ao_zone_free(z);

        /* Lord Howe moves by half an hour: +10:30 to +11 at 02:00 local, 2026-10-04 (15:30 UTC the 3rd). */
        if (ao_zone_load("Australia/Lord_Howe", &z, NULL) < 0)
                tap_bail("Australia/Lord_Howe does not load");
        tap_is_int(ao_zone_offset(z, 1791041400 - 1), 37800, "Lord Howe: +10:30 until 2026-10-03T15:30Z");
        tap_is_int(ao_zone_offset(z, 1791041400), 39600, "Lord Howe: +11 from 2026-10-03T15:30Z");
        ao_zone_free(z);
}

/* ---- crafted files -------------------------------------------------------- */

struct tzif {
        char version; /* 0, '2', '3' or '4' */
        size_t n_times;
        const int64_t *times;
        const uint8_t *type_of;
        size_t n_types;
        const int32_t *offsets;
        uint8_t abbr_index;   /* of every type; the abbreviations are "X\0" */
        const char *footer;   /* NULL: none at all (not even the newlines) */
        const char *trailing; /* appended after everything */
        uint32_t time_count;  /* 0: n_times; else what the header claims */
};

struct buf {
        uint8_t data[4096];
        size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
        if (n == 0)
                return;
        if (b->n + n > sizeof(b->data))
                tap_bail("crafted TZif too large");
        memcpy(b->data + b->n, p, n);
        b->n += n;
}

static void put_be(struct buf *b, uint64_t v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                uint8_t byte = (uint8_t) (v >> (8 * (n - 1 - i)));
                put(b, &byte, 1);
        }
}

static void put_header(struct buf *b, char version, uint32_t times, uint32_t types, uint32_t chars)
{
        put(b, "TZif", 4);
        put(b, &version, 1);
        static const uint8_t zeros[15] = {0};
        put(b, zeros, sizeof(zeros));
        uint32_t counts[6] = {0, 0, 0, times, types, chars};
        for (size_t i = 0; i < 6; i++)
                put_be(b, counts[i], 4);
}

static void put_block(struct buf *b, const struct tzif *f, size_t time_size)
{
        for (size_t i = 0; i < f->n_times; i++)
                put_be(b, (uint64_t) f->times[i], time_size);
        put(b, f->type_of, f->n_times);
        for (size_t i = 0; i < f->n_types; i++) {
                put_be(b, (uint32_t) f->offsets[i], 4);
                uint8_t isdst_abbr[2] = {0, f->abbr_index};
                put(b, isdst_abbr, 2);
        }
        put(b, "X", 2);
}

static void build(struct buf *b, const struct tzif *f)
{
        b->n = 0;
        uint32_t claimed = f->time_count ? f->time_count : (uint32_t) f->n_times;
        if (f->version == 0) {
                put_header(b, 0, claimed, (uint32_t) f->n_types, 2);
                put_block(b, f, 4);
        } else {
                /* A minimal version 1 part, as zic -b slim writes it. */
                put_header(b, f->version, 0, 1, 1);
                static const uint8_t v1_block[7] = {0};
                put(b, v1_block, sizeof(v1_block));
                put_header(b, f->version, claimed, (uint32_t) f->n_types, 2);
                put_block(b, f, 8);
        }
        if (f->footer) {
                put(b, "\n", 1);
                put(b, f->footer, strlen(f->footer));
                put(b, "\n", 1);
        }
        if (f->trailing)
                put(b, f->trailing, strlen(f->trailing));
}

static struct ao_zone *parse_ok(const struct tzif *f, const char *what)
{
        struct buf b;
        build(&b, f);
        struct ao_zone *z = NULL;
        struct ao_error err = {0};
        if (!tap_ok(ao_zone_parse("test/Zone", b.data, b.n, &z, &err) == 0, "%s: parses", what))
                tap_diag("%s", err.msg);
        return z;
}

static void parse_bad(const struct tzif *f, const char *message)
{
        struct buf b;
        build(&b, f);
        struct ao_zone *z = NULL;
        struct ao_error err = {0};
        tap_is_int(ao_zone_parse("test/Zone", b.data, b.n, &z, &err), -EINVAL, "refused: %s", message);
        tap_is_str(err.msg, message, "message");
        tap_ok(z == NULL, "nothing returned");
}

static const int64_t two_times[] = {1000000000, 2000000000};
static const uint8_t two_types[] = {1, 0};
static const int32_t std_dst[] = {3600, 7200};

static void test_crafted(void)
{
        /* Version 1: 32-bit times, no footer; type 0 before the first transition. */
        struct tzif v1 = {.version = 0,
                          .n_times = 2,
                          .times = two_times,
                          .type_of = two_types,
                          .n_types = 2,
                          .offsets = std_dst};
        struct ao_zone *z = parse_ok(&v1, "version 1 file");
        if (z) {
                tap_is_int(ao_zone_offset(z, 999999999), 3600, "v1: type 0 before the first transition");
                tap_is_int(ao_zone_offset(z, 1000000000), 7200, "v1: the first transition's type");
                tap_is_int(ao_zone_offset(z, 1999999999), 7200, "v1: until the second");
                tap_is_int(ao_zone_offset(z, 4000000000), 3600,
                           "v1: the last type after the last transition");
                ao_zone_free(z);
        }

        /* Version 2 with no transitions: the footer decides everything. */
        static const int32_t lhst[] = {37800};
        struct tzif footer_only = {
            .version = '2', .n_types = 1, .offsets = lhst, .footer = "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"};
        z = parse_ok(&footer_only, "footer only");
        if (z) {
                check_against_glibc(z, "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "footer only");
                ao_zone_free(z);
        }
        struct tzif fixed = {.version = '2', .n_types = 1, .offsets = lhst, .footer = ""};
        z = parse_ok(&fixed, "empty footer");
        if (z) {
                tap_is_int(ao_zone_offset(z, YEAR_2026), 37800, "empty footer: type 0 throughout");
                ao_zone_free(z);
        }
        struct tzif no_footer = {.version = '3',
                                 .n_times = 2,
                                 .times = two_times,
                                 .type_of = two_types,
                                 .n_types = 2,
                                 .offsets = std_dst};
        z = parse_ok(&no_footer, "version 3, no footer at all");
        if (z) {
                tap_is_int(ao_zone_offset(z, 4000000000), 3600, "no footer: the last type");
                ao_zone_free(z);
        }

        struct tzif bad = v1;
        bad.version = '5';
        parse_bad(&bad, "time zone 'test/Zone': TZif version 0x35 is unknown");
        bad = v1;
        bad.time_count = 3;
        parse_bad(&bad, "time zone 'test/Zone': the TZif file is cut short");
        bad = v1;
        bad.times = (const int64_t[]){2000000000, 1000000000};
        parse_bad(&bad, "time zone 'test/Zone': transition 1 is not after the one before it");
        bad = v1;
        bad.type_of = (const uint8_t[]){0, 2};
        parse_bad(&bad, "time zone 'test/Zone': transition 1 names local time type 2 of 2");
        bad = v1;
        bad.offsets = (const int32_t[]){3600, 93600};
        parse_bad(&bad,
                  "time zone 'test/Zone': local time type 1 has offset 93600 s, 26 hours or more from UTC");
        bad = v1;
        bad.offsets = (const int32_t[]){-90000, 0};
        parse_bad(&bad,
                  "time zone 'test/Zone': local time type 0 has offset -90000 s, 26 hours or more from UTC");
        bad = v1;
        bad.abbr_index = 2;
        parse_bad(&bad, "time zone 'test/Zone': local time type 0 names abbreviation 2 of 2");
        bad = v1;
        bad.n_types = 0;
        parse_bad(&bad, "time zone 'test/Zone': 0 local time types (want 1-256)");
        bad = footer_only;
        bad.footer = "CET-1CEST,M3.5.0";
        parse_bad(&bad, "time zone 'test/Zone': footer 'CET-1CEST,M3.5.0' is not a POSIX TZ rule");
        bad = footer_only;
        bad.trailing = "x";
        parse_bad(&bad, "time zone 'test/Zone': unexpected bytes after the TZif data");
        bad = footer_only;
        bad.footer = NULL;
        bad.trailing = "\nCET-1";
        parse_bad(&bad, "time zone 'test/Zone': unexpected bytes after the TZif data");

        struct ao_error err = {0};
        tap_is_int(ao_zone_parse("test/Zone", "TZif", 4, &z, &err), -EINVAL, "a bare magic is refused");
        tap_is_str(err.msg, "time zone 'test/Zone': not a TZif file", "message");
        tap_is_int(ao_zone_parse("test/Zone", "# tzdb timezone descriptions\n", 29, &z, &err), -EINVAL,
                   "text is refused");
        tap_ok(ao_zone_free(NULL) == NULL, "ao_zone_free(NULL)");
}

/* POSIX TZ footers, each against glibc given the same string as TZ. */
static void test_footer_rules(void)
{
        static const char *const rules[] = {
            "CET-1CEST,M3.5.0,M10.5.0/3",
            "AEST-10AEDT,M10.1.0,M4.1.0/3",     /* southern: daylight time spans the new year */
            "IST-1GMT0,M10.5.0,M3.5.0/1",       /* Europe/Dublin: "daylight" time is the smaller offset */
            "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1", /* negative rule times */
            "AAA3BBB,J60/1:30,J300/0",          /* Julian days, February 29th never counted */
            "AAA3BBB,59/2,299/2",               /* zero-based days, February 29th counted */
            "<+0545>-5:45",                     /* fixed offset with minutes */
            "<+13>-13<+14>,M9.5.0/3,M4.1.0/4",
            "XXX-2YYY-3:30:15,M2.5.6/167,M11.1.0/-167",
        };
        static const int32_t type0[] = {0};
        for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
                struct tzif f = {.version = '2', .n_types = 1, .offsets = type0, .footer = rules[i]};
                struct ao_zone *z = parse_ok(&f, rules[i]);
                if (z) {
                        check_against_glibc(z, rules[i], rules[i]);
                        ao_zone_free(z);
                }
        }
        /*
         * Daylight time without rules gets tzcode's default, M3.2.0,M11.1.0, as in Go (glibc would
         * read America/New_York's history from posixrules instead, so it is given the rules).
         */
        struct tzif us = {.version = '2', .n_types = 1, .offsets = type0, .footer = "EST5EDT"};
        struct ao_zone *us_zone = parse_ok(&us, "EST5EDT");
        if (us_zone) {
                check_against_glibc(us_zone, "EST5EDT,M3.2.0,M11.1.0", "EST5EDT");
                ao_zone_free(us_zone);
        }
        static const char *const bad_rules[] = {
            "CET",
            "AB-1",
            "<CET-1",
            "CET-1CEST,M3.5.0",
            "CET-1CEST,M13.5.0,M10.5.0",
            "CET-1CEST,M3.6.0,M10.5.0",
            "CET-1CEST,M3.5.7,M10.5.0",
            "CET-1CEST,J0,J300",
            "CET-1CEST,366,300",
            "CET-1CEST,M3.5.0/169,M10.5.0",
            "CET-1:60",
            "CET-1CEST,M3.5.0,M10.5.0,",
            "CET-1CEST;M3.5.0",
            "CET-1CEST-2x,M3.5.0,M10.5.0",
            "XXX-25", /* POSIX offsets stop at 24 hours (Go's at 168) */
        };
        for (size_t i = 0; i < sizeof(bad_rules) / sizeof(bad_rules[0]); i++) {
                struct tzif f = {.version = '2', .n_types = 1, .offsets = type0, .footer = bad_rules[i]};
                struct buf b;
                build(&b, &f);
                struct ao_zone *z = NULL;
                tap_is_int(ao_zone_parse("test/Zone", b.data, b.n, &z, NULL), -EINVAL, "footer '%s' refused",
                           bad_rules[i]);
        }
}

/* ---- names ----------------------------------------------------------------- */

static void load_bad(const char *name, int code, const char *message)
{
        struct ao_zone *z = NULL;
        struct ao_error err = {0};
        tap_is_int(ao_zone_load(name, &z, &err), code, "'%s' refused", name);
        tap_is_str(err.msg, message, "'%s': message", name);
        tap_ok(z == NULL, "'%s': nothing returned", name);
}

static void test_names(void)
{
        set_tzdir(NULL);
        load_bad("../../etc/passwd", -EINVAL,
                 "time zone '../../etc/passwd' is not a zone name (zones are named like Europe/Berlin)");
        load_bad("/etc/passwd", -EINVAL,
                 "time zone '/etc/passwd' is not a zone name (zones are named like Europe/Berlin)");
        load_bad(
            "Europe/../../../etc/passwd", -EINVAL,
            "time zone 'Europe/../../../etc/passwd' is not a zone name (zones are named like Europe/Berlin)");
        load_bad("Europe/Ber\\lin", -EINVAL,
                 "time zone 'Europe/Ber\\lin' is not a zone name (zones are named like Europe/Berlin)");
        load_bad("", -EINVAL, "time zone '' is not a zone name (zones are named like Europe/Berlin)");
        load_bad("Mars/Olympus_Mons", -ENOENT,
                 "time zone 'Mars/Olympus_Mons': no such zone in /usr/share/zoneinfo");
        load_bad("Europe", -EINVAL, "time zone 'Europe': /usr/share/zoneinfo/Europe is not a zone file");
        load_bad("zone.tab", -EINVAL, "time zone 'zone.tab': not a TZif file");

        set_tzdir("/nonexistent/zoneinfo");
        load_bad(
            "Europe/Berlin", -ENOENT,
            "time zone 'Europe/Berlin': no zoneinfo directory /nonexistent/zoneinfo (is the tzdata package "
            "installed?)");

        /* A FIFO in the directory is refused, not waited on. */
        char dir[] = "/tmp/test-zone-XXXXXX";
        if (!mkdtemp(dir))
                tap_bail("mkdtemp failed");
        char fifo[64];
        snprintf(fifo, sizeof(fifo), "%s/Pipe", dir);
        if (mkfifo(fifo, 0600) < 0)
                tap_bail("mkfifo failed");
        set_tzdir(dir);
        char message[200];
        snprintf(message, sizeof(message), "time zone 'Pipe': %s/Pipe is not a zone file", dir);
        load_bad("Pipe", -EINVAL, message);
        unlink(fifo);
        rmdir(dir);

        /* An empty TZDIR is unset. */
        set_tzdir("");
        struct ao_zone *z = NULL;
        tap_is_int(ao_zone_load("Europe/Berlin", &z, NULL), 0, "TZDIR='' reads the default directory");
        ao_zone_free(z);
        set_tzdir(NULL);
}

int main(void)
{
        test_exact_changes();
        test_files();
        test_crafted();
        test_footer_rules();
        test_names();
        return tap_done();
}
