"""``python -m bench.classroom``: a class on one server (issue 45).

Run: ``python -m bench.classroom [--students 30] [--cells 40] [--rounds 2]`` (``--students 3
--cells 10`` for a quick run). Prints a table and JSON; asserts nothing. ``--output
BENCHMARKS.md`` merges its section into the file; ``--figures F`` keeps the figures, and
``--report F`` prints (and merges) them again without measuring.

It starts its own local server with the project's launcher, **with an API key** (a fresh one,
never printed), in a temporary data dir that is purged at the end, PostgreSQL's data too (also
on failure or Ctrl-C). Then:

1. **The teacher publishes the course layer**: ``--notes`` course notes (a lab's folds, seed,
   held-out share, rows to drop, baseline; one fact each), ``hm.retain`` into the course bank
   from a session of its own, flushed, and indexed before class starts.
2. **The class works**: ``--students`` real IPython kernels (``jupyter_client``), started
   evenly over ``--start-window`` seconds, each a student with a home folder of its own (its
   data dir and journal), the same course folder name (``lab3``: the default scoping's project
   tag), a bank of its own (``HINDSIGHT_BANK_PREFIX``), the course bank as a layer
   (``HINDSIGHT_LAYERS``) and the key in ``HINDSIGHT_API_KEY``; every kernel (and the teacher)
   talks to the server through a counting proxy (``common.CountingProxy``). Each runs a
   generated lab notebook of ``--cells`` cells after ``%load_ext hindsight_magic``, cell by
   cell with its JupyterLab cell id, a short pause between cells: loading data, loops,
   aggregates, a line fit, an error, three ``%retain`` notes of its own, recalls timed inside
   the kernel (``time.perf_counter`` around ``hm.recall``: the course layer, its own bank,
   both), and a last cell that snapshots its bank (``hm.snapshot``) and flushes. Auto-retain is
   on with its defaults (every 3 cells). After the last cell the benchmark queues the cells
   since the last auto-retain (``%hindsight autoretain now``) and flushes once more (a cell
   kept out of the history, as Jupyter runs its own requests) and reads ``hm.status()``: what
   the extension says the server accepted. Then the kernel is asked to shut down and exits by
   itself (it is killed only after 60 s), and its journal is read: what it still holds.
3. **Indexing settles**: the time from the last kernel's end until no retain operation of any
   bank is pending or running; then every bank's documents are listed.

``--rounds`` runs the class again with the same notebooks in new kernels (the same cell ids):
an unchanged re-run must send nothing.

Per round: memories acknowledged (the document ids in the server's 2xx replies to ``POST
…/memories``, seen by the proxy; beside them the kernels' own ``accepted``), documents and
memories on the server; **lost** (an acknowledged document id, in any round so far, that the
bank does not hold) and **doubled** (documents beyond the first of one cell piece, by the
document id ``hm-cell-<notebook>-<cell>-<version>.<piece>``, or of one content hash: the
notebooks are deterministic, so a cell's second version is a copy); each student's recall
latency p50/p95, and by what is asked; the time until indexed; and the CPU seconds and peak
resident memory of the server's API process and of PostgreSQL over the round
(``growth_bank.CpuWatch``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import secrets
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hindsight_magic._delivery.indexing import READ_WAIT_S  # a read's wait for one's memories

from .common import (
    CountingProxy,
    Traffic,
    free_port,
    load_average,
    machine_line,
    percentile,
    progress,
    with_cell_id,
)
from .report import Row, Section, markdown_table, num

SECTION = "16"
PART = "classroom"
MARK = "CLASSROOM "  # the line a cell prints for the benchmark (printed output is not retained)
PROJECT = "lab3"  # every student's course folder: the default scoping's project tag
NOTEBOOK = "lab3.ipynb"
COURSE_BANK = "class-course"
DATASET = "air quality"
NAMESPACE = uuid.UUID("0c1a55e5-45a0-4c1a-9a55-45c1a55e5045")
RETAIN_OPERATIONS = ("retain", "batch_retain")  # what indexing a retained memory takes
CELL_TIMEOUT_S = 900.0  # a cell on a busy class server
EXIT_WAIT_S = 60.0  # a kernel asked to shut down is killed after this
INDEX_WAIT_S = 3600.0
PLANTED_ERROR = "KeyError"  # the lab's one cell that raises, on purpose
EXAMPLES = 10  # lost or doubled document ids kept in the figures, per bank


@dataclass(frozen=True)
class Classroom:
    """How big one run is."""

    students: int = 30
    cells: int = 40  # per lab notebook, after the load cell
    rounds: int = 2
    start_window_s: float = 60.0  # the kernels start evenly over this
    pause_s: float = 1.0  # between two cells of one kernel (±50 %, per student)
    notes: int = 40  # course notes in the course layer
    server_env: tuple[tuple[str, str], ...] = ()  # HINDSIGHT_API_* settings for the server


FULL = Classroom()
QUICK = Classroom(3, 10, 2, 5.0, 0.2, 10)


# -- the course and the lab ------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """A fact written down (a course note, or a student's ``%retain``), its question and the
    text that answers it."""

    text: str
    question: str
    answer: str


DATASETS = ("penguins", "housing", DATASET, "taxi trips", "bike rentals", "wine", "flights")


def course_notes(count: int) -> list[Fact]:
    """The teacher's notes: five per lab, each with a value no other note has."""
    notes = []
    for n in range(count):
        lab, kind = n // 5 + 1, n % 5
        data = DATASETS[(lab - 1) % len(DATASETS)]
        folds, drop, held, seed = lab + 2, 11 + 7 * lab, 10 + lab, 1000 + 37 * lab
        rmse = f"{3 + 0.37 * lab:.2f}"
        notes.append(
            (
                Fact(
                    f"Lab {lab} ({data}): use stratified {folds}-fold cross-validation; plain "
                    "folds leave some folds without the rare class.",
                    f"How many folds of cross-validation does lab {lab} ask for?",
                    f"{folds}-fold",
                ),
                Fact(
                    f"Lab {lab} ({data}): drop the {drop} rows whose timestamp is missing "
                    "before fitting anything.",
                    f"How many rows of the {data} data are dropped in lab {lab}?",
                    f"{drop} rows",
                ),
                Fact(
                    f"Lab {lab} ({data}): hold out {held} percent of the rows for testing and "
                    "report errors on them only.",
                    f"What share of the {data} data is held out for testing in lab {lab}?",
                    f"{held} percent",
                ),
                Fact(
                    f"Lab {lab} ({data}): use random seed {seed} everywhere, so that "
                    "everyone's split is the same.",
                    f"Which random seed must lab {lab} use?",
                    f"seed {seed}",
                ),
                Fact(
                    f"Lab {lab} ({data}): the mean predictor is the baseline to beat, "
                    f"at RMSE {rmse} on the held-out rows.",
                    f"What RMSE does the mean predictor get on {data} in lab {lab}?",
                    f"RMSE {rmse}",
                ),
            )[kind]
        )
    return notes


MODELS = ("ridge regression", "gradient boosting", "a random forest", "k nearest neighbours")


def own_notes(student: int) -> list[Fact]:
    """A student's three ``%retain`` notes, with values of their own."""
    rmse = f"{4 + 0.017 * student:.3f}"
    cut = 80 + student
    model = MODELS[student % len(MODELS)]
    return [
        Fact(
            f"My baseline on the {DATASET} data reached RMSE {rmse} with 3 features.",
            "What RMSE did my baseline reach?",
            f"RMSE {rmse}",
        ),
        Fact(
            f"I dropped the outliers of column x above {cut} before fitting the line.",
            "Above which value did I drop the outliers?",
            f"above {cut}",
        ),
        Fact(
            f"Decision: the final model for lab 3 is {model}, it beat the baseline by "
            f"{student % 7 + 2} points.",
            "Which final model did I decide on for lab 3?",
            model,
        ),
    ]


# What a lab holds besides its computing cells, in notebook order: (kind, which, priority). A
# lab of fewer cells keeps the ones of highest priority (lowest number); a recall of one's
# own note always comes after the note.
SPECIALS = (
    ("retain", 0, 1),
    ("course", 0, 2),
    ("retain", 1, 5),
    ("mine", 0, 3),
    ("course", 1, 6),
    ("error", 0, 8),
    ("both", 0, 4),
    ("retain", 2, 9),
    ("course", 2, 7),
    ("mine", 1, 10),
    ("both", 1, 11),
    ("course", 3, 12),
    ("mine", 2, 13),
)
MIN_CELLS = 5

LOAD = """\
# lab 3: load the {dataset} measurements (student {student:02d})
import json, math, os, random, statistics, time
import hindsight_magic as hm
GROUPS = ("north", "south", "east", "west")
rng = random.Random({seed})
rows = []
for i in range(2000):
    x = round(rng.gauss(50, 12), 2)
    y = round(3.1 * x + rng.gauss(0, 9), 2)
    rows.append({{"id": i, "group": rng.choice(GROUPS), "x": x, "y": y}})
len(rows)"""

COMPUTE = (
    """\
# step {j}: the mean of x per group
means_{j} = {{
    g: round(statistics.mean(r["x"] for r in rows if r["group"] == g), 3) for g in GROUPS
}}
means_{j}""",
    """\
# step {j}: which rows are above the cut
kept_{j} = []
for r in rows:
    if r["x"] > {cut}:
        kept_{j}.append(r["id"])
len(kept_{j})""",
    """\
# step {j}: a least-squares line through (x, y)
xs, ys = [r["x"] for r in rows], [r["y"] for r in rows]
mx, my = statistics.mean(xs), statistics.mean(ys)
slope_{j} = sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)
round(slope_{j}, 4), round(my - slope_{j} * mx, 4)""",
    """\
# step {j}: a histogram of x in bins of 10
bins_{j} = [0] * 10
for r in rows:
    bins_{j}[min(9, max(0, int(r["x"] // 10)))] += 1
bins_{j}""",
    """\
# step {j}: the mean predictor's RMSE on the last fifth
cut_{j} = int(len(rows) * 0.8)
mean_y = statistics.mean(r["y"] for r in rows[:cut_{j}])
rmse_{j} = math.sqrt(statistics.mean((r["y"] - mean_y) ** 2 for r in rows[cut_{j}:]))
round(rmse_{j}, 3)""",
    """\
# step {j}: z-scores of x
def zscores_{j}(values):
    mu, sd = statistics.mean(values), statistics.pstdev(values)
    return [(v - mu) / sd for v in values]
z_{j} = zscores_{j}([r["x"] for r in rows])
round(max(z_{j}), 3), round(min(z_{j}), 3)""",
    """\
# step {j}: a counting loop
total_{j} = 0
for i in range(30000):
    total_{j} += (i * {j}) % 7
total_{j}""",
    """\
# step {j}: the five largest y
top_{j} = sorted(rows, key=lambda r: r["y"], reverse=True)[:5]
[(r["id"], r["y"]) for r in top_{j}]""",
    """\
# step {j}: how x and y move together
round(statistics.correlation([r["x"] for r in rows], [r["y"] for r in rows]), 4)""",
    """\
# step {j}: a summary line for the report
low_{j}, high_{j} = min(r["x"] for r in rows), max(r["x"] for r in rows)
summary_{j} = f"{{len(rows)}} rows, {{len(GROUPS)}} groups, x from {{low_{j}}} to {{high_{j}}}"
print(summary_{j})
summary_{j}""",
)

RECALL = """\
# {comment}: {question}
_t = time.perf_counter()
try:
    _texts = [m.text for m in hm.recall({question!r}{layer})][:5]
    _problem = None
except Exception as _e:
    _texts, _problem = [], f"{{type(_e).__name__}}: {{_e}}"[:300]
_ms = (time.perf_counter() - _t) * 1000
_found = any({answer!r} in _x for _x in _texts)
_line = {{"kind": "recall", "layer": {which!r}, "ms": _ms, "found": _found, "problem": _problem}}
print({mark!r} + json.dumps(_line))"""

ERROR = """\
# step {j}: the species column, as in the lecture
rows[0]["species"]"""

HAND_IN = """\
# hand in: a snapshot of my memory, and everything sent
os.makedirs("snapshots", exist_ok=True)
_t = time.perf_counter()
try:
    hm.snapshot("snapshots/{name}.zip", replace=True)
    _problem = None
except Exception as _e:
    _problem = f"{{type(_e).__name__}}: {{_e}}"[:300]
_snapshot_ms = (time.perf_counter() - _t) * 1000
_flushed = hm.flush(120)
_size = os.path.getsize("snapshots/{name}.zip") if os.path.exists("snapshots/{name}.zip") else 0
_line = {{"kind": "snapshot", "ms": _snapshot_ms, "bytes": _size, "problem": _problem}}
print({mark!r} + json.dumps(_line))"""

# run after the last cell, kept out of the history (auto-retain skips it): the cells since the
# last auto-retain queued and everything sent (else the kernel's exit sends them, or leaves them
# to the student's next kernel), and what the extension says it sent
CLOSING = """\
import json as _json, hindsight_magic as _hm
get_ipython().run_line_magic("hindsight", "autoretain now")
_hm.flush(120)
_report = _hm.status(check_server=False)
_rows = {{f"{{h}}.{{k}}": v for h, rows in _report.sections for k, v in rows}}
print({mark!r} + _json.dumps({{"kind": "end", "status": _rows}}))"""

RECALL_NAMES = {"course": "the course layer", "mine": "one's own bank", "both": "both"}
RECALL_WAYS = {  # kind → (the layer argument, what the comment says)
    "course": (', layer="course"', "what the course notes say"),
    "mine": (', layer="mine"', "what did I note"),
    "both": ("", "ask everything I read"),
}


@dataclass(frozen=True)
class Lab:
    """One student's lab notebook: the cells after the load cell, and the recalls' facts."""

    student: int
    cells: tuple[str, ...]
    recalls: int
    retains: int


def lab_notebook(student: int, cells: int, notes: Sequence[Fact]) -> Lab:
    """The lab of ``student``: ``cells`` cells (a load cell first, the hand-in last), its
    specials spread evenly among the computing cells. The same arguments give the same
    notebook: a re-run is unchanged."""
    if cells < MIN_CELLS:
        raise ValueError(f"a lab has at least {MIN_CELLS} cells")
    slots = cells - 2
    keep = min(len(SPECIALS), math.ceil(slots / 3))
    wanted = sorted(SPECIALS, key=lambda s: s[2])[:keep]
    chosen = [s for s in SPECIALS if s in wanted]
    places = {int((n + 0.5) * slots / len(chosen)): s for n, s in enumerate(chosen)}
    own = own_notes(student)
    source = [LOAD.format(dataset=DATASET, student=student, seed=1000 + student)]
    for slot in range(slots):
        j = slot + 2  # the cell's number in the notebook (the load cell of the extension is 0)
        special = places.get(slot)
        if special is None:
            template = COMPUTE[(slot + student) % len(COMPUTE)]
            source.append(template.format(j=j, cut=40 + (j * 7 + student) % 30))
            continue
        kind, which, _ = special
        if kind == "retain":
            source.append(f"%retain {own[which].text}")
        elif kind == "error":
            source.append(ERROR.format(j=j))
        else:
            if kind == "mine":
                fact = own[which]
            else:
                fact = notes[(student * 3 + which * 7 + (kind == "both")) % len(notes)]
            layer, comment = RECALL_WAYS[kind]
            source.append(
                RECALL.format(
                    comment=comment,
                    question=fact.question,
                    layer=layer,
                    mark=MARK,
                    which=kind,
                    answer=fact.answer,
                )
            )
    source.append(HAND_IN.format(name=f"student-{student:02d}", mark=MARK))
    recalls = sum(1 for kind, _, _ in chosen if kind in RECALL_WAYS)
    retains = sum(1 for kind, _, _ in chosen if kind == "retain")
    return Lab(student, tuple(source), recalls, retains)


def cell_ids(student: int, count: int) -> list[str]:
    """The ids JupyterLab would give a student's cells (the load cell first), the same in
    every round."""
    return [str(uuid.uuid5(NAMESPACE, f"s{student}/{NOTEBOOK}#{n}")) for n in range(count)]


# -- counting a bank -------------------------------------------------------------------------


def tally(documents: Sequence[dict[str, Any]], acknowledged: set[str]) -> dict[str, Any]:
    """What a bank holds against the document ids the server acknowledged for it: ``lost``
    counts the acknowledged ids it does not hold; ``doubled`` the documents beyond the first
    (oldest) of one cell piece (the key and piece of a notebook document id, any version:
    these notebooks never change, so a second version is a copy) or of one content hash."""
    from hindsight_magic._capture.identity import notebook_document

    by_piece: dict[tuple[str, int], list[str]] = defaultdict(list)
    by_content: dict[str, list[str]] = defaultdict(list)
    ordered = sorted(documents, key=lambda d: (str(d.get("created_at") or ""), str(d.get("id"))))
    for document in ordered:
        doc_id = str(document.get("id"))
        parsed = notebook_document(doc_id)
        if parsed is not None:
            by_piece[(parsed.key, parsed.piece)].append(doc_id)
        if document.get("content_hash"):
            by_content[str(document["content_hash"])].append(doc_id)
    extra = {doc for group in (*by_piece.values(), *by_content.values()) for doc in group[1:]}
    held = {str(document.get("id")) for document in documents}
    return {
        "documents": len(documents),
        "acknowledged": len(acknowledged),
        "doubled": len(extra),
        "lost": len(acknowledged - held),
        "lost ids": sorted(acknowledged - held)[:EXAMPLES],
        "doubled ids": sorted(extra)[:EXAMPLES],
        "empty": sum(1 for d in documents if not int(d.get("memory_unit_count") or 0)),
    }


def list_documents(http: Any, bank: str) -> list[dict[str, Any]]:
    """Every document of ``bank`` (paged)."""
    documents: list[dict[str, Any]] = []
    while True:
        page = http.get(
            f"/v1/default/banks/{bank}/documents", params={"limit": 500, "offset": len(documents)}
        )
        page.raise_for_status()
        items = page.json().get("items") or []
        documents += items
        if not items or len(documents) >= int(page.json().get("total") or 0):
            return documents


def retain_operations(http: Any, bank: str, statuses: Sequence[str]) -> int:
    """The bank's retain operations in ``statuses`` (first page of each: enough to tell
    whether any is left)."""
    count = 0
    for status in statuses:
        listed = http.get(
            f"/v1/default/banks/{bank}/operations", params={"status": status, "limit": 100}
        ).json()
        count += sum(
            1
            for op in listed.get("operations", [])
            if op.get("operation_type") in RETAIN_OPERATIONS
        )
    return count


def wait_indexed(http: Any, banks: Sequence[str], timeout_s: float = INDEX_WAIT_S) -> float | None:
    """Seconds until no bank of ``banks`` has a retain operation pending or running (None:
    still busy after ``timeout_s``)."""
    started = time.monotonic()
    busy = list(banks)
    while True:
        busy = [bank for bank in busy if retain_operations(http, bank, ("pending", "processing"))]
        if not busy:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            return None
        time.sleep(1.0)


def status_counts(rows: dict[str, str]) -> dict[str, Any]:
    """The counters of a ``hm.status()`` report (its rows as ``Section.label: value``): the
    number each row starts with."""

    def first(label: str) -> int:
        text = rows.get(label, "").split(" ", 1)[0]
        return int(text) if text.isdigit() else 0

    return {
        "accepted": first("Queue.accepted"),
        "pending": first("Queue.pending"),
        "in flight": first("Queue.in flight"),
        "retrying": first("Queue.retrying"),
        "failed": first("Queue.failed"),
        "not resent": first("Queue.not resent"),
        "cells retained": first("Auto-retain.cells retained"),
        "cells unchanged": first("Auto-retain.cells unchanged"),
        "bank": rows.get("Scope.bank", ""),
    }


# -- the server ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    """The keyed server of one run."""

    url: str
    key: str
    data_dir: Path
    llm: str

    def client(self, key: str | None = None) -> Any:
        """An ``httpx.Client`` sending ``key`` (default: the server's)."""
        import httpx

        headers = {"Authorization": f"Bearer {key or self.key}"} if key != "" else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120, trust_env=False)


