/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/util: strbuf escaping, errors, the hash map, the token bucket, the logger's formats and
 * non-blocking output, and the parser toolkit (quoting, JSON type names, the input prologue, string
 * tables, back-off, base64).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tap.h"
#include <cjson/cJSON.h>

#include "ao/backoff.h"
#include "ao/base64.h"
#include "ao/error.h"
#include "ao/hashmap.h"
#include "ao/input.h"
#include "ao/json-type.h"
#include "ao/quote.h"
#include "ao/string-table.h"
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

        /* Every context field, in its fixed place; a call field takes the place of the context's. */
        struct ao_log_context full = {.module = "web",
                                      .hook = "hooks/a.sh",
                                      .hook_type = "module",
                                      .binding = "pods",
                                      .event = "kubernetes",
                                      .watch_event = "Added",
                                      .queue = "main",
                                      .task = "ModuleHookRun",
                                      .event_type = "Kubernetes"};
        prev = ao_log_context_swap(&full);
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"path", "/p"}, {"queue", "slow"}), "all");
        tap_is_str(
            drain(log_pipe[0]),
            "{\"level\":\"info\",\"msg\":\"all\",\"module\":\"web\",\"hook\":\"hooks/a.sh\","
            "\"hook.type\":\"module\",\"binding\":\"pods\",\"event\":\"kubernetes\",\"watchEvent\":\"Added\","
            "\"queue\":\"slow\",\"task\":\"ModuleHookRun\",\"event.type\":\"Kubernetes\",\"path\":\"/p\"}\n",
            "json: every context field in its order, an overriding call field in the context's place");
        ao_log_context_swap(prev);

        /* Without a context, call fields with context keys still come first, in the same order. */
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"path", "/p"}, {"hook", "h"}, {"module", "m"}), "order");
        tap_is_str(drain(log_pipe[0]),
                   "{\"level\":\"info\",\"msg\":\"order\",\"module\":\"m\",\"hook\":\"h\",\"path\":\"/p\"}\n",
                   "json: context keys first whoever gives them");

        /* A copy keeps its own strings: the original may change or go. */
        char module[] = "web";
        struct ao_log_context_copy copy;
        ao_log_context_copy_init(&copy, &(struct ao_log_context){.module = module, .task = "ModuleRun"});
        strcpy(module, "xyz");
        prev = ao_log_context_swap(&copy.ctx);
        ao_log(AO_LOG_INFO, "copied");
        ao_log_context_swap(prev);
        ao_log_context_copy_done(&copy);
        tap_is_str(drain(log_pipe[0]),
                   "{\"level\":\"info\",\"msg\":\"copied\",\"module\":\"web\",\"task\":\"ModuleRun\"}\n",
                   "json: a copied context logs the strings as they were when copied");
        tap_ok(copy.ctx.module == NULL && copy.ctx.task == NULL, "a copy that is done holds nothing");

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

/* ---- the parser toolkit ------------------------------------------------------------------------------ */

static void test_quote_bytes(void)
{
        char buf[32];

        tap_is_str(ao_quote_bytes(buf, sizeof(buf), "a\nb\x7f\xff\xc3\xa9", 7), "a\\x0ab\\x7f\\xff\xc3\xa9",
                   "quote_bytes: controls, DEL and invalid UTF-8 as \\xNN, characters kept");
        tap_is_str(ao_quote_bytes(buf, sizeof(buf), "a\0b", 3), "a\\x00b", "quote_bytes: a NUL is a byte");
        tap_is_str(ao_quote_bytes(buf, sizeof(buf), "\xc3(", 2), "\\xc3(",
                   "quote_bytes: a truncated sequence");
        tap_is_str(ao_quote_bytes(buf, 8, "abcd", 4), "abcd", "quote_bytes: size - 4 bytes fit whole");
        tap_is_str(ao_quote_bytes(buf, 8, "abcde", 5), "abcd...", "quote_bytes: one more is cut, '...' fits");
        tap_is_str(ao_quote_bytes(buf, 9, "abcd\xe2\x82\xac", 7), "abcd...",
                   "quote_bytes: a character that does not fit whole is left out");
        tap_is_str(ao_quote_bytes(buf, 9, "abc\n", 4), "abc...", "quote_bytes: an escape is not split");
        tap_is_str(ao_quote_bytes(buf, 4, "abc", 3), "...", "quote_bytes: the smallest buffer");
        tap_is_str(ao_quote_bytes(buf, sizeof(buf), "", 0), "", "quote_bytes: empty");
}

