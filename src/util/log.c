/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/log.h"

#include <assert.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"
#include "ao/string-table.h"

/* A line longer than this is cut; the marker says so. Hook output is capped earlier. */
#define LOG_LINE_MAX        (64 * 1024)
#define LOG_BACKLOG_DEFAULT (1024 * 1024)

enum output_kind {
        OUTPUT_WRITE,  /* regular file, or a pipe/tty reopened non-blocking */
        OUTPUT_SOCKET, /* stream socket (journald): send(MSG_DONTWAIT) */
};

struct logger {
        pthread_mutex_t lock;
        enum ao_log_format format;
        bool no_time;
        int fd; /* owned, -1 until setup: then stderr is used directly */
        enum output_kind kind;

        /* Bytes accepted but not yet written, oldest first. */
        char *backlog;
        size_t backlog_len;
        size_t backlog_max;
        uint64_t dropped;          /* lines lost since start */
        uint64_t dropped_reported; /* how many of them the log already mentioned */

        void (*notify)(void *userdata);
        void *notify_userdata;

        struct ao_strbuf line; /* scratch, reused under the lock */
};

static struct logger logger = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .format = AO_LOG_FORMAT_TEXT,
    .fd = -1,
    .backlog_max = LOG_BACKLOG_DEFAULT,
};

/* Read without the lock: a stale level only means one line more or less. */
static _Atomic int current_level = AO_LOG_INFO;

static _Thread_local const struct ao_log_context *thread_context;

static const char *const level_names[_AO_LOG_LEVEL_MAX] = {
    [AO_LOG_DEBUG] = "debug",
    [AO_LOG_INFO] = "info",
    [AO_LOG_WARN] = "warn",
    [AO_LOG_ERROR] = "error",
};

static const char *const format_names[_AO_LOG_FORMAT_MAX] = {
    [AO_LOG_FORMAT_JSON] = "json",
    [AO_LOG_FORMAT_TEXT] = "text",
    [AO_LOG_FORMAT_COLOR] = "color",
};

enum ao_log_level ao_log_level_from_string(const char *s)
{
        int i = ao_string_table_find_case(level_names, AO_ARRAY_SIZE(level_names), s);
        if (i >= 0)
                return i;
        if (!s)
                return _AO_LOG_LEVEL_INVALID;
        /* The peer also knows these; map them onto our four levels. */
        if (strcasecmp(s, "trace") == 0)
                return AO_LOG_DEBUG;
        if (strcasecmp(s, "warning") == 0)
                return AO_LOG_WARN;
        if (strcasecmp(s, "fatal") == 0 || strcasecmp(s, "panic") == 0)
                return AO_LOG_ERROR;
        return _AO_LOG_LEVEL_INVALID;
}

AO_STRING_TABLE_TO_STRING(ao_log_level, enum ao_log_level, level_names);

enum ao_log_format ao_log_format_from_string(const char *s)
{
        int i = ao_string_table_find_case(format_names, AO_ARRAY_SIZE(format_names), s);
        if (i >= 0)
                return i;
        if (s && strcasecmp(s, "colour") == 0)
                return AO_LOG_FORMAT_COLOR;
        return _AO_LOG_FORMAT_INVALID;
}

AO_STRING_TABLE_TO_STRING(ao_log_format, enum ao_log_format, format_names);

void ao_log_set_level(enum ao_log_level level)
{
        if (level >= 0 && level < _AO_LOG_LEVEL_MAX)
                current_level = level;
}

enum ao_log_level ao_log_get_level(void)
{
        return current_level;
}

/* The context's fields in the order records carry them, with their keys. */
static const struct {
        const char *key;
        size_t offset;
} context_keys[] = {
    {"module", offsetof(struct ao_log_context, module)},
    {"hook", offsetof(struct ao_log_context, hook)},
    {"hook.type", offsetof(struct ao_log_context, hook_type)},
    {"binding", offsetof(struct ao_log_context, binding)},
    {"event", offsetof(struct ao_log_context, event)},
    {"watchEvent", offsetof(struct ao_log_context, watch_event)},
    {"queue", offsetof(struct ao_log_context, queue)},
    {"task", offsetof(struct ao_log_context, task)},
    {"event.type", offsetof(struct ao_log_context, event_type)},
};
static_assert(AO_ARRAY_SIZE(context_keys) == sizeof(struct ao_log_context) / sizeof(const char *),
              "a key for every context field");

