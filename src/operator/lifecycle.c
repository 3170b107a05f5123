/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wiring the lifecycle: modules, values and the stored config are loaded
 * first (a bad one stops the start with exit code 1), the queues and
 * schedules are created, the global hooks are asked for their
 * configuration, and then the start-up tasks go into the main queue:
 * global onStartup hooks in order, then the first "reload all modules".
 * Config file edits are classified as the documentation's step 16 says.
 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/config-data.h"
#include "ao/config-file.h"
#include "ao/config-map.h"
#include "ao/http.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/schedule.h"
#include "ao/schema.h"
#include "ao/shutdown.h"
#include "ao/values-store.h"
#include "ao/yaml.h"
#include "internal.h"

/* ---- config changes (step 16) ------------------------------------------------------------------- */

static bool same_json(const cJSON *a, const cJSON *b)
{
        if (!a || !b)
                return a == b;
        _cleanup_free_ char *x = ao_json_canonical(a);
        _cleanup_free_ char *y = ao_json_canonical(b);
        return strcmp(x, y) == 0;
}

static bool is_enabled_key(const char *key)
{
        size_t n = strlen(key);
        return n > 7 && strcmp(key + n - 7, "Enabled") == 0;
}

/* Global section or any enabled flag changed: the set of modules or every module's input changed. */
static bool needs_reload(const cJSON *old, const cJSON *new)
{
        if (!same_json(cJSON_GetObjectItemCaseSensitive(old, "global"),
                       cJSON_GetObjectItemCaseSensitive(new, "global")))
                return true;
        const cJSON *sides[2][2] = {{old, new}, {new, old}};
        for (size_t s = 0; s < 2; s++)
                for (const cJSON *k = sides[s][0]->child; k; k = k->next)
                        if (is_enabled_key(k->string) &&
                            !same_json(k, cJSON_GetObjectItemCaseSensitive(sides[s][1], k->string)))
                                return true;
        return false;
}

/* "config file '/etc/config.yaml'" or "ConfigMap default/addon-operator", for messages. */
static const char *config_source(struct operator_state *op)
{
        static char buf[512];
        if (op->config_map)
                (void) snprintf(buf, sizeof(buf), "ConfigMap %s", ao_config_map_name(op->config_map));
        else
                (void) snprintf(buf, sizeof(buf), "config file '%s'",
                                op->config_file ? ao_config_file_path(op->config_file) : "");
        return buf;
}

static void on_config_change(const cJSON *data, void *userdata)
{
        struct operator_state *op = userdata;
        struct ao_error err = {0};
        if (ao_values_store_validate_config(op->values, data, &err) < 0) {
                /* As documented: an invalid config is logged, the previous one stays, nothing runs. */
                ao_log(AO_LOG_ERROR, "%s changed but is invalid, keeping the previous config: %s",
                       config_source(op), err.msg);
                op_metrics_config_error(op);
                return;
        }
        cJSON *old = cJSON_Duplicate(ao_values_store_config(op->values), true);
        ao_values_store_set_config(op->values, data);
        op_metrics_maintenance(op, data);
        if (needs_reload(old, data)) {
                ao_log(AO_LOG_INFO, "config changed: global values or enabled flags, reloading all modules");
                tasks_request_converge(op, "ConfigChanged");
        } else {
                for (size_t i = 0; i < op->modules.n; i++) {
                        struct module *mod = &op->modules.items[i];
                        if (same_json(cJSON_GetObjectItemCaseSensitive(old, mod->values_key),
                                      cJSON_GetObjectItemCaseSensitive(data, mod->values_key)) &&
                            modules_in_maintenance(mod, old) == modules_in_maintenance(mod, data))
                                continue;
                        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}),
                                    "config changed: module '%s' section", mod->name);
                        if (mod->enabled)
                                tasks_request_module_run(op, mod, NULL, "ConfigChanged");
                }
        }
        cJSON_Delete(old);
}

static void on_config_invalid(const struct ao_error *error, void *userdata)
{
        op_metrics_config_error(userdata);
        ao_log(AO_LOG_ERROR, "config changed but cannot be used, keeping the previous config: %s",
               error->msg);
}

/* With a cluster and no --config-file: the ConfigMap. */
static int open_config_map(struct operator_state *op, struct ao_error *reterr)
{
        int r = cluster_config_map_open(op, on_config_change, on_config_invalid, reterr);
        if (r < 0)
                return r;
        ao_values_store_set_config(op->values, ao_config_map_data(op->config_map));
        ao_log(AO_LOG_INFO, "config: ConfigMap %s (watched)", ao_config_map_name(op->config_map));
        return 0;
}

