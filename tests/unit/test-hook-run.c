/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hook run protocol with real shell hooks: the files and variables a
 * hook gets, what is read back, and every way an output can be wrong.
 * Runs on both reactor backends (AO_REACTOR); AO_SPAWNER names the spawner.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/hook-run.h"
#include "ao/json-writer.h"
#include "ao/jsonpatch.h"
#include "ao/log.h"
#include "ao/proc.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/yaml.h"

static int rm_rf(const char *path);

static struct ao_reactor *reactor;
static struct ao_proc *proc;
static struct ao_hook_runner *runner;
static char scratch[] = "/tmp/test-hook-run.XXXXXX";

struct result {
        bool done;
        bool ok;
        int exit_code;
        char error[AO_ERROR_MSG_MAX];
        char *config_text;
        char *values_patch, *config_values_patch, *metrics, *kubernetes_patch;
        int enabled;
        char *enabled_reason;
};

static char *canonical_or_null(const cJSON *json)
{
        return json ? ao_json_canonical(json) : NULL;
}

static char *dup_or_null(const char *s)
{
        return s ? ao_xstrdup(s) : NULL;
}

static void on_done(struct ao_hook_outcome *o, void *userdata)
{
        struct result *r = userdata;
        r->done = true;
        r->ok = o->ok;
        r->exit_code = o->result.exit_code;
        snprintf(r->error, sizeof(r->error), "%s", o->error.msg);
        r->config_text = dup_or_null(o->config_text);
        r->values_patch = canonical_or_null(o->values_patch);
        r->config_values_patch = canonical_or_null(o->config_values_patch);
        cJSON *m = ao_metric_ops_to_json(&o->metrics);
        r->metrics = m && cJSON_GetArraySize(m) > 0 ? ao_json_canonical(m) : NULL;
        cJSON_Delete(m);
        r->kubernetes_patch = dup_or_null(o->kubernetes_patch);
        r->enabled = o->enabled;
        r->enabled_reason = dup_or_null(o->enabled_reason);
}

static void result_done(struct result *r)
{
        free(r->config_text);
        free(r->values_patch);
        free(r->config_values_patch);
        free(r->metrics);
        free(r->kubernetes_patch);
        free(r->enabled_reason);
}

