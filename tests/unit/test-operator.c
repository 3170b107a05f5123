/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lifecycle core in one process: the task engine, a converge's phases and what a hook
 * run's outputs change, with real hook processes but a fake release step (a table of
 * release_ops recording what it is asked) and a fake cluster (this file defines every
 * cluster_* function, so cluster.c is never linked: object patches are "applied" by a timer
 * that succeeds or fails as the case wants).
 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "../../src/operator/internal.h"
#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/hook-config.h"
#include "ao/hook-run.h"
#include "ao/log.h"
#include "ao/object-patch.h"
#include "ao/proc.h"
#include "ao/queue.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/schema.h"
#include "ao/settings.h"
#include "ao/values-store.h"
#include "ao/yaml.h"

static char scratch[] = "/tmp/test-operator.XXXXXX";
static struct operator_state op;
static struct ao_cli cli;

/* ---- the fake cluster ------------------------------------------------------------------------ */

static struct {
        unsigned resolves, applies;
        unsigned fail_applies; /* the next this many applies fail */
        struct ao_source *timer;
        cluster_patches_done *done;
        void *userdata;
} cluster;

static int on_apply_timer(struct ao_source *s, uint64_t now, void *userdata)
{
        (void) s, (void) now, (void) userdata;
        struct ao_error err = {0};
        bool fail = cluster.fail_applies > 0;
        if (fail) {
                cluster.fail_applies--;
                ao_error_set(&err, -EIO, "CreateOrUpdate ConfigMap d/x: HTTP 500: the fake says no");
        }
        cluster.done(fail ? &err : NULL, cluster.userdata);
        return 0;
}

int cluster_resolve_object_patches(struct operator_state *o, const struct ao_object_patch_ops *ops,
                                   struct ao_error *reterr)
{
        (void) o;
        cluster.resolves++;
        for (size_t i = 0; i < ops->n; i++)
                if (strcmp(ops->items[i].kind, "Nope") == 0)
                        return ao_error_set(reterr, -ENOENT, "object patches: no kind Nope");
        return 0;
}

int cluster_apply_object_patches(struct operator_state *o, struct ao_object_patch_ops *ops,
                                 cluster_patches_done *done, void *userdata, struct ao_error *reterr)
{
        (void) reterr;
        cluster.applies++;
        ao_object_patch_ops_done(ops);
        cluster.done = done;
        cluster.userdata = userdata;
        if (!cluster.timer &&
            ao_reactor_add_time_relative(o->reactor, &cluster.timer, 0, on_apply_timer, NULL) < 0)
                tap_bail("cannot add a timer");
        (void) ao_source_set_time_relative(cluster.timer, 1000);
        (void) ao_source_set_enabled(cluster.timer, AO_SOURCE_ONESHOT);
        return 0;
}

int cluster_start(struct operator_state *o, struct ao_error *reterr)
{
        (void) o, (void) reterr;
        return 0;
}

void cluster_done(struct operator_state *o)
{
        (void) o;
}

void cluster_on_discovery(struct operator_state *o, void (*handler)(struct operator_state *op))
{
        (void) o, (void) handler;
}

bool cluster_discovery_ready(const struct operator_state *o)
{
        (void) o;
        return false;
}

bool cluster_refresh_discovery(struct operator_state *o)
{
        (void) o;
        return false;
}

struct ao_kube_discovery *cluster_discovery(struct operator_state *o)
{
        (void) o;
        return NULL;
}

struct ao_informers *cluster_informers(struct operator_state *o)
{
        (void) o;
        return NULL;
}

struct ao_informers *cluster_monitor_informers(struct operator_state *o)
{
        (void) o;
        return NULL;
}

struct ao_kube_client *cluster_monitor_client(struct operator_state *o)
{
        (void) o;
        return NULL;
}

struct ao_jq_cache *cluster_jq(struct operator_state *o)
{
        (void) o;
        return NULL;
}

struct ao_metric_family *cluster_binding_family(struct operator_state *o, int which)
{
        (void) o, (void) which;
        return NULL;
}

int cluster_config_map_open(struct operator_state *o, cluster_config_handler *on_change,
                            cluster_config_invalid_handler *on_invalid, struct ao_error *reterr)
{
        (void) o, (void) on_change, (void) on_invalid;
        return ao_error_set(reterr, -ENOTSUP, "no ConfigMap in this test");
}

