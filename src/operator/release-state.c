/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The releases as helm's own storage says. Helm keeps each revision of a release in an object
 * of the release namespace (a Secret, or a ConfigMap with HELM_DRIVER=configmap) named
 * sh.helm.release.v1.<release>.v<revision> and labelled owner=helm, status=<status>,
 * version=<revision>, plus the release's labels (moduleChecksum). One metadata-only watch of
 * those objects, shared by every module, answers what `helm history` and `helm list` answered
 * without starting a process; its changes tell the release monitor when a release stops being
 * "deployed" or goes away behind the operator's back.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ao/alloc.h"
#include "ao/hashmap.h"
#include "ao/helm-storage.h"
#include "ao/informer.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "internal.h"

#define STORAGE_PREFIX "sh.helm.release.v1."
#define OPEN_WAIT_USEC (30 * AO_USEC_PER_SEC)

struct stored_revision {
        int revision;
        char *status;          /* owned */
        char *module_checksum; /* owned: the moduleChecksum label (the rendered manifest's MD5), or NULL */
        char *input_checksum;  /* owned: the moduleInputChecksum label (this operator's), or NULL */
        char *object;          /* owned: the storage object's name */
};

struct stored_release {
        struct stored_revision *revisions; /* owned, n of them, in no order */
        size_t n;
};

struct release_state {
        struct operator_state *op;
        struct ao_informer_sub *sub;
        struct ao_hashmap *releases; /* release name → struct stored_release */
        release_state_changed *on_change;
        bool config_map;             /* HELM_DRIVER=configmap */
        struct manifest_read *reads; /* owned: GETs of storage objects in flight */
};

static void revision_clear(struct stored_revision *r)
{
        free(r->status);
        free(r->module_checksum);
        free(r->input_checksum);
        free(r->object);
}

static void stored_release_free(void *p)
{
        struct stored_release *s = p;
        for (size_t i = 0; i < s->n; i++)
                revision_clear(&s->revisions[i]);
        free(s->revisions);
        free(s);
}

bool release_state_config_map_driver(void)
{
        const char *driver = getenv("HELM_DRIVER");
        return driver && (strcasecmp(driver, "configmap") == 0 || strcasecmp(driver, "configmaps") == 0);
}

static const struct stored_revision *last_of(const struct stored_release *s)
{
        const struct stored_revision *last = NULL;
        for (size_t i = 0; s && i < s->n; i++)
                if (!last || s->revisions[i].revision > last->revision)
                        last = &s->revisions[i];
        return last;
}

/* "status/revision" of the release's last revision, to see whether an event changed it. */
static char *summary(const struct release_state *st, const char *release)
{
        const struct stored_revision *last = last_of(ao_hashmap_get(st->releases, release));
        return last ? ao_xasprintf("%s/%d", last->status, last->revision) : ao_xstrdup("none");
}

static void forget(struct release_state *st, const char *release, int revision)
{
        struct stored_release *s = ao_hashmap_get(st->releases, release);
        for (size_t i = 0; s && i < s->n; i++) {
                if (s->revisions[i].revision != revision)
                        continue;
                revision_clear(&s->revisions[i]);
                s->revisions[i] = s->revisions[--s->n];
                break;
        }
        if (s && s->n == 0)
                ao_hashmap_remove(st->releases, release);
}

static void remember(struct release_state *st, const struct ao_helm_storage_meta *meta, const char *object)
{
        forget(st, meta->name, meta->version);
        struct stored_release *s = ao_hashmap_get(st->releases, meta->name);
        if (!s) {
                s = ao_xcalloc(1, sizeof(*s));
                ao_hashmap_put(st->releases, meta->name, s);
        }
        s->revisions = ao_xreallocarray(s->revisions, s->n + 1, sizeof(*s->revisions));
        s->revisions[s->n++] = (struct stored_revision){
            .revision = meta->version,
            .status = ao_xstrdup(meta->status),
            .module_checksum = meta->module_checksum ? ao_xstrdup(meta->module_checksum) : NULL,
            .input_checksum = meta->input_checksum ? ao_xstrdup(meta->input_checksum) : NULL,
            .object = ao_xstrdup(object),
        };
}

static const char *object_name(const cJSON *object)
{
        const cJSON *name =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(object, "metadata"), "name");
        return cJSON_IsString(name) ? name->valuestring : NULL;
}

/* Take one storage object in; a malformed one is logged and left out (it is not ours to fix). */
static void take_in(struct release_state *st, const cJSON *object)
{
        const char *name = object_name(object);
        if (!name || strncmp(name, STORAGE_PREFIX, strlen(STORAGE_PREFIX)) != 0)
                return;
        struct ao_helm_storage_meta meta = {0};
        struct ao_error err = {0};
        if (ao_helm_storage_labels(object, &meta, &err) < 0) {
                ao_log(AO_LOG_WARN, "release storage '%s' is not understood, left out: %s", name, err.msg);
                return;
        }
        remember(st, &meta, name);
        ao_helm_storage_meta_clear(&meta);
}

