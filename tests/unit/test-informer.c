/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Informers (src/kube/informer.c) against the fake API server (tests/fakekube, started here as a
 * child: FAKEKUBE names its fakekube.py), through the real kube client on the reactor. meson runs
 * this file once per backend with AO_REACTOR=epoll|io_uring; an unavailable io_uring skips.
 *
 * With AO_TEST_CLUSTER=WORKDIR (a control plane of tests/cluster/cluster.sh, started with
 * --watch-cache=false; AO_CLUSTER_SH names cluster.sh) the same checks run against that real
 * kube-apiserver, but for what only the fake can show (the Accept headers it logged, a server
 * without PartialObjectMetadata); tests/integration/test-informer-real.sh does that (suite cluster).
 *
 * The metadata-only mode: what arrives (PartialObjectMetadata, the whole metadata and nothing
 * else), which Accept headers went out, live events including a deletion held by a finalizer, a
 * 410 re-list's difference, sharing (two metadata subscriptions: one informer, one watch; a
 * metadata and a full one: two), and a server that does not know the media type (full objects).
 *
 * The test drives the fake with blocking libcurl calls between turns of the loop; the informers'
 * streams wait in their sockets meanwhile. Nothing waits on a clock: every step runs the loop
 * until the callback it expects has come, with a deadline that only fails the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "../tap.h"
#include "reactor-backend.h"
#include "ao/alloc.h"
#include "ao/informer.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/kubeconfig.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"

#define DEADLINE_USEC (30 * AO_USEC_PER_SEC)

#define ACCEPT_META_LIST "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define ACCEPT_META      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

static struct ao_reactor *reactor;

/* ---- the API server: the fake, or a real one ------------------------------------------------------ */

struct server {
        pid_t pid;       /* the fake's; 0 for a real API server */
        char dir[512];   /* the fake's temporary directory, or the real control plane's WORKDIR */
        char base[256];  /* "http://127.0.0.1:PORT" */
        char ca[512];    /* a real server's CA file, or "" */
        char token[256]; /* a real server's admin token, or "" */
};

static bool is_real(const struct server *srv)
{
        return srv->pid == 0;
}

static char *read_file(const char *path)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        struct ao_strbuf b = {0};
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
                ao_strbuf_append_n(&b, buf, n);
        fclose(f);
        return ao_strbuf_steal(&b);
}

/* Start fakekube.py with @extra (NULL or one option); returns once it listens. */
static void fake_start(struct server *fk, const char *extra)
{
        const char *script = getenv("FAKEKUBE");
        if (!script)
                tap_bail("FAKEKUBE must name tests/fakekube/fakekube.py");
        snprintf(fk->dir, sizeof(fk->dir), "/tmp/test-informer-XXXXXX");
        if (!mkdtemp(fk->dir))
                tap_bail("mkdtemp");
        /* The fake renames its port file into place once it listens: watch for that before it starts. */
        int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (in < 0 || inotify_add_watch(in, fk->dir, IN_MOVED_TO) < 0)
                tap_bail("inotify");
        _cleanup_free_ char *port_file = ao_xasprintf("%s/port", fk->dir);
        _cleanup_free_ char *log_file = ao_xasprintf("%s/log", fk->dir);
        fk->pid = fork();
        if (fk->pid < 0)
                tap_bail("fork");
        if (fk->pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM); /* a test killed on its timeout leaves no server */
                int fd = open(log_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd >= 0) {
                        dup2(fd, STDOUT_FILENO);
                        dup2(fd, STDERR_FILENO);
                }
                execlp("python3", "python3", script, "--port", "0", "--port-file", port_file, extra,
                       (char *) NULL);
                _exit(127);
        }
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        char *text = NULL;
        while (!(text = read_file(port_file))) {
                uint64_t now = ao_clock_now_usec();
                struct pollfd p = {.fd = in, .events = POLLIN};
                if (now >= deadline || waitpid(fk->pid, NULL, WNOHANG) != 0 ||
                    poll(&p, 1, (int) ((deadline - now) / 1000) + 1) < 0)
                        tap_bail("fakekube did not start");
                char ev[4096];
                (void) read(in, ev, sizeof(ev));
        }
        close(in);
        snprintf(fk->base, sizeof(fk->base), "http://127.0.0.1:%d", atoi(text));
        free(text);
}

/* The real control plane of AO_TEST_CLUSTER: its address, CA and admin token from WORKDIR/env. */
static void real_open(struct server *srv, const char *workdir)
{
        *srv = (struct server){0};
        snprintf(srv->dir, sizeof(srv->dir), "%s", workdir);
        char path[600];
        snprintf(path, sizeof(path), "%s/env", workdir);
        char *text = read_file(path);
        if (!text)
                tap_bail("cannot read the cluster's env file");
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save)) {
                char *eq = strchr(line, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                const char *v = eq + 1;
                if (strcmp(line, "API") == 0)
                        snprintf(srv->base, sizeof(srv->base), "%s", v);
                else if (strcmp(line, "CA") == 0)
                        snprintf(srv->ca, sizeof(srv->ca), "%s", v);
                else if (strcmp(line, "ADMIN_TOKEN") == 0)
                        snprintf(srv->token, sizeof(srv->token), "%s", v);
        }
        free(text);
        if (!*srv->base || !*srv->ca || !*srv->token)
                tap_bail("the cluster's env file lacks API, CA or ADMIN_TOKEN");
}

