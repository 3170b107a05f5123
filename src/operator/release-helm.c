/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The release step with a cluster: the helm binary, one child per
 * operation, never blocking the loop.
 *
 * An upgrade goes: the release's last revision, from helm's storage
 * objects (release-state.c) or, while that watch is not there, `helm
 * history` → decide → `helm upgrade --install` or nothing (the module's
 * CRDs went to the cluster before, module-crds.c). It upgrades when there is no release, when the last
 * revision is not "deployed", when the checksum recorded with the release
 * differs from the rendered manifest's, or when an object of the release is
 * missing from the cluster (release-monitor.c); otherwise the release is left
 * alone (seeds: "Releases deduplication").
 *
 * The render (`helm template`) is skipped too when what it depends on is what
 * the release was last made or checked from: the chart's files, the values,
 * the release name and namespace and helm's version hash to the input
 * checksum, recorded as the release label moduleInputChecksum beside the Go
 * operator's moduleChecksum. So a converge, or a restart, with nothing changed
 * starts no helm process. A release the Go operator made (moduleChecksum only)
 * is rendered once, recognised by its checksum, and labelled.
 *
 * A release whose only revision failed is uninstalled first; a revision stuck
 * in pending-* has its storage object deleted first, as the Go operator does,
 * so the upgrade can proceed.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/helm-output.h"
#include "ao/helm.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/object-patch.h"
#include "internal.h"

typedef void helm_step(struct operator_state *op, const struct ao_helm_result *res, void *userdata);

/* ---- calls ------------------------------------------------------------------------------------- */

struct call_ctx {
        struct operator_state *op;
        helm_step *next;
        void *userdata;
};

static void on_call_done(const struct ao_helm_result *res, void *userdata)
{
        struct call_ctx c = *(struct call_ctx *) userdata;
        free(userdata);
        c.next(c.op, res, c.userdata);
}

/* Run helm with @args (consumed); @next gets the result. Fails at once only when nothing started. */
static int helm_run(struct operator_state *op, const char *what, char **args, const char *module,
                    helm_step *next, void *userdata, struct ao_error *reterr)
{
        struct call_ctx *c = ao_xcalloc(1, sizeof(*c));
        *c = (struct call_ctx){op, next, userdata};
        struct ao_log_context ctx = {.module = module};
        int r = ao_helm_call(op->helm->client, what, args, &ctx, on_call_done, c, NULL, reterr);
        ao_helm_args_free(args);
        if (r < 0)
                free(c);
        return r;
}

/* ---- upgrade ----------------------------------------------------------------------------------- */

struct upgrade_job {
        struct operator_state *op;
        struct module *mod;
        char *activation;
        char *chart;
        struct cJSON *values; /* owned: what helm gets, until it is in @values_file */
        char *values_file;
        char *rendered_checksum;
        char input_checksum[33]; /* what the render depends on (chart_input_checksum) */
        bool from_storage;       /* @last and the labels below come from release-state.c */
        char *recorded_checksum; /* owned: the last revision's moduleChecksum label, or NULL */
        char *recorded_input;    /* owned: its moduleInputChecksum label, or NULL */
        char *storage_object;    /* owned: its storage object's name */
        bool reused;             /* the objects watched are this release's already: @manifest is empty */
        char *upgrade_why;       /* owned: an upgrade decided before any render: render, then upgrade */
        struct ao_helm_manifest manifest;
        struct ao_helm_revision last;
        uint64_t check_started_usec, upgrade_started_usec;
        release_done *done;
        void *userdata;
        bool rendered; /* the manifest is the release's: worth watching (release-monitor.c) */
};

static void job_end(struct upgrade_job *j, const struct ao_error *error)
{
        if (j->values_file)
                (void) unlink(j->values_file);
        struct operator_state *op = j->op;
        release_done *done = j->done;
        void *userdata = j->userdata;
        if (!error && j->rendered)
                release_monitor_start(op, j->mod, j->reused ? NULL : &j->manifest, j->input_checksum);
        done(op, error, userdata);
        free(j->activation);
        free(j->chart);
        cJSON_Delete(j->values);
        free(j->values_file);
        free(j->rendered_checksum);
        free(j->recorded_checksum);
        free(j->recorded_input);
        free(j->storage_object);
        free(j->upgrade_why);
        ao_helm_manifest_clear(&j->manifest);
        free(j);
}

