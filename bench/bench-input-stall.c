/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How long one outside input keeps the event loop busy, and how much memory it takes there.
 *
 * Every fuzz target's corpus (fuzz/corpus/<target>/) is replayed through the code the operator runs
 * on its event loop for such an input, and so are inputs made here to reach each budget (a JSON
 * patch of copies, a schema reaching the validation step budget, YAML alias bombs, nesting at each
 * depth limit, the largest inputs each cap lets through, large honest documents). Each input is
 * timed with CLOCK_MONOTONIC (the minimum of a few repetitions, fewer for slow ones) and its peak
 * heap growth counted by the program's own malloc family.
 *
 * Output: one line per parser with its slowest corpus input (name, size, milliseconds, the ratio
 * to the 10 ms goal, the largest peak heap as a multiple of the input's size), then one line per
 * made input with the same columns and how the code answered (ok, or its error). "row:" lines
 * carry the worst of each part for bench/run's table.
 *
 * What counts as the loop's work for one input is the table `parsers` below, and nothing else
 * (as of the worker pool: hook output files, list pages and watch events of 64 KiB or more are
 * parsed off the loop, so their parse is in `prepare`):
 * `prepare` runs before the clock starts (what happens elsewhere: a worker thread, the kernel, a
 * state the operator already holds), `loop` is timed, `done` frees. Where parsing moves off the
 * loop, move its call from `loop` to `prepare`.
 *
 * Usage: bench-input-stall [--corpus DIR] [--only NAME] [--made-only] [--corpus-only] [--reps N]
 *                          [--skip TEXT]... [--file PATH --parser NAME [--tenants N]]
 * (DIR: the fuzz corpora, default fuzz/corpus from the source tree; NAME: a parser or made input;
 * --skip leaves out the made inputs whose name holds TEXT; --file runs one file through one parser,
 * against a store of N tenants for values-patch). Run from the source tree (bench/data/pod.json).
 */
#include <errno.h>
#include <getopt.h>
#include <h2o.h>
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/binding-context.h"
#include "ao/config-data.h"
#include "ao/cron.h"
#include "ao/debug-request.h"
#include "ao/helm-output.h"
#include "ao/helm-post-render.h"
#include "ao/helm-storage.h"
#include "ao/hook-config.h"
#include "ao/hook-run.h"
#include "ao/jq.h"
#include "ao/json-parse.h"
#include "ao/json-writer.h"
#include "ao/jsonpatch.h"
#include "ao/kube-discovery.h"
#include "ao/kube-watch.h"
#include "ao/kubeconfig.h"
#include "ao/log.h"
#include "ao/metric-ops.h"
#include "ao/metrics.h"
#include "ao/object-patch.h"
#include "ao/sandbox.h"
#include "ao/schema.h"
#include "ao/settings.h"
#include "ao/strbuf.h"
#include "ao/values-store.h"
#include "ao/values.h"
#include "ao/yaml.h"
#include "ao/zone.h"
#include "../src/proc/run.h"

#define GOAL_MS        10.0
#define REPS_DEFAULT   5
#define SLOW_MS        200.0 /* an input this slow is timed twice at most */
#define MODULE_KEY     "bench"
#define TENANTS        40    /* tenants in the module's values: about 14 KB, a busy module */
#define HONEST_TENANTS 21000 /* about 5 MB of values as YAML */
#define WATCH_FILTER   "{name: .metadata.name, labels: .metadata.labels}"

/* ---- heap: the program's own malloc family counts what is live (as tests/unit/test-watch-view.c) -- */

static bool counting;
static long long heap_now, heap_peak;
/* Time inside the loop's work spent on what the worker pool does (an offloaded watch event's parse). */
static double excluded_ms;

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_COUNTED false
#else
#define HEAP_COUNTED true
static void heap_add(long long n)
{
        if (!counting)
                return;
        heap_now += n;
        if (heap_now > heap_peak)
                heap_peak = heap_now;
}

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
#endif

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}
#define _cleanup_json_ _cleanup_(json_deletep)

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* ---- inputs -------------------------------------------------------------------------------------- */

struct input {
        const char *name;
        const char *data;
        size_t len;
        size_t tenants; /* the module's values in the store it meets: tenants (0: TENANTS) */
};

/* What the operator holds already when an input arrives: a store, a jq cache, a metrics registry. */
static struct {
        cJSON *values;                 /* the module's values, TENANTS tenants */
        cJSON *honest_values;          /* HONEST_TENANTS tenants, made when first needed */
        cJSON *schema;                 /* the module's openapi schema (config-values and values) */
        struct ao_values_store *store; /* for config edits: not changed by them */
        struct ao_jq_cache *jq;
        cJSON *pod;
} ctx;

/* ---- realistic values and their schema ------------------------------------------------------------ */

static cJSON *tenant(size_t i)
{
        char s[128];
        cJSON *t = cJSON_CreateObject();
        snprintf(s, sizeof(s), "tenant-%05zu", i);
        cJSON_AddStringToObject(t, "name", s);
        snprintf(s, sizeof(s), "ns-%05zu", i);
        cJSON_AddStringToObject(t, "namespace", s);
        cJSON_AddBoolToObject(t, "enabled", i % 7 != 0);
        cJSON *q = cJSON_AddObjectToObject(t, "quota");
        snprintf(s, sizeof(s), "%zu", 1 + i % 16);
        cJSON_AddStringToObject(q, "cpu", s);
        snprintf(s, sizeof(s), "%zuGi", 2 + i % 64);
        cJSON_AddStringToObject(q, "memory", s);
        cJSON_AddNumberToObject(q, "pods", (double) (10 + i % 200));
        cJSON *l = cJSON_AddObjectToObject(t, "labels");
        snprintf(s, sizeof(s), "team-%zu", i % 37);
        cJSON_AddStringToObject(l, "team", s);
        cJSON_AddStringToObject(l, "tier", i % 3 ? "standard" : "gold");
        cJSON *d = cJSON_AddArrayToObject(t, "domains");
        snprintf(s, sizeof(s), "t%05zu.apps.example.com", i);
        cJSON_AddItemToArray(d, cJSON_CreateString(s));
        snprintf(s, sizeof(s), "www.t%05zu.example.org", i);
        cJSON_AddItemToArray(d, cJSON_CreateString(s));
        return t;
}

static cJSON *realistic_values(size_t tenants)
{
        cJSON *v = cJSON_CreateObject();
        cJSON_AddNumberToObject(v, "replicas", 3);
        cJSON *img = cJSON_AddObjectToObject(v, "image");
        cJSON_AddStringToObject(img, "repository", "registry.example.com/platform/controller");
        cJSON_AddStringToObject(img, "tag", "v1.24.3");
        cJSON_AddStringToObject(img, "pullPolicy", "IfNotPresent");
        cJSON *res = cJSON_AddObjectToObject(v, "resources");
        cJSON *req = cJSON_AddObjectToObject(res, "requests");
        cJSON_AddStringToObject(req, "cpu", "100m");
        cJSON_AddStringToObject(req, "memory", "128Mi");
        cJSON *lim = cJSON_AddObjectToObject(res, "limits");
        cJSON_AddStringToObject(lim, "memory", "512Mi");
        cJSON *ts = cJSON_AddArrayToObject(v, "tenants");
        for (size_t i = 0; i < tenants; i++)
                cJSON_AddItemToArray(ts, tenant(i));
        cJSON_AddObjectToObject(v, "internal");
        return v;
}

static const cJSON *honest_values(void)
{
        if (!ctx.honest_values)
                ctx.honest_values = realistic_values(HONEST_TENANTS);
        return ctx.honest_values;
}

static const char schema_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"replicas\":{\"type\":\"integer\",\"minimum\":1,\"default\":1},"
    "\"image\":{\"type\":\"object\",\"properties\":{\"repository\":{\"type\":\"string\"},"
    "\"tag\":{\"type\":\"string\",\"pattern\":\"^v[0-9]+\\\\.[0-9]+\\\\.[0-9]+$\"},"
    "\"pullPolicy\":{\"type\":\"string\",\"enum\":[\"Always\",\"IfNotPresent\",\"Never\"]}}},"
    "\"resources\":{\"type\":\"object\",\"properties\":{\"requests\":{\"$ref\":\"#/definitions/quantities\"},"
    "\"limits\":{\"$ref\":\"#/definitions/quantities\"}}},"
    "\"tenants\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"name\",\"namespace\"],"
    "\"properties\":{\"name\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$\","
    "\"maxLength\":63},\"namespace\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$\"},"
    "\"enabled\":{\"type\":\"boolean\",\"default\":true},"
    "\"quota\":{\"type\":\"object\",\"properties\":{\"cpu\":{\"type\":\"string\"},\"memory\":{\"type\":"
    "\"string\","
    "\"pattern\":\"^[0-9]+(Mi|Gi)$\"},\"pods\":{\"type\":\"integer\",\"minimum\":0}}},"
    "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"domains\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"hostname\"}}}}},"
    "\"internal\":{\"type\":\"object\",\"additionalProperties\":true}},"
    "\"definitions\":{\"quantities\":{\"type\":\"object\",\"properties\":{\"cpu\":{\"type\":\"string\"},"
    "\"memory\":{\"type\":\"string\"}}}}}";

