/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/input.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

/*
 * client-go credential plugins (users[].user.exec): running one and reading the ExecCredential it
 * prints, as described in
 * https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins
 *
 * The plugin runs without a terminal: stdin is /dev/null, stdout is the credential and stderr is kept
 * for the error message (client-go passes it through; a non-logging module cannot). It gets a process
 * group of its own, so a timeout kills whatever it started as well.
 */

extern char **environ;

/* A credential is a token or a certificate and key: a megabyte is far more than enough. */
#define EXEC_OUTPUT_MAX (1u << 20)
/* How much of the plugin's stderr is kept for the message: the end, where the reason usually is. */
#define STDERR_TAIL 1024
/* How much of its last stderr line goes into the message. */
#define STDERR_LINE_MAX 200

#define EXEC_API_V1      "client.authentication.k8s.io/v1"
#define EXEC_API_V1BETA1 "client.authentication.k8s.io/v1beta1"

static void cjson_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

/* ---- ExecCredential ------------------------------------------------------------------------------- */

_printf_(3, 4) static int fail(struct ao_error *reterr, const char *field, const char *fmt, ...)
{
        char reason[AO_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        if (!field)
                return ao_error_set(reterr, -EINVAL, "ExecCredential: %s", reason);
        return ao_error_set(reterr, -EINVAL, "ExecCredential: %s: %s", field, reason);
}

/* @key of @obj as a string; NULL when absent, null or empty. @path names it in messages. */
static int get_string(const cJSON *obj, const char *key, const char *path, const char **ret,
                      struct ao_error *reterr)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

        if (!v || cJSON_IsNull(v)) {
                *ret = NULL;
                return 0;
        }
        if (!cJSON_IsString(v))
                return fail(reterr, path, "must be a string");
        *ret = v->valuestring[0] != '\0' ? v->valuestring : NULL;
        return 0;
}

/* Whether @s matches @pattern, where 'd' stands for any decimal digit. */
static bool matches(const char *s, const char *pattern)
{
        for (; *pattern; s++, pattern++)
                if (*pattern == 'd' ? *s < '0' || *s > '9' : *s != *pattern)
                        return false;
        return true;
}

static int number(const char *s, size_t n)
{
        int v = 0;

        for (size_t i = 0; i < n; i++)
                v = v * 10 + (s[i] - '0');
        return v;
}

/* Days from 1970-01-01 to @y-@m-@d in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
        static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

        return m == 2 && leap ? 29 : days[m - 1];
}

/*
 * "2006-01-02T15:04:05[.999999999](Z|-07:00)" as Go's time.Parse(time.RFC3339) reads metav1.Time,
 * as seconds since the epoch. Fractions of a second are dropped: the credential counts as expired
 * a little early, never late.
 */
static int parse_rfc3339(const char *s, int64_t *ret)
{
        int offset = 0;

        if (!matches(s, "dddd-dd-ddTdd:dd:dd"))
                return -EINVAL;
        int year = number(s, 4), month = number(s + 5, 2), day = number(s + 8, 2);
        int hour = number(s + 11, 2), minute = number(s + 14, 2), second = number(s + 17, 2);
        const char *p = s + 19;
        if ((*p == '.' || *p == ',') && p[1] >= '0' && p[1] <= '9')
                for (p++; *p >= '0' && *p <= '9'; p++)
                        ;
        if (*p == 'Z') {
                p++;
        } else if ((*p == '+' || *p == '-') && matches(p + 1, "dd:dd")) {
                int hours = number(p + 1, 2), minutes = number(p + 4, 2);
                if (hours > 23 || minutes > 59)
                        return -EINVAL;
                offset = (*p == '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
                p += 6;
        } else {
                return -EINVAL;
        }
        if (*p != '\0' || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) ||
            hour > 23 || minute > 59 || second > 59)
                return -EINVAL;
        *ret = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
        return 0;
}

