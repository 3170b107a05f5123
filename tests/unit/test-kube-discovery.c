/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/kube/discovery.c: lookups by Kind, plural and short name in
 * any case, with and without apiVersion; preferred versions (listed first
 * or not, groups /apis did not list, a late APIGroupList); core before
 * groups; subresources and verb-less resources left out; refreshes; the
 * paths of namespaced, cluster-scoped, core and group resources with
 * percent-encoding; and every malformed document with its exact message.
 * Documents are written as YAML flow mappings for legibility.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/kube-discovery.h"
#include "ao/yaml.h"

#define RW_VERBS "[create, delete, deletecollection, get, list, patch, update, watch]"

static const char core_v1[] =
    "{kind: APIResourceList, groupVersion: v1, resources: ["
    "{name: bindings, singularName: '', namespaced: true, kind: Binding, verbs: [create]},"
    "{name: componentstatuses, namespaced: false, kind: ComponentStatus, verbs: [], shortNames: [cs]},"
    "{name: configmaps, namespaced: true, kind: ConfigMap, verbs: " RW_VERBS ", shortNames: [cm]},"
    "{name: events, namespaced: true, kind: Event, verbs: " RW_VERBS ", shortNames: [ev]},"
    "{name: namespaces, namespaced: false, kind: Namespace, verbs: [create, delete, get, list, patch, "
    "update, watch], shortNames: [ns]},"
    "{name: namespaces/finalize, namespaced: false, kind: Namespace, verbs: [update]},"
    "{name: nodes, namespaced: false, kind: Node, verbs: " RW_VERBS ", shortNames: ['no']},"
    "{name: pods, singularName: pod, namespaced: true, kind: Pod, verbs: " RW_VERBS ", shortNames: [po]},"
    "{name: pods/log, namespaced: true, kind: PodLogOptions, verbs: [get]},"
    "{name: pods/status, namespaced: true, kind: Pod, verbs: [get, patch, update]}]}";

static const char apps_v1[] =
    "{kind: APIResourceList, apiVersion: v1, groupVersion: apps/v1, resources: ["
    "{name: daemonsets, namespaced: true, kind: DaemonSet, verbs: " RW_VERBS ", shortNames: [ds]},"
    "{name: deployments, singularName: deployment, namespaced: true, kind: Deployment, verbs: " RW_VERBS
    ", shortNames: [deploy]},"
    "{name: deployments/scale, namespaced: true, group: autoscaling, version: v1, kind: Scale, verbs: "
    "[get, patch, update]},"
    "{name: deployments/status, namespaced: true, kind: Deployment, verbs: [get, patch, update]},"
    "{name: replicasets, namespaced: true, kind: ReplicaSet, verbs: " RW_VERBS ", shortNames: [rs]}]}";

static const char events_v1[] =
    "{groupVersion: events.k8s.io/v1, resources: ["
    "{name: events, namespaced: true, kind: Event, verbs: " RW_VERBS ", shortNames: [ev]}]}";

/* A CRD group served in two versions; Gadget only exists in the older one. */
static const char example_v1[] = "{groupVersion: example.com/v1, resources: ["
                                 "{name: widgets, singularName: widget, namespaced: false, kind: Widget, "
                                 "verbs: " RW_VERBS ", shortNames: [wg, wgt]}]}";
static const char example_v1beta1[] = "{groupVersion: example.com/v1beta1, resources: ["
                                      "{name: widgets, namespaced: true, kind: Widget, verbs: " RW_VERBS "},"
                                      "{name: gadgets, namespaced: true, kind: Gadget, verbs: [get, list]}]}";

/* The preferred version is not the first one listed. */
static const char beta_v2beta1[] = "{groupVersion: beta.example.com/v2beta1, resources: ["
                                   "{name: things, namespaced: true, kind: Thing, verbs: " RW_VERBS "}]}";
static const char beta_v1[] = "{groupVersion: beta.example.com/v1, resources: ["
                              "{name: things, namespaced: true, kind: Thing, verbs: " RW_VERBS "}]}";

