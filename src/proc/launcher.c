/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launcher: what creates runs. It holds the settings, starts a spawner
 * per sandbox profile (or clones children itself when there is none),
 * keeps the list of runs, and takes part in shutdown.
 *
 * It also owns every event source of src/proc and is the one place that
 * knows both sides: a spawner reply names a run by id, SIGCHLD and a
 * seccomp notification name a process by pid, and the launcher finds the
 * run they concern (or the spawner) and tells it. When a pid cannot be
 * placed because replies were not read yet (they are read lazily), the
 * launcher reads them, or holds the event until they come.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/launch.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/shutdown.h"
#include "protocol.h"
#include "run.h"

#define DIRECT_STACK_SIZE  (64 * 1024)
#define DEFAULT_KILL_GRACE (5 * AO_USEC_PER_SEC)
#define DEFAULT_LINE_MAX   (64 * 1024)
#define DEFAULT_OUTPUT_MAX (10 * 1024 * 1024)
#define SPAWNERS_MAX       16
#define PARKED_MAX         32

/* A denied call whose caller is not known yet (its spawn reply is in flight). */
struct parked_call {
        struct denied_call call;
        uint64_t horizon; /* the last run id when it came: only runs up to this one can be its caller */
};

/* A spawner, and what the launcher keeps with it. */
struct spawner_entry {
        struct spawner client;           /* the connection (spawner-client.c) */
        struct ao_proc *proc;            /* borrowed */
        uint32_t index;                  /* slot in proc->spawners */
        struct notify_listener listener; /* the profile filter's, shared by its children; fd -1 until sent */
        struct parked_call parked[PARKED_MAX];
        size_t n_parked;
};

struct ao_proc {
        struct run_env env; /* what the runs share; run_ops find the launcher from it */
        struct ao_proc_run *runs;
        size_t n_runs;
        uint64_t next_id;
        pid_t unknown_pid;        /* the exited child the reaper could not place yet, */
        uint64_t unknown_horizon; /* and the last run id when it was first seen */
        bool refusing;            /* shutdown began */
        struct ao_shutdown *shutdown;

        char *spawner_path; /* NULL: children are cloned in process */
        struct spawner_setup spawner_setup;
        struct spawner_entry *spawners[SPAWNERS_MAX]; /* owned; started on first use of their profile */
        void *direct_stack;                           /* clone stack for in-process launches, owned */

        struct supervisor supervisor;
        struct reaper reaper;
        struct tree tree;
};

static struct ao_proc *launcher_of(struct run_env *env)
{
        return (struct ao_proc *) (void *) ((char *) env - offsetof(struct ao_proc, env));
}

/* --- the runs ---------------------------------------------------------------- */

static struct ao_proc_run *run_by_id(struct ao_proc *p, uint64_t id)
{
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->id == id)
                        return r;
        return NULL;
}

/* The running run whose leader is @pid. */
static struct ao_proc_run *run_by_pid(struct ao_proc *p, pid_t pid)
{
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->pid == pid && r->state == RUN_RUNNING)
                        return r;
        return NULL;
}

/* The started run (running or exited) whose leader is @pid. */
static struct ao_proc_run *run_by_leader(struct ao_proc *p, pid_t pid)
{
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->pid == pid && r->state != RUN_STARTING)
                        return r;
        return NULL;
}

/* The run @pid belongs to: it leads it, or is in its process group. */
static struct ao_proc_run *run_of_caller(struct ao_proc *p, pid_t pid)
{
        struct ao_proc_run *run = run_by_leader(p, pid);
        return run ? run : run_by_leader(p, proc_group_of(pid));
}

static void link_run(struct ao_proc *p, struct ao_proc_run *run)
{
        run->next = p->runs;
        if (p->runs)
                p->runs->prev = run;
        p->runs = run;
        p->n_runs++;
}

/* Forget @run and free it (no report). */
static void drop_run(struct ao_proc *p, struct ao_proc_run *run)
{
        if (run->prev)
                run->prev->next = run->next;
        else
                p->runs = run->next;
        if (run->next)
                run->next->prev = run->prev;
        p->n_runs--;
        proc_run_free(run);
}