static char *quote_text(const char *s, size_t len, size_t max)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "<");
        ao_quote_text(&sb, s, len, max);
        return ao_strbuf_steal(&sb);
}

static void test_quote_text(void)
{
        static const struct {
                const char *s;
                size_t len, max;
                const char *want, *what;
        } cases[] = {
            {"a\nb\t\x01\xff\"\\", 8, 64, "<a\\nb\\t\\x01\xef\xbf\xbd\"\\",
             "sanitized: short escapes, U+FFFD"},
            {"abcdef", 6, 4, "<abcd...", "cut at max bytes of the input"},
            {"abcd", 4, 4, "<abcd", "max bytes fit whole"},
            {"ab\xc3\xa9z", 5, 3, "<ab...", "a character across the limit is left out"},
            {"ab\xc3\xa9z", 5, 4, "<ab\xc3\xa9...", "a character ending at the limit is kept"},
            {"a\nbcdef", 7, 3, "<a\\nb...", "the limit counts input bytes, not escapes"},
            {"ab\0cd", 5, 64, "<ab", "a NUL ends the text"},
            {"abc", 3, 0, "<...", "max 0"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                char *got = quote_text(cases[i].s, cases[i].len, cases[i].max);
                tap_is_str(got, cases[i].want, "quote_text: %s", cases[i].what);
                free(got);
        }
}

static void test_quote_cut(void)
{
        struct ao_strbuf sb = {0};

        ao_strbuf_append(&sb, "preabcdef");
        ao_quote_cut(&sb, 3, 4);
        tap_is_str(ao_strbuf_str(&sb), "preabcd...", "quote_cut: cut after @from, '...' added");
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "preabcd");
        ao_quote_cut(&sb, 3, 4);
        tap_is_str(ao_strbuf_str(&sb), "preabcd", "quote_cut: not longer than max: untouched");
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "\xc3\xa9\xe2\x82\xac");
        ao_quote_cut(&sb, 0, 4);
        tap_is_str(ao_strbuf_str(&sb), "\xc3\xa9...", "quote_cut: at a character boundary");
        ao_strbuf_done(&sb);
}

static void test_json_type_name(void)
{
        static const struct {
                const char *json, *words[_AO_JSON_WORDS_MAX];
        } cases[] = {
            {"null", {"null", "null", "null"}},
            {"true", {"a boolean", "a boolean", "a boolean"}},
            {"1.5", {"a number", "a number", "a number"}},
            {"\"s\"", {"a string", "a string", "a string"}},
            {"[]", {"an array", "a list", "a sequence"}},
            {"{}", {"an object", "a mapping", "a mapping"}},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                cJSON *json = cJSON_Parse(cases[i].json);
                for (int w = 0; w < _AO_JSON_WORDS_MAX; w++)
                        tap_is_str(ao_json_type_name(json, (enum ao_json_words) w), cases[i].words[w],
                                   "json_type_name: %s in vocabulary %d", cases[i].json, w);
                cJSON_Delete(json);
        }
        cJSON invalid = {0};
        tap_is_str(ao_json_type_name(NULL, AO_JSON_WORDS_JSON), "an invalid value", "json_type_name: NULL");
        tap_is_str(ao_json_type_name(&invalid, AO_JSON_WORDS_YAML), "an invalid value",
                   "json_type_name: cJSON_Invalid");
        tap_is_str(ao_json_type_name(NULL, _AO_JSON_WORDS_MAX), "an invalid value",
                   "json_type_name: unknown vocabulary");
}

