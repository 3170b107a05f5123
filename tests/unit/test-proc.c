/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hook processes with real children, on both reactor backends (AO_REACTOR)
 * and both launch paths (through the spawner, and in process). Helper
 * programs come from the environment: AO_SPAWNER, AO_HOOKCHECK, AO_MEMHOG.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/log.h"
#include "ao/proc.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/shutdown.h"

extern char **environ;

static struct ao_reactor *reactor;
static struct ao_proc *proc;
static const char *mode; /* "spawner" or "in-process" */
static char *env_path[] = {"PATH=/usr/bin:/bin", NULL};

#define MAX_LINES 64

struct outcome {
        bool done;
        struct ao_proc_result result;
        char describe[256];
        char *lines[MAX_LINES];
        int streams[MAX_LINES];
        size_t n_lines;
        size_t total_lines;
        /* fairness probe: lines seen since the loop last turned over */
        size_t lines_since_turn, max_lines_per_turn;
};

static void on_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len,
                    void *userdata)
{
        struct outcome *o = userdata;
        o->total_lines++;
        o->lines_since_turn++;
        if (o->lines_since_turn > o->max_lines_per_turn)
                o->max_lines_per_turn = o->lines_since_turn;
        if (o->n_lines < MAX_LINES) {
                o->lines[o->n_lines] = strndup(line, len);
                o->streams[o->n_lines++] = stream;
        }
}

static void on_exit_cb(struct ao_proc_run *run, const struct ao_proc_result *result, void *userdata)
{
        struct outcome *o = userdata;
        o->result = *result;
        ao_proc_result_describe(result, o->describe, sizeof(o->describe));
        o->done = true;
}

static void outcome_done(struct outcome *o)
{
        for (size_t i = 0; i < o->n_lines; i++)
                free(o->lines[i]);
}

static void wait_done(struct outcome *o)
{
        uint64_t give_up = ao_clock_now_usec() + 60 * AO_USEC_PER_SEC;
        while (!o->done && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        if (!o->done)
                tap_bail("a run never finished");
}

static int run_spec(struct ao_proc_spec *spec, struct outcome *o)
{
        *o = (struct outcome){0};
        if (!spec->on_exit)
                spec->on_exit = on_exit_cb;
        if (!spec->envp)
                spec->envp = env_path;
        spec->userdata = o;
        struct ao_error err = {0};
        int k = ao_proc_spawn(proc, spec, NULL, &err);
        if (k < 0) {
                tap_diag("spawn failed: %s", err.msg);
                return k;
        }
        wait_done(o);
        return 0;
}

static int run_sh(const char *script, struct outcome *o)
{
        char *argv[] = {"/bin/sh", "-c", (char *) script, NULL};
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .on_line = on_line};
        return run_spec(&spec, o);
}

static void test_exit_and_output(void)
{
        struct outcome o;
        tap_is_int(run_sh("echo out; echo err >&2; printf 'no newline'; exit 3", &o), 0, "%s: spawn", mode);
        tap_is_int(o.result.exit_code, 3, "%s: exit code 3", mode);
        tap_is_int(o.result.signal, 0, "%s: no signal", mode);
        tap_is_str(o.describe, "exit code 3", "%s: described", mode);
        /* Order across the two pipes is not defined; within each it is. */
        const char *out[2] = {NULL, NULL}, *last_out = NULL, *err = NULL;
        for (size_t i = 0; i < o.n_lines; i++) {
                if (o.streams[i] == AO_PROC_STDERR)
                        err = o.lines[i];
                else if (!out[0])
                        out[0] = o.lines[i];
                else
                        last_out = o.lines[i];
        }
        (void) out[1];
        tap_is_int(o.n_lines, 3, "%s: three lines", mode);
        tap_is_str(out[0], "out", "%s: stdout line", mode);
        tap_is_str(last_out, "no newline", "%s: last line without newline kept", mode);
        tap_is_str(err, "err", "%s: stderr line", mode);
        tap_is_int(o.result.output_bytes[AO_PROC_STDOUT], 14, "%s: stdout byte count", mode);
        tap_ok(o.result.user_usec + o.result.system_usec > 0, "%s: CPU time recorded", mode);
        outcome_done(&o);
}

/*
 * A run none of whose processes is left anywhere hands its output pipes on: the next runs get
 * them, drained, with nothing of the earlier run in them (a last line without newline included).
 */
static void test_pipes_reused(void)
{
        struct outcome o;
        run_sh("echo one; printf 'two'; printf 'err' >&2", &o);
        tap_ok(o.result.group_gone && o.result.tree_gone, "%s: a plain hook leaves nothing behind", mode);
        tap_is_int(o.n_lines, 3, "%s: its three lines", mode);
        outcome_done(&o);
        uint64_t before = ao_proc_pipes_reused(proc);
        for (int i = 0; i < 3; i++) {
                run_sh("echo three", &o);
                tap_ok(o.n_lines == 1 && strcmp(o.lines[0], "three") == 0 && o.streams[0] == AO_PROC_STDOUT,
                       "%s: run %d on reused pipes reads only its own line", mode, i + 1);
                outcome_done(&o);
        }
        tap_is_int(ao_proc_pipes_reused(proc) - before, 6, "%s: three runs, two reused pipes each", mode);

        /* What a hook sets on its stdout's and stderr's open files does not reach the next hook. */
        run_sh("perl -MFcntl -e 'fcntl(STDOUT, F_SETFL, O_NONBLOCK) && fcntl(STDERR, F_SETFL, O_NONBLOCK) or "
               "die' "
               "&& echo set",
               &o);
        tap_ok(o.n_lines == 1 && strcmp(o.lines[0], "set") == 0,
               "%s: a hook makes its stdout and stderr non-blocking", mode);
        outcome_done(&o);
        before = ao_proc_pipes_reused(proc);
        run_sh("perl -MFcntl -e 'print((fcntl(STDOUT, F_GETFL, 0) & O_NONBLOCK) ? \"non-blocking\\n\" : "
               "\"blocking\\n\")'",
               &o);
        tap_ok(ao_proc_pipes_reused(proc) - before == 2 && o.n_lines == 1 &&
                   strcmp(o.lines[0], "blocking") == 0,
               "%s: the next hook, on the same pipes, gets a blocking stdout (%s)", mode,
               o.n_lines ? o.lines[0] : "nothing");
        outcome_done(&o);
}

