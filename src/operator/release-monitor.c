/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Release auto-healing (seeds: "Release auto-healing"). Each module with a
 * release keeps the objects of its last rendered manifest. Every
 * HELM_MONITOR_INTERVAL, plus up to a minute of jitter so that modules do
 * not all check at once, and only while none of the module's hooks and no
 * run of it is in progress, the monitor asks helm for the release status and
 * looks the objects up (the HELM_MONITOR_KUBE_CLIENT_* client). A release not
 * "deployed" or an object gone queues a module run, unless one is pending.
 * Objects the module's own hooks deleted (object patches) are not missed:
 * the hook meant it, until the next helm step renders them again.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/helm-output.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/values-store.h"
#include "internal.h"

#define JITTER_MAX_USEC (60 * AO_USEC_PER_SEC)
/* While the module is busy, look again soon rather than a whole interval later. */
#define BUSY_RETRY_USEC (5 * AO_USEC_PER_SEC)

struct release_monitor {
        struct operator_state *op;
        struct module *mod;
        struct ao_helm_manifest objects; /* the release's objects minus those its hooks deleted */
        char **deleted;                  /* "Kind ns/name" deleted by the module's hooks */
        size_t n_deleted;
        struct ao_source *timer;
        uint64_t generation; /* a check finishing for an older release is ignored */
        uint64_t checking_generation;
        bool checking;
        uint64_t checks, last_check_usec;
        char *last_result;
};

static void object_free(struct ao_helm_object *o)
{
        free(o->api_version);
        free(o->kind);
        free(o->namespace);
        free(o->name);
}

static char *describe(const char *kind, const char *ns, const char *name)
{
        return ao_xasprintf("%s %s%s%s", kind, ns ? ns : "", ns ? "/" : "", name);
}

static uint64_t next_delay(const struct operator_state *op)
{
        uint64_t interval = op->settings->helm_monitor_interval_usec;
        uint64_t jitter_max = interval / 4 < JITTER_MAX_USEC ? interval / 4 : JITTER_MAX_USEC;
        return interval + (jitter_max ? (uint64_t) random() % jitter_max : 0);
}

static void arm(struct release_monitor *m, uint64_t delay_usec)
{
        (void) ao_source_set_time_relative(m->timer, delay_usec);
        (void) ao_source_set_enabled(m->timer, AO_SOURCE_ONESHOT);
}

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
        /* The config changed since the monitor started: the next module run stops it. */
        if (modules_in_maintenance(m->mod, ao_values_store_config(m->op->values)))
                return;
        ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", m->mod->name}), "module '%s': %s: running it again",
                    m->mod->name, why);
        tasks_request_module_run(m->op, m->mod, NULL, "HelmResourcesAbsent");
}

static void on_objects_checked(struct operator_state *op, const char *absent, const struct ao_error *error,
                               void *userdata)
{
        struct release_monitor *m = userdata;
        m->checking = false;
        if ((error && error->code == -ECANCELED) || m->checking_generation != m->generation)
                return;
        if (error) {
                set_result(m, ao_xasprintf("cannot check: %s", error->msg));
                ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", m->mod->name}),
                            "module '%s': release objects not checked: %s", m->mod->name, error->msg);
        } else if (absent) {
                set_result(m, ao_xasprintf("%s is missing", absent));
                op_metrics_absent_resource(op, m->mod, absent);
                _cleanup_free_ char *why = ao_xasprintf("%s of its release is missing", absent);
                heal(m, why);
        } else {
                set_result(m, ao_xasprintf("%zu objects present", m->objects.n));
        }
        arm(m, next_delay(op));
}

static void check_objects(struct release_monitor *m)
{
        struct ao_error err = {0};
        if (m->objects.n == 0) {
                m->checking = false;
                set_result(m, ao_xstrdup("no objects"));
                arm(m, next_delay(m->op));
                return;
        }
        if (cluster_find_absent(m->op, &m->objects, cluster_config_namespace(m->op), true, on_objects_checked,
                                m, &err) < 0)
                on_objects_checked(m->op, NULL, &err, m);
}

struct status_check {
        struct release_monitor *monitor;
        uint64_t generation;
};

static void on_status(struct operator_state *op, const struct ao_helm_revision *last,
                      const struct ao_error *error, void *userdata)
{
        struct status_check c = *(struct status_check *) userdata;
        free(userdata);
        struct release_monitor *m = c.monitor;
        if (c.generation != m->generation) {
                m->checking = false; /* the release changed meanwhile: its own timer runs */
                return;
        }
        if (!last) {
                m->checking = false;
                set_result(m, ao_xasprintf("cannot get the release status: %s", error->msg));
                arm(m, next_delay(op));
                return;
        }
        if (last->revision == 0 || strcmp(last->status, "deployed") != 0) {
                m->checking = false;
                set_result(m, last->revision ? ao_xasprintf("release %s", last->status)
                                             : ao_xstrdup("no release"));
                op_metrics_helm_redeployed(op, m->mod);
                _cleanup_free_ char *why = last->revision ? ao_xasprintf("its release is %s", last->status)
                                                          : ao_xstrdup("its release is gone");
                heal(m, why);
                arm(m, next_delay(op));
                return;
        }
        check_objects(m);
}