/* Run "cluster.sh @command WORKDIR" on the real control plane. */
static void cluster_sh(const struct server *srv, const char *command)
{
        const char *script = getenv("AO_CLUSTER_SH");
        if (!script)
                tap_bail("AO_CLUSTER_SH must name tests/cluster/cluster.sh");
        char cmd[1200];
        snprintf(cmd, sizeof(cmd), "bash '%s' %s '%s' >/dev/null 2>&1", script, command, srv->dir);
        if (system(cmd) != 0) {
                tap_diag("%s", cmd);
                tap_bail("cluster.sh failed");
        }
}

static void fake_stop(struct server *fk)
{
        (void) kill(fk->pid, SIGTERM);
        int status = 0;
        (void) waitpid(fk->pid, &status, 0);
        tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fakekube exits 0");
        static const char *const files[] = {"port", "log"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(files); i++) {
                char *path = ao_xasprintf("%s/%s", fk->dir, files[i]);
                (void) unlink(path);
                free(path);
        }
        (void) rmdir(fk->dir);
}

static size_t collect(char *data, size_t size, size_t n, void *userdata)
{
        ao_strbuf_append_n(userdata, data, size * n);
        return size * n;
}

/* A blocking request; returns the status and the parsed body (or NULL) in @ret. */
static long server_call(const struct server *srv, const char *method, const char *path,
                        const char *content_type, const char *body, cJSON **ret)
{
        CURL *e = curl_easy_init();
        struct ao_strbuf out = {0};
        struct curl_slist *h = NULL;
        char url[512], ct[128], auth[300];
        snprintf(url, sizeof(url), "%s%s", srv->base, path);
        if (content_type) {
                snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
                h = curl_slist_append(h, ct);
        }
        if (*srv->token) {
                snprintf(auth, sizeof(auth), "Authorization: Bearer %s", srv->token);
                h = curl_slist_append(h, auth);
                curl_easy_setopt(e, CURLOPT_CAINFO, srv->ca);
        }
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
        curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
        if (body)
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        long status = 0;
        if (curl_easy_perform(e) == CURLE_OK)
                curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(h);
        curl_easy_cleanup(e);
        if (ret)
                *ret = cJSON_Parse(ao_strbuf_str(&out));
        ao_strbuf_done(&out);
        return status;
}

static void server_ok(const struct server *srv, const char *method, const char *path,
                      const char *content_type, const char *body)
{
        long st = server_call(srv, method, path, content_type, body, NULL);
        if (st < 200 || st > 299) {
                tap_diag("%s %s: HTTP %ld", method, path, st);
                tap_bail("a request to the API server failed");
        }
}

/* A real server refuses objects in a namespace that does not exist (the fake has no such rule). */
static void ensure_ns(const struct server *srv, const char *ns)
{
        if (!is_real(srv))
                return;
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
        long st = server_call(srv, "POST", "/api/v1/namespaces", "application/json", body, NULL);
        if (st != 201 && st != 409)
                tap_bail("cannot create a namespace");
}

static void put_cm(const struct server *fk, const char *ns, const char *json)
{
        char path[256];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", ns);
        server_ok(fk, "POST", path, "application/json", json);
}

static void patch_cm(const struct server *fk, const char *ns, const char *name, const char *json)
{
        char path[256];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, name);
        server_ok(fk, "PATCH", path, "application/merge-patch+json", json);
}

static void delete_cm(const struct server *fk, const char *ns, const char *name)
{
        char path[256];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, name);
        server_ok(fk, "DELETE", path, NULL, NULL);
}

/* The object as the fake has it now (owned). */
static cJSON *get_cm(const struct server *fk, const char *ns, const char *name)
{
        char path[256];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, name);
        cJSON *obj = NULL;
        if (server_call(fk, "GET", path, NULL, NULL, &obj) != 200 || !obj)
                tap_bail("GET of a ConfigMap failed");
        return obj;
}

/* {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":<@full's>} (owned). */
static cJSON *as_metadata(const cJSON *full)
{
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "kind", "PartialObjectMetadata");
        cJSON_AddStringToObject(m, "apiVersion", "meta.k8s.io/v1");
        cJSON_AddItemToObject(m, "metadata",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(full, "metadata"), true));
        return m;
}

/*
 * "L:<accept> W:<accept> ..." for the informers' requests to @path the fake logged: list or watch,
 * and the Accept: the metadata list type "meta-list", the object type "meta", or "json".
 */
static char *requests_to(const struct server *fk, const char *path)
{
        cJSON *doc = NULL;
        if (server_call(fk, "GET", "/fake/requests", NULL, NULL, &doc) != 200 || !doc)
                tap_bail("GET /fake/requests failed");
        struct ao_strbuf b = {0};
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "requests"))
        {
                const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "path"));
                const char *accept = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "accept"));
                const char *agent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "agent"));
                /* The informers' client, not this test's own calls. */
                if (!p || strcmp(p, path) != 0 || !accept || !agent ||
                    strncmp(agent, "addon-operator/", 15) != 0)
                        continue;
                bool watch = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "watch"));
                const char *what = strcmp(accept, ACCEPT_META_LIST) == 0     ? "meta-list"
                                   : strcmp(accept, ACCEPT_META) == 0        ? "meta"
                                   : strcmp(accept, "application/json") == 0 ? "json"
                                                                             : accept;
                ao_strbuf_appendf(&b, "%s%s%s", b.len ? " " : "", watch ? "W:" : "L:", what);
        }
        cJSON_Delete(doc);
        return ao_strbuf_steal(&b);
}

/* ---- subscribers ------------------------------------------------------------------------------ */

#define MAX_EVENTS 16

