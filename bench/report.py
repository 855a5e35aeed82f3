"""BENCHMARKS.md: the table's rows, how figures are written, and the document around them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .common import Stat

Section = tuple[list["Row"], list[str]]  # a section's rows and its notes


@dataclass
class Row:
    """One line of the table."""

    section: str
    what: str
    median: str
    low: str = ""
    high: str = ""
    n: str = ""
    bar: str = ""
    passed: bool | None = None

    def cells(self) -> list[str]:
        verdict = {True: "pass", False: "**FAIL**", None: ""}[self.passed]
        return [
            self.section,
            self.what,
            self.median,
            self.low,
            self.high,
            self.n,
            self.bar,
            verdict,
        ]


def num(value: float) -> str:
    """A figure with sensible precision (thousands separated by a space)."""
    if float(value).is_integer() or abs(value) >= 100:
        return f"{value:,.0f}".replace(",", " ")
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def unit(value: float, name: str) -> str:
    """``value`` followed by its unit."""
    return f"{num(value)} {name}".strip()


def stat(d: dict[str, Any], key: str) -> Stat:
    """The ``Stat`` stored under ``key``."""
    return Stat.from_json(d[key])


def stat_row(section: str, what: str, s: Stat, name: str, scale: float = 1.0, **kw: Any) -> Row:
    """A row from a ``Stat`` measured in some unit, shown in ``name`` after ``scale``."""
    return Row(
        section,
        what,
        unit(s.median * scale, name),
        unit(s.min * scale, name),
        unit(s.max * scale, name),
        str(s.n),
        **kw,
    )


def markdown_table(rows: list[Row]) -> str:
    """The rows as a GitHub Markdown table."""
    header = ["#", "measurement", "median", "min", "max", "n", "bar", "result"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


NOT_MEASURABLE = """\
- **A real LLM.** The server uses Hindsight's built-in mock LLM (no API key, no network):
  reflect answers are a placeholder and fact extraction is naive. With a real LLM, reflect and
  a synchronous retain (which waits for extraction) take seconds, not milliseconds — for
  read-after-write on both sides alike, since the extension's read then waits for the same
  extraction the by-hand synchronous retain waits for; `%retain`'s advantage over a synchronous
  call only grows, and the extension's own overhead is unchanged.
- **A GPU.** None here: embeddings (MiniLM) run on the CPU, in the same two cores as the
  benchmark, which inflates every server-side time above.
- **Network latency to a remote or shared server.** Everything talks to 127.0.0.1. Over a
  network each hand-written call pays the round trip (and TLS) on the kernel thread; `%retain`
  does not (it never waits on the network), and recall/reflect pay it once either way, as does
  read-after-write (one retain and one recall request on both sides).
- **A shared server's settings.** The server is started with its default settings (its worker
  picks up async work every 500 ms). A read sends `%retain` memories synchronously and so does
  not depend on that; the auto-retain transcript (which appends to one document and so must go
  async) does, and a read that finds one queued waits for the worker — not measured here
  (the read-after-write rows run no cells, so no transcript is queued).
- **Server-side processing of 10 000 memories.** Accepting them is measured; extracting and
  embedding them all would take far longer than this run on two cores, so the banks are
  deleted afterwards (accepted, failed and counted server-side, but not read back one by one).
- **A consolidated bank of 50 000 memories.** Section 15's banks are filled with the
  server's automatic consolidation off: here it digests about 100 memories in two minutes
  (mostly its own recalls), so consolidating 50 000 would take most of a day, and with the
  mock LLM each memory would only gain a copy of itself as an observation. Recall leaves
  observations out by default; the by-hand recall (all types) would see them.
- **A class of 200.** Section 16 runs 30 students' kernels and their server on the same two
  shared cores, which the 30 already fill: 200 kernels here would measure the cores, not the
  server, and more API or worker processes would have no cores of their own. What a class of
  200 needs is worked out from section 16's figures and the server's settings in the README's
  team section.
- **A real Jupyter front end.** Magics are driven through IPython's API in-process; a kernel's
  ZMQ messaging and the browser's rendering add the same cost with or without the extension.
  The widget panel is timed only headless (section 15: its widgets on recording comms, so
  the kernel's side; the browser's rendering is not).
- **A quiet machine.** The machine's two cores are shared with other processes, the
  benchmark's own server among them (see the load average above); medians over repeated,
  alternating runs damp that, min/max show the spread, and on a busy machine every
  wall-clock figure is inflated.
