"""The table's rows for writing memories: what one call costs, and reading right after."""

from __future__ import annotations

from typing import Any

from . import curation, mcp, pictures, transfers
from .common import Stat
from .report import Row, Section, num, stat, stat_row, unit

RAW_BAR = 1.10  # issue 13: read-after-write within 1.1× of the by-hand peer
# issue 21: %retain within 1.5× of a no-op line magic timed in the same run (an absolute 100 µs
# bar measured the machine more than the extension: the no-op alone took 54-213 µs here)
RETAIN_BAR = 1.5


def retain_rows(r: dict[str, Any]) -> Section:
    magic = Stat.from_json(r["magic"])
    noop = Stat.from_json(r["noop"])
    client = r["client"]
    rows = [
        stat_row(
            "1",
            "`%retain TEXT` via `shell.run_line_magic` (journal on, worker sending meanwhile)",
            magic,
            "µs",
        ),
        stat_row(
            "1",
            "a no-op line magic via `shell.run_line_magic`, right after each `%retain`: "
            "the floor IPython and the machine give at that moment (it also waits for the "
            "worker whenever the `%retain` before it woke it)",
            noop,
            "µs",
        ),
    ]
    ratio = magic.median / noop.median
    rows.append(
        Row(
            "1",
            "`%retain` median ÷ the no-op magic's median, same run (what `%retain` costs beyond "
            "any line magic, on whatever machine this runs)",
            f"{ratio:.2f}",
            bar=f"≤ {RETAIN_BAR}×",
            passed=ratio <= RETAIN_BAR,
        )
    )
    notes = [
        f"1: {r['rounds']} alternating rounds in one process; each runs a block of `%retain` "
        "calls (each followed by a no-op magic call), one call of each client way and a "
        "block of `httpx` posts, the order rotating "
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
    own = stat(raw, "own")
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
        stat_row(
            "2",
            "… by hand with the memory the extension sends (context, timestamp, tags, "
            "metadata, document id), for context",
            stat(raw, "same"),
            "ms",
        ),
        Row(
            "2",
            "… extension median ÷ that by-hand median",
            f"{raw['same_ratio']:.2f}",
        ),
        stat_row(
            "2",
            "extension's own time per read-after-write (call − its retain and recall requests)",
            own,
            "ms",
        ),
        Row(
            "2",
            "facts found by the recall right after (extension, by hand, same memory by hand)",
            ", ".join(f"{found[way]}/{runs}" for way in ("magic", "hand", "same")),
            bar="all",
            passed=all(count == runs for count in found.values()),
        ),
    ]
    notes = [
        f"2: `python -m bench.read_after_write`: {runs} runs of each way, taking turns (the "
        "order rotating from run to run), in one process, each way on its own fresh bank; "
        "every run retains a new fact with a unique token and recalls it at once (found = a "
        "recalled memory contains the token). By hand uses the client's coroutines on the "
        "process's event loop, as a notebook cell would `await` them, and the extension's "
        "recall budget, token limit and types. The extension's recall first sends what is "
        "queued: a read sends its bank's `%retain` memories synchronously (each has its own "
        "client-made `document_id`, so a re-send after a lost reply replaces rather than "
        "duplicates), so it waits for the server's indexing exactly as the by-hand "
        "synchronous retain does, and its own time (the call minus its two HTTP requests, "
        "timed inside the call) stays a few milliseconds. The rest of any difference is the "
        "server's: the extension's memory also carries its context, timestamp, tags and "
        "session metadata, which the mock LLM turns into one more fact to embed than the bare "
        "content (the same-memory row sends that too), and the server's latency varies from "
        "call to call by far more than the extension's own time.",
    ]
    return rows, notes


CURATION_BAR = curation.BAR


def curation_rows(r: dict[str, Any]) -> Section:
    runs, gone = r["runs"], r["gone"]
    rows = [
        stat_row(
            "8",
            "`%hindsight forget ID` then `%recall QUERY` (a different memory each run), via "
            "`run_line_magic`",
            stat(r, "magic"),
            "ms",
        ),
        stat_row(
            "8",
            "by hand with `httpx`: `PATCH …/memories/{id}` (`state: invalidated`) then `POST "
            "…/memories/recall`, same body",
            stat(r, "hand"),
            "ms",
        ),
        Row(
            "8",
            "forget-then-recall ratio: extension median ÷ by-hand median",
            f"{r['ratio']:.2f}",
            bar=f"≤ {CURATION_BAR}",
            passed=r["ratio"] <= CURATION_BAR,
        ),
        stat_row(
            "8",
            "extension's own time per forget-then-recall (call − its two requests)",
            stat(r, "own"),
            "ms",
        ),
        Row(
            "8",
            "HTTP requests per `%hindsight forget ID` + `%recall` on the kernel's thread (most)",
            str(r["requests"]),
            bar="2 (one per curation)",
            passed=r["requests"] <= 2,
        ),
        Row(
            "8",
            "recalls that no longer showed the forgotten memory (extension, by hand)",
            f"{gone['magic']}/{runs}, {gone['hand']}/{runs}",
            bar="all",
            passed=gone["magic"] == gone["hand"] == runs,
        ),
    ]
    notes = [
        f"8: {runs} runs of each way, alternating which goes first, in one process; each way "
        "on its own bank holding the same facts (retained synchronously beforehand), each run "
        "forgetting a different memory by its id. The extension's requests are counted and "
        "timed inside the call, on the kernel's thread."
    ]
    return rows, notes


