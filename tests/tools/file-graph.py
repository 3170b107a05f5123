#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Which file of a directory calls which: the graph of calls between the .c files of one
src/ directory, from the functions each file defines (not static) and the names each file
uses. Prints "file -> files it calls", one line per file, and fails (exit 1) naming the files
of every circle (a set of files that call each other, directly or around a loop).

    tests/tools/file-graph.py src/operator [--order FILE] [--tap]

With --order, the files must also appear in FILE (a header whose top comment lists them, lowest
layer first) so that each calls only files listed before it: the written order is checked too.
With --tap the result is one TAP test (the graph goes to standard error).
"""
import os
import re
import sys

DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b([a-z_][a-z0-9_]*)\s*\(", re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def strip(text):
    return STRING.sub('""', COMMENT.sub(" ", text))


def definitions(text):
    names = set()
    for m in DEFINITION.finditer(text):
        line_end = text.find("\n", m.end())
        rest = text[m.end():line_end if line_end >= 0 else None]
        if rest.rstrip().endswith(";"):
            continue  # a declaration
        names.add(m.group(1))
    return names


def graph(directory):
    files = sorted(f for f in os.listdir(directory) if f.endswith(".c"))
    texts = {f: strip(open(os.path.join(directory, f)).read()) for f in files}
    owner = {}
    for f in files:
        for name in definitions(texts[f]):
            owner.setdefault(name, f)
    edges = {f: set() for f in files}
    for f in files:
        for name in set(re.findall(r"\b([a-z_][a-z0-9_]*)\b", texts[f])):
            g = owner.get(name)
            if g and g != f:
                edges[f].add(g)
    return edges


def circles(edges):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def written_order(path, files):
    text = open(path).read()
    order = []
    for m in re.finditer(r"^ \*\s+([\w-]+\.c)\b", text, re.M):
        if m.group(1) in files and m.group(1) not in order:
            order.append(m.group(1))
    return order


def main():
    args = sys.argv[1:]
    tap = "--tap" in args
    if tap:
        args.remove("--tap")
        sys.stdout = sys.stderr
    order_file = None
    if "--order" in args:
        i = args.index("--order")
        order_file = args[i + 1]
        del args[i:i + 2]
    directory = args[0]
    edges = graph(directory)
    for f in sorted(edges):
        print(f"{f} -> {' '.join(sorted(edges[f])) or '(none)'}")
    failed = False
    for c in circles(edges):
        print(f"circle: {' '.join(c)}", file=sys.stderr)
        failed = True
    if order_file:
        order = written_order(order_file, set(edges))
        missing = sorted(set(edges) - set(order))
        if missing:
            print(f"{order_file} does not list: {' '.join(missing)}", file=sys.stderr)
            failed = True
        rank = {f: i for i, f in enumerate(order)}
        for f in order:
            for g in sorted(edges[f]):
                if g in rank and rank[g] > rank[f]:
                    print(f"{f} calls {g}, listed after it in {order_file}", file=sys.stderr)
                    failed = True
    if tap:
        sys.stdout = sys.__stdout__
        print("1..1")
        print(f"{'not ok' if failed else 'ok'} 1 - {directory}: no circle of files"
              + (" and the written layer order holds" if order_file else ""))
        return 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
