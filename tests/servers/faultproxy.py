"""An HTTP proxy on loopback between delta-occ and an object-store server: it counts requests and
injects the faults a real network has, without any switch in the library itself.

Faults are rules on PUTs whose path matches a pattern:

* ``lose_ack``: the PUT is forwarded and lands, then the client gets a 500 (object_store retries;
  the retry finds the object there) or, with ``drop=True``, a closed connection and no answer;
* ``ignore_conditions``: a conditional PUT the server refused (412) is answered 200, as a store
  that does not honour ``If-None-Match`` would (nothing is overwritten upstream: the client just
  believes it won);
* ``fail_reads``: GET/HEAD of matching paths (query included) answer 503 for a while;
* ``refuse_deletes``: DELETE answers 403; a multi-object delete (``POST ?delete``) answers 200 with
  AccessDenied for each key.

``delay`` (seconds) holds every request that long before forwarding it: a cloud round trip.
``after`` and ``landed`` run a test's function at one request: once it is answered, or once it
has reached the server and before its answer goes back (to kill the client in between).

SigV4 signatures stay valid: the request goes upstream byte for byte, ``Host`` header included.
"""

from __future__ import annotations

import collections
import http.client
import random
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Pattern, Tuple
from urllib.parse import urlsplit

_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class Rule:
    def __init__(self, kind: str, pattern: str, probability: float = 1.0, drop: bool = False, count: Optional[int] = None) -> None:
        self.kind = kind
        self.pattern: Pattern[str] = re.compile(pattern)
        self.probability = probability
        self.drop = drop
        self.left = count  # None: no limit

    def take(self, rng: random.Random) -> bool:
        if self.left is not None and self.left <= 0:
            return False
        if rng.random() >= self.probability:
            return False
        if self.left is not None:
            self.left -= 1
        return True


