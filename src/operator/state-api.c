/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the debug socket and /status/converge show, built in the main
 * thread in one go, so each answer is a consistent snapshot. The documents
 * are the Go operator's (its JSON and YAML shapes); the ".text" forms are
 * its text where it has one (queues, config list) and ours where its
 * default is not text (module list: a table; resource monitors: the detail
 * behind its lists). The path and query are read by
 * ao_debug_request_parse() (src/http/debug-request.c):
 *   /queue/list, /queue/main            queues and their tasks (?showEmpty=)
 *   /global/list                        {"globalHooks": [names]}
 *   /global/values, /global/config      the global section's values
 *   /global/patches                     stored memory patches of global hooks
 *   /global/snapshots                   kubernetes snapshots of the global hooks
 *   /module/list                        {"enabledModules": [names]}
 *   /module/<name>/values|config        the module's section (?global=true: both, by key)
 *   /module/<name>/patches              the module's stored memory patches
 *   /module/<name>/snapshots            {"<hook>": {"<binding>": {"snapshot": [items]}}}
 *   /module/<name>/render               helm template's output (?debug=, ?diff=): module-render.c
 *   /module/resource-monitor            release monitors (?module=<name>, ?detail=true: ours)
 *   /config/list, POST /config/set      runtime parameters (runtime-config.c)
 *   /status/converge                    converge state (text; ?output=json for JSON)
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/debug-request.h"
#include "ao/http.h"
#include "ao/strbuf.h"
#include "ao/values-store.h"
#include "ao/yaml.h"
#include "internal.h"

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static int reply_text(int status, cJSON **ret_body, const char *text)
{
        *ret_body = cJSON_CreateString(text);
        return status;
}

static cJSON *wrapped(const char *key, cJSON *section)
{
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, key, section);
        return doc;
}

/* The stored patch operations as the Go operator lists its patches: one patch holding them all, or null. */
static cJSON *patches_of(const struct operator_state *op, const struct ao_values_section *section)
{
        const cJSON *ops = ao_values_store_patches(op->values, section);
        if (cJSON_GetArraySize(ops) == 0)
                return cJSON_CreateNull();
        cJSON *list = cJSON_CreateArray();
        cJSON *patch = cJSON_CreateObject();
        cJSON_AddItemToObject(patch, "Operations", cJSON_Duplicate(ops, true));
        cJSON_AddItemToArray(list, patch);
        return list;
}

/*
 * Each hook's kubernetes bindings with the items its next binding context would carry:
 * {"<hook>": {"<binding>": {"snapshot": [items]}}}. @all: every hook (a module's), else only the
 * hooks with kubernetes bindings (the global ones), as the Go operator lists them.
 */
static cJSON *snapshots_of(struct hook_owner *owner, bool all)
{
        cJSON *doc = cJSON_CreateObject();
        struct ao_hook *hooks = owner->hooks;
        for (size_t i = 0; i < owner->n_hooks; i++) {
                if (!all && hooks[i].config.n_kubernetes == 0)
                        continue;
                struct ao_snapshot_source src = bindings_snapshot_source(owner, &hooks[i]);
                cJSON *bindings = cJSON_CreateObject();
                for (size_t k = 0; k < hooks[i].config.n_kubernetes; k++) {
                        const char *name = hooks[i].config.kubernetes[k].name;
                        cJSON *binding = cJSON_AddObjectToObject(bindings, name);
                        cJSON_AddItemToObject(binding, "snapshot", ao_snapshot_items(&src, name));
                }
                cJSON_AddItemToObject(doc, hooks[i].name, bindings);
        }
        return doc;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* [@names sorted] */
static cJSON *sorted_list(const char **names, size_t n)
{
        qsort(names, n, sizeof(*names), compare_strings);
        cJSON *list = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++)
                cJSON_AddItemToArray(list, cJSON_CreateString(names[i]));
        return list;
}

static cJSON *global_hook_names(const struct operator_state *op)
{
        _cleanup_free_ const char **names = ao_xcalloc(op->global.n_hooks + 1, sizeof(*names));
        for (size_t i = 0; i < op->global.n_hooks; i++)
                names[i] = op->global.hooks[i].name;
        return wrapped("globalHooks", sorted_list(names, op->global.n_hooks));
}

