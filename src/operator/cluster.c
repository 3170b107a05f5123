/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster session: the API clients (main, object patcher, release monitor), the informer
 * registry, the jq cache, the discovery table, the ConfigMap config store, the Lease, and the
 * object patches and presence checks in flight (so that shutdown can end them). Everything
 * that uses the cluster in the lifecycle goes through here; the bindings (bindings.c) sit on
 * top of it.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ao/alloc.h"
#include "ao/backoff.h"
#include "ao/binding-context.h"
#include "ao/config-map.h"
#include "ao/informer.h"
#include "ao/jq.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery-fetch.h"
#include "ao/kube-discovery.h"
#include "ao/helm-output.h"
#include "ao/http.h"
#include "ao/kube-presence.h"
#include "ao/kubeconfig.h"
#include "ao/lease.h"
#include "ao/shutdown.h"
#include "ao/log.h"
#include "ao/metrics.h"
#include "ao/object-patch.h"
#include "ao/object-patcher.h"
#include "ao/reactor.h"
#include "internal.h"

#define DISCOVERY_RETRY_USEC   (5ULL * 1000000)
#define DISCOVERY_REFRESH_USEC (10ULL * 1000000) /* an unknown kind refreshes discovery at most this often */

/* An object patch run in progress, so that shutdown can end it. */
struct patch_job {
        struct operator_state *op;
        struct ao_object_patch_run *run;
        cluster_patches_done *done;
        void *userdata;
        struct patch_job *prev, *next;
};

/* An object presence check in progress (release-helm.c), so that shutdown can end it. */
struct presence_job {
        struct operator_state *op;
        struct ao_kube_presence *check;
        cluster_absent_done *done;
        void *userdata;
        struct presence_job *prev, *next;
};

struct kube_state {
        struct ao_kube_config config;
        struct ao_kube_client *client;
        struct ao_kube_client *patcher_client; /* OBJECT_PATCHER_KUBE_CLIENT_* */
        struct ao_kube_client *monitor_client; /* HELM_MONITOR_KUBE_CLIENT_*: release monitors */
        struct ao_lease *lease;                /* with ADDON_OPERATOR_HA */
        char *identity;                        /* this replica's in the Lease; owned */
        bool leader;
        struct patch_job *patch_jobs;
        struct presence_job *presence_jobs;
        struct ao_informers *informers;
        struct ao_informers *monitor_informers; /* on monitor_client: release storage and objects */
        struct ao_jq_cache *jq;
        struct ao_kube_discovery *discovery; /* the current table */
        struct ao_kube_discovery **retired;  /* earlier tables: monitors may still point into them */
        size_t n_retired;
        struct ao_kube_discovery *refreshing; /* being filled */
        struct ao_kube_discovery_fetch *fetch;
        bool discovery_ready;
        uint64_t discovery_usec;
        struct ao_source *discovery_retry;
        void (*on_discovery)(struct operator_state *op); /* a new table is in place (bindings.c) */
        struct config_map_wait *config_map_wait;         /* while cluster_config_map_open() waits */
        cluster_config_handler *on_config_change;
        cluster_config_invalid_handler *on_config_invalid;
        struct ao_metric_family *jq_seconds, *event_seconds, *snapshot_objects, *watch_errors;
        struct ao_metric_family *relists, *expired, *watch_restarts, *recovered_events;
        struct ao_metric_family *request_results, *request_latency, *limiter_latency;
};

/* ---- metrics ---------------------------------------------------------------------------------- */

static void on_watch_error(const char *error_type, void *userdata)
{
        struct operator_state *op = userdata;
        const char *labels[] = {error_type};
        ao_metric_add(op->kube->watch_errors, labels, 1);
}

