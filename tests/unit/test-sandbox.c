/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandbox profile tests: the built-in profiles, parse errors with their
 * exact messages, syscall names, profile selection, the extra profiles
 * directory, and real enforcement. For enforcement a forked child installs
 * the compiled BPF with a user-notification listener and passes the
 * listener to this process (SCM_RIGHTS), which plays the operator's
 * supervisor: it records every notified syscall by name and answers EPERM.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/fdpass.h"
#include "ao/sandbox.h"

extern char **environ;

static struct ao_sandbox_profiles *set;

static const struct ao_sandbox_profile *profile(const char *name)
{
        const struct ao_sandbox_profile *p = ao_sandbox_profiles_find(set, name);
        if (!p)
                tap_bail("a built-in profile is missing");
        return p;
}

static rlim_t rlimit_of(const struct ao_sandbox_profile *p, int resource, bool hard)
{
        for (size_t i = 0; i < p->n_rlimits; i++)
                if (p->rlimits[i].resource == resource)
                        return hard ? p->rlimits[i].limit.rlim_max : p->rlimits[i].limit.rlim_cur;
        return (rlim_t) -2; /* not set */
}

/* ---- built-in profiles ------------------------------------------------------ */

static void test_builtins(void)
{
        struct ao_error err = {0};
        int r = ao_sandbox_profiles_load(NULL, &set, &err);
        if (!tap_ok(r == 0, "built-in profiles load"))
                tap_bail(err.msg);

        const char *filtered[] = {"default", "strict", "helm"};
        for (size_t i = 0; i < 3; i++) {
                const struct ao_sandbox_profile *p = profile(filtered[i]);
                tap_ok(p->has_filter && p->bpf && p->bpf_len > 0 && p->bpf_len <= BPF_MAXINSNS,
                       "%s: has a BPF program (%u instructions)", p->name, p->bpf_len);
                tap_ok(p->on_violation == AO_SANDBOX_DENY_EPERM && p->allow_network && !p->set_uid &&
                           !p->set_gid,
                       "%s: eperm on violation, network, no uid/gid change", p->name);
                tap_ok(rlimit_of(p, RLIMIT_CORE, false) == 0 && rlimit_of(p, RLIMIT_CORE, true) == 0,
                       "%s: no core dumps", p->name);
                tap_is_int(rlimit_of(p, RLIMIT_AS, false), (rlim_t) -2, "%s: no address-space limit",
                           p->name);
        }
        tap_is_int(rlimit_of(profile("default"), RLIMIT_NOFILE, true), 4096, "default: nofile 4096");
        tap_is_int(rlimit_of(profile("strict"), RLIMIT_NOFILE, false), 4096, "strict: nofile 4096");
        tap_is_int(rlimit_of(profile("helm"), RLIMIT_NOFILE, false), 16384, "helm: nofile 16384");

        const struct ao_sandbox_profile *none = profile("none");
        tap_ok(!none->has_filter && !none->bpf && none->bpf_len == 0, "none: no filter");
        tap_is_int(rlimit_of(none, RLIMIT_CORE, true), 0, "none: still no core dumps");

        /* helm.policy repeats default's seccomp section; the same program proves they are in step. */
        const struct ao_sandbox_profile *d = profile("default"), *h = profile("helm");
        tap_ok(d->bpf_len == h->bpf_len && memcmp(d->bpf, h->bpf, d->bpf_len * sizeof(*d->bpf)) == 0,
               "helm: same seccomp program as default");
        tap_ok(ao_sandbox_profiles_find(set, "nope") == NULL, "find: unknown name gives NULL");
}

/* ---- parsing ---------------------------------------------------------------- */

static void parse_fails(const char *text, const char *filename, const char *want, const char *what)
{
        struct ao_error err = {0};
        struct ao_sandbox_profile *p = NULL;
        int r = ao_sandbox_profile_parse("t", text, strlen(text), filename, &p, &err);
        tap_ok(r == -EINVAL && !p, "parse error: %s (returns -EINVAL)", what);
        tap_is_str(err.msg, want, "parse error: %s (message)", what);
        ao_sandbox_profile_free(p);
}

static struct ao_sandbox_profile *parse_ok(const char *text, const char *what)
{
        struct ao_error err = {0};
        struct ao_sandbox_profile *p = NULL;
        int r = ao_sandbox_profile_parse("t", text, strlen(text), NULL, &p, &err);
        if (!tap_ok(r == 0 && p, "parse: %s", what))
                tap_diag("%s", err.msg);
        return p;
}