static const char **context_field(const struct ao_log_context *ctx, size_t i)
{
        return (const char **) ((const char *) ctx + context_keys[i].offset);
}

void ao_log_context_copy_init(struct ao_log_context_copy *c, const struct ao_log_context *from)
{
        c->ctx = *from;
        for (size_t i = 0; i < AO_ARRAY_SIZE(context_keys); i++) {
                const char **field = context_field(&c->ctx, i);
                c->_strings[i] = *field ? ao_xstrdup(*field) : NULL;
                *field = c->_strings[i];
        }
}

void ao_log_context_copy_done(struct ao_log_context_copy *c)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(c->_strings); i++) {
                free(c->_strings[i]);
                c->_strings[i] = NULL;
        }
        c->ctx = (struct ao_log_context){0};
}

const struct ao_log_context *ao_log_context_swap(const struct ao_log_context *ctx)
{
        const struct ao_log_context *prev = thread_context;
        thread_context = ctx;
        return prev;
}

/*
 * Get a descriptor for the output that never blocks. A regular file never
 * returns EAGAIN, so a plain duplicate is fine. A pipe or tty is reopened
 * through /proc: that creates a new open file description, so O_NONBLOCK
 * does not leak into the shell or supervisor that shares the original one.
 * Sockets cannot be reopened that way; send(MSG_DONTWAIT) gives the same
 * effect per call.
 */
static int open_output(int fd, enum output_kind *ret_kind)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return ao_negative_errno();

        if (S_ISSOCK(st.st_mode)) {
                int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (copy < 0)
                        return ao_negative_errno();
                *ret_kind = OUTPUT_SOCKET;
                return copy;
        }

        if (!S_ISREG(st.st_mode)) {
                char path[64];
                (void) snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                int reopened = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
                if (reopened >= 0) {
                        *ret_kind = OUTPUT_WRITE;
                        return reopened;
                }
                /* No /proc: fall through to a plain duplicate, which may block. */
        }

        int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
                return ao_negative_errno();
        *ret_kind = OUTPUT_WRITE;
        return copy;
}

int ao_log_setup(const struct ao_log_options *options)
{
        int source_fd = options->fd >= 0 ? options->fd : STDERR_FILENO;
        enum output_kind kind;
        int fd = open_output(source_fd, &kind);
        if (fd < 0)
                return fd;

        enum ao_log_format format = options->format;
        if (format == AO_LOG_FORMAT_COLOR && !isatty(source_fd))
                format = AO_LOG_FORMAT_TEXT;

        pthread_mutex_lock(&logger.lock);
        (void) ao_safe_close(logger.fd);
        logger.fd = fd;
        logger.kind = kind;
        logger.format = format;
        logger.no_time = options->no_time;
        logger.backlog_max = options->backlog_max ? options->backlog_max : LOG_BACKLOG_DEFAULT;
        pthread_mutex_unlock(&logger.lock);

        ao_log_set_level(options->level);
        return 0;
}

void ao_log_set_backlog_notify(void (*notify)(void *userdata), void *userdata)
{
        pthread_mutex_lock(&logger.lock);
        logger.notify = notify;
        logger.notify_userdata = userdata;
        pthread_mutex_unlock(&logger.lock);
}

/* --- formatting ------------------------------------------------------------ */