int cluster_wait_leadership(struct operator_state *o, struct ao_error *reterr)
{
        (void) o;
        return ao_error_set(reterr, -ENOTSUP, "no Lease in this test");
}

const char *cluster_config_namespace(const struct operator_state *o)
{
        (void) o;
        return "default";
}

int cluster_find_absent(struct operator_state *o, const struct ao_helm_manifest *m, const char *default_ns,
                        bool monitor, cluster_absent_done *done, void *userdata, struct ao_error *reterr)
{
        (void) o, (void) m, (void) default_ns, (void) monitor, (void) done, (void) userdata;
        return ao_error_set(reterr, -ENOTSUP, "no objects in this test");
}

/* ---- the fake release step --------------------------------------------------------------------- */

static char releases[512]; /* "upgrade app; remove old; ..." */

static void note_release(const char *what, const char *name)
{
        size_t used = strlen(releases);
        snprintf(releases + used, sizeof(releases) - used, "%s%s %s", used ? "; " : "", what, name);
}

static int fake_upgrade(struct operator_state *o, struct module *mod, const cJSON *values,
                        const char *activation, release_done *done, void *userdata, struct ao_error *reterr)
{
        (void) values, (void) activation, (void) reterr;
        note_release("upgrade", mod->name);
        done(o, NULL, userdata);
        return 0;
}

static int fake_remove(struct operator_state *o, const char *release, release_done *done, void *userdata,
                       struct ao_error *reterr)
{
        (void) reterr;
        note_release("remove", release);
        done(o, NULL, userdata);
        return 0;
}

static int fake_exists(struct operator_state *o, const char *release, release_exists_done *done,
                       void *userdata, struct ao_error *reterr)
{
        (void) release, (void) reterr;
        done(o, 1, NULL, userdata);
        return 0;
}

static int fake_list(struct operator_state *o, release_list_done *done, void *userdata,
                     struct ao_error *reterr)
{
        (void) reterr;
        char **names = ao_xcalloc(1, sizeof(char *));
        done(o, names, NULL, userdata);
        return 0;
}

static const struct release_ops fake_releases = {
    .name = "fake", .upgrade = fake_upgrade, .remove = fake_remove, .exists = fake_exists, .list = fake_list};

/* ---- files ------------------------------------------------------------------------------------- */

static void write_file(const char *rel, const char *text, mode_t mode)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/%s", scratch, rel);
        for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                (void) mkdir(path, 0755);
                *p = '/';
        }
        FILE *f = fopen(path, "w");
        if (!f)
                tap_bail("cannot write a test file");
        fputs(text, f);
        fclose(f);
        chmod(path, mode);
}