static void on_informer_stat(const struct ao_informer_identity *who, enum ao_informer_stat stat,
                             enum ao_watch_type event, void *userdata)
{
        struct kube_state *k = ((struct operator_state *) userdata)->kube;
        const char *event_name = event == AO_WATCH_EVENT_ADDED      ? "Added"
                                 : event == AO_WATCH_EVENT_MODIFIED ? "Modified"
                                 : event == AO_WATCH_EVENT_DELETED  ? "Deleted"
                                                                    : "";
        /* A metadata-only informer is "v1/secrets:metadata", beside the full one of the same query. */
        char resource[300];
        snprintf(resource, sizeof(resource), "%s%s", who->resource, who->metadata_only ? ":metadata" : "");
        const char *labels[] = {resource, who->ns, who->label_selector, who->field_selector, event_name};
        struct ao_metric_family *family = stat == AO_INFORMER_RELIST          ? k->relists
                                          : stat == AO_INFORMER_EXPIRED       ? k->expired
                                          : stat == AO_INFORMER_WATCH_RESTART ? k->watch_restarts
                                                                              : k->recovered_events;
        ao_metric_add(family, labels, 1);
}

/* One request of the client named @component ("main", "object_patcher") finished. */
static void observe_request(struct operator_state *op, const char *component, const char *method,
                            const char *path, long status, uint64_t latency_usec, uint64_t wait_usec)
{
        struct kube_state *k = op->kube;
        char code[16];
        snprintf(code, sizeof(code), "%ld", status);
        const char *host = ao_kube_client_server(k->client);
        const char *result_labels[] = {component, status ? code : "<error>", method, host};
        ao_metric_add(k->request_results, result_labels, 1);
        const char *latency_labels[] = {component, method, path};
        ao_metric_observe(k->request_latency, latency_labels, (double) latency_usec / 1e6);
        const char *limiter_labels[] = {method, path};
        ao_metric_observe(k->limiter_latency, limiter_labels, (double) wait_usec / 1e6);
}

static void on_request(const char *method, const char *path, long status, uint64_t latency_usec,
                       uint64_t wait_usec, void *userdata)
{
        observe_request(userdata, "main", method, path, status, latency_usec, wait_usec);
}

static void on_patcher_request(const char *method, const char *path, long status, uint64_t latency_usec,
                               uint64_t wait_usec, void *userdata)
{
        observe_request(userdata, "object_patcher", method, path, status, latency_usec, wait_usec);
}

static void on_monitor_request(const char *method, const char *path, long status, uint64_t latency_usec,
                               uint64_t wait_usec, void *userdata)
{
        observe_request(userdata, "helm_monitor", method, path, status, latency_usec, wait_usec);
}

static struct ao_metric_family *counter(struct operator_state *op, const char *name, const char *help,
                                        const char *const *labels)
{
        return ao_metrics_family(op->metrics, name, AO_METRIC_COUNTER, help, labels, NULL, 0);
}

