/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The resource table behind kubernetes bindings: which (group, version,
 * resource) a binding's apiVersion and kind mean, and the URL paths of its
 * collection and objects.
 *
 * Two tables: the groups of /apis with their preferred versions, in server
 * order, and the resource lists added per group/version, in the order they
 * came. Lookups are linear scans: they happen once per binding, and a
 * cluster has a few hundred resources.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "ao/kube-discovery.h"
#include "ao/alloc.h"
#include "ao/quote.h"
#include "ao/strbuf.h"

struct api_group {
        char *name;      /* owned: "apps" */
        char *preferred; /* owned: "v1"; NULL when the group lists no version */
};

struct group_version {
        char *group_version;                /* owned: "v1", "apps/v1" */
        char *group;                        /* owned: "" for core */
        char *version;                      /* owned */
        struct ao_kube_resource *resources; /* owned, n_resources of them */
        size_t n_resources;
};

struct ao_kube_discovery {
        struct api_group *groups; /* owned: /apis, in server order */
        size_t n_groups;
        struct group_version *gvs; /* owned: added resource lists, in the order they were added */
        size_t n_gvs;
};

static bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

/* Room for a string from a document quoted in a message: one line, shortened. */
#define PRINTABLE_MAX 128

/*
 * @s for an error message: control characters escaped, invalid UTF-8
 * replaced, shortened to fit @buf. Messages end up in log lines, and the
 * strings come from the API server.
 */
static const char *printable(char buf[static PRINTABLE_MAX], const char *s)
{
        _cleanup_(ao_strbuf_done) struct ao_strbuf sb = {0};

        ao_strbuf_append_sanitized(&sb, s);
        if (sb.len >= PRINTABLE_MAX)
                ao_quote_cut(&sb, 0, PRINTABLE_MAX - 4); /* "..." and the NUL fit */
        memcpy(buf, ao_strbuf_str(&sb), sb.len + 1);
        return buf;
}

/* ---- freeing ------------------------------------------------------------------------------------- */

static void strv_free(char **strv)
{
        if (!strv)
                return;
        for (char **s = strv; *s; s++)
                free(*s);
        free(strv);
}

static void resource_done(struct ao_kube_resource *r)
{
        free(r->group);
        free(r->version);
        free(r->api_version);
        free(r->kind);
        free(r->name);
        strv_free(r->short_names);
}

static void resources_free(struct ao_kube_resource *resources, size_t n)
{
        for (size_t i = 0; i < n; i++)
                resource_done(&resources[i]);
        free(resources);
}

static void groups_free(struct api_group *groups, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(groups[i].name);
                free(groups[i].preferred);
        }
        free(groups);
}

static void group_version_done(struct group_version *gv)
{
        free(gv->group_version);
        free(gv->group);
        free(gv->version);
        resources_free(gv->resources, gv->n_resources);
}

struct ao_kube_discovery *ao_kube_discovery_new(void)
{
        return ao_xcalloc(1, sizeof(struct ao_kube_discovery));
}

void ao_kube_discovery_clear(struct ao_kube_discovery *d)
{
        groups_free(d->groups, d->n_groups);
        for (size_t i = 0; i < d->n_gvs; i++)
                group_version_done(&d->gvs[i]);
        free(d->gvs);
        *d = (struct ao_kube_discovery){0};
}

struct ao_kube_discovery *ao_kube_discovery_free(struct ao_kube_discovery *d)
{
        if (!d)
                return NULL;
        ao_kube_discovery_clear(d);
        free(d);
        return NULL;
}

/* ---- lookups in the tables ----------------------------------------------------------------------- */

static const struct api_group *find_group(const struct ao_kube_discovery *d, const char *name)
{
        for (size_t i = 0; i < d->n_groups; i++)
                if (streq(d->groups[i].name, name))
                        return &d->groups[i];
        return NULL;
}

static struct group_version *find_group_version(const struct ao_kube_discovery *d, const char *group,
                                                const char *version)
{
        for (size_t i = 0; i < d->n_gvs; i++)
                if (streq(d->gvs[i].group, group) && streq(d->gvs[i].version, version))
                        return &d->gvs[i];
        return NULL;
}

/*
 * Core v1 is the only core version. A group that /apis does not list (its
 * resources were added without the APIGroupList) has nothing to prefer
 * against: all its versions count, in the order they were added.
 */
static bool is_preferred(const struct ao_kube_discovery *d, const char *group, const char *version)
{
        const struct api_group *g;

        if (group[0] == '\0')
                return streq(version, "v1");
        g = find_group(d, group);
        if (!g)
                return true;
        return g->preferred && streq(g->preferred, version);
}

