/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Release auto-healing (seeds: "Release auto-healing"), by watch. Each module with a release
 * keeps the objects of its release (helm hooks excluded). They are watched metadata-only, one
 * informer per resource and namespace shared by every module (HELM_MONITOR_KUBE_CLIENT_*), so
 * a deleted object, or one whose meta.helm.sh/release-name now names another release, queues
 * the module's run within the watch's latency, with no request per object. The release's own
 * state comes from helm's storage objects (release-state.c): a release that stops being
 * "deployed" or disappears is healed the same way.
 *
 * While a run or hook of the module is going on, a change only marks the module: its own work
 * may be what changed the objects (a hook deleting an object with an object patch means it, and
 * says so through release_monitor_note_deleted() once the patch is applied). When the module is
 * idle again the objects are looked at once more and healed if still missing.
 *
 * The release step asks the same watches whether every object is there before it decides not to
 * upgrade (release_monitor_check()), so a converge with nothing changed sends no request either.
 * HELM_MONITOR_INTERVAL > 0 adds the old safety re-check: every object looked up with a GET.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/backoff.h"
#include "ao/hashmap.h"
#include "ao/helm-output.h"
#include "ao/informer.h"
#include "ao/kube-discovery.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/values-store.h"
#include "internal.h"

#define JITTER_MAX_USEC         (60 * AO_USEC_PER_SEC)
#define RELEASE_NAME_ANNOTATION "meta.helm.sh/release-name"
/*
 * How long the release step waits for the watches of a release's objects to list. A watch that
 * cannot (RBAC without list or watch on a kind, an API server refusing) retries for ever; the
 * step then goes on as if the objects could not be checked, and upgrades.
 */
#define SYNC_WAIT_USEC (15 * AO_USEC_PER_SEC)

/* The objects of one resource in one namespace ("" for cluster-scoped ones), metadata only. */
struct object_watch {
        struct operator_state *op;
        char *key;                               /* owned: "<apiVersion>/<plural> <namespace>" */
        const struct ao_kube_resource *resource; /* borrowed: discovery tables live until exit */
        struct ao_informer_sub *sub;
        struct ao_hashmap *present; /* name → owned release-name annotation ("" when none) */
        struct ao_hashmap *watched; /* name → struct release_monitor (borrowed) */
        size_t users;               /* watched objects */
        bool synced;
};

struct watched_object {
        char *description;          /* owned: "Kind namespace/name" */
        char *name;                 /* owned */
        struct object_watch *watch; /* borrowed; NULL: its kind is not served (a missing CRD) */
        bool seen; /* present at some time since it is watched: only then is its absence a loss
                    * (helm may have created it a moment before its watch hears of it) */
};

struct presence_waiter {
        release_presence_done *done;
        void *userdata;
};

struct release_monitor {
        struct operator_state *op;
        struct module *mod;
        struct watched_object *objects; /* owned, n of them: the release's minus what its hooks deleted */
        size_t n;
        char **deleted; /* owned: "Kind namespace/name" its hooks deleted */
        size_t n_deleted;
        struct presence_waiter *waiters; /* owned: release_monitor_check() calls waiting for a sync */
        size_t n_waiters;
        char input[33];              /* the input checksum of the release the objects are of ("" unknown) */
        bool active;                 /* the release is watched (not stopped, not in maintenance) */
        bool recheck;                /* something changed while the module was busy */
        struct ao_source *timer;     /* the safety re-check, with HELM_MONITOR_INTERVAL > 0 */
        struct ao_source *sync_wait; /* bounds how long release_monitor_check() waiters wait */
        bool checking;               /* a safety re-check is looking objects up */
        uint64_t generation;         /* a re-check finishing for older objects is ignored */
        uint64_t heals, checks, last_check_usec;
        char *last_result; /* owned */
        char *
            counted; /* owned: the object look() last counted missing, so the run it queues does not count it again */
};

