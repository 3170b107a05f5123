/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launcher and the life of one run: start (through the spawner or in
 * process), track (pidfd child source), time out (SIGTERM, then SIGKILL to
 * the process group), collect output, and report exactly once.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/launch.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/shutdown.h"
#include "internal.h"

#define DIRECT_STACK_SIZE  (64 * 1024)
#define DEFAULT_KILL_GRACE (5 * AO_USEC_PER_SEC)
#define DEFAULT_LINE_MAX   (64 * 1024)
#define DEFAULT_OUTPUT_MAX (10 * 1024 * 1024)
/* After the leader exits, how long descendants holding its stdout/stderr may keep the run open. */
#define OUTPUT_LINGER_USEC (2 * AO_USEC_PER_SEC)

/* --- lookup ---------------------------------------------------------------- */

struct ao_proc_run *ao_proc_run_find(struct ao_proc *p, uint64_t id)
{
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->id == id)
                        return r;
        return NULL;
}

struct ao_proc_run *ao_proc_run_find_pid(struct ao_proc *p, pid_t pid)
{
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->pid == pid && r->state == RUN_RUNNING)
                        return r;
        return NULL;
}

/* --- signals to a run ------------------------------------------------------ */

/*
 * The whole process group: the hook is its leader (setsid), so its pid is
 * the group id. Signalled only while the run is open; once the leader is
 * reaped and the output closed, the number may be reused.
 */
static void signal_group(struct ao_proc_run *run, int sig)
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
                ao_proc_spawner_want_reply(run); /* killed once its pid is known */
        signal_group(run, SIGKILL);
}

/* --- finishing --------------------------------------------------------------- */

static void run_free(struct ao_proc_run *run)
{
        struct ao_proc *p = run->proc;
        if (run->prev)
                run->prev->next = run->next;
        else
                p->runs = run->next;
        if (run->next)
                run->next->prev = run->prev;
        p->n_runs--;

        for (int i = 0; i < 2; i++)
                ao_proc_output_close(&run->out[i]);
        ao_proc_supervise_run_done(run);
        ao_source_free(run->child);
        ao_source_free(run->timer);
        free(run->path);
        for (size_t i = 0; i < AO_ARRAY_SIZE(run->context_strings); i++)
                free(run->context_strings[i]);
        free(run);
}

static void report(struct ao_proc_run *run)
{
        struct ao_proc *p = run->proc;
        run->result.wall_usec = ao_clock_now_usec() - run->started_usec;
        run->on_exit(run, &run->result, run->userdata);
        run_free(run);
        if (p->shutdown)
                ao_shutdown_progress(p->shutdown);
}

static bool output_open(const struct ao_proc_run *run)
{
        return run->out[0].fd >= 0 || run->out[1].fd >= 0;
}

void ao_proc_run_maybe_finish(struct ao_proc_run *run)
{
        if (run->state != RUN_EXITED || output_open(run))
                return;
        report(run);
}

void ao_proc_run_output_ended(struct ao_proc_run *run)
{
        if (output_open(run))
                return;
        if (run->state == RUN_STARTING) {
                /* The hook has most likely exited: its reply says which pid to reap. */
                ao_proc_spawner_collect(run);
                return;
        }
        ao_proc_run_maybe_finish(run);
}

/* --- timers ---------------------------------------------------------------- */

static int on_run_timer(struct ao_source *s, uint64_t now, void *userdata);

/* One timer per run, created on first use (most runs have no timeout and close their output on exit). */
static void arm_timer(struct ao_proc_run *run, uint64_t usec)
{
        if (run->timer)
                (void) ao_source_set_time_relative(run->timer, usec);
        else if (ao_reactor_add_time_relative(run->proc->reactor, &run->timer, usec, on_run_timer, run) < 0)
                ao_log(AO_LOG_ERROR, "proc: cannot arm a timer for a run of %s", run->path);
}

/* The timeout passed: SIGTERM to the group, then SIGKILL after the grace time. */
static void time_out(struct ao_proc_run *run)
{
        if (!run->term_sent) {
                run->term_sent = true;
                run->result.timed_out = true;
                const struct ao_log_context *prev = ao_log_context_swap(&run->log_context);
                ao_log(AO_LOG_WARN,
                       "proc: pid %d timed out after %.1f s, sending SIGTERM to its process group",
                       (int) run->pid, (double) run->timeout_usec / AO_USEC_PER_SEC);
                ao_log_context_swap(prev);
                signal_group(run, SIGTERM);
                arm_timer(run, run->proc->options.kill_grace_usec);
        } else if (!run->kill_sent) {
                run->kill_sent = true;
                signal_group(run, SIGKILL);
        }
}

