/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hook discovery (order, names, what is skipped) and binding contexts (the
 * exact JSON of every binding type, v0 and v1, and how queued contexts combine).
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/hook-config.h"
#include "ao/hooks.h"
#include "ao/json-writer.h"
#include "ao/log.h"
#include "ao/yaml.h"

static char scratch[] = "/tmp/test-hooks.XXXXXX";

static void touch(const char *rel, mode_t mode)
{
        char *path = ao_xasprintf("%s/%s", scratch, rel);
        /* Parents first. */
        for (char *p = path + strlen(scratch) + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        (void) mkdir(path, 0755);
                        *p = '/';
                }
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
        if (fd < 0)
                tap_bail("cannot create a test file");
        (void) !write(fd, "#!/bin/sh\n", 10);
        close(fd);
        chmod(path, mode);
        free(path);
}

static char *names_of(const struct ao_hook_paths *paths)
{
        struct cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; i < paths->n; i++)
                cJSON_AddItemToArray(a, cJSON_CreateString(paths->items[i].name));
        char *s = ao_json_canonical(a);
        cJSON_Delete(a);
        return s;
}

static void test_discovery(void)
{
        touch("global-hooks/hooks/b.sh", 0755);
        touch("global-hooks/hooks/a.py", 0755);
        touch("global-hooks/hooks/sub/z.sh", 0755);
        touch("global-hooks/hooks/sub/A.sh", 0755);
        touch("global-hooks/hooks/lib/helpers.sh", 0755);
        touch("global-hooks/hooks/.hidden.sh", 0755);
        touch("global-hooks/hooks/.git/hook.sh", 0755);
        touch("global-hooks/hooks/readme.md", 0755);
        touch("global-hooks/hooks/config.yaml", 0755);
        touch("global-hooks/hooks/values.json", 0755);
        touch("global-hooks/hooks/notes.txt", 0755);
        touch("global-hooks/hooks/not-executable.sh", 0644);
        touch("global-hooks/hooks/group-only.sh", 0710);
        touch("global-hooks/hooks/venv/in-global.sh", 0755);

        char *dir = ao_xasprintf("%s/global-hooks", scratch);
        char *root = ao_hooks_global_root(dir);
        char *want_root = ao_xasprintf("%s/hooks", dir);
        tap_is_str(root, want_root, "global root: the hooks subdirectory when it exists");

        struct ao_hook_paths paths = {0};
        struct ao_error err = {0};
        tap_is_int(ao_hooks_discover(root, AO_HOOK_GLOBAL, &paths, &err), 0, "global: discovered (%s)",
                   err.msg);
        char *names = names_of(&paths);
        tap_is_str(
            names,
            "[\"hooks/a.py\",\"hooks/b.sh\",\"hooks/group-only.sh\",\"hooks/sub/A.sh\",\"hooks/sub/z.sh\","
            "\"hooks/venv/in-global.sh\"]",
            "global: executables only, sorted, lib and dot entries skipped, venv kept");
        char *want_path = ao_xasprintf("%s/a.py", root);
        tap_is_str(paths.n ? paths.items[0].path : NULL, want_path, "global: the path joins the root");
        free(names), free(want_path);
        ao_hook_paths_done(&paths);

        /* A global hooks dir without a hooks subdirectory: names are relative to it. */
        touch("flat/x.sh", 0755);
        char *flat = ao_xasprintf("%s/flat", scratch);
        char *flat_root = ao_hooks_global_root(flat);
        tap_is_str(flat_root, flat, "global root: the directory itself without a hooks subdirectory");
        tap_is_int(ao_hooks_discover(flat_root, AO_HOOK_GLOBAL, &paths, &err), 0, "flat: discovered");
        names = names_of(&paths);
        tap_is_str(names, "[\"x.sh\"]", "flat: names relative to the root");
        free(names), free(flat), free(flat_root);
        ao_hook_paths_done(&paths);

        /* Module hooks: venv skipped too, names start at hooks/, symlinked directories followed once. */
        touch("modules/001-foo/hooks/sub/x.sh", 0755);
        touch("modules/001-foo/hooks/venv/bin/python3", 0755);
        touch("shared/common.sh", 0755);
        char *link = ao_xasprintf("%s/modules/001-foo/hooks/shared", scratch);
        char *target = ao_xasprintf("%s/shared", scratch);
        (void) symlink(target, link);
        char *loop = ao_xasprintf("%s/modules/001-foo/hooks/sub/loop", scratch);
        char *loop_target = ao_xasprintf("%s/modules/001-foo/hooks", scratch);
        (void) symlink(loop_target, loop);
        char *dangling = ao_xasprintf("%s/modules/001-foo/hooks/dangling.sh", scratch);
        (void) symlink("/nonexistent/target", dangling);
        tap_is_int(ao_hooks_discover(loop_target, AO_HOOK_MODULE, &paths, &err), 0, "module: discovered (%s)",
                   err.msg);
        names = names_of(&paths);
        tap_is_str(names, "[\"hooks/shared/common.sh\",\"hooks/sub/x.sh\"]",
                   "module: venv skipped, symlinks followed, loops and dangling links ignored");
        free(names);
        ao_hook_paths_done(&paths);

        char *missing = ao_xasprintf("%s/modules/002-bar/hooks", scratch);
        paths.n = 99;
        tap_is_int(ao_hooks_discover(missing, AO_HOOK_MODULE, &paths, &err), 0,
                   "missing hooks dir: no error");
        tap_is_int(paths.n, 0, "missing hooks dir: no hooks");

        char *file = ao_xasprintf("%s/shared/common.sh", scratch);
        tap_is_int(ao_hooks_discover(file, AO_HOOK_MODULE, &paths, &err), -ENOTDIR, "a file as root: error");
        char *want_err = ao_xasprintf("hooks: '%s' is not a directory", file);
        tap_is_str(err.msg, want_err, "a file as root: message");

        if (geteuid() != 0) {
                char *locked = ao_xasprintf("%s/modules/001-foo/hooks/locked", scratch);
                (void) mkdir(locked, 0);
                tap_ok(ao_hooks_discover(loop_target, AO_HOOK_MODULE, &paths, &err) < 0,
                       "unreadable directory: error");
                char *want_locked =
                    ao_xasprintf("hooks: cannot read directory '%s': Permission denied", locked);
                tap_is_str(err.msg, want_locked, "unreadable directory: named");
                rmdir(locked);
                free(locked), free(want_locked);
        }
        free(want_err), free(file), free(missing), free(link), free(target), free(loop), free(loop_target),
            free(dangling), free(dir), free(root), free(want_root);
}