static int on_tick(struct ao_source *s, uint64_t now, void *userdata)
{
        (void) s, (void) now;
        struct release_monitor *m = userdata;
        struct operator_state *op = m->op;
        if (m->checking)
                return 0;
        /* A run or hook of the module may be changing the very objects: wait for it. */
        if (m->mod->busy || tasks_module_run_pending(op, m->mod)) {
                arm(m, BUSY_RETRY_USEC);
                return 0;
        }
        struct status_check *c = ao_xcalloc(1, sizeof(*c));
        *c = (struct status_check){m, m->generation};
        struct ao_error err = {0};
        m->checking = true;
        m->checking_generation = m->generation;
        if (release_status(op, m->mod->name, on_status, c, &err) < 0) {
                free(c);
                m->checking = false;
                set_result(m, ao_xasprintf("cannot get the release status: %s", err.msg));
                arm(m, next_delay(op));
        }
        return 0;
}

static void clear_objects(struct release_monitor *m)
{
        ao_helm_manifest_clear(&m->objects);
        for (size_t i = 0; i < m->n_deleted; i++)
                free(m->deleted[i]);
        free(m->deleted);
        m->deleted = NULL;
        m->n_deleted = 0;
}

static struct release_monitor *monitor_of(struct operator_state *op, struct module *mod)
{
        if (mod->monitor)
                return mod->monitor;
        struct release_monitor *m = ao_xcalloc(1, sizeof(*m));
        *m = (struct release_monitor){.op = op, .mod = mod};
        if (ao_reactor_add_time(op->reactor, &m->timer, 0, on_tick, m) < 0) {
                free(m);
                return NULL;
        }
        (void) ao_source_set_enabled(m->timer, AO_SOURCE_OFF);
        mod->monitor = m;
        return m;
}

void release_monitor_start(struct operator_state *op, struct module *mod, struct ao_helm_manifest *manifest)
{
        if (!op->kube)
                return;
        struct release_monitor *m = monitor_of(op, mod);
        if (!m)
                return;
        clear_objects(m);
        m->objects = *manifest;
        *manifest = (struct ao_helm_manifest){0};
        m->generation++;
        arm(m, next_delay(op));
}

void release_monitor_stop(struct operator_state *op, struct module *mod)
{
        (void) op;
        struct release_monitor *m = mod->monitor;
        if (!m)
                return;
        clear_objects(m);
        m->generation++;
        (void) ao_source_set_enabled(m->timer, AO_SOURCE_OFF);
        free(m->last_result);
        m->last_result = NULL;
}

/* Drop the object from what is checked; it comes back with the next helm step. */
void release_monitor_note_deleted(struct operator_state *op, struct module *mod, const char *kind,
                                  const char *ns, const char *name)
{
        (void) op;
        struct release_monitor *m = mod->monitor;
        if (!m || !kind || !name)
                return;
        const char *release_ns = cluster_config_namespace(m->op);
        for (size_t i = 0; i < m->objects.n;) {
                struct ao_helm_object *o = &m->objects.objects[i];
                const char *o_ns = o->namespace ? o->namespace : release_ns;
                bool same = strcmp(o->kind, kind) == 0 && strcmp(o->name, name) == 0 &&
                            (!ns || !ns[0] || strcmp(o_ns, ns) == 0);
                if (!same) {
                        i++;
                        continue;
                }
                m->deleted = ao_xreallocarray(m->deleted, m->n_deleted + 1, sizeof(char *));
                m->deleted[m->n_deleted++] = describe(o->kind, o_ns, o->name);
                object_free(o);
                memmove(o, o + 1, (m->objects.n - i - 1) * sizeof(*o));
                m->objects.n--;
        }
}

static cJSON *monitor_dump(const struct release_monitor *m)
{
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "module", m->mod->name);
        cJSON *objects = cJSON_AddArrayToObject(d, "objects");
        const char *release_ns = cluster_config_namespace(m->op);
        for (size_t i = 0; i < m->objects.n; i++) {
                const struct ao_helm_object *o = &m->objects.objects[i];
                _cleanup_free_ char *text =
                    describe(o->kind, o->namespace ? o->namespace : release_ns, o->name);
                cJSON_AddItemToArray(objects, cJSON_CreateString(text));
        }
        cJSON *deleted = cJSON_AddArrayToObject(d, "deletedByHooks");
        for (size_t i = 0; i < m->n_deleted; i++)
                cJSON_AddItemToArray(deleted, cJSON_CreateString(m->deleted[i]));
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
                if (m && (m->checking || ao_source_get_enabled(m->timer) != AO_SOURCE_OFF))
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
                clear_objects(m);
                ao_source_free(m->timer);
                free(m->last_result);
                free(m);
                op->modules.items[i].monitor = NULL;
        }
}
