/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A watch view's items in binding context files (src/hooks/watch-view.c with src/hooks/binding.c):
 * written item by item to the file, they are byte for byte what the operator wrote before it
 * streamed them (the items as one tree, put into the contexts, the file as one string), for
 * every shape of context; and the memory that costs does not grow with the items beyond the
 * array of pointers that sorts them. watch-view.c is included (STYLE §12) to fill a view's items
 * without informers.
 */
#include "../../src/hooks/watch-view.c"

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/binding-context.h"
#include "ao/hook-config.h"
#include "ao/strbuf.h"

/* ---- heap accounting: bytes allocated and not freed, and their peak, while counting --------- */

static long long heap_now, heap_peak;
static bool counting;

static void heap_add(long long n)
{
        if (!counting)
                return;
        heap_now += n;
        if (heap_now > heap_peak)
                heap_peak = heap_now;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(ASAN)
/* Under ASan the sanitizer's allocator tells (sanitizer/allocator_interface.h, which gcc 12 lacks). */
void __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                               void (*free_hook)(const volatile void *));
size_t __sanitizer_get_allocated_size(const volatile void *p);

static void on_malloc(const volatile void *p, size_t n)
{
        (void) p;
        heap_add((long long) n);
}

static void on_free(const volatile void *p)
{
        if (p)
                heap_add(-(long long) __sanitizer_get_allocated_size(p));
}

static void heap_setup(void)
{
        __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
/* Without ASan the program's own malloc family replaces glibc's, for every library (cJSON, jq). */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

void *malloc(size_t n)
{
        void *p = __libc_malloc(n);
        if (p)
                heap_add((long long) malloc_usable_size(p));
        return p;
}

void *calloc(size_t n, size_t size)
{
        void *p = __libc_calloc(n, size);
        if (p)
                heap_add((long long) malloc_usable_size(p));
        return p;
}

void *realloc(void *p, size_t n)
{
        long long old = p ? (long long) malloc_usable_size(p) : 0;
        void *q = __libc_realloc(p, n);
        if (q || n == 0)
                heap_add((q ? (long long) malloc_usable_size(q) : 0) - old);
        return q;
}

void free(void *p)
{
        if (p)
                heap_add(-(long long) malloc_usable_size(p));
        __libc_free(p);
}

static void heap_setup(void)
{
}
#endif

static void heap_start(void)
{
        heap_now = heap_peak = 0;
        counting = true;
}

static long long heap_stop(void)
{
        counting = false;
        return heap_peak;
}

/* ---- views filled without informers --------------------------------------------------------- */

static struct ao_jq_cache *jq;
static struct ao_kube_resource pod_resource = {.kind = (char *) "Pod", .api_version = (char *) "v1"};

/* A hook's bindings and their views (NULL: a binding without one, as before its monitor starts). */
struct hook_views {
        struct ao_hook_config cfg;
        struct ao_watch_view *views[8];
};

static struct ao_watch_view *view_new(const struct ao_kubernetes_binding *b)
{
        struct ao_watch_view *m = ao_xcalloc(1, sizeof(*m));
        m->env.jq = jq;
        m->b = b;
        m->hook_name = ao_xstrdup("hooks/test.sh");
        m->res = &pod_resource;
        m->items = ao_hashmap_new(item_free);
        m->synced = true;
        return m;
}

static void hook_views_init(struct hook_views *h, const char *config)
{
        *h = (struct hook_views){0};
        struct ao_error err = {0};
        if (ao_hook_config_parse(config, strlen(config), "hooks/test.sh", AO_HOOK_GLOBAL, &h->cfg, &err) <
            0) {
                tap_diag("%s", err.msg);
                tap_bail("a test config does not parse");
        }
        if (h->cfg.n_kubernetes > AO_ARRAY_SIZE(h->views))
                tap_bail("too many bindings");
        for (size_t i = 0; i < h->cfg.n_kubernetes; i++)
                if (strcmp(h->cfg.kubernetes[i].name, "idle") != 0)
                        h->views[i] = view_new(&h->cfg.kubernetes[i]);
}

static void hook_views_done(struct hook_views *h)
{
        for (size_t i = 0; i < h->cfg.n_kubernetes; i++)
                ao_watch_view_free(h->views[i]);
        ao_hook_config_done(&h->cfg);
}

static struct ao_watch_view *view_of(const struct hook_views *h, const char *binding)
{
        for (size_t i = 0; i < h->cfg.n_kubernetes; i++)
                if (h->views[i] && strcmp(h->cfg.kubernetes[i].name, binding) == 0)
                        return h->views[i];
        return NULL;
}

/* Numbers and strings whose canonical forms are easy to get wrong. */
static const char *const numbers[] = {
    "12345678901234567890", "9007199254740993",         "1e21",    "1e300", "-0.0",  "0.1", "1.5e-7",
    "-9007199254740991",    "123456789012345678901234", "3.14159", "42",    "5e-324"};
static const char *const strings[] = {
    "plain", "\\u00e9 \\u2028 \\u0085 \\u009f \\u0001 \\\"q\\\" \\\\ / \\ud83d\\ude00 \\ufffe \\uffff",
    "tab\\there\\nnewline", "bad \xff utf8 \xc3", "\xe2\x82\xac raw"};

static cJSON *object_of(int i)
{
        char *text =
            ao_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%06d\","
                         "\"namespace\":\"ns-%d\","
                         "\"labels\":{\"app\":\"a%d\"}},\"spec\":{\"n\":%s,\"m\":%d.25,\"s\":\"%s\",\"list\":"
                         "[%s,true,null,{}]}}",
                         (i * 7919) % 100000, i % 7, i % 3, numbers[i % AO_ARRAY_SIZE(numbers)], i,
                         strings[i % AO_ARRAY_SIZE(strings)], numbers[(i + 5) % AO_ARRAY_SIZE(numbers)]);
        cJSON *obj = cJSON_Parse(text);
        if (!obj)
                tap_bail(text);
        free(text);
        return obj;
}

