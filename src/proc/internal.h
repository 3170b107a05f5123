/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/proc/. The files, and what each owns:
 *
 *   launcher.c        struct ao_proc, the launcher: its settings, the spawner per sandbox profile (with
 *                     that spawner's seccomp listener and the denied calls parked on it), in-process
 *                     launches, the list of runs, shutdown; and the owner of every event source below,
 *                     it routes what they report to the run concerned.
 *   run.c             struct ao_proc_run (run.h), one child's life as a state machine: started, output
 *                     closed, reaped, lingering, done; its timeout, kills and violations; its result.
 *   run-output.c      a run's output as lines: split, capped, marked when cut, given to on_line or logged.
 *   hook-log-join.c   LOG_PROXY_HOOK_JSON: an object printed over several lines, joined before it is logged.
 *   hook-log.c        one line of hook output logged: a JSON object as a structured record, else text.
 *   output.c          event source: one output pipe read in bounded chunks (on_data, on_eof), and the pool
 *                     of drained pipes that later runs get instead of new ones.
 *   spawner-client.c  event source: the connection to one spawner process (requests out; on_reply, and
 *                     on_exit when the process dies).
 *   reap.c            event source: the subreaper's SIGCHLD (on_exit for the children the owner knows;
 *                     orphans reaped and counted here).
 *   supervise.c       event source: the seccomp listeners children send (on_listener) and the calls
 *                     their filters deny (on_denied), answered EPERM.
 *   tree.c            whether a reaped run left any process anywhere (its group, our children file).
 *   launch-status.c   the launch status memfd shared with the spawners: a slot per request in flight.
 *   leftovers.c       at exit, what hooks left running outside their groups (ao_proc_end_leftovers()).
 *   spawner.c         addon-operator-spawner itself, a program of its own; protocol.h is its wire format.
 *
 * Calls go one way, down this graph; nothing calls back up except through a function pointer that
 * its caller handed down:
 *
 *   launcher.c       -> run.c, spawner-client.c, reap.c, supervise.c, tree.c, launch-status.c, output.c
 *   run.c            -> run-output.c, output.c, supervise.c, tree.c, launch-status.c
 *   run-output.c     -> output.c, hook-log-join.c, hook-log.c
 *   hook-log-join.c  -> hook-log.c
 *
 * The event sources know neither the run nor the launcher: each reports to whoever created it
 * through the ops table it was given, and a run reports to its launcher through struct run_ops
 * (run.h). This header declares the units below run.c; run.h adds the run.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ao/launch.h"
#include "ao/proc.h"
#include "ao/strbuf.h"

struct ao_error;
struct ao_reactor;
struct ao_source;
struct spawner_reply_msg;

#define READ_CHUNK    (64 * 1024)
#define PIPE_POOL_MAX 16

/* --- output.c: one output pipe ------------------------------------------------------------ */

struct output_ops {
        /** Bytes came from the pipe. @data is the pool's read buffer: valid during the call only. */
        void (*on_data)(void *owner, enum ao_proc_stream stream, const char *data, size_t n);
        /** The pipe ended (end of file, a hang-up, an error) while the loop watched it: close it. */
        void (*on_eof)(void *owner, enum ao_proc_stream stream);
};

/*
 * Output pipes of runs whose whole tree was gone when they were reaped, drained: only we hold
 * their write ends, so a later run can have them instead of a new pipe. The read ends stay
 * registered with the loop; their sources' userdata is NULL while here.
 */
struct output_pool {
        struct ao_reactor *reactor; /* borrowed, outlives the pool */
        struct pooled_pipe {
                int read_fd, write_fd;
                struct ao_source *source;
        } pipes[PIPE_POOL_MAX];
        size_t n_pipes;
        uint64_t reused;
        char read_buf[READ_CHUNK]; /* what every pipe reads into: one read at a time, on the main thread */
};

struct proc_output {
        struct output_pool *pool;     /* borrowed, outlives the output */
        const struct output_ops *ops; /* borrowed */
        void *owner;                  /* passed to ops */
        enum ao_proc_stream stream;
        int fd; /* read end, owned; -1 once closed */
        /*
         * The write end the child got (or, for stdout into a file, a copy of that file's fd), owned
         * while the child lives; -1 otherwise. Holding it means the pipe cannot hang up before the
         * child is reaped: an exit wakes the loop once, by SIGCHLD, instead of a hang-up first and
         * the exit a moment later. It is closed, and the pipe read to its end, when the child is.
         */
        int write_fd;
        struct ao_source *source; /* owned */
        bool poolable; /* drained, and nobody else can hold the write end: the pipe may serve again */
};

