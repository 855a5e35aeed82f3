"""A long kernel: does what the extension costs per cell grow with the session?

Run: ``python -m bench.long_kernel [--cells 20000] [--output BENCHMARKS.md]``
(``HINDSIGHT_BENCH_URL``, or a server started for the run and deleted afterwards). Prints a
table and JSON; ``--output`` merges section 16 into BENCHMARKS.md. Asserts nothing.

A day of loops and exploration in one kernel, with auto-retain on (every 3 cells, the
defaults): ``--cells`` executions of a notebook's 100 cells, each sent with its cell id as
JupyterLab sends it, in a shuffled order that re-runs cells again and again; every tenth
execution changes its cell (a new version, which supersedes the earlier one on the server). The same
executions run twice in fresh processes: once with the extension, once without, so that what
IPython itself keeps per cell (its history, its output cache) is told apart from what the
extension keeps.

The cells run back to back, 100 at a time; after each hundred the kernel waits until the
worker has taken them in, as a user's pauses let it. Without those pauses the worker, held up
by a busy server, would fall thousands of cells behind, and the hook's bounded backlog would
drop the oldest: the end of the run would then measure a full backlog (and fewer cells), not
the session's length.

Figures, at the session's start (cells 500-1 500) and end (its last 1 000 cells):

- the extension's time per cell on the kernel thread: its ``post_run_cell`` callback, timed
  around the call;
- the worker's CPU per cell: the transcript builds, version planning and sending, from the
  worker thread's CPU time over the window, per cell;
- the process's resident memory (and how much of it the run without the extension also has),
  after a garbage collection, in both runs alike;
- the journal's files on disk, and what the session sent (memories, cells unchanged, cells
  the worker never looked at).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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
    run_child,
)
from .report import Row, Section, markdown_table, num

SECTION = "16"
CELLS = 100  # the notebook's cells
CHANGE_EVERY = 10  # every tenth execution changes its cell
PAUSE_EVERY = 100  # the kernel pauses after this many cells, until the worker took them in
CATCH_UP_S = 120.0  # the longest a pause waits for the worker
SETTLE_S = 600.0  # … and a window's edge for everything its cells asked (the server indexing)
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
        index = callbacks.index(session.post_run_cell)  # the auto-retainer's own method
        original = callbacks[index]

        def timed(result: Any) -> None:
            started = time.perf_counter_ns()
            original(result)
            self.hook_us.append((time.perf_counter_ns() - started) / 1000)

        callbacks[index] = timed
        self._worker = next(t for t in threading.enumerate() if t.name.startswith("hindsight"))
        autoretain = session._parts.autoretain
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


@dataclass(frozen=True)
class Mark:
    """What the session had used by one cell: the worker's CPU (all of it, and auto-retain's
    step), the process's resident memory and the journal's files."""

    worker_us: float
    process_us: float
    rss_mb: float
    journal_kb: float

    @staticmethod
    def per_cell(first: Mark, last: Mark, cells: int, figure: str) -> float:
        """A CPU figure's growth from ``first`` to ``last``, per cell."""
        return float(getattr(last, figure) - getattr(first, figure)) / cells


def journal_kb(journal: Path) -> float:
    """The journal's files on disk (the SQLite file, its WAL and shared memory, the spools)."""
    return sum(p.stat().st_size for p in journal.parent.glob(journal.name + "*")) / 1024


