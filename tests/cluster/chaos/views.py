# SPDX-License-Identifier: Apache-2.0
"""A hook's view of the cluster, rebuilt from every binding context it was given, as a hook would.

Synchronization sets a binding's view; Added, Modified and Deleted change it; a Group context
carries the snapshots of its bindings and sets their views. On the way, what no correct stream of
contexts can contain is a violation: an Added for an object the view holds (Added twice without
a Deleted between), a Modified or Deleted for one it does not hold (an Added lost, or a stale
object), a Modified whose filter result did not change (change detection broken), an event of a
type the binding did not ask for.
"""
import json

from .bindings import item_key, item_value

EVENT_TYPES = ("Added", "Modified", "Deleted")


class HookView:
    def __init__(self, hook, bindings):
        self.hook = hook
        self.bindings = {b.name: b for b in bindings}
        self.groups = {}
        for b in bindings:
            if b.group:
                self.groups.setdefault(b.group, []).append(b)
        self.views = {b.name: None for b in bindings}  # None: no Synchronization yet
        self.violations = []
        self.contexts = 0
        self.offset = 0  # bytes of the log read so far

    def feed_file(self, path):
        """Read what the hook appended since the last call (one JSON array per run and line)."""
        try:
            with open(path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # a run still being written waits for the next call
        for line in data[:end].splitlines():
            if line.strip():
                for ctx in json.loads(line):
                    self.feed(ctx)
        self.offset += end

    def _violation(self, text):
        self.violations.append(f"hook {self.hook}: {text}")

    def _set_view(self, binding, items):
        view = {}
        for item in items:
            key = item_key(binding, item)
            if key in view:
                self._violation(f"binding {binding.name}: {key[0]}/{key[1]} twice in one snapshot")
            view[key] = item_value(binding, item)
        self.views[binding.name] = view

    def feed(self, ctx):
        self.contexts += 1
        kind = ctx.get("type")
        if kind == "Group":
            for b in self.groups.get(ctx.get("groupName"), []):
                self._set_view(b, (ctx.get("snapshots") or {}).get(b.name) or [])
            return
        binding = self.bindings.get(ctx.get("binding"))
        if binding is None:
            self._violation(f"a context for an unknown binding: {json.dumps(ctx)[:200]}")
            return
        if kind == "Synchronization":
            self._set_view(binding, ctx.get("objects") or [])
        elif kind == "Event":
            self._event(binding, ctx)
        else:
            self._violation(f"binding {binding.name}: a context of type {kind!r}")

    def _event(self, b, ctx):
        event = ctx.get("watchEvent")
        view = self.views[b.name]
        key = item_key(b, ctx)
        value = item_value(b, ctx)
        where = f"binding {b.name}: {event} {key[0]}/{key[1]}"
        if view is None:
            self._violation(f"{where} before its Synchronization")
            return
        if event not in EVENT_TYPES or (b.events is not None and event not in b.events):
            self._violation(f"{where}: an event the binding did not ask for")
        elif event == "Added":
            if key in view:
                self._violation(f"{where}: Added twice without a Deleted between")
            view[key] = value
        elif event == "Modified":
            if key not in view:
                self._violation(f"{where}: Modified for an object the hook was never told about")
            elif view[key] == value and not b.full_objects():
                self._violation(f"{where}: Modified with an unchanged filter result")
            view[key] = value
        else:
            if key not in view:
                self._violation(f"{where}: Deleted for an object the hook was never told about")
            view.pop(key, None)