/* A store holding the module's section (its values and schema); @ret_section: that section. */
static struct ao_values_store *new_store(size_t tenants, struct ao_values_section **ret_section)
{
        struct ao_values_store *store = ao_values_store_new();
        struct ao_schema *schema = NULL;
        struct ao_error err = {0};
        if (ao_schema_from_json(ctx.schema, ctx.schema, &schema, &err) < 0) {
                fprintf(stderr, "bench schema: %s\n", err.msg);
                exit(1);
        }
        const cJSON *values = tenants == HONEST_TENANTS ? honest_values() : ctx.values;
        cJSON *own = tenants == HONEST_TENANTS || tenants == 0 ? cJSON_Duplicate(values, true)
                                                               : realistic_values(tenants);
        struct ao_values_section *section =
            ao_values_store_add_module_take(store, MODULE_KEY, MODULE_KEY "Enabled", own, 1, schema);
        if (ret_section)
                *ret_section = section;
        return store;
}

/* ---- the loop's work per parser -------------------------------------------------------------------- */

/* A copy of the input as a C string, for the parsers that take one. */
static char *text_of(const struct input *in)
{
        char *s = ao_xmalloc(in->len + 1);
        memcpy(s, in->data, in->len);
        s[in->len] = '\0';
        return s;
}

/* State that is the input itself: most parsers need nothing prepared. */
static void *prepare_input(const struct input *in)
{
        return (void *) in;
}

static void done_nothing(void *state)
{
        (void) state;
}

static void done_free(void *state)
{
        free(state);
}

/* binding-context: contexts queued for a hook are combined, then written as the run's file. */
struct contexts {
        cJSON *first, *more;
};

static void *prepare_contexts(const struct input *in)
{
        struct contexts *c = ao_xcalloc(1, sizeof(*c));
        cJSON *doc = NULL;
        if (ao_yaml_load(in->data, in->len, "input", &doc, NULL) < 0)
                return c;
        if (cJSON_IsArray(doc) && cJSON_GetArraySize(doc) == 2 && cJSON_IsArray(cJSON_GetArrayItem(doc, 0)) &&
            cJSON_IsArray(cJSON_GetArrayItem(doc, 1))) {
                c->more = cJSON_DetachItemFromArray(doc, 1);
                c->first = cJSON_DetachItemFromArray(doc, 0);
                cJSON_Delete(doc);
        } else {
                c->first = cJSON_CreateArray();
                c->more = cJSON_CreateArray();
                cJSON_AddItemToArray(c->more, doc);
        }
        return c;
}

static int loop_contexts(void *state, struct ao_error *err)
{
        struct contexts *c = state;
        if (!c->first)
                return ao_error_set(err, -EINVAL, "not loaded");
        ao_binding_contexts_combine(c->first, TAKE_PTR(c->more));
        struct ao_json_writer w;
        ao_json_writer_init(&w, -1);
        int r = ao_binding_contexts_write(c->first, NULL, &w);
        free(ao_json_writer_steal(&w));
        ao_json_writer_done(&w);
        return r;
}

static void done_contexts(void *state)
{
        struct contexts *c = state;
        cJSON_Delete(c->first);
        cJSON_Delete(c->more);
        free(c);
}

/* cli: NUL-separated words, NAME=value ones the environment (start-up, not the loop). */
struct words {
        char *buf;
        char **argv, **envp;
        int argc;
};

static void *prepare_cli(const struct input *in)
{
        struct words *w = ao_xcalloc(1, sizeof(*w));
        size_t n_env = 0;
        w->buf = text_of(in);
        w->argv = ao_xcalloc(in->len + 3, sizeof(char *));
        w->envp = ao_xcalloc(in->len + 2, sizeof(char *));
        w->argv[w->argc++] = (char *) "addon-operator";
        for (char *p = w->buf; p <= w->buf + in->len; p += strlen(p) + 1) {
                if (p[0] >= 'A' && p[0] <= 'Z' && strchr(p, '='))
                        w->envp[n_env++] = p;
                else
                        w->argv[w->argc++] = p;
        }
        return w;
}

static int loop_cli(void *state, struct ao_error *err)
{
        struct words *w = state;
        struct ao_cli cli;
        int r = ao_cli_parse(w->argc, w->argv, w->envp, &cli, err);
        if (r >= 0)
                ao_cli_done(&cli);
        return r;
}

static void done_cli(void *state)
{
        struct words *w = state;
        free(w->buf);
        free(w->argv);
        free(w->envp);
        free(w);
}

/*
 * config-data: a config edit. The document is decoded, its sections parsed (each a YAML string in
 * a ConfigMap) and validated against every module's config-values schema; an invalid one is refused.
 */
static int loop_config_data(void *state, struct ao_error *err)
{
        const struct input *in = state;
        _cleanup_json_ cJSON *raw = NULL, *parsed = NULL;
        int r = ao_yaml_load(in->data, in->len, "config.yaml", &raw, err);
        if (r < 0)
                return r;
        if (!cJSON_IsObject(raw))
                return ao_error_set(err, -EINVAL, "not a mapping");
        if ((r = ao_config_data_parse(raw, "ConfigMap default/addon-operator", &parsed, err)) < 0)
                return r;
        return ao_values_store_validate_config(ctx.store, parsed, err);
}

/* cron: a schedule's expression parsed, and its next time worked out as the scheduler does. */
static int loop_cron(void *state, struct ao_error *err)
{
        _cleanup_free_ char *s = text_of(state);
        struct ao_cron *c = NULL;
        int r = ao_cron_parse(s, &c, err);
        if (r < 0)
                return r;
        (void) ao_cron_next(c, 1767225599ULL * 1000000);
        ao_cron_free(c);
        return 0;
}

/* debug-request: h2o's normalisation (HTTP thread), then the route (main thread). */
static int loop_debug_request(void *state, struct ao_error *err)
{
        const struct input *in = state;
        h2o_mem_pool_t pool;
        size_t query_at = SIZE_MAX, *norm_indexes = NULL;
        h2o_mem_init_pool(&pool);
        h2o_iovec_t norm = h2o_url_normalize_path(&pool, in->data, in->len, &query_at, &norm_indexes);
        size_t path_len = norm.len;
        (void) ao_http_format_from_path(norm.base, &path_len);
        char *path = strndup(norm.base, path_len);
        char *query =
            query_at != SIZE_MAX ? strndup(in->data + query_at + 1, in->len - query_at - 1) : strdup("");
        struct ao_debug_request req;
        int r = ao_debug_request_parse(path, query, &req, err);
        free(path);
        free(query);
        h2o_mem_clear_pool(&pool);
        return r;
}

/* discovery: one group/version's resource list (byte 0: which one, and whether an APIGroupList). */
static int loop_discovery(void *state, struct ao_error *err)
{
        static const char *const gvs[] = {"v1", "apps/v1", "example.com/v1", "example.com/v1beta1"};
        const struct input *in = state;
        if (in->len < 1)
                return ao_error_set(err, -EINVAL, "empty");
        unsigned flags = (unsigned char) in->data[0];
        _cleanup_json_ cJSON *doc = ao_json_parse_all(in->data + 1, in->len - 1, NULL);
        struct ao_kube_discovery *d = ao_kube_discovery_new();
        int r = 0;
        if (flags & 4) {
                char **list = NULL;
                if (ao_kube_discovery_add_groups(d, doc, &list, err) >= 0) {
                        for (char **s = list; *s; s++)
                                free(*s);
                        free(list);
                }
        }
        r = ao_kube_discovery_add_resources(d, gvs[flags & 3], doc, err);
        ao_kube_discovery_free(d);
        return r;
}

/* helm-output: byte 0 picks the parser of helm's output (history, list, get values, version, manifest). */
static int loop_helm_output(void *state, struct ao_error *err)
{
        static const char selectors[] = "hlvVm";
        const struct input *in = state;
        if (in->len < 1)
                return ao_error_set(err, -EINVAL, "empty");
        const char *sel = memchr(selectors, in->data[0], 5);
        size_t which = sel ? (size_t) (sel - selectors) : (unsigned char) in->data[0] % 5;
        const char *text = in->data + 1;
        size_t len = in->len - 1;
        int r;
        if (which == 0) {
                struct ao_helm_revision rev;
                r = ao_helm_parse_history(text, len, &rev, err);
        } else if (which == 1) {
                char **names = NULL;
                const char *nl = memchr(text, '\n', AO_MIN(len, (size_t) 64));
                char ignore[65] = "";
                if (nl) {
                        memcpy(ignore, text, (size_t) (nl - text));
                        len -= (size_t) (nl - text) + 1;
                        text = nl + 1;
                }
                r = ao_helm_parse_list(text, len, ignore, &names, err);
                if (r >= 0)
                        ao_helm_names_free(names);
        } else if (which == 2) {
                char *sum = NULL;
                r = ao_helm_parse_values_checksum(text, len, &sum, err);
                free(sum);
        } else if (which == 3) {
                struct ao_helm_version v;
                r = ao_helm_parse_version(text, len, &v, err);
        } else {
                struct ao_helm_manifest m = {0};
                char sum[33];
                r = ao_helm_manifest_parse(text, len, &m, err);
                if (r >= 0)
                        ao_helm_manifest_clear(&m);
                ao_helm_checksum(text, len, sum);
        }
        return r;
}