static void job_fail(struct upgrade_job *j, int code, const char *message)
{
        struct ao_error err = {0};
        ao_error_set(&err, code < 0 ? code : -EIO, "%s", message);
        job_end(j, &err);
}

/* The job's next helm call; @args is consumed. A call that cannot start fails the job. */
static void job_helm(struct upgrade_job *j, const char *what, char **args, helm_step *next)
{
        struct ao_error err = {0};
        if (helm_run(j->op, what, args, j->mod->name, next, j, &err) < 0)
                job_fail(j, err.code, err.msg);
}

/* A line about the job's module: @fmt has a %s for the module's name, then one for @arg. */
#define log_module(j, level, fmt, arg) \
        ao_log_with((level), AO_LOG_FIELDS({"module", (j)->mod->name}), fmt, (j)->mod->name, (arg))

static void on_upgraded(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        struct upgrade_job *j = userdata;
        op_metrics_helm_operation(op, j->mod, j->activation, "upgrade",
                                  ao_clock_now_usec() - j->upgrade_started_usec);
        if (res->code < 0) {
                job_fail(j, res->code, res->error);
                return;
        }
        log_module(j, AO_LOG_INFO, "module '%s': release upgraded (%s)", j->rendered_checksum);
        j->rendered = true;
        job_end(j, NULL);
}

static void render(struct upgrade_job *j);

static void upgrade(struct upgrade_job *j, const char *why)
{
        struct operator_state *op = j->op;
        /* The input was unchanged but an object is gone: the upgrade needs the render first. */
        if (!j->rendered_checksum) {
                j->upgrade_why = ao_xstrdup(why);
                j->reused = false;
                render(j);
                return;
        }
        op_metrics_helm_operation(op, j->mod, j->activation, "check-upgrade",
                                  ao_clock_now_usec() - j->check_started_usec);
        log_module(j, AO_LOG_INFO, "module '%s': upgrading its release: %s", why);
        _cleanup_free_ char *labels = op->helm->labels
                                          ? ao_xasprintf("moduleChecksum=%s,moduleInputChecksum=%s",
                                                         j->rendered_checksum, j->input_checksum)
                                          : NULL;
        struct ao_helm_upgrade u = {.release = j->mod->name,
                                    .chart_dir = j->chart,
                                    .values_file = j->values_file,
                                    .checksum = j->rendered_checksum,
                                    .labels = labels,
                                    .history_max = (int) op->settings->helm_history_max,
                                    .take_ownership = op->helm->take_ownership,
                                    .timeout_usec = op->settings->helm_timeout_usec,
                                    .post_renderer = &op->helm->post_renderer};
        j->upgrade_started_usec = ao_clock_now_usec();
        job_helm(j, "upgrade", ao_helm_args_upgrade(&u), on_upgraded);
}

static void skip_upgrade(struct upgrade_job *j, const char *why)
{
        op_metrics_helm_operation(j->op, j->mod, j->activation, "check-upgrade",
                                  ao_clock_now_usec() - j->check_started_usec);
        log_module(j, AO_LOG_INFO, "module '%s': release unchanged (%s), upgrade skipped", why);
        j->rendered = true;
        job_end(j, NULL);
}

static int apply_operations(struct operator_state *op, const char *text, cluster_patches_done *done,
                            void *userdata, struct ao_error *reterr);

static void on_labelled(const struct ao_error *error, void *userdata)
{
        struct upgrade_job *j = userdata;
        if (error)
                log_module(j, AO_LOG_WARN, "module '%s': cannot record the input checksum: %s", error->msg);
        _cleanup_free_ char *why =
            ao_xasprintf("checksum %s, now labelled with its input", j->rendered_checksum);
        skip_upgrade(j, why);
}

/*
 * The release is what this render gives but does not say which input made it (the Go operator
 * made it, or a helm without labels): label its storage object, so the next converge need not
 * render. helm keeps a storage object's labels as the release's.
 */
