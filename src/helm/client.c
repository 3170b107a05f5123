/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One helm call = one sandboxed child. stdout goes to a memfd, not a pipe:
 * rendered manifests can be megabytes and must arrive whole, while the
 * process layer caps and logs what comes through pipes. stderr is logged
 * line by line; the last "Error: " line, with the non-empty lines after it
 * (helm's error about a post-renderer quotes what it printed), is kept for
 * the error message.
 */
#include "ao/helm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/macro.h"
#include "ao/proc.h"
#include "ao/strbuf.h"

/* A manifest larger than this is refused rather than read into memory. */
#define HELM_OUTPUT_MAX (256u << 20)
/* Longest error line kept from stderr. */
#define HELM_ERROR_MAX 2048

struct ao_helm {
        struct ao_proc *proc;
        char *name;         /* HELM_BIN_PATH as given: a path, or a name to look up in PATH */
        char *bin_path;     /* what ao_helm_find() found; NULL before, or when it found nothing */
        char **global_args; /* NULL-terminated: --namespace ... */
        char **envp;
        const struct ao_sandbox_profile *profile;
        uint64_t kill_timeout_usec;
        struct ao_helm_call *calls;
        size_t n_calls;
};

struct ao_helm_call {
        struct ao_helm *helm;
        struct ao_helm_call *prev, *next;
        struct ao_proc_run *run;
        char *what;
        char *module; /* the log context's module name, owned */
        int stdout_fd;
        char *error_line; /* the last "Error: " line, with the lines continuing it */
        bool error_open;  /* the lines after it continue it, up to an empty one */
        char *last_line;  /* the last stderr line, when no "Error:" line came */
        ao_helm_done *done;
        void *userdata;
};

static char **copy_strv(char *const *v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        char **copy = ao_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
                copy[i] = ao_xstrdup(v[i]);
        return copy;
}

static void free_strv(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static const char *env_get(char *const *envp, const char *name)
{
        size_t len = strlen(name);
        for (size_t i = 0; envp && envp[i]; i++)
                if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=')
                        return envp[i] + len + 1;
        return NULL;
}

static bool is_executable_file(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* A name without a slash is looked up in PATH, as a shell would. */
static char *search_path(const char *name, const char *path)
{
        while (*path) {
                size_t len = strcspn(path, ":");
                char *candidate = ao_xasprintf("%.*s/%s", (int) len, len ? path : ".", name);
                if (is_executable_file(candidate))
                        return candidate;
                free(candidate);
                path += len + (path[len] == ':');
        }
        return NULL;
}

/* Why @path is no helm to run: it is missing, or no executable file. */
static int explain_path(const char *path, struct ao_error *reterr)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "helm binary '%s' (HELM_BIN_PATH) %s", path,
                                    errno == ENOENT ? "not found" : strerror(errno));
        return ao_error_set(reterr, -EACCES, "helm binary '%s' (HELM_BIN_PATH) is not an executable file",
                            path);
}

int ao_helm_find(struct ao_helm *h, struct ao_error *reterr)
{
        free(h->bin_path);
        h->bin_path = NULL;
        if (strchr(h->name, '/')) {
                if (!is_executable_file(h->name))
                        return explain_path(h->name, reterr);
                h->bin_path = ao_xstrdup(h->name);
                return 0;
        }
        const char *path = env_get(h->envp, "PATH");
        if (!path)
                path = "/usr/local/bin:/usr/bin:/bin";
        h->bin_path = search_path(h->name, path);
        if (!h->bin_path)
                return ao_error_set(reterr, -ENOENT,
                                    "helm binary '%s' (HELM_BIN_PATH) not found in PATH '%s'", h->name, path);
        return 0;
}

static void add_flag(char ***args, size_t *n, const char *flag, const char *value)
{
        if (!value || !value[0])
                return;
        *args = ao_xreallocarray(*args, *n + 3, sizeof(char *));
        (*args)[(*n)++] = ao_xstrdup(flag);
        (*args)[(*n)++] = ao_xstrdup(value);
        (*args)[*n] = NULL;
}

struct ao_helm *ao_helm_new(struct ao_proc *proc, const struct ao_helm_options *o)
{
        struct ao_helm *h = ao_xcalloc(1, sizeof(*h));
        *h = (struct ao_helm){.proc = proc,
                              .name = ao_xstrdup(o->bin_path && o->bin_path[0] ? o->bin_path : "helm"),
                              .envp = copy_strv(o->envp),
                              .profile = o->profile,
                              .kill_timeout_usec = o->kill_timeout_usec,
                              .global_args = ao_xcalloc(1, sizeof(char *))};
        size_t n = 0;
        add_flag(&h->global_args, &n, "--namespace", o->namespace);
        add_flag(&h->global_args, &n, "--kube-context", o->kube_context);
        add_flag(&h->global_args, &n, "--kubeconfig", o->kubeconfig);
        add_flag(&h->global_args, &n, "--kube-apiserver", o->kube_server);
        return h;
}

static void call_free(struct ao_helm_call *c)
{
        struct ao_helm *h = c->helm;
        if (c->prev)
                c->prev->next = c->next;
        else
                h->calls = c->next;
        if (c->next)
                c->next->prev = c->prev;
        h->n_calls--;
        if (c->stdout_fd >= 0)
                close(c->stdout_fd);
        free(c->what);
        free(c->module);
        free(c->error_line);
        free(c->last_line);
        free(c);
}

struct ao_helm *ao_helm_free(struct ao_helm *h)
{
        if (!h)
                return NULL;
        while (h->calls) {
                ao_proc_run_kill(h->calls->run);
                call_free(h->calls);
        }
        free(h->name);
        free(h->bin_path);
        free_strv(h->global_args);
        free_strv(h->envp);
        free(h);
        return NULL;
}

const char *ao_helm_bin_path(const struct ao_helm *h)
{
        return h->bin_path;
}

size_t ao_helm_running(const struct ao_helm *h)
{
        return h->n_calls;
}

static void keep_line(char **slot, const char *line, size_t len)
{
        free(*slot);
        *slot = ao_xstrndup(line, AO_MIN(len, (size_t) HELM_ERROR_MAX));
}

static void on_stderr_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len,
                           void *userdata)
{
        struct ao_helm_call *c = userdata;
        if (len >= 7 && strncmp(line, "Error: ", 7) == 0) {
                keep_line(&c->error_line, line, len);
                c->error_open = true;
        } else if (len > 0 && c->error_open) {
                /* An error of several lines: what a post-renderer said comes on the next ones. */
                _cleanup_free_ char *joined = ao_xasprintf("%s %.*s", c->error_line, (int) len, line);
                keep_line(&c->error_line, joined, strlen(joined));
        } else if (len > 0) {
                keep_line(&c->last_line, line, len);
        } else {
                c->error_open = false;
        }
        ao_proc_log_line(run, stream, line, len);
}

