"""In-memory object storage with a global resourceVersion, per-resource event logs
and watch registrations.

Stored objects are never modified after they are stored: every write stores a new
dict (sharing untouched branches with the old one). That lets event log entries,
list snapshots and the watchers all hold references without copying.

One re-entrant lock guards everything here; each resource's Condition uses it, so a
watcher sleeping on its resource is woken by writes to that resource only.
"""

import base64
import binascii
import bisect
import json
import random
import threading
import uuid
from collections import OrderedDict

from .patching import json_equal, json_patch, merge_patch
from .resources import Registry, crd_status, validate_crd
from .util import ApiError, bad_request, dumps, now_rfc3339

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

# How many events each resource keeps for watches that resume from a resourceVersion.
# Older ones are dropped and a request for them gets the 410 answers, as when a real
# server's watch cache window has moved on.
MAX_LOG = 200_000

MERGE_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
JSON_PATCH_TYPE = "application/json-patch+json"

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def strip_type(obj):
    """A list item as a real server sends it: without kind and apiVersion."""
    return {k: v for k, v in obj.items() if k != "kind" and k != "apiVersion"}


def as_metadata(obj, api_version):
    """The object as a PartialObjectMetadata of @api_version ("meta.k8s.io/v1"): its metadata only."""
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": obj.get("metadata") or {}}


def _with_rv(obj, rv):
    out = dict(obj)
    out["metadata"] = dict(obj.get("metadata") or {}, resourceVersion=rv)
    return out


class Event:
    """One write to one resource. obj is the object after the write (for DELETED: the
    last state with the deletion's resourceVersion); prev the object before it."""

    __slots__ = ("rv", "type", "obj", "prev", "key", "_line", "_alt")

    def __init__(self, rv, etype, obj, prev, key):
        self.rv, self.type, self.obj, self.prev, self.key = rv, etype, obj, prev, key
        self._line = None
        self._alt = None

    def line(self, meta=None):
        """The encoded event; with @meta (an apiVersion, "meta.k8s.io/v1") its object as
        PartialObjectMetadata. Encoded once, then shared by every watcher that gets it."""
        if meta is not None:
            return self.line_as(self.type, meta)
        if self._line is None:
            self._line = ('{"type":"%s","object":%s}\n' % (self.type, dumps(self.obj))).encode("utf-8")
        return self._line

    def line_as(self, etype, meta=None):
        """The event as seen by a watch whose selector the object entered (ADDED, with
        the new object) or left (DELETED, with the old object at the new resourceVersion);
        @meta as for line()."""
        if self._alt is None:
            self._alt = {}
        line = self._alt.get((etype, meta))
        if line is None:
            if etype == self.type or etype == ADDED:
                obj = self.obj
            else:
                obj = _with_rv(self.prev, self.obj["metadata"]["resourceVersion"])
            if meta is not None:
                obj = as_metadata(obj, meta)
            line = ('{"type":"%s","object":%s}\n' % (etype, dumps(obj))).encode("utf-8")
            self._alt[(etype, meta)] = line
        return line


class Collection:
    """The objects of one group/resource (all versions), keyed by (namespace, name);
    cluster-scoped objects use the namespace ""."""

    def __init__(self, lock):
        self.objs = {}
        self.keys = []          # sorted keys, for ordered lists and pagination
        self.log = []           # Events in resourceVersion order
        self.base = 0           # absolute position of log[0] (earlier ones were dropped)
        self.floor = 0          # every event with rv > floor is still in the log
        self.cond = threading.Condition(lock)
        self.watchers = set()

    def end(self):
        return self.base + len(self.log)

    def last_rv(self):
        return self.log[-1].rv if self.log else 0