/** Closed, reporting to @ops with @owner once opened. */
void proc_output_init(struct proc_output *o, struct output_pool *pool, enum ao_proc_stream stream,
                      const struct output_ops *ops, void *owner);
/** A pipe, from the pool when it has one, read by the loop from now on. */
int proc_output_open(struct proc_output *o);
/** The child writes straight into @fd (borrowed): a copy stands in for the write end; nothing is read. */
int proc_output_redirect(struct proc_output *o, int fd);
/**
 * The child is reaped: drop our write end and read what it wrote (through on_data). With
 * @tree_gone nobody else can hold the write end, and a pipe read empty becomes poolable. Returns
 * true when the stream has ended: the owner ends it (no on_eof comes); false while a process the
 * hook left behind may still write.
 */
bool proc_output_reaped(struct proc_output *o, bool tree_gone);
/** Into the pool if poolable, else closed. Safe on a closed output. */
void proc_output_close(struct proc_output *o);
void proc_output_pool_init(struct output_pool *pool, struct ao_reactor *reactor);
/** Close the pipes kept for reuse. */
void proc_output_pool_done(struct output_pool *pool);

static inline bool proc_output_is_open(const struct proc_output *o)
{
        return o->fd >= 0;
}

/* --- hook-log.c, hook-log-join.c: a line of output into the log ---------------------------- */

/* LOG_PROXY_HOOK_JSON: an object being printed over several lines. */
struct json_join {
        struct ao_strbuf text; /* the lines so far, joined by '\n'; empty: none pending */
        int depth;             /* open braces and brackets outside strings */
        bool in_string, escaped;
};

/** Log a line that is one JSON object as a structured record; false (nothing logged) for any other line. */
bool proc_log_json_line(const struct ao_log_context *ctx, enum ao_proc_stream stream, const char *line,
                        size_t len);
/** A line logged as it is: a structured record when it is one JSON object, else text at info. */
void proc_log_line_now(const struct ao_log_context *ctx, enum ao_proc_stream stream, const char *line,
                       size_t len);
/** Whether @line was taken into (or completed) a multi-line object pending in @j. */
bool proc_join_json_line(struct json_join *j, const struct ao_log_context *ctx, enum ao_proc_stream stream,
                         const char *line, size_t len);
/** The stream ended: log what is still pending line by line, and release the buffer. */
void proc_join_flush(struct json_join *j, const struct ao_log_context *ctx, enum ao_proc_stream stream);

/* --- spawner-client.c: one spawner process ------------------------------------------------- */

struct spawner_ops {
        /** A reply: request @r->id's child is @r->pid (< 0: -errno, nothing started). */
        void (*on_reply)(void *owner, const struct spawner_reply_msg *r);
        /** Replies were read (maybe none came). Returns whether the owner waits for any next reply. */
        bool (*on_replies_read)(void *owner);
        /**
         * The process exited, and the replies it sent were read: the owner fails the requests it
         * still owes and calls proc_spawner_done().
         */
        void (*on_exit)(void *owner);
};

/* What every spawner of a launcher starts with. */
struct spawner_setup {
        struct ao_reactor *reactor; /* borrowed */
        const char *path;           /* the spawner binary, borrowed */
        int status_fd;              /* the launch status memfd, borrowed; -1: none */
        int listener_fd;            /* where children send their seccomp listeners, borrowed */
        /*
         * Spawner replies stay in the socket until a run's pid is needed (its output ended, a
         * timeout, a kill, SIGCHLD, a seccomp notification), which spares the loop one wake-up
         * per run. Only with the subreaper: its SIGCHLD is what notices a hook that exited while a
         * descendant keeps its output open.
         */
        bool lazy_replies;
        uint32_t last_serial; /* the serial the last spawner started got */
        const struct spawner_ops *ops;
};

struct outgoing;