static void parse_config(const char *text, enum ao_hook_kind kind, struct ao_hook_config *cfg)
{
        struct ao_error err = {0};
        if (ao_hook_config_parse(text, strlen(text), "hooks/test.sh", kind, cfg, &err) < 0) {
                tap_diag("%s", err.msg);
                tap_bail("a test config does not parse");
        }
}

/* Snapshots for tests: binding "pods" has two items, "kubernetes" one, everything else none. */
static int fake_snapshot(void *userdata, const char *binding, struct ao_json_writer *out)
{
        (void) userdata;
        if (strcmp(binding, "pods") == 0)
                ao_json_write_raw(out,
                                  "[{\"filterResult\":\"a\",\"object\":{\"metadata\":{\"name\":\"a\"}}},"
                                  "{\"filterResult\":\"b\",\"object\":{\"metadata\":{\"name\":\"b\"}}}]");
        else if (strcmp(binding, "kubernetes") == 0)
                ao_json_write_raw(out, "[{\"filterResult\":{\"k\":\"v\"}}]");
        else
                ao_json_write_raw(out, "[]");
        return ao_json_writer_error(out);
}

static const struct ao_snapshot_source snapshots = {.write = fake_snapshot};

/* The file a run of @ctx alone gets, its items written from @src. */
static void check_context(cJSON *ctx, const struct ao_snapshot_source *src, const char *want,
                          const char *what)
{
        cJSON *array = cJSON_CreateArray();
        cJSON_AddItemToArray(array, ctx);
        struct ao_json_writer w;
        ao_json_writer_init(&w, -1);
        int r = ao_binding_contexts_write(array, src, &w);
        char *text = ao_json_writer_steal(&w);
        char *want_line = ao_xasprintf("[%s]\n", want);
        tap_ok(r == 0, "%s: written", what);
        tap_is_str(text, want_line, "%s", what);
        free(text), free(want_line);
        ao_json_writer_done(&w);
        cJSON_Delete(array);
}

