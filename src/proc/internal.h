/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Private to src/proc/: the launcher, its runs, and the pieces they are made of. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ao/launch.h"
#include "ao/proc.h"
#include "ao/strbuf.h"

struct ao_source;
struct spawner_reply_msg;

#define READ_CHUNK (64 * 1024)

/* One output pipe of a run, read line by line. */
/* LOG_PROXY_HOOK_JSON: an object being printed over several lines (hook-log-join.c). */
struct json_join {
        struct ao_strbuf text; /* the lines so far, joined by '\n'; empty: none pending */
        int depth;             /* open braces and brackets outside strings */
        bool in_string, escaped;
};

struct run_output {
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
        char *line;    /* partial line, owned */
        size_t line_len, line_cap;
        bool discarding; /* the current line went over line_max: drop until its newline */
        struct json_join join;
};

enum run_state {
        RUN_STARTING, /* waiting for the spawner's reply */
        RUN_RUNNING,  /* started, not reaped */
        RUN_EXITED,   /* reaped; draining output */
};

struct ao_proc_run {
        struct ao_proc *proc; /* borrowed, outlives the run */
        struct ao_proc_run *prev, *next;
        uint64_t id;
        enum run_state state;
        struct spawner *spawner; /* borrowed while STARTING: the spawner that owes the reply */
        pid_t pid;
        struct ao_source *child;  /* owned; owns the pidfd */
        struct ao_source *timer;  /* timeout, then kill grace, then output linger; owned */
        struct run_output out[2]; /* by enum ao_proc_stream */
        int listener;             /* seccomp notification fd, owned; -1 if none */
        struct ao_source *listener_source;

        const struct ao_sandbox_profile *profile; /* borrowed */
        uint64_t timeout_usec;
        bool term_sent, kill_sent;
        bool timeout_due; /* the timeout fired while the pid was unknown: act on it at launch */
        bool needs_pid;   /* STARTING, and something needs the pid: its spawner polls for the reply */
        int status_slot; /* the launch status slot its child reports a failure in (launch-status.c); -1: none */
        uint64_t started_usec;
        size_t logged_bytes;
        unsigned violations_logged;

        /* Owned copies of what the spec pointed at. */
        char *path;
        char *context_strings[3];
        struct ao_log_context log_context;
        ao_proc_line_handler *on_line;
        ao_proc_exit_handler *on_exit;
        void *userdata;

        struct ao_proc_result result;
};

struct outgoing;

/* A parked seccomp notification whose caller is not known yet (its spawn reply is in flight). */
struct parked_notification {
        uint64_t id;
        pid_t pid;
        int nr;
        uint64_t horizon; /* the last run id when it came: only runs up to this one can be its caller */
};

#define SPAWNERS_MAX  16
#define PIPE_POOL_MAX 16
#define PARKED_MAX    32

/* One spawner process: it serves one sandbox profile (or none) and holds that profile's filter. */
struct spawner {
        struct ao_proc *proc; /* borrowed */
        uint32_t index;       /* slot in proc->spawners */
        uint32_t serial;      /* unique per spawner ever started: its listener's tag, so a dead spawner's late
                            listener can never attach to the one that took over its slot */
        const struct ao_sandbox_profile *profile; /* borrowed; NULL: unsandboxed children */
        pid_t pid;
        int sock;                /* owned */
        struct ao_source *io;    /* owned */
        struct ao_source *child; /* owned; owns the pidfd */
        int listener;            /* the profile filter's notification fd, owned; -1 if none */
        struct ao_source *listener_source;
        struct parked_notification parked[PARKED_MAX];
        size_t n_parked;
        struct outgoing *queue_head, **queue_tail;
        size_t n_starting; /* its runs whose reply is outstanding */
        size_t n_needing;  /* of those, the ones whose pid is needed (lazy replies: poll while > 0) */
        bool wants_any;    /* lazy replies: an unknown pid waits for the next reply (reaper, notification) */
};

