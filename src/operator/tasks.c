/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every task the lifecycle queues, built in one place, and the requests whose answer depends on
 * what is queued already ("a converge is waiting: this reason rides along"). Handlers queue work
 * only through here, so none of them calls another's file, and this file calls only the queue.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/hooks.h"
#include "ao/queue.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "internal.h"

struct ao_queue *tasks_queue(struct operator_state *op, const char *name)
{
        return ao_queues_get(op->queues, name ? name : AO_QUEUE_MAIN, true);
}

static const char *const task_type_names[_TASK_TYPE_MAX] = {
    [TASK_GLOBAL_HOOK_RUN] = "GlobalHookRun",
    [TASK_MODULE_HOOK_RUN] = "ModuleHookRun",
    [TASK_CONVERGE] = "ConvergeModules",
    [TASK_MODULE_RUN] = "ModuleRun",
    [TASK_MODULE_DELETE] = "ModuleDelete",
    [TASK_MODULE_PURGE] = "ModulePurge",
    [TASK_KUBE_SYNC] = "GlobalHookEnableKubernetesBindings",
    [TASK_MODULE_GROUP_RUN] = "ParallelModuleRun",
    [TASK_MODULE_ENSURE_CRDS] = "ModuleEnsureCRDs",
};

const char *tasks_type_name(int type)
{
        return type >= 0 && type < _TASK_TYPE_MAX ? task_type_names[type] : NULL;
}

static const char *nonempty(const char *s)
{
        return s && *s ? s : NULL;
}

struct ao_log_context tasks_log_context(const struct ao_task *t)
{
        struct ao_log_context ctx = {.queue = ao_queue_name(ao_task_queue(t)),
                                     .task = tasks_type_name(ao_task_type(t))};
        const void *payload = ao_task_payload(t);
        switch (ao_task_type(t)) {
        case TASK_GLOBAL_HOOK_RUN:
        case TASK_MODULE_HOOK_RUN: {
                const struct hook_task *ht = payload;
                ctx.module = hook_owner_module_name(ht->owner);
                ctx.hook = ht->hook->name;
                ctx.hook_type = ht->owner->module ? "module" : "global";
                ctx.binding = ht->binding_name;
                ctx.event = ao_binding_type_to_string(ht->binding);
                ctx.event_type = nonempty(ht->activation);
                break;
        }
        case TASK_CONVERGE:
                ctx.event_type = nonempty(((const struct converge_task *) payload)->reason);
                break;
        case TASK_MODULE_RUN:
        case TASK_MODULE_DELETE:
        case TASK_MODULE_PURGE:
        case TASK_MODULE_ENSURE_CRDS: {
                const struct module_task *mt = payload;
                ctx.module = mt->module ? mt->module->name : NULL;
                ctx.event_type = nonempty(mt->activation);
                break;
        }
        case TASK_MODULE_GROUP_RUN:
                ctx.event_type = nonempty(((const struct module_group_task *) payload)->activation);
                break;
        default:
                break;
        }
        return ctx;
}

static void hook_task_free(void *payload)
{
        struct hook_task *ht = payload;
        free(ht->binding_name);
        free(ht->activation);
        free(ht);
}

static void converge_task_free(void *payload)
{
        struct converge_task *ct = payload;
        free(ct->reason);
        free(ct->global_checksum);
        free(ct);
}

static void module_task_free(void *payload)
{
        struct module_task *mt = payload;
        free(mt->release);
        free(mt->activation);
        free(mt);
}

/* ---- hook runs ---------------------------------------------------------------------------------- */

/* The spec of @s as a queue task; the strings it points to are in @ret_description, @ret_key. */
static struct ao_task_spec hook_task_spec(const struct hook_run_spec *s, char **ret_description,
                                          char **ret_key)
{
        struct ao_hook *hook = &s->owner->hooks[s->hook_index];
        struct hook_task *ht = ao_xcalloc(1, sizeof(*ht));
        *ht = (struct hook_task){.owner = s->owner,
                                 .hook = hook,
                                 .binding = s->binding,
                                 .binding_name = ao_xstrdup(s->binding_name),
                                 .activation = ao_xstrdup(s->activation ? s->activation : ""),
                                 .kube_sync = s->kube_sync,
                                 .kube_binding = s->kube_binding};
        bool module = s->owner->module != NULL;
        *ret_key = hook_identity(s->owner, hook);
        *ret_description =
            ao_xasprintf("%s:%s:%s", module ? "ModuleHookRun" : "GlobalHookRun", s->binding_name, *ret_key);
        return (struct ao_task_spec){
            .type = module ? TASK_MODULE_HOOK_RUN : TASK_GLOBAL_HOOK_RUN,
            .description = *ret_description,
            .combine_key = *ret_key,
            .binding_contexts = s->contexts,
            .allow_failure = s->allow_failure,
            .throttle = s->owner->throttles ? &s->owner->throttles[s->hook_index] : NULL,
            .payload = ht,
            .payload_free = hook_task_free,
        };
}