/* --- spawner replies ----------------------------------------------------------- */

/* Whether a run up to id @horizon still waits for its reply (from @e, or from any spawner if NULL). */
static bool reply_owed(const struct ao_proc *p, const struct spawner_entry *e, uint64_t horizon)
{
        for (const struct ao_proc_run *r = p->runs; r; r = r->next)
                if (r->state == RUN_STARTING && r->spawner && (!e || r->spawner == e) && r->id <= horizon)
                        return true;
        return false;
}

/* Whether any spawner owes a reply. */
static bool replies_outstanding(const struct ao_proc *p)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && proc_spawner_owes_replies(&p->spawners[i]->client))
                        return true;
        return false;
}

/* Read what every spawner owing replies has sent; runs may finish and be freed meanwhile. */
static void read_all_replies(struct ao_proc *p)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && proc_spawner_owes_replies(&p->spawners[i]->client))
                        proc_spawner_read_replies(&p->spawners[i]->client, SPAWNER_DRAIN_ANSWERED);
}

/* The run of @e whose reply @id is, while it waits for it. */
static struct ao_proc_run *starting_run(struct spawner_entry *e, uint64_t id)
{
        struct ao_proc_run *run = run_by_id(e->proc, id);
        return run && run->state == RUN_STARTING && run->spawner == e ? run : NULL;
}

/* @run has its reply (or never will): it no longer counts as starting. */
static void stop_waiting(struct spawner_entry *e, struct ao_proc_run *run)
{
        proc_spawner_settle(&e->client, run->needs_pid);
        run->needs_pid = false;
        run->spawner = NULL;
}

static void on_reply(void *owner, const struct spawner_reply_msg *r)
{
        struct spawner_entry *e = owner;
        struct ao_proc_run *run = starting_run(e, r->id);
        if (!run)
                return;
        stop_waiting(e, run);
        if (r->pid < 0) /* nothing was started that could write there */
                proc_launch_status_release(&e->proc->env.status, &run->status_slot);
        /* Should it have to be watched, the reactor opens a pidfd from the pid: the child is ours, not reaped yet. */
        proc_run_launched(run, r->pid, -1, &r->failure);
}

/* Only the pid, for killing: nothing is watched or reported (the launcher is going away). */
static void learn_pid(void *owner, const struct spawner_reply_msg *r)
{
        struct spawner_entry *e = owner;
        struct ao_proc_run *run = starting_run(e, r->id);
        if (!run)
                return;
        stop_waiting(e, run);
        if (r->pid > 0)
                proc_run_adopt_pid(run, r->pid);
}

static bool settle_parked(struct spawner_entry *e);

static bool on_replies_read(void *owner)
{
        struct spawner_entry *e = owner;
        bool waits = settle_parked(e);
        proc_reaper_kick(&e->proc->reaper);
        return waits;
}

static void spawner_entry_free(struct spawner_entry *e)
{
        if (!e)
                return;
        proc_notify_done(&e->listener);
        proc_spawner_done(&e->client);
        free(e);
}

/*
 * A spawner died: its runs waiting for a reply will never get one. Their
 * children may exist (they are ours and the subreaper collects them); the
 * runs are reported as launch failures. The next run with this profile
 * starts a new spawner.
 */
static void on_spawner_exit(void *owner)
{
        struct spawner_entry *e = owner;
        struct ao_proc *p = e->proc;
        p->spawners[e->index] = NULL;
        for (struct ao_proc_run *run = p->runs, *next; run; run = next) {
                next = run->next;
                if (run->state == RUN_STARTING && run->spawner == e) {
                        stop_waiting(e, run);
                        proc_run_launched(run, -EPIPE, -1, NULL);
                }
        }
        spawner_entry_free(e);
        proc_reaper_kick(&p->reaper);
}

static const struct spawner_ops spawner_ops = {
    .on_reply = on_reply,
    .on_replies_read = on_replies_read,
    .on_exit = on_spawner_exit,
};

/* --- what runs ask of the launcher ------------------------------------------- */

static void wait_for_pid(struct ao_proc_run *run)
{
        struct spawner_entry *e = run->spawner;
        if (!e || run->state != RUN_STARTING || run->needs_pid)
                return;
        run->needs_pid = true;
        proc_spawner_need_reply(&e->client);
}

