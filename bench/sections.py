"""The table's rows for writing memories: call cost, read-after-write, the tail, delivery."""

from __future__ import annotations

from typing import Any

from .common import Stat
from .report import Row, Section, num, stat, stat_row, unit

RAW_BAR = 1.10  # issue 13: read-after-write within 1.1× of the by-hand peer


def retain_rows(r: dict[str, Any]) -> Section:
    magic = Stat.from_json(r["magic"])
    client = r["client"]
    rows = [
        stat_row(
            "1",
            "`%retain TEXT` via `shell.run_line_magic` (journal on, worker sending meanwhile)",
            magic,
            "µs",
            bar="≤ 100 µs",
            passed=magic.median <= 100,
        )
    ]
    notes = [
        f"1: {r['rounds']} alternating rounds in one process; each runs a block of `%retain` "
        "calls, one call of each client way and a block of `httpx` posts, the order rotating "
        "from round to round (the extension's queue is flushed, untimed, before each by-hand "
        f"block). {r['magic_accepted']} of {r['magic_expected']} memories queued by `%retain` "
        f"(timed calls plus warm-up) were accepted by the server, {r['magic_failed']} failed."
    ]
    missing = "hindsight-client is not installed: `pip install -e '.[bench]'`"
    if client is None:
        rows += [
            Row("1", "`hindsight-client` `retain(retain_async=True)`", missing),
            Row("1", "speed-up: async client median ÷ `%retain` median", "n/a", bar="≥ 100×"),
        ]
    else:
        peer = Stat.from_json(client["async"])
        sync = Stat.from_json(client["sync"])
        speedup = peer.median / magic.median
        rows += [
            stat_row(
                "1",
                f"`hindsight-client` {client['version']} `retain(retain_async=True)` — the "
                "like-for-like peer: returns once the server has queued the memory",
                peer,
                "ms",
                1e-3,
            ),
            Row(
                "1",
                "speed-up: async client median ÷ `%retain` median",
                f"{num(round(speedup))}×",
                bar="≥ 100×",
                passed=speedup >= 100,
            ),
            stat_row(
                "1",
                "`hindsight-client` `retain` (synchronous, its default: waits for extraction), "
                "for context",
                sync,
                "ms",
                1e-3,
            ),
            Row(
                "1",
                "… synchronous client median ÷ `%retain` median, for context",
                f"{num(round(sync.median / magic.median))}×",
            ),
        ]
    rows.append(
        stat_row(
            "1",
            '`httpx` POST `{"items": [...], "async": true}`, persistent connection',
            Stat.from_json(r["httpx"]),
            "ms",
            1e-3,
        )
    )
    if client is not None:
        where = "in a Jupyter kernel cell" if client["in_kernel"] else "under `asyncio.run`"
        shown = client["in_kernel"] or client["in_loop"]
        rows.append(Row("1", f"synchronous client `retain` {where}", f"`{shown}`"))
        notes[0] += (
            " The headline compares `%retain` with the client's `retain_async=True`, which, "
            "like `%retain`'s own request, returns once the server has queued the memory; the "
            "client's default (synchronous) `retain` waits until the server has extracted and "
            "embedded it and is shown for context only. Inside a running event loop the "
            f"client's synchronous API raises `{client['in_loop']}` (under `asyncio.run`)"
            + (
                f"; in a real Jupyter kernel cell: `{client['in_kernel']}`."
                if client["in_kernel"]
                else "."
            )
            + " A Jupyter kernel runs cells inside its event loop, so there only the client's "
            "coroutines (`await client.aretain(...)`) work; `%retain` works in both."
        )
    return rows, notes


def read_after_write_rows(raw: dict[str, Any] | None) -> Section:
    if raw is None:
        missing = "hindsight-client is not installed: `pip install -e '.[bench]'`"
        return [Row("2", "read-after-write vs. by hand", missing, bar=f"≤ {RAW_BAR}")], []
    runs, found = raw["runs"], raw["found"]
    ratio = raw["ratio"]
    rows = [
        stat_row(
            "2",
            "`%retain X` then `%recall X` (a fresh fact each run), via `run_line_magic`",
            stat(raw, "magic"),
            "ms",
        ),
        stat_row(
            "2",
            "by hand: `await client.aretain(bank_id, content=X)` (synchronous retain) then "
            "`await client.arecall(bank_id, query=X)`",
            stat(raw, "hand"),
            "ms",
        ),
        Row(
            "2",
            "read-after-write ratio: extension median ÷ by-hand median",
            f"{ratio:.2f}",
            bar=f"≤ {RAW_BAR}",
            passed=ratio <= RAW_BAR,
        ),
        Row(
            "2",
            "facts found by the recall right after (extension, by hand)",
            f"{found['magic']}/{runs}, {found['hand']}/{runs}",
            bar="all",
            passed=found["magic"] == runs and found["hand"] == runs,
        ),
    ]
    notes = [
        f"2: `python -m bench.read_after_write`: {runs} runs of each way, alternating (the "
        "extension first in even runs), in one process, each way on its own fresh bank; every "
        "run retains a new fact with a unique token and recalls it at once (found = a recalled "
        "memory contains the token). By hand uses the client's coroutines on the process's "
        "event loop, as a notebook cell would `await` them, and the extension's recall budget, "
        "token limit and types. The extension's recall first sends what is queued: a read "
        "sends its bank's `%retain` memories synchronously (each has its own client-made "
        "`document_id`, so a re-send after a lost reply replaces rather than duplicates), so it "
        "waits for the server's indexing exactly as the by-hand synchronous retain does. Its "
        "memory also carries the context, timestamp, tags and session metadata, which the mock "
        "LLM turns into a few more facts to embed than the by-hand call's bare content."
    ]
    return rows, notes