static void register_metrics(struct operator_state *op)
{
        struct kube_state *k = op->kube;
        static const char *const kube_labels[] = {"module", "hook", "binding", "queue", "kind", NULL};
        static const char *const error_labels[] = {"error_type", NULL};
        static const char *const result_labels[] = {"component", "code", "method", "host", NULL};
        static const char *const latency_labels[] = {"component", "verb", "url", NULL};
        static const char *const limiter_labels[] = {"verb", "url", NULL};
        static const char *const informer_labels[] = {"resource", "namespace", "label_selector",
                                                      "field_selector", NULL};
        static const char *const recovered_labels[] = {"resource",       "namespace",   "label_selector",
                                                       "field_selector", "watch_event", NULL};
        k->jq_seconds = ao_metrics_family(op->metrics, "kube_jq_filter_duration_seconds", AO_METRIC_HISTOGRAM,
                                          "Time spent in jqFilter programs", kube_labels,
                                          ao_metrics_buckets_seconds, ao_metrics_n_buckets_seconds);
        k->event_seconds = ao_metrics_family(op->metrics, "kube_event_duration_seconds", AO_METRIC_HISTOGRAM,
                                             "Time to handle a Kubernetes watch event", kube_labels,
                                             ao_metrics_buckets_seconds, ao_metrics_n_buckets_seconds);
        k->snapshot_objects =
            ao_metrics_family(op->metrics, "kube_snapshot_objects", AO_METRIC_GAUGE,
                              "Objects kept for a kubernetes binding", kube_labels, NULL, 0);
        k->watch_errors = counter(op, "kubernetes_client_watch_errors_total",
                                  "Watch and list failures by kind", error_labels);
        k->relists = counter(op, "kube_informer_relists_total", "Lists after an informer's first one",
                             informer_labels);
        k->expired = counter(op, "kube_informer_expired_total",
                             "410 Gone answers to an informer's watch or list", informer_labels);
        k->watch_restarts = counter(op, "kube_informer_watch_restarts_total",
                                    "Watches started again from their resourceVersion", informer_labels);
        k->recovered_events =
            counter(op, "kube_informer_recovered_events_total",
                    "Events a re-list's difference found that no watch delivered", recovered_labels);
        k->request_results = counter(op, "kubernetes_client_request_result_total",
                                     "Kubernetes API requests by status code", result_labels);
        k->request_latency =
            ao_metrics_family(op->metrics, "kubernetes_client_request_latency_seconds", AO_METRIC_HISTOGRAM,
                              "Kubernetes API request latency", latency_labels, ao_metrics_buckets_seconds,
                              ao_metrics_n_buckets_seconds);
        k->limiter_latency =
            ao_metrics_family(op->metrics, "kubernetes_client_rate_limiter_latency_seconds",
                              AO_METRIC_HISTOGRAM, "Time requests waited for the client rate limiter",
                              limiter_labels, ao_metrics_buckets_seconds, ao_metrics_n_buckets_seconds);
}

/* ---- discovery -------------------------------------------------------------------------------- */

static void start_discovery(struct operator_state *op);

/* A delay of the Go operator's, scaled by ADDON_OPERATOR_RETRY_DELAY_SCALE (tests shorten them all). */
static uint64_t scaled_usec(const struct operator_state *op, uint64_t usec)
{
        return ao_backoff_scale_usec(op->settings->retry_delay_scale, usec);
}

static int on_discovery_retry(struct ao_source *s, uint64_t now, void *userdata)
{
        start_discovery(userdata);
        return 0;
}

static void on_discovery_done(const struct ao_error *error, void *userdata)
{
        struct operator_state *op = userdata;
        struct kube_state *k = op->kube;
        k->fetch = NULL;
        if (error) {
                uint64_t delay = scaled_usec(op, DISCOVERY_RETRY_USEC);
                ao_log(AO_LOG_ERROR, "Kubernetes API at %s: %s; retrying in %.3gs",
                       ao_kube_client_server(k->client), error->msg, (double) delay / 1e6);
                k->refreshing = ao_kube_discovery_free(k->refreshing);
                (void) ao_source_set_time_relative(k->discovery_retry, delay);
                return;
        }
        if (k->discovery) {
                k->retired = ao_xreallocarray(k->retired, k->n_retired + 1, sizeof(*k->retired));
                k->retired[k->n_retired++] = k->discovery;
        }
        k->discovery = k->refreshing;
        k->refreshing = NULL;
        k->discovery_ready = true;
        k->discovery_usec = ao_clock_now_usec();
        ao_log(AO_LOG_INFO, "Kubernetes API at %s: %zu resources discovered",
               ao_kube_client_server(k->client), ao_kube_discovery_count(k->discovery));
        if (k->on_discovery)
                k->on_discovery(op);
}

static void start_discovery(struct operator_state *op)
{
        struct kube_state *k = op->kube;
        if (k->fetch)
                return;
        k->refreshing = ao_kube_discovery_new();
        struct ao_error err = {0};
        if (ao_kube_discovery_fetch(k->client, k->refreshing, on_discovery_done, op, &k->fetch, &err) < 0)
                on_discovery_done(&err, op);
}

/* ---- what the bindings use -------------------------------------------------------------------- */

void cluster_on_discovery(struct operator_state *op, void (*handler)(struct operator_state *op))
{
        op->kube->on_discovery = handler;
}

bool cluster_discovery_ready(const struct operator_state *op)
{
        return op->kube->discovery_ready;
}