static void read_pid_now(struct ao_proc_run *run)
{
        struct ao_proc *p = launcher_of(run->env);
        struct spawner_entry *e = run->spawner;
        uint64_t id = run->id;
        if (!e)
                return;
        proc_spawner_read_replies(&e->client, SPAWNER_DRAIN_ANSWERED);
        run = run_by_id(p, id); /* it may be gone: launched, reaped and reported */
        if (run && run->state == RUN_STARTING)
                wait_for_pid(run);
}

static bool run_tree_gone(struct ao_proc_run *run)
{
        return proc_tree_gone(&launcher_of(run->env)->tree);
}

static void run_finished(struct ao_proc_run *run)
{
        struct ao_proc *p = launcher_of(run->env);
        drop_run(p, run);
        if (p->shutdown)
                ao_shutdown_progress(p->shutdown);
}

static const struct run_ops run_ops = {
    .wait_for_pid = wait_for_pid,
    .read_pid_now = read_pid_now,
    .tree_gone = run_tree_gone,
    .finished = run_finished,
};

/* --- the reaper and the tree ask which children are ours ------------------------------ */

static struct spawner_entry *spawner_by_pid(struct ao_proc *p, pid_t pid)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && p->spawners[i]->client.pid == pid)
                        return p->spawners[i];
        return NULL;
}

static enum reap_claim claim_exit(void *owner, pid_t pid)
{
        struct ao_proc *p = owner;
        struct ao_proc_run *run = run_by_pid(p, pid);
        enum reap_claim claim = run ? proc_run_reap(run) : REAP_NOT_OURS;
        if (claim != REAP_NOT_OURS)
                return claim;
        struct spawner_entry *e = spawner_by_pid(p, pid);
        if (!e)
                return REAP_NOT_OURS;
        return proc_spawner_reap(&e->client) > 0 ? REAP_REAPED : REAP_STUCK;
}

static bool reaper_read_replies(void *owner, pid_t pid)
{
        struct ao_proc *p = owner;
        if (!replies_outstanding(p))
                return false;
        p->env.exited_pid = pid; /* a run launched meanwhile with this pid is reaped at once */
        read_all_replies(p);
        p->env.exited_pid = 0;
        return true;
}

/* Whether @pid could be the child of a run whose reply has not come: a request before it is unanswered. */
static bool may_await_reply(struct ao_proc *p, pid_t pid)
{
        if (!replies_outstanding(p))
                return false;
        if (pid != p->unknown_pid) {
                p->unknown_pid = pid;
                p->unknown_horizon = p->next_id;
        }
        return reply_owed(p, NULL, p->unknown_horizon);
}

static bool reaper_hold(void *owner, pid_t pid)
{
        struct ao_proc *p = owner;
        if (!may_await_reply(p, pid))
                return false;
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i])
                        proc_spawner_want_any(&p->spawners[i]->client);
        return true;
}

static const struct reaper_ops reaper_ops = {
    .on_exit = claim_exit,
    .read_replies = reaper_read_replies,
    .hold = reaper_hold,
};

static bool known_child(void *owner, pid_t pid)
{
        struct ao_proc *p = owner;
        return spawner_by_pid(p, pid) || run_by_leader(p, pid);
}

static bool tree_read_replies(void *owner)
{
        struct ao_proc *p = owner;
        if (!replies_outstanding(p))
                return false;
        read_all_replies(p);
        return true;
}

static const struct tree_ops tree_ops = {
    .known = known_child,
    .read_replies = tree_read_replies,
};

/* --- seccomp listeners and the calls they deny ----------------------------------- */

static void log_unknown_caller(struct spawner_entry *e, const struct denied_call *call)
{
        const char *name = ao_sandbox_syscall_name(call->nr);
        const struct ao_sandbox_profile *profile = e->client.profile;
        ao_log(AO_LOG_WARN,
               "sandbox violation: pid %d (no longer a known hook) called %s, denied by profile '%s'",
               (int) call->pid, name ? name : "an unknown syscall", profile ? profile->name : "none");
}