struct ao_proc {
        struct ao_reactor *reactor; /* borrowed, outlives the launcher */
        struct ao_proc_options options;
        struct ao_proc_run *runs;
        size_t n_runs;
        bool reap_deferred; /* an exited child was left for later because replies were outstanding */
        pid_t exited_pid;   /* while the reaper reads replies: the child it saw exit, to reap at launch */
        pid_t unknown_pid;  /* the exited child the reaper could not place yet, */
        uint64_t unknown_horizon; /* and the last run id when it was first seen */
        /*
         * Spawner replies stay in the socket until a run's pid is needed (its
         * output ended, a timeout, a kill, SIGCHLD, a seccomp notification),
         * which spares the loop one wake-up per run. Only with the subreaper:
         * its SIGCHLD is what notices a hook that exited while a descendant
         * keeps its output open.
         */
        bool lazy_replies;
        uint64_t next_id;
        uint32_t next_spawner_serial;
        bool refusing; /* shutdown began */
        struct ao_shutdown *shutdown;

        char *spawner_path;               /* NULL: children are cloned in process */
        int status_fd;                    /* the launch status memfd, given to spawners; -1: none */
        struct ao_launch_failure *status; /* its mapping: SPAWNER_STATUS_SLOTS */
        uint32_t *status_free;            /* free slots, a stack */
        size_t n_status_free;
        struct spawner *spawners[SPAWNERS_MAX]; /* started on first use of their profile */
        void *direct_stack;                     /* clone stack for in-process launches, owned */

        /* Children send their seccomp listener to listener_rx; listener_tx is what they get. */
        int listener_rx, listener_tx;
        struct ao_source *listener_rx_source;

        struct ao_source *sigchld; /* subreaper mode */
        int children_fd; /* the main thread's children file (tree.c); -1: not open, -2: unavailable */
        /*
         * Output pipes of runs whose whole tree was gone when they were reaped, drained: only we hold
         * their write ends, so a later run can have them instead of a new pipe (output.c). The read
         * ends stay registered with the loop; their sources' userdata is NULL while here.
         */
        struct pooled_pipe {
                int read_fd, write_fd;
                struct ao_source *source;
        } pipes[PIPE_POOL_MAX];
        size_t n_pipes;
        uint64_t pipes_reused;
        struct ao_source *reaper_retry;
        uint64_t orphans;

        char read_buf[READ_CHUNK];
};

static inline struct ao_proc_run *run_of_output(struct run_output *o)
{
        return (struct ao_proc_run *) (void *) ((char *) (o - o->stream) - offsetof(struct ao_proc_run, out));
}

/* spawn.c */
struct ao_proc_run *ao_proc_run_find(struct ao_proc *p, uint64_t id);
struct ao_proc_run *ao_proc_run_find_pid(struct ao_proc *p, pid_t pid);
/**
 * A launch finished (in-process or via the spawner): track the child or
 * report the failure. A child whose output has ended is reaped at once if it
 * has exited, which may report the run and free it before this returns.
 */
void ao_proc_run_launched(struct ao_proc_run *run, pid_t pid, int pidfd,
                          const struct ao_launch_failure *failure);
/** One of the run's output streams ended; with both gone the run may finish (and be freed). */
void ao_proc_run_output_ended(struct ao_proc_run *run);
/** The run's output pipes and the leader may all be done: report and free when they are. */
void ao_proc_run_maybe_finish(struct ao_proc_run *run);

/* spawner-client.c */
/** The spawner for @profile, started on first use; NULL when none can run (launch in process then). */
struct spawner *ao_proc_spawner_for(struct ao_proc *p, const struct ao_sandbox_profile *profile);
struct spawner *ao_proc_spawner_stop(struct spawner *s);
pid_t ao_proc_spawner_pid(const struct spawner *s);
/** Reap the spawner now if it exited (from the SIGCHLD reaper); see ao_source_child_reap(). */
int ao_proc_spawner_reap(struct spawner *s);
/** @run (STARTING) needs its pid, not urgently: read its reply when it arrives. */
void ao_proc_spawner_want_reply(struct ao_proc_run *run);
/**
 * @run (STARTING) needs its pid now: read the replies its spawner has sent,
 * and poll for its own if it was not among them. Runs launched meanwhile
 * may finish and be freed, @run among them.
 */