/*
 * A hook grows its stdout pipe to 1 MiB (F_SETPIPE_SZ) and fills most of it before it exits: more
 * than one pass reads, so the rest is read on by the loop. Every byte arrives, in order, and the
 * next run on whatever pipe it gets sees only its own line.
 */
static void test_full_big_pipe_at_exit(void)
{
        struct outcome o;
        run_sh("perl -e 'fcntl(STDOUT, 1031, 1048576) or die; $| = 1; print \"x\" x 999999, \"\\nend\\n\"'",
               &o);
        tap_is_int(o.result.output_bytes[AO_PROC_STDOUT], 1000004, "%s: a full 1 MiB pipe: every byte read",
                   mode);
        tap_ok(o.n_lines == 2 && strcmp(o.lines[1], "end") == 0, "%s: and the last line after the long one",
               mode);
        outcome_done(&o);
        run_sh("echo next", &o);
        tap_ok(o.n_lines == 1 && strcmp(o.lines[0], "next") == 0, "%s: the next run reads only its own line",
               mode);
        outcome_done(&o);
}

/*
 * A descendant that left the hook's process group (setsid) still holds the hook's stdout when the
 * hook is reaped: the group is gone, the tree is not, and the pipe must not serve a later run,
 * where the descendant's late line would land. The FIFOs order it: the descendant has left the
 * group before the hook exits, and writes only once the next run is running.
 */
static void test_escaped_descendant_keeps_pipe(void)
{
        char dir[] = "/tmp/test-proc-escape.XXXXXX";
        if (!mkdtemp(dir))
                tap_bail("mkdtemp");
        char ready[64], go[64], done[64], script[1024];
        snprintf(ready, sizeof(ready), "%s/ready", dir);
        snprintf(go, sizeof(go), "%s/go", dir);
        snprintf(done, sizeof(done), "%s/done", dir);
        if (mkfifo(ready, 0600) < 0 || mkfifo(go, 0600) < 0 || mkfifo(done, 0600) < 0)
                tap_bail("mkfifo");
        struct outcome a, b;
        snprintf(script, sizeof(script),
                 "setsid sh -c 'trap \"\" PIPE; echo > %s; read x < %s; echo LEAK; echo > %s' & "
                 "read r < %s; echo A",
                 ready, go, done, ready);
        run_sh(script, &a);
        tap_ok(a.result.group_gone && !a.result.tree_gone,
               "%s: a descendant outside the group: group gone, tree not", mode);
        /* Reused pipes are taken last in, first out: A's would be the first B gets. */
        snprintf(script, sizeof(script), "echo > %s; read y < %s; echo B", go, done);
        run_sh(script, &b);
        tap_ok(b.n_lines == 1 && strcmp(b.lines[0], "B") == 0,
               "%s: the next run's output has none of the descendant's lines", mode);
        outcome_done(&a);
        outcome_done(&b);
        (void) unlink(ready), (void) unlink(go), (void) unlink(done), (void) rmdir(dir);
}

/* stdout_fd: the child writes into a file of ours, nothing of its stdout reaches the line handler. */
static void test_stdout_to_file(void)
{
        char path[] = "/tmp/test-proc-stdout.XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
                tap_bail("mkstemp");
        char *argv[] = {"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; echo; echo to-stderr >&2",
                        NULL};
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .on_line = on_line, .stdout_fd = fd};
        struct outcome o;
        tap_is_int(run_spec(&spec, &o), 0, "%s: stdout to a file: spawn", mode);
        tap_is_int(o.result.exit_code, 0, "%s: stdout to a file: exit 0", mode);
        tap_is_int(lseek(fd, 0, SEEK_END), 100001, "%s: stdout to a file: every byte in the file", mode);
        tap_is_int(o.n_lines, 1, "%s: stdout to a file: only stderr reached the handler", mode);
        tap_is_str(o.n_lines ? o.lines[0] : NULL, "to-stderr", "%s: stdout to a file: the stderr line", mode);
        outcome_done(&o);
        close(fd);
        unlink(path);
}

/*
 * Launches that fail and launches that work, all started at once: more than the spawner has child
 * slots, so some requests are answered before their exec and some after it. Each run reports its
 * own fate, whichever way it went and whatever ran before it in the same slots.
 */
static void test_many_launches(void)
{
        enum {
                N = 40
        };
        struct outcome o[N];
        char *missing[] = {"/nonexistent/hook", NULL}, *ok[] = {"/bin/sh", "-c", "exit 7", NULL};
        for (int i = 0; i < N; i++) {
                o[i] = (struct outcome){0};
                struct ao_proc_spec spec = {.path = i % 2 ? "/nonexistent/hook" : "/bin/sh",
                                            .argv = i % 2 ? missing : ok,
                                            .envp = env_path,
                                            .on_line = on_line,
                                            .on_exit = on_exit_cb,
                                            .userdata = &o[i]};
                struct ao_error err = {0};
                if (ao_proc_spawn(proc, &spec, NULL, &err) < 0) {
                        tap_diag("spawn failed: %s", err.msg);
                        tap_bail("a launch was refused");
                }
        }
        int right = 0;
        for (int i = 0; i < N; i++) {
                wait_done(&o[i]);
                bool as_expected = i % 2 ? o[i].result.launch_error == ENOENT &&
                                               strcmp(o[i].describe, "execve: No such file or directory") == 0
                                         : o[i].result.launch_error == 0 && o[i].result.exit_code == 7;
                if (as_expected)
                        right++;
                else
                        tap_diag("run %d: %s (launch error %d)", i, o[i].describe, o[i].result.launch_error);
                outcome_done(&o[i]);
        }
        tap_is_int(right, N, "%s: %d launches at once, half failing: each reports its own outcome", mode, N);
}

