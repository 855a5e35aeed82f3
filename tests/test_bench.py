"""Smoke test of the benchmark suite: ``python -m bench --quick`` runs and prints its table.

No timings are asserted (the numbers depend on the machine); only that every section ran
against the real server and its rows are in the printed Markdown table.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import RunningServer

ROOT = Path(__file__).resolve().parent.parent

EXPECTED_ROWS = (
    "`%retain TEXT` via `shell.run_line_magic`",
    "`hindsight-client`",
    "`httpx` POST",
    "speed-up: synchronous client median",
    "time to queue 500 memories",
    "until all 500 were accepted",
    "HTTP requests made (`queue.stats().requests`)",
    "memories lost",
    "peak RSS of the kernel process",
    "`%load_ext hindsight_magic` in a fresh process",
    "`ipywidgets` in `sys.modules` after the load",
    "trivial cell (`x = 1`)",
    "cell that does not retain",
    "cell that triggers a retain",
    "request bytes of full-session retain #1 ",
    "`%recall QUERY` via `run_line_magic`",
    "raw `POST …/memories/recall`",
    "extension's own time per `%recall`",
    "`%reflect QUESTION` via `run_line_magic`",
    "raw `POST …/reflect`",
    "extension's own time per `%reflect`",
)


@pytest.mark.integration
def test_quick_benchmark_prints_its_table(hindsight_server: RunningServer) -> None:
    env = {**os.environ, "HINDSIGHT_BENCH_URL": hindsight_server.url}
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    assert "| # | measurement | median | min | max | n | bar | result |" in out
    table = [line for line in out.splitlines() if line.startswith("| ")]
    for expected in EXPECTED_ROWS:
        assert any(expected in line for line in table), f"no row with {expected!r}:\n{out}"
    assert "machine: " in out
    assert "Made by `python -m bench --quick`" in out
    assert "## Not measurable here" in out
    assert "wrote" not in done.stderr  # quick mode leaves BENCHMARKS.md alone