static void update_preferred(struct ao_kube_discovery *d)
{
        for (size_t i = 0; i < d->n_gvs; i++) {
                struct group_version *gv = &d->gvs[i];
                bool preferred = is_preferred(d, gv->group, gv->version);
                for (size_t j = 0; j < gv->n_resources; j++)
                        gv->resources[j].preferred = preferred;
        }
}

/* ---- parsing ------------------------------------------------------------------------------------- */

/* A version or group name is one non-empty path segment: it becomes part of "group/version". */
static bool is_segment(const char *s)
{
        return s[0] != '\0' && !strchr(s, '/');
}

/* "v1" -> ("", "v1"), "apps/v1" -> ("apps", "v1"); anything else is -EINVAL. */
static int split_group_version(const char *group_version, char **ret_group, char **ret_version)
{
        const char *slash = strchr(group_version, '/');

        if (!slash) {
                if (!is_segment(group_version))
                        return -EINVAL;
                *ret_group = ao_xstrdup("");
                *ret_version = ao_xstrdup(group_version);
                return 0;
        }
        if (slash == group_version || !is_segment(slash + 1))
                return -EINVAL;
        *ret_group = ao_xstrndup(group_version, (size_t) (slash - group_version));
        *ret_version = ao_xstrdup(slash + 1);
        return 0;
}

/* Missing and null read as an empty list: Go leaves empty slices out or writes null. */
static int get_array(const cJSON *obj, const char *key, const cJSON **ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

        if (item && !cJSON_IsNull(item) && !cJSON_IsArray(item))
                return -EINVAL;
        *ret = cJSON_IsArray(item) ? item : NULL;
        return 0;
}

/* A required non-empty string field of resources[i]; *ret borrows from the document. */
static int get_resource_string(const cJSON *item, const char *key, const char *gv, size_t i, const char **ret,
                               struct ao_error *reterr)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, key);

        if (!cJSON_IsString(v))
                return ao_error_set(reterr, -EINVAL, "%s: resources[%zu].%s: not a string", gv, i, key);
        if (v->valuestring[0] == '\0')
                return ao_error_set(reterr, -EINVAL, "%s: resources[%zu].%s: empty", gv, i, key);
        *ret = v->valuestring;
        return 0;
}

/* resources[i].verbs: whether it has any, and whether they include list and watch. */
static int parse_verbs(const cJSON *item, const char *gv, size_t i, bool *ret_any, bool *ret_watchable,
                       struct ao_error *reterr)
{
        const cJSON *verbs, *v;
        bool list = false, watch = false;
        size_t j = 0;

        if (get_array(item, "verbs", &verbs) < 0)
                return ao_error_set(reterr, -EINVAL, "%s: resources[%zu].verbs: not an array", gv, i);
        cJSON_ArrayForEach(v, verbs)
        {
                if (!cJSON_IsString(v))
                        return ao_error_set(reterr, -EINVAL, "%s: resources[%zu].verbs[%zu]: not a string",
                                            gv, i, j);
                list = list || streq(v->valuestring, "list");
                watch = watch || streq(v->valuestring, "watch");
                j++;
        }
        *ret_any = j > 0;
        *ret_watchable = list && watch;
        return 0;
}

static int parse_short_names(const cJSON *item, const char *gv, size_t i, char ***ret,
                             struct ao_error *reterr)
{
        const cJSON *names, *v;
        char **strv;
        size_t j = 0;

        if (get_array(item, "shortNames", &names) < 0)
                return ao_error_set(reterr, -EINVAL, "%s: resources[%zu].shortNames: not an array", gv, i);
        strv = ao_xcalloc((size_t) cJSON_GetArraySize(names) + 1, sizeof(char *));
        cJSON_ArrayForEach(v, names)
        {
                if (!cJSON_IsString(v)) {
                        strv_free(strv);
                        return ao_error_set(reterr, -EINVAL,
                                            "%s: resources[%zu].shortNames[%zu]: not a string", gv, i, j);
                }
                strv[j++] = ao_xstrdup(v->valuestring);
        }
        *ret = strv;
        return 0;
}

/*
 * resources[i] of the list of @gv into @ret. *ret_skip is set for what is
 * never matched: subresources ("pods/status"), and resources without verbs,
 * which kube-client's lookup skips as well (nothing can be done with them).
 */