/* helm-post-render: the label line, then the rendered manifest (in the post-renderer process). */
static int loop_post_render(void *state, struct ao_error *err)
{
        const struct input *in = state;
        const char *nl = memchr(in->data, '\n', in->len);
        size_t line = nl ? (size_t) (nl - in->data) : in->len;
        _cleanup_free_ char *labels_text = strndup(in->data, line);
        struct ao_helm_labels labels = {0};
        int r = ao_helm_labels_parse(labels_text, &labels, err);
        if (r < 0)
                return r;
        size_t skip = nl ? line + 1 : in->len;
        char *out = NULL;
        size_t out_len = 0;
        r = ao_helm_post_render(in->data + skip, in->len - skip, &labels, &out, &out_len, err);
        if (r >= 0)
                free(out);
        ao_helm_labels_clear(&labels);
        return r;
}

/* helm-storage: a release Secret's or ConfigMap's data (s, c), a whole object (S, C), or raw (r). */
static int loop_helm_storage(void *state, struct ao_error *err)
{
        static const char selectors[] = "scSCr";
        const struct input *in = state;
        if (in->len < 1)
                return ao_error_set(err, -EINVAL, "empty");
        const char *sel = memchr(selectors, in->data[0], 5);
        size_t which = sel ? (size_t) (sel - selectors) : (unsigned char) in->data[0] % 5;
        struct ao_helm_stored_release rel = {0};
        int r;
        if (which <= 1 || which == 4) {
                r = ao_helm_storage_decode("sh.helm.release.v1.x.v1", in->data + 1, in->len - 1, which != 1,
                                           &rel, err);
        } else {
                _cleanup_json_ cJSON *object = ao_json_parse_all(in->data + 1, in->len - 1, NULL);
                struct ao_helm_storage_meta meta = {0};
                if (!object)
                        return ao_error_set(err, -EINVAL, "not JSON");
                if (ao_helm_storage_labels(object, &meta, NULL) >= 0)
                        ao_helm_storage_meta_clear(&meta);
                r = ao_helm_storage_read(object, which == 2, &rel, err);
        }
        if (r >= 0)
                ao_helm_stored_release_clear(&rel);
        return r;
}

/* hook-config: a hook's --config output (a module hook's when it starts with "# module"). */
static int loop_hook_config(void *state, struct ao_error *err)
{
        const struct input *in = state;
        enum ao_hook_kind kind =
            in->len >= 9 && memcmp(in->data, "# module\n", 9) == 0 ? AO_HOOK_MODULE : AO_HOOK_GLOBAL;
        struct ao_hook_config cfg;
        int r = ao_hook_config_parse(in->data, in->len, "hook.sh", kind, &cfg, err);
        if (r >= 0)
                ao_hook_config_done(&cfg);
        return r;
}

/* hook-output: a hook's stdout and stderr cut into lines and logged, as the fuzz target frames it. */
static int loop_hook_output(void *state, struct ao_error *err)
{
        static const size_t line_caps[] = {16, 100, 1024, 4096};
        const struct input *in = state;
        if (in->len < 2)
                return ao_error_set(err, -EINVAL, "short");
        struct run_env *env = ao_xcalloc(1, sizeof(*env));
        struct ao_proc_run *run = ao_xcalloc(1, sizeof(*run));
        unsigned opts = (unsigned char) in->data[0];
        env->options = (struct ao_proc_options){
            .line_max = line_caps[(opts >> 1) & 3], .output_max = 0, .join_json_lines = opts & 1};
        run->env = env;
        run->log_context.ctx.hook = "hooks/bench";
        for (int i = 0; i < 2; i++)
                proc_output_init(&run->out[i], &env->pool, (enum ao_proc_stream) i, NULL, NULL);
        /* The loop reads a pipe 64 KiB at a time. */
        const char *out = in->data + 2;
        size_t left = in->len - 2;
        for (int i = 0; left > 0; i++) {
                size_t n = AO_MIN(left, (size_t) 64 * 1024);
                proc_run_output_feed(run, (opts & 8) ? (enum ao_proc_stream)(i % 2) : AO_PROC_STDOUT, out, n);
                out += n;
                left -= n;
        }
        for (int i = 0; i < 2; i++)
                proc_run_output_end(run, (enum ao_proc_stream) i);
        free(run);
        free(env);
        return 0;
}

/*
 * jsonpatch: the fuzz target's document and patch (split at a NUL or "\n---\n"). The patch is
 * parsed with the run's other outputs on the worker pool; on the loop it is applied to the
 * document, which stands for the values it meets: ao_values_store_check_patch()'s work without
 * the scope check (which only cuts it short) and the schema.
 */
struct doc_patch {
        cJSON *doc;
        cJSON *ops;
        int parsed; /* the parse's code */
        struct ao_error parse_error;
        unsigned flags;
};

static void *prepare_doc_patch(const struct input *in)
{
        struct doc_patch *dp = ao_xcalloc(1, sizeof(*dp));
        if (in->len < 1)
                return dp;
        dp->flags = in->data[0] & 1 ? AO_JSONPATCH_IGNORE_MISSING : 0;
        const char *data = in->data + 1;
        size_t size = in->len - 1, sep_len = 1;
        const char *sep = memchr(data, '\0', size);
        if (!sep) {
                sep = memmem(data, size, "\n---\n", 5);
                sep_len = 5;
        }
        size_t doc_len = sep ? (size_t) (sep - data) : 0;
        const char *patch = sep ? sep + sep_len : data;
        size_t patch_len = sep ? size - doc_len - sep_len : size;
        dp->parsed = ao_jsonpatch_parse(patch, patch_len, "values.json-patch", &dp->ops, &dp->parse_error);
        if (ao_yaml_load(data, doc_len, "doc.yaml", &dp->doc, NULL) < 0)
                dp->doc = NULL;
        return dp;
}

static int loop_doc_patch(void *state, struct ao_error *err)
{
        struct doc_patch *dp = state;
        if (dp->parsed < 0) {
                *err = dp->parse_error;
                return dp->parsed;
        }
        if (!dp->doc || !dp->ops)
                return ao_error_set(err, -EINVAL, "empty");
        return ao_jsonpatch_apply(dp->doc, dp->ops, dp->flags, err);
}

static void done_doc_patch(void *state)
{
        struct doc_patch *dp = state;
        cJSON_Delete(dp->doc);
        cJSON_Delete(dp->ops);
        free(dp);
}

/* kubeconfig: byte 0 modulo 3: the current context, the context "fuzz", an ExecCredential (start-up). */
static int loop_kubeconfig(void *state, struct ao_error *err)
{
        const struct input *in = state;
        if (in->len < 1)
                return ao_error_set(err, -EINVAL, "empty");
        _cleanup_free_ char *text = strndup(in->data + 1, in->len - 1);
        int r;
        if (in->data[0] % 3 == 2) {
                struct ao_kube_exec_credential c = {0};
                r = ao_kube_exec_credential_parse(text, in->len - 1, &c, err);
                if (r >= 0)
                        ao_kube_exec_credential_done(&c);
        } else {
                struct ao_kube_config cfg = {0};
                r = ao_kubeconfig_parse(text, in->len - 1, "/fuzz/kubeconfig",
                                        in->data[0] % 3 ? "fuzz" : NULL, &cfg, err);
                if (r >= 0)
                        ao_kube_config_done(&cfg);
        }
        return r;
}

/* label-selector: a selector in a binding of a hook's configuration (byte 0: where). */
static int loop_label_selector(void *state, struct ao_error *err)
{
        const struct input *in = state;
        if (in->len < 1)
                return ao_error_set(err, -EINVAL, "empty");
        cJSON *selector = NULL;
        int r = ao_yaml_load(in->data + 1, in->len - 1, "selector", &selector, err);
        if (r < 0)
                return r;
        _cleanup_json_ cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "configVersion", "v1");
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "apiVersion", "v1");
        cJSON_AddStringToObject(b, "kind", "Pod");
        unsigned where = (unsigned char) in->data[0] % 3;
        if (where == 1)
                cJSON_AddItemToObject(cJSON_AddObjectToObject(b, "namespace"), "labelSelector", selector);
        else
                cJSON_AddItemToObject(b, where == 2 ? "fieldSelector" : "labelSelector", selector);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "kubernetes"), b);
        struct ao_hook_config cfg;
        r = ao_hook_config_from_json(doc, "hook.sh", AO_HOOK_GLOBAL, &cfg, err);
        if (r >= 0)
                ao_hook_config_done(&cfg);
        return r;
}

/*
 * metric-ops: a hook's METRICS_PATH, parsed on the worker pool with the run's other outputs, then
 * applied on the loop to the operator's registry of hook metrics.
 */
struct metrics_input {
        struct ao_metrics *registry;
        struct ao_metric_ops ops;
        int parsed;
        struct ao_error parse_error;
};

static void *prepare_metrics(const struct input *in)
{
        struct metrics_input *mi = ao_xcalloc(1, sizeof(*mi));
        mi->registry = ao_metrics_new("addon_operator_");
        mi->parsed = ao_metric_ops_parse(in->data, in->len, "metrics.json", &mi->ops, &mi->parse_error);
        return mi;
}

static const struct input *current_input; /* for the parsers whose state is not the input */

