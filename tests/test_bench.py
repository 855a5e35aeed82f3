"""The benchmark suite end to end: ``python -m bench --quick`` runs and its figures are real.

Timings depend on the machine, so no bar is required to pass; what is checked is that every
section ran against the real server and printed numbers that make sense: positive, in
plausible ranges, min ≤ median ≤ max, derived figures consistent with the ones they come from,
no memory lost, and a "Bars met" summary that agrees with the rows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import RunningServer

ROOT = Path(__file__).resolve().parent.parent

COLUMNS = "| # | measurement | median | min | max | n | bar | result |"
UNITS = {"µs": 1e-6, "ms": 1e-3, "s": 1.0, "B": 1.0, "MB": 1e6, "×": 1.0, "": 1.0}
QUANTITY = re.compile(r"(-?\d[\d ]*(?:\.\d+)?) ?(µs|ms|s|MB|B|×)?")


def number(cell: str) -> float:
    """A table figure in base units (seconds, bytes, plain numbers); fails on anything else."""
    found = QUANTITY.fullmatch(cell.strip())
    assert found, f"not a number: {cell!r}"
    return float(found.group(1).replace(" ", "")) * UNITS[found.group(2) or ""]


def rounding(cell: str) -> float:
    """Half a unit of the last digit shown in ``cell``, in base units: how far the shown figure
    may be from the one measured."""
    found = QUANTITY.fullmatch(cell.strip())
    assert found, f"not a number: {cell!r}"
    digits = found.group(1).replace(" ", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return 0.5 * 10**-decimals * UNITS[found.group(2) or ""]


class Table:
    """The printed Markdown table, row by row (looked up by a piece of the measurement)."""

    def __init__(self, out: str) -> None:
        assert COLUMNS in out, out
        lines = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
        self.rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:]]
        assert all(len(row) == 8 for row in self.rows), self.rows

    def row(self, piece: str) -> list[str]:
        found = [row for row in self.rows if piece in row[1]]
        assert found, f"no row with {piece!r}"
        return found[0]

    def median(self, piece: str) -> float:
        return number(self.row(piece)[2])

    def assert_ratio(self, ratio: str, top: str, bottom: str) -> None:
        """Row ``ratio``'s median is row ``top``'s over row ``bottom``'s, up to the rounding of
        the three figures as the table shows them (a ratio near 0.3 of two figures shown to
        two digits may be 3 % from the quotient of the shown figures)."""
        (shown, shown_err), (a, a_err), (b, b_err) = (
            (number(cell), rounding(cell))
            for cell in (self.row(piece)[2] for piece in (ratio, top, bottom))
        )
        low, high = (a - a_err) / (b + b_err) - shown_err, (a + a_err) / (b - b_err) + shown_err
        assert low <= shown <= high, (ratio, shown, a, b)

    def stats(self, piece: str) -> tuple[float, float, float, int]:
        """(median, min, max, n) of a measured row, checked to be ordered and counted."""
        _, what, median, low, high, n, _, _ = self.row(piece)
        figures = (number(median), number(low), number(high))
        if "ratio" not in what:  # a ratio row's median is of all cells, min/max of its blocks
            assert figures[1] <= figures[0] <= figures[2], (piece, figures)
        assert figures[1] <= figures[2], (piece, figures)
        assert n.isdigit(), (piece, n)
        assert int(n) >= 1, (piece, n)
        return (*figures, int(n))


def check_figures(out: str) -> None:
    """Every section's figures are real numbers in plausible ranges (see the module docstring)."""
    table = Table(out)
    timed = [row[1] for row in table.rows if row[3] and row[4] and row[5]]
    assert len(timed) >= 15, timed
    for measurement in timed:
        table.stats(measurement)
    # every note names its sections (``15: …``): ``--sections`` and a section's ``--output``
    # merge by that prefix, and a note without one failed the merge after the measurement
    notes = out.split("## Notes", 1)[1].split("\n## ", 1)[0]
    unnamed = [n for n in notes.splitlines() if n.startswith("- ")]
    unnamed = [n[:80] for n in unnamed if not re.match(r"- \d+(, \d+)*: ", n)]
    assert unnamed == [], unnamed

    # 1: %retain costs microseconds; the speed-ups are the ratios of the medians they name
    retain, _, _, calls = table.stats("`%retain TEXT` via `shell.run_line_magic`")
    floor, _, _, floor_calls = table.stats("a no-op line magic via `shell.run_line_magic`")
    assert 1e-7 < floor < 0.1, floor
    assert floor_calls == calls, (floor_calls, calls)
    peer, *_ = table.stats("`retain(retain_async=True)`")
    sync, *_ = table.stats("`retain` (synchronous, its default")
    assert 1e-6 < retain < 0.1, retain
    assert 1e-4 < peer < 60, peer
    assert 1e-4 < sync < 60, sync
    assert table.median("speed-up: async client median") == pytest.approx(peer / retain, rel=0.05)
    assert table.median("synchronous client median ÷") == pytest.approx(sync / retain, rel=0.05)
    assert table.stats("`httpx` POST")[0] > 0
    assert table.median("`%retain` median ÷ the no-op") == pytest.approx(retain / floor, rel=0.05)

    # 2: read-after-write: both ways found every fresh fact; the ratio is of the two medians
    magic_raw, _, _, runs = table.stats("`%retain X` then `%recall X`")
    hand_raw, _, _, hand_runs = table.stats("by hand: `await client.aretain")
    assert runs == hand_runs >= 3, (runs, hand_runs)
    assert 1e-3 < magic_raw < 60, magic_raw
    assert 1e-3 < hand_raw < 60, hand_raw
    table.assert_ratio(
        "read-after-write ratio", "`%retain X` then `%recall X`", "by hand: `await client.aretain"
    )
    table.stats("by hand with the memory the extension sends")
    table.assert_ratio(
        "extension median ÷ that by-hand",
        "`%retain X` then `%recall X`",
        "by hand with the memory the extension sends",
    )
    own, *_ = table.stats("extension's own time per read-after-write")
    assert 0 < own < magic_raw, (own, magic_raw)
    found = table.row("facts found by the recall right after")[2]
    assert found == ", ".join([f"{runs}/{runs}"] * 3), found

    # 3: the %retain tail: figures in order, plausible (a range, not the bar), nothing lost
    p50, p99, worst = (
        number(table.row(f"`%retain` {what}, one kernel")[2]) for what in ("p50", "p99", "max")
    )
    assert 0 < p50 <= p99 <= worst < 5, (p50, p99, worst)  # seconds
    assert 0 < number(table.row("a no-op line magic's p99, same kernel")[2]) < 5
    many = table.stats("`%retain` p99 per kernel, ")
    assert many[3] >= 2, many
    stressed = table.stats("ms apart, for context (no bar;")
    assert stressed[3] == many[3], (stressed, many)
    floors = [row for row in table.rows if "a no-op line magic's p99 per kernel" in row[1]]
    assert len(floors) == 2, floors
    assert all(int(row[5]) == many[3] for row in floors), floors
    calls = int(table.row("`%retain` p50, one kernel")[5])  # per kernel, in each run
    causes = [row[2] for row in table.rows if "`%retain` (preempted / waited" in row[1]]
    for cause in causes:  # "S of N (P / W / B / X); S' of N": the four kinds add up to S
        slow, total, *kinds, noop_slow, noop_total = map(int, re.findall(r"\d+", cause))
        assert sum(kinds) == slow <= total == noop_total == calls * many[3], cause
        assert noop_slow <= noop_total, cause
    busy = [row[2] for row in table.rows if "cores busy while they timed" in row[1]]
    for cores in busy:  # whole machine / the kernels, the kernels within the machine
        machine, kernels, total = map(float, re.findall(r"[\d.]+", cores))
        assert kernels > 0, cores
        assert kernels <= machine + 0.1, cores
        assert machine <= total + 0.2, cores
    assert len(causes) == len(busy) == 2, (causes, busy)
    assert table.row("accepted by the server exactly once")[2] == "yes"

    # 4: N memories queued, then all accepted with few requests, none lost
    found_count = re.search(r"time to queue ([\d ]+) memories", out)
    assert found_count, "no delivery row"
    count = int(found_count.group(1).replace(" ", ""))
    queued, *_ = table.stats(f"time to queue {found_count.group(1)} memories")
    accepted, *_ = table.stats(f"until all {found_count.group(1)} were accepted")
    assert 0 < queued <= accepted < max(120, count * 0.05), (queued, accepted)
    requests, *_ = table.stats("HTTP requests made")
    assert requests == int(requests), requests
    assert 1 <= requests <= count, requests
    assert table.stats("memories lost")[:3] == (0, 0, 0)
    assert 10e6 < table.median("peak RSS of the kernel process") < 2e9

    # 5: loading takes milliseconds; widgets are never imported by it; the first recall of a
    # new kernel (load included) takes longer than the recall alone, on both sides
    load, *_ = table.stats("`%load_ext hindsight_magic` in a fresh process")
    assert 1e-3 < load < 5, load
    runs_of = re.fullmatch(r"in (\d+) of (\d+) runs", table.row("`ipywidgets` in `sys.modules`")[2])
    assert runs_of, table.row("`ipywidgets` in `sys.modules`")
    assert int(runs_of.group(2)) >= 1
    first, *_ = table.stats("first `%recall` in a new kernel")
    first_recall, *_ = table.stats("… of which the `%recall` itself")
    assert 0 < first_recall < first < 60, (first_recall, first)
    hand_first, *_ = table.stats("by hand, fresh process")
    hand_recall, *_ = table.stats("… of which the `arecall` itself")
    assert 0 < hand_recall < hand_first < 60, (hand_recall, hand_first)
    # the first %retain of a new kernel, on the kernel thread, and the calls after it
    firsts = [row[1] for row in table.rows if row[1].startswith("first `%retain` of a new")]
    assert len(firsts) == 6, firsts
    for piece in firsts:
        first_retain, *_ = table.stats(piece)
        assert 0 < first_retain < 5, (piece, first_retain)
    next_retain, *_ = table.stats("`%retain` calls after it")
    assert 0 < next_retain < 5e-3, next_retain

    # 6: per-cell ratios near 1; the transcript work is timed on the worker; a retain's size
    # does not grow with the session
    for piece in ("cell that does not retain", "cell that triggers a retain"):
        assert 0.3 < table.stats(piece)[0] < 3, piece
    per_cell = table.median("worker CPU per retained cell")
    build, *_ = table.stats("CPU time of one transcript build")
    assert 1e-6 < per_cell < 0.1, per_cell
    assert per_cell < build < 1, (per_cell, build)
    during, *_ = table.stats("arriving as a transcript build starts")
    idle, *_ = table.stats("the same cell while no build runs")
    assert 0 < idle < 1, idle
    assert 0 < during < 1, during
    stall = table.median("stall of a cell that starts during a build")
    assert stall == pytest.approx(during - idle, rel=0.05, abs=2e-6), (stall, during, idle)
    sizes = [number(row[2]) for row in table.rows if "request bytes of full-session" in row[1]]
    assert len(sizes) == 2, sizes
    assert 100 <= sizes[0] <= sizes[1] < 2 * sizes[0], sizes

    # 7: the magics cost their HTTP request plus well under the call itself
    for magic, raw, own in (
        ("`%recall QUERY` via", "raw `POST …/memories/recall`", "own time per `%recall`"),
        ("`%reflect QUESTION` via", "raw `POST …/reflect`", "own time per `%reflect`"),
    ):
        call, *_ = table.stats(magic)
        assert 0 < table.stats(raw)[0] < 60
        assert 0 < table.stats(own)[0] < call, (own, call)

    # 8: forget-then-recall: every recall left the forgotten memory out, one request each
    magic_forget, _, _, runs = table.stats("`%hindsight forget ID` then `%recall QUERY`")
    _, _, _, hand_runs = table.stats("by hand with `httpx`: `PATCH")
    assert runs == hand_runs >= 3, (runs, hand_runs)
    table.assert_ratio(
        "forget-then-recall ratio",
        "`%hindsight forget ID` then `%recall QUERY`",
        "by hand with `httpx`: `PATCH",
    )
    assert 0 < table.stats("own time per forget-then-recall")[0] < magic_forget
    assert table.row("HTTP requests per `%hindsight forget ID`")[2] == "2"
    gone = table.row("recalls that no longer showed the forgotten memory")[2]
    assert gone == f"{runs}/{runs}, {runs}/{runs}", gone

    # 9: snapshot and restore of a bank vs. by hand; memory stays flat during the download
    _, _, _, runs = table.stats("`hm.snapshot(path)` of a bank of")
    _, _, _, hand_runs = table.stats("by hand with `httpx`: `POST …/transfer/export`")
    assert runs == hand_runs >= 1, (runs, hand_runs)
    table.assert_ratio(
        "snapshot ratio",
        "`hm.snapshot(path)` of a bank of",
        "by hand with `httpx`: `POST …/transfer/export`",
    )
    table.stats("`hm.restore(path, into=NEW)`")
    table.stats("by hand with `httpx`: `POST …/transfer/import`")
    table.assert_ratio(
        "restore ratio",
        "`hm.restore(path, into=NEW)`",
        "by hand with `httpx`: `POST …/transfer/import`",
    )
    assert 0 <= table.median("RSS growth while `hm.snapshot` downloads") < 200e6

    # 10: the MCP server starts in about a second and spends milliseconds of its own per call
    start, *_ = table.stats("`hindsight-magic mcp` spawned")
    assert 0.05 < start < 30, start
    for tool in ("`recall` call", "`retain` call", "`reflect` call", "`status` call"):
        own, _, _, calls = table.stats(f"MCP server's own time per {tool}")
        assert 0 < own < 1, (tool, own)
        assert calls >= 1
    assert table.row("tool calls whose error flag was not")[2] == "0"

    # 11: the timeline and the map of a big bank: milliseconds of our own, seconds of HTTP
    for call in ("`hm.timeline()`", "`hm.memory_map()`"):
        row = table.row(f"own time per {call} shown in a notebook")
        memories = re.search(r"a bank of ([\d ]+) memories", row[1])
        assert memories, row
        assert int(memories.group(1).replace(" ", "")) >= 100, row
        own, *_ = table.stats(f"own time per {call}")
        assert 0 < own < 10, (call, own)
    mapped = re.search(r"the top (\d+) of (\d+) entities", table.row("`hm.memory_map()`")[1])
    assert mapped, table.row("`hm.memory_map()`")
    assert 0 < int(mapped.group(1)) <= int(mapped.group(2)), mapped.group(0)  # a real graph
    counted = re.search(r"([\d ]+) memories per (day|week|month)", table.row("`hm.timeline()`")[1])
    assert counted, table.row("`hm.timeline()`")
    assert int(counted.group(1).replace(" ", "")) >= 100

    # 12: recall quality: real fractions of the questions, three ways, nothing scaffolding
    three_ways = ("hit@5 of the extension", "hit@5 by hand (", "hit@5 of BM25")
    quality = [row for row in table.rows if row[0] == "12"]
    spread = [row for row in quality if "spread over two layers" in row[1]]
    one_bank = [row for row in quality if row not in spread]
    found = [number(row[2]) for row in one_bank if row[1].partition(": ")[2].startswith(three_ways)]
    assert len(found) == 6, found  # three ways, two sizes
    assert all(0 <= value <= 1 for value in found), found
    ours = [row for row in one_bank if "hit@5 of the extension" in row[1]]
    assert len(ours) == 2, ours
    for row in spread:  # the full run also asks with the sessions over two layers
        assert 0 <= number(row[2]) <= 1, row
        assert int(row[5]) == int(ours[0][5]), row  # the same questions
    assert all(int(row[5]) >= 20 for row in ours), ours  # the planted facts, each asked
    shown = [row[2] for row in table.rows if "top-5 results that are scaffolding" in row[1]]
    assert len(shown) == 2, shown
    assert all(text.startswith("0 of ") for text in shown), shown
    for row in table.rows:
        if "recall latency ratio on the same bank" in row[1]:
            assert 0.2 < number(row[2]) < 5, row

    # 13: layers: both recalls timed, the ratio of their medians, the merge in milliseconds
    table.stats("`hm.recall` of one bank holding")
    table.stats("`hm.recall` over three layers holding the same")
    table.assert_ratio(
        "three layers ÷ one bank",
        "`hm.recall` over three layers holding the same",
        "`hm.recall` of one bank holding",
    )
    merge, *_ = table.stats("the merge's own time")
    assert 0 < merge < 0.05, merge
    both = re.fullmatch(r"(\d+) / (\d+) of (\d+)", table.row("in the top 5: one bank /")[2])
    assert both, table.row("in the top 5: one bank /")
    assert 0 < int(both.group(1)) <= int(both.group(3)), both.group(0)  # real questions, found
    assert int(both.group(2)) <= int(both.group(3)), both.group(0)

    # 14: re-runs, both ways of running: each ratio is the quotient of the counts it shows,
    # found@5 and distinct@5 are shares of real questions, a re-run's traffic was counted
    shares = re.compile(r"([\d.]+) / ([\d.]+); ([\d.]+) / ([\d.]+); (\d+) of (\d+)(; yes|; no)?")
    for mode in ("JupyterLab", "papermill"):
        ours = [row for row in table.rows if row[0] == "14" and row[1].startswith(mode + ",")]
        ratios = [row for row in ours if "documents per distinct cell version" in row[1]]
        assert ratios, mode
        for row in ratios:
            shown = re.fullmatch(r"([\d.]+)× \(([\d ]+) / ([\d ]+)\)", row[2])
            assert shown, row
            documents, versions = (int(shown.group(n).replace(" ", "")) for n in (2, 3))
            assert documents > 0, row
            assert versions >= 20, row  # the notebooks' cells, each counted
            assert float(shown.group(1)) == pytest.approx(documents / versions, abs=0.006), row
        found_rows = [row for row in ours if "found@5 re-run / once-run" in row[1]]
        assert len(found_rows) >= 2, found_rows  # after the re-runs, and the baseline
        for row in found_rows:
            got = shares.fullmatch(row[2])
            assert got, row
            assert all(0 <= float(got.group(n)) <= 1 for n in range(1, 5)), row
            assert int(got.group(5)) <= int(got.group(6)), row
            assert int(got.group(6)) >= 10, row  # the planted questions, each asked
        first, _, most, _ = table.stats(f"{mode}: memories sent by a notebook's first run")
        late = re.fullmatch(
            r"(\d[\d ]*) in (\d+) of (\d+)", table.row(f"{mode}: memories a kernel still held")[2]
        )
        assert late, mode
        assert int(late.group(2)) <= int(late.group(3)), late.group(0)
        # a JupyterLab-style run flushes before its kernel exits; a papermill run's kernel may
        # be stopped before it sends, and a later kernel delivers what its journal kept
        assert first >= 5 if mode == "JupyterLab" else most + int(late.group(1)) > 0, mode
        sent, _, _, runs = table.stats(f"{mode}: memories sent by a re-run of the unchanged")
        assert sent >= 0, sent
        assert runs >= 1, runs
        assert table.stats(f"{mode}: bytes sent to the server by a re-run of the unchanged")[0] > 0
        ranked = table.row(f"{mode}: the revised decision")[2]
        assert re.fullmatch(r"(#\d+|absent); (none|#\d+(, #\d+)*); (yes|no)", ranked), ranked
        as_of = table.row(f"{mode}: as of a moment before run")[2]
        assert re.fullmatch(r"((#\d+|absent), (absent|#\d+(, #\d+)*)(; )?){2}", as_of), as_of

    # 15: a grown bank: the fill's rate, recall both ways, every call a user waits for
    grown = [row for row in table.rows if row[0] == "15"]

    def grown_row(piece: str) -> list[str]:
        found = [row for row in grown if piece in row[1]]
        assert found, f"no section 15 row with {piece!r}"
        return found[0]

    filled = [row for row in grown if row[1].startswith("ingest into the ")]
    assert filled, "no ingest row"
    assert all(0 < number(row[2]) < 1000 for row in filled), filled  # memories a second
    latency_row = grown_row("recall latency median (p95)")
    sizes = re.match(r"memories ([\d /]+): recall latency median", latency_row[1])
    assert sizes, latency_row
    held = [int(size.replace(" ", "")) for size in sizes.group(1).split(" / ")]
    assert all(size >= 100 for size in held), held  # real banks, filled and indexed
    asked = 0
    for way in ("`hm.recall` (defaults)", "by hand (`hindsight-client`"):
        latency = number(grown_row(f"recall latency median (p95), {way}")[2])
        assert 1e-3 < latency < 60, (way, latency)
        hit = grown_row(f"hit@5, {way}")
        assert 0 <= number(hit[2]) <= 1, hit
        asked = int(hit[5])
        assert asked >= 10, hit  # the planted questions, asked
        assert 0 <= number(grown_row(f"MRR (first 10), {way}")[2]) <= 1
    assert 0.2 < number(grown_row("extension ÷ by hand on the same bank")[2]) < 5
    pools = [row for row in grown if "the extension's ranking over another pool" in row[1]]
    assert len(pools) >= 2, pools
    assert all(0 <= number(row[2]) <= 1 for row in pools), pools
    places = grown_row("answers in the extension's default pool")[2]
    assert sum(map(int, places.split(" / "))) == asked, places  # each question placed once
    waited = ("`%hindsight status`", "`hm.latest()`", "`hm.timeline()`", "`hm.dedupe()`")
    panel = ("first `%hindsight panel` returns", "its first full paint", "a search in the panel")
    for call in (*waited, *panel, "the agents' `recall` tool"):
        assert 0 < number(grown_row(call)[2]) < 600, call
    assert 0 < number(grown_row("`hm.snapshot(path)`")[2]) < 3600
    assert 0 <= number(grown_row("resident memory growth during `hm.snapshot`")[2]) < 500e6
    assert 10e6 < number(grown_row("resident memory after the session")[2]) < 5e9
    assert 0 < number(grown_row("the journal file's size")[2]) < 1e9

    # 16: a class on one server: the key is required; every kernel ran; in every round nothing
    # was lost or doubled, each student's recalls were timed and the server's cost measured
    assert table.row("started with an API key")[2] == "401 / 401 / 200"
    course = table.row("the teacher publishes the course layer")
    assert course[2] == "0 lost, 0 doubled", course
    assert int(re.search(r"acknowledged (\d+)", course[1]).group(1)) >= 5, course
    classroom = [row for row in table.rows if row[0] == "16" and row[1].startswith("round ")]

    def each_round(piece: str) -> list[list[str]]:
        found = [row for row in classroom if piece in row[1]]
        assert len(found) >= 2, f"section 16 has no {piece!r} row for each round"
        return found

    students = 0
    for row in each_round("kernels that ran every cell"):
        ran = re.fullmatch(r"(\d+) of (\d+); (\d+) of (\d+); [\d.]+ s", row[2])
        assert ran, row
        assert ran.group(1) == ran.group(2) == ran.group(4), row  # every kernel ran its lab
        students = int(ran.group(2))
    assert students >= 2
    for piece in ("memories lost", "memories doubled"):
        assert [row[2] for row in each_round(piece)] == ["0"] * len(each_round(piece)), piece
    acknowledged = [number(row[2]) for row in each_round("the server acknowledged")]
    stored = [number(row[2]) for row in each_round("documents on the server")]
    assert acknowledged[0] >= 5 * students, acknowledged  # the first round sent every lab
    assert stored[0] == acknowledged[0], (stored, acknowledged)
    assert stored[1:] == stored[:-1], stored  # re-runs stored nothing new
    for row in each_round("each student's `hm.recall` latency p95"):
        _, low, high, n = table.stats(row[1])
        assert n == students, row
        assert 1e-3 < low <= high < 600, row
    for row in each_round("until the server had indexed everything"):
        assert 0 <= number(row[2]) < 3600, row
    for row in each_round("CPU seconds over the round"):
        api, postgres, machine = (number(part) for part in row[2].split(" / "))
        assert 0 < api <= machine, row
        assert 0 <= postgres <= machine, row
    for row in each_round("peak resident memory (MB)"):
        api, postgres = (number(part) for part in row[2].split(" / "))
        assert 100 < api < 20_000, row  # the API process holds the embedding model

    # 17: a long kernel: each end ÷ start is the quotient of the two figures it names, every
    # cell that ran was looked at
    long_rows = [row for row in table.rows if row[0] == "17"]
    assert len(long_rows) >= 6, long_rows
    *ratios, lost = long_rows
    for row in ratios:
        spread = r"(?: \(([\d .]+)–([\d .]+)\))?"  # the turns' range, for the timed ones
        shown = re.search(rf": (\d[\d .]*){spread} → (\d[\d .]*){spread}; end ÷ start$", row[1])
        assert shown, row
        start, end = shown.group(1), shown.group(4)
        assert number(start) > 0, row
        assert number(end) > 0, row
        for median, low, high in ((start, *shown.group(2, 3)), (end, *shown.group(5, 6))):
            if low is not None:
                assert number(low) <= number(median) <= number(high), row
        slack = rounding(start) / number(start) + rounding(end) / number(end)
        quotient = number(end) / number(start)
        # the two figures are rounded, and so is the quotient shown: 0.92 → 0.91 may read 1.00×
        allowed = quotient * slack + rounding(row[2]) + 1e-9
        assert abs(number(row[2]) - quotient) <= allowed, row
    assert re.fullmatch(r"0 of [\d ]+", lost[2]), lost

    # the summary counts the rows that have a bar
    barred = [row for row in table.rows if row[6]]
    assert all(row[7] in ("pass", "**FAIL**") for row in barred), barred
    passed = sum(row[7] == "pass" for row in barred)
    assert f"Bars met: {passed} of {len(barred)}." in out


