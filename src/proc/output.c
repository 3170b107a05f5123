/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A run's stdout and stderr: non-blocking pipes read in bounded chunks per
 * loop iteration (so 10 MB of output never stalls the loop), split into
 * lines, each line capped at line_max and the whole run at output_max.
 * Past the run cap the output is still read, so the hook never blocks on a
 * full pipe, but no longer logged.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "internal.h"

/* Reads per dispatch: after this many the loop serves others before reading on. */
#define READS_PER_DISPATCH 4

static const char *const stream_names[] = {[AO_PROC_STDOUT] = "stdout", [AO_PROC_STDERR] = "stderr"};

void ao_proc_log_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len)
{
        if (run->proc->options.join_json_lines && ao_proc_join_json_line(run, stream, line, len))
                return;
        ao_proc_log_line_now(run, stream, line, len);
}

void ao_proc_log_line_now(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len)
{
        if (ao_proc_log_json_line(run, stream, line, len))
                return;
        /* Lines are logged as C strings: a NUL byte from a hook becomes U+FFFD instead of cutting the line. */
        struct ao_strbuf sb = {0};
        for (const char *p = line, *end = line + len; p < end;) {
                const char *nul = memchr(p, '\0', (size_t) (end - p));
                size_t n = nul ? (size_t) (nul - p) : (size_t) (end - p);
                ao_strbuf_append_n(&sb, p, n);
                p += n;
                if (nul) {
                        ao_strbuf_append(&sb, "\xEF\xBF\xBD");
                        p++;
                }
        }
        const struct ao_log_context *prev = ao_log_context_swap(&run->log_context);
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"output", stream_names[stream]}), "%s", ao_strbuf_str(&sb));
        ao_log_context_swap(prev);
        ao_strbuf_done(&sb);
}

static void emit(struct ao_proc_run *run, struct run_output *o, const char *line, size_t len, bool truncated)
{
        const struct ao_proc_options *opt = &run->proc->options;
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
                const struct ao_log_context *prev = ao_log_context_swap(&run->log_context);
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
                run->on_line(run, o->stream, line, len, run->userdata);
        else
                ao_proc_log_line(run, o->stream, line, len);
        free(copy);
}

static void line_append(struct run_output *o, const char *data, size_t n)
{
        if (n == 0)
                return; /* an empty line: o->line may still be NULL */
        if (o->line_len + n > o->line_cap) {
                o->line_cap = AO_MAX(o->line_len + n, o->line_cap ? o->line_cap * 2 : 256);
                o->line = ao_xrealloc(o->line, o->line_cap);
        }
        memcpy(o->line + o->line_len, data, n);
        o->line_len += n;
}

/* Split a chunk into lines, carrying a partial line over to the next chunk. */
void ao_proc_output_feed(struct ao_proc_run *run, struct run_output *o, const char *data, size_t n)
{
        size_t line_max = run->proc->options.line_max;
        while (n > 0) {
                const char *nl = memchr(data, '\n', n);
                size_t take = nl ? (size_t) (nl - data) : n;
                if (o->discarding) {
                        if (nl)
                                o->discarding = false;
                } else if (o->line_len + take > line_max) {
                        /* Too long: log what fits, drop the rest of this line. */
                        line_append(o, data, line_max - o->line_len);
                        emit(run, o, o->line, o->line_len, true);
                        o->line_len = 0;
                        o->discarding = !nl;
                } else {
                        line_append(o, data, take);
                        if (nl) {
                                emit(run, o, o->line, o->line_len, false);
                                o->line_len = 0;
                        }
                }
                size_t used = nl ? take + 1 : take;
                data += used;
                n -= used;
        }
}

static void output_ended(struct ao_proc_run *run, struct run_output *o)
{
        ao_proc_output_end(run, o);
        ao_proc_run_output_ended(run);
}

/* One read into the shared buffer, fed to the line splitter. */
static ssize_t read_chunk(struct ao_proc_run *run, struct run_output *o)
{
        ssize_t n = read(o->fd, run->proc->read_buf, sizeof(run->proc->read_buf));
        if (n > 0) {
                run->result.output_bytes[o->stream] += (uint64_t) n;
                ao_proc_output_feed(run, o, run->proc->read_buf, (size_t) n);
        }
        return n;
}

/*
 * Read what the pipe has, READS_PER_DISPATCH chunks at most (the loop serves
 * others before reading on); true once the stream has ended.
 */
static bool read_available(struct ao_proc_run *run, struct run_output *o, bool hung_up)
{
        for (int i = 0; i < READS_PER_DISPATCH; i++) {
                ssize_t n = read_chunk(run, o);
                if (n > 0) {
                        /* Less than asked of a hung-up pipe: that was all of it. */
                        if (hung_up && (size_t) n < sizeof(run->proc->read_buf))
                                return true;
                        continue;
                }
                return !(n < 0 && (errno == EAGAIN || errno == EINTR));
        }
        return false;
}

/* A pooled pipe has no writer but us, so nothing can come; should something, it must not spin the loop. */
static void discard(int fd)
{
        static char scratch[4096];
        for (int i = 0; i < READS_PER_DISPATCH && read(fd, scratch, sizeof(scratch)) > 0; i++)
                ;
}

