# SPDX-License-Identifier: Apache-2.0
"""Leader election when the Lease holder loses its API server.

Two replicas with ADDON_OPERATOR_HA=true, each talking to its own API server of the same
cluster. The holder's server is stopped: the holder must stop leading once it cannot renew for
the renew deadline, and the other must take over, never before the holder stopped (at most one
leader at any moment) and within the lease duration after it did. The stopped replica, started
again as Kubernetes would, waits as a follower.
"""
import os
import time

from .operator import Operator

SCALE = 0.1  # ADDON_OPERATOR_RETRY_DELAY_SCALE: 3.5 s lease, 3 s renew deadline, 1 s retry period
LEASE = 35 * SCALE
HOLDS = r"leader election: .* holds Lease"
LOST = r"not the leader any more"
WAITS = r"leader election: .* waits for Lease"
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/chaos-ha/leases/addon-operator-leader-election"


def _replica(ctx, name, url):
    workdir = os.path.join(ctx.workdir, name)
    os.makedirs(workdir, exist_ok=True)
    op = Operator(ctx.binary, workdir, ctx.cluster.kubeconfig(url, name=name), namespace="chaos-ha",
                  env={"ADDON_OPERATOR_HA": "true", "ADDON_OPERATOR_POD": name,
                       "ADDON_OPERATOR_RETRY_DELAY_SCALE": str(SCALE), "HELM_BIN_PATH": ctx.helm,
                       "FAKE_HELM_DIR": os.path.join(workdir, "helm")},
                  hooks_kind="leader")
    op.write_hooks()
    op.start()
    return op


def _wait(predicate, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)  # polling the replicas' output, which arrives on its own
    return None


def run(ctx):
    """Returns (passed, lines to report)."""
    c = ctx.cluster
    servers = {"ha-1": (c.env["API"], "stop-apiserver", "start-apiserver"),
               "ha-2": (c.env["API2"], "stop-apiserver2", "start-apiserver2")}
    replicas = {name: _replica(ctx, name, url) for name, (url, _, _) in servers.items()}
    report, passed = [], True
    try:
        first = _wait(lambda: next((n for n, op in replicas.items() if op.find(HOLDS)), None), 30)
        if not first:
            return False, ["no replica took the Lease within 30 s"]
        other = "ha-2" if first == "ha-1" else "ha-1"
        _wait(lambda: replicas[other].find(WAITS), 10)
        # Two renewals on the server: the holder renews, and the follower has seen it hold.
        api = c.b if first == "ha-1" else c.a
        seen = [api.call("GET", LEASE_PATH)["metadata"]["resourceVersion"]]
        _wait(lambda: seen.append(api.call("GET", LEASE_PATH)["metadata"]["resourceVersion"]) or
              len(set(seen)) >= 3, 10)
        t_fault = time.monotonic()
        c.sh(servers[first][1])
        lost = _wait(lambda: replicas[first].find(LOST, t_fault), 4 * LEASE)
        taken = _wait(lambda: replicas[other].find(HOLDS, t_fault), 6 * LEASE)
        code = replicas[first].wait_exit(15)
        if not lost or not taken:
            passed = False
            report.append(f"{first} lost its API server: stopped leading: {bool(lost)}, {other} took over: "
                          f"{bool(taken)}")
        else:
            t_lost, t_taken = lost[0], taken[0]
            report.append(f"{first} stopped leading {t_lost - t_fault:.2f} s after its API server went, "
                          f"{other} took over {t_taken - t_lost:.2f} s after that (lease {LEASE:.1f} s)")
            if t_taken <= t_lost:
                passed = False
                report.append("two leaders at once: the new one took over before the old one stopped")
            if t_taken - t_lost > LEASE:
                passed = False
                report.append("the takeover took longer than the lease duration")
        if code != 0:
            passed = False
            report.append(f"{first} exited with {code}, not 0, after losing the Lease")
        holder = (c.any_api().call("GET", LEASE_PATH).get("spec") or {}).get("holderIdentity", "")
        if not holder.startswith(other + "."):
            passed = False
            report.append(f"the Lease names {holder!r}, not {other}")
        c.sh(servers[first][2])
        t_back = time.monotonic()
        replicas[first].start()
        if not _wait(lambda: replicas[first].find(WAITS, t_back), 30):
            passed = False
            report.append(f"{first}, started again, does not wait as a follower")
        if replicas[first].find(HOLDS, t_back):
            passed = False
            report.append(f"{first}, started again, took the Lease from the running leader")
    finally:
        for op in replicas.values():
            op.stop()
    return passed, report
