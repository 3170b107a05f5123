#!/usr/bin/env python3
"""TAP self-test of the fake Kubernetes API server (tests/fakekube/fakekube.py).

Starts the server as a subprocess on port 0 (several times, with different options)
and talks to it with http.client and raw sockets, the way the C client will.

    python3 tests/fakekube/test-fakekube.py          # the TAP test
    python3 tests/fakekube/test-fakekube.py --bench  # rough request/s and events/s
"""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fakekube.py")

# -- TAP --

_results = []


def ok(cond, name, diag=None):
    _results.append(bool(cond))
    n = len(_results)
    print("%s %d - %s" % ("ok" if cond else "not ok", n, name), flush=True)
    if not cond and diag is not None:
        for line in str(diag).splitlines()[:40]:
            print("# " + line, flush=True)
    return bool(cond)


def skip(name, why):
    _results.append(True)
    print("ok %d - %s # SKIP %s" % (len(_results), name, why), flush=True)


# -- the server under test --


class FakeKube:
    def __init__(self, *args, env=None):
        self.dir = tempfile.mkdtemp(prefix="fakekube-test-")
        self.port_file = os.path.join(self.dir, "port")
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.proc = subprocess.Popen([sys.executable, SERVER, "--port", "0", "--port-file", self.port_file]
                                     + list(args), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("fakekube did not start: " + self.logtext())
            time.sleep(0.02)
        with open(self.port_file) as f:
            self.port = int(f.read())
        self.token = None
        self.tls = None

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def conn(self, timeout=10):
        if self.tls is not None:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self.tls)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def req(self, method, path, body=None, ctype="application/json", headers=None, token=True, timeout=10):
        """One request on a fresh connection: (status, headers, decoded JSON or raw bytes)."""
        h = dict(headers or {})
        if token and self.token:
            h.setdefault("Authorization", "Bearer " + self.token)
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            h["Content-Type"] = ctype
        c = self.conn(timeout)
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            raw = r.read()
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = raw
            return r.status, r, doc
        finally:
            c.close()

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.req("POST", path, body, **kw)

    def fixture(self, obj):
        st, _, doc = self.post("/fake/objects", obj)
        assert st == 200, doc
        return doc

    def fault(self, **spec):
        st, _, doc = self.post("/fake/faults", spec)
        assert st == 200, doc

    def rv(self):
        return self.get("/fake/state")[2]["resourceVersion"]

    def watch(self, path, **kw):  # accept="..." sets the Accept header
        return Watch(self, path, **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode


class Watch:
    """A raw HTTP/1.1 request whose chunked answer is read chunk by chunk, so that
    tests can look at the framing as well as at the events."""

    def __init__(self, fk, path, token=True, accept="application/json"):
        self.sock = socket.create_connection(("127.0.0.1", fk.port), timeout=10)
        if fk.tls is not None:
            self.sock = fk.tls.wrap_socket(self.sock, server_hostname="127.0.0.1")
        auth = "Authorization: Bearer %s\r\n" % fk.token if token and fk.token else ""
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sAccept: %s\r\n\r\n"
                           % (path, auth, accept)).encode())
        self.buf = b""
        self.chunks = []      # every chunk's payload, in order
        self.pending = b""    # event bytes not yet split into lines
        self.ended = False    # got the terminating chunk
        head = self._until(b"\r\n\r\n", time.time() + 10).decode("latin-1").split("\r\n")
        self.status = int(head[0].split()[1])
        self.headers = {}
        for line in head[1:]:
            if line:
                k, _, v = line.partition(":")
                self.headers[k.strip().lower()] = v.strip()
        self.body = b""
        if "content-length" in self.headers:
            self.body = self._exact(int(self.headers["content-length"]), time.time() + 10)

    def _fill(self, deadline):
        left = deadline - time.time()
        if left <= 0:
            raise TimeoutError("watch read timed out")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("watch read timed out")
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def _until(self, sep, deadline):
        while sep not in self.buf:
            self._fill(deadline)
        out, _, self.buf = self.buf.partition(sep)
        return out

    def _exact(self, n, deadline):
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def chunk(self, timeout=5):
        """The next chunk's payload; b"" for the terminating chunk. EOFError when the
        connection closes first, TimeoutError when nothing comes."""
        deadline = time.time() + timeout
        size = int(self._until(b"\r\n", deadline).split(b";")[0], 16)
        if size == 0:
            self._until(b"\r\n", deadline)
            self.ended = True
            return b""
        data = self._exact(size, deadline)
        if self._exact(2, deadline) != b"\r\n":
            raise ValueError("bad chunk framing")
        self.chunks.append(data)
        return data

    def event(self, timeout=5):
        """The next event (a dict), or None at the end of the stream."""
        deadline = time.time() + timeout
        while b"\n" not in self.pending:
            data = self.chunk(max(deadline - time.time(), 0.001))
            if data == b"":
                return None
            self.pending += data
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def events(self, n, timeout=5):
        return [self.event(timeout) for _ in range(n)]

    def quiet(self, timeout=0.4):
        """True when no event arrives for a while."""
        try:
            return self.event(timeout) is None and False
        except TimeoutError:
            return True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def cm(name, ns="default", labels=None, data=None, **extra):
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}
    if labels:
        obj["metadata"]["labels"] = labels
    if data is not None:
        obj["data"] = data
    obj.update(extra)
    return obj


def q(**params):
    return urllib.parse.urlencode(params)