static char *read_file(const char *rel)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/%s", scratch, rel);
        FILE *f = fopen(path, "r");
        if (!f)
                return ao_xstrdup("");
        char *buf = ao_xcalloc(1, 65536);
        size_t n = fread(buf, 1, 65535, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

/* A hook that says which binding it ran for in runs.log, then does what <name>.run says. */
static void write_hook(const char *rel, const char *name, const char *config)
{
        _cleanup_free_ char *body = ao_xasprintf(
            "#!/bin/sh\n"
            "if [ \"$1\" = --config ]; then echo '%s'; exit 0; fi\n"
            "b=$(grep -o '\"binding\":\"[^\"]*\"' \"$BINDING_CONTEXT_PATH\" | head -n1 | cut -d'\"' -f4)\n"
            "echo \"%s:$b\" >>\"%s/runs.log\"\n"
            "[ -f \"%s/%s.run\" ] && . \"%s/%s.run\"\n"
            "exit 0\n",
            config, name, scratch, scratch, name, scratch, name);
        write_file(rel, body, 0755);
}

/*
 * What the global hook does on its next schedule runs (shell, sourced). Its beforeAll and
 * afterAll runs (a converge its value changes request) do nothing.
 */
static void global_hook_does(const char *script)
{
        _cleanup_free_ char *text = ao_xasprintf("if [ \"$b\" = tick ]; then\n%s\nfi\n", script);
        write_file("g.run", text, 0644);
}

/* ---- the loop ---------------------------------------------------------------------------------- */

static bool main_queue_idle(void)
{
        return ao_queue_is_idle(tasks_queue(&op, AO_QUEUE_MAIN));
}

static bool first_converge_done(void)
{
        return op.first_converge_done && main_queue_idle();
}

static void run_until(bool (*done)(void))
{
        uint64_t give_up = ao_clock_now_usec() + 60 * AO_USEC_PER_SEC;
        while (!done() && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(op.reactor, 100000);
        if (!done())
                tap_bail("the operator never got there");
}

static struct ao_hook *loaded_hooks;
static size_t n_loaded;
static bool hooks_loaded;

static void on_loaded(struct ao_hook *hooks, size_t n, const struct ao_error *error, void *userdata)
{
        (void) userdata;
        if (error)
                tap_bail(error->msg);
        loaded_hooks = hooks;
        n_loaded = n;
        hooks_loaded = true;
}

static bool global_hooks_loaded(void)
{
        return hooks_loaded;
}

/* ---- set-up ------------------------------------------------------------------------------------ */

/*
 * A beforeHelm hook of module par-<me> that says it started and waits (at most 20 s) for module
 * par-<other>'s: both log "saw" only when they run at the same time. With @fail_first its first
 * run fails afterwards.
 */
static void write_parallel_hook(const char *me, const char *other, bool fail_first)
{
        _cleanup_free_ char *rel = ao_xasprintf("modules/002-par-%s/hooks/p.sh", me);
        _cleanup_free_ char *body = ao_xasprintf(
            "#!/bin/sh\n"
            "if [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"beforeHelm\":1}'; exit 0; fi\n"
            "d=%s\n"
            "touch $d/%s.started\n"
            "i=0; while [ ! -e $d/%s.started ] && [ $i -lt 2000 ]; do i=$((i+1)); sleep 0.01; done\n"
            "if [ -e $d/%s.started ]; then echo %s:saw >>$d/par.log; else echo %s:alone >>$d/par.log; fi\n"
            "if %s && [ ! -e $d/%s.failed ]; then touch $d/%s.failed; echo %s:fails >>$d/par.log; exit 1; "
            "fi\n"
            "exit 0\n",
            scratch, me, other, other, me, me, fail_first ? "true" : "false", me, me, me);
        write_file(rel, body, 0755);
}

static void write_tree(void)
{
        write_hook("global/hooks/g.sh", "g",
                   "{\"configVersion\":\"v1\",\"beforeAll\":1,\"afterAll\":1,"
                   "\"schedule\":[{\"name\":\"tick\",\"crontab\":\"0 0 1 1 *\"}]}");
        write_file("global/openapi/config-values.yaml",
                   "type: object\nproperties:\n  limit:\n    type: integer\n", 0644);
        write_hook("modules/001-app/hooks/h.sh", "h", "{\"configVersion\":\"v1\",\"beforeHelm\":1}");
        write_file("modules/values.yaml",
                   "appEnabled: true\nparAEnabled: false\nparBEnabled: false\nglobal:\n  list: []\n", 0644);
        write_parallel_hook("a", "b", false);
        write_parallel_hook("b", "a", true);
}

static void setup(void)
{
        if (!mkdtemp(scratch))
                tap_bail("mkdtemp");
        write_tree();
        _cleanup_free_ char *modules = ao_xasprintf("MODULES_DIR=%s/modules", scratch);
        _cleanup_free_ char *global = ao_xasprintf("GLOBAL_HOOKS_DIR=%s/global", scratch);
        _cleanup_free_ char *tmp = ao_xasprintf("ADDON_OPERATOR_TMP_DIR=%s/tmp", scratch);
        _cleanup_free_ char *state = ao_xasprintf("ADDON_OPERATOR_STATE_DIR=%s/state", scratch);
        char *envp[] = {modules, global, tmp, state, "ADDON_OPERATOR_RETRY_DELAY_SCALE=0.001", NULL};
        char *argv[] = {"addon-operator", "start", NULL};
        struct ao_error err = {0};
        if (ao_cli_parse(2, argv, envp, &cli, &err) < 0)
                tap_bail(err.msg);
        op.settings = &cli.settings;
        const char *backend = getenv("AO_REACTOR");
        if (ao_reactor_new(ao_reactor_backend_from_string(backend ? backend : "auto"), &op.reactor, &err) < 0)
                tap_bail(err.msg);
        struct ao_proc_options popt = {.spawner_path = getenv("AO_SPAWNER"), .subreaper = true};
        if (ao_proc_new(op.reactor, &popt, &op.proc, &err) < 0)
                tap_bail(err.msg);
        struct ao_hook_runner_options ropt = {.tmp_dir = cli.settings.tmp_dir};
        if (ao_hook_runner_new(op.proc, &ropt, &op.runner, &err) < 0)
                tap_bail(err.msg);
        if (ao_sandbox_profiles_load(NULL, &op.profiles, &err) < 0)
                tap_bail(err.msg);
        op.default_profile = ao_sandbox_profiles_find(op.profiles, cli.settings.sandbox_profile);
        op.values = ao_values_store_new();
        op.global.values = ao_values_store_global(op.values);
        _cleanup_free_ char *openapi = ao_xasprintf("%s/global/openapi", scratch);
        struct ao_schema *schema = NULL;
        if (ao_schema_load_dir(openapi, &schema, &err) < 0)
                tap_bail(err.msg);
        ao_values_store_set_global_schema_take(op.values, schema);
        if (modules_load(op.settings, op.values, &op.modules, &err) < 0)
                tap_bail(err.msg);
        if (op_metrics_init(&op) < 0 || engine_start(&op, &err) < 0)
                tap_bail("cannot start the engine");
        op.releases = &fake_releases;
        op.kube = (struct kube_state *) &cluster; /* object patches go to the fake cluster */
        _cleanup_free_ char *root = ao_hooks_global_root(cli.settings.global_hooks_dir);
        struct ao_hooks_load_request req = {.root = root,
                                            .kind = AO_HOOK_GLOBAL,
                                            .profiles = op.profiles,
                                            .default_profile = cli.settings.sandbox_profile,
                                            .timeout_usec = cli.settings.hook_timeout_usec,
                                            .max_parallel = 1};
        if (ao_hooks_load(op.runner, &req, on_loaded, NULL, &err) < 0)
                tap_bail(err.msg);
        run_until(global_hooks_loaded);
        hook_owner_set_hooks(&op.global, loaded_hooks, n_loaded);
}

static void teardown(void)
{
        op.queues = ao_queues_free(op.queues);
        for (size_t i = 0; i < op.modules.n; i++)
                schedules_disable(&op.modules.items[i].owner);
        release_monitors_free(&op);
        hook_owner_done(&op.global);
        modules_done(&op.modules);
        op.values = ao_values_store_free(op.values);
        for (char **p = op.enabled_modules; p && *p; p++)
                free(*p);
        free(op.enabled_modules);
        op_metrics_done(&op);
        cluster.timer = ao_source_free(cluster.timer);
        op.runner = ao_hook_runner_free(op.runner);
        op.proc = ao_proc_free(op.proc);
        ao_sandbox_profiles_free(op.profiles);
        op.reactor = ao_reactor_free(op.reactor);
        ao_cli_done(&cli);
        _cleanup_free_ char *cmd = ao_xasprintf("rm -rf '%s'", scratch);
        if (system(cmd) != 0)
                tap_diag("cannot remove %s", scratch);
}

/* ---- helpers of the cases ----------------------------------------------------------------------- */

static char *global_patches(void)
{
        return ao_json_canonical(ao_values_store_patches(op.values, op.global.values));
}

static char *global_checksum(void)
{
        return ao_values_store_checksum(op.values, op.global.values);
}

/* A schedule run of the global hook, in main: as a tick would queue it. */
static void queue_global_run(bool allow_failure)
{
        struct ao_hook *g = &op.global.hooks[0];
        cJSON *contexts = cJSON_CreateArray();
        cJSON_AddItemToArray(contexts, ao_binding_context_schedule(&g->config, &g->config.schedules[0]));
        struct hook_run_spec s = {.owner = &op.global,
                                  .hook_index = 0,
                                  .binding = AO_BINDING_SCHEDULE,
                                  .binding_name = "tick",
                                  .activation = "Schedule",
                                  .contexts = contexts,
                                  .allow_failure = allow_failure};
        tasks_push_hook_run(&op, AO_QUEUE_MAIN, &s);
}

static uint64_t allowed_failures(void)
{
        return ao_queue_allowed_failures(tasks_queue(&op, AO_QUEUE_MAIN));
}

/* One run that must fail (allowed, so the queue drops it): returns when it is gone. */
static void run_failing(void)
{
        uint64_t before = allowed_failures();
        queue_global_run(true);
        run_until(main_queue_idle);
        if (allowed_failures() != before + 1)
                tap_diag("the run did not fail");
}

#define CREATE_OR_UPDATE(kind)                                                                       \
        "{\"operation\":\"CreateOrUpdate\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"" kind "\"," \
        "\"metadata\":{\"namespace\":\"d\",\"name\":\"x\"}}}"

/* ---- the cases -------------------------------------------------------------------------------- */

static void test_requests_are_idempotent(void)
{
        tasks_request_converge(&op, "OperatorStartup");
        tasks_request_converge(&op, "ConfigChanged");
        struct ao_queue *main_queue = tasks_queue(&op, AO_QUEUE_MAIN);
        tap_is_int(ao_queue_length(main_queue), 1,
                   "a second converge request while one waits queues nothing");
        cJSON *dump = ao_queues_dump(op.queues);
        const cJSON *task =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(dump, 0), "tasks"), 0);
        tap_is_str(cJSON_GetObjectItemCaseSensitive(task, "description")->valuestring,
                   "ConvergeModules:OperatorStartup", "the waiting converge keeps the first reason");
        cJSON_Delete(dump);
}

