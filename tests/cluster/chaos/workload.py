# SPDX-License-Identifier: Apache-2.0
"""The changes a cluster sees while faults last: objects of every selection created, changed and
deleted, a namespace moving in and out of a label selector, and a user editing the config.

Every change is drawn from a seeded random generator, so a seed replays the same changes. The
truth is always read back from the server: a write whose answer was lost may or may not have
happened, and the checks do not care which.
"""
import concurrent.futures
import json
import subprocess

from .api import ApiError
from .bindings import BULK_OBJECTS, NAMED

POOLS = {
    "chaos-a": NAMED + [f"a-{i}" for i in range(8)],
    "chaos-b": [f"b-{i}" for i in range(8)],
    "chaos-c": [f"c-{i}" for i in range(5)],
}
SECRETS = [f"s-{i}" for i in range(4)]
CONFIG_MAP = "/api/v1/namespaces/ao/configmaps/addon-operator"


def bulk_name(i):
    return f"bulk-{i:05d}"


def configmap(ns, name, data, labels=None):
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


class Workload:
    def __init__(self, rng, yaml2json):
        self.rng = rng
        self.yaml2json = yaml2json  # [binary, "tool", "yaml2json"]
        self.user_edits = 0
        self.confirmed_edits = set()  # user edits the server accepted: they must never be lost
        self.changes = 0
        self.failed = 0

    # ---- set-up ------------------------------------------------------------------------------------

    def setup(self, api):
        for ns in ["chaos-a", "chaos-b", "chaos-bulk", "chaos-out", "chaos-ha"]:
            api.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}}, ok=(201, 409))
        api.call("POST", "/api/v1/namespaces", {"metadata": {"name": "chaos-c", "labels": {"chaos": "yes"}}},
                 ok=(201, 409))
        api.call("PATCH", "/api/v1/namespaces/chaos-b", {"metadata": {"labels": {"chaos": "yes"}}},
                 content_type="application/merge-patch+json")
        for ns, names in POOLS.items():
            for name in names[: len(names) // 2]:
                api.call("POST", f"/api/v1/namespaces/{ns}/configmaps",
                         configmap(ns, name, {"v": "0", "w": "0"}, {"tier": "x"}), ok=(201, 409))
        def create_bulk(i):
            api.call("POST", "/api/v1/namespaces/chaos-bulk/configmaps",
                     configmap("chaos-bulk", bulk_name(i), {"v": "0", "pad": "x" * 200}), ok=(201, 409))

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(create_bulk, range(BULK_OBJECTS)))
        api.call("POST", "/api/v1/namespaces/chaos-out/configmaps", configmap("chaos-out", "op-ledger", {}),
                 ok=(201, 409))
        api.call("POST", "/api/v1/namespaces/ao/configmaps",
                 {"metadata": {"name": "addon-operator", "namespace": "ao"},
                  "data": {"global": json.dumps({"userEdits": {"u0": 0}})}}, ok=(201, 409))
        api.call("POST", "/api/v1/namespaces/chaos-ha/configmaps",
                 {"metadata": {"name": "addon-operator", "namespace": "chaos-ha"}, "data": {"global": "{}"}},
                 ok=(201, 409))
        self.confirmed_edits.add("u0")

    # ---- one random change -------------------------------------------------------------------------

    def change(self, api):
        """Make one random change through api; False when the server could not be reached."""
        self.changes += 1
        pick = self.rng.random()
        try:
            if pick < 0.55:
                self._change_object(api)
            elif pick < 0.65:
                self._change_secret(api)
            elif pick < 0.75:
                self._change_bulk(api)
            elif pick < 0.82:
                self._flip_namespace(api)
            else:
                self._edit_config(api)
            return True
        except (OSError, ApiError, ValueError):  # ValueError: a section the suite's YAML reader refused
            self.failed += 1
            return False

    def _value(self):
        return str(self.rng.randrange(1000))

    def _change_object(self, api):
        ns = self.rng.choice(sorted(POOLS))
        name = self.rng.choice(POOLS[ns])
        path = f"/api/v1/namespaces/{ns}/configmaps"
        action = self.rng.choice(["create", "data", "w-only", "label", "delete"])
        labels = {"tier": "x"} if self.rng.random() < 0.6 else None
        if action == "create":
            api.call("POST", path, configmap(ns, name, {"v": self._value(), "w": self._value()}, labels),
                     ok=(201, 409))
        elif action == "delete":
            api.call("DELETE", f"{path}/{name}", ok=(200, 202, 404))
        else:
            patch = {"data": {"v": self._value()}} if action == "data" else (
                {"data": {"w": self._value()}} if action == "w-only" else
                {"metadata": {"labels": {"tier": "x" if self.rng.random() < 0.5 else None}}})
            api.call("PATCH", f"{path}/{name}", patch, "application/merge-patch+json", ok=(200, 404))

    def _change_secret(self, api):
        name = self.rng.choice(SECRETS)
        path = "/api/v1/namespaces/chaos-a/secrets"
        if self.rng.random() < 0.3:
            api.call("DELETE", f"{path}/{name}", ok=(200, 202, 404))
            return
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "chaos-a"},
                "stringData": {"k": self._value()}}
        status, _ = api.request("PUT", f"{path}/{name}", body)
        if status == 404:
            api.call("POST", path, body, ok=(201, 409))
        elif status not in (200, 201):
            raise ApiError(status, f"PUT secret {name}")

    def _change_bulk(self, api):
        name = bulk_name(self.rng.randrange(BULK_OBJECTS + 20))  # a few beyond the initial set
        path = "/api/v1/namespaces/chaos-bulk/configmaps"
        action = self.rng.choice(["create", "data", "delete"])
        if action == "create":
            api.call("POST", path, configmap("chaos-bulk", name, {"v": self._value()}), ok=(201, 409))
        elif action == "delete":
            api.call("DELETE", f"{path}/{name}", ok=(200, 202, 404))
        else:
            api.call("PATCH", f"{path}/{name}", {"data": {"v": self._value()}}, "application/merge-patch+json",
                     ok=(200, 404))

    def _flip_namespace(self, api):
        value = "yes" if self.rng.random() < 0.5 else None
        api.call("PATCH", "/api/v1/namespaces/chaos-c", {"metadata": {"labels": {"chaos": value}}},
                 content_type="application/merge-patch+json")

    def _edit_config(self, api):
        """A user's edit of the global section: read, add a key, write with the resourceVersion read."""
        self.user_edits += 1
        key = f"u{self.user_edits}"
        for _ in range(5):
            cm = api.call("GET", CONFIG_MAP)
            section = self.parse_yaml((cm.get("data") or {}).get("global") or "{}")
            section.setdefault("userEdits", {})[key] = self.user_edits
            cm.setdefault("data", {})["global"] = json.dumps(section)
            status, _ = api.request("PUT", CONFIG_MAP, cm)
            if status == 200:
                self.confirmed_edits.add(key)
                return
            if status != 409:
                raise ApiError(status, "PUT the config ConfigMap")
        raise ApiError(409, "PUT the config ConfigMap: conflicts five times in a row")

    def parse_yaml(self, text):
        out = subprocess.run(self.yaml2json, input=text, capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise ValueError(f"yaml2json: {out.stderr.strip()}")
        doc = json.loads(out.stdout or "null")
        return doc if isinstance(doc, dict) else {}
