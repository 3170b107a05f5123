/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One run: a child's life from the request to the report, as a state
 * machine (see enum run_state in run.h).
 *
 *   event                   STARTING               RUNNING                  EXITED
 *   launched (pid known)    -> RUNNING, or EXITED  -                        -
 *                              when already gone
 *   output closed (both)    read the pid now       wait for the reap        -> done
 *   reaped                  -                      -> EXITED (lingering     -
 *                                                     while output is open)
 *   timer                   timeout: act at        timeout: SIGTERM, then   linger over: close
 *                           launch                 SIGKILL after the grace  the output -> done
 *   kill                    act at launch          SIGKILL to the group     -
 *
 * "done" means reported exactly once, then freed by the launcher. The
 * event sources (output pipes, the child source, seccomp listeners) report
 * here through their callbacks; what only the launcher knows (spawner
 * replies, the rest of the process tree) the run asks through run_ops.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "run.h"

/* After the leader exits, how long descendants holding its stdout/stderr may keep the run open. */
#define OUTPUT_LINGER_USEC        (2 * AO_USEC_PER_SEC)
#define VIOLATIONS_LOGGED_PER_RUN 10

/* --- signals to a run ------------------------------------------------------ */

/*
 * The whole process group: the hook is its leader (setsid), so its pid is
 * the group id. Signalled only while the run is open; once the leader is
 * reaped and the output closed, the number may be reused.
 */
void proc_run_signal_group(struct ao_proc_run *run, int sig)
{
        if (run->pid <= 0)
                return;
        if (kill(-run->pid, sig) == 0)
                return;
        if (errno != ESRCH) {
                ao_log_errno(AO_LOG_WARN, -errno, "proc: signalling process group %d", (int) run->pid);
                return;
        }
        /*
         * No such group: the child has not made its session yet (a spawner answers before the
         * exec), or it is gone. Signal the child itself, which is ours and not reaped, so its pid is
         * its own; then the group again, should it have made one in between.
         */
        (void) kill(run->pid, sig);
        (void) kill(-run->pid, sig);
}

void ao_proc_run_kill(struct ao_proc_run *run)
{
        run->result.killed = true;
        run->kill_sent = true;
        if (run->state == RUN_STARTING)
                run->env->ops->wait_for_pid(run); /* killed once its pid is known */
        proc_run_signal_group(run, SIGKILL);
}

/* --- finishing --------------------------------------------------------------- */

static bool output_open(const struct ao_proc_run *run)
{
        return proc_output_is_open(&run->out[0]) || proc_output_is_open(&run->out[1]);
}

/* Report, then the launcher frees the run: nothing may touch it after this. */
static void report(struct ao_proc_run *run)
{
        run->result.wall_usec = ao_clock_now_usec() - run->started_usec;
        run->on_exit(run, &run->result, run->userdata);
        run->env->ops->finished(run);
}

/* Done once the leader is reaped and the output drained; may free the run. */
static void maybe_finish(struct ao_proc_run *run)
{
        if (run->state != RUN_EXITED || output_open(run))
                return;
        report(run);
}

/* Both streams closed: the run may finish (and be freed). */
static void output_ended(struct ao_proc_run *run)
{
        if (output_open(run))
                return;
        if (run->state == RUN_STARTING) {
                /* The hook has most likely exited: its reply says which pid to reap. */
                run->env->ops->read_pid_now(run);
                return;
        }
        maybe_finish(run);
}

/* --- the output pipes report here ---------------------------------------------- */

static void on_output_data(void *owner, enum ao_proc_stream stream, const char *data, size_t n)
{
        struct ao_proc_run *run = owner;
        run->result.output_bytes[stream] += (uint64_t) n;
        proc_run_output_feed(run, stream, data, n);
}

static void on_output_eof(void *owner, enum ao_proc_stream stream)
{
        struct ao_proc_run *run = owner;
        proc_run_output_end(run, stream);
        output_ended(run);
}

static const struct output_ops output_ops = {
    .on_data = on_output_data,
    .on_eof = on_output_eof,
};

/* --- timers ---------------------------------------------------------------- */

static int on_run_timer(struct ao_source *s, uint64_t now, void *userdata);

/* One timer per run, created on first use (most runs have no timeout and close their output on exit). */
static void arm_timer(struct ao_proc_run *run, uint64_t usec)
{
        if (run->timer)
                (void) ao_source_set_time_relative(run->timer, usec);
        else if (ao_reactor_add_time_relative(run->env->reactor, &run->timer, usec, on_run_timer, run) < 0)
                ao_log(AO_LOG_ERROR, "proc: cannot arm a timer for a run of %s", run->path);
}