def session_run(url: str, cells: int, with_extension: bool) -> dict[str, Any]:
    """The executions in this process; the figures of the start and end windows."""
    shell = quiet_shell()
    plan = executions(cells)
    start_a, start_b = START
    end_a = cells - END_CELLS
    figures: dict[str, Any] = {"cells": cells}
    if not with_extension:
        rss = {}
        for n, (cell_id, source) in enumerate(plan, 1):
            shell.run_cell(source, store_history=True, cell_id=cell_id)
            if n in (start_b, cells):
                gc.collect()
                rss[n] = current_rss_mb()
        return {**figures, "rss_start_mb": rss[start_b], "rss_end_mb": rss[cells]}
    bank_id = f"bench-long-{uuid.uuid4().hex[:8]}"
    try:
        with loaded(shell, url, bank_id, auto_retain="true", mental_models="false") as session:
            timer = CellTimer(shell, session)
            journal = Path(os.environ["HINDSIGHT_JOURNAL_PATH"])
            marks: dict[int, Mark] = {}
            late = 0
            for n, (cell_id, source) in enumerate(plan, 1):
                shell.run_cell(source, store_history=True, cell_id=cell_id)
                if n in (start_a, start_b, end_a, cells):
                    late += not all_done(session)
                    gc.collect()
                    marks[n] = Mark(
                        timer.worker_cpu_s() * 1e6,
                        timer.process_cpu_ns / 1e3,
                        current_rss_mb(),
                        journal_kb(journal),
                    )
                elif n % PAUSE_EVERY == 0:
                    late += not caught_up(session)
            hooks = timer.hook_us
            session.flush(60)
            auto = session.autoretain_status()
            stats = session.queue_stats()
            start, end = (marks[start_a], marks[start_b]), (marks[end_a], marks[cells])
            figures.update(
                hook_start_us=statistics.median(hooks[start_a:start_b]),
                hook_end_us=statistics.median(hooks[end_a:]),
                worker_start_us=Mark.per_cell(*start, start_b - start_a, "worker_us"),
                worker_end_us=Mark.per_cell(*end, END_CELLS, "worker_us"),
                process_start_us=Mark.per_cell(*start, start_b - start_a, "process_us"),
                process_end_us=Mark.per_cell(*end, END_CELLS, "process_us"),
                rss_start_mb=marks[start_b].rss_mb,
                rss_end_mb=marks[cells].rss_mb,
                journal_start_kb=marks[start_b].journal_kb,
                journal_end_kb=marks[cells].journal_kb,
                late_waits=late,
                sent=stats.accepted,
                counted_cells=auto.counted,
                retained_cells=auto.retained,
                unchanged_cells=auto.unchanged,
            )
    finally:
        delete_bank(url, bank_id)
    return figures


def measure(url: str, cells: int) -> dict[str, Any]:
    """Both runs, each in a fresh process, with the load average before and after."""
    args = ["-m", "bench.long_kernel", "--child", "--cells", str(cells), "--url", url]
    load_before = load_average()
    progress(f"a long kernel: {num(cells)} cells with the extension …", "long_kernel")
    loaded_run = run_child([*args, "--with-extension"], timeout=3600)
    progress(f"a long kernel: {num(cells)} cells without it …", "long_kernel")
    plain = run_child(args, timeout=3600)
    return {
        "with": loaded_run,
        "without": plain,
        "load_before": load_before,
        "load_after": load_average(),
    }


def _own_mb(found: dict[str, Any], when: str) -> float:
    """The extension's share of the kernel's resident memory: the run without it subtracted."""
    return float(found["with"][f"rss_{when}_mb"] - found["without"][f"rss_{when}_mb"])


def _figures(found: dict[str, Any]) -> list[tuple[str, float, float, bool]]:
    """(what, at the start, at the end, whether a bar holds it) of each figure."""
    run, plain = found["with"], found["without"]
    return [
        ("the extension per cell, kernel thread (its `post_run_cell`, median µs)",
         run["hook_start_us"], run["hook_end_us"], True),
        ("the worker's CPU per cell (all its work: transcripts, versions, sending, "
         "superseding; µs)", run["worker_start_us"], run["worker_end_us"], True),
        ("… of which auto-retain's own step (transcripts, version planning, queueing; µs)",
         run["process_start_us"], run["process_end_us"], True),
        ("the kernel's resident memory, the extension's share (MB: the run without it "
         "subtracted)", _own_mb(found, "start"), _own_mb(found, "end"), True),
        ("the kernel's resident memory with the extension (MB)",
         run["rss_start_mb"], run["rss_end_mb"], False),
        ("… the same cells without the extension: what IPython itself keeps (MB)",
         plain["rss_start_mb"], plain["rss_end_mb"], False),
        ("the journal's files on disk (KB)",
         run["journal_start_kb"], run["journal_end_kb"], True),
    ]  # fmt: skip