static int loop_metrics(void *state, struct ao_error *err)
{
        struct metrics_input *mi = state;
        if (mi->parsed < 0) {
                *err = mi->parse_error;
                return mi->parsed;
        }
        return ao_metrics_apply_hook_ops(mi->registry, &mi->ops, "hook.sh", MODULE_KEY, err);
}

static void done_metrics(void *state)
{
        struct metrics_input *mi = state;
        ao_metric_ops_done(&mi->ops);
        ao_metrics_free(mi->registry);
        free(mi);
}

/* names: a module directory's name and the values keys it gives (start-up). */
static int loop_names(void *state, struct ao_error *err)
{
        _cleanup_free_ char *s = text_of(state);
        struct ao_module_name n;
        int r = ao_module_name_parse(s, 1, &n, err);
        if (r >= 0)
                ao_module_name_done(&n);
        char *m = NULL;
        (void) ao_values_key_classify(s, &m, NULL);
        free(m);
        return r;
}

/*
 * object-patch: a hook's KUBERNETES_PATCH_PATH, parsed on the worker pool with the run's other
 * outputs; the loop only resolves the operations' kinds from discovery (a table look-up each),
 * which this leaves out: nothing of it counts.
 */
struct object_patch_input {
        struct ao_object_patch_ops ops;
        int parsed;
        struct ao_error parse_error;
};

static void *prepare_object_patch(const struct input *in)
{
        struct object_patch_input *op = ao_xcalloc(1, sizeof(*op));
        op->parsed = ao_object_patch_parse(in->data, in->len, &op->ops, &op->parse_error);
        return op;
}

static int loop_object_patch(void *state, struct ao_error *err)
{
        struct object_patch_input *op = state;
        if (op->parsed < 0)
                *err = op->parse_error;
        return op->parsed;
}

static void done_object_patch(void *state)
{
        struct object_patch_input *op = state;
        if (op->parsed >= 0)
                ao_object_patch_ops_done(&op->ops);
        free(op);
}

/* sandbox-profile: a profile parsed and its filter compiled (start-up). */
static int loop_sandbox_profile(void *state, struct ao_error *err)
{
        const struct input *in = state;
        struct ao_sandbox_profile *p = NULL;
        int r = ao_sandbox_profile_parse("bench", in->data, in->len, NULL, &p, err);
        ao_sandbox_profile_free(p);
        return r;
}

/* schema: the fuzz target's schema and value (split at a NUL; no NUL: the value is {}). */
struct schema_value {
        cJSON *schema, *extending, *value;
        struct ao_schema *loaded; /* for schema-validate */
};

static void *prepare_schema_value(const struct input *in)
{
        struct schema_value *sv = ao_xcalloc(1, sizeof(*sv));
        const char *nul = memchr(in->data, '\0', in->len);
        size_t schema_len = nul ? (size_t) (nul - in->data) : in->len;
        if (ao_yaml_load(in->data, schema_len, "values.yaml", &sv->schema, NULL) < 0)
                return sv;
        if (nul && ao_yaml_load(nul + 1, in->len - schema_len - 1, "value.yaml", &sv->value, NULL) < 0) {
                cJSON_Delete(TAKE_PTR(sv->schema));
                return sv;
        }
        if (!sv->value)
                sv->value = cJSON_CreateObject();
        /* The document as a values schema extending itself, so that x-extend runs too. */
        sv->extending = cJSON_Duplicate(sv->schema, true);
        if (cJSON_IsObject(sv->extending) && !cJSON_GetObjectItem(sv->extending, "x-extend"))
                cJSON_AddItemToObject(sv->extending, "x-extend",
                                      cJSON_Parse("{\"schema\":\"config-values.yaml\"}"));
        return sv;
}

/* schema-load: a module's openapi/ schemas loaded (module discovery). */
static int loop_schema_load(void *state, struct ao_error *err)
{
        struct schema_value *sv = state;
        if (!sv->schema)
                return ao_error_set(err, -EINVAL, "not loaded");
        struct ao_schema *s = NULL;
        int r = ao_schema_from_json(sv->schema, sv->extending, &s, err);
        ao_schema_free(s);
        return r;
}

static void *prepare_schema_loaded(const struct input *in)
{
        struct schema_value *sv = prepare_schema_value(in);
        if (sv->schema && ao_schema_from_json(sv->schema, sv->extending, &sv->loaded, NULL) < 0)
                sv->loaded = NULL;
        return sv;
}

/* schema-validate: a value checked against the values schema (x-extend applied), as a patch result is. */
static int loop_schema_validate(void *state, struct ao_error *err)
{
        struct schema_value *sv = state;
        if (!sv->loaded)
                return ao_error_set(err, -EINVAL, "schema not loaded");
        char *errors = NULL;
        int r = ao_schema_validate(sv->loaded, AO_SCHEMA_VALUES, MODULE_KEY, sv->value, &errors);
        if (r < 0)
                ao_error_set(err, r, "%s", errors ? errors : "invalid");
        free(errors);
        return r;
}

static void done_schema_value(void *state)
{
        struct schema_value *sv = state;
        cJSON_Delete(sv->schema);
        cJSON_Delete(sv->extending);
        cJSON_Delete(sv->value);
        ao_schema_free(sv->loaded);
        free(sv);
}

/* What the decoder's handlers share: the error, and a line handed over for the worker pool. */
struct offloaded_line {
        char *line;
        size_t len, ordinal;
};

struct watch_ctx {
        struct ao_error *err;
        struct offloaded_line offloaded;
};

/* watch-stream and kube-list: an event's (an item's) object through a binding's jqFilter. */
static int on_watch_event(struct ao_watch_event *ev, void *userdata)
{
        struct watch_ctx *w = userdata;
        struct ao_error *err = w->err;
        cJSON *result = NULL;
        char *text = NULL;
        int r = ao_jq_apply(ctx.jq, WATCH_FILTER, ev->object, &result, &text, err);
        cJSON_Delete(result);
        free(text);
        cJSON_Delete(ev->object);
        return r < 0 && r != -EINVAL ? r : 0; /* a filter error skips the object */
}

/* The informer's threshold: events from this size on are parsed on the worker pool. */
#define WATCH_OFFLOAD_MIN (64 * 1024)

static void on_offload(char *line, size_t len, size_t ordinal, void *userdata)
{
        struct watch_ctx *w = userdata;
        w->offloaded = (struct offloaded_line){line, len, ordinal};
}

/* An offloaded line parsed as a job would, its time left out of the loop's; then handed back. */
static int parse_offloaded(struct ao_watch_decoder *d, struct offloaded_line *o, struct ao_error *err)
{
        struct ao_watch_event ev = {0};
        double start = now_ms();
        int parsed = ao_watch_event_parse(o->line, o->len, o->ordinal, &ev, err);
        free(o->line);
        *o = (struct offloaded_line){0};
        excluded_ms += now_ms() - start;
        return ao_watch_decoder_resume(d, parsed, &ev, err);
}

/*
 * watch-stream: a watch body through the informer's decoder, events of 64 KiB or more parsed on
 * the worker pool (left out), each event's object then through a binding's jqFilter on the loop.
 */
static int loop_watch(void *state, struct ao_error *err)
{
        const struct input *in = state;
        if (in->len < 1)
                return ao_error_set(err, -EINVAL, "empty");
        struct watch_ctx w = {.err = err};
        struct ao_watch_decoder *d = ao_watch_decoder_new(0, on_watch_event, &w);
        ao_watch_decoder_set_offload(d, WATCH_OFFLOAD_MIN, on_offload);
        int r = ao_watch_decoder_feed(d, in->data + 1, in->len - 1, err);
        while (r == AO_WATCH_DECODER_BUSY)
                r = parse_offloaded(d, &w.offloaded, err);
        if (r >= 0)
                r = ao_watch_decoder_finish(d, err);
        free(w.offloaded.line);
        ao_watch_decoder_free(d);
        return r;
}

/*
 * kube-list: the same bodies as a LIST response (byte 0 bit 5: the kind is given). Every page is
 * parsed on the worker pool; the loop takes its items, each through a binding's jqFilter.
 */
struct list_input {
        struct ao_kube_list list;
        int parsed;
        struct ao_error parse_error;
};

static void *prepare_kube_list(const struct input *in)
{
        struct list_input *li = ao_xcalloc(1, sizeof(*li));
        bool kind = in->len > 0 && (in->data[0] & 32);
        li->parsed = in->len < 1
                         ? ao_error_set(&li->parse_error, -EINVAL, "empty")
                         : ao_kube_list_parse(in->data + 1, in->len - 1, kind ? "Thing" : NULL,
                                              kind ? "example.com/v1" : NULL, &li->list, &li->parse_error);
        return li;
}

static int loop_kube_list(void *state, struct ao_error *err)
{
        struct list_input *li = state;
        if (li->parsed < 0) {
                *err = li->parse_error;
                return li->parsed;
        }
        for (const cJSON *item = li->list.items ? li->list.items->child : NULL; item; item = item->next) {
                cJSON *result = NULL;
                char *text = NULL;
                int r = ao_jq_apply(ctx.jq, WATCH_FILTER, item, &result, &text, err);
                cJSON_Delete(result);
                free(text);
                if (r < 0 && r != -EINVAL)
                        return r;
        }
        return 0;
}

static void done_kube_list(void *state)
{
        struct list_input *li = state;
        if (li->parsed >= 0)
                ao_kube_list_done(&li->list);
        free(li);
}

