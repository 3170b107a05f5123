/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A run's stdout and stderr as lines: each chunk the pipe gives is split at
 * newlines, each line capped at line_max and the whole run at output_max.
 * Past the run cap the output is still read, so the hook never blocks on a
 * full pipe, but no longer logged.
 */
#include <string.h>

#include "ao/alloc.h"
#include "run.h"

void ao_proc_log_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len)
{
        if (run->env->options.join_json_lines &&
            proc_join_json_line(&run->lines[stream].join, &run->log_context.ctx, stream, line, len))
                return;
        proc_log_line_now(&run->log_context.ctx, stream, line, len);
}

static void emit(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len,
                 bool truncated)
{
        const struct ao_proc_options *opt = &run->env->options;
        if (!line)
                line = ""; /* an empty first line: nothing was buffered yet */
        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (run->logged_bytes >= opt->output_max) {
                run->result.output_truncated = true;
                return;
        }
        run->logged_bytes += len;
        if (run->logged_bytes >= opt->output_max) {
                const struct ao_log_context *prev = ao_log_context_swap(&run->log_context.ctx);
                /* By path: the pid may not be known yet (spawn replies are read lazily). */
                ao_log(AO_LOG_WARN, "proc: %s wrote more than %zu bytes of output; the rest is not logged",
                       run->path, opt->output_max);
                ao_log_context_swap(prev);
        }

        char *copy = NULL;
        if (truncated) {
                static const char marker[] = " ...(line truncated)";
                copy = ao_xmalloc(len + sizeof(marker));
                memcpy(copy, line, len);
                memcpy(copy + len, marker, sizeof(marker));
                line = copy;
                len += sizeof(marker) - 1;
        }
        if (run->on_line)
                run->on_line(run, stream, line, len, run->userdata);
        else
                ao_proc_log_line(run, stream, line, len);
        free(copy);
}

static void line_append(struct run_lines *l, const char *data, size_t n)
{
        if (n == 0)
                return; /* an empty line: l->line may still be NULL */
        if (l->len + n > l->cap) {
                l->cap = AO_MAX(l->len + n, l->cap ? l->cap * 2 : 256);
                l->line = ao_xrealloc(l->line, l->cap);
        }
        memcpy(l->line + l->len, data, n);
        l->len += n;
}

/* Split a chunk into lines, carrying a partial line over to the next chunk. */
void proc_run_output_feed(struct ao_proc_run *run, enum ao_proc_stream stream, const char *data, size_t n)
{
        struct run_lines *l = &run->lines[stream];
        size_t line_max = run->env->options.line_max;
        while (n > 0) {
                const char *nl = memchr(data, '\n', n);
                size_t take = nl ? (size_t) (nl - data) : n;
                if (l->discarding) {
                        if (nl)
                                l->discarding = false;
                } else if (l->len + take > line_max) {
                        /* Too long: log what fits, drop the rest of this line. */
                        line_append(l, data, line_max - l->len);
                        emit(run, stream, l->line, l->len, true);
                        l->len = 0;
                        l->discarding = !nl;
                } else {
                        line_append(l, data, take);
                        if (nl) {
                                emit(run, stream, l->line, l->len, false);
                                l->len = 0;
                        }
                }
                size_t used = nl ? take + 1 : take;
                data += used;
                n -= used;
        }
}

/* EOF (or a broken pipe): flush a last line without newline, then done with this stream. */
void proc_run_output_end(struct ao_proc_run *run, enum ao_proc_stream stream)
{
        struct run_lines *l = &run->lines[stream];
        if (l->len > 0 && !l->discarding)
                emit(run, stream, l->line, l->len, false);
        l->len = 0;
        proc_run_output_close(run, stream);
}

void proc_run_output_close(struct ao_proc_run *run, enum ao_proc_stream stream)
{
        struct run_lines *l = &run->lines[stream];
        proc_join_flush(&l->join, &run->log_context.ctx, stream);
        proc_output_close(&run->out[stream]);
        free(l->line);
        l->line = NULL;
        l->len = l->cap = 0;
}
