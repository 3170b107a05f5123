/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/util: strbuf escaping, errors, the hash map, the token bucket and the logger's formats and non-blocking output. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/error.h"
#include "ao/hashmap.h"
#include "ao/throttle.h"
#include "ao/log.h"
#include "ao/strbuf.h"

static void test_strbuf(void)
{
        struct ao_strbuf sb = {0};
        tap_is_str(ao_strbuf_str(&sb), "", "strbuf: empty buffer reads as \"\"");
        ao_strbuf_appendf(&sb, "%s-%d", "abc", 42);
        ao_strbuf_append_c(&sb, '!');
        tap_is_str(ao_strbuf_str(&sb), "abc-42!", "strbuf: appendf and append_c");

        /* Long formatted output crosses the growth path of vappendf. */
        ao_strbuf_reset(&sb);
        ao_strbuf_appendf(&sb, "%0500d", 7);
        tap_is_int(sb.len, 500, "strbuf: 500-char formatted append");

        ao_strbuf_reset(&sb);
        ao_strbuf_append_json_string(&sb, "a\"b\\c\n\t\x01\x7f");
        tap_is_str(ao_strbuf_str(&sb), "\"a\\\"b\\\\c\\n\\t\\u0001\\u007f\"",
                   "json: quotes, backslash, controls");

        ao_strbuf_reset(&sb);
        ao_strbuf_append_json_string(&sb, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82");
        tap_is_str(ao_strbuf_str(&sb), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\"",
                   "json: valid UTF-8 kept");

        ao_strbuf_reset(&sb);
        ao_strbuf_append_json_string(&sb, "x\xff\xc0\xafy\xed\xa0\x80z\xf4\x90\x80\x80");
        tap_is_str(ao_strbuf_str(&sb),
                   "\"x\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"
                   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
                   "json: invalid bytes, overlong, surrogate and >U+10FFFF become U+FFFD");

        ao_strbuf_reset(&sb);
        ao_strbuf_append_quoted(&sb, "say \"hi\"\x1b[31m");
        tap_is_str(ao_strbuf_str(&sb), "\"say \\\"hi\\\"\\x1b[31m\"", "quoted: escapes and terminal control");

        ao_strbuf_reset(&sb);
        ao_strbuf_append_sanitized(&sb, "plain \"text\"\r\n");
        tap_is_str(ao_strbuf_str(&sb), "plain \"text\"\\r\\n", "sanitized: quotes kept, controls escaped");

        char *owned = ao_strbuf_steal(&sb);
        tap_is_str(owned, "plain \"text\"\\r\\n", "strbuf: steal hands over the string");
        tap_ok(sb.buf == NULL && sb.len == 0, "strbuf: empty after steal");
        free(owned);
        ao_strbuf_done(&sb);

        tap_is_int(ao_utf8_sequence_length((const unsigned char *) "\xe2\x82", 2), 0,
                   "utf8: truncated sequence");
        tap_is_int(ao_utf8_sequence_length((const unsigned char *) "\xe2\x82\xac", 3), 3, "utf8: euro sign");
}

static void test_error(void)
{
        struct ao_error err = {0};
        tap_is_int(ao_error_set(&err, -ENOENT, "file '%s' not found", "values.yaml"), -ENOENT,
                   "error: set returns its code");
        tap_is_str(err.msg, "file 'values.yaml' not found", "error: message");
        tap_is_int(ao_error_prefix(&err, "module '%s'", "foo"), -ENOENT, "error: prefix keeps the code");
        tap_is_str(err.msg, "module 'foo': file 'values.yaml' not found", "error: prefixed message");
        tap_is_int(ao_error_set(&err, 5, "x"), -EINVAL, "error: non-negative code becomes -EINVAL");
        tap_is_int(ao_error_set(NULL, -EIO, "ignored"), -EIO, "error: NULL reterr still returns the code");

        char big[2 * AO_ERROR_MSG_MAX];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        ao_error_set(&err, -E2BIG, "%s", big);
        tap_is_int(strlen(err.msg), AO_ERROR_MSG_MAX - 1, "error: long message truncated to fit");
        ao_error_prefix(&err, "%s", big);
        tap_is_int(strlen(err.msg), AO_ERROR_MSG_MAX - 1, "error: long prefix truncated to fit");
        ao_error_clear(&err);
        tap_ok(err.code == 0 && err.msg[0] == '\0', "error: clear");
}

/* Read everything currently in the pipe. */
static char *drain(int fd)
{
        static char buf[1 << 20];
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
                if (n <= 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        return buf;
}

static int log_pipe[2];

static void setup_logger(enum ao_log_format format, enum ao_log_level level, size_t backlog_max)
{
        struct ao_log_options o = {
            .format = format, .level = level, .no_time = true, .fd = log_pipe[1], .backlog_max = backlog_max};
        if (ao_log_setup(&o) < 0)
                tap_bail("ao_log_setup failed");
}

static void test_log_formats(void)
{
        setup_logger(AO_LOG_FORMAT_JSON, AO_LOG_INFO, 0);
        ao_log(AO_LOG_DEBUG, "hidden");
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"path", "/tmp/a b"}), "loaded %d hooks", 3);
        tap_is_str(drain(log_pipe[0]),
                   "{\"level\":\"info\",\"msg\":\"loaded 3 hooks\",\"path\":\"/tmp/a b\"}\n",
                   "json: level, msg, field; debug filtered out");

        struct ao_log_context ctx = {.module = "simple-module", .hook = "hooks/a.sh", .binding = "schedule"};
        const struct ao_log_context *prev = ao_log_context_swap(&ctx);
        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"binding", "override"}), "bad \"thing\"\n");
        tap_is_str(drain(log_pipe[0]),
                   "{\"level\":\"warn\",\"msg\":\"bad \\\"thing\\\"\\n\",\"module\":\"simple-module\","
                   "\"hook\":\"hooks/a.sh\",\"binding\":\"override\"}\n",
                   "json: context fields, a call field overrides the context's");
        ao_log_context_swap(prev);

        setup_logger(AO_LOG_FORMAT_TEXT, AO_LOG_DEBUG, 0);
        ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"queue", "main"}, {"task", "ModuleRun x"}), "tick");
        tap_is_str(drain(log_pipe[0]), "level=debug msg=\"tick\" queue=main task=\"ModuleRun x\"\n",
                   "text: key=value, quoted only where needed");

        errno = 0;
        tap_is_int(ao_log_errno(AO_LOG_ERROR, -ENOENT, "opening '%s'", "x"), -ENOENT, "log_errno returns r");
        tap_is_str(drain(log_pipe[0]), "level=error msg=\"opening 'x': No such file or directory\"\n",
                   "text: errno message appended");

        /* color on a pipe is not a terminal: plain text. */
        setup_logger(AO_LOG_FORMAT_COLOR, AO_LOG_INFO, 0);
        ao_log(AO_LOG_INFO, "plain");
        tap_is_str(drain(log_pipe[0]), "level=info msg=\"plain\"\n", "color: degrades to text off a tty");

        setup_logger(AO_LOG_FORMAT_JSON, AO_LOG_INFO, 0);
        ao_log(AO_LOG_INFO, "bin \xff\x01");
        tap_is_str(drain(log_pipe[0]), "{\"level\":\"info\",\"msg\":\"bin \xef\xbf\xbd\\u0001\"}\n",
                   "json: binary garbage logged as valid JSON");

        struct ao_log_options with_time = {
            .format = AO_LOG_FORMAT_JSON, .level = AO_LOG_INFO, .fd = log_pipe[1]};
        ao_log_setup(&with_time);
        ao_log(AO_LOG_INFO, "t");
        const char *line = drain(log_pipe[0]);
        tap_ok(strncmp(line, "{\"level\":\"info\",\"msg\":\"t\",\"time\":\"20", 35) == 0 &&
                   strstr(line, "Z\"}\n"),
               "json: RFC 3339 UTC time last (%.60s)", line);
}