static void label_release(struct upgrade_job *j)
{
        struct operator_state *op = j->op;
        bool labelled = j->recorded_input && strcmp(j->recorded_input, j->input_checksum) == 0;
        if (labelled || !j->from_storage || !op->helm->labels || !j->storage_object) {
                _cleanup_free_ char *why = ao_xasprintf("checksum %s", j->rendered_checksum);
                skip_upgrade(j, why);
                return;
        }
        _cleanup_free_ char *text = ao_xasprintf(
            "{\"operation\":\"MergePatch\",\"apiVersion\":\"v1\",\"kind\":\"%s\",\"namespace\":\"%s\","
            "\"name\":\"%s\",\"mergePatch\":{\"metadata\":{\"labels\":{\"moduleInputChecksum\":\"%s\"}}}}",
            release_state_config_map_driver() ? "ConfigMap" : "Secret", cluster_config_namespace(op),
            j->storage_object, j->input_checksum);
        struct ao_error err = {0};
        if (apply_operations(op, text, on_labelled, j, &err) < 0)
                on_labelled(&err, j);
}

/* The objects were looked at: all there means the release is as it should be. */
static void on_presence(struct operator_state *op, const char *absent, const struct ao_error *error,
                        void *userdata)
{
        struct upgrade_job *j = userdata;
        if (error && error->code == -ECANCELED) {
                job_fail(j, error->code, error->msg);
                return;
        }
        if (error) {
                /* Not knowing is no reason to skip: helm's upgrade is harmless when nothing changed. */
                log_module(j, AO_LOG_WARN, "module '%s': cannot check the release's objects: %s", error->msg);
                upgrade(j, "its objects could not be checked");
                return;
        }
        if (absent) {
                upgrade(j, absent); /* release_monitor_check() counted it */
                return;
        }
        if (!j->rendered_checksum) {
                skip_upgrade(j, "same input as its last revision");
                return;
        }
        label_release(j);
}

/* Same checksum: upgrade only when something helm made was deleted or taken behind its back. */
static void check_objects(struct upgrade_job *j)
{
        struct ao_error err = {0};
        if (!j->op->kube) {
                on_presence(j->op, NULL, NULL, j);
                return;
        }
        if (release_monitor_check(j->op, j->mod, j->reused ? NULL : &j->manifest, on_presence, j, &err) < 0)
                on_presence(j->op, NULL, &err, j);
}

static void compare_checksums(struct upgrade_job *j, const char *recorded)
{
        bool same = recorded && strcmp(recorded, j->rendered_checksum) == 0;
        if (same) {
                check_objects(j);
                return;
        }
        _cleanup_free_ char *why = recorded
                                       ? ao_xasprintf("checksum %s, was %s", j->rendered_checksum, recorded)
                                       : ao_xstrdup("no checksum recorded");
        upgrade(j, why);
}

static void on_values(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        (void) op;
        struct upgrade_job *j = userdata;
        if (res->code < 0) {
                job_fail(j, res->code, res->error);
                return;
        }
        _cleanup_free_ char *recorded = NULL;
        struct ao_error err = {0};
        if (ao_helm_parse_values_checksum(res->output, res->output_len, &recorded, &err) < 0) {
                job_fail(j, err.code, err.msg);
                return;
        }
        compare_checksums(j, recorded);
}

/* The release label, else the legacy value the Go operator once recorded in the release values. */
static void recorded_checksum(struct upgrade_job *j)
{
        if (j->recorded_checksum)
                compare_checksums(j, j->recorded_checksum);
        else
                job_helm(j, "get values", ao_helm_args_get_values(j->mod->name), on_values);
}

static void on_storage_deleted(const struct ao_error *error, void *userdata)
{
        struct upgrade_job *j = userdata;
        if (error) {
                job_fail(j, error->code, error->msg);
                return;
        }
        upgrade(j, "the pending revision was dropped");
}

/* Object patch operations of the operator's own (JSON text) to the cluster. */
static int apply_operations(struct operator_state *op, const char *text, cluster_patches_done *done,
                            void *userdata, struct ao_error *reterr)
{
        struct ao_object_patch_ops ops = {0};
        int r = ao_object_patch_parse(text, strlen(text), &ops, reterr);
        if (r >= 0)
                r = cluster_apply_object_patches(op, &ops, done, userdata, reterr);
        return r;
}

/*
 * A revision left pending by an operator that died mid-upgrade blocks every later upgrade
 * ("another operation is in progress"). Its storage object goes; the previous revision stays.
 */
