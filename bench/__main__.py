"""``python -m bench``: the extension vs. calling Hindsight by hand, side by side, in one run.

Runs every benchmark against one real Hindsight server — ``HINDSIGHT_BENCH_URL`` if set, else
one started for the run with the project's launcher (in a temporary data dir, stopped and
deleted afterwards) — prints a Markdown table and writes it, with the command, date, machine
and load average, to ``BENCHMARKS.md``. ``--quick`` runs small counts (a smoke test; it writes
nothing unless ``--output`` is given). Asserts nothing: bars are reported as pass or fail.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import (
    autoretain,
    classroom,
    curation,
    delivery,
    external,
    first_recall,
    first_retain,
    growth,
    latency,
    layers,
    load_cost,
    long_kernel,
    mcp,
    pictures,
    read_after_write,
    recall_quality,
    reruns,
    retain_cost,
    retain_tail,
    transfers,
)
from .common import (
    bench_server,
    busy_warning,
    delete_bank,
    load_average,
    machine_line,
    progress,
    raw_client,
    temporary_journal,
)
from .report import Row, Section, document, merged, num
from .sections import (
    curation_rows,
    mcp_rows,
    picture_rows,
    read_after_write_rows,
    retain_rows,
    transfer_rows,
)
from .sections_session import autoretain_rows, latency_rows, load_rows
from .sections_volume import delivery_rows, tail_rows

ROOT = Path(__file__).resolve().parent.parent
KEEP_ENV = {"HINDSIGHT_API_KEY", "HINDSIGHT_API_TOKEN"}  # a hand-written call would use them too


@dataclass(frozen=True)
class Sizes:
    """How much of everything one run does."""

    load_runs: int
    cold_load_runs: int
    first_recall_runs: int
    blocks: int
    cells_per_block: int
    transcript_rounds: int
    session_cells: int
    raw_runs: int
    recall_rounds: int
    reflect_rounds: int
    facts: int
    settle_s: float
    magic_runs: int
    client_runs: int
    http_runs: int
    tail_calls: int
    tail_kernels: int
    tail_quiet_s: float
    delivery_count: int
    delivery_runs: int
    curation_runs: int
    transfer_runs: int
    transfer_documents: int
    mcp_runs: int
    mcp_starts: int
    picture_runs: int
    picture_memories: int
    distractors: int
    distractor_cells: int
    settle_consolidation: bool = True  # section 12 asks once the banks are consolidated
    planted_sessions: int = 3  # section 12's sessions with planted facts
    latency_questions: int | None = None  # section 12 times the same-bank recalls of these
    recall_layers: bool = True  # section 12 also asks with its sessions over two layers
    layer_memories: int = 300  # section 13: memories in one bank, and split over three layers
    layer_rounds: int = 3  # section 13: rounds over its questions
    first_retain_runs: int = 6  # section 5: fresh processes for each timing of the first %retain
    rerun_counts: tuple[int, ...] = (1, 5, 20)  # section 14: the bank counted after these runs
    rerun_before: int = 6  # section 14: runs of the code before versions (0: none)
    rerun_cells: int | None = None  # section 14: the first N cells of each notebook (None: all)
    bank_growth: growth.Growth = growth.KEPT  # section 15: the kept banks, 1 000 to 50 000
    class_size: classroom.Classroom = classroom.FULL  # section 16: 30 kernels, 40 cells, twice
    long_kernel_cells: int = 20_000  # section 17: cells one kernel runs with auto-retain on
    external_scale: external.Scale = external.FULL  # section 18: LoCoMo's development set


FULL = Sizes(
    15, 5, 6, 10, 300, 30, 150, 24, 40, 20, 30, 60.0, 1000, 20, 200, 2000, 8, 300.0, 10_000, 3,
    30, 3, 870, 30, 10, 10, 10_000, 7, 140,
)  # fmt: skip
QUICK = Sizes(
    3, 0, 1, 2, 60, 4, 30, 3, 3, 2, 6, 5.0, 100, 3, 20, 100, 2, 5.0, 500, 1, 3, 1, 40, 3, 2, 2,
    120, 1, 20, False, 1, 8, False, 30, 1, 1, (3,), 0, 10, growth.QUICK, classroom.QUICK, 2500,
    external.QUICK,
)  # fmt: skip


def _clean_env() -> None:
    """Drop the user's ``HINDSIGHT_*`` extension settings: the benchmark measures the defaults."""
    from hindsight_magic._settings import HindsightSettings

    for name in set(HindsightSettings.environment_variables()) - KEEP_ENV:
        os.environ.pop(name, None)