static void take_out(struct release_state *st, const cJSON *object)
{
        const char *name = object_name(object);
        if (!name)
                return;
        struct ao_helm_storage_meta meta = {0};
        struct ao_error err = {0};
        /* A deleted object found by a re-list is a stub without labels: its name says it all. */
        if (ao_helm_storage_name_parse(name, &meta, &err) < 0)
                return;
        forget(st, meta.name, meta.version);
        ao_helm_storage_meta_clear(&meta);
}

/* The listed storage objects came as events before this. */
static void on_synced(struct ao_informer_sub *sub, void *userdata)
{
        struct release_state *st = userdata;
        ao_log(AO_LOG_INFO, "release storage: %zu releases in namespace '%s'", ao_hashmap_size(st->releases),
               cluster_config_namespace(st->op));
}

static void on_event(struct ao_informer_sub *sub, enum ao_watch_type type, const cJSON *object, bool partial,
                     void *userdata)
{
        (void) partial;
        struct release_state *st = userdata;
        const char *name = object_name(object);
        struct ao_helm_storage_meta meta = {0};
        struct ao_error err = {0};
        if (!name || ao_helm_storage_name_parse(name, &meta, &err) < 0)
                return;
        _cleanup_free_ char *before = summary(st, meta.name);
        if (type == AO_WATCH_EVENT_DELETED)
                take_out(st, object);
        else
                take_in(st, object);
        _cleanup_free_ char *after = summary(st, meta.name);
        /* Before the sync the events build the initial state: nobody is waiting for changes yet. */
        if (ao_informer_sub_synced(sub) && strcmp(before, after) != 0 && st->on_change)
                st->on_change(st->op, meta.name);
        ao_helm_storage_meta_clear(&meta);
}

static const struct ao_informer_sub_ops storage_ops = {.synced = on_synced, .event = on_event};

static int start(struct operator_state *op, release_state_changed *on_change, struct ao_error *reterr)
{
        struct release_state *st = ao_xcalloc(1, sizeof(*st));
        *st = (struct release_state){.op = op,
                                     .releases = ao_hashmap_new(stored_release_free),
                                     .on_change = on_change,
                                     .config_map = release_state_config_map_driver()};
        const struct ao_kube_resource *res = ao_kube_discovery_find(
            cluster_discovery(op), "v1", st->config_map ? "ConfigMap" : "Secret", reterr);
        int r = res ? 0 : -ENOENT;
        if (r >= 0) {
                struct ao_informer_query q = {.resource = res,
                                              .ns = cluster_config_namespace(op),
                                              .label_selector = "owner=helm",
                                              .metadata_only = true};
                r = ao_informers_subscribe(cluster_monitor_informers(op), &q, &storage_ops, st, &st->sub,
                                           reterr);
        }
        if (r < 0) {
                ao_hashmap_free(st->releases);
                free(st);
                return ao_error_prefix(reterr, "release storage watch");
        }
        op->release_state = st;
        return 0;
}

/* Run the loop until @ready says so, the deadline passes (0) or the operator stops (-ECANCELED). */
static int wait_for(struct operator_state *op, bool (*ready)(const struct operator_state *op),
                    uint64_t deadline_usec)
{
        while (!ready(op)) {
                if (ao_reactor_exiting(op->reactor))
                        return -ECANCELED;
                uint64_t now = ao_clock_now_usec();
                if (now >= deadline_usec)
                        return 0;
                if (ao_reactor_run_once(op->reactor, deadline_usec - now) < 0)
                        return 0;
        }
        return 1;
}

static bool discovered(const struct operator_state *op)
{
        return cluster_discovery_ready(op);
}

int release_state_open(struct operator_state *op, release_state_changed *on_change, struct ao_error *reterr)
{
        uint64_t deadline = ao_clock_now_usec() + OPEN_WAIT_USEC;
        int r = wait_for(op, discovered, deadline);
        if (r == 1) {
                struct ao_error err = {0};
                if (start(op, on_change, &err) < 0)
                        ao_log(AO_LOG_WARN, "%s: the release step asks helm instead", err.msg);
                else
                        r = wait_for(op, release_state_ready, deadline);
        }
        if (r == -ECANCELED)
                return ao_error_set(reterr, r, "stopped while listing the releases");
        if (r == 0)
                ao_log(AO_LOG_WARN,
                       "release storage: not listed within %d s: the release step asks helm meanwhile",
                       (int) (OPEN_WAIT_USEC / AO_USEC_PER_SEC));
        return 0;
}