static void test_log_parsers(void)
{
        tap_is_int(ao_log_level_from_string("warning"), AO_LOG_WARN, "level: warning");
        tap_is_int(ao_log_level_from_string("TRACE"), AO_LOG_DEBUG, "level: trace maps to debug");
        tap_is_int(ao_log_level_from_string("fatal"), AO_LOG_ERROR, "level: fatal maps to error");
        tap_is_int(ao_log_level_from_string("loud"), _AO_LOG_LEVEL_INVALID, "level: unknown rejected");
        tap_is_int(ao_log_format_from_string("colour"), AO_LOG_FORMAT_COLOR, "format: colour");
        tap_is_int(ao_log_format_from_string("xml"), _AO_LOG_FORMAT_INVALID, "format: unknown rejected");
        tap_is_str(ao_log_level_to_string(AO_LOG_WARN), "warn", "level: name");
}

static int notified;
static void on_backlog(void *userdata)
{
        notified++;
}

static void test_log_never_blocks(void)
{
        /* A full pipe nobody reads: logging must keep returning, backlog then drop. */
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                tap_bail("pipe2");
        (void) fcntl(p[1], F_SETPIPE_SZ, 4096);
        struct ao_log_options o = {.format = AO_LOG_FORMAT_TEXT,
                                   .level = AO_LOG_INFO,
                                   .no_time = true,
                                   .fd = p[1],
                                   .backlog_max = 8192};
        ao_log_setup(&o);
        ao_log_set_backlog_notify(on_backlog, NULL);

        enum {
                LINES = 2000
        };
        for (int i = 0; i < LINES; i++)
                ao_log(AO_LOG_INFO, "line %04d", i); /* would block forever on a blocking fd */
        tap_ok(true, "backlog: 2000 lines into a full 4 KiB pipe returned");
        tap_is_int(notified, 1, "backlog: notify fired once, when the backlog became non-empty");
        tap_ok(ao_log_backlog_bytes() > 0, "backlog: bytes pending");
        uint64_t dropped = ao_log_dropped_lines();
        tap_ok(dropped > 0 && dropped < LINES, "backlog: some lines dropped once the cap was hit (%llu)",
               (unsigned long long) dropped);

        /* Reader catches up: read everything, flushing as we go. */
        (void) fcntl(p[0], F_SETFL, O_NONBLOCK);
        static char all[1 << 20];
        size_t len = 0;
        for (int rounds = 0; rounds < 1000; rounds++) {
                ssize_t n = read(p[0], all + len, sizeof(all) - 1 - len);
                if (n > 0)
                        len += (size_t) n;
                if (ao_log_flush() == 0 && n <= 0)
                        break;
        }
        all[len] = '\0';
        tap_is_int(ao_log_backlog_bytes(), 0, "backlog: drained");

        /* Lines that made it are in order and whole; then the drop report. */
        int expected = 0, whole = 1;
        for (char *line = all; *line;) {
                char *nl = strchr(line, '\n');
                if (!nl) {
                        whole = 0;
                        break;
                }
                int n;
                if (sscanf(line, "level=info msg=\"line %d\"", &n) == 1) {
                        if (n != expected)
                                whole = 0;
                        expected++;
                }
                line = nl + 1;
        }
        tap_ok(whole, "backlog: kept lines are complete and in order");
        tap_is_int(expected + (int) dropped, LINES, "backlog: kept + dropped == logged");
        char report[128];
        snprintf(report, sizeof(report),
                 "level=warn msg=\"%llu log lines were dropped because the log output was not writable\"\n",
                 (unsigned long long) dropped);
        tap_ok(len >= strlen(report) && strcmp(all + len - strlen(report), report) == 0,
               "backlog: drop count reported after the drain");

        ao_log_set_backlog_notify(NULL, NULL);
        close(p[0]);
        close(p[1]);
}