static int on_run_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_proc_run *run = userdata;
        if (run->state == RUN_STARTING) {
                /* The timeout counts from the request; act on it once the pid is known. */
                run->timeout_due = true;
                ao_proc_spawner_want_reply(run);
                return 0;
        }
        if (run->state == RUN_EXITED) {
                /* Descendants kept the output open past the linger time: stop reading, finish. */
                ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"hook", run->log_context.hook}),
                            "proc: pid %d exited but its output is still open; closing it", (int) run->pid);
                for (int i = 0; i < 2; i++)
                        ao_proc_output_close(&run->out[i]);
                ao_proc_run_maybe_finish(run);
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

/* The leader is gone: record how; the run finishes once its output is drained too (may free it). */
static void run_exited(struct ao_proc_run *run, const siginfo_t *si, const struct rusage *ru)
{
        record_exit(&run->result, si, ru);
        ao_proc_launch_status_read(run);
        ao_proc_launch_status_release(run);
        run->state = RUN_EXITED;
        if (si->si_signo != 0) {
                run->result.group_gone = ao_proc_group_gone(run->pid);
                run->result.tree_gone = run->result.group_gone && ao_proc_tree_gone(run->proc);
        }
        for (int i = 0; i < 2; i++)
                ao_proc_output_child_gone(run, &run->out[i]);
        if (output_open(run))
                arm_timer(run, OUTPUT_LINGER_USEC);
        ao_proc_run_maybe_finish(run);
}

static int on_child_exit(struct ao_source *s, const siginfo_t *si, const struct rusage *ru, void *userdata)
{
        run_exited(userdata, si, ru);
        return 0;
}

/*
 * A reply read late, when the run's output has ended or the reaper has seen
 * the pid exit: reap the child now if it is gone, which spares watching it.
 */
static bool reaped_at_once(struct ao_proc_run *run, pid_t pid)
{
        siginfo_t si;
        struct rusage ru;
        bool likely_gone = !output_open(run) || pid == run->proc->exited_pid;
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
                ao_proc_output_close(&run->out[i]);
        ao_proc_run_maybe_finish(run);
}

void ao_proc_run_launched(struct ao_proc_run *run, pid_t pid, int pidfd,
                          const struct ao_launch_failure *failure)
{
        struct ao_proc *p = run->proc;
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
        /* As subreaper, SIGCHLD tells of every exit (reap.c): no pidfd needed to watch the child. */
        unsigned flags = pidfd < 0 && p->sigchld ? AO_CHILD_UNWATCHED : AO_CHILD_OWN_PIDFD;
        int k = ao_reactor_add_child(p->reactor, &run->child, pid, pidfd, flags, on_child_exit, run);
        if (k < 0) {
                /* Cannot watch it: kill it; the subreaper collects it. */
                (void) ao_safe_close(pidfd);
                ao_log_errno(AO_LOG_ERROR, k, "proc: watching pid %d failed, killing it", (int) pid);
                signal_group(run, SIGKILL);
                fail_launch(run, -k, "watching the child");
                return;
        }
        if (run->kill_sent) /* killed while starting */
                signal_group(run, SIGKILL);
        else if (run->timeout_due)
                time_out(run);
}

/* --- starting ---------------------------------------------------------------- */

static void copy_context(struct ao_proc_run *run, const struct ao_log_context *ctx)
{
        const char *from[3] = {ctx->module, ctx->hook, ctx->binding};
        for (int i = 0; i < 3; i++)
                run->context_strings[i] = from[i] ? ao_xstrdup(from[i]) : NULL;
        run->log_context = (struct ao_log_context){
            .module = run->context_strings[0],
            .hook = run->context_strings[1],
            .binding = run->context_strings[2],
        };
}

static struct ao_proc_run *run_new(struct ao_proc *p, const struct ao_proc_spec *spec)
{
        struct ao_proc_run *run = ao_xcalloc(1, sizeof(*run));
        run->proc = p;
        run->id = ++p->next_id;
        run->state = RUN_STARTING;
        run->listener = -1;
        run->status_slot = -1;
        run->out[0] = (struct run_output){.stream = AO_PROC_STDOUT, .fd = -1, .write_fd = -1};
        run->out[1] = (struct run_output){.stream = AO_PROC_STDERR, .fd = -1, .write_fd = -1};
        run->profile = spec->profile;
        run->timeout_usec = spec->timeout_usec;
        run->path = ao_xstrdup(spec->path);
        copy_context(run, &spec->log_context);
        run->on_line = spec->on_line;
        run->on_exit = spec->on_exit;
        run->userdata = spec->userdata;
        run->started_usec = ao_clock_now_usec();