struct recorder {
        const char *name;
        bool synced;
        cJSON *initial; /* array: the objects the events before the synced callback left */
        unsigned n_initial_events;
        unsigned n_events;
        enum ao_watch_type types[MAX_EVENTS];
        bool partial[MAX_EVENTS];
        cJSON *objects[MAX_EVENTS];
        struct ao_informer_sub *sub;
};

/* The element of @list whose namespace and name are @object's, or NULL. */
static cJSON *same_object(cJSON *list, const cJSON *object)
{
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(object, "metadata");
        cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
        cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
        cJSON *it;
        cJSON_ArrayForEach(it, list)
        {
                const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "metadata");
                if (cJSON_Compare(cJSON_GetObjectItemCaseSensitive(m, "name"), name, true) &&
                    (!ns || cJSON_Compare(cJSON_GetObjectItemCaseSensitive(m, "namespace"), ns, true)))
                        return it;
        }
        return NULL;
}

static void on_synced(struct ao_informer_sub *sub, void *userdata)
{
        struct recorder *rec = userdata;
        rec->synced = true;
        if (!rec->initial)
                rec->initial = cJSON_CreateArray();
}

/* Before the sync the events are the initial state, kept as a subscriber would; after it, recorded. */
static void on_event(struct ao_informer_sub *sub, enum ao_watch_type type, const cJSON *object, bool partial,
                     void *userdata)
{
        struct recorder *rec = userdata;
        if (!ao_informer_sub_synced(sub)) {
                if (!rec->initial)
                        rec->initial = cJSON_CreateArray();
                cJSON *before = same_object(rec->initial, object);
                if (before)
                        cJSON_Delete(cJSON_DetachItemViaPointer(rec->initial, before));
                if (type != AO_WATCH_EVENT_DELETED)
                        cJSON_AddItemToArray(rec->initial, cJSON_Duplicate(object, true));
                rec->n_initial_events++;
                return;
        }
        if (rec->n_events == MAX_EVENTS)
                tap_bail("too many events");
        rec->types[rec->n_events] = type;
        rec->partial[rec->n_events] = partial;
        rec->objects[rec->n_events] = cJSON_Duplicate(object, true);
        rec->n_events++;
}

static const struct ao_informer_sub_ops recorder_ops = {.synced = on_synced, .event = on_event};

static void recorder_done(struct recorder *rec)
{
        ao_informer_unsubscribe(rec->sub);
        cJSON_Delete(rec->initial);
        for (unsigned i = 0; i < rec->n_events; i++)
                cJSON_Delete(rec->objects[i]);
        *rec = (struct recorder){0};
}

static void subscribe(struct ao_informers *infs, struct recorder *rec, const char *name,
                      const struct ao_kube_resource *res, const char *ns, bool metadata_only)
{
        rec->name = name;
        const struct ao_informer_query q = {.resource = res, .ns = ns, .metadata_only = metadata_only};
        struct ao_error err = {0};
        if (ao_informers_subscribe(infs, &q, &recorder_ops, rec, &rec->sub, &err) < 0)
                tap_bail(err.msg);
}