/* yaml: a YAML document loaded (values.yaml files, config sections, --config output). */
static int loop_yaml(void *state, struct ao_error *err)
{
        const struct input *in = state;
        _cleanup_json_ cJSON *json = NULL;
        return ao_yaml_load(in->data, in->len, "values.yaml", &json, err);
}

/* zone: a TZif file read for a TZ= schedule. */
static int loop_zone(void *state, struct ao_error *err)
{
        const struct input *in = state;
        struct ao_zone *z = NULL;
        int r = ao_zone_parse("Bench/Zone", in->data, in->len, &z, err);
        ao_zone_free(z);
        return r;
}

/*
 * values-patch: a hook's VALUES_JSON_PATCH_PATH, as the operator takes it after the run: parsed,
 * scope-checked for the module, checked against the store (the module's values composed, the patch
 * applied to a copy, the result validated), then applied the same way, with the values checksums
 * the operator takes around it.
 */
struct store_section {
        struct ao_values_store *store;
        struct ao_values_section *section;
        cJSON *ops; /* the patch, parsed and scope-checked on the worker pool */
        int parsed;
        struct ao_error parse_error;
};

static void *prepare_values_patch(const struct input *in)
{
        struct store_section *ss = ao_xcalloc(1, sizeof(*ss));
        ss->store = new_store(in->tenants, &ss->section);
        ss->parsed = ao_jsonpatch_parse(in->data, in->len, "values.json-patch", &ss->ops, &ss->parse_error);
        if (ss->parsed >= 0)
                ss->parsed =
                    ao_hook_patch_check_scope(ss->ops, MODULE_KEY, "values.json-patch", &ss->parse_error);
        return ss;
}

static int loop_values_patch(void *state, struct ao_error *err)
{
        struct store_section *ss = state;
        struct ao_values_store *store = ss->store;
        struct ao_values_section *section = ss->section;
        const cJSON *ops = ss->ops;
        if (ss->parsed < 0) {
                *err = ss->parse_error;
                return ss->parsed;
        }
        int r = ao_values_store_check_patch(store, section, ops, err);
        if (r < 0)
                return r;
        free(ao_values_store_checksum(store, section));
        r = ao_values_store_apply_patch(store, section, ops, err);
        free(ao_values_store_checksum(store, section));
        return r;
}

static void done_values_patch(void *state)
{
        struct store_section *ss = state;
        cJSON_Delete(ss->ops);
        ao_values_store_free(ss->store);
        free(ss);
}

/*
 * values-compose: the input is a patch a hook returned earlier, now stored; the loop's work is
 * what every later run of the module's hooks pays: its values composed (the stored operations
 * replayed) and checksummed.
 */
static void *prepare_compose(const struct input *in)
{
        struct store_section *ss = prepare_values_patch(in);
        if (ss->parsed < 0 || ao_values_store_apply_patch(ss->store, ss->section, ss->ops, NULL) < 0)
                fprintf(stderr, "values-compose: the patch does not apply\n");
        return ss;
}

static int loop_compose(void *state, struct ao_error *err)
{
        struct store_section *ss = state;
        _cleanup_json_ cJSON *values = NULL;
        int r = ao_values_store_values(ss->store, ss->section, &values, err);
        free(ao_values_store_checksum(ss->store, ss->section));
        return r;
}

/* jq-filter: a binding's jqFilter on one object (compiled already: the cache holds it). */
static void *prepare_jq(const struct input *in)
{
        char *filter = text_of(in);
        cJSON *result = NULL;
        if (ao_jq_apply(ctx.jq, filter, ctx.pod, &result, NULL, NULL) >= 0)
                cJSON_Delete(result);
        return filter;
}

static int loop_jq(void *state, struct ao_error *err)
{
        cJSON *result = NULL;
        char *text = NULL;
        int r = ao_jq_apply(ctx.jq, state, ctx.pod, &result, &text, err);
        cJSON_Delete(result);
        free(text);
        return r;
}

/*
 * THE TABLE: parser -> the event loop's work for one input. `corpus` is the fuzz target whose
 * corpus is replayed (NULL: made inputs only); `where` says when the operator runs it.
 */
struct parser {
        const char *name;
        const char *corpus;
        const char *where;
        void *(*prepare)(const struct input *in);
        int (*loop)(void *state, struct ao_error *err);
        void (*done)(void *state);
};

static const struct parser parsers[] = {
    {"binding-context", "binding-context", "hook start", prepare_contexts, loop_contexts, done_contexts},
    {"cli", "cli", "start-up", prepare_cli, loop_cli, done_cli},
    {"config-data", "config-data", "config edit", prepare_input, loop_config_data, done_nothing},
    {"cron", "cron", "hook load", prepare_input, loop_cron, done_nothing},
    {"debug-request", "debug-request", "debug request", prepare_input, loop_debug_request, done_nothing},
    {"discovery", "discovery", "discovery refresh", prepare_input, loop_discovery, done_nothing},
    {"helm-output", "helm-output", "helm run end", prepare_input, loop_helm_output, done_nothing},
    {"helm-post-render", "helm-post-render", "post-renderer process", prepare_input, loop_post_render,
     done_nothing},
    {"helm-storage", "helm-storage", "release watch event", prepare_input, loop_helm_storage, done_nothing},
    {"hook-config", "hook-config", "hook load", prepare_input, loop_hook_config, done_nothing},
    {"hook-output", "hook-output", "hook output read", prepare_input, loop_hook_output, done_nothing},
    {"jsonpatch", "jsonpatch", "hook run end", prepare_doc_patch, loop_doc_patch, done_doc_patch},
    {"kubeconfig", "kubeconfig", "start-up", prepare_input, loop_kubeconfig, done_nothing},
    {"label-selector", "label-selector", "hook load", prepare_input, loop_label_selector, done_nothing},
    {"metric-ops", "metric-ops", "hook run end", prepare_metrics, loop_metrics, done_metrics},
    {"names", "names", "start-up", prepare_input, loop_names, done_nothing},
    {"object-patch", "object-patch", "hook run end", prepare_object_patch, loop_object_patch,
     done_object_patch},
    {"sandbox-profile", "sandbox-profile", "start-up", prepare_input, loop_sandbox_profile, done_nothing},
    {"schema-load", "schema", "module discovery", prepare_schema_value, loop_schema_load, done_schema_value},
    {"schema-validate", "schema", "values change", prepare_schema_loaded, loop_schema_validate,
     done_schema_value},
    {"watch-stream", "watch-stream", "watch read", prepare_input, loop_watch, done_nothing},
    {"kube-list", "watch-stream", "list page", prepare_kube_list, loop_kube_list, done_kube_list},
    {"yaml", "yaml", "values.yaml load", prepare_input, loop_yaml, done_nothing},
    {"zone", "zone", "hook load", prepare_input, loop_zone, done_nothing},
    {"values-patch", NULL, "hook run end", prepare_values_patch, loop_values_patch, done_values_patch},
    {"values-compose", NULL, "every hook run", prepare_compose, loop_compose, done_values_patch},
    {"jq-filter", NULL, "watch event", prepare_jq, loop_jq, done_free},
};

static const struct parser *find_parser(const char *name)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(parsers); i++)
                if (strcmp(parsers[i].name, name) == 0)
                        return &parsers[i];
        return NULL;
}

/* ---- made inputs ----------------------------------------------------------------------------------- */

/* A text built by a maker: owned by the caller. */
struct made {
        char *data;
        size_t len;
};

static struct made made_of(struct ao_strbuf *sb)
{
        size_t len = sb->len;
        return (struct made){ao_strbuf_steal(sb), len};
}

/* ~1 KB: an object copied into itself until the copy budget is spent (each copy doubles it). */
static struct made make_copy_bomb(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "[{\"op\":\"add\",\"path\":\"/" MODULE_KEY
                              "/internal/x\",\"value\":{\"a\":[1,2,3,4,5,6,7]}}");
        for (int i = 0; i < 28; i++)
                ao_strbuf_appendf(&sb,
                                  ",\n{\"op\":\"copy\",\"from\":\"/" MODULE_KEY
                                  "/internal/x\",\"path\":\"/" MODULE_KEY "/internal/x/c%d\"}",
                                  i);
        ao_strbuf_append(&sb, "]\n");
        return made_of(&sb);
}

/* The whole module section copied into itself: the same budget reached from the store's values. */
static struct made make_copy_section(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "[");
        for (int i = 0; i < 24; i++)
                ao_strbuf_appendf(&sb,
                                  "%s{\"op\":\"copy\",\"from\":\"/" MODULE_KEY
                                  "/tenants\",\"path\":\"/" MODULE_KEY "/tenants/-\"}",
                                  i ? ",\n" : "");
        ao_strbuf_append(&sb, "]\n");
        return made_of(&sb);
}

/* @n operations of @kind: honest ones (add distinct keys), at most AO_JSONPATCH_MAX_OPS. */
static struct made make_many_adds(size_t n, size_t value_len)
{
        struct ao_strbuf sb = {0};
        char *value = ao_xmalloc(value_len + 1);
        memset(value, 'v', value_len);
        value[value_len] = '\0';
        for (size_t i = 0; i < n; i++)
                ao_strbuf_appendf(
                    &sb, "{\"op\":\"add\",\"path\":\"/" MODULE_KEY "/internal/k%zu\",\"value\":\"%s\"}\n", i,
                    value);
        free(value);
        return made_of(&sb);
}

