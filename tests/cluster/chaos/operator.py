# SPDX-License-Identifier: Apache-2.0
"""One addon-operator process under test: its hooks, its output with arrival times, its debug API."""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request

from .bindings import hooks

RECORDER = """#!/bin/bash
if [ "$1" = --config ]; then cat '{config}'; exit 0; fi
cat "$BINDING_CONTEXT_PATH" >>'{log}'
"""

# Every two seconds (unless paused): add the next key of /global/chaosRuns to the config values, numbered from the
# config values the run was given. A patch lost after it was applied in memory shows as a gap or
# as a ConfigMap that differs from the operator's config.
CONFIG_WRITER = """#!/bin/bash
if [ "$1" = --config ]; then echo '{{"configVersion":"v1","schedule":[{{"name":"every-2s","crontab":"*/2 * * * * *"}}]}}'; exit 0; fi
[ -e '{pause}' ] && exit 0
n=$(jq '.global.chaosRuns // {{}} | length' "$CONFIG_VALUES_PATH") || exit 1
if [ "$n" = 0 ]; then
        echo '[{{"op":"add","path":"/global/chaosRuns","value":{{"r1":1}}}}]' >"$CONFIG_VALUES_JSON_PATCH_PATH"
else
        echo "[{{\\"op\\":\\"add\\",\\"path\\":\\"/global/chaosRuns/r$((n + 1))\\",\\"value\\":$((n + 1))}}]" >"$CONFIG_VALUES_JSON_PATCH_PATH"
fi
"""

# Every two seconds (unless paused), run N: create op-N, note rN in the ledger, delete op-(N-3) (a foreground
# delete: the garbage collector finishes it). Each run notes its number (or "paused") in a file:
# runs are one after another in the main queue, so the n-th line is the run of the operator's n-th
# outcome for this hook, and a run the operator counted as a success must have done all three.
PATCHER = """#!/bin/bash
if [ "$1" = --config ]; then echo '{{"configVersion":"v1","schedule":[{{"name":"every-2s","crontab":"*/2 * * * * *"}}]}}'; exit 0; fi
if [ -e '{pause}' ]; then echo paused >>'{runs}'; exit 0; fi
n=$(( $(cat '{counter}' 2>/dev/null || echo 0) + 1 ))
echo "$n" >'{counter}'
echo "$n" >>'{runs}'
{{
echo '{{"operation":"CreateOrUpdate","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"op-'$n'","namespace":"chaos-out"}},"data":{{"run":"'$n'"}}}}}}'
echo '{{"operation":"MergePatch","apiVersion":"v1","kind":"ConfigMap","namespace":"chaos-out","name":"op-ledger","mergePatch":{{"data":{{"r'$n'":"'$n'"}}}}}}'
if [ "$n" -gt 3 ]; then
        echo '{{"operation":"Delete","apiVersion":"v1","kind":"ConfigMap","namespace":"chaos-out","name":"op-'$((n - 3))'"}}'
fi
}} >"$KUBERNETES_PATCH_PATH"
"""


