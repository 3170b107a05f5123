"""Faults injected through /fake/faults, and the log of API requests."""

import re
import threading
import time
from collections import deque

from .util import bad_request

ACTIONS = ("status", "drop", "drop_mid_event", "stall", "slow", "garbage", "truncate")

# The request log keeps this many of the most recent requests.
MAX_REQUESTS = 100_000


class Fault:
    def __init__(self, spec):
        if not isinstance(spec, dict):
            raise bad_request("a fault is a JSON object")
        self.action = spec.get("action", "status")
        if self.action not in ACTIONS:
            raise bad_request("unknown fault action %r (one of %s)" % (self.action, ", ".join(ACTIONS)))
        method = spec.get("method")
        self.method = method.upper() if method else None
        try:
            self.path = re.compile(spec.get("path") or "")
        except re.error as err:
            raise bad_request("bad path regex: %s" % err)
        try:
            self.agent = re.compile(spec.get("agent") or "")
        except re.error as err:
            raise bad_request("bad agent regex: %s" % err)
        query = spec.get("query") or {}
        if not isinstance(query, dict):
            raise bad_request("query must map parameter names to regexes")
        try:
            self.query = {k: re.compile(v) for k, v in query.items()}
        except (re.error, TypeError) as err:
            raise bad_request("bad query regex: %s" % err)
        self.watch = spec.get("watch")
        if self.watch not in (None, True, False):
            raise bad_request("watch must be true, false or null")
        self.status = int(spec.get("status", 500))
        self.retry_after = spec.get("retry_after")
        self.delay = float(spec.get("delay", 0.5))
        self.count = int(spec.get("count", 1))
        self.spec = dict(spec)

    def matches(self, method, path, watch, agent, query):
        return ((self.method is None or self.method == method)
                and (self.watch is None or self.watch == watch)
                and self.path.search(path) is not None
                and self.agent.search(agent) is not None
                and all(k in query and r.search(query[k]) is not None for k, r in self.query.items()))

    def describe(self):
        d = dict(self.spec)
        d["count"] = self.count
        return d


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def add(self, spec):
        f = Fault(spec)
        with self.lock:
            self.items.append(f)
        return f

    def clear(self):
        with self.lock:
            self.items = []

    def take(self, method, path, watch, agent="", query=None):
        """The first armed fault matching this request, consuming one of its count."""
        with self.lock:
            for f in self.items:
                if f.count != 0 and f.matches(method, path, watch, agent, query or {}):
                    if f.count > 0:
                        f.count -= 1
                        if f.count == 0:
                            self.items.remove(f)
                    return f
        return None

    def describe(self):
        with self.lock:
            return [f.describe() for f in self.items]


class RequestLog:
    def __init__(self):
        self.lock = threading.Lock()
        self.entries = deque(maxlen=MAX_REQUESTS)

    def add(self, method, path, query, watch, agent="", accept=""):
        entry = {"method": method, "path": path, "query": query, "watch": watch, "status": 0,
                 "time": time.time(), "agent": agent, "accept": accept}
        with self.lock:
            self.entries.append(entry)
        return entry

    def snapshot(self):
        with self.lock:
            return [dict(e) for e in self.entries]

    def clear(self):
        with self.lock:
            self.entries.clear()