static void test_input(void)
{
        struct ao_error err = {0};
        char *copy = NULL;
        size_t start = 99;

        tap_is_int(ao_input_bom("\xEF\xBB\xBFx", 4), 3, "input: a byte order mark is 3 bytes");
        tap_is_int(ao_input_bom("\xEF\xBB", 2), 0, "input: half a mark is none");
        tap_is_int(ao_input_bom("x\xEF\xBB\xBF", 4), 0, "input: only at the start");
        tap_is_int(ao_input_check_size(10, 10, "f.json", "patch", &err), 0,
                   "input: the limit itself is fine");
        tap_is_int(ao_input_check_size(11, 10, "f.json", "patch", &err), -EFBIG, "input: over the limit");
        tap_is_str(err.msg, "f.json: patch is larger than 10 bytes", "input: message with what");
        tap_is_int(ao_input_check_size(11, 10, "f.json", NULL, &err), -EFBIG, "input: over, no what");
        tap_is_str(err.msg, "f.json: larger than 10 bytes", "input: message without what");

        tap_is_int(ao_input_copy("\xEF\xBB\xBF{}", 5, 5, "f", "input", &copy, &start, &err), 0,
                   "input: copy");
        tap_ok(copy && memcmp(copy, "\xEF\xBB\xBF{}", 6) == 0, "input: the copy is NUL-terminated");
        tap_is_int(start, 3, "input: the text starts past the mark");
        free(copy);
        copy = NULL;
        tap_is_int(ao_input_copy(NULL, 0, 5, "f", "input", &copy, &start, &err), 0, "input: empty copy");
        tap_ok(copy && copy[0] == '\0' && start == 0, "input: empty copy is \"\"");
        free(copy);
        copy = NULL;
        start = 99;
        tap_is_int(ao_input_copy("abcdef", 6, 5, "f", "input", &copy, &start, &err), -EFBIG,
                   "input: copy too big");
        tap_ok(copy == NULL && start == 99, "input: nothing written on failure");
        tap_is_str(err.msg, "f: input is larger than 5 bytes", "input: copy's message");
}

enum test_color {
        TEST_RED,
        TEST_GREEN,
        TEST_BLUE,
        _TEST_COLOR_MAX,
        _TEST_COLOR_INVALID = -EINVAL,
};
static const char *const color_names[_TEST_COLOR_MAX] = {[TEST_RED] = "red", [TEST_GREEN] = "green"};
const char *test_color_to_string(enum test_color c);
enum test_color test_color_from_string(const char *s);
AO_STRING_TABLE(test_color, enum test_color, color_names);

static void test_string_table(void)
{
        tap_is_str(test_color_to_string(TEST_GREEN), "green", "string table: to_string");
        tap_is_str(test_color_to_string(TEST_BLUE), NULL, "string table: a hole has no name");
        tap_is_str(test_color_to_string(_TEST_COLOR_MAX), NULL, "string table: past the end");
        tap_is_str(test_color_to_string(_TEST_COLOR_INVALID), NULL, "string table: negative");
        tap_is_int(test_color_from_string("red"), TEST_RED, "string table: from_string");
        tap_is_int(test_color_from_string("Red"), -EINVAL, "string table: exact case");
        tap_is_int(test_color_from_string(""), -EINVAL, "string table: empty");
        tap_is_int(test_color_from_string(NULL), -EINVAL, "string table: NULL");
        tap_is_int(ao_string_table_find_case(color_names, _TEST_COLOR_MAX, "GREEN"), TEST_GREEN,
                   "string table: find ignoring case");
        tap_is_int(ao_string_table_find_case(color_names, _TEST_COLOR_MAX, "blue"), -EINVAL,
                   "string table: holes never match");
}

#define SEC AO_USEC_PER_SEC

static void test_backoff_go(void)
{
        const struct ao_backoff go = {.base_usec = 5 * SEC,
                                      .first_usec = SEC,
                                      .max_usec = 32 * SEC,
                                      .jitter = AO_BACKOFF_JITTER_ADD,
                                      .jitter_usec = SEC,
                                      .step_usec = 100 * AO_USEC_PER_MSEC};

        tap_is_int(ao_backoff_delay_usec(&go, 0), 5 * SEC, "backoff go: first retry exactly 5 s");
        for (unsigned n = 1; n <= 5; n++) {
                uint64_t lo = 5 * SEC + (SEC << (n - 1)), hi = lo + 900 * AO_USEC_PER_MSEC;
                bool ok = true;
                for (int i = 0; i < 200; i++) {
                        uint64_t d = ao_backoff_delay_usec(&go, n);
                        ok = ok && d >= lo && d <= hi && d % (100 * AO_USEC_PER_MSEC) == 0;
                }
                tap_ok(ok, "backoff go: %u: 5 s + 2^%u s + [0, 0.9] s in 100 ms steps", n, n - 1);
        }
        static const unsigned capped[] = {6, 7, 64, 65, UINT_MAX};
        for (size_t i = 0; i < AO_ARRAY_SIZE(capped); i++)
                tap_is_int(ao_backoff_delay_usec(&go, capped[i]), 32 * SEC,
                           "backoff go: %u: the 32 s cap, no jitter", capped[i]);
}

