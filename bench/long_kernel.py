"""A long kernel: does what the extension costs per cell grow with the session?

Run: ``python -m bench.long_kernel [--cells 20000]`` (``HINDSIGHT_BENCH_URL``, or a server
started for the run and deleted afterwards). Prints a table and JSON; asserts nothing.

A day of loops and exploration in one kernel, with auto-retain on (every 3 cells, the
defaults): ``--cells`` executions of a notebook's 100 cells, each sent with its cell id as
JupyterLab sends it, in a shuffled order that re-runs cells again and again; one execution in
ten changes its cell (a new version, which supersedes the earlier one on the server). The same
executions run twice in fresh processes: once with the extension, once without, so that what
IPython itself keeps per cell (its history, its output cache) is told apart from what the
extension keeps.

Figures, at the session's start (cells 500-1 500) and end (its last 1 000 cells):

- the extension's time per cell on the kernel thread: its ``post_run_cell`` callback, timed
  around the call;
- the worker's CPU per cell: the transcript builds, version planning and sending, from the
  worker thread's CPU time over the window, per cell;
- the process's resident memory (and how much of it the run without the extension also has);
- the journal file's size at the end, and what the session sent (memories, cells unchanged).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .common import bench_server, current_rss_mb, delete_bank, loaded, quiet_shell, run_child
from .report import num

CELLS = 100  # the notebook's cells
CHANGE_EVERY = 10  # one execution in this many changes its cell
START = (500, 1500)  # the window measured at the start (cell numbers)
END_CELLS = 1000  # and the last this many cells
SOURCE = """\
# step {cell}: churn by plan for cohort {cohort}, after deduplicating refunds
rows = [(p, (7 * m + {cohort} * len(p)) % 23) for p in ("basic", "team", "pro") for m in range(12)]
totals_{cell} = {{p: sum(v for q, v in rows if q == p) for p in ("basic", "team", "pro")}}
totals_{cell}
"""


def executions(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """``count`` (cell id, source) executions: re-runs in a shuffled order, one in
    ``CHANGE_EVERY`` a changed cell."""
    pick = random.Random(seed)
    cohorts = dict.fromkeys(range(CELLS), 1)
    out = []
    for _ in range(count):
        cell = pick.randrange(CELLS)
        if pick.randrange(CHANGE_EVERY) == 0:
            cohorts[cell] += 1
        out.append((f"cell-{cell}", SOURCE.format(cell=cell, cohort=cohorts[cell])))
    return out


class CellTimer:
    """Times the extension's ``post_run_cell`` callback, and the worker's CPU, per cell."""

    def __init__(self, shell: Any, session: Any) -> None:
        self.hook_us: list[float] = []
        self._worker: threading.Thread | None = None
        callbacks = shell.events.callbacks["post_run_cell"]
        index = callbacks.index(session.post_run_cell)  # the auto-retainer's own method
        original = callbacks[index]

        def timed(result: Any) -> None:
            started = time.perf_counter_ns()
            original(result)
            self.hook_us.append((time.perf_counter_ns() - started) / 1000)

        callbacks[index] = timed
        self._worker = next(t for t in threading.enumerate() if t.name.startswith("hindsight"))

    def worker_cpu_s(self) -> float:
        """The worker thread's CPU time so far, in nanoseconds' precision (Linux's schedstat;
        its ``stat`` counts in 10 ms ticks, too coarse for a thousand cells)."""
        assert self._worker is not None
        assert self._worker.native_id is not None
        task = Path(f"/proc/self/task/{self._worker.native_id}")
        return int((task / "schedstat").read_text().split()[0]) / 1e9


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
                rss[n] = current_rss_mb()
        return {**figures, "rss_start_mb": rss[start_b], "rss_end_mb": rss[cells]}
    bank_id = f"bench-long-{uuid.uuid4().hex[:8]}"
    try:
        with loaded(shell, url, bank_id, auto_retain="true", mental_models="false") as session:
            timer = CellTimer(shell, session)
            marks: dict[int, tuple[float, float]] = {}  # cell → (worker CPU, RSS)
            for n, (cell_id, source) in enumerate(plan, 1):
                shell.run_cell(source, store_history=True, cell_id=cell_id)
                if n in (start_a, start_b, end_a, cells):
                    time.sleep(1.0)  # the worker catches up: its CPU counts these cells
                    marks[n] = (timer.worker_cpu_s(), current_rss_mb())
            hooks = timer.hook_us
            session.flush(60)
            auto = session.autoretain_status()
            stats = session.queue_stats()
            journal = Path(os.environ["HINDSIGHT_JOURNAL_PATH"])
            figures.update(
                hook_start_us=statistics.median(hooks[start_a:start_b]),
                hook_end_us=statistics.median(hooks[end_a:]),
                worker_start_us=(marks[start_b][0] - marks[start_a][0]) / (start_b - start_a) * 1e6,
                worker_end_us=(marks[cells][0] - marks[end_a][0]) / END_CELLS * 1e6,
                rss_start_mb=marks[start_b][1],
                rss_end_mb=marks[cells][1],
                journal_kb=sum(p.stat().st_size for p in journal.parent.glob(journal.name + "*"))
                / 1024,
                sent=stats.accepted,
                retained_cells=auto.retained,
                unchanged_cells=auto.unchanged,
            )
    finally:
        delete_bank(url, bank_id)
    return figures


def measure(url: str, cells: int) -> dict[str, Any]:
    """Both runs, each in a fresh process."""
    args = ["-m", "bench.long_kernel", "--child", "--cells", str(cells), "--url", url]
    loaded_run = run_child([*args, "--with-extension"], timeout=3600)
    plain = run_child(args, timeout=3600)
    return {"with": loaded_run, "without": plain}


def table(found: dict[str, Any]) -> str:
    """The figures as a Markdown table: each at the start and end, and end / start."""
    run, plain = found["with"], found["without"]
    figures = [
        ("the extension per cell, kernel thread (median µs)", "hook_start_us", "hook_end_us"),
        ("the worker's CPU per cell (µs)", "worker_start_us", "worker_end_us"),
        ("the kernel's resident memory (MB)", "rss_start_mb", "rss_end_mb"),
    ]
    lines = ["| per cell | at the start | at the end | end / start |", "|---|---|---|---|"]
    for what, start, end in figures:
        a, b = run[start], run[end]
        lines.append(f"| {what} | {num(a)} | {num(b)} | {num(b / a if a else 0)} |")
    own_a = run["rss_start_mb"] - plain["rss_start_mb"]
    own_b = run["rss_end_mb"] - plain["rss_end_mb"]
    lines.append(
        f"| … of which the extension's (MB: the run without it subtracted) | {num(own_a)} | "
        f"{num(own_b)} | {num(own_b / own_a if own_a else 0)} |"
    )
    lines.append("")
    lines.append(
        f"{run['cells']} executions of {CELLS} cells (each with its cell id), one in "
        f"{CHANGE_EVERY} changed: {run['sent']} memories sent, {run['unchanged_cells']} cells "
        f"run again unchanged (nothing sent); the journal {num(run['journal_kb'])} KB at the "
        f"end. Start: cells {START[0]}-{START[1]}; end: the last {END_CELLS}."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--with-extension", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(session_run(args.url, args.cells, args.with_extension)))
        return 0
    with bench_server() as server:
        found = measure(server.url, args.cells)
    print(table(found))
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