def table(found: dict[str, Any]) -> str:
    """The figures as a Markdown table: each at the start and end, and end / start."""
    run = found["with"]
    lines = ["| per cell | at the start | at the end | end / start |", "|---|---|---|---|"]
    for what, a, b, _ in _figures(found):
        lines.append(f"| {what} | {num(a)} | {num(b)} | {num(b / a if a else 0)} |")
    lines.append("")
    lost = run["cells"] - run["counted_cells"]
    lines.append(
        f"{run['cells']} executions of {CELLS} cells (each with its cell id), every "
        f"{CHANGE_EVERY}th a changed cell: {run['sent']} memories sent, "
        f"{run['unchanged_cells']} cells run again unchanged (nothing sent), {lost} cells the "
        f"worker never looked at; {run['late_waits']} waits for the worker ran out of time. "
        f"Start: cells {START[0]}-{START[1]}; end: the last {END_CELLS}. Load average (1 min) "
        f"{found['load_before']} before, {found['load_after']} after."
    )
    return "\n".join(lines)


def rows(found: dict[str, Any]) -> Section:
    """Section 16 of BENCHMARKS.md: each figure at the end, with end / start and the bars."""
    run = found["with"]
    cells = num(run["cells"])
    table_rows = []
    for what, a, b, barred in _figures(found):
        ratio = b / a if a else 0.0
        table_rows.append(
            Row(
                SECTION,
                f"a {cells}-cell kernel: {what}, cells {num(START[0])}–{num(START[1])} → the "
                f"last {num(END_CELLS)}: {num(a)} → {num(b)}; end ÷ start",
                f"{ratio:.2f}×",
                bar=f"≤ {GROWTH_BAR:.2f}×" if barred else "",
                passed=ratio <= GROWTH_BAR if barred else None,
            )
        )
    lost = run["cells"] - run["counted_cells"]
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
    ipython_kb = (plain["rss_end_mb"] - plain["rss_start_mb"]) * 1024 / (run["cells"] - START[1])
    notes = [
        f"{SECTION}: `python -m bench.long_kernel` (a day of loops and exploration): "
        f"{cells} executions of a notebook's {CELLS} cells in a shuffled order, each with its "
        f"cell id as JupyterLab sends it, every {CHANGE_EVERY}th a changed cell (a new version; "
        "the earlier one is superseded on the server), auto-retain on (every 3 cells, the "
        f"defaults); the kernel pauses after every {PAUSE_EVERY} cells until the worker took "
        "them in, as a user's pauses let it, and at each window's edges until the worker had "
        "done all that its cells asked (sent, and superseded once the server indexed the new "
        "version), so that a window's CPU is its own cells' work. The worker's CPU is its "
        "thread's own (`schedstat`), not wall time: waiting for a core does not count, though "
        "on a busy machine the caches it shares with other work still make it noisier; the "
        "hook's time is the median of 1 000 calls of about a microsecond, which are seldom "
        "preempted. The same cells ran in a second fresh process without the extension: "
        f"IPython itself keeps every cell (`In`, `_iN`, its output history; {num(ipython_kb)} "
        "KB a cell here), which is what the whole kernel's memory grows by; the bar is on the "
        "extension's share, the difference of the two runs (both read after a garbage "
        "collection). Of what the extension keeps, only what it knows of each cell version "
        "grows (`_memory/versions.py`, a few hundred bytes a version, so that an undone edit "
        "brings the earlier memories back instead of sending them again). What the session "
        f"sent: {num(run['sent'])} memories (one a version), {num(run['unchanged_cells'])} "
        "cells run again unchanged (nothing sent); the journal "
        f"{num(run['journal_end_kb'])} KB at the end, of which 1 024 KB is the spool file's "
        "reservation and at most about 500 KB SQLite's write-ahead log."
    ]
    return table_rows, notes


def merged_into(previous: str, found: dict[str, Any]) -> str:
    """A BENCHMARKS.md with section 16 replaced by these figures, and a header line saying
    when and where they were measured."""
    from .report import merged

    table_rows, notes = rows(found)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    before, after = found["load_before"], found["load_after"]
    line = (
        f"section {SECTION} (a long kernel) measured by `python -m bench.long_kernel --cells "
        f"{found['with']['cells']}` and merged on {when}: {machine_line()}; load average "
        f"(1 min) {before} at the start, {after} at the end" + busy_warning(before, after)
    )
    return merged(previous, table_rows, notes, {SECTION}, line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.long_kernel", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--cells", type=int, default=20_000)
    parser.add_argument(
        "--output", type=Path, default=None, help="merge section 16 into this BENCHMARKS.md"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--with-extension", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cells < START[1] + END_CELLS:
        parser.error(f"--cells must be at least {START[1] + END_CELLS}")
    if args.child:
        print(json.dumps(session_run(args.url, args.cells, args.with_extension)))
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
