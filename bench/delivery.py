"""Delivery: N memories queued with ``%retain`` as fast as possible, then drained to the server.

Each run is a fresh process (a "kernel": an IPython shell with the extension loaded, journal on)
so its peak RSS is the kernel's own. Reported per run: time to queue all, wall time from the
first ``%retain`` until the server accepted every memory, HTTP requests (retain POSTs, from
``queue.stats().requests``), memories lost (queued − accepted, plus failed) and peak RSS.

The server side is checked too: the bank's ``batch_retain`` operations are listed and their
``items_count`` summed; it must equal N. (The server then extracts facts and embeds them in the
background — at ~0.1–0.3 s per memory on two CPU cores that takes far longer than this benchmark,
so the bank is deleted afterwards, which also cancels that work.)

Run alone: ``python -m bench.delivery [--count N] [--runs R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any

from .common import (
    Stat,
    bench_server,
    current_rss_mb,
    delete_bank,
    kernel_env,
    new_bank,
    peak_rss_mb,
    quiet_shell,
    raw_client,
    run_child,
    settled,
)

TEXT = "Delivery memory {i}: run {run} measured queue throughput; nothing may be lost or doubled."
DRAIN_TIMEOUT_S = 600.0


def child(count: int, run: int) -> dict[str, Any]:
    """In the fresh process: load, queue ``count`` memories, wait until all were accepted."""
    from hindsight_magic import load_ipython_extension

    shell = quiet_shell()
    load_ipython_extension(shell)
    session = shell.magics_manager.registry["HindsightMagics"].session
    settled(session)
    session.flush(30)  # whatever loading queued (nothing, normally) is out of the way
    base = session._parts.queue.stats()
    rss_loaded = current_rss_mb()
    retain = shell.run_line_magic
    started = time.perf_counter()
    for i in range(count):
        retain("retain", TEXT.format(i=i, run=run))
    queued = time.perf_counter()
    deadline = queued + DRAIN_TIMEOUT_S
    stats = session._parts.queue.stats()
    while time.perf_counter() < deadline:
        session.flush(5)
        stats = session._parts.queue.stats()
        if stats.accepted - base.accepted + stats.failed >= count and not stats.pending:
            break
    accepted_at = time.perf_counter()
    return {
        "queue_s": queued - started,
        "accepted_s": accepted_at - started,
        "accepted": stats.accepted - base.accepted,
        "failed": stats.failed,
        "pending": stats.pending + stats.in_flight + stats.retrying,
        "requests": stats.requests - base.requests,
        "rss_loaded_mb": rss_loaded,
        "peak_rss_mb": peak_rss_mb(),
    }


def server_items(url: str, bank_id: str) -> tuple[int, int]:
    """(batch operations, memories they carry) the server recorded for ``bank_id``."""
    operations = items = 0
    with raw_client(url) as http:
        offset = 0
        while True:
            reply = http.get(
                f"/v1/default/banks/{bank_id}/operations",
                params={"type": "batch_retain", "limit": 100, "offset": offset},
            )
            reply.raise_for_status()
            page = reply.json().get("operations", [])
            operations += len(page)
            items += sum(int(op.get("items_count") or 0) for op in page)
            if len(page) < 100:
                return operations, items
            offset += 100


def measure(url: str, count: int, runs: int) -> dict[str, Any]:
    """``runs`` fresh kernels, each delivering ``count`` memories to its own bank."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-delivery-") as tmp:
        for run in range(runs):
            bank_id = new_bank("delivery")
            env = kernel_env(url, bank_id, os.path.join(tmp, f"journal-{run}.sqlite3"))
            args = ["-m", "bench.delivery", "--child", "--count", str(count), "--run", str(run)]
            try:
                row = run_child(args, env, timeout=DRAIN_TIMEOUT_S + 300)
                row["server_operations"], row["server_items"] = server_items(url, bank_id)
            finally:
                delete_bank(url, bank_id)
            row["lost"] = count - row["accepted"] + row["failed"]
            rows.append(row)

    def stat(key: str) -> dict[str, float]:
        return Stat.of(row[key] for row in rows).to_json()

    keys = ("queue_s", "accepted_s", "requests", "lost", "peak_rss_mb", "rss_loaded_mb")
    result: dict[str, Any] = {key: stat(key) for key in keys}
    result.update(
        count=count,
        runs=rows,
        server_items=[row["server_items"] for row in rows],
        server_operations=[row["server_operations"] for row in rows],
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.count, args.run)))
        sys.stdout.flush()
        os._exit(0)  # delivered already; skip the exit-time flush
    with bench_server() as server:
        print(json.dumps(measure(server.url, args.count, args.runs), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
