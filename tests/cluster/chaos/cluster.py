# SPDX-License-Identifier: Apache-2.0
"""The real control plane of the chaos suite and the faults it can suffer (tests/cluster/cluster.sh).

Two kube-apiservers share one etcd: the operator talks to the first through a proxy, the suite
writes through whichever is up, so changes keep coming while the operator's server is down.
"""
import os
import shlex
import subprocess
import time

from .api import Api
from .proxy import Proxy

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER_SH = os.path.join(HERE, "cluster.sh")

RBAC = [
    ("/apis/rbac.authorization.k8s.io/v1/clusterroles",
     {"metadata": {"name": "addon-operator"},
      "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
    ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
     {"metadata": {"name": "addon-operator"},
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "addon-operator"},
      "subjects": [{"kind": "User", "name": "system:serviceaccount:ao:addon-operator"}]}),
]


class Cluster:
    def __init__(self, workdir, log):
        self.workdir = workdir
        self.log = log  # a function taking one line
        self.env = {}
        self.proxy = None
        self.watch_cache = True

    def sh(self, command):
        t0 = time.monotonic()
        out = subprocess.run(["bash", CLUSTER_SH, command, self.workdir], capture_output=True, text=True)
        self.log(f"cluster.sh {command}: {out.returncode} in {time.monotonic() - t0:.1f} s")
        if out.returncode != 0:
            raise RuntimeError(f"cluster.sh {command} failed: {out.stderr.strip()[-800:]}")
        self._load_env()
        return out.stdout.strip()

    def _load_env(self):
        env = {}
        with open(os.path.join(self.workdir, "env")) as f:
            for line in f:
                if "=" in line and not line.startswith("#"):
                    k, v = line.rstrip("\n").split("=", 1)
                    env[k] = shlex.split(v)[0] if v else ""
        self.env = env

    def start(self):
        self.sh("start")
        self.sh("start-apiserver2")
        self.a = Api(self.env["API"], self.env["ADMIN_TOKEN"], self.env["CA"])
        self.b = Api(self.env["API2"], self.env["ADMIN_TOKEN"], self.env["CA"])
        self.proxy = Proxy(int(self.env["APISERVER_PORT"]))
        self.grant_rbac()

    def stop(self):
        if self.proxy:
            self.proxy.stop()
        subprocess.run(["bash", CLUSTER_SH, "stop", self.workdir], capture_output=True)

    def kubeconfig(self, url, token_name="OPERATOR_TOKEN", name="operator"):
        """A kubeconfig for url with the operator's token (or another of env)."""
        import base64
        with open(self.env["CA"], "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        path = os.path.join(self.workdir, f"kubeconfig-{name}")
        with open(path, "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{url}", certificate-authority-data: {ca}}}
users:
- name: u
  user: {{token: {self.env[token_name]}}}
contexts:
- name: c
  context: {{cluster: c, user: u}}
current-context: c
""")
        return path

    def any_api(self):
        """An API server that answers, the second one first (the first is the one faults hit)."""
        for api in (self.b, self.a):
            if api.healthy():
                return api
        return self.b

    # ---- faults -------------------------------------------------------------------------------------

    def grant_rbac(self):
        for path, body in RBAC:
            self.any_api().call("POST", path, body, ok=(201, 409))

    def revoke_rbac(self):
        self.any_api().call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/addon-operator",
                            ok=(200, 404))

    def cut_operator_connections(self):
        """ss -K: reset every connection the operator has to its proxy, in the middle of whatever it reads."""
        port = self.proxy.port
        subprocess.run(["ss", "-K", "dst", "127.0.0.1", "dport", "=", f":{port}"], capture_output=True)

    def set_watch_cache(self, on):
        """Restart the first API server with its watch cache on or off (an outage of a few seconds)."""
        if on == self.watch_cache:
            return
        args = os.path.join(self.workdir, "apiserver.args")
        with open(args) as f:
            lines = [line for line in f.read().splitlines() if not line.startswith("--watch-cache=")]
        if not on:
            lines.append("--watch-cache=false")
        with open(args, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.sh("restart-apiserver")
        self.watch_cache = on

    def compact(self):
        return self.sh("compact")