        run->next = p->runs;
        if (p->runs)
                p->runs->prev = run;
        p->runs = run;
        p->n_runs++;
        return run;
}

static void fill_launch_profile(struct ao_launch *l, const struct ao_sandbox_profile *profile,
                                struct ao_launch_limit *limits)
{
        if (!profile)
                return;
        l->no_new_privs = true;
        if (profile->has_filter) {
                l->bpf = profile->bpf;
                l->bpf_len = profile->bpf_len;
                l->bpf_notifies = true;
        }
        for (size_t i = 0; i < profile->n_rlimits; i++)
                limits[i] = (struct ao_launch_limit){.resource = profile->rlimits[i].resource,
                                                     .limit = profile->rlimits[i].limit};
        l->limits = limits;
        l->n_limits = profile->n_rlimits;
        l->set_uid = profile->set_uid, l->set_gid = profile->set_gid;
        l->uid = profile->uid, l->gid = profile->gid;
}

/* Clone the child from the operator itself (no spawner): synchronous, like vfork. */
static void launch_in_process(struct ao_proc *p, struct ao_proc_run *run, const struct ao_proc_spec *spec,
                              int stdout_fd, int stderr_fd)
{
        static int devnull = -1;
        if (devnull < 0)
                devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        struct ao_launch_limit limits[AO_SANDBOX_RLIMITS_MAX];
        struct ao_launch l = {
            .path = spec->path,
            .argv = spec->argv,
            .envp = spec->envp,
            .cwd = spec->cwd,
            .stdin_fd = devnull,
            .stdout_fd = stdout_fd,
            .stderr_fd = stderr_fd,
            .listener_sock = p->listener_tx,
            .listener_tag = run->id,
        };
        fill_launch_profile(&l, spec->profile, limits);
        struct ao_launch_failure failure;
        int pidfd = -1;
        pid_t pid = ao_launch_clone(&l, false, p->direct_stack, DIRECT_STACK_SIZE, &pidfd, &failure);
        ao_proc_run_launched(run, pid, pidfd, &failure);
}

/* The child writes straight into @fd: a copy stands in for the pipe's write end, and no read end exists. */
static int redirect_output(struct run_output *o, int fd)
{
        o->write_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        return o->write_fd < 0 ? ao_negative_errno() : 0;
}

int ao_proc_spawn(struct ao_proc *p, const struct ao_proc_spec *spec, struct ao_proc_run **ret_run,
                  struct ao_error *reterr)
{
        if (!spec->path || !spec->argv || !spec->envp || !spec->on_exit)
                return ao_error_set(reterr, -EINVAL, "proc: path, argv, envp and on_exit are required");
        if (p->refusing)
                return ao_error_set(reterr, -ESHUTDOWN, "proc: shutting down, not starting '%s'", spec->path);

        struct ao_proc_run *run = run_new(p, spec);
        int k = 0;
        for (int i = 0; i < 2 && k >= 0; i++)
                if (i == AO_PROC_STDOUT && spec->stdout_fd > 2)
                        k = redirect_output(&run->out[i], spec->stdout_fd);
                else
                        k = ao_proc_output_open(run, (enum ao_proc_stream) i);
        if (k < 0) {
                run_free(run);
                return ao_error_set(reterr, k, "proc: cannot set up output pipes for '%s': %s", spec->path,
                                    strerror(-k));
        }

        /* From the request on: a spawner slow to answer does not stretch the timeout. */
        if (run->timeout_usec)
                arm_timer(run, run->timeout_usec);
        struct spawner *spawner = ao_proc_spawner_for(p, spec->profile);
        if (spawner) {
                ao_proc_launch_status_take(run);
                k = ao_proc_spawner_request(spawner, run, spec->argv, spec->envp, spec->cwd,
                                            run->out[0].write_fd, run->out[1].write_fd);
                if (k >= 0)
                        run->spawner = spawner;
        } else {
                launch_in_process(p, run, spec, run->out[0].write_fd, run->out[1].write_fd);
        }
        if (k < 0) {
                run_free(run);
                return ao_error_set(reterr, k, "proc: cannot start '%s': %s", spec->path, strerror(-k));
        }
        if (ret_run)
                *ret_run = run;
        return 0;
}

pid_t ao_proc_run_pid(const struct ao_proc_run *run)
{
        return run->pid;
}

const struct ao_log_context *ao_proc_run_log_context(const struct ao_proc_run *run)
{
        return &run->log_context;
}

/* --- the launcher ---------------------------------------------------------- */

