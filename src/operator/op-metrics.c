/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's own metrics: every one the documentation lists, under its
 * documented name and, where the Go operator's code exports another name
 * (global_hook_errors_total for global_hook_run_errors_total, ...), under
 * that name too, so existing dashboards and alerts keep working. Hook
 * metrics (METRICS_PATH) go to their own registry, served on /metrics/hooks.
 */
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/metric-ops.h"
#include "ao/metrics.h"
#include "ao/proc.h"
#include "ao/queue.h"
#include "ao/reactor.h"
#include "internal.h"

#define LIVE_TICK_USEC (10 * AO_USEC_PER_SEC)

/* A hook's series: the same labels for every family of one hook kind. */
enum hook_family {
        HOOK_RUN_SECONDS,
        HOOK_USER_CPU,
        HOOK_SYS_CPU,
        HOOK_MAX_RSS,
        HOOK_SUCCESS,
        HOOK_ERRORS,
        HOOK_ALLOWED_ERRORS,
        HOOK_SUCCESS_PEER,
        HOOK_ERRORS_PEER,
        HOOK_ALLOWED_ERRORS_PEER,
        _HOOK_FAMILY_MAX,
};

struct operator_metrics {
        struct ao_metric_family *hook[2][_HOOK_FAMILY_MAX]; /* [global, module] */
        struct ao_metric_family *task_wait;
        struct ao_metric_family *queue_length;
        struct ao_metric_family *live_ticks;
        struct ao_metric_family *discover_errors, *discover_errors_peer;
        struct ao_metric_family *module_run_seconds, *module_run_errors, *module_delete_errors;
        struct ao_metric_family *module_helm_seconds;
        struct ao_metric_family *helm_operation_seconds;
        struct ao_metric_family *helm_redeployed;  /* modules_helm_release_redeployed_total */
        struct ao_metric_family *absent_resources; /* modules_absent_resources_total */
        struct ao_metric_family *convergence_seconds, *convergence_total;
        struct ao_metric_family *binding_count;
        struct ao_metric_family *config_errors;
        struct ao_metric_family *parallel_runs;
        struct ao_metric_family *module_info;        /* mm_module_info */
        struct ao_metric_family *module_maintenance; /* mm_module_maintenance */
        struct ao_metric_family *module_enabled[2];  /* mm_module_enabled and d8_telemetry_module_enabled */
        struct ao_metric_family *queue_head;         /* tasks_queue_head_info */
        struct ao_metric_family *monitor_missing;    /* binding_monitor_missing_total */
        struct ao_source *ticks;
};

static const char *const global_hook_labels[] = {"hook", "binding", "activation", "queue", NULL};
static const char *const module_hook_labels[] = {"module", "hook", "binding", "activation", "queue", NULL};

static const struct {
        const char *name; /* after "global_" or "module_" */
        enum ao_metric_type type;
        const char *help;
} hook_families[_HOOK_FAMILY_MAX] = {
    [HOOK_RUN_SECONDS] = {"hook_run_seconds", AO_METRIC_HISTOGRAM, "Hook run time"},
    [HOOK_USER_CPU] = {"hook_run_user_cpu_seconds", AO_METRIC_HISTOGRAM, "Hook user CPU time"},
    [HOOK_SYS_CPU] = {"hook_run_sys_cpu_seconds", AO_METRIC_HISTOGRAM, "Hook system CPU time"},
    [HOOK_MAX_RSS] = {"hook_run_max_rss_bytes", AO_METRIC_GAUGE, "Hook maximum resident set size"},
    [HOOK_SUCCESS] = {"hook_run_success_total", AO_METRIC_COUNTER, "Successful hook runs"},
    [HOOK_ERRORS] = {"hook_run_errors_total", AO_METRIC_COUNTER, "Failed hook runs (allowFailure off)"},
    [HOOK_ALLOWED_ERRORS] = {"hook_run_allowed_errors_total", AO_METRIC_COUNTER,
                             "Failed hook runs with allowFailure"},
    [HOOK_SUCCESS_PEER] = {"hook_success_total", AO_METRIC_COUNTER,
                           "Successful hook runs (Go operator name)"},
    [HOOK_ERRORS_PEER] = {"hook_errors_total", AO_METRIC_COUNTER, "Failed hook runs (Go operator name)"},
    [HOOK_ALLOWED_ERRORS_PEER] = {"hook_allowed_errors_total", AO_METRIC_COUNTER,
                                  "Failed hook runs with allowFailure (Go operator name)"},
};

