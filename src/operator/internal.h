/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/operator/: the running operator's state and what its files
 * share. The lifecycle (docs/LIFECYCLE.md) is a set of task types worked by
 * the queues; each file below owns some of them:
 *
 *   modules.c      the module directories: names, order, values.yaml files, schemas
 *   values-store.c global and module values: layers, stored patches, what hooks may change
 *   hook-task.c    one hook run for a task, and what its outputs change
 *   converge.c     "reload all modules": beforeAll, discovery, module runs, afterAll
 *   module-run.c   module run, delete and purge
 *   schedules.c    schedule bindings to tasks
 *   helm-local.c   the release step without a cluster
 *   kube.c         kubernetes bindings: client, monitors, Synchronization and events
 *   start.c        start-up, shutdown and the wiring of all of it
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/binding-context.h"
#include "ao/error.h"
#include "ao/hooks.h"
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
struct ao_shutdown;
struct ao_sandbox_profiles;
struct operator_state;
struct helm_state;
struct release_monitor;
struct ao_helm_manifest;
struct schedule_set;
struct operator_metrics;
struct ao_http;
struct ao_metrics;
struct ao_metric_ops;
struct ao_proc_result;

/* ---- modules ---------------------------------------------------------------------------------- */

struct module {
        char *name;        /* owned: "simple-module" */
        char *values_key;  /* owned: "simpleModule" */
        char *enabled_key; /* owned: "simpleModuleEnabled" */
        char *dir;         /* owned: the module directory */
        char *hooks_root;  /* owned: <dir>/hooks */
        uint32_t order;
        struct cJSON *own_values; /* owned: the <key> section of the module's values.yaml, or NULL */
        int own_enabled;          /* <key>Enabled from the module's values.yaml: -1 unset, 0, 1 */
        struct ao_schema *schema; /* owned: <dir>/openapi */
        char *enabled_script;     /* owned: <dir>/enabled when it exists, else NULL */

        /* runtime */
        struct ao_hook *hooks; /* owned, once loaded */
        size_t n_hooks;
        bool hooks_loaded;
        bool enabled;                    /* by the last discovery */
        bool started;                    /* a module run succeeded since it was enabled: onStartup done */
        struct cJSON *patches;           /* owned: stored memory patch operations (array) */
        struct ao_throttle *throttles;   /* owned: one per hook */
        struct schedule_set *schedules;  /* owned: its hooks' schedule bindings while enabled */
        struct hook_monitors *kube;      /* owned: its hooks' kubernetes monitors while enabled (kube.c) */
        bool crds_applied;               /* crds/ went to the cluster since the module was enabled */
        unsigned busy;                   /* its module run or hooks running now (the release monitor waits) */
        struct release_monitor *monitor; /* owned: release auto-healing (helm-monitor.c), with a cluster */
};

struct modules {
        struct module *items; /* owned, sorted by (order, name) */
        size_t n;
        struct cJSON *
            *common_values; /* owned: each MODULES_DIR's values.yaml (or {}), in MODULES_DIR order */
        size_t n_common_values;
};

/** Find the modules under every MODULES_DIR directory; errors name the directory or file. */
int modules_load(const struct ao_settings *settings, struct modules *ret, struct ao_error *reterr);
void modules_done(struct modules *m);
struct module *modules_find(struct modules *m, const char *name);

/* ---- values ----------------------------------------------------------------------------------- */

struct values_store {
        struct cJSON **global_layers; /* borrowed from modules.common_values' "global" sections */
        size_t n_global_layers;
        struct ao_schema *global_schema; /* owned: $GLOBAL_HOOKS_DIR/openapi */
        struct cJSON *global_patches;    /* owned: stored memory patches of global hooks */
        struct cJSON *dynamic_enabled;   /* owned: {"<key>Enabled": bool} set by global hooks */
        struct cJSON *config;            /* owned: the parsed config data (config-data.h) */
};

int values_store_init(struct values_store *vs, const struct ao_settings *settings, const struct modules *m,
                      struct ao_error *reterr);
void values_store_done(struct values_store *vs);

