/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/proc/: the run, one child's life (run.c, and its output as lines in
 * run-output.c). For the launcher that creates runs; the event sources never see this.
 */

#include "internal.h"

struct spawner_entry;

/* How a run reaches its launcher: the launcher's functions, which run.c never calls by name. */
struct run_ops {
        /** @run is starting and its pid is wanted (to signal it): have its reply read when it comes. */
        void (*wait_for_pid)(struct ao_proc_run *run);
        /**
         * @run is starting and its pid is needed now (its output ended: it has most likely
         * exited): read the replies that came. Runs may finish and be freed, @run among them.
         */
        void (*read_pid_now)(struct ao_proc_run *run);
        /** @run's leader is reaped and its group is gone: whether none of its tree is left anywhere. */
        bool (*tree_gone)(struct ao_proc_run *run);
        /** @run has been reported: the launcher forgets it and frees it (proc_run_free()). */
        void (*finished)(struct ao_proc_run *run);
};

/* What the runs of one launcher share; part of the launcher, which outlives its runs. */
struct run_env {
        struct ao_reactor *reactor; /* borrowed */
        const struct run_ops *ops;
        struct ao_proc_options options;
        bool subreaper;   /* SIGCHLD tells of every exit: a child need not be watched by pidfd */
        pid_t exited_pid; /* while the reaper reads replies: the child it saw exit, to reap at launch */
        struct launch_status status;
        struct output_pool pool;
};

/*
 * Where a run is. Together with its output (open or not) and its timer that makes the states
 * of its life:
 *
 *   STARTING   the request is out, the pid not known yet (spawner replies are read lazily)
 *   RUNNING    started: output open; or output closed, the child not reaped yet
 *   EXITED     reaped: lingering while a descendant holds the output open (OUTPUT_LINGER_USEC),
 *              else done at once (reported and freed)
 */
enum run_state {
        RUN_STARTING,
        RUN_RUNNING,
        RUN_EXITED,
};

/* A stream's partial line, and the JSON object being joined there. */
struct run_lines {
        char *line; /* owned */
        size_t len, cap;
        bool discarding; /* the current line went over line_max: drop until its newline */
        struct json_join join;
};

struct ao_proc_run {
        struct run_env *env; /* borrowed, outlives the run */
        uint64_t id;
        enum run_state state;
        pid_t pid;
        struct ao_source *child;   /* owned; owns the pidfd */
        struct ao_source *timer;   /* timeout, then kill grace, then output linger; owned */
        struct proc_output out[2]; /* by enum ao_proc_stream */
        struct run_lines lines[2];
        struct notify_listener listener; /* its own filter's (in-process launches only) */

        /* The launcher's: its list, and the request the run waits on while STARTING. */
        struct ao_proc_run *prev, *next;
        struct spawner_entry *spawner; /* borrowed while STARTING: the spawner that owes the reply */
        bool needs_pid;                /* its spawner polls for the reply */
        int status_slot;               /* the launch status slot its child reports a failure in; -1: none */

        const struct ao_sandbox_profile *profile; /* borrowed */
        uint64_t timeout_usec;
        bool term_sent, kill_sent;
        bool timeout_due; /* the timeout fired while the pid was unknown: act on it at launch */
        uint64_t started_usec;
        size_t logged_bytes;
        unsigned violations_logged;

        /* Owned copies of what the spec pointed at. */
        char *path;
        struct ao_log_context_copy log_context;
        ao_proc_line_handler *on_line;
        ao_proc_exit_handler *on_exit;
        void *userdata;

        struct ao_proc_result result;
};

/* run.c */
/** A run of @spec, STARTING, numbered @id; the caller links it into its list. */
struct ao_proc_run *proc_run_new(struct run_env *env, const struct ao_proc_spec *spec, uint64_t id);
/** Its output pipes (stdout into @stdout_fd when > 2), then its timeout, counted from now. */
int proc_run_prepare(struct ao_proc_run *run, int stdout_fd);
/** Release what the run holds (it must be unlinked); no report. */
void proc_run_free(struct ao_proc_run *run);
/**
 * A launch finished (in-process or via the spawner): track the child or
 * report the failure. A child whose output has ended is reaped at once if it
 * has exited, which may report the run and free it before this returns.
 */
void proc_run_launched(struct ao_proc_run *run, pid_t pid, int pidfd,
                       const struct ao_launch_failure *failure);
/** Only the pid, for killing: nothing is watched or reported (the launcher is going away). */
void proc_run_adopt_pid(struct ao_proc_run *run, pid_t pid);
/** @run's child was seen exiting: reap it through its source, which reports (and may free the run). */
enum reap_claim proc_run_reap(struct ao_proc_run *run);
/** Signal the run's process group (or the child, before it made one). */
void proc_run_signal_group(struct ao_proc_run *run, int sig);
/** A call by @pid of the run's tree was denied: kill first if the profile says so, then log it. */
void proc_run_violation(struct ao_proc_run *run, pid_t pid, int nr);
/** The run's child sent its own filter's listener (in-process launches): watch it, or kill the run. */
void proc_run_supervise(struct ao_proc_run *run, int listener);

/* run-output.c */
/** A chunk of a stream: split into lines, each capped and logged (or given to on_line). */
void proc_run_output_feed(struct ao_proc_run *run, enum ao_proc_stream stream, const char *data, size_t n);
/** The stream ended: its last line and any pending joined JSON are logged, the stream closed. */
void proc_run_output_end(struct ao_proc_run *run, enum ao_proc_stream stream);
/** Close the stream without its last line: pending joined JSON is logged, the pipe closed or pooled. */
void proc_run_output_close(struct ao_proc_run *run, enum ao_proc_stream stream);