static struct made make_patch_100k_ops(void)
{
        return make_many_adds(AO_JSONPATCH_MAX_OPS, 8);
}

/* 16 MiB of patch: as many 4 KiB string values as fit. */
static struct made make_patch_16mib(void)
{
        size_t one = 4096 + 64;
        return make_many_adds(AO_JSONPATCH_MAX_INPUT / one, 4096);
}

/* A value nested AO_JSONPATCH_MAX_DEPTH - 2 deep, added below the module key. */
static struct made make_patch_deep(void)
{
        struct ao_strbuf sb = {0};
        size_t depth = AO_JSONPATCH_MAX_DEPTH - 3;
        ao_strbuf_append(&sb, "[{\"op\":\"add\",\"path\":\"/" MODULE_KEY "/internal/deep\",\"value\":");
        for (size_t i = 0; i < depth; i++)
                ao_strbuf_append(&sb, "{\"a\":");
        ao_strbuf_append(&sb, "1");
        for (size_t i = 0; i < depth; i++)
                ao_strbuf_append_c(&sb, '}');
        ao_strbuf_append(&sb, "}]\n");
        return made_of(&sb);
}

/* A small patch against the store of ~5 MB values: the work is the values', not the patch's. */
static struct made make_patch_small(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "[{\"op\":\"replace\",\"path\":\"/" MODULE_KEY "/replicas\",\"value\":5}]\n");
        return made_of(&sb);
}

/* Tests of the module's whole list of tenants, 1,000 times: each compares all of it with the patch's copy. */
static struct made make_patch_tests(void)
{
        struct ao_strbuf sb = {0};
        _cleanup_free_ char *tenants =
            ao_json_canonical(cJSON_GetObjectItemCaseSensitive(ctx.values, "tenants"));
        ao_strbuf_append(&sb, "[");
        for (int i = 0; i < 1000; i++)
                ao_strbuf_appendf(&sb,
                                  "%s{\"op\":\"test\",\"path\":\"/" MODULE_KEY "/tenants\",\"value\":%s}",
                                  i ? "," : "", tenants);
        ao_strbuf_append(&sb, "]\n");
        return made_of(&sb);
}

/*
 * Schema: at each level of the value, anyOf tries a branch that validates the whole rest of the
 * value and then fails, then the same without the failing part: the work doubles per level until
 * the step budget stops it.
 */
static struct made make_schema_steps(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "{\"definitions\":{"
                              "\"n\":{\"type\":\"object\",\"properties\":{\"a\":{\"anyOf\":["
                              "{\"$ref\":\"#/definitions/f\"},{\"$ref\":\"#/definitions/n\"}]}}},"
                              "\"f\":{\"allOf\":[{\"$ref\":\"#/definitions/n\"},{\"required\":[\"zzz\"]}]}},"
                              "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/definitions/n\"}}}");
        ao_strbuf_append_c(&sb, '\0');
        for (int i = 0; i < 40; i++)
                ao_strbuf_append(&sb, "{\"a\":");
        ao_strbuf_append(&sb, "{}");
        for (int i = 0; i < 40; i++)
                ao_strbuf_append_c(&sb, '}');
        return made_of(&sb);
}

/* Schema: definitions that each hold two $refs to the next: expansion doubles at each level. */
static struct made make_schema_expand(void)
{
        struct ao_strbuf sb = {0};
        int levels = 24;
        ao_strbuf_append(
            &sb,
            "{\"type\":\"object\",\"properties\":{\"x\":{\"$ref\":\"#/definitions/d0\"}},\"definitions\":{");
        for (int i = 0; i < levels; i++)
                ao_strbuf_appendf(
                    &sb,
                    "\"d%d\":{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/definitions/d%d\"},"
                    "\"b\":{\"$ref\":\"#/definitions/d%d\"}}},",
                    i, i + 1, i + 1);
        ao_strbuf_appendf(&sb, "\"d%d\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}}}", levels);
        return made_of(&sb);
}

/* Schema nested to the depth limit. */
static struct made make_schema_deep(void)
{
        struct ao_strbuf sb = {0};
        int depth = AO_YAML_MAX_DEPTH / 2 - 2; /* two YAML levels per schema level */
        for (int i = 0; i < depth; i++)
                ao_strbuf_append(&sb, "{\"type\":\"object\",\"properties\":{\"a\":");
        ao_strbuf_append(&sb, "{\"type\":\"string\"}");
        for (int i = 0; i < depth; i++)
                ao_strbuf_append(&sb, "}}");
        ao_strbuf_append_c(&sb, '\0');
        for (int i = 0; i < depth; i++)
                ao_strbuf_append(&sb, "{\"a\":");
        ao_strbuf_append(&sb, "\"x\"");
        for (int i = 0; i < depth; i++)
                ao_strbuf_append_c(&sb, '}');
        return made_of(&sb);
}

/* The realistic schema with 5 MB of honest values. */
static struct made make_schema_honest(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, schema_text);
        ao_strbuf_append_c(&sb, '\0');
        char *values = ao_json_canonical(honest_values());
        ao_strbuf_append(&sb, values);
        free(values);
        return made_of(&sb);
}

/*
 * YAML billion laughs: each level a list of @fan aliases of the one before, as many own nodes as
 * the aliasing ratio needs to let the expansion reach @target nodes.
 */
static struct made make_alias_bomb(size_t own_nodes, size_t fan, int levels)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "pad: [");
        for (size_t i = 0; i < own_nodes; i++)
                ao_strbuf_appendf(&sb, "%s%zu", i ? "," : "", i % 10);
        ao_strbuf_append(&sb, "]\nl0: &l0 [a, b, c, d, e, f, g, h]\n");
        for (int l = 1; l <= levels; l++) {
                ao_strbuf_appendf(&sb, "l%d: &l%d [", l, l);
                for (size_t i = 0; i < fan; i++)
                        ao_strbuf_appendf(&sb, "%s*l%d", i ? "," : "", l - 1);
                ao_strbuf_append(&sb, "]\n");
        }
        return made_of(&sb);
}

static struct made make_alias_small(void)
{
        return make_alias_bomb(0, 9, 9);
}

/* Enough own nodes for the ratio to allow ~400,000 nodes (99% aliased) */
static struct made make_alias_nodes(void)
{
        return make_alias_bomb(4100, 8, 8);
}

/* Alias copies of one long string until the alias byte budget. */
static struct made make_alias_bytes(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "s: &s ");
        for (int i = 0; i < 60000; i++)
                ao_strbuf_append_c(&sb, 'x');
        ao_strbuf_append(&sb, "\nl: [");
        for (int i = 0; i < 200; i++)
                ao_strbuf_append(&sb, i ? ",*s" : "*s");
        ao_strbuf_append(&sb, "]\n");
        return made_of(&sb);
}

/* Merge keys: each mapping merges the one before, doubling with two '<<' sources. */
static struct made make_merge_bomb(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "m0: &m0 {a0: 1, b0: 2}\n");
        for (int l = 1; l <= 20; l++)
                ao_strbuf_appendf(&sb, "m%d: &m%d {<<: *m%d, k%d: {<<: *m%d}}\n", l, l, l - 1, l, l - 1);
        return made_of(&sb);
}

static struct made make_yaml_deep(void)
{
        struct ao_strbuf sb = {0};
        for (unsigned i = 0; i < AO_YAML_MAX_DEPTH; i++)
                ao_strbuf_append(&sb, "[");
        for (unsigned i = 0; i < AO_YAML_MAX_DEPTH; i++)
                ao_strbuf_append(&sb, "]");
        ao_strbuf_append_c(&sb, '\n');
        return made_of(&sb);
}

/* The honest values as a YAML values.yaml (block style, as people write it). */
static struct made make_values_yaml(void)
{
        _cleanup_json_ cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, MODULE_KEY, cJSON_Duplicate(honest_values(), true));
        char *text = ao_yaml_emit(doc);
        return (struct made){text, strlen(text)};
}

/* A config file (or ConfigMap) with the honest values as the module's section. */
static struct made make_config_honest(void)
{
        _cleanup_json_ cJSON *doc = cJSON_CreateObject();
        _cleanup_json_ cJSON *section = cJSON_CreateObject();
        char *values = ao_yaml_emit(honest_values());
        cJSON_AddStringToObject(doc, MODULE_KEY, values);
        cJSON_AddStringToObject(doc, MODULE_KEY "Enabled", "true");
        free(values);
        char *text = ao_yaml_emit(doc);
        return (struct made){text, strlen(text)};
}

/* A config section that is an alias bomb, as a ConfigMap edit. */
static struct made make_config_alias(void)
{
        struct made bomb = make_alias_nodes();
        _cleanup_json_ cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, MODULE_KEY, bomb.data);
        free(bomb.data);
        char *text = ao_json_canonical(doc);
        return (struct made){text, strlen(text)};
}

