"""Auto-retain cost per cell, and bytes per full-session retain, against a real local server.

Run: ``python -m bench.autoretain`` (starts or reuses the local server via the project's
launcher). Prints a table; asserts nothing.

Cost per cell: in one process, the same trivial cell (``x = 1``) is timed with ``run_cell``
while the extension is not loaded, then while it is loaded with auto-retain on (every 3 cells,
full-session), alternating blocks to cancel drift. Cells are split into those that trigger a
retain (every 3rd counted cell) and those that do not; each group's median is compared with the
baseline median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any

from .common import local_server_url, machine_line, quiet_shell


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


def measure_bytes(url: str, cells: int) -> list[int]:
    """Request-body bytes of each full-session retain over a ``cells``-cell session."""
    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    shell = quiet_shell()
    os.environ.update(HINDSIGHT_API_URL=url, HINDSIGHT_BANK_ID=f"bench-{uuid.uuid4().hex[:8]}")
    load_ipython_extension(shell)
    session = shell.magics_manager.registry["HindsightMagics"].session
    sizes: list[int] = []
    original = session.client.retain_batch

    def recording(bank_id: str, items: Any, **kwargs: Any) -> Any:
        body = {"items": list(items), "async": True, "operation_id": kwargs.get("operation_id")}
        sizes.append(len(json.dumps(body).encode()))
        return original(bank_id, items, **kwargs)

    session.client.retain_batch = recording  # type: ignore[method-assign]
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
    args = parser.parse_args(argv)
    url = local_server_url()
    cost = measure_cost(url, args.blocks, args.cells)
    sizes = measure_bytes(url, args.session_cells)
    print(machine_line())
    print(f"server: {url}")
    print("\nAuto-retain cost per trivial cell (run_cell median, µs)")
    print(f"  not loaded                 {cost['baseline_us']:8.1f}")
    print(
        f"  loaded, no retain          {cost['quiet_us']:8.1f}   ratio {cost['quiet_ratio']:.3f}"
        "   (bar ≤ 1.05)"
    )
    print(
        f"  loaded, cell that retains  {cost['trigger_us']:8.1f}   ratio "
        f"{cost['trigger_ratio']:.3f}   (bar ≤ 1.25)"
    )
    print(f"  samples (base, quiet, retain): {cost['samples']}")
    print(f"\nFull-session bytes per retain over a {args.session_cells}-cell session")
    for index in (1, 2, 25, 50):
        if index <= len(sizes):
            print(f"  retain #{index:<3} {sizes[index - 1]:6d} bytes")
    print(f"  retains: {len(sizes)}, min {min(sizes)} max {max(sizes)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