/* Write an executable hook script into the scratch directory; returns its path. */
static char *make_hook(const char *name, const char *body)
{
        char *dir = ao_xasprintf("%s/hooks", scratch);
        (void) mkdir(dir, 0755);
        char *path = ao_xasprintf("%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        if (!f)
                tap_bail("cannot write a hook");
        fprintf(f, "#!/bin/sh\n%s\n", body);
        fclose(f);
        chmod(path, 0755);
        free(dir);
        return path;
}

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "r");
        if (!f)
                return ao_xstrdup("(missing)");
        char *buf = ao_xcalloc(1, 1 << 20);
        size_t n = fread(buf, 1, (1 << 20) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static cJSON *json(const char *text)
{
        cJSON *j = NULL;
        if (ao_yaml_load(text, strlen(text), "test", &j, NULL) < 0)
                tap_bail("bad test JSON");
        return j;
}

static int run(struct ao_hook_run_request *req, struct result *r)
{
        *r = (struct result){.enabled = -2};
        req->on_done = on_done;
        req->userdata = r;
        if (!req->hook_name)
                req->hook_name = "hooks/test.sh";
        struct ao_error err = {0};
        int k = ao_hook_run_start(runner, req, &err);
        if (k < 0) {
                snprintf(r->error, sizeof(r->error), "%s", err.msg);
                return k;
        }
        uint64_t give_up = ao_clock_now_usec() + 60 * AO_USEC_PER_SEC;
        while (!r->done && ao_clock_now_usec() < give_up)
                (void) ao_reactor_run_once(reactor, AO_USEC_PER_SEC);
        if (!r->done)
                tap_bail("a hook run never finished");
        return 0;
}

static size_t count_entries(const char *dir)
{
        DIR *d = opendir(dir);
        size_t n = 0;
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        if (d)
                closedir(d);
        return n;
}

/* Protocol file names: what an idle run directory may hold. */
static bool is_protocol_file(const char *name)
{
        static const char *const names[] = {
            "binding-context.json",     "values.json",  "config-values.json", "values.json-patch",
            "config-values.json-patch", "metrics.json", "kubernetes-patch",   "module-enabled-result",
            "module-enabled-reason",    "config-output"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(names); i++)
                if (strcmp(name, names[i]) == 0)
                        return true;
        return false;
}

/*
 * What runs leave in the runner's directory is at most idle run directories for the next run:
 * each holds protocol files only, its outputs emptied (the inputs wait to be rewritten).
 */
static bool only_idle_dirs(void)
{
        DIR *d = opendir(ao_hook_runner_dir(runner));
        bool ok = d != NULL;
        struct dirent *de;
        while (ok && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char *sub = ao_xasprintf("%s/%s", ao_hook_runner_dir(runner), de->d_name);
                DIR *r = opendir(sub);
                struct dirent *f;
                ok = r != NULL;
                while (ok && (f = readdir(r))) {
                        if (f->d_name[0] == '.')
                                continue;
                        char *path = ao_xasprintf("%s/%s", sub, f->d_name);
                        struct stat st;
                        bool input = strcmp(f->d_name, "values.json") == 0 ||
                                     strcmp(f->d_name, "config-values.json") == 0 ||
                                     strcmp(f->d_name, "binding-context.json") == 0;
                        ok = is_protocol_file(f->d_name) && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                             (input || st.st_size == 0);
                        free(path);
                }
                if (r)
                        closedir(r);
                free(sub);
        }
        if (d)
                closedir(d);
        return ok;
}

static void test_event_protocol(void)
{
        char *out = ao_xasprintf("%s/out", scratch);
        (void) mkdir(out, 0755);
        char *body = ao_xasprintf(
            "cat \"$BINDING_CONTEXT_PATH\" > %1$s/context\n"
            "cat \"$VALUES_PATH\" > %1$s/values\n"
            "cat \"$CONFIG_VALUES_PATH\" > %1$s/config-values\n"
            "echo \"$WORKING_DIR\" > %1$s/working-dir\n"
            "pwd > %1$s/cwd\n"
            "echo \"$FROM_OPERATOR\" > %1$s/inherited\n"
            "echo '[{\"op\":\"add\",\"path\":\"/simpleModule/a\",\"value\":1}]' > "
            "\"$VALUES_JSON_PATCH_PATH\"\n"
            "echo '{\"op\":\"remove\",\"path\":\"/simpleModule/b\"}' > \"$CONFIG_VALUES_JSON_PATCH_PATH\"\n"
            "echo '{\"op\":\"add\",\"path\":\"/simpleModule/c\",\"value\":\"x\"}' >> "
            "\"$CONFIG_VALUES_JSON_PATCH_PATH\"\n"
            "echo '{\"name\":\"runs\",\"add\":1}' > \"$METRICS_PATH\"\n"
            "echo '{\"operation\":\"Delete\",\"kind\":\"Pod\",\"name\":\"p\"}' > \"$KUBERNETES_PATCH_PATH\"\n"
            "echo hello from the hook\n",
            out);
        char *hook = make_hook("event.sh", body);
        cJSON *contexts = json("[{\"binding\":\"beforeHelm\",\"snapshots\":{}}]");
        cJSON *values = json("{\"global\":{\"g\":1},\"simpleModule\":{\"b\":2}}");
        cJSON *config_values = json("{\"global\":{},\"simpleModule\":{\"b\":2}}");
        char *working_dir = ao_xasprintf("%s/hooks", scratch);
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_EVENT,
            .path = hook,
            .module = "simple-module",
            .values_key = "simpleModule",
            .working_dir = working_dir,
            .binding_contexts = contexts,
            .values = values,
            .config_values = config_values,
        };
        struct result r;
        tap_is_int(run(&req, &r), 0, "event: started");
        tap_ok(r.ok, "event: succeeded (%s)", r.error);
        tap_is_str(r.values_patch, "[{\"op\":\"add\",\"path\":\"/simpleModule/a\",\"value\":1}]",
                   "event: values patch read");
        tap_is_str(
            r.config_values_patch,
            "[{\"op\":\"remove\",\"path\":\"/simpleModule/b\"},{\"op\":\"add\",\"path\":\"/simpleModule/"
            "c\",\"value\":\"x\"}]",
            "event: config values patch stream read");
        tap_is_str(r.metrics, "[{\"action\":\"add\",\"name\":\"runs\",\"value\":1}]",
                   "event: metric operations");
        tap_is_str(r.kubernetes_patch, "{\"operation\":\"Delete\",\"kind\":\"Pod\",\"name\":\"p\"}\n",
                   "event: kubernetes patch handed over raw");

        struct {
                const char *file, *want;
        } files[] = {
            {"context", "[{\"binding\":\"beforeHelm\",\"snapshots\":{}}]\n"},
            {"values", "{\"global\":{\"g\":1},\"simpleModule\":{\"b\":2}}"},
            {"config-values", "{\"global\":{},\"simpleModule\":{\"b\":2}}"},
            {"inherited", "yes\n"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(files); i++) {
                char *path = ao_xasprintf("%s/%s", out, files[i].file);
                char *got = slurp(path);
                tap_is_str(got, files[i].want, "event: the hook read %s", files[i].file);
                free(got);
                free(path);
        }
        char *wd_path = ao_xasprintf("%s/working-dir", out), *cwd_path = ao_xasprintf("%s/cwd", out);
        char *wd = slurp(wd_path), *cwd = slurp(cwd_path);
        char *want = ao_xasprintf("%s\n", working_dir);
        tap_is_str(wd, want, "event: WORKING_DIR is the hooks root");
        tap_is_str(cwd, want, "event: the hook runs in its own directory");
        tap_is_int(count_entries(ao_hook_runner_dir(runner)), 1,
                   "event: the run directory is kept idle for the module's next run");
        tap_ok(only_idle_dirs(), "event: only protocol files are left in it, outputs emptied");
        tap_is_int(ao_hook_runner_active(runner), 0, "event: no run left active");
        free(wd), free(cwd), free(want), free(wd_path), free(cwd_path);
        result_done(&r);
        cJSON_Delete(contexts), cJSON_Delete(values), cJSON_Delete(config_values);
        free(working_dir), free(hook), free(body), free(out);
}

static void test_config_output(void)
{
        /* One 200 KB line: longer than any log line may be. */
        char *hook = make_hook("config.sh", "printf '{\"configVersion\":\"v1\",\"onStartup\":1,\"x\":\"'\n"
                                            "head -c 200000 /dev/zero | tr '\\0' a\n"
                                            "printf '\"}\\n'\n"
                                            "[ \"$1\" = --config ] || exit 9\n"
                                            "[ -z \"$VALUES_PATH\" ] || exit 8");
        struct ao_hook_run_request req = {.mode = AO_HOOK_RUN_CONFIG, .path = hook};
        struct result r;
        tap_is_int(run(&req, &r), 0, "config: started");
        tap_ok(r.ok, "config: succeeded (%s)", r.error);
        tap_is_int(r.config_text ? strlen(r.config_text) : 0, 41 + 200000 + 3,
                   "config: the whole output arrived");
        tap_ok(r.config_text && strncmp(r.config_text, "{\"configVersion\":\"v1\"", 21) == 0,
               "config: it starts as written");
        result_done(&r);
        free(hook);
        /* The next --config run reuses the directory: nothing of the long output before is left. */
        hook = make_hook("config2.sh", "echo '{\"configVersion\":\"v1\",\"onStartup\":2}'");
        req.path = hook;
        tap_is_int(run(&req, &r), 0, "config again: started");
        tap_is_str(r.config_text, "{\"configVersion\":\"v1\",\"onStartup\":2}\n",
                   "config again: exactly this run's output");
        result_done(&r);
        free(hook);
}

static void check_enabled(const char *body, int want_enabled, const char *want_reason, const char *want_error)
{
        char *hook = make_hook("enabled", body);
        cJSON *values = json("{\"global\":{\"enabledModules\":[\"a\"]},\"m\":{}}");
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_ENABLED, .path = hook, .hook_name = "m/enabled", .values = values};
        struct result r;
        tap_is_int(run(&req, &r), 0, "enabled '%s': started", body);
        tap_is_int(r.enabled, want_enabled, "enabled '%s': result", body);
        tap_is_str(r.enabled_reason, want_reason, "enabled '%s': reason", body);
        tap_is_str(want_error ? r.error : "", want_error ? want_error : "", "enabled '%s': error", body);
        result_done(&r);
        cJSON_Delete(values);
        free(hook);
}

