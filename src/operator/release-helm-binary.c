/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The helm binary the release step runs (HELM_BIN_PATH): looked up, and its version read, at
 * start-up. Only a module with a chart needs it, so the operator starts without it: every hook and
 * every module without a chart runs, and the release step of a chart fails with the reason (helm
 * is missing, is not helm 3, or its version cannot be read). Each such step looks again, so a helm
 * installed later is taken without a restart. A helm that was usable once is not looked at again.
 * Also the post-renderer helm is given: this binary, with the chart labels.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/helm-output.h"
#include "ao/helm-post-render.h"
#include "ao/helm.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "internal.h"

/* A call still running this long after HELM_TIMEOUT is killed: helm enforces the timeout itself. */
#define HELM_KILL_GRACE_USEC (60 * AO_USEC_PER_SEC)

/* A step waiting for the version check under way. */
struct helm_waiter {
        release_helm_ready *done;
        void *userdata;
        struct helm_waiter *next;
};

/* The version check ended: @error NULL when helm is usable now. Every waiting step goes on. */
static void settle(struct operator_state *op, const struct ao_error *error)
{
        struct helm_state *h = op->helm;
        struct ao_error no_helm = {0};
        if (error)
                ao_error_set(&no_helm, RELEASE_NO_HELM, "%s", error->msg);
        h->checking = false;
        free(h->unusable);
        h->unusable = error ? ao_xstrdup(error->msg) : NULL;
        h->usable = !error;
        struct helm_waiter *w = h->waiters;
        h->waiters = NULL;
        while (w) {
                struct helm_waiter *next = w->next;
                w->done(op, error ? &no_helm : NULL, w->userdata);
                free(w);
                w = next;
        }
}

static int check_version(struct operator_state *op, const struct ao_helm_result *res, struct ao_error *reterr)
{
        struct helm_state *h = op->helm;
        const char *path = ao_helm_bin_path(h->client);
        struct ao_helm_version v;
        if (res->code < 0)
                return ao_error_set(reterr, res->code, "helm at '%s' (HELM_BIN_PATH): %s", path, res->error);
        struct ao_error err = {0};
        if (ao_helm_parse_version(res->output, res->output_len, &v, &err) < 0)
                return ao_error_set(reterr, err.code,
                                    "helm at '%s' (HELM_BIN_PATH): cannot read its version: %s", path,
                                    err.msg);
        if (v.major != 3)
                return ao_error_set(
                    reterr, -ENOTSUP,
                    "helm %d.%d.%d at '%s' (HELM_BIN_PATH) is not supported: helm 3 is required", v.major,
                    v.minor, v.patch, path);
        h->labels = v.minor >= 13;
        h->take_ownership = v.minor >= 17;
        free(h->version);
        h->version = ao_xasprintf("%d.%d.%d", v.major, v.minor, v.patch);
        ao_log(AO_LOG_INFO, "helm %s at '%s'", h->version, path);
        return 0;
}

static void on_version(const struct ao_helm_result *res, void *userdata)
{
        struct operator_state *op = userdata;
        struct ao_error err = {0};
        int r = check_version(op, res, &err);
        settle(op, r < 0 ? &err : NULL);
}

/* Look for helm and, unless HELM3 says it is helm 3, ask its version. */
static void check(struct operator_state *op)
{
        struct helm_state *h = op->helm;
        struct ao_error err = {0};
        h->checking = true;
        if (ao_helm_find(h->client, &err) < 0) {
                settle(op, &err);
                return;
        }
        if (op->settings->helm3) {
                /* helm 3 of a version not asked: release labels assumed, the version unknown. */
                h->labels = true;
                free(h->version);
                h->version = ao_xstrdup("3");
                settle(op, NULL);
                return;
        }
        char **args = ao_helm_args_version();
        int r = ao_helm_call(h->client, "version", args, NULL, on_version, op, NULL, &err);
        ao_helm_args_free(args);
        if (r < 0)
                settle(op, &err);
}

void release_helm_ready_check(struct operator_state *op, release_helm_ready *done, void *userdata)
{
        struct helm_state *h = op->helm;
        if (h->usable) {
                done(op, NULL, userdata);
                return;
        }
        struct helm_waiter *w = ao_xcalloc(1, sizeof(*w));
        *w = (struct helm_waiter){done, userdata, h->waiters};
        h->waiters = w;
        if (!h->checking)
                check(op);
}