static struct ao_metric_family *family(struct operator_state *op, const char *name, enum ao_metric_type type,
                                       const char *help, const char *const *labels)
{
        bool histogram = type == AO_METRIC_HISTOGRAM;
        return ao_metrics_family(op->metrics, name, type, help, labels,
                                 histogram ? ao_metrics_buckets_seconds : NULL,
                                 histogram ? ao_metrics_n_buckets_seconds : 0);
}

static void create_hook_families(struct operator_state *op, struct operator_metrics *om)
{
        for (int kind = 0; kind < 2; kind++)
                for (int f = 0; f < _HOOK_FAMILY_MAX; f++) {
                        _cleanup_free_ char *name =
                            ao_xasprintf("%s_%s", kind ? "module" : "global", hook_families[f].name);
                        om->hook[kind][f] = family(op, name, hook_families[f].type, hook_families[f].help,
                                                   kind ? module_hook_labels : global_hook_labels);
                }
}

/*
 * Families the Kubernetes client and the helm step fill. Registered now so that dashboards and
 * alerts find them; without a cluster they have no series.
 */
static void create_kube_and_helm_families(struct operator_state *op)
{
        static const char *const kube_labels[] = {"module", "hook", "binding", "queue", "kind", NULL};
        static const char *const helm_labels[] = {"module", "activation", "operation", NULL};
        (void) ao_metrics_family(op->metrics, "kube_event_duration_seconds", AO_METRIC_HISTOGRAM,
                                 "Time to handle a Kubernetes watch event", kube_labels,
                                 ao_metrics_buckets_seconds, ao_metrics_n_buckets_seconds);
        (void) ao_metrics_family(op->metrics, "kube_jq_filter_duration_seconds", AO_METRIC_HISTOGRAM,
                                 "Time spent in jqFilter programs", kube_labels, ao_metrics_buckets_seconds,
                                 ao_metrics_n_buckets_seconds);
        (void) ao_metrics_family(op->metrics, "kube_snapshot_objects", AO_METRIC_GAUGE,
                                 "Objects kept for a kubernetes binding", kube_labels, NULL, 0);
        static const char *const module_labels[] = {"module", NULL};
        static const char *const absent_labels[] = {"module", "resource", NULL};
        op->om->helm_operation_seconds = ao_metrics_family(
            op->metrics, "helm_operation_seconds", AO_METRIC_HISTOGRAM, "Time of helm operations",
            helm_labels, ao_metrics_buckets_seconds, ao_metrics_n_buckets_seconds);
        op->om->helm_redeployed =
            ao_metrics_family(op->metrics, "modules_helm_release_redeployed_total", AO_METRIC_COUNTER,
                              "Releases upgraded because they were not deployed", module_labels, NULL, 0);
        op->om->absent_resources =
            ao_metrics_family(op->metrics, "modules_absent_resources_total", AO_METRIC_COUNTER,
                              "Release resources found missing from the cluster", absent_labels, NULL, 0);
}

static int on_live_tick(struct ao_source *s, uint64_t now, void *userdata)
{
        struct operator_state *op = userdata;
        ao_metric_add(op->om->live_ticks, NULL, 1);
        return ao_source_set_time(s, now + LIVE_TICK_USEC);
}

void op_metrics_sample_queues(struct operator_state *op)
{
        for (size_t i = 0; op->queues && i < ao_queues_count(op->queues); i++) {
                struct ao_queue *q = ao_queues_at(op->queues, i);
                const char *labels[] = {ao_queue_name(q)};
                ao_metric_set(op->om->queue_length, labels, (double) ao_queue_length(q));
        }
}

void op_metrics_queue_heads(struct operator_state *op, const struct queue_head *heads, size_t n)
{
        const char **values = ao_xcalloc(4 * n + 1, sizeof(*values));
        const char *const **rows = ao_xcalloc(n + 1, sizeof(*rows));
        for (size_t i = 0; i < n; i++) {
                const char **v = &values[4 * i];
                v[0] = heads[i].queue;
                v[1] = heads[i].module;
                v[2] = heads[i].task_type;
                v[3] = heads[i].hook;
                rows[i] = v;
        }
        ao_metric_replace(op->om->queue_head, rows, n, 1);
        free(rows);
        free(values);
}

/*
 * Module states: one family for every module directory, whether it runs or not, and one for the
 * modules in maintenance. They describe the module, not its runs, so a delete keeps them.
 */