/** Merged global values, config values, a module's merged and config values (new objects). */
int values_global(const struct values_store *vs, struct cJSON **ret, struct ao_error *reterr);
int values_global_config(const struct values_store *vs, struct cJSON **ret, struct ao_error *reterr);
int values_module(const struct values_store *vs, const struct modules *m, const struct module *mod,
                  struct cJSON **ret, struct ao_error *reterr);
int values_module_config(const struct values_store *vs, const struct modules *m, const struct module *mod,
                         struct cJSON **ret, struct ao_error *reterr);

/** Canonical text of everything a section depends on (change detection). malloc'd. */
char *values_global_checksum(const struct values_store *vs);
char *values_module_checksum(const struct values_store *vs, const struct modules *m,
                             const struct module *mod);

/**
 * A module's enabled flag from the static files, global hooks and the config, in that order
 * (the enabled script comes after): 1 or 0.
 */
int values_module_enabled_flag(const struct values_store *vs, const struct modules *m,
                               const struct module *mod);

/**
 * Apply a hook's memory patch (@ops, already scope-checked) for @mod (NULL: global): on a copy of the
 * merged values, validated against the values schema; on success the operations are stored.
 * Errors say what the schema refused.
 */
int values_apply_patch(struct values_store *vs, const struct modules *m, struct module *mod,
                       const struct cJSON *ops, struct ao_error *reterr);

/** Apply a config patch to the config section of @mod (NULL: global), validated; returns the new section. */
int values_apply_config_patch(struct values_store *vs, const struct modules *m, const struct module *mod,
                              const struct cJSON *ops, struct cJSON **ret_section, struct ao_error *reterr);

/** Validate all config sections (start-up: a failure is fatal); errors list every violation. */
int values_validate_config(const struct values_store *vs, const struct modules *m, const struct cJSON *config,
                           struct ao_error *reterr);

/* ---- the release step ------------------------------------------------------------------------- */

/*
 * How releases are made: the lifecycle only calls through this table. Without a cluster it is
 * the local step (helm-local.c: <state dir>/releases/<module>/values.yaml); with one, the helm
 * binary (helm-release.c). Each operation either fails at once (negative return, @reterr set,
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

extern const struct release_ops helm_local_ops;
extern const struct release_ops helm_binary_ops;

/*
 * helm-chart.c. The chart helm gets: 1 and the module directory when it has Chart.yaml, 1 and a
 * chart generated in <tmp>/charts/<module> when it only has templates/, 0 when it is no chart.
 */
int helm_chart_dir(const struct operator_state *op, const struct module *mod, char **ret_dir,
                   struct ao_error *reterr);
/** @values as YAML in a new private file <tmp>/<module>.module-values.yaml-XXXXXX. */
int helm_values_file(const struct operator_state *op, const struct module *mod, const struct cJSON *values,
                     char **ret_path, struct ao_error *reterr);
/**
 * The CRDs of <module>/crds (files not starting with an ADDON_OPERATOR_CRD_FILTER_PREFIXES
 * prefix, labelled with ADDON_OPERATOR_CRD_EXTRA_LABELS) as object patch operations (JSON);
 * returns 1 with @ret_text, 0 when there are none.
 */
int helm_crd_operations(const struct operator_state *op, const struct module *mod, char **ret_text,
                        struct ao_error *reterr);

/** Find helm and check its version (cluster mode); fails naming HELM_BIN_PATH. */
int helm_start(struct operator_state *op, struct ao_error *reterr);
void helm_done(struct operator_state *op);

struct ao_helm_revision;
/* @last: the release's last revision (revision 0: no release), NULL with @error on failure. */
typedef void helm_status_done(struct operator_state *op, const struct ao_helm_revision *last,
                              const struct ao_error *error, void *userdata);
/** `helm history` of @release. */
int helm_release_status(struct operator_state *op, const char *release, helm_status_done *done,
                        void *userdata, struct ao_error *reterr);

/*
 * helm-monitor.c: release auto-healing. After each helm step the module's rendered objects are
 * checked every HELM_MONITOR_INTERVAL (plus jitter) while nothing of the module runs: a release
 * that is not "deployed", or an object gone that the module's own hooks did not delete, queues
 * a module run.
 */