/* The ExecCredential in @text; when @want_version is set, its apiVersion must be that one. */
static int parse_credential(const char *text, size_t len, const char *want_version,
                            struct ao_kube_exec_credential *ret, struct ao_error *reterr)
{
        _cleanup_(cjson_deletep) cJSON *root = NULL;
        const char *kind = NULL, *version = NULL, *token = NULL, *cert = NULL, *key = NULL, *expires = NULL;
        int64_t expires_unix = 0;
        int r;

        r = ao_input_check_size(len, EXEC_OUTPUT_MAX, "ExecCredential", NULL, reterr);
        if (r < 0)
                return r;
        r = ao_yaml_load(text, len, "ExecCredential", &root, reterr);
        if (r < 0)
                return r;
        if (!cJSON_IsObject(root))
                return fail(reterr, NULL, "must be a JSON object");
        r = get_string(root, "kind", "kind", &kind, reterr);
        if (r >= 0)
                r = get_string(root, "apiVersion", "apiVersion", &version, reterr);
        if (r < 0)
                return r;
        if (!kind || strcmp(kind, "ExecCredential") != 0)
                return fail(reterr, "kind", "must be ExecCredential");
        if (!version || (strcmp(version, EXEC_API_V1) != 0 && strcmp(version, EXEC_API_V1BETA1) != 0))
                return fail(reterr, "apiVersion", "must be %s or %s", EXEC_API_V1, EXEC_API_V1BETA1);
        if (want_version && strcmp(version, want_version) != 0)
                return fail(reterr, "apiVersion", "'%s' is not the configured '%s'", version, want_version);

        const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
        if (!status || cJSON_IsNull(status))
                return fail(reterr, "status", "missing");
        if (!cJSON_IsObject(status))
                return fail(reterr, "status", "must be an object");
        r = get_string(status, "token", "status.token", &token, reterr);
        if (r >= 0)
                r = get_string(status, "clientCertificateData", "status.clientCertificateData", &cert,
                               reterr);
        if (r >= 0)
                r = get_string(status, "clientKeyData", "status.clientKeyData", &key, reterr);
        if (r >= 0)
                r = get_string(status, "expirationTimestamp", "status.expirationTimestamp", &expires, reterr);
        if (r < 0)
                return r;
        /* The same two checks as client-go's exec authenticator. */
        if (!cert != !key)
                return fail(reterr, "status", "has only one of clientCertificateData and clientKeyData");
        if (!token && !cert)
                return fail(reterr, "status",
                            "has neither a token nor clientCertificateData and clientKeyData");
        if (expires && parse_rfc3339(expires, &expires_unix) < 0)
                return fail(reterr, "status.expirationTimestamp", "not an RFC 3339 time");
        /* 0 means "never": an expiry of exactly the epoch is long past either way. */
        if (expires && expires_unix == 0)
                expires_unix = -1;

        *ret = (struct ao_kube_exec_credential){
            .token = token ? ao_xstrdup(token) : NULL,
            .cert_data = cert ? ao_xstrdup(cert) : NULL,
            .key_data = key ? ao_xstrdup(key) : NULL,
            .expires_unix = expires_unix,
        };
        return 0;
}

int ao_kube_exec_credential_parse(const char *text, size_t len, struct ao_kube_exec_credential *ret,
                                  struct ao_error *reterr)
{
        return parse_credential(text, len, NULL, ret, reterr);
}

void ao_kube_exec_credential_done(struct ao_kube_exec_credential *c)
{
        if (!c)
                return;
        free(c->token);
        free(c->cert_data);
        free(c->key_data);
        *c = (struct ao_kube_exec_credential){0};
}

/* ---- the plugin's process ------------------------------------------------------------------------- */

/* The last bytes of a stream. */
struct tail {
        char buf[STDERR_TAIL];
        size_t len;
};