/* The map against a plain array model under random puts and removes (backward shifts included). */
static void test_hashmap(void)
{
        enum {
                N = 2000
        };
        static bool present[N];
        struct ao_hashmap *m = ao_hashmap_new(free);
        unsigned seed = 42, mismatches = 0;
        size_t model = 0;
        for (int round = 0; round < 50000; round++) {
                seed = seed * 1103515245u + 12345u;
                int k = (int) ((seed >> 8) % N);
                char key[16];
                snprintf(key, sizeof(key), "ns/obj-%d", k);
                if ((seed >> 4) % 3) {
                        int *v = malloc(sizeof(*v));
                        *v = k;
                        bool added = ao_hashmap_put(m, key, v);
                        mismatches += added == present[k];
                        model += !present[k];
                        present[k] = true;
                } else {
                        mismatches += ao_hashmap_remove(m, key) != present[k];
                        model -= present[k];
                        present[k] = false;
                }
        }
        size_t seen = 0, iter = 0;
        const char *key;
        void *value;
        while (ao_hashmap_next(m, &iter, &key, &value)) {
                int k = *(int *) value;
                char want[16];
                snprintf(want, sizeof(want), "ns/obj-%d", k);
                mismatches += !present[k] || strcmp(key, want) != 0;
                seen++;
        }
        for (int k = 0; k < N; k++) {
                char key2[16];
                snprintf(key2, sizeof(key2), "ns/obj-%d", k);
                int *v = ao_hashmap_get(m, key2);
                mismatches += present[k] ? (!v || *v != k) : v != NULL;
        }
        tap_is_int((long) mismatches, 0, "hashmap agrees with the model after 50000 random operations");
        tap_is_int((long) ao_hashmap_size(m), (long) model, "hashmap size");
        tap_is_int((long) seen, (long) model, "hashmap iteration visits every entry once");
        int *taken = ao_hashmap_take(m, "ns/obj-missing");
        tap_ok(taken == NULL, "take of a missing key gives NULL");
        ao_hashmap_free(m);
}

/* 2 per second, burst 3: three at once, then one every 500 ms. */
static void test_throttle(void)
{
        struct ao_throttle t = {.period_usec = 500000, .burst = 3};
        uint64_t now = 1000000000;
        tap_is_int((long) ao_throttle_take(&t, now), 0, "bucket starts full (1)");
        tap_is_int((long) ao_throttle_take(&t, now), 0, "bucket starts full (2)");
        tap_is_int((long) ao_throttle_take(&t, now), 0, "bucket starts full (3)");
        tap_is_int((long) ao_throttle_take(&t, now), 500000, "fourth waits one period");
        tap_is_int((long) ao_throttle_take(&t, now + 500000), 0, "token after one period");
        tap_is_int((long) ao_throttle_take(NULL, now), 0, "no bucket, no wait");
}

int main(void)
{
        test_strbuf();
        test_error();
        test_hashmap();
        test_throttle();
        if (pipe2(log_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                tap_bail("pipe2");
        test_log_formats();
        test_log_parsers();
        test_log_never_blocks();
        ao_log_shutdown(0);
        close(log_pipe[0]);
        close(log_pipe[1]);
        return tap_done();
}
