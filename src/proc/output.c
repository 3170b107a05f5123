/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One output pipe of a child: non-blocking, read in bounded chunks per loop
 * iteration (so 10 MB of output never stalls the loop) and handed to the
 * owner as it comes (on_data), until it ends (on_eof). What the bytes mean
 * is the owner's business (run-output.c makes lines of them).
 *
 * Pipes whose child left nothing behind are drained and kept in a pool, so
 * a later child gets them instead of a new pipe (see tree.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "ao/reactor.h"
#include "internal.h"

/* Reads per dispatch: after this many the loop serves others before reading on. */
#define READS_PER_DISPATCH 4

/* One read into the pool's buffer, handed to the owner. */
static ssize_t read_chunk(struct proc_output *o)
{
        char *buf = o->pool->read_buf;
        ssize_t n = read(o->fd, buf, sizeof(o->pool->read_buf));
        if (n > 0)
                o->ops->on_data(o->owner, o->stream, buf, (size_t) n);
        return n;
}

/*
 * Read what the pipe has, READS_PER_DISPATCH chunks at most (the loop serves
 * others before reading on); true once the stream has ended.
 */
static bool read_available(struct proc_output *o, bool hung_up)
{
        for (int i = 0; i < READS_PER_DISPATCH; i++) {
                ssize_t n = read_chunk(o);
                if (n > 0) {
                        /* Less than asked of a hung-up pipe: that was all of it. */
                        if (hung_up && (size_t) n < sizeof(o->pool->read_buf))
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
        struct proc_output *o = userdata;
        if (!o) {
                discard(fd);
                return 0;
        }
        /*
         * A pipe hung up (no writer is left, and none can come: the hook has no way to our end)
         * with nothing in it has ended: no read needed to be told so.
         */
        bool hung_up = revents & AO_IO_HUP;
        if ((hung_up && !(revents & AO_IO_IN)) || read_available(o, hung_up))
                o->ops->on_eof(o->owner, o->stream);
        return 0;
}

/* True once the pipe is empty; false when READS_PER_DISPATCH chunks were not enough, or on an error. */
static bool read_until_empty(struct proc_output *o)
{
        for (int i = 0; i < READS_PER_DISPATCH; i++) {
                ssize_t n = read_chunk(o);
                if (n <= 0)
                        return n < 0 && errno == EAGAIN;
        }
        return false;
}

/*
 * The pipe ends here unless a process the hook left behind still holds it;
 * then the loop reads on (and the run lingers, see run.c).
 */
bool proc_output_reaped(struct proc_output *o, bool tree_gone)
{
        /*
         * No process of the run's tree is left, so our write end is the only one: what the pipe
         * holds is all there will be, and once read the pipe is as good as new.
         */
        if (tree_gone && o->fd >= 0 && o->write_fd >= 0 && read_until_empty(o)) {
                o->poolable = true;
                return true;
        }
        o->write_fd = ao_safe_close(o->write_fd);
        return o->fd >= 0 && read_available(o, false);
}

/* A pipe from the pool for @o, as proc_output_open() would make it; false when the pool is empty. */
static bool pool_take(struct output_pool *pool, struct proc_output *o)
{
        if (pool->n_pipes == 0)
                return false;
        struct pooled_pipe *pp = &pool->pipes[--pool->n_pipes];
        o->fd = pp->read_fd;
        o->write_fd = pp->write_fd;
        o->source = pp->source;
        ao_source_set_userdata(o->source, o);
        pool->reused++;
        return true;
}

static bool pool_put(struct output_pool *pool, struct proc_output *o)
{
        if (!o->poolable || !o->source || pool->n_pipes == PIPE_POOL_MAX)
                return false;
        /*
         * The hook shared the write end's open file: whatever status it set there (O_NONBLOCK,
         * O_ASYNC with its owner, packet mode) must not reach the next hook.
         */
        if (fcntl(o->write_fd, F_SETFL, 0) < 0)
                return false;
        ao_source_set_userdata(o->source, NULL);
        pool->pipes[pool->n_pipes++] =
            (struct pooled_pipe){.read_fd = o->fd, .write_fd = o->write_fd, .source = o->source};
        o->fd = o->write_fd = -1;
        o->source = NULL;
        o->poolable = false;
        return true;
}

void proc_output_pool_init(struct output_pool *pool, struct ao_reactor *reactor)
{
        pool->reactor = reactor;
        pool->n_pipes = 0;
        pool->reused = 0;
}

void proc_output_pool_done(struct output_pool *pool)
{
        while (pool->n_pipes > 0) {
                struct pooled_pipe *pp = &pool->pipes[--pool->n_pipes];
                (void) ao_source_free_closing_fd(pp->source);
                (void) ao_safe_close(pp->write_fd);
        }
}

void proc_output_init(struct proc_output *o, struct output_pool *pool, enum ao_proc_stream stream,
                      const struct output_ops *ops, void *owner)
{
        *o = (struct proc_output){
            .pool = pool, .ops = ops, .owner = owner, .stream = stream, .fd = -1, .write_fd = -1};
}

int proc_output_open(struct proc_output *o)
{
        if (pool_take(o->pool, o))
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
        o->fd = fds[0];
        o->write_fd = fds[1];
        return ao_reactor_add_io(o->pool->reactor, &o->source, o->fd, AO_IO_IN, on_readable, o);
}

int proc_output_redirect(struct proc_output *o, int fd)
{
        o->write_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        return o->write_fd < 0 ? ao_negative_errno() : 0;
}

void proc_output_close(struct proc_output *o)
{
        (void) pool_put(o->pool, o);
        /* The read end was never handed to anyone: closing it is all epoll needs. */
        if (o->source)
                o->fd = -1;
        o->source = ao_source_free_closing_fd(o->source);
        o->fd = ao_safe_close(o->fd);
        o->write_fd = ao_safe_close(o->write_fd);
}