/*
 * Replies came in: parked calls whose caller is known now are settled, the
 * ones no owed reply can explain any more too. Returns whether some still wait.
 */
static bool settle_parked(struct spawner_entry *e)
{
        size_t kept = 0;
        for (size_t i = 0; i < e->n_parked; i++) {
                struct parked_call c = e->parked[i];
                struct ao_proc_run *run = run_of_caller(e->proc, c.call.pid);
                if (run) {
                        proc_run_violation(run, c.call.pid, c.call.nr);
                        proc_notify_answer(&e->listener, c.call.id);
                } else if (reply_owed(e->proc, e, c.horizon)) {
                        e->parked[kept++] = c;
                } else {
                        log_unknown_caller(e, &c.call);
                        proc_notify_answer(&e->listener, c.call.id);
                }
        }
        e->n_parked = kept;
        return kept > 0; /* the callers wait in their system calls: read the next reply at once */
}

/* A call a spawner's filter denied: to its run, or parked until the replies name its caller. */
static bool on_spawner_denied(void *owner, const struct denied_call *call)
{
        struct spawner_entry *e = owner;
        struct ao_proc *p = e->proc;
        struct ao_proc_run *run = run_of_caller(p, call->pid);
        if (run) {
                proc_run_violation(run, call->pid, call->nr);
                return true;
        }
        /* Most likely a hook that ran into the sandbox before its spawn reply was read: park it. */
        if (proc_spawner_owes_replies(&e->client) && e->n_parked < PARKED_MAX) {
                e->parked[e->n_parked++] = (struct parked_call){.call = *call, .horizon = p->next_id};
                read_all_replies(p); /* reads this spawner's replies and settles what it can */
                return false;
        }
        log_unknown_caller(e, call);
        return true;
}

/* HUP only when the spawner and all its children are gone: its exit handler cleans up. */
static const struct notify_ops spawner_notify_ops = {
    .on_denied = on_spawner_denied,
};

static void attach_spawner_listener(struct ao_proc *p, uint32_t serial, int listener)
{
        struct spawner_entry *e = NULL;
        for (int i = 0; i < SPAWNERS_MAX && !e; i++)
                if (p->spawners[i] && p->spawners[i]->client.serial == serial)
                        e = p->spawners[i];
        if (!e || e->listener.fd >= 0) {
                (void) close(listener);
                return;
        }
        int k = proc_notify_watch(&e->listener, p->env.reactor, listener, &spawner_notify_ops, e);
        if (k < 0) {
                /* Unanswered, a denied call would block its hook forever: stop this spawner instead. */
                ao_log_errno(AO_LOG_ERROR, k,
                             "proc: cannot watch the sandbox listener of a spawner, stopping it");
                (void) kill(e->client.pid, SIGKILL);
        }
}

static void on_listener(void *owner, uint64_t tag, int listener)
{
        struct ao_proc *p = owner;
        if (tag & SPAWNER_LISTENER_TAG) {
                attach_spawner_listener(p, (uint32_t) (tag & ~SPAWNER_LISTENER_TAG), listener);
                return;
        }
        struct ao_proc_run *run = run_by_id(p, tag);
        if (!run) {
                (void) close(listener);
                return;
        }
        proc_run_supervise(run, listener);
}

static const struct supervisor_ops supervisor_ops = {
    .on_listener = on_listener,
};

/* --- spawners ---------------------------------------------------------------- */

static int spawner_start(struct ao_proc *p, uint32_t index, const struct ao_sandbox_profile *profile,
                         struct ao_error *reterr)
{
        struct spawner_entry *e = ao_xcalloc(1, sizeof(*e));
        e->proc = p;
        e->index = index;
        e->listener.fd = -1;
        int k = proc_spawner_init(&e->client, &p->spawner_setup, profile, e, reterr);
        if (k < 0) {
                free(e);
                return k;
        }
        p->spawners[index] = e;
        return 0;
}