def wait_for(pred, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


# -- the tests --


def test_discovery(fk):
    st, _, v = fk.get("/version")
    ok(st == 200 and v.get("gitVersion") == "v1.20.2-fake" and v.get("major") == "1" and v.get("minor") == "20",
       "GET /version", v)
    st, _, d = fk.get("/api")
    ok(st == 200 and d.get("kind") == "APIVersions" and d.get("versions") == ["v1"]
       and d.get("serverAddressByClientCIDRs"), "GET /api lists v1", d)
    st, _, d = fk.get("/api/v1")
    byname = {r["name"]: r for r in d.get("resources", [])}
    want = {"namespaces": (False, "Namespace", ["ns"]), "configmaps": (True, "ConfigMap", ["cm"]),
            "secrets": (True, "Secret", None), "pods": (True, "Pod", ["po"]),
            "services": (True, "Service", ["svc"]), "serviceaccounts": (True, "ServiceAccount", ["sa"]),
            "events": (True, "Event", ["ev"])}
    good = st == 200 and d.get("kind") == "APIResourceList" and d.get("groupVersion") == "v1"
    for name, (namespaced, kind, short) in want.items():
        r = byname.get(name, {})
        good = good and r.get("namespaced") == namespaced and r.get("kind") == kind and \
            r.get("shortNames") == short and "watch" in r.get("verbs", []) and r.get("singularName")
    ok(good, "GET /api/v1: core resources with kind, namespaced, verbs, shortNames, singularName", d)
    ok(byname.get("pods/status", {}).get("verbs") == ["get", "patch", "update"], "GET /api/v1 has pods/status",
       byname.get("pods/status"))
    st, _, d = fk.get("/apis")
    groups = {g["name"]: g for g in d.get("groups", [])}
    ok(st == 200 and d.get("kind") == "APIGroupList" and
       groups.get("apps", {}).get("preferredVersion") == {"groupVersion": "apps/v1", "version": "v1"} and
       "coordination.k8s.io" in groups and "apiextensions.k8s.io" in groups, "GET /apis: groups with "
       "preferredVersion", d)
    st, _, d = fk.get("/apis/apps/v1")
    r = {x["name"]: x for x in d.get("resources", [])}
    ok(st == 200 and d.get("groupVersion") == "apps/v1" and r.get("deployments", {}).get("shortNames") ==
       ["deploy"], "GET /apis/apps/v1 lists deployments", d)
    st, _, d = fk.get("/apis/apiextensions.k8s.io/v1")
    r = {x["name"]: x for x in d.get("resources", [])}
    crd = r.get("customresourcedefinitions", {})
    ok(crd.get("namespaced") is False and crd.get("shortNames") == ["crd", "crds"] and
       {x["name"] for x in fk.get("/apis/coordination.k8s.io/v1")[2]["resources"]} == {"leases"},
       "CRDs are cluster-scoped with shortNames crd, crds; leases served", d)
    st, _, d = fk.get("/apis/nope.example.com/v1")
    ok(st == 404 and d.get("kind") == "Status" and d.get("code") == 404 and d.get("reason") == "NotFound",
       "unknown group gives a 404 Status", d)
    st, _, d = fk.get("/api/v1/widgets")
    ok(st == 404 and d.get("reason") == "NotFound", "unknown resource gives a 404 Status", d)


def test_crud(fk):
    st, _, d = fk.get("/api/v1/namespaces/default")
    ok(st == 200 and d.get("kind") == "Namespace" and d["status"]["phase"] == "Active",
       "the default namespace exists", d)
    before = int(fk.rv())
    st, _, a = fk.post("/api/v1/namespaces/default/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
    m = a.get("metadata", {}) if isinstance(a, dict) else {}
    ok(st == 201 and m.get("namespace") == "default" and int(m.get("resourceVersion", 0)) == before + 1 and
       len(m.get("uid", "")) == 36 and m.get("creationTimestamp", "").endswith("Z") and a.get("kind") == "ConfigMap",
       "POST creates with resourceVersion, uid, creationTimestamp, namespace", a)
    st, _, d = fk.post("/api/v1/namespaces/default/configmaps", {"metadata": {"generateName": "gen-"}})
    name = d.get("metadata", {}).get("name", "")
    ok(st == 201 and name.startswith("gen-") and len(name) == 9, "generateName adds 5 characters", d)
    st, _, d = fk.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a"}})
    ok(st == 409 and d.get("reason") == "AlreadyExists" and d.get("code") == 409, "POST of an existing name: "
       "409 AlreadyExists", d)
    st, _, d = fk.get("/api/v1/namespaces/default/configmaps/a")
    ok(st == 200 and d == a, "GET returns the object with kind and apiVersion", d)
    st, _, d = fk.get("/api/v1/namespaces/default/configmaps/x")
    ok(st == 404 and d == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": "configmaps \"x\" not found", "reason": "NotFound",
                           "details": {"name": "x", "kind": "configmaps"}, "code": 404},
       "GET of a missing object: the exact 404 Status", d)
    st, _, d = fk.get("/apis/apps/v1/namespaces/default/deployments/x")
    ok(st == 404 and d.get("message") == 'deployments.apps "x" not found' and d["details"].get("group") == "apps",
       "404 for a grouped resource names resource.group", d)

    upd = dict(a, data={"k": "v2"})
    st, _, b = fk.req("PUT", "/api/v1/namespaces/default/configmaps/a", upd)
    ok(st == 200 and b["data"] == {"k": "v2"} and int(b["metadata"]["resourceVersion"]) >
       int(a["metadata"]["resourceVersion"]) and b["metadata"]["uid"] == a["metadata"]["uid"],
       "PUT with the current resourceVersion updates", b)
    st, _, d = fk.req("PUT", "/api/v1/namespaces/default/configmaps/a", dict(a, data={"k": "v3"}))
    ok(st == 409 and d.get("reason") == "Conflict" and d.get("message") ==
       'Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your '
       'changes to the latest version and try again' and d.get("details") == {"name": "a", "kind": "configmaps"},
       "PUT with a stale resourceVersion: 409 Conflict", d)
    st, _, c = fk.req("PUT", "/api/v1/namespaces/default/configmaps/a", b)
    ok(st == 200 and c["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"],
       "a no-op PUT keeps the resourceVersion", c)
    st, _, d = fk.req("PUT", "/api/v1/namespaces/default/configmaps/nope", cm("nope"))
    ok(st == 404 and d.get("reason") == "NotFound", "PUT of a missing object: 404", d)
    st, _, d = fk.req("PUT", "/api/v1/namespaces/default/configmaps/a", cm("other"))
    ok(st == 400 and d.get("reason") == "BadRequest", "PUT with a different name in the body: 400", d)

    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/a",
                      {"data": {"new": "1", "k": None}, "metadata": {"labels": {"l": "x"}}},
                      ctype="application/merge-patch+json")
    ok(st == 200 and d["data"] == {"new": "1"} and d["metadata"]["labels"] == {"l": "x"},
       "merge patch (RFC 7386) sets and removes keys", d)
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/a", {"data": {"s": "2"}},
                      ctype="application/strategic-merge-patch+json")
    ok(st == 200 and d["data"] == {"new": "1", "s": "2"}, "strategic merge patch acts as a merge patch", d)
    ops = [{"op": "test", "path": "/data/new", "value": "1"}, {"op": "add", "path": "/data/j", "value": "3"},
           {"op": "replace", "path": "/data/s", "value": "22"}, {"op": "remove", "path": "/data/new"},
           {"op": "copy", "from": "/data/j", "path": "/data/j2"}, {"op": "move", "from": "/data/j2",
                                                                   "path": "/data/j3"}]
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/a", ops, ctype="application/json-patch+json")
    ok(st == 200 and d["data"] == {"s": "22", "j": "3", "j3": "3"}, "JSON patch (RFC 6902) add, replace, remove, "
       "copy, move, test", d)
    rv = d["metadata"]["resourceVersion"]
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/a",
                      [{"op": "test", "path": "/data/s", "value": "nope"}, {"op": "add", "path": "/data/z",
                                                                           "value": "z"}],
                      ctype="application/json-patch+json")
    ok(st == 422 and d.get("code") == 422 and fk.get("/api/v1/namespaces/default/configmaps/a")[2]["metadata"]
       ["resourceVersion"] == rv, "a failing JSON patch test op: 422 and no change", d)
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/a",
                      {"metadata": {"resourceVersion": a["metadata"]["resourceVersion"]}, "data": {"q": "1"}},
                      ctype="application/merge-patch+json")
    ok(st == 409 and d.get("reason") == "Conflict", "a patch carrying a stale resourceVersion: 409", d)
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/a", b"{bad", ctype="application/merge-patch+json")
    ok(st == 400 and d.get("reason") == "BadRequest", "a malformed patch body: 400", d)
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/zz", {"data": {}},
                      ctype="application/merge-patch+json")
    ok(st == 404, "PATCH of a missing object: 404", d)

    st, _, d = fk.req("DELETE", "/api/v1/namespaces/default/configmaps/a")
    ok(st == 200 and d.get("kind") == "Status" and d.get("status") == "Success" and
       d["details"]["name"] == "a", "DELETE answers a Success Status", d)
    st, _, d = fk.req("DELETE", "/api/v1/namespaces/default/configmaps/a")
    ok(st == 404 and d.get("reason") == "NotFound", "DELETE of a missing object: 404", d)
    st, _, d = fk.get("/api/v1/namespaces/default/configmaps/a")
    ok(st == 404, "the deleted object is gone", d)

    st, r, _ = fk.post("/api/v1/namespaces/default/configmaps", cm("esc", data={"html": "<a&b>"}))
    raw = fk.conn()
    raw.request("GET", "/api/v1/namespaces/default/configmaps/esc")
    text = raw.getresponse().read()
    raw.close()
    ok(b'"html":"\\u003ca\\u0026b\\u003e"' in text and b": " not in text,
       "JSON as Go writes it: compact, with <, > and & escaped", text)
    st, _, d = fk.post("/api/v1/namespaces/default/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                             "metadata": {"name": "s"}, "stringData": {"k": "v"}})
    ok(st == 201 and d.get("data") == {"k": "dg=="} and "stringData" not in d and d.get("type") == "Opaque",
       "Secret stringData is merged into data, type defaults to Opaque", d)
    st, r, d = fk.get("/healthz")
    ok(st == 200 and d == b"ok", "GET /healthz", d)

    # Finalizers hold an object until the last one is removed.
    fk.post("/api/v1/namespaces/default/configmaps", cm("fin", metadata={"name": "fin", "finalizers": ["x/y"]}))
    st, _, d = fk.req("DELETE", "/api/v1/namespaces/default/configmaps/fin")
    ok(st == 202 and d["metadata"].get("deletionTimestamp"), "DELETE of an object with finalizers marks it (202)", d)
    w = fk.watch("/api/v1/namespaces/default/configmaps?" + q(watch="1", resourceVersion=fk.rv()))
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/configmaps/fin", {"metadata": {"finalizers": None}},
                      ctype="application/merge-patch+json")
    ok(st == 200 and fk.get("/api/v1/namespaces/default/configmaps/fin")[0] == 404 and
       "finalizers" not in d["metadata"] and d["metadata"]["resourceVersion"] == fk.rv(),
       "removing the last finalizer deletes it (the answer: the updated object)", d)
    e = w.event()
    ok(e["type"] == "DELETED" and e["object"]["metadata"]["finalizers"] == ["x/y"] and
       e["object"]["metadata"]["resourceVersion"] == fk.rv() and w.quiet(),
       "as on a real server, one DELETED event (no MODIFIED) with the finalizers it had", e)
    w.close()

    # The status subresource.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
           "status": {"phase": "Pending"}}
    st, _, p = fk.post("/api/v1/namespaces/default/pods", pod)
    st, _, d = fk.req("PUT", "/api/v1/namespaces/default/pods/p/status",
                      dict(p, spec={"containers": []}, status={"phase": "Running"}))
    ok(st == 200 and d["status"] == {"phase": "Running"} and d["spec"] == pod["spec"],
       "PUT /status changes only .status", d)
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/pods/p", {"status": {"phase": "Failed"},
                                                                     "metadata": {"labels": {"a": "b"}}},
                      ctype="application/merge-patch+json")
    ok(st == 200 and d["status"] == {"phase": "Running"} and d["metadata"]["labels"] == {"a": "b"},
       "a patch of the main resource leaves .status alone", d)
    st, _, d = fk.req("PATCH", "/api/v1/namespaces/default/pods/p/status", {"status": {"phase": "Succeeded"}},
                      ctype="application/merge-patch+json")
    g = fk.get("/api/v1/namespaces/default/pods/p/status")
    ok(st == 200 and d["status"]["phase"] == "Succeeded" and g[0] == 200 and g[2]["status"]["phase"] ==
       "Succeeded", "PATCH and GET of /status", d)
    st, _, d = fk.req("DELETE", "/api/v1/namespaces/default/pods/p")
    ok(st == 200 and d.get("kind") == "Pod", "DELETE of a pod answers the pod", d)
    st, _, d = fk.post("/api/v1/configmaps", cm("clusterwide"))
    ok(st == 405 and d.get("kind") == "Status", "POST to the all-namespaces collection: 405", d)
    fk.post("/api/v1/namespaces/default/configmaps", cm("dc1", labels={"dc": "1"}))
    fk.post("/api/v1/namespaces/default/configmaps", cm("dc2", labels={"dc": "1"}))
    st, _, d = fk.req("DELETE", "/api/v1/namespaces/default/configmaps?" + q(labelSelector="dc=1"))
    left = fk.get("/api/v1/namespaces/default/configmaps?" + q(labelSelector="dc"))[2]["items"]
    ok(st == 200 and len(d.get("items", [])) == 2 and left == [], "DELETE on a collection with a selector", d)