class Operator:
    def __init__(self, binary, workdir, kubeconfig, namespace="ao", env=None, hooks_kind="bindings"):
        self.binary, self.workdir, self.kubeconfig, self.namespace = binary, workdir, kubeconfig, namespace
        self.extra_env = env or {}
        self.hooks_kind = hooks_kind
        self.proc = None
        self.lines = []  # (monotonic time, line)
        self.lock = threading.Lock()
        self.socket = os.path.join(workdir, "debug.socket")
        self.logs = os.path.join(workdir, "logs")
        self.port = None
        # While this file exists the two writing hooks write nothing: the checks compare a ConfigMap
        # and objects that are not changing under them.
        self.writers_paused = os.path.join(workdir, "writers.paused")
        self.patcher_runs = os.path.join(workdir, "patcher.runs")  # each run's number, or "paused"

    def pause_writers(self, paused):
        if paused:
            open(self.writers_paused, "w").close()
        elif os.path.exists(self.writers_paused):
            os.unlink(self.writers_paused)

    def log_path(self, hook):
        return os.path.join(self.logs, hook + ".log")

    def write_hooks(self):
        hooks_dir = os.path.join(self.workdir, "global", "hooks")
        shutil.rmtree(os.path.join(self.workdir, "global"), ignore_errors=True)
        os.makedirs(hooks_dir)
        os.makedirs(os.path.join(self.workdir, "modules"), exist_ok=True)
        os.makedirs(self.logs, exist_ok=True)
        scripts = {}
        if self.hooks_kind == "bindings":
            for hook, bindings in hooks().items():
                config = os.path.join(self.workdir, hook + ".config.json")
                with open(config, "w") as f:
                    json.dump({"configVersion": "v1", "kubernetes": [b.config() for b in bindings]}, f)
                scripts[hook] = RECORDER.format(config=config, log=self.log_path(hook))
            scripts["config-writer.sh"] = CONFIG_WRITER.format(pause=self.writers_paused)
            scripts["patcher.sh"] = PATCHER.format(counter=os.path.join(self.workdir, "patcher.counter"),
                                                   runs=self.patcher_runs, pause=self.writers_paused)
        else:  # a replica of the leader election check: one hook that shows it runs
            config = os.path.join(self.workdir, "startup.config.json")
            with open(config, "w") as f:
                json.dump({"configVersion": "v1", "onStartup": 1}, f)
            scripts["startup.sh"] = RECORDER.format(config=config, log=self.log_path("startup.sh"))
        for name, text in scripts.items():
            path = os.path.join(hooks_dir, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)

    def start(self):
        env = {
            "PATH": os.environ["PATH"],
            "KUBE_CONFIG": self.kubeconfig,
            "ADDON_OPERATOR_NAMESPACE": self.namespace,
            "GLOBAL_HOOKS_DIR": os.path.join(self.workdir, "global"),
            "MODULES_DIR": os.path.join(self.workdir, "modules"),
            "ADDON_OPERATOR_TMP_DIR": os.path.join(self.workdir, "tmp"),
            "ADDON_OPERATOR_STATE_DIR": os.path.join(self.workdir, "state"),
            "DEBUG_UNIX_SOCKET": self.socket,
            "ADDON_OPERATOR_LISTEN_PORT": "0",
            # Back-off at a twentieth: a fault heals in seconds, not minutes; the formula is the same.
            "ADDON_OPERATOR_RETRY_DELAY_SCALE": "0.05",
        }
        env.update(self.extra_env)
        with self.lock:
            self.lines = []
        self.port = None
        self.proc = subprocess.Popen([self.binary, "start"], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.output = open(os.path.join(self.workdir, "operator.log"), "ab")
        threading.Thread(target=self._read_output, args=(self.proc,), daemon=True).start()

    def _read_output(self, proc):
        for raw in proc.stdout:
            now = time.monotonic()
            self.output.write(raw)
            self.output.flush()
            line = raw.decode(errors="replace").rstrip("\n")
            with self.lock:
                self.lines.append((now, line))
            m = re.search(r"http: listening on [0-9.]*:([0-9]+)", line)
            if m:
                self.port = int(m.group(1))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if not self.running():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def find(self, pattern, since=0.0):
        """(time, line) of the first output line matching pattern that arrived at or after since."""
        rx = re.compile(pattern)
        with self.lock:
            for t, line in self.lines:
                if t >= since and rx.search(line):
                    return t, line
        return None

    def lines_matching(self, pattern):
        rx = re.compile(pattern)
        with self.lock:
            return [(t, line) for t, line in self.lines if rx.search(line)]

    def count(self, pattern):
        rx = re.compile(pattern)
        with self.lock:
            return sum(1 for _, line in self.lines if rx.search(line))

    def debug(self, *words):
        out = subprocess.run([self.binary, *words, "-o", "json", "--debug-unix-socket", self.socket],
                             capture_output=True, text=True, timeout=20)
        if out.returncode != 0:
            raise OSError(f"addon-operator {' '.join(words)}: {out.stderr.strip()[:300]}")
        return json.loads(out.stdout)

    def metrics(self):
        """{(name, frozenset(labels)): value} of /metrics."""
        if not self.port:
            raise OSError("the operator has not said where it listens yet")
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10).read().decode()
        out = {}
        for line in text.splitlines():
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([^ ]+)$', line)
            if not m:
                continue
            labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            out[(m.group(1), labels)] = float(m.group(4))
        return out

    def metric_sum(self, name, **labels):
        want = set(labels.items())
        return sum(v for (n, ls), v in self.metrics().items() if n == name and want <= set(ls))