@contextlib.contextmanager
def keyed_server(server_env: Sequence[tuple[str, str]] = ()) -> Iterator[Server]:
    """A local server started now with a fresh API key, in a temporary data dir that is
    purged (PostgreSQL's data too) when the block ends, however it ends."""
    from hindsight_magic._localserver import launcher

    key = secrets.token_urlsafe(24)
    data_dir = Path(tempfile.mkdtemp(prefix="bench-classroom-"))
    try:
        progress("starting a local Hindsight server with an API key …", PART)
        info = launcher.start(
            port=free_port(), data_dir=data_dir, api_key=key, wait_s=600, extra_env=dict(server_env)
        )
        yield Server(info.url, key, data_dir, info.llm_provider)
    finally:
        progress("purging the server and its data …", PART)
        launcher.discard(data_dir)


def key_check(server: Server) -> dict[str, int]:
    """The status codes of a bank listing without a key, with a wrong one, and with the key."""
    codes = {}
    for name, key in (("no key", ""), ("wrong key", "not-the-key"), ("the key", None)):
        with server.client(key) as http:
            codes[name] = http.get("/v1/default/banks").status_code
    return codes


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """This process's ``HINDSIGHT_*`` settings replaced by ``values`` while the block runs."""
    saved = dict(os.environ)
    for name in [name for name in os.environ if name.startswith("HINDSIGHT_")]:
        del os.environ[name]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def publish_course(
    server: Server, proxy: CountingProxy, folder: Path, notes: Sequence[Fact]
) -> dict[str, Any]:
    """The teacher retains the course notes into the course bank (``hm.retain`` from a
    session of its own, through the counting proxy, flushed) and waits until they are
    indexed."""
    import hindsight_magic as hm

    folder.mkdir(parents=True)
    before = proxy.traffic()
    settings = {
        "HINDSIGHT_API_URL": proxy.url,
        "HINDSIGHT_API_KEY": server.key,
        "HINDSIGHT_BANK_ID": COURSE_BANK,
        "HINDSIGHT_SCOPING": "global",
        "HINDSIGHT_MAGIC_DATA_DIR": str(folder / "data"),
        "HINDSIGHT_AUTO_RETAIN": "false",
    }
    started = time.monotonic()
    with environment(settings):
        session = hm.project_session(folder)
        try:
            for note in notes:
                hm.retain(note.text, session=session)
            hm.flush(120, session=session)
            report = hm.status(check_server=False, session=session)
        finally:
            session.close(30)
    sent = time.monotonic() - started
    counts = status_counts({f"{h}.{k}": v for h, rows in report.sections for k, v in rows})
    acknowledged = acknowledged_ids(proxy.traffic() - before).get(COURSE_BANK, set())
    with server.client() as http:
        indexed = wait_indexed(http, [COURSE_BANK])
        held = tally(list_documents(http, COURSE_BANK), acknowledged)
    return {"notes": len(notes), "sent_s": sent, "indexed_s": indexed, **counts, **held}


