"""A long kernel: does what the extension costs per cell grow with the session?

Run: ``python -m bench.long_kernel [--cells 20000] [--output BENCHMARKS.md]``
(``HINDSIGHT_BENCH_URL``, or a server started for the run and deleted afterwards). Prints a
table and JSON; ``--output`` merges section 17 into BENCHMARKS.md. Asserts nothing.

A day of loops and exploration in one kernel, with auto-retain on (every 3 cells, the
defaults): ``--cells`` executions of a notebook's 100 cells, each sent with its cell id as
JupyterLab sends it, in a shuffled order that re-runs cells again and again; every tenth
execution changes its cell (a new version, which supersedes the earlier one on the server).

The session's start and end are measured side by side, as the other sections compare two
ways: a *long* kernel runs the first ``--cells`` − 1 000 cells, a *young* one (a fresh
process, the same cells) its first 500; then the two take turns, 100 cells each, ten times:
the young kernel's cells 501-1 500 (the start) alternate with the long one's last 1 000 (the
end), so that both windows meet the same load on a shared machine. Each 100-cell block begins
and ends once the worker has done all its cells asked (sent, superseded once the server
indexed the new version): its CPU is its own cells' work. In between, the kernels pause every
100 cells until the worker has taken them in, as a user's pauses let it: back to back, a
worker held up by a busy server would fall thousands of cells behind and the hook's bounded
backlog would drop the oldest, so the end would time a full backlog, not a long session.

Figures, at the start and the end (the median of the ten blocks):

- the extension's time per cell on the kernel thread: its ``post_run_cell`` callback, timed
  around the call (the median of a block's calls);
- the worker's CPU per cell, all of it (transcripts, version planning, sending, superseding)
  and auto-retain's own step: the worker thread's CPU time, not wall time;
- the process's resident memory after a garbage collection, and how much of it a third
  process that runs the same cells without the extension also has (IPython's own history);
- the journal's files on disk, and what the session sent (memories, cells unchanged, cells
  the worker never looked at).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from .common import (
    bench_server,
    busy_warning,
    current_rss_mb,
    delete_bank,
    load_average,
    loaded,
    machine_line,
    progress,
    quiet_shell,
)
from .report import Row, Section, markdown_table, num

SECTION = "17"
CELLS = 100  # the notebook's cells
CHANGE_EVERY = 10  # every tenth execution changes its cell
PAUSE_EVERY = 100  # the kernel pauses after this many cells, until the worker took them in
CATCH_UP_S = 120.0  # the longest a pause waits for the worker
SETTLE_S = 600.0  # … and a block's edge for everything its cells asked (the server indexing)
BLOCK = 100  # cells a kernel runs in its turn, while the start and end alternate
START = (500, 1500)  # the window measured at the start (cell numbers)
END_CELLS = 1000  # and the last this many cells
GROWTH_BAR = 1.10  # end / start of each per-cell figure and of the extension's memory
SOURCE = """\
# step {cell}: churn by plan for cohort {cohort}, after deduplicating refunds
rows = [(p, (7 * m + {cohort} * len(p)) % 23) for p in ("basic", "team", "pro") for m in range(12)]
totals_{cell} = {{p: sum(v for q, v in rows if q == p) for p in ("basic", "team", "pro")}}
totals_{cell}
"""


def executions(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """``count`` (cell id, source) executions: re-runs in a shuffled order, every
    ``CHANGE_EVERY``-th a changed cell (exactly, so that every window of the run holds the
    same share of new versions, each sent and superseding the one before)."""
    pick = random.Random(seed)
    cohorts = dict.fromkeys(range(CELLS), 1)
    out = []
    for n in range(1, count + 1):
        cell = pick.randrange(CELLS)
        if n % CHANGE_EVERY == 0:
            cohorts[cell] += 1
        out.append((f"cell-{cell}", SOURCE.format(cell=cell, cohort=cohorts[cell])))
    return out


class CellTimer:
    """Times the extension's ``post_run_cell`` callback, and the worker's CPU: all of it, and
    what auto-retain's own step (transcripts, version planning, queueing) takes of it."""

    def __init__(self, shell: Any, session: Any) -> None:
        self.hook_us: list[float] = []
        self.process_cpu_ns = 0  # auto-retain's ``process`` on the worker thread, so far
        callbacks = shell.events.callbacks["post_run_cell"]
        autoretain = session._parts.autoretain
        index = callbacks.index(autoretain.post_run_cell)  # the auto-retainer's own method
        original = callbacks[index]

        def timed(result: Any) -> None:
            started = time.perf_counter_ns()
            original(result)
            self.hook_us.append((time.perf_counter_ns() - started) / 1000)

        callbacks[index] = timed
        self._worker = next(t for t in threading.enumerate() if t.name.startswith("hindsight"))
        process = autoretain.process

        def timed_process(force: bool = False) -> bool:
            if threading.current_thread() is not self._worker:
                return bool(process(force))
            started = time.thread_time_ns()
            try:
                return bool(process(force))
            finally:
                self.process_cpu_ns += time.thread_time_ns() - started

        autoretain.process = timed_process  # its idle job calls ``self.process``

    def worker_cpu_s(self) -> float:
        """The worker thread's CPU time so far, in nanoseconds' precision (Linux's schedstat;
        its ``stat`` counts in 10 ms ticks, too coarse for a thousand cells)."""
        assert self._worker.native_id is not None
        task = Path(f"/proc/self/task/{self._worker.native_id}")
        return int((task / "schedstat").read_text().split()[0]) / 1e9