struct monitors {
        struct ao_hashmap *watches; /* key → struct object_watch */
};

/* ---- results and healing ----------------------------------------------------------------------- */

static void set_result(struct release_monitor *m, char *result /* owned */)
{
        free(m->last_result);
        m->last_result = result;
        m->last_check_usec = ao_reactor_now(m->op->reactor);
        m->checks++;
}

/* Heal: a module run at the tail of the main queue, unless one is on its way. */
static void heal(struct release_monitor *m, const char *why)
{
        if (modules_in_maintenance(m->mod, ao_values_store_config(m->op->values)))
                return;
        m->heals++;
        set_result(m, ao_xstrdup(why));
        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", m->mod->name}), "module '%s': %s: running it again",
                    m->mod->name, why);
        tasks_request_module_run(m->op, m->mod, NULL, "HelmResourcesAbsent");
}

/*
 * The first object missing or owned by another release, as a sentence; NULL when all are fine.
 * @lost_only: only objects seen since they are watched count as missing. @ret_object: the
 * object's "Kind namespace/name" (borrowed), for the metric.
 */
static char *find_problem(const struct release_monitor *m, bool lost_only, const char **ret_object)
{
        for (size_t i = 0; i < m->n; i++) {
                const struct watched_object *o = &m->objects[i];
                *ret_object = o->description;
                if (!o->watch && !lost_only)
                        return ao_xasprintf("%s: its kind is not served", o->description);
                if (!o->watch)
                        continue;
                const char *owner = ao_hashmap_get(o->watch->present, o->name);
                if (!owner && (o->seen || !lost_only))
                        return ao_xasprintf("%s is missing", o->description);
                if (!owner)
                        continue;
                if (owner[0] && strcmp(owner, m->mod->name) != 0)
                        return ao_xasprintf("%s belongs to release '%s' now", o->description, owner);
        }
        return NULL;
}

static bool all_synced(const struct release_monitor *m)
{
        for (size_t i = 0; i < m->n; i++)
                if (m->objects[i].watch && !m->objects[i].watch->synced)
                        return false;
        return true;
}

/* Look at the objects now; a module at work is looked at again once it is idle. */
static void look(struct release_monitor *m)
{
        if (!m->active || !all_synced(m))
                return;
        if (m->mod->busy || tasks_module_run_pending(m->op, m->mod)) {
                m->recheck = true;
                return;
        }
        m->recheck = false;
        const char *object = NULL;
        _cleanup_free_ char *problem = find_problem(m, true, &object);
        if (!problem) {
                set_result(m, ao_xasprintf("%zu objects present", m->n));
                return;
        }
        op_metrics_absent_resource(m->op, m->mod, object);
        free(m->counted);
        m->counted = ao_xstrdup(object);
        heal(m, problem);
}

static void answer_waiters(struct release_monitor *m)
{
        if (m->n_waiters == 0 || !all_synced(m))
                return;
        (void) ao_source_set_enabled(m->sync_wait, AO_SOURCE_OFF);
        struct presence_waiter *w = m->waiters;
        size_t n = m->n_waiters;
        m->waiters = NULL;
        m->n_waiters = 0;
        const char *object = NULL;
        _cleanup_free_ char *problem = find_problem(m, false, &object);
        /* Counted once per loss: by the monitor that saw it go, or else by the run that finds it gone. */
        if (problem && !(m->counted && strcmp(m->counted, object) == 0))
                op_metrics_absent_resource(m->op, m->mod, object);
        free(m->counted);
        m->counted = NULL;
        for (size_t i = 0; i < n; i++)
                w[i].done(m->op, problem, NULL, w[i].userdata);
        free(w);
}

/* ---- the shared watches ------------------------------------------------------------------------ */

