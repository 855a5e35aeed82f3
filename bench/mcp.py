"""The MCP server (``hindsight-magic mcp``): its start-up, and its own time per tool call.

Two figures, against a real Hindsight server:

- **start-up**: from spawning ``hindsight-magic mcp`` to the answer of the first ``tools/list``,
  measured by the official SDK's own client over stdio (spawn, ``initialize``, ``tools/list``),
  each run a new process; for scale, the same for ``python -c "import mcp.server.mcpserver"``
  (what importing the SDK alone costs here) and ``python -c pass``. Bar: ≤ 1 s.
- **own time per tool call**: each tool called through the SDK's in-memory client on the same
  server object ``hindsight-magic mcp`` runs. The server's time is taken by an outermost
  middleware around each ``tools/call`` (the SDK's dispatch and argument validation, the tool,
  its result made into the reply), minus the time of its HTTP requests to Hindsight (every
  request of the session's client is timed, on whatever thread it runs); the whole round trip
  through the in-memory client (its own parsing of the reply included) is shown beside it. The
  tools take turns (the order rotating from run to run), in one process. Bar: ≤ 5 ms.

Run alone: ``python -m bench.mcp [--runs N] [--starts N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from .common import Stat, bench_server, delete_bank, kernel_env, new_bank
from .latency import HttpTimer

STARTUP_BAR_S = 1.0
OWN_BAR_MS = 5.0
COMMAND = str(Path(sys.executable).with_name("hindsight-magic"))


def startup(env: dict[str, str], project: str, starts: int) -> dict[str, Any]:
    """Spawn → first ``tools/list`` answered, ``starts`` times (s); the SDK import for scale."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def once() -> float:
        params = StdioServerParameters(command=COMMAND, args=["mcp", "--project", project], env=env)
        started = time.perf_counter()
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                return time.perf_counter() - started

    times = [anyio.run(once) for _ in range(starts)]

    def python(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - started

    sdk = [python("import mcp.server.mcpserver") for _ in range(starts)]
    bare = [python("pass") for _ in range(starts)]
    return {
        "startup": Stat.of(times).to_json(),
        "sdk_import": Stat.of(sdk).to_json(),
        "python": Stat.of(bare).to_json(),
    }


def own_times(project: str, runs: int) -> dict[str, Any]:
    """Each tool's total and own time per call (ms), through the SDK's in-memory client."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client

    from hindsight_magic._agents.memory import ProjectMemory
    from hindsight_magic._agents.server import build_server

    memory = ProjectMemory(project)
    server = build_server(memory)
    served: list[float] = []

    async def timed(ctx: Any, call_next: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return await call_next(ctx)
        finally:
            if ctx.method == "tools/call":
                served.append((time.perf_counter_ns() - started) / 1e6)

    server.middleware.insert(0, timed)  # outermost: the server's whole handling of a call
    session = memory.session()
    timer = HttpTimer(session._parts.connection.client, "call", "retain_batch", any_thread=True)
    token = f"mcp{uuid.uuid4().hex[:8]}"
    calls: dict[str, Any] = {
        "recall": lambda n: ("recall", {"query": f"{token} fact {n}"}),
        "retain": lambda n: ("retain", {"text": f"The {token} fact number {n} is true."}),
        "reflect": lambda n: ("reflect", {"question": f"What is the {token} fact {n}?"}),
        "status": lambda n: ("status", {}),
        "bad input": lambda n: ("recall", {"query": " "}),
    }
    names = list(calls)
    times: dict[str, list[float]] = {f"{name} total": [] for name in names}
    times.update({f"{name} own": [] for name in names})
    times.update({f"{name} round trip own": [] for name in names})
    errors = 0
    try:
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(Client(server)) as client,
        ):
            for run in range(-1, runs):  # run -1: warm-up (first imports, the bank)
                order = names[run % len(names) :] + names[: run % len(names)]
                for name in order:
                    tool, arguments = calls[name](run)
                    timer.take()
                    served.clear()
                    started = time.perf_counter_ns()
                    result = portal.call(client.call_tool, tool, arguments)
                    elapsed = (time.perf_counter_ns() - started) / 1e6
                    errors += int(result.is_error != (name == "bad input"))
                    if run >= 0:
                        http = timer.take()
                        times[f"{name} total"].append(elapsed)
                        times[f"{name} own"].append(sum(served) - http)
                        times[f"{name} round trip own"].append(elapsed - http)
    finally:
        bank = session.scope.bank_id
        memory.close()
    result: dict[str, Any] = {key: Stat.of(values).to_json() for key, values in times.items()}
    result.update(runs=runs, unexpected_errors=errors, bank=bank)
    return result


def measure(url: str, runs: int, starts: int) -> dict[str, Any]:
    """Start-up and own times against the server at ``url``; its bench bank is deleted after."""
    bank = new_bank("mcp")
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        project = os.path.join(tmp, "project")
        os.mkdir(project)
        env = kernel_env(  # no mental models: their background loads would overlap the calls
            url,
            bank,
            os.path.join(tmp, "journal.sqlite3"),
            AUTO_RETAIN="false",
            MENTAL_MODELS="false",
        )
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            result = startup(
                {**env, "HINDSIGHT_MAGIC_DATA_DIR": os.path.join(tmp, "data")}, project, starts
            )
            result.update(own_times(project, runs))
        finally:
            os.environ.clear()
            os.environ.update(saved)
            delete_bank(url, bank)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="calls of each tool")
    parser.add_argument("--starts", type=int, default=10, help="server start-ups")
    args = parser.parse_args(argv)
    with bench_server() as server:
        result = measure(server.url, args.runs, args.starts)
    print(json.dumps(result, indent=2))
    start = result["startup"]["median"]
    print(
        f"start-up to the first tools/list, median of {args.starts}: {start:.2f} s (bar ≤ "
        f"{STARTUP_BAR_S:.0f} s); importing the SDK alone {result['sdk_import']['median']:.2f}"
        f" s, Python alone {result['python']['median']:.2f} s"
    )
    tools = ("recall", "retain", "reflect", "status", "bad input")
    owns = ", ".join(f"{name} {result[f'{name} own']['median']:.2f}" for name in tools)
    totals = ", ".join(f"{name} {result[f'{name} total']['median']:.1f}" for name in tools)
    trips = ", ".join(f"{name} {result[f'{name} round trip own']['median']:.2f}" for name in tools)
    worst = max(result[f"{name} own"]["median"] for name in tools)
    print(
        f"own time per tool call, median of {args.runs} (ms): {owns} (bar ≤ {OWN_BAR_MS:.0f}"
        f" ms: {'pass' if worst <= OWN_BAR_MS else 'FAIL'}); with the in-memory client's own "
        f"work (ms): {trips}; whole calls (ms): {totals}; unexpected errors "
        f"{result['unexpected_errors']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