static int parse_resource(const cJSON *item, const struct group_version *gv, const char *where, size_t i,
                          struct ao_kube_resource *ret, bool *ret_skip, struct ao_error *reterr)
{
        const char *name = NULL, *kind = NULL;
        const cJSON *namespaced;
        char **short_names = NULL;
        bool any_verbs = false, watchable = false;
        int r;

        if (!cJSON_IsObject(item))
                return ao_error_set(reterr, -EINVAL, "%s: resources[%zu]: not an object", where, i);
        r = get_resource_string(item, "name", where, i, &name, reterr);
        if (r < 0)
                return r;
        *ret_skip = true;
        if (strchr(name, '/'))
                return 0;
        r = get_resource_string(item, "kind", where, i, &kind, reterr);
        if (r < 0)
                return r;
        namespaced = cJSON_GetObjectItemCaseSensitive(item, "namespaced");
        if (namespaced && !cJSON_IsBool(namespaced))
                return ao_error_set(reterr, -EINVAL, "%s: resources[%zu].namespaced: not a boolean", where,
                                    i);
        r = parse_verbs(item, where, i, &any_verbs, &watchable, reterr);
        if (r < 0)
                return r;
        r = parse_short_names(item, where, i, &short_names, reterr);
        if (r < 0)
                return r;
        if (!any_verbs) {
                strv_free(short_names);
                return 0;
        }
        *ret = (struct ao_kube_resource){
            .group = ao_xstrdup(gv->group),
            .version = ao_xstrdup(gv->version),
            .api_version = ao_xstrdup(gv->group_version),
            .kind = ao_xstrdup(kind),
            .name = ao_xstrdup(name),
            .short_names = short_names,
            .namespaced = cJSON_IsTrue(namespaced),
            .watchable = watchable,
        };
        *ret_skip = false;
        return 0;
}

static int parse_resources(const cJSON *items, struct group_version *gv, const char *where,
                           struct ao_error *reterr)
{
        const cJSON *item;
        size_t i = 0;

        gv->resources = ao_xcalloc((size_t) cJSON_GetArraySize(items) + 1, sizeof(struct ao_kube_resource));
        cJSON_ArrayForEach(item, items)
        {
                bool skip = true;
                int r = parse_resource(item, gv, where, i++, &gv->resources[gv->n_resources], &skip, reterr);
                if (r < 0)
                        return r;
                if (!skip)
                        gv->n_resources++;
        }
        return 0;
}

int ao_kube_discovery_add_resources(struct ao_kube_discovery *d, const char *group_version,
                                    const struct cJSON *resource_list, struct ao_error *reterr)
{
        struct group_version gv = {0}, *old;
        const cJSON *declared, *items;
        char where[PRINTABLE_MAX], other[PRINTABLE_MAX];
        int r;

        (void) printable(where, group_version);
        if (split_group_version(group_version, &gv.group, &gv.version) < 0)
                return ao_error_set(reterr, -EINVAL, "'%s': not a group/version", where);
        gv.group_version = ao_xstrdup(group_version);
        if (!cJSON_IsObject(resource_list)) {
                r = ao_error_set(reterr, -EINVAL, "%s: not an APIResourceList object", where);
                goto fail;
        }
        /* Guards against storing a document under the wrong name (a mixed-up fetch). */
        declared = cJSON_GetObjectItemCaseSensitive(resource_list, "groupVersion");
        if (declared && !cJSON_IsString(declared)) {
                r = ao_error_set(reterr, -EINVAL, "%s: groupVersion: not a string", where);
                goto fail;
        }
        if (declared && !streq(declared->valuestring, group_version)) {
                r = ao_error_set(reterr, -EINVAL, "%s: groupVersion: '%s' does not match", where,
                                 printable(other, declared->valuestring));
                goto fail;
        }
        if (get_array(resource_list, "resources", &items) < 0) {
                r = ao_error_set(reterr, -EINVAL, "%s: resources: not an array", where);
                goto fail;
        }
        r = parse_resources(items, &gv, where, reterr);
        if (r < 0)
                goto fail;

        /* A list added again is a refresh: it replaces the old entries, in place. */
        old = find_group_version(d, gv.group, gv.version);
        if (old) {
                group_version_done(old);
                *old = gv;
        } else {
                d->gvs = ao_xreallocarray(d->gvs, d->n_gvs + 1, sizeof(struct group_version));
                d->gvs[d->n_gvs++] = gv;
        }
        update_preferred(d);
        return 0;
fail:
        group_version_done(&gv);
        return r;
}