static void cancel_reads(struct release_state *st);

void release_state_stop(struct operator_state *op)
{
        struct release_state *st = op->release_state;
        if (!st)
                return;
        cancel_reads(st);
        ao_informer_unsubscribe(st->sub);
        ao_hashmap_free(st->releases);
        free(st);
        op->release_state = NULL;
}

bool release_state_ready(const struct operator_state *op)
{
        return op->release_state && ao_informer_sub_synced(op->release_state->sub);
}

bool release_state_last(const struct operator_state *op, const char *release, struct release_revision *ret)
{
        if (!release_state_ready(op))
                return false;
        const struct stored_revision *last = last_of(ao_hashmap_get(op->release_state->releases, release));
        *ret = last ? (struct release_revision){last->revision, last->status, last->module_checksum,
                                                last->input_checksum, last->object}
                    : (struct release_revision){0};
        return true;
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

char **release_state_names(const struct operator_state *op, const char *ignored)
{
        if (!release_state_ready(op))
                return NULL;
        const struct ao_hashmap *m = op->release_state->releases;
        char **names = ao_xcalloc(ao_hashmap_size(m) + 1, sizeof(char *));
        size_t n = 0, iter = 0;
        const char *key;
        void *value;
        while (ao_hashmap_next(m, &iter, &key, &value)) {
                if (!ignored || strcmp(ignored, key) != 0)
                        names[n++] = ao_xstrdup(key);
        }
        qsort(names, n, sizeof(char *), compare_names);
        return names;
}

/* ---- a stored release's manifest ---------------------------------------------------------------- */

struct manifest_read {
        struct release_state *st;
        char *object; /* owned */
        release_manifest_done *done;
        void *userdata;
        struct ao_kube_request *request;
        struct manifest_read *prev, *next; /* in st->reads */
};

static void read_unlink(struct manifest_read *m)
{
        if (m->prev)
                m->prev->next = m->next;
        else
                m->st->reads = m->next;
        if (m->next)
                m->next->prev = m->prev;
}

static int decode(const struct release_state *st, const char *body, struct ao_helm_stored_release *ret,
                  struct ao_error *reterr)
{
        cJSON *object = cJSON_Parse(body);
        int r = ao_helm_storage_read(object, !st->config_map, ret, reterr);
        cJSON_Delete(object);
        return r;
}

static void on_read(const struct ao_kube_response *resp, void *userdata)
{
        struct manifest_read *m = userdata;
        read_unlink(m);
        struct ao_helm_stored_release rel = {0};
        struct ao_error err = {0};
        if (resp->status == 200)
                (void) decode(m->st, resp->body, &rel, &err);
        else if (resp->status)
                ao_error_set(&err, -EIO, "release storage '%s': GET: HTTP %ld", m->object, resp->status);
        else
                ao_error_set(&err, -EIO, "release storage '%s': GET: %s", m->object, resp->error.msg);
        const char *manifest = err.code < 0 ? NULL : rel.manifest ? rel.manifest : "";
        m->done(m->st->op, manifest, manifest ? strlen(manifest) : 0, err.code < 0 ? &err : NULL,
                m->userdata);
        ao_helm_stored_release_clear(&rel);
        free(m->object);
        free(m);
}

int release_state_read_manifest(struct operator_state *op, const char *object, release_manifest_done *done,
                                void *userdata, struct ao_error *reterr)
{
        struct release_state *st = op->release_state;
        if (!st || !object)
                return ao_error_set(reterr, -EAGAIN, "the release storage is not watched");
        _cleanup_free_ char *path = ao_xasprintf("/api/v1/namespaces/%s/%s/%s", cluster_config_namespace(op),
                                                 st->config_map ? "configmaps" : "secrets", object);
        struct manifest_read *m = ao_xcalloc(1, sizeof(*m));
        *m = (struct manifest_read){
            .st = st, .object = ao_xstrdup(object), .done = done, .userdata = userdata};
        int r = ao_kube_request(cluster_monitor_client(op), "GET", path, NULL, NULL, 0, on_read, m,
                                &m->request, reterr);
        if (r < 0) {
                free(m->object);
                free(m);
                return r;
        }
        m->next = st->reads;
        if (st->reads)
                st->reads->prev = m;
        st->reads = m;
        return 0;
}

static void cancel_reads(struct release_state *st)
{
        while (st->reads) {
                struct manifest_read *m = st->reads;
                read_unlink(m);
                ao_kube_request_cancel(m->request);
                struct ao_error err = {0};
                ao_error_set(&err, -ECANCELED, "stopped at shutdown");
                m->done(st->op, NULL, 0, &err, m->userdata);
                free(m->object);
                free(m);
        }
}