static int on_readable(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct run_output *o = userdata;
        if (!o) {
                discard(fd);
                return 0;
        }
        struct ao_proc_run *run = run_of_output(o);
        /*
         * A pipe hung up (no writer is left, and none can come: the hook has no way to our end)
         * with nothing in it has ended: no read needed to be told so.
         */
        bool hung_up = revents & AO_IO_HUP;
        if ((hung_up && !(revents & AO_IO_IN)) || read_available(run, o, hung_up))
                output_ended(run, o);
        return 0;
}

/* True once the pipe is empty; false when READS_PER_DISPATCH chunks were not enough, or on an error. */
static bool read_until_empty(struct ao_proc_run *run, struct run_output *o)
{
        for (int i = 0; i < READS_PER_DISPATCH; i++) {
                ssize_t n = read_chunk(run, o);
                if (n <= 0)
                        return n < 0 && errno == EAGAIN;
        }
        return false;
}

/*
 * The child is reaped: our write end goes, and what it wrote is read now. The
 * pipe ends here unless a process the hook left behind still holds it; then
 * the loop reads on (and the run lingers, see spawn.c). Ending the stream
 * does not finish the run: the caller does, once it is done with the exit.
 */
void ao_proc_output_child_gone(struct ao_proc_run *run, struct run_output *o)
{
        /*
         * No process of the run's tree is left, so our write end is the only one: what the pipe
         * holds is all there will be, and once read the pipe is as good as new.
         */
        if (run->result.tree_gone && o->fd >= 0 && o->write_fd >= 0 && read_until_empty(run, o)) {
                o->poolable = true;
                ao_proc_output_end(run, o);
                return;
        }
        o->write_fd = ao_safe_close(o->write_fd);
        if (o->fd >= 0 && read_available(run, o, false))
                ao_proc_output_end(run, o);
}

/* A pipe from the pool for @o, as ao_proc_output_open() would make it; false when the pool is empty. */
static bool pool_take(struct ao_proc *p, struct run_output *o)
{
        if (p->n_pipes == 0)
                return false;
        struct pooled_pipe *pp = &p->pipes[--p->n_pipes];
        o->fd = pp->read_fd;
        o->write_fd = pp->write_fd;
        o->source = pp->source;
        ao_source_set_userdata(o->source, o);
        p->pipes_reused++;
        return true;
}

static bool pool_put(struct ao_proc *p, struct run_output *o)
{
        if (!o->poolable || !o->source || p->n_pipes == PIPE_POOL_MAX)
                return false;
        /*
         * The hook shared the write end's open file: whatever status it set there (O_NONBLOCK,
         * O_ASYNC with its owner, packet mode) must not reach the next hook.
         */
        if (fcntl(o->write_fd, F_SETFL, 0) < 0)
                return false;
        ao_source_set_userdata(o->source, NULL);
        p->pipes[p->n_pipes++] =
            (struct pooled_pipe){.read_fd = o->fd, .write_fd = o->write_fd, .source = o->source};
        o->fd = o->write_fd = -1;
        o->source = NULL;
        o->poolable = false;
        return true;
}

void ao_proc_output_pool_done(struct ao_proc *p)
{
        while (p->n_pipes > 0) {
                struct pooled_pipe *pp = &p->pipes[--p->n_pipes];
                (void) ao_source_free_closing_fd(pp->source);
                (void) ao_safe_close(pp->write_fd);
        }
}

int ao_proc_output_open(struct ao_proc_run *run, enum ao_proc_stream stream)
{
        if (pool_take(run->proc, &run->out[stream]))
                return 0;
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0)
                return ao_negative_errno();
        /* Only our end is non-blocking: the hook keeps ordinary blocking writes. */
        if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
                int k = ao_negative_errno();
                close(fds[0]), close(fds[1]);
                return k;
        }
        struct run_output *o = &run->out[stream];
        o->fd = fds[0];
        o->write_fd = fds[1];
        return ao_reactor_add_io(run->proc->reactor, &o->source, o->fd, AO_IO_IN, on_readable, o);
}

/* EOF (or a broken pipe): flush a last line without newline, then done with this stream. */
void ao_proc_output_end(struct ao_proc_run *run, struct run_output *o)
{
        if (o->line_len > 0 && !o->discarding)
                emit(run, o, o->line, o->line_len, false);
        o->line_len = 0;
        ao_proc_output_close(o);
}

void ao_proc_output_close(struct run_output *o)
{
        struct ao_proc_run *run = run_of_output(o);
        ao_proc_join_flush(run, o->stream);
        (void) pool_put(run->proc, o);
        /* The read end was never handed to anyone: closing it is all epoll needs. */
        if (o->source)
                o->fd = -1;
        o->source = ao_source_free_closing_fd(o->source);
        o->fd = ao_safe_close(o->fd);
        o->write_fd = ao_safe_close(o->write_fd);
        free(o->line);
        o->line = NULL;
        o->line_len = o->line_cap = 0;
}