void ao_proc_spawner_collect(struct ao_proc_run *run);
/** Read what every spawner owing replies has sent; runs may finish and be freed meanwhile. */
void ao_proc_spawners_collect(struct ao_proc *p);
/** An unknown pid waits: every spawner owing replies polls for the next one. */
void ao_proc_spawners_want_any(struct ao_proc *p);
/** Whether any spawner owes a reply (the sum of their n_starting is not 0). */
bool ao_proc_replies_outstanding(const struct ao_proc *p);

/* launch-status.c: where spawners' children report a failed launch after the reply went out. */
void ao_proc_launch_status_setup(struct ao_proc *p);
void ao_proc_launch_status_done(struct ao_proc *p);
/** A cleared slot for @run's request in run->status_slot; it stays -1 when there is none to give. */
void ao_proc_launch_status_take(struct ao_proc_run *run);
/** Copy what the child reported into run->result: only once it is reaped. */
void ao_proc_launch_status_read(struct ao_proc_run *run);
/** Give the slot back: only once no child of the run can write there (reaped, or never started). */
void ao_proc_launch_status_release(struct ao_proc_run *run);
/** Whether a run up to id @horizon still waits for its reply (from @s, or from any spawner if NULL). */
bool ao_proc_reply_owed(const struct ao_proc *p, const struct spawner *s, uint64_t horizon);
/** Before the launcher is freed: learn the pids of runs still starting, without reporting anything. */
void ao_proc_spawners_learn_pids(struct ao_proc *p);
/**
 * Send (or queue) a request for @run. The two write ends stay the caller's:
 * a request that has to wait for the socket holds copies of its own. The
 * reply arrives through ao_proc_run_launched().
 */
int ao_proc_spawner_request(struct spawner *s, struct ao_proc_run *run, char *const *argv, char *const *envp,
                            const char *cwd, int stdout_fd, int stderr_fd);

/* hook-log.c */
/** Log a line that is one JSON object as a structured record; false (nothing logged) for any other line. */
bool ao_proc_log_json_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len);
/* A line logged as it is: a structured record when it is one JSON object, else text at info. */
void ao_proc_log_line_now(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len);
/* With join_json_lines: whether @line was taken into (or completed) a multi-line object. */
bool ao_proc_join_json_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line,
                            size_t len);
/* The stream ended: log what is still pending line by line, and release the buffer. */
void ao_proc_join_flush(struct ao_proc_run *run, enum ao_proc_stream stream);

/* output.c */
int ao_proc_output_open(struct ao_proc_run *run, enum ao_proc_stream stream);
void ao_proc_output_child_gone(struct ao_proc_run *run, struct run_output *o);
/** Close the pipes kept for reuse (at ao_proc_free). */
void ao_proc_output_pool_done(struct ao_proc *p);

/* tree.c */
/**
 * After reaping a run's child whose process group is gone: whether no process of its tree is
 * left anywhere (may read spawner replies to place children it does not know yet).
 */
bool ao_proc_tree_gone(struct ao_proc *p);
/** Whether @pid's process group is empty (zombies count as members). */
bool ao_proc_group_gone(pid_t pid);
void ao_proc_tree_done(struct ao_proc *p);
/* A chunk of a run's output: split into lines, each capped and logged (or given to on_line). */
void ao_proc_output_feed(struct ao_proc_run *run, struct run_output *o, const char *data, size_t n);
/* The stream ended: its last line and any pending joined JSON are logged, the stream closed. */
void ao_proc_output_end(struct ao_proc_run *run, struct run_output *o);
void ao_proc_output_close(struct run_output *o);

/* supervise.c */
int ao_proc_supervise_setup(struct ao_proc *p);
/** Replies came in: notifications parked for want of a known caller can be attributed now. */
void ao_proc_supervise_unpark(struct spawner *s);
void ao_proc_supervise_done(struct ao_proc *p);
void ao_proc_supervise_run_done(struct ao_proc_run *run);

/* reap.c */
int ao_proc_reaper_setup(struct ao_proc *p);
void ao_proc_reaper_done(struct ao_proc *p);
/** Spawner replies came in: orphans held back while they were outstanding may be reaped now. */
void ao_proc_reaper_kick(struct ao_proc *p);