def test_lists(fk):
    fk.fixture([cm("item-%02d" % i, ns="pg", labels={"n": str(i), "odd": str(i % 2)},
                   data={"i": str(i)}) for i in range(25)] +
               [cm("other", ns="a-first", labels={"n": "x"}), cm("zlast", ns="zz")])
    st, r, d = fk.get("/api/v1/namespaces/pg/configmaps")
    items = d.get("items", [])
    ok(st == 200 and d.get("kind") == "ConfigMapList" and d.get("apiVersion") == "v1" and len(items) == 25 and
       all("kind" not in i and "apiVersion" not in i for i in items) and
       d["metadata"]["resourceVersion"] == fk.rv(), "LIST: a ConfigMapList, items without kind/apiVersion", d)
    ok([i["metadata"]["name"] for i in items] == ["item-%02d" % i for i in range(25)], "LIST is sorted by name")
    st, _, d = fk.get("/api/v1/configmaps")
    keys = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in d["items"]]
    ok(keys == sorted(keys) and keys[0] == ("a-first", "other") and keys[-1] == ("zz", "zlast"),
       "the all-namespaces LIST is sorted by namespace/name", keys)

    pages, cont, remaining = [], None, []
    for _ in range(10):
        params = {"limit": "10"}
        if cont:
            params["continue"] = cont
        st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(**params))
        pages.append([i["metadata"]["name"] for i in d["items"]])
        remaining.append(d["metadata"].get("remainingItemCount"))
        cont = d["metadata"].get("continue")
        if not cont:
            break
        if len(pages) == 1:
            # Changes between pages do not show: the continuation lists the first snapshot.
            fk.fixture(cm("item-99", ns="pg"))
            fk.req("DELETE", "/api/v1/namespaces/pg/configmaps/item-24")
            snap_rv = d["metadata"]["resourceVersion"]
    ok([len(p) for p in pages] == [10, 10, 5] and remaining == [15, 5, None] and
       sum(pages, []) == ["item-%02d" % i for i in range(25)], "limit/continue pages with remainingItemCount "
       "over a consistent snapshot", (pages, remaining))
    ok(d["metadata"]["resourceVersion"] == snap_rv, "continued pages carry the snapshot resourceVersion", d)
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(limit="10", resourceVersion="0"))
    ok(len(d["items"]) == 25 and "continue" not in d["metadata"], "resourceVersion=0 ignores limit (served from "
       "the cache, as a real server does)", d["metadata"])
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(continue_="x") .replace("continue_", "continue"))
    ok(st == 400 and d.get("reason") == "BadRequest", "a bad continue token: 400", d)

    def names(selector, field=False, ns="pg"):
        st, _, d = fk.get("/api/v1/namespaces/%s/configmaps?%s" % (ns, q(**{
            "fieldSelector" if field else "labelSelector": selector})))
        return sorted(i["metadata"]["name"] for i in d["items"]) if st == 200 else st

    ok(names("n=3") == ["item-03"] and names("n==3") == ["item-03"], "labelSelector k=v, k==v")
    ok(names("odd!=1") == ["item-%02d" % i for i in range(0, 24, 2)] + ["item-99"], "labelSelector k!=v includes "
       "objects without the label")
    ok(names("n in (1, 2,3)") == ["item-01", "item-02", "item-03"], "labelSelector in (...)")
    ok(len(names("n notin (1,2)")) == 23, "labelSelector notin (...)", names("n notin (1,2)"))
    ok(names("n") == ["item-%02d" % i for i in range(24)] and names("!n") == ["item-99"], "labelSelector k and !k")
    ok(names("odd=1,n in (1,2,3)") == ["item-01", "item-03"], "labelSelector requirements are ANDed")
    ok(names("n>20") == ["item-21", "item-22", "item-23"], "labelSelector k>N")
    ok(all(names(bad) == 400 for bad in ("n in (", "=x", "n in ()", "a b", "n,,m", "bad key!=1")),
       "malformed label selectors: 400", [names(b) for b in ("n in (", "=x", "n in ()", "a b")])
    ok(names("metadata.name=item-05", True) == ["item-05"], "fieldSelector metadata.name")
    ok(names("metadata.namespace=zz", True, ns="zz") == ["zlast"] and names("metadata.namespace!=pg", True) == [],
       "fieldSelector metadata.namespace")
    ok(names("data.i==7,metadata.name!=item-08", True) == ["item-07"], "fieldSelector on a dotted path, ANDed")
    ok(names("metadata.name", True) == 400, "a malformed field selector: 400")
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(limit="3", labelSelector="odd=1"))
    ok([i["metadata"]["name"] for i in d["items"]] == ["item-01", "item-03", "item-05"] and
       d["metadata"].get("continue") and "remainingItemCount" not in d["metadata"],
       "a selector with limit pages over the matches (no remainingItemCount)", d["metadata"])

    # 410 forms after a compaction.
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(resourceVersion=str(int(fk.rv()) + 10)))
    ok(st == 504 and d.get("reason") == "Timeout" and d.get("message", "").startswith("Too large resource version"),
       "LIST from a future resourceVersion: 504 Too large resource version", d)
    old_rv = str(int(fk.rv()) - 3)
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(resourceVersion=fk.rv(), resourceVersionMatch="Exact"))
    ok(st == 200 and len(d["items"]) == 25, "LIST with resourceVersionMatch=Exact at the current version")
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(resourceVersion=snap_rv, resourceVersionMatch="Exact"))
    ok(st == 200 and "item-24" in [i["metadata"]["name"] for i in d["items"]] and
       "item-99" not in [i["metadata"]["name"] for i in d["items"]], "LIST Exact at an older version shows that "
       "version's objects", [i["metadata"]["name"] for i in d.get("items", [])])
    st, _, first = fk.get("/api/v1/namespaces/pg/configmaps?limit=10")
    fk.fixture(cm("later", ns="elsewhere"))   # the token's version is now older than the compaction
    st, _, c = fk.post("/fake/compact", {})
    ok(st == 200 and c.get("compacted") == fk.rv(), "POST /fake/compact", c)
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(resourceVersion=old_rv, resourceVersionMatch="Exact"))
    ok(st == 410 and d.get("reason") == "Expired" and d.get("code") == 410 and
       d.get("message") == "The resourceVersion for the provided list is too old.",
       "LIST Exact from before the compaction: 410 Expired", d)
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(limit="10", **{"continue": first["metadata"]
                                                                              ["continue"]}))
    fresh = d.get("metadata", {}).get("continue") if isinstance(d, dict) else None
    ok(st == 410 and d.get("reason") == "Expired" and d.get("message", "").startswith(
        "The provided continue parameter is too old to display a consistent list result.") and fresh,
       "an old continue token after the compaction: 410 with a fresh token", d)
    st, _, d = fk.get("/api/v1/namespaces/pg/configmaps?" + q(limit="100", **{"continue": fresh or "x"}))
    ok(st == 200 and [i["metadata"]["name"] for i in d["items"]][:1] == ["item-10"],
       "the fresh continue token lists the remainder", d)


