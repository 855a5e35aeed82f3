"""Read-after-write: ``%retain X`` then ``%recall X``, vs. the same by hand, alternating.

Each run retains a fresh fact (a unique token in it) and recalls it at once, timing the pair:

- the extension: ``shell.run_line_magic("retain", X)`` then ``shell.run_line_magic("recall",
  X)`` (journal and worker on; the recall first sends what is queued and waits until the server
  can find it);
- by hand with ``hindsight-client``, as a notebook cell would (``await``, here on this process's
  own event loop): ``await client.aretain(bank_id=…, content=X)`` (synchronous retain: returns
  once the memory is searchable) then ``await client.arecall(bank_id=…, query=X, …)`` with the
  extension's recall budget, token limit and types.

Runs alternate (extension first in even runs, by hand first in odd ones), in one process, each
on its own fresh bank. A run counts as found when a recalled memory contains the fact's token.

Run alone: ``python -m bench.read_after_write [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from .common import Stat, bench_server, delete_bank, kernel_env, new_bank, quiet_shell

FACT = "The {token} pipeline writes its parquet output to the bucket {token}-exports."
BAR = 1.10  # issue 13: the extension within 1.1× of the by-hand peer (medians)


def _fact() -> tuple[str, str]:
    token = f"rw{uuid.uuid4().hex[:10]}"
    return token, FACT.format(token=token)


def measure(url: str, runs: int) -> dict[str, Any] | None:
    """Both ways, alternating, ``runs`` times each; times in ms. None without the client."""
    if importlib.util.find_spec("hindsight_client") is None:
        return None
    from hindsight_client import Hindsight

    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    banks = {"magic": new_bank("raw-magic"), "hand": new_bank("raw-hand")}
    shell = quiet_shell()
    loop = asyncio.new_event_loop()
    client = Hindsight(base_url=url)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-raw-") as tmp:
            env = kernel_env(url, banks["magic"], os.path.join(tmp, "journal.sqlite3"))
            os.environ.update(env)
            load_ipython_extension(shell)
            try:
                settings = shell.magics_manager.registry["HindsightMagics"].session.settings

                def magic(text: str, token: str) -> bool:
                    shell.run_line_magic("retain", text)
                    found = shell.run_line_magic("recall", text)
                    return any(token in memory.text for memory in found)

                def by_hand(text: str, token: str) -> bool:
                    loop.run_until_complete(client.aretain(bank_id=banks["hand"], content=text))
                    reply = loop.run_until_complete(
                        client.arecall(
                            bank_id=banks["hand"],
                            query=text,
                            budget=settings.recall_budget,
                            max_tokens=settings.recall_max_tokens,
                            types=list(settings.recall_types),
                        )
                    )
                    return any(token in (memory.text or "") for memory in reply.results)

                ways: list[tuple[str, Callable[[str, str], bool]]] = [
                    ("magic", magic),
                    ("hand", by_hand),
                ]
                for _, call in ways:  # warm-up: the banks, connections, first-call imports
                    call(*reversed(_fact()))
                times: dict[str, list[float]] = {"magic": [], "hand": []}
                found = {"magic": 0, "hand": 0}
                for run in range(runs):
                    for name, call in ways if run % 2 == 0 else ways[::-1]:
                        token, text = _fact()
                        started = time.perf_counter()
                        hit = call(text, token)
                        times[name].append((time.perf_counter() - started) * 1000)
                        found[name] += int(hit)
            finally:
                unload_ipython_extension(shell)
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()
        for bank_id in banks.values():
            delete_bank(url, bank_id)
    magic_stat, hand_stat = Stat.of(times["magic"]), Stat.of(times["hand"])
    return {
        "magic": magic_stat.to_json(),
        "hand": hand_stat.to_json(),
        "ratio": magic_stat.median / hand_stat.median,
        "found": found,
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each way (≥ 12 for the bar)")
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
        f"{hand:.0f} ms, ratio {result['ratio']:.2f} (bar ≤ {BAR}); found "
        f"{result['found']['magic']}/{args.runs} and {result['found']['hand']}/{args.runs}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
