"""Retain call cost as the user sees it: ``%retain`` vs. calling Hindsight by hand.

In one process, in alternating rounds (each round runs every way once, the order rotating from
round to round, so no way gets all the quiet or all the busy moments):

- ``%retain`` through the shell's magic API (``shell.run_line_magic("retain", text)``) with the
  extension loaded (its journal and worker on, the worker sending meanwhile, as in a notebook):
  a block of calls per round, each followed by a no-op line magic call timed the same way (the
  floor that IPython's magic call and the machine give at that moment);
- the official ``hindsight-client``: ``Hindsight.retain(..., retain_async=True)`` — the server
  queues the memory and answers, like ``%retain``'s own request: the like-for-like peer — and
  ``Hindsight.retain`` (synchronous, its default: waits until the server has extracted and
  embedded the memory), one call each per round;
- a direct ``httpx`` POST of ``{"items": [...], "async": true}`` on a persistent connection.

Before each by-hand block the extension's queue is flushed (untimed), so its worker does not
compete with the calls by hand. Without ``hindsight-client`` installed (``pip install -e
'.[bench]'``) its rows say so.

The client's synchronous API runs ``loop.run_until_complete`` and so fails inside a running
event loop — which is where a Jupyter kernel runs cells. That is shown in a real ipykernel when
``jupyter_client`` is installed, and under ``asyncio.run`` in this process.

Run alone: ``python -m bench.retain_cost``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from .common import (
    Stat,
    bench_server,
    delete_bank,
    loaded,
    new_bank,
    noop_magic,
    quiet_shell,
    raw_client,
)

FACT = "Bench fact {i}: the churn table double-counts Q3 refunds; dedupe on order_id first."
WARM_UP = 50


def sync_api_in_a_loop(url: str, bank_id: str) -> str:
    """What the client's synchronous ``retain`` does inside a running event loop."""
    from hindsight_client import Hindsight

    async def inside_a_running_loop() -> str:
        client = Hindsight(base_url=url)
        try:
            client.retain(bank_id=bank_id, content="from inside a running event loop")
        except RuntimeError as error:
            return f"{type(error).__name__}: {error}"
        return "no error"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "coroutine ... was never awaited"
        return asyncio.run(inside_a_running_loop())


KERNEL_CELL = """
import warnings
warnings.simplefilter("ignore")
from hindsight_client import Hindsight
client = Hindsight(base_url={url!r})
try:
    client.retain(bank_id={bank!r}, content="from a Jupyter kernel cell")
    print("RESULT no error")
except Exception as error:
    print(f"RESULT {{type(error).__name__}}: {{error}}")
finally:
    client.close()
"""