static void test_parse_errors(void)
{
        parse_fails(
            "seccomp: none\nfoo: 1\n", "t.policy",
            "t.policy: unknown key 'foo' (expected description, seccomp, on-violation, rlimits, user, "
            "network)",
            "unknown top-level key");
        parse_fails(
            "seccomp: {default: allow, denny: [ptrace]}\n", "t.policy",
            "t.policy: seccomp: unknown key 'denny' (expected default, allow, deny, errno, deny-flags)",
            "unknown seccomp key");
        parse_fails("seccomp: none\nrlimits: {nofile: lots}\n", "strict.policy",
                    "strict.policy: rlimits.nofile: expected a number or 'unlimited'", "bad rlimit");
        parse_fails("seccomp: none\nrlimits: {nofile: -1}\n", "t.policy",
                    "t.policy: rlimits.nofile: expected a number or 'unlimited'", "negative rlimit");
        parse_fails("seccomp: none\nrlimits: {nofile: 1.5}\n", "t.policy",
                    "t.policy: rlimits.nofile: expected a number or 'unlimited'", "fractional rlimit");
        parse_fails("seccomp: none\nrlimits: {nofile: {soft: 10, hard: 5}}\n", "t.policy",
                    "t.policy: rlimits.nofile: the soft limit is above the hard limit", "soft above hard");
        parse_fails("seccomp: none\nrlimits: {nofile: {soft: 10}}\n", "t.policy",
                    "t.policy: rlimits.nofile: missing key 'hard' (give both soft and hard, or one value)",
                    "soft without hard");
        parse_fails("seccomp: none\nrlimits: {files: 10}\n", "t.policy",
                    "t.policy: rlimits: unknown limit 'files' (as, core, cpu, data, fsize, locks, memlock, "
                    "msgqueue, nice, nofile, nproc, rss, rtprio, rttime, sigpending, stack)",
                    "unknown rlimit");
        parse_fails("seccomp: {default: allow, deny: [ptrace, ptrac]}\n", "t.policy",
                    "t.policy: seccomp.deny[1]: unknown syscall 'ptrac'", "unknown syscall");
        parse_fails("seccomp: {default: allow, deny: [\"PTRACE\\n\"]}\n", "t.policy",
                    "t.policy: seccomp.deny[0]: invalid syscall name 'PTRACE\\x0a'",
                    "invalid syscall name, escaped");
        parse_fails("seccomp: {default: deny, allow: [read, write, read]}\n", "t.policy",
                    "t.policy: seccomp.allow[2]: syscall 'read' already has a rule", "syscall listed twice");
        parse_fails("seccomp: {default: allow, deny: [clone3], errno: {clone3: ENOSYS}}\n", "t.policy",
                    "t.policy: seccomp.errno.clone3: syscall 'clone3' already has a rule",
                    "denied and errno");
        parse_fails("seccomp: none\non-violation: maybe\n", "t.policy",
                    "t.policy: on-violation: expected 'eperm' or 'kill'", "bad on-violation");
        parse_fails("seccomp: {default: allow, allow: [read]}\n", "t.policy",
                    "t.policy: seccomp.allow: only valid with 'default: deny'", "allow-list in a deny-list");
        parse_fails("seccomp: {default: deny, deny: [ptrace]}\n", "t.policy",
                    "t.policy: seccomp.deny: only valid with 'default: allow'", "deny-list in an allow-list");
        parse_fails("seccomp: {default: maybe}\n", "t.policy",
                    "t.policy: seccomp.default: expected 'allow' or 'deny'", "bad default");
        parse_fails("seccomp: {deny: [ptrace]}\n", "t.policy",
                    "t.policy: seccomp: missing key 'default' (allow or deny)", "missing default");
        parse_fails("rlimits: {core: 0}\n", "t.policy",
                    "t.policy: missing key 'seccomp' (a mapping, or 'none' for no filter)",
                    "missing seccomp");
        parse_fails("seccomp: off\n", "t.policy", "t.policy: seccomp: expected a mapping or 'none'",
                    "seccomp: off");
        parse_fails("- a\n- b\n", "t.policy", "t.policy: expected a mapping with at least the key 'seccomp'",
                    "not a mapping");
        parse_fails("seccomp: {default: deny, allow: [read], errno: {clone3: EWHATEVER}}\n", "t.policy",
                    "t.policy: seccomp.errno.clone3: expected an errno name (EPERM, ENOSYS, ...) or a number "
                    "from 1 to 4095",
                    "bad errno");
        parse_fails(
            "seccomp:\n  default: deny\n  allow: [read]\n  deny-flags:\n"
            "    - {syscall: clone, arg: 0, any-of: [CLONE_NEWUSER]}\n",
            "t.policy",
            "t.policy: seccomp.deny-flags[0]: 'clone' is not in seccomp.allow, so it is denied already",
            "deny-flags on a syscall the allow-list lacks");
        parse_fails("seccomp:\n  default: allow\n  deny-flags:\n"
                    "    - {syscall: unshare, arg: 0, any-of: [CLONE_NEWUSER, CLONE_NEWFOO]}\n",
                    "t.policy", "t.policy: seccomp.deny-flags[0].any-of[1]: unknown flag 'CLONE_NEWFOO'",
                    "unknown flag");
        parse_fails("seccomp:\n  default: allow\n  deny-flags:\n"
                    "    - {syscall: unshare, arg: 6, any-of: [CLONE_NEWUSER]}\n",
                    "t.policy", "t.policy: seccomp.deny-flags[0].arg: expected an argument index from 0 to 5",
                    "argument index out of range");
        parse_fails("seccomp:\n  default: allow\n  deny: [unshare]\n  deny-flags:\n"
                    "    - {syscall: unshare, arg: 0, any-of: [CLONE_NEWUSER], flags: 1}\n",
                    "t.policy",
                    "t.policy: seccomp.deny-flags[0]: unknown key 'flags' (expected syscall, arg, any-of)",
                    "unknown key in a deny-flags rule");
        parse_fails("seccomp:\n  default: allow\n  deny: [unshare]\n  deny-flags:\n"
                    "    - {syscall: unshare, arg: 0, any-of: [CLONE_NEWUSER]}\n",
                    "t.policy", "t.policy: seccomp.deny-flags[0]: 'unshare' is denied in full already",
                    "deny-flags on a denied syscall");
        parse_fails("seccomp: none\nnetwork: false\n", "t.policy",
                    "t.policy: network: 'false' needs a seccomp filter to enforce it",
                    "network off without a filter");
        parse_fails("seccomp: {default: deny, allow: [io_uring_setup]}\nnetwork: false\n", "t.policy",
                    "t.policy: network: 'false' cannot be enforced while seccomp allows io_uring_setup",
                    "network off with io_uring allowed");
        parse_fails(
            "seccomp: {default: allow, deny: [sendmsg]}\n", "t.policy",
            "t.policy: seccomp: 'sendmsg' must stay allowed: the launcher calls it after installing the "
            "filter",
            "denying a call the launcher needs");
        parse_fails(
            "seccomp: {default: deny, errno: {exit_group: EPERM}}\n", "t.policy",
            "t.policy: seccomp: 'exit_group' must stay allowed: the launcher calls it after installing the "
            "filter",
            "refusing a call the launcher needs");
        parse_fails("seccomp: none\nnetwork: 1\n", "t.policy", "t.policy: network: expected true or false",
                    "network not a boolean");
        parse_fails("seccomp: none\nuser: {uid: -1}\n", "t.policy",
                    "t.policy: user.uid: expected a numeric id from 0 to 4294967294", "bad uid");
        parse_fails("seccomp: none\nuser: {name: nobody}\n", "t.policy",
                    "t.policy: user: unknown key 'name' (expected uid, gid)", "unknown user key");
        parse_fails(
            "seccomp: none\n\"a\\nb\": 1\n", "t.policy",
            "t.policy: unknown key 'a\\x0ab' (expected description, seccomp, on-violation, rlimits, user, "
            "network)",
            "control bytes in a key are escaped");

        struct ao_error err = {0};
        struct ao_sandbox_profile *p = NULL;
        const char *bad_yaml = "seccomp: [\n";
        int r = ao_sandbox_profile_parse("t", bad_yaml, strlen(bad_yaml), "t.policy", &p, &err);
        tap_ok(r < 0 && !p && strncmp(err.msg, "t.policy:", 9) == 0, "YAML syntax error names the file: %s",
               err.msg);
        r = ao_sandbox_profile_parse("Bad", "seccomp: none", 13, NULL, &p, &err);
        tap_is_str(err.msg, "invalid sandbox profile name 'Bad': expected 1-128 characters of [a-z0-9-_.]",
                   "invalid profile name");
        r = ao_sandbox_profile_parse("t", "seccomp: none\nrlimits: {nofile: x}\n", 34, NULL, &p, &err);
        tap_is_str(err.msg, "t.policy: rlimits.nofile: expected a number or 'unlimited'",
                   "no filename: messages say <name>.policy");
}

