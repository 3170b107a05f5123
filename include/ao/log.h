/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Structured logging in the formats addon-operator users parse:
 *   json   one object per line: level, msg, context fields, then time
 *   text   logfmt-style key=value pairs (time= level= msg= ...)
 *   color  text with ANSI colours, used only when the output is a tty
 *
 * Writing never blocks the caller: a line that the output cannot take right
 * now goes to a bounded backlog, and lines that do not fit are counted as
 * dropped and reported once the output drains. All functions are
 * thread-safe; ao_log_setup() and ao_log_shutdown() are called by the main
 * thread while no other thread logs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/macro.h"

enum ao_log_level {
        AO_LOG_DEBUG,
        AO_LOG_INFO,
        AO_LOG_WARN,
        AO_LOG_ERROR,
        _AO_LOG_LEVEL_MAX,
        _AO_LOG_LEVEL_INVALID = -EINVAL,
};

enum ao_log_format {
        AO_LOG_FORMAT_JSON,
        AO_LOG_FORMAT_TEXT,
        AO_LOG_FORMAT_COLOR,
        _AO_LOG_FORMAT_MAX,
        _AO_LOG_FORMAT_INVALID = -EINVAL,
};

/** One extra key=value pair on a log line. Both strings are borrowed for the call only. */
struct ao_log_field {
        const char *key;
        const char *value;
};

/**
 * What the calling thread is working on. Every line logged while a context is
 * installed carries its non-NULL fields, in this order, under the key in the
 * comment (the Go operator's keys). Strings are borrowed: they must outlive
 * the installation (see ao_log_context_swap()). Only pointers to strings.
 */
struct ao_log_context {
        const char *module;      /* module */
        const char *hook;        /* hook */
        const char *hook_type;   /* hook.type: "global" or "module" */
        const char *binding;     /* binding: the binding's name */
        const char *event;       /* event: the binding's type ("kubernetes", "beforeHelm", ...) */
        const char *watch_event; /* watchEvent: "Added", "Modified" or "Deleted" for a kubernetes event */
        const char *queue;       /* queue */
        const char *task;        /* task: the task's type ("ModuleRun", "GlobalHookRun", ...) */
        const char *event_type;  /* event.type: what started the work (a metric's activation) */
};

struct ao_log_options {
        enum ao_log_format format;
        enum ao_log_level level;
        bool no_time;       /* omit the time field (LOG_NO_TIME) */
        int fd;             /* output; borrowed and duplicated, -1 means stderr */
        size_t backlog_max; /* bytes kept while the output is full; 0 means the default (1 MiB) */
};

/** Parse "debug", "info", "warn"/"warning", "error" (also the peer's "trace" and "fatal"). */
enum ao_log_level ao_log_level_from_string(const char *s);
const char *ao_log_level_to_string(enum ao_log_level level);
/** Parse "json", "text", "color" ("colour" too). */
enum ao_log_format ao_log_format_from_string(const char *s);
const char *ao_log_format_to_string(enum ao_log_format format);

/**
 * Configure the logger. Before the first call, lines go to stderr as text at
 * info level. A colour format on an output that is not a tty degrades to text.
 * Returns 0 or a negative errno if the output cannot be duplicated.
 */
int ao_log_setup(const struct ao_log_options *options);

/** Change the level at run time. */
void ao_log_set_level(enum ao_log_level level);
enum ao_log_level ao_log_get_level(void);
static inline bool ao_log_enabled(enum ao_log_level level)
{
        return level >= ao_log_get_level();
}

/** Log one line with optional extra fields (may be NULL when @n_fields is 0). */
void ao_log_full(enum ao_log_level level, const struct ao_log_field *fields, size_t n_fields, const char *fmt,
                 ...) _printf_(4, 5);

#define ao_log(level, ...) ao_log_full((level), NULL, 0, __VA_ARGS__)

/**
 * Log with a compound-literal list of fields:
 *   ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"path", p}), "loaded %zu hooks", n);
 */
#define AO_LOG_FIELDS(...) ((const struct ao_log_field[]){__VA_ARGS__})
#define ao_log_with(level, fields, ...) \
        ao_log_full((level), (fields), sizeof(fields) / sizeof(struct ao_log_field), __VA_ARGS__)

/**
 * Log "<message>: <strerror(-r)>" and return @r unchanged, for
 * `return ao_log_errno(AO_LOG_ERROR, r, "...")`.
 */
int ao_log_errno(enum ao_log_level level, int r, const char *fmt, ...) _printf_(3, 4);

/** A context that owns copies of its strings, for one that outlives what it was built from. */
struct ao_log_context_copy {
        struct ao_log_context ctx;                                            /* points into _strings */
        char *_strings[sizeof(struct ao_log_context) / sizeof(const char *)]; /* owned */
};
void ao_log_context_copy_init(struct ao_log_context_copy *c, const struct ao_log_context *from);
void ao_log_context_copy_done(struct ao_log_context_copy *c);

/**
 * Install @ctx as the calling thread's context and return the previous one,
 * so callers can restore it: `prev = ao_log_context_swap(&ctx); ...;
 * ao_log_context_swap(prev);`. NULL clears the context.
 */
const struct ao_log_context *ao_log_context_swap(const struct ao_log_context *ctx);

/**
 * Output that could not be written yet. The owner of the event loop watches
 * ao_log_fd() for writability while ao_log_backlog_bytes() is non-zero and
 * calls ao_log_flush() when it is; the notify callback set here fires (from
 * whichever thread logged, without the log lock held) when the backlog goes
 * from empty to non-empty.
 */
size_t ao_log_backlog_bytes(void);
int ao_log_fd(void);
void ao_log_set_backlog_notify(void (*notify)(void *userdata), void *userdata);
/** Write as much of the backlog as the output takes now. Returns the bytes still pending. */
size_t ao_log_flush(void);
/** Lines lost because the backlog was full, since start. */
uint64_t ao_log_dropped_lines(void);

/**
 * Flush the backlog, waiting up to @timeout_usec for the output to drain, and
 * release the logger's resources. Logging afterwards goes to stderr as text.
 */
void ao_log_shutdown(uint64_t timeout_usec);
