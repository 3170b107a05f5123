#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes API side of bench/bench-first-sync.sh (standard library only).

    first-sync-api.py ENV_FILE namespace NAME
        create namespace NAME (an existing one is fine)
    first-sync-api.py ENV_FILE create NAMESPACE FROM TO [THREADS]
        create ConfigMaps cm-FROM .. cm-(TO-1) in NAMESPACE with THREADS (default 16) threads, each
        holding one persistent HTTPS connection and POSTing one object at a time; an object that
        exists already (409) counts as created. Progress every 10,000 objects on stderr.
    first-sync-api.py ENV_FILE size NAMESPACE
        the compact JSON size in bytes of the first ConfigMap of NAMESPACE as the server returns it
        in a LIST (with its uid, resourceVersion, creationTimestamp and managedFields)
    first-sync-api.py ENV_FILE bump NAMESPACE
        two writes (a Secret "first-sync-bump" created or replaced, then deleted) to move etcd's
        revision on, so that a ConfigMap informer's resourceVersion is older than what a restarted
        kube-apiserver's watch cache starts from: it gets 410 Gone and lists again. A Secret, so
        that no ConfigMap watch sees the writes (an event or a bookmark would move its
        resourceVersion on as well)

ENV_FILE is tests/cluster/cluster.sh's WORKDIR/env (API, CA, ADMIN_TOKEN): every request is a real
HTTP request to kube-apiserver with the admin token.
"""
import http.client
import json
import sys
import threading
import time

from cluster_api import ClusterApi, load_env


class Api(ClusterApi):
    def __init__(self, env):
        super().__init__(env)
        self.headers["Content-Type"] = "application/json"
        self.conn = None

    def request(self, method, path, body=None):
        """One request on this object's persistent connection, reconnecting once if it was closed."""
        data = json.dumps(body, separators=(",", ":")) if body is not None else None
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = self.connect(timeout=60)
            try:
                self.conn.request(method, path, body=data, headers=self.headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                return resp.status, raw
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def configmap(ns, i):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm-%06d" % i, "namespace": ns,
                         "labels": {"app": "bench", "index": str(i)}},
            "data": {"key": "value-%d" % i}}


def namespace(env, name):
    status, raw = Api(env).request("POST", "/api/v1/namespaces",
                                   {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    if status not in (201, 409):
        raise SystemExit("namespace %s: HTTP %d: %s" % (name, status, raw[:300]))


def create(env, ns, first, end, threads):
    path = "/api/v1/namespaces/%s/configmaps" % ns
    lock = threading.Lock()
    state = {"next": first, "done": 0, "error": None}
    total = end - first
    t0 = time.monotonic()

    def worker():
        api = Api(env)
        while True:
            with lock:
                if state["error"] or state["next"] >= end:
                    return
                i = state["next"]
                state["next"] += 1
            try:
                status, raw = api.request("POST", path, configmap(ns, i))
            except Exception as e:  # reported once, the other threads stop at their next object
                with lock:
                    state["error"] = state["error"] or "cm-%06d: %s" % (i, e)
                return
            with lock:
                if status not in (201, 409):
                    state["error"] = state["error"] or "cm-%06d: HTTP %d: %s" % (i, status, raw[:300])
                    return
                state["done"] += 1
                if state["done"] % 10000 == 0:
                    print("first-sync-api: %d/%d ConfigMaps in %s created (%.0f/s)"
                          % (state["done"], total, ns, state["done"] / (time.monotonic() - t0)),
                          file=sys.stderr, flush=True)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if state["error"]:
        raise SystemExit("create: " + state["error"])
    print("first-sync-api: %d ConfigMaps cm-%06d..cm-%06d in %s created in %.1f s"
          % (total, first, end - 1, ns, time.monotonic() - t0), file=sys.stderr)


def size(env, ns):
    status, raw = Api(env).request("GET", "/api/v1/namespaces/%s/configmaps?limit=1" % ns)
    if status != 200:
        raise SystemExit("size: HTTP %d: %s" % (status, raw[:300]))
    items = json.loads(raw)["items"]
    print(len(json.dumps(items[0], separators=(",", ":"))) if items else 0)


def bump(env, ns):
    api = Api(env)
    path = "/api/v1/namespaces/%s/secrets" % ns
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "first-sync-bump"},
            "stringData": {"at": str(time.time())}}
    status, raw = api.request("POST", path, body)
    if status == 409:
        status, raw = api.request("PUT", path + "/first-sync-bump", body)
    if status not in (200, 201):
        raise SystemExit("bump: HTTP %d: %s" % (status, raw[:300]))
    status, raw = api.request("DELETE", path + "/first-sync-bump")
    if status != 200:
        raise SystemExit("bump: DELETE: HTTP %d: %s" % (status, raw[:300]))


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    env, cmd, args = load_env(argv[1]), argv[2], argv[3:]
    if cmd == "namespace" and len(args) == 1:
        namespace(env, args[0])
    elif cmd == "create" and len(args) in (3, 4):
        create(env, args[0], int(args[1]), int(args[2]), int(args[3]) if len(args) == 4 else 16)
    elif cmd == "size" and len(args) == 1:
        size(env, args[0])
    elif cmd == "bump" and len(args) == 1:
        bump(env, args[0])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
