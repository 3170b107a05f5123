#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes API side of bench/bench-releases.sh (standard library only).

    releases-api.py ENV_FILE rbac USER
        bind USER to cluster-admin (ClusterRoleBinding "addon-operator-bench")
    releases-api.py ENV_FILE clean NAMESPACE
        delete every ConfigMap, Secret, ServiceAccount and Deployment of NAMESPACE (the releases'
        objects and helm's release Secrets) and wait until none is left
    releases-api.py ENV_FILE heal NAMESPACE SAMPLES TIMEOUT BUDGET MAX_SLOW IDLE_CMD OBJECT...
        deletion -> restoration: for each sample, wait until IDLE_CMD (a shell command printing
        the operator's main queue as JSON) shows an empty queue, read the next OBJECT
        ("ConfigMap/NAME" or "Deployment/NAME", taken in turn), open a watch on it, DELETE it,
        and time from the DELETE's response to the watch's ADDED event. Stops after SAMPLES
        samples, at the first sample not restored within TIMEOUT seconds, after MAX_SLOW samples
        slower than 5 s (the p99 goal: a design that heals periodically is not sampled for
        minutes), or once BUDGET seconds have passed. Prints "sample N KIND/NAME MS" (or
        "... timeout") per sample.

ENV_FILE is tests/cluster/cluster.sh's WORKDIR/env (API, CA, ADMIN_TOKEN).
"""
import json
import socket
import subprocess
import sys
import time
import urllib.parse

from cluster_api import ClusterApi, load_env

PATHS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
}


class Api(ClusterApi):
    def request(self, method, path, body=None):
        conn = self.connect()
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, (json.loads(data) if data else None)

    def watch(self, path, name, rv, timeout):
        """An open watch on one object, from resourceVersion rv: (connection, response)."""
        query = urllib.parse.urlencode({"watch": "1", "fieldSelector": "metadata.name=" + name,
                                        "resourceVersion": rv, "timeoutSeconds": str(int(timeout) + 30)})
        conn = self.connect(timeout=timeout)
        conn.request("GET", path + "?" + query, headers=self.headers)
        resp = conn.getresponse()
        if resp.status != 200:
            raise SystemExit("watch %s/%s: HTTP %d: %s" % (path, name, resp.status, resp.read()[:300]))
        return conn, resp


def rbac(api, user):
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "addon-operator-bench"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    status, doc = api.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body)
    if status not in (201, 409):
        raise SystemExit("ClusterRoleBinding: HTTP %d: %s" % (status, doc))


def clean(api, ns, deadline_s=60):
    for path in PATHS.values():
        path = path.format(ns=ns)
        status, doc = api.request("DELETE", path + "?propagationPolicy=Background")
        if status != 200:
            raise SystemExit("DELETE %s: HTTP %d: %s" % (path, status, doc))
    deadline = time.monotonic() + deadline_s
    while True:
        left = []
        for kind, path in PATHS.items():
            status, doc = api.request("GET", path.format(ns=ns))
            left += ["%s/%s" % (kind, o["metadata"]["name"]) for o in doc["items"]]
        if not left:
            return
        if time.monotonic() > deadline:
            raise SystemExit("clean %s: still there after %d s: %s" % (ns, deadline_s, " ".join(left)))
        time.sleep(0.1)  # a poll with a deadline: deletecollection has no completion event


def main_queue_length(doc):
    """`queue main -o json`: the Go operator's {"name", "tasksCount", ...}, or older binaries' [{"length"}]."""
    if isinstance(doc, dict):
        return doc.get("tasksCount", 0)
    return sum(q.get("length", 0) for q in doc)


def wait_idle(idle_cmd, deadline_s=120):
    """Until the operator's main queue is empty (the last heal's module run has finished)."""
    deadline = time.monotonic() + deadline_s
    while True:
        out = subprocess.run(idle_cmd, shell=True, capture_output=True, text=True)
        if out.returncode == 0 and main_queue_length(json.loads(out.stdout)) == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit("the operator's main queue is not empty after %d s: %s %s"
                             % (deadline_s, out.stdout[-500:], out.stderr[-500:]))
        time.sleep(0.1)


def heal_one(api, ns, kind, name, timeout):
    """Milliseconds from the DELETE's response to the object's ADDED event, or None."""
    path = PATHS[kind].format(ns=ns)
    status, obj = api.request("GET", path + "/" + name)
    if status != 200:
        raise SystemExit("GET %s/%s: HTTP %d (is the release installed?)" % (path, name, status))
    old_uid = obj["metadata"]["uid"]
    conn, resp = api.watch(path, name, obj["metadata"]["resourceVersion"], timeout)
    status, doc = api.request("DELETE", path + "/" + name)
    if status not in (200, 202):
        raise SystemExit("DELETE %s/%s: HTTP %d: %s" % (path, name, status, doc))
    t0 = time.monotonic()
    deadline = t0 + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            conn.sock.settimeout(left)
            line = resp.readline()
            if not line:
                raise SystemExit("watch on %s/%s ended early" % (kind, name))
            event = json.loads(line)
            if event["type"] == "ADDED" and event["object"]["metadata"]["uid"] != old_uid:
                return (time.monotonic() - t0) * 1000
    except (socket.timeout, TimeoutError):
        return None
    finally:
        conn.close()


SLOW_MS = 5000


def heal(api, ns, samples, timeout, budget, max_slow, idle_cmd, objects):
    start = time.monotonic()
    slow = 0
    for i in range(samples):
        if slow >= max_slow:
            print("stopped after %d samples slower than %d ms" % (slow, SLOW_MS), flush=True)
            return
        if i > 0 and time.monotonic() - start > budget:
            print("budget of %g s spent after %d samples" % (budget, i), flush=True)
            return
        wait_idle(idle_cmd)
        kind, name = objects[i % len(objects)].split("/", 1)
        ms = heal_one(api, ns, kind, name, timeout)
        if ms is None:
            print("sample %d %s/%s timeout (not restored within %g s)" % (i + 1, kind, name, timeout), flush=True)
            return
        print("sample %d %s/%s %.0f" % (i + 1, kind, name, ms), flush=True)
        slow += ms > SLOW_MS


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    api = Api(load_env(argv[1]))
    cmd, args = argv[2], argv[3:]
    if cmd == "rbac" and len(args) == 1:
        rbac(api, args[0])
    elif cmd == "clean" and len(args) == 1:
        clean(api, args[0])
    elif cmd == "heal" and len(args) >= 7:
        heal(api, args[0], int(args[1]), float(args[2]), float(args[3]), int(args[4]), args[5], args[6:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