static void test_converge_phases(void)
{
        run_until(first_converge_done);
        _cleanup_free_ char *runs = read_file("runs.log");
        tap_is_str(runs, "g:beforeAll\nh:beforeHelm\ng:afterAll\n",
                   "converge: beforeAll, the module run (beforeHelm), afterAll");
        tap_is_str(releases, "upgrade app", "the module's release step ran once");
        tap_is_int(op.converges, 1, "one converge");
        tap_ok(op.modules.items[0].enabled && op.modules.items[0].started,
               "the module is enabled and started");

        struct module *app = &op.modules.items[0];
        tasks_request_module_run(&op, app, NULL, "ModuleValuesChanged");
        tasks_request_module_run(&op, app, NULL, "ModuleValuesChanged");
        tap_is_int(ao_queue_length(tasks_queue(&op, AO_QUEUE_MAIN)), 1,
                   "a second module run request while one waits queues nothing");
        run_until(main_queue_idle);
        tap_is_str(releases, "upgrade app; upgrade app", "the requested module run released again");
}

static void test_bad_object_patch_changes_nothing(void)
{
        _cleanup_free_ char *before = global_checksum();
        global_hook_does(
            "echo '[{\"op\":\"add\",\"path\":\"/global/a\",\"value\":1}]' >\"$VALUES_JSON_PATCH_PATH\"\n"
            "echo 'not json {' >\"$KUBERNETES_PATCH_PATH\"\n");
        run_failing();
        _cleanup_free_ char *after = global_checksum();
        _cleanup_free_ char *patches = global_patches();
        tap_is_str(after, before,
                   "a malformed object patch file: the values patch of the run is not applied");
        tap_is_str(patches, "[]", "no stored patch");
        tap_is_int(cluster.applies, 0, "nothing went to the cluster");

        global_hook_does(
            "echo '[{\"op\":\"add\",\"path\":\"/global/b\",\"value\":1}]' >\"$VALUES_JSON_PATCH_PATH\"\n"
            "echo '" CREATE_OR_UPDATE("Nope") "' >\"$KUBERNETES_PATCH_PATH\"\n");
        run_failing();
        _cleanup_free_ char *after_kind = global_checksum();
        tap_is_str(after_kind, before, "a kind the API server does not have: nothing applied");
        tap_is_int(cluster.applies, 0, "nothing went to the cluster");
}

