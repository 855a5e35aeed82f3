"""Forget-then-recall: ``%hindsight forget ID`` then ``%recall``, vs. the same by hand, alternating.

The time until a recall no longer shows a memory, each way on its own bank holding the same
facts (retained synchronously beforehand, one memory id per run):

- the extension: ``shell.run_line_magic("hindsight", "forget ID")`` then
  ``shell.run_line_magic("recall", QUERY)``; its HTTP requests are counted and timed inside the
  call, so the rest is the extension's own time (and "each curation is one request" is checked);
- by hand with ``httpx`` (one persistent connection, as a careful notebook user would keep):
  ``PATCH …/memories/{id}`` with ``state: invalidated`` and the reason, then ``POST
  …/memories/recall`` with the extension's recall budget, token limit and types.

A run counts as done when the forgotten fact is absent from its recall. The ways take turns
(the order alternating from run to run), in one process.

Run alone: ``python -m bench.curation [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from typing import Any

from .common import Stat, api_headers, bench_server, delete_bank, loaded, new_bank, quiet_shell
from .latency import HttpTimer

BAR = 1.10  # issue 22: forget-then-recall within 1.1× of doing it by hand
FACT = "Run {n} of the {token} survey found {n} nests on the east ridge."
WAYS = ("magic", "hand")


class KernelRequests:
    """Counts the client's HTTP requests made on this (the kernel's) thread: the worker's
    background jobs (mental models, indexing polls) are not part of a curation."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        original = client.call
        kernel = threading.get_ident()

        def counted(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == kernel:
                self.count += 1
            return original(*args, **kwargs)

        client.call = counted

    def take(self) -> int:
        """Requests since the last ``take``."""
        count, self.count = self.count, 0
        return count


def _seed(http: Any, bank_id: str, token: str, count: int) -> list[tuple[str, str]]:
    """``count`` facts retained synchronously into ``bank_id``; (memory id, text) of each."""
    http.put(f"/v1/default/banks/{bank_id}", json={})
    items = [{"content": FACT.format(n=n, token=token)} for n in range(count)]
    reply = http.post(
        f"/v1/default/banks/{bank_id}/memories", json={"items": items, "async": False}
    )
    reply.raise_for_status()
    found: list[tuple[str, str]] = []
    offset = 0
    while True:
        page = http.get(
            f"/v1/default/banks/{bank_id}/memories/list",
            params={"q": token, "limit": 100, "offset": offset},
        ).json()
        found += [(m["id"], m["text"]) for m in page["items"] if m["text"].startswith("Run ")]
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            break
    return found


def measure(url: str, runs: int) -> dict[str, Any]:
    """Both ways, taking turns, ``runs`` times each; times in ms."""
    import httpx

    token = f"cur{uuid.uuid4().hex[:8]}"
    banks = {way: new_bank(f"curate-{way}") for way in WAYS}
    shell = quiet_shell()
    times: dict[str, list[float]] = {"magic": [], "hand": [], "own": []}
    requests: list[int] = []
    gone = dict.fromkeys(WAYS, 0)
    http = httpx.Client(base_url=url, headers=api_headers(), timeout=60)
    try:
        facts = {way: _seed(http, bank, token, runs + 1) for way, bank in banks.items()}
        with loaded(shell, url, banks["magic"], SCOPING="global") as session:
            s = session.settings
            asked = {
                "budget": s.recall_budget,
                "max_tokens": s.recall_max_tokens,
                "types": list(s.recall_types),
            }
            timers = [
                HttpTimer(session._parts.connection.client, "update_memory"),
                HttpTimer(session._parts.connection.client, "recall"),
            ]
            counted = KernelRequests(session._parts.connection.client)

            def magic(memory_id: str, text: str) -> bool:
                shell.run_line_magic("hindsight", f"forget {memory_id} --reason bench")
                # every seeded fact may be shown (a recall shows 5 by default), so that the
                # forgotten one is absent because it was forgotten, not because it ranked 6th
                query = f"--limit {runs + 1} {token} survey nests"
                memories = shell.run_line_magic("recall", query)
                return all(m.text != text for m in memories)

            def by_hand(memory_id: str, text: str) -> bool:
                bank = f"/v1/default/banks/{banks['hand']}"
                http.patch(
                    f"{bank}/memories/{memory_id}",
                    json={"state": "invalidated", "reason": "bench"},
                ).raise_for_status()
                reply = http.post(
                    f"{bank}/memories/recall", json={"query": f"{token} survey nests", **asked}
                ).json()
                return all(m["text"] != text for m in reply["results"])

            calls = {"magic": magic, "hand": by_hand}
            for way, call in calls.items():  # warm-up: connections, first-use imports
                call(*facts[way].pop())
            for timer in timers:
                timer.take()
            counted.take()
            for run in range(runs):
                order = WAYS if run % 2 == 0 else WAYS[::-1]
                for way in order:
                    memory_id, text = facts[way].pop()
                    started = time.perf_counter()
                    done = calls[way](memory_id, text)
                    elapsed = (time.perf_counter() - started) * 1000
                    times[way].append(elapsed)
                    gone[way] += int(done)
                    if way == "magic":
                        requests.append(counted.take())
                        times["own"].append(elapsed - sum(timer.take() for timer in timers))
    finally:
        http.close()
        for bank_id in banks.values():
            delete_bank(url, bank_id)
    stats = {way: Stat.of(values) for way, values in times.items()}
    result: dict[str, Any] = {way: stat.to_json() for way, stat in stats.items()}
    result.update(
        ratio=stats["magic"].median / stats["hand"].median,
        requests=max(requests),
        gone=gone,
        runs=runs,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each way")
    args = parser.parse_args(argv)
    with bench_server() as server:
        result = measure(server.url, args.runs)
    print(json.dumps(result, indent=2))
    print(
        f"forget-then-recall, median of {args.runs}: extension {result['magic']['median']:.1f} "
        f"ms, by hand {result['hand']['median']:.1f} ms, ratio {result['ratio']:.2f} (bar ≤ "
        f"{BAR}); the extension's own time {result['own']['median']:.2f} ms; requests per "
        f"magic pair at most {result['requests']} (forget + recall); gone {result['gone']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