/* @n objects into every view of @h, through the view's own path (jqFilter, checksum, copy). */
static void fill(struct hook_views *h, int n)
{
        for (int i = 0; i < n; i++) {
                cJSON *obj = object_of(i);
                for (size_t k = 0; k < h->cfg.n_kubernetes; k++)
                        if (h->views[k] && strcmp(h->cfg.kubernetes[k].name, "empty") != 0)
                                upsert(h->views[k], obj, false);
                cJSON_Delete(obj);
        }
}

/* ---- the path before streaming, kept here as the reference ----------------------------------- */

/* ao_watch_view_snapshot(): the items as one tree. */
static cJSON *old_snapshot(const struct ao_watch_view *m)
{
        size_t n;
        const struct item **sorted = sorted_items(m, &n);
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++)
                cJSON_AddItemToArray(arr, item_to_json(m, sorted[i], NULL));
        free(sorted);
        return arr;
}

static cJSON *old_items(const struct hook_views *h, const char *binding)
{
        const struct ao_watch_view *m = view_of(h, binding);
        return m ? old_snapshot(m) : cJSON_CreateArray();
}

/* ao_binding_contexts_refresh(): every snapshot and a Synchronization's objects replaced in place. */
static void old_refresh(cJSON *contexts, const struct hook_views *h)
{
        cJSON *ctx;
        cJSON_ArrayForEach(ctx, contexts)
        {
                cJSON *snapshots = cJSON_GetObjectItemCaseSensitive(ctx, "snapshots");
                for (cJSON *s = snapshots ? snapshots->child : NULL; s; s = s->next) {
                        cJSON *fresh = old_items(h, s->string);
                        cJSON *old_child = s->child;
                        s->child = fresh->child;
                        fresh->child = old_child;
                        cJSON_Delete(fresh);
                }
                const cJSON *type = cJSON_GetObjectItemCaseSensitive(ctx, "type");
                const cJSON *binding = cJSON_GetObjectItemCaseSensitive(ctx, "binding");
                if (cJSON_IsString(type) && strcmp(type->valuestring, "Synchronization") == 0 &&
                    cJSON_IsString(binding) && cJSON_HasObjectItem(ctx, "objects"))
                        cJSON_ReplaceItemInObjectCaseSensitive(ctx, "objects",
                                                               old_items(h, binding->valuestring));
        }
}