def test_the_committed_benchmarks_md_has_real_figures() -> None:
    """BENCHMARKS.md as ``python -m bench`` wrote it: every figure parses and is in range."""
    text = (ROOT / "BENCHMARKS.md").read_text()
    check_figures(text)
    assert re.search(r"Made by `python -m bench` on \d{4}-\d\d-\d\d", text)
    assert re.search(r"load average \(1 min\) [\d.]+ at the start, [\d.]+ at the end", text)
    assert "## Not measurable here" in text


@pytest.mark.integration
def test_quick_benchmark_prints_real_figures(
    hindsight_server: RunningServer, tmp_path: Path
) -> None:
    # its own temporary and data folders, to see that the run leaves no file in either
    temporary, data = tmp_path / "tmp", tmp_path / "data"
    temporary.mkdir()
    env = {
        **os.environ,
        "HINDSIGHT_BENCH_URL": hindsight_server.url,
        "TMPDIR": str(temporary),
        "HINDSIGHT_MAGIC_DATA_DIR": str(data),
    }
    env.pop("HINDSIGHT_JOURNAL_PATH", None)
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    check_figures(done.stdout)
    assert "machine: " in done.stdout
    assert "Made by `python -m bench --quick`" in done.stdout
    assert "## Not measurable here" in done.stdout
    assert "wrote" not in done.stderr  # quick mode leaves BENCHMARKS.md alone
    left = [path for path in (*temporary.rglob("*"), *data.rglob("*")) if path.is_file()]
    assert left == []  # no journal written after its folder went, none in the data dir