static cJSON *item(const char *text)
{
        cJSON *j = NULL;
        (void) ao_yaml_load(text, strlen(text), "item", &j, NULL);
        return j;
}

static void test_contexts_v1(void)
{
        struct ao_hook_config cfg;
        parse_config("configVersion: v1\n"
                     "onStartup: 5\n"
                     "beforeAll: 10\n"
                     "schedule:\n"
                     "- {name: every-minute, crontab: '* * * * *'}\n"
                     "- {crontab: '*/5 * * * *', includeSnapshotsFrom: [pods]}\n"
                     "- {name: grouped-tick, crontab: '0 * * * *', group: g1}\n"
                     "kubernetes:\n"
                     "- {name: pods, kind: Pod, jqFilter: .metadata.name, group: g1}\n"
                     "- {name: nodes, kind: Node, includeSnapshotsFrom: [pods, nodes]}\n"
                     "- {kind: ConfigMap, keepFullObjectsInMemory: false, jqFilter: .data}\n",
                     AO_HOOK_GLOBAL, &cfg);

        check_context(ao_binding_context_ordered(&cfg, AO_BINDING_ON_STARTUP), &snapshots,
                      "{\"binding\":\"onStartup\"}", "onStartup: the binding alone");
        check_context(
            ao_binding_context_ordered(&cfg, AO_BINDING_BEFORE_ALL), &snapshots,
            "{\"binding\":\"beforeAll\",\"snapshots\":{\"kubernetes\":[{\"filterResult\":{\"k\":\"v\"}}],"
            "\"nodes\":[],\"pods\":["
            "{\"filterResult\":\"a\",\"object\":{\"metadata\":{\"name\":\"a\"}}},"
            "{\"filterResult\":\"b\",\"object\":{\"metadata\":{\"name\":\"b\"}}}]}}",
            "beforeAll: snapshots of every kubernetes binding, no type");
        check_context(ao_binding_context_schedule(&cfg, &cfg.schedules[0]), &snapshots,
                      "{\"binding\":\"every-minute\",\"type\":\"Schedule\"}", "schedule: name and type");
        check_context(ao_binding_context_schedule(&cfg, &cfg.schedules[1]), NULL,
                      "{\"binding\":\"schedule\",\"snapshots\":{\"pods\":[]},\"type\":\"Schedule\"}",
                      "schedule: default name, included snapshots (empty without a source)");
        check_context(
            ao_binding_context_schedule(&cfg, &cfg.schedules[2]), &snapshots,
            "{\"binding\":\"grouped-tick\",\"groupName\":\"g1\",\"snapshots\":{\"pods\":["
            "{\"filterResult\":\"a\",\"object\":{\"metadata\":{\"name\":\"a\"}}},"
            "{\"filterResult\":\"b\",\"object\":{\"metadata\":{\"name\":\"b\"}}}]},\"type\":\"Group\"}",
            "schedule with a group: Group context with the group's snapshots");
        check_context(ao_binding_context_synchronization(&cfg, &cfg.kubernetes[1]), &snapshots,
                      "{\"binding\":\"nodes\",\"objects\":[],\"snapshots\":{\"nodes\":[],\"pods\":["
                      "{\"filterResult\":\"a\",\"object\":{\"metadata\":{\"name\":\"a\"}}},"
                      "{\"filterResult\":\"b\",\"object\":{\"metadata\":{\"name\":\"b\"}}}]},"
                      "\"type\":\"Synchronization\"}",
                      "Synchronization: empty objects, included snapshots");
        check_context(ao_binding_context_synchronization(&cfg, &cfg.kubernetes[2]), &snapshots,
                      "{\"binding\":\"kubernetes\",\"objects\":[{\"filterResult\":{\"k\":\"v\"}}],"
                      "\"type\":\"Synchronization\"}",
                      "Synchronization: its binding's items as objects, no snapshots key without includes");
        check_context(ao_binding_context_synchronization(&cfg, &cfg.kubernetes[2]), NULL,
                      "{\"binding\":\"kubernetes\",\"objects\":[],\"type\":\"Synchronization\"}",
                      "Synchronization as queued: objects empty, filled when the run starts");
        check_context(
            ao_binding_context_synchronization(&cfg, &cfg.kubernetes[0]), &snapshots,
            "{\"binding\":\"pods\",\"groupName\":\"g1\",\"snapshots\":{\"pods\":["
            "{\"filterResult\":\"a\",\"object\":{\"metadata\":{\"name\":\"a\"}}},"
            "{\"filterResult\":\"b\",\"object\":{\"metadata\":{\"name\":\"b\"}}}]},\"type\":\"Group\"}",
            "Synchronization of a grouped binding: a Group context");
        check_context(ao_binding_context_event(&cfg, &cfg.kubernetes[2], AO_WATCH_MODIFIED,
                                               item("{\"filterResult\":{\"k\":\"v2\"}}")),
                      &snapshots,
                      "{\"binding\":\"kubernetes\",\"filterResult\":{\"k\":\"v2\"},\"type\":\"Event\","
                      "\"watchEvent\":\"Modified\"}",
                      "Event: watchEvent and the item's fields (no object kept)");
        check_context(
            ao_binding_context_event(&cfg, &cfg.kubernetes[1], AO_WATCH_DELETED,
                                     item("{\"object\":{\"kind\":\"Node\"}}")),
            NULL,
            "{\"binding\":\"nodes\",\"object\":{\"kind\":\"Node\"},\"snapshots\":{\"nodes\":[],\"pods\":[]},"
            "\"type\":\"Event\",\"watchEvent\":\"Deleted\"}",
            "Event: object without filterResult, snapshots included");
        ao_hook_config_done(&cfg);

        parse_config("configVersion: v1\nbeforeHelm: 1\nafterDeleteHelm: 2\n", AO_HOOK_MODULE, &cfg);
        check_context(ao_binding_context_ordered(&cfg, AO_BINDING_AFTER_DELETE_HELM), &snapshots,
                      "{\"binding\":\"afterDeleteHelm\",\"snapshots\":{}}",
                      "afterDeleteHelm without kubernetes bindings: empty snapshots");
        ao_hook_config_done(&cfg);
}