def _versions(url: str) -> str:
    from importlib.metadata import version

    with raw_client(url) as http:
        api = http.get("/version").json().get("api_version", "?")
    packages = ("hindsight-client", "httpx", "ipython", "pydantic")
    return f"Hindsight API {api}; " + ", ".join(f"{p} {version(p)}" for p in packages)


SECTIONS = tuple(str(n) for n in range(1, 19))


def run(sizes: Sizes, url: str, only: set[str] | None = None) -> tuple[list[Row], list[str], str]:
    """Every section (or those in ``only``); rows in table order, notes, and how long it took.

    The read-after-write runs early, while the server has no backlog; the sections that queue
    thousands of memories run last.
    """
    started = time.monotonic()
    sections: dict[str, Section] = {}

    def wanted(*keys: str) -> bool:
        return only is None or any(key in only for key in keys)

    if wanted("5"):
        progress("load cost, the first recall and the first retain: fresh processes …")
        lc = load_cost.measure(url, sizes.load_runs, sizes.cold_load_runs)
        first = first_recall.measure(url, sizes.first_recall_runs)
        sections["5"] = load_rows(lc, first, first_retain.measure(url, sizes.first_retain_runs))

    if wanted("2"):
        progress("read-after-write vs. by hand …")
        sections["2"] = read_after_write_rows(read_after_write.measure(url, sizes.raw_runs))

    if wanted("8"):
        progress("forget-then-recall vs. by hand …")
        sections["8"] = curation_rows(curation.measure(url, sizes.curation_runs))

    if wanted("9"):
        progress(f"snapshot and restore of {sizes.transfer_documents} documents vs. by hand …")
        sections["9"] = transfer_rows(
            transfers.measure(url, sizes.transfer_runs, sizes.transfer_documents)
        )

    if wanted("10"):
        progress("the MCP server: start-up and its own time per tool call …")
        sections["10"] = mcp_rows(mcp.measure(url, sizes.mcp_runs, sizes.mcp_starts))

    if wanted("11"):
        progress(f"timeline and map of {num(sizes.picture_memories)} memories …")
        sections["11"] = picture_rows(
            pictures.measure(url, sizes.picture_runs, sizes.picture_memories)
        )

    if wanted("12"):
        progress("recall quality: notebook sessions in kernels, questions three ways …")
        sections["12"] = recall_quality.rows(
            recall_quality.measure(
                url,
                sizes.distractors,
                sizes.distractor_cells,
                sizes.settle_consolidation,
                sizes.planted_sessions,
                sizes.latency_questions,
                sizes.recall_layers,
            )
        )

    if wanted("13"):
        progress("layers: a recall over three layers vs. one bank …")
        sections["13"] = layers.rows(layers.measure(url, sizes.layer_memories, sizes.layer_rounds))

    if wanted("14"):
        progress("re-runs: notebooks run again and again, in kernels and by papermill …")
        sections["14"] = reruns.rows(
            reruns.measure(url, sizes.rerun_counts, sizes.rerun_before, sizes.rerun_cells)
        )

    if wanted("6"):
        progress("auto-retain: cost per cell, transcript work …")
        with temporary_journal():
            cost = autoretain.measure_cost(url, sizes.blocks, sizes.cells_per_block)
            banks = [os.environ["HINDSIGHT_BANK_ID"]]
            work = autoretain.measure_transcripts(url, sizes.transcript_rounds)
            banks.append(os.environ["HINDSIGHT_BANK_ID"])
            session_sizes = autoretain.measure_bytes(url, sizes.session_cells)
            banks.append(os.environ["HINDSIGHT_BANK_ID"])
        for bank_id in banks:
            delete_bank(url, bank_id)
        sections["6"] = autoretain_rows(cost, work, session_sizes, sizes.session_cells)

    if wanted("7"):
        progress("recall and reflect latency …")
        lat = latency.measure(
            url, sizes.recall_rounds, sizes.reflect_rounds, sizes.facts, sizes.settle_s
        )
        sections["7"] = latency_rows(lat)

    if wanted("1"):
        progress("retain call cost, alternating with the client …")
        sections["1"] = retain_rows(
            retain_cost.measure(url, sizes.magic_runs, sizes.client_runs, sizes.http_runs)
        )

    if wanted("3"):
        progress("the %retain tail, 1 and several kernels …")
        tail = retain_tail.measure(
            url, sizes.tail_calls, sizes.tail_kernels, quiet_timeout_s=sizes.tail_quiet_s
        )
        sections["3"] = tail_rows(tail)

    if wanted("4"):
        progress(f"delivery of {num(sizes.delivery_count)} memories …")
        sections["4"] = delivery_rows(
            delivery.measure(url, sizes.delivery_count, sizes.delivery_runs)
        )
    if wanted("15"):
        where = "a 200-memory bank" if not sizes.bank_growth.kept else "the kept banks"
        progress(f"growth: recall and what a user waits for on {where} …")
        sections["15"] = growth.section(growth.measure(url, sizes.bank_growth))
    if wanted("16"):
        size = sizes.class_size
        progress(
            f"a class on one server: {size.students} kernels, {size.cells} cells, "
            f"{size.rounds} rounds, on a keyed server of its own …"
        )
        sections["16"] = classroom.rows(classroom.measure(size))
    if wanted("17"):
        progress(f"a long kernel: {num(sizes.long_kernel_cells)} cells, with and without …")
        sections["17"] = long_kernel.rows(long_kernel.measure(url, sizes.long_kernel_cells))
    if wanted("18"):
        sections["18"] = external_section(url, sizes.external_scale)
    rows = [row for key in sorted(sections, key=int) for row in sections[key][0]]
    notes = [note for key in sorted(sections, key=int) for note in sections[key][1]]
    return rows, notes, f"{time.monotonic() - started:.0f} s"