/* Run the loop until @rec is synced. */
static bool run_until_synced(struct recorder *rec)
{
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (!rec->synced && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        return tap_ok(rec->synced, "%s: synced", rec->name);
}

/* Run the loop until @rec has @n events. */
static bool run_until_events(struct recorder *rec, unsigned n)
{
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (rec->n_events < n && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        if (rec->n_events < n)
                tap_diag("%s: %u events, want %u", rec->name, rec->n_events, n);
        return rec->n_events >= n;
}

/* Compare JSON exactly (members in any order); print both when they differ. */
static void is_json(const cJSON *got, const cJSON *want, const char *what)
{
        bool same = got && want && cJSON_Compare(got, want, true);
        if (!tap_ok(same, "%s", what)) {
                char *g = got ? cJSON_PrintUnformatted(got) : NULL, *w = cJSON_PrintUnformatted(want);
                tap_diag("got  %s", g ? g : "(null)");
                tap_diag("want %s", w ? w : "(null)");
                free(g);
                free(w);
        }
}

/* The element of array @list whose metadata.name is @name. */
static const cJSON *by_name(const cJSON *list, const char *name)
{
        const cJSON *o;
        cJSON_ArrayForEach(o, list)
        {
                const cJSON *n =
                    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "name");
                if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
                        return o;
        }
        return NULL;
}

/* ---- stats ------------------------------------------------------------------------------------ */

struct stats {
        char last_who[512];
        unsigned expired, relists, recovered[3];
};

static void on_stat(const struct ao_informer_identity *who, enum ao_informer_stat stat,
                    enum ao_watch_type event, void *userdata)
{
        struct stats *st = userdata;
        snprintf(st->last_who, sizeof(st->last_who), "%s|%s|%s|%s|%s", who->resource, who->ns,
                 who->label_selector, who->field_selector, who->metadata_only ? "metadata" : "full");
        if (stat == AO_INFORMER_EXPIRED)
                st->expired++;
        else if (stat == AO_INFORMER_RELIST)
                st->relists++;
        else if (stat == AO_INFORMER_RECOVERED && event <= AO_WATCH_EVENT_DELETED)
                st->recovered[event]++;
}

static unsigned fails;

static void on_error(const char *error_type, void *userdata)
{
        if (strcmp(error_type, "fail") == 0)
                fails++;
}

/* ---- the tests -------------------------------------------------------------------------------- */

static struct ao_kube_resource configmaps = {
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .kind = "ConfigMap",
    .name = "configmaps",
    .namespaced = true,
    .watchable = true,
    .preferred = true,
};

struct env {
        struct server fk;
        struct ao_kube_client *client;
        struct ao_informers *infs;
        struct stats stats;
};

/*
 * With the fake (@fake_option: one of its options, or NULL), or the real control plane in @workdir;
 * lists of @page_size objects a page (0: the informers' default), the client limited to @qps requests
 * a second with a burst of one (0: unlimited).
 */
static void env_start_paged(struct env *e, const char *fake_option, const char *workdir, unsigned page_size,
                            double qps)
{
        *e = (struct env){0};
        if (workdir)
                real_open(&e->fk, workdir);
        else
                fake_start(&e->fk, fake_option);
        struct ao_kube_config cfg = {.server = e->fk.base,
                                     .ca_file = *e->fk.ca ? e->fk.ca : NULL,
                                     .token = *e->fk.token ? e->fk.token : NULL,
                                     .source = "test"};
        struct ao_error err = {0};
        const struct ao_kube_client_options co = {.qps = qps, .burst = 1};
        if (ao_kube_client_new(reactor, &cfg, &co, &e->client, &err) < 0)
                tap_bail(err.msg);
        struct ao_informers_options o = {.on_error = on_error,
                                         .on_stat = on_stat,
                                         .userdata = &e->stats,
                                         .retry_scale = 0.01,
                                         .page_size = page_size};
        e->infs = ao_informers_new(reactor, e->client, &o);
}

static void env_start(struct env *e, const char *fake_option, const char *workdir)
{
        env_start_paged(e, fake_option, workdir, 0, 0);
}

static void env_stop(struct env *e)
{
        /* Unsubscribed informers stop from a deferred callback. */
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (ao_informers_count(e->infs) > 0 && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_is_int(ao_informers_count(e->infs), 0, "every informer stopped with its last subscription");
        e->infs = ao_informers_free(e->infs);
        e->client = ao_kube_client_free(e->client);
        if (!is_real(&e->fk))
                fake_stop(&e->fk);
}

/* Objects arrive with their metadata only; live changes and a deletion held by a finalizer. */
static void test_metadata_objects(struct env *e)
{
        struct server *fk = &e->fk;
        ensure_ns(fk, "t1");
        put_cm(fk, "t1",
               "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\"},\"annotations\":{\"y\":\"2\"},"
               "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"o\","
               "\"uid\":\"11111111-1111-1111-1111-111111111111\"}]},\"data\":{\"k\":\"v\"}}");
        put_cm(fk, "t1", "{\"metadata\":{\"name\":\"b\"},\"data\":{\"k\":\"v\"}}");
        cJSON *a = get_cm(fk, "t1", "a"), *b = get_cm(fk, "t1", "b");

        struct recorder rec = {0};
        subscribe(e->infs, &rec, "metadata-only", &configmaps, "t1", true);
        if (!run_until_synced(&rec))
                return;
        tap_is_int(cJSON_GetArraySize(rec.initial), 2, "two objects at sync");
        cJSON *want_a = as_metadata(a), *want_b = as_metadata(b);
        is_json(by_name(rec.initial, "a"), want_a,
                "'a' arrives as PartialObjectMetadata with all its metadata (labels, annotations, "
                "ownerReferences, uid, resourceVersion) and no data");
        is_json(by_name(rec.initial, "b"), want_b, "'b' likewise");
        cJSON_Delete(want_a);
        cJSON_Delete(want_b);

        /*
         * Live: a label, a new object with a finalizer, its deletion (a MODIFIED: deletionTimestamp), the
         * finalizer's removal (a DELETED only, as kube-apiserver 1.20 sends it), and a plain delete.
         */
        patch_cm(fk, "t1", "a", "{\"metadata\":{\"labels\":{\"z\":\"3\"}}}");
        put_cm(fk, "t1",
               "{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"example.com/x\"]},\"data\":{\"k\":\"v\"}}");
        delete_cm(fk, "t1", "f");
        cJSON *f_terminating = get_cm(fk, "t1", "f");
        patch_cm(fk, "t1", "f", "{\"metadata\":{\"finalizers\":null}}");
        delete_cm(fk, "t1", "b");
        cJSON *a2 = get_cm(fk, "t1", "a");
        if (run_until_events(&rec, 5)) {
                struct ao_strbuf got = {0};
                for (unsigned i = 0; i < rec.n_events; i++) {
                        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec.objects[i], "metadata");
                        ao_strbuf_appendf(
                            &got, "%s%s %s", i ? ", " : "", ao_watch_type_to_string(rec.types[i]),
                            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name")));
                }
                tap_is_str(ao_strbuf_str(&got), "MODIFIED a, ADDED f, MODIFIED f, DELETED f, DELETED b",
                           "the events, in order");
                ao_strbuf_done(&got);
                cJSON *want_obj = as_metadata(a2);
                is_json(rec.objects[0], want_obj, "the label change: the new metadata, nothing else");
                cJSON_Delete(want_obj);
                want_obj = as_metadata(f_terminating);
                tap_ok(
                    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
                        cJSON_GetObjectItemCaseSensitive(rec.objects[2], "metadata"), "deletionTimestamp")),
                    "the deletion held by the finalizer: deletionTimestamp is there");
                is_json(rec.objects[2], want_obj, "its object is the metadata the server has");
                /* The DELETED of the finalizer's removal: the object as it was, at the deletion's version. */
                cJSON_ReplaceItemInObjectCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(want_obj, "metadata"), "resourceVersion",
                    cJSON_Duplicate(
                        cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(rec.objects[3], "metadata"), "resourceVersion"),
                        true));
                is_json(rec.objects[3], want_obj,
                        "DELETED f: its last metadata, finalizer and deletionTimestamp included");
                cJSON_Delete(want_obj);
                const cJSON *meta_b = cJSON_GetObjectItemCaseSensitive(rec.objects[4], "metadata");
                tap_is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec.objects[4], "kind")),
                           "PartialObjectMetadata", "DELETED b: a PartialObjectMetadata");
                tap_is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta_b, "uid")),
                           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(b, "metadata"), "uid")),
                           "DELETED b: with its uid");
                tap_ok(!rec.partial[3] && !rec.partial[4], "watch deletions are not partial");
        } else {
                tap_ok(false, "five events");
        }
        if (!is_real(fk)) {
                char *reqs = requests_to(fk, "/api/v1/namespaces/t1/configmaps");
                tap_is_str(reqs, "L:meta-list W:meta",
                           "LIST with the PartialObjectMetadataList Accept, WATCH with the "
                           "PartialObjectMetadata one");
                free(reqs);
        }
        cJSON_Delete(a);
        cJSON_Delete(a2);
        cJSON_Delete(b);
        cJSON_Delete(f_terminating);
        recorder_done(&rec);
}

