/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object patcher (include/ao/object-patcher.h): one run walks its operations in order. Each
 * operation is a small chain of requests whose callbacks decide the next step; when an
 * operation ends, its error (if any) is appended to the run's and the next one starts.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/backoff.h"
#include "ao/jq.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/kube-watch.h"
#include "ao/object-patch.h"
#include "ao/object-patcher.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

#define CONFLICT_RETRIES  5
#define DELETE_POLL_USEC  1000000ULL
#define DELETE_WAIT_POLLS 20
#define MESSAGE_MAX       (AO_ERROR_MSG_MAX + 32)

struct ao_object_patch_run {
        struct ao_object_patcher_env env;
        struct ao_object_patch_ops ops;
        size_t next; /* the operation running */
        const struct ao_kube_resource *res;
        char *object_path; /* the current operation's object (subresource included) */
        char *plain_path;  /* without the subresource */
        unsigned attempts; /* conflict retries, Delete polls */
        struct ao_kube_request *request;
        struct ao_source *timer; /* Delete polls and the final report */
        struct ao_strbuf errors;
        size_t n_errors;
        ao_object_patch_done_handler *done;
        void *userdata;
        bool finished;
};

static void start_op(struct ao_object_patch_run *run);

static struct ao_object_patch_op *current(struct ao_object_patch_run *run)
{
        return &run->ops.items[run->next];
}

/* ---- ending operations and the run ------------------------------------------------------------- */

static void run_free(struct ao_object_patch_run *run)
{
        ao_kube_request_cancel(run->request);
        ao_source_free(run->timer);
        ao_object_patch_ops_done(&run->ops);
        ao_strbuf_done(&run->errors);
        free(run->object_path);
        free(run->plain_path);
        free(run);
}

static int on_report(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        struct ao_error err = {0};
        if (run->n_errors)
                ao_error_set(&err, -EIO, "%s", ao_strbuf_str(&run->errors));
        ao_object_patch_done_handler *done = run->done;
        void *userdata_done = run->userdata;
        run->timer = ao_source_free(run->timer); /* its own callback: freed after this iteration */
        run_free(run);
        done(err.code ? &err : NULL, userdata_done);
        return 0;
}

/* Report from the loop, never from inside ao_object_patch_apply(). */
static void finish_run(struct ao_object_patch_run *run)
{
        run->finished = true;
        run->timer = ao_source_free(run->timer);
        if (ao_reactor_add_time(run->env.reactor, &run->timer, 0, on_report, run) < 0)
                abort(); /* out of memory for a timer: as the ao_x* allocators do */
}

/* The current operation is over (@error NULL: it succeeded): record, then go on. */
static void op_done(struct ao_object_patch_run *run, const char *error)
{
        if (error) {
                char *what = ao_object_patch_op_describe(current(run));
                if (run->n_errors++)
                        ao_strbuf_append(&run->errors, "; ");
                ao_strbuf_appendf(&run->errors, "%s: %s", what, error);
                free(what);
        }
        free(run->object_path);
        free(run->plain_path);
        run->object_path = run->plain_path = NULL;
        run->attempts = 0;
        run->next++;
        start_op(run);
}

/* "HTTP 422: <the Status message>" or the transport error. */
static void op_failed(struct ao_object_patch_run *run, const struct ao_kube_response *resp)
{
        char msg[MESSAGE_MAX];
        if (resp->status == 0) {
                snprintf(msg, sizeof(msg), "%s", resp->error.msg);
        } else {
                cJSON *body = resp->body ? cJSON_ParseWithLength(resp->body, resp->len) : NULL;
                struct ao_kube_status st = {0};
                if (body && ao_kube_status_from_json(body, &st) >= 0 && st.message && *st.message)
                        snprintf(msg, sizeof(msg), "HTTP %ld: %s", resp->status, st.message);
                else
                        snprintf(msg, sizeof(msg), "HTTP %ld", resp->status);
                cJSON_Delete(body);
        }
        op_done(run, msg);
}

static bool success(long status)
{
        return status >= 200 && status < 300;
}

/* ---- requests ---------------------------------------------------------------------------------- */