/* The timeout passed: SIGTERM to the group, then SIGKILL after the grace time. */
static void time_out(struct ao_proc_run *run)
{
        if (!run->term_sent) {
                run->term_sent = true;
                run->result.timed_out = true;
                const struct ao_log_context *prev = ao_log_context_swap(&run->log_context.ctx);
                ao_log(AO_LOG_WARN,
                       "proc: pid %d timed out after %.1f s, sending SIGTERM to its process group",
                       (int) run->pid, (double) run->timeout_usec / AO_USEC_PER_SEC);
                ao_log_context_swap(prev);
                proc_run_signal_group(run, SIGTERM);
                arm_timer(run, run->env->options.kill_grace_usec);
        } else if (!run->kill_sent) {
                run->kill_sent = true;
                proc_run_signal_group(run, SIGKILL);
        }
}

/* Descendants kept the output open past the linger time: stop reading, finish. */
static void stop_lingering(struct ao_proc_run *run)
{
        ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"hook", run->log_context.ctx.hook}),
                    "proc: pid %d exited but its output is still open; closing it", (int) run->pid);
        for (int i = 0; i < 2; i++)
                proc_run_output_close(run, (enum ao_proc_stream) i);
        maybe_finish(run);
}

static int on_run_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_proc_run *run = userdata;
        if (run->state == RUN_STARTING) {
                /* The timeout counts from the request; act on it once the pid is known. */
                run->timeout_due = true;
                run->env->ops->wait_for_pid(run);
                return 0;
        }
        if (run->state == RUN_EXITED) {
                stop_lingering(run);
                return 0;
        }
        time_out(run);
        return 0;
}

/* --- the child exits ------------------------------------------------------- */

static void record_exit(struct ao_proc_result *res, const siginfo_t *si, const struct rusage *ru)
{
        res->user_usec = (uint64_t) ru->ru_utime.tv_sec * AO_USEC_PER_SEC + (uint64_t) ru->ru_utime.tv_usec;
        res->system_usec = (uint64_t) ru->ru_stime.tv_sec * AO_USEC_PER_SEC + (uint64_t) ru->ru_stime.tv_usec;
        res->max_rss_bytes = (uint64_t) ru->ru_maxrss * 1024; /* the kernel counts KiB */
        if (si->si_signo == 0) {
                /* Reaped by someone else: the status is lost. */
                res->exit_code = -1;
                return;
        }
        if (si->si_code == CLD_EXITED) {
                res->exit_code = si->si_status;
        } else {
                res->exit_code = -1;
                res->signal = si->si_status;
                res->core_dumped = si->si_code == CLD_DUMPED;
        }
}

/* What the child wrote into its launch status slot, once it is reaped; the slot is free then. */
static void collect_launch_status(struct ao_proc_run *run)
{
        struct launch_status *ls = &run->env->status;
        struct ao_launch_failure f;
        if (proc_launch_status_read(ls, run->status_slot, &f)) {
                run->result.launch_error = f.error;
                run->result.launch_stage = ao_launch_stage_name(f.stage);
        }
        proc_launch_status_release(ls, &run->status_slot);
}

/* The leader is gone: record how; the run finishes once its output is drained too (may free it). */
static void run_exited(struct ao_proc_run *run, const siginfo_t *si, const struct rusage *ru)
{
        record_exit(&run->result, si, ru);
        collect_launch_status(run);
        run->state = RUN_EXITED;
        if (si->si_signo != 0) {
                run->result.group_gone = proc_group_gone(run->pid);
                run->result.tree_gone = run->result.group_gone && run->env->ops->tree_gone(run);
        }
        for (int i = 0; i < 2; i++)
                if (proc_output_reaped(&run->out[i], run->result.tree_gone))
                        proc_run_output_end(run, (enum ao_proc_stream) i);
        if (output_open(run))
                arm_timer(run, OUTPUT_LINGER_USEC);
        maybe_finish(run);
}

static int on_child_exit(struct ao_source *s, const siginfo_t *si, const struct rusage *ru, void *userdata)
{
        run_exited(userdata, si, ru);
        return 0;
}

