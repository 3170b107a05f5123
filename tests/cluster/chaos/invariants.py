# SPDX-License-Identifier: Apache-2.0
"""What must hold once the cluster is quiet, whatever faults came before.

Each check returns a list of differences (empty: it holds). The suite polls them until they all
hold or a deadline passes: a quiet cluster converges, a lost event never does.
"""
from .bindings import BINDINGS, item_key, item_value
from .views import HookView

CONFIG_MAP = "/api/v1/namespaces/ao/configmaps/addon-operator"


def _diff(what, expected, got):
    out = []
    for key in sorted(set(expected) | set(got)):
        where = f"{what}: {key[0]}/{key[1]}"
        if key not in got:
            out.append(f"{where} is on the server but missing")
        elif key not in expected:
            out.append(f"{where} is gone from the server but still held")
        elif expected[key] != got[key]:
            out.append(f"{where} differs: server {str(expected[key])[:160]}, held {str(got[key])[:160]}")
    return out


class Checker:
    def __init__(self, operator, workload):
        self.op = operator
        self.workload = workload
        self.hook_views = {}

    def views(self):
        """The hook views replayed from every context so far (violations are kept for the report)."""
        for b in BINDINGS:
            if b.hook not in self.hook_views:
                self.hook_views[b.hook] = HookView(b.hook, [x for x in BINDINGS if x.hook == b.hook])
        for hook, view in self.hook_views.items():
            view.feed_file(self.op.log_path(hook))
        return self.hook_views

    def replay_violations(self):
        return [v for view in self.views().values() for v in view.violations]

    def bindings(self, api, expected_cache):
        """Each binding's rebuilt view and its snapshot in the operator equal the server's selection."""
        out = []
        snapshots = self.op.debug("global", "snapshots")
        views = self.views()
        for b in BINDINGS:
            expected = expected_cache.get(b.name + b.hook)
            if expected is None:
                expected = expected_cache[b.name + b.hook] = b.expected(api)
            view = views[b.hook].views[b.name]
            if view is None:
                out.append(f"hook {b.hook}, binding {b.name}: no Synchronization yet")
            else:
                out += _diff(f"hook {b.hook}, binding {b.name}, view from its contexts", expected, view)
            items = ((snapshots.get(f"hooks/{b.hook}") or {}).get(b.name) or {}).get("snapshot")
            if items is None:
                out.append(f"hook {b.hook}, binding {b.name}: no snapshot in the operator")
                continue
            held = {item_key(b, it): item_value(b, it) for it in items}
            out += _diff(f"hook {b.hook}, binding {b.name}, snapshot", expected, held)
        return out

    def config(self, api):
        """No config patch of the hook and no edit of the user is lost; the ConfigMap and the
        operator agree."""
        cm = api.call("GET", CONFIG_MAP)
        stored = self.workload.parse_yaml((cm.get("data") or {}).get("global") or "{}")
        held = self.op.debug("global", "config") or {}
        out = []
        if stored != held:
            out.append(f"the ConfigMap's global section {str(stored)[:300]} differs from the operator's "
                       f"config {str(held)[:300]}")
        runs = stored.get("chaosRuns") or {}
        want = {f"r{i}" for i in range(1, len(runs) + 1)}
        if set(runs) != want:
            out.append(f"config patches lost: chaosRuns holds {sorted(runs)}, not r1..r{len(runs)}")
        lost = sorted(self.workload.confirmed_edits - set((stored.get("userEdits") or {})))
        if lost:
            out.append(f"user edits lost from the ConfigMap: {lost}")
        return out

    def patcher_runs(self):
        """(every run started: its number or "paused"; whether each finished run succeeded)."""
        try:
            with open(self.op.patcher_runs) as f:
                runs = f.read().split()
        except FileNotFoundError:
            runs = []
        outcomes = [("succeeded" in line) for _, line in self.op.lines_matching(
            r"hook 'hooks/patcher.sh' succeeded in|task 'GlobalHookRun:[^']*hooks/patcher.sh' failed")]
        return runs, outcomes

    def object_patches(self, api):
        """Every run the operator counted as a success did all its operations: op-N exists (unless
        run N+3 has run since: it deletes op-N), rN is in the ledger, op-(N-3) is gone."""
        ledger = api.call("GET", "/api/v1/namespaces/chaos-out/configmaps/op-ledger").get("data") or {}
        names = {o["metadata"]["name"] for o in api.list_all("/api/v1/namespaces/chaos-out/configmaps")}
        runs, succeeded = self.patcher_runs()
        outcomes = [(int(run), ok) for run, ok in zip(runs, succeeded) if run != "paused"]
        started = max((int(run) for run in runs if run != "paused"), default=0)
        out = []
        for run, ok in outcomes:
            if not ok:
                continue
            if f"r{run}" not in ledger:
                out.append(f"object patches: run {run} succeeded but r{run} is not in the ledger")
            if f"op-{run}" not in names and started < run + 3:
                out.append(f"object patches: run {run} succeeded but op-{run} does not exist")
            if run > 3 and f"op-{run - 3}" in names:
                out.append(f"object patches: run {run} succeeded but op-{run - 3}, which it deleted, exists")
        return out
