/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * API discovery: which resources the server has, and how a binding's (apiVersion, kind) maps to
 * one. Fed with the documents of /api (APIVersions), /api/v1 and /apis/<g>/<v> (APIResourceList)
 * and /apis (APIGroupList with preferred versions).
 *
 * Lookup as the Go operator does it: @kind matches a resource's Kind, its plural name or one of
 * its short names, case-insensitively; with an apiVersion ("v1", "apps/v1") only that
 * group/version is searched, without one the preferred version of every group (core first, then
 * groups in server order). Subresources ("pods/status") are never matched, nor are resources
 * without verbs (kube-client skips them too); neither is stored or counted. A group that the
 * APIGroupList does not name (its resources were added without it) counts all its versions as
 * preferred, in the order they were added; core "v1" is the only preferred core version.
 *
 * Strings from the documents that appear in error messages are made printable (one line).
 *
 * Non-logging module; not thread-safe (main thread).
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct cJSON;

struct ao_kube_resource {
        char *group;        /* owned; "" for the core group */
        char *version;      /* owned: "v1" */
        char *api_version;  /* owned: "v1" or "apps/v1" */
        char *kind;         /* owned: "Pod" */
        char *name;         /* owned: the plural, "pods" */
        char **short_names; /* owned, NULL-terminated */
        bool namespaced;
        bool watchable; /* verbs include list and watch */
        bool preferred; /* of its group's preferred version */
};

struct ao_kube_discovery;

/** An empty table (allocation failure aborts, as for every small object). */
struct ao_kube_discovery *ao_kube_discovery_new(void);
/** Free @d and every resource in it; NULL is accepted. Returns NULL. */
struct ao_kube_discovery *ao_kube_discovery_free(struct ao_kube_discovery *d);

/** Forget everything (before a refresh). */
void ao_kube_discovery_clear(struct ao_kube_discovery *d);

/**
 * Add the APIGroupList of /apis: remembers each group's preferred version (its first version
 * when preferredVersion is missing), replacing the previous list. Returns the group/versions to
 * fetch next (malloc'd NULL-terminated array of malloc'd "apps/v1", ..., every version of every
 * group, in server order; caller frees) in @ret_group_versions, which may be NULL.
 * Returns 0 or -EINVAL (nothing changes then).
 */
int ao_kube_discovery_add_groups(struct ao_kube_discovery *d, const struct cJSON *group_list,
                                 char ***ret_group_versions, struct ao_error *reterr);

/**
 * Add the APIResourceList of @group_version ("v1" for /api/v1, "apps/v1"). Errors name the
 * group/version and the entry ("apps/v1: resources[2].kind: not a string"); a "groupVersion" in
 * the document must equal @group_version. Adding a group/version again replaces its entries
 * (a refresh); on error nothing changes. Returns 0 or -EINVAL.
 */
int ao_kube_discovery_add_resources(struct ao_kube_discovery *d, const char *group_version,
                                    const struct cJSON *resource_list, struct ao_error *reterr);

/**
 * Find the resource for @api_version (NULL or "": any preferred) and @kind. Returns NULL with
 * -ENOENT in @reterr ("no resource 'Foo' in apiVersion 'example.com/v1'") when none matches,
 * -EINVAL for an empty kind or an apiVersion that is not "version" or "group/version".
 * The resource is borrowed from @d: valid until its group/version is added again, or @d is
 * cleared or freed.
 */
const struct ao_kube_resource *ao_kube_discovery_find(const struct ao_kube_discovery *d,
                                                      const char *api_version, const char *kind,
                                                      struct ao_error *reterr);

/** Whether @kind names @r: its Kind, plural or a short name, in any case. */
bool ao_kube_resource_matches(const struct ao_kube_resource *r, const char *kind);

/** Resources known (for the debug dump and tests). */
size_t ao_kube_discovery_count(const struct ao_kube_discovery *d);

/**
 * The collection path of @res: "/api/v1/pods", "/api/v1/namespaces/<ns>/pods",
 * "/apis/apps/v1/namespaces/<ns>/deployments"; with @name, that object's path. @ns NULL or ""
 * for all namespaces (or a cluster-scoped resource). Names are percent-encoded where needed.
 * malloc'd.
 */
char *ao_kube_resource_path(const struct ao_kube_resource *res, const char *ns, const char *name);
