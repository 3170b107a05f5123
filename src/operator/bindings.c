/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes bindings in the lifecycle (steps 2, 5, 9, 10). Every hook owner with kubernetes
 * bindings gets, while it is active, one monitor per binding (the filtered view of a watch).
 * They start when their owner starts (global hooks: the KubeSync task queued after the global
 * onStartup hooks; module hooks: the first run of the module after it is enabled) and stop
 * when the module is disabled.
 *
 * Events of a binding are dropped until its Synchronization run starts (what they changed is
 * in the objects that run reads); after that each event becomes a hook task in the binding's
 * queue. Queued contexts carry the event only: the snapshots are written into the run's binding
 * context file when the run starts (the snapshot source below, hook-call.c), item by item, so a
 * long queue costs what its events cost and a run what its file's chunks cost, not what the
 * snapshots weigh.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/json-writer.h"
#include "ao/watch-view.h"
#include "ao/log.h"
#include "ao/metrics.h"
#include "ao/reactor.h"
#include "internal.h"

struct binding_slot {
        struct hook_bindings *hb;
        size_t index;
};

/* One hook's kubernetes bindings: a monitor each. */
struct hook_bindings {
        struct operator_state *op;
        struct hook_owner *owner;
        size_t hook_index;
        struct ao_hook *hook;
        struct ao_watch_view **monitors; /* one per kubernetes binding; NULL until started */
        struct binding_slot *slots;
        bool *unlocked;
        size_t n;
};

struct sync_waiter {
        struct hook_owner *owner;
        bindings_synced_handler *done;
        void *userdata;
        struct sync_waiter *next;
};

/* ---- metrics ---------------------------------------------------------------------------------- */

static void binding_labels(const struct hook_bindings *hb, size_t i, const char *labels[5])
{
        const struct ao_kubernetes_binding *b = &hb->hook->config.kubernetes[i];
        const char *module = hook_owner_module_name(hb->owner);
        labels[0] = module ? module : "";
        labels[1] = hb->hook->name;
        labels[2] = b->name;
        labels[3] = b->queue;
        labels[4] = b->kind;
}

static void observe(struct hook_bindings *hb, size_t i, int family, double value, bool gauge)
{
        const char *labels[5];
        binding_labels(hb, i, labels);
        struct ao_metric_family *f = cluster_binding_family(hb->op, family);
        if (gauge)
                ao_metric_set(f, labels, value);
        else
                ao_metric_observe(f, labels, value);
}

static void update_snapshot_gauge(struct hook_bindings *hb, size_t i)
{
        observe(hb, i, CLUSTER_SNAPSHOT_OBJECTS,
                hb->monitors[i] ? (double) ao_watch_view_count(hb->monitors[i]) : 0, true);
}

/* ---- snapshots -------------------------------------------------------------------------------- */

/* The items of @binding, "[]" when its monitor does not run; returns -ENOENT after "[]" then. */
static int write_items(struct hook_bindings *hb, const char *binding, struct ao_json_writer *out)
{
        for (size_t i = 0; i < hb->n; i++)
                if (hb->monitors[i] && strcmp(hb->hook->config.kubernetes[i].name, binding) == 0)
                        return ao_watch_view_write_items(hb->monitors[i], out);
        ao_json_write_raw(out, "[]");
        int r = ao_json_writer_error(out);
        return r < 0 ? r : -ENOENT;
}

static int write_snapshot(void *userdata, const char *binding, struct ao_json_writer *out)
{
        int r = write_items(userdata, binding, out);
        return r == -ENOENT ? 0 : r;
}

/*
 * A run reads the snapshots: a binding whose monitor does not run (the owner's monitors were
 * stopped, or never started) gives the hook an empty list instead of the cluster's objects, and
 * the hook cannot tell. Say so, and count it, as the Go operator does.
 */