/* The spawner for @profile, started on first use; NULL when none can run (launch in process then). */
static struct spawner_entry *spawner_for(struct ao_proc *p, const struct ao_sandbox_profile *profile)
{
        if (!p->spawner_path)
                return NULL;
        uint32_t free_slot = SPAWNERS_MAX;
        for (uint32_t i = 0; i < SPAWNERS_MAX; i++) {
                if (p->spawners[i] && p->spawners[i]->client.profile == profile)
                        return p->spawners[i];
                if (!p->spawners[i] && free_slot == SPAWNERS_MAX)
                        free_slot = i;
        }
        struct ao_error err = {0};
        if (free_slot == SPAWNERS_MAX) {
                ao_log(AO_LOG_WARN,
                       "proc: more than %d sandbox profiles in use; starting '%s' hooks in process",
                       SPAWNERS_MAX, profile ? profile->name : "none");
                return NULL;
        }
        if (spawner_start(p, free_slot, profile, &err) < 0) {
                ao_log(AO_LOG_ERROR, "proc: %s; starting hooks in process", err.msg);
                return NULL;
        }
        return p->spawners[free_slot];
}

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
static void start_first_spawner(struct ao_proc *p)
{
        const char *configured = p->env.options.spawner_path;
        if (configured && !*configured)
                return;
        _cleanup_free_ char *found = configured ? NULL : default_spawner_path();
        const char *path = configured ? configured : found;
        if (path && access(path, X_OK) == 0) {
                p->spawner_path = ao_xstrdup(path);
                proc_launch_status_setup(
                    &p->env.status); /* before the first spawner: it maps the memfd at start */
                p->spawner_setup.path = p->spawner_path;
                p->spawner_setup.status_fd = p->env.status.fd;
                if (spawner_for(p, NULL))
                        return;
                free(p->spawner_path);
                p->spawner_path = NULL;
        }
        ao_log(AO_LOG_WARN,
               "proc: spawner %s unavailable; starting hooks from the operator itself, so their max RSS "
               "includes the operator's own memory",
               path ? path : "(not found)");
}

/* --- starting runs ---------------------------------------------------------------- */

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
static void launch_in_process(struct ao_proc *p, struct ao_proc_run *run, const struct ao_proc_spec *spec)
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
            .stdout_fd = run->out[AO_PROC_STDOUT].write_fd,
            .stderr_fd = run->out[AO_PROC_STDERR].write_fd,
            .listener_sock = p->supervisor.tx,
            .listener_tag = run->id,
        };
        fill_launch_profile(&l, spec->profile, limits);
        struct ao_launch_failure failure;
        int pidfd = -1;
        pid_t pid = ao_launch_clone(&l, false, p->direct_stack, DIRECT_STACK_SIZE, &pidfd, &failure);
        proc_run_launched(run, pid, pidfd, &failure);
}

/* Through the profile's spawner, or in process when there is none. */
static int launch(struct ao_proc *p, struct ao_proc_run *run, const struct ao_proc_spec *spec)
{
        struct spawner_entry *e = spawner_for(p, spec->profile);
        if (!e) {
                launch_in_process(p, run, spec);
                return 0;
        }
        run->status_slot = proc_launch_status_take(&p->env.status);
        int k = proc_spawner_request(&e->client, run->id, run->status_slot, run->path, spec->argv, spec->envp,
                                     spec->cwd, run->out[AO_PROC_STDOUT].write_fd,
                                     run->out[AO_PROC_STDERR].write_fd);
        if (k < 0) {
                proc_launch_status_release(&p->env.status, &run->status_slot);
                return k;
        }
        run->spawner = e;
        return 0;
}

int ao_proc_spawn(struct ao_proc *p, const struct ao_proc_spec *spec, struct ao_proc_run **ret_run,
                  struct ao_error *reterr)
{
        if (!spec->path || !spec->argv || !spec->envp || !spec->on_exit)
                return ao_error_set(reterr, -EINVAL, "proc: path, argv, envp and on_exit are required");
        if (p->refusing)
                return ao_error_set(reterr, -ESHUTDOWN, "proc: shutting down, not starting '%s'", spec->path);