static void test_parse_forms(void)
{
        struct ao_sandbox_profile *p;

        p = parse_ok("seccomp: none\nrlimits:\n  nofile: {soft: 1024, hard: unlimited}\n  as: 512Mi\n"
                     "  fsize: '1Gi'\n  cpu: 30\n",
                     "rlimit forms");
        if (p) {
                tap_ok(rlimit_of(p, RLIMIT_NOFILE, false) == 1024 &&
                           rlimit_of(p, RLIMIT_NOFILE, true) == RLIM_INFINITY,
                       "rlimits: soft/hard mapping, 'unlimited'");
                tap_is_int(rlimit_of(p, RLIMIT_AS, true), 512ULL << 20, "rlimits: 512Mi");
                tap_is_int(rlimit_of(p, RLIMIT_FSIZE, false), 1ULL << 30, "rlimits: quoted '1Gi'");
                tap_is_int(rlimit_of(p, RLIMIT_CPU, false), 30, "rlimits: plain number");
                p = ao_sandbox_profile_free(p);
        }
        p = parse_ok("seccomp: {default: allow, deny: [ptrace, not_a_syscall_at_all?, socketcall]}\n"
                     "user: {uid: 65534, gid: 65534}\non-violation: kill\n",
                     "optional unknown name skipped, other-arch name accepted, user, kill");
        if (p) {
                tap_ok(p->set_uid && p->uid == 65534 && p->set_gid && p->gid == 65534, "user: uid and gid");
                tap_ok(p->on_violation == AO_SANDBOX_DENY_KILL, "on-violation: kill");
                p = ao_sandbox_profile_free(p);
        }
        p = parse_ok("seccomp: {default: allow}\nnetwork: false\n", "network: false in a deny-list");
        if (p) {
                tap_ok(!p->allow_network && p->has_filter, "network: false recorded");
                p = ao_sandbox_profile_free(p);
        }
        p = parse_ok("seccomp:\n  default: deny\n  allow: [read, clone, socket]\n  deny-flags:\n"
                     "    - {syscall: clone, arg: 0, any-of: [CLONE_NEWUSER]}\n"
                     "    - {syscall: clone, arg: 0, any-of: [0x20000000]}\nnetwork: false\n",
                     "allow-list with merged deny-flags and network: false");
        p = ao_sandbox_profile_free(p);
        p = parse_ok("# only a comment and the key\nseccomp: none\ndescription: x\nuser: null\n",
                     "minimal profile");
        p = ao_sandbox_profile_free(p);
}