/* "L:meta-list W:meta( W:meta)+ L:meta-list W:meta", without a regex engine. */
static bool is_relist_sequence(const char *s)
{
        const char *head = "L:meta-list W:meta", *tail = " L:meta-list W:meta";
        size_t n = strlen(s), nh = strlen(head), nt = strlen(tail);
        if (n < nh + nt || strncmp(s, head, nh) != 0 || strcmp(s + n - nt, tail) != 0)
                return false;
        const char *p = s + nh, *end = s + n - nt;
        if (p == end)
                return false;
        for (; p < end; p += strlen(" W:meta"))
                if (strncmp(p, " W:meta", strlen(" W:meta")) != 0)
                        return false;
        return p == end;
}

static int compare_strings(const void *x, const void *y)
{
        return strcmp(*(const char *const *) x, *(const char *const *) y);
}

/* 410: the re-list's difference, in metadata mode; stats name the informer as metadata-only. */
static void test_metadata_relist(struct env *e)
{
        struct server *fk = &e->fk;
        ensure_ns(fk, "t2");
        put_cm(fk, "t2", "{\"metadata\":{\"name\":\"x\"},\"data\":{\"k\":\"v\"}}");
        put_cm(fk, "t2", "{\"metadata\":{\"name\":\"y\"},\"data\":{\"k\":\"v\"}}");
        put_cm(fk, "t2", "{\"metadata\":{\"name\":\"z\"},\"data\":{\"k\":\"v\"}}");
        cJSON *z = get_cm(fk, "t2", "z");
        struct recorder rec = {0};
        subscribe(e->infs, &rec, "metadata-only, 410", &configmaps, "t2", true);
        if (!run_until_synced(&rec))
                return;
        /*
         * The objects change while no watch can see them, and the history is compacted: the next watch
         * gets 410 and only a re-list finds the changes. The fake fails every watch with 500 meanwhile;
         * the real API server is killed and started again while the loop does not run (the informer's
         * watch is gone with it), and etcd compacted (without the watch cache, watches are served by
         * etcd: the 410 is certain).
         */
        if (is_real(fk)) {
                cluster_sh(fk, "restart-apiserver");
        } else {
                server_ok(fk, "POST", "/fake/faults", "application/json",
                          "{\"method\":\"GET\",\"path\":\"/namespaces/t2/configmaps$\",\"watch\":true,"
                          "\"action\":\"status\",\"status\":500,\"count\":-1}");
                server_ok(fk, "POST", "/fake/close-watches", "application/json",
                          "{\"path\":\"/namespaces/t2/configmaps$\"}");
                unsigned fails_before = fails;
                uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
                while (fails == fails_before && ao_clock_now_usec() < deadline)
                        (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
                tap_ok(fails > fails_before, "the watch is down (a watch failed with 500)");
        }
        patch_cm(fk, "t2", "y", "{\"metadata\":{\"labels\":{\"new\":\"label\"}}}");
        delete_cm(fk, "t2", "z");
        put_cm(fk, "t2", "{\"metadata\":{\"name\":\"w\"},\"data\":{\"k\":\"v\"}}");
        cJSON *y = get_cm(fk, "t2", "y"), *w = get_cm(fk, "t2", "w");
        if (is_real(fk)) {
                cluster_sh(fk, "compact");
        } else {
                server_ok(fk, "POST", "/fake/compact", "application/json", "{}");
                server_ok(fk, "DELETE", "/fake/faults", NULL, NULL);
        }
        if (run_until_events(&rec, 3)) {
                /* The difference's order is not defined: compare "TYPE name" sorted. */
                char *lines[3];
                for (unsigned i = 0; i < 3; i++) {
                        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec.objects[i], "metadata");
                        lines[i] =
                            ao_xasprintf("%s %s%s", ao_watch_type_to_string(rec.types[i]),
                                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name")),
                                         rec.partial[i] ? " (partial)" : "");
                }
                qsort(lines, 3, sizeof(lines[0]), compare_strings);
                char got[256];
                snprintf(got, sizeof(got), "%s, %s, %s", lines[0], lines[1], lines[2]);
                tap_is_str(got, "ADDED w, DELETED z (partial), MODIFIED y",
                           "the re-list's difference: exactly what "
                           "changed while the watch was down");
                for (unsigned i = 0; i < 3; i++)
                        free(lines[i]);
                tap_is_int(rec.n_events, 3, "nothing else");
                for (unsigned i = 0; i < 3; i++) {
                        cJSON *want = NULL;
                        const char *what = NULL;
                        if (rec.types[i] == AO_WATCH_EVENT_ADDED) {
                                want = as_metadata(w);
                                what = "ADDED w: its metadata as the server has it";
                        } else if (rec.types[i] == AO_WATCH_EVENT_MODIFIED) {
                                want = as_metadata(y);
                                what = "MODIFIED y: its new metadata";
                        } else {
                                /* A stub: the informer kept only the key and the resourceVersion. */
                                const cJSON *zm = cJSON_GetObjectItemCaseSensitive(z, "metadata");
                                want = cJSON_Parse("{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":"
                                                   "\"PartialObjectMetadata\",\"metadata\":{\"name\":\"z\","
                                                   "\"namespace\":\"t2\"}}");
                                cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(want, "metadata"),
                                                        "resourceVersion",
                                                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                                                            zm, "resourceVersion")));
                                what = "DELETED z: a PartialObjectMetadata stub with name, namespace and "
                                       "the last resourceVersion";
                        }
                        is_json(rec.objects[i], want, what);
                        cJSON_Delete(want);
                }
        } else {
                tap_ok(false, "the re-list's difference");
        }
        /* The watch after the re-list works, in the same mode. */
        patch_cm(fk, "t2", "x", "{\"metadata\":{\"labels\":{\"after\":\"relist\"}}}");
        cJSON *x = get_cm(fk, "t2", "x");
        if (run_until_events(&rec, 4)) {
                cJSON *want = as_metadata(x);
                tap_is_str(ao_watch_type_to_string(rec.types[3]), "MODIFIED",
                           "then the new watch delivers a change");
                is_json(rec.objects[3], want, "MODIFIED x: metadata only");
                cJSON_Delete(want);
        } else {
                tap_ok(false, "then the new watch delivers a change");
        }
        cJSON_Delete(x);
        tap_is_str(e->stats.last_who, "v1/configmaps|t2|||metadata",
                   "stats name the informer, metadata-only");
        tap_is_int(e->stats.expired, 1, "one 410");
        tap_is_int(e->stats.relists, 1, "one re-list");
        tap_is_int(e->stats.recovered[AO_WATCH_EVENT_ADDED] * 100 +
                       e->stats.recovered[AO_WATCH_EVENT_MODIFIED] * 10 +
                       e->stats.recovered[AO_WATCH_EVENT_DELETED],
                   111, "recovered: one ADDED, one MODIFIED, one DELETED");
        if (!is_real(fk)) {
                /*
                 * The list, the watch that was closed, the failed ones (as many as the back-off made), the
                 * 410, the re-list and the new watch: each with the metadata Accept of its kind.
                 */
                char *reqs = requests_to(fk, "/api/v1/namespaces/t2/configmaps");
                tap_ok(is_relist_sequence(reqs),
                       "every request had the metadata Accept, the re-list's too: %s", reqs);
                free(reqs);
        }
        cJSON_Delete(y);
        cJSON_Delete(w);
        cJSON_Delete(z);
        recorder_done(&rec);
}