static void append_time(struct ao_strbuf *sb)
{
        struct timespec ts;
        struct tm tm;
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        (void) gmtime_r(&ts.tv_sec, &tm);
        ao_strbuf_appendf(sb, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                          tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* logfmt values are bare when they hold only "safe" characters, quoted otherwise. */
static bool text_needs_quotes(const char *s)
{
        if (!*s)
                return true;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') &&
                    !strchr("-._/@^+:", *p))
                        return true;
        return false;
}

static void append_text_value(struct ao_strbuf *sb, const char *value)
{
        if (text_needs_quotes(value))
                ao_strbuf_append_quoted(sb, value);
        else
                ao_strbuf_append(sb, value);
}

enum field_style {
        FIELD_JSON,
        FIELD_TEXT,
        FIELD_COLOR
};

static void append_field(struct ao_strbuf *sb, enum field_style style, const char *key, const char *value)
{
        switch (style) {
        case FIELD_JSON:
                ao_strbuf_append_c(sb, ',');
                ao_strbuf_append_json_string(sb, key);
                ao_strbuf_append_c(sb, ':');
                ao_strbuf_append_json_string(sb, value);
                break;
        case FIELD_TEXT:
                ao_strbuf_appendf(sb, " %s=", key);
                append_text_value(sb, value);
                break;
        case FIELD_COLOR:
                ao_strbuf_appendf(sb, " \x1b[36m%s\x1b[0m=", key);
                append_text_value(sb, value);
                break;
        }
}

/* The value the record gives @key: a call field's, else @ctx's (either may be NULL). */
static const char *context_value(const struct ao_log_context *ctx, size_t i,
                                 const struct ao_log_field *fields, size_t n_fields)
{
        for (size_t j = 0; j < n_fields; j++)
                if (fields[j].key && strcmp(fields[j].key, context_keys[i].key) == 0)
                        return fields[j].value;
        return ctx ? *context_field(ctx, i) : NULL;
}

static bool is_context_key(const char *key)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(context_keys); i++)
                if (strcmp(key, context_keys[i].key) == 0)
                        return true;
        return false;
}

/*
 * The context keys first, always in their order, a call field replacing the context's value;
 * then the other call fields as given.
 */
static void append_fields(struct ao_strbuf *sb, enum field_style style, const struct ao_log_field *fields,
                          size_t n_fields)
{
        const struct ao_log_context *ctx = thread_context;
        for (size_t i = 0; i < AO_ARRAY_SIZE(context_keys); i++) {
                const char *value = context_value(ctx, i, fields, n_fields);
                if (value)
                        append_field(sb, style, context_keys[i].key, value);
        }
        for (size_t i = 0; i < n_fields; i++)
                if (fields[i].key && fields[i].value && !is_context_key(fields[i].key))
                        append_field(sb, style, fields[i].key, fields[i].value);
}

static void format_json(struct ao_strbuf *sb, enum ao_log_level level, const char *msg,
                        const struct ao_log_field *fields, size_t n_fields, bool no_time)
{
        ao_strbuf_appendf(sb, "{\"level\":\"%s\",\"msg\":", level_names[level]);
        ao_strbuf_append_json_string(sb, msg);
        append_fields(sb, FIELD_JSON, fields, n_fields);
        if (!no_time) {
                ao_strbuf_append(sb, ",\"time\":\"");
                append_time(sb);
                ao_strbuf_append_c(sb, '"');
        }
        ao_strbuf_append(sb, "}\n");
}

static void format_text(struct ao_strbuf *sb, enum ao_log_level level, const char *msg,
                        const struct ao_log_field *fields, size_t n_fields, bool no_time)
{
        if (!no_time) {
                ao_strbuf_append(sb, "time=\"");
                append_time(sb);
                ao_strbuf_append(sb, "\" ");
        }
        ao_strbuf_appendf(sb, "level=%s msg=", level_names[level]);
        ao_strbuf_append_quoted(sb, msg);
        append_fields(sb, FIELD_TEXT, fields, n_fields);
        ao_strbuf_append_c(sb, '\n');
}