def test_watch(fk):
    fk.fixture([cm("w%d" % i, ns="wt", labels={"sel": "yes"}) for i in range(3)])
    w = fk.watch("/api/v1/namespaces/wt/configmaps?watch=1")
    ok(w.status == 200 and w.headers.get("content-type") == "application/json" and
       w.headers.get("transfer-encoding") == "chunked", "watch: 200, application/json, chunked", w.headers)
    evs = w.events(3)
    ok([e["type"] for e in evs] == ["ADDED"] * 3 and [e["object"]["metadata"]["name"] for e in evs] ==
       ["w0", "w1", "w2"] and all(e["object"]["kind"] == "ConfigMap" and e["object"]["apiVersion"] == "v1"
                                  for e in evs), "watch without resourceVersion: ADDED for every object", evs)
    start_rv = fk.rv()
    fk.req("PATCH", "/api/v1/namespaces/wt/configmaps/w1", {"data": {"x": "1"}}, ctype="application/merge-patch+json")
    fk.post("/api/v1/namespaces/wt/configmaps", cm("w3", ns="wt"))
    fk.post("/api/v1/namespaces/other/configmaps", cm("elsewhere", ns="other"))
    fk.req("DELETE", "/api/v1/namespaces/wt/configmaps/w0")
    evs = w.events(3)
    ok([(e["type"], e["object"]["metadata"]["name"]) for e in evs] ==
       [("MODIFIED", "w1"), ("ADDED", "w3"), ("DELETED", "w0")] and
       int(evs[2]["object"]["metadata"]["resourceVersion"]) == int(fk.rv()), "live MODIFIED, ADDED, DELETED "
       "(the DELETED object has the deletion's resourceVersion), other namespaces filtered", evs)
    ok(all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in w.chunks), "one event per chunk by default")
    w.close()

    w = fk.watch("/api/v1/namespaces/wt/configmaps?" + q(watch="true", resourceVersion=start_rv))
    evs = w.events(3)
    ok([(e["type"], e["object"]["metadata"]["name"]) for e in evs] ==
       [("MODIFIED", "w1"), ("ADDED", "w3"), ("DELETED", "w0")] and w.quiet(),
       "watch from a resourceVersion replays what came after it", evs)
    w.close()

    w = fk.watch("/api/v1/configmaps?" + q(watch="1", labelSelector="sel=yes", resourceVersion="0"))
    evs = w.events(2)
    ok(sorted(e["object"]["metadata"]["name"] for e in evs) == ["w1", "w2"], "all-namespaces watch with a label "
       "selector starts with the matching objects", evs)
    fk.req("PATCH", "/api/v1/namespaces/wt/configmaps/w1", {"metadata": {"labels": {"sel": "no"}}},
           ctype="application/merge-patch+json")
    e = w.event()
    ok(e["type"] == "DELETED" and e["object"]["metadata"]["name"] == "w1" and
       e["object"]["metadata"]["labels"] == {"sel": "yes"} and e["object"]["metadata"]["resourceVersion"] == fk.rv(),
       "an object leaving the selector: DELETED", e)
    fk.req("PATCH", "/api/v1/namespaces/wt/configmaps/w3", {"metadata": {"labels": {"sel": "yes"}}},
           ctype="application/merge-patch+json")
    e = w.event()
    ok(e["type"] == "ADDED" and e["object"]["metadata"]["name"] == "w3", "an object entering the selector: ADDED", e)
    fk.req("PATCH", "/api/v1/namespaces/wt/configmaps/w1", {"data": {"y": "1"}}, ctype="application/merge-patch+json")
    ok(w.quiet(), "changes outside the selector are not sent")
    w.close()

    w = fk.watch("/api/v1/namespaces/wt/configmaps?" + q(watch="1", fieldSelector="metadata.name=w2"))
    evs = [w.event()]
    fk.req("PATCH", "/api/v1/namespaces/wt/configmaps/w3", {"data": {"z": "1"}}, ctype="application/merge-patch+json")
    fk.req("PATCH", "/api/v1/namespaces/wt/configmaps/w2", {"data": {"z": "1"}}, ctype="application/merge-patch+json")
    evs.append(w.event())
    ok([(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [("ADDED", "w2"), ("MODIFIED", "w2")],
       "watch with a field selector", evs)
    w.close()

    # Bookmarks on demand.
    wb = fk.watch("/api/v1/namespaces/wt/configmaps?" + q(watch="1", resourceVersion=fk.rv(),
                                                           allowWatchBookmarks="true"))
    wn = fk.watch("/api/v1/namespaces/wt/configmaps?" + q(watch="1", resourceVersion=fk.rv()))
    ok(wait_for(lambda: len(fk.get("/fake/watches")[2]["watches"]) == 2), "GET /fake/watches lists open watches",
       fk.get("/fake/watches")[2])
    st, _, d = fk.post("/fake/bookmark", {})
    e = wb.event()
    ok(d.get("watches") == 1 and e == {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
       "metadata": {"resourceVersion": fk.rv(), "creationTimestamp": None}}},
       "POST /fake/bookmark: a BOOKMARK to the watch that allows them", e)
    ok(wn.quiet(), "no BOOKMARK without allowWatchBookmarks")
    st, _, d = fk.post("/fake/close-watches", {"path": "configmaps"})
    ok(d.get("closed") == 2 and wb.event() is None and wb.ended and wn.event() is None and wn.ended,
       "POST /fake/close-watches ends the streams with the terminating chunk", d)
    wb.close()
    wn.close()

    t0 = time.time()
    w = fk.watch("/api/v1/namespaces/wt/configmaps?" + q(watch="1", resourceVersion=fk.rv(), timeoutSeconds="1"))
    end = w.event(5)
    ok(end is None and w.ended and 0.9 <= time.time() - t0 < 5, "timeoutSeconds ends the stream cleanly",
       time.time() - t0)
    w.close()

    # A client that goes away is noticed even when nothing is sent.
    w = fk.watch("/api/v1/namespaces/quiet/configmaps?watch=1")
    ok(wait_for(lambda: any(x["path"] == "/api/v1/namespaces/quiet/configmaps"
                            for x in fk.get("/fake/watches")[2]["watches"])), "the quiet watch is listed")
    w.close()
    ok(wait_for(lambda: not fk.get("/fake/watches")[2]["watches"], 5), "a disconnected watcher is dropped",
       fk.get("/fake/watches")[2])

    # Too old: 200 with one ERROR event, then the end.
    old = str(int(fk.rv()) - 2)
    fk.post("/fake/compact", {})
    w = fk.watch("/api/v1/namespaces/wt/configmaps?" + q(watch="1", resourceVersion=old))
    e = w.event()
    ok(w.status == 200 and e == {"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "too old resource version: %s (%s)" % (old, fk.rv()), "reason": "Expired", "code": 410}}
       and w.event() is None and w.ended, "watch from a compacted resourceVersion: ERROR 410 Expired event, "
       "then the terminating chunk", e)
    w.close()
    w = fk.watch("/api/v1/namespaces/wt/configmaps?" + q(watch="1", resourceVersion=fk.rv()))
    fk.post("/api/v1/namespaces/wt/configmaps", cm("after", ns="wt"))
    e = w.event()
    ok(e["type"] == "ADDED" and e["object"]["metadata"]["name"] == "after", "watch from the compaction point works",
       e)
    w.close()

    # Deleting a namespace deletes its objects, each with a DELETED event.
    fk.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
    fk.fixture([cm("d1", ns="doomed"), cm("d2", ns="doomed")])
    w = fk.watch("/api/v1/configmaps?" + q(watch="1", resourceVersion=fk.rv()))
    st, _, d = fk.req("DELETE", "/api/v1/namespaces/doomed")
    evs = w.events(2)
    ok(st == 200 and [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [("DELETED", "d1"),
                                                                                     ("DELETED", "d2")] and
       fk.get("/api/v1/namespaces/doomed")[0] == 404, "deleting a namespace deletes its objects", evs)
    w.close()

    # Fixtures through the control API emit events like API writes.
    w = fk.watch("/api/v1/namespaces/fx/configmaps?" + q(watch="1", resourceVersion=fk.rv()))
    fk.fixture(cm("f", ns="fx", data={"a": "1"}))
    fk.fixture(cm("f", ns="fx", data={"a": "2"}))
    evs = w.events(2)
    ok([(e["type"], e["object"]["data"]["a"]) for e in evs] == [("ADDED", "1"), ("MODIFIED", "2")],
       "POST /fake/objects creates and replaces with events", evs)
    w.close()


# What client-go's metadata informers send (and src/kube/informer.c in metadata-only mode).
ACCEPT_META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
ACCEPT_META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def test_partial_metadata(fk):
    """Accept: as=PartialObjectMetadata[List], in the shapes a real kube-apiserver 1.20 sends."""
    owner = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "11111111-1111-1111-1111-111111111111"}]
    fk.post("/api/v1/namespaces/pm/configmaps", cm("a", ns="pm", labels={"x": "1"}, data={"k": "v"}))
    fk.req("PATCH", "/api/v1/namespaces/pm/configmaps/a", {"metadata": {"annotations": {"y": "2"},
                                                                        "ownerReferences": owner}},
           ctype="application/merge-patch+json")
    fk.post("/api/v1/namespaces/pm/configmaps", cm("b", ns="pm", data={"k": "v"}))
    _, _, a = fk.get("/api/v1/namespaces/pm/configmaps/a")
    _, _, b = fk.get("/api/v1/namespaces/pm/configmaps/b")
    rv = fk.rv()
    st, r, d = fk.get("/api/v1/namespaces/pm/configmaps", headers={"Accept": ACCEPT_META_LIST})
    ok(st == 200 and r.getheader("Content-Type") == "application/json" and d == {
        "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv},
        "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]},
                  {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": b["metadata"]}]}
       and a["metadata"]["labels"] == {"x": "1"} and a["metadata"]["ownerReferences"] == owner,
       "LIST as=PartialObjectMetadataList: the metadata of each object, items with kind and apiVersion", d)
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps?limit=1", headers={"Accept": ACCEPT_META_LIST})
    ok(st == 200 and [i["metadata"]["name"] for i in d["items"]] == ["a"] and d["metadata"].get("continue"),
       "a metadata list pages", d)
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps?" + q(limit=1, **{"continue": d["metadata"]["continue"]}),
                      headers={"Accept": ACCEPT_META_LIST})
    ok(st == 200 and [(i["kind"], i["metadata"]["name"]) for i in d["items"]] == [("PartialObjectMetadata", "b")]
       and "continue" not in d["metadata"], "its continuation is metadata too", d)
    st, _, d = fk.get("/api/v1/namespaces/nothing-here/configmaps", headers={"Accept": ACCEPT_META_LIST})
    ok(st == 200 and d == {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                           "metadata": {"resourceVersion": rv}, "items": None},
       'an empty metadata list has "items": null', d)
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps/a", headers={"Accept": ACCEPT_META})
    ok(st == 200 and d == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": a["metadata"]}, "GET of one object as=PartialObjectMetadata", d)
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps", headers={"Accept": ACCEPT_META})
    ok(st == 406 and d == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message":
                           "you requested PartialObjectMetadata, but the requested object is a list "
                           "(*core.ConfigMapList)", "reason": "NotAcceptable", "code": 406},
       "LIST with the object type: 406, although application/json is offered too", d)
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps/a", headers={"Accept": ACCEPT_META_LIST})
    ok(st == 406 and d["message"] == "you requested PartialObjectMetadataList, but the requested object is not a "
       "list (*core.ConfigMap)", "GET of one object with the list type: 406", d)
    fallback = ACCEPT_META_LIST.replace("v=v1", "v=v2")
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps", headers={"Accept": fallback})
    ok(st == 200 and d["kind"] == "ConfigMapList" and d["items"][0].get("data") == {"k": "v"},
       "an unknown version (v=v2): the next media type, full objects", d)
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps", headers={
        "Accept": ACCEPT_META_LIST.replace(",", ";q=0.5,", 1)})
    ok(st == 200 and d["kind"] == "ConfigMapList", "q values rank the media types", d)
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps", headers={"Accept": "text/html"})
    ok(st == 406 and d["message"] == "only the following media types are accepted: application/json, "
       "application/yaml, application/vnd.kubernetes.protobuf", "no acceptable media type: 406", d)
    st, _, d = fk.get("/apis/apps/v1/namespaces/pm/deployments/none", headers={"Accept": ACCEPT_META})
    ok(st == 404, "a missing object is a 404 before anything else", d)

    # Watches: events, bookmarks and 410s.
    w = fk.watch("/api/v1/namespaces/pm/configmaps?" + q(watch="1", resourceVersion=rv, allowWatchBookmarks="1"),
                 accept=ACCEPT_META)
    fk.req("PATCH", "/api/v1/namespaces/pm/configmaps/a", {"metadata": {"labels": {"z": "3"}}},
           ctype="application/merge-patch+json")
    fk.req("DELETE", "/api/v1/namespaces/pm/configmaps/b")
    evs = w.events(2)
    _, _, a = fk.get("/api/v1/namespaces/pm/configmaps/a")
    ok(evs == [{"type": "MODIFIED", "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                               "metadata": a["metadata"]}},
               {"type": "DELETED", "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                              "metadata": dict(b["metadata"], resourceVersion=fk.rv())}}],
       "WATCH as=PartialObjectMetadata: MODIFIED and DELETED with the metadata only", evs)
    fk.post("/fake/bookmark", {})
    e = w.event()
    ok(e == {"type": "BOOKMARK", "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                            "metadata": {"resourceVersion": fk.rv(), "creationTimestamp": None}}},
       "its BOOKMARK is a PartialObjectMetadata", e)
    w.close()
    wfull = fk.watch("/api/v1/namespaces/pm/configmaps?" + q(watch="1", resourceVersion=rv))
    e = wfull.event()
    ok(e["type"] == "MODIFIED" and e["object"]["kind"] == "ConfigMap" and e["object"]["data"] == {"k": "v"},
       "a full watch of the same events still gets full objects", e)
    wfull.close()
    w = fk.watch("/api/v1/namespaces/pm/configmaps?watch=1", accept=ACCEPT_META)
    e = w.event()
    ok(e["type"] == "ADDED" and e["object"]["kind"] == "PartialObjectMetadata" and
       e["object"]["metadata"]["name"] == "a", "a watch without resourceVersion starts with metadata ADDED", e)
    w.close()
    w = fk.watch("/api/v1/namespaces/pm/configmaps?watch=1", accept=ACCEPT_META_LIST)
    ok(w.status == 200 and w.event() is None and w.ended and w.chunks == [],
       "a watch with the list type: 200, and the stream ends empty at its first event", w.chunks)
    w.close()
    fk.post("/fake/compact", {})
    w = fk.watch("/api/v1/namespaces/pm/configmaps?" + q(watch="1", resourceVersion=rv), accept=ACCEPT_META)
    e = w.event()
    ok(e["type"] == "ERROR" and e["object"]["kind"] == "Status" and e["object"]["code"] == 410 and
       w.event() is None, "a metadata watch from a compacted resourceVersion: the same ERROR 410", e)
    w.close()
    st, _, d = fk.get("/api/v1/namespaces/pm/configmaps?" + q(resourceVersion=rv, resourceVersionMatch="Exact"),
                      headers={"Accept": ACCEPT_META_LIST})
    ok(st == 410 and d["kind"] == "Status" and d["reason"] == "Expired", "a metadata list at a compacted "
       "resourceVersion: HTTP 410", d)
    reqs = fk.get("/fake/requests")[2]["requests"]
    ok(reqs[-1]["accept"] == ACCEPT_META_LIST, "GET /fake/requests records the Accept header", reqs[-1])


def test_partial_metadata_unknown():
    """--no-partial-metadata: as a server before 1.15, the next media type gets full objects."""
    fk = FakeKube("--no-partial-metadata")
    try:
        fk.post("/api/v1/namespaces/pm/configmaps", cm("a", ns="pm", data={"k": "v"}))
        st, _, d = fk.get("/api/v1/namespaces/pm/configmaps", headers={"Accept": ACCEPT_META_LIST})
        ok(st == 200 and d["kind"] == "ConfigMapList" and d["apiVersion"] == "v1" and
           [(i.get("kind"), i["metadata"]["name"], i["data"]) for i in d["items"]] == [(None, "a", {"k": "v"})],
           "--no-partial-metadata: a metadata LIST gets the full list", d)
        w = fk.watch("/api/v1/namespaces/pm/configmaps?watch=1", accept=ACCEPT_META)
        e = w.event()
        ok(e["type"] == "ADDED" and e["object"]["kind"] == "ConfigMap" and e["object"]["data"] == {"k": "v"},
           "--no-partial-metadata: a metadata WATCH gets full objects", e)
        w.close()
        st, _, d = fk.get("/api/v1/namespaces/pm/configmaps",
                          headers={"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"})
        ok(st == 406, "--no-partial-metadata: without application/json to fall back to, 406", d)
    finally:
        fk.stop()


def test_crd(fk):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "subresources": {"status": {}}},
                                 {"name": "v1alpha1", "served": False, "storage": False}]}}
    ok(fk.get("/apis/example.com/v1")[0] == 404 and "example.com" not in
       [g["name"] for g in fk.get("/apis")[2]["groups"]], "before the CRD, its group is not served")
    st, _, d = fk.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    conds = {c["type"]: c["status"] for c in d.get("status", {}).get("conditions", [])}
    ok(st == 201 and conds.get("Established") == "True", "creating a CRD (status Established)", d)
    groups = {g["name"]: g for g in fk.get("/apis")[2]["groups"]}
    ok(groups.get("example.com", {}).get("preferredVersion") == {"groupVersion": "example.com/v1", "version": "v1"}
       and groups["example.com"]["versions"] == [{"groupVersion": "example.com/v1", "version": "v1"}],
       "the CRD's group appears in /apis (served versions only)", groups.get("example.com"))
    st, _, d = fk.get("/apis/example.com/v1")
    r = {x["name"]: x for x in d.get("resources", [])}
    ok(st == 200 and r.get("widgets", {}).get("kind") == "Widget" and r["widgets"]["shortNames"] == ["wd"] and
       r["widgets"]["namespaced"] is True and r["widgets"]["singularName"] == "widget" and "widgets/status" in r,
       "the CRD's resource appears in /apis/example.com/v1", d)
    st, _, d = fk.post("/apis/example.com/v1/namespaces/default/widgets",
                       {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"a": 1}})
    st2, _, lst = fk.get("/apis/example.com/v1/widgets")
    ok(st == 201 and st2 == 200 and lst.get("kind") == "WidgetList" and lst.get("apiVersion") == "example.com/v1"
       and [i["metadata"]["name"] for i in lst["items"]] == ["w"], "custom resources can be created and listed", lst)
    w = fk.watch("/apis/example.com/v1/widgets?" + q(watch="1", resourceVersion=fk.rv()))
    st, _, d = fk.req("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
    e = w.event()
    ok(st == 200 and e["type"] == "DELETED" and e["object"]["metadata"]["name"] == "w" and w.event() is None,
       "deleting the CRD deletes its objects and ends their watches", e)
    w.close()
    ok(fk.get("/apis/example.com/v1")[0] == 404 and "example.com" not in
       [g["name"] for g in fk.get("/apis")[2]["groups"]], "after deleting the CRD, its group is gone")
    bad = dict(crd, metadata={"name": "wrong.example.com"})
    st, _, d = fk.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    ok(st == 422 and d.get("reason") == "Invalid", "a CRD whose name is not plural.group: 422", d)
    cluster = json.loads(json.dumps(crd))
    cluster["spec"]["scope"] = "Cluster"
    cluster["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    cluster["metadata"]["name"] = "gadgets.example.com"
    fk.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", cluster)
    st, _, d = fk.post("/apis/example.com/v1/gadgets", {"apiVersion": "example.com/v1", "kind": "Gadget",
                                                        "metadata": {"name": "g", "namespace": "ignored"}})
    ok(st == 201 and "namespace" not in d["metadata"] and fk.get("/apis/example.com/v1/gadgets/g")[0] == 200,
       "a cluster-scoped custom resource", d)


def test_faults(fk):
    fk.fixture(cm("f1", ns="faults"))
    path = "/api/v1/namespaces/faults/configmaps"
    fk.fault(method="GET", path="/faults/configmaps$", action="status", status=503, retry_after=2, count=2)
    r1 = fk.get(path)
    r2 = fk.get(path)
    r3 = fk.get(path)
    ok(r1[0] == 503 and r1[1].getheader("Retry-After") == "2" and r1[2].get("kind") == "Status" and
       r1[2].get("code") == 503 and r1[2].get("reason") == "ServiceUnavailable" and r2[0] == 503 and r3[0] == 200,
       "fault status: 503 with Retry-After for count requests, then normal", (r1[0], r2[0], r3[0], r1[2]))
    fk.fault(path="/faults/", action="status", status=500, watch=True)
    ok(fk.get(path)[0] == 200, "a fault for watches leaves lists alone")
    fk.fault(method="GET", path="/faults/configmaps$", action="status", status=410, query={"continue": "."})
    ok(fk.get(path + "?limit=1")[0] == 200 and fk.get(path + "?limit=1&continue=x")[0] == 410
       and fk.get(path + "?limit=1&continue=x")[0] == 400,
       "a query fault: only requests whose parameter matches, once (then the bad token's 400)")
    w = fk.watch(path + "?watch=1")
    ok(w.status == 500 and json.loads(w.body).get("code") == 500, "fault status on a watch", w.body)
    w.close()

    fk.fault(method="GET", path="/faults/", action="drop")
    try:
        fk.get(path)
        dropped = False
    except (http.client.RemoteDisconnected, ConnectionError):
        dropped = True
    ok(dropped and fk.get(path)[0] == 200, "fault drop: the connection closes without an answer")

    fk.fault(path="/faults/", action="drop_mid_event", watch=True)
    w = fk.watch(path + "?watch=1")
    first = w.chunk()
    try:
        w.chunk()
        eof = False
    except EOFError:
        eof = True
    ok(w.status == 200 and eof and first and not first.endswith(b"\n") and
       b'{"type":"ADDED","object":{"kind":"ConfigMap"'.startswith(first[:40]) and not w.ended,
       "fault drop_mid_event: half an event, then the connection closes (no terminating chunk)", first)
    w.close()

    fk.fault(path="/faults/", action="stall")
    t0 = time.time()
    try:
        fk.get(path, timeout=1)
        stalled = False
    except socket.timeout:
        stalled = True
    ok(stalled and time.time() - t0 >= 0.9, "fault stall: no answer")
    ok(fk.get(path)[0] == 200, "the server answers again after a stalled client gave up")

    fk.fault(path="/faults/", action="slow", delay=0.6)
    t0 = time.time()
    st, _, d = fk.get(path)
    ok(st == 200 and time.time() - t0 >= 0.55 and d["items"], "fault slow: a late but normal answer")

    fk.fault(path="/faults/", action="garbage", watch=False)
    st, r, d = fk.get(path)
    ok(st == 200 and isinstance(d, bytes) and r.getheader("Content-Type") == "application/json",
       "fault garbage: 200 with a body that is not JSON", d)
    fk.fault(path="/faults/", action="garbage", watch=True)
    w = fk.watch(path + "?watch=1")
    data = w.chunk()
    try:
        json.loads(data)
        bad = False
    except ValueError:
        bad = True
    try:
        w.chunk()
        eof = False
    except EOFError:
        eof = True
    ok(w.status == 200 and bad and eof, "fault garbage on a watch: garbage bytes, then the close", data)
    w.close()

    fk.fault(path="/faults/", action="truncate")
    c = fk.conn()
    c.request("GET", path)
    r = c.getresponse()
    length = int(r.getheader("Content-Length"))
    try:
        r.read()
        short = False
    except http.client.IncompleteRead as e:
        short = len(e.partial) < length
    c.close()
    ok(r.status == 200 and short, "fault truncate: Content-Length larger than the body, then the close")

    fk.fault(path="/faults/", action="status", status=429, count=-1)
    codes = [fk.get(path)[0] for _ in range(4)]
    st, _, d = fk.get("/fake/faults")
    ok(codes == [429] * 4 and d["faults"][0]["count"] == -1, "count -1 lasts until cleared", codes)
    fk.req("DELETE", "/fake/faults")
    ok(fk.get(path)[0] == 200 and fk.get("/fake/faults")[2]["faults"] == [], "DELETE /fake/faults clears them")
    st, _, d = fk.post("/fake/faults", {"action": "explode"})
    ok(st == 400, "an unknown fault action is refused", d)


def test_request_log(fk):
    fk.req("DELETE", "/fake/requests")
    fk.get("/api/v1/namespaces/default/configmaps?" + q(labelSelector="a=b", limit="5"))
    fk.get("/api/v1/namespaces/default/configmaps/nope")
    w = fk.watch("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + fk.rv())
    w.close()
    fk.fault(path="/default/configmaps/dropme", action="drop")
    try:
        fk.get("/api/v1/namespaces/default/configmaps/dropme")
    except (http.client.RemoteDisconnected, ConnectionError):
        pass
    st, _, d = fk.get("/fake/requests")
    reqs = d.get("requests", [])
    ok(st == 200 and [(r["method"], r["path"], r["watch"], r["status"]) for r in reqs] == [
        ("GET", "/api/v1/namespaces/default/configmaps", False, 200),
        ("GET", "/api/v1/namespaces/default/configmaps/nope", False, 404),
        ("GET", "/api/v1/namespaces/default/configmaps", True, 200),
        ("GET", "/api/v1/namespaces/default/configmaps/dropme", False, 0)] and
       reqs[0]["query"] == {"labelSelector": "a=b", "limit": "5"} and
       all(isinstance(r["time"], float) for r in reqs), "GET /fake/requests logs API requests in order "
       "(not /fake/ ones)", reqs)
    fk.req("DELETE", "/fake/requests")
    ok(fk.get("/fake/requests")[2]["requests"] == [], "DELETE /fake/requests clears the log")


def test_keepalive(fk):
    c = fk.conn()
    statuses = []
    for _ in range(3):
        c.request("GET", "/api/v1/namespaces/default/configmaps")
        r = c.getresponse()
        r.read()
        statuses.append(r.status)
    c.close()
    ok(statuses == [200] * 3, "several requests on one keep-alive connection")


def test_token_and_chunks():
    fk = FakeKube("--token", "s3cret", "--chunk-size", "64", "--bookmark-interval", "0.3")
    try:
        st, _, d = fk.get("/api/v1/namespaces", token=False)
        ok(st == 401 and d == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": "Unauthorized", "reason": "Unauthorized", "code": 401},
           "--token: a request without it gets 401 Unauthorized", d)
        st, _, d = fk.get("/api/v1/namespaces", token=False, headers={"Authorization": "Bearer wrong"})
        ok(st == 401, "--token: a wrong token gets 401")
        ok(fk.get("/fake/requests", token=False)[0] == 200, "/fake/ needs no token")
        fk.token = "s3cret"
        ok(fk.get("/api/v1/namespaces")[0] == 200, "--token: the right token is accepted")

        fk.fixture([cm("chunk-%02d" % i, ns="ck", data={"payload": "x" * (i * 7)}) for i in range(20)])
        w = fk.watch("/api/v1/namespaces/ck/configmaps?watch=1")
        evs = w.events(20)
        backlog = list(w.chunks)
        joined = b"".join(backlog)
        ok(all(len(c) == 64 for c in backlog[:-1]) and len(backlog) > 20, "--chunk-size 64: the backlog comes in "
           "64-byte chunks", [len(c) for c in backlog])
        ok(any(not c.endswith(b"\n") for c in backlog[:-1]) and
           all(json.loads(line)["type"] == "ADDED" for line in joined.splitlines()) and
           [e["object"]["metadata"]["name"] for e in evs] == ["chunk-%02d" % i for i in range(20)],
           "chunk boundaries fall inside events; the joined lines are valid JSON")
        fk.req("PATCH", "/api/v1/namespaces/ck/configmaps/chunk-03", {"data": {"n": "1"}},
               ctype="application/merge-patch+json")
        e = w.event()
        ok(e["type"] == "MODIFIED" and w.chunks[-1].endswith(b"\n") and w.chunks[-1].count(b"\n") == 1,
           "a live event after the backlog has its own chunk", w.chunks[-1])
        w.close()

        w = fk.watch("/api/v1/namespaces/ck/configmaps?" + q(watch="1", resourceVersion=fk.rv(),
                                                              allowWatchBookmarks="1"))
        e = w.event(3)
        ok(e and e["type"] == "BOOKMARK" and e["object"]["metadata"]["resourceVersion"] == fk.rv(),
           "--bookmark-interval: periodic BOOKMARK events", e)
        w.close()
    finally:
        fk.stop()


def test_tls_and_state():
    openssl = shutil.which("openssl")
    tmp = tempfile.mkdtemp(prefix="fakekube-tls-")
    try:
        state = os.path.join(tmp, "state.json")
        with open(state, "w") as f:
            json.dump([cm("from-state", ns="init", data={"a": "b"}),
                       {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "init"},
                        "spec": {"replicas": 1}}], f)
        args = ["--state", state]
        if openssl:
            cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
            subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                            "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            args += ["--tls-cert", cert, "--tls-key", key]
        fk = FakeKube(*args)
        try:
            if openssl:
                fk.tls = ssl.create_default_context(cafile=cert)
            st, _, d = fk.get("/api/v1/namespaces/init/configmaps/from-state")
            ok(st == 200 and d["data"] == {"a": "b"} and d["metadata"]["resourceVersion"],
               "--state loads the initial objects", d)
            st, _, d = fk.get("/apis/apps/v1/namespaces/init/deployments/d")
            ok(st == 200 and d["spec"]["replicas"] == 1, "--state objects of several kinds", d)
            if openssl:
                w = fk.watch("/api/v1/namespaces/init/configmaps?watch=1")
                e = w.event()
                ok(e["type"] == "ADDED", "HTTPS with --tls-cert/--tls-key, including a watch", e)
                w.close()
                ok(wait_for(lambda: not fk.get("/fake/watches")[2]["watches"], 5),
                   "a disconnected TLS watcher is dropped")
            else:
                skip("HTTPS with --tls-cert/--tls-key", "no openssl command")
                skip("a disconnected TLS watcher is dropped", "no openssl command")
        finally:
            fk.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_sigterm():
    fk = FakeKube()
    w = fk.watch("/api/v1/configmaps?watch=1")
    w.events(0)
    t0 = time.time()
    rc = fk.stop()
    ok(rc == 0 and time.time() - t0 < 5, "SIGTERM: a clean exit with a watch open", (rc, time.time() - t0))
    w.close()


def test_scale(fk, n=100_000, page=500):
    """100k small objects: load, list in pages, stream as a watch backlog."""
    batch = 20_000
    t0 = time.time()
    for start in range(0, n, batch):
        fk.fixture([cm("o%06d" % i, ns="scale", labels={"i": str(i % 10)}) for i in range(start, start + batch)])
    t_load = time.time() - t0
    t0 = time.time()
    total, cont, pages = 0, None, 0
    while True:
        params = {"limit": str(page)}
        if cont:
            params["continue"] = cont
        st, _, d = fk.get("/api/v1/namespaces/scale/configmaps?" + q(**params), timeout=60)
        if st != 200:
            break
        total += len(d["items"])
        pages += 1
        cont = d["metadata"].get("continue")
        if not cont:
            break
    t_list = time.time() - t0
    ok(total == n and pages == n // page, "%d objects listed in %d pages of %d (%.1fs; %.0f pages/s)"
       % (total, pages, page, t_list, pages / max(t_list, 1e-9)))
    w = fk.watch("/api/v1/namespaces/scale/configmaps?" + q(watch="1", resourceVersion="0"))
    t0 = time.time()
    count = 0
    while count < n:
        data = w.chunk(30)
        count += data.count(b"\n")
    t_watch = time.time() - t0
    ok(count == n, "a watch from 0 streams all %d objects (%.1fs; %.0f events/s)" % (n, t_watch, n / t_watch))
    # Live events: writes in bulk, one watcher counting them.
    rv = fk.rv()
    w2 = fk.watch("/api/v1/namespaces/scale/configmaps?" + q(watch="1", resourceVersion=rv))
    t0 = time.time()
    live = 20_000
    fk.fixture([cm("o%06d" % i, ns="scale", data={"v": "2"}) for i in range(live)])
    count = 0
    while count < live:
        count += w2.chunk(30).count(b"\n")
    t_live = time.time() - t0
    ok(count == live, "%d live events reach a watcher (%.1fs incl. the writes; %.0f events/s); load %.1fs"
       % (live, t_live, live / t_live, t_load))
    w.close()
    w2.close()


def bench():
    fk = FakeKube()
    try:
        fk.fixture([cm("b%d" % i, ns="bench") for i in range(100)])
        c = fk.conn()
        t0 = time.time()
        n = 2000
        for i in range(n):
            c.request("GET", "/api/v1/namespaces/bench/configmaps/b%d" % (i % 100))
            c.getresponse().read()
        print("GET on one keep-alive connection: %.0f requests/s" % (n / (time.time() - t0)))
        t0 = time.time()
        for i in range(n // 2):
            c.request("PUT", "/api/v1/namespaces/bench/configmaps/b%d" % (i % 100),
                      body=json.dumps(cm("b%d" % (i % 100), ns="bench", data={"i": str(i)})),
                      headers={"Content-Type": "application/json"})
            c.getresponse().read()
        print("PUT on one keep-alive connection: %.0f requests/s" % (n / 2 / (time.time() - t0)))
        c.close()
        w = fk.watch("/api/v1/namespaces/bench/configmaps?watch=1&resourceVersion=" + fk.rv())
        live = 50_000
        t0 = time.time()
        fk.fixture([cm("b%d" % (i % 100), ns="bench", data={"j": str(i)}) for i in range(live)])
        t_write = time.time() - t0
        count = 0
        while count < live:
            count += w.chunk(30).count(b"\n")
        t = time.time() - t0
        print("%d events written in %.2fs, received by a watcher in %.2fs: %.0f events/s" % (live, t_write, t,
                                                                                             live / t))
        w.close()
    finally:
        fk.stop()


def main():
    if "--bench" in sys.argv:
        bench()
        return 0
    fk = FakeKube()
    try:
        for test in (test_discovery, test_crud, test_lists, test_watch, test_partial_metadata, test_crd, test_faults,
                     test_request_log, test_keepalive, test_scale):
            try:
                test(fk)
            except Exception as err:
                import traceback
                ok(False, "%s raised %r" % (test.__name__, err), traceback.format_exc() + fk.logtext()[-3000:])
    finally:
        rc = fk.stop()
    for test in (test_token_and_chunks, test_tls_and_state, test_sigterm, test_partial_metadata_unknown):
        try:
            test()
        except Exception as err:
            import traceback
            ok(False, "%s raised %r" % (test.__name__, err), traceback.format_exc())
    ok(rc == 0, "the server exits 0 on SIGTERM", rc)
    print("1..%d" % len(_results))
    return 0 if all(_results) else 1


if __name__ == "__main__":
    sys.exit(main())
