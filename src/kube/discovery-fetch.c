/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Discovery over the wire: two requests, then one per group/version, counted down.
 */
#include <cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery-fetch.h"
#include "ao/kube-discovery.h"
#include "ao/log.h"

struct pending {
        struct ao_kube_discovery_fetch *f;
        struct ao_kube_request *req;
        char *group_version; /* "v1", "apps/v1"; NULL for /apis */
};

struct ao_kube_discovery_fetch {
        struct ao_kube_client *client;
        struct ao_kube_discovery *d;
        ao_kube_discovery_done *done;
        void *userdata;
        struct pending **pending;
        size_t n_pending;
        struct ao_error error; /* the first fatal failure */
};

static void fetch_free(struct ao_kube_discovery_fetch *f)
{
        for (size_t i = 0; i < f->n_pending; i++) {
                ao_kube_request_cancel(f->pending[i]->req);
                free(f->pending[i]->group_version);
                free(f->pending[i]);
        }
        free(f->pending);
        free(f);
}

static void forget(struct ao_kube_discovery_fetch *f, struct pending *p)
{
        for (size_t i = 0; i < f->n_pending; i++) {
                if (f->pending[i] != p)
                        continue;
                f->pending[i] = f->pending[--f->n_pending];
                break;
        }
        free(p->group_version);
        free(p);
}

static void maybe_done(struct ao_kube_discovery_fetch *f)
{
        if (f->n_pending > 0)
                return;
        f->done(f->error.code ? &f->error : NULL, f->userdata);
        fetch_free(f);
}

static void on_response(const struct ao_kube_response *resp, void *userdata);

/* GET a group/version's resources (/apis for NULL); a @follow_up of /apis takes no rate-limiter token. */
static void request(struct ao_kube_discovery_fetch *f, const char *group_version, bool follow_up)
{
        struct pending *p = ao_xcalloc(1, sizeof(*p));
        p->f = f;
        p->group_version = group_version ? ao_xstrdup(group_version) : NULL;
        char *path = !group_version                     ? ao_xstrdup("/apis")
                     : strcmp(group_version, "v1") == 0 ? ao_xstrdup("/api/v1")
                                                        : ao_xasprintf("/apis/%s", group_version);
        f->pending = ao_xreallocarray(f->pending, f->n_pending + 1, sizeof(*f->pending));
        f->pending[f->n_pending++] = p;
        struct ao_error err = {0};
        int r = follow_up
                    ? ao_kube_request_follow_up(f->client, NULL, path, on_response, p, &p->req, &err)
                    : ao_kube_request(f->client, "GET", path, NULL, NULL, 0, on_response, p, &p->req, &err);
        if (r < 0) {
                p->req = NULL;
                if (!f->error.code)
                        f->error = err;
                forget(f, p);
        }
        free(path);
}

static void add_groups(struct ao_kube_discovery_fetch *f, const cJSON *doc)
{
        char **gvs = NULL;
        if (ao_kube_discovery_add_groups(f->d, doc, &gvs, &f->error) < 0)
                return;
        for (size_t i = 0; gvs && gvs[i]; i++) {
                request(f, gvs[i], true);
                free(gvs[i]);
        }
        free(gvs);
}

static void on_response(const struct ao_kube_response *resp, void *userdata)
{
        struct pending *p = userdata;
        struct ao_kube_discovery_fetch *f = p->f;
        const char *what = p->group_version ? p->group_version : "/apis";
        bool fatal = !p->group_version || strcmp(p->group_version, "v1") == 0;
        struct ao_error err = {0};
        cJSON *doc = NULL;
        if (resp->status == 0)
                ao_error_set(&err, -EIO, "discovery of %s: %s", what, resp->error.msg);
        else if (resp->status != 200)
                ao_error_set(&err, -EIO, "discovery of %s: HTTP %ld", what, resp->status);
        else if (!(doc = cJSON_ParseWithLength(resp->body, resp->len)))
                ao_error_set(&err, -EBADMSG, "discovery of %s: the answer is not JSON", what);
        if (!err.code && p->group_version)
                ao_kube_discovery_add_resources(f->d, p->group_version, doc, &err);
        else if (!err.code)
                add_groups(f, doc);
        cJSON_Delete(doc);
        if (err.code && fatal) {
                /*
                 * Both requests that matter fail together when the server cannot be reached: the
                 * whole discovery fails (nothing is "left out"), and the core group's error is the
                 * one reported, whichever answer came first.
                 */
                if (!f->error.code || p->group_version)
                        f->error = err;
        } else if (err.code)
                ao_log(AO_LOG_WARN, "%s; its resources are left out", err.msg);
        forget(f, p);
        maybe_done(f);
}

int ao_kube_discovery_fetch(struct ao_kube_client *c, struct ao_kube_discovery *d,
                            ao_kube_discovery_done *done, void *userdata,
                            struct ao_kube_discovery_fetch **ret, struct ao_error *reterr)
{
        struct ao_kube_discovery_fetch *f = ao_xcalloc(1, sizeof(*f));
        f->client = c;
        f->d = d;
        f->done = done;
        f->userdata = userdata;
        request(f, "v1", false);
        request(f, NULL, false);
        if (f->n_pending == 0) {
                int r =
                    ao_error_set(reterr, f->error.code ? f->error.code : -EIO, "discovery: %s", f->error.msg);
                fetch_free(f);
                return r;
        }
        if (ret)
                *ret = f;
        return 0;
}

void ao_kube_discovery_fetch_cancel(struct ao_kube_discovery_fetch *f)
{
        if (f)
                fetch_free(f);
}
