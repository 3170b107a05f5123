# SPDX-License-Identifier: Apache-2.0
"""What the benchmarks on tests/cluster's control plane share: its env file and an HTTPS client
with the admin token (releases-api.py, first-sync-api.py)."""

import http.client
import shlex
import ssl
import urllib.parse


def load_env(path):
    """The KEY=VALUE lines of cluster.sh's env file (values shell-quoted)."""
    env = {}
    with open(path) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                key, value = line.rstrip("\n").split("=", 1)
                env[key] = " ".join(shlex.split(value)) if value else ""
    return env


class ClusterApi:
    """The API server of an env file, as its admin."""

    def __init__(self, env):
        url = urllib.parse.urlsplit(env["API"])
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=env["CA"])
        self.headers = {"Authorization": "Bearer " + env["ADMIN_TOKEN"], "Accept": "application/json"}

    def connect(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