static int write_run_snapshot(void *userdata, const char *binding, struct ao_json_writer *out)
{
        struct hook_bindings *hb = userdata;
        int r = write_items(hb, binding, out);
        if (r != -ENOENT)
                return r;
        const char *module = hook_owner_module_name(hb->owner);
        ao_log_with(
            AO_LOG_ERROR, AO_LOG_FIELDS({"module", module}, {"hook", hb->hook->name}, {"binding", binding}),
            "hook '%s': kubernetes binding '%s' has no running monitor: the run gets an empty snapshot",
            hb->hook->name, binding);
        op_metrics_binding_monitor_missing(hb->op, binding);
        return 0;
}

static struct hook_bindings *bindings_of(struct hook_owner *owner, const struct ao_hook *hook)
{
        if (!owner->kube)
                return NULL;
        for (size_t i = 0; i < owner->n_hooks; i++)
                if (owner->kube[i].hook == hook)
                        return &owner->kube[i];
        return NULL;
}

struct ao_snapshot_source bindings_snapshot_source(struct hook_owner *owner, const struct ao_hook *hook)
{
        struct hook_bindings *hb = bindings_of(owner, hook);
        return (struct ao_snapshot_source){.write = hb ? write_snapshot : NULL, .userdata = hb};
}

void bindings_unlock(struct hook_owner *owner, const struct ao_hook *hook, size_t binding)
{
        struct hook_bindings *hb = bindings_of(owner, hook);
        if (hb && binding < hb->n && hb->monitors[binding])
                hb->unlocked[binding] = true;
}

/* ---- events ----------------------------------------------------------------------------------- */

static void on_monitor_event(struct ao_watch_view *m, unsigned watch_event, cJSON *item, const cJSON *object,
                             void *userdata)
{
        (void) m;
        struct binding_slot *slot = userdata;
        struct hook_bindings *hb = slot->hb;
        uint64_t start = ao_clock_now_usec();
        update_snapshot_gauge(hb, slot->index);
        if (!hb->unlocked[slot->index]) {
                cJSON_Delete(item);
                return;
        }
        const struct ao_kubernetes_binding *b = &hb->hook->config.kubernetes[slot->index];
        if (hb->hook->config.version == 0 && !cJSON_HasObjectItem(item, "object"))
                cJSON_AddItemToObject(item, "object", cJSON_Duplicate(object, true));
        /* No snapshot source: the context names the snapshots it needs, the run fills them. */
        cJSON *contexts = cJSON_CreateArray();
        cJSON_AddItemToArray(contexts, ao_binding_context_event(&hb->hook->config, b, watch_event, item));
        struct hook_run_spec s = {.owner = hb->owner,
                                  .hook_index = hb->hook_index,
                                  .binding = AO_BINDING_KUBERNETES,
                                  .binding_name = b->name,
                                  .activation = "Kubernetes",
                                  .contexts = contexts,
                                  .allow_failure = b->allow_failure};
        tasks_push_hook_run(hb->op, b->queue, &s);
        observe(hb, slot->index, CLUSTER_EVENT_SECONDS, (double) (ao_clock_now_usec() - start) / 1e6, false);
}

static void on_jq(void *userdata, uint64_t usec)
{
        struct binding_slot *slot = userdata;
        observe(slot->hb, slot->index, CLUSTER_JQ_SECONDS, (double) usec / 1e6, false);
}

static void check_waiters(struct operator_state *op);

static void on_monitor_synced(struct ao_watch_view *m, void *userdata)
{
        (void) m;
        struct binding_slot *slot = userdata;
        update_snapshot_gauge(slot->hb, slot->index);
        check_waiters(slot->hb->op);
}

static const struct ao_watch_view_ops monitor_ops = {.synced = on_monitor_synced, .event = on_monitor_event};

/* ---- starting and stopping monitors ----------------------------------------------------------- */

