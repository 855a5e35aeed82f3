"""Retain call cost as the user sees it: ``%retain`` vs. calling Hindsight by hand.

- ``%retain`` through the shell's magic API (``shell.run_line_magic("retain", text)``) with the
  extension loaded in this process (its journal and worker on, as in a notebook);
- the official ``hindsight-client`` (``Hindsight.retain``, synchronous by default) in a plain
  Python process, and its ``retain_async=True`` variant;
- a direct ``httpx`` POST of ``{"items": [...], "async": true}`` on a persistent connection.

Without ``hindsight-client`` installed (``pip install -e '.[bench]'``) its rows say so.

The client's synchronous API runs ``loop.run_until_complete`` and so fails inside a running
event loop — which is where a Jupyter kernel runs cells. That is shown in a real ipykernel when
``jupyter_client`` is installed, otherwise under ``asyncio.run`` in a plain process.

Run alone: ``python -m bench.retain_cost``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from .common import (
    Stat,
    delete_bank,
    kernel_env,
    local_server_url,
    new_bank,
    quiet_shell,
    raw_client,
    run_child,
)

FACT = "Bench fact {i}: the churn table double-counts Q3 refunds; dedupe on order_id first."

# A plain Python process, as a user calling the client by hand would have.
CLIENT_CHILD = r"""
import asyncio, json, sys, time, warnings
from hindsight_client import Hindsight

url, bank, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
fact = "Client fact {i}: the churn table double-counts Q3 refunds; dedupe on order_id first."
client = Hindsight(base_url=url)
client.retain(bank_id=bank, content="warm-up: the first call creates the bank")
client.retain(bank_id=bank, content="warm-up", retain_async=True)

def timed(retain_async):
    values = []
    for i in range(runs):
        started = time.perf_counter_ns()
        client.retain(bank_id=bank, content=fact.format(i=i), retain_async=retain_async)
        values.append((time.perf_counter_ns() - started) / 1000)
    return values

sync_us = timed(False)
async_us = timed(True)
client.close()

async def inside_a_running_loop():
    try:
        Hindsight(base_url=url).retain(bank_id=bank, content="from inside a running event loop")
    except RuntimeError as error:
        return f"{type(error).__name__}: {error}"
    return "no error"

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "coroutine ... was never awaited"
    in_loop = asyncio.run(inside_a_running_loop())
print(json.dumps({"sync_us": sync_us, "async_us": async_us, "in_loop": in_loop}))
"""

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


def time_magic(url: str, runs: int) -> dict[str, Any]:
    """``%retain`` per call (µs), then everything delivered."""
    from hindsight_magic import load_ipython_extension, unload_ipython_extension

    bank_id = new_bank("retain")
    shell = quiet_shell()
    with tempfile.TemporaryDirectory(prefix="bench-retain-") as tmp:
        os.environ.update(kernel_env(url, bank_id, os.path.join(tmp, "journal.sqlite3")))
        load_ipython_extension(shell)
        try:
            session = shell.magics_manager.registry["HindsightMagics"].session
            for i in range(min(50, runs)):  # warm-up
                shell.run_line_magic("retain", FACT.format(i=-i))
            values = []
            for i in range(runs):
                started = time.perf_counter_ns()
                shell.run_line_magic("retain", FACT.format(i=i))
                values.append((time.perf_counter_ns() - started) / 1000)
            session.flush(120)
            stats = session.queue.stats()
        finally:
            unload_ipython_extension(shell)
    delete_bank(url, bank_id)
    return {"us": values, "accepted": stats.accepted, "failed": stats.failed}


def time_httpx(url: str, runs: int) -> list[float]:
    """A hand-written ``httpx`` POST with ``async: true`` per call (µs)."""
    bank_id = new_bank("httpx")
    values = []
    with raw_client(url) as http:
        path = f"/v1/default/banks/{bank_id}/memories"
        for i in range(-3, runs):
            body = {"items": [{"content": FACT.format(i=i)}], "async": True}
            started = time.perf_counter_ns()
            http.post(path, json=body).raise_for_status()
            if i >= 0:  # the first calls open the connection and create the bank
                values.append((time.perf_counter_ns() - started) / 1000)
    delete_bank(url, bank_id)
    return values


def measure(url: str, magic_runs: int, client_runs: int, http_runs: int) -> dict[str, Any]:
    """All three ways side by side; times in µs."""
    magic = time_magic(url, magic_runs)
    result: dict[str, Any] = {
        "magic": Stat.of(magic["us"]).to_json(),
        "magic_accepted": magic["accepted"],
        "magic_failed": magic["failed"],
        "magic_expected": magic_runs + min(50, magic_runs),
        "client": None,
    }
    if importlib.util.find_spec("hindsight_client") is not None:
        bank_id = new_bank("client")
        try:
            client = run_child(["-c", CLIENT_CHILD, url, bank_id, str(client_runs)])
            result["client"] = {
                "sync": Stat.of(client["sync_us"]).to_json(),
                "async": Stat.of(client["async_us"]).to_json(),
                "in_loop": client["in_loop"],
                "in_kernel": client_in_a_kernel(url, bank_id),
                "version": importlib.metadata.version("hindsight-client"),
            }
        finally:
            delete_bank(url, bank_id)
    result["httpx"] = Stat.of(time_httpx(url, http_runs)).to_json()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--magic-runs", type=int, default=1000)
    parser.add_argument("--client-runs", type=int, default=20)
    parser.add_argument("--http-runs", type=int, default=200)
    args = parser.parse_args(argv)
    url = local_server_url()
    result = measure(url, args.magic_runs, args.client_runs, args.http_runs)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