static void test_cluster_failure_then_retry_applies_once(void)
{
        /* An append: applied twice, it would leave two elements (appends are all kept). */
        global_hook_does("echo '[{\"op\":\"add\",\"path\":\"/global/list/-\",\"value\":\"x\"}]' "
                         ">\"$VALUES_JSON_PATCH_PATH\"\n"
                         "echo '" CREATE_OR_UPDATE("ConfigMap") "' >\"$KUBERNETES_PATCH_PATH\"\n");
        cluster.fail_applies = 1;
        queue_global_run(false); /* retried by the queue after its back-off */
        run_until(main_queue_idle);
        _cleanup_free_ char *patches = global_patches();
        tap_is_int(cluster.applies, 2, "the object patches went twice: failed, then retried");
        tap_is_str(patches, "[{\"op\":\"add\",\"path\":\"/global/list/-\",\"value\":\"x\"}]",
                   "the values patch of the retried run is stored exactly once");
        cJSON *values = NULL;
        struct ao_error err = {0};
        if (ao_values_store_values(op.values, op.global.values, &values, &err) < 0)
                tap_bail(err.msg);
        _cleanup_free_ char *list = ao_json_canonical(cJSON_GetObjectItemCaseSensitive(values, "list"));
        tap_is_str(list, "[\"x\"]", "the global values got one element");
        cJSON_Delete(values);
}