/* METRICS_PATH at its byte cap: gauge sets of distinct series, one per line. */
static struct made make_metrics_16mib(void)
{
        struct ao_strbuf sb = {0};
        for (size_t i = 0; sb.len < AO_METRIC_OPS_MAX_INPUT - 256 && i < AO_METRIC_OPS_MAX_OPS; i++)
                ao_strbuf_appendf(
                    &sb,
                    "{\"name\":\"bench_tenant_usage\",\"action\":\"set\",\"value\":%zu,\"labels\":"
                    "{\"tenant\":\"tenant-%06zu\",\"pad\":\"%0120zu\"}}\n",
                    i, i, i);
        return made_of(&sb);
}

/* METRICS_PATH at its operation cap, with small operations. */
static struct made make_metrics_ops(void)
{
        struct ao_strbuf sb = {0};
        for (size_t i = 0; i < AO_METRIC_OPS_MAX_OPS; i++)
                ao_strbuf_appendf(
                    &sb,
                    "{\"name\":\"bench_ops\",\"action\":\"add\",\"value\":1,\"labels\":{\"i\":\"%zu\"}}\n",
                    i % 1000);
        return made_of(&sb);
}

/* One watch event at the event cap: a ConfigMap with one large data value. */
static struct made make_watch_max(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append_c(&sb, '\0');
        ao_strbuf_append(
            &sb, "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                 "{\"name\":\"big\",\"namespace\":\"default\",\"resourceVersion\":\"1\"},\"data\":{");
        for (size_t i = 0; sb.len < AO_WATCH_EVENT_MAX - 1024; i++)
                ao_strbuf_appendf(&sb, "%s\"key%06zu\":\"%0200zu\"", i ? "," : "", i, i);
        ao_strbuf_append(&sb, "}}}\n");
        return made_of(&sb);
}

/* One watch event nested as deep as the JSON parser takes. */
static struct made make_watch_deep(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append_c(&sb, '\0');
        ao_strbuf_append(
            &sb, "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                 "{\"name\":\"deep\",\"resourceVersion\":\"1\"},\"spec\":");
        for (int i = 0; i < 990; i++)
                ao_strbuf_append(&sb, "[");
        for (int i = 0; i < 990; i++)
                ao_strbuf_append(&sb, "]");
        ao_strbuf_append(&sb, "}}\n");
        return made_of(&sb);
}

/* A LIST body of 1,000 Pods: the page size the informers ask for... and what a page can weigh. */
static struct made make_list_page(void)
{
        struct ao_strbuf sb = {0};
        _cleanup_free_ char *pod = ao_json_canonical(ctx.pod);
        ao_strbuf_append_c(&sb, '\0');
        ao_strbuf_append(&sb, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                              "\"9\"},\"items\":[");
        for (int i = 0; i < 1000; i++) {
                if (i)
                        ao_strbuf_append_c(&sb, ',');
                ao_strbuf_append(&sb, pod);
        }
        ao_strbuf_append(&sb, "]}");
        return made_of(&sb);
}

/* KUBERNETES_PATCH_PATH at its operation cap: small MergePatch operations. */
static struct made make_object_patch_max(void)
{
        struct ao_strbuf sb = {0};
        for (size_t i = 0; i < AO_OBJECT_PATCH_MAX_OPERATIONS; i++)
                ao_strbuf_appendf(
                    &sb,
                    "{\"operation\":\"MergePatch\",\"kind\":\"ConfigMap\",\"namespace\":\"ns-%zu\","
                    "\"name\":\"cm-%zu\",\"mergePatch\":{\"data\":{\"k\":\"v\"}}}\n",
                    i % 100, i);
        return made_of(&sb);
}

/* A hook configuration with the most bindings, each with its own jqFilter. */
static struct made make_hook_config_max(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "{\"configVersion\":\"v1\",\"kubernetes\":[");
        for (int i = 0; i < AO_HOOK_CONFIG_MAX_BINDINGS; i++)
                ao_strbuf_appendf(&sb,
                                  "%s{\"name\":\"b%d\",\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                                  "\"jqFilter\":\".data.k%d\"}",
                                  i ? "," : "", i, i);
        ao_strbuf_append(&sb, "]}");
        return made_of(&sb);
}

static struct made make_jq_results(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_appendf(&sb, "range(%d)", 100000);
        return made_of(&sb);
}

static struct made make_jq_deep(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb, "reduce range(999) as $i (0; [.])");
        return made_of(&sb);
}

struct made_input {
        const char *name;
        const char *parser;
        struct made (*make)(void);
        size_t tenants;
};

static const struct made_input made_inputs[] = {
    {"patch: ~1 KB of copies doubling a value (copy budget)", "values-patch", make_copy_bomb, 0},
    {"patch: tenants copied into themselves (copy budget)", "values-patch", make_copy_section, 0},
    {"patch: a value at the depth limit", "values-patch", make_patch_deep, 0},
    {"patch: 100,000 adds of distinct keys (op cap)", "values-patch", make_patch_100k_ops, 0},
    {"patch: 16 MiB of 4 KiB adds (byte cap)", "values-patch", make_patch_16mib, 0},
    {"patch: 1,000 tests of all tenants", "values-patch", make_patch_tests, 0},
    {"patch: one replace, 5 MB of values (honest)", "values-patch", make_patch_small, HONEST_TENANTS},
    {"compose: after the 100,000 adds were stored", "values-compose", make_patch_100k_ops, 0},
    {"compose: after the 1,000 tests were stored", "values-compose", make_patch_tests, 0},
    {"schema: anyOf over recursive $refs (step budget)", "schema-validate", make_schema_steps, 0},
    {"schema: $refs doubling per level (expansion budget)", "schema-load", make_schema_expand, 0},
    {"schema: nested to the depth limit", "schema-load", make_schema_deep, 0},
    {"schema: nested to the depth limit, validated", "schema-validate", make_schema_deep, 0},
    {"schema: 5 MB of honest values validated", "schema-validate", make_schema_honest, 0},
    {"yaml: billion laughs, no own nodes (alias ratio)", "yaml", make_alias_small, 0},
    {"yaml: alias bomb with 4,100 own nodes (alias node budget)", "yaml", make_alias_nodes, 0},
    {"yaml: one 60 KB string aliased 200 times (alias byte budget)", "yaml", make_alias_bytes, 0},
    {"yaml: merge keys doubling per level", "yaml", make_merge_bomb, 0},
    {"yaml: nested to the depth limit", "yaml", make_yaml_deep, 0},
    {"yaml: 5 MB values.yaml (honest)", "yaml", make_values_yaml, 0},
    {"config: a section that is an alias bomb", "config-data", make_config_alias, 0},
    {"config: 5 MB section (honest)", "config-data", make_config_honest, 0},
    {"metrics: 16 MiB of set operations (byte cap)", "metric-ops", make_metrics_16mib, 0},
    {"metrics: 100,000 add operations (op cap)", "metric-ops", make_metrics_ops, 0},
    {"watch: one 16 MiB event (event cap)", "watch-stream", make_watch_max, 0},
    {"watch: one event nested 990 deep", "watch-stream", make_watch_deep, 0},
    {"list: a page of 1,000 Pods (honest)", "kube-list", make_list_page, 0},
    {"object patch: 10,000 operations (op cap)", "object-patch", make_object_patch_max, 0},
    {"hook config: 1,024 bindings with jqFilters (binding cap)", "hook-config", make_hook_config_max, 0},
    {"jq: range(100000) (result cap)", "jq-filter", make_jq_results, 0},
    {"jq: a result nested 999 deep", "jq-filter", make_jq_deep, 0},
};

/* ---- measuring ------------------------------------------------------------------------------------- */

static int arg_reps = REPS_DEFAULT;

struct result {
        double ms;      /* the fastest repetition */
        long long peak; /* the largest peak heap growth of a repetition */
        int r;          /* the last repetition's code */
        char msg[AO_ERROR_MSG_MAX];
};

static void measure(const struct parser *p, const struct input *in, struct result *res)
{
        *res = (struct result){.ms = 1e300};
        current_input = in;
        for (int rep = 0; rep < arg_reps; rep++) {
                struct ao_error err = {0};
                void *state = p->prepare(in);
                heap_now = heap_peak = 0;
                excluded_ms = 0;
                counting = true;
                double start = now_ms();
                int r = p->loop(state, &err);
                double ms = now_ms() - start - excluded_ms;
                counting = false;
                p->done(state);
                res->ms = AO_MIN(res->ms, ms);
                res->peak = AO_MAX(res->peak, heap_peak);
                res->r = r;
                snprintf(res->msg, sizeof(res->msg), "%s", r < 0 ? err.msg : "ok");
                if (ms > SLOW_MS && rep >= 1)
                        break;
        }
}

static char *read_all(const char *path, size_t *ret_len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                if (fd >= 0)
                        close(fd);
                return NULL;
        }
        char *buf = ao_xmalloc((size_t) st.st_size + 1);
        size_t n = 0;
        while (n < (size_t) st.st_size) {
                ssize_t k = read(fd, buf + n, (size_t) st.st_size - n);
                if (k <= 0)
                        break;
                n += (size_t) k;
        }
        close(fd);
        buf[n] = '\0';
        *ret_len = n;
        return buf;
}

static const char *human_size(char buf[static 32], size_t n)
{
        if (n >= 1024 * 1024)
                snprintf(buf, 32, "%.1f MiB", (double) n / (1024.0 * 1024.0));
        else if (n >= 1024)
                snprintf(buf, 32, "%.1f KiB", (double) n / 1024.0);
        else
                snprintf(buf, 32, "%zu B", n);
        return buf;
}