static const char groups[] =
    "{kind: APIGroupList, apiVersion: v1, groups: ["
    "{name: apps, versions: [{groupVersion: apps/v1, version: v1}], "
    "preferredVersion: {groupVersion: apps/v1, version: v1}},"
    "{name: events.k8s.io, versions: [{groupVersion: events.k8s.io/v1, version: v1}], "
    "preferredVersion: {groupVersion: events.k8s.io/v1, version: v1}},"
    "{name: example.com, versions: [{groupVersion: example.com/v1, version: v1}, "
    "{groupVersion: example.com/v1beta1, version: v1beta1}], "
    "preferredVersion: {groupVersion: example.com/v1, version: v1}},"
    "{name: beta.example.com, versions: [{groupVersion: beta.example.com/v2beta1, version: v2beta1}, "
    "{groupVersion: beta.example.com/v1, version: v1}], "
    "preferredVersion: {groupVersion: beta.example.com/v1, version: v1}},"
    "{name: metrics.k8s.io, versions: [{groupVersion: metrics.k8s.io/v1beta1, version: v1beta1}]}]}";

static cJSON *doc(const char *yaml)
{
        struct ao_error err = {0};
        cJSON *json = NULL;

        if (ao_yaml_load(yaml, strlen(yaml), "test", &json, &err) < 0) {
                printf("# %s\n", err.msg);
                tap_bail("test document does not load");
        }
        return json;
}

static int add(struct ao_kube_discovery *d, const char *gv, const char *yaml, struct ao_error *err)
{
        cJSON *json = doc(yaml);
        int r = ao_kube_discovery_add_resources(d, gv, json, err);
        cJSON_Delete(json);
        return r;
}

static int add_groups(struct ao_kube_discovery *d, const char *yaml, char ***ret, struct ao_error *err)
{
        cJSON *json = doc(yaml);
        int r = ao_kube_discovery_add_groups(d, json, ret, err);
        cJSON_Delete(json);
        return r;
}

static void strv_free(char **strv)
{
        for (char **s = strv; s && *s; s++)
                free(*s);
        free(strv);
}

/* The whole cluster above, /apis first as the operator fetches it. */
static struct ao_kube_discovery *cluster(void)
{
        struct ao_kube_discovery *d = ao_kube_discovery_new();
        struct ao_error err = {0};
        char **gvs = NULL;
        int r = 0;

        r |= add_groups(d, groups, &gvs, &err);
        strv_free(gvs);
        r |= add(d, "v1", core_v1, &err);
        r |= add(d, "apps/v1", apps_v1, &err);
        r |= add(d, "events.k8s.io/v1", events_v1, &err);
        r |= add(d, "example.com/v1", example_v1, &err);
        r |= add(d, "example.com/v1beta1", example_v1beta1, &err);
        r |= add(d, "beta.example.com/v2beta1", beta_v2beta1, &err);
        r |= add(d, "beta.example.com/v1", beta_v1, &err);
        if (r != 0) {
                printf("# %s\n", err.msg);
                tap_bail("test cluster does not load");
        }
        return d;
}

/* "apiVersion/plural" of what find() returns, or "ENOENT: message" and the like. */
static char *found(const struct ao_kube_discovery *d, const char *api_version, const char *kind)
{
        struct ao_error err = {0};
        const struct ao_kube_resource *r = ao_kube_discovery_find(d, api_version, kind, &err);
        char buf[1024];

        if (r)
                (void) snprintf(buf, sizeof(buf), "%s/%s", r->api_version, r->name);
        else
                (void) snprintf(buf, sizeof(buf), "%s: %s", err.code == -ENOENT ? "ENOENT" : "EINVAL",
                                err.msg);
        return strdup(buf);
}

/* @s with control characters as '?', for a one-line test name. */
static const char *one_line(char *buf, size_t size, const char *s)
{
        size_t n = 0;

        for (; *s && n + 1 < size; s++)
                buf[n++] = (unsigned char) *s < 0x20 ? '?' : *s;
        buf[n] = '\0';
        return buf;
}