def caught_up(session: Any, timeout_s: float = CATCH_UP_S) -> bool:
    """Wait until the auto-retainer has taken in every cell that ran (its backlog empty, no
    build under way), as it does while a user reads a cell's output; whether it did in time.

    The worker builds transcripts once the kernel has been idle for a moment, so this waits
    at least that moment; what it then sends goes out in the background, as in a session."""
    autoretain = session._parts.autoretain  # the bench reads the backlog; nothing else does
    deadline = time.monotonic() + timeout_s
    while autoretain._raw or autoretain._lock.locked():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def all_done(session: Any, timeout_s: float = SETTLE_S) -> bool:
    """Wait until the worker has done everything the cells so far asked of it: taken them in,
    sent their memories, superseded the versions they replaced (once the server indexed the
    new ones); whether it did in time. A window's CPU is then its own cells' work, not work
    the server's indexing put off into the next window. Runs nothing on this thread."""
    deadline = time.monotonic() + timeout_s
    if not caught_up(session, timeout_s):
        return False
    parts = session._parts
    parts.queue.request_flush()  # what waits for a fuller batch goes now
    while time.monotonic() < deadline:
        job_done = threading.Event()  # runs once the worker's job under way (a settle) ended
        parts.worker.submit(job_done.set, 0.0)
        job_done.wait(max(0.0, deadline - time.monotonic()))
        stats = parts.queue.stats()
        if not (stats.pending or stats.in_flight or stats.retrying or parts.versions.pending()):
            return True
        time.sleep(0.05)
    return False


def journal_kb(journal: Path) -> float:
    """The journal's files on disk (the SQLite file, its WAL and shared memory, the spools)."""
    return sum(p.stat().st_size for p in journal.parent.glob(journal.name + "*")) / 1024