static int open_config(struct operator_state *op, struct ao_error *reterr)
{
        const char *path = op->settings->config_file;
        if (!path[0] && op->kube)
                return open_config_map(op, reterr);
        if (!path[0]) {
                ao_log(AO_LOG_INFO,
                       "local mode without --config-file: config values are empty and config patches "
                       "are kept in memory only");
                return 0;
        }
        struct ao_config_file_options options = {
            .path = path, .on_change = on_config_change, .on_invalid = on_config_invalid, .userdata = op};
        int r = ao_config_file_open(op->reactor, &options, &op->config_file, reterr);
        if (r < 0)
                return r;
        ao_values_store_set_config(op->values, ao_config_file_data(op->config_file));
        ao_log(AO_LOG_INFO, "config: '%s' (watched)", path);
        return 0;
}

/* ---- start-up --------------------------------------------------------------------------------- */

/* The values store with the global section's schema; the modules add theirs. */
static int values_open(struct operator_state *op, struct ao_error *reterr)
{
        op->values = ao_values_store_new();
        op->global.values = ao_values_store_global(op->values);
        _cleanup_free_ char *openapi = ao_xasprintf("%s/openapi", op->settings->global_hooks_dir);
        struct ao_schema *schema = NULL;
        if (ao_schema_load_dir(openapi, &schema, reterr) < 0)
                return ao_error_prefix(reterr, "global values");
        ao_values_store_set_global_schema_take(op->values, schema);
        return 0;
}

/* One line per hook: what it is bound to, so a user sees at once that their configuration was read. */
static void log_hook_bindings(const struct operator_state *op, const struct ao_hook *hook)
{
        char summary[512];
        size_t used = 0;
        summary[0] = '\0';
        for (int t = 0; t < _AO_BINDING_TYPE_MAX; t++) {
                if (!ao_hook_config_has(&hook->config, (enum ao_binding_type) t))
                        continue;
                int n = snprintf(summary + used, sizeof(summary) - used, "%s%s", used ? ", " : "",
                                 ao_binding_type_to_string((enum ao_binding_type) t));
                if (n < 0 || (size_t) n >= sizeof(summary) - used)
                        break;
                used += (size_t) n;
        }
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"hook", hook->name}, {"profile", hook->profile->name}),
                    "global hook '%s' loaded: %s", hook->name, used ? summary : "no bindings");
        for (size_t i = 0; !op->kube && i < hook->config.n_kubernetes; i++)
                ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"hook", hook->name}),
                            "hook '%s': kubernetes binding '%s' needs a cluster, skipping it", hook->name,
                            hook->config.kubernetes[i].name);
}

static void on_global_hooks_loaded(struct ao_hook *hooks, size_t n, const struct ao_error *error,
                                   void *userdata)
{
        struct operator_state *op = userdata;
        if (error) {
                /* The documented contract: a global hook that cannot say what it binds to stops the operator. */
                ao_log(AO_LOG_ERROR, "global hooks: %s", error->msg);
                ao_reactor_exit(op->reactor, 1);
                return;
        }
        hook_owner_set_hooks(&op->global, hooks, n);
        op_metrics_binding_count(op, NULL, hooks, n);
        for (size_t i = 0; i < n; i++)
                log_hook_bindings(op, &hooks[i]);
        ao_log(AO_LOG_INFO, "global hooks: %zu loaded", n);
        tasks_push_ordered_hook_runs(op, NULL, &op->global, AO_BINDING_ON_STARTUP, "OperatorStartup");
        if (op->kube && hook_owner_has_kube_bindings(&op->global))
                tasks_push_kube_sync(op);
        schedules_enable(op, &op->global);
        tasks_request_converge(op, "OperatorStartup");
}

static int load_global_hooks(struct operator_state *op, struct ao_error *reterr)
{
        const struct ao_settings *s = op->settings;
        _cleanup_free_ char *root = ao_hooks_global_root(s->global_hooks_dir);
        struct ao_hooks_load_request req = {
            .root = root,
            .kind = AO_HOOK_GLOBAL,
            .profiles = op->profiles,
            .default_profile = s->sandbox_profile,
            .timeout_usec = s->hook_timeout_usec,
            .max_parallel = ao_hooks_config_parallelism(),
        };
        return ao_hooks_load(op->runner, &req, on_global_hooks_loaded, op, reterr);
}

/* SIGHUP: reload all modules, as after a global values change (the signal daemons use for "reload"). */
static int on_sighup(struct ao_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        (void) s, (void) si;
        struct operator_state *op = userdata;
        ao_log(AO_LOG_INFO, "SIGHUP received: reloading all modules");
        tasks_request_converge(op, "ReloadSignal");
        return 0;
}

static int setup_queues(struct operator_state *op, struct ao_error *reterr)
{
        int r = engine_start(op, reterr);
        if (r >= 0)
                r = ao_schedule_new(op->reactor, &op->schedule, reterr);
        if (r >= 0 && (r = ao_reactor_add_signal(op->reactor, &op->sighup, SIGHUP, on_sighup, op)) < 0)
                ao_error_set(reterr, r, "cannot watch SIGHUP: %s", strerror(-r));
        return r;
}