void helm_monitor_start(struct operator_state *op, struct module *mod, struct ao_helm_manifest *manifest);
void helm_monitor_stop(struct operator_state *op, struct module *mod);
void helm_monitor_note_deleted(struct operator_state *op, struct module *mod, const char *kind,
                               const char *ns, const char *name);
/** The /module/resource-monitor debug dump: an array, one element per monitored module. */
struct cJSON *helm_monitors_dump(struct operator_state *op);
void helm_monitors_free(struct operator_state *op);

/* ---- tasks ------------------------------------------------------------------------------------ */

enum task_type {
        TASK_GLOBAL_HOOK_RUN,
        TASK_MODULE_HOOK_RUN,
        TASK_CONVERGE,
        TASK_MODULE_RUN,
        TASK_MODULE_DELETE,
        TASK_MODULE_PURGE,
        TASK_KUBE_SYNC, /* global hooks: start the monitors, then queue the Synchronization runs */
        _TASK_TYPE_MAX,
};

/* Why a hook runs: decides what its value changes cause afterwards. */
struct hook_task {
        struct module *module; /* borrowed; NULL for global hooks */
        struct ao_hook *hook;  /* borrowed */
        enum ao_binding_type binding;
        char *binding_name; /* owned: the binding's name for logs */
        char
            *activation; /* owned: what caused the run ("OperatorStartup", "Schedule", ...), a metric label */
        bool kube_sync;  /* a Synchronization run: events of the binding flow once it starts */
        size_t kube_binding; /* which kubernetes binding, with kube_sync */
};

/* What a hook run is for: log context and metric labels. */
struct hook_run_info {
        const char *binding_name;
        const char *queue;
        const char *activation;
        bool allow_failure;
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
        struct module *module; /* borrowed (modules never go away while running) */
        char *release;         /* owned: TASK_MODULE_PURGE's release */
        char *activation;      /* owned: why it runs, a metric label */
};

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
        struct ao_config_map *config_map;   /* the ConfigMap config store (kube.c) */
        char *state_dir;                    /* owned */
        const struct release_ops *releases; /* how releases are made (helm_local_ops without a cluster) */
        struct helm_state *helm;            /* the helm binary (helm-release.c), with a cluster */
        struct ao_source *log_wakeup;
        struct ao_source *log_writable;

        struct ao_hook *global_hooks; /* owned, once loaded */
        size_t n_global_hooks;
        struct ao_throttle *global_throttles;
        struct schedule_set *global_schedules;

        struct modules modules;
        struct values_store values;
        char **enabled_modules;          /* owned, NULL-terminated: enabled modules in run order */
        struct ao_metrics *metrics;      /* owned: the operator's metrics (/metrics) */
        struct ao_metrics *hook_metrics; /* owned: metrics hooks write (/metrics/hooks) */
        struct operator_metrics *om;     /* owned: families and timers (metrics.c) */
        struct ao_http *http;            /* owned: the HTTP server thread */
        struct ao_source *sighup;        /* owned: SIGHUP reloads all modules */
        struct kube_state *kube;         /* owned: the cluster side (kube.c); NULL without a cluster */
        bool first_converge_done;
        bool converge_running;
        uint64_t converge_started_usec;
        size_t converge_tasks_done;      /* tasks finished since the start-up converge began */
        uint64_t converge_progress_usec; /* when the last progress line was logged */
        unsigned converges;
};

/* hook-task.c */
/* What a run's own patches changed (compared around their application, so runs in other queues never count). */
struct hook_call_effects {
        bool global_values_changed;
        bool module_values_changed; /* the run's module's values; false for global hooks */
};
typedef void hook_call_done(struct operator_state *op, bool ok, const struct hook_call_effects *effects,
                            void *userdata);
/**
 * Run @hook (of @mod, NULL for global hooks) for @binding with @contexts
 * (borrowed), apply what it returns (values and config patches) and call
 * @done. Returns < 0 (logged, @done not called) when it cannot start.
 */
int hook_call(struct operator_state *op, struct module *mod, struct ao_hook *hook,
              const struct hook_run_info *info, const struct cJSON *contexts, hook_call_done *done,
              void *userdata);