static void format_color(struct ao_strbuf *sb, enum ao_log_level level, const char *msg,
                         const struct ao_log_field *fields, size_t n_fields, bool no_time)
{
        static const char *const colors[_AO_LOG_LEVEL_MAX] = {
            [AO_LOG_DEBUG] = "37", [AO_LOG_INFO] = "36", [AO_LOG_WARN] = "33", [AO_LOG_ERROR] = "31"};
        static const char *const tags[_AO_LOG_LEVEL_MAX] = {
            [AO_LOG_DEBUG] = "DEBU", [AO_LOG_INFO] = "INFO", [AO_LOG_WARN] = "WARN", [AO_LOG_ERROR] = "ERRO"};

        ao_strbuf_appendf(sb, "\x1b[%sm%s\x1b[0m", colors[level], tags[level]);
        if (!no_time) {
                ao_strbuf_append_c(sb, '[');
                append_time(sb);
                ao_strbuf_append_c(sb, ']');
        }
        ao_strbuf_append_c(sb, ' ');
        ao_strbuf_append_sanitized(sb, msg);
        append_fields(sb, FIELD_COLOR, fields, n_fields);
        ao_strbuf_append_c(sb, '\n');
}

/* --- output ---------------------------------------------------------------- */

static ssize_t output_write(const char *p, size_t n)
{
        int fd = logger.fd >= 0 ? logger.fd : STDERR_FILENO;
        for (;;) {
                ssize_t k = logger.kind == OUTPUT_SOCKET ? send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL)
                                                         : write(fd, p, n);
                if (k >= 0 || errno != EINTR)
                        return k;
        }
}

/*
 * Write backlog bytes while the output takes them. Called with the lock held.
 * A broken output (EPIPE, EIO, ...) discards what is pending: nobody can read
 * it and keeping it would only pin memory.
 */
static void flush_locked(void)
{
        size_t done = 0;
        while (done < logger.backlog_len) {
                ssize_t k = output_write(logger.backlog + done, logger.backlog_len - done);
                if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (k <= 0) {
                        done = logger.backlog_len;
                        break;
                }
                done += (size_t) k;
        }
        if (done == 0)
                return;
        memmove(logger.backlog, logger.backlog + done, logger.backlog_len - done);
        logger.backlog_len -= done;
}

/* Keep @n bytes in the backlog, or count the line as dropped when it is full. */
static bool backlog_append_locked(const char *p, size_t n)
{
        if (logger.backlog_len + n > logger.backlog_max) {
                logger.dropped++;
                return false;
        }
        if (!logger.backlog) {
                logger.backlog = malloc(logger.backlog_max);
                if (!logger.backlog) {
                        logger.dropped++;
                        return false;
                }
        }
        memcpy(logger.backlog + logger.backlog_len, p, n);
        logger.backlog_len += n;
        return true;
}

/* Emit one formatted line; returns true when the backlog went from empty to non-empty. */
static bool emit_locked(const char *p, size_t n)
{
        bool was_empty = logger.backlog_len == 0;
        if (was_empty) {
                ssize_t k = output_write(p, n);
                if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                        return false; /* broken output: nothing to keep */
                size_t written = k > 0 ? (size_t) k : 0;
                if (written == n)
                        return false;
                p += written;
                n -= written;
        } else {
                flush_locked();
        }
        (void) backlog_append_locked(p, n);
        return was_empty && logger.backlog_len > 0;
}

static void format_line(struct ao_strbuf *sb, enum ao_log_level level, const char *msg,
                        const struct ao_log_field *fields, size_t n_fields)
{
        ao_strbuf_reset(sb);
        switch (logger.format) {
        case AO_LOG_FORMAT_JSON:
                format_json(sb, level, msg, fields, n_fields, logger.no_time);
                break;
        case AO_LOG_FORMAT_COLOR:
                format_color(sb, level, msg, fields, n_fields, logger.no_time);
                break;
        default:
                format_text(sb, level, msg, fields, n_fields, logger.no_time);
                break;
        }
}

/* Once the output drains after losses, say how many lines were lost. */
static void report_drops_locked(void)
{
        if (logger.backlog_len != 0 || logger.dropped == logger.dropped_reported)
                return;
        char msg[128];
        (void) snprintf(msg, sizeof(msg),
                        "%llu log lines were dropped because the log output was not writable",
                        (unsigned long long) (logger.dropped - logger.dropped_reported));
        logger.dropped_reported = logger.dropped;
        format_line(&logger.line, AO_LOG_WARN, msg, NULL, 0);
        (void) emit_locked(logger.line.buf, logger.line.len);
}