static int global_route(struct operator_state *op, enum ao_debug_route route, cJSON **ret_body)
{
        struct ao_error err = {0};
        cJSON *section = NULL;
        int r;
        if (route == AO_DEBUG_GLOBAL_LIST) {
                *ret_body = global_hook_names(op);
                return 200;
        }
        if (route == AO_DEBUG_GLOBAL_PATCHES) {
                *ret_body = patches_of(op, op->global.values);
                return 200;
        }
        if (route == AO_DEBUG_GLOBAL_SNAPSHOTS) {
                *ret_body = snapshots_of(&op->global, false);
                return 200;
        }
        if (route == AO_DEBUG_GLOBAL_VALUES)
                r = ao_values_store_values(op->values, op->global.values, &section, &err);
        else
                r = ao_values_store_config_values(op->values, op->global.values, &section, &err);
        if (r < 0)
                return reply_text(500, ret_body, err.msg);
        *ret_body = section;
        return 200;
}

/* The Go operator's answer: the enabled modules by name. */
static cJSON *enabled_modules(const struct operator_state *op)
{
        _cleanup_free_ const char **names = ao_xcalloc(op->modules.n + 1, sizeof(*names));
        size_t n = 0;
        for (size_t i = 0; i < op->modules.n; i++)
                if (op->modules.items[i].enabled)
                        names[n++] = op->modules.items[i].name;
        return wrapped("enabledModules", sorted_list(names, n));
}

/* `module list -o text`: every module, in run order, with its order and state. */
static char *module_table(const struct operator_state *op)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_appendf(&sb, "%-32s %6s  %s\n", "MODULE", "ORDER", "STATE");
        for (size_t i = 0; i < op->modules.n; i++) {
                const struct module *mod = &op->modules.items[i];
                ao_strbuf_appendf(&sb, "%-32s %6u  %s\n", mod->name, mod->order,
                                  mod->enabled ? "enabled" : "disabled");
        }
        return ao_strbuf_steal(&sb);
}

static int module_route(struct operator_state *op, const struct ao_http_request *http,
                        const struct ao_debug_request *req, cJSON **ret_body)
{
        struct module *mod = modules_find(&op->modules, req->module);
        if (!mod)
                return reply_text(404, ret_body, "no such module\n");
        if (req->route == AO_DEBUG_MODULE_RENDER)
                return module_render_start(op, mod, req, http->id, ret_body);
        if (req->route == AO_DEBUG_MODULE_PATCHES) {
                *ret_body = patches_of(op, mod->owner.values);
                return 200;
        }
        if (req->route == AO_DEBUG_MODULE_SNAPSHOTS) {
                *ret_body = snapshots_of(&mod->owner, true);
                return 200;
        }
        bool values = req->route == AO_DEBUG_MODULE_VALUES;
        struct ao_error err = {0};
        cJSON *section = NULL, *global = NULL;
        struct ao_values_section *own = mod->owner.values, *global_section = op->global.values;
        int r = values ? ao_values_store_values(op->values, own, &section, &err)
                       : ao_values_store_config_values(op->values, own, &section, &err);
        if (r >= 0 && req->global)
                r = values ? ao_values_store_values(op->values, global_section, &global, &err)
                           : ao_values_store_config_values(op->values, global_section, &global, &err);
        if (r < 0) {
                cJSON_Delete(section);
                return reply_text(500, ret_body, err.msg);
        }
        if (!global) {
                *ret_body = section;
                return 200;
        }
        /* Both sections by key, in the order the Go operator writes a map's keys (sorted). */
        bool global_first = strcmp("global", mod->values_key) < 0;
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, global_first ? "global" : mod->values_key,
                              global_first ? global : section);
        cJSON_AddItemToObject(doc, global_first ? mod->values_key : "global",
                              global_first ? section : global);
        *ret_body = doc;
        return 200;
}

/* "Kind namespace/name" (the monitor's description) as the Go operator's "namespace/Kind/name". */
/* "Kind namespace/name" (the monitor's description) as the Go operator's "namespace/Kind/name". malloc'd. */
static char *resource_id(const struct operator_state *op, const char *description)
{
        const char *space = strchr(description, ' ');
        if (!space)
                return ao_xstrdup(description);
        int kind_len = (int) (space - description);
        const char *slash = strchr(space + 1, '/');
        if (!slash) /* no namespace: the release's, as the Go operator's monitor assumes */
                return ao_xasprintf("%s/%.*s/%s", cluster_config_namespace(op), kind_len, description,
                                    space + 1);
        return ao_xasprintf("%.*s/%.*s/%s", (int) (slash - space - 1), space + 1, kind_len, description,
                            slash + 1);
}

static const cJSON *monitor_of(const cJSON *detail, const char *module)
{
        const cJSON *m;
        cJSON_ArrayForEach(m, detail)
        {
                if (strcmp(cJSON_GetObjectItemCaseSensitive(m, "module")->valuestring, module) == 0)
                        return m;
        }
        return NULL;
}