static void test_backoff_doubling(void)
{
        const struct ao_backoff config_map = {.first_usec = 500 * AO_USEC_PER_MSEC, .max_usec = 30 * SEC};
        static const uint64_t want[] = {0,       500000,   1000000,  2000000, 4000000,
                                        8000000, 16000000, 30000000, 30000000};
        for (unsigned n = 1; n < AO_ARRAY_SIZE(want); n++)
                tap_is_int(ao_backoff_delay_usec(&config_map, n), want[n], "backoff doubling: %u failures",
                           n);
        tap_is_int(ao_backoff_delay_usec(&config_map, UINT_MAX), 30 * SEC, "backoff doubling: no overflow");

        const struct ao_backoff informer = {
            .first_usec = 800 * AO_USEC_PER_MSEC, .max_usec = 30 * SEC, .jitter = AO_BACKOFF_JITTER_HALF};
        bool ok1 = true, ok7 = true, varied = false;
        uint64_t first = ao_backoff_delay_usec(&informer, 1);
        for (int i = 0; i < 500; i++) {
                uint64_t d1 = ao_backoff_delay_usec(&informer, 1), d7 = ao_backoff_delay_usec(&informer, 7);
                ok1 = ok1 && d1 >= 400000 && d1 <= 800000;
                ok7 = ok7 && d7 >= 15 * SEC && d7 <= 30 * SEC;
                varied = varied || d1 != first;
        }
        tap_ok(ok1, "backoff half jitter: 1 failure: [0.4 s, 0.8 s]");
        tap_ok(ok7, "backoff half jitter: at the cap: [15 s, 30 s]");
        tap_ok(varied, "backoff half jitter: jittered");

        const struct ao_backoff over = {.base_usec = 10 * SEC, .first_usec = SEC, .max_usec = 5 * SEC};
        tap_is_int(ao_backoff_delay_usec(&over, 0), 5 * SEC, "backoff: a base above the cap is capped");
        const struct ao_backoff flat = {.base_usec = 3 * SEC, .max_usec = 10 * SEC};
        tap_is_int(ao_backoff_delay_usec(&flat, 40), 3 * SEC, "backoff: no doubling term: the base");
}

static void test_backoff_scale(void)
{
        tap_is_int(ao_backoff_scale_usec(0.5, 1000), 500, "backoff scale: halves");
        tap_is_int(ao_backoff_scale_usec(0.05, 800000), 40000, "backoff scale: 5%%");
        tap_is_int(ao_backoff_scale_usec(0.001, 5 * SEC), 5000, "backoff scale: seconds to milliseconds");
        tap_is_int(ao_backoff_scale_usec(1, 123456789), 123456789, "backoff scale: 1 is exact");
        tap_is_int(ao_backoff_scale_usec(0, 1000), 1000, "backoff scale: 0 means 1");
        tap_is_int(ao_backoff_scale_usec(-2, 1000), 1000, "backoff scale: negative means 1");
        tap_is_int(ao_backoff_scale_usec(NAN, 1000), 1000, "backoff scale: NaN means 1");
        tap_ok(ao_backoff_scale_usec(1e30, 1000) == UINT64_MAX, "backoff scale: saturates");

        struct ao_backoff b = {
            .first_usec = 500 * AO_USEC_PER_MSEC, .max_usec = 30 * SEC, .retry_scale = 0.5};
        tap_is_int(ao_backoff_wait_usec(&b, 3, 0), SEC, "backoff wait: 2 s scaled by 0.5");
        tap_is_int(ao_backoff_wait_usec(&b, 1, 4 * SEC), 2 * SEC, "backoff wait: at least 4 s, then scaled");
}

/* @text with its control characters as \t, \r, \n: a TAP description is one line. */
static const char *one_line(const char *text)
{
        static char buf[256];
        size_t o = 0;
        for (const char *c = text; *c && o + 3 < sizeof(buf); c++) {
                const char *esc = *c == '\n' ? "\\n" : *c == '\r' ? "\\r" : *c == '\t' ? "\\t" : NULL;
                if (esc) {
                        buf[o++] = esc[0];
                        buf[o++] = esc[1];
                } else {
                        buf[o++] = *c;
                }
        }
        buf[o] = '\0';
        return buf;
}

