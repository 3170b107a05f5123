/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The presence check: object paths are resolved against discovery up front
 * (the table may be replaced while requests run), then GETs go out a few at
 * a time. The first 404 ends the check and cancels what is still running.
 */
#include "ao/kube-presence.h"

#include <errno.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/macro.h"
#include "ao/reactor.h"

#define PRESENCE_PARALLEL_DEFAULT 5

struct object {
        char *api_version, *kind, *namespace, *name;
        char *path; /* NULL: the kind is unknown, so the object cannot exist */
        struct ao_kube_request *req;
        struct ao_kube_presence *owner;
};

struct ao_kube_presence {
        struct ao_kube_client *client;
        struct object *objects;
        size_t n, next, running;
        unsigned parallel;
        struct ao_source *defer; /* reports a result found without a request */
        const struct object *absent;
        struct ao_error error;
        bool failed;
        ao_kube_presence_done *done;
        void *userdata;
};

static void presence_free(struct ao_kube_presence *p)
{
        for (size_t i = 0; i < p->n; i++) {
                struct object *o = &p->objects[i];
                ao_kube_request_cancel(o->req);
                free(o->api_version);
                free(o->kind);
                free(o->namespace);
                free(o->name);
                free(o->path);
        }
        free(p->objects);
        ao_source_free(p->defer);
        free(p);
}

/* The callback runs before the check is freed: @absent points into it. */
static void report(struct ao_kube_presence *p)
{
        const struct object *o = p->absent;
        struct ao_kube_object_ref ref = {0};
        if (o)
                ref = (struct ao_kube_object_ref){o->api_version, o->kind, o->namespace, o->name};
        for (size_t i = 0; i < p->n; i++)
                ao_kube_request_cancel(TAKE_PTR(p->objects[i].req));
        p->done(o ? &ref : NULL, p->failed ? &p->error : NULL, p->userdata);
        presence_free(p);
}

static void next_requests(struct ao_kube_presence *p);

static void on_object(const struct ao_kube_response *resp, void *userdata)
{
        struct object *o = userdata;
        struct ao_kube_presence *p = o->owner;
        o->req = NULL;
        p->running--;
        if (resp->status == 404) {
                p->absent = o;
        } else if (resp->status < 200 || resp->status >= 300) {
                p->failed = true;
                if (resp->status == 0)
                        ao_error_set(&p->error, -EIO, "%s %s: %s", o->kind, o->name, resp->error.msg);
                else
                        ao_error_set(&p->error, -EIO, "%s %s: HTTP %ld", o->kind, o->name, resp->status);
        }
        if (p->absent || p->failed || (p->next == p->n && p->running == 0)) {
                report(p);
                return;
        }
        next_requests(p);
}

static void next_requests(struct ao_kube_presence *p)
{
        while (p->running < p->parallel && p->next < p->n) {
                struct object *o = &p->objects[p->next++];
                struct ao_error err = {0};
                if (ao_kube_request(p->client, "GET", o->path, NULL, NULL, 0, on_object, o, &o->req, &err) <
                    0) {
                        p->failed = true;
                        ao_error_set(&p->error, err.code, "%s %s: %s", o->kind, o->name, err.msg);
                        (void) ao_source_set_enabled(p->defer, AO_SOURCE_ONESHOT);
                        return;
                }
                p->running++;
        }
}

static int on_defer(struct ao_source *s, void *userdata)
{
        (void) s;
        report(userdata);
        return 0;
}

static void resolve(struct ao_kube_presence *p, const struct ao_kube_discovery *d)
{
        for (size_t i = 0; i < p->n; i++) {
                struct object *o = &p->objects[i];
                const struct ao_kube_resource *res = ao_kube_discovery_find(d, o->api_version, o->kind, NULL);
                if (!res || (res->namespaced && !o->namespace)) {
                        p->absent = o;
                        return;
                }
                o->path = ao_kube_resource_path(res, res->namespaced ? o->namespace : NULL, o->name);
        }
}

int ao_kube_find_absent(struct ao_reactor *reactor, struct ao_kube_client *client,
                        const struct ao_kube_discovery *discovery, const struct ao_kube_object_ref *objects,
                        size_t n, unsigned parallel, ao_kube_presence_done *done, void *userdata,
                        struct ao_kube_presence **ret, struct ao_error *reterr)
{
        struct ao_kube_presence *p = ao_xcalloc(1, sizeof(*p));
        *p = (struct ao_kube_presence){.client = client,
                                       .objects = ao_xcalloc(n + 1, sizeof(struct object)),
                                       .n = n,
                                       .parallel = parallel ? parallel : PRESENCE_PARALLEL_DEFAULT,
                                       .done = done,
                                       .userdata = userdata};
        for (size_t i = 0; i < n; i++)
                p->objects[i] = (struct object){
                    .api_version = ao_xstrdup(objects[i].api_version),
                    .kind = ao_xstrdup(objects[i].kind),
                    .namespace = objects[i].namespace ? ao_xstrdup(objects[i].namespace) : NULL,
                    .name = ao_xstrdup(objects[i].name),
                    .owner = p};
        int r = ao_reactor_add_defer(reactor, &p->defer, on_defer, p);
        if (r < 0) {
                presence_free(p);
                return ao_error_set(reterr, r, "cannot check objects: %s", strerror(-r));
        }
        (void) ao_source_set_enabled(p->defer, AO_SOURCE_OFF);
        resolve(p, discovery);
        if (p->absent || n == 0)
                (void) ao_source_set_enabled(p->defer, AO_SOURCE_ONESHOT);
        else
                next_requests(p);
        if (ret)
                *ret = p;
        return 0;
}

void ao_kube_presence_cancel(struct ao_kube_presence *p)
{
        if (p)
                presence_free(p);
}