class Watcher:
    """A watch registration. The HTTP side pulls events with Store.watch_next."""

    def __init__(self, res, coll, flt, bookmarks, info, meta=None):
        self.res = res
        self.coll = coll
        self.flt = flt
        self.bookmarks = bookmarks
        self.meta = meta              # "meta.k8s.io/v1": objects go out as PartialObjectMetadata
        self.info = info              # {"path": ..., "query": {...}} for /fake/watches
        self.pos = 0                  # absolute log position of the next event to send
        self.min_rv = 0               # events at or below this were already covered
        self.bookmark_due = False
        self.close_due = False

    def lines_for(self, events):
        """Encoded lines for the events this watch should see, applying the namespace
        and the selectors. An object entering the selection is ADDED, one leaving it
        DELETED, as a real server reports them."""
        out = []
        ns = self.flt.namespace
        selective = self.flt.selective
        match = self.flt.matches
        min_rv = self.min_rv
        meta = self.meta
        for e in events:
            if e.rv <= min_rv or (ns is not None and e.key[0] != ns):
                continue
            if not selective:
                out.append(e.line(meta))
            elif e.type != MODIFIED:
                if match(e.obj):
                    out.append(e.line(meta))
            else:
                now, before = match(e.obj), match(e.prev)
                if now and before:
                    out.append(e.line(meta))
                elif now:
                    out.append(e.line_as(ADDED, meta))
                elif before:
                    out.append(e.line_as(DELETED, meta))
        return out