static void test_enabled_script(void)
{
        check_enabled("grep -q enabledModules \"$VALUES_PATH\" && echo true > \"$MODULE_ENABLED_RESULT\"", 1,
                      NULL, NULL);
        check_enabled(
            "printf ' false\\n' > \"$MODULE_ENABLED_RESULT\"; echo 'no CRDs' > \"$MODULE_ENABLED_REASON\"", 0,
            "no CRDs", NULL);
        check_enabled("echo maybe > \"$MODULE_ENABLED_RESULT\"", -1, NULL,
                      "hook 'm/enabled': module-enabled-result: expected 'true' or 'false', got 'maybe\n'");
}

/* Run an event hook with @body and compare the error (empty when it must succeed). */
static void check_event(const char *what, const char *values_key, const char *body, const char *want_error)
{
        char *hook = make_hook("check.sh", body);
        struct ao_hook_run_request req = {.mode = AO_HOOK_RUN_EVENT, .path = hook, .values_key = values_key};
        struct result r;
        size_t before = count_entries(ao_hook_runner_dir(runner));
        tap_is_int(run(&req, &r), 0, "%s: started", what);
        tap_is_str(r.ok ? "" : r.error, want_error, "%s", what);
        /* A failed run's directory goes; a clean one's takes the place of the idle one it reused. */
        tap_ok(count_entries(ao_hook_runner_dir(runner)) <= before + (r.ok ? 1 : 0) && only_idle_dirs(),
               "%s: run directory removed or left idle with nothing in it", what);
        result_done(&r);
        free(hook);
}

