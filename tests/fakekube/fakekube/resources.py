"""The resource table: built-in kinds, kinds added by CustomResourceDefinitions,
and the discovery documents built from them."""

import re

from .util import ApiError

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]


class Resource:
    """One group/version/resource as served under /api/v1 or /apis/GROUP/VERSION."""

    def __init__(self, group, version, plural, kind, namespaced, short_names=(), singular=None,
                 verbs=ALL_VERBS, status=False, returns_object=False, crd=None, categories=()):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.short_names = list(short_names)
        self.singular = singular or kind.lower()
        self.verbs = list(verbs)
        self.status = status                  # has a /status subresource
        self.returns_object = returns_object  # DELETE answers with the object, not a Status
        self.crd = crd                        # name of the CRD that defines it, if any
        self.categories = list(categories)

    @property
    def group_version(self):
        return self.version if self.group == "" else self.group + "/" + self.version

    api_version = group_version

    @property
    def storage_key(self):
        # Every version of a group/resource shares one set of objects.
        return (self.group, self.plural)

    @property
    def qualified(self):
        """The name used in error messages: "configmaps" or "deployments.apps"."""
        return self.plural if self.group == "" else self.plural + "." + self.group

    def details(self, name):
        d = {"name": name}
        if self.group:
            d["group"] = self.group
        d["kind"] = self.plural
        return d

    def not_found(self, name):
        return ApiError(404, "NotFound", '%s "%s" not found' % (self.qualified, name), self.details(name))

    def conflict(self, name, why):
        return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (self.qualified, name, why),
                        self.details(name))

    def discovery_entries(self):
        main = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": self.verbs,
        }
        if self.short_names:
            main["shortNames"] = self.short_names
        if self.categories:
            main["categories"] = self.categories
        out = [main]
        if self.status:
            out.append({"name": self.plural + "/status", "singularName": "", "namespaced": self.namespaced,
                        "kind": self.kind, "verbs": STATUS_VERBS})
        return out


def builtin_resources():
    ns_verbs = [v for v in ALL_VERBS if v != "deletecollection"]
    return [
        Resource("", "v1", "namespaces", "Namespace", False, ["ns"], verbs=ns_verbs, status=True),
        Resource("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
        Resource("", "v1", "secrets", "Secret", True),
        Resource("", "v1", "pods", "Pod", True, ["po"], status=True, returns_object=True, categories=["all"]),
        Resource("", "v1", "services", "Service", True, ["svc"], status=True, returns_object=True,
                 categories=["all"]),
        Resource("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
        Resource("", "v1", "events", "Event", True, ["ev"]),
        Resource("apps", "v1", "deployments", "Deployment", True, ["deploy"], status=True, categories=["all"]),
        Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
        Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
                 ["crd", "crds"], status=True),
    ]


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(v):
    """Sort key putting versions in the order Kubernetes prefers them:
    GA before beta before alpha, higher numbers first, anything else last by name."""
    m = _VERSION_RE.match(v)
    if not m:
        return (3, 0, 0, v)
    major, level, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[level]
    return (rank, -major, -minor, v)


class Registry:
    """The served resources. Callers hold the store lock while using or changing it."""

    def __init__(self):
        self.groups = {}   # group name -> {version -> [Resource]}, in the order first seen
        for r in builtin_resources():
            self._add(r)

    def _add(self, r):
        self.groups.setdefault(r.group, {}).setdefault(r.version, []).append(r)

    def lookup(self, group, version, plural):
        for r in self.groups.get(group, {}).get(version, []):
            if r.plural == plural:
                return r
        return None

    def by_kind(self, api_version, kind):
        group, _, version = api_version.rpartition("/")
        for r in self.groups.get(group, {}).get(version, []):
            if r.kind == kind:
                return r
        return None

    def versions(self, group):
        return sorted(self.groups.get(group, {}), key=version_priority)

    def resources(self, group, version):
        return self.groups.get(group, {}).get(version)

    # -- CustomResourceDefinitions --

    def crd_resources(self, crd_name):
        return [r for versions in self.groups.values() for rs in versions.values() for r in rs
                if r.crd == crd_name]

    def remove_crd(self, crd_name):
        """Forget what a CRD defined; returns the storage keys it served."""
        keys = set()
        for group in list(self.groups):
            versions = self.groups[group]
            for version in list(versions):
                kept = [r for r in versions[version] if r.crd != crd_name]
                keys.update(r.storage_key for r in versions[version] if r.crd == crd_name)
                if kept:
                    versions[version] = kept
                else:
                    del versions[version]
            if not versions:
                del self.groups[group]
        return keys

    def apply_crd(self, crd):
        """Serve what a CRD object describes, replacing what it described before."""
        name = crd["metadata"]["name"]
        self.remove_crd(name)
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, plural, kind = spec.get("group", ""), names.get("plural", ""), names.get("kind", "")
        namespaced = spec.get("scope", "Namespaced") != "Cluster"
        for v in spec.get("versions") or []:
            if not v.get("served", True):
                continue
            status = "status" in ((v.get("subresources") or spec.get("subresources") or {}))
            self._add(Resource(group, v["name"], plural, kind, namespaced, names.get("shortNames") or (),
                               singular=names.get("singular") or kind.lower(), status=status,
                               returns_object=True, crd=name, categories=names.get("categories") or ()))


def validate_crd(crd):
    """The checks a real server makes that a test could trip over."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group"), names.get("plural")
    name = crd["metadata"]["name"]
    problems = []
    if not group:
        problems.append("spec.group: Required value")
    if not plural:
        problems.append("spec.names.plural: Required value")
    if not names.get("kind"):
        problems.append("spec.names.kind: Required value")
    if group and plural and name != plural + "." + group:
        problems.append('metadata.name: Invalid value: "%s": must be spec.names.plural+"."+spec.group' % name)
    if spec.get("scope", "Namespaced") not in ("Namespaced", "Cluster"):
        problems.append("spec.scope: Unsupported value")
    versions = spec.get("versions") or []
    if not versions or not all(isinstance(v, dict) and v.get("name") for v in versions):
        problems.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
    if problems:
        raise ApiError(422, "Invalid", 'CustomResourceDefinition.apiextensions.k8s.io "%s" is invalid: %s'
                       % (name, ", ".join(problems)),
                       {"name": name, "group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"})


def crd_status(crd):
    """The status a real server's CRD controllers would fill in right away."""
    spec = crd.get("spec") or {}
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")] or \
             [v["name"] for v in (spec.get("versions") or [])[:1]]
    cond = lambda t, reason, msg: {"type": t, "status": "True", "lastTransitionTime": crd["metadata"].get(
        "creationTimestamp"), "reason": reason, "message": msg}
    return {
        "conditions": [cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                       cond("Established", "InitialNamesAccepted", "the initial names have been accepted")],
        "acceptedNames": dict(spec.get("names") or {}),
        "storedVersions": stored,
    }