bool cluster_refresh_discovery(struct operator_state *op)
{
        struct kube_state *k = op->kube;
        if (!k->discovery_ready || ao_clock_now_usec() - k->discovery_usec <= DISCOVERY_REFRESH_USEC)
                return false;
        k->discovery_ready = false;
        start_discovery(op);
        return true;
}

struct ao_kube_discovery *cluster_discovery(struct operator_state *op)
{
        return op->kube->discovery;
}

struct ao_informers *cluster_informers(struct operator_state *op)
{
        return op->kube->informers;
}

struct ao_informers *cluster_monitor_informers(struct operator_state *op)
{
        return op->kube->monitor_informers;
}

struct ao_kube_client *cluster_monitor_client(struct operator_state *op)
{
        return op->kube->monitor_client;
}

struct ao_jq_cache *cluster_jq(struct operator_state *op)
{
        return op->kube->jq;
}

struct ao_metric_family *cluster_binding_family(struct operator_state *op, int which)
{
        struct kube_state *k = op->kube;
        return which == CLUSTER_JQ_SECONDS      ? k->jq_seconds
               : which == CLUSTER_EVENT_SECONDS ? k->event_seconds
                                                : k->snapshot_objects;
}

/* ---- the ConfigMap config store ---------------------------------------------------------------- */

/* Run the loop until @done is set (the operator is not running yet: nothing else waits on it). */
static int run_until(struct operator_state *op, const bool *done, struct ao_error *reterr)
{
        while (!*done) {
                if (ao_reactor_exiting(op->reactor))
                        return ao_error_set(reterr, -ECANCELED,
                                            "stopped while waiting for the Kubernetes API");
                int r = ao_reactor_run_once(op->reactor, AO_USEC_INFINITY);
                if (r < 0)
                        return ao_error_set(reterr, r, "event loop: %s", strerror(-r));
        }
        return 0;
}

struct config_map_wait {
        bool ready;
        struct ao_error error;
};

static void on_config_map_ready(const struct ao_error *error, void *userdata)
{
        struct operator_state *op = userdata;
        struct config_map_wait *w = op->kube->config_map_wait;
        if (error)
                w->error = *error;
        w->ready = true;
}

static void on_config_map_change(const cJSON *data, void *userdata)
{
        struct operator_state *op = userdata;
        op->kube->on_config_change(data, op);
}

static void on_config_map_invalid(const struct ao_error *error, void *userdata)
{
        struct operator_state *op = userdata;
        op->kube->on_config_invalid(error, op);
}

const char *cluster_config_namespace(const struct operator_state *op)
{
        if (op->settings->namespace_[0])
                return op->settings->namespace_;
        if (op->kube && op->kube->config.namespace_)
                return op->kube->config.namespace_;
        return "default";
}

int cluster_config_map_open(struct operator_state *op, cluster_config_handler *on_change,
                            cluster_config_invalid_handler *on_invalid, struct ao_error *reterr)
{
        struct kube_state *k = op->kube;
        int r = run_until(op, &k->discovery_ready, reterr);
        if (r < 0)
                return r;
        struct ao_error err = {0};
        const struct ao_kube_resource *res = ao_kube_discovery_find(k->discovery, "v1", "ConfigMap", &err);
        if (!res)
                return ao_error_set(reterr, -ENOENT, "the API server has no ConfigMaps: %s", err.msg);
        struct config_map_wait wait = {0};
        k->config_map_wait = &wait;
        k->on_config_change = on_change;
        k->on_config_invalid = on_invalid;
        struct ao_config_map_options options = {
            .reactor = op->reactor,
            .client = k->client,
            .informers = k->informers,
            .resource = res,
            .namespace_ = cluster_config_namespace(op),
            .name = op->settings->config_map,
            .on_ready = on_config_map_ready,
            .on_change = on_config_map_change,
            .on_invalid = on_config_map_invalid,
            .userdata = op,
            .retry_scale = op->settings->retry_delay_scale,
        };
        r = ao_config_map_open(&options, &op->config_map, reterr);
        if (r >= 0)
                r = run_until(op, &wait.ready, reterr);
        k->config_map_wait = NULL;
        if (r >= 0 && wait.error.code)
                r = ao_error_set(reterr, wait.error.code, "%s", wait.error.msg);
        return r;
}

