"""Evidence: what recording and checking the data files a cell read costs.

Run: ``python -m bench.evidence``. Prints JSON; asserts nothing. No server is needed: the hook
is timed with the extension pointed at ``HINDSIGHT_BENCH_URL``, else at a closed port (the
hook's cost does not depend on the server).

- **fingerprint of a 1 GB file**: a sparse file made with ``truncate`` in a temporary folder
  (deleted after), recorded as a cell that read it would be, on the worker (stat + the hash of
  its first and last 64 KiB); and, for scale, a whole-file hash at the default limit (8 MB).
- **check for a recall of 5**: five memories that each record a file, their evidence line made
  as every output form makes it (``provenance.evidence_text``): all unchanged (stat only), and
  the first check after every file was re-written (each hashed once), then the next (cached).
- **hook cost**: the post-cell hook's own call (µs) for a cell that reads ``data/sales.csv``
  and for one that does not (the hook only keeps the cell: the source is parsed on the
  worker); and ``run_cell`` of each with the extension loaded (auto-retain on) over the same
  cell with it not loaded, in alternating blocks (the bar is 1.05; on a loaded machine the
  ratio is noisy, and it is the same for both cells).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import quiet_shell, settled, temporary_journal

GB = 1 << 30
READS = "import csv\nrows = list(csv.DictReader(open('data/sales.csv')))\nlen(rows)"
PLAIN = "import csv\nrows = list(csv.DictReader(iter(['a,b', '1,2'])))\nlen(rows)"
DEAD_URL = "http://127.0.0.1:9"


def _ms(run: Callable[[], object], times: int) -> float:
    """Median wall time of ``run`` in ms."""
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        spent.append((time.perf_counter() - started) * 1000)
    return statistics.median(spent)


def measure_fingerprint(folder: Path, times: int) -> dict[str, float]:
    """ms to record a 1 GB sparse file (stat + ends), and to hash 8 MB whole."""
    from hindsight_magic._capture.evidence import fingerprint, recorded

    big = folder / "data" / "big.bin"
    with open(big, "wb") as file:
        file.truncate(GB)
    limit = 8 << 20
    record = _ms(lambda: recorded("open('data/big.bin')", ran_at=4e9, whole_limit=limit), times)
    whole = folder / "data" / "whole.bin"
    whole.write_bytes(os.urandom(limit))
    hashed = _ms(lambda: fingerprint(whole, limit, limit), times)
    big.unlink()
    whole.unlink()
    return {"record_1gb_ms": round(record, 3), "hash_8mb_whole_ms": round(hashed, 2)}


def measure_check(folder: Path, times: int) -> dict[str, float]:
    """ms to make the evidence lines of a recall of 5: unchanged, first after a re-write, then
    again (cached)."""
    from hindsight_magic._capture.evidence import evidence_metadata, recorded
    from hindsight_magic._memory.parsed_replies import RecalledMemory
    from hindsight_magic._memory.provenance import evidence_text

    memories = []
    for n in range(5):
        path = folder / "data" / f"part{n}.csv"
        path.write_text("region,revenue\n" + "EU,100\n" * 20_000)  # 140 KB: hashed whole
        files, root = recorded(f"open('data/part{n}.csv')", ran_at=4e9, whole_limit=8 << 20)
        meta = evidence_metadata(files, root)
        memories.append(RecalledMemory(id=f"m{n}", text=f"revenue {n}", metadata=meta))

    def lines() -> list[str]:
        return [evidence_text(memory) for memory in memories]

    unchanged = _ms(lines, times)
    for n in range(5):
        (folder / "data" / f"part{n}.csv").write_text("region,revenue\n" + "EU,1001\n" * 20_000)
    first = _ms(lines, 1)
    assert all(line.startswith("data changed since") for line in lines())
    cached = _ms(lines, times)
    return {
        "unchanged_ms": round(unchanged, 3),
        "changed_first_ms": round(first, 3),
        "changed_again_ms": round(cached, 3),
    }


def _cells(shell: Any, code: str, count: int) -> list[float]:
    spent = []
    for _ in range(count):
        started = time.perf_counter_ns()
        shell.run_cell(code, store_history=True)
        spent.append((time.perf_counter_ns() - started) / 1000)
    return spent


def _hook_calls_us(session: Any, shell: Any, code: str, count: int) -> list[float]:
    """µs of each of ``count`` calls of the post-cell hook with the result of ``code``."""
    ran = shell.run_cell(code, store_history=True)
    hook = session._parts.autoretain.post_run_cell
    spent = []
    for _ in range(count):
        started = time.perf_counter_ns()
        hook(ran)
        spent.append((time.perf_counter_ns() - started) / 1000)
    return spent


def measure_hook(blocks: int, cells: int) -> dict[str, float]:
    """Median ``run_cell`` µs of a cell reading a file and of one not, the extension loaded
    over not loaded (ratios)."""
    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    shell = quiet_shell()
    os.environ.update(
        HINDSIGHT_API_URL=os.environ.get("HINDSIGHT_BENCH_URL") or DEAD_URL,
        HINDSIGHT_BANK_ID=f"bench-evidence-{uuid.uuid4().hex[:8]}",
        HINDSIGHT_MENTAL_MODELS="false",
    )
    _cells(shell, READS, 100)  # warm up IPython and the file cache
    times: dict[str, list[float]] = {"reads": [], "plain": [], "reads_on": [], "plain_on": []}
    for _ in range(blocks):
        times["reads"] += _cells(shell, READS, cells)
        times["plain"] += _cells(shell, PLAIN, cells)
        load_ipython_extension(shell)
        settled(shell.magics_manager.registry["HindsightMagics"].session)
        times["reads_on"] += _cells(shell, READS, cells)
        times["plain_on"] += _cells(shell, PLAIN, cells)
        session = shell.magics_manager.registry["HindsightMagics"].session
        for kind, code in (("reads_call", READS), ("plain_call", PLAIN)):
            times.setdefault(kind, []).extend(_hook_calls_us(session, shell, code, cells))
        unload_ipython_extension(shell)
    median = {kind: statistics.median(values) for kind, values in times.items()}
    return {
        "reads_hook_call_us": round(median["reads_call"], 2),
        "plain_hook_call_us": round(median["plain_call"], 2),
        "reads_cell_us": round(median["reads"], 1),
        "plain_cell_us": round(median["plain"], 1),
        "reads_hook_ratio": round(median["reads_on"] / median["reads"], 3),
        "plain_hook_ratio": round(median["plain_on"] / median["plain"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.evidence", description=__doc__)
    parser.add_argument("--times", type=int, default=50, help="repeats of each timing")
    parser.add_argument("--blocks", type=int, default=4, help="hook: alternating blocks")
    parser.add_argument("--cells", type=int, default=150, help="hook: cells per block")
    args = parser.parse_args(argv)
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="bench-evidence-") as tmp, temporary_journal():
        folder = Path(tmp)
        (folder / ".git").mkdir()  # the project
        (folder / "data").mkdir()
        (folder / "data" / "sales.csv").write_text("region,revenue\nEU,400\nUS,560\n")
        os.chdir(folder)
        try:
            result: dict[str, dict[str, float]] = {
                "fingerprint": measure_fingerprint(folder, args.times),
                "check_recall_of_5": measure_check(folder, args.times),
            }
            with contextlib.redirect_stdout(sys.stderr):  # the extension's lines on unload
                result["hook"] = measure_hook(args.blocks, args.cells)
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