/* One spawner process: it serves one sandbox profile (or none). Fields are spawner-client.c's. */
struct spawner {
        const struct spawner_ops *ops; /* borrowed */
        void *owner;
        bool lazy_replies;
        uint32_t serial; /* unique per spawner ever started: its listener's tag, so a dead spawner's late
                            listener can never attach to the one that took over its slot */
        const struct ao_sandbox_profile *profile; /* borrowed; NULL: unsandboxed children */
        pid_t pid;
        int sock;                /* owned */
        struct ao_source *io;    /* owned */
        struct ao_source *child; /* owned; owns the pidfd */
        struct outgoing *queue_head, **queue_tail;
        size_t n_starting; /* requests whose reply is outstanding */
        size_t n_needing;  /* of those, the ones whose pid is needed (lazy replies: poll while > 0) */
        bool wants_any;    /* lazy replies: an unknown pid waits for the next reply (reaper, notification) */
};

enum spawner_drain {
        SPAWNER_DRAIN_ALL,      /* until the socket is empty: it polled readable, and must not stay so */
        SPAWNER_DRAIN_ANSWERED, /* until no request is left unanswered (a reply for a freed run stays) */
};

typedef void spawner_reply_handler(void *owner, const struct spawner_reply_msg *r);

/** Start the spawner process for @profile (NULL: unsandboxed), reporting to @setup->ops with @owner. */
int proc_spawner_init(struct spawner *s, struct spawner_setup *setup,
                      const struct ao_sandbox_profile *profile, void *owner, struct ao_error *reterr);
/** Close the socket (the spawner's signal to exit; the subreaper collects it) and release the rest. */
void proc_spawner_done(struct spawner *s);
/** Reap the spawner now if it exited (from the SIGCHLD reaper); see ao_source_child_reap(). */
int proc_spawner_reap(struct spawner *s);
/**
 * Send (or queue) the request for run @id. The two write ends stay the caller's: a request
 * that has to wait for the socket holds copies of its own. Counts one reply as owed.
 */
int proc_spawner_request(struct spawner *s, uint64_t id, int status_slot, const char *path, char *const *argv,
                         char *const *envp, const char *cwd, int stdout_fd, int stderr_fd);
/** One owed reply was had or given up on; @needed: its pid had been asked for. */
void proc_spawner_settle(struct spawner *s, bool needed);
/** The pid of one owed reply is needed, not urgently: poll for replies until it is settled. */
void proc_spawner_need_reply(struct spawner *s);
/** An unknown pid waits: poll for the next reply, if any is owed. */
void proc_spawner_want_any(struct spawner *s);
/** Read the replies that came (on_reply each, then on_replies_read). Runs may finish meanwhile. */
void proc_spawner_read_replies(struct spawner *s, enum spawner_drain until);
/** Read the replies that came into @handle, and nothing else. */
void proc_spawner_drain(struct spawner *s, spawner_reply_handler *handle, enum spawner_drain until);

static inline bool proc_spawner_owes_replies(const struct spawner *s)
{
        return s->n_starting > 0;
}

/* --- reap.c: the subreaper ----------------------------------------------------------------- */

enum reap_claim {
        REAP_NOT_OURS, /* the owner does not know the pid */
        REAP_REAPED,   /* reaped (and reported): look for the next */
        REAP_STUCK,    /* the owner's, but it could not be reaped now: its own source will */
};

struct reaper_ops {
        /** @pid exited: reap it if it is the owner's (a run's child, a spawner). */
        enum reap_claim (*on_exit)(void *owner, pid_t pid);
        /**
         * @pid is still unknown: read the spawner replies that came, as @pid may be the child of
         * a run whose reply was not read. False when none are owed. Asked once per pass.
         */
        bool (*read_replies)(void *owner, pid_t pid);
        /**
         * Whether unknown @pid is to be left alone: a reply still owed may name it. The owner then
         * kicks the reaper (proc_reaper_kick()) when replies come.
         */
        bool (*hold)(void *owner, pid_t pid);
};

struct reaper {
        const struct reaper_ops *ops; /* borrowed */
        void *owner;
        struct ao_source *sigchld; /* owned; NULL: not a subreaper */
        struct ao_source *retry;   /* owned; a one-shot defer */
        bool deferred;             /* an exited child was held: a kick is to look again */
        uint64_t orphans;
};

