#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The prefix rule for private names (docs/STYLE.md): a function that is not static is public
(declared in include/ao/, named ao_...) or private to its directory; a private one must not
start with ao_ nor with the name of another directory under src/, where it would read as a
public API, and must be defined once in the whole program.

    tests/tools/private-names.py SRC_DIR [--tap]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from importlib import import_module

graph = import_module("file-graph")


def main():
    args = sys.argv[1:]
    tap = "--tap" in args
    if tap:
        args.remove("--tap")
    src = args[0]
    directories = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    include = os.path.join(os.path.dirname(os.path.abspath(src)), "include", "ao")
    public = set()
    for h in os.listdir(include):
        public |= set(re.findall(r"\b(ao_[a-z0-9_]+)\s*\(", open(os.path.join(include, h)).read()))
    problems = []
    seen = {}
    for d in directories:
        path = os.path.join(src, d)
        for f in sorted(os.listdir(path)):
            if not f.endswith(".c"):
                continue
            text = graph.strip(open(os.path.join(path, f)).read())
            for name in sorted(graph.definitions(text)):
                where = f"src/{d}/{f}"
                if name == "main" or name in public:
                    continue
                if name.startswith("ao_"):
                    problems.append(f"{where}: {name} is not in include/ao/ but reads as public")
                    continue
                if name in seen and seen[name] != where:
                    problems.append(f"{name}: defined in {seen[name]} and {where}")
                seen[name] = where
                first = name.split("_")[0]
                if first != d and first in directories:
                    problems.append(f"{where}: {name} reads as src/{first}'s API")
    for p in problems:
        print(p, file=sys.stderr)
    if tap:
        print("1..1")
        print(f"{'not ok' if problems else 'ok'} 1 - private names follow the prefix rule ({len(seen)} names)")
        return 0
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