static void send(struct ao_object_patch_run *run, const char *method, const char *path,
                 const char *content_type, const cJSON *body, ao_kube_done_handler *cb)
{
        char *text = body ? cJSON_PrintUnformatted(body) : NULL;
        struct ao_error err = {0};
        if (ao_kube_request(run->env.client, method, path, content_type, text, text ? strlen(text) : 0, cb,
                            run, &run->request, &err) < 0) {
                run->request = NULL;
                free(text);
                op_done(run, err.msg);
                return;
        }
        free(text);
}

/* ---- Create, CreateIfNotExists, CreateOrUpdate ----------------------------------------------------- */

static void on_put_for_update(const struct ao_kube_response *resp, void *userdata);

static void on_get_for_update(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        run->request = NULL;
        if (resp->status != 200) {
                op_failed(run, resp);
                return;
        }
        cJSON *live = cJSON_ParseWithLength(resp->body, resp->len);
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(live, "metadata"),
                                                           "resourceVersion");
        cJSON *object = cJSON_Duplicate(current(run)->object, true);
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(object, "metadata");
        if (meta && cJSON_IsString(rv)) {
                cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
                cJSON_AddStringToObject(meta, "resourceVersion", rv->valuestring);
        }
        send(run, "PUT", run->plain_path, "application/json", object, on_put_for_update);
        cJSON_Delete(object);
        cJSON_Delete(live);
}

static void on_put_for_update(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        run->request = NULL;
        if (resp->status == 409 && ++run->attempts < CONFLICT_RETRIES) {
                send(run, "GET", run->plain_path, NULL, NULL, on_get_for_update);
                return;
        }
        if (success(resp->status))
                op_done(run, NULL);
        else
                op_failed(run, resp);
}

static void on_created(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        struct ao_object_patch_op *op = current(run);
        run->request = NULL;
        if (success(resp->status)) {
                op_done(run, NULL);
        } else if (resp->status == 409 && op->type == AO_OBJECT_PATCH_CREATE_IF_NOT_EXISTS) {
                op_done(run, NULL);
        } else if (resp->status == 409 && op->type == AO_OBJECT_PATCH_CREATE_OR_UPDATE) {
                send(run, "GET", run->plain_path, NULL, NULL, on_get_for_update);
        } else {
                op_failed(run, resp);
        }
}

static void start_create(struct ao_object_patch_run *run)
{
        const struct ao_object_patch_op *op = current(run);
        char *collection = ao_kube_resource_path(run->res, op->namespace_, NULL);
        send(run, "POST", collection, "application/json", op->object, on_created);
        free(collection);
}

/* ---- deletes ------------------------------------------------------------------------------------- */

static void on_delete_poll(const struct ao_kube_response *resp, void *userdata);

static int on_poll_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        send(run, "GET", run->plain_path, NULL, NULL, on_delete_poll);
        return 0;
}

static void poll_later(struct ao_object_patch_run *run)
{
        uint64_t wait = ao_backoff_scale_usec(run->env.retry_scale, DELETE_POLL_USEC);
        if (!run->timer)
                (void) ao_reactor_add_time_relative(run->env.reactor, &run->timer, wait, on_poll_timer, run);
        else
                (void) ao_source_set_time_relative(run->timer, wait);
}

static void on_delete_poll(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        run->request = NULL;
        if (resp->status == 404) {
                op_done(run, NULL);
        } else if (resp->status == 200 && ++run->attempts < DELETE_WAIT_POLLS) {
                poll_later(run);
        } else if (resp->status == 200) {
                op_done(run, "still there 20 s after the delete");
        } else {
                op_failed(run, resp);
        }
}

static void on_deleted(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        run->request = NULL;
        if (resp->status == 404) {
                op_done(run, NULL);
        } else if (!success(resp->status)) {
                op_failed(run, resp);
        } else if (current(run)->type == AO_OBJECT_PATCH_DELETE) {
                /* Foreground: the object goes once its dependents are gone. Wait for that. */
                send(run, "GET", run->plain_path, NULL, NULL, on_delete_poll);
        } else {
                op_done(run, NULL);
        }
}

static void start_delete(struct ao_object_patch_run *run)
{
        const char *policy = current(run)->type == AO_OBJECT_PATCH_DELETE                 ? "Foreground"
                             : current(run)->type == AO_OBJECT_PATCH_DELETE_IN_BACKGROUND ? "Background"
                                                                                          : "Orphan";
        char *path = ao_xasprintf("%s?propagationPolicy=%s", run->plain_path, policy);
        send(run, "DELETE", path, NULL, NULL, on_deleted);
        free(path);
}