/* Two metadata subscriptions share one informer; a full one of the same query is another. */
static void test_sharing(struct env *e)
{
        struct server *fk = &e->fk;
        ensure_ns(fk, "t3");
        put_cm(fk, "t3", "{\"metadata\":{\"name\":\"s\"},\"data\":{\"k\":\"v\"}}");
        cJSON *s = get_cm(fk, "t3", "s");
        size_t before = ao_informers_count(e->infs);
        struct recorder m1 = {0}, m2 = {0}, full = {0};
        subscribe(e->infs, &m1, "metadata 1", &configmaps, "t3", true);
        subscribe(e->infs, &m2, "metadata 2", &configmaps, "t3", true);
        tap_is_int(ao_informers_count(e->infs), before + 1, "two metadata subscriptions: one informer");
        subscribe(e->infs, &full, "full", &configmaps, "t3", false);
        tap_is_int(ao_informers_count(e->infs), before + 2,
                   "a full subscription of the same query: another informer");
        if (!run_until_synced(&m1) || !run_until_synced(&m2) || !run_until_synced(&full))
                return;
        cJSON *want = as_metadata(s);
        is_json(by_name(m1.initial, "s"), want, "metadata 1: PartialObjectMetadata");
        is_json(by_name(m2.initial, "s"), want, "metadata 2: the same");
        cJSON_Delete(want);
        is_json(by_name(full.initial, "s"), s, "full: the whole ConfigMap");

        put_cm(fk, "t3", "{\"metadata\":{\"name\":\"t\"},\"data\":{\"k\":\"v\"}}");
        cJSON *t = get_cm(fk, "t3", "t");
        if (run_until_events(&m1, 1) && run_until_events(&m2, 1) && run_until_events(&full, 1)) {
                want = as_metadata(t);
                is_json(m1.objects[0], want, "metadata 1: ADDED t, metadata only");
                is_json(m2.objects[0], want, "metadata 2: the same event");
                cJSON_Delete(want);
                is_json(full.objects[0], t, "full: ADDED t, the whole object");
        } else {
                tap_ok(false, "every subscription gets the event");
        }
        /*
         * Each informer's watch delivered the event, so both watches were up: exactly one of each. The
         * two informers' requests interleave in no defined order: sorted.
         */
        if (!is_real(fk)) {
                char *reqs = requests_to(fk, "/api/v1/namespaces/t3/configmaps");
                char *words[8];
                size_t n = 0;
                for (char *save = NULL, *w = strtok_r(reqs, " ", &save); w && n < 8;
                     w = strtok_r(NULL, " ", &save))
                        words[n++] = w;
                qsort(words, n, sizeof(words[0]), compare_strings);
                struct ao_strbuf sorted = {0};
                for (size_t i = 0; i < n; i++)
                        ao_strbuf_appendf(&sorted, "%s%s", i ? " " : "", words[i]);
                tap_is_str(ao_strbuf_str(&sorted), "L:json L:meta-list W:json W:meta",
                           "one LIST and one WATCH per informer, each with its Accept");
                ao_strbuf_done(&sorted);
                free(reqs);
        }
        cJSON_Delete(s);
        cJSON_Delete(t);
        recorder_done(&m1);
        recorder_done(&m2);
        recorder_done(&full);
}