/* The whole of stdout, NUL-terminated; NULL with @reterr set when it cannot be read. */
static char *read_output(int fd, size_t *ret_len, struct ao_error *reterr)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "cannot read helm's output: %s",
                                    strerror(errno)),
                       NULL;
        if ((uint64_t) st.st_size > HELM_OUTPUT_MAX) {
                ao_error_set(reterr, -EFBIG, "helm's output is larger than %u MiB", HELM_OUTPUT_MAX >> 20);
                return NULL;
        }
        size_t size = (size_t) st.st_size, got = 0;
        char *buf = ao_xmalloc(size + 1);
        while (got < size) {
                ssize_t k = pread(fd, buf + got, size - got, (off_t) got);
                if (k <= 0) {
                        ao_error_set(reterr, k < 0 ? ao_negative_errno() : -EIO,
                                     "cannot read helm's output: %s", k < 0 ? strerror(errno) : "short read");
                        free(buf);
                        return NULL;
                }
                got += (size_t) k;
        }
        buf[size] = '\0';
        *ret_len = size;
        return buf;
}

static void on_helm_exit(struct ao_proc_run *run, const struct ao_proc_result *res, void *userdata)
{
        (void) run;
        struct ao_helm_call *c = userdata;
        struct ao_helm_result result = {.wall_usec = res->wall_usec, .output = ""};
        struct ao_error err = {0};
        _cleanup_free_ char *output = NULL;
        _cleanup_free_ char *message = NULL;
        if (res->exit_code == 0 && !res->timed_out && !res->killed) {
                output = read_output(c->stdout_fd, &result.output_len, &err);
                if (output)
                        result.output = output;
                else
                        message = ao_xasprintf("helm %s: %s", c->what, err.msg);
        } else {
                char how[256];
                ao_proc_result_describe(res, how, sizeof(how));
                const char *why = c->error_line ? c->error_line : c->last_line;
                message = why ? ao_xasprintf("helm %s: %s: %s", c->what, how, why)
                              : ao_xasprintf("helm %s: %s", c->what, how);
        }
        if (message) {
                result.code = -EIO;
                result.error = message;
        }
        ao_helm_done *done = c->done;
        void *data = c->userdata;
        call_free(c);
        if (done)
                done(&result, data);
}