struct ao_task *tasks_push_hook_run(struct operator_state *op, const char *queue,
                                    const struct hook_run_spec *s)
{
        _cleanup_free_ char *description = NULL, *key = NULL;
        struct ao_task_spec spec = hook_task_spec(s, &description, &key);
        return ao_queue_push_tail(tasks_queue(op, queue), &spec);
}

struct ao_task *tasks_push_hook_run_after(struct ao_task *after, const struct hook_run_spec *s)
{
        _cleanup_free_ char *description = NULL, *key = NULL;
        struct ao_task_spec spec = hook_task_spec(s, &description, &key);
        return ao_queue_push_after(after, &spec);
}

/* (order, name) as the documentation orders hooks of one binding. */
struct ordered {
        size_t index;
        const struct ao_hook *hook;
        int64_t order;
};

static int compare_ordered(const void *a, const void *b)
{
        const struct ordered *x = a, *y = b;
        if (x->order != y->order)
                return x->order < y->order ? -1 : 1;
        return strcmp(x->hook->name, y->hook->name);
}

void tasks_push_ordered_hook_runs(struct operator_state *op, struct ao_task *before, struct hook_owner *owner,
                                  enum ao_binding_type type, const char *activation)
{
        struct ordered *list = ao_xcalloc(owner->n_hooks + 1, sizeof(*list));
        size_t count = 0;
        for (size_t i = 0; i < owner->n_hooks; i++) {
                const struct ao_hook *hook = &owner->hooks[i];
                if (hook->config.has_order[type])
                        list[count++] = (struct ordered){i, hook, hook->config.order[type]};
        }
        qsort(list, count, sizeof(*list), compare_ordered);
        for (size_t i = 0; i < count; i++) {
                cJSON *contexts = cJSON_CreateArray();
                cJSON_AddItemToArray(contexts, ao_binding_context_ordered(&list[i].hook->config, type));
                struct hook_run_spec s = {.owner = owner,
                                          .hook_index = list[i].index,
                                          .binding = type,
                                          .binding_name = ao_binding_type_to_string(type),
                                          .activation = activation,
                                          .contexts = contexts};
                _cleanup_free_ char *description = NULL, *key = NULL;
                struct ao_task_spec spec = hook_task_spec(&s, &description, &key);
                if (before)
                        ao_queue_push_before(before, &spec);
                else
                        ao_queue_push_tail(tasks_queue(op, AO_QUEUE_MAIN), &spec);
        }
        free(list);
}

/* ---- converge ------------------------------------------------------------------------------------ */

static bool is_converge(const struct ao_task *t, void *userdata)
{
        (void) userdata;
        return ao_task_type(t) == TASK_CONVERGE;
}

void tasks_request_converge(struct operator_state *op, const char *reason)
{
        struct ao_queue *main_queue = tasks_queue(op, AO_QUEUE_MAIN);
        if (ao_queue_find(main_queue, false, is_converge, NULL))
                return;
        struct converge_task *ct = ao_xcalloc(1, sizeof(*ct));
        *ct = (struct converge_task){.phase = CONVERGE_BEFORE_ALL, .reason = ao_xstrdup(reason)};
        _cleanup_free_ char *description = ao_xasprintf("ConvergeModules:%s", reason);
        struct ao_task_spec spec = {.type = TASK_CONVERGE,
                                    .description = description,
                                    .payload = ct,
                                    .payload_free = converge_task_free};
        ao_queue_push_tail(main_queue, &spec);
}

/* ---- module runs, deletes and purges ------------------------------------------------------------- */

static struct ao_task_spec module_task_spec(enum task_type type, struct module *mod, const char *release,
                                            const char *activation, char **ret_description)
{
        struct module_task *mt = ao_xcalloc(1, sizeof(*mt));
        *mt = (struct module_task){.module = mod,
                                   .release = release ? ao_xstrdup(release) : NULL,
                                   .activation = ao_xstrdup(activation)};
        *ret_description = ao_xasprintf("%s:%s", task_type_names[type], mod ? mod->name : release);
        return (struct ao_task_spec){
            .type = type, .description = *ret_description, .payload = mt, .payload_free = module_task_free};
}

static void push_module_task_before(struct ao_task *before, enum task_type type, struct module *mod,
                                    const char *release, const char *activation)
{
        _cleanup_free_ char *description = NULL;
        struct ao_task_spec spec = module_task_spec(type, mod, release, activation, &description);
        ao_queue_push_before(before, &spec);
}

void tasks_push_module_run(struct ao_task *before, struct module *mod, const char *activation)
{
        push_module_task_before(before, TASK_MODULE_RUN, mod, NULL, activation);
}

void tasks_push_module_delete(struct ao_task *before, struct module *mod, const char *activation)
{
        push_module_task_before(before, TASK_MODULE_DELETE, mod, NULL, activation);
}