static void check_find(const struct ao_kube_discovery *d, const char *api_version, const char *kind,
                       const char *want)
{
        char *got = found(d, api_version, kind), a[64], k[64];
        tap_is_str(got, want, "find(%s, '%s')", api_version ? one_line(a, sizeof(a), api_version) : "NULL",
                   one_line(k, sizeof(k), kind));
        free(got);
}

static void test_groups(void)
{
        struct ao_kube_discovery *d = ao_kube_discovery_new();
        struct ao_error err = {0};
        char **gvs = NULL;
        const char *want[] = {"apps/v1",
                              "events.k8s.io/v1",
                              "example.com/v1",
                              "example.com/v1beta1",
                              "beta.example.com/v2beta1",
                              "beta.example.com/v1",
                              "metrics.k8s.io/v1beta1",
                              NULL};
        size_t i;

        tap_is_int(add_groups(d, groups, &gvs, &err), 0, "APIGroupList loads");
        for (i = 0; want[i] && gvs[i]; i++)
                tap_is_str(gvs[i], want[i], "group/version %zu to fetch", i);
        tap_ok(!want[i] && !gvs[i], "every version of every group, in server order");
        strv_free(gvs);
        tap_is_int(add_groups(d, "{kind: APIGroupList}", NULL, &err), 0, "no groups, no out-array: fine");
        tap_is_int(add_groups(d, "{groups: []}", &gvs, &err), 0, "empty group list");
        tap_ok(gvs && !gvs[0], "an empty list of group/versions is an empty array, not NULL");
        strv_free(gvs);
        ao_kube_discovery_free(d);
}

static void test_find(void)
{
        struct ao_kube_discovery *d = cluster();

        /* core 6 (componentstatuses has no verbs), apps 3, then 1, 1, 2, 1, 1: no subresources */
        tap_is_int(ao_kube_discovery_count(d), 6 + 3 + 1 + 1 + 2 + 1 + 1,
                   "resources counted without the rest");

        check_find(d, NULL, "Pod", "v1/pods");
        check_find(d, NULL, "pod", "v1/pods");
        check_find(d, "", "PODS", "v1/pods");
        check_find(d, NULL, "po", "v1/pods");
        check_find(d, NULL, "PO", "v1/pods");
        check_find(d, "v1", "pOd", "v1/pods");
        check_find(d, NULL, "deploy", "apps/v1/deployments");
        check_find(d, NULL, "Deployment", "apps/v1/deployments");
        check_find(d, NULL, "DEPLOYMENTS", "apps/v1/deployments");
        check_find(d, "apps/v1", "deployment", "apps/v1/deployments");
        check_find(d, "apps/v1", "rs", "apps/v1/replicasets");
        check_find(d, "v1", "Deployment", "ENOENT: no resource 'Deployment' in apiVersion 'v1'");
        check_find(d, NULL, "Event", "v1/events");
        check_find(d, NULL, "ev", "v1/events");
        check_find(d, "events.k8s.io/v1", "Event", "events.k8s.io/v1/events");
        check_find(d, NULL, "Widget", "example.com/v1/widgets");
        check_find(d, NULL, "wgt", "example.com/v1/widgets");
        check_find(d, "example.com/v1beta1", "widget", "example.com/v1beta1/widgets");
        check_find(d, "example.com/v1beta1", "Widgets", "example.com/v1beta1/widgets");
        check_find(d, NULL, "Gadget", "ENOENT: no resource 'Gadget' in the preferred API versions");
        check_find(d, "example.com/v1beta1", "Gadget", "example.com/v1beta1/gadgets");
        check_find(d, NULL, "Thing", "beta.example.com/v1/things");
        check_find(d, "beta.example.com/v2beta1", "Thing", "beta.example.com/v2beta1/things");
        check_find(d, "foo.io/v1", "Foo", "ENOENT: no resource 'Foo' in apiVersion 'foo.io/v1' (not served)");
        check_find(d, "metrics.k8s.io/v1beta1", "PodMetrics",
                   "ENOENT: no resource 'PodMetrics' in apiVersion 'metrics.k8s.io/v1beta1' (not served)");
        check_find(d, NULL, "pods/status", "ENOENT: no resource 'pods/status' in the preferred API versions");
        check_find(d, NULL, "Scale", "ENOENT: no resource 'Scale' in the preferred API versions");
        check_find(d, NULL, "PodLogOptions",
                   "ENOENT: no resource 'PodLogOptions' in the preferred API versions");
        check_find(d, NULL, "cs", "ENOENT: no resource 'cs' in the preferred API versions");
        check_find(d, NULL, "", "EINVAL: empty kind");
        check_find(d, "apps/v1/x", "Pod", "EINVAL: apiVersion 'apps/v1/x': not a group/version");
        check_find(d, "/v1", "Pod", "EINVAL: apiVersion '/v1': not a group/version");
        check_find(d, NULL, "Binding", "v1/bindings");
        check_find(d, NULL, "no", "v1/nodes");
        check_find(d, "a\nb/v1", "x\ty", "ENOENT: no resource 'x\\ty' in apiVersion 'a\\nb/v1' (not served)");
        char kind[161], want[256];
        memset(kind, 'K', 160);
        kind[160] = '\0';
        (void) snprintf(want, sizeof(want), "ENOENT: no resource '%.124s...' in the preferred API versions",
                        kind);
        check_find(d, NULL, kind, want);

        ao_kube_discovery_free(d);
}

