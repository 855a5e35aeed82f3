"""The first ``%retain`` of a new kernel, on the kernel thread, in fresh processes.

Each run is a new Python process that builds an IPython shell (not timed), loads the extension
(not timed), waits ``PAUSE`` seconds (0: the ``%retain`` is in the cell that loads the
extension; half a second: the next cell, run by hand or by Run All after a short cell; two
seconds: a next cell after a pause), then times one ``%retain TEXT`` and the ``NEXT`` calls
after it (wall clock and CPU time of the calling thread), as the first cells of a notebook
would. The worker starts its warm-up 0.3 s after the load: what the first call costs beyond
the next ones is whatever it still has to import or build itself.

Two texts: a fact in prose that names a likely secret (``key``), and one with a quoted
assignment to a secret-sounding name, which detect-secrets' plugins must read (imported once
per process). The runs of each kind alternate and share a warm bytecode cache, as an installed
package has. The memories are never sent: each process exits once timed.

Run alone: ``python -m bench.first_retain [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from typing import Any

from .common import Stat, bench_server, delete_bank, kernel_env, new_bank, run_child

BYTECODE_VARS = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
PAUSES_S = (0.0, 0.5, 2.0)
TEXTS = {
    "prose": "The weather API key rotates monthly; the nightly job reads it from the vault.",
    "assignment": 'Staging reads DB_PASSWORD = "tiger-lily-77" until the vault is set up.',
}
NEXT = 20

# Runs in the child; nothing of the package is imported before the load.
CHILD = r"""
import json, os, statistics, sys, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
config = Config()
config.HistoryAccessor.enabled = False
shell = InteractiveShell.instance(config=config)
shell.run_line_magic("load_ext", "hindsight_magic")
time.sleep(float(os.environ["BENCH_PAUSE_S"]))
text = os.environ["BENCH_TEXT"]
walls, cpus = [], []
for n in range(int(os.environ["BENCH_NEXT"]) + 1):
    started, cpu = time.perf_counter(), time.thread_time()
    shell.run_line_magic("retain", f"{text} ({n})")
    walls.append((time.perf_counter() - started) * 1000)
    cpus.append((time.thread_time() - cpu) * 1000)
print(json.dumps({"first_ms": walls[0], "first_cpu_ms": cpus[0],
                  "next_ms": statistics.median(walls[1:])}))
sys.stdout.flush()
os._exit(0)  # skip the exit-time flush: only the kernel thread's calls are measured
"""


def measure(url: str, runs: int) -> dict[str, Any]:
    """``runs`` fresh processes for each pause and text, alternating; times in ms."""
    kinds = [(pause, text) for pause in PAUSES_S for text in TEXTS]
    replies: dict[str, list[dict[str, Any]]] = {key(*kind): [] for kind in kinds}
    bank_id = new_bank("first-retain")  # the mental models' first load may create it
    try:
        with tempfile.TemporaryDirectory(prefix="bench-first-retain-") as tmp:
            cache = {"PYTHONPYCACHEPREFIX": os.path.join(tmp, "pycache")}
            for run in range(-1, runs):  # run -1 fills the bytecode cache, untimed
                order = kinds if run % 2 == 0 else kinds[::-1]
                for pause, text in order:
                    journal = os.path.join(tmp, f"journal-{run}-{pause}-{text}.sqlite3")
                    env = {
                        **kernel_env(url, bank_id, journal),
                        **cache,
                        "BENCH_PAUSE_S": str(pause),
                        "BENCH_TEXT": TEXTS[text],
                        "BENCH_NEXT": str(NEXT),
                    }
                    reply = run_child(["-c", CHILD], env, unset=BYTECODE_VARS)
                    if run >= 0:
                        replies[key(pause, text)].append(reply)
    finally:
        delete_bank(url, bank_id)
    result: dict[str, Any] = {"runs": runs, "next": NEXT}
    for name, rows in replies.items():
        result[name] = {
            "first_ms": Stat.of(r["first_ms"] for r in rows).to_json(),
            "first_cpu_ms": Stat.of(r["first_cpu_ms"] for r in rows).to_json(),
            "next_ms": Stat.of(r["next_ms"] for r in rows).to_json(),
        }
    result["next_ms"] = statistics.median(r["next_ms"] for rows in replies.values() for r in rows)
    return result


def key(pause: float, text: str) -> str:
    """The name of one kind of run: ``prose@0.5`` (the text, and the pause after the load)."""
    return f"{text}@{pause:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args(argv)
    with bench_server() as server:
        print(json.dumps(measure(server.url, args.runs), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