void tasks_push_module_purge(struct ao_task *before, const char *release, const char *activation)
{
        push_module_task_before(before, TASK_MODULE_PURGE, NULL, release, activation);
}

void tasks_push_module_ensure_crds(struct ao_task *before, struct module *mod, const char *activation)
{
        push_module_task_before(before, TASK_MODULE_ENSURE_CRDS, mod, NULL, activation);
}

static bool is_ensure_crds(const struct ao_task *t, void *userdata)
{
        (void) userdata;
        return ao_task_type(t) == TASK_MODULE_ENSURE_CRDS;
}

bool tasks_ensure_crds_pending(struct operator_state *op)
{
        return ao_queue_find(tasks_queue(op, AO_QUEUE_MAIN), false, is_ensure_crds, NULL) != NULL;
}

static bool is_run_of(const struct ao_task *t, void *userdata)
{
        if (ao_task_type(t) != TASK_MODULE_RUN)
                return false;
        const struct module_task *mt = ao_task_payload(t);
        return mt->module == userdata;
}

bool tasks_module_run_pending(struct operator_state *op, const struct module *mod)
{
        return ao_queue_find(tasks_queue(op, AO_QUEUE_MAIN), false, is_run_of, (void *) mod) != NULL;
}

void tasks_request_module_run(struct operator_state *op, struct module *mod, struct ao_task *after,
                              const char *activation)
{
        if (tasks_module_run_pending(op, mod))
                return;
        _cleanup_free_ char *description = NULL;
        struct ao_task_spec spec = module_task_spec(TASK_MODULE_RUN, mod, NULL, activation, &description);
        if (after)
                ao_queue_push_after(after, &spec);
        else
                ao_queue_push_tail(tasks_queue(op, AO_QUEUE_MAIN), &spec);
}

/* ---- group runs ----------------------------------------------------------------------------------- */

static void module_group_task_free(void *payload)
{
        struct module_group_task *g = payload;
        for (size_t i = 0; i < g->n; i++)
                ao_source_free(g->members[i].retry);
        free(g->members);
        free(g->activation);
        free(g);
}

char *tasks_module_group_description(const struct module_group_task *g)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "ParallelModuleRun:");
        for (size_t i = 0; i < g->n; i++)
                ao_strbuf_appendf(&sb, "%s%s", i ? "," : "", g->members[i].module->name);
        const char *sep = " (running ";
        for (size_t i = 0; i < g->n; i++)
                if (g->members[i].state == MEMBER_RUNNING) {
                        ao_strbuf_appendf(&sb, "%s%s", sep, g->members[i].module->name);
                        sep = ",";
                }
        if (sep[0] == ',')
                ao_strbuf_append(&sb, ")");
        return ao_strbuf_steal(&sb);
}

void tasks_push_module_group(struct ao_task *before, struct module *const *mods, size_t n,
                             const char *activation)
{
        struct module_group_task *g = ao_xcalloc(1, sizeof(*g));
        *g = (struct module_group_task){
            .members = ao_xcalloc(n + 1, sizeof(*g->members)), .n = n, .activation = ao_xstrdup(activation)};
        for (size_t i = 0; i < n; i++)
                g->members[i] = (struct group_member){.module = mods[i], .group = g};
        _cleanup_free_ char *description = tasks_module_group_description(g);
        struct ao_task_spec spec = {.type = TASK_MODULE_GROUP_RUN,
                                    .description = description,
                                    .payload = g,
                                    .payload_free = module_group_task_free};
        ao_queue_push_before(before, &spec);
}

/* ---- isolated module runs ------------------------------------------------------------------------ */

#define ISOLATION_QUEUE_PREFIX "isolated-"

bool tasks_in_isolation_queue(const struct ao_task *t)
{
        return strncmp(ao_queue_name(ao_task_queue(t)), ISOLATION_QUEUE_PREFIX,
                       strlen(ISOLATION_QUEUE_PREFIX)) == 0;
}

void tasks_isolate_module_run(struct operator_state *op, struct module *mod, const char *activation)
{
        _cleanup_free_ char *name = ao_xasprintf(ISOLATION_QUEUE_PREFIX "%s", mod->name);
        struct ao_queue *q = tasks_queue(op, name);
        if (ao_queue_find(q, true, is_run_of, mod))
                return;
        _cleanup_free_ char *description = NULL;
        struct ao_task_spec spec = module_task_spec(TASK_MODULE_RUN, mod, NULL, activation, &description);
        ao_queue_push_tail(q, &spec);
}

/* ---- the global Synchronization step ------------------------------------------------------------- */

void tasks_push_kube_sync(struct operator_state *op)
{
        struct ao_task_spec spec = {.type = TASK_KUBE_SYNC,
                                    .description = "GlobalHookEnableKubernetesBindings"};
        ao_queue_push_tail(tasks_queue(op, AO_QUEUE_MAIN), &spec);
}