/* A server that does not know PartialObjectMetadata falls back to full objects; they go out as sent. */
static void test_fallback(struct env *e)
{
        struct server *fk = &e->fk;
        put_cm(fk, "t4", "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\"}},\"data\":{\"k\":\"v\"}}");
        cJSON *a = get_cm(fk, "t4", "a");
        struct recorder rec = {0};
        subscribe(e->infs, &rec, "metadata-only, old server", &configmaps, "t4", true);
        if (!run_until_synced(&rec))
                return;
        is_json(by_name(rec.initial, "a"), a,
                "an old server's full list: the object as sent, kind and apiVersion filled in from the list");
        delete_cm(fk, "t4", "a");
        if (run_until_events(&rec, 1)) {
                tap_is_str(ao_watch_type_to_string(rec.types[0]), "DELETED", "the deletion arrives");
                tap_is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec.objects[0], "kind")),
                           "ConfigMap", "as the full object the server sent");
        } else {
                tap_ok(false, "the deletion arrives");
        }
        char *reqs = requests_to(fk, "/api/v1/namespaces/t4/configmaps");
        tap_is_str(reqs, "L:meta-list W:meta", "the informer asked for metadata all the same");
        free(reqs);
        cJSON_Delete(a);
        recorder_done(&rec);
}

/* ---- paged lists ------------------------------------------------------------------------------ */

/* The names of @list's objects, sorted, comma-separated (a static buffer). */
static const char *names_of(const cJSON *list)
{
        static char buf[512];
        char *names[64];
        size_t n = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, list)
        {
                const cJSON *meta = cJSON_GetObjectItemCaseSensitive(it, "metadata");
                if (n < 64)
                        names[n++] = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
        }
        qsort(names, n, sizeof(names[0]), compare_strings);
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++)
                snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? "," : "", names[i]);
        return buf;
}

/* The events @rec recorded, "TYPE name[ (partial)]" in order, joined with ", " (a static buffer). */
static const char *events_of(const struct recorder *rec)
{
        static char buf[1024];
        buf[0] = '\0';
        for (unsigned i = 0; i < rec->n_events; i++) {
                const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec->objects[i], "metadata");
                snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s %s%s", i ? ", " : "",
                         ao_watch_type_to_string(rec->types[i]),
                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name")),
                         rec->partial[i] ? " (partial)" : "");
        }
        return buf;
}