static char *default_spawner_path(void)
{
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return NULL;
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (!slash)
                return NULL;
        *slash = '\0';
        char path[4096 + 32];
        (void) snprintf(path, sizeof(path), "%s/addon-operator-spawner", self);
        return ao_xstrdup(path);
}

/* Find the spawner binary and start the unsandboxed spawner; the others start on first use. */
static void start_spawner(struct ao_proc *p)
{
        const char *configured = p->options.spawner_path;
        if (configured && !*configured)
                return;
        _cleanup_free_ char *found = configured ? NULL : default_spawner_path();
        const char *path = configured ? configured : found;
        if (path && access(path, X_OK) == 0) {
                p->spawner_path = ao_xstrdup(path);
                ao_proc_launch_status_setup(p); /* before the first spawner: it maps the memfd at start */
                if (ao_proc_spawner_for(p, NULL))
                        return;
                free(p->spawner_path);
                p->spawner_path = NULL;
        }
        ao_log(AO_LOG_WARN,
               "proc: spawner %s unavailable; starting hooks from the operator itself, so their max RSS "
               "includes the operator's own memory",
               path ? path : "(not found)");
}

int ao_proc_new(struct ao_reactor *reactor, const struct ao_proc_options *options, struct ao_proc **ret,
                struct ao_error *reterr)
{
        /*
         * Hooks may run as our user: keep them out of our memory (/proc/<pid>/mem, ptrace) on
         * hosts without Yama. Whoever starts hooks gets this, the operator and lint alike.
         */
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

        struct ao_proc *p = ao_xcalloc(1, sizeof(*p));
        p->reactor = reactor;
        p->options = *options;
        if (!p->options.kill_grace_usec)
                p->options.kill_grace_usec = DEFAULT_KILL_GRACE;
        if (!p->options.line_max)
                p->options.line_max = DEFAULT_LINE_MAX;
        if (!p->options.output_max)
                p->options.output_max = DEFAULT_OUTPUT_MAX;
        p->listener_rx = p->listener_tx = -1;
        p->status_fd = -1;
        p->children_fd = -1;
        p->direct_stack = ao_xmalloc(DIRECT_STACK_SIZE);

        int k = ao_proc_supervise_setup(p);
        if (k >= 0 && options->subreaper)
                k = ao_proc_reaper_setup(p);
        if (k < 0) {
                ao_proc_free(p);
                return ao_error_set(reterr, k, "proc: setting up child supervision failed: %s", strerror(-k));
        }
        start_spawner(p);
        *ret = p;
        return 0;
}

struct ao_proc *ao_proc_free(struct ao_proc *p)
{
        if (!p)
                return NULL;
        ao_proc_spawners_learn_pids(p);
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                signal_group(r, SIGKILL);
        while (p->runs)
                run_free(p->runs);
        for (int i = 0; i < SPAWNERS_MAX; i++)
                p->spawners[i] = ao_proc_spawner_stop(p->spawners[i]);
        free(p->spawner_path);
        ao_proc_output_pool_done(p);
        ao_proc_tree_done(p);
        ao_proc_reaper_done(p);
        ao_proc_supervise_done(p);
        ao_proc_launch_status_done(p);
        free(p->direct_stack);
        free(p);
        return NULL;
}

size_t ao_proc_running(const struct ao_proc *p)
{
        return p->n_runs;
}

uint64_t ao_proc_pipes_reused(const struct ao_proc *p)
{
        return p->pipes_reused;
}

uint64_t ao_proc_orphans_reaped(const struct ao_proc *p)
{
        return p->orphans;
}

bool ao_proc_uses_spawner(const struct ao_proc *p)
{
        return p->spawner_path != NULL;
}

pid_t ao_proc_spawner_pid_of(const struct ao_proc *p, const struct ao_sandbox_profile *profile)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && p->spawners[i]->profile == profile)
                        return ao_proc_spawner_pid(p->spawners[i]);
        return 0;
}

/* --- shutdown -------------------------------------------------------------- */

static void shutdown_begin(void *userdata)
{
        ((struct ao_proc *) userdata)->refusing = true;
}

static size_t shutdown_pending(void *userdata)
{
        return ((struct ao_proc *) userdata)->n_runs;
}

static void shutdown_force(void *userdata)
{
        struct ao_proc *p = userdata;
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                ao_proc_run_kill(r);
}

static const struct ao_shutdown_participant shutdown_participant = {
    .name = "hook processes",
    .begin = shutdown_begin,
    .pending = shutdown_pending,
    .force = shutdown_force,
};

int ao_proc_attach_shutdown(struct ao_proc *p, struct ao_shutdown *shutdown)
{
        p->shutdown = shutdown;
        return ao_shutdown_register(shutdown, &shutdown_participant, p);
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