/* ---- leader election ------------------------------------------------------------------------------ */

#define LEASE_NAME          "addon-operator-leader-election"
#define LEASE_DURATION_USEC (35ULL * 1000000)
#define LEASE_RENEW_USEC    (30ULL * 1000000)
#define LEASE_RETRY_USEC    (10ULL * 1000000)

static void on_leader(void *userdata)
{
        struct operator_state *op = userdata;
        op->kube->leader = true;
}

/* As the Go operator does on losing the lease: stop (hooks finish or are killed, then exit 0). */
static void on_leadership_lost(void *userdata)
{
        struct operator_state *op = userdata;
        op->kube->leader = false;
        ao_log(AO_LOG_ERROR, "leader election: not the leader any more, stopping");
        ao_shutdown_begin(op->shutdown, 0);
}

/*
 * As a follower, /readyz answers with the leader's readiness: tell the HTTP server where the
 * leader is whenever the Lease shows another holder.
 */
static void on_holder(const char *holder, void *userdata)
{
        struct operator_state *op = userdata;
        struct kube_state *k = op->kube;
        if (k->leader || !op->http || strcmp(holder, k->identity) == 0)
                return;
        char address[INET6_ADDRSTRLEN];
        bool known = leader_identity_address(holder, address);
        /* The wildcard or our own address would have this replica ask itself. */
        if (known && (strcmp(address, "0.0.0.0") == 0 || strcmp(address, "::") == 0 ||
                      strcmp(address, op->settings->listen_address) == 0))
                known = false;
        if (*holder && !known)
                ao_log(AO_LOG_WARN,
                       "leader election: the leader's identity '%s' names no address this replica can "
                       "ask; /readyz answers 500 while it leads (set ADDON_OPERATOR_LISTEN_ADDRESS to "
                       "each pod's IP)",
                       holder);
        else if (*holder)
                ao_log(AO_LOG_INFO, "leader election: %s leads; /readyz asks its /readyz at %s", holder,
                       address);
        ao_http_follow_leader(op->http, holder, known ? address : NULL);
}

int cluster_wait_leadership(struct operator_state *op, struct ao_error *reterr)
{
        struct kube_state *k = op->kube;
        if (!op->settings->pod_name[0])
                return ao_error_set(reterr, -EINVAL,
                                    "ADDON_OPERATOR_HA needs ADDON_OPERATOR_POD (this pod's name)");
        int r = run_until(op, &k->discovery_ready, reterr);
        if (r < 0)
                return r;
        struct ao_error err = {0};
        const struct ao_kube_resource *res =
            ao_kube_discovery_find(k->discovery, "coordination.k8s.io/v1", "Lease", &err);
        if (!res)
                return ao_error_set(reterr, -ENOENT, "leader election: %s", err.msg);
        k->identity = leader_identity(op->settings->pod_name, op->settings->listen_address,
                                      cluster_config_namespace(op));
        struct ao_lease_options options = {
            .reactor = op->reactor,
            .client = k->client,
            .resource = res,
            .namespace_ = cluster_config_namespace(op),
            .name = LEASE_NAME,
            .identity = k->identity,
            .lease_duration_usec = scaled_usec(op, LEASE_DURATION_USEC),
            .renew_deadline_usec = scaled_usec(op, LEASE_RENEW_USEC),
            .retry_period_usec = scaled_usec(op, LEASE_RETRY_USEC),
            .on_acquired = on_leader,
            .on_lost = on_leadership_lost,
            .on_holder = on_holder,
            .userdata = op,
        };
        r = ao_lease_start(&options, &k->lease, reterr);
        if (r >= 0) {
                ao_log(AO_LOG_INFO, "leader election: %s waits for Lease %s/%s", k->identity,
                       options.namespace_, LEASE_NAME);
                r = run_until(op, &k->leader, reterr);
        }
        return r;
}