def external_section(url: str, scale: external.Scale) -> Section:
    """Section 18 (LoCoMo), or a note saying how to get the dataset when it is not here."""
    try:
        data = external.find_data(None)
    except external.DataError as missing:
        progress(f"LoCoMo: not run: {missing}")
        return [], [f"18: not run: {missing}"]
    progress(f"LoCoMo: {', '.join(scale.conversations)}, retained and asked four ways …")
    return external.rows(external.measure(url, data, scale))


def section_list(text: str) -> set[str]:
    """``--sections 5,11``: section numbers, each one the table has."""
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = chosen - set(SECTIONS)
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"use section numbers from 1 to {len(SECTIONS)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the Markdown (default: BENCHMARKS.md; --quick writes nothing)",
    )
    parser.add_argument(
        "--sections",
        type=section_list,
        default=None,
        help="run only these sections (e.g. 5,11) and merge them into the existing file",
    )
    args = parser.parse_args(argv)
    output = args.output or (None if args.quick else ROOT / "BENCHMARKS.md")
    sizes = QUICK if args.quick else FULL

    _clean_env()
    load_before = load_average()
    with bench_server() as server:
        progress(f"server: {server.url}")
        versions = _versions(server.url)
        rows, notes, took = run(sizes, server.url, args.sections)
        load_after = load_average()
    command = "python -m bench" + (" " + shlex.join(argv if argv is not None else sys.argv[1:]))
    header = [
        f"{machine_line()}; load average (1 min) {load_before} at the start, {load_after} at "
        "the end" + busy_warning(load_before, load_after),
        f"server: {server.how}",
        versions,
        f"run time: {took}"
        + (" (quick mode: small counts, not the real benchmark)" if args.quick else ""),
    ]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = document(rows, notes, command=command.strip(), when=when, header=header)
    if args.sections and output is not None and output.exists():
        ran = ", ".join(sorted(args.sections, key=int))
        line = (
            f"sections {ran} re-run by `{command.strip()}` on {when}, their rows and notes "
            f"replaced: {header[0]}; run time {took}"
        )
        text = merged(output.read_text(), rows, notes, args.sections, line)
    print(text)
    if output is not None:
        output.write_text(text)
        progress(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