def transfer_rows(r: dict[str, Any]) -> Section:
    size = r["sizes"]["big"]
    rows = [
        stat_row(
            "9",
            f"`hm.snapshot(path)` of a bank of {num(r['memories'])} memories "
            f"({num(r['documents'])} documents; a {size / 1e6:.1f} MB archive)",
            stat(r, "snapshot"),
            "s",
        ),
        stat_row(
            "9",
            "by hand with `httpx`: `POST …/transfer/export`, poll, `GET` the archive to a file",
            stat(r, "export"),
            "s",
        ),
        Row(
            "9",
            "snapshot ratio: extension median ÷ by-hand median",
            f"{r['snapshot_ratio']:.2f}",
            bar=f"≤ {transfers.BAR}",
            passed=r["snapshot_ratio"] <= transfers.BAR,
        ),
        stat_row(
            "9",
            "`hm.restore(path, into=NEW)` of that archive (manifest check, import, counts)",
            stat(r, "restore"),
            "s",
        ),
        stat_row(
            "9",
            "by hand with `httpx`: `POST …/transfer/import` (multipart from the file), poll",
            stat(r, "import"),
            "s",
        ),
        Row(
            "9",
            "restore ratio: extension median ÷ by-hand median",
            f"{r['restore_ratio']:.2f}",
            bar=f"≤ {transfers.BAR}",
            passed=r["restore_ratio"] <= transfers.BAR,
        ),
        Row(
            "9",
            f"the process's RSS growth while `hm.snapshot` downloads the {size / 1e6:.1f} MB "
            "archive",
            unit(r["growth"]["big"], "MB"),
            bar="flat (≈ the small archive's)",
            passed=r["growth"]["big"] <= r["growth"]["small"] + 8,
        ),
        Row(
            "9",
            f"… the same for a small bank's {r['sizes']['small'] / 1e3:.0f} kB archive",
            unit(r["growth"]["small"], "MB"),
        ),
    ]
    notes = [
        f"9: {r['runs']} runs of each way, alternating which goes first, in one process, "
        "against one bank built beforehand (untimed: documents retained asynchronously and "
        "waited for until indexed); every restore goes into a new bank, deleted afterwards. "
        "Both ways poll the server's operation every 0.2 s; the server's own transfer work "
        "(re-embedding every fact on import) dominates both. Memory is sampled every 5 ms "
        "during the extension's downloads: the archive streams to disk in 1 MB chunks."
    ]
    return rows, notes


MCP_TOOLS = ("recall", "retain", "reflect", "status", "bad input")


def mcp_rows(r: dict[str, Any]) -> Section:
    start = stat(r, "startup")
    rows = [
        stat_row(
            "10",
            "`hindsight-magic mcp` spawned → first `tools/list` answered (the SDK's client, stdio)",
            start,
            "s",
            bar=f"≤ {mcp.STARTUP_BAR_S:.0f} s",
            passed=start.median <= mcp.STARTUP_BAR_S,
        ),
        stat_row(
            "10",
            "… for scale: `python -c 'import mcp.server.mcpserver'`",
            stat(r, "sdk_import"),
            "s",
        ),
        stat_row("10", "… for scale: `python -c pass`", stat(r, "python"), "s"),
    ]
    for tool in MCP_TOOLS:
        own = stat(r, f"{tool} own")
        rows.append(
            stat_row(
                "10",
                f"MCP server's own time per `{tool}` call (its handling − its HTTP requests)"
                if tool != "bad input"
                else "MCP server's own time per call with bad input (an error result)",
                own,
                "ms",
                bar=f"≤ {mcp.OWN_BAR_MS:.0f} ms",
                passed=own.median <= mcp.OWN_BAR_MS,
            )
        )
    rows.append(
        Row(
            "10",
            "tool calls whose error flag was not what the call deserved",
            str(r["unexpected_errors"]),
            bar="0",
            passed=r["unexpected_errors"] == 0,
        )
    )
    notes = [
        f"10: start-up measured {start.n} times, each a new process; then {r['runs']} calls of "
        "each tool, taking turns, through the SDK's in-memory client on the server object "
        "`hindsight-magic mcp` runs. The server's time is taken by an outermost middleware "
        "around each `tools/call`, minus every HTTP request its session made meanwhile."
    ]
    return rows, notes


def picture_rows(r: dict[str, Any]) -> Section:
    rows = []
    sizes = {
        "timeline": f"{num(r['counted'])} memories per {r['by']}, {r['periods']} periods",
        "map": f"the top {r['nodes']} of {num(r['entities'])} entities, {r['edges']} links",
    }
    for name, call in (("timeline", "hm.timeline()"), ("map", "hm.memory_map()")):
        own = stat(r, f"{name} own")
        rows += [
            stat_row(
                "11",
                f"own time per `{call}` shown in a notebook (PNG + SVG + table) of a bank of "
                f"{num(r['memories'])} memories: {sizes[name]} (the call − its HTTP requests)",
                own,
                "ms",
                bar=f"≤ {pictures.BAR_MS:.0f} ms",
                passed=own.median <= pictures.BAR_MS,
            ),
            stat_row("11", "… its HTTP requests, for scale", stat(r, f"{name} http"), "ms"),
            stat_row(
                "11",
                "… the first call in the process (importing matplotlib"
                + (" and networkx)" if name == "map" else ")"),
                stat(r, f"{name} first"),
                "ms",
            ),
        ]
    notes = [
        f"11: a bank of {num(r['memories'])} memories built first from {num(r['documents'])} "
        "documents dated over 90 days (untimed, indexed and consolidated), then "
        f"{r['runs']} turns of each call in one process with the extension loaded; each turn "
        "is the call plus its display (`_repr_mimebundle_`: the PNG "
        f"({num(r['png_bytes'] / 1000)} kB for the timeline), the SVG and the text table), "
        "minus the time spent in the client's HTTP requests (sending, waiting, reading and "
        "decoding the replies)."
    ]
    return rows, notes