def encode_continue(rv, key):
    raw = json.dumps({"v": "fakekube/1", "rv": rv, "start": list(key)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token):
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        rv, key = int(data["rv"]), tuple(data["start"])
        if len(key) != 2 or not all(isinstance(k, str) for k in key):
            raise ValueError(key)
        return rv, key
    except (binascii.Error, ValueError, KeyError, TypeError) as err:
        raise bad_request("continue key is not valid: %s" % err)


def parse_rv(text, what="resourceVersion"):
    try:
        rv = int(text)
        if rv < 0:
            raise ValueError
        return rv
    except (TypeError, ValueError):
        raise bad_request('invalid %s: "%s"' % (what, text))


class Store:
    def __init__(self, start_rv=100):
        self.lock = threading.RLock()
        self.rv = start_rv
        self.compacted = 0          # lists/watches from an older resourceVersion get 410
        self.registry = Registry()
        self.colls = {}             # storage key -> Collection
        self.watchers = []          # every open Watcher, in the order opened
        self.stopping = False
        self._views = OrderedDict() # (storage key, rv) -> (keys, objs): past states for lists

    # -- helpers (caller holds the lock) --

    def coll(self, res):
        c = self.colls.get(res.storage_key)
        if c is None:
            c = self.colls[res.storage_key] = Collection(self.lock)
        return c

    def boundary(self, coll):
        """The oldest resourceVersion still served for this resource."""
        return max(self.compacted, coll.floor)

    def _key(self, res, ns, name):
        return ((ns or "") if res.namespaced else "", name)

    def _commit(self, res, etype, obj, prev):
        """Store one write, give it the next resourceVersion and log its event."""
        coll = self.coll(res)
        self.rv += 1
        rv = str(self.rv)
        meta = (obj if etype != DELETED else prev)["metadata"]
        key = (meta.get("namespace", "") if res.namespaced else "", meta["name"])
        if etype == DELETED:
            obj = _with_rv(prev, rv)
            del coll.objs[key]
            i = bisect.bisect_left(coll.keys, key)
            del coll.keys[i]
        else:
            obj = _with_rv(obj, rv)
            if key not in coll.objs:
                bisect.insort(coll.keys, key)
            coll.objs[key] = obj
        coll.log.append(Event(self.rv, etype, obj, prev, key))
        if len(coll.log) > MAX_LOG + MAX_LOG // 10:
            drop = len(coll.log) - MAX_LOG
            coll.floor = coll.log[drop - 1].rv
            del coll.log[:drop]
            coll.base += drop
        coll.cond.notify_all()
        if res.storage_key == ("apiextensions.k8s.io", "customresourcedefinitions"):
            self._crd_changed(obj, etype)
        return obj

    def _crd_changed(self, crd, etype):
        name = crd["metadata"]["name"]
        served = {r.storage_key: r for r in self.registry.crd_resources(name)}
        self.registry.remove_crd(name)
        if etype != DELETED:
            self.registry.apply_crd(crd)
            return
        # The custom resources go with their definition, and their watches end.
        for skey, res in served.items():
            coll = self.colls.get(skey)
            if coll is None:
                continue
            for key in list(coll.keys):
                self._commit(res, DELETED, None, coll.objs[key])
            for w in coll.watchers:
                w.close_due = True
            coll.cond.notify_all()
            del self.colls[skey]

    def _normalize(self, res, body):
        """Check kind/apiVersion of a request body and put the top-level fields in the
        order the server writes them."""
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind not in (None, "", res.kind):
            raise bad_request("the kind of the object (%s) does not match the resource (%s)" % (kind, res.kind))
        if api_version not in (None, "") and api_version.rpartition("/")[0] != res.group:
            raise bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                              % (api_version, res.api_version))
        meta = body.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        out = {"kind": res.kind, "apiVersion": res.api_version, "metadata": dict(meta or {})}
        for k, v in body.items():
            if k not in out:
                out[k] = v
        return out

    @staticmethod
    def _server_defaults(res, obj):
        """Defaults a real server applies on every write that tests may notice."""
        if res.group == "" and res.plural == "secrets":
            # stringData is write-only: it is merged into data, base64-encoded.
            plain = obj.pop("stringData", None)
            if isinstance(plain, dict):
                data = dict(obj.get("data") or {})
                for k, v in plain.items():
                    data[k] = base64.b64encode(str(v).encode()).decode()
                obj["data"] = data
            obj.setdefault("type", "Opaque")

    def _get(self, res, ns, name):
        obj = self.coll(res).objs.get(self._key(res, ns, name))
        if obj is None:
            raise res.not_found(name)
        return obj

    # -- reads --

    def current_rv(self):
        with self.lock:
            return str(self.rv)

    def get(self, res, ns, name):
        with self.lock:
            return self._get(res, ns, name)

    def _view_at(self, res, coll, rv):
        """Keys and objects of a resource as they were at resourceVersion rv (rv must
        not be below the boundary): the current state with later events undone."""
        if coll.last_rv() <= rv:
            return coll.keys, coll.objs
        ck = (res.storage_key, rv)
        view = self._views.get(ck)
        if view is None:
            objs = dict(coll.objs)
            for e in reversed(coll.log):
                if e.rv <= rv:
                    break
                if e.type == ADDED:
                    del objs[e.key]
                else:
                    objs[e.key] = e.prev
            view = self._views[ck] = (sorted(objs), objs)
            while len(self._views) > 8:
                self._views.popitem(last=False)
        return view

    def list(self, res, flt, limit=0, cont=None, rv=None, rv_match=None):
        """One page of a list: (items without kind/apiVersion, list metadata)."""
        with self.lock:
            coll = self.coll(res)
            edge = self.boundary(coll)
            start = None
            if cont:
                snap, start = decode_continue(cont)
                if snap < edge:
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the continue "
                                   "parameter, or use the continue token in this response to retrieve the "
                                   "remainder of the results.",
                                   metadata={"continue": encode_continue(self.rv, start)})
            elif rv_match == "Exact":
                if rv in (None, ""):
                    raise bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided")
                snap = parse_rv(rv)
                if snap < edge:
                    raise ApiError(410, "Expired", "The resourceVersion for the provided list is too old.")
            elif rv_match not in (None, "", "NotOlderThan"):
                raise bad_request('resourceVersionMatch: Unsupported value: "%s"' % rv_match)
            else:
                snap = self.rv
                if rv not in (None, ""):
                    if rv == "0":
                        limit = 0   # served from the watch cache, which ignores limit
                    elif parse_rv(rv) > self.rv:
                        snap = -1
            if snap > self.rv or snap < 0:
                raise ApiError(504, "Timeout", "Too large resource version: %s, current: %d" % (rv, self.rv),
                               {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource "
                                            "version"}], "retryAfterSeconds": 1})
            keys, objs = self._view_at(res, coll, snap)
            ns = flt.namespace if res.namespaced else None
            if start is not None:
                i = bisect.bisect_right(keys, start)
            elif ns is not None:
                i = bisect.bisect_left(keys, (ns, ""))
            else:
                i = 0
            n = len(keys)
            items = []
            selective = flt.selective
            last = None
            while i < n:
                key = keys[i]
                if ns is not None and key[0] != ns:
                    n = i
                    break
                i += 1
                obj = objs[key]
                if not selective or flt.matches(obj):
                    items.append(strip_type(obj))
                    if limit and len(items) >= limit:
                        last = key
                        break
            meta = {"resourceVersion": str(snap)}
            if last is not None and i < n and (ns is None or keys[i][0] == ns):
                meta["continue"] = encode_continue(snap, last)
                if not selective:
                    hi = n if ns is None else bisect.bisect_left(keys, (ns + "\0", ""))
                    meta["remainingItemCount"] = hi - i
            return items, meta

    # -- writes --

    def create(self, res, ns, body, fixture=False):
        with self.lock:
            obj = self._normalize(res, body)
            meta = obj["metadata"]
            if res.namespaced:
                if meta.get("namespace") not in (None, "", ns) and not fixture:
                    raise bad_request("the namespace of the provided object does not match the namespace "
                                      "sent on the request")
                meta["namespace"] = ns if ns else meta.get("namespace") or "default"
            else:
                meta.pop("namespace", None)
            coll = self.coll(res)
            if not meta.get("name"):
                prefix = meta.get("generateName")
                if not prefix:
                    raise ApiError(422, "Invalid", "%s.%s \"\" is invalid: metadata.name: Required value: name "
                                   "or generateName is required" % (res.kind, res.group or "core"),
                                   {"kind": res.kind})
                while True:
                    name = prefix + "".join(random.choice(_NAME_CHARS) for _ in range(5))
                    if self._key(res, meta.get("namespace"), name) not in coll.objs:
                        break
                meta["name"] = name
            name = meta["name"]
            if "/" in name or name in (".", ".."):
                raise ApiError(422, "Invalid", '%s "%s" is invalid: metadata.name: Invalid value' % (res.kind, name),
                               res.details(name))
            if self._key(res, meta.get("namespace"), name) in coll.objs:
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res.qualified, name),
                               res.details(name))
            # Server-owned metadata, in the order a real server writes it.
            fresh = {"name": name}
            for k in ("generateName", "namespace"):
                if k in meta:
                    fresh[k] = meta[k]
            fresh["uid"] = meta.get("uid") if fixture and meta.get("uid") else str(uuid.uuid4())
            fresh["resourceVersion"] = ""
            fresh["creationTimestamp"] = (meta.get("creationTimestamp") if fixture and
                                          meta.get("creationTimestamp") else now_rfc3339())
            for k, v in meta.items():
                if k not in fresh and k not in ("resourceVersion", "deletionTimestamp"):
                    fresh[k] = v
            obj["metadata"] = fresh
            if res.kind == "CustomResourceDefinition" and res.group == "apiextensions.k8s.io":
                validate_crd(obj)
                if not fixture or "status" not in obj:
                    obj["status"] = crd_status(obj)
            self._server_defaults(res, obj)
            if res.kind == "Namespace" and res.group == "" and "status" not in obj:
                obj["status"] = {"phase": "Active"}
            return self._commit(res, ADDED, obj, None)

    def _replace(self, res, old, new, sub=None, check_rv=True):
        """Write new over old with the rules every update path shares; returns the
        stored object (old itself when nothing changed)."""
        meta = new["metadata"]
        name = old["metadata"]["name"]
        if meta.get("name") not in (None, "", name):
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                              % (meta.get("name"), name))
        want = meta.get("resourceVersion")
        if check_rv and want not in (None, "") and want != old["metadata"]["resourceVersion"]:
            raise res.conflict(name, "the object has been modified; please apply your changes to the latest "
                                     "version and try again")
        if sub == "status":
            # Only .status comes from the request.
            merged = {k: v for k, v in old.items() if k != "status"}
            if "status" in new:
                merged["status"] = new["status"]
            new = merged
        else:
            fixed = dict(meta)
            for k in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds"):
                if k in old["metadata"]:
                    fixed[k] = old["metadata"][k]
                else:
                    fixed.pop(k, None)
            fixed["resourceVersion"] = old["metadata"]["resourceVersion"]
            new = dict(new, metadata=fixed)
            self._server_defaults(res, new)
            if res.status and sub is None:
                # With a status subresource the main resource cannot change .status.
                new.pop("status", None)
                if "status" in old:
                    new["status"] = old["status"]
        if json_equal(new, old):
            return old   # a no-op update is not a write: same resourceVersion, no event
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            # The last finalizer is gone: one write, as on a real server. Watchers get only the
            # DELETED, with the object as it was before (its finalizers still listed) at the new
            # resourceVersion; the writer gets the updated object at that resourceVersion.
            gone = self._commit(res, DELETED, None, old)
            return _with_rv(new, gone["metadata"]["resourceVersion"])
        return self._commit(res, MODIFIED, new, old)

    def update(self, res, ns, name, body, sub=None):
        with self.lock:
            old = self._get(res, ns, name)
            new = self._normalize(res, body)
            if res.namespaced and new["metadata"].get("namespace") not in (None, "", ns):
                raise bad_request("the namespace of the provided object does not match the namespace sent on "
                                  "the request")
            return self._replace(res, old, new, sub)

    def patch(self, res, ns, name, content_type, body, sub=None):
        with self.lock:
            old = self._get(res, ns, name)
            try:
                patch = json.loads(body or b"null")
            except ValueError as err:
                raise bad_request("error decoding patch: %s" % err)
            if content_type in MERGE_TYPES:
                if not isinstance(patch, dict):
                    raise bad_request("a merge patch must be a JSON object")
                new = merge_patch(old, patch)
            elif content_type == JSON_PATCH_TYPE:
                new = json_patch(old, patch)
            else:
                raise ApiError(415, "UnsupportedMediaType", 'the body of the request was in an unknown format - '
                               'accepted media types include: application/json-patch+json, '
                               'application/merge-patch+json, application/strategic-merge-patch+json')
            if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
                raise bad_request("the patched object is not a valid object")
            new = self._normalize(res, new)
            # A patch that sets metadata.resourceVersion is a precondition on it.
            return self._replace(res, old, new, sub)

    def delete(self, res, ns, name, options=None):
        """Returns (object, deleted_now)."""
        with self.lock:
            old = self._get(res, ns, name)
            pre = (options or {}).get("preconditions") or {}
            meta = old["metadata"]
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise res.conflict(name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                   % (pre["uid"], meta.get("uid")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
                raise res.conflict(name, "Precondition failed: ResourceVersion in precondition: %s, "
                                   "ResourceVersion in object meta: %s" % (pre["resourceVersion"],
                                                                          meta.get("resourceVersion")))
            return self._delete(res, old)

    def _delete(self, res, old):
        meta = old["metadata"]
        if meta.get("finalizers"):
            # Finalizers hold the object: mark it, it goes when the last one is removed.
            if meta.get("deletionTimestamp"):
                return old, False
            marked = dict(old, metadata=dict(meta, deletionTimestamp=now_rfc3339(), deletionGracePeriodSeconds=0))
            return self._commit(res, MODIFIED, marked, old), False
        if res.kind == "Namespace" and res.group == "":
            # Simpler than a real server (which needs a controller): the namespace's
            # objects go at once, each with its DELETED event.
            nsname = meta["name"]
            for coll_res, coll in self._namespaced_colls():
                lo = bisect.bisect_left(coll.keys, (nsname, ""))
                hi = bisect.bisect_left(coll.keys, (nsname + "\0", ""))
                for key in coll.keys[lo:hi]:
                    self._commit(coll_res, DELETED, None, coll.objs[key])
        return self._commit(res, DELETED, None, old), True

    def _namespaced_colls(self):
        for skey, coll in list(self.colls.items()):
            res = self._any_resource(skey)
            if res is not None and res.namespaced:
                yield res, coll

    def _any_resource(self, skey):
        group, plural = skey
        for version in self.registry.versions(group):
            r = self.registry.lookup(group, version, plural)
            if r is not None:
                return r
        return None

    def delete_collection(self, res, flt):
        with self.lock:
            items, _ = self.list(res, flt)
            out = []
            for item in items:
                obj, _ = self._delete(res, self._get(res, item["metadata"].get("namespace"), item["metadata"]["name"]))
                out.append(strip_type(obj))
            return out

    def put_fixture(self, obj):
        """Create or replace an object given in full, outside the API rules."""
        with self.lock:
            if not isinstance(obj, dict) or not obj.get("kind") or not obj.get("apiVersion"):
                raise bad_request("a fixture object needs kind and apiVersion")
            res = self.registry.by_kind(obj["apiVersion"], obj["kind"])
            if res is None:
                raise bad_request("no resource serves %s %s" % (obj["apiVersion"], obj["kind"]))
            meta = obj.get("metadata") or {}
            ns = (meta.get("namespace") or "default") if res.namespaced else ""
            old = self.coll(res).objs.get(self._key(res, ns, meta.get("name", "")))
            if old is None:
                return self.create(res, ns, obj, fixture=True)
            new = self._normalize(res, obj)
            new["metadata"].pop("resourceVersion", None)
            new["metadata"].setdefault("uid", old["metadata"]["uid"])
            new["metadata"].setdefault("creationTimestamp", old["metadata"]["creationTimestamp"])
            new["metadata"]["namespace"] = old["metadata"].get("namespace")
            if not res.namespaced:
                new["metadata"].pop("namespace", None)
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            if json_equal(new, old):
                return old
            return self._commit(res, MODIFIED, new, old)

    def compact(self):
        """Make every resourceVersion older than the current one unavailable."""
        with self.lock:
            self.compacted = self.rv
            self._views.clear()
            for coll in self.colls.values():
                # Keep what open watches have not read yet: compaction does not break them.
                keep_from = min([w.pos for w in coll.watchers] + [coll.end()])
                drop = keep_from - coll.base
                if drop > 0:
                    coll.floor = coll.log[drop - 1].rv
                    del coll.log[:drop]
                    coll.base += drop
            return str(self.rv)

    # -- watches --

    def watch_start(self, res, flt, rv, bookmarks, info, meta=None):
        """Register a watch (@meta: see Watcher). Returns (watcher, initial objects) or, for
        a resourceVersion that is too old, (None, oldest served resourceVersion)."""
        with self.lock:
            coll = self.coll(res)
            w = Watcher(res, coll, flt, bookmarks, info, meta)
            initial = []
            if rv in (None, "", "0"):
                ns = flt.namespace if res.namespaced else None
                if ns is None:
                    keys = coll.keys
                else:
                    keys = coll.keys[bisect.bisect_left(coll.keys, (ns, "")):
                                     bisect.bisect_left(coll.keys, (ns + "\0", ""))]
                initial = [coll.objs[k] for k in keys]
                if flt.selective:
                    initial = [o for o in initial if flt.matches(o)]
                w.pos = coll.end()
                w.min_rv = self.rv
            else:
                since = parse_rv(rv)
                edge = self.boundary(coll)
                if since < edge:
                    return None, edge
                w.pos = coll.base + bisect.bisect_right(coll.log, since, key=lambda e: e.rv)
                w.min_rv = since
            coll.watchers.add(w)
            self.watchers.append(w)
            return w, initial

    def watch_next(self, w, timeout, max_events=20000):
        """Wait up to timeout seconds for something to send. Returns (events,
        bookmark resourceVersion or None, state) with state None, "close" or
        ("expired", oldest served rv) when the watch fell behind the log."""
        with self.lock:
            coll = w.coll
            waited = False
            while True:
                if self.stopping:
                    return [], None, "close"
                if w.pos < coll.base:
                    return [], None, ("expired", self.boundary(coll))
                start = w.pos - coll.base
                if start < len(coll.log):
                    events = coll.log[start:start + max_events]
                    w.pos += len(events)
                    bookmark = None
                    if w.bookmark_due and w.pos == coll.end():
                        w.bookmark_due = False
                        bookmark = str(self.rv)
                    return events, bookmark, None
                if w.bookmark_due:
                    w.bookmark_due = False
                    return [], str(self.rv), None
                if w.close_due:
                    return [], None, "close"
                if waited or timeout <= 0:
                    return [], None, None
                coll.cond.wait(timeout)
                waited = True

    def watch_stop(self, w):
        with self.lock:
            w.coll.watchers.discard(w)
            try:
                self.watchers.remove(w)
            except ValueError:
                pass

    def poke_watchers(self, pick, flag):
        """Set bookmark_due or close_due on the watchers pick() selects; returns how many."""
        with self.lock:
            n = 0
            for w in self.watchers:
                if pick(w):
                    setattr(w, flag, True)
                    w.coll.cond.notify_all()
                    n += 1
            return n

    def stop(self):
        with self.lock:
            self.stopping = True
            for coll in self.colls.values():
                coll.cond.notify_all()