/* A run's file as it was written: contexts refreshed, one canonical string, copied with its newline. */
static char *old_file(const cJSON *contexts, const struct hook_views *h)
{
        cJSON *task_contexts = cJSON_Duplicate(contexts, true);
        old_refresh(task_contexts, h);
        struct ao_strbuf sb = {0};
        char *text = ao_json_canonical(task_contexts);
        ao_strbuf_append(&sb, text);
        ao_strbuf_append_c(&sb, '\n');
        free(text);
        cJSON_Delete(task_contexts);
        return ao_strbuf_steal(&sb);
}

/* ---- the streaming path ---------------------------------------------------------------------- */

/* As src/operator/bindings.c's source. */
static int write_snapshot(void *userdata, const char *binding, struct ao_json_writer *out)
{
        const struct ao_watch_view *m = view_of(userdata, binding);
        if (m)
                return ao_watch_view_write_items(m, out);
        ao_json_write_raw(out, "[]");
        return ao_json_writer_error(out);
}

/* The whole file at @fd. */
static char *file_text(int fd)
{
        struct ao_strbuf sb = {0};
        char buf[64 * 1024];
        ssize_t n;
        for (off_t at = 0; (n = pread(fd, buf, sizeof(buf), at)) > 0; at += n)
                ao_strbuf_append_n(&sb, buf, (size_t) n);
        return ao_strbuf_steal(&sb);
}

/* Write @contexts with @h's items to @fd, flushing every @chunk bytes; returns the error or 0. */
static int new_write(int fd, const cJSON *contexts, struct hook_views *h, size_t chunk, size_t *ret_len)
{
        const struct ao_snapshot_source src = {.write = write_snapshot, .userdata = h};
        struct ao_json_writer w;
        ao_json_writer_init(&w, fd);
        w.chunk = chunk;
        int r = ao_binding_contexts_write(contexts, &src, &w);
        int f = ao_json_writer_finish(&w, ret_len);
        ao_json_writer_done(&w);
        return r < 0 ? r : f;
}

static char *new_file(const cJSON *contexts, struct hook_views *h, size_t chunk)
{
        int fd = memfd_create("binding-context", MFD_CLOEXEC);
        if (fd < 0)
                tap_bail("memfd_create");
        size_t len = 0;
        int r = new_write(fd, contexts, h, chunk, &len);
        char *text = r < 0 ? ao_xasprintf("error %d", r) : file_text(fd);
        close(fd);
        return text;
}

/* Byte for byte the old file, at chunk sizes from tiny (every item across flushes) to the default. */
static void check_same(const cJSON *contexts, struct hook_views *h, bool tiny_chunks, const char *what)
{
        char *want = old_file(contexts, h);
        const size_t chunks[] = {1, 7, 4096, AO_JSON_WRITER_CHUNK};
        bool same = true;
        for (size_t i = tiny_chunks ? 0 : 2; i < AO_ARRAY_SIZE(chunks); i++) {
                char *got = new_file(contexts, h, chunks[i]);
                if (strcmp(got, want) != 0) {
                        size_t at = 0;
                        while (got[at] && got[at] == want[at])
                                at++;
                        tap_diag("chunk %zu: differs at byte %zu: '%.80s' instead of '%.80s'", chunks[i], at,
                                 got + at, want + at);
                        same = false;
                }
                free(got);
        }
        tap_ok(same, "%s: the same %zu bytes as the tree path", what, strlen(want));
        free(want);
}

static cJSON *one(cJSON *ctx)
{
        cJSON *contexts = cJSON_CreateArray();
        cJSON_AddItemToArray(contexts, ctx);
        return contexts;
}

/* The event context a view's event gives (bindings.c: on_monitor_event), for object @i. */
static cJSON *event_context(struct hook_views *h, size_t binding, int i)
{
        struct ao_watch_view *m = h->views[binding];
        cJSON *obj = object_of(i);
        char *key = item_key(meta_string(obj, "namespace"), meta_string(obj, "name"));
        const struct item *it = ao_hashmap_get(m->items, key);
        free(key);
        if (!it)
                tap_bail("no such item");
        cJSON *item = item_to_json(m, it, obj);
        if (h->cfg.version == 0 && !cJSON_HasObjectItem(item, "object"))
                cJSON_AddItemToObject(item, "object", cJSON_Duplicate(obj, true));
        cJSON *ctx = ao_binding_context_event(&h->cfg, m->b, AO_WATCH_MODIFIED, item);
        cJSON_Delete(obj);
        return ctx;
}