/* ---- patches ------------------------------------------------------------------------------------- */

static void on_patched(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        run->request = NULL;
        if (success(resp->status) || (resp->status == 404 && current(run)->ignore_missing))
                op_done(run, NULL);
        else
                op_failed(run, resp);
}

static void on_jq_put(const struct ao_kube_response *resp, void *userdata);

static void on_jq_get(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        struct ao_object_patch_op *op = current(run);
        run->request = NULL;
        if (resp->status == 404 && op->ignore_missing) {
                op_done(run, NULL);
                return;
        }
        if (resp->status != 200) {
                op_failed(run, resp);
                return;
        }
        cJSON *live = cJSON_ParseWithLength(resp->body, resp->len), *result = NULL;
        struct ao_error err = {0};
        if (!live || ao_jq_apply(run->env.jq, op->jq_filter, live, &result, NULL, &err) < 0) {
                cJSON_Delete(live);
                op_done(run, err.code ? err.msg : "the object read back is not JSON");
                return;
        }
        char *before = ao_json_canonical(live), *after = ao_json_canonical(result);
        bool same = strcmp(before, after) == 0;
        free(before);
        free(after);
        if (same)
                op_done(run, NULL);
        else if (!cJSON_IsObject(result))
                op_done(run, "the jqFilter did not produce an object");
        else
                send(run, "PUT", run->object_path, "application/json", result, on_jq_put);
        cJSON_Delete(result);
        cJSON_Delete(live);
}

static void on_jq_put(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_object_patch_run *run = userdata;
        run->request = NULL;
        if (resp->status == 409 && ++run->attempts < CONFLICT_RETRIES)
                send(run, "GET", run->object_path, NULL, NULL, on_jq_get);
        else if (success(resp->status))
                op_done(run, NULL);
        else
                op_failed(run, resp);
}

/* ---- dispatch ------------------------------------------------------------------------------------ */

static bool is_create(enum ao_object_patch_type t)
{
        return t == AO_OBJECT_PATCH_CREATE || t == AO_OBJECT_PATCH_CREATE_OR_UPDATE ||
               t == AO_OBJECT_PATCH_CREATE_IF_NOT_EXISTS;
}

static void start_op(struct ao_object_patch_run *run)
{
        if (run->next >= run->ops.n) {
                finish_run(run);
                return;
        }
        struct ao_object_patch_op *op = current(run);
        struct ao_error err = {0};
        run->res = ao_kube_discovery_find(run->env.discovery, op->api_version, op->kind, &err);
        if (!run->res) {
                op_done(run, err.msg);
                return;
        }
        run->plain_path = ao_kube_resource_path(run->res, op->namespace_, op->name);
        run->object_path = op->subresource ? ao_xasprintf("%s/%s", run->plain_path, op->subresource)
                                           : ao_xstrdup(run->plain_path);
        if (is_create(op->type)) {
                start_create(run);
        } else if (op->type == AO_OBJECT_PATCH_DELETE || op->type == AO_OBJECT_PATCH_DELETE_IN_BACKGROUND ||
                   op->type == AO_OBJECT_PATCH_DELETE_NON_CASCADING) {
                start_delete(run);
        } else if (op->type == AO_OBJECT_PATCH_JQ_PATCH) {
                send(run, "GET", run->object_path, NULL, NULL, on_jq_get);
        } else {
                bool merge = op->type == AO_OBJECT_PATCH_MERGE_PATCH;
                send(run, "PATCH", run->object_path,
                     merge ? "application/merge-patch+json" : "application/json-patch+json", op->patch,
                     on_patched);
        }
}

int ao_object_patch_apply(const struct ao_object_patcher_env *env, struct ao_object_patch_ops *ops,
                          ao_object_patch_done_handler *done, void *userdata,
                          struct ao_object_patch_run **ret, struct ao_error *reterr)
{
        (void) reterr;
        struct ao_object_patch_run *run = ao_xcalloc(1, sizeof(*run));
        run->env = *env;
        run->ops = *ops;
        *ops = (struct ao_object_patch_ops){0};
        run->done = done;
        run->userdata = userdata;
        if (ret)
                *ret = run;
        start_op(run);
        return 0;
}

void ao_object_patch_run_cancel(struct ao_object_patch_run *run)
{
        if (run)
                run_free(run);
}