static void tail_append(struct tail *t, const char *s, size_t n)
{
        if (n >= sizeof(t->buf)) {
                memcpy(t->buf, s + n - sizeof(t->buf), sizeof(t->buf));
                t->len = sizeof(t->buf);
                return;
        }
        size_t keep = AO_MIN(t->len, sizeof(t->buf) - n);
        memmove(t->buf, t->buf + t->len - keep, keep);
        memcpy(t->buf + keep, s, n);
        t->len = keep + n;
}

/* The last non-empty line of @t, control characters replaced, cut at STDERR_LINE_MAX; "" when none. */
static const char *tail_last_line(const struct tail *t, char buf[static STDERR_LINE_MAX + 1])
{
        size_t end = t->len, start, n;

        while (end > 0 && strchr(" \t\r\n", t->buf[end - 1]))
                end--;
        start = end;
        while (start > 0 && t->buf[start - 1] != '\n')
                start--;
        n = AO_MIN(end - start, (size_t) STDERR_LINE_MAX);
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) t->buf[start + i];
                buf[i] = c < 0x20 || c == 0x7F ? '?' : (char) c;
        }
        buf[n] = '\0';
        return buf;
}

static uint64_t now_usec(void)
{
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * AO_USEC_PER_SEC + (uint64_t) ts.tv_nsec / AO_NSEC_PER_USEC;
}

/* Whether the "NAME=value" entries @a and @b set the same variable. */
static bool same_name(const char *a, const char *b)
{
        size_t n = strcspn(a, "=");

        return strncmp(a, b, n) == 0 && b[n] == '=';
}

static bool replaced(const char *entry, char *const *later, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (same_name(later[i], entry))
                        return true;
        return false;
}

/*
 * The plugin's environment: ours, then @exec's entries, then KUBERNETES_EXEC_INFO (@info). A later entry
 * replaces an earlier one of the same name, as in Go's os/exec; execve would pass both, and most programs
 * would see the first. The strings are borrowed.
 */
static char **build_env(const struct ao_kube_exec *exec, char *info)
{
        size_t n_environ = 0, n_extra = 0, n = 0;

        while (environ && environ[n_environ])
                n_environ++;
        while (exec->env && exec->env[n_extra])
                n_extra++;
        _cleanup_free_ char **extra = ao_xcalloc(n_extra + 1, sizeof(char *));
        char **out = ao_xcalloc(n_environ + n_extra + 2, sizeof(char *));
        for (size_t i = 0; i < n_extra; i++)
                extra[i] = exec->env[i];
        extra[n_extra++] = info;
        for (size_t i = 0; i < n_environ; i++)
                if (!replaced(environ[i], extra, n_extra))
                        out[n++] = environ[i];
        for (size_t i = 0; i < n_extra; i++)
                if (!replaced(extra[i], extra + i + 1, n_extra - i - 1))
                        out[n++] = extra[i];
        return out;
}

/* KUBERNETES_EXEC_INFO as client-go sets it for a plugin run without a terminal. */
static char *exec_info(const char *api_version)
{
        struct ao_strbuf sb = {0};

        ao_strbuf_append(&sb, "KUBERNETES_EXEC_INFO={\"apiVersion\":");
        ao_strbuf_append_json_string(&sb, api_version);
        ao_strbuf_append(&sb, ",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}");
        return ao_strbuf_steal(&sb);
}

/* [command, args..., NULL]; the strings are borrowed. */
static char **build_argv(const struct ao_kube_exec *exec)
{
        size_t n = 0;

        while (exec->args && exec->args[n])
                n++;
        char **argv = ao_xcalloc(n + 2, sizeof(char *));
        argv[0] = exec->command;
        for (size_t i = 0; i < n; i++)
                argv[i + 1] = exec->args[i];
        return argv;
}

/*
 * Start the plugin with @out_fd and @err_fd (both above stdio) as stdout and stderr, in a process group
 * of its own, with every signal at its default and none blocked: it must not inherit the operator's
 * blocked mask or ignored SIGPIPE. Returns -errno.
 */