/** The handler of TASK_GLOBAL_HOOK_RUN and TASK_MODULE_HOOK_RUN. */
void hook_task_handle(struct operator_state *op, struct ao_task *t);
void hook_task_free(void *payload);
/** A hook task for @binding of @hook, its context built from @contexts (taken). */
struct ao_task_spec hook_task_spec(struct module *mod, struct ao_hook *hook, enum ao_binding_type binding,
                                   const char *binding_name, const char *activation, struct cJSON *contexts,
                                   bool allow_failure, struct ao_throttle *throttle, char **ret_description,
                                   char **ret_key);
/**
 * Queue hook runs for @type of every hook in @hooks that has it, ordered by (order, name), right
 * before @before (NULL: at the tail of main).
 */
void push_ordered_hook_runs(struct operator_state *op, struct ao_task *before, struct module *mod,
                            struct ao_hook *hooks, size_t n, enum ao_binding_type type,
                            const char *activation);

/* converge.c */
void converge_queue(struct operator_state *op, const char *reason);
void converge_handle(struct operator_state *op, struct ao_task *t);
void converge_task_free(void *payload);

/* module-run.c */
void module_run_queue(struct operator_state *op, struct module *mod, struct ao_task *after,
                      const char *activation);
void module_task_handle(struct operator_state *op, struct ao_task *t);
void module_task_free(void *payload);
bool module_run_pending(struct operator_state *op, const struct module *mod);

/* schedules.c: arm the schedule bindings of @mod's hooks (NULL: the global hooks), or stop them. */
void schedules_enable(struct operator_state *op, struct module *mod);
void schedules_disable(struct operator_state *op, struct module *mod);
/** One throttle per hook from its settings (executionMinPeriod, executionBurst). */
struct ao_throttle *throttles_new(const struct ao_hook *hooks, size_t n);

/* kube.c */
/** Connect when a cluster is configured (and not --local); without one, op->kube stays NULL. */
int kube_start(struct operator_state *op, struct ao_error *reterr);
void kube_done(struct operator_state *op);
bool kube_has_bindings(const struct ao_hook *hooks, size_t n);
typedef void kube_synced_handler(struct operator_state *op, bool ok, void *userdata);
/**
 * Start the monitors of @mod's hooks (NULL: the global hooks) once discovery is there, and call
 * @done when all of them have their initial state (ok false: a binding names an unknown kind,
 * or the owner was stopped). Needs op->kube.
 */
void kube_when_synced(struct operator_state *op, struct module *mod, kube_synced_handler *done,
                      void *userdata);
/** Stop @mod's monitors (NULL: the global hooks'). */
void kube_stop(struct operator_state *op, struct module *mod);
/** A Synchronization context array for binding @binding of @hook, from the current objects. */
struct cJSON *kube_sync_contexts(struct operator_state *op, struct module *mod, struct ao_hook *hook,
                                 size_t binding);
/** From now on, events of that binding become hook runs. */
void kube_unlock(struct operator_state *op, struct module *mod, const struct ao_hook *hook, int binding);
/** Where @hook's snapshots come from (empty without monitors). */
struct ao_snapshot_source kube_snapshot_source(struct operator_state *op, struct module *mod,
                                               const struct ao_hook *hook);
/** Re-read the snapshots and Synchronization objects of @contexts just before a run. */
void kube_refresh_contexts(struct operator_state *op, struct module *mod, const struct ao_hook *hook,
                           struct cJSON *contexts);
typedef void kube_config_handler(const struct cJSON *data, void *userdata);
typedef void kube_config_invalid_handler(const struct ao_error *error, void *userdata);
/**
 * Open ConfigMap ADDON_OPERATOR_CONFIG_MAP in kube_config_namespace() as op->config_map and wait
 * (running the loop: called before it runs) for discovery and its first state. An invalid
 * ConfigMap at start is an error, as an invalid config file is.
 */
int kube_config_map_open(struct operator_state *op, kube_config_handler *on_change,
                         kube_config_invalid_handler *on_invalid, struct ao_error *reterr);