/* One module's entry in the Go operator's document: its objects' ids, sorted. */
static cJSON *monitor_ids(const struct operator_state *op, const cJSON *monitor)
{
        const cJSON *objects = cJSON_GetObjectItemCaseSensitive(monitor, "objects"), *o;
        size_t n = (size_t) cJSON_GetArraySize(objects), k = 0;
        char **ids = ao_xcalloc(n + 1, sizeof(*ids));
        cJSON_ArrayForEach(o, objects)
        {
                ids[k++] = resource_id(op, o->valuestring);
        }
        cJSON *list = sorted_list((const char **) ids, n);
        for (k = 0; k < n; k++)
                free(ids[k]);
        free(ids);
        return list;
}

/* Our monitors' detail, {"monitors": [...]}, of @only (a module name) or of all when "". */
static cJSON *monitors_detail(cJSON *detail, const char *only)
{
        cJSON *kept = cJSON_CreateArray();
        const cJSON *m;
        cJSON_ArrayForEach(m, detail)
        {
                const char *name = cJSON_GetObjectItemCaseSensitive(m, "module")->valuestring;
                if (!only[0] || strcmp(name, only) == 0)
                        cJSON_AddItemToArray(kept, cJSON_Duplicate(m, true));
        }
        return wrapped("monitors", kept);
}

/*
 * The Go operator's resource monitor document: each enabled module's objects, sorted, or "No
 * monitor"; ?module= keeps one. ".text" shows our monitors' detail (watches, missing objects,
 * heals) as YAML, and ?detail=true gives that document in any format.
 */
static int resource_monitors(struct operator_state *op, const struct ao_http_request *http,
                             const struct ao_debug_request *req, cJSON **ret_body)
{
        const char *only = req->only_module;
        if (only[0] && !modules_find(&op->modules, only))
                return reply_text(404, ret_body, "no such module\n");
        _cleanup_(json_deletep) cJSON *detail = release_monitors_dump(op);
        if (http->format == AO_HTTP_FORMAT_TEXT) {
                _cleanup_(json_deletep) cJSON *doc = monitors_detail(detail, only);
                _cleanup_free_ char *yaml = ao_yaml_emit(doc);
                return reply_text(200, ret_body, yaml);
        }
        if (req->detail) {
                *ret_body = monitors_detail(detail, only);
                return 200;
        }
        cJSON *doc = cJSON_CreateObject();
        for (size_t i = 0; i < op->modules.n; i++) {
                const struct module *mod = &op->modules.items[i];
                if (!mod->enabled || (only[0] && strcmp(mod->name, only) != 0))
                        continue;
                const cJSON *monitor = monitor_of(detail, mod->name);
                if (monitor)
                        cJSON_AddItemToObject(doc, mod->name, monitor_ids(op, monitor));
                else
                        cJSON_AddStringToObject(doc, mod->name, "No monitor");
        }
        *ret_body = doc;
        return 200;
}

/* POST /config/set: the form's name, value and duration, as the Go operator reads them. */
static int config_set(struct operator_state *op, const struct ao_http_request *http, cJSON **ret_body)
{
        _cleanup_free_ char *name = NULL, *value = NULL, *duration = NULL;
        struct ao_error err = {0};
        if (ao_debug_form_get(http->body, "name", &name, &err) < 0 ||
            ao_debug_form_get(http->body, "value", &value, &err) < 0 ||
            ao_debug_form_get(http->body, "duration", &duration, &err) < 0)
                return reply_text(400, ret_body, err.msg);
        if (!name || !name[0])
                return reply_text(400, ret_body, "'name' parameter is required");
        if (!value || !value[0])
                return reply_text(400, ret_body, "'value' parameter is required");
        if (runtime_config_set(op, name, value, duration, &err) < 0)
                return reply_text(400, ret_body, err.msg);
        *ret_body = NULL;
        return 200;
}

static size_t pending_tasks(struct operator_state *op)
{
        size_t n = 0;
        for (size_t i = 0; i < ao_queues_count(op->queues); i++)
                n += ao_queue_length(ao_queues_at(op->queues, i));
        return n;
}

/*
 * ADDON_OPERATOR_ISOLATE_FAILING_MODULES: the modules whose isolated runs keep failing, by name;
 * the key is there only when there are some, so the document is the Go operator's otherwise.
 */
static void add_held_back(const struct operator_state *op, cJSON *doc)
{
        cJSON *names = NULL;
        for (size_t i = 0; i < op->modules.n; i++) {
                if (!op->modules.items[i].isolated)
                        continue;
                if (!names)
                        names = cJSON_AddArrayToObject(doc, "CONVERGE_HELD_BACK");
                cJSON_AddItemToArray(names, cJSON_CreateString(op->modules.items[i].name));
        }
}