#define FILTER "{name: .metadata.name, ns: .metadata.namespace, spec: .spec}"

static void test_same_bytes_v1(void)
{
        struct hook_views h;
        hook_views_init(&h,
                        "{\"configVersion\":\"v1\",\"beforeAll\":1,"
                        "\"schedule\":[{\"name\":\"tick\",\"crontab\":\"* * * * *\",\"group\":\"g\","
                        "\"includeSnapshotsFrom\":[\"plain\"]},"
                        "{\"name\":\"lone\",\"crontab\":\"* * * * *\",\"includeSnapshotsFrom\":[\"idle\"]}],"
                        "\"kubernetes\":["
                        "{\"name\":\"full\",\"kind\":\"Pod\",\"jqFilter\":\"" FILTER "\","
                        "\"includeSnapshotsFrom\":[\"lean\",\"plain\",\"empty\",\"idle\"]},"
                        "{\"name\":\"lean\",\"kind\":\"Pod\",\"jqFilter\":\"" FILTER "\","
                        "\"keepFullObjectsInMemory\":false,\"group\":\"g\"},"
                        "{\"name\":\"plain\",\"kind\":\"Pod\",\"includeSnapshotsFrom\":[\"full\"]},"
                        "{\"name\":\"empty\",\"kind\":\"Pod\",\"group\":\"g\"},"
                        "{\"name\":\"idle\",\"kind\":\"Pod\"}]}");
        fill(&h, 10000);
        tap_is_int(ao_watch_view_count(h.views[0]), 10000, "v1: 10000 objects in each view");
        const struct ao_kubernetes_binding *k = h.cfg.kubernetes;

        cJSON *all = cJSON_CreateArray();
        struct {
                cJSON *ctx;
                bool tiny;
                const char *what;
        } cases[] = {
            {ao_binding_context_synchronization(&h.cfg, &k[0]), false,
             "Synchronization, keepFullObjectsInMemory, jqFilter, 10000 objects and four snapshots"},
            {ao_binding_context_synchronization(&h.cfg, &k[2]), false,
             "Synchronization without a jqFilter: objects only"},
            {ao_binding_context_synchronization(&h.cfg, &k[1]), false,
             "Synchronization of a grouped binding (keepFullObjectsInMemory false): the group's snapshots"},
            {ao_binding_context_synchronization(&h.cfg, &k[4]), true,
             "Synchronization of a binding without a view: no objects"},
            {ao_binding_context_schedule(&h.cfg, &h.cfg.schedules[0]), false,
             "grouped schedule: the group's snapshots and includeSnapshotsFrom"},
            {ao_binding_context_schedule(&h.cfg, &h.cfg.schedules[1]), true,
             "schedule with includeSnapshotsFrom of a binding without a view"},
            {ao_binding_context_ordered(&h.cfg, AO_BINDING_BEFORE_ALL), false,
             "beforeAll: every binding's snapshot"},
            {event_context(&h, 0, 17), false, "event with an object, a filter result and snapshots"},
            {event_context(&h, 1, 4), false, "grouped event: a Group context"},
            {event_context(&h, 2, 9), false, "event without a jqFilter"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                cJSON *contexts = one(cases[i].ctx);
                check_same(contexts, &h, cases[i].tiny, cases[i].what);
                cJSON_AddItemToArray(all, cJSON_Duplicate(cases[i].ctx, true));
                cJSON_Delete(contexts);
        }
        check_same(all, &h, false, "all of these in one file, as merged queued runs give them");
        cJSON_Delete(all);

        /* A view of 30 objects through one-byte chunks. */
        struct hook_views few;
        hook_views_init(&few,
                        "{\"configVersion\":\"v1\",\"kubernetes\":["
                        "{\"name\":\"full\",\"kind\":\"Pod\",\"jqFilter\":\"" FILTER "\","
                        "\"includeSnapshotsFrom\":[\"plain\"]},{\"name\":\"plain\",\"kind\":\"Pod\"}]}");
        fill(&few, 30);
        cJSON *contexts = one(ao_binding_context_synchronization(&few.cfg, &few.cfg.kubernetes[0]));
        check_same(contexts, &few, true, "30 objects written one byte at a time");
        cJSON_Delete(contexts);
        hook_views_done(&few);

        /* The stored filter texts hold the hard cases: large integers, \u escapes. */
        size_t iter = 0, big = 0, escaped = 0;
        void *value;
        while (ao_hashmap_next(h.views[1]->items, &iter, NULL, &value)) {
                const struct item *it = value;
                big += strstr(it->filter_text, "\"n\":12345678901234567000") != NULL;
                escaped += strstr(it->filter_text, "\\u2028") != NULL;
        }
        tap_ok(big > 0 && escaped > 0, "the filter results hold large integers (%zu) and escapes (%zu)", big,
               escaped);
        hook_views_done(&h);
}

static void test_same_bytes_v0(void)
{
        struct hook_views h;
        hook_views_init(&h, "{\"onStartup\":1,\"beforeAll\":1,\"schedule\":[{\"crontab\":\"* * * * *\"}],"
                            "\"onKubernetesEvent\":[{\"name\":\"pods\",\"kind\":\"pod\",\"event\":[\"add\"],"
                            "\"jqFilter\":\".spec\"},{\"kind\":\"pod\",\"event\":[\"delete\"]}]}");
        fill(&h, 500);
        const struct ao_kubernetes_binding *k = h.cfg.kubernetes;
        struct {
                cJSON *ctx;
                const char *what;
        } cases[] = {
            {ao_binding_context_ordered(&h.cfg, AO_BINDING_BEFORE_ALL), "v0 beforeAll"},
            {ao_binding_context_schedule(&h.cfg, &h.cfg.schedules[0]), "v0 schedule"},
            {ao_binding_context_synchronization(&h.cfg, &k[0]), "v0 Synchronization with a jqFilter"},
            {ao_binding_context_synchronization(&h.cfg, &k[1]), "v0 Synchronization without one"},
            {event_context(&h, 0, 3), "v0 event"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                cJSON *contexts = one(cases[i].ctx);
                check_same(contexts, &h, true, cases[i].what);
                cJSON_Delete(contexts);
        }
        hook_views_done(&h);
}

/* A write that fails is reported, and the walk over the items stops. */
static void test_write_error(void)
{
        struct hook_views h;
        hook_views_init(&h, "{\"configVersion\":\"v1\",\"kubernetes\":[{\"name\":\"lean\",\"kind\":\"Pod\","
                            "\"jqFilter\":\".metadata.name\",\"keepFullObjectsInMemory\":false}]}");
        fill(&h, 2000);
        cJSON *contexts = one(ao_binding_context_synchronization(&h.cfg, &h.cfg.kubernetes[0]));
        int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                tap_bail("/dev/full");
        tap_is_int(new_write(fd, contexts, &h, AO_JSON_WRITER_CHUNK, NULL), -ENOSPC,
                   "write error: a full device fails the write");
        tap_is_int(new_write(fd, contexts, &h, 16, NULL), -ENOSPC,
                   "write error: also at the first small chunk");
        close(fd);
        tap_is_int(new_write(fd, contexts, &h, 16, NULL), -EBADF, "write error: a closed fd");
        cJSON_Delete(contexts);
        hook_views_done(&h);
}

/* ---- memory -------------------------------------------------------------------------------- */

/* @n items as a view keeps them, put in directly (the jqFilter would only cost time here). */
static void fill_direct(struct hook_views *h, int n)
{
        for (int i = 0; i < n; i++) {
                char ns[16], name[32];
                snprintf(ns, sizeof(ns), "ns-%d", i % 10);
                snprintf(name, sizeof(name), "pod-%06d", (i * 7919) % n);
                for (size_t k = 0; k < h->cfg.n_kubernetes; k++) {
                        struct ao_watch_view *m = h->views[k];
                        char *text =
                            ao_xasprintf("{\"name\":\"%s\",\"ns\":\"%s\",\"replicas\":%d}", name, ns, i);
                        struct item *it = item_new(ns, name, m->b->jq_filter ? text : NULL);
                        if (m->b->keep_full_objects_in_memory) {
                                char *obj = ao_xasprintf(
                                    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                                    "\"%s\",\"labels\":{\"app\":\"x\"}},\"spec\":{\"n\":%d}}",
                                    name, ns, i);
                                it->object = cJSON_Parse(obj);
                                free(obj);
                        }
                        char *key = item_key(ns, name);
                        ao_hashmap_put(m->items, key, it);
                        free(key);
                        free(text);
                }
        }
}

struct peaks {
        long long old_path, new_path;
        size_t bytes;
};

static struct peaks measure(const char *config, int n)
{
        struct hook_views h;
        hook_views_init(&h, config);
        fill_direct(&h, n);
        cJSON *contexts = one(ao_binding_context_synchronization(&h.cfg, &h.cfg.kubernetes[0]));
        struct peaks p = {0};
        int fd = memfd_create("binding-context", MFD_CLOEXEC);
        if (fd < 0)
                tap_bail("memfd_create");

        /* Before: the tree, the string, its copy, then the file. */
        heap_start();
        char *text = old_file(contexts, &h);
        if (pwrite(fd, text, strlen(text), 0) != (ssize_t) strlen(text))
                tap_bail("pwrite");
        free(text);
        p.old_path = heap_stop();
        char *want = file_text(fd);
        if (ftruncate(fd, 0) < 0)
                tap_bail("ftruncate");

        heap_start();
        int r = new_write(fd, contexts, &h, AO_JSON_WRITER_CHUNK, &p.bytes);
        p.new_path = heap_stop();
        char *got = file_text(fd);
        tap_ok(r == 0 && strcmp(got, want) == 0, "memory, %d items: the same %zu bytes both ways", n,
               p.bytes);
        free(got);
        free(want);
        close(fd);
        cJSON_Delete(contexts);
        hook_views_done(&h);
        return p;
}

static void test_memory(void)
{
        static const struct {
                const char *name, *config;
        } kinds[] = {
            {"jqFilter, keepFullObjectsInMemory false", "{\"configVersion\":\"v1\",\"kubernetes\":[{\"name\":"
                                                        "\"pods\",\"kind\":\"Pod\",\"jqFilter\":\".x\","
                                                        "\"keepFullObjectsInMemory\":false}]}"},
            {"jqFilter and the objects", "{\"configVersion\":\"v1\",\"kubernetes\":[{\"name\":\"pods\","
                                         "\"kind\":\"Pod\",\"jqFilter\":\".x\"}]}"},
        };
        heap_setup();
        for (size_t k = 0; k < AO_ARRAY_SIZE(kinds); k++) {
                const int sizes[] = {10000, 100000};
                for (size_t s = 0; s < AO_ARRAY_SIZE(sizes); s++) {
                        int n = sizes[s];
                        struct peaks p = measure(kinds[k].config, n);
                        /*
                         * The sort's pointer array, and glibc's qsort (before 2.37) takes a merge buffer of
                         * the same size; everything else is a chunk of the file and one item's walk.
                         */
                        long long pointers = 2LL * n * (long long) sizeof(void *);
                        long long beyond = p.new_path - pointers;
                        tap_diag(
                            "%s, %d items, %zu bytes of file: peak heap %lld bytes before, %lld streaming "
                            "(%lld beyond the %lld of pointer arrays)",
                            kinds[k].name, n, p.bytes, p.old_path, p.new_path, beyond, pointers);
                        tap_ok(beyond < 256 * 1024,
                               "memory, %s, %d items: streaming takes %lld bytes beyond the pointers (%lld "
                               "before)",
                               kinds[k].name, n, beyond, p.old_path);
                        tap_ok(p.new_path * 4 < p.old_path,
                               "memory, %s, %d items: a fraction of the tree path's peak", kinds[k].name, n);
                }
        }
}

int main(void)
{
        struct ao_log_options log = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_ERROR, .fd = -1};
        ao_log_setup(&log);
        jq = ao_jq_cache_new();
        test_same_bytes_v1();
        test_same_bytes_v0();
        test_write_error();
        test_memory();
        jq = ao_jq_cache_free(jq);
        return tap_done();
}