/* /metrics and probes over TCP, the debug API over the unix socket; no socket directory is only a warning. */
static int start_http(struct operator_state *op, struct ao_error *reterr)
{
        const struct ao_settings *s = op->settings;
        struct ao_http_options options = {
            .listen_address = s->listen_address,
            .listen_port = s->listen_port,
            .unix_socket = s->debug_unix_socket,
            .metrics = op->metrics,
            .hook_metrics = op->hook_metrics,
            .handler = state_api_handle,
            .userdata = op,
        };
        int r = ao_http_start(op->reactor, &options, &op->http, reterr);
        if (r == -ENOENT && s->debug_unix_socket[0]) {
                ao_log(AO_LOG_WARN, "debug socket: %s; the debug commands will not work", reterr->msg);
                options.unix_socket = NULL;
                r = ao_http_start(op->reactor, &options, &op->http, reterr);
        }
        if (r >= 0)
                ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"address", s->listen_address}),
                            "http: listening on %s:%u (/metrics, /healthz, /readyz)", s->listen_address,
                            (unsigned) ao_http_port(op->http));
        return r;
}

static void log_modules(const struct modules *m)
{
        for (size_t i = 0; i < m->n; i++)
                ao_log_with(AO_LOG_DEBUG, AO_LOG_FIELDS({"module", m->items[i].name}),
                            "module '%s' (order %u) in '%s'", m->items[i].name, m->items[i].order,
                            m->items[i].dir);
        ao_log(AO_LOG_INFO, "modules: %zu found", m->n);
}

/*
 * ADDON_OPERATOR_HA: a follower serves /metrics and its /readyz answers as the leader's does
 * (no leader known yet: 500) while it waits for the lease; once it leads, /readyz is its own
 * again: ready when it has converged.
 */
static int lead(struct operator_state *op, struct ao_error *reterr)
{
        ao_http_follow_leader(op->http, "", NULL);
        int r = cluster_wait_leadership(op, reterr);
        ao_http_stop_following(op->http);
        return r;
}

int lifecycle_start(struct operator_state *op)
{
        const struct ao_settings *s = op->settings;
        struct ao_error err = {0};
        op->state_dir = s->state_dir[0] ? ao_xstrdup(s->state_dir) : ao_xasprintf("%s/state", s->tmp_dir);
        op->releases = &release_local_ops;
        runtime_config_init(op);
        int r = values_open(op, &err);
        if (r >= 0)
                r = modules_load(s, op->values, &op->modules, &err);
        if (r >= 0)
                r = op_metrics_init(op) < 0 ? ao_error_set(&err, -EIO, "metrics: cannot start the timers")
                                            : 0;
        if (r >= 0 && !s->local)
                r = cluster_start(op, &err);
        /* Releases need a cluster: without one they stay in the state directory (release-local.c). */
        if (r >= 0 && op->kube)
                r = release_helm_start(op, &err);
        /* Probes and /metrics answer while the operator waits for the API server or the lease. */
        if (r >= 0)
                r = setup_queues(op, &err);
        if (r >= 0)
                r = start_http(op, &err);
        if (r >= 0 && s->ha && op->kube)
                r = lead(op, &err);
        if (r >= 0)
                r = open_config(op, &err);
        if (r >= 0)
                op_metrics_maintenance(op, ao_values_store_config(op->values));
        if (r >= 0 && op->kube)
                r = release_state_open(op, release_monitor_release_changed, &err);
        if (r >= 0)
                r = ao_values_store_validate_config(op->values, ao_values_store_config(op->values), &err);
        if (r >= 0) {
                log_modules(&op->modules);
                r = load_global_hooks(op, &err);
        }
        if (r == -ECANCELED) {
                ao_log(AO_LOG_INFO, "stopped before the start-up finished: %s", err.msg);
                return 1;
        }
        if (r < 0) {
                ao_log(AO_LOG_ERROR, "start-up failed: %s", err.msg);
                return r;
        }
        return 0;
}

void lifecycle_done(struct operator_state *op)
{
        /* The HTTP thread asks the main thread about this state: stop it first. */
        op->http = ao_http_stop(op->http);
        op->sighup = ao_source_free(op->sighup);
        /*
         * Their watches and requests belong to the cluster session: before it goes. And before the
         * queues: a release step waiting for them is told it was cancelled, and finishes its task.
         */
        release_monitors_free(op);
        release_state_stop(op);
        engine_done(op);
        for (size_t i = 0; i < op->modules.n; i++)
                schedules_disable(&op->modules.items[i].owner);
        schedules_disable(&op->global);
        if (op->kube)
                bindings_done(op);
        cluster_done(op);
        release_helm_done(op);
        module_render_done(op);
        runtime_config_done(op);
        op->schedule = ao_schedule_free(op->schedule);
        op->config_file = ao_config_file_free(op->config_file);
        hook_owner_done(&op->global);
        modules_done(&op->modules);
        op->values = ao_values_store_free(op->values);
        api_versions_done(op);
        for (char **p = op->enabled_modules; p && *p; p++)
                free(*p);
        free(op->enabled_modules);
        free(op->state_dir);
        op_metrics_done(op);
}
