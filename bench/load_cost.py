"""Load cost: the time ``%load_ext hindsight_magic`` adds, in fresh processes.

Each run is a new Python process that builds an IPython shell (not timed), then times
``%load_ext hindsight_magic`` (wall clock, and CPU time of the calling thread, which other
processes competing for the cores disturb less) and reports which heavy modules that load
imported. ipywidgets must not be among them: it is for panels and is imported when one is first
shown.

Bytecode: an installed package has its ``.pyc`` files, so the timed processes get a private
bytecode cache (``PYTHONPYCACHEPREFIX``, warmed by one untimed run) even where the environment
sets ``PYTHONDONTWRITEBYTECODE``. A few runs without any cache show the cost of the first load
after installing or editing the package.

Run alone: ``python -m bench.load_cost [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from typing import Any

from .common import Stat, bench_server, kernel_env, new_bank, run_child

BYTECODE_VARS = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")

# Runs in the child; nothing of the package (nor of bench/) is imported before the timer starts.
CHILD = r"""
import json, os, sys, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
config = Config()
config.HistoryAccessor.enabled = False
shell = InteractiveShell.instance(config=config)
settings_cpu = None
started, cpu = time.perf_counter(), time.thread_time()
if "--split" in sys.argv:  # the settings module (pydantic + the Settings model) on its own first
    import hindsight_magic._settings
    settings_cpu = time.thread_time() - cpu
shell.run_line_magic("load_ext", "hindsight_magic")
elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
loaded = "HindsightMagics" in shell.magics_manager.registry
watched = ("ipywidgets", "pydantic", "httpx", "sqlite3")
print(json.dumps({"ms": elapsed * 1000, "cpu_ms": cpu * 1000, "loaded": loaded,
                  "settings_cpu_ms": settings_cpu and settings_cpu * 1000,
                  "modules": {name: name in sys.modules for name in watched}}))
sys.stdout.flush()
os._exit(0)  # skip the exit-time flush: only the load is measured
"""


def _runs(
    url: str, runs: int, tmp: str, bytecode: dict[str, str], *flags: str
) -> list[dict[str, Any]]:
    replies = []
    for _ in range(runs):
        journal = os.path.join(tmp, f"journal-{uuid.uuid4().hex}.sqlite3")
        env = {**kernel_env(url, new_bank("load"), journal), **bytecode}
        reply = run_child(["-c", CHILD, *flags], env, unset=BYTECODE_VARS)
        if not reply["loaded"]:
            raise RuntimeError("%load_ext hindsight_magic did not register the magics")
        replies.append(reply)
    return replies


def measure(url: str, runs: int, cold_runs: int = 0) -> dict[str, Any]:
    """``runs`` fresh processes with a warm bytecode cache (after one untimed run), and
    ``cold_runs`` without any; the load time and what each process had imported after it.

    Another ``cold_runs`` warm runs import the settings module first, on its own, to show how
    much of the load's CPU time is pydantic and the ``Settings`` model.
    """
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        cache = {"PYTHONPYCACHEPREFIX": os.path.join(tmp, "pycache")}
        _runs(url, 1, tmp, cache)  # fills the bytecode cache
        warm = _runs(url, runs, tmp, cache)
        split = _runs(url, cold_runs, tmp, cache, "--split")
        cold = _runs(url, cold_runs, tmp, {"PYTHONDONTWRITEBYTECODE": "1"})
    imported: dict[str, int] = {}
    for reply in warm:
        for name, present in reply["modules"].items():
            imported[name] = imported.get(name, 0) + int(present)
    result: dict[str, Any] = {
        "ms": Stat.of(r["ms"] for r in warm).to_json(),
        "cpu_ms": Stat.of(r["cpu_ms"] for r in warm).to_json(),
        "imported": imported,
        "runs": runs,
    }
    if cold:
        result["cold_ms"] = Stat.of(r["ms"] for r in cold).to_json()
    if split:
        result["split_cpu_ms"] = Stat.of(r["cpu_ms"] for r in split).to_json()
        result["settings_cpu_ms"] = Stat.of(r["settings_cpu_ms"] for r in split).to_json()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--cold-runs", type=int, default=5)
    args = parser.parse_args(argv)
    with bench_server() as server:
        print(json.dumps(measure(server.url, args.runs, args.cold_runs), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