static void test_fields(void)
{
        struct ao_kube_discovery *d = cluster();
        struct ao_error err = {0};
        const struct ao_kube_resource *r;

        r = ao_kube_discovery_find(d, NULL, "deploy", &err);
        tap_ok(r && strcmp(r->group, "apps") == 0 && strcmp(r->version, "v1") == 0 &&
                   strcmp(r->kind, "Deployment") == 0 && r->namespaced && r->watchable && r->preferred,
               "deployments: group, version, kind, namespaced, watchable, preferred");
        tap_ok(r && r->short_names[0] && strcmp(r->short_names[0], "deploy") == 0 && !r->short_names[1],
               "deployments: short names");
        r = ao_kube_discovery_find(d, NULL, "Namespace", &err);
        tap_ok(r && r->group[0] == '\0' && !r->namespaced && r->preferred,
               "namespaces: core, cluster-scoped");
        r = ao_kube_discovery_find(d, NULL, "Binding", &err);
        tap_ok(r && !r->watchable && r->short_names && !r->short_names[0],
               "bindings: not watchable, no short names");
        r = ao_kube_discovery_find(d, "example.com/v1beta1", "Widget", &err);
        tap_ok(r && !r->preferred && r->namespaced, "example.com/v1beta1 widgets: not preferred");
        r = ao_kube_discovery_find(d, "example.com/v1beta1", "Gadget", &err);
        tap_ok(r && !r->watchable, "gadgets: list without watch is not watchable");
        ao_kube_discovery_free(d);
}

/* Resource lists added without (or before) the APIGroupList. */
static void test_preferred_without_groups(void)
{
        struct ao_kube_discovery *d = ao_kube_discovery_new();
        struct ao_error err = {0};
        int r = 0;

        r |= add(d, "example.com/v1beta1", example_v1beta1, &err);
        r |= add(d, "example.com/v1", example_v1, &err);
        r |= add(d, "apps/v1", apps_v1, &err);
        tap_is_int(r, 0, "resource lists load without an APIGroupList");
        check_find(d, NULL, "Widget", "example.com/v1beta1/widgets");
        check_find(d, NULL, "Gadget", "example.com/v1beta1/gadgets");
        check_find(d, NULL, "deploy", "apps/v1/deployments");
        tap_is_int(add_groups(d, groups, NULL, &err), 0, "then the APIGroupList");
        check_find(d, NULL, "Widget", "example.com/v1/widgets");
        check_find(d, NULL, "Gadget", "ENOENT: no resource 'Gadget' in the preferred API versions");
        tap_ok(!ao_kube_discovery_find(d, "example.com/v1beta1", "Widget", &err)->preferred,
               "the late APIGroupList updates the preferred flags");

        /* a group whose preferredVersion is missing falls back to its first version */
        tap_is_int(add_groups(d,
                              "{groups: [{name: example.com, versions: [{version: v1beta1}, {version: v1}], "
                              "preferredVersion: null}]}",
                              NULL, &err),
                   0, "APIGroupList without preferredVersion");
        check_find(d, NULL, "Gadget", "example.com/v1beta1/gadgets");
        check_find(d, NULL, "Deployment", "apps/v1/deployments");

        /* core versions other than v1 are never preferred */
        tap_is_int(add(d, "v2", "{resources: [{name: pods, kind: Pod, verbs: [get]}]}", &err), 0, "core v2");
        check_find(d, NULL, "Pod", "ENOENT: no resource 'Pod' in the preferred API versions");
        check_find(d, "v2", "Pod", "v2/pods");
        ao_kube_discovery_free(d);
}