/* The version string of versions[j] or preferredVersion (@what names it in errors). */
static int parse_version(const cJSON *obj, size_t i, const char *what, const char **ret,
                         struct ao_error *reterr)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "version");
        char buf[PRINTABLE_MAX];

        if (!cJSON_IsObject(obj))
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu].%s: not an object", i, what);
        if (!cJSON_IsString(v))
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu].%s.version: not a string", i,
                                    what);
        if (!is_segment(v->valuestring))
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu].%s.version: invalid '%s'", i,
                                    what, printable(buf, v->valuestring));
        *ret = v->valuestring;
        return 0;
}

/* A growing NULL-terminated string array. */
struct strv {
        char **v; /* owned, NULL-terminated once anything was added */
        size_t n;
};

static void strv_add_take(struct strv *sv, char *s)
{
        sv->v = ao_xreallocarray(sv->v, sv->n + 2, sizeof(char *));
        sv->v[sv->n++] = s;
        sv->v[sv->n] = NULL;
}

/* groups[i]: its name and preferred version into @ret, its group/versions appended to @gvs. */
static int parse_group(const cJSON *item, size_t i, struct api_group *ret, struct strv *gvs,
                       struct ao_error *reterr)
{
        const cJSON *name, *versions, *v, *preferred;
        const char *version, *preferred_version = NULL;
        char what[64], buf[PRINTABLE_MAX];
        size_t j = 0;
        int r;

        if (!cJSON_IsObject(item))
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu]: not an object", i);
        name = cJSON_GetObjectItemCaseSensitive(item, "name");
        if (!cJSON_IsString(name))
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu].name: not a string", i);
        if (!is_segment(name->valuestring))
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu].name: invalid '%s'", i,
                                    printable(buf, name->valuestring));
        if (get_array(item, "versions", &versions) < 0)
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu].versions: not an array", i);
        cJSON_ArrayForEach(v, versions)
        {
                (void) snprintf(what, sizeof(what), "versions[%zu]", j++);
                r = parse_version(v, i, what, &version, reterr);
                if (r < 0)
                        return r;
                strv_add_take(gvs, ao_xasprintf("%s/%s", name->valuestring, version));
                if (!preferred_version)
                        preferred_version = version; /* the fallback when preferredVersion is left out */
        }
        preferred = cJSON_GetObjectItemCaseSensitive(item, "preferredVersion");
        if (preferred && !cJSON_IsNull(preferred)) {
                r = parse_version(preferred, i, "preferredVersion", &preferred_version, reterr);
                if (r < 0)
                        return r;
        }
        ret->name = ao_xstrdup(name->valuestring);
        ret->preferred = preferred_version ? ao_xstrdup(preferred_version) : NULL;
        return 0;
}

static bool group_listed_before(const struct api_group *groups, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (streq(groups[i].name, name))
                        return true;
        return false;
}

int ao_kube_discovery_add_groups(struct ao_kube_discovery *d, const struct cJSON *group_list,
                                 char ***ret_group_versions, struct ao_error *reterr)
{
        struct strv gvs = {0};
        const cJSON *items, *item;
        struct api_group *groups;
        char buf[PRINTABLE_MAX];
        size_t n = 0;
        int r;

        if (!cJSON_IsObject(group_list))
                return ao_error_set(reterr, -EINVAL, "APIGroupList: not an object");
        if (get_array(group_list, "groups", &items) < 0)
                return ao_error_set(reterr, -EINVAL, "APIGroupList: groups: not an array");
        groups = ao_xcalloc((size_t) cJSON_GetArraySize(items) + 1, sizeof(struct api_group));
        cJSON_ArrayForEach(item, items)
        {
                r = parse_group(item, n, &groups[n], &gvs, reterr);
                if (r < 0)
                        goto fail;
                n++;
                if (group_listed_before(groups, n - 1, groups[n - 1].name)) {
                        r = ao_error_set(reterr, -EINVAL, "APIGroupList: groups[%zu].name: duplicate '%s'",
                                         n - 1, printable(buf, groups[n - 1].name));
                        goto fail;
                }
        }

        if (!gvs.v)
                gvs.v = ao_xcalloc(1, sizeof(char *));
        if (ret_group_versions)
                *ret_group_versions = TAKE_PTR(gvs.v);
        strv_free(gvs.v);
        groups_free(d->groups, d->n_groups);
        d->groups = groups;
        d->n_groups = n;
        update_preferred(d);
        return 0;
fail:
        strv_free(gvs.v);
        groups_free(groups, n);
        return r;
}

/* ---- finding resources --------------------------------------------------------------------------- */

