/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch views: one kubernetes binding's view of the cluster (include/ao/watch-view.h).
 *
 * A view owns "namespace watches": one per namespace it looks at ("" for all), each holding
 * one informer subscription per name of nameSelector (or a single one). With
 * namespace.labelSelector the namespace watches come and go with a Namespaces informer.
 */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/hashmap.h"
#include "ao/informer.h"
#include "ao/jq.h"
#include "ao/json-writer.h"
#include "ao/kube-discovery.h"
#include "ao/watch-view.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/yaml.h"

/*
 * One object as a binding keeps it: one allocation of ~80 bytes for a short name and filter
 * result. The filter result is kept as its canonical text, parsed again when a context needs it:
 * a cJSON tree costs a node (64 bytes) and an allocation per value, per object.
 */
struct item {
        const char *ns, *name;   /* in data */
        const char *filter_text; /* in data: the jqFilter result's canonical JSON; NULL without a jqFilter */
        cJSON *object;           /* owned; NULL unless keepFullObjectsInMemory */
        uint64_t checksum;
        char data[]; /* ns, name and filter_text, each NUL-terminated */
};

struct ns_watch {
        struct ao_watch_view *m;
        char *ns; /* "" for all namespaces */
        struct ao_informer_sub **subs;
        size_t n_subs;
        size_t n_synced;
        struct ns_watch *next;
};

struct ao_watch_view {
        struct ao_watch_view_env env;
        const struct ao_kubernetes_binding *b;
        char *hook_name;
        struct ao_watch_view_ops ops;
        void *userdata;
        const struct ao_kube_resource *res;
        char *label_selector;
        char **field_selectors; /* one per name of nameSelector, or one; entries may be NULL */
        size_t n_field_selectors;
        struct ns_watch *watches;
        struct ao_informer_sub *namespaces; /* with namespace.labelSelector */
        bool namespaces_synced;
        struct ao_hashmap *items; /* "ns/name" → item */
        bool synced;
};

/* ---- items ------------------------------------------------------------------------------------ */

static void item_free(void *p)
{
        struct item *it = p;
        if (!it)
                return;
        cJSON_Delete(it->object);
        free(it);
}

/* An item holding copies of @ns, @name and @filter_text (may be NULL). */
static struct item *item_new(const char *ns, const char *name, const char *filter_text)
{
        size_t n_ns = strlen(ns) + 1, n_name = strlen(name) + 1,
               n_text = filter_text ? strlen(filter_text) + 1 : 0;
        struct item *it = ao_xmalloc(sizeof(*it) + n_ns + n_name + n_text);
        char *p = it->data;
        *it = (struct item){.ns = memcpy(p, ns, n_ns), .name = memcpy(p + n_ns, name, n_name)};
        if (filter_text)
                it->filter_text = memcpy(p + n_ns + n_name, filter_text, n_text);
        return it;
}

static const char *meta_string(const cJSON *obj, const char *field)
{
        const cJSON *v =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), field);
        return cJSON_IsString(v) ? v->valuestring : "";
}

static char *item_key(const char *ns, const char *name)
{
        return ao_xasprintf("%s/%s", ns, name);
}

/* FNV-1a of the canonical text: equal documents, equal sums; 64 bits make an accidental match moot. */
static uint64_t checksum_of(const char *text)
{
        uint64_t h = 14695981039346656037ULL;
        for (const unsigned char *p = (const unsigned char *) text; *p; p++)
                h = (h ^ *p) * 1099511628211ULL;
        return h;
}