static void test_contexts_v0(void)
{
        struct ao_hook_config cfg;
        parse_config("{\"onStartup\": 1, \"beforeAll\": 2, \"schedule\": [{\"crontab\": \"* * * * *\"}],"
                     " \"onKubernetesEvent\": [{\"kind\": \"pod\", \"event\": [\"update\"]}]}",
                     AO_HOOK_GLOBAL, &cfg);
        check_context(ao_binding_context_ordered(&cfg, AO_BINDING_BEFORE_ALL), &snapshots,
                      "{\"binding\":\"beforeAll\"}", "v0 beforeAll: the binding alone");
        check_context(ao_binding_context_schedule(&cfg, &cfg.schedules[0]), &snapshots,
                      "{\"binding\":\"schedule\"}", "v0 schedule: the binding alone");
        check_context(
            ao_binding_context_event(&cfg, &cfg.kubernetes[0], AO_WATCH_MODIFIED,
                                     item("{\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
                                          "\"namespace\":\"ns\"}}}")),
            &snapshots,
            "{\"binding\":\"onKubernetesEvent\",\"resourceEvent\":\"update\",\"resourceKind\":\"Pod\","
            "\"resourceName\":\"p1\",\"resourceNamespace\":\"ns\"}",
            "v0 event: coordinates of the object");
        check_context(
            ao_binding_context_event(&cfg, &cfg.kubernetes[0], AO_WATCH_ADDED,
                                     item("{\"object\":{\"kind\":\"Namespace\",\"metadata\":{\"name\":"
                                          "\"n\"}}}")),
            NULL,
            "{\"binding\":\"onKubernetesEvent\",\"resourceEvent\":\"add\",\"resourceKind\":\"Namespace\","
            "\"resourceName\":\"n\",\"resourceNamespace\":\"\"}",
            "v0 event: cluster-scoped object");
        ao_hook_config_done(&cfg);
}

static void check_combine(const char *first, const char *more, const char *want, const char *what)
{
        cJSON *a = item(first), *b = item(more);
        ao_binding_contexts_combine(a, b);
        char *got = ao_json_canonical(a);
        tap_is_str(got, want, "combine: %s", what);
        free(got);
        cJSON_Delete(a);
}