def acknowledged_ids(traffic: Traffic) -> dict[str, set[str]]:
    """The document ids the server acknowledged, per bank (an item without one under
    ``""``: it could not be looked for)."""
    found: dict[str, set[str]] = defaultdict(set)
    for bank, document_id in traffic.acknowledged:
        found[bank].add(document_id or f"(no id: {len(found[bank])})")
    return dict(found)


# -- a student's kernel ----------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Everything one run's kernels need."""

    server: Server
    url: str  # what the kernels talk to: the server through the counting proxy
    folder: Path
    size: Classroom
    notes: tuple[Fact, ...]

    def home(self, student: int) -> Path:
        return self.folder / f"student-{student:02d}"

    def env(self, student: int) -> dict[str, str]:
        """The kernel's environment: the user's, without their ``HINDSIGHT_*`` settings, and
        the student's."""
        home = self.home(student)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("HINDSIGHT_") and k != "JPY_SESSION_NAME"
        }
        env.update(
            HINDSIGHT_API_URL=self.url,
            HINDSIGHT_API_KEY=self.server.key,
            HINDSIGHT_BANK_PREFIX=f"class-s{student:02d}",
            HINDSIGHT_LAYERS=f"course={COURSE_BANK}",
            HINDSIGHT_MAGIC_DATA_DIR=str(home / "data"),
            JPY_SESSION_NAME=str(home / PROJECT / NOTEBOOK),
        )
        return env