static const char *multiple(char buf[static 32], long long peak, size_t len)
{
        if (!HEAP_COUNTED)
                return "-";
        snprintf(buf, 32, "%.1f", (double) peak / (double) AO_MAX(len, (size_t) 1));
        return buf;
}

static double worst_corpus_ms, worst_made_ms;
static const char *worst_corpus_name = "-", *worst_made_name = "-";

/* Every file of the parser's corpus; one line with the slowest and the largest memory multiple. */
static void replay_corpus(const struct parser *p, const char *corpus_root)
{
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/%s", corpus_root, p->corpus);
        struct dirent **names = NULL;
        int n = scandir(dir, &names, NULL, alphasort);
        if (n < 0) {
                fprintf(stderr, "%s: %s\n", dir, strerror(errno));
                exit(1);
        }
        static char worst_name[256], worst_mem_name[256];
        double worst = -1, worst_mem = -1;
        size_t worst_len = 0, files = 0;
        for (int i = 0; i < n; i++) {
                char path[8192];
                size_t len;
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
                char *data = names[i]->d_name[0] == '.' ? NULL : read_all(path, &len);
                if (data) {
                        struct input in = {.name = names[i]->d_name, .data = data, .len = len};
                        struct result res;
                        measure(p, &in, &res);
                        files++;
                        if (res.ms > worst) {
                                worst = res.ms;
                                worst_len = len;
                                snprintf(worst_name, sizeof(worst_name), "%s", names[i]->d_name);
                        }
                        double m = (double) res.peak / (double) AO_MAX(len, (size_t) 1);
                        if (m > worst_mem) {
                                worst_mem = m;
                                snprintf(worst_mem_name, sizeof(worst_mem_name), "%s", names[i]->d_name);
                        }
                        free(data);
                }
                free(names[i]);
        }
        free(names);
        char size[32], mem[32];
        if (HEAP_COUNTED)
                snprintf(mem, sizeof(mem), "%.1f (%.24s)", worst_mem, worst_mem_name);
        else
                snprintf(mem, sizeof(mem), "-");
        printf("%-17s %-19s %5zu  %-28.28s %10s %9.3f %7.2f  %s\n", p->name, p->where, files, worst_name,
               human_size(size, worst_len), worst, worst / GOAL_MS, mem);
        if (worst > worst_corpus_ms) {
                worst_corpus_ms = worst;
                worst_corpus_name = p->name;
        }
}

static void run_made(const struct made_input *m)
{
        const struct parser *p = find_parser(m->parser);
        struct made made = m->make();
        struct input in = {.name = m->name, .data = made.data, .len = made.len, .tenants = m->tenants};
        struct result res;
        char size[32], mem[32];
        measure(p, &in, &res);
        /* One line: the error as the code gives it, cut to keep the table readable. */
        for (char *c = res.msg; *c; c++)
                if (*c == '\n')
                        *c = ' ';
        printf("%-60s %-15s %10s %9.3f %7.2f %7s  %.110s\n", m->name, m->parser, human_size(size, made.len),
               res.ms, res.ms / GOAL_MS, multiple(mem, res.peak, made.len), res.msg);
        fflush(stdout);
        if (res.ms > worst_made_ms) {
                worst_made_ms = res.ms;
                worst_made_name = m->name;
        }
        free(made.data);
}

static void teardown(void);

/* One file through one parser (--file, --parser, --tenants): for looking into a single input. */
static int run_file(const char *path, const char *parser_name, size_t tenants)
{
        const struct parser *p = parser_name ? find_parser(parser_name) : NULL;
        size_t len;
        char *data = read_all(path, &len);
        if (!p || !data) {
                fprintf(stderr, "--file needs a readable file and --parser with a parser's name\n");
                return 2;
        }
        struct input in = {.name = path, .data = data, .len = len, .tenants = tenants};
        struct result res;
        char size[32], mem[32];
        measure(p, &in, &res);
        printf("%s %s %s %.3f ms peak heap %.1f MiB (%s x size): %.200s\n", path, p->name,
               human_size(size, len), res.ms, (double) res.peak / 1048576.0, multiple(mem, res.peak, len),
               res.msg);
        free(data);
        teardown();
        return 0;
}

static void setup(void)
{
        /* Hook lines are logged: to /dev/null, at the level the operator logs them. */
        int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        struct ao_log_options o = {.format = AO_LOG_FORMAT_JSON, .level = AO_LOG_INFO, .fd = devnull};
        if (ao_log_setup(&o) < 0)
                exit(1);
        close(devnull);
        ctx.values = realistic_values(TENANTS);
        ctx.schema = cJSON_Parse(schema_text);
        if (!ctx.schema)
                abort();
        ctx.store = new_store(0, NULL);
        ctx.jq = ao_jq_cache_new();
        size_t len;
        char *pod = read_all("bench/data/pod.json", &len);
        if (!pod) {
                fprintf(stderr, "bench/data/pod.json: run from the source tree\n");
                exit(1);
        }
        ctx.pod = cJSON_Parse(pod);
        free(pod);
        cJSON *warm = NULL;
        if (ao_jq_apply(ctx.jq, WATCH_FILTER, ctx.pod, &warm, NULL, NULL) >= 0)
                cJSON_Delete(warm);
}

static void teardown(void)
{
        cJSON_Delete(ctx.values);
        cJSON_Delete(ctx.honest_values);
        cJSON_Delete(ctx.schema);
        ao_values_store_free(ctx.store);
        ao_jq_cache_free(ctx.jq);
        cJSON_Delete(ctx.pod);
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
            {"corpus", required_argument, NULL, 'c'}, {"only", required_argument, NULL, 'o'},
            {"made-only", no_argument, NULL, 'm'},    {"corpus-only", no_argument, NULL, 'C'},
            {"reps", required_argument, NULL, 'r'},   {"file", required_argument, NULL, 'f'},
            {"parser", required_argument, NULL, 'p'}, {"tenants", required_argument, NULL, 't'},
            {"skip", required_argument, NULL, 's'},   {0},
        };
        const char *corpus = "fuzz/corpus", *only = NULL, *file = NULL, *parser = NULL;
        size_t tenants = 0;
        const char *skip[8];
        size_t n_skip = 0;
        bool made_only = false, corpus_only = false;
        int opt;
        while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
                switch (opt) {
                case 'c':
                        corpus = optarg;
                        break;
                case 'o':
                        only = optarg;
                        break;
                case 'm':
                        made_only = true;
                        break;
                case 'C':
                        corpus_only = true;
                        break;
                case 'f':
                        file = optarg;
                        break;
                case 'p':
                        parser = optarg;
                        break;
                case 't':
                        tenants = (size_t) atol(optarg);
                        break;
                case 's':
                        if (n_skip < AO_ARRAY_SIZE(skip))
                                skip[n_skip++] = optarg;
                        break;
                case 'r':
                        arg_reps = atoi(optarg);
                        if (arg_reps < 1)
                                arg_reps = 1;
                        break;
                default:
                        fprintf(stderr,
                                "usage: %s [--corpus DIR] [--only NAME] [--made-only] [--corpus-only] "
                                "[--reps N] [--skip TEXT]... [--file PATH --parser NAME [--tenants N]]\n",
                                argv[0]);
                        return 2;
                }
        }
        setup();
        if (file)
                return run_file(file, parser, tenants);
        if (!made_only) {
                printf("%-17s %-19s %5s  %-28s %10s %9s %7s  %s\n", "parser", "when", "files",
                       "slowest input", "size", "ms", "x10ms", "peak heap / size (input)");
                for (size_t i = 0; i < AO_ARRAY_SIZE(parsers); i++)
                        if (parsers[i].corpus && (!only || strcmp(only, parsers[i].name) == 0))
                                replay_corpus(&parsers[i], corpus);
                printf("\n");
        }
        if (!corpus_only) {
                printf("%-60s %-15s %10s %9s %7s %7s  %s\n", "made input", "parser", "size", "ms", "x10ms",
                       "heap/sz", "outcome");
                for (size_t i = 0; i < AO_ARRAY_SIZE(made_inputs); i++) {
                        const struct made_input *m = &made_inputs[i];
                        bool skipped = false;
                        if (only && strcmp(only, m->name) != 0 && strcmp(only, m->parser) != 0)
                                continue;
                        for (size_t k = 0; k < n_skip; k++)
                                skipped |= strstr(m->name, skip[k]) != NULL;
                        if (skipped)
                                printf("%-60s skipped (--skip)\n", m->name);
                        else
                                run_made(m);
                }
        }
        if (!made_only)
                printf("row: input stall, slowest corpus input|%.2f ms (%s)|10 ms goal|%.2f|<= 10 ms|%s\n",
                       worst_corpus_ms, worst_corpus_name, worst_corpus_ms / GOAL_MS,
                       worst_corpus_ms <= GOAL_MS ? "yes" : "no");
        if (!corpus_only)
                printf("row: input stall, slowest made input|%.2f ms (%.40s)|10 ms goal|%.2f|<= 10 ms|%s\n",
                       worst_made_ms, worst_made_name, worst_made_ms / GOAL_MS,
                       worst_made_ms <= GOAL_MS ? "yes" : "no");
        teardown();
        return 0;
}