static void drop_pending_revision(struct upgrade_job *j)
{
        struct operator_state *op = j->op;
        const char *ns = cluster_config_namespace(op);
        if (!op->kube) {
                upgrade(j, "its last revision is pending");
                return;
        }
        bool config_map = release_state_config_map_driver();
        _cleanup_free_ char *text = ao_xasprintf(
            "{\"operation\":\"Delete\",\"apiVersion\":\"v1\",\"kind\":\"%s\",\"namespace\":\"%s\","
            "\"name\":\"sh.helm.release.v1.%s.v%d\"}",
            config_map ? "ConfigMap" : "Secret", ns, j->mod->name, j->last.revision);
        log_module(j, AO_LOG_WARN, "module '%s': the last revision is %s: deleting its record",
                   j->last.status);
        struct ao_error err = {0};
        if (apply_operations(op, text, on_storage_deleted, j, &err) < 0)
                job_fail(j, err.code, err.msg);
}

static void on_failed_release_removed(struct operator_state *op, const struct ao_helm_result *res,
                                      void *userdata)
{
        (void) op;
        struct upgrade_job *j = userdata;
        if (res->code < 0) {
                job_fail(j, res->code, res->error);
                return;
        }
        upgrade(j, "its first revision failed and was uninstalled");
}

static void decide(struct upgrade_job *j)
{
        struct operator_state *op = j->op;
        const char *status = j->last.status;
        if (j->last.revision == 0 || strcmp(status, "uninstalled") == 0) {
                upgrade(j, "no release yet");
        } else if (strncmp(status, "pending-", 8) == 0) {
                op_metrics_helm_redeployed(op, j->mod);
                drop_pending_revision(j);
        } else if (j->last.revision == 1 && strcmp(status, "failed") == 0) {
                /* helm cannot upgrade a release that was never deployed: start over. */
                op_metrics_helm_redeployed(op, j->mod);
                log_module(j, AO_LOG_WARN, "module '%s': its only revision %s: uninstalling it first",
                           status);
                job_helm(j, "uninstall",
                         ao_helm_args_uninstall(j->mod->name, op->settings->helm_timeout_usec),
                         on_failed_release_removed);
        } else if (strcasecmp(status, "deployed") != 0) {
                op_metrics_helm_redeployed(op, j->mod);
                _cleanup_free_ char *why = ao_xasprintf("its last revision is %s", status);
                upgrade(j, why);
        } else {
                recorded_checksum(j);
        }
}

static void on_rendered(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        struct upgrade_job *j = userdata;
        op_metrics_helm_operation(op, j->mod, j->activation, "template", res->wall_usec);
        if (res->code < 0) {
                job_fail(j, res->code, res->error);
                return;
        }
        char sum[33];
        ao_helm_checksum(res->output, res->output_len, sum);
        j->rendered_checksum = ao_xstrdup(sum);
        struct ao_error err = {0};
        ao_helm_manifest_clear(&j->manifest); /* the stored release's, when it was read first */
        if (ao_helm_manifest_parse(res->output, res->output_len, &j->manifest, &err) < 0) {
                _cleanup_free_ char *msg = ao_xasprintf("helm template: %s", err.msg);
                job_fail(j, err.code, msg);
                return;
        }
        if (j->upgrade_why) {
                _cleanup_free_ char *why = TAKE_PTR(j->upgrade_why);
                upgrade(j, why);
                return;
        }
        j->check_started_usec = ao_clock_now_usec();
        decide(j);
}

static void render(struct upgrade_job *j)
{
        job_helm(j, "template",
                 ao_helm_args_template(j->mod->name, j->chart, j->values_file, &j->op->helm->post_renderer),
                 on_rendered);
}

static void on_history(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        (void) op;
        struct upgrade_job *j = userdata;
        struct ao_error err = {0};
        if (res->code < 0 && !strstr(res->error, "release: not found")) {
                job_fail(j, res->code, res->error);
                return;
        }
        if (res->code == 0 && ao_helm_parse_history(res->output, res->output_len, &j->last, &err) < 0) {
                job_fail(j, err.code, err.msg);
                return;
        }
        render(j);
}