@pytest.mark.integration
def test_a_bench_module_stops_and_deletes_the_server_it_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import httpx

    monkeypatch.syspath_prepend(str(ROOT))
    from bench.common import bench_server

    monkeypatch.delenv("HINDSIGHT_BENCH_URL", raising=False)
    with bench_server() as server:
        assert httpx.get(f"{server.url}/health", timeout=10, trust_env=False).status_code == 200
        assert server.data_dir is not None
        assert server.data_dir.is_dir()
        assert "stopped and deleted afterwards" in server.how
    assert not server.data_dir.exists()  # PostgreSQL's data and the server's state are gone
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{server.url}/health", timeout=2, trust_env=False)


def test_with_a_bench_url_no_server_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.common import bench_server

    monkeypatch.setenv("HINDSIGHT_BENCH_URL", "http://127.0.0.1:9/")
    with bench_server() as server:
        assert server.url == "http://127.0.0.1:9"
        assert server.data_dir is None
        assert "HINDSIGHT_BENCH_URL" in server.how


def test_a_classroom_lab_is_the_same_every_round_and_its_tally_sees_losses_and_doubles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``bench.classroom``: a student's lab is the same notebook in every round, its own notes
    retained before they are recalled; the tally finds an acknowledged document the bank does
    not hold, a cell stored under a second version and a text stored twice."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.classroom import course_notes, lab_notebook, own_notes, tally

    notes = course_notes(40)
    assert len({note.answer for note in notes}) == 40  # every note answers its question alone
    lab = lab_notebook(7, 40, notes)
    assert lab == lab_notebook(7, 40, course_notes(40))
    assert len(lab.cells) == 40
    assert (lab.recalls, lab.retains) == (9, 3)
    assert lab.cells[-1].startswith("# hand in")
    assert "hm.snapshot(" in lab.cells[-1]
    for fact in own_notes(7):
        retained = lab.cells.index(f"%retain {fact.text}")
        asked = [n for n, cell in enumerate(lab.cells) if repr(fact.question) in cell]
        assert asked, fact
        assert min(asked) > retained, fact
    assert len(lab_notebook(7, 10, notes).cells) == 10

    def document(key: str, version: str, content: str, when: str) -> dict[str, object]:
        doc_id = f"hm-cell-{'a' * 10}-{key * 10}-{version * 12}.1"
        return {"id": doc_id, "content_hash": content, "created_at": when, "memory_unit_count": 1}

    first, second = document("b", "1", "h1", "1"), document("c", "1", "h2", "2")
    clean = tally([first, second], {str(first["id"]), str(second["id"])})
    assert (clean["lost"], clean["doubled"]) == (0, 0)
    again = document("b", "2", "h3", "3")  # cell b stored under a second version
    copied = document("d", "1", "h2", "4")  # cell c's text stored under another cell
    found = tally([first, second, again, copied], {str(first["id"]), "hm-never-stored"})
    assert found["lost"] == 1
    assert found["lost ids"] == ["hm-never-stored"]
    assert found["doubled"] == 2
    assert set(found["doubled ids"]) == {again["id"], copied["id"]}


