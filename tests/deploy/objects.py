#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""objects.py [--strip-helm] FILE...: print the Kubernetes objects of multi-document YAML files
(plain manifests, or `helm template` output) as one canonical JSON line each, sorted by kind,
namespace and name, so two sets can be compared with diff and queried with jq.

Each document is parsed by the operator's own YAML loader (`$AO_BINARY tool yaml2json -`, one
document at a time: it refuses streams), so no YAML module for Python is needed. --strip-helm
drops what only helm adds (its two labels and the resource-policy annotation), which is all that
may differ between deploy/manifests/ and the chart's output."""
import json
import os
import re
import subprocess
import sys

HELM_LABELS = ("app.kubernetes.io/managed-by", "helm.sh/chart")
HELM_ANNOTATIONS = ("helm.sh/resource-policy",)


def documents(text):
    # A document separator is a line that starts with '---'; comment-only pieces are not objects.
    for doc in re.split(r"^---[^\n]*$", text, flags=re.M):
        if any(line.strip() and not line.lstrip().startswith("#") for line in doc.splitlines()):
            yield doc


def load(doc, where):
    r = subprocess.run([os.environ["AO_BINARY"], "tool", "yaml2json", "-"], input=doc.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit(f"objects.py: {where}: {r.stderr.decode().strip()}")
    return json.loads(r.stdout)


def strip_helm(obj):
    meta = obj.get("metadata", {})
    for key, names in (("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)):
        found = meta.get(key)
        if isinstance(found, dict):
            for n in names:
                found.pop(n, None)
            if not found:
                del meta[key]


def main(argv):
    strip = "--strip-helm" in argv
    objects = []
    for path in (a for a in argv if a != "--strip-helm"):
        with open(path, encoding="utf-8") as f:
            for i, doc in enumerate(documents(f.read())):
                obj = load(doc, f"{path}: document {i + 1}")
                if obj is None:
                    continue
                if strip:
                    strip_helm(obj)
                objects.append(obj)

    def key(o):
        m = o.get("metadata", {})
        return (o.get("kind", ""), m.get("namespace", ""), m.get("name", ""))

    for o in sorted(objects, key=key):
        print(json.dumps(o, sort_keys=True, separators=(",", ":")))


if __name__ == "__main__":
    main(sys.argv[1:])