static void test_failures(void)
{
        check_event("exit status and last stderr line", NULL, "echo first >&2; echo 'it broke' >&2; exit 3",
                    "hook 'hooks/test.sh' failed: exit code 3: it broke");
        check_event("outputs of a failed run are not read", NULL,
                    "echo garbage > \"$VALUES_JSON_PATCH_PATH\"; exit 1",
                    "hook 'hooks/test.sh' failed: exit code 1");
        check_event("malformed patch", NULL,
                    "printf '[{\"op\":\"add\",\"path\":\"/global/a\",\"value\":1}]\\n{\"op\":' > "
                    "\"$VALUES_JSON_PATCH_PATH\"",
                    "hook 'hooks/test.sh': values.json-patch:2:6: invalid JSON");
        check_event(
            "global hook outside /global", NULL,
            "echo '{\"op\":\"add\",\"path\":\"/simpleModule/a\",\"value\":1}' > \"$VALUES_JSON_PATCH_PATH\"",
            "hook 'hooks/test.sh': values.json-patch: operation 0: path '/simpleModule/a': a global hook "
            "may only patch /global/... and /<module>Enabled");
        check_event("global hook may set enabled flags", NULL,
                    "echo '{\"op\":\"add\",\"path\":\"/simpleModuleEnabled\",\"value\":false}' > "
                    "\"$VALUES_JSON_PATCH_PATH\"",
                    "");
        check_event(
            "module hook outside its key", "simpleModule",
            "echo '{\"op\":\"add\",\"path\":\"/global/a\",\"value\":1}' > \"$CONFIG_VALUES_JSON_PATCH_PATH\"",
            "hook 'hooks/test.sh': config-values.json-patch: operation 0: path '/global/a': a module hook "
            "may only patch /simpleModule/...");
        check_event(
            "move from another key", "simpleModule",
            "echo '{\"op\":\"move\",\"from\":\"/other/a\",\"path\":\"/simpleModule/a\"}' > "
            "\"$VALUES_JSON_PATCH_PATH\"",
            "hook 'hooks/test.sh': values.json-patch: operation 0: path '/other/a': a module hook may only "
            "patch /simpleModule/...");
        check_event("symbolic link instead of a patch", NULL,
                    "rm \"$VALUES_JSON_PATCH_PATH\"; ln -s /etc/passwd \"$VALUES_JSON_PATCH_PATH\"",
                    "hook 'hooks/test.sh': values.json-patch: cannot open: it is a symbolic link");
        check_event("FIFO instead of metrics", NULL, "rm \"$METRICS_PATH\"; mkfifo \"$METRICS_PATH\"",
                    "hook 'hooks/test.sh': metrics.json: not a regular file");
        check_event("oversized metrics file", NULL, "truncate -s 17M \"$METRICS_PATH\"",
                    "hook 'hooks/test.sh': metrics.json: 17825792 bytes, more than the 16777216 allowed");
        check_event(
            "bad metric operation", NULL, "echo '{\"name\":\"m\",\"action\":\"bump\"}' > \"$METRICS_PATH\"",
            "hook 'hooks/test.sh': metrics.json:1:1: operation 0: unknown action 'bump' (expected add, set, "
            "observe or expire)");
        check_event("removed output files read as empty", NULL,
                    "rm \"$VALUES_JSON_PATCH_PATH\" \"$METRICS_PATH\"", "");
        check_event(
            "files the hook leaves behind are removed", NULL,
            "mkdir -p \"$(dirname \"$METRICS_PATH\")/a/b\"; touch \"$(dirname \"$METRICS_PATH\")/a/b/c\"",
            "");
}

static void test_launch_failure(void)
{
        struct ao_hook_run_request req = {.mode = AO_HOOK_RUN_EVENT, .path = "/nonexistent/hook"};
        struct result r;
        int k = run(&req, &r);
        /* The exec fails in the child: reported through the callback. */
        tap_is_int(k, 0, "missing executable: started");
        /* The run starts in the hook's own directory, so a hook that is gone fails there first. */
        tap_is_str(r.error, "hook 'hooks/test.sh' failed: chdir: No such file or directory",
                   "missing executable: error");
        result_done(&r);
}

/* Snapshots of 2500 items (~300 KB each, several chunks of the file), or an error. */
static int big_snapshot(void *userdata, const char *binding, struct ao_json_writer *out)
{
        int *fail = userdata;
        if (fail && *fail)
                return *fail;
        ao_json_write_raw(out, "[");
        for (int i = 0; i < 2500; i++) {
                char item[160];
                snprintf(item, sizeof(item),
                         "%s{\"filterResult\":{\"binding\":\"%s\",\"i\":%d,\"s\":\"%0100d\"}}", i ? "," : "",
                         binding, i, i);
                ao_json_write_raw(out, item);
        }
        ao_json_write_raw(out, "]");
        return ao_json_writer_error(out);
}