TAIL_MISSING = (
    "not measured: `bench.retain_tail` (with its `measure`) is not on this branch yet "
    "(issue 13 item 2)"
)


def tail_rows(tail: dict[str, Any] | None) -> Section:
    """``%retain`` p50/p99/max in one kernel and in 8 sharing a journal (``bench.retain_tail``).

    ``tail`` is what ``retain_tail.measure`` returns (see ``bench.__main__._tail``). None: the
    module (or its ``measure``) is missing, and the rows say so — their place is kept.
    """
    if tail is None:
        return [
            Row("3", "`%retain` p50/p99/max, one kernel (2 000 calls)", TAIL_MISSING),
            Row("3", "`%retain` p99 per kernel, 8 kernels sharing one journal", TAIL_MISSING),
        ], []
    (one,), many = tail["one"], tail["many"]
    p99_one, max_one = tail["bars"]["one"]
    p99_many = tail["bars"]["many"][0]
    t = one["retain"]
    calls = str(t["n"])
    rows = [
        Row("3", "`%retain` p50, one kernel", unit(t["p50_ms"], "ms"), n=calls),
        Row(
            "3",
            "`%retain` p99, one kernel",
            unit(t["p99_ms"], "ms"),
            n=calls,
            bar=f"≤ {num(p99_one)} ms",
            passed=t["p99_ms"] <= p99_one,
        ),
        Row(
            "3",
            "`%retain` max, one kernel",
            unit(t["max_ms"], "ms"),
            n=calls,
            bar=f"≤ {num(max_one)} ms",
            passed=t["max_ms"] <= max_one,
        ),
    ]
    if "noop" in one:
        rows.append(
            Row(
                "3",
                "a no-op line magic's p99, same kernel",
                unit(one["noop"]["p99_ms"], "ms"),
                n=calls,
            )
        )
    for key, what in (("p50_ms", "p50"), ("p99_ms", "p99"), ("max_ms", "max")):
        per_kernel = Stat.of(row["retain"][key] for row in many)
        kw: dict[str, Any] = {}
        if key == "p99_ms":
            kw = {"bar": f"≤ {num(p99_many)} ms each", "passed": per_kernel.max <= p99_many}
        rows.append(
            stat_row(
                "3",
                f"`%retain` {what} per kernel, {len(many)} kernels, one journal",
                per_kernel,
                "ms",
                **kw,
            )
        )
    exact = all(r["server_items"] == r["queued"] and r["failed"] == 0 for r in [one, *many])
    rows.append(
        Row(
            "3",
            "memories accepted by the server exactly once (all kernels)",
            "yes" if exact else "no",
            bar="yes",
            passed=exact,
        )
    )
    notes = [
        f"3: `python -m bench.retain_tail`: each kernel a fresh process (IPython shell, "
        f"extension loaded, journal on, worker sending meanwhile) timing {calls} `%retain` "
        f"calls; then {len(many)} such kernels sharing one journal file, timing at once. The "
        "server's count of each bank's retained items must equal what was queued."
    ]
    return rows, notes


def delivery_rows(d: dict[str, Any]) -> Section:
    count = d["count"]
    requests = Stat.from_json(d["requests"])
    lost = Stat.from_json(d["lost"])
    server_ok = all(items == count for items in d["server_items"])
    rows = [
        stat_row(
            "4", f"time to queue {num(count)} memories with `%retain`", stat(d, "queue_s"), "s"
        ),
        stat_row(
            "4",
            f"wall time from the first `%retain` until all {num(count)} were accepted",
            stat(d, "accepted_s"),
            "s",
        ),
        stat_row(
            "4",
            "HTTP requests made (`queue.stats().requests`)",
            requests,
            "",
            bar="≤ 700",
            passed=requests.max <= 700,
        ),
        stat_row(
            "4",
            "memories lost (queued − accepted + failed; server-side count checked)",
            lost,
            "",
            bar="0",
            passed=lost.max == 0 and server_ok,
        ),
        stat_row("4", "peak RSS of the kernel process (VmHWM)", stat(d, "peak_rss_mb"), "MB"),
    ]
    rss = Stat.from_json(d["rss_loaded_mb"])
    notes = [
        f"4: each run is a fresh kernel-like process (IPython shell, extension loaded, journal on) "
        f"queuing {num(count)} memories to its own bank. Server side, the bank's `batch_retain` "
        f"operations carried {', '.join(num(n) for n in d['server_items'])} memories in "
        f"{', '.join(str(n) for n in d['server_operations'])} operations (HTTP requests made: "
        f"{', '.join(str(run['requests']) for run in d['runs'])}). "
        f"RSS right after loading the extension: {rss.median:.0f} MB (median). The server "
        "then extracts facts and embeds every memory in the background — on this machine far "
        "slower than accepting them — so each run's bank is deleted afterwards.",
    ]
    return rows, notes