        struct ao_proc_run *run = proc_run_new(&p->env, spec, ++p->next_id);
        link_run(p, run);
        int k = proc_run_prepare(run, spec->stdout_fd);
        if (k < 0) {
                drop_run(p, run);
                return ao_error_set(reterr, k, "proc: cannot set up output pipes for '%s': %s", spec->path,
                                    strerror(-k));
        }
        /*
         * Handed out before the launch: an in-process launch that fails reports the exit at once,
         * and its handler may free what @ret_run points into.
         */
        if (ret_run)
                *ret_run = run;
        k = launch(p, run, spec);
        if (k < 0) {
                if (ret_run)
                        *ret_run = NULL;
                drop_run(p, run);
                return ao_error_set(reterr, k, "proc: cannot start '%s': %s", spec->path, strerror(-k));
        }
        return 0;
}

/* --- the launcher ---------------------------------------------------------- */

static void set_options(struct ao_proc *p, const struct ao_proc_options *options)
{
        p->env.options = *options;
        if (!p->env.options.kill_grace_usec)
                p->env.options.kill_grace_usec = DEFAULT_KILL_GRACE;
        if (!p->env.options.line_max)
                p->env.options.line_max = DEFAULT_LINE_MAX;
        if (!p->env.options.output_max)
                p->env.options.output_max = DEFAULT_OUTPUT_MAX;
}

/* Seccomp listeners, then (as subreaper) SIGCHLD: before any child is started. */
static int start_supervision(struct ao_proc *p)
{
        int k = proc_supervisor_init(&p->supervisor, p->env.reactor, &supervisor_ops, p);
        if (k < 0 || !p->env.options.subreaper)
                return k;
        k = proc_reaper_init(&p->reaper, p->env.reactor, &reaper_ops, p);
        p->env.subreaper = proc_reaper_active(&p->reaper); /* SIGCHLD tells of every exit */
        return k;
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
        p->env.reactor = reactor;
        p->env.ops = &run_ops;
        set_options(p, options);
        p->env.status.fd = -1;
        proc_output_pool_init(&p->env.pool, reactor);
        p->supervisor.rx = p->supervisor.tx = -1;
        /* Without the subreaper ao_proc_new() fails, so this is whether there will be one. */
        proc_tree_init(&p->tree, options->subreaper, &tree_ops, p);
        p->direct_stack = ao_xmalloc(DIRECT_STACK_SIZE);

        int k = start_supervision(p);
        if (k < 0) {
                ao_proc_free(p);
                return ao_error_set(reterr, k, "proc: setting up child supervision failed: %s", strerror(-k));
        }
        p->spawner_setup = (struct spawner_setup){
            .reactor = reactor,
            .status_fd = -1,
            .listener_fd = p->supervisor.tx,
            .lazy_replies = p->env.subreaper,
            .ops = &spawner_ops,
        };
        start_first_spawner(p);
        *ret = p;
        return 0;
}

struct ao_proc *ao_proc_free(struct ao_proc *p)
{
        if (!p)
                return NULL;
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i])
                        proc_spawner_drain(&p->spawners[i]->client, learn_pid, SPAWNER_DRAIN_ALL);
        for (struct ao_proc_run *r = p->runs; r; r = r->next)
                proc_run_signal_group(r, SIGKILL);
        while (p->runs)
                drop_run(p, p->runs);
        for (int i = 0; i < SPAWNERS_MAX; i++) {
                spawner_entry_free(p->spawners[i]);
                p->spawners[i] = NULL;
        }
        free(p->spawner_path);
        proc_output_pool_done(&p->env.pool);
        proc_tree_done(&p->tree);
        proc_reaper_done(&p->reaper);
        proc_supervisor_done(&p->supervisor);
        proc_launch_status_done(&p->env.status);
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
        return p->env.pool.reused;
}

uint64_t ao_proc_orphans_reaped(const struct ao_proc *p)
{
        return p->reaper.orphans;
}

bool ao_proc_uses_spawner(const struct ao_proc *p)
{
        return p->spawner_path != NULL;
}

pid_t ao_proc_spawner_pid_of(const struct ao_proc *p, const struct ao_sandbox_profile *profile)
{
        for (int i = 0; i < SPAWNERS_MAX; i++)
                if (p->spawners[i] && p->spawners[i]->client.profile == profile)
                        return p->spawners[i]->client.pid;
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