static int spawn(const struct ao_kube_exec *exec, int out_fd, int err_fd, pid_t *ret_pid)
{
        _cleanup_free_ char *info = exec_info(exec->api_version);
        _cleanup_free_ char **argv = build_argv(exec), **envp = build_env(exec, info);
        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attr;
        sigset_t none, all;
        int r;

        (void) sigemptyset(&none);
        (void) sigfillset(&all);
        r = posix_spawn_file_actions_init(&actions);
        if (r != 0)
                return -r;
        r = posix_spawnattr_init(&attr);
        if (r != 0) {
                (void) posix_spawn_file_actions_destroy(&actions);
                return -r;
        }
        r = posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
        /* Everything is opened O_CLOEXEC; this covers what a library might not have. */
        if (r == 0)
                r = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &none);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &all);
        if (r == 0)
                r = posix_spawnattr_setpgroup(&attr, 0);
        if (r == 0)
                r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                        POSIX_SPAWN_SETPGROUP);
        /* As in Go's exec.Command: a name without '/' is looked up in our $PATH. */
        if (r == 0)
                r = posix_spawnp(ret_pid, exec->command, &actions, &attr, argv, envp);
        (void) posix_spawnattr_destroy(&attr);
        (void) posix_spawn_file_actions_destroy(&actions);
        return -r;
}

/* A pipe whose ends are close-on-exec and above stdio, so dup2 onto 1 and 2 never meets its own source. */
static int make_pipe(int *ret_read, int *ret_write)
{
        int fds[2];

        if (pipe2(fds, O_CLOEXEC) < 0)
                return ao_negative_errno();
        for (int i = 0; i < 2; i++) {
                if (fds[i] > STDERR_FILENO)
                        continue;
                int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
                int saved = errno;
                (void) close(fds[i]);
                fds[i] = moved;
                if (moved < 0) {
                        (void) ao_safe_close(fds[1 - i]);
                        return saved > 0 ? -saved : -EIO;
                }
        }
        *ret_read = fds[0];
        *ret_write = fds[1];
        return 0;
}

/* Milliseconds for poll() until @deadline: -1 for none, rounded up so that it is really passed. */
static int poll_timeout(uint64_t deadline, uint64_t now)
{
        if (deadline == AO_USEC_INFINITY)
                return -1;
        uint64_t ms = (deadline - now + AO_USEC_PER_MSEC - 1) / AO_USEC_PER_MSEC;
        return ms > INT32_MAX ? INT32_MAX : (int) ms;
}