/* The Go operator's /status/converge lines and JSON keys, and the modules held back. */
static int converge_status(struct operator_state *op, bool output_json, cJSON **ret_body)
{
        size_t tasks = pending_tasks(op);
        bool startup = !op->first_converge_done;
        bool not_started = startup && !op->converge_running;
        if (output_json) {
                cJSON *doc = cJSON_CreateObject();
                cJSON_AddNumberToObject(doc, "CONVERGE_IN_PROGRESS",
                                        !startup && op->converge_running ? (double) tasks : 0);
                cJSON_AddBoolToObject(doc, "CONVERGE_WAIT_TASK",
                                      !startup && !op->converge_running && tasks > 0);
                cJSON_AddBoolToObject(doc, "STARTUP_CONVERGE_DONE", !startup);
                cJSON_AddNumberToObject(doc, "STARTUP_CONVERGE_IN_PROGRESS",
                                        startup && !not_started ? (double) tasks : 0);
                cJSON_AddBoolToObject(doc, "STARTUP_CONVERGE_NOT_STARTED", not_started);
                add_held_back(op, doc);
                *ret_body = doc;
                return 200;
        }
        char text[128];
        if (not_started)
                (void) snprintf(text, sizeof(text), "STARTUP_CONVERGE_NOT_STARTED\n");
        else if (startup)
                (void) snprintf(text, sizeof(text), "STARTUP_CONVERGE_IN_PROGRESS: %zu tasks\n", tasks);
        else if (op->converge_running)
                (void) snprintf(text, sizeof(text),
                                "STARTUP_CONVERGE_DONE\nCONVERGE_IN_PROGRESS: %zu tasks\n", tasks);
        else
                (void) snprintf(text, sizeof(text), "STARTUP_CONVERGE_DONE\n%s",
                                tasks ? "CONVERGE_WAIT_TASK\n" : "");
        _cleanup_free_ char *held = readiness_held_back(op);
        if (!held)
                return reply_text(200, ret_body, text);
        _cleanup_free_ char *with_held = ao_xasprintf("%sCONVERGE_HELD_BACK: %s\n", text, held);
        return reply_text(200, ret_body, with_held);
}

/* A text answer built by the callee (taken). */
static int reply_owned_text(char *text, cJSON **ret_body)
{
        int status = reply_text(200, ret_body, text);
        free(text);
        return status;
}

static int reply_document(cJSON *doc, cJSON **ret_body)
{
        *ret_body = doc;
        return 200;
}

int state_api_handle(const struct ao_http_request *http, cJSON **ret_body, void *userdata)
{
        struct operator_state *op = userdata;
        struct ao_debug_request req;
        struct ao_error err = {0};
        int r = ao_debug_request_parse(http->path, http->query, &req, &err);

        if (r < 0) {
                _cleanup_free_ char *text = ao_xasprintf("%s\n", err.msg);
                return reply_text(r == -ENOENT ? 404 : 400, ret_body, text);
        }
        if (ao_debug_route_is_post(req.route) != (strcmp(http->method, "POST") == 0))
                return reply_text(405, ret_body, "405 method not allowed\n");
        bool text = http->format == AO_HTTP_FORMAT_TEXT;
        switch (req.route) {
        case AO_DEBUG_CONVERGE:
                return converge_status(op, req.output_json, ret_body);
        case AO_DEBUG_QUEUE_LIST:
                return text ? reply_owned_text(ao_queues_text_list(op->queues, req.show_empty), ret_body)
                            : reply_document(ao_queues_dump_list(op->queues, req.show_empty), ret_body);
        case AO_DEBUG_QUEUE_MAIN:
                return text ? reply_owned_text(ao_queues_text_main(op->queues), ret_body)
                            : reply_document(ao_queues_dump_main(op->queues), ret_body);
        case AO_DEBUG_GLOBAL_LIST:
        case AO_DEBUG_GLOBAL_VALUES:
        case AO_DEBUG_GLOBAL_CONFIG:
        case AO_DEBUG_GLOBAL_PATCHES:
        case AO_DEBUG_GLOBAL_SNAPSHOTS:
                return global_route(op, req.route, ret_body);
        case AO_DEBUG_MODULE_LIST:
                return text ? reply_owned_text(module_table(op), ret_body)
                            : reply_document(enabled_modules(op), ret_body);
        case AO_DEBUG_MODULE_RESOURCE_MONITOR:
                return resource_monitors(op, http, &req, ret_body);
        case AO_DEBUG_CONFIG_LIST:
                return text ? reply_owned_text(runtime_config_table(op), ret_body)
                            : reply_document(runtime_config_list(op), ret_body);
        case AO_DEBUG_CONFIG_SET:
                return config_set(op, http, ret_body);
        default:
                return module_route(op, http, &req, ret_body);
        }
}