/* ---- syscall names ------------------------------------------------------------ */

static void *resolve_many(void *arg)
{
        for (int round = 0; round < 20; round++)
                for (int nr = 0; nr < 500; nr++)
                        (void) ao_sandbox_syscall_name(nr);
        return arg;
}

static void test_syscall_names(void)
{
        tap_is_str(ao_sandbox_syscall_name(SYS_ptrace), "ptrace", "name: ptrace");
        tap_is_str(ao_sandbox_syscall_name(SYS_read), "read", "name: read (0)");
        tap_is_str(ao_sandbox_syscall_name(SYS_clone3), "clone3", "name: clone3");
        tap_ok(ao_sandbox_syscall_name(SYS_ptrace) == ao_sandbox_syscall_name(SYS_ptrace),
               "name: cached, same pointer each time");
        tap_ok(ao_sandbox_syscall_name(-1) == NULL, "name: -1 gives NULL");
        tap_ok(ao_sandbox_syscall_name(1 << 20) == NULL, "name: huge number gives NULL");
        tap_ok(ao_sandbox_syscall_name(1000) == NULL, "name: unknown number gives NULL");
        tap_is_str(ao_sandbox_syscall_name(462), "mseal", "name: newer than libseccomp's tables (mseal)");

        pthread_t t[4];
        for (int i = 0; i < 4; i++)
                pthread_create(&t[i], NULL, resolve_many, NULL);
        for (int i = 0; i < 4; i++)
                pthread_join(t[i], NULL);
        tap_is_str(ao_sandbox_syscall_name(SYS_mount), "mount", "name: from four threads at once");
}

/* ---- selection ------------------------------------------------------------------ */

static void write_file(const char *dir, const char *name, const char *text)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                tap_bail("cannot write a test file");
}

static void remove_tree(const char *dir)
{
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        (void) !system(cmd);
}

static void select_is(const char *module, const char *hook, const char *want, const char *what)
{
        struct ao_error err = {0};
        char *name = NULL;
        int r = ao_sandbox_select(module, hook, "default", &name, &err);
        if (!tap_ok(r == 0, "select: %s", what))
                tap_diag("%s", err.msg);
        tap_is_str(name, want, "select: %s (name)", what);
        free(name);
}

static void test_select(void)
{
        char dir[] = "/tmp/ao-test-sandbox-XXXXXX", hooks[600], hook[700], other[700], want[900];
        struct ao_error err = {0};
        char *name = NULL;

        if (!mkdtemp(dir))
                tap_bail("mkdtemp failed");
        snprintf(hooks, sizeof(hooks), "%s/hooks", dir);
        mkdir(hooks, 0755);
        snprintf(hook, sizeof(hook), "%s/a.sh", hooks);
        snprintf(other, sizeof(other), "%s/b.sh", hooks);

        select_is(dir, hook, "default", "no files: fallback");
        select_is(NULL, hook, "default", "global hook, no file: fallback");
        write_file(dir, "sandbox.yaml", "profile: strict\n");
        select_is(dir, hook, "strict", "module file");
        write_file(hooks, "a.sh.sandbox.yaml", "# this hook needs more\nprofile: my-profile.v2\n");
        select_is(dir, hook, "my-profile.v2", "hook file wins over module file");
        select_is(dir, other, "strict", "another hook of the module gets the module file");
        select_is(NULL, hook, "my-profile.v2", "global hook with its own file");

        write_file(hooks, "b.sh.sandbox.yaml", "profile: Strict!\n");
        int r = ao_sandbox_select(dir, other, "default", &name, &err);
        snprintf(want, sizeof(want), "%s.sandbox.yaml: profile: expected a profile name of [a-z0-9-_.]",
                 other);
        tap_ok(r == -EINVAL && !name, "select: invalid name is an error");
        tap_is_str(err.msg, want, "select: the error names the hook's file");

        write_file(hooks, "b.sh.sandbox.yaml", "profile: strict\nextra: 1\n");
        r = ao_sandbox_select(dir, other, "default", &name, &err);
        snprintf(want, sizeof(want), "%s.sandbox.yaml: unknown key 'extra' (expected profile)", other);
        tap_is_str(err.msg, want, "select: unknown key names the file");

        write_file(hooks, "b.sh.sandbox.yaml", "");
        r = ao_sandbox_select(dir, other, "default", &name, &err);
        snprintf(want, sizeof(want), "%s.sandbox.yaml: expected a mapping with the key 'profile'", other);
        tap_is_str(err.msg, want, "select: an empty file is an error, not a silent fallback");

        write_file(dir, "sandbox.yaml", "profile: ''\n");
        r = ao_sandbox_select(dir, hook, "default", &name, &err);
        tap_ok(r == 0, "select: hook file wins before the invalid module file is read");
        free(name);
        name = NULL;
        r = ao_sandbox_select(dir, NULL, "default", &name, &err);
        snprintf(want, sizeof(want), "%s/sandbox.yaml: profile: expected a profile name of [a-z0-9-_.]", dir);
        tap_ok(r == -EINVAL, "select: empty profile name is an error");
        tap_is_str(err.msg, want, "select: the error names the module's file");
        remove_tree(dir);
}