static void test_invalid_config_patch_changes_nothing(void)
{
        _cleanup_free_ char *before = global_checksum();
        _cleanup_free_ char *config_before = ao_json_canonical(ao_values_store_config(op.values));
        global_hook_does(
            "echo '[{\"op\":\"add\",\"path\":\"/global/d\",\"value\":1}]' >\"$VALUES_JSON_PATCH_PATH\"\n"
            "echo '[{\"op\":\"add\",\"path\":\"/global/limit\",\"value\":\"many\"}]' "
            ">\"$CONFIG_VALUES_JSON_PATCH_PATH\"\n"
            "echo '" CREATE_OR_UPDATE("ConfigMap") "' >\"$KUBERNETES_PATCH_PATH\"\n");
        unsigned applies = cluster.applies;
        run_failing();
        _cleanup_free_ char *after = global_checksum();
        _cleanup_free_ char *config_after = ao_json_canonical(ao_values_store_config(op.values));
        tap_is_str(after, before, "a config patch the schema refuses: the values patch is not applied");
        tap_is_str(config_after, config_before, "the config is unchanged");
        tap_is_int(cluster.applies, applies, "the object patches did not go to the cluster");
}

static void test_invalid_values_patch_sends_no_object_patch(void)
{
        global_hook_does(
            "echo '[{\"op\":\"remove\",\"path\":\"/global/missing\"}]' >\"$VALUES_JSON_PATCH_PATH\"\n"
            "echo '" CREATE_OR_UPDATE("ConfigMap") "' >\"$KUBERNETES_PATCH_PATH\"\n");
        unsigned applies = cluster.applies;
        run_failing();
        tap_is_int(cluster.applies, applies, "a values patch that does not apply: no object patch is sent");
}

static bool par_released(void)
{
        return strstr(releases, "upgrade par-a") && strstr(releases, "upgrade par-b") && main_queue_idle();
}

/*
 * Two modules of one order, enabled by a global hook: their runs overlap (each hook sees the
 * other's start), and the one whose first run fails is retried alone while the group waits.
 */
static void test_parallel_module_runs(void)
{
        tap_ok(module_job_parallelism(&op) >= 2, "parallel module runs by default (the CPUs, at least 2)");
        global_hook_does("echo '[{\"op\":\"add\",\"path\":\"/parAEnabled\",\"value\":true},"
                         "{\"op\":\"add\",\"path\":\"/parBEnabled\",\"value\":true}]' "
                         ">\"$VALUES_JSON_PATCH_PATH\"\n");
        queue_global_run(false);
        run_until(par_released);
        _cleanup_free_ char *log = read_file("par.log");
        bool a_saw = strstr(log, "a:saw") != NULL, b_saw = strstr(log, "b:saw") != NULL;
        tap_ok(a_saw && b_saw, "the two runs of one order overlapped (par.log: %s)", log);
        tap_ok(strstr(log, "b:fails") && !strstr(log, "alone"), "par-b's first run failed");
        tap_is_int(ao_queue_length(tasks_queue(&op, AO_QUEUE_MAIN)), 0, "the group task finished");
        _cleanup_free_ char *tail = ao_xstrdup(strstr(releases, "upgrade par-"));
        tap_ok(strstr(tail, "upgrade par-a") && strstr(tail, "upgrade par-b") && !strstr(tail, "upgrade app"),
               "both released after the module of the order before (%s)", releases);
}