/* Decodes @text with both entry points; returns the code and, on success, the bytes in @out. */
static int b64(const char *raw, char *out, size_t *ret_len)
{
        const char *text = raw;
        size_t len = strlen(raw), n = 12345, n2 = 54321;
        char *dup = NULL;
        int r = ao_base64_decode(raw, len, out, &n);
        int r2 = ao_base64_decode_dup(raw, len, &dup, &n2);
        text = one_line(raw);

        tap_is_int(r2, r, "base64 '%s': both entry points agree", text);
        if (r == 0) {
                tap_ok(n2 == n && memcmp(dup, out, n) == 0 && dup[n] == '\0',
                       "base64 '%s': the copy holds the same bytes and a NUL", text);
                *ret_len = n;
        } else {
                tap_ok(n == 12345 && n2 == 54321 && !dup, "base64 '%s': nothing written on failure", text);
        }
        free(dup);
        return r;
}

static void test_base64(void)
{
        static const struct {
                const char *text, *want;
                size_t want_len;
        } good[] = {
            {"", "", 0},
            {"TWFu", "Man", 3},
            {"TWE=", "Ma", 2},
            {"TQ==", "M", 1},
            {"TWFuTWFu", "ManMan", 6},
            {" TW\tFu\r\nTQ==\n", "ManM", 4},
            {"TR==", "M", 1}, /* unused low bits not checked, as Go's StdEncoding */
            {"AAEC/+8=", "\x00\x01\x02\xff\xef", 5},
            {"+/+/", "\xfb\xff\xbf", 3},
            {"  \n", "", 0},
        };
        static const char *const bad[] = {
            "TWF",       /* group cut short */
            "TQ",        /* padding required */
            "TQ=",       /* still short */
            "TQ===",     /* three pads */
            "T===",      /* three pads in one group */
            "TW=u",      /* '=' inside a group */
            "=QWE",      /* '=' first */
            "TQ==TWFu",  /* data after the padding */
            "TQ== TQ==", /* a second padded group */
            "TW-u",      /* URL alphabet */
            "TW_u",      /* URL alphabet */
            "TWFu\v",    /* vertical tab is not skipped */
            "TWF\x80",   /* non-ASCII */
        };
        char out[64];
        size_t n;

        for (size_t i = 0; i < AO_ARRAY_SIZE(good); i++) {
                tap_is_int(b64(good[i].text, out, &n), 0, "base64 '%s': decodes", one_line(good[i].text));
                tap_ok(n == good[i].want_len && memcmp(out, good[i].want, n) == 0,
                       "base64 '%s': %zu exact bytes", one_line(good[i].text), good[i].want_len);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad); i++)
                tap_is_int(b64(bad[i], out, &n), -EINVAL, "base64 '%s': -EINVAL", one_line(bad[i]));

        /* A NUL inside the given length is a byte like any other: refused. */
        tap_is_int(ao_base64_decode("TQ==\0TQ==", 9, out, &n), -EINVAL, "base64: embedded NUL refused");
        /* Only @len bytes are read. */
        tap_is_int(ao_base64_decode("TWFuTWFu", 4, out, &n), 0, "base64: stops at len");
        tap_is_int(n, 3, "base64: 3 bytes of the first group");
        tap_is_int(AO_BASE64_DECODED_MAX(8), 6, "base64: the bound for 8 symbols");
        tap_is_int(AO_BASE64_DECODED_MAX(7), 3, "base64: the bound for 7 bytes");

        /* In place, with white space making the text longer than its groups. */
        char text[] = "SGVs bG8s IHdv cmxk IQ==\n";
        tap_is_int(ao_base64_decode(text, strlen(text), text, &n), 0, "base64: in place");
        tap_ok(n == 13 && memcmp(text, "Hello, world!", 13) == 0, "base64: in place gives the exact bytes");
}

int main(void)
{
        test_strbuf();
        test_error();
        test_hashmap();
        test_throttle();
        test_quote_bytes();
        test_quote_text();
        test_quote_cut();
        test_json_type_name();
        test_input();
        test_string_table();
        test_backoff_go();
        test_backoff_doubling();
        test_backoff_scale();
        test_base64();
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