/* ---- the extra profiles directory ------------------------------------------------ */

static void test_extra_dir(void)
{
        char dir[] = "/tmp/ao-test-profiles-XXXXXX", want[600];
        struct ao_sandbox_profiles *extra = NULL;
        struct ao_error err = {0};

        if (!mkdtemp(dir))
                tap_bail("mkdtemp failed");
        write_file(dir, "default.policy", "seccomp: none\nrlimits: {nofile: 100}\n");
        write_file(dir, "custom-1.policy", "seccomp: {default: allow, deny: [ptrace]}\n");
        write_file(dir, "README.md", "not a profile\n");
        write_file(dir, ".hidden.policy", "not: [valid\n");
        int r = ao_sandbox_profiles_load(dir, &extra, &err);
        if (!tap_ok(r == 0, "extra dir: loads"))
                tap_diag("%s", err.msg);
        if (r == 0) {
                const struct ao_sandbox_profile *d = ao_sandbox_profiles_find(extra, "default");
                tap_ok(d && !d->has_filter && rlimit_of(d, RLIMIT_NOFILE, false) == 100,
                       "extra dir: default.policy replaces the built-in default");
                tap_ok(ao_sandbox_profiles_find(extra, "custom-1") != NULL, "extra dir: adds custom-1");
                tap_ok(ao_sandbox_profiles_find(extra, "strict") != NULL, "extra dir: built-ins stay");
                tap_ok(ao_sandbox_profiles_find(extra, "README") == NULL, "extra dir: other files ignored");
                extra = ao_sandbox_profiles_free(extra);
        }

        write_file(dir, "broken.policy", "seccomp: none\nrlimits: {nofile: many}\n");
        r = ao_sandbox_profiles_load(dir, &extra, &err);
        snprintf(want, sizeof(want), "%s/broken.policy: rlimits.nofile: expected a number or 'unlimited'",
                 dir);
        tap_ok(r == -EINVAL && !extra, "extra dir: a bad file fails the load");
        tap_is_str(err.msg, want, "extra dir: the error names the file and key");
        remove_tree(dir);

        r = ao_sandbox_profiles_load("/nonexistent/ao-profiles", &extra, &err);
        tap_is_str(err.msg,
                   "sandbox profiles directory '/nonexistent/ao-profiles': No such file or directory",
                   "extra dir: a missing directory is an error");
}

/* ---- enforcement: the supervisor side ----------------------------------------- */

#define RUN_TIMEOUT_SEC 60

struct run {
        char out[16384]; /* stdout and stderr of the child */
        size_t out_len;
        char seen[2048]; /* notified syscalls, space-separated, in order */
        int n_notified;
        int status;
        bool timed_out;
};