static bool isolation_queue_idle(void)
{
        struct ao_queue *q = ao_queues_get(op.queues, "isolated-app", false);
        return q && ao_queue_is_idle(q);
}

/*
 * ADDON_OPERATOR_ISOLATE_FAILING_MODULES: a module whose run fails moves to a queue of its own,
 * main goes on with what follows it, and the module is named as holding convergence back until
 * its run succeeds.
 */
static void test_failing_module_is_isolated(void)
{
        struct module *app = &op.modules.items[0];
        cli.settings.isolate_failing_modules = true;
        write_file("h.run", "exit 1\n", 0644);
        write_file("runs.log", "", 0644);
        global_hook_does(":");
        tasks_request_module_run(&op, app, NULL, "Test");
        queue_global_run(false);
        run_until(main_queue_idle);
        _cleanup_free_ char *runs = read_file("runs.log");
        /* The isolated queue retries at once, beside main: only that g ran at all is certain. */
        tap_ok(strncmp(runs, "h:beforeHelm\n", 13) == 0 && strstr(runs, "g:tick\n"),
               "main went on to the next task after the module's run failed (%s)", runs);
        tap_ok(app->isolated, "the module is isolated");
        struct ao_queue *q = ao_queues_get(op.queues, "isolated-app", false);
        tap_is_int(q ? ao_queue_length(q) : 0, 1, "its run retries in queue isolated-app");
        _cleanup_free_ char *held = readiness_held_back(&op);
        tap_is_str(held ? held : "", "'app'", "it is named as holding convergence back");
        _cleanup_free_ char *h_run = ao_xasprintf("%s/h.run", scratch);
        (void) unlink(h_run);
        run_until(isolation_queue_idle);
        _cleanup_free_ char *after = readiness_held_back(&op);
        tap_ok(!app->isolated && !after, "once its run succeeds, nothing is held back");
        cli.settings.isolate_failing_modules = false;
}

static void test_queued_sync_context_has_no_items(void)
{
        struct ao_hook hook = {.name = "hooks/pods.sh"};
        const char *config = "{\"configVersion\":\"v1\",\"kubernetes\":["
                             "{\"name\":\"pods\",\"kind\":\"Pod\",\"includeSnapshotsFrom\":[\"nodes\"]},"
                             "{\"name\":\"nodes\",\"kind\":\"Node\"}]}";
        struct ao_error err = {0};
        if (ao_hook_config_parse(config, strlen(config), hook.name, AO_HOOK_GLOBAL, &hook.config, &err) < 0)
                tap_bail(err.msg);
        struct hook_owner owner = {.hooks = &hook, .n_hooks = 1};
        cJSON *contexts = bindings_sync_contexts(&owner, 0, 0);
        _cleanup_free_ char *text = ao_json_canonical(contexts);
        tap_is_str(text,
                   "[{\"binding\":\"pods\",\"objects\":[],\"snapshots\":{\"nodes\":[]},\"type\":"
                   "\"Synchronization\"}]",
                   "a queued Synchronization context names its snapshots but carries no objects");
        cJSON_Delete(contexts);
        ao_hook_config_done(&hook.config);
}

/* ---- the input checksum: what a render depends on ------------------------------------------------ */

static char *input_labelled(const struct module *mod, const char *chart, const char *values_json,
                            const char *ns, const char *helm, const char *labels)
{
        cJSON *values = cJSON_Parse(values_json);
        char sum[33] = "";
        struct ao_error err = {0};
        int r = chart_input_checksum(mod, chart, values, ns, helm, labels, sum, &err);
        cJSON_Delete(values);
        return r < 0 ? ao_xasprintf("error: %s", err.msg) : ao_xstrdup(sum);
}

static char *input_of(const struct module *mod, const char *chart, const char *values_json, const char *ns,
                      const char *helm)
{
        return input_labelled(mod, chart, values_json, ns, helm, "heritage=addon-operator");
}