static struct hook_bindings *hook_bindings_new(struct operator_state *op, struct hook_owner *owner)
{
        struct hook_bindings *set = ao_xcalloc(owner->n_hooks + 1, sizeof(*set));
        for (size_t i = 0; i < owner->n_hooks; i++) {
                struct hook_bindings *hb = &set[i];
                *hb = (struct hook_bindings){.op = op,
                                             .owner = owner,
                                             .hook_index = i,
                                             .hook = &owner->hooks[i],
                                             .n = owner->hooks[i].config.n_kubernetes};
                hb->monitors = ao_xcalloc(hb->n + 1, sizeof(*hb->monitors));
                hb->slots = ao_xcalloc(hb->n + 1, sizeof(*hb->slots));
                hb->unlocked = ao_xcalloc(hb->n + 1, sizeof(*hb->unlocked));
                for (size_t j = 0; j < hb->n; j++)
                        hb->slots[j] = (struct binding_slot){hb, j};
        }
        return set;
}

static void hook_bindings_free(struct hook_owner *owner)
{
        struct hook_bindings *set = TAKE_PTR(owner->kube);
        for (size_t i = 0; set && i < owner->n_hooks; i++) {
                for (size_t j = 0; j < set[i].n; j++) {
                        set[i].monitors[j] = ao_watch_view_free(set[i].monitors[j]);
                        update_snapshot_gauge(&set[i], j);
                }
                free(set[i].monitors);
                free(set[i].slots);
                free(set[i].unlocked);
        }
        free(set);
}

struct ao_snapshot_source bindings_run_snapshot_source(struct operator_state *op, struct hook_owner *owner,
                                                       const struct ao_hook *hook)
{
        /* Without a cluster no binding ever starts, and each hook said so when it was loaded. */
        if (!op->kube || hook->config.n_kubernetes == 0)
                return (struct ao_snapshot_source){0};
        /* A stopped owner's runs read too: its bindings, without monitors, tell of it. */
        if (!owner->kube)
                owner->kube = hook_bindings_new(op, owner);
        return (struct ao_snapshot_source){.write = write_run_snapshot, .userdata = bindings_of(owner, hook)};
}