/* The release's own objects, from its storage object: what the release step checks is there. */
static void on_stored_manifest(struct operator_state *op, const char *manifest, size_t len,
                               const struct ao_error *error, void *userdata)
{
        (void) op;
        struct upgrade_job *j = userdata;
        struct ao_error err = {0};
        if (error && error->code == -ECANCELED) {
                job_fail(j, error->code, error->msg);
                return;
        }
        if (error || ao_helm_manifest_parse(manifest, len, &j->manifest, &err) < 0) {
                /* Rendering tells the same, with a helm process. */
                log_module(j, AO_LOG_WARN, "module '%s': the stored release cannot be read, rendering it: %s",
                           error ? error->msg : err.msg);
                render(j);
                return;
        }
        check_objects(j);
}

/* Nothing the render depends on changed since the release was made or checked: no render. */
static void reuse_release(struct upgrade_job *j)
{
        struct ao_error err = {0};
        j->check_started_usec = ao_clock_now_usec();
        if (release_monitor_watches(j->op, j->mod, j->input_checksum)) {
                j->reused = true;
                check_objects(j);
                return;
        }
        if (release_state_read_manifest(j->op, j->storage_object, on_stored_manifest, j, &err) < 0)
                on_stored_manifest(j->op, NULL, 0, &err, j);
}

static void release_state(struct upgrade_job *j)
{
        struct release_revision last;
        if (!release_state_last(j->op, j->mod->name, &last)) {
                job_helm(j, "history", ao_helm_args_history(j->mod->name), on_history);
                return;
        }
        j->from_storage = true;
        j->last.revision = last.revision;
        snprintf(j->last.status, sizeof(j->last.status), "%s", last.status ? last.status : "");
        j->recorded_checksum = last.module_checksum ? ao_xstrdup(last.module_checksum) : NULL;
        j->recorded_input = last.input_checksum ? ao_xstrdup(last.input_checksum) : NULL;
        j->storage_object = last.object ? ao_xstrdup(last.object) : NULL;
        bool unchanged = last.revision > 0 && strcmp(j->last.status, "deployed") == 0 && j->recorded_input &&
                         strcmp(j->recorded_input, j->input_checksum) == 0;
        if (unchanged)
                reuse_release(j);
        else
                render(j);
}

/* helm is there (or not): the job's inputs, then the release. */
static void on_helm_ready(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        struct upgrade_job *j = userdata;
        struct ao_error err = {0};
        if (error) {
                _cleanup_free_ char *msg = ao_xasprintf("its chart needs helm: %s", error->msg);
                job_fail(j, error->code, msg);
                return;
        }
        if (op->helm->post_renderer_missing) {
                job_fail(j, -ENOENT, op->helm->post_renderer_missing);
                return;
        }
        if (chart_input_checksum(j->mod, j->chart, j->values, cluster_config_namespace(op), op->helm->version,
                                 op->helm->post_render_args[2], j->input_checksum, &err) < 0 ||
            chart_values_file(op, j->mod, j->values, &j->values_file, &err) < 0) {
                job_fail(j, err.code, err.msg);
                return;
        }
        cJSON_Delete(j->values);
        j->values = NULL;
        release_state(j);
}

static int helm_binary_upgrade(struct operator_state *op, struct module *mod, const cJSON *values,
                               const char *activation, release_done *done, void *userdata,
                               struct ao_error *reterr)
{
        char *chart = NULL;
        int r = chart_dir(op, mod, &chart, reterr);
        if (r < 0)
                return r;
        if (r == 0) {
                ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"module", mod->name}),
                            "module '%s' has no chart (no Chart.yaml, no templates/): no release", mod->name);
                done(op, NULL, userdata);
                return 0;
        }
        struct upgrade_job *j = ao_xcalloc(1, sizeof(*j));
        *j = (struct upgrade_job){.op = op,
                                  .mod = mod,
                                  .activation = ao_xstrdup(activation),
                                  .chart = chart,
                                  .values = cJSON_Duplicate(values, true),
                                  .done = done,
                                  .userdata = userdata};
        release_helm_ready_check(op, on_helm_ready, j);
        return 0;
}

/* ---- remove, exists, list ---------------------------------------------------------------------- */

struct simple_job {
        char *release;
        union {
                release_done *done;
                release_exists_done *exists_done;
                release_list_done *list_done;
        };
        void *userdata;
};

static struct simple_job *simple_job_new(const char *release, void *userdata)
{
        struct simple_job *s = ao_xcalloc(1, sizeof(*s));
        s->release = release ? ao_xstrdup(release) : NULL;
        s->userdata = userdata;
        return s;
}

