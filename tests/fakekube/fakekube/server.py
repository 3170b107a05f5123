"""The HTTP side: routing of API paths, discovery, watch streams, faults and the
/fake/ control API."""

import json
import re
import select
import socket
import ssl
import sys
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

from .faults import Faults, RequestLog
from .filters import Filter
from .store import Store, as_metadata
from .util import ApiError, bad_request, dumpb, status_failure

TRUE_WORDS = ("1", "t", "T", "true", "TRUE", "True")

VERSION_INFO = {
    "major": "1", "minor": "20", "gitVersion": "v1.20.2-fake",
    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
    "buildDate": "2021-01-13T13:20:00Z", "goVersion": "go1.15.5", "compiler": "gc", "platform": "linux/amd64",
}

GARBAGE = b"\x00\xff<html><body>this is not JSON {{{</body></html>\n"


def chunk(data):
    """One piece of Transfer-Encoding: chunked framing."""
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST_CHUNK = b"0\r\n\r\n"

# What "Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=V" may name.
PARTIAL_KINDS = ("PartialObjectMetadata", "PartialObjectMetadataList")
META_VERSIONS = ("v1", "v1beta1")


def not_acceptable(message):
    return ApiError(406, "NotAcceptable", message)


def negotiate(accept, partial_metadata=True):
    """What an Accept header asks of a GET: None for the resource's own JSON, or (as, apiVersion)
    for PartialObjectMetadata or PartialObjectMetadataList in "meta.k8s.io/V". The ranges are
    tried by q (highest first, then in order), as the real server does: a range with an "as" it
    does not know (another kind, group or version, or any "as" with partial_metadata off, as
    on a server before 1.15), or another media type, is passed over for the next one. Nothing
    acceptable: 406. The fake writes JSON only, so YAML and protobuf ranges are passed over too."""
    if not accept or not accept.strip():
        return None
    ranges = []
    for i, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        mtype = fields[0].lower()
        params = {}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            params[k.strip().lower()] = v.strip()
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0 and mtype:
            ranges.append((-q, i, mtype, params))
    for _, _, mtype, params in sorted(ranges):
        what = params.get("as")
        if what is None:
            if mtype in ("application/json", "application/*", "*/*"):
                return None
            continue
        if (partial_metadata and mtype == "application/json" and what in PARTIAL_KINDS
                and params.get("g") == "meta.k8s.io" and params.get("v") in META_VERSIONS):
            return what, "meta.k8s.io/" + params["v"]
    raise not_acceptable("only the following media types are accepted: application/json, application/yaml, "
                         "application/vnd.kubernetes.protobuf")


def go_type(res, suffix=""):
    """How the real server names the resource's Go type in a 406: "*core.ConfigMap"."""
    return "*%s.%s%s" % (res.group.split(".")[0] if res.group else "core", res.kind, suffix)


class Dropped(Exception):
    """The handler closed the connection on purpose (a fault); nothing more to send."""


def not_found_path():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed(method):
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                    {"causes": [{"reason": "UnexpectedServerResponse", "message": method}]})


class Route:
    """What an API path names: a discovery document, or a resource with an optional
    namespace, object name and subresource."""

    def __init__(self, doc=None, res=None, ns=None, name=None, sub=None, watch=False):
        self.doc, self.res, self.ns, self.name, self.sub, self.watch = doc, res, ns, name, sub, watch


class FakeKubeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address, *, token=None, tls_context=None, chunk_size=0, bookmark_interval=0.0,
                 verbose=False, store=None, partial_metadata=True):
        self.store = store or Store()
        self.partial_metadata = partial_metadata
        self.faults = Faults()
        self.requests = RequestLog()
        self.token = token
        self.tls_context = tls_context
        self.chunk_size = chunk_size
        self.bookmark_interval = bookmark_interval
        self.verbose = verbose
        self.stopping = False
        super().__init__(address, Handler)

    def get_request(self):
        sock, addr = super().get_request()
        if self.tls_context is not None:
            # The handshake happens in the connection's own thread (Handler.setup), so a
            # silent client cannot block the accept loop.
            sock = self.tls_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, ssl.SSLError, socket.timeout, Dropped)):
            return
        super().handle_error(request, client_address)

    def stop(self):
        self.stopping = True
        self.store.stop()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakekube"

    # -- plumbing --

    def setup(self):
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.settimeout(10)
            self.connection.do_handshake()
            self.connection.settimeout(None)

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fakekube: %s %s\n" % (self.address_string(), fmt % args))

    def send_response(self, code, message=None):
        # Like the real server: a Date header but no Server header.
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass   # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_body(self, code, body, content_type="application/json", headers=None):
        """A complete response; a pending truncate fault cuts it short."""
        if self.entry is not None:
            self.entry["status"] = code
        self.send_response(code)
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", content_type)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        # Headers and body in one write (BaseHTTPRequestHandler buffers the headers in
        # _headers_buffer): two small writes would meet Nagle and delayed ACKs.
        self._headers_buffer.append(b"\r\n")
        head = b"".join(self._headers_buffer)
        self._headers_buffer = []
        if self.fault is not None and self.fault.action in ("truncate", "drop_mid_event"):
            # The promised length is never delivered: half the body, then the close.
            self.wfile.write(head + body[:len(body) // 2])
            raise Dropped()
        self.wfile.write(head + body)

    def send_json(self, code, obj, headers=None):
        self.send_body(code, dumpb(obj), headers=headers)

    def peer_closed(self):
        """True when the client has gone away (checked without blocking)."""
        sock = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        if not readable:
            return False
        if isinstance(sock, ssl.SSLSocket):
            # A TLS client sends nothing during a response except a close_notify.
            sock.settimeout(0.05)
            try:
                return sock.recv(4096) == b""
            except (ssl.SSLWantReadError, socket.timeout):
                return False
            except OSError:
                return True
            finally:
                sock.settimeout(None)
        try:
            return sock.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    # -- the request --

    def dispatch(self, method):
        self.entry = None
        self.fault = None
        try:
            url = urlsplit(self.path)
            path = url.path
            query = {}
            for k, v in parse_qsl(url.query, keep_blank_values=True):
                query.setdefault(k, v)   # the first value wins, as in Go's url.Values.Get
            body = self.read_body()
            if path == "/fake" or path.startswith("/fake/"):
                self.control(method, path, body)
                return
            self.api_request(method, path, query, body)
        except Dropped:
            self.close_connection = True
        except (ConnectionError, ssl.SSLError, socket.timeout):
            self.close_connection = True
        except ApiError as err:
            self.send_json(err.code, err.status)
        except Exception:
            traceback.print_exc()
            self.close_connection = True
            try:
                self.send_json(500, status_failure(500, "InternalError", "fakekube: internal error"))
            except Exception:
                pass

    def api_request(self, method, path, query, body):
        srv = self.server
        if path in ("/healthz", "/livez", "/readyz") and method == "GET":
            self.send_body(200, b"ok", "text/plain; charset=utf-8")
            return
        route_error = None
        try:
            route = self.route(path)
        except ApiError as err:
            route, route_error = None, err
        watch = method == "GET" and route is not None and route.res is not None and (
            route.watch or query.get("watch") in TRUE_WORDS)
        self.entry = srv.requests.add(method, path, query, watch, self.headers.get("User-Agent", ""),
                                      self.headers.get("Accept", ""))
        self.fault = srv.faults.take(method, path, watch, self.headers.get("User-Agent", ""), query)
        if self.fault is not None:
            self.entry["fault"] = self.fault.action
            if self.apply_fault(watch):
                return
        if srv.token is not None and self.headers.get("Authorization") != "Bearer " + srv.token:
            self.send_json(401, status_failure(401, "Unauthorized", "Unauthorized"))
            return
        if route_error is not None:
            raise route_error
        if route.doc is not None:
            if method != "GET":
                raise method_not_allowed(method)
            self.send_json(200, route.doc() if callable(route.doc) else route.doc)
            return
        self.resource_request(method, route, query, body, watch)

    def apply_fault(self, watch):
        """Act out the fault; True when the request is fully handled by it."""
        f = self.fault
        if f.action == "status":
            headers = {}
            details = None
            if f.retry_after is not None:
                headers["Retry-After"] = str(f.retry_after)
                details = {"retryAfterSeconds": int(f.retry_after)}
            self.fault = None
            self.send_json(f.status, status_failure(f.status, None, "fakekube: injected HTTP %d" % f.status,
                                                    details), headers)
            return True
        if f.action == "drop":
            raise Dropped()
        if f.action == "stall":
            while not self.server.stopping and not self.peer_closed():
                time.sleep(0.1)
            raise Dropped()
        if f.action == "slow":
            time.sleep(f.delay)
            self.fault = None
            return False
        if f.action == "garbage":
            if watch:
                self.entry["status"] = 200
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(chunk(GARBAGE))
                raise Dropped()
            self.fault = None
            self.send_body(200, GARBAGE)
            return True
        return False   # truncate and drop_mid_event act when the answer is written

    # -- routing and discovery --

    def route(self, path):
        segs = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
        store = self.server.store
        reg = store.registry
        if not segs:
            return Route(doc={"paths": ["/api", "/api/v1", "/apis", "/version"]})
        if segs == ["version"]:
            return Route(doc=VERSION_INFO)
        if segs[0] == "api":
            if len(segs) == 1:
                host, port = self.server.server_address[:2]
                return Route(doc={"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": "%s:%d" % (host, port)}]})
            if segs[1] != "v1":
                raise not_found_path()
            group, version, rest = "", "v1", segs[2:]
        elif segs[0] == "apis":
            with store.lock:
                if len(segs) == 1:
                    return Route(doc=self.group_list())
                group = segs[1]
                if group == "" or group not in reg.groups:
                    raise not_found_path()
                if len(segs) == 2:
                    return Route(doc=self.group_doc(group))
                version, rest = segs[2], segs[3:]
        else:
            raise not_found_path()
        with store.lock:
            resources = reg.resources(group, version)
            if not resources:
                raise not_found_path()
            if not rest:
                doc = {"kind": "APIResourceList"}
                if group:
                    doc["apiVersion"] = "v1"
                doc["groupVersion"] = resources[0].group_version
                doc["resources"] = [e for r in resources for e in r.discovery_entries()]
                return Route(doc=doc)
            watch = False
            if rest[0] == "watch":   # the old /watch/ path form
                watch, rest = True, rest[1:]
            ns = None
            if len(rest) >= 3 and rest[0] == "namespaces":
                r = reg.lookup(group, version, rest[2])
                if r is not None and r.namespaced:
                    ns, rest = rest[1], rest[2:]
            if not rest:
                raise not_found_path()
            res = reg.lookup(group, version, rest[0])
            if res is None or len(rest) > 3 or (res.namespaced and ns is None and len(rest) > 1):
                raise not_found_path()
            name = rest[1] if len(rest) > 1 else None
            sub = rest[2] if len(rest) > 2 else None
            if sub is not None and (sub != "status" or not res.status):
                raise not_found_path()
            return Route(res=res, ns=ns, name=name, sub=sub, watch=watch)

    def group_doc(self, group):
        reg = self.server.store.registry
        versions = [{"groupVersion": group + "/" + v, "version": v} for v in reg.versions(group)]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions,
                "preferredVersion": versions[0]}

    def group_list(self):
        groups = []
        for group in self.server.store.registry.groups:
            if group:
                doc = self.group_doc(group)
                del doc["kind"], doc["apiVersion"]
                groups.append(doc)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    # -- resources --

    def decode(self, body):
        if not body:
            raise bad_request("the request needs a body")
        ctype = self.headers.get("Content-Type", "application/json").split(";")[0].strip()
        if ctype not in ("application/json", "", "*/*"):
            raise ApiError(415, "UnsupportedMediaType", 'the body of the request was in an unknown format - '
                           'accepted media types include: application/json')
        try:
            return json.loads(body)
        except ValueError as err:
            raise bad_request("the body of the request could not be decoded: %s" % err)

    def resource_request(self, method, route, query, body, watch):
        store = self.server.store
        res, ns, name, sub = route.res, route.ns, route.name, route.sub
        cluster_wide = res.namespaced and ns is None
        if method == "GET":
            partial = negotiate(self.headers.get("Accept"), self.server.partial_metadata)
            flt = Filter(ns, query.get("labelSelector"), query.get("fieldSelector"))
            if name is not None and watch:
                # A watch of one object is a watch of its collection by name.
                flt.fields.append((["metadata", "name"], False, name))
                name = None
            if watch:
                self.serve_watch(res, flt, query, partial)
            elif name is not None:
                obj = store.get(res, ns, name)
                if partial is not None and partial[0] != "PartialObjectMetadata":
                    raise not_acceptable("you requested %s, but the requested object is not a list (%s)"
                                         % (partial[0], go_type(res)))
                self.send_json(200, obj if partial is None else as_metadata(obj, partial[1]))
            else:
                items, meta = store.list(res, flt, _int_param(query, "limit"), query.get("continue"),
                                         query.get("resourceVersion"), query.get("resourceVersionMatch"))
                if partial is None:
                    self.send_body(200, b'{"kind":"%s","apiVersion":"%s","metadata":%s,"items":[%s]}' % (
                        (res.kind + "List").encode(), res.api_version.encode(), dumpb(meta),
                        b",".join(dumpb(i) for i in items)))
                elif partial[0] != "PartialObjectMetadataList":
                    raise not_acceptable("you requested %s, but the requested object is a list (%s)"
                                         % (partial[0], go_type(res, "List")))
                else:
                    # Items keep their kind and apiVersion here; an empty list has "items": null.
                    self.send_body(200, b'{"kind":"PartialObjectMetadataList","apiVersion":"%s","metadata":%s,'
                                   b'"items":%s}' % (partial[1].encode(), dumpb(meta), b"[%s]" % b",".join(
                                       dumpb(as_metadata(i, partial[1])) for i in items) if items else b"null"))
            return
        if cluster_wide:
            raise method_not_allowed(method)
        if method == "POST":
            if name is not None:
                raise method_not_allowed(method)
            self.send_json(201, store.create(res, ns, self.decode(body)))
        elif method == "PUT":
            if name is None:
                raise method_not_allowed(method)
            self.send_json(200, store.update(res, ns, name, self.decode(body), sub))
        elif method == "PATCH":
            if name is None:
                raise method_not_allowed(method)
            ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
            self.send_json(200, store.patch(res, ns, name, ctype, body, sub))
        elif method == "DELETE":
            try:
                options = json.loads(body) if body.strip() else None
            except ValueError as err:
                raise bad_request("the body of the request could not be decoded: %s" % err)
            if name is None:
                if "deletecollection" not in res.verbs:
                    raise method_not_allowed(method)
                flt = Filter(ns, query.get("labelSelector"), query.get("fieldSelector"))
                items = store.delete_collection(res, flt)
                self.send_body(200, b'{"kind":"%s","apiVersion":"%s","metadata":{},"items":[%s]}' % (
                    (res.kind + "List").encode(), res.api_version.encode(), b",".join(dumpb(i) for i in items)))
                return
            if sub is not None:
                raise method_not_allowed(method)
            obj, gone = store.delete(res, ns, name, options)
            if not gone:
                self.send_json(202, obj)
            elif res.returns_object:
                self.send_json(200, obj)
            else:
                details = res.details(name)
                details["uid"] = obj["metadata"].get("uid")
                self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                     "details": details})
        else:
            raise method_not_allowed(method)

    # -- watch streams --

    def serve_watch(self, res, flt, query, partial=None):
        """A watch stream. @partial as negotiate() returns it: with PartialObjectMetadata every
        object (bookmarks too) goes out as that; with PartialObjectMetadataList the real server
        cannot encode any event ("the requested object is not a list"), so the stream ends,
        cleanly and empty, where the first event would have been."""
        srv = self.server
        store = srv.store
        bookmarks = query.get("allowWatchBookmarks") in TRUE_WORDS
        timeout = _int_param(query, "timeoutSeconds")
        rv = query.get("resourceVersion")
        meta = partial[1] if partial is not None else None
        unencodable = partial is not None and partial[0] != "PartialObjectMetadata"
        kind, api_version = (res.kind, res.api_version) if meta is None else ("PartialObjectMetadata", meta)
        w, initial = store.watch_start(res, flt, rv, bookmarks, {"path": self.entry["path"], "query": query}, meta)
        self.entry["status"] = 200
        self.send_response(200)
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if w is None:
            # Too old: still a 200, with one ERROR event, and the end of the stream.
            status = status_failure(410, "Expired", "too old resource version: %s (%d)" % (rv, initial))
            self.wfile.write(chunk(b'{"type":"ERROR","object":%s}\n' % dumpb(status)) + LAST_CHUNK)
            return
        try:
            deadline = time.monotonic() + timeout if timeout > 0 else None
            interval = srv.bookmark_interval if bookmarks else 0
            next_bookmark = time.monotonic() + interval if interval > 0 else None
            # The backlog: the current objects (for a watch from "0") and the logged
            # events after the given resourceVersion, all that is ready right now.
            backlog = [b'{"type":"ADDED","object":%s}\n' % dumpb(o if meta is None else as_metadata(o, meta))
                       for o in initial]
            wait = 0
            while True:
                events, bookmark, state = store.watch_next(w, wait)
                lines = w.lines_for(events)
                if bookmark is not None:
                    lines.append(b'{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"%s","metadata":'
                                 b'{"resourceVersion":"%s","creationTimestamp":null}}}\n'
                                 % (kind.encode(), api_version.encode(), bookmark.encode()))
                if isinstance(state, tuple):
                    # Fell behind the event log: the same ERROR a too old start gets.
                    status = status_failure(410, "Expired", "too old resource version: %d (%d)"
                                            % (w.min_rv, state[1]))
                    lines.append(b'{"type":"ERROR","object":%s}\n' % dumpb(status))
                if unencodable and (backlog or lines):
                    break
                if backlog is not None:
                    self.write_events(backlog + lines, backlog=True)
                    backlog = None
                else:
                    self.write_events(lines)
                if state is not None:
                    break
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if next_bookmark is not None and now >= next_bookmark:
                    store.poke_watchers(lambda x: x is w, "bookmark_due")
                    next_bookmark = now + interval
                if not events and bookmark is None and self.peer_closed():
                    raise Dropped()
                wait = 0.5
                if deadline is not None:
                    wait = min(wait, deadline - now)
                if next_bookmark is not None:
                    wait = min(wait, next_bookmark - now)
                wait = max(wait, 0.001)
            self.wfile.write(LAST_CHUNK)
        finally:
            store.watch_stop(w)

    def write_events(self, lines, backlog=False):
        if not lines:
            return
        if self.fault is not None and self.fault.action in ("drop_mid_event", "truncate"):
            first = lines[0]
            self.wfile.write(chunk(first[:len(first) // 2]))
            raise Dropped()
        size = self.server.chunk_size
        if backlog and size > 0:
            # Like a real server's buffered writer: fixed-size chunks that cut events apart.
            data = b"".join(lines)
            out = b"".join(chunk(data[i:i + size]) for i in range(0, len(data), size))
        else:
            out = b"".join(chunk(line) for line in lines)
        self.wfile.write(out)

    # -- the control API --

    def control(self, method, path, body):
        srv = self.server
        store = srv.store
        try:
            data = json.loads(body) if body.strip() else None
        except ValueError as err:
            raise bad_request("bad JSON: %s" % err)
        what = (method, path.rstrip("/"))
        if what == ("POST", "/fake/faults"):
            specs = data if isinstance(data, list) else [data]
            added = [srv.faults.add(s) for s in specs]
            self.send_json(200, {"faults": [f.describe() for f in added]})
        elif what == ("GET", "/fake/faults"):
            self.send_json(200, {"faults": srv.faults.describe()})
        elif what == ("DELETE", "/fake/faults"):
            srv.faults.clear()
            self.send_json(200, {"faults": []})
        elif what == ("POST", "/fake/compact"):
            self.send_json(200, {"compacted": store.compact()})
        elif what == ("POST", "/fake/bookmark"):
            n = store.poke_watchers(lambda w: w.bookmarks, "bookmark_due")
            self.send_json(200, {"watches": n})
        elif what == ("POST", "/fake/close-watches"):
            pattern = re.compile((data or {}).get("path") or "")
            n = store.poke_watchers(lambda w: pattern.search(w.info["path"]) is not None, "close_due")
            self.send_json(200, {"closed": n})
        elif what == ("GET", "/fake/requests"):
            self.send_json(200, {"requests": srv.requests.snapshot()})
        elif what == ("DELETE", "/fake/requests"):
            srv.requests.clear()
            self.send_json(200, {"requests": []})
        elif what == ("GET", "/fake/watches"):
            with store.lock:
                watches = [dict(w.info) for w in store.watchers]
            self.send_json(200, {"watches": watches})
        elif what == ("POST", "/fake/objects"):
            if isinstance(data, dict) and data.get("kind", "").endswith("List") and "items" in data:
                data = data["items"]
            if isinstance(data, list):
                with store.lock:
                    for obj in data:
                        store.put_fixture(obj)
                    self.send_json(200, {"count": len(data), "resourceVersion": str(store.rv)})
            else:
                self.send_json(200, store.put_fixture(data))
        elif what == ("GET", "/fake/state"):
            with store.lock:
                self.send_json(200, {"resourceVersion": str(store.rv), "compacted": str(store.compacted),
                                     "watches": len(store.watchers)})
        else:
            raise ApiError(404, "NotFound", "no such control endpoint: %s %s" % (method, path))


def _int_param(query, name):
    text = query.get(name)
    if text in (None, ""):
        return 0
    try:
        value = int(text)
    except ValueError:
        raise bad_request('invalid %s: "%s"' % (name, text))
    return max(value, 0)