/** Become the child subreaper and reap on every SIGCHLD. */
int proc_reaper_init(struct reaper *r, struct ao_reactor *reactor, const struct reaper_ops *ops, void *owner);
void proc_reaper_done(struct reaper *r);
/** Spawner replies came in: children held back while they were owed may be placed now. */
void proc_reaper_kick(struct reaper *r);

static inline bool proc_reaper_active(const struct reaper *r)
{
        return r->sigchld != NULL;
}

/* --- supervise.c: seccomp notifications ---------------------------------------------------- */

/* A system call a filter denied; its caller waits in the kernel for the answer. */
struct denied_call {
        uint64_t id;
        pid_t pid;
        int nr;
};

struct notify_ops {
        /**
         * A denied call: true to have it answered EPERM now, false when the owner keeps it and
         * answers it later with proc_notify_answer().
         */
        bool (*on_denied)(void *owner, const struct denied_call *call);
        /** Every process using the filter is gone. NULL: keep watching. */
        void (*on_hangup)(void *owner);
};

/* A filter's notification fd, watched. */
struct notify_listener {
        int fd;                       /* owned; -1 if none */
        struct ao_source *source;     /* owned */
        const struct notify_ops *ops; /* borrowed */
        void *owner;
};

/** Watch @fd (taken: it stays in @l->fd even when watching fails, for the caller to judge). */
int proc_notify_watch(struct notify_listener *l, struct ao_reactor *reactor, int fd,
                      const struct notify_ops *ops, void *owner);
/** Answer a kept call EPERM (a caller that died meanwhile is no error). */
void proc_notify_answer(struct notify_listener *l, uint64_t id);
void proc_notify_done(struct notify_listener *l);

struct supervisor_ops {
        /** A child sent its filter's listener, tagged with its run id or SPAWNER_LISTENER_TAG | serial. */
        void (*on_listener)(void *owner, uint64_t tag, int fd);
};

/* The socket children send their listeners to: rx is ours, tx what they get. */
struct supervisor {
        const struct supervisor_ops *ops; /* borrowed */
        void *owner;
        int rx, tx;                  /* owned */
        struct ao_source *rx_source; /* owned */
};

int proc_supervisor_init(struct supervisor *sv, struct ao_reactor *reactor, const struct supervisor_ops *ops,
                         void *owner);
void proc_supervisor_done(struct supervisor *sv);

/* --- tree.c: what a run left behind -------------------------------------------------------- */

struct tree_ops {
        /** Whether @pid is a child the owner knows (a spawner, a run's leader). */
        bool (*known)(void *owner, pid_t pid);
        /** Read the spawner replies that came, to place runs not known yet; false when none are owed. */
        bool (*read_replies)(void *owner);
};

struct tree {
        const struct tree_ops *ops; /* borrowed */
        void *owner;
        bool subreaper;  /* without it, descendants that escaped go elsewhere: never "gone" */
        int children_fd; /* the main thread's children file; -1: not open, -2: unavailable */
};

void proc_tree_init(struct tree *t, bool subreaper, const struct tree_ops *ops, void *owner);
void proc_tree_done(struct tree *t);
/**
 * After reaping a run's child whose process group is gone: whether no process of its tree is
 * left anywhere (may read spawner replies to place children it does not know yet).
 */
bool proc_tree_gone(struct tree *t);
/** Whether @pid's process group is empty (zombies count as members). */
bool proc_group_gone(pid_t pid);
/** The process group of @pid, -1 when unknown: a hook's descendants share their hook's group (its pid). */
pid_t proc_group_of(pid_t pid);

/* --- launch-status.c: where spawners' children report a failed launch after the reply -------- */

struct launch_status {
        int fd;                          /* the memfd, given to spawners; -1: none */
        struct ao_launch_failure *slots; /* its mapping: SPAWNER_STATUS_SLOTS */
        uint32_t *free_slots;            /* a stack */
        size_t n_free;
};

void proc_launch_status_setup(struct launch_status *ls);
void proc_launch_status_done(struct launch_status *ls);
/** A cleared slot for a request; -1 when there is none to give. */
int proc_launch_status_take(struct launch_status *ls);
/** Whether the child of @slot reported a failed launch, and where: only once it is reaped. */
bool proc_launch_status_read(const struct launch_status *ls, int slot, struct ao_launch_failure *ret);
/** Give *@slot back and set it to -1: only once no child can write there (reaped, or never started). */
void proc_launch_status_release(struct launch_status *ls, int *slot);