class Kernel:
    """One benchmark kernel (a child process): the plan's cells in order, on request."""

    def __init__(self, url: str, cells: int, with_extension: bool) -> None:
        self.shell = quiet_shell()
        self.plan = executions(cells)
        self.ran = 0
        self.late = 0  # waits for the worker that ran out of time
        self._stack = contextlib.ExitStack()
        self.session: Any = None
        if with_extension:
            self.bank_id = f"bench-long-{uuid.uuid4().hex[:8]}"
            self._stack.callback(delete_bank, url, self.bank_id)
            self.session = self._stack.enter_context(
                loaded(self.shell, url, self.bank_id, auto_retain="true", mental_models="false")
            )
            self.timer = CellTimer(self.shell, self.session)
            self.journal = Path(os.environ["HINDSIGHT_JOURNAL_PATH"])

    def run(self, count: int) -> dict[str, Any]:
        """The next ``count`` cells, pausing every ``PAUSE_EVERY`` until the worker took
        them in."""
        for cell_id, source in self.plan[self.ran : self.ran + count]:
            self.shell.run_cell(source, store_history=True, cell_id=cell_id)
            self.ran += 1
            if self.session is not None and self.ran % PAUSE_EVERY == 0:
                self.late += not caught_up(self.session)
        return {"ran": self.ran}

    def block(self, count: int) -> dict[str, Any]:
        """The next ``count`` cells, timed: the hook's median, the worker's CPU per cell (all
        of it, and auto-retain's step), from a worker with nothing left to do to the same."""
        self.late += not all_done(self.session)
        gc.collect()  # a full collection of what came before is not this block's
        hooks, worker, step = len(self.timer.hook_us), self._worker_us(), self._step_us()
        self.run(count)
        self.late += not all_done(self.session)
        return {
            "hook_us": statistics.median(self.timer.hook_us[hooks:]),
            "worker_us": (self._worker_us() - worker) / count,
            "process_us": (self._step_us() - step) / count,
        }

    def _worker_us(self) -> float:
        return self.timer.worker_cpu_s() * 1e6

    def _step_us(self) -> float:
        return self.timer.process_cpu_ns / 1e3

    def memory(self) -> dict[str, Any]:
        """The resident memory after a garbage collection (and the journal's files)."""
        gc.collect()
        found: dict[str, Any] = {"ran": self.ran, "rss_mb": current_rss_mb()}
        if self.session is not None:
            found["journal_kb"] = journal_kb(self.journal)
        return found

    def close(self) -> dict[str, Any]:
        """What the session sent and counted; the extension unloaded, its bank deleted."""
        found: dict[str, Any] = {"ran": self.ran, "late_waits": self.late}
        if self.session is not None:
            self.session.flush(60)
            auto = self.session.autoretain_status()
            found.update(
                sent=self.session.queue_stats().accepted,
                counted_cells=auto.counted,
                unchanged_cells=auto.unchanged,
            )
        self._stack.close()
        return found


def serve(url: str, cells: int, with_extension: bool) -> None:
    """A child's loop: one command a line on stdin (``run N``, ``block N``, ``memory``,
    ``close``), one JSON line back for each; at ``close`` or the end of its input, the
    extension is unloaded and its bank deleted."""
    kernel = Kernel(url, cells, with_extension)
    print(json.dumps({"ready": True}), flush=True)
    try:
        for line in sys.stdin:
            command, *arg = line.split()
            if command == "close":
                break
            if command == "run":
                reply = kernel.run(int(arg[0]))
            elif command == "block":
                reply = kernel.block(int(arg[0]))
            else:
                reply = kernel.memory()
            print(json.dumps(reply), flush=True)
    finally:
        print(json.dumps(kernel.close()), flush=True)


