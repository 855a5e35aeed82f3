"""The first ``%recall`` in a new kernel: a fresh process loads the extension and recalls.

Each run is a new Python process that builds an IPython shell (not timed), then times
``%load_ext hindsight_magic`` followed at once by ``%recall QUERY`` — everything the first
recall of a kernel pays: imports, the client, the connection, the flush and indexing check, the
request, the reply's validation. By hand, likewise in a fresh process with an IPython shell:
``from hindsight_client import Hindsight``, ``Hindsight(base_url=…)`` and ``await
client.arecall(…)`` (on the process's own event loop) with the same query, budget, token limit
and types. The two kinds of process alternate; both read one bank whose facts the server has
indexed beforehand, and share a warm bytecode cache (one untimed run of each first), as an
installed package has.

Run alone: ``python -m bench.first_recall [--runs N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from typing import Any

from .common import Stat, bench_server, delete_bank, kernel_env, new_bank, raw_client, run_child

FACTS = [
    "The churn table double-counts Q3 refunds; dedupe on order_id before joins.",
    "Revenue figures in the finance export are in cents, not dollars.",
    "The feature store refreshes nightly at 02:00 UTC.",
]
QUERY = "Which table double-counts refunds?"
BYTECODE_VARS = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")

SHELL = r"""
import json, os, sys, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
config = Config()
config.HistoryAccessor.enabled = False
shell = InteractiveShell.instance(config=config)
query = os.environ["BENCH_QUERY"]
"""

MAGIC_CHILD = (
    SHELL
    + r"""
started = time.perf_counter()
shell.run_line_magic("load_ext", "hindsight_magic")
loaded = time.perf_counter()
found = shell.run_line_magic("recall", query)
done = time.perf_counter()
print(json.dumps({"ms": (done - started) * 1000, "recall_ms": (done - loaded) * 1000,
                  "found": len(found)}))
sys.stdout.flush()
os._exit(0)  # skip the exit-time flush: only the first recall is measured
"""
)

HAND_CHILD = (
    SHELL
    + r"""
import asyncio
loop = asyncio.new_event_loop()
started = time.perf_counter()
from hindsight_client import Hindsight
client = Hindsight(base_url=os.environ["HINDSIGHT_API_URL"])
made = time.perf_counter()
reply = loop.run_until_complete(client.arecall(
    bank_id=os.environ["HINDSIGHT_BANK_ID"], query=query, budget="mid", max_tokens=1024,
    types=["world", "experience"]))
done = time.perf_counter()
print(json.dumps({"ms": (done - started) * 1000, "recall_ms": (done - made) * 1000,
                  "found": len(reply.results)}))
sys.stdout.flush()
os._exit(0)
"""
)


def _seed(url: str, bank_id: str) -> None:
    """The bank's facts, retained synchronously: indexed before any timed recall."""
    with raw_client(url) as http:
        body = {"items": [{"content": fact} for fact in FACTS], "async": False}
        http.post(f"/v1/default/banks/{bank_id}/memories", json=body).raise_for_status()


def measure(url: str, runs: int) -> dict[str, Any]:
    """``runs`` fresh processes of each kind, alternating; times in ms."""
    bank_id = new_bank("first-recall")
    kinds = {"magic": MAGIC_CHILD}
    if importlib.util.find_spec("hindsight_client") is not None:
        kinds["hand"] = HAND_CHILD
    replies: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    try:
        _seed(url, bank_id)
        with tempfile.TemporaryDirectory(prefix="bench-first-recall-") as tmp:
            cache = {"PYTHONPYCACHEPREFIX": os.path.join(tmp, "pycache"), "BENCH_QUERY": QUERY}
            for run in range(-1, runs):  # run -1 fills the bytecode cache, untimed
                order = list(kinds) if run % 2 == 0 else list(kinds)[::-1]
                for kind in order:
                    journal = os.path.join(tmp, f"journal-{kind}-{run}.sqlite3")
                    env = {**kernel_env(url, bank_id, journal), **cache}
                    reply = run_child(["-c", kinds[kind]], env, unset=BYTECODE_VARS)
                    if run >= 0:
                        replies[kind].append(reply)
    finally:
        delete_bank(url, bank_id)
    result: dict[str, Any] = {"runs": runs}
    for kind, rows in replies.items():
        result[kind] = {
            "ms": Stat.of(r["ms"] for r in rows).to_json(),
            "recall_ms": Stat.of(r["recall_ms"] for r in rows).to_json(),
            "found": min(r["found"] for r in rows),
        }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args(argv)
    with bench_server() as server:
        print(json.dumps(measure(server.url, args.runs), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