static void create_module_state_families(struct operator_state *op, struct operator_metrics *om)
{
        static const char *const info_labels[] = {"module", "enabled", "critical", NULL};
        static const char *const maintenance_labels[] = {"module", "state", NULL};
        om->module_info =
            family(op, "mm_module_info", AO_METRIC_GAUGE,
                   "Every module: 1, with its enabled state from the last discovery", info_labels);
        om->module_maintenance = family(op, "mm_module_maintenance", AO_METRIC_GAUGE,
                                        "Modules whose config puts them in maintenance", maintenance_labels);
        static const char *const enabled_labels[] = {"module", "version", NULL};
        static const char *const enabled_help =
            "Enabled modules: 1, with the version their Chart.yaml declares";
        om->module_enabled[0] =
            family(op, "mm_module_enabled", AO_METRIC_GAUGE, enabled_help, enabled_labels);
        /* The Go operator's telemetry twin: this name whatever the prefix. */
        om->module_enabled[1] =
            ao_metrics_family_unprefixed(op->metrics, "d8_telemetry_module_enabled", AO_METRIC_GAUGE,
                                         enabled_help, enabled_labels, NULL, 0);
}

/* mm_module_enabled and its twin: the enabled modules only, so a disabled one's series go. */
static void set_module_enabled_families(struct operator_state *op)
{
        size_t n = 0;
        const char **values = ao_xcalloc(2 * op->modules.n + 1, sizeof(*values));
        const char *const **rows = ao_xcalloc(op->modules.n + 1, sizeof(*rows));
        for (size_t i = 0; i < op->modules.n; i++) {
                const struct module *mod = &op->modules.items[i];
                if (!mod->enabled)
                        continue;
                const char **v = &values[2 * n];
                v[0] = mod->name;
                v[1] = mod->chart_version;
                rows[n++] = v;
        }
        for (size_t f = 0; f < AO_ARRAY_SIZE(op->om->module_enabled); f++)
                ao_metric_replace(op->om->module_enabled[f], rows, n, 1);
        free(rows);
        free(values);
}

void op_metrics_modules_state(struct operator_state *op)
{
        size_t n = op->modules.n;
        const char **values = ao_xcalloc(3 * n + 1, sizeof(*values));
        const char *const **rows = ao_xcalloc(n + 1, sizeof(*rows));
        for (size_t i = 0; i < n; i++) {
                const char **v = &values[3 * i];
                v[0] = op->modules.items[i].name;
                v[1] = op->modules.items[i].enabled ? "true" : "false";
                /* Every module runs in the order groups: the Go operator's file-system loader marks them all critical. */
                v[2] = "true";
                rows[i] = v;
        }
        ao_metric_replace(op->om->module_info, rows, n, 1);
        free(rows);
        free(values);
        set_module_enabled_families(op);
}

void op_metrics_maintenance(struct operator_state *op, const cJSON *config)
{
        size_t n = 0;
        const char **values = ao_xcalloc(2 * op->modules.n + 1, sizeof(*values));
        const char *const **rows = ao_xcalloc(op->modules.n + 1, sizeof(*rows));
        for (size_t i = 0; i < op->modules.n; i++) {
                if (!modules_in_maintenance(&op->modules.items[i], config))
                        continue;
                const char **v = &values[2 * n];
                v[0] = op->modules.items[i].name;
                v[1] = "NoResourceReconciliation";
                rows[n++] = v;
        }
        ao_metric_replace(op->om->module_maintenance, rows, n, 1);
        free(rows);
        free(values);
}