/* Let requests still in flight (the Lease release) finish, for at most a second or two. */
static void drain_requests(struct operator_state *op)
{
        struct kube_state *k = op->kube;
        uint64_t deadline = ao_clock_now_usec() + 2 * 1000000ULL;
        while (ao_kube_client_active(k->client) > 0 && ao_clock_now_usec() < deadline)
                if (ao_reactor_run_once(op->reactor, 100000) < 0)
                        break;
}

/* ---- object patches ----------------------------------------------------------------------------- */

static void patch_job_unlink(struct kube_state *k, struct patch_job *j)
{
        if (j->prev)
                j->prev->next = j->next;
        else
                k->patch_jobs = j->next;
        if (j->next)
                j->next->prev = j->prev;
}

static void on_patch_job_done(const struct ao_error *error, void *userdata)
{
        struct patch_job *j = userdata;
        patch_job_unlink(j->op->kube, j);
        cluster_patches_done *done = j->done;
        void *ud = j->userdata;
        free(j);
        done(error, ud);
}

static bool creates(enum ao_object_patch_type t)
{
        return t == AO_OBJECT_PATCH_CREATE || t == AO_OBJECT_PATCH_CREATE_OR_UPDATE ||
               t == AO_OBJECT_PATCH_CREATE_IF_NOT_EXISTS;
}

static bool names_kind(const cJSON *names, const char *field, const char *kind)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(names, field);
        return cJSON_IsString(v) && strcasecmp(v->valuestring, kind) == 0;
}

/*
 * Whether an earlier operation of the batch creates the CustomResourceDefinition of @kind: its
 * objects cannot be in discovery yet, and refusing them would refuse the batch forever.
 */
static bool defined_earlier(const struct ao_object_patch_ops *ops, size_t before, const char *kind)
{
        for (size_t i = 0; i < before; i++) {
                const struct ao_object_patch_op *o = &ops->items[i];
                if (!creates(o->type) || !o->kind || strcmp(o->kind, "CustomResourceDefinition") != 0)
                        continue;
                const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o->object, "spec");
                const cJSON *names = cJSON_GetObjectItemCaseSensitive(spec, "names");
                if (names_kind(names, "kind", kind) || names_kind(names, "plural", kind) ||
                    names_kind(names, "singular", kind))
                        return true;
        }
        return false;
}

int cluster_resolve_object_patches(struct operator_state *op, const struct ao_object_patch_ops *ops,
                                   struct ao_error *reterr)
{
        struct kube_state *k = op->kube;
        if (!k->discovery_ready)
                return ao_error_set(reterr, -EAGAIN,
                                    "object patches: the Kubernetes API is not discovered yet");
        for (size_t i = 0; i < ops->n; i++) {
                const struct ao_object_patch_op *o = &ops->items[i];
                struct ao_error err = {0};
                if (ao_kube_discovery_find(k->discovery, o->api_version, o->kind, &err))
                        continue;
                /* A kind installed since the table was read is found by the retry. */
                bool refreshing = cluster_refresh_discovery(op);
                if (refreshing)
                        ao_log(AO_LOG_INFO, "%s; refreshing discovery", err.msg);
                if (defined_earlier(ops, i, o->kind))
                        continue;
                _cleanup_free_ char *what = ao_object_patch_op_describe(o);
                return ao_error_set(reterr, -ENOENT, "object patches: %s: %s", what, err.msg);
        }
        return 0;
}