/* Run the loop until @rec has had @n events before its sync (its initial state). */
static bool run_until_initial_events(struct recorder *rec, unsigned n)
{
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (rec->n_initial_events < n && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        return tap_ok(rec->n_initial_events >= n, "%s: %u objects of the list so far", rec->name,
                      rec->n_initial_events);
}

/* A fault on the next later page of a list in t5 (a request with a continue token). */
static void fault_next_page(struct server *fk, const char *action)
{
        _cleanup_free_ char *spec =
            ao_xasprintf("{\"method\":\"GET\",\"path\":\"/namespaces/t5/configmaps$\",\"watch\":false,"
                         "\"query\":{\"continue\":\".\"},\"action\":\"%s\",\"count\":1}",
                         action);
        server_ok(fk, "POST", "/fake/faults", "application/json", spec);
}

/*
 * Lists of two objects a page. A first list that has to start over (its continue token expired
 * after an object of its first page was deleted) leaves the subscriber exactly what the server has.
 */
static void test_paged_first_list(struct env *e, struct recorder *rec)
{
        struct server *fk = &e->fk;
        ensure_ns(fk, "t5");
        const char *names[] = {"a", "b", "c", "d", "e", "f", "g"};
        for (size_t i = 0; i < 7; i++) {
                _cleanup_free_ char *json =
                    ao_xasprintf("{\"metadata\":{\"name\":\"%s\"},\"data\":{\"k\":\"v\"}}", names[i]);
                put_cm(fk, "t5", json);
        }
        /* The second page fails; until the loop runs again, the first page's "a" is deleted and the
         * token compacted away: the retry gets 410 and the list starts over without "a". */
        fault_next_page(fk, "drop");
        subscribe(e->infs, rec, "paged", &configmaps, "t5", false);
        if (!run_until_initial_events(rec, 2))
                return;
        delete_cm(fk, "t5", "a");
        server_ok(fk, "POST", "/fake/compact", "application/json", "{}");
        if (!run_until_synced(rec))
                return;
        tap_is_str(names_of(rec->initial), "b,c,d,e,f,g", "the initial state is the server's, without 'a'");
        tap_is_int(rec->n_initial_events, 2 + 6 + 1,
                   "the first page, the list that started over, and a DELETED for 'a' (which the "
                   "subscriber had from the first attempt)");
        tap_is_int(e->stats.expired, 1, "one 410 (the continue token)");
        tap_is_int(rec->n_events, 0, "no event after the sync");
}

/*
 * A synced subscriber's re-list, itself interrupted by an expired continue token while objects
 * change: every change arrives once, none is lost, none comes twice.
 */
static void test_paged_relist(struct env *e, struct recorder *rec)
{
        struct server *fk = &e->fk;
        /* The watch goes down; changes it cannot see; compaction: the next watch gets 410. */
        server_ok(fk, "POST", "/fake/faults", "application/json",
                  "{\"method\":\"GET\",\"path\":\"/namespaces/t5/configmaps$\",\"watch\":true,"
                  "\"action\":\"status\",\"status\":500,\"count\":-1}");
        server_ok(fk, "POST", "/fake/close-watches", "application/json", "{\"path\":\"/namespaces/t5/\"}");
        unsigned fails_before = fails;
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (fails == fails_before && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_ok(fails > fails_before, "the watch is down");
        patch_cm(fk, "t5", "c", "{\"data\":{\"k\":\"c2\"}}");
        delete_cm(fk, "t5", "d");
        put_cm(fk, "t5", "{\"metadata\":{\"name\":\"h\"},\"data\":{\"k\":\"v\"}}");
        server_ok(fk, "POST", "/fake/compact", "application/json", "{}");
        server_ok(fk, "DELETE", "/fake/faults", NULL, NULL);
        fault_next_page(fk, "drop");
        /* The re-list's first page (b, c) brings MODIFIED c; the second page fails. */
        if (!run_until_events(rec, 1))
                return;
        /* While it is stopped there: changes on later pages, and a compaction that expires its token. */
        patch_cm(fk, "t5", "e", "{\"data\":{\"k\":\"e2\"}}");
        delete_cm(fk, "t5", "f");
        server_ok(fk, "POST", "/fake/compact", "application/json", "{}");
        if (!run_until_events(rec, 5))
                return;
        /* The order of the list's pages, then the deletions at its end. */
        tap_is_str(events_of(rec),
                   "MODIFIED c, MODIFIED e, ADDED h, DELETED d (partial), DELETED f (partial)",
                   "the re-list's difference, with what changed while it ran: each change once");
        tap_is_int(e->stats.relists, 1, "one re-list");
        tap_is_int(e->stats.expired, 1 + 2, "the first list's 410, the watch's and the re-list's token");
        /* The watch after it delivers what comes next, and nothing came twice before it. */
        patch_cm(fk, "t5", "g", "{\"data\":{\"k\":\"g2\"}}");
        if (run_until_events(rec, 6))
                tap_is_str(events_of(rec) + strlen(events_of(rec)) - strlen("MODIFIED g"), "MODIFIED g",
                           "then the watch's event");
        tap_is_int(rec->n_events, 6, "nothing else");
}

/* A subscriber that joins later gets every object from a list of its own; the first sees nothing. */
static void test_paged_late_subscriber(struct env *e, struct recorder *first)
{
        unsigned before = first->n_events;
        struct recorder late = {0};
        subscribe(e->infs, &late, "paged, late", &configmaps, "t5", false);
        if (run_until_synced(&late))
                tap_is_str(names_of(late.initial), "b,c,e,g,h", "the late subscriber has every object");
        tap_is_int(first->n_events, before, "the first subscriber got nothing from that list");
        recorder_done(&late);
}

/*
 * A client allowed one request in 1000 s: the list's first page takes that token, the later pages
 * take none (one list, one request's worth), so the subscription syncs.
 */
static void test_pages_not_rate_limited(struct env *e)
{
        ensure_ns(&e->fk, "t5");
        const char *names[] = {"b", "c", "e", "g", "h"};
        for (size_t i = 0; i < 5; i++) {
                _cleanup_free_ char *json = ao_xasprintf("{\"metadata\":{\"name\":\"%s\"}}", names[i]);
                put_cm(&e->fk, "t5", json);
        }
        struct recorder rec = {0};
        subscribe(e->infs, &rec, "paged, 0.001 qps", &configmaps, "t5", false);
        if (run_until_synced(&rec))
                tap_is_str(names_of(rec.initial), "b,c,e,g,h", "all three pages arrived");
        recorder_done(&rec);
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        curl_global_init(CURL_GLOBAL_DEFAULT);
        reactor = test_reactor_new();

        struct env e;
        const char *cluster = getenv("AO_TEST_CLUSTER");
        env_start(&e, NULL, cluster);
        test_metadata_objects(&e);
        test_metadata_relist(&e);
        test_sharing(&e);
        env_stop(&e);

        if (!cluster) {
                env_start(&e, "--no-partial-metadata", NULL);
                test_fallback(&e);
                env_stop(&e);

                env_start_paged(&e, NULL, NULL, 2, 0);
                struct recorder rec = {0};
                test_paged_first_list(&e, &rec);
                test_paged_relist(&e, &rec);
                test_paged_late_subscriber(&e, &rec);
                recorder_done(&rec);
                env_stop(&e);

                env_start_paged(&e, NULL, NULL, 2, 0.001);
                test_pages_not_rate_limited(&e);
                env_stop(&e);
        }

        reactor = ao_reactor_free(reactor);
        curl_global_cleanup();
        return tap_done();
}