enum reap_claim proc_run_reap(struct ao_proc_run *run)
{
        if (!run->child)
                return REAP_NOT_OURS;
        return ao_source_child_reap(run->child) > 0 ? REAP_REAPED : REAP_STUCK;
}

/* --- launched -------------------------------------------------------------- */

/*
 * A reply read late, when the run's output has ended or the reaper has seen
 * the pid exit: reap the child now if it is gone, which spares watching it.
 */
static bool reaped_at_once(struct ao_proc_run *run, pid_t pid)
{
        siginfo_t si;
        struct rusage ru;
        bool likely_gone = !output_open(run) || pid == run->env->exited_pid;
        if (!likely_gone || ao_child_reap(pid, &si, &ru) <= 0)
                return false;
        run_exited(run, &si, &ru);
        return true;
}

/* The run will never produce output or an exit: report the launch error now. */
static void fail_launch(struct ao_proc_run *run, int error, const char *stage)
{
        run->result.launch_error = error;
        run->result.launch_stage = stage;
        run->result.exit_code = 127;
        run->state = RUN_EXITED;
        for (int i = 0; i < 2; i++)
                proc_run_output_close(run, (enum ao_proc_stream) i);
        maybe_finish(run);
}

/* Watch the child until it exits; false (the child killed, the run failed) when it cannot be. */
static bool watch_child(struct ao_proc_run *run, pid_t pid, int pidfd)
{
        /* As subreaper, SIGCHLD tells of every exit (reap.c): no pidfd needed to watch the child. */
        unsigned flags = pidfd < 0 && run->env->subreaper ? AO_CHILD_UNWATCHED : AO_CHILD_OWN_PIDFD;
        int k = ao_reactor_add_child(run->env->reactor, &run->child, pid, pidfd, flags, on_child_exit, run);
        if (k >= 0)
                return true;
        /* Cannot watch it: kill it; the subreaper collects it. */
        (void) ao_safe_close(pidfd);
        ao_log_errno(AO_LOG_ERROR, k, "proc: watching pid %d failed, killing it", (int) pid);
        proc_run_signal_group(run, SIGKILL);
        fail_launch(run, -k, "watching the child");
        return false;
}

void proc_run_launched(struct ao_proc_run *run, pid_t pid, int pidfd, const struct ao_launch_failure *failure)
{
        if (pid < 0) {
                fail_launch(run, -pid, "spawn"); /* nothing was started */
                return;
        }

        run->pid = pid;
        run->result.pid = pid;
        run->state = RUN_RUNNING;
        if (failure && failure->stage != AO_LAUNCH_OK) {
                run->result.launch_error = failure->error;
                run->result.launch_stage = ao_launch_stage_name(failure->stage);
        }
        if (reaped_at_once(run, pid)) {
                (void) ao_safe_close(pidfd);
                return;
        }
        if (!watch_child(run, pid, pidfd))
                return;
        if (run->kill_sent) /* killed while starting */
                proc_run_signal_group(run, SIGKILL);
        else if (run->timeout_due)
                time_out(run);
}

void proc_run_adopt_pid(struct ao_proc_run *run, pid_t pid)
{
        run->pid = pid;
        run->state = RUN_RUNNING;
}

/* --- violations -------------------------------------------------------------- */

static bool kills_on_violation(const struct ao_proc_run *run)
{
        return run->profile && run->profile->on_violation == AO_SANDBOX_DENY_KILL;
}

static void log_violation(struct ao_proc_run *run, pid_t pid, int nr)
{
        run->result.violations++;
        if (run->violations_logged >= VIOLATIONS_LOGGED_PER_RUN)
                return;
        run->violations_logged++;
        const char *name = ao_sandbox_syscall_name(nr);
        char number[16];
        (void) snprintf(number, sizeof(number), "%d", nr);
        const char *profile = run->profile ? run->profile->name : "none";
        const struct ao_log_context *prev = ao_log_context_swap(&run->log_context.ctx);
        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"syscall", name ? name : number}, {"profile", profile}),
                    "sandbox violation: pid %d called %s, %s by profile '%s'%s", (int) pid,
                    name ? name : number, kills_on_violation(run) ? "killed" : "denied (EPERM)", profile,
                    run->violations_logged == VIOLATIONS_LOGGED_PER_RUN
                        ? "; further violations are only counted"
                        : "");
        ao_log_context_swap(prev);
}