/*
 * The binding context file with snapshots, written as it is produced: what the hook reads is what
 * ao_binding_contexts_write() writes. A write that fails (an error of the source, a file the
 * kernel refuses to grow) fails the start: no callback, nothing left behind, the next run fine.
 */
static void test_streamed_contexts(void)
{
        char *out = ao_xasprintf("%s/streamed", scratch);
        char *body = ao_xasprintf("cat \"$BINDING_CONTEXT_PATH\" > %s", out);
        char *hook = make_hook("streamed.sh", body);
        cJSON *contexts = json("[{\"binding\":\"pods\",\"objects\":[],\"type\":\"Synchronization\","
                               "\"snapshots\":{\"nodes\":[]}}]");
        int fail = 0;
        const struct ao_snapshot_source src = {.write = big_snapshot, .userdata = &fail};
        struct ao_hook_run_request req = {
            .mode = AO_HOOK_RUN_EVENT, .path = hook, .binding_contexts = contexts, .snapshots = &src};
        struct result r;
        tap_is_int(run(&req, &r), 0, "streamed: started");
        tap_ok(r.ok, "streamed: succeeded (%s)", r.error);
        result_done(&r);
        struct ao_json_writer w;
        ao_json_writer_init(&w, -1);
        (void) ao_binding_contexts_write(contexts, &src, &w);
        char *want = ao_json_writer_steal(&w), *got = slurp(out);
        ao_json_writer_done(&w);
        tap_ok(strlen(want) > 4 * AO_JSON_WRITER_CHUNK && strcmp(got, want) == 0,
               "streamed: the hook read the contexts with both snapshots' items (%zu bytes)", strlen(got));
        free(got);

        size_t before = count_entries(ao_hook_runner_dir(runner));
        fail = -EIO;
        tap_is_int(run(&req, &r), -EIO, "streamed: a source that fails fails the start");
        tap_ok(strstr(r.error, "hook 'hooks/test.sh': cannot write '") &&
                   strstr(r.error, "/binding-context.json': Input/output error"),
               "streamed: the error names the file (%s)", r.error);
        tap_ok(!r.done, "streamed: no callback for a run that did not start");
        fail = 0;

        /* A real write error: the kernel refuses to grow the file past RLIMIT_FSIZE (EFBIG). */
        struct rlimit saved, small = {.rlim_cur = 256 * 1024};
        if (getrlimit(RLIMIT_FSIZE, &saved) < 0)
                tap_bail("getrlimit");
        small.rlim_max = saved.rlim_max;
        struct sigaction ignore = {.sa_handler = SIG_IGN}, old_action;
        sigaction(SIGXFSZ, &ignore, &old_action);
        if (setrlimit(RLIMIT_FSIZE, &small) < 0)
                tap_bail("setrlimit");
        int k = run(&req, &r);
        setrlimit(RLIMIT_FSIZE, &saved);
        sigaction(SIGXFSZ, &old_action, NULL);
        tap_is_int(k, -EFBIG, "streamed: a file that cannot grow fails the start");
        tap_ok(strstr(r.error, "/binding-context.json': File too large") != NULL, "streamed: %s", r.error);
        tap_is_int(ao_hook_runner_active(runner), 0, "streamed: no run left active");
        tap_ok(count_entries(ao_hook_runner_dir(runner)) <= before && only_idle_dirs(),
               "streamed: no run directory left behind");

        tap_is_int(run(&req, &r), 0, "streamed: the next run starts");
        tap_ok(r.ok, "streamed: and succeeds (%s)", r.error);
        result_done(&r);
        got = slurp(out);
        tap_ok(strcmp(got, want) == 0, "streamed: with the whole file");
        free(got);
        free(want);
        cJSON_Delete(contexts);
        free(hook), free(body), free(out);
}

/* One event run of a hook of @module that appends "<dir inode> <dir>" to @log; ok or not. */
static bool run_module(const char *module, const char *body, const char *values_json)
{
        char *hook = make_hook("reuse.sh", body);
        cJSON *values = json(values_json);
        struct ao_hook_run_request req = {.mode = AO_HOOK_RUN_EVENT,
                                          .path = hook,
                                          .module = module,
                                          .values_key = "reuseModule",
                                          .values = values};
        struct result r;
        bool ok = run(&req, &r) == 0 && r.ok;
        if (!ok)
                tap_diag("run failed: %s", r.error);
        result_done(&r);
        cJSON_Delete(values);
        free(hook);
        return ok;
}

