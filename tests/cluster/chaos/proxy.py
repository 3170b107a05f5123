# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy between the operator and its API server, for faults the servers cannot make alone.

TLS passes through untouched (the serving certificate names 127.0.0.1, whatever the port), so the
operator sees the real server; the proxy only decides when bytes move:
  - pass:  bytes flow both ways;
  - stall: nothing moves and nothing is closed: open streams go silent, new connections hang
           (an API server or a network path that stalls without closing);
  - slow:  the server's bytes reach the operator at a fixed rate (a list then takes long enough
           for its continue token to be compacted away while it pages).
"""
import selectors
import socket
import threading
import time

TICK = 0.02


class _Pair:
    def __init__(self, client, upstream):
        self.client, self.upstream = client, upstream
        self.to_upstream = bytearray()
        self.to_client = bytearray()
        self.closed = False


class Proxy:
    def __init__(self, target_port, listen_port=0):
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", listen_port))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.mode = "pass"
        self.rate = 0  # bytes per second in slow mode
        self.pairs = []
        self.pending = []  # accepted while stalled: connected upstream when the stall ends
        self.lock = threading.Lock()
        self.stopping = False
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self._run, name="chaos-proxy", daemon=True)
        self.thread.start()

    def set_mode(self, mode, rate=0):
        with self.lock:
            self.mode, self.rate = mode, rate

    def stop(self):
        self.stopping = True
        self.thread.join(timeout=5)
        for p in self.pairs:
            self._close(p)
        for c in self.pending:
            c.close()
        self.listener.close()

    def connections(self):
        return len(self.pairs)

    # ---- the loop ---------------------------------------------------------------------------------

    def _connect(self, client):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
        except OSError:
            client.close()  # the server is down: the operator sees a refused-like close
            return
        for s in (client, upstream):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(client, upstream)
        self.pairs.append(pair)
        self.sel.register(client, selectors.EVENT_READ, pair)
        self.sel.register(upstream, selectors.EVENT_READ, pair)

    def _close(self, p):
        if not p.closed:
            p.closed = True
            for s in (p.client, p.upstream):
                try:
                    self.sel.unregister(s)
                except (KeyError, ValueError):
                    pass
                try:
                    s.close()
                except OSError:
                    pass

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except BlockingIOError:
                return
            if self.mode == "stall":
                self.pending.append(client)
            else:
                self._connect(client)

    @staticmethod
    def _read(sock, limit):
        try:
            data = sock.recv(limit)
        except BlockingIOError:
            return b""
        except OSError:
            return None
        return data if data else None

    @staticmethod
    def _write(sock, buf):
        if not buf:
            return True
        try:
            n = sock.send(buf)
        except BlockingIOError:
            return True
        except OSError:
            return False
        del buf[:n]
        return True

    def _pump(self, p, budget):
        """Move what may move for one pair; returns the bytes sent to the client."""
        sent = 0
        if len(p.to_upstream) < 1 << 20:
            data = self._read(p.client, 65536)
            if data is None:
                return -1
            p.to_upstream += data
        room = min(65536, budget) if budget is not None else 65536
        if room > 0 and len(p.to_client) < 1 << 20:
            data = self._read(p.upstream, room)
            if data is None and not p.to_client:
                return -1
            if data:
                p.to_client += data
                sent = len(data)
        if not self._write(p.upstream, p.to_upstream) or not self._write(p.client, p.to_client):
            return -1
        return sent

    def _run(self):
        while not self.stopping:
            with self.lock:
                mode, rate = self.mode, self.rate
            if mode == "pass":
                self.sel.select(timeout=TICK)  # wakes on any byte from either side
            else:
                time.sleep(TICK)  # readable sockets must not spin the loop while nothing may move
            self._accept()
            if mode == "stall":
                continue
            for client in self.pending:
                self._connect(client)
            self.pending = []
            budget = int(rate * TICK) if mode == "slow" else None
            for p in list(self.pairs):
                share = None if budget is None else max(1, budget // max(1, len(self.pairs)))
                if self._pump(p, share) < 0:
                    self._close(p)
                    self.pairs.remove(p)