"""


def document(
    rows: list[Row], notes: list[str], *, command: str, when: str, header: list[str]
) -> str:
    """The whole BENCHMARKS.md."""
    bars = [row for row in rows if row.passed is not None]
    met = sum(1 for row in bars if row.passed)
    lines = [
        "# Benchmarks",
        "",
        "What loading `hindsight_magic` costs and saves, compared with calling Hindsight by hand "
        "from a notebook, measured side by side in one run against a real Hindsight server. "
        "Wherever the extension is compared with a call by hand, the two alternate (ABAB), in "
        "one run, against the same server.",
        "",
        f"Made by `{command}` on {when}.",
        "",
        *[f"- {line}" for line in header],
        "",
        markdown_table(rows),
        "",
        f"Bars met: {met} of {len(bars)}.",
        "",
        "## Notes",
        "",
        *[f"- {note}" for note in notes],
        "",
        "## Not measurable here",
        "",
        NOT_MEASURABLE.rstrip(),
        "",
        "## Re-running",
        "",
        "`make bench` or `.venv/bin/python -m bench` (6–20 minutes on 2 cores, by how busy they "
        "are; needs the `server` and `bench` extras). It starts a local server with the "
        "project's launcher in a temporary data dir and stops and deletes it at the end; "
        "`HINDSIGHT_BENCH_URL=http://host:port` measures against a server you name instead. "
        "`--quick` is a small smoke run that "
        "writes nothing. `--sections 5,11` re-runs those sections and replaces their rows and "
        "notes in BENCHMARKS.md, keeping the others (the header says which ran when). Each "
        "section also runs alone (the same server rule): "
        "`python -m bench.retain_cost`, `bench.read_after_write`, `bench.retain_tail`, "
        "`bench.delivery`, `bench.load_cost`, `bench.first_recall`, `bench.first_retain`, "
        "`bench.autoretain`, "
        "`bench.latency`, `bench.curation`, `bench.transfers`, `bench.mcp`, `bench.pictures`, "
        "`bench.recall_quality [--layers]`, `bench.layers`, `bench.reruns [--runs 1,5,20]`, "
        "`bench.growth` (section 15: banks "
        "of 1 000, 10 000 and 50 000 memories on a local server it keeps between runs in "
        "`bench/.data/growth`; the first run fills them, about two hours on 2 busy cores; "
        "`python -m bench.growth --purge` deletes them), "
        "`bench.classroom [--students 30 --cells 40 --rounds 2]` (section 16: a class of "
        "kernels on a server of its own, started with an API key, purged afterwards), "
        "`bench.long_kernel [--cells 20000]` "
        "(section 17: 20 000 cells in one kernel, and again without the extension; about 15 "
        "minutes, most of it waiting for the server to index), "
        "`bench.external [--data PATH]` (section 18: LoCoMo's two development conversations, "
        "a public dataset not kept here; it says where to download it; `--output "
        "BENCHMARKS.md` merges the section). "
        "The benchmark asserts nothing; the bars are the issues' (7, 13, 21, 22, 23, 24, 25, "
        "33, 35, 42, 45, and the auto-retain issue's per-cell ratios).",
        "",
    ]
    return "\n".join(lines)


def _cells(line: str) -> list[str]:
    """A table line's cells (no cell holds a bare ``|``: Markdown escapes it as ``\\|``)."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [cell.strip() for cell in cells]


def _note_sections(note: str) -> list[str]:
    """The sections a note is about: its prefix, one (``12: …``) or several (``1, 3, 12: …``)."""
    return [part.strip() for part in note.split(":", 1)[0].split(",")]


def merged(previous: str, rows: list[Row], notes: list[str], sections: set[str], line: str) -> str:
    """``previous`` (a BENCHMARKS.md) with the rows and notes of ``sections`` replaced by
    ``rows`` and ``notes``, and ``line`` added to its header (what was re-run, when, where)."""
    made = re.search(r"^Made by `(.+?)` on (.+?)\.$", previous, re.M)
    if made is None:
        raise ValueError("not a BENCHMARKS.md written by python -m bench")
    body = previous[made.end() :]
    header = [h[2:] for h in body.split("\n\n", 2)[1].splitlines() if h.startswith("- ")]
    kept: list[Row] = []
    verdicts = {"pass": True, "**FAIL**": False, "": None}
    for text in previous.splitlines():
        if not text.startswith("| ") or text.startswith("| # |"):
            continue
        cells = _cells(text)
        if cells[0] not in sections:
            section, what, median, low, high, n, bar, verdict = cells
            kept.append(Row(section, what, median, low, high, n, bar, verdicts[verdict]))
    notes_part = previous.split("## Notes", 1)[1].split("## ", 1)[0]
    old_notes = [n[2:] for n in notes_part.strip().splitlines() if n.startswith("- ")]
    kept_notes = [n for n in old_notes if not set(_note_sections(n)) <= sections]
    order = lambda key: int(key.section) if isinstance(key, Row) else int(_note_sections(key)[0])  # noqa: E731
    all_rows = sorted([*kept, *rows], key=order)  # stable: a section's rows keep their order
    all_notes = sorted([*kept_notes, *notes], key=order)
    return document(
        all_rows, all_notes, command=made.group(1), when=made.group(2), header=[*header, line]
    )
