"""Helpers shared by the benchmarks: the machine, a server for one run, a quiet shell."""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def machine_line() -> str:
    """One line describing where the numbers were measured."""
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


@dataclass(frozen=True)
class BenchServer:
    """The server a benchmark runs against, and a line saying where it came from."""

    url: str
    how: str
    data_dir: Path | None = None  # a server started for the run: deleted when the run ends


_STARTED = time.monotonic()


def progress(message: str, part: str = "bench") -> None:
    """A progress line on stderr (stdout carries the table), with the time since the run
    started: where a run spends its time."""
    elapsed = time.monotonic() - _STARTED
    print(f"[{part} {elapsed:6.0f} s] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def bench_server() -> Iterator[BenchServer]:
    """``HINDSIGHT_BENCH_URL``, or a server started now by the project's launcher in a one-run
    temporary data dir, stopped and deleted again (PostgreSQL's data too) when the block ends.

    Never the user's own server or data dir: a benchmark leaves nothing behind.
    """
    explicit = os.environ.get("HINDSIGHT_BENCH_URL")
    if explicit:
        yield BenchServer(explicit.rstrip("/"), f"`HINDSIGHT_BENCH_URL` ({explicit})")
        return
    from hindsight_magic._localserver import launcher

    data_dir = Path(tempfile.mkdtemp(prefix="bench-server-"))
    try:
        progress("starting a local Hindsight server (one run) …")
        info = launcher.start(port=free_port(), data_dir=data_dir)
        yield BenchServer(
            info.url,
            "a local server started for this run by the project's launcher "
            "(`hindsight_magic._localserver.launcher.start`, default server settings, fresh "
            f"temporary data dir, stopped and deleted afterwards), LLM `{info.llm_provider}`",
            data_dir,
        )
    finally:
        launcher.discard(data_dir)


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty collection."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def quiet_shell() -> Any:
    """A real IPython shell that prints nothing (no history file, no Out[] echo)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryAccessor.enabled = False
    shell = InteractiveShell.instance(config=config)
    shell.displayhook.write_output_prompt = lambda: None  # type: ignore[method-assign]
    shell.displayhook.write_format_data = lambda *a, **k: None  # type: ignore[method-assign]
    return shell


def noop_magic(shell: Any) -> Callable[[str], None]:
    """Register a line magic that does nothing; a call of it through ``run_line_magic``, the
    floor that IPython's magic call and the machine give next to a timed ``%retain``."""
    shell.register_magic_function(lambda line: None, "line", "bench_noop")
    return lambda text: shell.run_line_magic("bench_noop", text)


def settled(session: Any) -> None:
    """Wait until the session's worker has done its startup job (the warm-up imports), as a
    user's next cell comes after the load cell: timed calls then measure the steady state, not
    the load (which ``load_cost`` and ``first_recall`` time)."""
    import threading

    from hindsight_magic._session import STARTUP_DELAY_S

    done = threading.Event()
    session._parts.worker.submit(done.set, STARTUP_DELAY_S + 0.05)  # runs after the warm-up job
    done.wait(60)


@contextlib.contextmanager
def temporary_journal() -> Iterator[str]:
    """``HINDSIGHT_JOURNAL_PATH`` on a fresh file in a temporary folder while the block runs,
    then as it was, and the folder removed: sections that load the extension themselves must
    not write a journal into the user's data dir."""
    saved = os.environ.get("HINDSIGHT_JOURNAL_PATH")
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        os.environ["HINDSIGHT_JOURNAL_PATH"] = path = os.path.join(tmp, "journal.sqlite3")
        try:
            yield path
        finally:
            if saved is None:
                os.environ.pop("HINDSIGHT_JOURNAL_PATH", None)
            else:
                os.environ["HINDSIGHT_JOURNAL_PATH"] = saved


@contextlib.contextmanager
def loaded(shell: Any, url: str, bank_id: str, **extra: str) -> Iterator[Any]:
    """The extension loaded into ``shell`` for ``bank_id`` on a fresh journal (a temporary
    folder); yields its session, and unloads it (the folder goes) when the block ends."""
    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    saved = dict(os.environ)  # a section's settings must not leak into the next section's
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        os.environ.update(kernel_env(url, bank_id, os.path.join(tmp, "journal.sqlite3"), **extra))
        load_ipython_extension(shell)
        session = shell.magics_manager.registry["HindsightMagics"].session
        settled(session)
        try:
            yield session
        finally:
            unload_ipython_extension(shell)
            os.environ.clear()
            os.environ.update(saved)


@dataclass(frozen=True)
class Stat:
    """Median, min and max of repeated measurements (in the unit they were taken in)."""

    median: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat:
        """Summarize ``values`` (at least one)."""
        data = list(values)
        return cls(statistics.median(data), min(data), max(data), len(data))

    def to_json(self) -> dict[str, float]:
        """A plain dict, for passing between processes."""
        return {"median": self.median, "min": self.min, "max": self.max, "n": self.n}

    @classmethod
    def from_json(cls, data: Mapping[str, float]) -> Stat:
        """The inverse of ``to_json``."""
        return cls(data["median"], data["min"], data["max"], int(data["n"]))


def load_average() -> str:
    """The 1-minute load average (other processes compete for the cores), or ``n/a``."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def busy_warning(*loads: str) -> str:
    """A warning when the load average was above half the cores (processes running or
    waiting to run, or in uninterruptible I/O)."""
    cores = os.cpu_count() or 1
    figures = [float(load) for load in loads if load != "n/a"]
    if not figures or max(figures) <= cores / 2:
        return ""
    return (
        " — **a busy machine**: the load average was above half the cores (likely including "
        "the server extracting what the benchmark sent it, besides any other work on the "
        "machine), so wall-clock times are inflated and noisier than on a quiet machine"
    )


_ALSO_BUSY = ("nice", "irq", "softirq")


def busy_cpu_s() -> float:
    """CPU seconds the whole machine spent busy (every core, every process) so far."""
    import psutil

    times = psutil.cpu_times()  # guest time is inside user time; steal and iowait are not work
    return float(times.user + times.system + sum(getattr(times, f, 0.0) for f in _ALSO_BUSY))


def wait_until_quiet(below_cores: float = 0.3, timeout_s: float = 300.0) -> tuple[float, bool]:
    """Wait until the machine used less than ``below_cores`` over one second (the server has
    digested what an earlier run sent), at most ``timeout_s``; the seconds waited, and
    whether the machine did get quiet."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        before = busy_cpu_s()
        time.sleep(1.0)
        if busy_cpu_s() - before < below_cores:
            return time.monotonic() - started, True
    return time.monotonic() - started, False


def new_bank(kind: str) -> str:
    """A bank no earlier run used."""
    return f"bench-{kind}-{uuid.uuid4().hex[:8]}"


def busy_operations(http: Any, bank_id: str, consolidation: bool = True) -> int:
    """The bank's operations pending or running (with ``consolidation``, its consolidation
    too), read from its operations: the server caches a bank's stats for a minute."""
    busy = 0
    for status in ("pending", "processing"):
        listed = http.get(
            f"/v1/default/banks/{bank_id}/operations", params={"status": status, "limit": 100}
        ).json()
        busy += sum(
            1
            for operation in listed.get("operations", [])
            if consolidation or operation.get("operation_type") != "consolidation"
        )
    return busy


def bank_counts(http: Any, bank_id: str) -> tuple[int, int]:
    """(memories, documents) the bank holds now (not its stats: cached for a minute)."""
    path = f"/v1/default/banks/{bank_id}"
    memories = http.get(f"{path}/memories/list", params={"limit": 1}).json()
    documents = http.get(f"{path}/documents", params={"limit": 1}).json()
    return int(memories.get("total") or 0), int(documents.get("total") or 0)


def settle_bank(http: Any, bank_id: str, wait_s: float, consolidation: bool = True) -> float | None:
    """Wait (≤ ``wait_s``) until the server has no pending work for the bank: its retains and,
    with ``consolidation``, consolidation too (without, a consolidation still running is not
    waited for: the memories are searchable before it ends); the seconds waited, or None when
    it was still busy."""
    started = time.monotonic()
    while busy_operations(http, bank_id, consolidation):
        if time.monotonic() - started > wait_s:
            return None
        time.sleep(0.5)
    return time.monotonic() - started


def api_headers() -> dict[str, str]:
    """Headers a hand-written call would send (the key from the environment, if any)."""
    key = os.environ.get("HINDSIGHT_API_KEY") or os.environ.get("HINDSIGHT_API_TOKEN")
    return {"Authorization": f"Bearer {key}"} if key else {}


def raw_client(url: str) -> Any:
    """A persistent ``httpx.Client`` for the hand-written HTTP calls."""
    import httpx

    return httpx.Client(base_url=url, headers=api_headers(), timeout=120.0, trust_env=False)


def delete_bank(url: str, bank_id: str, attempts: int = 5) -> bool:
    """Remove a benchmark bank and its queued server work (best effort). Its pending
    operations are cancelled first: the server's delete waits for the bank's work to end, so
    a backlog of retains would hold it for tens of seconds."""
    import httpx

    path = f"/v1/default/banks/{bank_id}"
    with raw_client(url) as http:
        for attempt in range(attempts):
            try:
                pending = http.get(f"{path}/operations", params={"status": "pending", "limit": 100})
                for operation in pending.json().get("operations", []):
                    http.delete(f"{path}/operations/{operation['id']}")
                if http.delete(path).status_code in (200, 404):
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(1.0 + attempt)
    return False


def kernel_env(url: str, bank_id: str, journal: str, **extra: str) -> dict[str, str]:
    """``HINDSIGHT_*`` settings for a benchmark session: this server, this bank, a fresh journal."""
    env = {
        "HINDSIGHT_API_URL": url,
        "HINDSIGHT_BANK_ID": bank_id,
        "HINDSIGHT_JOURNAL_PATH": journal,
    }
    env.update({f"HINDSIGHT_{name.upper()}": value for name, value in extra.items()})
    return env


def run_child(
    args: list[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
    unset: Iterable[str] = (),
) -> Any:
    """Run ``python ARGS`` in a fresh process; its last stdout line is JSON, returned parsed.

    ``env`` is added to this process's environment after the names in ``unset`` are removed.
    """
    child_env = {k: v for k, v in os.environ.items() if k not in set(unset)}
    child_env.update(env or {})
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=child_env,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"benchmark child {args[:2]} failed (exit {done.returncode}):\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        )
    return json.loads(lines[-1])


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB (VmHWM; getrusage elsewhere)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float:
    """Resident set size now, in MB (VmRSS; the peak where /proc is missing)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return peak_rss_mb()


@dataclass
class Traffic:
    """What went through a ``CountingProxy``: requests by method and path (ids replaced by
    ``{bank}``/``{id}``), bytes each way (request and status lines, headers and bodies), and
    the memories the ``POST …/memories`` requests carried, as (``metadata.source``, the
    item's ``timestamp``: when the cell ran or the memory was retained), in the order sent;
    and those the server acknowledged (a 2xx reply), as (bank, ``document_id``)."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    bytes_up: int = 0
    bytes_down: int = 0
    memories: list[tuple[str, str]] = field(default_factory=list)
    acknowledged: list[tuple[str, str]] = field(default_factory=list)

    def __sub__(self, earlier: Traffic) -> Traffic:
        return Traffic(
            self.requests - earlier.requests,
            self.bytes_up - earlier.bytes_up,
            self.bytes_down - earlier.bytes_down,
            self.memories[len(earlier.memories) :],
            self.acknowledged[len(earlier.acknowledged) :],
        )

    def count(self, method: str | None = None, path_end: str = "") -> int:
        """Requests of ``method`` (any when None) whose path ends with ``path_end``."""
        return sum(
            n
            for (m, path), n in self.requests.items()
            if (method is None or m == method) and path.endswith(path_end)
        )

    def copy(self) -> Traffic:
        return Traffic(
            Counter(self.requests),
            self.bytes_up,
            self.bytes_down,
            list(self.memories),
            list(self.acknowledged),
        )


_ID_SEGMENT = re.compile(r"^(?:hm-.*|[0-9a-f-]{16,}|.*\d.*\d.*\d.*)$")


def path_shape(path: str) -> str:
    """``/v1/default/banks/{bank}/documents/{id}`` of a request path (no query): what counts
    as one kind of request."""
    parts = path.split("?", 1)[0].split("/")
    for n, part in enumerate(parts):
        if n and parts[n - 1] == "banks":
            parts[n] = "{bank}"
        elif n > 4 and _ID_SEGMENT.match(part):
            parts[n] = "{id}"
    return "/".join(parts)


class CountingProxy:
    """An HTTP proxy on a free local port that forwards every request to ``target`` and
    counts what goes through it (``Traffic``): what a process sends a server, seen from
    outside the process. Point the process's ``HINDSIGHT_API_URL`` at ``url``; ``traffic()``
    is a copy of the counts so far (subtract two to get what happened between them).

    One thread per client connection (keep-alive kept), one upstream connection each; the
    response is read whole and sent on with its length (no chunking)."""

    _HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "proxy-connection"})

    def __init__(self, target: str) -> None:
        from http.server import ThreadingHTTPServer

        self._target = target.rstrip("/")
        self._lock = threading.Lock()
        self._traffic = Traffic()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def traffic(self) -> Traffic:
        with self._lock:
            return self._traffic.copy()

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _record(
        self, method: str, path: str, up: int, down: int, body: bytes, status: int = 0
    ) -> None:
        memories: list[tuple[str, str]] = []
        acknowledged: list[tuple[str, str]] = []
        if method == "POST" and path_shape(path).endswith("/memories"):
            parts = path.split("?", 1)[0].split("/")
            bank = parts[parts.index("banks") + 1] if "banks" in parts[:-1] else ""
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                for item in json.loads(body).get("items") or ():
                    source = (item.get("metadata") or {}).get("source") or "none"
                    memories.append((str(source), str(item.get("timestamp") or "")))
                    if 200 <= status < 300:
                        acknowledged.append((bank, str(item.get("document_id") or "")))
        with self._lock:
            self._traffic.requests[(method, path_shape(path))] += 1
            self._traffic.bytes_up += up
            self._traffic.bytes_down += down
            self._traffic.memories += memories
            self._traffic.acknowledged += acknowledged

    def _handler(self) -> type:
        from http.client import HTTPConnection
        from http.server import BaseHTTPRequestHandler
        from urllib.parse import urlsplit

        proxy, target = self, urlsplit(self._target)

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            upstream: HTTPConnection | None = None

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in proxy._HOP}
                up = len(self.raw_requestline) + _header_bytes(self.headers.items()) + len(body)
                try:
                    if self.upstream is None:
                        self.upstream = HTTPConnection(target.hostname, target.port, timeout=600)
                    self.upstream.request(self.command, self.path, body or None, headers)
                    reply = self.upstream.getresponse()
                    status, reason, data = reply.status, reply.reason, reply.read()
                    sent = [(k, v) for k, v in reply.getheaders() if k.lower() not in proxy._HOP]
                except OSError:
                    if self.upstream is not None:
                        self.upstream.close()
                    self.upstream = None
                    status, reason, data, sent = 502, "Bad Gateway", b"", []
                sent = [(k, v) for k, v in sent if k.lower() != "content-length"]
                sent.append(("Content-Length", str(len(data))))
                line = f"HTTP/1.1 {status} {reason}\r\n"
                down = len(line) + _header_bytes(sent) + len(data)
                proxy._record(self.command, self.path, up, down, body, status)
                try:
                    self.send_response_only(status, reason)
                    for key, value in sent:
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client went away (a kernel killed mid-request)
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

            def finish(self) -> None:
                super().finish()
                if self.upstream is not None:
                    self.upstream.close()

        return Forward


def _header_bytes(headers: Iterable[tuple[str, str]]) -> int:
    """The bytes of a header block as sent (``Name: value\\r\\n`` each, then a blank line)."""
    return (
        sum(len(f"{key}: {value}\r\n".encode("latin-1", "replace")) for key, value in headers) + 2
    )


def with_cell_id(make: Callable[..., Any], cell_id: str) -> Callable[..., Any]:
    """``Session.msg`` that adds ``cellId`` to an execute request's metadata, as JupyterLab
    does."""

    def message(kind: str, content: Any = None, **kwargs: Any) -> Any:
        if kind == "execute_request":
            kwargs["metadata"] = {**(kwargs.get("metadata") or {}), "cellId": cell_id}
        return make(kind, content, **kwargs)

    return message