static int send_fd(int sock, int fd)
{
        char byte = 'L';
        return ao_fdpass_send(sock, &byte, 1, &fd, 1, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
        /* A child stuck before the hand-over (a filter refusing sendmsg) must fail the test, not hang it. */
        struct pollfd pfd = {.fd = sock, .events = POLLIN};
        if (poll(&pfd, 1, RUN_TIMEOUT_SEC * 1000) != 1)
                return -1;
        char byte;
        int fds[AO_FDPASS_MAX_FDS];
        size_t n_fds;
        if (ao_fdpass_recv(sock, &byte, 1, fds, AO_FDPASS_MAX_FDS, &n_fds, 0) != 1 || n_fds != 1)
                return -1;
        return fds[0];
}

/*
 * In the child: stdout and stderr to @out, the profile's rlimits, no_new_privs, the filter with a
 * listener, and the listener to the parent.
 */
static void child_install(const struct ao_sandbox_profile *p, int sock, int out)
{
        if (dup2(out, 1) < 0 || dup2(out, 2) < 0)
                _exit(120);
        /* As the launcher does: the profile's limits (core 0 keeps killed probes from dumping core). */
        for (size_t i = 0; i < p->n_rlimits; i++)
                if (setrlimit(p->rlimits[i].resource, &p->rlimits[i].limit) < 0)
                        _exit(124);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(121);
        struct sock_fprog prog = {.len = p->bpf_len, .filter = p->bpf};
        long listener =
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (listener < 0)
                _exit(122);
        /* sendmsg and close run under the filter already, as in launch.c: the parser keeps them allowed. */
        if (send_fd(sock, (int) listener) < 0)
                _exit(123);
        close((int) listener);
        close(sock);
}

static void note_syscall(struct run *run, int nr)
{
        const char *name = ao_sandbox_syscall_name(nr);
        char num[32];
        if (!name) {
                snprintf(num, sizeof(num), "#%d", nr);
                name = num;
        }
        size_t len = strlen(run->seen);
        snprintf(run->seen + len, sizeof(run->seen) - len, "%s%s", len ? " " : "", name);
        run->n_notified++;
}

/* Receive one notification and refuse the call with EPERM, as the operator does for on-violation: eperm. */
static void answer_one(struct run *run, int listener)
{
        struct seccomp_notif req;
        memset(&req, 0, sizeof(req)); /* the kernel insists on a zeroed request */
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
                return; /* ENOENT: the caller died meanwhile */
        note_syscall(run, req.data.nr);
        struct seccomp_notif_resp resp = {.id = req.id, .error = -EPERM, .val = 0, .flags = 0};
        (void) ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

static void read_output(struct run *run, int *out)
{
        char buf[4096];
        ssize_t n = read(*out, buf, sizeof(buf));
        if (n > 0) {
                size_t room = sizeof(run->out) - 1 - run->out_len;
                size_t take = AO_MIN((size_t) n, room);
                memcpy(run->out + run->out_len, buf, take);
                run->out_len += take;
                run->out[run->out_len] = '\0';
        } else if (n == 0 || errno != EINTR) {
                close(*out);
                *out = -1;
        }
}

static double now_sec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Answer notifications and collect output until the child has exited and every writer closed the pipe. */
static void supervise(struct run *run, pid_t pid, int listener, int out)
{
        double deadline = now_sec() + RUN_TIMEOUT_SEC;
        bool exited = false;

        while (!exited || out >= 0) {
                struct pollfd fds[2] = {{.fd = listener, .events = POLLIN}, {.fd = out, .events = POLLIN}};
                int n = poll(fds, 2, 50);
                if (n > 0 && (fds[0].revents & POLLIN))
                        answer_one(run, listener);
                if (n > 0 && fds[1].revents)
                        read_output(run, &out);
                if (!exited && waitpid(pid, &run->status, WNOHANG) == pid)
                        exited = true;
                if (now_sec() > deadline) {
                        run->timed_out = true;
                        kill(pid, SIGKILL);
                        if (!exited)
                                waitpid(pid, &run->status, 0);
                        break;
                }
        }
        if (out >= 0)
                close(out);
}

/* Run @fn, or exec @argv, in a child under @p; this process answers the notifications. */
static void run_under(const struct ao_sandbox_profile *p, void (*fn)(void), char *const *argv,
                      struct run *run)
{
        int sp[2], pipefd[2];

        memset(run, 0, sizeof(*run));
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(pipefd, O_CLOEXEC) < 0)
                tap_bail("socketpair/pipe2 failed");
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
                tap_bail("fork failed");
        if (pid == 0) {
                close(sp[0]);
                close(pipefd[0]);
                child_install(p, sp[1], pipefd[1]);
                if (fn) {
                        fn();
                        fflush(stdout);
                        _exit(0);
                }
                execve(argv[0], argv, environ);
                _exit(127);
        }
        close(sp[1]);
        close(pipefd[1]);
        int listener = recv_fd(sp[0]);
        close(sp[0]);
        if (listener < 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &run->status, 0);
                snprintf(run->out, sizeof(run->out),
                         "child failed before handing over the listener (status %d)", run->status);
                close(pipefd[0]);
                return;
        }
        supervise(run, pid, listener, pipefd[0]);
        close(listener);
}

static bool exited_zero(const struct run *run)
{
        return !run->timed_out && WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0;
}

/* ---- enforcement: what the child tries ------------------------------------------- */

/* One item per probe: "name=ok" or "name=ERRNO". Raw syscalls, so libc cannot substitute another call. */
static void probe(const char *what, long r)
{
        printf("%s=%s ", what, r < 0 ? strerrorname_np(errno) : "ok");
        fflush(stdout);
}

static void *thread_main(void *arg)
{
        return arg;
}

static void probe_fork_and_thread(void)
{
        pid_t pid = fork();
        if (pid == 0)
                _exit(0);
        int st = 0;
        probe("fork", pid < 0 ? -1 : (waitpid(pid, &st, 0) == pid && st == 0 ? 0 : -1));
        /* glibc tries clone3 first and falls back to clone on ENOSYS: the path the profiles rely on. */
        pthread_t t;
        int r = pthread_create(&t, NULL, thread_main, NULL);
        if (r == 0)
                pthread_join(t, NULL);
        else
                errno = r;
        probe("thread", r == 0 ? 0 : -1);
}

static void probe_namespaces(void)
{
        probe("unshare-user", syscall(SYS_unshare, CLONE_NEWUSER));
        probe("unshare-0", syscall(SYS_unshare, 0));
        long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (pid == 0)
                _exit(0); /* the filter let it through: the check below reports it */
        if (pid > 0)
                waitpid((pid_t) pid, NULL, 0);
        probe("clone-user", pid);
        probe("clone3", syscall(SYS_clone3, NULL, 0));
}

static void default_probes(void)
{
        probe("ptrace", syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0));
        /* A target that does not exist: without the filter the call fails (ENOENT) instead of mounting. */
        probe("mount", syscall(SYS_mount, "none", "/nonexistent-ao-sandbox-test", "tmpfs", 0, NULL));
        probe_namespaces();
        probe("bpf", syscall(SYS_bpf, 0, NULL, 0));
        probe("io_uring", syscall(SYS_io_uring_setup, 1, NULL));
        probe("getpid", syscall(SYS_getpid));
        probe_fork_and_thread();
        printf("\n");
}