/* Start what is not running yet. Returns < 0 when a binding's kind is unknown. */
static int start_monitors(struct operator_state *op, struct hook_owner *owner, struct ao_error *reterr)
{
        for (size_t i = 0; i < owner->n_hooks; i++) {
                struct hook_bindings *hb = &owner->kube[i];
                for (size_t j = 0; j < hb->n; j++) {
                        if (hb->monitors[j])
                                continue;
                        struct ao_watch_view_env env = {.informers = cluster_informers(op),
                                                        .discovery = cluster_discovery(op),
                                                        .jq = cluster_jq(op),
                                                        .on_jq = on_jq};
                        int r = ao_watch_view_new(&env, &hb->hook->config.kubernetes[j], hb->hook->name,
                                                  &monitor_ops, &hb->slots[j], &hb->monitors[j], reterr);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static bool all_synced(const struct hook_owner *owner)
{
        for (size_t i = 0; i < owner->n_hooks; i++)
                for (size_t j = 0; j < owner->kube[i].n; j++)
                        if (!owner->kube[i].monitors[j] || !ao_watch_view_synced(owner->kube[i].monitors[j]))
                                return false;
        return true;
}

/* ---- waiting for sync ------------------------------------------------------------------------- */

/* Whether @w is settled: true when its callback ran (or was given up on). */
static bool try_waiter(struct operator_state *op, struct sync_waiter *w)
{
        if (!cluster_discovery_ready(op))
                return false;
        struct hook_owner *owner = w->owner;
        if (!owner->kube)
                owner->kube = hook_bindings_new(op, owner);
        struct ao_error err = {0};
        if (start_monitors(op, owner, &err) < 0) {
                if (err.code == -ENOENT && cluster_refresh_discovery(op)) {
                        ao_log(AO_LOG_INFO, "%s; refreshing discovery", err.msg);
                        return false;
                }
                ao_log(AO_LOG_ERROR, "%s", err.msg);
                w->done(op, false, w->userdata);
                return true;
        }
        if (!all_synced(owner))
                return false;
        w->done(op, true, w->userdata);
        return true;
}

static void check_waiters(struct operator_state *op)
{
        struct sync_waiter **pp = &op->sync_waiters;
        while (*pp) {
                struct sync_waiter *w = *pp;
                /* Unlink first: the callback may queue tasks, finish its own and add waiters. */
                *pp = w->next;
                w->next = NULL;
                if (try_waiter(op, w)) {
                        free(w);
                        continue;
                }
                w->next = *pp;
                *pp = w;
                pp = &w->next;
        }
}

void bindings_when_synced(struct operator_state *op, struct hook_owner *owner, bindings_synced_handler *done,
                          void *userdata)
{
        cluster_on_discovery(op, check_waiters);
        struct sync_waiter *w = ao_xcalloc(1, sizeof(*w));
        *w = (struct sync_waiter){
            .owner = owner, .done = done, .userdata = userdata, .next = op->sync_waiters};
        op->sync_waiters = w;
        check_waiters(op);
}

void bindings_stop(struct operator_state *op, struct hook_owner *owner)
{
        if (!op->kube)
                return;
        hook_bindings_free(owner);
        /* A waiter for a stopped owner would start its monitors again: drop it. */
        for (struct sync_waiter **pp = &op->sync_waiters; *pp;) {
                struct sync_waiter *w = *pp;
                if (w->owner != owner) {
                        pp = &w->next;
                        continue;
                }
                *pp = w->next;
                w->done(op, false, w->userdata);
                free(w);
        }
}

void bindings_done(struct operator_state *op)
{
        while (op->sync_waiters) {
                struct sync_waiter *w = op->sync_waiters;
                op->sync_waiters = w->next;
                free(w);
        }
        for (size_t i = 0; i < op->modules.n; i++)
                hook_bindings_free(&op->modules.items[i].owner);
        hook_bindings_free(&op->global);
}

/* ---- Synchronization runs --------------------------------------------------------------------- */

cJSON *bindings_sync_contexts(struct hook_owner *owner, size_t hook_index, size_t binding)
{
        struct ao_hook *hook = &owner->hooks[hook_index];
        cJSON *contexts = cJSON_CreateArray();
        cJSON_AddItemToArray(
            contexts, ao_binding_context_synchronization(&hook->config, &hook->config.kubernetes[binding]));
        return contexts;
}

/* A Synchronization run as a task; the run writes its objects and snapshots when it starts. */
static struct hook_run_spec sync_spec(struct hook_owner *owner, size_t hook_index, size_t binding)
{
        const struct ao_kubernetes_binding *b = &owner->hooks[hook_index].config.kubernetes[binding];
        return (struct hook_run_spec){.owner = owner,
                                      .hook_index = hook_index,
                                      .binding = AO_BINDING_KUBERNETES,
                                      .binding_name = b->name,
                                      .activation = "Kubernetes",
                                      .contexts = bindings_sync_contexts(owner, hook_index, binding),
                                      .allow_failure = b->allow_failure,
                                      .kube_sync = true,
                                      .kube_binding = binding};
}

void bindings_plan_sync(struct operator_state *op, struct hook_owner *owner, struct ao_task *after,
                        void (*inline_sync)(void *userdata, size_t hook_index, size_t binding),
                        void *userdata)
{
        for (size_t i = 0; i < owner->n_hooks; i++) {
                struct ao_hook *hook = &owner->hooks[i];
                for (size_t j = 0; j < hook->config.n_kubernetes; j++) {
                        const struct ao_kubernetes_binding *b = &hook->config.kubernetes[j];
                        if (!b->execute_hook_on_synchronization) {
                                bindings_unlock(owner, hook, j);
                        } else if (b->wait_for_synchronization && inline_sync) {
                                inline_sync(userdata, i, j);
                        } else if (b->wait_for_synchronization) {
                                struct hook_run_spec s = sync_spec(owner, i, j);
                                after = tasks_push_hook_run_after(after, &s);
                        } else {
                                struct hook_run_spec s = sync_spec(owner, i, j);
                                tasks_push_hook_run(op, b->queue, &s);
                        }
                }
        }
}
