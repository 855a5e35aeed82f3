"""Tools for the fault, bad-input and secrets suites: read a real server, drive real kernels,
and put a misbehaving HTTP proxy in front of a real server.

What the extension delivered is always read from the server itself (its REST API), never from
the extension's counters.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
from helpers import poll

BANKS = "/v1/default/banks"


class ServerReader:
    """Reads one bank of a real Hindsight server directly."""

    def __init__(self, url: str, bank: str, key: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.bank = bank
        self.http = httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False)

    def close(self) -> None:
        self.http.close()

    def pages(self, path: str, key: str, limit: int, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of the bank's list ``path`` (its items under ``key``), ``limit`` a page."""
        offset = 0
        while True:
            reply = self.http.get(
                f"{BANKS}/{self.bank}/{path}", params={**params, "limit": limit, "offset": offset}
            )
            if reply.status_code == 404:
                return
            reply.raise_for_status()
            items = reply.json()[key]
            yield from items
            if len(items) < limit:
                return
            offset += limit

    def documents(self) -> dict[str, str]:
        """Document id → original text, every page. The texts are read four at a time: a
        thousand documents read one by one from a server busy indexing took 16 s."""

        def text(document_id: str) -> str:
            doc = self.http.get(f"{BANKS}/{self.bank}/documents/{document_id}")
            doc.raise_for_status()
            return doc.json().get("original_text") or ""

        ids = [item["id"] for item in self.pages("documents", "items", 100)]
        with ThreadPoolExecutor(4) as pool:
            return dict(zip(ids, pool.map(text, ids), strict=True))

    def memory_texts(self) -> list[str]:
        """The text of every memory (fact) the server extracted, every page."""
        return [m.get("text") or "" for m in self.pages("memories/list", "items", 100)]

    def lines(self) -> Counter[str]:
        """How often each line occurs across all documents.

        The server stores an async batch of items without ``document_id`` as one document whose
        text is the items joined by newlines, so a memory delivered twice shows up twice here.
        """
        counts: Counter[str] = Counter()
        for text in self.documents().values():
            counts.update(line for line in text.splitlines() if line.strip())
        return counts

    def accepted_contents(self) -> Counter[str]:
        """How often the server accepted each memory: the items of its retain operations.

        Every accepted request becomes operations holding its items until (and after) they are
        processed, so this is exact as soon as the server has answered, long before the
        documents exist. A memory sent twice under two operation ids is counted twice.
        """
        counts: Counter[str] = Counter()
        for op in list(self.pages("operations", "operations", 100)):
            if op.get("operation_type") != "retain":
                continue  # the per-request parent ("batch_retain") holds no items
            reply = self.http.get(
                f"{BANKS}/{self.bank}/operations/{op['id']}", params={"include_payload": True}
            )
            reply.raise_for_status()
            payload = reply.json().get("task_payload") or {}
            counts.update(item.get("content", "") for item in payload.get("contents") or ())
        return counts

    def retain_operations(self) -> list[dict[str, Any]]:
        """The bank's batch retain operations (one per accepted request)."""
        ops = self.pages("operations", "operations", 100, type="batch_retain")
        return [op for op in ops if op.get("operation_type") == "batch_retain"]

    def busy(self) -> int:
        """Retain operations still pending or processing (consolidation and the like go on
        long after the memories are stored, and are not waited for)."""
        return sum(
            1
            for state in ("pending", "processing")
            for op in self.pages("operations", "operations", 100, status=state)
            if op.get("operation_type") in ("batch_retain", "retain")
        )

    def settled_lines(self, expected: set[str], timeout_s: float) -> Counter[str]:
        """Line counts once every expected line is there and the bank has no work left."""

        def done() -> Counter[str] | None:
            if self.busy():
                return None
            counts = self.lines()
            return counts if expected <= set(counts) else None

        return poll(done, timeout_s, every_s=1.0) or self.lines()


def exactly_once(counts: Counter[str], expected: set[str], marker: str) -> tuple[int, int, int]:
    """(missing, doubled, unexpected) among lines containing ``marker``."""
    ours = {line: n for line, n in counts.items() if marker in line}
    missing = len(expected - set(ours))
    doubled = sum(1 for line, n in ours.items() if n > 1)
    unexpected = len(set(ours) - expected)
    return missing, doubled, unexpected


# -- a proxy in front of a real server --------------------------------------------------------

NGINX_413 = (
    b"<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    b"<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


JSON = "application/json"


class Proxy:
    """Forwards everything to ``upstream``; can misbehave on ``POST …/memories`` (retains).

    ``lose_acks`` retains are forwarded but their reply is lost: ``"close"`` closes the
    connection without a reply, ``"hang"`` answers nothing for ``hang_s`` (past the client's
    timeout), ``"garble"`` sends a 200 whose JSON body is cut in half. Bodies over ``max_body``
    bytes get nginx's HTML 413 and are not forwarded. ``slow_indexing``: every async operation
    asked about is still ``pending`` (a server busy with everyone's work).
    """

    def __init__(
        self,
        upstream: str,
        *,
        lose_acks: int = 0,
        mode: str = "close",
        hang_s: float = 4.0,
        max_body: int | None = None,
        slow_indexing: bool = False,
    ) -> None:
        self.upstream = upstream
        self.slow_indexing = slow_indexing
        self.lose_acks = lose_acks
        self.mode = mode
        self.hang_s = hang_s
        self.max_body = max_body
        self.retains: list[dict[str, Any]] = []  # bodies of the retains that reached us
        self.forwarded: list[dict[str, Any]] = []  # … and of those forwarded upstream
        self.refused_413 = 0
        self._lock = threading.Lock()
        self._http = httpx.Client(base_url=upstream, timeout=60, trust_env=False)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _relay(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def _handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        is_retain = request.command == "POST" and request.path.split("?")[0].endswith("/memories")
        if self.slow_indexing and request.command == "GET" and "/operations/" in request.path:
            self._reply(request, 200, json.dumps({"status": "pending"}).encode(), JSON)
            return
        lose = False
        if is_retain:
            with self._lock:
                self.retains.append(json.loads(body))
                if self.max_body is not None and length > self.max_body:
                    self.refused_413 += 1
                    self._reply(request, 413, NGINX_413, "text/html")
                    return
                self.forwarded.append(json.loads(body))
                if self.lose_acks > 0:
                    self.lose_acks -= 1
                    lose = True
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in ("host", "content-length", "connection", "accept-encoding")
        }
        reply = self._http.request(request.command, request.path, content=body, headers=headers)
        if lose and self.mode == "close":
            request.close_connection = True  # the server did the work; the client hears nothing
            return
        if lose and self.mode == "hang":
            time.sleep(self.hang_s)
            request.close_connection = True
            return
        content = reply.content
        if lose and self.mode == "garble":
            content = content[: len(content) // 2]
        ctype = reply.headers.get("content-type", "application/json")
        self._reply(request, reply.status_code, content, ctype)

    @staticmethod
    def _reply(
        request: http.server.BaseHTTPRequestHandler, status: int, body: bytes, ctype: str
    ) -> None:
        request.send_response(status)
        request.send_header("Content-Type", ctype)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


@contextmanager
def proxy_for(upstream: str, **options: Any) -> Iterator[Proxy]:
    proxy = Proxy(upstream, **options)
    try:
        yield proxy
    finally:
        proxy.close()