static const char *metadata_string(const cJSON *object, const char *field, const char *key)
{
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(object, "metadata");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, field);
        if (key)
                v = cJSON_GetObjectItemCaseSensitive(v, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void mark_seen(struct release_monitor *m, const struct object_watch *w, const char *name)
{
        for (size_t i = 0; i < m->n; i++)
                if (m->objects[i].watch == w && strcmp(m->objects[i].name, name) == 0)
                        m->objects[i].seen = true;
}

static void note_present(struct object_watch *w, const cJSON *object)
{
        const char *name = metadata_string(object, "name", NULL);
        const char *owner = metadata_string(object, "annotations", RELEASE_NAME_ANNOTATION);
        if (!name)
                return;
        ao_hashmap_put(w->present, name, ao_xstrdup(owner ? owner : ""));
        struct release_monitor *m = ao_hashmap_get(w->watched, name);
        if (m)
                mark_seen(m, w, name);
}

/* The objects listed came as events before this (on_watch_event notes them while not synced). */
static void on_watch_synced(struct ao_informer_sub *sub, void *userdata)
{
        struct object_watch *w = userdata;
        w->synced = true;
        /* Modules waiting for this watch: answer them, then look for what went while it was down. */
        size_t iter = 0;
        const char *name;
        void *value;
        struct release_monitor **seen = NULL;
        size_t n_seen = 0;
        while (ao_hashmap_next(w->watched, &iter, &name, &value)) {
                bool dup = false;
                for (size_t i = 0; i < n_seen && !dup; i++)
                        dup = seen[i] == value;
                if (!dup) {
                        seen = ao_xreallocarray(seen, n_seen + 1, sizeof(*seen));
                        seen[n_seen++] = value;
                }
        }
        for (size_t i = 0; i < n_seen; i++) {
                answer_waiters(seen[i]);
                look(seen[i]);
        }
        free(seen);
}

static void on_watch_event(struct ao_informer_sub *sub, enum ao_watch_type type, const cJSON *object,
                           bool partial, void *userdata)
{
        (void) sub, (void) partial;
        struct object_watch *w = userdata;
        const char *name = metadata_string(object, "name", NULL);
        if (!name)
                return;
        if (type == AO_WATCH_EVENT_DELETED)
                ao_hashmap_remove(w->present, name);
        else
                note_present(w, object);
        struct release_monitor *m = ao_hashmap_get(w->watched, name);
        if (m && w->synced)
                look(m);
}

static const struct ao_informer_sub_ops watch_ops = {.synced = on_watch_synced, .event = on_watch_event};

static void watch_free(void *p)
{
        struct object_watch *w = p;
        ao_informer_unsubscribe(w->sub);
        ao_hashmap_free(w->present);
        ao_hashmap_free(w->watched);
        free(w->key);
        free(w);
}

static struct monitors *monitors_of(struct operator_state *op)
{
        if (!op->monitors) {
                op->monitors = ao_xcalloc(1, sizeof(*op->monitors));
                op->monitors->watches = ao_hashmap_new(watch_free);
        }
        return op->monitors;
}

/* The shared watch of @res in @ns, started when new; NULL (logged) when it cannot start. */
static struct object_watch *watch_get(struct operator_state *op, const struct ao_kube_resource *res,
                                      const char *ns)
{
        struct monitors *all = monitors_of(op);
        _cleanup_free_ char *key = ao_xasprintf("%s/%s %s", res->api_version, res->name, ns);
        struct object_watch *w = ao_hashmap_get(all->watches, key);
        if (w)
                return w;
        w = ao_xcalloc(1, sizeof(*w));
        *w = (struct object_watch){.op = op,
                                   .key = ao_xstrdup(key),
                                   .resource = res,
                                   .present = ao_hashmap_new(free),
                                   .watched = ao_hashmap_new(NULL)};
        struct ao_informer_query q = {.resource = res, .ns = ns, .metadata_only = true};
        struct ao_error err = {0};
        if (ao_informers_subscribe(cluster_monitor_informers(op), &q, &watch_ops, w, &w->sub, &err) < 0) {
                ao_log(AO_LOG_WARN, "release objects %s: cannot watch them: %s", key, err.msg);
                w->sub = NULL;
                watch_free(w);
                return NULL;
        }
        ao_hashmap_put(all->watches, key, w);
        return w;
}

static void watch_release(struct operator_state *op, struct object_watch *w)
{
        if (--w->users == 0)
                ao_hashmap_remove(op->monitors->watches, w->key);
}

/* ---- one module's objects ---------------------------------------------------------------------- */

static void objects_clear(struct release_monitor *m)
{
        for (size_t i = 0; i < m->n; i++) {
                struct watched_object *o = &m->objects[i];
                if (o->watch) {
                        if (ao_hashmap_get(o->watch->watched, o->name) == m)
                                ao_hashmap_remove(o->watch->watched, o->name);
                        watch_release(m->op, o->watch);
                }
                free(o->description);
                free(o->name);
        }
        free(m->objects);
        m->objects = NULL;
        m->n = 0;
        for (size_t i = 0; i < m->n_deleted; i++)
                free(m->deleted[i]);
        free(m->deleted);
        m->deleted = NULL;
        m->n_deleted = 0;
}

static char *describe(const char *kind, const char *ns, const char *name)
{
        return ao_xasprintf("%s %s%s%s", kind, ns && ns[0] ? ns : "", ns && ns[0] ? "/" : "", name);
}

static void add_object(struct release_monitor *m, const struct ao_helm_object *o)
{
        struct operator_state *op = m->op;
        struct ao_error err = {0};
        const struct ao_kube_resource *res =
            ao_kube_discovery_find(cluster_discovery(op), o->api_version, o->kind, &err);
        const char *ns = res && !res->namespaced ? ""
                         : o->namespace          ? o->namespace
                                                 : cluster_config_namespace(op);
        struct object_watch *w = res ? watch_get(op, res, ns) : NULL;
        if (!res)
                (void) cluster_refresh_discovery(op); /* a CRD of the chart may have just been made */
        m->objects = ao_xreallocarray(m->objects, m->n + 1, sizeof(*m->objects));
        m->objects[m->n++] = (struct watched_object){describe(o->kind, ns, o->name), ao_xstrdup(o->name), w,
                                                     w && ao_hashmap_get(w->present, o->name)};
        if (w) {
                w->users++;
                ao_hashmap_put(w->watched, o->name, m);
        }
}

static struct release_monitor *monitor_of(struct operator_state *op, struct module *mod);

static void set_objects(struct release_monitor *m, const struct ao_helm_manifest *manifest)
{
        objects_clear(m);
        m->generation++;
        for (size_t i = 0; i < manifest->n; i++)
                if (!manifest->objects[i].hook)
                        add_object(m, &manifest->objects[i]);
}

/* ---- the safety re-check (HELM_MONITOR_INTERVAL) ------------------------------------------------ */

static uint64_t next_delay(const struct operator_state *op)
{
        uint64_t interval = op->settings->helm_monitor_interval_usec;
        uint64_t jitter_max = interval / 4 < JITTER_MAX_USEC ? interval / 4 : JITTER_MAX_USEC;
        return interval + (jitter_max ? ao_backoff_random() % jitter_max : 0);
}

static void arm(struct release_monitor *m)
{
        if (m->op->settings->helm_monitor_interval_usec == 0 || !m->active)
                return;
        (void) ao_source_set_time_relative(m->timer, next_delay(m->op));
        (void) ao_source_set_enabled(m->timer, AO_SOURCE_ONESHOT);
}

struct recheck {
        struct release_monitor *monitor;
        uint64_t generation;
};

static void on_rechecked(struct operator_state *op, const char *absent, const struct ao_error *error,
                         void *userdata)
{
        struct recheck c = *(struct recheck *) userdata;
        free(userdata);
        struct release_monitor *m = c.monitor;
        m->checking = false;
        if ((error && error->code == -ECANCELED) || c.generation != m->generation)
                return;
        if (error) {
                set_result(m, ao_xasprintf("cannot re-check: %s", error->msg));
        } else if (absent && !m->mod->busy) {
                op_metrics_absent_resource(op, m->mod, absent);
                _cleanup_free_ char *why = ao_xasprintf("%s is missing (safety re-check)", absent);
                heal(m, why);
        }
        arm(m);
}

static int on_recheck_tick(struct ao_source *s, uint64_t now, void *userdata)
{
        (void) s, (void) now;
        struct release_monitor *m = userdata;
        if (m->checking || m->n == 0) {
                arm(m);
                return 0;
        }
        struct ao_helm_manifest manifest = {.objects = ao_xcalloc(m->n, sizeof(struct ao_helm_object)),
                                            .n = 0};
        /* The GETs need apiVersion and kind: the watch knows them. */
        for (size_t i = 0; i < m->n; i++) {
                const struct watched_object *o = &m->objects[i];
                if (!o->watch)
                        continue;
                const char *ns = strchr(o->watch->key, ' ') + 1;
                manifest.objects[manifest.n++] = (struct ao_helm_object){
                    ao_xstrdup(o->watch->resource->api_version), ao_xstrdup(o->watch->resource->kind),
                    ns[0] ? ao_xstrdup(ns) : NULL, ao_xstrdup(o->name), false};
        }
        struct recheck *c = ao_xcalloc(1, sizeof(*c));
        *c = (struct recheck){m, m->generation};
        struct ao_error err = {0};
        m->checking = true;
        if (cluster_find_absent(m->op, &manifest, cluster_config_namespace(m->op), true, on_rechecked, c,
                                &err) < 0)
                on_rechecked(m->op, NULL, &err, c);
        ao_helm_manifest_clear(&manifest);
        return 0;
}

/* ---- the module's monitor ---------------------------------------------------------------------- */

static void fail_waiters(struct release_monitor *m, const struct ao_error *err);

/* The watches did not list in time: the waiters learn that the objects could not be checked. */
static int on_sync_wait(struct ao_source *s, uint64_t now, void *userdata)
{
        (void) s, (void) now;
        struct release_monitor *m = userdata;
        const char *watch = "?";
        for (size_t i = 0; i < m->n; i++)
                if (m->objects[i].watch && !m->objects[i].watch->synced)
                        watch = m->objects[i].watch->key;
        struct ao_error err = {0};
        ao_error_set(&err, -ETIMEDOUT,
                     "the watch of %s did not list within %d s (does RBAC allow list and watch?)", watch,
                     (int) (SYNC_WAIT_USEC / AO_USEC_PER_SEC));
        fail_waiters(m, &err);
        return 0;
}

static struct release_monitor *monitor_of(struct operator_state *op, struct module *mod)
{
        if (mod->monitor)
                return mod->monitor;
        struct release_monitor *m = ao_xcalloc(1, sizeof(*m));
        *m = (struct release_monitor){.op = op, .mod = mod};
        if (ao_reactor_add_time(op->reactor, &m->timer, 0, on_recheck_tick, m) < 0) {
                free(m);
                return NULL;
        }
        if (ao_reactor_add_time(op->reactor, &m->sync_wait, 0, on_sync_wait, m) < 0) {
                ao_source_free(m->timer);
                free(m);
                return NULL;
        }
        (void) ao_source_set_enabled(m->timer, AO_SOURCE_OFF);
        (void) ao_source_set_enabled(m->sync_wait, AO_SOURCE_OFF);
        mod->monitor = m;
        return m;
}

int release_monitor_check(struct operator_state *op, struct module *mod,
                          const struct ao_helm_manifest *manifest, release_presence_done *done,
                          void *userdata, struct ao_error *reterr)
{
        struct release_monitor *m = op->kube && cluster_discovery_ready(op) ? monitor_of(op, mod) : NULL;
        if (!m)
                return ao_error_set(reterr, -EAGAIN, "the Kubernetes API is not discovered yet");
        m->active = false; /* the release step is deciding: no healing until it is done */
        if (manifest) {
                set_objects(m, manifest);
                m->input[0] = 0;
        }
        m->waiters = ao_xreallocarray(m->waiters, m->n_waiters + 1, sizeof(*m->waiters));
        m->waiters[m->n_waiters++] = (struct presence_waiter){done, userdata};
        (void) ao_source_set_time_relative(m->sync_wait, SYNC_WAIT_USEC);
        (void) ao_source_set_enabled(m->sync_wait, AO_SOURCE_ONESHOT);
        answer_waiters(m);
        return 0;
}

void release_monitor_start(struct operator_state *op, struct module *mod,
                           const struct ao_helm_manifest *manifest, const char *input)
{
        struct release_monitor *m = op->kube && cluster_discovery_ready(op) ? monitor_of(op, mod) : NULL;
        if (!m)
                return;
        if (manifest)
                set_objects(m, manifest);
        snprintf(m->input, sizeof(m->input), "%s", input ? input : "");
        m->active = true;
        m->recheck = true; /* looked at once the run that started it is over */
        arm(m);
}

static void fail_waiters(struct release_monitor *m, const struct ao_error *err)
{
        struct presence_waiter *w = m->waiters;
        size_t n = m->n_waiters;
        m->waiters = NULL;
        m->n_waiters = 0;
        (void) ao_source_set_enabled(m->sync_wait, AO_SOURCE_OFF);
        for (size_t i = 0; i < n; i++)
                w[i].done(m->op, NULL, err, w[i].userdata);
        free(w);
}

static void cancel_waiters(struct release_monitor *m)
{
        struct ao_error err = {0};
        ao_error_set(&err, -ECANCELED, "the module's release is no longer watched");
        fail_waiters(m, &err);
}

bool release_monitor_watches(const struct operator_state *op, const struct module *mod, const char *input)
{
        (void) op;
        const struct release_monitor *m = mod->monitor;
        return m && m->active && m->input[0] && strcmp(m->input, input) == 0;
}

void release_monitor_stop(struct operator_state *op, struct module *mod)
{
        (void) op;
        struct release_monitor *m = mod->monitor;
        if (!m)
                return;
        cancel_waiters(m);
        objects_clear(m);
        m->generation++;
        m->active = m->recheck = false;
        m->input[0] = 0;
        (void) ao_source_set_enabled(m->timer, AO_SOURCE_OFF);
        free(m->last_result);
        m->last_result = NULL;
        free(m->counted);
        m->counted = NULL;
}

void release_monitor_module_idle(struct operator_state *op, struct module *mod)
{
        (void) op;
        struct release_monitor *m = mod->monitor;
        if (m && m->recheck && !mod->busy)
                look(m);
}

void release_monitor_release_changed(struct operator_state *op, const char *release)
{
        struct module *mod = modules_find(&op->modules, release);
        struct release_monitor *m = mod ? mod->monitor : NULL;
        struct release_revision last;
        if (!m || !m->active || !release_state_last(op, release, &last))
                return;
        if (last.revision > 0 && strcmp(last.status, "deployed") == 0)
                return;
        if (mod->busy || tasks_module_run_pending(op, mod)) {
                m->recheck = true;
                return;
        }
        /* modules_helm_release_redeployed_total counts it when the run finds it so (release-helm.c). */
        _cleanup_free_ char *why = last.revision ? ao_xasprintf("its release is %s", last.status)
                                                 : ao_xstrdup("its release is gone");
        heal(m, why);
}

/* Drop the object from what is watched; it comes back with the next helm step. */
void release_monitor_note_deleted(struct operator_state *op, struct module *mod, const char *kind,
                                  const char *ns, const char *name)
{
        struct release_monitor *m = mod->monitor;
        if (!m || !kind || !name)
                return;
        for (size_t i = 0; i < m->n;) {
                struct watched_object *o = &m->objects[i];
                const char *o_ns = o->watch ? strchr(o->watch->key, ' ') + 1 : "";
                bool same = o->watch && ao_kube_resource_matches(o->watch->resource, kind) &&
                            strcmp(o->name, name) == 0 && (!ns || !ns[0] || strcmp(o_ns, ns) == 0);
                if (!same) {
                        i++;
                        continue;
                }
                m->deleted = ao_xreallocarray(m->deleted, m->n_deleted + 1, sizeof(char *));
                m->deleted[m->n_deleted++] = o->description;
                if (ao_hashmap_get(o->watch->watched, o->name) == m)
                        ao_hashmap_remove(o->watch->watched, o->name);
                watch_release(op, o->watch);
                free(o->name);
                memmove(o, o + 1, (m->n - i - 1) * sizeof(*o));
                m->n--;
        }
}

static cJSON *monitor_dump(const struct release_monitor *m)
{
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "module", m->mod->name);
        cJSON *objects = cJSON_AddArrayToObject(d, "objects");
        cJSON *missing = cJSON_AddArrayToObject(d, "missing");
        for (size_t i = 0; i < m->n; i++) {
                const struct watched_object *o = &m->objects[i];
                cJSON_AddItemToArray(objects, cJSON_CreateString(o->description));
                if (!o->watch || (o->watch->synced && !ao_hashmap_get(o->watch->present, o->name)))
                        cJSON_AddItemToArray(missing, cJSON_CreateString(o->description));
        }
        cJSON *watches = cJSON_AddArrayToObject(d, "watches");
        for (size_t i = 0; i < m->n; i++) {
                const struct object_watch *w = m->objects[i].watch;
                bool dup = !w;
                for (size_t k = 0; k < i && !dup; k++)
                        dup = m->objects[k].watch == w;
                if (!dup)
                        cJSON_AddItemToArray(watches, cJSON_CreateString(w->key));
        }
        cJSON *deleted = cJSON_AddArrayToObject(d, "deletedByHooks");
        for (size_t i = 0; i < m->n_deleted; i++)
                cJSON_AddItemToArray(deleted, cJSON_CreateString(m->deleted[i]));
        cJSON_AddNumberToObject(d, "heals", (double) m->heals);
        cJSON_AddNumberToObject(d, "checks", (double) m->checks);
        if (m->last_result)
                cJSON_AddStringToObject(d, "lastResult", m->last_result);
        uint64_t now = ao_reactor_now(m->op->reactor);
        if (m->checks)
                cJSON_AddNumberToObject(d, "lastCheckSecondsAgo",
                                        (double) ((now - m->last_check_usec) / AO_USEC_PER_SEC));
        return d;
}

cJSON *release_monitors_dump(struct operator_state *op)
{
        cJSON *all = cJSON_CreateArray();
        for (size_t i = 0; i < op->modules.n; i++) {
                const struct release_monitor *m = op->modules.items[i].monitor;
                if (m && m->active)
                        cJSON_AddItemToArray(all, monitor_dump(m));
        }
        return all;
}

void release_monitors_free(struct operator_state *op)
{
        for (size_t i = 0; i < op->modules.n; i++) {
                struct release_monitor *m = op->modules.items[i].monitor;
                if (!m)
                        continue;
                cancel_waiters(m);
                objects_clear(m);
                ao_source_free(m->timer);
                ao_source_free(m->sync_wait);
                free(m->last_result);
                free(m->counted);
                free(m);
                op->modules.items[i].monitor = NULL;
        }
        if (op->monitors) {
                ao_hashmap_free(op->monitors->watches);
                free(op->monitors);
                op->monitors = NULL;
        }
}
