"""The growth benchmark's banks: what auto-retain would have written over a semester, and the
fill that sends it to a kept local server through the batch API.

A bank of N memories is the recall-quality benchmark's three sessions with planted facts
(``recall_sessions.planted_sessions``), placed at a tenth, a half and nine tenths of the way,
among its generated distractor sessions (``recall_sessions.distractor_sessions``: what grows
the bank). Each session's cells run in this process (``recall_sessions.execute``), and each
executed cell becomes the memories the extension would send for it, built with the extension's
own functions: ``clean_cell`` and ``cell_pieces`` (the cut to the embedding window), the
cell's entities, ``provenance_metadata`` (notebook, cells, kernel session, source), the
project tag of the default scoping, a cell document id per piece (``identify``), and
``request_item`` (the body a batch carries). A ``%retain`` cell is a ``%retain`` memory, as
the magic queues it. Timestamps spread the bank at 500 memories a day (a person working four
hours a day with auto-retain on), ending when the bank is filled.

The server keeps its data in a named data dir between runs (``DEFAULT_DATA_DIR``): filling
50 000 memories takes about an hour here, and an import would re-embed them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import api_headers, progress
from .recall_sessions import Fact, Session, distractor_sessions, execute, facts, planted_sessions

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = ROOT / "bench" / ".data" / "growth"  # gitignored; never a test's folder
DEFAULT_PORT = 8931
PROJECT = "growthbench"  # the project label every memory is tagged with (default scoping)
PER_DAY = 500  # memories a day: four hours of work with auto-retain on (issue 45)
PLANTED_AT = (0.1, 0.5, 0.9)  # where in the bank's sessions the planted ones sit
DISTRACTOR_CELLS = 140  # cells per distractor session (the recall-quality benchmark's)
NAMESPACE = uuid.UUID("8d7c1f1e-45a0-4f5b-9a54-67c0a6d2b045")  # deterministic ids


def bank_id(size: int, prefix: str = "growth") -> str:
    """The bank of ``size`` memories (``growth-1000``: a kept one)."""
    return f"{prefix}-{size}"


@dataclass
class SessionMemories:
    """One session's memories as batch items (request bodies), in cell order."""

    session: Session
    items: list[dict[str, Any]]