/* The item for @obj; NULL when the jqFilter fails on it (logged: the object is skipped). */
static struct item *item_build(struct ao_watch_view *m, const cJSON *obj)
{
        const char *ns = meta_string(obj, "namespace"), *name = meta_string(obj, "name");
        char *text = NULL;
        if (m->b->jq_filter) {
                struct ao_error err = {0};
                cJSON *result = NULL;
                uint64_t start = ao_clock_now_usec();
                int r = ao_jq_apply(m->env.jq, m->b->jq_filter, obj, &result, &text, &err);
                if (m->env.on_jq)
                        m->env.on_jq(m->userdata, ao_clock_now_usec() - start);
                cJSON_Delete(result);
                if (r < 0) {
                        ao_log_with(
                            AO_LOG_ERROR, AO_LOG_FIELDS({"hook", m->hook_name}, {"binding", m->b->name}),
                            "hook '%s', binding '%s': jqFilter on %s '%s%s%s': %s; object skipped",
                            m->hook_name, m->b->name, m->res->kind, ns, *ns ? "/" : "", name, err.msg);
                        return NULL;
                }
        } else {
                text = ao_json_canonical(obj);
        }
        struct item *it = item_new(ns, name, m->b->jq_filter ? text : NULL);
        it->checksum = checksum_of(text);
        free(text);
        if (m->b->keep_full_objects_in_memory)
                it->object = cJSON_Duplicate(obj, true);
        return it;
}

/* What a context carries for one object: {"object":..,"filterResult":..}. */
static cJSON *item_to_json(const struct ao_watch_view *m, const struct item *it, const cJSON *event_object)
{
        cJSON *j = cJSON_CreateObject();
        if (m->b->keep_full_objects_in_memory) {
                const cJSON *obj = event_object ? event_object : it->object;
                cJSON_AddItemToObject(j, "object", obj ? cJSON_Duplicate(obj, true) : cJSON_CreateNull());
        }
        if (m->b->jq_filter) {
                /* Our own canonical text: it parses, unless memory ran out (then null, not a crash). */
                cJSON *result = it->filter_text ? cJSON_Parse(it->filter_text) : NULL;
                cJSON_AddItemToObject(j, "filterResult", result ? result : cJSON_CreateNull());
        }
        return j;
}

static void fire(struct ao_watch_view *m, unsigned watch_event, const struct item *it, const cJSON *obj)
{
        if (!(m->b->event_mask & watch_event) || !m->ops.event)
                return;
        m->ops.event(m, watch_event, item_to_json(m, it, obj), obj, m->userdata);
}