def client_in_a_kernel(url: str, bank_id: str) -> str | None:
    """What the synchronous client's ``retain`` does in a real Jupyter kernel cell."""
    try:
        from jupyter_client.manager import start_new_kernel
    except ImportError:
        return None
    manager, client = start_new_kernel(kernel_name="python3", stderr=subprocess.DEVNULL)
    try:
        msg_id = client.execute(KERNEL_CELL.format(url=url, bank=bank_id))
        lines: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            message = client.get_iopub_msg(timeout=120)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                lines.append(content["text"])
            elif kind == "error":
                lines.append(f"RESULT {content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                break
        found = [line for line in "".join(lines).splitlines() if line.startswith("RESULT ")]
        return found[0].removeprefix("RESULT ") if found else None
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _timed(call: Callable[[int], Any], i: int) -> float:
    started = time.perf_counter_ns()
    call(i)
    return (time.perf_counter_ns() - started) / 1000


def _rounds(
    rounds: int,
    ways: list[tuple[str, int, Callable[[int], Any]]],
    quiet: Callable[[], Any],
    floor: Callable[[int], Any],
) -> dict[str, list[float]]:
    """Per-call times (µs) of each way, ``rounds`` rounds, the order rotating every round;
    each ``magic`` call is followed by one of ``floor`` (``noop``), timed the same way."""
    times: dict[str, list[float]] = {name: [] for name, _, _ in ways}
    times["noop"] = []
    calls = 0
    for round_ in range(rounds):
        shift = round_ % len(ways)
        for name, count, call in ways[shift:] + ways[:shift]:
            if name != "magic":
                quiet()  # the extension's worker idle while the calls by hand run
            for _ in range(count):
                times[name].append(_timed(call, calls))
                if name == "magic":  # the floor at the same moment
                    times["noop"].append(_timed(floor, calls))
                calls += 1
    return times


def measure(url: str, magic_runs: int, client_runs: int, http_runs: int) -> dict[str, Any]:
    """Every way side by side, alternating; times in µs."""
    has_client = importlib.util.find_spec("hindsight_client") is not None
    rounds = max(1, client_runs)
    banks = {way: new_bank(way) for way in ("retain", "client", "httpx")}
    shell = quiet_shell()
    http = raw_client(url)
    client: Any = None
    try:
        with loaded(shell, url, banks["retain"]) as session:

            def magic(i: int) -> None:
                shell.run_line_magic("retain", FACT.format(i=i))

            floor = noop_magic(shell)

            def noop(i: int) -> None:  # the floor: IPython's magic call and the machine now
                floor(FACT.format(i=i))

            def by_httpx(i: int) -> None:
                body = {"items": [{"content": FACT.format(i=i)}], "async": True}
                path = f"/v1/default/banks/{banks['httpx']}/memories"
                http.post(path, json=body).raise_for_status()

            ways: list[tuple[str, int, Callable[[int], Any]]] = [
                ("magic", max(1, magic_runs // rounds), magic),
                ("httpx", max(1, http_runs // rounds), by_httpx),
            ]
            if has_client:
                from hindsight_client import Hindsight

                client = Hindsight(base_url=url)

                def client_call(retain_async: bool) -> Callable[[int], Any]:
                    def call(i: int) -> None:
                        text = FACT.format(i=i)
                        client.retain(
                            bank_id=banks["client"], content=text, retain_async=retain_async
                        )

                    return call

                ways[1:1] = [("async", 1, client_call(True)), ("sync", 1, client_call(False))]
            for name, _, call in ways:  # warm-up: connections, banks, caches
                for i in range(WARM_UP if name == "magic" else 2):
                    call(-1 - i)
            times = _rounds(rounds, ways, lambda: session.flush(60), noop)
            if client is not None:  # on the loop it was used on, before asyncio.run below
                client.close()
                client = None
            session.flush(120)
            stats = session._parts.queue.stats()
        result: dict[str, Any] = {
            "magic": Stat.of(times["magic"]).to_json(),
            "noop": Stat.of(times["noop"]).to_json(),
            "magic_accepted": stats.accepted,
            "magic_failed": stats.failed,
            "magic_expected": len(times["magic"]) + WARM_UP,
            "httpx": Stat.of(times["httpx"]).to_json(),
            "rounds": rounds,
            "client": None,
        }
        if has_client:
            result["client"] = {
                "sync": Stat.of(times["sync"]).to_json(),
                "async": Stat.of(times["async"]).to_json(),
                "in_loop": sync_api_in_a_loop(url, banks["client"]),
                "in_kernel": client_in_a_kernel(url, banks["client"]),
                "version": importlib.metadata.version("hindsight-client"),
            }
        return result
    finally:
        if client is not None:
            client.close()
        http.close()
        for bank_id in banks.values():
            delete_bank(url, bank_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--magic-runs", type=int, default=1000)
    parser.add_argument("--client-runs", type=int, default=20, help="rounds (one client call each)")
    parser.add_argument("--http-runs", type=int, default=200)
    args = parser.parse_args(argv)
    with bench_server() as server:
        result = measure(server.url, args.magic_runs, args.client_runs, args.http_runs)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
