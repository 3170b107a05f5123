/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the debug socket and /status/converge show, built in the main
 * thread in one go, so each answer is a consistent snapshot:
 *   /queue/list, /queue/main            queues and their tasks
 *   /global/values, /global/config      {"global": ...}
 *   /global/patches                     stored memory patches of global hooks
 *   /global/snapshots                   kubernetes snapshots of the global hooks (as for a module)
 *   /module/list                        modules, their order and state
 *   /module/<name>/values|config        {"<key>": ...} (?global=true adds "global")
 * The path and query are read by ao_debug_request_parse() (src/http/debug-request.c).
 *   /module/<name>/patches              the module's stored memory patches
 *   /module/<name>/snapshots            {"<hook>": {"<binding>": [items]}}: kubernetes snapshots
 *   /module/resource-monitor            release monitors (none without a cluster)
 *   /status/converge                    converge state (text; ?output=json for JSON)
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/debug-request.h"
#include "ao/values-store.h"
#include "internal.h"

static int reply_text(int status, cJSON **ret_body, const char *text)
{
        *ret_body = cJSON_CreateString(text);
        return status;
}

static cJSON *queue_only(struct operator_state *op, const char *name)
{
        cJSON *all = ao_queues_dump(op->queues), *found = NULL;
        const cJSON *q;
        cJSON_ArrayForEach(q, all)
        {
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(q, "name");
                if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
                        found = cJSON_Duplicate(q, true);
        }
        cJSON_Delete(all);
        cJSON *list = cJSON_CreateArray();
        if (found)
                cJSON_AddItemToArray(list, found);
        return list;
}

static cJSON *wrapped(const char *key, cJSON *section)
{
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, key, section);
        return doc;
}

/* Each hook's kubernetes bindings with the items its next binding context would carry. */
static cJSON *snapshots_of(struct hook_owner *owner)
{
        cJSON *doc = cJSON_CreateObject();
        struct ao_hook *hooks = owner->hooks;
        for (size_t i = 0; i < owner->n_hooks; i++) {
                struct ao_snapshot_source src = bindings_snapshot_source(owner, &hooks[i]);
                cJSON *bindings = cJSON_CreateObject();
                for (size_t k = 0; k < hooks[i].config.n_kubernetes; k++) {
                        const char *name = hooks[i].config.kubernetes[k].name;
                        cJSON_AddItemToObject(bindings, name, ao_snapshot_items(&src, name));
                }
                cJSON_AddItemToObject(doc, hooks[i].name, bindings);
        }
        return doc;
}

static int global_route(struct operator_state *op, enum ao_debug_route route, cJSON **ret_body)
{
        struct ao_error err = {0};
        cJSON *section = NULL;
        int r;
        if (route == AO_DEBUG_GLOBAL_PATCHES) {
                *ret_body = cJSON_Duplicate(ao_values_store_patches(op->values, op->global.values), true);
                return 200;
        }
        if (route == AO_DEBUG_GLOBAL_SNAPSHOTS) {
                *ret_body = snapshots_of(&op->global);
                return 200;
        }
        if (route == AO_DEBUG_GLOBAL_VALUES)
                r = ao_values_store_values(op->values, op->global.values, &section, &err);
        else
                r = ao_values_store_config_values(op->values, op->global.values, &section, &err);
        if (r < 0)
                return reply_text(500, ret_body, err.msg);
        *ret_body = wrapped("global", section);
        return 200;
}

static cJSON *module_list(struct operator_state *op)
{
        cJSON *modules = cJSON_CreateArray();
        for (size_t i = 0; i < op->modules.n; i++) {
                const struct module *mod = &op->modules.items[i];
                cJSON *m = cJSON_CreateObject();
                cJSON_AddStringToObject(m, "name", mod->name);
                cJSON_AddNumberToObject(m, "order", mod->order);
                cJSON_AddBoolToObject(m, "enabled", mod->enabled);
                cJSON_AddBoolToObject(m, "started", mod->started);
                cJSON_AddNumberToObject(m, "hooks", (double) mod->owner.n_hooks);
                cJSON_AddStringToObject(m, "path", mod->dir);
                cJSON_AddItemToArray(modules, m);
        }
        return wrapped("modules", modules);
}

static int module_route(struct operator_state *op, const struct ao_debug_request *req, cJSON **ret_body)
{
        struct module *mod = modules_find(&op->modules, req->module);
        if (!mod)
                return reply_text(404, ret_body, "no such module\n");
        if (req->route == AO_DEBUG_MODULE_PATCHES) {
                *ret_body = cJSON_Duplicate(ao_values_store_patches(op->values, mod->owner.values), true);
                return 200;
        }
        if (req->route == AO_DEBUG_MODULE_SNAPSHOTS) {
                *ret_body = snapshots_of(&mod->owner);
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
        cJSON *doc = wrapped(mod->values_key, section);
        if (global)
                cJSON_AddItemToObject(doc, "global", global);
        *ret_body = doc;
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

int state_api_handle(const char *path, const char *query, cJSON **ret_body, void *userdata)
{
        struct operator_state *op = userdata;
        struct ao_debug_request req;
        struct ao_error err = {0};
        int r = ao_debug_request_parse(path, query, &req, &err);

        if (r < 0) {
                _cleanup_free_ char *text = ao_xasprintf("%s\n", err.msg);
                return reply_text(r == -ENOENT ? 404 : 400, ret_body, text);
        }
        switch (req.route) {
        case AO_DEBUG_CONVERGE:
                return converge_status(op, req.output_json, ret_body);
        case AO_DEBUG_QUEUE_LIST:
                *ret_body = ao_queues_dump(op->queues);
                return 200;
        case AO_DEBUG_QUEUE_MAIN:
                *ret_body = queue_only(op, AO_QUEUE_MAIN);
                return 200;
        case AO_DEBUG_GLOBAL_VALUES:
        case AO_DEBUG_GLOBAL_CONFIG:
        case AO_DEBUG_GLOBAL_PATCHES:
        case AO_DEBUG_GLOBAL_SNAPSHOTS:
                return global_route(op, req.route, ret_body);
        case AO_DEBUG_MODULE_LIST:
                *ret_body = module_list(op);
                return 200;
        case AO_DEBUG_MODULE_RESOURCE_MONITOR:
                *ret_body = wrapped("monitors", release_monitors_dump(op));
                return 200;
        default:
                return module_route(op, &req, ret_body);
        }
}