/**
 * ADDON_OPERATOR_HA: take part in the leader election and wait (running the loop) until this
 * replica leads. Losing the lease later starts a graceful shutdown (exit code 0).
 */
int kube_wait_leadership(struct operator_state *op, struct ao_error *reterr);
/** ADDON_OPERATOR_NAMESPACE, else the kubeconfig's or service account's namespace, else "default". */
const char *kube_config_namespace(const struct operator_state *op);
typedef void kube_patches_done(const struct ao_error *error, void *userdata);
/**
 * Parse a hook's KUBERNETES_PATCH_PATH output and apply it through the object patcher's client.
 * A parse error is returned at once (@done not called); otherwise @done runs once, from the loop.
 * At shutdown a run still going is cancelled and @done gets an error.
 */
int kube_apply_object_patches(struct operator_state *op, struct module *mod, const char *text, size_t len,
                              kube_patches_done *done, void *userdata, struct ao_error *reterr);
struct ao_helm_manifest;
/* @absent: "Kind namespace/name" of the first object missing, or NULL when all exist. */
typedef void kube_absent_done(struct operator_state *op, const char *absent, const struct ao_error *error,
                              void *userdata);
/**
 * Which object of @m is missing from the cluster (objects without a namespace are looked for in
 * @default_ns). @done runs once, later; at shutdown with an error.
 */
int kube_find_absent(struct operator_state *op, const struct ao_helm_manifest *m, const char *default_ns,
                     bool monitor /* the release monitors' client */, kube_absent_done *done, void *userdata,
                     struct ao_error *reterr);
/** TASK_KUBE_SYNC. */
void kube_sync_task_handle(struct operator_state *op, struct ao_task *t);
/** Queue the global Synchronization step (after the onStartup hooks). */
void kube_sync_task_queue(struct operator_state *op);

/*
 * lifecycle.c: load modules, values and the config, queue the start-up; and tear it all down.
 * lifecycle_start() returns 0, 1 when a signal stopped it while it waited (for the API server or
 * the lease), or < 0 on failure (logged).
 */
int lifecycle_start(struct operator_state *op);
void lifecycle_done(struct operator_state *op);

/* metrics.c */
int metrics_init(struct operator_state *op);
void metrics_done(struct operator_state *op);
void metrics_sample_queues(struct operator_state *op);
void metrics_hook_run(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                      const struct hook_run_info *info, const struct ao_proc_result *r, bool ok);
void metrics_task_wait(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                       const struct hook_run_info *info, uint64_t wait_usec);
void metrics_hook_ops(struct operator_state *op, const struct module *mod, const struct ao_hook *hook,
                      const struct ao_metric_ops *ops);
void metrics_discover_error(struct operator_state *op);
void metrics_converge_done(struct operator_state *op, const char *reason, uint64_t usec);
void metrics_module_run(struct operator_state *op, const struct module *mod, const char *activation,
                        uint64_t usec, bool ok);
void metrics_module_helm(struct operator_state *op, const struct module *mod, const char *activation,
                         uint64_t usec);
/** helm_operation_seconds{operation}: "template", "check-upgrade", "upgrade". */
void metrics_helm_operation(struct operator_state *op, const struct module *mod, const char *activation,
                            const char *operation, uint64_t usec);
void metrics_helm_redeployed(struct operator_state *op, const struct module *mod);
void metrics_absent_resource(struct operator_state *op, const struct module *mod, const char *resource);
void metrics_module_delete_failed(struct operator_state *op, const struct module *mod);
/** Drop every series of @module (it was deleted or purged). */
void metrics_module_gone(struct operator_state *op, const char *module);
void metrics_binding_count(struct operator_state *op, const struct module *mod, const struct ao_hook *hooks,
                           size_t n);
void metrics_config_error(struct operator_state *op);

/* debug-api.c: the main-thread side of the debug socket and /status/converge (http.h). */
int debug_api_handle(const char *path, const char *query, struct cJSON **ret_body, void *userdata);

/* shared helpers */
struct ao_queue *operator_queue(struct operator_state *op, const char *name);
/** "<module>/<hook>" or "<hook>": the combine key and the log name. malloc'd. */
char *hook_identity(const struct module *mod, const struct ao_hook *hook);