/* Line @n (1-based) of @path, without its newline; malloc'd, "" when missing. */
static char *line_of(const char *path, int n)
{
        char *all = slurp(path), *p = all;
        for (int i = 1; i < n && p; i++) {
                p = strchr(p, '\n');
                p = p ? p + 1 : NULL;
        }
        char *line = ao_xstrndup(p ? p : "", p ? strcspn(p, "\n") : 0);
        free(all);
        return line;
}

/*
 * A run of @planting (which leaves something behind), then one of @record: the second must get a
 * fresh directory (lines @n and @n + 1 of @log name different ones).
 */
static void expect_fresh_dir(const char *log, int n, const char *planting, const char *record,
                             const char *what)
{
        tap_ok(run_module("reuse-module", planting, "{}"), "%s: the run", what);
        tap_ok(run_module("reuse-module", record, "{}"), "%s: the next run", what);
        char *first = line_of(log, n), *second = line_of(log, n + 1);
        tap_ok(strncmp(first, second, strcspn(first, " ")) != 0, "%s: the next run got a new directory",
               what);
        free(first);
        free(second);
}

static void test_reuse(void)
{
        char *log = ao_xasprintf("%s/reuse.log", scratch);
        char *links = ao_xstrdup("/dev/shm/test-hook-run-links.XXXXXX");
        if (!mkdtemp(links))
                tap_bail("mkdtemp in /dev/shm");
        char *target = ao_xasprintf("%s/target", scratch);
        FILE *f = fopen(target, "w");
        fputs("untouched", f);
        fclose(f);
        /* Each run: its directory, whether the patch file came empty, the values it got; then a patch. */
        char *record = ao_xasprintf(
            "d=$(dirname \"$VALUES_PATH\")\n"
            "echo \"$(stat -c %%i \"$d\") $d $(stat -c %%s \"$VALUES_JSON_PATCH_PATH\") $(cat "
            "\"$VALUES_PATH\")\" >> %s\n"
            "echo '{\"op\":\"add\",\"path\":\"/reuseModule/x\",\"value\":1}' > \"$VALUES_JSON_PATCH_PATH\"",
            log);

        tap_ok(
            run_module("reuse-module", record, "{\"reuseModule\":{\"long\":\"xxxxxxxxxxxxxxxxxxxxxxxx\"}}"),
            "reuse: first run");
        tap_ok(run_module("reuse-module", record, "{\"reuseModule\":{}}"), "reuse: second run");
        char *one = line_of(log, 1), *two = line_of(log, 2);
        char ino1[32] = "", dir1[512] = "", ino2[32] = "", dir2[512] = "", size2[32] = "", values2[256] = "";
        sscanf(one, "%31s %511s", ino1, dir1);
        sscanf(two, "%31s %511s %31s %255s", ino2, dir2, size2, values2);
        tap_is_str(ino2, ino1, "reuse: the same module's next run gets the same directory");
        tap_is_str(dir2, dir1, "reuse: under the same name, nothing of the first run being left");
        tap_is_str(size2, "0", "reuse: the output the first run wrote comes back empty");
        tap_is_str(values2, "{\"reuseModule\":{}}",
                   "reuse: the shorter values replace the longer ones exactly");

        tap_ok(run_module("other-module", record, "{}"), "reuse: a run of another module");
        char *three = line_of(log, 3);
        tap_ok(strncmp(three, ino1, strlen(ino1)) != 0 || three[strlen(ino1)] != ' ',
               "reuse: another module never gets it");

        /* The hook swaps an input for a symbolic link: the next run must not write through it. */
        char *swap = ao_xasprintf("%s\nln -sf %s \"$VALUES_PATH\"", record, target);
        tap_ok(run_module("reuse-module", swap, "{}"), "symlink: the run that plants it");
        tap_ok(run_module("reuse-module", record, "{\"reuseModule\":{\"after\":1}}"),
               "symlink: the next run succeeds");
        char *target_text = slurp(target);
        tap_is_str(target_text, "untouched", "symlink: its target is untouched");
        char *four = line_of(log, 4), *five = line_of(log, 5);
        tap_ok(strncmp(four, five, strcspn(four, " ")) != 0, "symlink: the next run got a new directory");

        /* A second name for an input, outside the directory: not written through either. */
        char *hard = ao_xasprintf("%s\nln \"$VALUES_PATH\" %s/second-name", record, links);
        tap_ok(run_module("reuse-module", hard, "{\"reuseModule\":{\"linked\":1}}"),
               "hard link: the run that makes it");
        tap_ok(run_module("reuse-module", record, "{}"), "hard link: the next run succeeds");
        char *second_path = ao_xasprintf("%s/second-name", links);
        char *second = slurp(second_path);
        tap_is_str(second, "{\"reuseModule\":{\"linked\":1}}",
                   "hard link: the other name keeps its contents");
        char *six = line_of(log, 6), *seven = line_of(log, 7);
        tap_ok(strncmp(six, seven, strcspn(six, " ")) != 0, "hard link: the next run got a new directory");

        /* A process of the run is still there: its directory is not handed on. */
        char *linger = ao_xasprintf("%s\n(sleep 2 >/dev/null 2>&1 &)", record);
        expect_fresh_dir(log, 8, linger, record, "leftover process");

        /*
         * An input moved out (a second name outside, the one inside removed) and a new file put in
         * its place: the held file is no longer the input, and is not written again.
         */
        char *replace = ao_xasprintf("%s\nln \"$VALUES_PATH\" %s/moved-out && rm \"$VALUES_PATH\" && "
                                     "echo planted > \"$VALUES_PATH\"",
                                     record, links);
        tap_ok(run_module("reuse-module", replace, "{\"reuseModule\":{\"moved\":1}}"),
               "replaced input: the run that replaces it");
        tap_ok(run_module("reuse-module", record, "{\"reuseModule\":{\"fresh\":1}}"),
               "replaced input: the next run");
        char *ten = line_of(log, 10), *eleven = line_of(log, 11), values11[256] = "";
        sscanf(eleven, "%*s %*s %*s %255s", values11);
        tap_ok(strncmp(ten, eleven, strcspn(ten, " ")) != 0,
               "replaced input: the next run got a new directory");
        tap_is_str(values11, "{\"reuseModule\":{\"fresh\":1}}",
                   "replaced input: the next run reads its own values");
        char *moved_path = ao_xasprintf("%s/moved-out", links);
        char *moved = slurp(moved_path);
        tap_is_str(moved, "{\"reuseModule\":{\"moved\":1}}",
                   "replaced input: the file moved out keeps its contents");
        free(moved), free(moved_path);

        /* A file the hook left beside the protocol's: the directory is not handed on with it. */
        char *extra = ao_xasprintf("%s\ntouch \"$(dirname \"$VALUES_PATH\")/extra\"", record);
        expect_fresh_dir(log, 12, extra, record, "extra file");
        tap_ok(only_idle_dirs(), "reuse: nothing but idle directories left");

        /*
         * A process of the run left its group (setsid) before the hook exited: the group is empty,
         * so the directory is handed on, but under a new name, which that process does not know.
         */
        char *fifo = ao_xasprintf("%s/escaped", scratch), *pidfile = ao_xasprintf("%s/escaped.pid", scratch);
        if (mkfifo(fifo, 0600) < 0)
                tap_bail("mkfifo");
        char *escape =
            ao_xasprintf("%s\nsetsid sh -c 'echo $$ > %s; echo > %s; exec sleep 30' >/dev/null 2>&1 "
                         "</dev/null &\nread x < %s",
                         record, pidfile, fifo, fifo);
        tap_ok(run_module("reuse-module", record, "{}"), "escaped: a run first");
        tap_ok(run_module("reuse-module", escape, "{}"), "escaped: the run whose process escapes");
        tap_ok(run_module("reuse-module", record, "{}"), "escaped: the next run");
        char *line15 = line_of(log, 15), *line16 = line_of(log, 16);
        char ino15[32] = "", dir15[512] = "", ino16[32] = "", dir16[512] = "";
        sscanf(line15, "%31s %511s", ino15, dir15);
        sscanf(line16, "%31s %511s", ino16, dir16);
        tap_is_str(ino16, ino15, "escaped: the next run still gets the directory");
        tap_ok(strcmp(dir15, dir16) != 0, "escaped: under a new name (%s, %s)", dir15, dir16);
        char *escaped_pid = slurp(pidfile);
        if (atoi(escaped_pid) > 0)
                (void) kill(atoi(escaped_pid), SIGKILL);
        free(escaped_pid), free(line15), free(line16), free(escape);
        unlink(fifo), unlink(pidfile);
        free(fifo), free(pidfile);

        free(ten), free(eleven), free(replace), free(extra);
        free(one), free(two), free(three), free(four), free(five), free(six), free(seven);
        free(target_text), free(second), free(second_path), free(hard), free(swap), free(linger),
            free(record);
        unlink(target);
        free(target);
        rm_rf(links);
        free(links);
        free(log);
}