int op_metrics_init(struct operator_state *op)
{
        static const char *const module_label[] = {"module", NULL};
        static const char *const module_activation[] = {"module", "activation", NULL};
        static const char *const activation[] = {"activation", NULL};
        static const char *const module_hook[] = {"module", "hook", NULL};
        static const char *const queue[] = {"queue", NULL};
        static const char *const wait_labels[] = {"module", "hook", "binding", "queue", NULL};
        static const char *const head_labels[] = {"queue", "module", "task_type", "hook", NULL};
        static const char *const binding_label[] = {"binding", NULL};
        op->metrics = ao_metrics_new(op->settings->metrics_prefix);
        /* Every metric the operator exports is listed from the start, those without data yet too. */
        ao_metrics_set_show_empty(op->metrics, true);
        op->hook_metrics = ao_metrics_new("");
        struct operator_metrics *om = op->om = ao_xcalloc(1, sizeof(*om));
        create_hook_families(op, om);
        om->task_wait = family(op, "task_wait_in_queue_seconds_total", AO_METRIC_COUNTER,
                               "Seconds tasks waited in their queue", wait_labels);
        om->queue_length = family(op, "tasks_queue_length", AO_METRIC_GAUGE, "Tasks in the queue", queue);
        om->live_ticks = family(op, "live_ticks", AO_METRIC_COUNTER,
                                "Increases every 10 s while the main loop runs", NULL);
        om->discover_errors = family(op, "module_discover_errors_total", AO_METRIC_COUNTER,
                                     "Errors while discovering modules", NULL);
        om->discover_errors_peer = family(op, "modules_discover_errors_total", AO_METRIC_COUNTER,
                                          "Errors while discovering modules (Go operator name)", NULL);
        om->module_run_seconds =
            family(op, "module_run_seconds", AO_METRIC_HISTOGRAM, "Module run time", module_activation);
        om->module_run_errors =
            family(op, "module_run_errors_total", AO_METRIC_COUNTER, "Failed module runs", module_label);
        om->module_delete_errors = family(op, "module_delete_errors_total", AO_METRIC_COUNTER,
                                          "Failed module deletions", module_label);
        om->module_helm_seconds = family(op, "module_helm_seconds", AO_METRIC_HISTOGRAM,
                                         "Module release step time", module_activation);
        om->convergence_seconds = family(op, "convergence_seconds", AO_METRIC_COUNTER,
                                         "Seconds spent reloading all modules", activation);
        om->convergence_total =
            family(op, "convergence_total", AO_METRIC_COUNTER, "Reloads of all modules", activation);
        om->binding_count =
            family(op, "binding_count", AO_METRIC_GAUGE, "Bindings of each hook", module_hook);
        om->config_errors = family(op, "config_values_errors_total", AO_METRIC_COUNTER,
                                   "Stored config changes refused as invalid", NULL);
        create_kube_and_helm_families(op);
        ao_metric_add(om->live_ticks, NULL, 0);
        ao_metric_add(om->discover_errors, NULL, 0);
        ao_metric_add(om->discover_errors_peer, NULL, 0);
        ao_metric_add(om->config_errors, NULL, 0);
        om->parallel_runs = family(op, "parallel_module_runs", AO_METRIC_GAUGE,
                                   "Module runs of one order running at once in a parallel group", NULL);
        ao_metric_set(om->parallel_runs, NULL, 0);
        om->queue_head = family(op, "tasks_queue_head_info", AO_METRIC_GAUGE,
                                "The first task of each queue that has one: 1", head_labels);
        om->monitor_missing = family(
            op, "binding_monitor_missing_total", AO_METRIC_COUNTER,
            "Snapshot reads for a hook run of a kubernetes binding without a running monitor (the run got "
            "an empty list)",
            binding_label);
        create_module_state_families(op, om);
        return ao_reactor_add_time_relative(op->reactor, &om->ticks, LIVE_TICK_USEC, on_live_tick, op);
}

void op_metrics_done(struct operator_state *op)
{
        if (op->om)
                op->om->ticks = ao_source_free(op->om->ticks);
        free(op->om);
        op->om = NULL;
        op->metrics = ao_metrics_free(op->metrics);
        op->hook_metrics = ao_metrics_free(op->hook_metrics);
}

static double seconds(uint64_t usec)
{
        return (double) usec / (double) AO_USEC_PER_SEC;
}

void op_metrics_hook_run(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                         const struct hook_run_info *info, const struct ao_proc_result *r, bool ok)
{
        struct ao_metric_family **f = op->om->hook[mod ? 1 : 0];
        const char *global_labels[] = {hook->name, info->binding_name, info->activation, info->queue};
        const char *module_labels[] = {mod ? mod->name : "", hook->name, info->binding_name, info->activation,
                                       info->queue};
        const char *const *labels = mod ? module_labels : global_labels;
        ao_metric_observe(f[HOOK_RUN_SECONDS], labels, seconds(r->wall_usec));
        ao_metric_observe(f[HOOK_USER_CPU], labels, seconds(r->user_usec));
        ao_metric_observe(f[HOOK_SYS_CPU], labels, seconds(r->system_usec));
        ao_metric_set(f[HOOK_MAX_RSS], labels, (double) r->max_rss_bytes);
        enum hook_family documented = ok                    ? HOOK_SUCCESS
                                      : info->allow_failure ? HOOK_ALLOWED_ERRORS
                                                            : HOOK_ERRORS;
        enum hook_family peer = ok                    ? HOOK_SUCCESS_PEER
                                : info->allow_failure ? HOOK_ALLOWED_ERRORS_PEER
                                                      : HOOK_ERRORS_PEER;
        ao_metric_add(f[documented], labels, 1);
        ao_metric_add(f[peer], labels, 1);
}