static void test_input_checksum(void)
{
        _cleanup_free_ char *chart = ao_xasprintf("%s/chart", scratch);
        _cleanup_free_ char *templates = ao_xasprintf("%s/templates", chart);
        _cleanup_free_ char *cm = ao_xasprintf("%s/cm.yaml", templates);
        _cleanup_free_ char *outside = ao_xasprintf("%s/outside.yaml", scratch);
        _cleanup_free_ char *link = ao_xasprintf("%s/linked.yaml", templates);
        write_file("chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n", 0644);
        write_file("chart/templates/cm.yaml", "kind: ConfigMap\n", 0644);
        write_file("outside.yaml", "a: 1\n", 0644);
        tap_ok(symlink(outside, link) == 0, "input checksum: a template linked from outside the chart");
        struct module mod = {.name = "app"};
        _cleanup_free_ char *base = input_of(&mod, chart, "{\"app\":{\"x\":1}}", "ao", "3.17.2");
        _cleanup_free_ char *again = input_of(&mod, chart, "{\"app\":{\"x\":1}}", "ao", "3.17.2");
        tap_ok(strlen(base) == 32 && strcmp(base, again) == 0, "the same inputs give the same MD5 (%s)",
               base);
        _cleanup_free_ char *values = input_of(&mod, chart, "{\"app\":{\"x\":2}}", "ao", "3.17.2");
        _cleanup_free_ char *ns = input_of(&mod, chart, "{\"app\":{\"x\":1}}", "other", "3.17.2");
        _cleanup_free_ char *helm = input_of(&mod, chart, "{\"app\":{\"x\":1}}", "ao", "3.18.0");
        struct module other = {.name = "app2"};
        _cleanup_free_ char *name = input_of(&other, chart, "{\"app\":{\"x\":1}}", "ao", "3.17.2");
        tap_ok(strcmp(values, base) != 0, "other values: another checksum");
        tap_ok(strcmp(ns, base) != 0, "another namespace: another checksum");
        tap_ok(strcmp(helm, base) != 0, "another helm version: another checksum");
        tap_ok(strcmp(name, base) != 0, "another release name: another checksum");
        _cleanup_free_ char *labels = input_labelled(&mod, chart, "{\"app\":{\"x\":1}}", "ao", "3.17.2",
                                                     "heritage=addon-operator,tier=core");
        tap_ok(strcmp(labels, base) != 0, "other labels for the post-renderer: another checksum");
        write_file("outside.yaml", "a: 2\n", 0644);
        _cleanup_free_ char *linked = input_of(&mod, chart, "{\"app\":{\"x\":1}}", "ao", "3.17.2");
        tap_ok(strcmp(linked, base) != 0, "a changed file behind a symbolic link: another checksum");
        write_file("outside.yaml", "a: 1\n", 0644);
        _cleanup_free_ char *back = input_of(&mod, chart, "{\"app\":{\"x\":1}}", "ao", "3.17.2");
        tap_is_str(back, base, "changed back: the first checksum again");
        _cleanup_free_ char *renamed = ao_xasprintf("%s/cm2.yaml", templates);
        tap_ok(rename(cm, renamed) == 0, "a template renamed");
        _cleanup_free_ char *moved = input_of(&mod, chart, "{\"app\":{\"x\":1}}", "ao", "3.17.2");
        tap_ok(strcmp(moved, base) != 0, "a renamed file: another checksum (its path is hashed)");
        _cleanup_free_ char *missing = input_of(&mod, "/nonexistent/chart", "{}", "ao", "3.17.2");
        tap_is_str(missing, "error: cannot read '/nonexistent/chart': No such file or directory",
                   "a chart that cannot be read: an error naming it");
}

int main(void)
{
        struct ao_log_options log = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_ERROR, .fd = -1};
        ao_log_setup(&log);
        /* The subreaper watches SIGCHLD through the loop: blocked, as the operator blocks it. */
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        setup();
        test_requests_are_idempotent();
        test_converge_phases();
        test_bad_object_patch_changes_nothing();
        test_cluster_failure_then_retry_applies_once();
        test_invalid_config_patch_changes_nothing();
        test_invalid_values_patch_sends_no_object_patch();
        test_parallel_module_runs();
        test_failing_module_is_isolated();
        test_queued_sync_context_has_no_items();
        test_input_checksum();
        teardown();
        return tap_done();
}