def test_a_growth_bank_holds_what_auto_retain_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench.growth``'s bank: the size asked, every planted answer in it once (and in no
    distractor), and each memory as the extension sends it (provenance, tag, cell document)."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.growth_bank import PER_DAY, PROJECT, fill_plan
    from hindsight_magic._capture.identity import cell_document
    from hindsight_magic._text import parse_iso

    plan = fill_plan(1000, end=1_800_000_000.0)
    assert len(plan.items) == 1000
    assert plan.answer_clashes == 0
    assert len(plan.questions) >= 60
    for _, _, fact in plan.questions:
        holding = [item for item in plan.items if any(a in item["content"] for a in fact.answers)]
        assert len(holding) == 1, (fact.question, len(holding))
    ids = [item["document_id"] for item in plan.items]
    assert len(set(ids)) == len(ids)
    sources = {item["metadata"]["source"] for item in plan.items}
    assert sources == {"autoretain", "%retain"}, sources
    for item in plan.items:
        meta = item["metadata"]
        assert item["tags"] == [f"project:{PROJECT}"], item
        assert meta["notebook"].endswith(".ipynb"), meta
        assert meta["kernel_session"], meta
        if meta["source"] == "autoretain":
            assert cell_document(item["document_id"]) is not None, item["document_id"]
            assert item["content"].startswith(f"[cell {meta['cells']}"), item["content"][:40]
    times = [parse_iso(item["timestamp"]) for item in plan.items]
    assert times == sorted(times)
    days = (times[-1] - times[0]).total_seconds() / 86_400
    assert abs(days - len(times) / PER_DAY) < 0.01, days