class Child:
    """The parent's handle on a ``Kernel`` in a fresh process."""

    def __init__(self, url: str, cells: int, with_extension: bool) -> None:
        args = ["-m", "bench.long_kernel", "--child", "--cells", str(cells), "--url", url]
        self._errors = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (``close`` closes it)
        self._process = subprocess.Popen(
            [sys.executable, *args, *(["--with-extension"] if with_extension else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
        )
        self._read()  # ready

    def ask(self, command: str) -> dict[str, Any]:
        """Send ``command``; its reply."""
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._errors.seek(0)
            raise RuntimeError(f"benchmark kernel ended:\n{self._errors.read()[-4000:]}")
        return dict(json.loads(line))

    def close(self) -> dict[str, Any]:
        """Its final figures; the process ended."""
        try:
            return self.ask("close")
        finally:
            self._process.wait(120)
            self._errors.close()


def measure(url: str, cells: int) -> dict[str, Any]:
    """The long and the young kernel, their blocks alternating; then the same cells without
    the extension for IPython's own memory. With the load average before and after."""
    load_before = load_average()
    blocks = END_CELLS // BLOCK
    progress(f"a long kernel: {num(cells - END_CELLS)} cells, then the last {num(END_CELLS)} "
             "alternating with a young kernel's …", "long_kernel")  # fmt: skip
    long = Child(url, cells, True)
    try:
        young = Child(url, cells, True)
        try:
            long.ask(f"run {cells - END_CELLS}")
            young.ask(f"run {START[0]}")
            start, end = [], []
            for _ in range(blocks):
                start.append(young.ask(f"block {BLOCK}"))
                end.append(long.ask(f"block {BLOCK}"))
            memory = {"start": young.ask("memory"), "end": long.ask("memory")}
        finally:
            young.close()
    finally:
        ended = long.close()
    progress(f"the same {num(cells)} cells without the extension …", "long_kernel")
    plain = Child(url, cells, False)
    try:
        plain.ask(f"run {START[1]}")
        plain_start = plain.ask("memory")
        plain.ask(f"run {cells - START[1]}")
        plain_end = plain.ask("memory")
    finally:
        plain.close()
    return {
        "cells": cells,
        "start": start,
        "end": end,
        "memory": memory,
        "without": {"start": plain_start, "end": plain_end},
        "session": ended,
        "load_before": load_before,
        "load_after": load_average(),
    }


class Figure(NamedTuple):
    """One figure at the start and at the end; for the timed ones, each turn's range."""

    what: str
    start: float
    end: float
    barred: bool
    start_range: tuple[float, float] | None = None
    end_range: tuple[float, float] | None = None

    def text(self) -> str:
        """``start → end``, each with its turns' range when it has one."""

        def one(value: float, spread: tuple[float, float] | None) -> str:
            return num(value) + (f" ({num(spread[0])}–{num(spread[1])})" if spread else "")

        return f"{one(self.start, self.start_range)} → {one(self.end, self.end_range)}"


def _timed(what: str, found: dict[str, Any], figure: str) -> Figure:
    """A timed figure: the median of the turns at the start and at the end, and their range."""
    start = [block[figure] for block in found["start"]]
    end = [block[figure] for block in found["end"]]
    return Figure(
        what,
        statistics.median(start),
        statistics.median(end),
        True,
        (min(start), max(start)),
        (min(end), max(end)),
    )


def _own_mb(found: dict[str, Any], when: str) -> float:
    """The extension's share of the kernel's resident memory: the run without it subtracted."""
    return float(found["memory"][when]["rss_mb"] - found["without"][when]["rss_mb"])


def _figures(found: dict[str, Any]) -> list[Figure]:
    """Each figure, at the start and at the end."""
    memory, plain = found["memory"], found["without"]
    return [
        _timed("the extension per cell, kernel thread (its `post_run_cell`, median µs)",
               found, "hook_us"),
        _timed("the worker's CPU per cell (all its work: transcripts, versions, sending, "
               "superseding; µs)", found, "worker_us"),
        _timed("… of which auto-retain's own step (transcripts, version planning, "
               "queueing; µs)", found, "process_us"),
        Figure("the kernel's resident memory, the extension's share (MB: the run without it "
               "subtracted)", _own_mb(found, "start"), _own_mb(found, "end"), True),
        Figure("the kernel's resident memory with the extension (MB)",
               memory["start"]["rss_mb"], memory["end"]["rss_mb"], False),
        Figure("… the same cells without the extension: what IPython itself keeps (MB)",
               plain["start"]["rss_mb"], plain["end"]["rss_mb"], False),
        Figure("the journal's files on disk (KB)",
               memory["start"]["journal_kb"], memory["end"]["journal_kb"], True),
    ]  # fmt: skip


def table(found: dict[str, Any]) -> str:
    """The figures as a Markdown table: each at the start and end, and end / start."""
    run = found["session"]
    lines = ["| per cell | at the start | at the end | end / start |", "|---|---|---|---|"]
    for figure in _figures(found):
        a, b = figure.start, figure.end
        lines.append(f"| {figure.what} | {num(a)} | {num(b)} | {num(b / a if a else 0)} |")
    lines.append("")
    lost = run["ran"] - run["counted_cells"]
    lines.append(
        f"{run['ran']} executions of {CELLS} cells (each with its cell id), every "
        f"{CHANGE_EVERY}th a changed cell: {run['sent']} memories sent, "
        f"{run['unchanged_cells']} cells run again unchanged (nothing sent), {lost} cells the "
        f"worker never looked at; {run['late_waits']} waits for the worker ran out of time. "
        f"Start: a young kernel's cells {START[0] + 1}-{START[1]}; end: the long one's last "
        f"{END_CELLS}, in alternating blocks of {BLOCK}. Load average (1 min) "
        f"{found['load_before']} before, {found['load_after']} after."
    )
    return "\n".join(lines)


def rows(found: dict[str, Any]) -> Section:
    """Section 16 of BENCHMARKS.md: each figure at the end, with end / start and the bars."""
    run = found["session"]
    cells = num(run["ran"])
    table_rows = []
    for figure in _figures(found):
        ratio = figure.end / figure.start if figure.start else 0.0
        table_rows.append(
            Row(
                SECTION,
                f"a {cells}-cell kernel: {figure.what}, cells {num(START[0] + 1)}–"
                f"{num(START[1])} → the last {num(END_CELLS)}: {figure.text()}; end ÷ start",
                f"{ratio:.2f}×",
                bar=f"≤ {GROWTH_BAR:.2f}×" if figure.barred else "",
                passed=ratio <= GROWTH_BAR if figure.barred else None,
            )
        )
    lost = run["ran"] - run["counted_cells"]
    table_rows.append(
        Row(
            SECTION,
            f"a {cells}-cell kernel: cells the worker never looked at",
            f"{lost} of {cells}",
            bar="0",
            passed=lost == 0,
        )
    )
    plain = found["without"]
    grown_mb = plain["end"]["rss_mb"] - plain["start"]["rss_mb"]
    ipython_kb = grown_mb * 1024 / (plain["end"]["ran"] - plain["start"]["ran"])
    notes = [
        f"{SECTION}: `python -m bench.long_kernel` (a day of loops and exploration): "
        f"{cells} executions of a notebook's {CELLS} cells in a shuffled order, each with its "
        f"cell id as JupyterLab sends it, every {CHANGE_EVERY}th a changed cell (a new version; "
        "the earlier one is superseded on the server), auto-retain on (every 3 cells, the "
        f"defaults). The start and the end are measured side by side: a young kernel (a fresh "
        f"process, the same cells) runs cells {num(START[0] + 1)}–{num(START[1])} while the "
        f"long one runs its last {num(END_CELLS)}, in turns of {BLOCK} cells, so that both "
        "meet the same load; each timed figure is the median of the ten turns (their range in "
        "brackets). A turn begins and "
        "ends once the worker has done all that its cells asked (sent, and superseded once "
        "the server indexed the new version), so its CPU is its own cells' work; in between, "
        f"the kernels pause every {PAUSE_EVERY} cells until the worker took them in, as a "
        "user's pauses let it. The worker's CPU is its thread's own (`schedstat`), not wall "
        "time; the hook's time is the median of a turn's calls of about a microsecond, "
        "seldom preempted. A third process ran the same cells without the extension: "
        f"IPython itself keeps every cell (`In`, `_iN`, its output history; {num(ipython_kb)} "
        "KB a cell here), which is what the whole kernel's memory grows by; the bar is on the "
        "extension's share, the difference of the two (each read after a garbage "
        "collection). Of what the extension keeps, only what it knows of each cell version "
        "grows (`_memory/versions.py`, a few hundred bytes a version, so that an undone edit "
        "brings the earlier memories back instead of sending them again). What the long "
        f"session sent: {num(run['sent'])} memories (one a version), "
        f"{num(run['unchanged_cells'])} cells run again unchanged (nothing sent); its journal "
        f"{num(found['memory']['end']['journal_kb'])} KB at the end, of which 1 024 KB is the "
        "spool file's reservation and at most about 500 KB SQLite's write-ahead log."
    ]
    return table_rows, notes


def merged_into(previous: str, found: dict[str, Any]) -> str:
    """A BENCHMARKS.md with section 17 replaced by these figures, and a header line saying
    when and where they were measured."""
    from .report import merged

    table_rows, notes = rows(found)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    before, after = found["load_before"], found["load_after"]
    line = (
        f"section {SECTION} (a long kernel) measured by `python -m bench.long_kernel --cells "
        f"{found['cells']}` and merged on {when}: {machine_line()}; load average "
        f"(1 min) {before} at the start, {after} at the end" + busy_warning(before, after)
    )
    return merged(previous, table_rows, notes, {SECTION}, line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.long_kernel", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--cells", type=int, default=20_000)
    parser.add_argument(
        "--output", type=Path, default=None, help="merge section 17 into this BENCHMARKS.md"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--with-extension", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cells < START[1] + END_CELLS:
        parser.error(f"--cells must be at least {START[1] + END_CELLS}")
    if args.child:
        serve(args.url, args.cells, args.with_extension)
        return 0
    with bench_server() as server:
        found = measure(server.url, args.cells)
    print(table(found))
    print()
    print(markdown_table(rows(found)[0]))
    print(json.dumps(found))
    if args.output is not None:
        args.output.write_text(merged_into(args.output.read_text(), found))
        progress(f"wrote {args.output}", "long_kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