static void no_network_probes(void)
{
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        probe("unix", fd);
        close(fd);
        probe("inet", socket(AF_INET, SOCK_STREAM, 0));
        probe("inet6", socket(AF_INET6, SOCK_DGRAM, 0));
        probe("io_uring", syscall(SYS_io_uring_setup, 1, NULL));
        printf("\n");
}

static void test_enforce_default(void)
{
        static struct run run;

        run_under(profile("default"), default_probes, NULL, &run);
        tap_ok(exited_zero(&run), "default: the probing child exits 0");
        tap_is_str(run.out,
                   "ptrace=EPERM mount=EPERM unshare-user=EPERM unshare-0=ok clone-user=EPERM clone3=ENOSYS "
                   "bpf=EPERM io_uring=ENOSYS getpid=ok fork=ok thread=ok \n",
                   "default: denied calls fail with EPERM, clone3 and io_uring with ENOSYS, the rest works");
        tap_is_str(run.seen, "ptrace mount unshare clone bpf",
                   "default: the supervisor saw each denied call by name, and nothing else");

        run_under(profile("helm"), default_probes, NULL, &run);
        tap_is_str(run.seen, "ptrace mount unshare clone bpf", "helm: the same calls reported");

        struct ao_error err = {0};
        struct ao_sandbox_profile *p = NULL;
        const char *text = "seccomp: {default: allow}\nnetwork: false\n";
        if (ao_sandbox_profile_parse("offline", text, strlen(text), NULL, &p, &err) < 0)
                tap_bail(err.msg);
        run_under(p, no_network_probes, NULL, &run);
        tap_is_str(run.out, "unix=ok inet=EPERM inet6=EPERM io_uring=ENOSYS \n",
                   "network: false allows AF_UNIX only and refuses io_uring");
        tap_is_str(run.seen, "socket socket", "network: false reports the refused sockets");
        ao_sandbox_profile_free(p);
}

#if defined(__x86_64__)
/* getpid through the i386 entry point: checked against i386 numbers, so the filter must kill. */
static void i386_probe(void)
{
        long r = 20; /* __NR_getpid on i386 */
        __asm__ volatile("int $0x80" : "+a"(r) : : "memory");
}

/* getpid with the x32 bit: the x86_64 audit arch, but another syscall table. */
static void x32_probe(void)
{
        (void) syscall(0x40000000 | SYS_getpid);
}

static void test_enforce_foreign_arch(void)
{
        static struct run run;

        run_under(profile("default"), x32_probe, NULL, &run);
        tap_ok(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGSYS,
               "x32 syscall: the whole process is killed (SIGSYS)");
        run_under(profile("default"), i386_probe, NULL, &run);
        if (WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGSEGV)
                tap_ok(true,
                       "i386 syscall: killed # SKIP this kernel has no i386 emulation (int 0x80 faults)");
        else
                tap_ok(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGSYS,
                       "i386 syscall (int 0x80): the whole process is killed (SIGSYS)");
        tap_ok(run.n_notified == 0, "foreign architectures are killed, not reported");
}
#endif

static void strict_probes(void)
{
        probe_namespaces();
        probe("mount", syscall(SYS_mount, "none", "/nonexistent-ao-sandbox-test", "tmpfs", 0, NULL));
        probe("getpid", syscall(SYS_getpid));
        printf("\n");
}

static void minimal_probes(void)
{
        (void) syscall(SYS_write, 1, "x", 1);
        (void) syscall(SYS_getppid);
        /* Not _exit(): the sanitizers' exit path makes calls of its own that this filter refuses. */
        (void) syscall(SYS_exit_group, 0);
}

/* An allow-list without sendmsg, close or exit_group still runs: the parser adds what the launcher needs. */
static void test_enforce_minimal(void)
{
        static struct run run;
        struct ao_error err = {0};
        struct ao_sandbox_profile *p = NULL;
        const char *text = "seccomp: {default: deny, allow: [write]}\n";

        if (ao_sandbox_profile_parse("minimal", text, strlen(text), NULL, &p, &err) < 0)
                tap_bail(err.msg);
        run_under(p, minimal_probes, NULL, &run);
        tap_ok(exited_zero(&run), "minimal allow-list: the child hands over the listener and exits 0");
        tap_is_str(run.out, "x", "minimal allow-list: write allowed");
        tap_is_str(run.seen, "getppid", "minimal allow-list: getppid reported");
        ao_sandbox_profile_free(p);
}

static void test_enforce_strict_probes(void)
{
        static struct run run;

        run_under(profile("strict"), strict_probes, NULL, &run);
        tap_ok(exited_zero(&run), "strict: the probing child exits 0");
        tap_is_str(
            run.out,
            "unshare-user=EPERM unshare-0=EPERM clone-user=EPERM clone3=ENOSYS mount=EPERM getpid=ok \n",
            "strict: unshare, namespaced clone and mount refused, clone3 ENOSYS");
        tap_is_str(run.seen, "unshare unshare clone mount", "strict: each refusal reported by name");
}

/* ---- enforcement: real programs under strict -------------------------------------- */

