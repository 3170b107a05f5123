/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Graceful shutdown with real children. A test participant runs `sh -c 'read
 * x'` children in their own process groups, blocked on a pipe the test
 * controls, so "finishes within the grace period" and "is still running
 * when it ends" are decided by the test, not by timing.
 * Runs on both reactor backends (AO_REACTOR).
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/shutdown.h"

extern char **environ;

struct job {
        pid_t pid;
        int release_fd; /* write end of the child's stdin; closing it lets the child finish */
        bool reaped;
        int code, status;
};

struct runner {
        struct ao_reactor *reactor;
        struct ao_shutdown *shutdown;
        struct job jobs[4];
        size_t n_jobs;
        bool began, forced;
};

static int on_child(struct ao_source *s, const siginfo_t *si, const struct rusage *ru, void *userdata)
{
        struct runner *r = userdata;
        for (size_t i = 0; i < r->n_jobs; i++)
                if (r->jobs[i].pid == si->si_pid) {
                        r->jobs[i].reaped = true;
                        r->jobs[i].code = si->si_code;
                        r->jobs[i].status = si->si_status;
                }
        ao_source_free(s);
        ao_shutdown_progress(r->shutdown);
        return 0;
}

static struct job *start_job(struct runner *r)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                tap_bail("pipe2");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[0], 0);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
        char *argv[] = {"sh", "-c", "read x; exit 0", NULL};
        struct job *j = &r->jobs[r->n_jobs++];
        if (posix_spawn(&j->pid, "/bin/sh", &fa, &attr, argv, environ) != 0)
                tap_bail("posix_spawn");
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(p[0]);
        j->release_fd = p[1];
        if (ao_reactor_add_child(r->reactor, NULL, j->pid, -1, 0, on_child, r) < 0)
                tap_bail("add_child");
        return j;
}

static void begin(void *userdata)
{
        ((struct runner *) userdata)->began = true;
}

static size_t pending(void *userdata)
{
        struct runner *r = userdata;
        size_t n = 0;
        for (size_t i = 0; i < r->n_jobs; i++)
                n += !r->jobs[i].reaped;
        return n;
}

static void force(void *userdata)
{
        struct runner *r = userdata;
        r->forced = true;
        for (size_t i = 0; i < r->n_jobs; i++)
                if (!r->jobs[i].reaped)
                        kill(-r->jobs[i].pid, SIGKILL); /* the whole process group */
}

static const struct ao_shutdown_participant participant = {
    .name = "test jobs", .begin = begin, .pending = pending, .force = force};

static void setup(struct runner *r, uint64_t grace_usec)
{
        *r = (struct runner){0};
        const char *backend = getenv("AO_REACTOR");
        struct ao_error err = {0};
        if (ao_reactor_new(ao_reactor_backend_from_string(backend ? backend : "epoll"), &r->reactor, &err) <
            0)
                tap_skip_all(err.msg);
        if (ao_shutdown_new(r->reactor, grace_usec, &r->shutdown) < 0)
                tap_bail("ao_shutdown_new");
        ao_shutdown_register(r->shutdown, &participant, r);
}

static void teardown(struct runner *r)
{
        for (size_t i = 0; i < r->n_jobs; i++)
                r->jobs[i].release_fd = ao_safe_close(r->jobs[i].release_fd);
        ao_shutdown_free(r->shutdown);
        ao_reactor_free(r->reactor);
}

static int release_job(struct ao_source *s, uint64_t now, void *userdata)
{
        struct job *j = userdata;
        j->release_fd = ao_safe_close(j->release_fd);
        return 0;
}

static void test_idle_shutdown(void)
{
        struct runner r;
        setup(&r, 30 * AO_USEC_PER_SEC);
        raise(SIGTERM);
        tap_is_int(ao_reactor_run(r.reactor), 0, "idle: SIGTERM with nothing running exits 0");
        tap_ok(r.began, "idle: participants were told to stop taking work");
        tap_ok(ao_shutdown_in_progress(r.shutdown), "idle: shutdown in progress");
        teardown(&r);
}

static void test_running_child_finishes(void)
{
        struct runner r;
        setup(&r, 30 * AO_USEC_PER_SEC);
        struct job *j = start_job(&r);
        raise(SIGTERM);
        /* The job is released only after shutdown began: it must be waited for, not killed. */
        ao_reactor_add_time_relative(r.reactor, NULL, 20 * AO_USEC_PER_MSEC, release_job, j);
        uint64_t start = ao_clock_now_usec();
        tap_is_int(ao_reactor_run(r.reactor), 0, "grace: exit code 0");
        tap_ok(j->reaped && j->code == CLD_EXITED && j->status == 0,
               "grace: the running child finished normally");
        tap_ok(!r.forced, "grace: nothing had to be killed");
        tap_ok(ao_clock_now_usec() - start < 30 * AO_USEC_PER_SEC,
               "grace: did not wait for the whole period");
        teardown(&r);
}

static void test_grace_expires(void)
{
        struct runner r;
        uint64_t grace = 200 * AO_USEC_PER_MSEC;
        setup(&r, grace);
        struct job *j = start_job(&r);
        uint64_t start = ao_clock_now_usec();
        raise(SIGINT);
        tap_is_int(ao_reactor_run(r.reactor), 0, "expiry: exit code 0 after the grace period");
        tap_ok(r.forced, "expiry: leftovers were force-killed");
        tap_ok(j->reaped && j->code == CLD_KILLED && j->status == SIGKILL, "expiry: child killed by SIGKILL");
        tap_ok(ao_clock_now_usec() - start >= grace, "expiry: not before the grace period ended");
        teardown(&r);
}

static void test_second_signal(void)
{
        struct runner r;
        setup(&r, 60 * AO_USEC_PER_SEC);
        struct job *j = start_job(&r);
        raise(SIGTERM);
        /* Pending standard signals are read lowest number first: deliver SIGTERM before sending SIGINT. */
        while (!ao_shutdown_in_progress(r.shutdown))
                (void) ao_reactor_run_once(r.reactor, AO_USEC_PER_SEC);
        raise(SIGINT);
        tap_is_int(ao_reactor_run(r.reactor), 128 + SIGINT, "second signal: exit 128+SIGINT at once");
        tap_ok(r.forced, "second signal: running work killed");
        /* The kill was sent; reap it here since the loop stopped at once. */
        int st;
        tap_is_int(waitpid(j->pid, &st, 0), j->pid, "second signal: child reaped");
        tap_ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "second signal: child was SIGKILLed");
        j->reaped = true;
        teardown(&r);
}

int main(void)
{
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        struct ao_log_options quiet = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_ERROR, .fd = -1};
        ao_log_setup(&quiet);

        test_idle_shutdown();
        test_running_child_finishes();
        test_grace_expires();
        test_second_signal();
        ao_log_shutdown(0);
        return tap_done();
}