static void test_keep_files_and_stale_dirs(void)
{
        char *base = ao_xasprintf("%s/tmp", scratch);
        (void) mkdir(base, 0755);
        char *stale = ao_xasprintf("%s/addon-operator.999999999.abcdef", base);
        char *stale_file = ao_xasprintf("%s/leftover", stale);
        (void) mkdir(stale, 0700);
        close(open(stale_file, O_CREAT | O_WRONLY, 0600));
        char *foreign = ao_xasprintf("%s/addon-operator.notapid.abcdef", base);
        (void) mkdir(foreign, 0700);

        struct ao_hook_runner *keeper = NULL;
        struct ao_hook_runner_options opt = {.tmp_dir = base, .tmp_dir_explicit = true, .keep_files = true};
        struct ao_error err = {0};
        tap_is_int(ao_hook_runner_new(proc, &opt, &keeper, &err), 0, "keep: runner created (%s)", err.msg);
        tap_ok(access(stale, F_OK) < 0, "stale: the directory of an exited operator is removed");
        tap_ok(access(foreign, F_OK) == 0, "stale: other directories are left alone");
        struct stat st;
        tap_ok(stat(ao_hook_runner_dir(keeper), &st) == 0 && (st.st_mode & 07777) == 0711,
               "private directory has mode 0711");
        tap_ok(strncmp(ao_hook_runner_dir(keeper), base, strlen(base)) == 0, "an explicit TMP_DIR is used");

        struct ao_hook_runner *saved = runner;
        runner = keeper;
        char *hook = make_hook("keep.sh", "echo '{\"name\":\"m\",\"set\":1}' > \"$METRICS_PATH\"");
        struct ao_hook_run_request req = {.mode = AO_HOOK_RUN_EVENT, .path = hook};
        struct result r;
        run(&req, &r);
        tap_ok(r.ok, "keep: run succeeded (%s)", r.error);
        tap_is_int(count_entries(ao_hook_runner_dir(keeper)), 1, "keep: the run directory stays");
        result_done(&r);
        runner = saved;
        char *dir = ao_xstrdup(ao_hook_runner_dir(keeper));
        ao_hook_runner_free(keeper);
        tap_ok(access(dir, F_OK) == 0, "keep: the private directory stays after free");
        free(dir), free(hook), free(stale), free(stale_file), free(foreign), free(base);
}