class FaultProxy:
    """``with FaultProxy("http://127.0.0.1:PORT") as p: ... p.endpoint ...``"""

    _used_ports: "set[int]" = set()

    def __init__(self, upstream: str, seed: int = 0) -> None:
        u = urlsplit(upstream)
        self.upstream_host, self.upstream_port = u.hostname or "127.0.0.1", u.port or 80
        self.rules: List[Rule] = []
        self.counts: collections.Counter = collections.Counter()
        self.log: List[Tuple[str, str, int]] = []
        # (method, path, Range header or None) of each request, in the order of ``log``: which
        # bytes of an object each GET asked for.
        self.ranges: List[Tuple[str, str, Optional[str]]] = []
        self.injected: collections.Counter = collections.Counter()
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self.endpoint = ""
        # Seconds added before each request is forwarded: a cloud region's round trip.
        self.delay = 0.0
        # Requests being answered now, and the most at any one time since the last reset: whether
        # a client sends requests concurrently (with a ``delay``, one after another never overlap).
        self.in_flight = 0
        self.max_in_flight = 0
        # Times the proxy went from idle to busy: requests sent one after another (with a
        # ``delay``) each start a period of their own, a concurrent batch shares one; so about
        # the number of round trips a client waited for in sequence.
        self.busy_periods = 0
        self._after: List[Tuple[str, Pattern[str], Callable[[], None]]] = []
        self._landed: List[Tuple[str, Pattern[str], Callable[[], None]]] = []

    # -- rules ---------------------------------------------------------------------------------

    def lose_ack(self, pattern: str, probability: float = 1.0, drop: bool = False, count: Optional[int] = None) -> None:
        self.rules.append(Rule("lose_ack", pattern, probability, drop, count))

    def ignore_conditions(self, pattern: str = ".*") -> None:
        self.rules.append(Rule("ignore_conditions", pattern))

    def fail_reads(self, pattern: str, count: int) -> None:
        self.rules.append(Rule("fail_reads", pattern, 1.0, False, count))

    def refuse_deletes(self, pattern: str = ".*") -> None:
        """DELETEs of matching paths get 403 AccessDenied (a credential that may write, not delete)."""
        self.rules.append(Rule("refuse_deletes", pattern))

    def after(self, method: str, pattern: str, fn: Callable[[], None]) -> None:
        """Run ``fn`` once, right after answering the first ``method`` request whose path (query
        included) matches ``pattern``: e.g. other writers committing between a loser's listing
        and its next put."""
        with self._lock:
            self._after.append((method, re.compile(pattern), fn))

    def landed(self, method: str, pattern: str, fn: Callable[[], None]) -> None:
        """Run ``fn`` once, when the first ``method`` request whose path matches ``pattern`` has
        reached the server and before its answer goes back: e.g. SIGKILL the client between a
        PUT that landed and its next request, or hold the answer while the test looks at the
        store. The answer then goes back (nowhere, to a killed client)."""
        with self._lock:
            self._landed.append((method, re.compile(pattern), fn))

    def _take(self, hooks: List[Tuple[str, Pattern[str], Callable[[], None]]], method: str, path: str) -> Optional[Callable[[], None]]:
        with self._lock:
            for i, (m, pattern, fn) in enumerate(hooks):
                if m == method and pattern.search(path):
                    del hooks[i]
                    return fn
        return None

    def clear(self) -> None:
        with self._lock:
            self.rules = []

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.log.clear()
            self.ranges.clear()
            self.max_in_flight = self.in_flight
            self.busy_periods = 0

    def _rule(self, kind: str, method: str, path: str) -> Optional[Rule]:
        with self._lock:
            for r in self.rules:
                if r.kind == kind and r.pattern.search(path) and r.take(self._rng):
                    self.injected[kind] += 1
                    return r
        return None

    # -- server --------------------------------------------------------------------------------

    def start(self) -> "FaultProxy":
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _forward(self) -> None:
                with proxy._lock:
                    proxy.busy_periods += proxy.in_flight == 0
                    proxy.in_flight += 1
                    proxy.max_in_flight = max(proxy.max_in_flight, proxy.in_flight)
                try:
                    self._forward_one()
                finally:
                    with proxy._lock:
                        proxy.in_flight -= 1

            def _forward_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                method, path = self.command, self.path
                if proxy.delay:
                    time.sleep(proxy.delay)
                with proxy._lock:
                    proxy.counts[method] += 1
                    proxy.log.append((method, path, length))
                    proxy.ranges.append((method, path, self.headers.get("Range")))
                if method == "DELETE" and proxy._rule("refuse_deletes", method, path):
                    self._answer(403, {"Content-Type": "application/xml"}, b"<Error><Code>AccessDenied</Code></Error>")
                    return
                if method == "POST" and re.search(r"[?&]delete(=|&|$)", path) and proxy._rule("refuse_deletes", method, path):
                    # A multi-object delete (what object_store sends for one key too) answers 200
                    # with one AccessDenied per key, as S3 does for a credential without DeleteObject.
                    keys = re.findall(rb"<Key>(.*?)</Key>", body)
                    errors = b"".join(
                        b"<Error><Key>" + k + b"</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>" for k in keys
                    )
                    self._answer(200, {"Content-Type": "application/xml"}, b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult>' + errors + b"</DeleteResult>")
                    return
                if method in ("GET", "HEAD") and proxy._rule("fail_reads", method, path):
                    self._answer(503, {"Content-Type": "application/xml"}, b"<Error><Code>SlowDown</Code></Error>")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=60)
                try:
                    conn.request(method, path, body=body if body or method in ("PUT", "POST") else None, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    status, out_headers = resp.status, {k: v for k, v in resp.getheaders() if k.lower() not in _HOP}
                finally:
                    conn.close()
                landed = proxy._take(proxy._landed, method, path)
                if landed is not None:
                    landed()
                    try:
                        self._answer(status, out_headers, data, head=method == "HEAD")
                    except OSError:  # the client is gone
                        self.close_connection = True
                    return
                if method == "PUT":
                    if status == 412 and "if-none-match" in {k.lower() for k in headers} and proxy._rule("ignore_conditions", method, path):
                        self._answer(200, {"ETag": '"ignored"'}, b"")
                        return
                    if 200 <= status < 300:
                        rule = proxy._rule("lose_ack", method, path)
                        if rule is not None:
                            if rule.drop:
                                self.close_connection = True
                                try:
                                    self.connection.shutdown(socket.SHUT_RDWR)
                                except OSError:
                                    pass
                                return
                            self._answer(500, {"Content-Type": "application/xml"}, b"<Error><Code>InternalError</Code></Error>")
                            return
                self._answer(status, out_headers, data, head=method == "HEAD")
                hook = proxy._take(proxy._after, method, path)
                if hook is not None:
                    hook()

            def _answer(self, status: int, headers: Dict[str, str], data: bytes, head: bool = False) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", headers.get("Content-Length", str(len(data))) if head else str(len(data)))
                self.end_headers()
                if not head and data:
                    self.wfile.write(data)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _forward

        # A port no earlier proxy of this process had: delta-occ keeps one storage (and its
        # conditional-write probe result) per endpoint and process, so a reused port would
        # silently skip the probe a test is about.
        while True:
            server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            port = int(server.server_address[1])
            if port not in FaultProxy._used_ports:
                FaultProxy._used_ports.add(port)
                break
            server.server_close()
        self._server = server
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
