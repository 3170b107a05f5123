/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LOG_PROXY_HOOK_JSON: a JSON object a hook prints over several lines (jq
 * and most loggers' pretty printing) is joined before it is logged. A line
 * that opens an object without closing it starts a buffer; lines are added
 * until the braces and brackets outside strings balance, and the text then
 * becomes one structured record if it parses as an object. What does not
 * parse, what grows past JOIN_MAX bytes, and what is still open when the
 * stream ends are logged line by line, as without the setting.
 */
#include <string.h>

#include "ao/strbuf.h"
#include "internal.h"

/* A pretty-printed object larger than this is someone's data dump, not a log record. */
#define JOIN_MAX (64 * 1024)

/* Follow the nesting through @len bytes; strings (and their escapes) do not count. */
static void scan(struct json_join *j, const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (j->in_string) {
                        if (j->escaped)
                                j->escaped = false;
                        else if (c == '\\')
                                j->escaped = true;
                        else if (c == '"')
                                j->in_string = false;
                } else if (c == '"') {
                        j->in_string = true;
                } else if (c == '{' || c == '[') {
                        j->depth++;
                } else if (c == '}' || c == ']') {
                        j->depth--;
                }
        }
}

static void reset(struct json_join *j)
{
        ao_strbuf_reset(&j->text);
        j->depth = 0;
        j->in_string = j->escaped = false;
}

/* Give up on the buffered lines: each is logged on its own. */
static void flush_lines(struct json_join *j, const struct ao_log_context *ctx, enum ao_proc_stream stream)
{
        const char *p = ao_strbuf_str(&j->text), *end = p + j->text.len;
        while (j->text.len > 0 && p <= end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                proc_log_line_now(ctx, stream, p, n);
                p += n + 1;
        }
        reset(j);
}

bool proc_join_json_line(struct json_join *j, const struct ao_log_context *ctx, enum ao_proc_stream stream,
                         const char *line, size_t len)
{
        if (j->text.len == 0) {
                if (len == 0 || line[0] != '{')
                        return false;
                scan(j, line, len);
                if (j->depth <= 0) {
                        reset(j); /* whole on one line: the usual path */
                        return false;
                }
                ao_strbuf_append_n(&j->text, line, len);
                return true;
        }
        ao_strbuf_append_c(&j->text, '\n');
        ao_strbuf_append_n(&j->text, line, len);
        scan(j, line, len);
        if (j->depth <= 0) {
                if (proc_log_json_line(ctx, stream, ao_strbuf_str(&j->text), j->text.len))
                        reset(j);
                else
                        flush_lines(j, ctx, stream);
        } else if (j->text.len > JOIN_MAX) {
                flush_lines(j, ctx, stream);
        }
        return true;
}

void proc_join_flush(struct json_join *j, const struct ao_log_context *ctx, enum ao_proc_stream stream)
{
        if (j->text.len > 0)
                flush_lines(j, ctx, stream);
        ao_strbuf_done(&j->text);
}
