/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `module render NAME [--debug] [--diff]` on the debug socket: the module's
 * chart rendered with the values it has now, by the `helm template` the
 * release step runs. The answer waits for helm (the loop does not: the
 * request is deferred and answered by ao_http_answer()).
 *
 * --diff compares that render with the manifest the release holds (`helm get
 * manifest`, empty when there is no release) with diff -u from diffutils
 * (Essential in Debian, so in every Debian-based image): the lines a release
 * made now would change. "No diff found" when there are none.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/http.h"
#include "ao/log.h"
#include "ao/proc.h"
#include "ao/sandbox.h"
#include "ao/strbuf.h"
#include "ao/values-store.h"
#include "internal.h"

#define DIFF_PATH         "/usr/bin/diff"
#define DIFF_TIMEOUT_USEC (60 * AO_USEC_PER_SEC)

struct render_job {
        struct operator_state *op;
        struct render_job *prev, *next; /* op->renders */
        uint64_t request;               /* the deferred HTTP request */
        char *module;                   /* owned */
        bool diff;
        char *rendered;       /* owned: helm template's output, with --diff */
        char *files[2];       /* owned: the release's manifest and the render, for diff */
        struct ao_strbuf out; /* diff's stdout */
};

static void job_free(struct render_job *j)
{
        if (j->prev)
                j->prev->next = j->next;
        else
                j->op->renders = j->next;
        if (j->next)
                j->next->prev = j->prev;
        for (size_t i = 0; i < AO_ARRAY_SIZE(j->files); i++) {
                if (j->files[i])
                        (void) unlink(j->files[i]);
                free(j->files[i]);
        }
        free(j->module);
        free(j->rendered);
        ao_strbuf_done(&j->out);
        free(j);
}

/* The answer (a text, or an error message with @status >= 400), and the job is over. */
static void job_answer(struct render_job *j, int status, const char *text)
{
        if (status >= 400)
                ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", j->module}), "module render '%s': %s",
                            j->module, text);
        ao_http_answer(j->op->http, j->request, status, cJSON_CreateString(text));
        job_free(j);
}

/* ---- diff -------------------------------------------------------------------------------------- */

static void on_diff_line(struct ao_proc_run *run, enum ao_proc_stream stream, const char *line, size_t len,
                         void *userdata)
{
        struct render_job *j = userdata;
        if (stream != AO_PROC_STDOUT) {
                ao_proc_log_line(run, stream, line, len);
                return;
        }
        ao_strbuf_append_n(&j->out, line, len);
        ao_strbuf_append(&j->out, "\n");
}

static void on_diff_exit(struct ao_proc_run *run, const struct ao_proc_result *res, void *userdata)
{
        (void) run;
        struct render_job *j = userdata;
        /* diff: 0 the same, 1 different, 2 trouble. */
        if (res->exit_code == 0) {
                job_answer(j, 200, "No diff found");
        } else if (res->exit_code == 1 && !res->output_truncated) {
                job_answer(j, 200, ao_strbuf_str(&j->out));
        } else {
                char how[256];
                ao_proc_result_describe(res, how, sizeof(how));
                _cleanup_free_ char *msg = res->output_truncated
                                               ? ao_xstrdup("diff: the difference is too large to show")
                                               : ao_xasprintf("diff: %s", how);
                job_answer(j, 500, msg);
        }
}

/*
 * A private file in the operator's temp dir holding @text, ending in exactly one newline (helm
 * template and helm get manifest end theirs differently); its path, or NULL with @reterr set.
 */
static char *temp_file(const struct operator_state *op, const char *what, const char *text, size_t len,
                       struct ao_error *reterr)
{
        while (len > 0 && text[len - 1] == '\n')
                len--;
        char *path = ao_xasprintf("%s/render-%s-XXXXXX", op->settings->tmp_dir, what);
        int fd = mkstemp(path);
        bool ok = fd >= 0 && write(fd, text, len) == (ssize_t) len && (len == 0 || write(fd, "\n", 1) == 1);
        int saved = errno;
        if (fd >= 0)
                close(fd);
        if (!ok) {
                ao_error_set(reterr, -saved, "cannot write '%s': %s", path, strerror(saved));
                if (fd >= 0)
                        (void) unlink(path);
                free(path);
                return NULL;
        }
        return path;
}

static void on_release_manifest(struct operator_state *op, const char *text, size_t len,
                                const struct ao_error *error, void *userdata)
{
        struct render_job *j = userdata;
        struct ao_error err = {0};
        if (error) {
                job_answer(j, 500, error->msg);
                return;
        }
        j->files[0] = temp_file(op, "release", text, len, &err);
        if (j->files[0])
                j->files[1] = temp_file(op, "chart", j->rendered, strlen(j->rendered), &err);
        if (!j->files[1]) {
                job_answer(j, 500, err.msg);
                return;
        }
        _cleanup_free_ char *from = ao_xasprintf("release/%s", j->module);
        _cleanup_free_ char *to = ao_xasprintf("render/%s", j->module);
        char *const argv[] = {DIFF_PATH, "-u",        "--label",   from, "--label",
                              to,        j->files[0], j->files[1], NULL};
        char *const envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
        struct ao_proc_spec spec = {
            .path = DIFF_PATH,
            .argv = argv,
            .envp = envp,
            .profile = ao_sandbox_profiles_find(op->profiles, "helm"),
            .timeout_usec = DIFF_TIMEOUT_USEC,
            .log_context = {.module = j->module, .hook = "diff"},
            .on_line = on_diff_line,
            .on_exit = on_diff_exit,
            .userdata = j,
        };
        if (ao_proc_spawn(op->proc, &spec, NULL, &err) < 0)
                job_answer(j, 500, err.msg);
}

/* ---- render ------------------------------------------------------------------------------------ */

static void on_rendered(struct operator_state *op, const char *text, size_t len, const struct ao_error *error,
                        void *userdata)
{
        struct render_job *j = userdata;
        struct ao_error err = {0};
        if (error) {
                job_answer(j, 500, error->msg);
                return;
        }
        if (!j->diff) {
                job_answer(j, 200, text);
                return;
        }
        j->rendered = ao_xstrndup(text, len);
        if (release_helm_manifest(op, j->module, on_release_manifest, j, &err) < 0)
                job_answer(j, 500, err.msg);
}

int module_render_start(struct operator_state *op, struct module *mod, const struct ao_debug_request *req,
                        uint64_t request, cJSON **ret_body)
{
        struct ao_error err = {0};
        cJSON *values = NULL;
        int r = ao_values_store_helm_document(op->values, mod->owner.values, &values, &err);
        struct render_job *j = NULL;
        if (r >= 0) {
                j = ao_xcalloc(1, sizeof(*j));
                *j = (struct render_job){.op = op,
                                         .request = request,
                                         .module = ao_xstrdup(mod->name),
                                         .diff = req->diff,
                                         .next = op->renders};
                r = release_helm_render(op, mod, values, req->debug, on_rendered, j, &err);
                cJSON_Delete(values);
        }
        if (r > 0) {
                if (op->renders)
                        op->renders->prev = j;
                op->renders = j;
                return AO_HTTP_DEFERRED;
        }
        if (j) {
                free(j->module);
                free(j);
        }
        /* No chart: nothing to render, as the Go operator answers for a module without one. */
        *ret_body = r == 0 ? NULL : cJSON_CreateString(err.msg);
        return r == 0 ? 200 : 500;
}

void module_render_done(struct operator_state *op)
{
        /* Their helm calls and diff runs were killed without a word: nothing will call them back. */
        while (op->renders)
                job_free(op->renders);
}
