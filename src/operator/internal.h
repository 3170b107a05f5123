/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/operator/: the running operator's state and what its files share. The lifecycle
 * (docs/LIFECYCLE.md) is a set of task types worked by the queues. Files, lowest layer first; a
 * file calls only files listed before it (tests/tools/file-graph.py checks it):
 *
 *   leader-identity.c  the Lease holder identity, and the leader's address read back from it
 *   hook-owner.c       the hooks of one owner (global or a module) and their throttles
 *   modules.c          the module directories: names, order, values.yaml files, schemas
 *   api-versions.c     the kinds the modules' CRDs serve, as /global/discovery/apiVersions
 *   config-file.c      the config file store (ao_config_file: config-file.h), watched with inotify
 *   op-metrics.c       the operator's metric families and what it observes
 *   tasks.c            every task type's payload and constructor, and the idempotent requests
 *                      ("request a converge", "request a module run", hook runs in order)
 *   release-chart.c    the chart, values file and CRD operations helm gets
 *   release-local.c    the release step without a cluster
 *   cluster.c          the cluster session: clients, discovery, ConfigMap, Lease, object patches
 *   release-state.c    the releases as helm's storage objects say, by watch
 *   release-monitor.c  release auto-healing: the releases' objects, by watch
 *   release-helm-binary.c  the helm binary (found, helm 3, looked for again while it is not) and
 *                      its post-renderer
 *   release-helm.c     the release step with the helm binary
 *   bindings.c         kubernetes bindings: one owner's monitors, events to hook tasks, snapshots
 *   schedules.c        schedule bindings to hook tasks
 *   run-outputs.c      a run's outputs: all checked first, then applied in a fixed order
 *   hook-call.c        one hook run: its documents, the runner, its outputs
 *   readiness.c        what /readyz says: the first converge, and modules that hold convergence back
 *   module-job.c       one module run or delete as a step machine, for the handlers below
 *   hook-task.c        handler: TASK_GLOBAL_HOOK_RUN, TASK_MODULE_HOOK_RUN
 *   converge.c         handler: TASK_CONVERGE ("reload all modules")
 *   module-run.c       handler: TASK_MODULE_RUN, TASK_MODULE_DELETE, TASK_MODULE_PURGE
 *   module-crds.c      handler: TASK_MODULE_ENSURE_CRDS (a newly enabled module's crds/)
 *   module-group.c     handler: TASK_MODULE_GROUP_RUN (the modules of one order at once)
 *   global-sync.c      handler: TASK_KUBE_SYNC (the global hooks' Synchronization)
 *   engine.c           the handler table and the queues, sampled for their metrics
 *   runtime-config.c   the parameters `config set` changes at run time (log.level)
 *   module-render.c    `module render`: helm template with the current values, and --diff
 *   state-api.c        answers about the state: the debug socket, /status/converge
 *   lifecycle.c        start-up, config changes and tear-down
 *   start.c            the `start` command: the reactor, processes, the runner, then the lifecycle
 *
 * Names: functions shared between these files start with their file's concept (tasks_,
 * cluster_, bindings_, release_, op_metrics_, ...), never with ao_ and never with the name of
 * another directory under src/ (kube_, helm_, metrics_, values_ would read as those modules'
 * public API); see docs/DEVELOPING.md.
 */

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/binding-context.h"
#include "ao/error.h"
#include "ao/helm.h"
#include "ao/hooks.h"
#include "ao/log.h"
#include "ao/metric-ops.h"
#include "ao/queue.h"
#include "ao/settings.h"

struct cJSON;
struct ao_config_file;
struct ao_config_map;
struct ao_hook_runner;
struct ao_proc;
struct ao_reactor;
struct ao_schedule;
struct ao_schedule_entry;
struct ao_schema;
struct ao_values_section;
struct ao_values_store;
struct module_files;
struct ao_shutdown;
struct ao_sandbox_profiles;
struct operator_state;
struct helm_state;
struct release_monitor;
struct release_state;
struct monitors;
struct ao_helm_manifest;
struct schedule_set;
struct operator_metrics;
struct ao_http;
struct ao_metrics;
struct ao_metric_ops;
struct ao_proc_result;
struct ao_hook_outcome;
struct ao_informers;
struct ao_jq_cache;
struct ao_kube_discovery;
struct ao_task;
struct hook_bindings;
struct sync_waiter;
struct runtime_config;
struct render_job;
struct ao_debug_request;
struct ao_http_request;

/* ---- the leader election's identity ------------------------------------------------------------ */

/** "<pod>.<listen address, '.' and ':' as '-'>.<namespace>.pod" (malloc'd), the Go operator's. */
char *leader_identity(const char *pod, const char *listen_address, const char *namespace_);
/**
 * The IP address a holder identity of that form names, as text in @out (INET6_ADDRSTRLEN
 * bytes); false when it names none (another form, or a host name as the listen address).
 */
bool leader_identity_address(const char *identity, char out[INET6_ADDRSTRLEN]);

/* ---- hook owners ------------------------------------------------------------------------------ */

/*
 * The hooks of one owner (the global hooks, or one module's) and what runs them: one structure for
 * both, so that no code asks "module or global?" to find a hook's throttle, schedules or monitors.
 */
struct hook_owner {
        struct module *module;            /* NULL: the global hooks */
        struct ao_values_section *values; /* its values section (owned by the values store) */
        struct ao_hook *hooks;            /* owned, once loaded */
        size_t n_hooks;
        bool loaded;
        struct ao_throttle *throttles;  /* owned: one per hook (executionMinPeriod, executionBurst) */
        struct schedule_set *schedules; /* owned: its schedule bindings while the owner is active */
        struct hook_bindings *kube;     /* owned: its kubernetes monitors while active (bindings.c) */
};

/** Take @hooks (@n of them) as the owner's, with a throttle per hook. */
void hook_owner_set_hooks(struct hook_owner *o, struct ao_hook *hooks, size_t n);
void hook_owner_done(struct hook_owner *o);
/** The owner's module name for logs and labels, or NULL for the global hooks. */
const char *hook_owner_module_name(const struct hook_owner *o);
/** "<module>/<hook>" or "<hook>": the combine key and the log name. malloc'd. */
char *hook_identity(const struct hook_owner *o, const struct ao_hook *hook);
/** Whether any hook of @o has kubernetes bindings. */
bool hook_owner_has_kube_bindings(const struct hook_owner *o);

/* ---- modules ---------------------------------------------------------------------------------- */

struct module {
        char *name;        /* owned: "simple-module" */
        char *values_key;  /* owned: "simpleModule" */
        char *enabled_key; /* owned: "simpleModuleEnabled" */
        char *dir;         /* owned: the module directory */
        char *hooks_root;  /* owned: <dir>/hooks */
        uint32_t order;
        char *enabled_script; /* owned: <dir>/enabled when it exists, else NULL */
        char *chart_version;  /* owned: the version its Chart.yaml declares at start, "" without one */
        struct module_files
            *files; /* owned: its values.yaml and openapi/ until the values store takes them */

        /* runtime */
        struct hook_owner owner; /* its hooks, once loaded */
        bool enabled;            /* by the last discovery */
        bool started;            /* a module run succeeded since it was enabled: onStartup done */
        bool crds_applied;       /* crds/ went to the cluster since the module was enabled (module-crds.c) */
        unsigned busy;           /* its module run or hooks running now (the release monitor waits) */
        bool isolated; /* ADDON_OPERATOR_ISOLATE_FAILING_MODULES: its failed run retries in its own queue */
        struct release_monitor *monitor; /* owned: release auto-healing (release-monitor.c), with a cluster */
};

struct modules {
        struct module *items; /* owned, sorted by (order, name) */
        size_t n;
};

/**
 * Find the modules under every MODULES_DIR directory and give their values (the common
 * values.yaml files, each module's values.yaml section, enabled flag and openapi/ schema) to
 * @values, one section per module in run order; errors name the directory or file.
 */
int modules_load(const struct ao_settings *settings, struct ao_values_store *values, struct modules *ret,
                 struct ao_error *reterr);
void modules_done(struct modules *m);
struct module *modules_find(struct modules *m, const char *name);
/**
 * Whether @config (the ConfigMap or config file data) sets "<key>Maintenance" of @mod to
 * "NoResourceReconciliation": its release is neither upgraded nor healed while it does.
 */
bool modules_in_maintenance(const struct module *mod, const struct cJSON *config);
/** Whether @mod has a crds/ directory (its CRDs go to the cluster when it is enabled, with one). */
bool modules_has_crds(const struct module *mod);

/* ---- the operator ----------------------------------------------------------------------------- */

struct operator_state {
        const struct ao_cli *cli;
        const struct ao_settings *settings;
        struct ao_reactor *reactor;
        struct ao_shutdown *shutdown;
        struct ao_sandbox_profiles *profiles;
        const struct ao_sandbox_profile *default_profile;
        struct ao_proc *proc;
        struct ao_hook_runner *runner;
        struct ao_queues *queues;
        struct ao_schedule *schedule;
        struct ao_config_file *config_file; /* the local config store, or */
        struct ao_config_map *config_map;   /* the ConfigMap config store (cluster.c) */
        char *state_dir;                    /* owned */
        const struct release_ops *releases; /* how releases are made (helm_local_ops without a cluster) */
        struct helm_state *helm;            /* the helm binary (release-helm.c), with a cluster */
        struct ao_source *log_wakeup;
        struct ao_source *log_writable;

        struct hook_owner global; /* the global hooks */

        struct modules modules;
        struct ao_values_store *values; /* owned: every values section (values-store.h) */
        struct cJSON
            *crd_api_versions;  /* owned: sorted "group/version/Kind" of the CRDs applied (api-versions.c) */
        char **enabled_modules; /* owned, NULL-terminated: enabled modules in run order */
        struct ao_metrics *metrics;       /* owned: the operator's metrics (/metrics) */
        struct ao_metrics *hook_metrics;  /* owned: metrics hooks write (/metrics/hooks) */
        struct operator_metrics *om;      /* owned: families and timers (op-metrics.c) */
        struct ao_source *queue_sampler;  /* owned: queue length and head every 5 s (engine.c) */
        struct ao_http *http;             /* owned: the HTTP server thread */
        struct ao_source *sighup;         /* owned: SIGHUP reloads all modules */
        struct kube_state *kube;          /* owned: the cluster session (cluster.c); NULL without a cluster */
        struct sync_waiter *sync_waiters; /* owned: owners waiting for their monitors (bindings.c) */
        struct release_state *release_state; /* owned: helm's storage objects (release-state.c) */
        struct monitors *monitors;           /* owned: the watches of release objects (release-monitor.c) */
        struct runtime_config *runtime;      /* owned: `config list` / `config set` (runtime-config.c) */
        struct render_job *renders;          /* owned: `module render` answers waiting for helm */
        bool first_converge_done;
        bool converge_running;
        uint64_t converge_started_usec;
        size_t converge_tasks_done;      /* tasks finished since the start-up converge began */
        uint64_t converge_progress_usec; /* when the last progress line was logged */
        unsigned converges;
};

/* ---- api-versions.c ------------------------------------------------------------------------ */

/** Add @kinds (taken: a JSON array of "group/version/Kind" strings) to op->crd_api_versions. */
void api_versions_add(struct operator_state *op, struct cJSON *kinds);
/**
 * Set /global/discovery/apiVersions to op->crd_api_versions, as a values patch of the global
 * section, when there is any: the end of a converge's CRD step. A global values schema that
 * refuses it leaves the values as they are, with a warning naming the schema file.
 */
void api_versions_publish(struct operator_state *op);
void api_versions_done(struct operator_state *op);

/* ---- op-metrics.c ---------------------------------------------------------------------------- */

/* What a hook run is for: log context and metric labels. */
struct hook_run_info {
        const char *binding_name;
        enum ao_binding_type binding_type;
        const char *queue;
        const char *task; /* the type of the task it runs for ("ModuleRun"), for logs; may be NULL */
        const char *activation;
        bool allow_failure;
};

/* The first task of a queue, in the Go operator's terms ("" where a label does not apply). */
struct queue_head {
        const char *queue;
        const char *module; /* "" for global hooks, converges and a ParallelModuleRun */
        const char *task_type;
        const char *hook;
};

int op_metrics_init(struct operator_state *op);
void op_metrics_done(struct operator_state *op);
/** tasks_queue_length of every queue. */
void op_metrics_sample_queues(struct operator_state *op);
/** tasks_queue_head_info: exactly @heads (@n of them, one per queue that has a task). */
void op_metrics_queue_heads(struct operator_state *op, const struct queue_head *heads, size_t n);
/**
 * mm_module_info: every module with its enabled state from the last discovery; mm_module_enabled
 * and d8_telemetry_module_enabled: the enabled ones with their chart version.
 */
void op_metrics_modules_state(struct operator_state *op);
/** mm_module_maintenance: the modules @config (the ConfigMap or config file data) puts in maintenance. */
void op_metrics_maintenance(struct operator_state *op, const struct cJSON *config);
/** binding_monitor_missing_total: a run read the snapshot of @binding, whose monitor is not running. */
void op_metrics_binding_monitor_missing(struct operator_state *op, const char *binding);
void op_metrics_hook_run(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                         const struct hook_run_info *info, const struct ao_proc_result *r, bool ok);
void op_metrics_task_wait(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                          const struct hook_run_info *info, uint64_t wait_usec);
void op_metrics_hook_ops(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                         const struct ao_metric_ops *ops);
void op_metrics_discover_error(struct operator_state *op);
void op_metrics_converge_done(struct operator_state *op, const char *reason, uint64_t usec);
void op_metrics_module_run(struct operator_state *op, const struct module *mod, const char *activation,
                           uint64_t usec, bool ok);
void op_metrics_module_helm(struct operator_state *op, const struct module *mod, const char *activation,
                            uint64_t usec);
/** helm_operation_seconds{operation}: "template", "check-upgrade", "upgrade". */
void op_metrics_helm_operation(struct operator_state *op, const struct module *mod, const char *activation,
                               const char *operation, uint64_t usec);
void op_metrics_helm_redeployed(struct operator_state *op, const struct module *mod);
void op_metrics_absent_resource(struct operator_state *op, const struct module *mod, const char *resource);
void op_metrics_module_delete_failed(struct operator_state *op, const struct module *mod);
/** Drop the series of @module's runs and hooks (it was deleted or purged); its state stays. */
void op_metrics_module_gone(struct operator_state *op, const char *module);
void op_metrics_binding_count(struct operator_state *op, const struct module *mod,
                              const struct ao_hook *hooks, size_t n);
void op_metrics_config_error(struct operator_state *op);
/** parallel_module_runs: module runs of a parallel group running now. */
void op_metrics_parallel_runs(struct operator_state *op, size_t running);

/* ---- tasks.c: every task, and the requests that queue them -------------------------------------- */

enum task_type {
        TASK_GLOBAL_HOOK_RUN,
        TASK_MODULE_HOOK_RUN,
        TASK_CONVERGE,
        TASK_MODULE_RUN,
        TASK_MODULE_DELETE,
        TASK_MODULE_PURGE,
        TASK_KUBE_SYNC,          /* global hooks: start the monitors, then queue the Synchronization runs */
        TASK_MODULE_GROUP_RUN,   /* the runs of several modules of one order, at once */
        TASK_MODULE_ENSURE_CRDS, /* a newly enabled module's crds/ to the cluster, before any module runs */
        _TASK_TYPE_MAX,
};

/* Why a hook runs: decides what its value changes cause afterwards. */
struct hook_task {
        struct hook_owner *owner; /* borrowed */
        struct ao_hook *hook;     /* borrowed */
        enum ao_binding_type binding;
        char *binding_name; /* owned: the binding's name for logs */
        char
            *activation; /* owned: what caused the run ("OperatorStartup", "Schedule", ...), a metric label */
        bool kube_sync;  /* a Synchronization run: events of the binding flow once it starts */
        size_t kube_binding; /* which kubernetes binding, with kube_sync */
};

enum converge_phase {
        CONVERGE_BEFORE_ALL,
        CONVERGE_DISCOVER,
        CONVERGE_AFTER_ALL,
        CONVERGE_CHECK,
};

struct converge_task {
        enum converge_phase phase;
        char *reason;          /* owned: "OperatorStartup", "GlobalValuesChanged", ... */
        char *global_checksum; /* owned: global values before afterAll */
        unsigned loops;        /* afterAll changed the values this many times */
};

struct module_task {
        struct module *module; /* borrowed (modules never go away while running); NULL for a purge */
        char *release;         /* owned: TASK_MODULE_PURGE's release */
        char *activation;      /* owned: why it runs, a metric label */
};

/* A module of a group run, and where its run is. */
enum group_member_state {
        MEMBER_WAITING,
        MEMBER_RUNNING,
        MEMBER_RETRYING, /* failed: its retry timer is armed */
        MEMBER_DONE,
};

struct group_member {
        struct module *module; /* borrowed */
        enum group_member_state state;
        unsigned failures;
        struct ao_source *retry; /* owned: the back-off before its next attempt */
        struct module_group_task *group;
};

/* TASK_MODULE_GROUP_RUN: done when every member's run has succeeded (module-group.c). */
struct module_group_task {
        struct operator_state *op;
        struct ao_task *task;         /* while it runs */
        struct group_member *members; /* owned */
        size_t n, running, done;
        bool starting;    /* start_members() is on the stack */
        char *activation; /* owned */
};

/*
 * A hook run to queue. @contexts is taken; queued contexts carry no snapshot items (they are
 * attached once, when the run starts: see hook-task.c), so a waiting event costs the same
 * whatever the size of the snapshots.
 */
struct hook_run_spec {
        struct hook_owner *owner;
        size_t hook_index;
        enum ao_binding_type binding;
        const char *binding_name;
        const char *activation;
        struct cJSON *contexts;
        bool allow_failure;
        bool kube_sync;      /* a Synchronization run of kubernetes binding ... */
        size_t kube_binding; /* ... number kube_binding of the hook */
};

struct ao_queue *tasks_queue(struct operator_state *op, const char *name);
/** The name of a task type, as the Go operator names its tasks: "ModuleRun", "ConvergeModules", ... */
const char *tasks_type_name(int type);
/**
 * What @t's log records carry: queue, task, event.type and, as far as the task is about one,
 * module, hook, hook.type, binding and event. The strings belong to @t and its queue.
 */
struct ao_log_context tasks_log_context(const struct ao_task *t);
/** At the tail of @queue (NULL: main). Returns the task (or the one it was merged into). */
struct ao_task *tasks_push_hook_run(struct operator_state *op, const char *queue,
                                    const struct hook_run_spec *s);
/** Right after @after (Synchronization runs that must run before what follows the step). */
struct ao_task *tasks_push_hook_run_after(struct ao_task *after, const struct hook_run_spec *s);
/**
 * Hook runs for ordered binding @type of every hook of @owner that has it, ordered by
 * (order, name), right before @before (NULL: at the tail of main).
 */
void tasks_push_ordered_hook_runs(struct operator_state *op, struct ao_task *before, struct hook_owner *owner,
                                  enum ao_binding_type type, const char *activation);
/** "Reload all modules": one waiting converge covers every reason that comes before it starts. */
void tasks_request_converge(struct operator_state *op, const char *reason);
/** A run of @mod at the tail of main (or right after @after), unless one is waiting there already. */
void tasks_request_module_run(struct operator_state *op, struct module *mod, struct ao_task *after,
                              const char *activation);
bool tasks_module_run_pending(struct operator_state *op, const struct module *mod);
/** Discovery's steps, right before the converge task @before. */
void tasks_push_module_run(struct ao_task *before, struct module *mod, const char *activation);
void tasks_push_module_delete(struct ao_task *before, struct module *mod, const char *activation);
void tasks_push_module_purge(struct ao_task *before, const char *release, const char *activation);
void tasks_push_module_ensure_crds(struct ao_task *before, struct module *mod, const char *activation);
/** Whether a TASK_MODULE_ENSURE_CRDS waits in main (the running task left out). */
bool tasks_ensure_crds_pending(struct operator_state *op);
/** The runs of @n modules of one order as one task that runs several at once (@mods copied). */
void tasks_push_module_group(struct ao_task *before, struct module *const *mods, size_t n,
                             const char *activation);
/** "ParallelModuleRun:a,b,c" and, while it runs, which members are running. malloc'd. */
char *tasks_module_group_description(const struct module_group_task *g);
/**
 * ADDON_OPERATOR_ISOLATE_FAILING_MODULES: a run of @mod in a queue of its own ("isolated-<module>"),
 * where it retries with back-off without holding back main; nothing when one waits there already.
 */
void tasks_isolate_module_run(struct operator_state *op, struct module *mod, const char *activation);
/** Whether @t runs in an isolated module's own queue. */
bool tasks_in_isolation_queue(const struct ao_task *t);

/** The global Synchronization step (after the onStartup hooks). */
void tasks_push_kube_sync(struct operator_state *op);

/* ---- release-chart.c, release-local.c, release-helm.c: the release step -------------------------- */

/*
 * How releases are made: the lifecycle only calls through this table. Without a cluster it is
 * the local step (release-local.c: <state dir>/releases/<module>/values.yaml); with one, the helm
 * binary (release-helm.c). Each operation either fails at once (negative return, @reterr set,
 * no callback) or calls its callback exactly once, possibly before it returns: callers touch
 * nothing of theirs after starting one.
 */
typedef void release_done(struct operator_state *op, const struct ao_error *error /* NULL: done */,
                          void *userdata);
typedef void release_exists_done(struct operator_state *op, int exists /* 1, 0, or < 0 with @error */,
                                 const struct ao_error *error, void *userdata);
/* @names: malloc'd, NULL-terminated, sorted, owned by the callee; NULL with @error on failure. */
typedef void release_list_done(struct operator_state *op, char **names, const struct ao_error *error,
                               void *userdata);

struct release_ops {
        const char *name; /* "local", "helm": for logs */
        /* Install or upgrade @mod's release with @values (the document helm gets). */
        int (*upgrade)(struct operator_state *op, struct module *mod, const struct cJSON *values,
                       const char *activation, release_done *done, void *userdata, struct ao_error *reterr);
        int (*remove)(struct operator_state *op, const char *release, release_done *done, void *userdata,
                      struct ao_error *reterr);
        int (*exists)(struct operator_state *op, const char *release, release_exists_done *done,
                      void *userdata, struct ao_error *reterr);
        int (*list)(struct operator_state *op, release_list_done *done, void *userdata,
                    struct ao_error *reterr);
};

extern const struct release_ops release_local_ops;
extern const struct release_ops release_helm_ops;

/*
 * The chart helm gets: 1 and the module directory when it has Chart.yaml, 1 and a chart
 * generated in <tmp>/charts/<module> when it only has templates/, 0 when it is no chart.
 */
int chart_dir(const struct operator_state *op, const struct module *mod, char **ret_dir,
              struct ao_error *reterr);
/** @values as YAML in a new private file <tmp>/<module>.module-values.yaml-XXXXXX. */
int chart_values_file(const struct operator_state *op, const struct module *mod, const struct cJSON *values,
                      char **ret_path, struct ao_error *reterr);
/**
 * The CRDs of <module>/crds (files not starting with an ADDON_OPERATOR_CRD_FILTER_PREFIXES
 * prefix, labelled with ADDON_OPERATOR_CRD_EXTRA_LABELS) as object patch operations (JSON), and
 * the "group/version/Kind" of every version they define (a JSON array); returns 1 with both,
 * 0 when there are none.
 */
int chart_crd_operations(const struct operator_state *op, const struct module *mod, char **ret_text,
                         struct cJSON **ret_kinds, struct ao_error *reterr);
/**
 * What a render of @mod depends on, as an MD5 in @ret: the chart's files (@chart, symlinks
 * followed), @values as helm gets them, the release name, namespace @ns, @helm_version, and the
 * post-renderer's: the operator's version and the @labels it stamps ("k=v,k2=v2").
 * Equal checksums give equal renders, unless the templates call random or time functions.
 */
int chart_input_checksum(const struct module *mod, const char *chart, const struct cJSON *values,
                         const char *ns, const char *helm_version, const char *labels, char ret[static 33],
                         struct ao_error *reterr);
struct ao_helm_labels;
/**
 * The labels every object of a chart gets, CRDs of crds/ included: heritage=addon-operator, then
 * ADDON_OPERATOR_CRD_EXTRA_LABELS (where a heritage label replaces the first).
 */
int chart_labels(const struct ao_settings *s, struct ao_helm_labels *ret, struct ao_error *reterr);

/* ---- release-helm-binary.c: the helm binary ------------------------------------------------------ */

struct helm_waiter;
/* The helm binary of the release step (cluster mode). */
struct helm_state {
        struct ao_helm *client;
        bool usable;                 /* found, and helm 3 (or HELM3 says so) */
        char *unusable;              /* owned: why not, one line naming HELM_BIN_PATH; NULL when usable */
        bool checking;               /* a version check is under way */
        struct helm_waiter *waiters; /* the steps waiting for it */
        bool labels;                 /* helm >= 3.13 records release labels */
        bool take_ownership;         /* helm >= 3.17: an upgrade adopts objects another release claims, as
                                      * the Go operator's does (an object whose owner annotation changed
                                      * is healed) */
        char *version;               /* owned: "3.17.2", part of the input checksum ("3" when not asked) */
        /* helm's --post-renderer: this binary, `tool post-render LABELS` (its path NULL: not found) */
        struct ao_helm_post_renderer post_renderer;
        char *post_render_args[4];   /* owned: "tool", "post-render", the labels, NULL */
        char *post_renderer_missing; /* owned: why there is no post-renderer, or NULL */
};

/*
 * The error code of a step that needed helm and found none usable. The purge of an orphaned
 * release waits for helm rather than fail (a failed task would hold the main queue).
 */
#define RELEASE_NO_HELM (-ENOPKG)

/**
 * Make op->helm (the release step with helm) and look for helm, waiting for its version. Never
 * fails for want of helm: that is logged once, as a warning, and each step needing helm looks
 * again (release_helm_ready_check). Fails only when stopped meanwhile (-ECANCELED).
 */
int release_helm_start(struct operator_state *op, struct ao_error *reterr);
void release_helm_done(struct operator_state *op);
/* @text: helm's stdout (valid during the call); NULL with @error. */
typedef void release_text_done(struct operator_state *op, const char *text, size_t len,
                               const struct ao_error *error, void *userdata);
/**
 * `helm template` of @mod's chart with @values (the document helm gets), as the release step
 * renders it (`--debug` too with @debug). Returns 1 and calls @done once, later; 0 when the
 * module has no chart (@done not called); < 0 when nothing started. Needs the helm binary
 * (a cluster).
 */
int release_helm_render(struct operator_state *op, struct module *mod, const struct cJSON *values, bool debug,
                        release_text_done *done, void *userdata, struct ao_error *reterr);
/** `helm get manifest @release`; a release that does not exist gives "" (no error). Like the above. */
int release_helm_manifest(struct operator_state *op, const char *release, release_text_done *done,
                          void *userdata, struct ao_error *reterr);
typedef void release_helm_ready(struct operator_state *op, const struct ao_error *error /* NULL: usable */,
                                void *userdata);
/**
 * Call @done once helm is usable (at once when it is), or with the reason it is not
 * (RELEASE_NO_HELM). While it is not, each call looks for it again; steps asking meanwhile wait
 * for the same check.
 */
void release_helm_ready_check(struct operator_state *op, release_helm_ready *done, void *userdata);
bool release_helm_usable(const struct operator_state *op);

/* ---- cluster.c: the cluster session ------------------------------------------------------------ */

/** Connect when a cluster is configured (and not --local); without one, op->kube stays NULL. */
int cluster_start(struct operator_state *op, struct ao_error *reterr);
void cluster_done(struct operator_state *op);
/** Called each time a discovery table is in place (bindings.c waits for it). */
void cluster_on_discovery(struct operator_state *op, void (*handler)(struct operator_state *op));
bool cluster_discovery_ready(const struct operator_state *op);
/** Fetch discovery again, unless the table is fresh (younger than 10 s): true when it started. */
bool cluster_refresh_discovery(struct operator_state *op);
struct ao_kube_discovery *cluster_discovery(struct operator_state *op);
struct ao_informers *cluster_informers(struct operator_state *op);
/** Informers on the HELM_MONITOR_KUBE_CLIENT_* client: helm's storage and the releases' objects. */
struct ao_informers *cluster_monitor_informers(struct operator_state *op);
/** The HELM_MONITOR_KUBE_CLIENT_* client, for single requests (a release's storage object). */
struct ao_kube_client *cluster_monitor_client(struct operator_state *op);
struct ao_jq_cache *cluster_jq(struct operator_state *op);
struct ao_metric_family;
/** The families bindings.c observes: jq time, event time, snapshot sizes. */
struct ao_metric_family *cluster_binding_family(struct operator_state *op, int which);
enum {
        CLUSTER_JQ_SECONDS,
        CLUSTER_EVENT_SECONDS,
        CLUSTER_SNAPSHOT_OBJECTS
};
typedef void cluster_config_handler(const struct cJSON *data, void *userdata);
typedef void cluster_config_invalid_handler(const struct ao_error *error, void *userdata);
/**
 * Open ConfigMap ADDON_OPERATOR_CONFIG_MAP in cluster_config_namespace() as op->config_map and
 * wait (running the loop: called before it runs) for discovery and its first state. An invalid
 * ConfigMap at start is an error, as an invalid config file is.
 */
int cluster_config_map_open(struct operator_state *op, cluster_config_handler *on_change,
                            cluster_config_invalid_handler *on_invalid, struct ao_error *reterr);
/**
 * ADDON_OPERATOR_HA: take part in the leader election and wait (running the loop) until this
 * replica leads. Meanwhile /readyz answers with the leader's readiness (the HTTP server is
 * told who leads as the Lease shows). Losing the lease later starts a graceful shutdown (exit
 * code 0).
 */
int cluster_wait_leadership(struct operator_state *op, struct ao_error *reterr);
/** ADDON_OPERATOR_NAMESPACE, else the kubeconfig's or service account's namespace, else "default". */
const char *cluster_config_namespace(const struct operator_state *op);
struct ao_object_patch_ops;
/**
 * Whether every operation's kind is known to the API server (discovered); the error names the
 * first that is not. A kind not found in a table older than 10 s starts a new discovery.
 */
int cluster_resolve_object_patches(struct operator_state *op, const struct ao_object_patch_ops *ops,
                                   struct ao_error *reterr);
typedef void cluster_patches_done(const struct ao_error *error, void *userdata);
/**
 * Apply @ops (taken) through the object patcher's client. Fails at once when discovery is not
 * there (@done not called); otherwise @done runs once, from the loop. At shutdown a run still
 * going is cancelled and @done gets an error.
 */
int cluster_apply_object_patches(struct operator_state *op, struct ao_object_patch_ops *ops,
                                 cluster_patches_done *done, void *userdata, struct ao_error *reterr);
/* @absent: "Kind namespace/name" of the first object missing, or NULL when all exist. */
typedef void cluster_absent_done(struct operator_state *op, const char *absent, const struct ao_error *error,
                                 void *userdata);
/**
 * Which object of @m is missing from the cluster (objects without a namespace are looked for in
 * @default_ns). @done runs once, later; at shutdown with an error.
 */
int cluster_find_absent(struct operator_state *op, const struct ao_helm_manifest *m, const char *default_ns,
                        bool monitor /* the release monitors' client */, cluster_absent_done *done,
                        void *userdata, struct ao_error *reterr);

/* ---- release-state.c: the releases as helm's storage objects say -------------------------------- */

/* A release's storage changed (its last revision, or its status); called from the loop. */
typedef void release_state_changed(struct operator_state *op, const char *release);
/**
 * Watch the release namespace's storage objects, and wait (running the loop: called before it
 * runs) for discovery and the first list, at most 30 s: after that the release step asks helm
 * until the watch catches up. Fails only when stopped meanwhile (-ECANCELED).
 */
int release_state_open(struct operator_state *op, release_state_changed *on_change, struct ao_error *reterr);
void release_state_stop(struct operator_state *op);
/** Whether the watch has its first state. */
bool release_state_ready(const struct operator_state *op);
/* A release's last revision; the strings are borrowed until the loop runs again. */
struct release_revision {
        int revision;                /* 0: no release */
        const char *status;          /* "deployed", "pending-upgrade", ...; NULL with revision 0 */
        const char *module_checksum; /* label moduleChecksum, or NULL */
        const char *input_checksum;  /* label moduleInputChecksum, or NULL */
        const char *object;          /* the storage object's name; NULL with revision 0 */
};
/** @release's last revision: false while the watch is not ready (ask helm then). */
bool release_state_last(const struct operator_state *op, const char *release, struct release_revision *ret);
/** The releases, sorted, minus @ignored (may be NULL); NULL while not ready. */
char **release_state_names(const struct operator_state *op, const char *ignored);
/** HELM_DRIVER=configmap: helm stores releases in ConfigMaps rather than Secrets. */
bool release_state_config_map_driver(void);
typedef void release_manifest_done(struct operator_state *op, const char *manifest, size_t len,
                                   const struct ao_error *error, void *userdata);
/** The manifest recorded in storage object @object (one GET, decoded); @done runs once, later. */
int release_state_read_manifest(struct operator_state *op, const char *object, release_manifest_done *done,
                                void *userdata, struct ao_error *reterr);

/* ---- release-monitor.c: release auto-healing by watch ------------------------------------------ */

/*
 * The objects of each module's release are watched metadata-only (one watch per resource and
 * namespace, shared); one deleted, or taken by another release, and a release whose storage says
 * it is no longer deployed, request a module run once nothing of the module runs.
 */
typedef void release_presence_done(struct operator_state *op, const char *problem /* NULL: all there */,
                                   const struct ao_error *error, void *userdata);
/**
 * Watch @manifest's objects for @mod (NULL: keep the ones watched) and call @done once every
 * watch has its state, with the first object missing or owned by another release. No healing
 * until release_monitor_start(). Fails at once without discovery.
 */
int release_monitor_check(struct operator_state *op, struct module *mod,
                          const struct ao_helm_manifest *manifest, release_presence_done *done,
                          void *userdata, struct ao_error *reterr);
/** Heal @mod's release from now on: its objects are @manifest's (NULL: those watched), made from @input. */
void release_monitor_start(struct operator_state *op, struct module *mod,
                           const struct ao_helm_manifest *manifest, const char *input);
/** Whether @mod's watched objects are those of a release made from @input (its input checksum). */
bool release_monitor_watches(const struct operator_state *op, const struct module *mod, const char *input);
void release_monitor_stop(struct operator_state *op, struct module *mod);
/** @mod has nothing running any more: look at what changed meanwhile. */
void release_monitor_module_idle(struct operator_state *op, struct module *mod);
/** release_state_changed handler: heal a release no longer "deployed" or gone. */
void release_monitor_release_changed(struct operator_state *op, const char *release);
void release_monitor_note_deleted(struct operator_state *op, struct module *mod, const char *kind,
                                  const char *ns, const char *name);
/** The /module/resource-monitor debug dump: an array, one element per monitored module. */
struct cJSON *release_monitors_dump(struct operator_state *op);
void release_monitors_free(struct operator_state *op);

/* ---- bindings.c: kubernetes bindings ------------------------------------------------------------ */

typedef void bindings_synced_handler(struct operator_state *op, bool ok, void *userdata);
/**
 * Start the monitors of @owner's hooks once discovery is there, and call @done when all of them
 * have their initial state (ok false: a binding names an unknown kind, or the owner was stopped).
 * Needs op->kube.
 */
void bindings_when_synced(struct operator_state *op, struct hook_owner *owner, bindings_synced_handler *done,
                          void *userdata);
/** Stop @owner's monitors. */
void bindings_stop(struct operator_state *op, struct hook_owner *owner);
/** Free every owner's monitors and waiters (shutdown). */
void bindings_done(struct operator_state *op);
/**
 * A Synchronization context array for binding @binding of hook @hook_index of @owner: the shape
 * alone, its objects and snapshots written when its run starts (bindings_snapshot_source()).
 */
struct cJSON *bindings_sync_contexts(struct hook_owner *owner, size_t hook_index, size_t binding);
/** From now on, events of that binding become hook runs. */
void bindings_unlock(struct hook_owner *owner, const struct ao_hook *hook, size_t binding);
/** Where @hook's snapshots come from (empty without monitors), for the debug routes. */
struct ao_snapshot_source bindings_snapshot_source(struct hook_owner *owner, const struct ao_hook *hook);
/**
 * The same for a run of @hook, which reads them when it starts: a binding without a running
 * monitor is logged and counted (binding_monitor_missing_total), with a cluster.
 */
struct ao_snapshot_source bindings_run_snapshot_source(struct operator_state *op, struct hook_owner *owner,
                                                       const struct ao_hook *hook);
/**
 * Queue a Synchronization run for every binding of @owner that executes one (waiting ones right
 * after @after when given, the others in their queues), unlocking those that do not.
 * Waiting ones are left to @inline_sync when it is given (a module run runs them itself).
 */
void bindings_plan_sync(struct operator_state *op, struct hook_owner *owner, struct ao_task *after,
                        void (*inline_sync)(void *userdata, size_t hook_index, size_t binding),
                        void *userdata);

/* ---- schedules.c -------------------------------------------------------------------------------- */

/* Arm the schedule bindings of @owner's hooks, or stop them. */
void schedules_enable(struct operator_state *op, struct hook_owner *owner);
void schedules_disable(struct hook_owner *owner);

/* ---- run-outputs.c: what a run returned --------------------------------------------------------------- */

/* What a run's own patches changed (compared around their application, so runs in other queues never count). */
struct hook_call_effects {
        bool global_values_changed;
        bool module_values_changed; /* the run's module's values; false for global hooks */
};

/*
 * Every output of a successful run, read and checked: the values patch against the values
 * schema, the config patch against the config schema, the object patches parsed and their kinds
 * resolved, the metric operations parsed. Nothing is applied before all of them passed.
 */
struct checked_outputs {
        struct cJSON *values_patch;                 /* owned (taken from the outcome), or NULL */
        struct cJSON *config_patch;                 /* owned (taken from the outcome), or NULL */
        struct ao_metric_ops metrics;               /* owned (taken from the outcome) */
        struct ao_object_patch_ops *object_patches; /* owned, or NULL */
        bool patches_need_cluster;                  /* object patches without a cluster: ignored, warned */
};

/* Take @o's outputs into @ret and check them; @ret is released with run_outputs_done() either way. */
int run_outputs_check(struct operator_state *op, struct hook_owner *owner, const struct ao_hook *hook,
                      struct ao_hook_outcome *o, struct checked_outputs *ret, struct ao_error *reterr);
/**
 * Apply what stays in the operator, in this order: the config patch persisted (the config file
 * or the ConfigMap), the values patch, the config section in memory, the metric operations.
 * Each patch is checked again as it is applied (object patches may have gone to the cluster
 * since run_outputs_check()); a config that cannot be persisted fails before anything changed.
 */
int run_outputs_apply_local(struct operator_state *op, struct hook_owner *owner, const struct ao_hook *hook,
                            const struct checked_outputs *c, struct hook_call_effects *ret,
                            struct ao_error *reterr);
/** What a module's hooks delete is no reason to heal its release. */
void run_outputs_note_deletions(struct operator_state *op, struct hook_owner *owner,
                                const struct ao_object_patch_ops *ops);
void run_outputs_done(struct checked_outputs *c);

/* ---- hook-call.c -------------------------------------------------------------------------------- */

typedef void hook_call_done(struct operator_state *op, bool ok, const struct hook_call_effects *effects,
                            void *userdata);
/**
 * Run @hook of @owner for @info with @contexts (borrowed), their snapshots and Synchronization
 * objects written from @snapshots (borrowed; NULL: as they are) into the binding context file as
 * the run starts, check and apply what it returns (all or nothing: run-outputs.c), and call
 * @done. Returns < 0 (logged, @done not called) when it cannot start.
 */
int hook_call(struct operator_state *op, struct hook_owner *owner, struct ao_hook *hook,
              const struct hook_run_info *info, const struct cJSON *contexts,
              const struct ao_snapshot_source *snapshots, hook_call_done *done, void *userdata);
/* ---- readiness.c -------------------------------------------------------------------------------------- */

/** Set /readyz: ready once the first converge is done and no isolated module holds convergence back. */
void readiness_update(struct operator_state *op);
/** The modules whose isolated runs have not succeeded yet, "'a', 'b'", or NULL. malloc'd. */
char *readiness_held_back(const struct operator_state *op);
/**
 * A run of @mod failed where isolation applies: it goes on in the module's own queue, and the
 * caller goes on as if it had succeeded. Returns false when isolation is off.
 */
bool readiness_isolate(struct operator_state *op, struct module *mod, const char *activation);

/* ---- module-job.c: one module run or delete ------------------------------------------------------- */

typedef void module_job_done(struct operator_state *op, struct module *mod, bool ok, void *userdata);
struct module_job_spec {
        struct module *mod;
        const char *activation; /* why it runs: a metric label */
        struct ao_task *task;   /* the task it runs for: a run its afterHelm hooks request goes right after */
        module_job_done *done;  /* called once, when the job ends */
        void *userdata;
};
/** A module run: onStartup (the first time), Synchronization, beforeHelm, release, afterHelm. */
void module_job_run(struct operator_state *op, const struct module_job_spec *spec);
/** A module delete: beforeDeleteHelm, uninstall, afterDeleteHelm, then the module is reset. */
void module_job_delete(struct operator_state *op, const struct module_job_spec *spec);
/** How many module runs of one order may run at once: ADDON_OPERATOR_PARALLEL_MODULE_RUNS or the CPUs (>= 2). */
size_t module_job_parallelism(const struct operator_state *op);

/* ---- the handlers: hook-task.c, converge.c, module-run.c, module-crds.c, module-group.c, global-sync.c */

void hook_task_handle(struct operator_state *op, struct ao_task *t);
void converge_handle(struct operator_state *op, struct ao_task *t);
void module_run_handle(struct operator_state *op, struct ao_task *t);
void module_delete_handle(struct operator_state *op, struct ao_task *t);
void module_purge_handle(struct operator_state *op, struct ao_task *t);
void module_crds_handle(struct operator_state *op, struct ao_task *t);
void module_group_handle(struct operator_state *op, struct ao_task *t);
void global_sync_handle(struct operator_state *op, struct ao_task *t);

/* ---- engine.c ------------------------------------------------------------------------------------- */

/**
 * The queues, their handler table, what happens when a task leaves, and the sampling of their
 * length and head task every 5 s.
 */
int engine_start(struct operator_state *op, struct ao_error *reterr);
/** Drop every task and the sampling timer. */
void engine_done(struct operator_state *op);

/* ---- lifecycle.c ---------------------------------------------------------------------------------- */

/*
 * Load modules, values and the config, queue the start-up; and tear it all down.
 * lifecycle_start() returns 0, 1 when a signal stopped it while it waited (for the API server or
 * the lease), or < 0 on failure (logged).
 */
int lifecycle_start(struct operator_state *op);
void lifecycle_done(struct operator_state *op);

/* ---- state-api.c: the main-thread side of the debug socket and /status/converge (http.h) --- */

int state_api_handle(const struct ao_http_request *req, struct cJSON **ret_body, void *userdata);

/* ---- runtime-config.c: `config list`, `config set` ------------------------------------------------ */

/** The parameters, at their defaults (log.level: LOG_LEVEL). */
void runtime_config_init(struct operator_state *op);
void runtime_config_done(struct operator_state *op);
/**
 * Set parameter @name to @value, for @duration (a Go duration; NULL or "": until set again, but
 * `log.level debug` for 30 minutes) and apply it; logged. -ENOENT for an unknown name, -EINVAL for
 * a bad value or duration, with the reason in @reterr.
 */
int runtime_config_set(struct operator_state *op, const char *name, const char *value, const char *duration,
                       struct ao_error *reterr);
/** [{"default","description","expireAt" (while temporary),"name","value"}], by name. */
struct cJSON *runtime_config_list(const struct operator_state *op);
/** The same as the Go operator's table: NAME, VALUE, EXPIRE AT, DESCRIPTION. malloc'd. */
char *runtime_config_table(const struct operator_state *op);

/* ---- module-render.c: `module render` ------------------------------------------------------------ */

/**
 * Render @mod for the debug request @request (deferred: answered by ao_http_answer() once helm and
 * diff are done): returns AO_HTTP_DEFERRED, or at once a status with *@ret_body (a module without a
 * chart: 200 and nothing; no helm or no values: 500 and why).
 */
int module_render_start(struct operator_state *op, struct module *mod, const struct ao_debug_request *req,
                        uint64_t request, struct cJSON **ret_body);
/** Free the renders still waiting (their helm calls are gone: after release_helm_done()). */
void module_render_done(struct operator_state *op);
