"""Read-after-write: ``%retain X`` then ``%recall X``, vs. the same by hand, alternating.

Each run retains a fresh fact (a unique token in it) and recalls it at once, timing the pair:

- the extension: ``shell.run_line_magic("retain", X)`` then ``shell.run_line_magic("recall",
  X)`` (journal and worker on; the recall first sends what is queued and waits until the server
  can find it). Its HTTP requests are timed inside the call too: the rest is the extension's
  own time, free of the server's noise;
- by hand with ``hindsight-client``, as a notebook cell would (``await``, here on this process's
  own event loop): ``await client.aretain(bank_id=…, content=X)`` (synchronous retain: returns
  once the memory is searchable) then ``await client.arecall(bank_id=…, query=X, …)`` with the
  extension's recall budget, token limit and types — the peer of issue 13;
- by hand, sending the same memory the extension sends (its context, timestamp, tags, session
  metadata and document id; the recall with its tags): the same server work, for context.

The ways take turns (the order rotating from run to run), in one process, each on its own fresh
bank. A run counts as found when a recalled memory contains the fact's token.

Run alone: ``python -m bench.read_after_write [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from .common import Stat, bench_server, delete_bank, loaded, new_bank, quiet_shell
from .latency import HttpTimer

FACT = "The {token} pipeline writes its parquet output to the bucket {token}-exports."
BAR = 1.10  # issue 13: the extension within 1.1× of the by-hand peer (medians)
WAYS = ("magic", "hand", "same")


def _fact() -> tuple[str, str]:
    token = f"rw{uuid.uuid4().hex[:10]}"
    return token, FACT.format(token=token)


def measure(url: str, runs: int) -> dict[str, Any] | None:
    """Every way, taking turns, ``runs`` times each; times in ms. None without the client."""
    if importlib.util.find_spec("hindsight_client") is None:
        return None
    from hindsight_client import Hindsight

    from hindsight_magic._delivery.items import own_document_id
    from hindsight_magic._memory.provenance import RETAIN_MAGIC, provenance_metadata
    from hindsight_magic._text import local_timestamp

    banks = {way: new_bank(f"raw-{way}") for way in WAYS}
    shell = quiet_shell()
    loop = asyncio.new_event_loop()
    client = Hindsight(base_url=url)
    times: dict[str, list[float]] = {way: [] for way in (*WAYS, "own")}
    found = dict.fromkeys(WAYS, 0)
    try:
        with loaded(shell, url, banks["magic"]) as session:
            s, scope = session.settings, session.scope
            http = [  # the retain is sent by the worker while the recall waits for it
                HttpTimer(session._parts.connection.client, "retain_batch", any_thread=True),
                HttpTimer(session._parts.connection.client, "recall"),
            ]
            asked = {"budget": s.recall_budget, "max_tokens": s.recall_max_tokens}
            asked["types"] = list(s.recall_types)

            def magic(text: str, token: str) -> bool:
                shell.run_line_magic("retain", text)
                memories = shell.run_line_magic("recall", text)
                return any(token in memory.text for memory in memories)

            def by_hand(text: str, token: str, same: bool = False) -> bool:
                bank_id = banks["same" if same else "hand"]
                extra: dict[str, Any] = {}
                if same:  # what the extension's item carries (session.retain, sender)
                    extra = {
                        "context": s.retain_context,
                        "timestamp": local_timestamp(),
                        "metadata": provenance_metadata(RETAIN_MAGIC, session.session_id, None),
                        "tags": list(scope.retain_tags or ()),
                        "document_id": own_document_id(None),
                    }
                retain = client.aretain(bank_id=bank_id, content=text, **extra)
                loop.run_until_complete(retain)
                tags = {"tags": list(scope.recall_tags or ()), "tags_match": scope.tags_match}
                recall = client.arecall(
                    bank_id=bank_id, query=text, **asked, **(tags if same else {})
                )
                reply = loop.run_until_complete(recall)
                return any(token in (memory.text or "") for memory in reply.results)

            calls: dict[str, Callable[[str, str], bool]] = {
                "magic": magic,
                "hand": by_hand,
                "same": lambda text, token: by_hand(text, token, same=True),
            }
            for call in calls.values():  # warm-up: banks, connections, first-use imports
                call(*reversed(_fact()))
            for timer in http:
                timer.take()
            for run in range(runs):
                order = WAYS[run % 3 :] + WAYS[: run % 3]
                for way in order:
                    token, text = _fact()
                    started = time.perf_counter()
                    hit = calls[way](text, token)
                    elapsed = (time.perf_counter() - started) * 1000
                    times[way].append(elapsed)
                    found[way] += int(hit)
                    if way == "magic":
                        times["own"].append(elapsed - sum(timer.take() for timer in http))
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()
        for bank_id in banks.values():
            delete_bank(url, bank_id)
    stats = {way: Stat.of(values) for way, values in times.items()}
    result: dict[str, Any] = {way: stat.to_json() for way, stat in stats.items()}
    result.update(
        ratio=stats["magic"].median / stats["hand"].median,
        same_ratio=stats["magic"].median / stats["same"].median,
        found=found,
        runs=runs,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24, help="runs of each way (≥ 12 for the bar)")
    args = parser.parse_args(argv)
    with bench_server() as server:
        result = measure(server.url, args.runs)
    if result is None:
        print("hindsight-client is not installed: pip install -e '.[bench]'")
        return 1
    print(json.dumps(result, indent=2))
    magic, hand = result["magic"]["median"], result["hand"]["median"]
    print(
        f"read-after-write, median of {args.runs}: extension {magic:.0f} ms, by hand "
        f"{hand:.0f} ms, ratio {result['ratio']:.2f} (bar ≤ {BAR}); same memory by hand "
        f"{result['same']['median']:.0f} ms; the extension's own time "
        f"{result['own']['median']:.1f} ms; found {result['found']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