static void test_sandboxed(void)
{
        struct ao_sandbox_profiles *profiles = NULL;
        struct ao_error err = {0};
        if (ao_sandbox_profiles_load(NULL, &profiles, &err) < 0)
                tap_bail(err.msg);
        char *hook = make_hook("sandboxed.sh", "echo '{\"name\":\"m\",\"set\":2}' > \"$METRICS_PATH\"");
        struct ao_hook_run_request req = {.mode = AO_HOOK_RUN_EVENT,
                                          .path = hook,
                                          .profile = ao_sandbox_profiles_find(profiles, "default")};
        struct result r;
        tap_is_int(run(&req, &r), 0, "sandboxed: started");
        tap_ok(r.ok, "sandboxed: the protocol works under the default profile (%s)", r.error);
        tap_is_str(r.metrics, "[{\"action\":\"set\",\"name\":\"m\",\"value\":2}]", "sandboxed: outputs read");
        result_done(&r);
        free(hook);
        ao_sandbox_profiles_free(profiles);
}

static int rm_rf(const char *path)
{
        char *cmd = ao_xasprintf("rm -rf '%s'", path);
        int r = system(cmd);
        free(cmd);
        return r;
}

int main(void)
{
        /* The subreaper watches SIGCHLD through the loop: blocked, as the operator blocks it. */
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        struct ao_log_options log = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_ERROR, .fd = -1};
        ao_log_setup(&log);
        if (!mkdtemp(scratch))
                tap_bail("mkdtemp");
        const char *backend = getenv("AO_REACTOR");
        struct ao_error err = {0};
        int k = ao_reactor_new(ao_reactor_backend_from_string(backend ? backend : "auto"), &reactor, &err);
        if (k < 0) {
                rm_rf(scratch);
                tap_skip_all(err.msg);
        }
        /* As the operator runs: child subreaper (what tells whether a run left processes anywhere). */
        struct ao_proc_options popt = {.spawner_path = getenv("AO_SPAWNER"), .subreaper = true};
        if (ao_proc_new(reactor, &popt, &proc, &err) < 0)
                tap_bail(err.msg);
        setenv("FROM_OPERATOR", "yes", 1);
        setenv("VALUES_PATH", "/must/not/leak", 1);
        char *tmp = ao_xasprintf("%s/default-tmp", scratch);
        struct ao_hook_runner_options opt = {.tmp_dir = tmp};
        if (ao_hook_runner_new(proc, &opt, &runner, &err) < 0)
                tap_bail(err.msg);

        test_event_protocol();
        test_config_output();
        test_enabled_script();
        test_failures();
        test_launch_failure();
        test_streamed_contexts();
        test_reuse();
        test_keep_files_and_stale_dirs();
        test_sandboxed();

        char *dir = ao_xstrdup(ao_hook_runner_dir(runner));
        runner = ao_hook_runner_free(runner);
        tap_ok(access(dir, F_OK) < 0, "the private directory is removed at the end");
        free(dir);
        proc = ao_proc_free(proc);
        reactor = ao_reactor_free(reactor);
        rm_rf(scratch);
        free(tmp);
        return tap_done();
}