static void on_uninstalled(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        struct simple_job s = *(struct simple_job *) userdata;
        free(userdata);
        /* Gone already is what was asked for. */
        bool ok = res->code == 0 || strstr(res->error, "release: not found");
        struct ao_error err = {0};
        if (!ok)
                ao_error_set(&err, res->code, "%s", res->error);
        else
                ao_log(AO_LOG_INFO, "release '%s' uninstalled", s.release);
        free(s.release);
        s.done(op, ok ? NULL : &err, s.userdata);
}

static void uninstall(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        struct simple_job *s = userdata;
        struct ao_error err = {0};
        if (!error &&
            helm_run(op, "uninstall", ao_helm_args_uninstall(s->release, op->settings->helm_timeout_usec),
                     s->release, on_uninstalled, s, &err) >= 0)
                return;
        struct simple_job copy = *s;
        free(s->release);
        free(s);
        copy.done(op, error ? error : &err, copy.userdata);
}

static int helm_binary_remove(struct operator_state *op, const char *release, release_done *done,
                              void *userdata, struct ao_error *reterr)
{
        (void) reterr;
        struct simple_job *s = simple_job_new(release, userdata);
        s->done = done;
        release_helm_ready_check(op, uninstall, s);
        return 0;
}

static void on_exists(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        struct simple_job s = *(struct simple_job *) userdata;
        free(userdata);
        free(s.release);
        struct ao_helm_revision last = {0};
        struct ao_error err = {0};
        int exists;
        if (res->code < 0)
                exists = strstr(res->error, "release: not found")
                             ? 0
                             : ao_error_set(&err, res->code, "%s", res->error);
        else if ((exists = ao_helm_parse_history(res->output, res->output_len, &last, &err)) >= 0)
                exists = last.revision > 0 && strcmp(last.status, "uninstalled") != 0;
        s.exists_done(op, exists, exists < 0 ? &err : NULL, s.userdata);
}

/* Not known from the release state: helm history. Without helm, a release state that is there says no. */
static void ask_history(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        struct simple_job *s = userdata;
        struct ao_error err = {0};
        if (!error &&
            helm_run(op, "history", ao_helm_args_history(s->release), s->release, on_exists, s, &err) >= 0)
                return;
        struct simple_job copy = *s;
        free(s->release);
        free(s);
        /* No helm made a release since the watch listed: there is none. */
        if (error && release_state_ready(op))
                copy.exists_done(op, 0, NULL, copy.userdata);
        else
                copy.exists_done(op, error ? error->code : err.code, error ? error : &err, copy.userdata);
}

static int helm_binary_exists(struct operator_state *op, const char *release, release_exists_done *done,
                              void *userdata, struct ao_error *reterr)
{
        (void) reterr;
        /* Only a yes is trusted: a release just installed may not have reached the watch yet. */
        struct release_revision last;
        if (release_state_last(op, release, &last) && last.revision > 0 &&
            strcmp(last.status, "uninstalled") != 0) {
                done(op, 1, NULL, userdata);
                return 0;
        }
        struct simple_job *s = simple_job_new(release, userdata);
        s->exists_done = done;
        release_helm_ready_check(op, ask_history, s);
        return 0;
}

static void on_listed(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        struct simple_job s = *(struct simple_job *) userdata;
        free(userdata);
        char **names = NULL;
        struct ao_error err = {0};
        if (res->code < 0)
                ao_error_set(&err, res->code, "%s", res->error);
        else
                (void) ao_helm_parse_list(res->output, res->output_len, op->settings->helm_ignore_release,
                                          &names, &err);
        s.list_done(op, names, names ? NULL : &err, s.userdata);
}

static void ask_list(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        struct simple_job *s = userdata;
        struct ao_error err = {0};
        if (!error && helm_run(op, "list", ao_helm_args_list(), NULL, on_listed, s, &err) >= 0)
                return;
        struct simple_job copy = *s;
        free(s);
        copy.list_done(op, NULL, error ? error : &err, copy.userdata);
}

static int helm_binary_list(struct operator_state *op, release_list_done *done, void *userdata,
                            struct ao_error *reterr)
{
        (void) reterr;
        char **stored = release_state_names(op, op->settings->helm_ignore_release);
        if (stored) {
                done(op, stored, NULL, userdata);
                return 0;
        }
        struct simple_job *s = simple_job_new(NULL, userdata);
        s->list_done = done;
        release_helm_ready_check(op, ask_list, s);
        return 0;
}