int cluster_apply_object_patches(struct operator_state *op, struct ao_object_patch_ops *ops,
                                 cluster_patches_done *done, void *userdata, struct ao_error *reterr)
{
        struct kube_state *k = op->kube;
        if (!k->discovery_ready) {
                ao_object_patch_ops_done(ops);
                return ao_error_set(reterr, -EAGAIN,
                                    "object patches: the Kubernetes API is not discovered yet");
        }
        struct patch_job *j = ao_xcalloc(1, sizeof(*j));
        *j = (struct patch_job){.op = op, .done = done, .userdata = userdata, .next = k->patch_jobs};
        if (k->patch_jobs)
                k->patch_jobs->prev = j;
        k->patch_jobs = j;
        struct ao_object_patcher_env env = {.reactor = op->reactor,
                                            .client = k->patcher_client,
                                            .discovery = k->discovery,
                                            .jq = k->jq,
                                            .retry_scale = op->settings->retry_delay_scale};
        int r = ao_object_patch_apply(&env, ops, on_patch_job_done, j, &j->run, reterr);
        if (r < 0) {
                patch_job_unlink(k, j);
                free(j);
        }
        return r;
}

static void cancel_patch_jobs(struct kube_state *k)
{
        while (k->patch_jobs) {
                struct patch_job *j = k->patch_jobs;
                patch_job_unlink(k, j);
                ao_object_patch_run_cancel(j->run);
                struct ao_error err = {0};
                ao_error_set(&err, -ECANCELED, "stopped at shutdown before every operation was applied");
                j->done(&err, j->userdata);
                free(j);
        }
}

/* ---- release objects --------------------------------------------------------------------------- */

static void presence_job_unlink(struct kube_state *k, struct presence_job *j)
{
        if (j->prev)
                j->prev->next = j->next;
        else
                k->presence_jobs = j->next;
        if (j->next)
                j->next->prev = j->prev;
}

static void on_presence_checked(const struct ao_kube_object_ref *absent, const struct ao_error *error,
                                void *userdata)
{
        struct presence_job *j = userdata;
        presence_job_unlink(j->op->kube, j);
        _cleanup_free_ char *what =
            absent ? ao_xasprintf("%s %s%s%s", absent->kind, absent->namespace ? absent->namespace : "",
                                  absent->namespace ? "/" : "", absent->name)
                   : NULL;
        struct operator_state *op = j->op;
        cluster_absent_done *done = j->done;
        void *ud = j->userdata;
        free(j);
        done(op, what, error, ud);
}

int cluster_find_absent(struct operator_state *op, const struct ao_helm_manifest *m, const char *default_ns,
                        bool monitor, cluster_absent_done *done, void *userdata, struct ao_error *reterr)
{
        struct kube_state *k = op->kube;
        if (!k->discovery_ready)
                return ao_error_set(reterr, -EAGAIN, "the Kubernetes API is not discovered yet");
        struct ao_kube_object_ref *refs = ao_xcalloc(m->n + 1, sizeof(*refs));
        for (size_t i = 0; i < m->n; i++) {
                const struct ao_helm_object *o = &m->objects[i];
                const char *ns =
                    o->namespace ? o->namespace : (default_ns && default_ns[0] ? default_ns : NULL);
                refs[i] = (struct ao_kube_object_ref){o->api_version, o->kind, ns, o->name};
        }
        struct presence_job *j = ao_xcalloc(1, sizeof(*j));
        *j = (struct presence_job){.op = op, .done = done, .userdata = userdata, .next = k->presence_jobs};
        int r = ao_kube_find_absent(op->reactor, monitor ? k->monitor_client : k->client, k->discovery, refs,
                                    m->n, 0, on_presence_checked, j, &j->check, reterr);
        free(refs);
        if (r < 0) {
                free(j);
                return r;
        }
        if (k->presence_jobs)
                k->presence_jobs->prev = j;
        k->presence_jobs = j;
        return 0;
}

static void cancel_presence_jobs(struct kube_state *k)
{
        while (k->presence_jobs) {
                struct presence_job *j = k->presence_jobs;
                presence_job_unlink(k, j);
                ao_kube_presence_cancel(j->check);
                struct ao_error err = {0};
                ao_error_set(&err, -ECANCELED, "stopped at shutdown");
                j->done(j->op, NULL, &err, j->userdata);
                free(j);
        }
}

/* ---- start-up and shutdown -------------------------------------------------------------------- */

