"""The ``%retain`` tail on the kernel thread: p50/p99/max for one kernel and for 8 at once.

Each kernel is a fresh process: a real IPython ``InteractiveShell`` with the extension loaded
(journal on, worker thread running and sending to the server meanwhile), timing every
``shell.run_line_magic("retain", TEXT)`` call once the worker's startup job (importing httpx
and the reply models) is done, as a user's next cell comes after the load cell. The 8
kernels share one journal file (several open notebooks of one user), start their timed loops
together and run them at once. Each kernel then waits until the server accepted everything it
queued; the server's own count of the items in each bank's retain operations must equal what
was queued (none lost or doubled).

Bars (issue 13): one kernel p99 ≤ 2 ms and max ≤ 20 ms over 2 000 calls; 8 kernels, p99 ≤ 5 ms
each. Every kernel alternates each ``%retain`` with a call of a no-op line magic, timed the
same way, and swaps which of the two runs first at every round (the first call after a wake-up
is the least likely to be preempted, so a fixed order flatters one of them): the floor the
machine and the shell give at that moment. The single kernel calls back to back; the 8 kernels
call ``--pause-ms`` apart (10 ms by default), and once more ``--stress-pause-ms`` apart (2 ms)
for context (the issue names no pause; earlier versions of this benchmark ran the bar 2 ms
apart). At 2 ms the kernels use about twice the CPU they use at 10 ms, and in both runs the
server extracts what they send on whatever is left. Each slow call is classified by the
thread's own counters: an involuntary context switch means the OS ran another task
meanwhile, a voluntary one that the call waited for a lock or I/O.

Server: ``HINDSIGHT_BENCH_URL`` if set, else one started for this run with the project's
launcher in a temporary data dir, discarded afterwards (PostgreSQL's data too).

Run: ``python -m bench.retain_tail [--calls 2000] [--kernels 8] [--pause-ms 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import (
    bench_server,
    busy_cpu_s,
    delete_bank,
    kernel_env,
    machine_line,
    new_bank,
    noop_magic,
    percentile,
    quiet_shell,
    settled,
    wait_until_quiet,
)
from .delivery import server_items

TEXT = "Tail memory {i} of kernel {k}: the nightly export skips rows with a null region."
WARM_UP = 50
DRAIN_TIMEOUT_S = 600.0
BARS = {"one": (2.0, 20.0), "many": (5.0, None)}  # p99 ms, max ms
PAUSE_MS, STRESS_PAUSE_MS = 10.0, 2.0
SLOW_US = 1000.0  # a call this long is checked for why: preempted, or waiting


def summary(values_us: list[float], switches: list[tuple[int, int]]) -> dict[str, Any]:
    """p50/p99/max in ms, and how many calls were slow (over ``SLOW_US``) and what the thread's
    own counters saw during each: only involuntary context switches (``preempted``: the OS
    ran another task), only voluntary ones (``waited``: a lock or I/O), ``both``, or
    ``neither`` (on a virtual machine, the host running something else looks like this)."""
    slow = [s for v, s in zip(values_us, switches, strict=True) if v > SLOW_US]
    return {
        "p50_ms": percentile(values_us, 50) / 1000,
        "p99_ms": percentile(values_us, 99) / 1000,
        "max_ms": max(values_us) / 1000,
        "n": len(values_us),
        "slow": len(slow),
        "preempted": sum(1 for waited, preempted in slow if preempted and not waited),
        "waited": sum(1 for waited, preempted in slow if waited and not preempted),
        "both": sum(1 for waited, preempted in slow if waited and preempted),
        "neither": sum(1 for waited, preempted in slow if not (waited or preempted)),
    }


# -- in each kernel process ------------------------------------------------------------------------


def timed(runs: dict[str, Any], calls: int, kernel: int, pause_s: float) -> dict[str, Any]:
    """Each of ``runs`` called ``calls`` times, alternating (which runs first swaps each
    round), ``pause_s`` after each round; their summaries, and the cores this process and the
    whole machine used meanwhile."""
    values: dict[str, list[float]] = {name: [] for name in runs}
    switches: dict[str, list[tuple[int, int]]] = {name: [] for name in runs}
    order = list(runs.items())
    machine, cpu, wall = busy_cpu_s(), time.process_time(), time.perf_counter()
    for i in range(calls):
        text = TEXT.format(i=i, k=kernel)
        for name, run in order if i % 2 else order[::-1]:
            before = resource.getrusage(resource.RUSAGE_THREAD)
            started = time.perf_counter_ns()
            run(text)
            values[name].append((time.perf_counter_ns() - started) / 1000)
            after = resource.getrusage(resource.RUSAGE_THREAD)
            switches[name].append(
                (after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw)
            )
        if pause_s:
            time.sleep(pause_s)
    wall = time.perf_counter() - wall
    result: dict[str, Any] = {name: summary(values[name], switches[name]) for name in runs}
    result["kernel_cores"] = (time.process_time() - cpu) / wall
    result["machine_cores"] = (busy_cpu_s() - machine) / wall
    return result


def child(calls: int, kernel: int, pause_s: float) -> dict[str, Any]:
    """Load the extension, warm up, say READY; on GO time retains and no-op magics."""
    from hindsight_magic import load_ipython_extension

    shell = quiet_shell()
    load_ipython_extension(shell)
    session = shell.magics_manager.registry["HindsightMagics"].session
    settled(session)
    noop = noop_magic(shell)

    def retain(text: str) -> None:
        shell.run_line_magic("retain", text)

    for i in range(WARM_UP):
        retain(TEXT.format(i=-1 - i, k=kernel))
        noop("")
    session.flush(60)
    print("READY", flush=True)
    sys.stdin.readline()  # GO: every kernel starts together
    result = timed({"noop": noop, "retain": retain}, calls, kernel, pause_s)
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while time.monotonic() < deadline:
        session.flush(5)
        stats = session._parts.queue.stats()
        if not (stats.pending + stats.in_flight + stats.retrying):
            break
    result.update(accepted=stats.accepted, failed=stats.failed, queued=calls + WARM_UP)
    return result


# -- the parent ---------------------------------------------------------------------------------


def run_kernels(
    url: str, journal: Path, calls: int, kernels: int, pause_ms: float
) -> list[dict[str, Any]]:
    """Start ``kernels`` processes on one journal, let them time at once; their results."""
    banks = [new_bank("tail") for _ in range(kernels)]
    procs = []
    try:
        for k, bank in enumerate(banks):
            args = ["-m", "bench.retain_tail", "--child", "--calls", str(calls)]
            args += ["--kernel", str(k), "--pause-ms", str(pause_ms)]
            env = {**os.environ, **kernel_env(url, bank, str(journal), auto_retain="false")}
            procs.append(
                subprocess.Popen(
                    [sys.executable, *args],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=env,
                )
            )
        for proc in procs:  # every kernel loaded and warm before any starts timing
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line.strip() != "READY":
                raise RuntimeError(f"a benchmark kernel failed to start: {line!r}")
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("GO\n")
            proc.stdin.flush()
        results = []
        for proc, bank in zip(procs, banks, strict=True):
            out, _ = proc.communicate(timeout=DRAIN_TIMEOUT_S + 120)
            lines = [line for line in out.splitlines() if line.strip()]
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"a benchmark kernel failed (exit {proc.returncode})")
            row = json.loads(lines[-1])
            row["server_items"] = server_items(url, bank)[1]
            results.append(row)
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for bank in banks:
            delete_bank(url, bank)


def measure(
    url: str,
    calls: int,
    kernels: int,
    pause_ms: float = PAUSE_MS,
    stress_pause_ms: float = STRESS_PAUSE_MS,
    quiet_timeout_s: float = 300.0,
) -> dict[str, Any]:
    """One kernel back to back, then ``kernels`` sharing one journal ``pause_ms`` apart, then
    ``stress_pause_ms`` apart; the rows ``python -m bench`` reports (``{"one": [row], "many":
    [row, …], "stress": [row, …], "bars": BARS, …}``). Each run waits first for a quiet machine
    (at most ``quiet_timeout_s``); ``quiet`` says whether each wait got one."""
    waited = []
    with tempfile.TemporaryDirectory(prefix="bench-tail-") as tmp:
        # each run starts once the server has digested what the one before sent
        waited.append(wait_until_quiet(timeout_s=quiet_timeout_s))
        one = run_kernels(url, Path(tmp, "one.sqlite3"), calls, 1, 0.0)
        waited.append(wait_until_quiet(timeout_s=quiet_timeout_s))
        many = run_kernels(url, Path(tmp, "shared.sqlite3"), calls, kernels, pause_ms)
        waited.append(wait_until_quiet(timeout_s=quiet_timeout_s))
        stress = run_kernels(url, Path(tmp, "stress.sqlite3"), calls, kernels, stress_pause_ms)
    return {
        "one": one,
        "many": many,
        "stress": stress,
        "bars": BARS,
        "pause_ms": pause_ms,
        "stress_pause_ms": stress_pause_ms,
        "quiet_waits_s": [seconds for seconds, _ in waited],
        "quiet": all(quiet for _, quiet in waited),
    }


def report(
    label: str, rows: list[dict[str, Any]], bar: tuple[float, float | None], context: bool = False
) -> bool:
    """Print one line per kernel; True when every kernel met the bar and lost nothing (a run
    for context prints ``within 5 ms`` or ``over 5 ms`` instead of pass or FAIL)."""
    ok = True

    def verdict(met: bool) -> str:
        if context:
            return f"{'within' if met else 'over'} {bar[0]:g} ms"
        return "pass" if met else "FAIL"

    for k, row in enumerate(rows):
        tail, noop = row["retain"], row["noop"]
        exact = row["server_items"] == row["queued"] and row["failed"] == 0
        met = tail["p99_ms"] <= bar[0] and (bar[1] is None or tail["max_ms"] <= bar[1]) and exact
        ok = ok and met
        print(
            f"{label} kernel {k}: %retain p50 {tail['p50_ms']:.3f} ms, "
            f"p99 {tail['p99_ms']:.3f} ms, max {tail['max_ms']:.2f} ms over {tail['n']} calls "
            f"[{verdict(met)}]; "
            f"no-op magic p50 {noop['p50_ms']:.3f} ms, p99 {noop['p99_ms']:.3f} ms, "
            f"max {noop['max_ms']:.2f} ms; server accepted {row['server_items']} of "
            f"{row['queued']} queued, {row['failed']} failed; {tail['slow']} %retain calls "
            f"over {SLOW_US / 1000:g} ms ({tail['preempted']} preempted, {tail['waited']} "
            f"waited, {tail['both']} both, {tail['neither']} neither); machine busy "
            f"{row['machine_cores']:.2f} cores, this kernel {row['kernel_cores']:.2f}"
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed %%retain calls per kernel")
    parser.add_argument("--kernels", type=int, default=8, help="kernels sharing one journal")
    parser.add_argument(
        "--pause-ms",
        type=float,
        default=PAUSE_MS,
        help="pause between two calls of each of the many kernels (one kernel: none)",
    )
    parser.add_argument(
        "--stress-pause-ms",
        type=float,
        default=STRESS_PAUSE_MS,
        help="the pause of the second run of the many kernels (for context, no bar)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kernel", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.calls, args.kernel, args.pause_ms / 1000)), flush=True)
        os._exit(0)  # delivered already; skip the exit-time flush
    print(machine_line())
    with bench_server() as server:
        result = measure(server.url, args.calls, args.kernels, args.pause_ms, args.stress_pause_ms)
    waits = ", ".join(f"{w:.0f}" for w in result["quiet_waits_s"])
    got = "" if result["quiet"] else " (not always reached: the wait gave up)"
    print(f"waited for a quiet machine before each run: {waits} s{got}")
    passed = report("1 kernel, back to back:", result["one"], BARS["one"])
    label = f"{args.kernels} kernels, one journal, {args.pause_ms:g} ms apart:"
    passed &= report(label, result["many"], BARS["many"])
    label = f"{args.kernels} kernels, {args.stress_pause_ms:g} ms apart (context, no bar):"
    report(label, result["stress"], BARS["many"], context=True)
    print("all bars met" if passed else "some bars NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
