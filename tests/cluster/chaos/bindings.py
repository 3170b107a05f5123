# SPDX-License-Identifier: Apache-2.0
"""The kubernetes bindings under test, and what each one should hold according to the server.

Each binding is a global hook of its own (two share a watch on purpose). Every jqFilter result
carries the object's namespace and name, so a hook's binding contexts name the objects they are
about even without the full object, and the suite can rebuild each hook's view from them.
"""
import json
import subprocess
import urllib.parse
from dataclasses import dataclass, field

NAME_FILTER = "{ns: .metadata.namespace, name: .metadata.name, data: .data}"
# Change detection: labels and other keys change nothing the filter sees, so they fire nothing.
VALUE_FILTER = "{ns: .metadata.namespace, name: .metadata.name, v: .data.v}"
ONLY_NAME_FILTER = "{ns: .metadata.namespace, name: .metadata.name}"

# Namespaces the workload writes to. chaos-a/-b/-c carry changing objects; chaos-c's label comes
# and goes, moving it in and out of the namespace label selector; chaos-bulk holds thousands of
# objects, so every list of it is paginated.
NAMESPACES = ["chaos-a", "chaos-b", "chaos-c", "chaos-bulk", "chaos-out"]
NAMED = ["n-0", "n-1", "n-2", "n-3", "n-4"]
BULK_OBJECTS = 1500


@dataclass
class Binding:
    hook: str  # the hook's file name: one binding per hook, except the group hook
    name: str
    kind: str = "ConfigMap"
    namespaces: list = None  # None: all namespaces
    namespace_labels: dict = None  # namespace.labelSelector.matchLabels
    names: list = None
    labels: dict = None  # labelSelector.matchLabels
    field_not_name: str = None  # fieldSelector metadata.name!=...
    jq: str = None  # None: keepFullObjectsInMemory, full objects
    events: list = None  # executeHookOnEvent; None: all
    group: str = None
    extra: dict = field(default_factory=dict)

    def config(self):
        c = {"name": self.name, "kind": self.kind}
        if self.namespaces is not None:
            c["namespace"] = {"nameSelector": {"matchNames": self.namespaces}}
        if self.namespace_labels is not None:
            c["namespace"] = {"labelSelector": {"matchLabels": self.namespace_labels}}
        if self.names is not None:
            c["nameSelector"] = {"matchNames": self.names}
        if self.labels is not None:
            c["labelSelector"] = {"matchLabels": self.labels}
        if self.field_not_name is not None:
            c["fieldSelector"] = {"matchExpressions": [
                {"field": "metadata.name", "operator": "NotEquals", "value": self.field_not_name}]}
        if self.jq is not None:
            c["jqFilter"] = self.jq
            c["keepFullObjectsInMemory"] = False
        if self.events is not None:
            c["executeHookOnEvent"] = self.events
        if self.group is not None:
            c["group"] = self.group
        c.update(self.extra)
        return c

    def full_objects(self):
        return self.jq is None

    # ---- what the server says the binding should hold ------------------------------------------

    def _collections(self, api):
        plural = {"ConfigMap": "configmaps", "Secret": "secrets"}[self.kind]
        if self.namespace_labels is not None:
            selector = ",".join(f"{k}={v}" for k, v in sorted(self.namespace_labels.items()))
            nss = [n["metadata"]["name"] for n in api.list_all("/api/v1/namespaces", label_selector=selector)]
        elif self.namespaces is not None:
            nss = self.namespaces
        else:
            return [f"/api/v1/{plural}"]
        return [f"/api/v1/namespaces/{urllib.parse.quote(ns)}/{plural}" for ns in nss]

    def server_objects(self, api):
        label_selector = ",".join(f"{k}={v}" for k, v in sorted((self.labels or {}).items())) or None
        field_selector = f"metadata.name!={self.field_not_name}" if self.field_not_name else None
        objects = []
        for collection in self._collections(api):
            for obj in api.list_all(collection, label_selector, field_selector):
                if self.names is None or obj["metadata"]["name"] in self.names:
                    obj["apiVersion"], obj["kind"] = "v1", self.kind  # list items carry neither
                    objects.append(obj)
        return objects

    def expected(self, api):
        """{(namespace, name): item} as the binding should hold it: the filter result or the object."""
        objects = self.server_objects(api)
        if self.full_objects():
            return {key_of_object(o): o for o in objects}
        results = jq_each(self.jq, objects)
        return {key_of_result(r): r for r in results}


def key_of_object(obj):
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def key_of_result(result):
    return result.get("ns") or "", result.get("name") or ""


def item_key(binding, item):
    """The key of one snapshot or context item ({"object":..} or {"filterResult":..})."""
    if binding.full_objects():
        return key_of_object(item.get("object") or {})
    return key_of_result(item.get("filterResult") or {})


def item_value(binding, item):
    return item.get("object") if binding.full_objects() else item.get("filterResult")


def jq_each(program, objects):
    """The filter applied to each object by the jq program (the same jq 1.6 as the operator's libjq)."""
    out = subprocess.run(["jq", "-c", f"map({program})"], input=json.dumps(objects), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


BINDINGS = [
    Binding("by-name.sh", "by-name", namespaces=["chaos-a"], names=NAMED, jq=NAME_FILTER),
    Binding("by-label.sh", "by-label", labels={"tier": "x"}, jq=NAME_FILTER),
    Binding("by-field.sh", "by-field", namespaces=["chaos-a"], field_not_name="n-0", jq=VALUE_FILTER),
    Binding("ns-by-label.sh", "ns-by-label", namespace_labels={"chaos": "yes"}, jq=NAME_FILTER),
    Binding("full-objects.sh", "full-objects", namespaces=["chaos-b"]),
    Binding("subset.sh", "subset", namespaces=["chaos-a"], jq=ONLY_NAME_FILTER, events=["Added", "Deleted"]),
    Binding("shared-1.sh", "shared", namespaces=["chaos-b"], jq=NAME_FILTER),
    Binding("shared-2.sh", "shared", namespaces=["chaos-b"], jq=NAME_FILTER),
    Binding("group.sh", "group-cms", namespaces=["chaos-c"], jq=NAME_FILTER, group="g"),
    Binding("group.sh", "group-secrets", kind="Secret", namespaces=["chaos-a"], jq=NAME_FILTER, group="g"),
    Binding("bulk.sh", "bulk", namespaces=["chaos-bulk"], jq=VALUE_FILTER),
]


def hooks():
    """{hook file name: [bindings]} in a stable order."""
    out = {}
    for b in BINDINGS:
        out.setdefault(b.hook, []).append(b)
    return out