static void test_core_first(void)
{
        struct ao_kube_discovery *d = ao_kube_discovery_new();
        struct ao_error err = {0};

        /* Added in the opposite order of the lookup: the order of adding does not matter. */
        (void) add(d, "events.k8s.io/v1", events_v1, &err);
        (void) add(d, "v1", core_v1, &err);
        check_find(d, NULL, "Event", "v1/events");
        (void) add_groups(d, groups, NULL, &err);
        check_find(d, NULL, "events", "v1/events");
        ao_kube_discovery_free(d);
}

static void test_refresh(void)
{
        struct ao_kube_discovery *d = cluster();
        struct ao_error err = {0};
        size_t before = ao_kube_discovery_count(d);
        int r;

        r = add(d, "apps/v1",
                "{groupVersion: apps/v1, resources: [{name: deployments, namespaced: true, kind: Deployment, "
                "verbs: [get, list, watch]}]}",
                &err);
        tap_is_int(r, 0, "apps/v1 again");
        tap_is_int(ao_kube_discovery_count(d), before - 2, "its old entries are replaced");
        check_find(d, NULL, "rs", "ENOENT: no resource 'rs' in the preferred API versions");
        check_find(d, NULL, "deploy", "ENOENT: no resource 'deploy' in the preferred API versions");
        check_find(d, NULL, "deployment", "apps/v1/deployments");

        r = add(d, "apps/v1", "{groupVersion: apps/v1, resources: [{name: x, kind: 7, verbs: [get]}]}", &err);
        tap_is_int(r, -EINVAL, "a broken refresh fails");
        check_find(d, NULL, "deployment", "apps/v1/deployments");
        tap_is_int(ao_kube_discovery_count(d), before - 2, "and keeps what was there");

        r = add_groups(d, "{groups: [{name: 1}]}", NULL, &err);
        tap_is_int(r, -EINVAL, "a broken APIGroupList fails");
        check_find(d, NULL, "Widget", "example.com/v1/widgets");

        ao_kube_discovery_clear(d);
        tap_is_int(ao_kube_discovery_count(d), 0, "clear forgets everything");
        check_find(d, NULL, "Pod", "ENOENT: no resource 'Pod' in the preferred API versions");
        tap_is_int(add(d, "v1", core_v1, &err), 0, "usable after clear");
        check_find(d, NULL, "Pod", "v1/pods");
        ao_kube_discovery_free(d);
        tap_ok(ao_kube_discovery_free(NULL) == NULL, "free(NULL)");
}

static void check_path(const struct ao_kube_discovery *d, const char *api_version, const char *kind,
                       const char *ns, const char *name, const char *want)
{
        struct ao_error err = {0};
        const struct ao_kube_resource *r = ao_kube_discovery_find(d, api_version, kind, &err);
        char *path = r ? ao_kube_resource_path(r, ns, name) : NULL;

        tap_is_str(path, want, "path of %s ns=%s name=%s", kind, ns ? ns : "NULL", name ? name : "NULL");
        free(path);
}