async def _execute(
    client: Any, source: str, cell_id: str | None
) -> tuple[list[dict[str, Any]], str]:
    """Run one cell; the JSON lines it printed for the benchmark, and its error (``Type:
    message``, or "")."""
    lines: list[dict[str, Any]] = []
    error: list[str] = []
    text: list[str] = []

    def keep(msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            text.append(content.get("text", ""))
        elif kind == "error":
            error.append(f"{content.get('ename')}: {content.get('evalue')}")

    make = client.session.msg
    if cell_id is not None:
        client.session.msg = with_cell_id(make, cell_id)
    try:
        await client.execute_interactive(
            source, store_history=cell_id is not None, timeout=CELL_TIMEOUT_S, output_hook=keep
        )
    finally:
        client.session.msg = make
    for line in "".join(text).splitlines():
        if line.startswith(MARK):
            with contextlib.suppress(ValueError):
                lines.append(json.loads(line[len(MARK) :]))
    return lines, error[0] if error else ""


def left_in_journal(data_dir: Path) -> int:
    """Memories a student's journal still holds (any state: not accepted by the server), and
    spool files not taken in, once the kernel is gone."""
    from hindsight_magic._delivery.journal_file import JOURNAL_FILE, journal_counts

    journal = data_dir / JOURNAL_FILE
    spools = [p for p in data_dir.glob(f"{JOURNAL_FILE}.spool-*") if p.stat().st_size]
    return (sum(journal_counts(journal).values()) if journal.exists() else 0) + len(spools)


def _rss_mb(pid: int | None) -> float:
    import psutil

    with contextlib.suppress(psutil.Error, TypeError):
        return float(psutil.Process(pid).memory_info().rss) / 1e6
    return 0.0


async def run_student(plan: Plan, student: int, round_no: int, epoch: float) -> dict[str, Any]:
    """One student's kernel in one round: started after its offset, its lab run cell by cell,
    the closing flush and status, a polite shutdown. Never raises: what broke is recorded."""
    from jupyter_client.manager import AsyncKernelManager

    size = plan.size
    lab = lab_notebook(student, size.cells, plan.notes)
    sources = ["%load_ext hindsight_magic", *lab.cells]
    ids = cell_ids(student, len(sources))
    project = plan.home(student) / PROJECT
    project.mkdir(parents=True, exist_ok=True)
    pick = random.Random(student * 100 + round_no)
    result: dict[str, Any] = {
        "student": student,
        "offset_s": (student - 1) * size.start_window_s / size.students,
        "recalls": [],
        "unexpected_errors": [],
        "cells_run": 0,
        "clean_exit": False,
        "failure": None,
    }
    await asyncio.sleep(result["offset_s"])
    result["start_s"] = time.monotonic() - epoch
    manager = AsyncKernelManager(kernel_name="python3")
    client = None
    try:
        await manager.start_kernel(env=plan.env(student), cwd=str(project))
        client = manager.client()
        client.start_channels()
        await client.wait_for_ready(timeout=600)
        result["ready_s"] = time.monotonic() - epoch
        for number, source in enumerate(sources):
            lines, error = await _execute(client, source, ids[number])
            result["cells_run"] += 1
            if error and not error.startswith(PLANTED_ERROR):
                result["unexpected_errors"].append(f"cell {number}: {error}"[:300])
            for line in lines:
                if line.get("kind") == "recall":
                    result["recalls"].append(line)
                elif line.get("kind") == "snapshot":
                    result["snapshot"] = line
            if number and size.pause_s:
                await asyncio.sleep(size.pause_s * pick.uniform(0.5, 1.5))
        lines, error = await _execute(client, CLOSING.format(mark=MARK), None)
        ended = [line for line in lines if line.get("kind") == "end"]
        if error or not ended:
            raise RuntimeError(f"the closing flush failed: {error or 'no status printed'}")
        result["status"] = status_counts(ended[0]["status"])
        result["kernel_rss_mb"] = _rss_mb(getattr(manager.provisioner, "pid", None))
        client.shutdown()
        deadline = time.monotonic() + EXIT_WAIT_S
        while await manager.is_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        result["clean_exit"] = not await manager.is_alive()
        result["left_in_journal"] = left_in_journal(plan.home(student) / "data")
    except Exception as exc:  # one broken kernel is a figure, not the end of the class
        result["failure"] = f"{type(exc).__name__}: {exc}"[:500]
        progress(f"round {round_no}, student {student}: {result['failure']}", PART)
    finally:
        if client is not None:
            client.stop_channels()
        with contextlib.suppress(Exception):
            await manager.shutdown_kernel(now=True)
        result["end_s"] = time.monotonic() - epoch
    return result


async def _class(plan: Plan, round_no: int) -> list[dict[str, Any]]:
    epoch = time.monotonic()
    students = range(1, plan.size.students + 1)
    return list(await asyncio.gather(*(run_student(plan, s, round_no, epoch) for s in students)))


# -- one round, and the run ------------------------------------------------------------------


def run_round(
    plan: Plan, proxy: CountingProxy, round_no: int, acknowledged: dict[str, set[str]]
) -> dict[str, Any]:
    """The class runs once; indexing settles; every bank is counted. ``acknowledged`` (the
    document ids the server acknowledged per bank, over the rounds so far) is updated."""
    from .growth_bank import CpuWatch, server_processes
    from .growth_bank import indexed as memories_held

    size = plan.size
    progress(f"round {round_no}: {size.students} kernels, {size.cells} cells each …", PART)
    load_before = load_average()
    started = time.monotonic()
    before = proxy.traffic()
    with CpuWatch(server_processes(plan.server.data_dir)) as watch:
        students = asyncio.run(_class(plan, round_no))
        class_s = time.monotonic() - started
        progress(f"round {round_no}: the class ended after {class_s:.0f} s; indexing …", PART)
        banks = sorted({s["status"]["bank"] for s in students if s.get("status")})
        with plan.server.client() as http:
            indexed = wait_indexed(http, banks)
        time.sleep(watch.interval_s + 0.5)  # a last sample of the CPU after the indexing
    wall = time.monotonic() - started
    sent = proxy.traffic() - before
    this_round = acknowledged_ids(sent)
    for bank, ids in this_round.items():
        acknowledged.setdefault(bank, set()).update(ids)
    counted = {}
    with plan.server.client() as http:
        for bank in banks:
            counted[bank] = {
                **tally(list_documents(http, bank), acknowledged.get(bank, set())),
                "acknowledged this round": len(this_round.get(bank, ())),
                "items acknowledged this round": sum(1 for b, _ in sent.acknowledged if b == bank),
                "memories": memories_held(http, bank),
                "failed operations": retain_operations(http, bank, ("failed",)),
            }
    return {
        "round": round_no,
        "students": students,
        "banks": counted,
        "class_s": class_s,
        "indexed_s": indexed,
        "wall_s": wall,
        "cpu_s": watch.used,
        "cores": watch.cores(),
        "peak_rss_mb": watch.peak_rss_mb,
        "load_before": load_before,
        "load_after": load_average(),
    }


def measure(size: Classroom) -> dict[str, Any]:
    """The whole run on a server of its own; JSON-able figures (never the key)."""
    figures: dict[str, Any] = {
        "size": {
            "students": size.students,
            "cells": size.cells,
            "rounds": size.rounds,
            "start_window_s": size.start_window_s,
            "pause_s": size.pause_s,
            "notes": size.notes,
            "server_env": dict(size.server_env),
        },
        "load_before": load_average(),
        "machine": machine_line(),
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": [],
    }
    notes = tuple(course_notes(size.notes))
    with (
        keyed_server(size.server_env) as server,
        tempfile.TemporaryDirectory(prefix="bench-classroom-homes-") as tmp,
        CountingProxy(server.url) as proxy,
    ):
        figures["llm"] = server.llm
        figures["key_check"] = key_check(server)
        plan = Plan(server, proxy.url, Path(tmp), size, notes)
        progress(f"the teacher publishes {len(notes)} course notes …", PART)
        figures["course"] = publish_course(server, proxy, Path(tmp) / "teacher", notes)
        acknowledged: dict[str, set[str]] = {}
        for round_no in range(1, size.rounds + 1):
            figures["rounds"].append(run_round(plan, proxy, round_no, acknowledged))
    figures["load_after"] = load_average()
    return figures


# -- the figures -----------------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{num(value / 1000)} s" if value >= 10_000 else f"{num(value)} ms"


def _s(value: float | None) -> str:
    return "not within the wait" if value is None else f"{num(value)} s"


def student_latency(student: dict[str, Any]) -> tuple[float, float] | None:
    """(p50, p95) of one student's recalls in one round (ms), or None without any."""
    times = [r["ms"] for r in student["recalls"] if not r.get("problem")]
    return (percentile(times, 50), percentile(times, 95)) if times else None


def round_summary(got: dict[str, Any]) -> dict[str, Any]:
    """The class's figures of one round."""
    students = got["students"]
    banks = got["banks"].values()
    recalls = [r for s in students for r in s["recalls"]]
    good = [r["ms"] for r in recalls if not r.get("problem")]
    latencies = [lat for s in students if (lat := student_latency(s)) is not None]
    statuses = [s["status"] for s in students if s.get("status")]
    found = {
        kind: (sum(1 for r in recalls if r["layer"] == kind and r["found"]), len(kind_recalls))
        for kind in RECALL_WAYS
        if (kind_recalls := [r for r in recalls if r["layer"] == kind])
    }
    snapshots = [s["snapshot"] for s in students if s.get("snapshot")]
    ready = [s["ready_s"] for s in students if "ready_s" in s]
    return {
        "students": len(students),
        "complete": sum(1 for s in students if not s["failure"]),
        "clean_exit": sum(1 for s in students if s["clean_exit"]),
        "failures": [f"student {s['student']}: {s['failure']}" for s in students if s["failure"]],
        "unexpected_errors": [
            f"student {s['student']}: {e}" for s in students for e in s["unexpected_errors"]
        ],
        "first_start_s": min(s["start_s"] for s in students),
        "last_ready_s": max(ready) if ready else None,
        "accepted": sum(st["accepted"] for st in statuses),
        "acknowledged": sum(b["acknowledged this round"] for b in banks),
        "acknowledged_items": sum(b["items acknowledged this round"] for b in banks),
        "not_resent": sum(st["not resent"] for st in statuses),
        "unchanged": sum(st["cells unchanged"] for st in statuses),
        "left_unsent": sum(st["pending"] + st["retrying"] + st["failed"] for st in statuses),
        "left_in_journals": sum(s.get("left_in_journal", 0) for s in students),
        "documents": sum(b["documents"] for b in banks),
        "memories": sum(b["memories"] for b in banks),
        "lost": sum(b["lost"] for b in banks),
        "doubled": sum(b["doubled"] for b in banks),
        "empty": sum(b["empty"] for b in banks),
        "failed_operations": sum(b["failed operations"] for b in banks),
        "banks": len(got["banks"]),
        "recalls": len(recalls),
        "recall_problems": sum(1 for r in recalls if r.get("problem")),
        "recall_p50_ms": percentile(good, 50) if good else None,
        "recall_p95_ms": percentile(good, 95) if good else None,
        "student_p50_ms": [p50 for p50, _ in latencies],
        "student_p95_ms": [p95 for _, p95 in latencies],
        "found": found,
        "by_kind": {
            kind: (
                statistics.median(times),
                percentile(times, 90),
                sum(1 for r in recalls if r["layer"] == kind and r["found"]),
                len(times),
            )
            for kind in RECALL_WAYS
            if (times := [r["ms"] for r in recalls if r["layer"] == kind])
        },
        "waited_out": sum(
            1 for r in recalls if r["layer"] == "mine" and r["ms"] >= READ_WAIT_S * 1000
        ),
        "snapshot_ms": [s["ms"] for s in snapshots if not s.get("problem")],
        "snapshot_problems": sum(1 for s in snapshots if s.get("problem")),
        "kernel_rss_mb": [s["kernel_rss_mb"] for s in students if s.get("kernel_rss_mb")],
    }


def _spread(values: Sequence[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def rows(figures: dict[str, Any]) -> Section:
    """Section 16 of BENCHMARKS.md: the course layer, then each round's delivery (lost and
    doubled, with their bars), recall latency per student, indexing and the server's cost."""
    size = figures["size"]
    table: list[Row] = []

    def row(what: str, value: str, *spread: str, **kw: Any) -> None:
        table.append(Row(SECTION, what, value, *spread, **kw))

    codes = figures["key_check"]
    row(
        "the class's server started with an API key: a bank listing without a key / with a "
        "wrong key / with the key (HTTP status)",
        f"{codes['no key']} / {codes['wrong key']} / {codes['the key']}",
        bar="401 / 401 / 200",
        passed=(codes["no key"], codes["wrong key"], codes["the key"]) == (401, 401, 200),
    )
    course = figures["course"]
    row(
        f"the teacher publishes the course layer: {course['notes']} notes by `hm.retain` into "
        f"the course bank, acknowledged {course['accepted']}, documents on the server "
        f"{course['documents']}; sent in {num(course['sent_s'])} s, indexed "
        f"{_s(course['indexed_s'])} later",
        f"{course['lost']} lost, {course['doubled']} doubled",
        bar="0 lost, 0 doubled",
        passed=course["lost"] == 0 and course["doubled"] == 0,
    )
    students, cells = size["students"], size["cells"]
    for got in figures["rounds"]:
        r = got["round"]
        sm = round_summary(got)
        label = f"round {r} of {len(figures['rounds'])}"
        again = " (the same notebooks again, in new kernels)" if r > 1 else ""
        row(
            f"{label}{again}: {students} kernels started evenly over "
            f"{num(size['start_window_s'])} s, each a {cells}-cell lab with auto-retain on "
            f"(every 3 cells), {num(size['pause_s'])} s between cells: kernels that ran every "
            "cell, closed without being killed; the last one ready after (s)",
            f"{sm['complete']} of {students}; {sm['clean_exit']} of {students}; "
            + (f"{num(sm['last_ready_s'])} s" if sm["last_ready_s"] is not None else "none"),
        )
        row(
            f"{label}: memories the server acknowledged to the kernels (distinct document ids "
            f"in its 2xx replies to `POST …/memories`; items {num(sm['acknowledged_items'])}; "
            f"what the extensions say, `hm.status()` accepted: {num(sm['accepted'])}; cells "
            f"run again unchanged {num(sm['unchanged'])}, `%retain` lines not resent "
            f"{num(sm['not_resent'])}, left unsent {num(sm['left_unsent'])}; left in the "
            f"students' journals once their kernels were gone {num(sm['left_in_journals'])})",
            num(sm["acknowledged"]),
        )
        row(
            f"{label}: documents on the server in the {sm['banks']} students' banks once "
            f"indexed (memories {num(sm['memories'])}; documents holding no memory "
            f"{num(sm['empty'])}; failed retain operations {num(sm['failed_operations'])})",
            num(sm["documents"]),
        )
        row(
            f"{label}: memories lost (acknowledged in the rounds so far, not stored)",
            num(sm["lost"]),
            bar="0",
            passed=sm["lost"] == 0 and sm["complete"] == students,
        )
        row(
            f"{label}: memories doubled (a cell piece stored under a second version or a "
            "content stored twice)",
            num(sm["doubled"]),
            bar="0",
            passed=sm["doubled"] == 0 and sm["complete"] == students,
        )
        p95s, p50s = sm["student_p95_ms"], sm["student_p50_ms"]
        per_student = sm["recalls"] // max(1, students)
        if p95s:
            for name, values in (("p95", p95s), ("p50", p50s)):
                mid, low, high = _spread(values)
                row(
                    f"{label}: each student's `hm.recall` latency {name} while the class works "
                    f"({per_student} recalls each, timed in the kernel; across the students)",
                    _ms(mid),
                    _ms(low),
                    _ms(high),
                    str(len(values)),
                )
            found = "; ".join(
                f"{kind} {hit} of {asked}" for kind, (hit, asked) in sorted(sm["found"].items())
            )
            row(
                f"{label}: every recall of the class: p50 (p95 {_ms(sm['recall_p95_ms'])}); "
                f"answer in the top 5: {found}; recalls that failed {sm['recall_problems']}",
                _ms(sm["recall_p50_ms"]),
                n=str(sm["recalls"] - sm["recall_problems"]),
            )
            kinds = "; ".join(
                f"{RECALL_NAMES[kind]} {_ms(mid)} ({_ms(p90)}, {hit} of {asked} found)"
                for kind, (mid, p90, hit, asked) in sm["by_kind"].items()
            )
            row(
                f"{label}: recall latency median (p90) by what is asked: {kinds}; recalls of "
                f"one's own note that waited the read's whole bound ({num(READ_WAIT_S)} s: the "
                "note sent, not yet indexed) / all of them",
                f"{sm['waited_out']} / {sm['found'].get('mine', (0, 0))[1]}",
            )
        if sm["snapshot_ms"]:
            mid, low, high = _spread(sm["snapshot_ms"])
            row(
                f"{label}: `hm.snapshot(path)` of a student's bank in the last cell (failed: "
                f"{sm['snapshot_problems']})",
                _ms(mid),
                _ms(low),
                _ms(high),
                str(len(sm["snapshot_ms"])),
            )
        row(
            f"{label}: from the last kernel's end until the server had indexed everything "
            f"(the class itself took {num(got['class_s'])} s)",
            _s(got["indexed_s"]),
        )
        cpu, cores, rss = got["cpu_s"], got["cores"], got["peak_rss_mb"]
        row(
            f"{label}: CPU seconds over the round ({num(got['wall_s'])} s): the server's API "
            f"process / PostgreSQL / the whole machine ({cores.get('whole machine', 0):.2f} of 2 "
            "cores busy on average)",
            f"{num(cpu.get('hindsight-api', 0))} / {num(cpu.get('PostgreSQL', 0))} / "
            f"{num(cpu.get('whole machine', 0))}",
        )
        kernel_rss = sm["kernel_rss_mb"]
        row(
            f"{label}: peak resident memory (MB): the server's API process / PostgreSQL (summed "
            "over its processes, shared buffers counted in each)"
            + (
                f"; a student's kernel at the end, median {num(statistics.median(kernel_rss))} MB"
                if kernel_rss
                else ""
            ),
            f"{num(rss.get('hindsight-api', 0))} / {num(rss.get('PostgreSQL', 0))}",
        )
    notes = [note(figures)]
    for got in figures["rounds"]:
        sm = round_summary(got)
        if sm["student_p95_ms"]:
            listed = ", ".join(num(v / 1000) for v in sm["student_p95_ms"])
            notes.append(
                f"{SECTION}: round {got['round']}, each student's recall p95 (s), student 1 "
                f"to {len(sm['student_p95_ms'])}: {listed}"
            )
        broke = sm["failures"] + sm["unexpected_errors"]
        if broke:
            notes.append(f"{SECTION}: round {got['round']}, what broke: " + "; ".join(broke[:10]))
    return table, notes


def note(figures: dict[str, Any]) -> str:
    size = figures["size"]
    return (
        f"{SECTION}: `python -m bench.classroom` (a class on one server): a local server "
        "started for the run with an API key (the launcher's `api_key`: Hindsight's "
        "`ApiKeyTenantExtension`) and its default settings (one API process with its worker "
        f"inside, LLM `{figures.get('llm', '?')}`), purged afterwards. The teacher retains "
        f"{size['notes']} course notes into the course bank; then {size['students']} real "
        f"IPython kernels start evenly over {num(size['start_window_s'])} s, each a student with "
        "its own home folder, journal and bank (`HINDSIGHT_BANK_PREFIX`), the course bank as a "
        "layer (`HINDSIGHT_LAYERS`), the key in `HINDSIGHT_API_KEY`, and runs a generated "
        f"{size['cells']}-cell lab (data, loops, a line fit, an error, three `%retain` notes, "
        "recalls of the course layer, of its own bank and of both, each timed in the kernel; "
        "`hm.snapshot` and `hm.flush` last) cell by cell with JupyterLab's cell ids and the "
        "defaults (auto-retain every 3 cells, mental models on). Every kernel talks to the server "
        "through a counting proxy (its hop is inside every recall timed): acknowledged are the "
        "document ids in the server's 2xx replies to `POST …/memories`, beside each kernel's "
        "`hm.status()` after a closing `%hindsight autoretain now` and flush. On the server: "
        "every bank's documents, once no retain operation is pending. Lost: an acknowledged id "
        "the bank does not hold; doubled: documents beyond the first of a cell piece (the "
        "notebooks never change, so a second version is a copy) or of a content hash. Rounds "
        "after the first re-run the same notebooks in new kernels. CPU and memory: the server's "
        "API process and PostgreSQL's processes, sampled every 2 s; the whole machine's CPU "
        "includes the kernels and the other work on it. A recall of one's own note fresh from "
        f"`%retain` first waits (at most {num(READ_WAIT_S)} s, the read's bound) until the "
        "server has indexed it: sent asynchronously like the class's auto-retained cells, it is "
        "indexed by the server's one worker in its turn among them. Load average (1 min) at the "
        "start and "
        f"end: {figures['load_before']} and {figures['load_after']}."
    )


def student_table(figures: dict[str, Any]) -> str:
    """One line per student and round: what ``python -m bench.classroom`` prints first."""
    lines = [
        "| round | student | ready (s) | cells | recalls | p50 | p95 | acknowledged | "
        "documents | lost | doubled | closed | problem |",
        "|" + "---|" * 13,
    ]
    for got in figures["rounds"]:
        for s in got["students"]:
            lat = student_latency(s)
            status = s.get("status") or {}
            bank = got["banks"].get(status.get("bank", ""), {})
            lines.append(
                "| "
                + " | ".join(
                    [
                        str(got["round"]),
                        str(s["student"]),
                        num(s["ready_s"]) if "ready_s" in s else "-",
                        str(s["cells_run"]),
                        str(len(s["recalls"])),
                        _ms(lat[0]) if lat else "-",
                        _ms(lat[1]) if lat else "-",
                        str(status.get("accepted", "-")),
                        str(bank.get("documents", "-")),
                        str(bank.get("lost", "-")),
                        str(bank.get("doubled", "-")),
                        "yes" if s["clean_exit"] else "no",
                        (s["failure"] or "; ".join(s["unexpected_errors"]) or "").replace("|", "/"),
                    ]
                )
                + " |"
            )
    return "\n".join(lines)


def merged_into(previous: str, figures: dict[str, Any], table: list[Row], notes: list[str]) -> str:
    """A BENCHMARKS.md with this section replaced by these rows and notes, and a header line
    saying when and where they were measured."""
    from .report import merged

    size = figures["size"]
    line = (
        f"section {SECTION} (a class on one server) measured by `python -m bench.classroom "
        f"--students {size['students']} --cells {size['cells']} --rounds {size['rounds']}` on "
        f"{figures['started']} and merged: {figures['machine']}; load average (1 min) "
        f"{figures['load_before']} at the start, {figures['load_after']} at the end — the two "
        "cores were shared with other work throughout"
    )
    return merged(previous, table, notes, {SECTION}, line)


# -- the command -----------------------------------------------------------------------------


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.startswith("HINDSIGHT_API_"):
        raise argparse.ArgumentTypeError("give HINDSIGHT_API_NAME=VALUE (a server setting)")
    return name, value


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"give a whole number of at least {low}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"give a whole number of at least {low}")
        return value

    return parse


def _stop_on_term() -> None:
    """SIGTERM ends the run like Ctrl-C: the kernels and the server are cleaned up."""

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.classroom", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--students", type=_at_least(1), default=FULL.students)
    parser.add_argument("--cells", type=_at_least(MIN_CELLS), default=FULL.cells)
    parser.add_argument("--rounds", type=_at_least(1), default=FULL.rounds)
    parser.add_argument("--notes", type=_at_least(1), default=FULL.notes, help="course notes")
    parser.add_argument(
        "--start-window", type=float, default=FULL.start_window_s, help="kernels start over (s)"
    )
    parser.add_argument("--pause", type=float, default=FULL.pause_s, help="between cells (s)")
    parser.add_argument(
        "--server-env",
        type=_setting,
        action="append",
        default=[],
        help="a server setting (repeatable), e.g. HINDSIGHT_API_WORKERS=2",
    )
    parser.add_argument("--figures", type=Path, help="also write the figures (JSON) here")
    parser.add_argument(
        "--report", type=Path, help="print the figures of this file, measure nothing"
    )
    parser.add_argument(
        "--output", type=Path, help=f"merge section {SECTION} into this BENCHMARKS.md"
    )
    args = parser.parse_args(argv)
    if args.report is not None:
        figures = json.loads(args.report.read_text())
    else:
        _stop_on_term()
        size = Classroom(
            args.students,
            args.cells,
            args.rounds,
            args.start_window,
            args.pause,
            args.notes,
            tuple(args.server_env),
        )
        figures = measure(size)
        if args.figures is not None:
            args.figures.write_text(json.dumps(figures))
    table, notes = rows(figures)
    print(student_table(figures))
    print()
    print(markdown_table(table))
    for text in notes:
        print(f"\n{text}")
    print(json.dumps(figures))
    if args.output is not None:
        args.output.write_text(merged_into(args.output.read_text(), figures, table, notes))
        progress(f"wrote {args.output}", PART)
    return 0


if __name__ == "__main__":
    sys.exit(main())
