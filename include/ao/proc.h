/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Running hooks (and enabled scripts, and helm) as sandboxed children.
 *
 * Children are started by a small spawner process that the operator forks
 * at start-up: it clones each child with CLONE_PARENT, so the operator
 * still reaps it (pidfd + waitid with rusage), while the child's max RSS
 * starts from the spawner's few hundred KiB instead of the operator's size.
 * Without the spawner binary the operator clones children itself and says
 * once that max RSS then includes its own memory.
 *
 * Each child gets its own session and process group, /dev/null as stdin,
 * pipes as stdout and stderr (read line by line into the log, capped), no
 * other fds, default signal handling, the profile's rlimits, uid/gid,
 * no_new_privs and seccomp filter. Syscalls the profile denies come back
 * to the operator, which logs them by name and answers EPERM or kills the
 * process group. A timeout sends SIGTERM to the group, then SIGKILL after
 * a grace period.
 *
 * The operator is a child subreaper: orphaned grandchildren are reaped and
 * counted, so no zombie survives even when it runs as PID 1.
 *
 * Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ao/error.h"
#include "ao/log.h"

struct ao_reactor;
struct ao_sandbox_profile;
struct ao_sandbox_profiles;
struct ao_shutdown;
struct ao_proc;
struct ao_proc_run;

enum ao_proc_stream {
        AO_PROC_STDOUT,
        AO_PROC_STDERR,
};

/** How a run ended. */
struct ao_proc_result {
        pid_t pid;
        int exit_code; /* 0-255 when the process exited, -1 when a signal killed it */
        int signal;    /* the killing signal, 0 when it exited */
        bool core_dumped;
        bool timed_out;           /* killed because the timeout expired */
        bool killed;              /* killed by ao_proc_run_kill() or at shutdown */
        int launch_error;         /* errno when the child could not be started (then exit_code is 127) */
        const char *launch_stage; /* where it failed ("execve", "chdir", ...) or NULL */
        uint64_t user_usec, system_usec;
        uint64_t max_rss_bytes;
        uint64_t wall_usec;
        unsigned violations;      /* syscalls the sandbox denied */
        uint64_t output_bytes[2]; /* by enum ao_proc_stream */
        bool output_truncated;    /* the per-run output cap was reached */
        /*
         * When the child was reaped: no process of its group was left (group_gone), and none of its
         * descendants was left anywhere (tree_gone: not even one that left the group; see tree.c).
         */
        bool group_gone, tree_gone;
};

/** Default handling of a line of output: logged with the run's context. */
typedef void ao_proc_line_handler(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line,
                                  size_t len, void *userdata);
typedef void ao_proc_exit_handler(struct ao_proc_run *run, const struct ao_proc_result *result,
                                  void *userdata);

struct ao_proc_spec {
        const char *path;  /* executable, used as is (no PATH search) */
        char *const *argv; /* NULL-terminated; argv[0] conventionally the path */
        char *const *envp; /* NULL-terminated, complete: nothing is inherited */
        const char *cwd;   /* NULL: the operator's */
        int stdout_fd; /* > 2: the child's stdout is this fd (borrowed, e.g. a file), not logged; else a pipe */
        const struct ao_sandbox_profile *profile; /* borrowed; NULL: no sandbox at all */
        uint64_t timeout_usec;                    /* 0: none */
        struct ao_log_context log_context;        /* for output and violation lines; its strings are copied */
        ao_proc_line_handler *on_line;            /* NULL: log each line at info */
        ao_proc_exit_handler *on_exit;            /* required; called exactly once */
        void *userdata;
};

struct ao_proc_options {
        const char *spawner_path; /* NULL: "addon-operator-spawner" next to /proc/self/exe; "" disables */
        uint64_t kill_grace_usec; /* between SIGTERM and SIGKILL on timeout; 0: 5 s */
        size_t line_max;          /* longest line kept whole; 0: 64 KiB */
        size_t output_max;        /* output logged per run; 0: 10 MiB (the rest is read and discarded) */
        bool subreaper;           /* become PR_SET_CHILD_SUBREAPER and reap orphans (the operator: true) */
        bool join_json_lines;     /* LOG_PROXY_HOOK_JSON: join a JSON object printed over several lines */
};

int ao_proc_new(struct ao_reactor *reactor, const struct ao_proc_options *options, struct ao_proc **ret,
                struct ao_error *reterr);
/** Kill every running child (SIGKILL to its group) and release everything. NULL is accepted. */
struct ao_proc *ao_proc_free(struct ao_proc *p);

/**
 * Start a child. The run is owned by @p until its exit handler returns.
 * Fails at once (nothing started, no handler call) on bad arguments, when
 * shutting down (-ESHUTDOWN) or when the pipes cannot be made; a child that
 * cannot exec is reported through the exit handler with launch_error set.
 */
int ao_proc_spawn(struct ao_proc *p, const struct ao_proc_spec *spec, struct ao_proc_run **ret_run,
                  struct ao_error *reterr);

/**
 * What happens to a line without an on_line handler: logged at info with the
 * run's context and the stream's name; a line that is one JSON object as a
 * structured record, and with join_json_lines an object printed over several
 * lines too. For handlers that look at a line and log it too.
 */
void ao_proc_log_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len);

/**
 * At exit, after ao_proc_free(): kill (SIGKILL, with their process groups)
 * and reap every child this process still has, that is whatever hooks left
 * running outside their own process group, re-parented to us as subreaper.
 * Logs a warning listing them; returns how many were running.
 */
size_t ao_proc_end_leftovers(void);

/** Kill a run's process group (SIGKILL); its exit handler still runs, with killed set. */
void ao_proc_run_kill(struct ao_proc_run *run);
pid_t ao_proc_run_pid(const struct ao_proc_run *run);
const struct ao_log_context *ao_proc_run_log_context(const struct ao_proc_run *run);

/** Children started and not yet reported. */
size_t ao_proc_running(const struct ao_proc *p);
/** Orphaned descendants reaped since start (subreaper mode). */
uint64_t ao_proc_orphans_reaped(const struct ao_proc *p);
/** Output pipes a run got from an earlier one instead of a new pipe (see tree.c, output.c). */
uint64_t ao_proc_pipes_reused(const struct ao_proc *p);
/** True when children are started through the spawner process (exact per-child max RSS). */
bool ao_proc_uses_spawner(const struct ao_proc *p);
/** The pid of the spawner serving @profile (NULL: unsandboxed), or 0 when it is not running. */
pid_t ao_proc_spawner_pid_of(const struct ao_proc *p, const struct ao_sandbox_profile *profile);

/** Take part in graceful shutdown: refuse new runs, report running ones, kill them when forced. */
int ao_proc_attach_shutdown(struct ao_proc *p, struct ao_shutdown *shutdown);

/** "exit code 3", "killed by SIGKILL", "timed out after 5 s", "execve: No such file or directory". */
void ao_proc_result_describe(const struct ao_proc_result *result, char *buf, size_t size);