static void test_paths(void)
{
        struct ao_kube_discovery *d = cluster();

        check_path(d, NULL, "Pod", NULL, NULL, "/api/v1/pods");
        check_path(d, NULL, "Pod", "", NULL, "/api/v1/pods");
        check_path(d, NULL, "Pod", "default", NULL, "/api/v1/namespaces/default/pods");
        check_path(d, NULL, "Pod", "default", "web-0", "/api/v1/namespaces/default/pods/web-0");
        check_path(d, NULL, "Pod", NULL, "web-0", "/api/v1/pods/web-0");
        check_path(d, NULL, "Pod", "default", "", "/api/v1/namespaces/default/pods");
        check_path(d, NULL, "Namespace", NULL, NULL, "/api/v1/namespaces");
        check_path(d, NULL, "Namespace", "ignored", "kube-system", "/api/v1/namespaces/kube-system");
        check_path(d, NULL, "Node", "x", "node-1.example.com", "/api/v1/nodes/node-1.example.com");
        check_path(d, NULL, "deploy", "d", "x", "/apis/apps/v1/namespaces/d/deployments/x");
        check_path(d, NULL, "deploy", NULL, NULL, "/apis/apps/v1/deployments");
        check_path(d, NULL, "Widget", "ns", "w", "/apis/example.com/v1/widgets/w");
        check_path(d, "example.com/v1beta1", "Widget", "ns", "w",
                   "/apis/example.com/v1beta1/namespaces/ns/widgets/w");
        check_path(d, NULL, "Pod", "a b", "x/y?z#%", "/api/v1/namespaces/a%20b/pods/x%2Fy%3Fz%23%25");
        check_path(d, NULL, "Pod", "n", "caf\xc3\xa9~_.-", "/api/v1/namespaces/n/pods/caf%C3%A9~_.-");
        check_path(d, NULL, "Pod", "n", "..", "/api/v1/namespaces/n/pods/..");
        ao_kube_discovery_free(d);
}

struct bad_case {
        const char *gv;
        const char *yaml;
        const char *msg;
};

static const struct bad_case bad_lists[] = {
    {"v1", "[]", "v1: not an APIResourceList object"},
    {"v1", "null", "v1: not an APIResourceList object"},
    {"apps/v1", "{resources: {}}", "apps/v1: resources: not an array"},
    {"apps/v1", "{groupVersion: v1, resources: []}", "apps/v1: groupVersion: 'v1' does not match"},
    {"apps/v1", "{groupVersion: 1}", "apps/v1: groupVersion: not a string"},
    {"apps/v1", "{resources: [{name: a, kind: A, verbs: [get]}, 3]}", "apps/v1: resources[1]: not an object"},
    {"apps/v1", "{resources: [{name: a, kind: A}, {name: b, kind: B}, {name: c, kind: 3}]}",
     "apps/v1: resources[2].kind: not a string"},
    {"apps/v1", "{resources: [{kind: A}]}", "apps/v1: resources[0].name: not a string"},
    {"apps/v1", "{resources: [{name: '', kind: A}]}", "apps/v1: resources[0].name: empty"},
    {"apps/v1", "{resources: [{name: a, kind: ''}]}", "apps/v1: resources[0].kind: empty"},
    {"apps/v1", "{resources: [{name: a, kind: A, namespaced: 'true'}]}",
     "apps/v1: resources[0].namespaced: not a boolean"},
    {"apps/v1", "{resources: [{name: a, kind: A, verbs: get}]}", "apps/v1: resources[0].verbs: not an array"},
    {"apps/v1", "{resources: [{name: a, kind: A, verbs: [get, 1]}]}",
     "apps/v1: resources[0].verbs[1]: not a string"},
    {"apps/v1", "{resources: [{name: a, kind: A, verbs: [get], shortNames: a}]}",
     "apps/v1: resources[0].shortNames: not an array"},
    {"apps/v1", "{resources: [{name: a, kind: A, verbs: [get], shortNames: [a, null]}]}",
     "apps/v1: resources[0].shortNames[1]: not a string"},
    {"", "{}", "'': not a group/version"},
    {"/v1", "{}", "'/v1': not a group/version"},
    {"apps/", "{}", "'apps/': not a group/version"},
    {"a/b/c", "{}", "'a/b/c': not a group/version"},
};

