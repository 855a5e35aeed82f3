"""Auto-retain cost per cell, the transcript work, and bytes per full-session retain.

Run: ``python -m bench.autoretain`` (``HINDSIGHT_BENCH_URL``, or a server started for the run
and deleted afterwards). Prints JSON; asserts nothing.

Cost per cell: in one process, the same trivial cell (``x = 1``) is timed with ``run_cell``
while the extension is not loaded, then while it is loaded with auto-retain on (every 3 cells,
full-session), alternating blocks to cancel drift. Cells are split into those that trigger a
retain (every 3rd counted cell) and those that do not; each group's median is compared with the
baseline median. The cells run back to back, so the transcripts are built afterwards.

Transcript work, where it really runs: like a user, rounds of three realistic cells (code and a
result) and then a pause; once the kernel has been idle for a moment the worker thread builds
the transcript (skip rules, outputs, redaction, formatting) and queues it. Each build is timed
on the worker: its CPU time (``time.thread_time``) per cell retained. And the stall: as soon as
a build starts, the kernel thread runs a trivial cell, timed, compared with the same cell run
while no build runs (same rounds, alternating).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from typing import Any

from .common import Stat, bench_server, quiet_shell, settled, temporary_journal

# A realistic analysis cell: a few lines of code and a result (what auto-retain keeps).
CELL = """\
# step {n}: monthly churn by plan, refunds deduplicated
rows_{n} = [{{"plan": p, "month": m, "churned": (7 * m + {n} * len(p)) % 23}}
            for p in ("basic", "team", "enterprise") for m in range(1, 13)]
by_plan_{n} = {{p: sum(r["churned"] for r in rows_{n} if r["plan"] == p) for p in
             ("basic", "team", "enterprise")}}
by_plan_{n}
"""


def _time_cells(shell: Any, count: int) -> list[float]:
    timings = []
    for _ in range(count):
        started = time.perf_counter_ns()
        shell.run_cell("x = 1", store_history=True)
        timings.append((time.perf_counter_ns() - started) / 1000)
    return timings


def measure_cost(url: str, blocks: int, cells_per_block: int) -> dict[str, Any]:
    """Median run_cell time (µs): baseline vs loaded, for retain and non-retain cells."""
    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    shell = quiet_shell()
    os.environ.update(HINDSIGHT_API_URL=url, HINDSIGHT_BANK_ID=f"bench-{uuid.uuid4().hex[:8]}")
    baseline: list[float] = []
    quiet_cells: list[float] = []
    trigger_cells: list[float] = []
    _time_cells(shell, 200)  # warm up IPython itself
    block_ratios: dict[str, list[float]] = {"quiet": [], "trigger": []}
    for _ in range(blocks):
        block_base = _time_cells(shell, cells_per_block)
        baseline += block_base
        load_ipython_extension(shell)
        magics = shell.magics_manager.registry["HindsightMagics"]
        settled(magics.session)
        every = magics.session.settings.retain_every_n_cells
        timings = _time_cells(shell, cells_per_block)
        block: dict[str, list[float]] = {"quiet": [], "trigger": []}
        for index, value in enumerate(timings, start=1):
            block["trigger" if index % every == 0 else "quiet"].append(value)
        for kind, values in block.items():
            block_ratios[kind].append(statistics.median(values) / statistics.median(block_base))
        quiet_cells += block["quiet"]
        trigger_cells += block["trigger"]
        magics.session.flush(30)
        unload_ipython_extension(shell)
    base = statistics.median(baseline)
    return {
        "baseline_us": base,
        "quiet_us": statistics.median(quiet_cells),
        "trigger_us": statistics.median(trigger_cells),
        "quiet_ratio": statistics.median(quiet_cells) / base,
        "trigger_ratio": statistics.median(trigger_cells) / base,
        "samples": (len(baseline), len(quiet_cells), len(trigger_cells)),
        # per block: median(loaded cells) / median(the block's baseline cells), for min/max
        "quiet_ratio_blocks": block_ratios["quiet"],
        "trigger_ratio_blocks": block_ratios["trigger"],
        "baseline_range_us": (min(baseline), max(baseline)),
    }


class BuildTimer:
    """Wraps an auto-retainer's ``process``: times each build on the thread it runs on."""

    def __init__(self, autoretainer: Any) -> None:
        self.started = threading.Event()
        self.finished = threading.Event()
        self.cpu_s: list[float] = []  # per build on the worker: thread CPU time
        self.wall_s: list[float] = []
        self.cells: list[int] = []  # cells each build turned into transcript entries
        self.started_at = 0.0
        original = autoretainer.process

        def timed(force: bool = False) -> bool:
            before = autoretainer.status(process=False).counted
            self.finished.clear()
            self.started_at = time.perf_counter()
            self.started.set()
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return bool(original(force))
            finally:
                cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
                cells = autoretainer.status(process=False).counted - before
                if threading.current_thread().name.startswith("hindsight") and cells:
                    self.cpu_s.append(cpu)
                    self.wall_s.append(wall)
                    self.cells.append(cells)
                self.finished.set()

        autoretainer.process = timed