def _kernel_session(bank: str, index: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{bank}/kernel/{index}"))


def session_memories(session: Session, bank: str, index: int) -> SessionMemories:
    """The memories auto-retain (and ``%retain``) would queue for ``session`` run top to
    bottom in a notebook (cell numbers from 2: the first cell loads the extension), without
    timestamps (``fill_plan`` gives them)."""
    from hindsight_magic._capture.autoretain import AUTORETAIN, MIN_TRANSCRIPT_CHARS, Entry
    from hindsight_magic._capture.identity import identify
    from hindsight_magic._capture.transcript import CellText, cell_pieces, clean_cell
    from hindsight_magic._delivery.items import new_item, request_item
    from hindsight_magic._memory.provenance import RETAIN_MAGIC, provenance_metadata

    kernel = _kernel_session(bank, index)
    tags = (f"project:{PROJECT}",)
    where = f"{PROJECT}\x1f{session.notebook}"
    items: list[dict[str, Any]] = []

    def add(
        text: str, source: str, cells: Sequence[int], entities: Sequence[str], doc: str
    ) -> None:
        meta = provenance_metadata(source, kernel, session.notebook, cells)
        item = new_item(
            text,
            timestamp="",
            context="jupyter",
            metadata=meta,
            tags=tags,
            secrets=(),
            document_id=doc,
            entities=entities,
        )
        items.append(request_item(item, ()))

    outcomes = execute(session)
    for number, (cell, outcome) in enumerate(zip(session.cells, outcomes, strict=True), 2):
        source = cell.source
        if source.startswith("%retain "):
            text = source.removeprefix("%retain ").strip()
            add(
                text,
                RETAIN_MAGIC,
                (number,),
                (),
                f"hm-{uuid.uuid5(NAMESPACE, kernel).hex}-{number}",
            )
            continue
        shown = CellText(number, source, outcome.display, outcome.error, outcome.stdout)
        cleaned = clean_cell(shown, "result")
        if cleaned is None:
            continue
        entry = Entry(
            0.0, cleaned, cell_pieces(cleaned), str(uuid.uuid5(NAMESPACE, where + source))
        )
        identity = identify(
            entry.pieces, source=source, number=number, where=where, cell_id=entry.cell_id
        )
        for n, piece in enumerate(entry.pieces, 1):
            if len(piece.split("\n", 1)[-1].strip()) < MIN_TRANSCRIPT_CHARS:
                continue
            add(piece, AUTORETAIN, (number,), entry.entities(piece), identity.document_id(n))
    return SessionMemories(session, items)


def _planted(bank: str) -> list[SessionMemories]:
    """The sessions with planted facts, as memories (kernel indices 10 000 on)."""
    return [
        session_memories(session, bank, 10_000 + n) for n, session in enumerate(planted_sessions())
    ]


@dataclass
class Plan:
    """What a bank of ``size`` holds: its items in order (timestamps set), the planted facts'
    questions, how many sessions, and distractor memories holding a planted answer (0)."""

    size: int
    items: list[dict[str, Any]]
    questions: list[tuple[Session, int, Fact]]
    sessions: int
    answer_clashes: int


def fill_plan(size: int, end: float | None = None, bank: str | None = None) -> Plan:
    """The bank of ``size`` memories (``end``: the last memory's time, default now): the
    planted sessions whole, at ``PLANTED_AT`` of the way, among distractor sessions (the last
    one cut to make ``size``)."""
    from hindsight_magic._text import local_timestamp

    bank = bank or bank_id(size)
    planted = _planted(bank)
    room = max(0, size - sum(len(p.items) for p in planted))
    marks = [share * room for share in PLANTED_AT]
    items: list[dict[str, Any]] = []
    sessions, taken = 0, 0
    distractors = iter(distractor_sessions(room // 100 + 10, DISTRACTOR_CELLS, seed=45))
    while taken < room or planted:
        if planted and (taken >= marks[0] or taken >= room):
            marks.pop(0)
            items += planted.pop(0).items
        else:
            memories = session_memories(next(distractors), bank, sessions).items
            memories = memories[: room - taken]
            items += memories
            taken += len(memories)
        sessions += 1
    end = time.time() if end is None else end
    step = 86_400 / PER_DAY
    start = end - step * len(items)
    for n, item in enumerate(items):
        item["timestamp"] = local_timestamp(start + n * step)
    questions = facts(planted_sessions())
    answers = [a for _, _, fact in questions for a in fact.answers]
    planted_notebooks = {s.notebook for s in planted_sessions()}
    clashes = sum(
        1
        for item in items
        if item.get("metadata", {}).get("notebook") not in planted_notebooks
        and any(a in item["content"] for a in answers)
    )
    return Plan(size, items, questions, sessions, clashes)


# -- the kept server ------------------------------------------------------------------------


def start_server(data_dir: Path, port: int) -> str:
    """The kept server of ``data_dir`` (started now if it does not run); its URL."""
    from hindsight_magic._localserver import launcher

    data_dir.mkdir(parents=True, exist_ok=True)
    info = launcher.status(data_dir)
    if info is not None:
        return info.url
    from hindsight_magic._localserver.postgres import bind

    if bind(port) is None:  # another server has it (a shared test server): any free port
        port = bind(0) or port
    progress(f"starting the growth server on port {port}, data in {data_dir} …", "growth")
    return launcher.start(port=port, data_dir=data_dir, wait_s=600).url


INDEX_SETTING = "HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS"


def index_setting(data_dir: Path) -> str:
    """The kept server's ``HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS`` as its process has it: below
    that many memories of a kind a bank is searched exactly, above it through an approximate
    index ("0", Hindsight's default: every bank has the index; "" when it does not run)."""
    import psutil

    from hindsight_magic._machine import read_state, server_home

    info = read_state(server_home(data_dir))
    if info is None:
        return ""
    try:
        return str(psutil.Process(info.pid).environ().get(INDEX_SETTING, "0"))
    except psutil.Error:
        return ""


def stop_server(data_dir: Path) -> bool:
    from hindsight_magic._localserver import launcher

    return launcher.stop(data_dir)


def purge(data_dir: Path) -> list[str]:
    """Stop the server and delete everything of the data dir (PostgreSQL's data too, wherever
    it lives); what was deleted."""
    import shutil

    from hindsight_magic._localserver import launcher

    found = [str(location) for location in launcher.purge(data_dir)]
    shutil.rmtree(data_dir, ignore_errors=True)
    return found


def server_processes(data_dir: Path) -> dict[str, list[int]]:
    """The pids of the kept server's API process (and its children) and of PostgreSQL."""
    from hindsight_magic._localserver import postgres
    from hindsight_magic._localserver.priority import process_tree
    from hindsight_magic._machine import read_state, server_home

    info = read_state(server_home(data_dir))
    if info is None:
        return {}
    pg = Path(info.pg_data) if info.pg_data else server_home(data_dir) / "pgdata"
    return {
        "hindsight-api": list(process_tree(info.pid)),
        "PostgreSQL": list(process_tree(postgres.postmaster_pid(pg))),
    }


# -- CPU while filling ----------------------------------------------------------------------


@dataclass
class CpuWatch:
    """CPU seconds per process group (the server's API, PostgreSQL, this process, the rest of
    the machine) over a stretch of time, sampled by a thread; a group's children that ended
    meanwhile (PostgreSQL's backends of closed connections) still count."""

    groups: dict[str, list[int]]
    interval_s: float = 2.0
    used: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> CpuWatch:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _totals(self) -> tuple[dict[str, float], dict[str, float]]:
        import os

        import psutil

        cpu: dict[str, float] = {}
        rss: dict[str, float] = {}
        mine = {os.getpid()}
        groups = {**self.groups, "this process": list(mine)}
        for name, pids in groups.items():
            total = memory = 0.0
            for pid in pids:
                with contextlib.suppress(psutil.Error):
                    proc = psutil.Process(pid)
                    times = proc.cpu_times()
                    total += times.user + times.system
                    if name != "this process":  # its children that ended (PostgreSQL's backends)
                        total += times.children_user + times.children_system
                    memory += proc.memory_info().rss
                    if name != "this process":
                        for child in proc.children(recursive=True):
                            if child.pid not in pids:
                                with contextlib.suppress(psutil.Error):
                                    t = child.cpu_times()
                                    total += t.user + t.system
                                    memory += child.memory_info().rss
            cpu[name] = total
            rss[name] = memory / 1e6
        api = self.groups.get("hindsight-api") or []
        if api:  # its Python thread (requests, the worker's steps); the rest is embedding
            with contextlib.suppress(psutil.Error):
                main = [t for t in psutil.Process(api[0]).threads() if t.id == api[0]]
                cpu["hindsight-api main thread"] = sum(t.user_time + t.system_time for t in main)
        machine = psutil.cpu_times()
        cpu["whole machine"] = machine.user + machine.system + machine.nice
        return cpu, rss

    def _run(self) -> None:
        start, _ = self._totals()
        started = time.monotonic()
        while not self._stop.wait(self.interval_s):
            now, rss = self._totals()
            self.seconds = time.monotonic() - started
            self.used = {name: now[name] - start.get(name, now[name]) for name in now}
            for name, value in rss.items():
                self.peak_rss_mb[name] = max(self.peak_rss_mb.get(name, 0.0), value)

    def cores(self) -> dict[str, float]:
        """Average cores each group used (CPU seconds over wall seconds)."""
        return (
            {name: used / self.seconds for name, used in self.used.items()} if self.seconds else {}
        )


# -- filling --------------------------------------------------------------------------------


def _ensure_bank(url: str, bank: str) -> None:
    """The bank as the extension creates it (``ensure_bank``), with the server's automatic
    consolidation off: here it digests about 100 memories in two minutes (mostly its own
    recalls), so it could never catch up with a fill and would compete with every figure
    measured afterwards. Its cost is reported from the 1 000 bank's fill instead."""
    from hindsight_magic._api.banks import ensure_bank
    from hindsight_magic._api.client import Connection, Timeouts

    from .common import raw_client

    connection = Connection(url, None, Timeouts(30, 60, 60, 120))
    client = connection.client
    try:
        ensure_bank(client, bank, "", "", "server")
    finally:
        connection.close()
    with raw_client(url) as http:
        http.patch(
            f"/v1/default/banks/{bank}/config",
            json={"updates": {"enable_auto_consolidation": False}},
        ).raise_for_status()


def without_observations(url: str, bank: str) -> int:
    """Cancel the bank's pending consolidation and delete the observations it made before
    it was turned off, so that every size holds the same kinds of memories; how many
    observations there were."""
    from .common import raw_client

    path = f"/v1/default/banks/{bank}"
    with raw_client(url) as http:
        listed = http.get(f"{path}/operations", params={"status": "pending", "limit": 100}).json()
        for op in listed.get("operations", []):
            if op.get("operation_type") == "consolidation":
                http.delete(f"{path}/operations/{op['id']}")
        held = http.get(f"{path}/memories/list", params={"limit": 1, "type": "observation"})
        count = int(held.json().get("total") or 0)
        if count:
            http.delete(f"{path}/observations").raise_for_status()
        return count


def indexed(http: Any, bank: str) -> int:
    """Memories of the recalled types (world, experience) the bank holds now."""
    total = 0
    for fact_type in ("world", "experience"):
        reply = http.get(
            f"/v1/default/banks/{bank}/memories/list", params={"limit": 1, "type": fact_type}
        ).json()
        total += int(reply.get("total") or 0)
    return total


def pending_operations(http: Any, bank: str) -> int:
    """Retain operations of ``bank`` not finished yet (consolidation not counted)."""
    busy = 0
    for status in ("pending", "processing"):
        listed = http.get(
            f"/v1/default/banks/{bank}/operations", params={"status": status, "limit": 100}
        ).json()
        busy += sum(
            1 for op in listed.get("operations", []) if op.get("operation_type") != "consolidation"
        )
    return busy


@dataclass
class Segment:
    """One stretch of a fill, sent with one batch size and one number of operations in
    flight, and what it cost."""

    batch: int
    in_flight: int
    memories: int = 0
    seconds: float = 0.0
    cores: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.memories / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "in_flight": self.in_flight,
            "memories": self.memories,
            "seconds": self.seconds,
            "rate": self.rate,
            "cores": self.cores,
            "peak_rss_mb": self.peak_rss_mb,
        }


async def _busy(http: Any, bank: str) -> int:
    """Batches of ``bank`` the server has not finished: each is a ``batch_retain`` operation
    with its ``retain`` children (consolidation runs on its own)."""
    busy = 0
    for status in ("pending", "processing"):
        listed = (
            await http.get(
                f"/v1/default/banks/{bank}/operations", params={"status": status, "limit": 100}
            )
        ).json()
        busy += sum(
            1 for op in listed.get("operations", []) if op.get("operation_type") == "batch_retain"
        )
    return busy


async def _send(
    url: str, bank: str, items: Sequence[dict[str, Any]], batch: int, in_flight: int
) -> None:
    """``items`` in async batches of ``batch`` (several requests at once when slots are free),
    keeping at most ``in_flight`` retain operations unfinished on the server; returns once
    the server has indexed them all."""
    import httpx

    async with httpx.AsyncClient(
        base_url=url, headers=api_headers(), timeout=300, trust_env=False
    ) as http:
        position = 0
        last_note = time.monotonic()
        while True:
            busy = await _busy(http, bank)
            if position >= len(items) and not busy:
                return
            sends = []
            for _ in range(max(0, in_flight - busy)):
                if position >= len(items):
                    break
                chunk = items[position : position + batch]
                key = f"{bank}/op/{chunk[0].get('document_id')}/{len(chunk)}"
                body = {
                    "items": list(chunk),
                    "async": True,
                    "operation_id": str(uuid.uuid5(NAMESPACE, key)),
                }
                sends.append(http.post(f"/v1/default/banks/{bank}/memories", json=body))
                position += len(chunk)
            for reply in await asyncio.gather(*sends):
                if reply.status_code not in (200, 201, 202):
                    raise RuntimeError(f"retain refused: {reply.status_code} {reply.text[:300]}")
            if time.monotonic() - last_note > 60:
                last_note = time.monotonic()
                progress(f"{bank}: {position} of {len(items)} sent, {busy} in flight", "growth")
            await asyncio.sleep(0.25)


def fill(
    url: str,
    data_dir: Path | None,
    plan: Plan,
    segments: Sequence[tuple[int, int]] = ((64, 2),),
    bank: str | None = None,
) -> list[Segment]:
    """Send ``plan`` into its bank, cut into equal ``segments`` of (batch size, operations in
    flight), each sent and indexed before the next, timed with the CPU each process used.
    What the bank already holds is not sent again (an interrupted fill goes on where it
    stopped: items are sent in order, and retains are idempotent by document id)."""
    from .common import raw_client

    bank = bank or bank_id(plan.size)
    _ensure_bank(url, bank)
    with raw_client(url) as http:
        have = indexed(http, bank)
    if have:
        progress(f"{bank}: {have} memories already there; sending from item {have}", "growth")
    todo = plan.items[have:]
    done: list[Segment] = []
    share = -(-len(todo) // len(segments)) if todo else 0
    for n, (batch, in_flight) in enumerate(segments):
        part = todo[n * share : (n + 1) * share]
        if not part:
            continue
        progress(
            f"{bank}: {len(part)} memories, batches of {batch}, {in_flight} in flight", "growth"
        )
        started = time.monotonic()
        with CpuWatch(server_processes(data_dir) if data_dir else {}) as watch:
            asyncio.run(_send(url, bank, part, batch, in_flight))
        seconds = time.monotonic() - started
        segment = Segment(batch, in_flight, len(part), seconds, watch.cores(), watch.peak_rss_mb)
        progress(f"{bank}: {segment.rate:.1f} memories/s; cores {segment.cores}", "growth")
        done.append(segment)
    return done


def record(data_dir: Path, name: str, data: dict[str, Any]) -> None:
    """Keep figures beside the data (``figures-NAME.json``, one file per kind, so a fill and
    a measurement running at once never overwrite each other's)."""
    path = data_dir / f"figures-{name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def recorded(data_dir: Path) -> dict[str, Any]:
    """Every kind of figure kept in ``data_dir``."""
    return {
        path.stem.removeprefix("figures-"): json.loads(path.read_text())
        for path in sorted(data_dir.glob("figures-*.json"))
    }