static const struct bad_case bad_groups[] = {
    {NULL, "[]", "APIGroupList: not an object"},
    {NULL, "{groups: {}}", "APIGroupList: groups: not an array"},
    {NULL, "{groups: [1]}", "APIGroupList: groups[0]: not an object"},
    {NULL, "{groups: [{name: a}, {name: 2}]}", "APIGroupList: groups[1].name: not a string"},
    {NULL, "{groups: [{name: ''}]}", "APIGroupList: groups[0].name: invalid ''"},
    {NULL, "{groups: [{name: a/b}]}", "APIGroupList: groups[0].name: invalid 'a/b'"},
    {NULL, "{groups: [{name: a, versions: v1}]}", "APIGroupList: groups[0].versions: not an array"},
    {NULL, "{groups: [{name: a, versions: [{version: v1}, v2]}]}",
     "APIGroupList: groups[0].versions[1]: not an object"},
    {NULL, "{groups: [{name: a, versions: [{groupVersion: a/v1}]}]}",
     "APIGroupList: groups[0].versions[0].version: not a string"},
    {NULL, "{groups: [{name: a, versions: [{version: v/1}]}]}",
     "APIGroupList: groups[0].versions[0].version: invalid 'v/1'"},
    {NULL, "{groups: [{name: a, preferredVersion: v1}]}",
     "APIGroupList: groups[0].preferredVersion: not an object"},
    {NULL, "{groups: [{name: a, preferredVersion: {version: 1}}]}",
     "APIGroupList: groups[0].preferredVersion.version: not a string"},
    {NULL, "{groups: [{name: a}, {name: b}, {name: a}]}", "APIGroupList: groups[2].name: duplicate 'a'"},
};

static void test_malformed(void)
{
        struct ao_kube_discovery *d = ao_kube_discovery_new();

        for (size_t i = 0; i < AO_ARRAY_SIZE(bad_lists); i++) {
                struct ao_error err = {0};
                int r = add(d, bad_lists[i].gv, bad_lists[i].yaml, &err);
                tap_ok(r == -EINVAL && strcmp(err.msg, bad_lists[i].msg) == 0, "bad list: %s",
                       bad_lists[i].msg);
                if (r != -EINVAL || strcmp(err.msg, bad_lists[i].msg) != 0)
                        printf("#   got %d '%s'\n", r, err.msg);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad_groups); i++) {
                struct ao_error err = {0};
                char **gvs = (char **) 1;
                int r = add_groups(d, bad_groups[i].yaml, &gvs, &err);
                tap_ok(r == -EINVAL && strcmp(err.msg, bad_groups[i].msg) == 0 && gvs == (char **) 1,
                       "bad groups: %s", bad_groups[i].msg);
                if (r != -EINVAL || strcmp(err.msg, bad_groups[i].msg) != 0)
                        printf("#   got %d '%s'\n", r, err.msg);
        }
        tap_is_int(ao_kube_discovery_count(d), 0, "nothing was added by the failures");

        /* What is allowed to be missing. */
        struct ao_error err = {0};
        tap_is_int(add(d, "v1", "{}", &err), 0, "a list without resources");
        tap_is_int(add(d, "v1", "{resources: null}", &err), 0, "resources: null");
        tap_is_int(add(d, "v1", "{resources: [{name: x/y, kind: 3}]}", &err), 0,
                   "subresources are skipped before their fields are checked");
        tap_is_int(add(d, "g/v", "{resources: [{name: a, kind: A, verbs: [get]}]}", &err), 0,
                   "namespaced and shortNames may be missing");
        tap_is_int(ao_kube_discovery_count(d), 1, "one resource");
        check_find(d, "g/v", "a", "g/v/a");
        ao_kube_discovery_free(d);
}

int main(void)
{
        test_groups();
        test_find();
        test_fields();
        test_preferred_without_groups();
        test_core_first();
        test_refresh();
        test_paths();
        test_malformed();
        return tap_done();
}