static int compare_keys(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* An object appeared or changed: store it, and fire when the view is live and the checksum moved. */
static void upsert(struct ao_watch_view *m, const cJSON *obj, bool live)
{
        struct item *it = item_build(m, obj);
        if (!it)
                return;
        char *key = item_key(it->ns, it->name);
        struct item *before = ao_hashmap_get(m->items, key);
        bool changed = !before || before->checksum != it->checksum;
        unsigned event = before ? AO_WATCH_MODIFIED : AO_WATCH_ADDED;
        ao_hashmap_put(m->items, key, it);
        free(key);
        if (live && changed)
                fire(m, event, it, obj);
}

/*
 * The filter result of what was deleted, as the Go operator reports it: of the object the watch
 * event carries, or (@partial: a deletion a re-list found, the informer has only a stub) of the
 * last state seen, which is what the item holds; the object too, with keepFullObjectsInMemory.
 */
static void remove_object(struct ao_watch_view *m, const cJSON *obj, bool partial, bool live)
{
        char *key = item_key(meta_string(obj, "namespace"), meta_string(obj, "name"));
        struct item *it = ao_hashmap_take(m->items, key);
        free(key);
        if (!it || !live) {
                item_free(it);
                return;
        }
        struct item *last = m->b->jq_filter && !partial ? item_build(m, obj) : NULL;
        const cJSON *object = partial && it->object ? it->object : obj;
        fire(m, AO_WATCH_DELETED, last ? last : it, object);
        item_free(last);
        item_free(it);
}

/*
 * A namespace stopped matching (or was deleted): its objects leave the binding, each as a Deleted
 * event with what the binding last held of it, so that a hook's view built from its events holds
 * what the snapshot holds. (The Go operator drops them without an event: a hook that keeps its own
 * view is left with objects that are no longer in its selection; docs/MIGRATION.md.)
 */
static void drop_namespace_items(struct ao_watch_view *m, const char *ns)
{
        size_t iter = 0, n = 0;
        const char *key;
        void *value;
        char **doomed = ao_xcalloc(ao_hashmap_size(m->items) + 1, sizeof(*doomed));
        while (ao_hashmap_next(m->items, &iter, &key, &value))
                if (strcmp(((struct item *) value)->ns, ns) == 0)
                        doomed[n++] = ao_xstrdup(key);
        qsort(doomed, n, sizeof(*doomed), compare_keys); /* events in a stable order */
        for (size_t i = 0; i < n; i++) {
                struct item *it = ao_hashmap_take(m->items, doomed[i]);
                if (it && m->synced)
                        fire(m, AO_WATCH_DELETED, it, it->object);
                item_free(it);
                free(doomed[i]);
        }
        free(doomed);
}

/* ---- sync ------------------------------------------------------------------------------------- */

static void check_synced(struct ao_watch_view *m)
{
        if (m->synced)
                return;
        if (m->b->namespace_labels.present && !m->namespaces_synced)
                return;
        for (struct ns_watch *w = m->watches; w; w = w->next)
                if (w->n_synced < w->n_subs)
                        return;
        m->synced = true;
        if (m->ops.synced)
                m->ops.synced(m, m->userdata);
}

static void on_sub_synced(struct ao_informer_sub *sub, void *userdata)
{
        struct ns_watch *w = userdata;
        w->n_synced++;
        check_synced(w->m);
}

/*
 * The informer's events build the items before it is synced, and keep them current after. A
 * namespace that starts matching once the view has synced brings its objects as Added events:
 * the view is live then, whatever its new subscription's state.
 */
static void on_sub_event(struct ao_informer_sub *sub, enum ao_watch_type type, const cJSON *obj, bool partial,
                         void *userdata)
{
        struct ns_watch *w = userdata;
        if (type == AO_WATCH_EVENT_DELETED)
                remove_object(w->m, obj, partial, w->m->synced);
        else
                upsert(w->m, obj, w->m->synced);
}

static const struct ao_informer_sub_ops object_ops = {.synced = on_sub_synced, .event = on_sub_event};

/* ---- namespace watches ------------------------------------------------------------------------ */

static void ns_watch_free(struct ns_watch *w)
{
        for (size_t i = 0; i < w->n_subs; i++)
                ao_informer_unsubscribe(w->subs[i]);
        free(w->subs);
        free(w->ns);
        free(w);
}

static int ns_watch_add(struct ao_watch_view *m, const char *ns, struct ao_error *reterr)
{
        struct ns_watch *w = ao_xcalloc(1, sizeof(*w));
        w->m = m;
        w->ns = ao_xstrdup(ns);
        w->subs = ao_xcalloc(m->n_field_selectors, sizeof(*w->subs));
        w->next = m->watches;
        m->watches = w;
        for (size_t i = 0; i < m->n_field_selectors; i++) {
                const struct ao_informer_query q = {
                    .resource = m->res,
                    .ns = ns,
                    .label_selector = m->label_selector,
                    .field_selector = m->field_selectors[i],
                };
                int r = ao_informers_subscribe(m->env.informers, &q, &object_ops, w, &w->subs[i], reterr);
                if (r < 0)
                        return r;
                w->n_subs++;
        }
        return 0;
}

static struct ns_watch **ns_watch_find(struct ao_watch_view *m, const char *ns)
{
        struct ns_watch **pp = &m->watches;
        while (*pp && strcmp((*pp)->ns, ns) != 0)
                pp = &(*pp)->next;
        return pp;
}

static void namespace_appeared(struct ao_watch_view *m, const char *ns)
{
        if (*ns_watch_find(m, ns))
                return;
        struct ao_error err = {0};
        if (ns_watch_add(m, ns, &err) < 0)
                ao_log(AO_LOG_ERROR, "hook '%s', binding '%s': cannot watch namespace '%s': %s", m->hook_name,
                       m->b->name, ns, err.msg);
}

static void namespace_gone(struct ao_watch_view *m, const char *ns)
{
        struct ns_watch **pp = ns_watch_find(m, ns);
        if (!*pp)
                return;
        struct ns_watch *w = *pp;
        *pp = w->next;
        ns_watch_free(w);
        drop_namespace_items(m, ns);
}

/* The namespaces listed came as events: each has its watch already. */
static void on_namespaces_synced(struct ao_informer_sub *sub, void *userdata)
{
        struct ao_watch_view *m = userdata;
        m->namespaces_synced = true;
        check_synced(m);
}

static void on_namespace_event(struct ao_informer_sub *sub, enum ao_watch_type type, const cJSON *obj,
                               bool partial, void *userdata)
{
        struct ao_watch_view *m = userdata;
        if (type == AO_WATCH_EVENT_DELETED)
                namespace_gone(m, meta_string(obj, "name"));
        else
                namespace_appeared(m, meta_string(obj, "name"));
}

static const struct ao_informer_sub_ops namespace_ops = {.synced = on_namespaces_synced,
                                                         .event = on_namespace_event};

/* ---- set-up ----------------------------------------------------------------------------------- */

/* One field selector per name of nameSelector (metadata.name=<n> plus the binding's own), or one. */
static void build_field_selectors(struct ao_watch_view *m)
{
        const struct ao_kubernetes_binding *b = m->b;
        char *own =
            b->n_field_selector ? ao_field_selector_format(b->field_selector, b->n_field_selector) : NULL;
        m->n_field_selectors = b->name_selector.n ? b->name_selector.n : 1;
        m->field_selectors = ao_xcalloc(m->n_field_selectors, sizeof(*m->field_selectors));
        if (!b->name_selector.n) {
                m->field_selectors[0] = own;
                return;
        }
        for (size_t i = 0; i < b->name_selector.n; i++)
                m->field_selectors[i] =
                    own ? ao_xasprintf("metadata.name=%s,%s", b->name_selector.items[i], own)
                        : ao_xasprintf("metadata.name=%s", b->name_selector.items[i]);
        free(own);
}

static int start_watches(struct ao_watch_view *m, struct ao_error *reterr)
{
        const struct ao_kubernetes_binding *b = m->b;
        if (b->namespace_labels.present) {
                struct ao_error err = {0};
                const struct ao_kube_resource *ns_res =
                    ao_kube_discovery_find(m->env.discovery, "v1", "Namespace", &err);
                if (!ns_res)
                        return ao_error_set(reterr, -ENOENT, "%s", err.msg);
                char *sel = ao_label_selector_format(&b->namespace_labels);
                const struct ao_informer_query q = {.resource = ns_res, .label_selector = sel};
                int r =
                    ao_informers_subscribe(m->env.informers, &q, &namespace_ops, m, &m->namespaces, reterr);
                free(sel);
                return r;
        }
        if (b->namespace_names.n == 0 || !m->res->namespaced)
                return ns_watch_add(m, "", reterr);
        for (size_t i = 0; i < b->namespace_names.n; i++) {
                int r = ns_watch_add(m, b->namespace_names.items[i], reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int ao_watch_view_new(const struct ao_watch_view_env *env, const struct ao_kubernetes_binding *b,
                      const char *hook_name, const struct ao_watch_view_ops *ops, void *userdata,
                      struct ao_watch_view **ret, struct ao_error *reterr)
{
        struct ao_error err = {0};
        const struct ao_kube_resource *res =
            ao_kube_discovery_find(env->discovery, b->api_version, b->kind, &err);
        if (!res)
                return ao_error_set(reterr, -ENOENT, "hook '%s', binding '%s': %s", hook_name, b->name,
                                    err.msg);
        struct ao_watch_view *m = ao_xcalloc(1, sizeof(*m));
        m->env = *env;
        m->b = b;
        m->hook_name = ao_xstrdup(hook_name);
        m->ops = *ops;
        m->userdata = userdata;
        m->res = res;
        m->items = ao_hashmap_new(item_free);
        if (b->label_selector.present)
                m->label_selector = ao_label_selector_format(&b->label_selector);
        build_field_selectors(m);
        int r = start_watches(m, reterr);
        if (r < 0) {
                ao_error_prefix(reterr, "hook '%s', binding '%s'", hook_name, b->name);
                ao_watch_view_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

struct ao_watch_view *ao_watch_view_free(struct ao_watch_view *m)
{
        if (!m)
                return NULL;
        ao_informer_unsubscribe(m->namespaces);
        while (m->watches) {
                struct ns_watch *next = m->watches->next;
                ns_watch_free(m->watches);
                m->watches = next;
        }
        for (size_t i = 0; i < m->n_field_selectors; i++)
                free(m->field_selectors[i]);
        free(m->field_selectors);
        free(m->label_selector);
        ao_hashmap_free(m->items);
        free(m->hook_name);
        free(m);
        return NULL;
}

bool ao_watch_view_synced(const struct ao_watch_view *m)
{
        return m->synced;
}

size_t ao_watch_view_count(const struct ao_watch_view *m)
{
        return ao_hashmap_size(m->items);
}

const struct ao_kubernetes_binding *ao_watch_view_binding(const struct ao_watch_view *m)
{
        return m->b;
}

static int compare_items(const void *a, const void *b)
{
        const struct item *x = *(const struct item *const *) a, *y = *(const struct item *const *) b;
        int c = strcmp(x->ns, y->ns);
        return c ? c : strcmp(x->name, y->name);
}

/*
 * One item as item_to_json() shapes it, in canonical key order: the filter result is its stored
 * canonical text (ao_jq_apply()'s), written as it is instead of parsed and written again.
 */
static void write_item(const struct ao_watch_view *m, const struct item *it, struct ao_json_writer *out)
{
        ao_json_write_raw(out, "{");
        if (m->b->jq_filter) {
                ao_json_write_raw(out, "\"filterResult\":");
                ao_json_write_raw(out, it->filter_text ? it->filter_text : "null");
        }
        if (m->b->keep_full_objects_in_memory) {
                ao_json_write_raw(out, m->b->jq_filter ? ",\"object\":" : "\"object\":");
                ao_json_write(out, it->object);
        }
        ao_json_write_raw(out, "}");
}

/* The items sorted by namespace then name: a new array of *@ret_n borrowed pointers. */
static const struct item **sorted_items(const struct ao_watch_view *m, size_t *ret_n)
{
        size_t n = ao_hashmap_size(m->items), iter = 0, i = 0;
        const struct item **sorted = ao_xcalloc(n + 1, sizeof(*sorted));
        void *value;
        while (ao_hashmap_next(m->items, &iter, NULL, &value))
                sorted[i++] = value;
        qsort(sorted, n, sizeof(*sorted), compare_items);
        *ret_n = n;
        return sorted;
}

int ao_watch_view_write_items(const struct ao_watch_view *m, struct ao_json_writer *out)
{
        size_t n;
        const struct item **sorted = sorted_items(m, &n);
        ao_json_write_raw(out, "[");
        for (size_t i = 0; i < n && ao_json_writer_error(out) == 0; i++) {
                if (i > 0)
                        ao_json_write_raw(out, ",");
                write_item(m, sorted[i], out);
        }
        ao_json_write_raw(out, "]");
        free(sorted);
        return ao_json_writer_error(out);
}