const struct release_ops release_helm_ops = {
    .name = "helm",
    .upgrade = helm_binary_upgrade,
    .remove = helm_binary_remove,
    .exists = helm_binary_exists,
    .list = helm_binary_list,
};

/* ---- render, manifest (the debug commands) ------------------------------------------------------ */

struct text_job {
        char *values_file; /* owned: removed once helm is done with it */
        bool missing_ok;   /* "release: not found" is an empty answer */
        release_text_done *done;
        void *userdata;
};

static void on_text(struct operator_state *op, const struct ao_helm_result *res, void *userdata)
{
        struct text_job t = *(struct text_job *) userdata;
        free(userdata);
        if (t.values_file)
                (void) unlink(t.values_file);
        free(t.values_file);
        struct ao_error err = {0};
        bool missing = res->code < 0 && t.missing_ok && strstr(res->error, "release: not found");
        if (res->code < 0 && !missing) {
                ao_error_set(&err, res->code, "%s", res->error);
                t.done(op, NULL, 0, &err, t.userdata);
                return;
        }
        t.done(op, missing ? "" : res->output, missing ? 0 : res->output_len, NULL, t.userdata);
}

static void on_helm_checked(struct operator_state *op, const struct ao_error *error, void *userdata)
{
        (void) op;
        (void) error;
        (void) userdata;
}

/*
 * A debug answer needs helm now: when it was not usable, look again (it may have been installed
 * since), and when it still is not, say why. The answer never waits for the version check.
 */
static int helm_usable_now(struct operator_state *op, struct ao_error *reterr)
{
        if (!release_helm_usable(op))
                release_helm_ready_check(op, on_helm_checked, NULL);
        if (!release_helm_usable(op))
                return ao_error_set(reterr, RELEASE_NO_HELM, "helm cannot be used: %s",
                                    op->helm->unusable ? op->helm->unusable
                                                       : "its version is being checked, ask again");
        if (op->helm->post_renderer_missing)
                return ao_error_set(reterr, -ENOENT, "%s", op->helm->post_renderer_missing);
        return 0;
}

int release_helm_render(struct operator_state *op, struct module *mod, const cJSON *values, bool debug,
                        release_text_done *done, void *userdata, struct ao_error *reterr)
{
        if (!op->helm)
                return ao_error_set(reterr, -ENOTSUP, "no helm without a cluster: releases are local files");
        if (helm_usable_now(op, reterr) < 0)
                return reterr->code;
        _cleanup_free_ char *chart = NULL;
        int r = chart_dir(op, mod, &chart, reterr);
        if (r <= 0)
                return r;
        struct text_job *t = ao_xcalloc(1, sizeof(*t));
        *t = (struct text_job){.done = done, .userdata = userdata};
        r = chart_values_file(op, mod, values, &t->values_file, reterr);
        char **args = NULL;
        if (r >= 0) {
                const struct ao_helm_post_renderer *pr = &op->helm->post_renderer;
                args = debug ? ao_helm_args_template_debug(mod->name, chart, t->values_file, pr)
                             : ao_helm_args_template(mod->name, chart, t->values_file, pr);
                r = helm_run(op, "template", args, mod->name, on_text, t, reterr);
        }
        if (r < 0) {
                if (t->values_file)
                        (void) unlink(t->values_file);
                free(t->values_file);
                free(t);
                return r;
        }
        return 1;
}

int release_helm_manifest(struct operator_state *op, const char *release, release_text_done *done,
                          void *userdata, struct ao_error *reterr)
{
        if (!op->helm)
                return ao_error_set(reterr, -ENOTSUP, "no helm without a cluster: releases are local files");
        if (helm_usable_now(op, reterr) < 0)
                return reterr->code;
        struct text_job *t = ao_xcalloc(1, sizeof(*t));
        *t = (struct text_job){.missing_ok = true, .done = done, .userdata = userdata};
        int r = helm_run(op, "get manifest", ao_helm_args_get_manifest(release), release, on_text, t, reterr);
        if (r < 0) {
                free(t);
                return r;
        }
        return 1;
}