static void test_combine(void)
{
        check_combine("[{\"binding\":\"a\",\"type\":\"Event\"}]", "[{\"binding\":\"a\",\"type\":\"Event\"}]",
                      "[{\"binding\":\"a\",\"type\":\"Event\"},{\"binding\":\"a\",\"type\":\"Event\"}]",
                      "ungrouped contexts all stay, in order");
        check_combine("[{\"binding\":\"x\",\"groupName\":\"g\",\"n\":1},{\"binding\":\"y\",\"groupName\":"
                      "\"g\",\"n\":2}]",
                      "[{\"binding\":\"e\"},{\"binding\":\"x\",\"groupName\":\"g\",\"n\":3},"
                      "{\"binding\":\"x\",\"groupName\":\"h\",\"n\":4},{\"binding\":\"x\",\"groupName\":"
                      "\"h\",\"n\":5}]",
                      "[{\"binding\":\"y\",\"groupName\":\"g\",\"n\":2},{\"binding\":\"e\"},"
                      "{\"binding\":\"x\",\"groupName\":\"g\",\"n\":3},{\"binding\":\"x\",\"groupName\":"
                      "\"h\",\"n\":5}]",
                      "a run of one group keeps only its last context");
        check_combine("[]", "[]", "[]", "empty");
}

/* Which files are Python hooks, and when a module's hooks/venv can run them. */
static void expect_venv(const char *module, bool want, const char *what)
{
        char *dir = ao_xasprintf("%s/%s", scratch, module);
        char *venv = ao_hooks_python_venv(dir);
        char *expected = ao_xasprintf("%s/hooks/venv", dir);
        if (want)
                tap_is_str(venv ? venv : "(none)", expected, "venv: %s", what);
        else
                tap_ok(!venv, "no venv: %s", what);
        free(expected);
        free(venv);
        free(dir);
}

static void test_python_venv(void)
{
        tap_ok(ao_hook_is_python("/m/hooks/a.py"), "python: a .py file");
        tap_ok(ao_hook_is_python("b.py"), "python: a bare name");
        tap_ok(!ao_hook_is_python("/m/hooks/a.py.sh"), "python: .py not at the end is not");
        tap_ok(!ao_hook_is_python("/m/hooks.py/a"), "python: a .py directory does not count");
        tap_ok(!ao_hook_is_python("/m/hooks/apy"), "python: no dot");

        touch("py-ok/hooks/venv/bin/python3", 0755);
        expect_venv("py-ok", true, "an executable bin/python3");
        touch("py-group/hooks/venv/bin/python3", 0710);
        expect_venv("py-group", true, "any execute bit will do");
        touch("py-noexec/hooks/venv/bin/python3", 0644);
        expect_venv("py-noexec", false, "bin/python3 without an execute bit");
        touch("py-dir/hooks/venv/bin/python3/x", 0755);
        expect_venv("py-dir", false, "bin/python3 is a directory");
        touch("py-none/hooks/a.py", 0755);
        expect_venv("py-none", false, "no hooks/venv");
        touch("py-link/hooks/target", 0755);
        char *link = ao_xasprintf("%s/py-link/hooks/venv/bin/python3", scratch);
        touch("py-link/hooks/venv/bin/placeholder", 0644);
        if (symlink("../../target", link) < 0)
                tap_bail("symlink");
        expect_venv("py-link", true, "a link to an executable is followed");
        free(link);
        link = ao_xasprintf("%s/py-dangling/hooks/venv/bin/python3", scratch);
        touch("py-dangling/hooks/venv/bin/placeholder", 0644);
        if (symlink("/nonexistent/python3", link) < 0)
                tap_bail("symlink");
        expect_venv("py-dangling", false, "a dangling link");
        free(link);
}

int main(void)
{
        struct ao_log_options log = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_ERROR, .fd = -1};
        ao_log_setup(&log);
        if (!mkdtemp(scratch))
                tap_bail("mkdtemp");
        test_discovery();
        test_contexts_v1();
        test_contexts_v0();
        test_combine();
        test_python_venv();
        char *cmd = ao_xasprintf("rm -rf '%s'", scratch);
        (void) !system(cmd);
        free(cmd);
        return tap_done();
}