bool release_helm_usable(const struct operator_state *op)
{
        return op->helm->usable;
}

/* ---- the post-renderer ------------------------------------------------------------------------- */

/*
 * helm runs this binary on every manifest it renders (`tool post-render LABELS`), as its own child:
 * in helm's sandbox, with no shell. By path, found through /proc; a binary replaced since the
 * start is still there as /proc/PID/exe.
 */
static int find_post_renderer(struct operator_state *op, struct ao_error *reterr)
{
        struct helm_state *h = op->helm;
        _cleanup_(ao_helm_labels_clear) struct ao_helm_labels labels = {0};
        int r = chart_labels(op->settings, &labels, reterr);
        if (r < 0)
                return r;
        h->post_render_args[0] = ao_xstrdup("tool");
        h->post_render_args[1] = ao_xstrdup("post-render");
        h->post_render_args[2] = ao_helm_labels_format(&labels);
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n < 0) {
                h->post_renderer_missing = ao_xasprintf(
                    "helm's post-renderer, this binary, is not found: /proc/self/exe: %s", strerror(errno));
                return 0;
        }
        self[n] = '\0';
        static const char deleted[] = " (deleted)";
        bool gone = (size_t) n > strlen(deleted) && strcmp(self + n - strlen(deleted), deleted) == 0;
        h->post_renderer.path = gone ? ao_xasprintf("/proc/%d/exe", (int) getpid()) : ao_xstrdup(self);
        h->post_renderer.args = h->post_render_args;
        return 0;
}

/* ---- start-up ---------------------------------------------------------------------------------- */

static void forget_waiters(struct helm_state *h)
{
        while (h->waiters) {
                struct helm_waiter *next = h->waiters->next;
                free(h->waiters);
                h->waiters = next;
        }
}

static void on_first_check(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        (void) op;
        (void) error;
        *(bool *) userdata = true;
}

extern char **environ;

int release_helm_start(struct operator_state *op, struct ao_error *reterr)
{
        const struct ao_settings *s = op->settings;
        struct ao_helm_options o = {
            .bin_path = s->helm_bin_path,
            .namespace = cluster_config_namespace(op),
            .kube_context = s->kube_context,
            .kubeconfig = s->kube_config,
            .kube_server = s->kube_server,
            .envp = environ,
            .profile = ao_sandbox_profiles_find(op->profiles, "helm"),
            .kill_timeout_usec = s->helm_timeout_usec + HELM_KILL_GRACE_USEC,
        };
        op->helm = ao_xcalloc(1, sizeof(*op->helm));
        op->helm->client = ao_helm_new(op->proc, &o);
        op->releases = &release_helm_ops;
        int k = find_post_renderer(op, reterr);
        if (k < 0)
                return k;
        /* Waited for: nothing else runs yet, and the first module run should know. */
        bool checked = false;
        release_helm_ready_check(op, on_first_check, &checked);
        int r = 0;
        while (!checked && r >= 0) {
                if (ao_reactor_exiting(op->reactor))
                        r = ao_error_set(reterr, -ECANCELED, "stopped while checking the helm version");
                else if ((r = ao_reactor_run_once(op->reactor, AO_USEC_INFINITY)) < 0)
                        ao_error_set(reterr, r, "event loop: %s", strerror(-r));
        }
        if (r < 0) {
                /* The check may still end while the loop drains: it must not reach @checked. */
                forget_waiters(op->helm);
                return r;
        }
        if (!op->helm->usable)
                ao_log(AO_LOG_WARN,
                       "helm cannot be used: %s. Hooks and modules without a chart run as usual; the release "
                       "step of a module with a chart fails until helm 3 is there (it looks again each time)",
                       op->helm->unusable);
        return 0;
}

void release_helm_done(struct operator_state *op)
{
        if (!op->helm)
                return;
        ao_helm_free(op->helm->client);
        forget_waiters(op->helm);
        free(op->helm->unusable);
        free(op->helm->version);
        free((char *) op->helm->post_renderer.path);
        for (size_t i = 0; i < sizeof(op->helm->post_render_args) / sizeof(char *); i++)
                free(op->helm->post_render_args[i]);
        free(op->helm->post_renderer_missing);
        free(op->helm);
        op->helm = NULL;
}