static const char *find_program(const char *name, char *buf, size_t size)
{
        const char *dirs[] = {"/usr/bin", "/bin", "/usr/local/bin"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(dirs); i++) {
                snprintf(buf, size, "%s/%s", dirs[i], name);
                if (access(buf, X_OK) == 0)
                        return buf;
        }
        return NULL;
}

struct program_case {
        const char *what;
        const char *program;
        const char *args[6];
        const char *want_out; /* exact, or NULL: only check want_sub */
        const char *want_sub;
        int want_exit;
};

static void run_program_case(const struct ao_sandbox_profile *p, const struct program_case *c)
{
        static struct run run;
        char path[256];
        char *argv[8] = {0};

        if (!find_program(c->program, path, sizeof(path))) {
                tap_ok(true, "%s: %s # SKIP %s is not installed", p->name, c->what, c->program);
                return;
        }
        argv[0] = path;
        for (size_t i = 0; i < AO_ARRAY_SIZE(c->args) && c->args[i]; i++)
                argv[i + 1] = (char *) c->args[i];
        run_under(p, NULL, argv, &run);

        bool exit_ok = !run.timed_out && WIFEXITED(run.status) && WEXITSTATUS(run.status) == c->want_exit;
        if (!tap_ok(exit_ok, "%s: %s exits %d", p->name, c->what, c->want_exit))
                tap_diag("status 0x%x%s, output: %s", run.status, run.timed_out ? " (timed out)" : "",
                         run.out);
        if (c->want_out)
                tap_is_str(run.out, c->want_out, "%s: %s output", p->name, c->what);
        else if (!tap_ok(strstr(run.out, c->want_sub) != NULL, "%s: %s output mentions '%s'", p->name,
                         c->what, c->want_sub))
                tap_diag("output: %s", run.out);
        if (!tap_ok(run.n_notified == 0, "%s: %s needs no syscall outside the profile", p->name, c->what))
                tap_diag("notified: %s", run.seen);
}

static const struct program_case program_cases[] = {
    {"sh pipeline", "sh", {"-c", "echo hi | cat"}, "hi\n", NULL, 0},
    {"dash pipeline", "dash", {"-c", "echo hi | cat"}, "hi\n", NULL, 0},
    {"bash arithmetic", "bash", {"-c", "x=$((1+2)); echo $x"}, "3\n", NULL, 0},
    {"bash subshells, here-string, read",
     "bash",
     {"-c", "set -euo pipefail; y=$(echo a; echo b | tr b c); read -r z <<<\"$y\"; echo \"$z\" $(( $(wc -l "
            "<<<\"$y\") ))"},
     "a 2\n",
     NULL,
     0},
    {"coreutils on temporary files",
     "sh",
     {"-c",
      "d=$(mktemp -d) && echo x >\"$d/f\" && cp \"$d/f\" \"$d/g\" && mv \"$d/g\" \"$d/h\" && ls \"$d\" && "
      "chmod 600 \"$d/h\" && stat -c %a \"$d/h\" && ln -s h \"$d/l\" && readlink \"$d/l\" && "
      "touch -d @0 \"$d/f\" && date -u -r \"$d/f\" +%Y && sort -r /etc/hostname >/dev/null && "
      "sleep 0.01 && rm -r \"$d\" && echo done"},
     "f\nh\n600\nh\n1970\ndone\n",
     NULL,
     0},
    {"python3 json",
     "python3",
     {"-c", "import json,sys; print(json.dumps({\"a\":1}))"},
     "{\"a\": 1}\n",
     NULL,
     0},
    {"python3 thread and subprocess",
     "python3",
     {"-c",
      "import threading,subprocess; t=threading.Thread(target=print, args=('t',)); t.start(); t.join(); "
      "print(subprocess.run(['/bin/echo','sub'], capture_output=True, check=True).stdout.decode().strip())"},
     "t\nsub\n",
     NULL,
     0},
    {"jq", "jq", {"-n", "{\"a\":1}|.a"}, "1\n", NULL, 0},
    {"kubectl version --client", "kubectl", {"version", "--client"}, NULL, "Client Version", 0},
    {"kubectl against a closed port",
     "kubectl",
     {"get", "--raw", "/version", "--server=http://127.0.0.1:1", "--request-timeout=10s"},
     NULL,
     "refused",
     1},
};

static void test_enforce_strict_programs(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(program_cases); i++)
                run_program_case(profile("strict"), &program_cases[i]);
        /* The deny-list runs the same programs without a single report. */
        run_program_case(profile("default"), &program_cases[0]);
        run_program_case(profile("default"), &program_cases[6]);
}

int main(void)
{
        test_builtins();
        test_parse_errors();
        test_parse_forms();
        test_syscall_names();
        test_select();
        test_extra_dir();

        /* Enforcement needs seccomp (user notification: Linux 5.0). */
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL)
                tap_ok(true, "enforcement # SKIP this kernel has no seccomp");
        else {
                test_enforce_default();
                test_enforce_strict_probes();
                test_enforce_minimal();
#if defined(__x86_64__)
                test_enforce_foreign_arch();
#endif
                test_enforce_strict_programs();
        }
        ao_sandbox_profiles_free(set);
        return tap_done();
}