def measure_transcripts(url: str, rounds: int) -> dict[str, Any]:
    """Worker CPU per retained cell, and a trivial cell's time while a build runs vs. not."""
    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    shell = quiet_shell()
    os.environ.update(HINDSIGHT_API_URL=url, HINDSIGHT_BANK_ID=f"bench-{uuid.uuid4().hex[:8]}")
    load_ipython_extension(shell)
    session = shell.magics_manager.registry["HindsightMagics"].session
    settled(session)
    every = session.settings.retain_every_n_cells
    timer = BuildTimer(session._parts.autoretain)
    during: list[float] = []  # µs from a build's start until a cell sent then has finished
    idle: list[float] = []  # µs of the same cell while no build runs
    try:
        for _ in range(20):  # warm-up: the trivial cell's own caches (not retained)
            _cell_us(shell)
        n = 0
        # and one build, untimed: its one-time work (the first listing of the notebook's
        # cells, first imports) is not a per-cell cost, and in a short run it was the mean
        timer.started.clear()
        for _ in range(every):
            shell.run_cell(CELL.format(n=n), store_history=True)
            n += 1
        if timer.started.wait(60):
            timer.finished.wait(60)
        timer.cpu_s.clear(), timer.wall_s.clear(), timer.cells.clear()
        for round_ in range(rounds):
            timer.started.clear()
            for _ in range(every):
                shell.run_cell(CELL.format(n=n), store_history=True)
                n += 1
            if round_ % 2:  # the no-build sample first in odd rounds (the build waits for idle)
                idle.append(_cell_us(shell))
            if not timer.started.wait(60):
                raise RuntimeError("the worker built no transcript within 60 s")
            # the cell arrives as the build starts, like a user's next cell would: it waits
            # for the interpreter while the worker holds it, then runs
            _cell_us(shell)
            during.append((time.perf_counter() - timer.started_at) * 1e6)
            timer.finished.wait(60)
            time.sleep(0.05)
            if not round_ % 2:
                idle.append(_cell_us(shell))
        session.flush(30)
        retained = session._parts.autoretain.status(process=False).retained
    finally:
        unload_ipython_extension(shell)
    cells = sum(timer.cells)
    return {
        "cpu_per_cell_us": sum(timer.cpu_s) / cells * 1e6,
        "builds": len(timer.cpu_s),
        "cells": cells,
        "build_cpu_us": Stat.of(t * 1e6 for t in timer.cpu_s).to_json(),
        "build_wall_us": Stat.of(t * 1e6 for t in timer.wall_s).to_json(),
        "cell_during_us": Stat.of(during).to_json(),
        "cell_idle_us": Stat.of(idle).to_json(),
        "rounds": rounds,
        "retained": retained,
    }


def _cell_us(shell: Any) -> float:
    """A trivial cell's time; not stored in history, so auto-retain leaves it out."""
    started = time.perf_counter_ns()
    shell.run_cell("x = 1", store_history=False)
    return (time.perf_counter_ns() - started) / 1000


def measure_bytes(url: str, cells: int) -> list[int]:
    """Request-body bytes of each full-session retain over a ``cells``-cell session."""
    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    shell = quiet_shell()
    os.environ.update(HINDSIGHT_API_URL=url, HINDSIGHT_BANK_ID=f"bench-{uuid.uuid4().hex[:8]}")
    load_ipython_extension(shell)
    session = shell.magics_manager.registry["HindsightMagics"].session
    sizes: list[int] = []
    original = session._parts.connection.client.retain_batch

    def recording(bank_id: str, items: Any, **kwargs: Any) -> Any:
        body = {"items": list(items), "async": True, "operation_id": kwargs.get("operation_id")}
        sizes.append(len(json.dumps(body).encode()))
        return original(bank_id, items, **kwargs)

    session._parts.connection.client.retain_batch = recording  # type: ignore[method-assign]
    for n in range(cells):
        shell.run_cell(f"value_{n} = {n} * 2  # step {n} of the analysis", store_history=True)
        session.flush(30)  # one retain per request, so each size is one retain's
    unload_ipython_extension(shell)
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--cells", type=int, default=300, help="cells per block")
    parser.add_argument("--session-cells", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=30, help="transcript builds timed")
    args = parser.parse_args(argv)
    with bench_server() as server, temporary_journal():
        result = {
            "cost": measure_cost(server.url, args.blocks, args.cells),
            "transcripts": measure_transcripts(server.url, args.rounds),
            "bytes": measure_bytes(server.url, args.session_cells),
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