void proc_run_violation(struct ao_proc_run *run, pid_t pid, int nr)
{
        /* Already being killed for an earlier violation: the caller is just released. */
        if (run->result.killed)
                return;
        /* Kill before the answer: the caller must not run one more instruction after a violation. */
        if (kills_on_violation(run))
                ao_proc_run_kill(run);
        log_violation(run, pid, nr);
}

static bool on_denied(void *owner, const struct denied_call *call)
{
        proc_run_violation(owner, call->pid, call->nr);
        return true;
}

static void on_listener_hangup(void *owner)
{
        struct ao_proc_run *run = owner;
        proc_notify_done(&run->listener);
}

static const struct notify_ops notify_ops = {
    .on_denied = on_denied,
    .on_hangup = on_listener_hangup,
};

void proc_run_supervise(struct ao_proc_run *run, int listener)
{
        if (run->listener.fd >= 0) {
                (void) close(listener);
                return;
        }
        int k = proc_notify_watch(&run->listener, run->env->reactor, listener, &notify_ops, run);
        if (k < 0) {
                /* Without supervision a denied call would block forever: do not let the hook run. */
                ao_log_errno(AO_LOG_ERROR, k,
                             "proc: cannot watch the seccomp listener of run %llu, killing it",
                             (unsigned long long) run->id);
                proc_notify_done(&run->listener);
                ao_proc_run_kill(run);
        }
}

/* --- life ---------------------------------------------------------------------- */

struct ao_proc_run *proc_run_new(struct run_env *env, const struct ao_proc_spec *spec, uint64_t id)
{
        struct ao_proc_run *run = ao_xcalloc(1, sizeof(*run));
        run->env = env;
        run->id = id;
        run->state = RUN_STARTING;
        run->listener.fd = -1;
        run->status_slot = -1;
        for (int i = 0; i < 2; i++)
                proc_output_init(&run->out[i], &env->pool, (enum ao_proc_stream) i, &output_ops, run);
        run->profile = spec->profile;
        run->timeout_usec = spec->timeout_usec;
        run->path = ao_xstrdup(spec->path);
        ao_log_context_copy_init(&run->log_context, &spec->log_context);
        run->on_line = spec->on_line;
        run->on_exit = spec->on_exit;
        run->userdata = spec->userdata;
        run->started_usec = ao_clock_now_usec();
        return run;
}

int proc_run_prepare(struct ao_proc_run *run, int stdout_fd)
{
        int k = 0;
        for (int i = 0; i < 2 && k >= 0; i++)
                if (i == AO_PROC_STDOUT && stdout_fd > 2)
                        k = proc_output_redirect(&run->out[i], stdout_fd);
                else
                        k = proc_output_open(&run->out[i]);
        if (k < 0)
                return k;
        /* From the request on: a spawner slow to answer does not stretch the timeout. */
        if (run->timeout_usec)
                arm_timer(run, run->timeout_usec);
        return 0;
}

void proc_run_free(struct ao_proc_run *run)
{
        for (int i = 0; i < 2; i++)
                proc_run_output_close(run, (enum ao_proc_stream) i);
        proc_notify_done(&run->listener);
        ao_source_free(run->child);
        ao_source_free(run->timer);
        free(run->path);
        ao_log_context_copy_done(&run->log_context);
        free(run);
}

pid_t ao_proc_run_pid(const struct ao_proc_run *run)
{
        return run->pid;
}

const struct ao_log_context *ao_proc_run_log_context(const struct ao_proc_run *run)
{
        return &run->log_context.ctx;
}

/* --- describing results ---------------------------------------------------- */

void ao_proc_result_describe(const struct ao_proc_result *r, char *buf, size_t size)
{
        if (r->launch_error)
                (void) snprintf(buf, size, "%s: %s", r->launch_stage ? r->launch_stage : "launch",
                                strerror(r->launch_error));
        else if (r->timed_out)
                (void) snprintf(buf, size, "timed out, killed by SIG%s",
                                r->signal ? sigabbrev_np(r->signal) : "TERM");
        else if (r->signal == SIGSYS)
                /* Filters kill with SIGSYS only for system calls of a foreign architecture (i386, x32). */
                (void) snprintf(buf, size,
                                "killed by SIGSYS: sandbox violation (a system call of a foreign "
                                "architecture)");
        else if (r->signal)
                (void) snprintf(buf, size, "killed by SIG%s%s",
                                sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?",
                                r->core_dumped ? " (core dumped)" : "");
        else
                (void) snprintf(buf, size, "exit code %d", r->exit_code);
}