bool ao_kube_resource_matches(const struct ao_kube_resource *r, const char *kind)
{
        if (strcasecmp(r->kind, kind) == 0 || strcasecmp(r->name, kind) == 0)
                return true;
        for (char **s = r->short_names; *s; s++)
                if (strcasecmp(*s, kind) == 0)
                        return true;
        return false;
}

/* As kube-client: the first resource of the list whose Kind, plural or a short name matches. */
static const struct ao_kube_resource *match_in(const struct group_version *gv, const char *kind)
{
        if (!gv)
                return NULL;
        for (size_t i = 0; i < gv->n_resources; i++)
                if (ao_kube_resource_matches(&gv->resources[i], kind))
                        return &gv->resources[i];
        return NULL;
}

/* Core v1, then each group's preferred version in /apis order, then groups /apis did not list. */
static const struct ao_kube_resource *find_preferred(const struct ao_kube_discovery *d, const char *kind)
{
        const struct ao_kube_resource *r;

        r = match_in(find_group_version(d, "", "v1"), kind);
        if (r)
                return r;
        for (size_t i = 0; i < d->n_groups; i++) {
                const struct api_group *g = &d->groups[i];
                if (!g->preferred)
                        continue;
                r = match_in(find_group_version(d, g->name, g->preferred), kind);
                if (r)
                        return r;
        }
        for (size_t i = 0; i < d->n_gvs; i++) {
                const struct group_version *gv = &d->gvs[i];
                if (gv->group[0] == '\0' || find_group(d, gv->group))
                        continue;
                r = match_in(gv, kind);
                if (r)
                        return r;
        }
        return NULL;
}

const struct ao_kube_resource *ao_kube_discovery_find(const struct ao_kube_discovery *d,
                                                      const char *api_version, const char *kind,
                                                      struct ao_error *reterr)
{
        _cleanup_free_ char *group = NULL, *version = NULL;
        char k[PRINTABLE_MAX], v[PRINTABLE_MAX];
        const struct group_version *gv;
        const struct ao_kube_resource *r;

        if (!kind || kind[0] == '\0') {
                (void) ao_error_set(reterr, -EINVAL, "empty kind");
                return NULL;
        }
        if (!api_version || api_version[0] == '\0') {
                r = find_preferred(d, kind);
                if (!r)
                        (void) ao_error_set(reterr, -ENOENT, "no resource '%s' in the preferred API versions",
                                            printable(k, kind));
                return r;
        }
        if (split_group_version(api_version, &group, &version) < 0) {
                (void) ao_error_set(reterr, -EINVAL, "apiVersion '%s': not a group/version",
                                    printable(v, api_version));
                return NULL;
        }
        gv = find_group_version(d, group, version);
        r = match_in(gv, kind);
        if (!r)
                (void) ao_error_set(reterr, -ENOENT, "no resource '%s' in apiVersion '%s'%s",
                                    printable(k, kind), printable(v, api_version), gv ? "" : " (not served)");
        return r;
}

size_t ao_kube_discovery_count(const struct ao_kube_discovery *d)
{
        size_t n = 0;

        for (size_t i = 0; i < d->n_gvs; i++)
                n += d->gvs[i].n_resources;
        return n;
}

/* ---- paths --------------------------------------------------------------------------------------- */

/* RFC 3986 unreserved characters stay, everything else is %XX: safe in a path segment. */
static void append_segment(struct ao_strbuf *sb, const char *s)
{
        static const char hex[] = "0123456789ABCDEF";

        ao_strbuf_append_c(sb, '/');
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                unsigned char c = *p;
                if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '.' || c == '_' || c == '~') {
                        ao_strbuf_append_c(sb, (char) c);
                } else {
                        ao_strbuf_append_c(sb, '%');
                        ao_strbuf_append_c(sb, hex[c >> 4]);
                        ao_strbuf_append_c(sb, hex[c & 0xF]);
                }
        }
}

char *ao_kube_resource_path(const struct ao_kube_resource *res, const char *ns, const char *name)
{
        struct ao_strbuf sb = {0};

        if (res->group[0] == '\0') {
                ao_strbuf_append(&sb, "/api");
        } else {
                ao_strbuf_append(&sb, "/apis");
                append_segment(&sb, res->group);
        }
        append_segment(&sb, res->version);
        if (res->namespaced && ns && ns[0] != '\0') {
                append_segment(&sb, "namespaces");
                append_segment(&sb, ns);
        }
        append_segment(&sb, res->name);
        if (name && name[0] != '\0')
                append_segment(&sb, name);
        return ao_strbuf_steal(&sb);
}