static char **call_argv(const struct ao_helm *h, char *const *args)
{
        size_t n_args = 0, n_global = 0;
        while (args[n_args])
                n_args++;
        while (h->global_args[n_global])
                n_global++;
        char **argv = ao_xcalloc(n_args + n_global + 2, sizeof(char *));
        argv[0] = h->bin_path;
        memcpy(argv + 1, args, n_args * sizeof(char *));
        memcpy(argv + 1 + n_args, h->global_args, n_global * sizeof(char *));
        return argv;
}

int ao_helm_call(struct ao_helm *h, const char *what, char *const *args, const struct ao_log_context *ctx,
                 ao_helm_done *done, void *userdata, struct ao_helm_call **ret_call, struct ao_error *reterr)
{
        if (!h->bin_path)
                return ao_error_set(reterr, -ENOENT, "helm %s: no helm binary '%s' (HELM_BIN_PATH) was found",
                                    what, h->name);
        int fd = memfd_create("helm-stdout", MFD_CLOEXEC);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "helm %s: memfd: %s", what, strerror(errno));
        struct ao_helm_call *c = ao_xcalloc(1, sizeof(*c));
        *c = (struct ao_helm_call){.helm = h,
                                   .what = ao_xstrdup(what),
                                   .module = ctx && ctx->module ? ao_xstrdup(ctx->module) : NULL,
                                   .stdout_fd = fd,
                                   .done = done,
                                   .userdata = userdata,
                                   .next = h->calls};
        if (h->calls)
                h->calls->prev = c;
        h->calls = c;
        h->n_calls++;
        _cleanup_free_ char **argv = call_argv(h, args);
        struct ao_proc_spec spec = {
            .path = h->bin_path,
            .argv = argv,
            .envp = h->envp,
            .stdout_fd = fd,
            .profile = h->profile,
            .timeout_usec = h->kill_timeout_usec,
            .log_context = {.module = c->module, .hook = "helm"},
            .on_line = on_stderr_line,
            .on_exit = on_helm_exit,
            .userdata = c,
        };
        int r = ao_proc_spawn(h->proc, &spec, &c->run, reterr);
        if (r < 0) {
                call_free(c);
                return r;
        }
        if (ret_call)
                *ret_call = c;
        return 0;
}

void ao_helm_call_cancel(struct ao_helm_call *c)
{
        if (!c)
                return;
        ao_proc_run_kill(c->run);
        /* The run still reports its exit; it must find nothing to call. */
        c->done = NULL;
}