int cluster_start(struct operator_state *op, struct ao_error *reterr)
{
        const struct ao_settings *s = op->settings;
        struct ao_kube_config_options where = {
            .kube_config = s->kube_config,
            .kube_context = s->kube_context,
            .kube_server = s->kube_server,
            .kubeconfig_env = getenv("KUBECONFIG"),
            .home = getenv("HOME"),
            .service_host = getenv("KUBERNETES_SERVICE_HOST"),
            .service_port = getenv("KUBERNETES_SERVICE_PORT"),
        };
        struct ao_kube_config config = {0};
        int r = ao_kube_config_load(&where, &config, reterr);
        if (r == -ENOENT) {
                ao_log(AO_LOG_INFO, "no Kubernetes cluster configured: kubernetes bindings are skipped");
                return 0;
        }
        if (r < 0)
                return r;
        struct kube_state *k = op->kube = ao_xcalloc(1, sizeof(*k));
        k->config = config;
        register_metrics(op);
        struct ao_kube_client_options options = {.qps = s->kube_client_qps,
                                                 .burst = s->kube_client_burst,
                                                 .observe = on_request,
                                                 .observe_userdata = op};
        r = ao_kube_client_new(op->reactor, &k->config, &options, &k->client, reterr);
        if (r < 0)
                return r;
        struct ao_kube_client_options patcher_options = {.qps = s->object_patcher_qps,
                                                         .burst = s->object_patcher_burst,
                                                         .timeout_usec = s->object_patcher_timeout_usec,
                                                         .observe = on_patcher_request,
                                                         .observe_userdata = op};
        r = ao_kube_client_new(op->reactor, &k->config, &patcher_options, &k->patcher_client, reterr);
        if (r < 0)
                return r;
        struct ao_kube_client_options monitor_options = {.qps = s->helm_monitor_qps,
                                                         .burst = s->helm_monitor_burst,
                                                         .observe = on_monitor_request,
                                                         .observe_userdata = op};
        r = ao_kube_client_new(op->reactor, &k->config, &monitor_options, &k->monitor_client, reterr);
        if (r < 0)
                return r;
        struct ao_informers_options inf_options = {.on_error = on_watch_error,
                                                   .on_stat = on_informer_stat,
                                                   .userdata = op,
                                                   .retry_scale = s->retry_delay_scale};
        k->informers = ao_informers_new(op->reactor, k->client, &inf_options);
        k->monitor_informers = ao_informers_new(op->reactor, k->monitor_client, &inf_options);
        k->jq = ao_jq_cache_new();
        r = ao_reactor_add_time(op->reactor, &k->discovery_retry, 0, on_discovery_retry, op);
        if (r < 0)
                return ao_error_set(reterr, r, "cannot create the discovery timer");
        (void) ao_source_set_enabled(k->discovery_retry, AO_SOURCE_OFF);
        ao_log(AO_LOG_INFO, "Kubernetes API at %s (%s)", ao_kube_client_server(k->client), k->config.source);
        start_discovery(op);
        return 0;
}

void cluster_done(struct operator_state *op)
{
        struct kube_state *k = op->kube;
        if (!k)
                return;
        cancel_patch_jobs(k);
        cancel_presence_jobs(k);
        if (k->lease) {
                k->lease = ao_lease_free(k->lease);
                drain_requests(op);
        }
        op->config_map = ao_config_map_free(op->config_map);
        ao_kube_discovery_fetch_cancel(k->fetch);
        ao_informers_free(k->informers);
        ao_informers_free(k->monitor_informers);
        ao_kube_client_free(k->client);
        ao_kube_client_free(k->patcher_client);
        ao_kube_client_free(k->monitor_client);
        ao_jq_cache_free(k->jq);
        ao_kube_discovery_free(k->discovery);
        ao_kube_discovery_free(k->refreshing);
        for (size_t i = 0; i < k->n_retired; i++)
                ao_kube_discovery_free(k->retired[i]);
        free(k->retired);
        ao_source_free(k->discovery_retry);
        ao_kube_config_done(&k->config);
        free(k->identity);
        free(k);
        op->kube = NULL;
}