void op_metrics_task_wait(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                          const struct hook_run_info *info, uint64_t wait_usec)
{
        const char *labels[] = {mod ? mod->name : "", hook->name, info->binding_name, info->queue};
        ao_metric_add(op->om->task_wait, labels, seconds(wait_usec));
}

void op_metrics_hook_ops(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                         const struct ao_metric_ops *ops)
{
        struct ao_error err = {0};
        if (ao_metrics_apply_hook_ops(op->hook_metrics, ops, hook->name, mod ? mod->name : NULL, &err) < 0)
                ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"hook", hook->name}),
                            "hook '%s': metrics: %s, ignoring", hook->name, err.msg);
}

void op_metrics_discover_error(struct operator_state *op)
{
        ao_metric_add(op->om->discover_errors, NULL, 1);
        ao_metric_add(op->om->discover_errors_peer, NULL, 1);
}

void op_metrics_converge_done(struct operator_state *op, const char *reason, uint64_t usec)
{
        const char *labels[] = {reason};
        ao_metric_add(op->om->convergence_seconds, labels, seconds(usec));
        ao_metric_add(op->om->convergence_total, labels, 1);
        op_metrics_sample_queues(op);
}

void op_metrics_module_run(struct operator_state *op, const struct module *mod, const char *activation,
                           uint64_t usec, bool ok)
{
        const char *with_activation[] = {mod->name, activation};
        const char *module_only[] = {mod->name};
        if (ok)
                ao_metric_observe(op->om->module_run_seconds, with_activation, seconds(usec));
        else
                ao_metric_add(op->om->module_run_errors, module_only, 1);
}

void op_metrics_module_helm(struct operator_state *op, const struct module *mod, const char *activation,
                            uint64_t usec)
{
        const char *labels[] = {mod->name, activation};
        ao_metric_observe(op->om->module_helm_seconds, labels, seconds(usec));
}

void op_metrics_helm_operation(struct operator_state *op, const struct module *mod, const char *activation,
                               const char *operation, uint64_t usec)
{
        const char *labels[] = {mod->name, activation, operation};
        ao_metric_observe(op->om->helm_operation_seconds, labels, seconds(usec));
}

void op_metrics_helm_redeployed(struct operator_state *op, const struct module *mod)
{
        const char *labels[] = {mod->name};
        ao_metric_add(op->om->helm_redeployed, labels, 1);
}

void op_metrics_absent_resource(struct operator_state *op, const struct module *mod, const char *resource)
{
        const char *labels[] = {mod->name, resource};
        ao_metric_add(op->om->absent_resources, labels, 1);
}

void op_metrics_module_delete_failed(struct operator_state *op, const struct module *mod)
{
        const char *labels[] = {mod->name};
        ao_metric_add(op->om->module_delete_errors, labels, 1);
}

void op_metrics_module_gone(struct operator_state *op, const char *module)
{
        struct ao_metric_family *const states[] = {op->om->module_info, op->om->module_maintenance,
                                                   op->om->module_enabled[0], op->om->module_enabled[1]};
        (void) ao_metrics_remove_series_except(op->metrics, "module", module, states, AO_ARRAY_SIZE(states));
        (void) ao_metrics_remove_series(op->hook_metrics, "module", module);
}

void op_metrics_binding_count(struct operator_state *op, const struct module *mod,
                              const struct ao_hook *hooks, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                size_t count = hooks[i].config.n_schedules + hooks[i].config.n_kubernetes;
                for (int t = 0; t < AO_BINDING_ORDERED_MAX; t++)
                        count += hooks[i].config.has_order[t];
                const char *labels[] = {mod ? mod->name : "", hooks[i].name};
                ao_metric_set(op->om->binding_count, labels, (double) count);
        }
}

void op_metrics_config_error(struct operator_state *op)
{
        ao_metric_add(op->om->config_errors, NULL, 1);
}

void op_metrics_parallel_runs(struct operator_state *op, size_t running)
{
        ao_metric_set(op->om->parallel_runs, NULL, (double) running);
}

void op_metrics_binding_monitor_missing(struct operator_state *op, const char *binding)
{
        const char *labels[] = {binding};
        ao_metric_add(op->om->monitor_missing, labels, 1);
}
