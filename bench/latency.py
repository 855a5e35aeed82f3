"""Recall and reflect latency: through the magics vs. the same raw HTTP call.

A fresh bank gets a few dozen memories (through ``%retain``) and the server finishes indexing
them. Then, round by round, the same query is sent through ``%recall`` (``run_line_magic``)
and as the raw ``POST …/memories/recall`` with the body the extension sends (persistent
``httpx`` connection), alternating which goes first; likewise ``%reflect`` vs. ``POST
…/reflect``.

What the extension adds is measured two ways. (a) The difference of the two medians: honest but
noisy, since the server's own latency varies by far more than a few milliseconds from call to
call. (b) Inside each magic call, the time spent in the extension's HTTP call
(``HindsightClient.recall``/``reflect``) is recorded and subtracted from the call's total: the rest
is the extension's own work (option parsing, the flush and indexing check before a read,
validating the reply, building the result object), measured on the same call and so free of
server noise. ``%recall`` through ``run_cell`` also renders the HTML table, as a notebook would;
it is reported for information.

(c) A recall right after three auto-retained cells (issue 26): each round runs three small
cells (auto-retain is on, every 3 cells, so they make a transcript the read finds queued) and
then times ``%recall``, alternating with the raw recall. The read must not wait for the
transcript to be indexed (seconds on a busy server): the bar is the ratio of the two medians.

Run alone: ``python -m bench.latency [--rounds N]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .common import (
    Stat,
    bench_server,
    delete_bank,
    loaded,
    new_bank,
    quiet_shell,
    raw_client,
    settle_bank,
)

FACTS = [
    "The churn table double-counts Q3 refunds; dedupe on order_id before joins.",
    "We use a 5-fold grouped cross-validation split by customer_id.",
    "Revenue figures in the finance export are in cents, not dollars.",
    "The marketing team wants weekly cohorts starting on Monday.",
    "Outliers above the 99.9th percentile of order value are test orders.",
    "The feature store refreshes nightly at 02:00 UTC.",
]
QUERY = "What do we know about refunds and data quality in the churn table?"
QUESTION = "What have we learned about data quality in this project?"
SETTLE_S = 60.0


class HttpTimer:
    """Wraps client methods; records how long each call of them made on this thread took
    (ms). Calls from the session's worker (a mental model filled by a recall) are not the
    magic's: they run beside it, and counting them made its own time negative. With
    ``any_thread``, every thread's calls count: for a caller that waits while another thread
    makes its requests (an MCP tool's handler, a recall that first flushes the queue)."""

    def __init__(self, client: Any, *names: str, any_thread: bool = False) -> None:
        self.calls: list[float] = []
        self._thread = None if any_thread else threading.get_ident()
        for name in names:
            setattr(client, name, self._timed(getattr(client, name)))

    def _timed(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._thread is not None and threading.get_ident() != self._thread:
                return original(*args, **kwargs)
            started = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                self.calls.append((time.perf_counter_ns() - started) / 1e6)

        return timed

    def take(self) -> float:
        """Total time of the calls since the last ``take``."""
        total, self.calls = sum(self.calls), []
        return total


def _pairs(
    rounds: int, magic: Callable[[], Any], raw: Callable[[], Any], timer: HttpTimer
) -> dict[str, list[float]]:
    """Per-round times (ms) of ``magic`` and ``raw`` (alternating which runs first), and of the
    extension's own work in each magic call (its total minus its HTTP call)."""
    magic(), raw()  # warm-up: connections, caches
    timer.take()
    times: dict[str, list[float]] = {"magic": [], "raw": [], "own": []}
    for round_ in range(rounds):
        order = (("magic", magic), ("raw", raw))
        for key, call in order if round_ % 2 == 0 else reversed(order):
            started = time.perf_counter_ns()
            call()
            elapsed = (time.perf_counter_ns() - started) / 1e6
            times[key].append(elapsed)
            if key == "magic":
                times["own"].append(elapsed - timer.take())
    return times


def _after_cells(
    shell: Any, rounds: int, raw: Callable[[], Any], timer: HttpTimer
) -> tuple[dict[str, list[float]], list[int]]:
    """Per-round times (ms) of ``%recall`` right after three auto-retained cells (only the
    recall is timed) and of ``raw``, alternating; and how many cells each recall said were
    still being indexed."""
    times: dict[str, list[float]] = {"magic": [], "raw": [], "own": []}
    still: list[int] = []
    cell = itertools.count()

    def magic() -> float:
        for _ in range(3):
            shell.run_cell(f"bench_value = {next(cell)} * 7", store_history=True)
        timer.take()
        started = time.perf_counter_ns()
        result = shell.run_line_magic("recall", QUERY)
        elapsed = (time.perf_counter_ns() - started) / 1e6
        times["own"].append(elapsed - timer.take())
        still.append(result.still_indexing)
        return elapsed

    def plain() -> float:
        started = time.perf_counter_ns()
        raw()
        return (time.perf_counter_ns() - started) / 1e6

    magic(), plain()  # warm-up
    times["own"].clear()
    still.clear()
    for round_ in range(rounds):
        order = (("magic", magic), ("raw", plain))
        for key, call in order if round_ % 2 == 0 else reversed(order):
            times[key].append(call())
    return times, still


def _summary(times: dict[str, list[float]]) -> dict[str, Any]:
    magic, raw = Stat.of(times["magic"]), Stat.of(times["raw"])
    return {
        "magic": magic.to_json(),
        "raw": raw.to_json(),
        "added_ms": magic.median - raw.median,
        "own": Stat.of(times["own"]).to_json(),
    }


def measure(
    url: str, recall_rounds: int, reflect_rounds: int, facts: int, settle_s: float = SETTLE_S
) -> dict[str, Any]:
    """Recall and reflect, magic vs. raw, on a fresh bank of ``facts`` memories."""
    bank_id = new_bank("latency")
    shell = quiet_shell()
    http = raw_client(url)
    try:
        with loaded(shell, url, bank_id) as session:
            for i in range(facts):
                shell.run_line_magic("retain", f"{FACTS[i % len(FACTS)]} (note {i})")
            shell.run_line_magic("recall", QUERY)  # sends them, waits for indexing
            settled_s = settle_bank(http, session.scope.bank_id, settle_s)
            scope, s = session.scope, session.settings
            base = f"/v1/default/banks/{scope.bank_id}"
            recall_body: dict[str, Any] = {
                "query": QUERY,
                "budget": s.recall_budget,
                "max_tokens": s.recall_max_tokens,
                "types": list(s.recall_types),
            }
            reflect_body: dict[str, Any] = {"query": QUESTION, "budget": s.recall_budget}
            if scope.recall_tags:
                for body in (recall_body, reflect_body):
                    body["tags"] = list(scope.recall_tags)
                    if scope.tags_match:
                        body["tags_match"] = scope.tags_match

            def raw_recall() -> Any:
                reply = http.post(f"{base}/memories/recall", json=recall_body)
                reply.raise_for_status()
                return reply.json()

            found = len(shell.run_line_magic("recall", QUERY))
            reflected = shell.run_line_magic("reflect", QUESTION)
            answer = " ".join(str(reflected).split())
            # a server without an LLM writes no answer: the magic then asks for the memories
            # that bear on the question (a recall), and so does the hand compared with it
            written = reflected.answered
            reflect_path = "reflect" if written else "memories/recall"
            if not written:
                reflect_body = {**recall_body, "query": QUESTION}

            def raw_reflect() -> Any:
                reply = http.post(f"{base}/{reflect_path}", json=reflect_body)
                reply.raise_for_status()
                return reply.json()

            recall_http = HttpTimer(session._parts.connection.client, "recall")
            reflect_http = HttpTimer(session._parts.connection.client, "reflect", "recall")
            recall = _pairs(
                recall_rounds,
                lambda: shell.run_line_magic("recall", QUERY),
                raw_recall,
                recall_http,
            )
            rendered = _pairs(
                recall_rounds,
                lambda: shell.run_cell(f"%recall {QUERY}", store_history=True),
                raw_recall,
                recall_http,
            )
            reflect = _pairs(
                reflect_rounds,
                lambda: shell.run_line_magic("reflect", QUESTION),
                raw_reflect,
                reflect_http,
            )
            after_cells = _after_cells(shell, recall_rounds, raw_recall, recall_http)
    finally:
        http.close()
        delete_bank(url, bank_id)
    return {
        "recall": _summary(recall),
        "recall_rendered": _summary(rendered),
        "reflect": _summary(reflect) | {"written": written},
        "after_cells": _summary(after_cells[0]) | {"still_indexing": after_cells[1]},
        "settled_s": settled_s,
        "memories_found": found,
        "answer": answer if len(answer) <= 80 else answer[:79] + "…",
        "facts": facts,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--reflect-rounds", type=int, default=20)
    parser.add_argument("--facts", type=int, default=30)
    parser.add_argument("--settle", type=float, default=SETTLE_S, help="max wait for indexing (s)")
    args = parser.parse_args(argv)
    with bench_server() as server:
        result = measure(server.url, args.rounds, args.reflect_rounds, args.facts, args.settle)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