def test_the_planted_notebooks_carry_their_facts_and_pass_the_collections_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recall-quality benchmark's three notebooks are notebooks (each planted fact in its
    cell's metadata), and with the generated distractors they keep the collection's rules."""
    monkeypatch.syspath_prepend(str(ROOT))
    import nbformat

    from bench.recall_sessions import (
        FACT_KINDS,
        NOTEBOOKS,
        PLANTED,
        check,
        distractor_sessions,
        facts,
        planted_sessions,
    )

    planted = planted_sessions()
    assert [session.notebook for session in planted] == list(PLANTED)
    for session in planted:
        book = nbformat.read(str(NOTEBOOKS / session.notebook), as_version=4)
        nbformat.validate(book)
        marked = [cell for cell in book.cells if "recall_fact" in cell.metadata]
        assert len(marked) == sum(cell.fact is not None for cell in session.cells) > 0
    kinds = [fact.kind for _, _, fact in facts(planted)]
    assert all(kinds.count(kind) >= 10 for kind in FACT_KINDS), kinds
    assert check(planted + distractor_sessions()) == []


def _tiny_locomo(path: Path) -> Path:
    """A hand-made conversation in LoCoMo's ``locomo10.json`` form, beside a held-out one
    that is not even valid (so parsing it would fail)."""
    import json

    talk = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a cat"},
        ],
        "session_2_date_time": "9:00 am on 1 June, 2023",
        "session_2": [
            {"speaker": "Bo", "dia_id": "D2:1", "text": "I ran a marathon in Oslo."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Miso sat on my keyboard."},
        ],
    }
    qa = [
        {"question": "What is Ann's cat called?", "evidence": ["D1:1"], "category": 4},
        {"question": "Pets and sport?", "evidence": ["D1:1; D2:1", "D9:9"], "category": 1},
        {"question": "When?", "evidence": [], "category": 2},
    ]
    samples = [
        {"sample_id": "conv-26", "conversation": talk, "qa": qa},
        {"sample_id": "conv-41", "conversation": None, "qa": None},
    ]
    path.write_text(json.dumps(samples))
    return path


def test_the_external_benchmark_scores_evidence_turns_and_keeps_held_out_ones_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench.external``: the turns are retained dated and with their speaker; R@k is the
    share of a question's evidence turns in the first k results; a held-out conversation is
    refused before any server starts, and never parsed."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.external import DATA_URL, Answer, DataError, find_data, load, recall_at, scores
    from bench.external import main as external_main

    data = _tiny_locomo(tmp_path / "locomo10.json")
    (conv,) = load(data, ("conv-26",))
    assert [t.text for t in conv.turns][:2] == [
        "[1:56 pm on 8 May, 2023] Ann: I adopted a cat named Miso.",
        "[1:56 pm on 8 May, 2023] Bo: Lovely! [shares a photo: a cat]",
    ]
    assert [q.evidence for q in conv.questions] == [("D1:1",), ("D1:1", "D2:1")]
    assert (conv.dropped_evidence, conv.unanswerable) == (1, 1)

    assert recall_at(("D1:1", "D2:1"), ("D2:2", "D1:1", None, "D2:1"), 2) == 0.5
    assert recall_at(("D1:1", "D2:1"), ("D2:2", "D1:1", None, "D2:1"), 4) == 1.0
    assert recall_at(("D1:1",), (), 5) == 0.0
    six_deep = ("D2:2", "D2:2", "D2:2", "D2:2", "D2:2", "D1:1")
    got = scores(
        [
            Answer("conv-26", 4, ("D1:1",), ("D1:1",)),  # found first: 1 at 5 and 10
            Answer("conv-26", 1, ("D1:1", "D2:1"), six_deep),  # half, only at 10
            Answer("conv-26", 5, ("D2:1",), ()),  # nothing
        ]
    )
    assert got["all"] == {"questions": 3, "R@5": pytest.approx(1 / 3), "R@10": 0.5}
    assert got["1-4"] == {"questions": 2, "R@5": 0.5, "R@10": 0.75}
    assert got["categories"]["multi-hop"] == {"questions": 1, "R@5": 0.0, "R@10": 0.5}
    assert got["categories"]["adversarial"]["R@10"] == 0.0

    with pytest.raises(DataError, match="held out"):
        load(data, ("conv-41",))
    assert external_main(["--data", str(data), "--conversations", "conv-26,conv-41"]) == 2
    assert "conv-41 held out for an independent check" in capsys.readouterr().err
    with pytest.raises(DataError, match=re.escape(DATA_URL)):
        find_data(tmp_path / "nowhere.json")
    damaged = tmp_path / "damaged" / "locomo10.json"  # an interrupted download: empty
    damaged.parent.mkdir()
    damaged.write_text("")
    with pytest.raises(DataError, match=r"is not JSON.*download it again"):
        load(damaged, ("conv-26",))


def test_a_merged_section_keeps_the_notes_about_several_sections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--sections`` and a section's ``--output`` merge into a BENCHMARKS.md whose notes may
    be about several sections (``1, 12: …``): those stay, in order, until all their sections
    are re-run; a re-run section's rows and own notes are replaced."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.report import Row, document, merged

    before = document(
        [Row("1", "retain", "1 µs"), Row("12", "hit@5", "0.90")],
        ["1: about retain", "1, 12: before and after", "12: about recall"],
        command="python -m bench",
        when="2026-01-01 00:00 UTC",
        header=["machine: here"],
    )
    after = merged(before, [Row("12", "hit@5", "0.95")], ["12: recall again"], {"12"}, "re-run")
    notes = after.split("## Notes", 1)[1].split("## ", 1)[0]
    assert [n for n in notes.splitlines() if n.startswith("- ")] == [
        "- 1: about retain",
        "- 1, 12: before and after",
        "- 12: recall again",
    ]
    assert "| 12 | hit@5 | 0.95 |" in after
    assert "0.90" not in after
    assert "- re-run" in after
    both = merged(before, [], [], {"1", "12"}, "all again")
    assert "before and after" not in both


@pytest.mark.integration
def test_the_growth_bench_reports_the_index_setting_its_server_runs_with(
    keyed_server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Section 15's hit@5 depends on whether the server searched exactly or through its
    approximate index; the bench reads the setting from the server's own process."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.growth import index_settings
    from bench.growth_bank import index_setting
    from hindsight_magic._localserver.launcher import EXACT_SEARCH_ROWS

    assert keyed_server.data_dir is not None  # started by the project's launcher
    setting = index_setting(keyed_server.data_dir)
    assert setting == str(EXACT_SEARCH_ROWS)
    figures = {"sizes": {"1000": {"index_setting": setting}, "10000": {}}}
    told = index_settings(figures)
    assert "HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS" in told
    assert f"1 000: {setting}, 10 000: not recorded." in told


def test_the_growth_server_takes_a_free_port_when_its_own_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program (a shared test server) may hold the growth server's default port: the
    bench starts its server on a free port rather than stopping at the launcher's error."""
    import socket

    monkeypatch.syspath_prepend(str(ROOT))
    from bench import growth_bank
    from hindsight_magic._localserver import launcher

    asked: list[int | None] = []

    def start(*, port: int | None, data_dir: Path, wait_s: float) -> object:
        asked.append(port)
        return type("Info", (), {"url": f"http://127.0.0.1:{port}"})()

    monkeypatch.setattr(launcher, "status", lambda data_dir: None)
    monkeypatch.setattr(launcher, "start", start)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        url = growth_bank.start_server(tmp_path, busy)
    assert asked
    assert asked[0] != busy
    assert url == f"http://127.0.0.1:{asked[0]}"


def test_the_evidence_benchmark_prints_its_figures(tmp_path: Path) -> None:
    """``bench.evidence``: a 1 GB file's fingerprint, a recall of 5's check and the hook's
    cost, as real figures (small counts; no server), its temporary files deleted."""
    import json

    from helpers import run_command

    env = {**os.environ, "HINDSIGHT_BENCH_URL": "http://127.0.0.1:9", "TMPDIR": str(tmp_path)}
    args = ["--times", "3", "--blocks", "1", "--cells", "5"]
    done = run_command([sys.executable, "-m", "bench.evidence", *args], env, Path.cwd())
    figures = json.loads(done.stdout)
    assert 0 < figures["fingerprint"]["record_1gb_ms"] < 100
    assert 0 < figures["check_recall_of_5"]["unchanged_ms"] < 10
    assert figures["check_recall_of_5"]["changed_first_ms"] > 0
    assert figures["hook"]["reads_hook_call_us"] > 0
    assert list(tmp_path.iterdir()) == []  # the 1 GB file and its folder are gone