/* Read stdout (capped) and stderr (its tail) until both close. -ETIMEDOUT, -EFBIG or -errno. */
static int drain(int out_fd, int err_fd, uint64_t deadline, struct ao_strbuf *out, struct tail *err)
{
        struct pollfd p[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
        char buf[16384];

        while (p[0].fd >= 0 || p[1].fd >= 0) {
                uint64_t now = now_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                if (poll(p, 2, poll_timeout(deadline, now)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return ao_negative_errno();
                }
                for (int i = 0; i < 2; i++) {
                        if (p[i].fd < 0 || p[i].revents == 0)
                                continue;
                        ssize_t n = read(p[i].fd, buf, sizeof(buf));
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n < 0)
                                return ao_negative_errno();
                        if (n == 0)
                                p[i].fd = -1; /* poll() skips negative descriptors */
                        else if (i == 1)
                                tail_append(err, buf, (size_t) n);
                        else if (out->len + (size_t) n > EXEC_OUTPUT_MAX)
                                return -EFBIG;
                        else
                                ao_strbuf_append_n(out, buf, (size_t) n);
                }
        }
        return 0;
}

/* Reap the plugin once its pipes are closed; it may still take a moment, or keep running. */
static int wait_exit(pid_t pid, uint64_t deadline, int *ret_status)
{
        for (uint64_t delay = AO_USEC_PER_MSEC;; delay = AO_MIN(delay * 2, 50 * AO_USEC_PER_MSEC)) {
                int status;
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return ao_negative_errno();
                if (r == pid) {
                        *ret_status = status;
                        return 0;
                }
                uint64_t now = now_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                uint64_t sleep = AO_MIN(delay, deadline - now);
                struct timespec ts = {.tv_sec = (time_t) (sleep / AO_USEC_PER_SEC),
                                      .tv_nsec = (long) (sleep % AO_USEC_PER_SEC * AO_NSEC_PER_USEC)};
                (void) nanosleep(&ts, NULL);
        }
}

/*
 * SIGKILL the plugin and whatever it started (its process group), then reap it. Not reaped yet, its pid
 * and process group cannot have been reused.
 */
static void kill_and_reap(pid_t pid)
{
        (void) kill(-pid, SIGKILL);
        (void) kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

/* Why the plugin failed, from its wait status and the end of its stderr. */
static int exit_error(const char *command, int status, const struct tail *err, struct ao_error *reterr)
{
        char line[STDERR_LINE_MAX + 1];
        const char *last = tail_last_line(err, line);
        const char *sep = last[0] ? ": " : "";

        if (WIFEXITED(status))
                return ao_error_set(reterr, -EIO, "exec plugin '%s' exited with status %d%s%s", command,
                                    WEXITSTATUS(status), sep, last);
        return ao_error_set(reterr, -EIO, "exec plugin '%s' was killed by signal %d%s%s", command,
                            WIFSIGNALED(status) ? WTERMSIG(status) : 0, sep, last);
}

int ao_kube_exec_run(const struct ao_kube_exec *exec, uint64_t timeout_usec,
                     struct ao_kube_exec_credential *ret, struct ao_error *reterr)
{
        _cleanup_close_ int out_read = -EBADF, out_write = -EBADF, err_read = -EBADF, err_write = -EBADF;
        struct ao_strbuf out = {0};
        struct tail err = {.len = 0};
        uint64_t now = now_usec();
        uint64_t deadline = timeout_usec >= AO_USEC_INFINITY - now ? AO_USEC_INFINITY : now + timeout_usec;
        int r, status = 0;
        pid_t pid;

        r = make_pipe(&out_read, &out_write);
        if (r >= 0)
                r = make_pipe(&err_read, &err_write);
        if (r >= 0)
                r = spawn(exec, out_write, err_write, &pid);
        if (r < 0)
                return ao_error_set(reterr, r, "exec plugin '%s': cannot run it: %s", exec->command,
                                    strerror(-r));
        /* Our copies of the write ends would keep the pipes open past the plugin's exit. */
        out_write = ao_safe_close(out_write);
        err_write = ao_safe_close(err_write);

        r = drain(out_read, err_read, deadline, &out, &err);
        if (r >= 0)
                r = wait_exit(pid, deadline, &status);
        if (r < 0) {
                kill_and_reap(pid);
                ao_strbuf_done(&out);
                if (r == -ETIMEDOUT)
                        return ao_error_set(reterr, r,
                                            "exec plugin '%s': no credential within %" PRIu64 " ms, killed",
                                            exec->command, (uint64_t) (timeout_usec / AO_USEC_PER_MSEC));
                if (r == -EFBIG)
                        return ao_error_set(reterr, r,
                                            "exec plugin '%s': output larger than %u bytes, killed",
                                            exec->command, EXEC_OUTPUT_MAX);
                return ao_error_set(reterr, r, "exec plugin '%s': %s", exec->command, strerror(-r));
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                ao_strbuf_done(&out);
                return exit_error(exec->command, status, &err, reterr);
        }
        r = parse_credential(ao_strbuf_str(&out), out.len, exec->api_version, ret, reterr);
        ao_strbuf_done(&out);
        if (r < 0)
                (void) ao_error_prefix(reterr, "exec plugin '%s'", exec->command);
        return r;
}