static void test_exec_failure(void)
{
        struct outcome o;
        char *argv[] = {"/nonexistent/hook", NULL};
        struct ao_proc_spec spec = {.path = "/nonexistent/hook", .argv = argv, .on_line = on_line};
        tap_is_int(run_spec(&spec, &o), 0, "%s: spawn of a missing file is accepted", mode);
        tap_is_int(o.result.launch_error, ENOENT, "%s: launch error ENOENT", mode);
        tap_is_str(o.describe, "execve: No such file or directory", "%s: names the failing step", mode);
        tap_is_int(o.result.exit_code, 127, "%s: exit code 127", mode);

        char *cwd_argv[] = {"/bin/true", NULL};
        struct ao_proc_spec bad_cwd = {.path = "/bin/true", .argv = cwd_argv, .cwd = "/nonexistent-dir"};
        run_spec(&bad_cwd, &o);
        tap_is_str(o.describe, "chdir: No such file or directory", "%s: a bad cwd is reported as chdir",
                   mode);
}

static void test_child_environment(void)
{
        const char *hookcheck = getenv("AO_HOOKCHECK");
        struct outcome o;
        char *argv[] = {(char *) hookcheck, NULL};
        struct ao_proc_spec spec = {.path = hookcheck, .argv = argv, .cwd = "/tmp", .on_line = on_line};
        run_spec(&spec, &o);
        tap_is_int(o.result.exit_code, 0, "%s: hookcheck ran", mode);
        const char *want[] = {"fds 0,1,2",
                              "sigblk 0000000000000000",
                              "sigign 0000000000000000",
                              "nnp 0",
                              "seccomp 0",
                              "leader yes",
                              "cwd /tmp"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(want); i++) {
                bool found = false;
                for (size_t j = 0; j < o.n_lines; j++)
                        found |= strcmp(o.lines[j], want[i]) == 0;
                tap_ok(found, "%s: child sees '%s'", mode, want[i]);
        }
        outcome_done(&o);
}

