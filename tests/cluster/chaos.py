#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The chaos suite: the operator against a real kube-apiserver + etcd under scripted and seeded
random faults, with the invariants checked once the cluster is quiet (tests/cluster/README.md).

  chaos.py [--schedules all|NAME,...] [--seed N]... [--steps K] [--soak MINUTES] [--workdir DIR]

TAP on stdout. --schedules runs the scripted fault schedules (each fault once, then the leader
check); each --seed runs K random steps drawn from that seed; --soak runs seed after seed until
the time is up and prints a summary. A failure prints the seed and step: --seed replays it.
"""
import argparse
import os
import random
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from chaos import faults, leader  # noqa: E402
from chaos.cluster import Cluster  # noqa: E402
from chaos.invariants import Checker  # noqa: E402
from chaos.operator import Operator  # noqa: E402
from chaos.workload import Workload  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETTLE_TIMEOUT = 120


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def result(self, passed, text, details=()):
        self.n += 1
        if not passed:
            self.failed += 1
        print(f"{'ok' if passed else 'not ok'} {self.n} - {text}", flush=True)
        for line in details:
            print(f"# {line}", flush=True)

    def note(self, text):
        print(f"# {text}", flush=True)


class Run:
    """Everything one run shares: the cluster, the operator, the workload, the checks."""

    def __init__(self, args, tap):
        self.args, self.tap = args, tap
        self.binary = args.binary
        self.helm = os.path.join(ROOT, "tests", "fakehelm", "fake-helm")
        self.workdir = args.workdir or tempfile.mkdtemp(prefix="ao-chaos.")
        self.trace = open(os.path.join(self.workdir, "chaos.log"), "a")
        self.cluster = Cluster(os.path.join(self.workdir, "cluster"), self.log)
        self.workload = Workload(random.Random(0), [self.binary, "tool", "yaml2json", "-"])
        self.operator = None
        self.checker = None
        self.notes = []
        self.faults = 0
        self.fault_counts = {}
        self.settle_seconds = []
        self.last_what = ""

    def log(self, line):
        self.trace.write(f"{time.strftime('%H:%M:%S')} {line}\n")
        self.trace.flush()

    def start(self):
        self.cluster.start()
        self.workload.setup(self.cluster.any_api())
        proxied = f"https://127.0.0.1:{self.cluster.proxy.port}"
        workdir = os.path.join(self.workdir, "operator")
        os.makedirs(workdir, exist_ok=True)
        self.operator = Operator(self.binary, workdir, self.cluster.kubeconfig(proxied),
                                 env={"HELM_BIN_PATH": self.helm, "FAKE_HELM_DIR": os.path.join(workdir, "helm")})
        self.operator.write_hooks()
        self.operator.start()
        self.checker = Checker(self.operator, self.workload)

    def stop(self):
        if self.operator:
            self.operator.stop()
        self.cluster.stop()

    def settle(self):
        """Wait until every invariant holds; (passed, seconds, differences). The writing hooks pause
        meanwhile: a run that began before still finishes, and the checks wait for it."""
        self.operator.pause_writers(True)
        try:
            return self._settle()
        finally:
            self.operator.pause_writers(False)

    def _settle(self):
        t0 = time.monotonic()
        diffs = []
        while time.monotonic() - t0 < SETTLE_TIMEOUT:
            if not self.operator.running():
                return False, time.monotonic() - t0, [f"the operator exited with {self.operator.proc.returncode}"]
            violations = self.checker.replay_violations()
            if violations:
                return False, time.monotonic() - t0, violations
            try:
                api = self.cluster.any_api()
                diffs = self.checker.bindings(api, {}) + self.checker.config(api) + self.checker.object_patches(api)
            except Exception as e:  # the operator's debug socket or a server not back yet
                diffs = [f"cannot check yet: {e}"]
            if not diffs:
                return True, time.monotonic() - t0, []
            time.sleep(0.5)  # the next poll of a cluster that is still settling
        return False, time.monotonic() - t0, diffs

    def step(self, name, rng, label):
        fn = faults.FAULTS[name][0]
        self.log(f"{label}: {name}")
        try:
            what = fn(self, rng)
        except Exception:
            self.last_what = f"{name}: the fault itself failed"
            return False, [f"{label}: the fault {name} itself failed:"] + traceback.format_exc().splitlines()
        self.faults += 1
        self.fault_counts[name] = self.fault_counts.get(name, 0) + 1
        passed, seconds, diffs = self.settle()
        self.settle_seconds.append(seconds)
        self.log(f"{label}: {what}; settled: {passed} in {seconds:.1f} s")
        self.last_what = what
        return passed, [f"{label}: {what}; {'settled' if passed else 'NOT settled'} in {seconds:.1f} s"] + diffs[:25]


def run_schedules(run, names):
    tap = run.tap
    rng = random.Random(1)
    for name in names:
        if name == "leader":
            passed, lines = leader.run(run)
            tap.result(passed, "leader election: the Lease holder loses its API server", lines)
            continue
        run.workload.rng = rng
        passed, lines = run.step(name, rng, f"schedule {name}")
        tap.result(passed, f"schedule {name}: {run.last_what}", [] if passed else lines)
        if name == "continue-token-expired":
            expired = dict(run.notes).get("continue-410", 0)
            tap.result(expired > 0, "a re-list's continue token expired (410) at least once and it recovered",
                       [f"{expired} list(s) expired"] if expired else
                       ["no list expired: the slowed list was not caught between pages"])


def run_seed(run, seed, steps):
    rng = random.Random(seed)
    run.workload.rng = rng
    for i in range(steps):
        name = faults.pick(rng)
        passed, lines = run.step(name, rng, f"seed {seed} step {i + 1}/{steps}")
        if not passed:
            run.tap.result(False, f"seed {seed}: step {i + 1} ({name}) broke an invariant "
                                  f"(replay: chaos.py --seed {seed} --steps {steps})", lines)
            return False
    run.tap.result(True, f"seed {seed}: {steps} random faults, every invariant held after each")
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--schedules", default="", help="all, or fault names separated by commas (and 'leader')")
    p.add_argument("--seed", type=int, action="append", default=[], help="a seed for the random mode")
    p.add_argument("--steps", type=int, default=6, help="random faults per seed")
    p.add_argument("--soak", type=float, default=0, help="minutes of random faults, seed after seed")
    p.add_argument("--workdir", help="keep everything here (default: a temporary directory, removed)")
    p.add_argument("--binary", default=os.environ.get("AO_BINARY", os.path.join(ROOT, "build", "addon-operator")))
    args = p.parse_args()
    if os.environ.get("AO_SKIP_REAL_CLUSTER"):
        print("1..0 # SKIP AO_SKIP_REAL_CLUSTER is set")
        return 0
    names = []
    if args.schedules:
        names = list(faults.FAULTS) + ["leader"] if args.schedules == "all" else args.schedules.split(",")
        unknown = [n for n in names if n not in faults.FAULTS and n != "leader"]
        if unknown:
            p.error(f"unknown schedules: {unknown}; known: {sorted(faults.FAULTS) + ['leader']}")
    tap = Tap()
    run = Run(args, tap)
    t_start = time.monotonic()
    try:
        run.start()
        passed, seconds, diffs = run.settle()
        tap.result(passed, f"the operator synchronizes every binding with the real API server in {seconds:.1f} s",
                   diffs[:25])
        if passed:
            run_schedules(run, names)
            for seed in args.seed:
                run_seed(run, seed, args.steps)
            if args.soak:
                seeds = []
                base = int(time.time())
                while time.monotonic() - t_start < args.soak * 60:
                    seeds.append(base + len(seeds))
                    if not run_seed(run, seeds[-1], args.steps):
                        break
                settle = sorted(run.settle_seconds) or [0]
                tap.note(f"soak seeds: {seeds[0]}..{seeds[-1]} ({len(seeds)}, {args.steps} faults each)")
                tap.note("soak faults: " + ", ".join(f"{k} {v}" for k, v in sorted(run.fault_counts.items())))
                tap.note(f"soak settle time after a fault: median {settle[len(settle) // 2]:.1f} s, "
                         f"max {settle[-1]:.1f} s")
                tap.note(f"soak: {len(seeds)} seeds, {run.faults} faults, {run.workload.changes} changes "
                         f"({run.workload.failed} refused while a server was down), "
                         f"{len(run.workload.confirmed_edits)} user config edits, "
                         f"{tap.failed} violations, {(time.monotonic() - t_start) / 60:.1f} minutes")
    except Exception:
        tap.result(False, "the chaos run itself failed", traceback.format_exc().splitlines())
    finally:
        tap.note(f"{run.faults} faults, {run.workload.changes} changes, workdir {run.workdir}")
        run.stop()
        if not args.workdir and tap.failed == 0:
            shutil.rmtree(run.workdir, ignore_errors=True)
    print(f"1..{tap.n}")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
