#!/usr/bin/env python3
"""fakekube: a fake Kubernetes API server for the integration tests.

Usage: python3 fakekube.py --port 0 --port-file PATH [options]; see README.md.
The implementation lives in the fakekube/ package next to this file.
"""

import argparse
import json
import os
import signal
import ssl
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True   # keep __pycache__ out of the source tree

from fakekube.server import FakeKubeServer  # noqa: E402
from fakekube.store import Store  # noqa: E402

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def parse_args(argv):
    p = argparse.ArgumentParser(description="A fake Kubernetes API server for tests.")
    p.add_argument("--port", type=int, default=0, help="port to listen on (0: any free port)")
    p.add_argument("--port-file", help="write the bound port here once listening")
    p.add_argument("--address", default="127.0.0.1", help="address to listen on")
    p.add_argument("--token", help="require Authorization: Bearer TOKEN on API requests")
    p.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--tls-key", help="the certificate's private key (PEM)")
    p.add_argument("--chunk-size", type=int, default=0,
                   help="write a watch's backlog in chunks of this many bytes (0: one event per chunk)")
    p.add_argument("--bookmark-interval", type=float, default=0,
                   help="seconds between BOOKMARK events (0: only on POST /fake/bookmark)")
    p.add_argument("--state", help="JSON file with the initial objects (a list, or a List with items)")
    p.add_argument("--no-default-namespaces", action="store_true",
                   help="do not create default, kube-system, kube-public and kube-node-lease")
    p.add_argument("--no-partial-metadata", action="store_true",
                   help="answer as a server before 1.15: Accept's as=PartialObjectMetadata[List] is not known, "
                   "so the next media type (application/json) gets full objects")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = p.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    return args


def load_state(store, args):
    if not args.no_default_namespaces:
        for name in DEFAULT_NAMESPACES:
            store.put_fixture({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    if args.state:
        with open(args.state) as f:
            data = json.load(f)
        if isinstance(data, dict):
            data = data.get("items", [])
        for obj in data:
            store.put_fixture(obj)


def write_port_file(path, port):
    # Readers poll for the file: write it whole under another name, then rename.
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    store = Store()
    load_state(store, args)
    tls = None
    if args.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
        tls.set_alpn_protocols(["http/1.1"])
    server = FakeKubeServer((args.address, args.port), token=args.token, tls_context=tls,
                            chunk_size=args.chunk_size, bookmark_interval=args.bookmark_interval,
                            verbose=args.verbose, store=store, partial_metadata=not args.no_partial_metadata)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    if args.port_file:
        write_port_file(args.port_file, server.server_address[1])
    sys.stderr.write("fakekube: listening on %s:%d\n" % server.server_address[:2])
    while not stop.wait(0.2):
        pass
    server.stop()          # wakes the watch streams so they end
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