static void log_message(enum ao_log_level level, const struct ao_log_field *fields, size_t n_fields,
                        const char *msg)
{
        pthread_mutex_lock(&logger.lock);
        if (logger.backlog_len > 0)
                flush_locked();
        report_drops_locked();
        format_line(&logger.line, level, msg, fields, n_fields);
        bool became_pending = emit_locked(logger.line.buf, logger.line.len);
        void (*notify)(void *) = logger.notify;
        void *notify_userdata = logger.notify_userdata;
        ao_strbuf_shrink(&logger.line, LOG_LINE_MAX);
        pthread_mutex_unlock(&logger.lock);

        if (became_pending && notify)
                notify(notify_userdata);
}

/* Format the message text into a bounded stack buffer, marking truncation. */
_printf_(3, 0) static void vformat_message(char *buf, size_t size, const char *fmt, va_list ap)
{
        int n = vsnprintf(buf, size, fmt, ap);
        if (n >= 0 && (size_t) n >= size) {
                static const char marker[] = "...(truncated)";
                memcpy(buf + size - sizeof(marker), marker, sizeof(marker));
        }
}

void ao_log_full(enum ao_log_level level, const struct ao_log_field *fields, size_t n_fields, const char *fmt,
                 ...)
{
        if (level < 0 || level >= _AO_LOG_LEVEL_MAX || !ao_log_enabled(level))
                return;

        char msg[LOG_LINE_MAX / 4];
        va_list ap;
        va_start(ap, fmt);
        vformat_message(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        log_message(level, fields, n_fields, msg);
}

int ao_log_errno(enum ao_log_level level, int r, const char *fmt, ...)
{
        if (level < 0 || level >= _AO_LOG_LEVEL_MAX || !ao_log_enabled(level))
                return r;

        char msg[LOG_LINE_MAX / 4];
        va_list ap;
        va_start(ap, fmt);
        vformat_message(msg, sizeof(msg) - 128, fmt, ap);
        va_end(ap);
        size_t len = strlen(msg);
        (void) snprintf(msg + len, sizeof(msg) - len, ": %s", strerror(r < 0 ? -r : r));
        log_message(level, NULL, 0, msg);
        return r;
}

size_t ao_log_backlog_bytes(void)
{
        pthread_mutex_lock(&logger.lock);
        size_t n = logger.backlog_len;
        pthread_mutex_unlock(&logger.lock);
        return n;
}

int ao_log_fd(void)
{
        pthread_mutex_lock(&logger.lock);
        int fd = logger.fd >= 0 ? logger.fd : STDERR_FILENO;
        pthread_mutex_unlock(&logger.lock);
        return fd;
}

size_t ao_log_flush(void)
{
        pthread_mutex_lock(&logger.lock);
        flush_locked();
        report_drops_locked();
        size_t n = logger.backlog_len;
        pthread_mutex_unlock(&logger.lock);
        return n;
}

uint64_t ao_log_dropped_lines(void)
{
        pthread_mutex_lock(&logger.lock);
        uint64_t n = logger.dropped;
        pthread_mutex_unlock(&logger.lock);
        return n;
}

static uint64_t monotonic_usec(void)
{
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

void ao_log_shutdown(uint64_t timeout_usec)
{
        uint64_t deadline = monotonic_usec() + timeout_usec;
        pthread_mutex_lock(&logger.lock);
        for (;;) {
                flush_locked();
                report_drops_locked();
                uint64_t now = monotonic_usec();
                if (logger.backlog_len == 0 || now >= deadline)
                        break;
                struct pollfd pfd = {.fd = logger.fd, .events = POLLOUT};
                uint64_t wait_ms = (deadline - now + 999) / 1000;
                (void) poll(&pfd, 1, (int) AO_MIN(wait_ms, 1000u));
        }
        free(logger.backlog);
        logger.backlog = NULL;
        logger.backlog_len = 0;
        logger.fd = ao_safe_close(logger.fd);
        logger.format = AO_LOG_FORMAT_TEXT;
        logger.no_time = false;
        logger.notify = NULL;
        logger.notify_userdata = NULL;
        ao_strbuf_done(&logger.line);
        pthread_mutex_unlock(&logger.lock);
}