static void test_timeout_kills_group(void)
{
        struct outcome o;
        char *argv[] = {"/bin/sh", "-c", "sleep 30 & echo $!; sleep 30", NULL};
        struct ao_proc_spec spec = {
            .path = "/bin/sh", .argv = argv, .timeout_usec = 200 * AO_USEC_PER_MSEC, .on_line = on_line};
        uint64_t start = ao_clock_now_usec();
        run_spec(&spec, &o);
        tap_ok(o.result.timed_out, "%s: timed out", mode);
        tap_is_int(o.result.signal, SIGTERM, "%s: the hook died of SIGTERM", mode);
        tap_ok(ao_clock_now_usec() - start >= 200 * AO_USEC_PER_MSEC, "%s: not before the timeout", mode);
        /* The killed sleepers are orphans now: gone once the subreaper has collected them. */
        pid_t background = o.n_lines ? (pid_t) atoi(o.lines[0]) : 0;
        uint64_t give_up = ao_clock_now_usec() + 10 * AO_USEC_PER_SEC;
        while (kill(-o.result.pid, 0) == 0 && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_ok(background > 0 && kill(background, 0) < 0 && errno == ESRCH,
               "%s: the background sleeper in its group was killed and reaped", mode);
        tap_ok(kill(-o.result.pid, 0) < 0 && errno == ESRCH, "%s: the process group is empty", mode);
        outcome_done(&o);

        /* A hook that ignores SIGTERM gets SIGKILL after the grace period. */
        char *stubborn[] = {"/bin/sh", "-c", "trap '' TERM; sleep 30", NULL};
        struct ao_proc_spec spec2 = {
            .path = "/bin/sh", .argv = stubborn, .timeout_usec = 100 * AO_USEC_PER_MSEC, .on_line = on_line};
        run_spec(&spec2, &o);
        tap_ok(o.result.timed_out, "%s: stubborn hook timed out", mode);
        tap_is_int(o.result.signal, SIGKILL, "%s: and was SIGKILLed after the grace period", mode);
        outcome_done(&o);
}

static void test_orphans_reaped(void)
{
        uint64_t before = ao_proc_orphans_reaped(proc);
        struct outcome o;
        /* The grandchild outlives the hook, is re-parented to us (subreaper) and must be reaped. */
        run_sh("(sleep 0.2; exit 0) & echo $!; exit 0", &o);
        tap_is_int(o.result.exit_code, 0, "%s: double-forking hook exits 0", mode);
        pid_t sleeper = o.n_lines ? (pid_t) atoi(o.lines[0]) : 0;
        /* kill(pid, 0) succeeds on a zombie: it fails only once the orphan was reaped. */
        uint64_t give_up = ao_clock_now_usec() + 10 * AO_USEC_PER_SEC;
        while (sleeper > 0 && kill(sleeper, 0) == 0 && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_ok(sleeper > 0 && kill(sleeper, 0) < 0 && errno == ESRCH, "%s: the orphaned sleeper was reaped",
               mode);
        tap_ok(ao_proc_orphans_reaped(proc) > before, "%s: and counted as an orphan", mode);
        outcome_done(&o);
}

/* A `sleep 30` run left going in the background, so that its spawn reply stays unread meanwhile. */
static struct ao_proc_run *start_bystander(struct outcome *o)
{
        static char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
        struct ao_proc_spec spec = {
            .path = "/bin/sh", .argv = argv, .envp = env_path, .on_exit = on_exit_cb, .userdata = o};
        struct ao_proc_run *run = NULL;
        *o = (struct outcome){0};
        if (ao_proc_spawn(proc, &spec, &run, NULL) < 0)
                tap_bail("spawning the bystander failed");
        return run;
}

static void stop_bystander(struct ao_proc_run *run, struct outcome *o)
{
        tap_ok(!o->done, "%s: the bystander was still running meanwhile", mode);
        ao_proc_run_kill(run);
        wait_done(o);
        tap_ok(o->result.killed, "%s: the bystander was killed at the end", mode);
        outcome_done(o);
}

/*
 * Spawn replies are read only when a run's pid is needed. An orphan must not
 * wait for the replies of runs started before it exited and still going.
 */
static void test_orphan_reaped_beside_running_hook(void)
{
        struct outcome bystander, o;
        struct ao_proc_run *bystander_run = start_bystander(&bystander);
        uint64_t before = ao_proc_orphans_reaped(proc);
        run_sh("(sleep 0.2; exit 0) & echo $!; exit 0", &o);
        pid_t sleeper = o.n_lines ? (pid_t) atoi(o.lines[0]) : 0;
        uint64_t give_up = ao_clock_now_usec() + 10 * AO_USEC_PER_SEC;
        while (sleeper > 0 && kill(sleeper, 0) == 0 && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_ok(sleeper > 0 && kill(sleeper, 0) < 0 && errno == ESRCH,
               "%s: an orphan is reaped while another run goes on", mode);
        tap_ok(ao_proc_orphans_reaped(proc) > before, "%s: and counted as an orphan", mode);
        outcome_done(&o);
        stop_bystander(bystander_run, &bystander);
}

/* The hook exits while a descendant keeps its output open: reported after the linger time, not at EOF. */
static void test_exit_with_output_held(void)
{
        struct outcome o;
        run_sh("sleep 30 & echo $!; exit 3", &o);
        pid_t holder = o.n_lines ? (pid_t) atoi(o.lines[0]) : 0;
        tap_is_int(o.result.exit_code, 3,
                   "%s: a hook whose descendant holds its output still reports its exit", mode);
        tap_ok(holder > 0 && kill(holder, 0) == 0, "%s: while the descendant still runs", mode);
        if (holder > 0)
                (void) kill(holder, SIGKILL);
        outcome_done(&o);
}

static int on_turn(struct ao_source *s, void *userdata)
{
        struct outcome *o = userdata;
        o->lines_since_turn = 0;
        return 0;
}

static void test_big_output_keeps_loop_turning(void)
{
        struct outcome o = {0};
        struct ao_source *turn;
        /* A post source runs after every iteration: lines between two of them = work per iteration. */
        ao_reactor_add_post(reactor, &turn, on_turn, &o);
        char *argv[] = {"/bin/sh", "-c", "head -c 10000000 /dev/zero | tr '\\0' a | fold -w 99", NULL};
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .on_line = on_line, .envp = env_path};
        spec.on_exit = on_exit_cb;
        spec.userdata = &o;
        ao_proc_spawn(proc, &spec, NULL, NULL);
        wait_done(&o);
        ao_source_free(turn);
        tap_is_int(o.result.output_bytes[AO_PROC_STDOUT], 10000000 + 10000000 / 99, "%s: every byte read",
                   mode);
        /* Per-run cap (1 MiB in this test) reached: the rest was read but not handed on. */
        tap_ok(o.result.output_truncated, "%s: output cap reached", mode);
        tap_ok(o.total_lines < 1024 * 1024 / 99 + 2, "%s: lines past the cap not passed on (%zu)", mode,
               o.total_lines);
        tap_ok(o.max_lines_per_turn <= 4 * 64 * 1024 / 100 + 2,
               "%s: the loop turned over at least every 256 KiB (max %zu lines per iteration)", mode,
               o.max_lines_per_turn);
        outcome_done(&o);
}

static void test_long_line_capped(void)
{
        struct outcome o;
        run_sh("head -c 200000 /dev/zero | tr '\\0' b; echo; echo after", &o);
        tap_is_int(o.n_lines, 2, "%s: an over-long line and the next one", mode);
        size_t want = 64 * 1024 + strlen(" ...(line truncated)");
        tap_is_int(o.n_lines ? strlen(o.lines[0]) : 0, want, "%s: long line cut at the line cap", mode);
        tap_ok(o.n_lines && strstr(o.lines[0], "...(line truncated)"), "%s: and marked", mode);
        tap_is_str(o.n_lines > 1 ? o.lines[1] : NULL, "after", "%s: next line intact", mode);
        outcome_done(&o);
}

static void test_garbage_logged_safely(int log_read)
{
        struct outcome o;
        char *argv[] = {"/bin/sh", "-c", "printf 'x\\000y\\377\\033[31mz\\n' >&2", NULL};
        struct ao_proc_spec spec = {
            .path = "/bin/sh", .argv = argv, .log_context = {.hook = "hooks/garbage"}};
        run_spec(&spec, &o);
        char buf[4096];
        ssize_t n = read(log_read, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        tap_is_str(buf,
                   "{\"level\":\"info\",\"msg\":\"x\xef\xbf\xbdy\xef\xbf\xbd\\u001b[31mz\",\"hook\":\"hooks/"
                   "garbage\","
                   "\"output\":\"stderr\"}\n",
                   "%s: NUL, invalid UTF-8 and escape sequences logged as valid JSON", mode);
}

/* A run's lines carry every field of its context, the proc's own copies of the spec's strings. */
static void test_context_logged(int log_read)
{
        struct outcome o = {0};
        char *argv[] = {"/bin/sh", "-c", "echo out", NULL};
        char queue[] = "slow";
        struct ao_proc_spec spec = {.path = "/bin/sh",
                                    .argv = argv,
                                    .envp = env_path,
                                    .on_exit = on_exit_cb,
                                    .userdata = &o,
                                    .log_context = {.module = "web",
                                                    .hook = "hooks/say.sh",
                                                    .hook_type = "module",
                                                    .binding = "pods",
                                                    .event = "kubernetes",
                                                    .watch_event = "Added",
                                                    .queue = queue,
                                                    .task = "ModuleHookRun",
                                                    .event_type = "Kubernetes"}};
        struct ao_error err = {0};
        tap_ok(ao_proc_spawn(proc, &spec, NULL, &err) >= 0, "%s: context run spawned", mode);
        strcpy(queue, "gone");
        wait_done(&o);
        char buf[4096];
        ssize_t n = read(log_read, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        tap_is_str(
            buf,
            "{\"level\":\"info\",\"msg\":\"out\",\"module\":\"web\",\"hook\":\"hooks/say.sh\","
            "\"hook.type\":\"module\",\"binding\":\"pods\",\"event\":\"kubernetes\",\"watchEvent\":\"Added\","
            "\"queue\":\"slow\",\"task\":\"ModuleHookRun\",\"event.type\":\"Kubernetes\",\"output\":"
            "\"stdout\"}\n",
            "%s: every context field on the run's lines, copied at spawn", mode);
        outcome_done(&o);
}

static void test_json_log_lines(int log_read)
{
        struct outcome o;
        char *argv[] = {"/bin/sh", "-c",
                        "echo '{\"level\":\"warn\",\"msg\":\"disk low\",\"free\":3,\"time\":\"x\","
                        "\"path\":\"/d\"}'; echo '{not json'",
                        NULL};
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .log_context = {.hook = "hooks/json"}};
        run_spec(&spec, &o);
        char buf[4096];
        ssize_t n = read(log_read, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        tap_is_str(
            buf,
            "{\"level\":\"warn\",\"msg\":\"disk low\",\"hook\":\"hooks/json\",\"output\":\"stdout\","
            "\"proxyJsonLog\":\"true\",\"hook_free\":\"3\",\"hook_path\":\"/d\"}\n"
            "{\"level\":\"info\",\"msg\":\"{not json\",\"hook\":\"hooks/json\",\"output\":\"stdout\"}\n",
            "%s: a JSON line becomes a structured record at its level; other lines stay text", mode);
}

/* LOG_PROXY_HOOK_JSON: an object printed over several lines becomes one record; the rest stays text. */
static void test_json_joined_lines(int log_read)
{
        struct ao_proc_options options = {.spawner_path = "", .join_json_lines = true};
        struct ao_proc *saved = proc, *joining = NULL;
        struct ao_error err = {0};
        if (ao_proc_new(reactor, &options, &joining, &err) < 0)
                tap_bail(err.msg);
        proc = joining;
        struct outcome o;
        char *argv[] = {"/bin/sh", "-c",
                        "printf '%s\\n' '{' '  \"level\": \"error\",' '  \"msg\": \"a } and a {\",' "
                        "'  \"n\": {\"a\": [1,' '    2]}' '}' 'plain after' '{\"one\": \"line\"}' "
                        "'{ \"open\": [' '}'",
                        NULL};
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .log_context = {.hook = "hooks/pretty"}};
        run_spec(&spec, &o);
        proc = saved;
        ao_proc_free(joining);
        char buf[4096];
        ssize_t n = read(log_read, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        tap_is_str(
            buf,
            "{\"level\":\"error\",\"msg\":\"a } and a {\",\"hook\":\"hooks/pretty\",\"output\":\"stdout\","
            "\"proxyJsonLog\":\"true\",\"hook_n\":\"{\\\"a\\\":[1,2]}\"}\n"
            "{\"level\":\"info\",\"msg\":\"plain after\",\"hook\":\"hooks/pretty\",\"output\":\"stdout\"}\n"
            "{\"level\":\"info\",\"msg\":\"\",\"hook\":\"hooks/pretty\",\"output\":\"stdout\","
            "\"proxyJsonLog\":\"true\",\"hook_one\":\"line\"}\n"
            "{\"level\":\"info\",\"msg\":\"{ \\\"open\\\": [\",\"hook\":\"hooks/pretty\",\"output\":"
            "\"stdout\"}\n"
            "{\"level\":\"info\",\"msg\":\"}\",\"hook\":\"hooks/pretty\",\"output\":\"stdout\"}\n",
            "joined JSON lines: one record for the pretty-printed object, text for what never closes");
}

static void test_max_rss(void)
{
        const char *memhog = getenv("AO_MEMHOG");
        uint64_t rss[3];
        const char *sizes[3] = {"0", "4", "64"};
        for (int i = 0; i < 3; i++) {
                struct outcome o;
                char *argv[] = {(char *) memhog, (char *) sizes[i], NULL};
                struct ao_proc_spec spec = {.path = memhog, .argv = argv, .on_line = on_line};
                run_spec(&spec, &o);
                rss[i] = o.result.max_rss_bytes;
        }
        tap_diag("%s: max RSS: idle %llu KiB, 4 MiB hog %llu KiB, 64 MiB hog %llu KiB", mode,
                 (unsigned long long) rss[0] >> 10, (unsigned long long) rss[1] >> 10,
                 (unsigned long long) rss[2] >> 10);
        if (!ao_proc_uses_spawner(proc)) {
                /* Cloned from the operator, a hook's max RSS starts at the operator's: only a floor holds. */
                tap_ok(rss[2] >= 64u << 20, "%s: max RSS covers at least the 64 MiB the hook touched", mode);
                return;
        }
        /*
         * At least what the hog touched, and at most 20 % more than that above the idle hook. Not
         * "within 20 % of the idle hook plus the hog": the idle hook's figure is the spawner's at
         * the exec when that is higher, and a sanitizer build's spawner grows with every request.
         */
        double four = (double) (rss[1] - AO_MIN(rss[1], rss[0])),
               sixty_four = (double) (rss[2] - AO_MIN(rss[2], rss[0]));
        tap_ok(rss[1] >= 4u << 20 && four < 1.2 * (4 << 20), "%s: 4 MiB hog reported within 20%% (%.0f KiB)",
               mode, four / 1024);
        tap_ok(rss[2] >= 64u << 20 && sixty_four < 1.2 * (64 << 20),
               "%s: 64 MiB hog reported within 20%% (%.0f KiB)", mode, sixty_four / 1024);
        tap_ok(rss[0] < 2u << 20, "%s: an idle hook reports its own small RSS, not the operator's (%llu KiB)",
               mode, (unsigned long long) rss[0] >> 10);
}

/*
 * Kills sent the moment the spawner's answer is in: the child may not have made its session (and
 * process group) yet, since spawners answer before the exec. Each must still die by SIGKILL, at
 * once rather than after its 5 s sleep.
 */
static void test_kill_while_starting(void)
{
        enum {
                N = 20
        };
        int killed = 0;
        for (int i = 0; i < N; i++) {
                struct outcome o = {0};
                char *argv[] = {"/bin/sh", "-c", "sleep 5", NULL};
                struct ao_proc_spec spec = {
                    .path = "/bin/sh", .argv = argv, .envp = env_path, .on_exit = on_exit_cb, .userdata = &o};
                struct ao_proc_run *run;
                if (ao_proc_spawn(proc, &spec, &run, NULL) < 0)
                        tap_bail("spawn for kill failed");
                ao_proc_run_kill(run);
                wait_done(&o);
                if (o.result.killed && o.result.signal == SIGKILL && o.result.wall_usec < 4 * AO_USEC_PER_SEC)
                        killed++;
                else
                        tap_diag("run %d: %s after %llu ms", i, o.describe,
                                 (unsigned long long) (o.result.wall_usec / 1000));
                outcome_done(&o);
        }
        tap_is_int(killed, N, "%s: runs killed as they start die by SIGKILL at once", mode);
}

static void test_kill_and_shutdown(void)
{
        struct outcome o = {0};
        char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
        struct ao_proc_spec spec = {
            .path = "/bin/sh", .argv = argv, .envp = env_path, .on_exit = on_exit_cb, .userdata = &o};
        struct ao_proc_run *run;
        tap_is_int(ao_proc_spawn(proc, &spec, &run, NULL), 0, "%s: spawn for kill", mode);
        tap_is_int(ao_proc_running(proc), 1, "%s: one running", mode);
        ao_proc_run_kill(run);
        wait_done(&o);
        tap_ok(o.result.killed && o.result.signal == SIGKILL, "%s: killed run reports SIGKILL", mode);
        tap_is_int(ao_proc_running(proc), 0, "%s: none running", mode);

        struct ao_shutdown *sd;
        ao_shutdown_new(reactor, AO_USEC_PER_SEC, &sd);
        ao_proc_attach_shutdown(proc, sd);
        ao_shutdown_begin(sd, 0);
        struct ao_error err = {0};
        o = (struct outcome){0};
        tap_is_int(ao_proc_spawn(proc, &spec, NULL, &err), -ESHUTDOWN, "%s: no new runs after shutdown began",
                   mode);
        ao_shutdown_free(sd);
}

static struct ao_sandbox_profiles *profiles;
static struct ao_sandbox_profile *killer_profiles[2];
static size_t n_killers;

static bool has_line(const struct outcome *o, const char *want)
{
        for (size_t i = 0; i < o->n_lines; i++)
                if (strcmp(o->lines[i], want) == 0)
                        return true;
        return false;
}

static void read_log(int log_read, char *buf, size_t size)
{
        size_t len = 0;
        ssize_t n;
        while (len + 1 < size && (n = read(log_read, buf + len, size - 1 - len)) > 0)
                len += (size_t) n;
        buf[len] = '\0';
}

static void test_sandbox_default(int log_read)
{
        const struct ao_sandbox_profile *def = ao_sandbox_profiles_find(profiles, "default");
        const char *hookcheck = getenv("AO_HOOKCHECK"), *forbidden = getenv("AO_FORBIDDEN");
        struct outcome o;
        char *check_argv[] = {(char *) hookcheck, NULL};
        struct ao_proc_spec check = {
            .path = hookcheck, .argv = check_argv, .profile = def, .on_line = on_line};
        run_spec(&check, &o);
        tap_ok(o.result.exit_code == 0 && has_line(&o, "nnp 1") && has_line(&o, "seccomp 2") &&
                   has_line(&o, "fds 0,1,2"),
               "%s: under 'default': no_new_privs, a seccomp filter, and still only fds 0-2", mode);
        outcome_done(&o);

        char target[] = "/tmp/ao-test-mount.XXXXXX";
        if (!mkdtemp(target))
                tap_bail("mkdtemp");
        char *argv[] = {(char *) forbidden, target, NULL};
        struct ao_proc_spec spec = {.path = forbidden,
                                    .argv = argv,
                                    .profile = def,
                                    .on_line = on_line,
                                    .log_context = {.module = "mod", .hook = "hooks/forbidden"}};
        char drain[65536];
        read_log(log_read, drain, sizeof(drain));
        run_spec(&spec, &o);
        (void) umount2(target, MNT_DETACH); /* only mounted if the sandbox failed */
        (void) rmdir(target);
        const char *calls[] = {"ptrace", "mount", "unshare", "bpf"};
        char log[65536];
        read_log(log_read, log, sizeof(log));
        for (size_t i = 0; i < AO_ARRAY_SIZE(calls); i++) {
                char want[64];
                snprintf(want, sizeof(want), "%s EPERM", calls[i]);
                tap_ok(has_line(&o, want), "%s: default profile: %s fails with EPERM", mode, calls[i]);
                char logged[512];
                snprintf(logged, sizeof(logged),
                         "called %s, denied (EPERM) by profile 'default'\",\"module\":\"mod\",\"hook\":"
                         "\"hooks/forbidden\",\"syscall\":\"%s\",\"profile\":\"default\"}",
                         calls[i], calls[i]);
                tap_ok(strstr(log, logged) != NULL, "%s: default profile: the %s violation is logged by name",
                       mode, calls[i]);
        }
        tap_is_int(o.result.violations, 4, "%s: four violations counted", mode);
        tap_is_int(o.result.exit_code, 0, "%s: the hook itself went on", mode);
        outcome_done(&o);
}

static void test_sandbox_descendants(void)
{
        /* The forbidden calls come from a child of the hook: attributed through its process group. */
        const struct ao_sandbox_profile *def = ao_sandbox_profiles_find(profiles, "default");
        char script[512];
        snprintf(script, sizeof(script), "%s /nonexistent; echo done", getenv("AO_FORBIDDEN"));
        char *argv[] = {"/bin/sh", "-c", script, NULL};
        struct outcome o;
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .profile = def, .on_line = on_line};
        run_spec(&spec, &o);
        tap_ok(o.result.violations == 4 && has_line(&o, "ptrace EPERM") && has_line(&o, "done"),
               "%s: violations of a hook's child count for the hook (%u)", mode, o.result.violations);
        outcome_done(&o);
}

/* A denied call from a process of no known hook is answered, not held while other runs go on. */
static void test_unknown_caller_beside_running_hook(void)
{
        const struct ao_sandbox_profile *def = ao_sandbox_profiles_find(profiles, "default");
        struct outcome bystander, o;
        struct ao_proc_run *bystander_run = start_bystander(&bystander);
        char script[512];
        /* setsid leaves the hook's process group: the caller cannot be traced to the hook. */
        snprintf(script, sizeof(script), "setsid %s /nonexistent; echo done", getenv("AO_FORBIDDEN"));
        char *argv[] = {"/bin/sh", "-c", script, NULL};
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .profile = def, .on_line = on_line};
        run_spec(&spec, &o);
        tap_ok(has_line(&o, "ptrace EPERM") && has_line(&o, "bpf EPERM") && has_line(&o, "done"),
               "%s: denied calls of an unknown process are answered EPERM", mode);
        /* In process, each hook has its own filter: whatever uses it is that hook's. */
        tap_is_int(o.result.violations, strcmp(mode, "spawner") == 0 ? 0 : 4,
                   "%s: counted for the hook only when its own filter saw them", mode);
        outcome_done(&o);
        stop_bystander(bystander_run, &bystander);
}

static void test_spawner_restart(void)
{
        const struct ao_sandbox_profile *def = ao_sandbox_profiles_find(profiles, "default");
        pid_t spawner = ao_proc_spawner_pid_of(proc, def);
        if (!ao_proc_uses_spawner(proc)) {
                tap_ok(spawner == 0, "%s: no spawner in process mode", mode);
                return;
        }
        tap_ok(spawner > 0 && kill(spawner, SIGKILL) == 0, "%s: the 'default' spawner killed", mode);
        uint64_t give_up = ao_clock_now_usec() + 10 * AO_USEC_PER_SEC;
        while (ao_proc_spawner_pid_of(proc, def) == spawner && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_is_int(ao_proc_spawner_pid_of(proc, def), 0, "%s: its death noticed", mode);
        struct outcome o;
        char *argv[] = {"/bin/sh", "-c", "echo again", NULL};
        struct ao_proc_spec spec = {.path = "/bin/sh", .argv = argv, .profile = def, .on_line = on_line};
        run_spec(&spec, &o);
        pid_t again = ao_proc_spawner_pid_of(proc, def);
        tap_ok(o.result.exit_code == 0 && has_line(&o, "again") && again > 0 && again != spawner,
               "%s: the next run started a new spawner and ran", mode);
        outcome_done(&o);
}

/* The inode of a pipe this process holds without close-on-exec, as libcurl holds its sockets. */
static ino_t leaked_pipe;

static void test_spawner_fds(void)
{
        pid_t spawner = ao_proc_spawner_pid_of(proc, NULL);
        if (!ao_proc_uses_spawner(proc))
                return;
        char dir[64], want[64];
        snprintf(dir, sizeof(dir), "/proc/%d/fd", (int) spawner);
        snprintf(want, sizeof(want), "pipe:[%lu]", (unsigned long) leaked_pipe);
        DIR *d = opendir(dir);
        bool held = false;
        struct dirent *de;
        while (d && (de = readdir(d))) {
                char path[320], target[128];
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                ssize_t n = readlink(path, target, sizeof(target) - 1);
                if (n > 0) {
                        target[n] = '\0';
                        held |= strcmp(target, want) == 0;
                }
        }
        tap_ok(d && !held, "%s: the spawner keeps none of the operator's fds that are not close-on-exec",
               mode);
        if (d)
                closedir(d);
}

static void test_sandbox_strict(void)
{
        const struct ao_sandbox_profile *strict = ao_sandbox_profiles_find(profiles, "strict");
        struct {
                const char *path, *script, *want;
        } cases[] = {
            {"/bin/bash", "x=$((1+2)); echo $x; echo hi | cat", "3"},
            {"/bin/sh", "ls / >/dev/null && echo listed", "listed"},
            {"/usr/bin/python3", "import json; print(json.dumps({'a': 1}))", "{\"a\": 1}"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                if (access(cases[i].path, X_OK) < 0) {
                        tap_ok(true, "%s: strict: %s # SKIP not installed", mode, cases[i].path);
                        continue;
                }
                struct outcome o;
                char *argv[] = {(char *) cases[i].path, "-c", (char *) cases[i].script, NULL};
                struct ao_proc_spec spec = {
                    .path = cases[i].path, .argv = argv, .profile = strict, .on_line = on_line};
                run_spec(&spec, &o);
                tap_ok(o.result.exit_code == 0 && o.result.violations == 0 && has_line(&o, cases[i].want),
                       "%s: strict: %s works (exit %d, %u violations)", mode, cases[i].path,
                       o.result.exit_code, o.result.violations);
                outcome_done(&o);
        }
}

static void test_sandbox_kill_action(void)
{
        static const char policy[] = "seccomp:\n  default: allow\n  deny: [ptrace]\non-violation: kill\n";
        struct ao_sandbox_profile *killer;
        struct ao_error err = {0};
        if (ao_sandbox_profile_parse("killer", policy, sizeof(policy) - 1, "killer.policy", &killer, &err) <
            0)
                tap_bail(err.msg);
        const char *forbidden = getenv("AO_FORBIDDEN");
        char *argv[] = {(char *) forbidden, "/nonexistent", NULL};
        struct outcome o;
        struct ao_proc_spec spec = {.path = forbidden, .argv = argv, .profile = killer, .on_line = on_line};
        run_spec(&spec, &o);
        tap_ok(o.result.killed && o.result.signal == SIGKILL && o.result.violations == 1,
               "%s: on-violation kill: the hook is killed at its first denied call", mode);
        tap_ok(!has_line(&o, "mount EPERM"), "%s: and gets no further", mode);
        outcome_done(&o);
        /* The spawner keeps the profile registered by address: only free it with the launcher. */
        killer_profiles[n_killers++] = killer;
}

static void setup(bool use_spawner)
{
        struct ao_proc_options options = {
            .spawner_path = use_spawner ? getenv("AO_SPAWNER") : "",
            .kill_grace_usec = 200 * AO_USEC_PER_MSEC,
            .output_max = 1024 * 1024,
            .subreaper = true,
        };
        struct ao_error err = {0};
        if (ao_proc_new(reactor, &options, &proc, &err) < 0)
                tap_bail(err.msg);
        mode = use_spawner ? "spawner" : "in-process";
        if (use_spawner && !ao_proc_uses_spawner(proc))
                tap_bail("the spawner did not start");
}

int main(void)
{
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        /* Dispositions a careless parent might leave: children must not inherit them. */
        signal(SIGPIPE, SIG_IGN);
        signal(SIGUSR1, SIG_IGN);

        int log_pipe[2];
        if (pipe2(log_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                tap_bail("pipe2");
        struct ao_log_options lo = {
            .format = AO_LOG_FORMAT_JSON, .level = AO_LOG_INFO, .no_time = true, .fd = log_pipe[1]};
        ao_log_setup(&lo);

        const char *backend = getenv("AO_REACTOR");
        struct ao_error err = {0};
        if (ao_reactor_new(ao_reactor_backend_from_string(backend ? backend : "epoll"), &reactor, &err) < 0)
                tap_skip_all(err.msg);

        if (ao_sandbox_profiles_load(NULL, &profiles, &err) < 0)
                tap_bail(err.msg);
        /* Open before any spawner starts, and not close-on-exec: what exec alone would pass on. */
        int leak[2];
        struct stat leak_st;
        if (pipe(leak) < 0 || fstat(leak[0], &leak_st) < 0)
                tap_bail("pipe");
        leaked_pipe = leak_st.st_ino;
        for (int use_spawner = 1; use_spawner >= 0; use_spawner--) {
                setup(use_spawner);
                test_exit_and_output();
                test_pipes_reused();
                test_full_big_pipe_at_exit();
                test_stdout_to_file();
                test_exec_failure();
                test_many_launches();
                test_child_environment();
                test_timeout_kills_group();
                test_orphans_reaped();
                test_big_output_keeps_loop_turning();
                test_long_line_capped();
                /* Drain what earlier tests logged (warnings about the cap), then check a clean line. */
                char drain[65536];
                while (read(log_pipe[0], drain, sizeof(drain)) > 0)
                        ;
                test_garbage_logged_safely(log_pipe[0]);
                test_context_logged(log_pipe[0]);
                test_json_log_lines(log_pipe[0]);
                test_max_rss();
                test_sandbox_default(log_pipe[0]);
                test_sandbox_descendants();
                test_orphan_reaped_beside_running_hook();
                test_exit_with_output_held();
                test_escaped_descendant_keeps_pipe();
                test_unknown_caller_beside_running_hook();
                test_sandbox_strict();
                test_spawner_fds();
                test_spawner_restart();
                test_sandbox_kill_action();
                test_kill_while_starting();
                test_kill_and_shutdown();
                ao_proc_free(proc);
        }
        char drain[65536];
        while (read(log_pipe[0], drain, sizeof(drain)) > 0)
                ;
        test_json_joined_lines(log_pipe[0]);
        for (size_t i = 0; i < n_killers; i++)
                ao_sandbox_profile_free(killer_profiles[i]);
        ao_sandbox_profiles_free(profiles);
        ao_reactor_free(reactor);
        ao_log_shutdown(0);
        return tap_done();
}
