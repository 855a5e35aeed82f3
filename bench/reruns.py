"""Re-runs: a notebook run again and again keeps one memory per cell version (issue 42).

Run: ``python -m bench.reruns [--runs 1,5,20] [--before-runs 6] [--cells N] [--modes M]``
(``HINDSIGHT_BENCH_URL``, or a server started for the run by the project's launcher and deleted
afterwards). Prints a table and JSON; asserts nothing.

The notebooks are the recall-quality benchmark's planted sessions (``recall_sessions``), so
what is found is measured on its questions, asked in other words than the cells':

- the data analysis (bike share) is **re-run**, unchanged but for one decision revised in its
  last run: a tenure cut-off appended as its last cell, 2 → 3 months;
- the lab log is **re-run** as a nightly job: its appended last cell shows a value that changes
  every run (a classifier's holdout AUC, from the run's environment, as the cell's result);
- the teaching session is **run once**.

Every run is a new kernel (Restart & Run All) with the extension's defaults, two ways:
**JupyterLab-style** (each cell sent with its cell id, ``metadata.cellId``, as JupyterLab sends
it; the notebook named by ``JPY_SESSION_NAME``; the queue flushed before the kernel exits), and
**headless**: a real ``papermill`` run of the ``.ipynb`` file (no cell ids sent; no flush cell:
the kernel's exit sends what is left). Every kernel talks to the server through a counting HTTP
proxy (``common.CountingProxy``), so what each run sends is measured from outside the kernel.

After the runs in ``--runs`` (1, 5 and 20) the bank is counted — documents, and memories valid
and superseded — against the distinct cell versions the kernels showed (per notebook and cell,
its source and what auto-retain keeps of its outputs by default: the value it showed and its
error; counted here from what the kernel sent back, not by the extension), and every planted
question is asked with ``hm.recall``: hit@5, and distinct@5 (the share of the top 5 that are
different cells: a cell's key from its document id, ``_capture.identity.cell_document``, else
the memory's text without its ``[cell N]`` line). The same notebooks run once into a second
bank, in their last versions, are the baseline. After the last run: the rank of the revised
decision and of its earlier version, of the last AUC and of the earlier ones, and an as-of
recall of a moment before the last run (it must show the earlier decision and AUC, not the new
ones).

For comparison, the same re-runs with the extension as it was before cells had versions
(commit ``c9376d2``, exported with ``git archive`` into a temporary folder put first on the
kernels' ``PYTHONPATH``, and asked with that code too, in a child process), JupyterLab-style;
its bank is also read by today's code (copies shown collapsed, without a migration).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .common import (
    CountingProxy,
    Stat,
    Traffic,
    bench_server,
    delete_bank,
    new_bank,
    progress,
    raw_client,
    run_child,
    settle_bank,
)
from .recall_quality import MRR_DEPTH, TOP, ExecutedCell, found, run_session
from .recall_sessions import Cell, Fact, Session, facts, planted_sessions
from .report import Row, Section, markdown_table, num, stat_row

ROOT = Path(__file__).resolve().parent.parent
BEFORE_COMMIT = "c9376d2"  # the last commit before cells had versions (issue 42)
MODES = ("JupyterLab", "papermill")
BEFORE = f"JupyterLab, before versions ({BEFORE_COMMIT})"
NIGHT = "RERUN_NIGHT"  # the environment variable the nightly cell reads its run from
PART = "reruns"

DECISION = (
    "# tenure cut-off: riders who joined under {m} months ago count as new members\n"
    "NEW_MEMBER_MONTHS = {m}"
)
DECISION_QUESTION = "What tenure cut-off makes a rider a new member?"
NIGHTLY = (
    "# holdout AUC of the colony classifier, retrained every night on the latest plates\n"
    "import os\n"
    f"night = int(os.environ.get({NIGHT!r}, '1'))\n"
    "f'holdout AUC {0.7 + night / 1000:.3f} (night {night})'"
)  # its value is the cell's result: printed output is not retained by default
NIGHTLY_QUESTION = "What AUC did the colony classifier reach on the holdout?"
RATIO_BAR = 1.1  # issue 42: after six runs, at most 1.1× the distinct cell versions
BAR_AFTER = 6
_HEADER = re.compile(r"^\[cell [^\]\n]*\]\n")


def decision(months: int) -> str:
    """The answer the decision cell holds in a run."""
    return f"NEW_MEMBER_MONTHS = {months}"


def auc(night: int) -> str:
    """The answer the nightly cell shows in run ``night``."""
    return f"(night {night})"


# -- the notebooks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Book:
    """One notebook of the benchmark and its part in the re-runs."""

    session: Session
    role: str  # "revised": re-run, a decision revised last; "nightly": re-run; "once"

    @property
    def name(self) -> str:
        return self.session.notebook

    def as_run(self, night: int, last: bool) -> Session:
        """The notebook as run ``night`` runs it (``last``: the decision revised)."""
        extra: tuple[Cell, ...] = ()
        if self.role == "revised":
            extra = (Cell(DECISION.format(m=3 if last else 2)),)
        elif self.role == "nightly":
            extra = (Cell(NIGHTLY),)
        return replace(self.session, cells=self.session.cells + extra)

    def cell_ids(self) -> list[str]:
        """The ids JupyterLab would give the notebook's cells (the load cell first), the same
        in every run."""
        count = len(self.session.cells) + 2
        return [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.name}#{n}")) for n in range(count)]


def books(cells: int | None = None) -> list[Book]:
    """The analysis and the lab log re-run, the teaching session run once; each its first
    ``cells`` cells (all when None: a smoke run asks fewer questions)."""
    roles = ("revised", "nightly", "once")
    return [
        Book(replace(session, cells=session.cells[:cells]), role)
        for session, role in zip(planted_sessions(), roles, strict=True)
    ]


def questions(chosen: Sequence[Book]) -> dict[str, list[Fact]]:
    """The planted questions of the re-run notebooks and of the once-run one."""
    asked: dict[str, list[Fact]] = {"re-run": [], "once": []}
    for book in chosen:
        group = "once" if book.role == "once" else "re-run"
        asked[group] += [fact for _, _, fact in facts([book.session])]
    return asked


# -- running a notebook ----------------------------------------------------------------------


def kept(cell: ExecutedCell) -> str:
    """A cell as auto-retain keeps it by default (``retain_outputs=result``): its source, the
    value it showed and its error, not what it printed (a notice the extension printed into
    a ``%retain`` cell is no new version of it)."""
    parts = [cell.source]
    for output in cell.outputs:
        if output["output_type"] == "execute_result":
            parts.append(str(output["data"].get("text/plain", "")))
        elif output["output_type"] == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
    return "\n".join(parts)


def run_lab(session: Session, ids: list[str], project: Path, env: dict[str, str]) -> list[str]:
    """One JupyterLab-style run (a new kernel, cell ids sent): each cell as auto-retain keeps
    it (``kept``), the load cell left out."""
    executed = run_session(session, project, env, ids[: len(session.cells) + 1])
    return [kept(cell) for cell in executed[1:]]


def run_papermill(
    session: Session, ids: list[str], project: Path, env: dict[str, str], out: Path
) -> list[str]:
    """One headless run: the notebook written as an ``.ipynb`` (with its cell ids) and run
    by the ``papermill`` command in the project folder; each cell's text as in ``run_lab``."""
    import nbformat

    book = nbformat.v4.new_notebook()
    sources = [Cell("%load_ext hindsight_magic"), *session.cells]
    for cell, cell_id in zip(sources, ids, strict=False):
        code = nbformat.v4.new_code_cell(cell.source, id=cell_id)
        if cell.fact is not None and cell.fact.kind == "error message":
            code.metadata["tags"] = ["raises-exception"]  # else papermill stops there
        book.cells.append(code)
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    book.metadata["language_info"] = {"name": "python"}
    nbformat.write(book, str(project / session.notebook))
    output = out / session.notebook
    papermill = Path(sys.executable).with_name("papermill")
    child = {k: v for k, v in os.environ.items() if k not in ("JPY_SESSION_NAME",)}
    child.update(env)
    done = subprocess.run(
        [str(papermill), session.notebook, str(output), "--cwd", str(project)],
        cwd=project,
        env=child,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if not output.exists():  # it exits 1 when a cell raised (the planted errors), yet ran all
        raise RuntimeError(f"papermill failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    ran = nbformat.read(str(output), as_version=4)
    cells = [c for c in ran.cells if c.cell_type == "code"]
    output.unlink()
    if len(cells) != len(sources) or any(c.get("execution_count") is None for c in cells):
        raise RuntimeError(
            f"papermill left cells unrun (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    return [kept(ExecutedCell(c.source, list(c.get("outputs", [])))) for c in cells[1:]]


# -- reading a bank --------------------------------------------------------------------------


def bank_contents(http: Any, bank_id: str) -> dict[str, int]:
    """Documents (all, and auto-retained cells'), the cells with more than one version still
    valid (a document holding valid memories), and fact memories valid and superseded."""
    from hindsight_magic._capture.identity import cell_document

    path = f"/v1/default/banks/{bank_id}"
    documents: list[dict[str, Any]] = []
    while True:
        page = http.get(f"{path}/documents", params={"limit": 500, "offset": len(documents)})
        items = page.json().get("items") or []
        documents += items
        if not items or len(documents) >= int(page.json().get("total") or 0):
            break
    valid: dict[str, set[str]] = {}
    for document in documents:
        parsed = cell_document(str(document.get("id")))
        if parsed is not None and int(document.get("memory_unit_count") or 0) > 0:
            valid.setdefault(parsed.key, set()).add(parsed.version)
    counts = {
        "documents": len(documents),
        "cell documents": sum(_auto_retained(d) for d in documents),
        "cells valid twice": sum(len(versions) > 1 for versions in valid.values()),
    }
    for state, name in (("valid", "memories valid"), ("invalidated", "memories superseded")):
        counts[name] = 0
        for kind in ("world", "experience"):
            params = {"limit": 1, "state": state, "type": kind}
            counts[name] += int(http.get(f"{path}/memories/list", params=params).json()["total"])
    return counts


def _auto_retained(document: dict[str, Any]) -> bool:
    """Whether ``document`` is an auto-retained cell's: its id is a cell's and its metadata
    says so (a ``%retain`` line's document has a cell's id too, versioned as cells are)."""
    from hindsight_magic._capture.identity import cell_document

    meta = document.get("document_metadata") or {}
    return cell_document(str(document.get("id"))) is not None and meta.get("source") != "%retain"


def cell_of(result: dict[str, Any]) -> str:
    """Which cell a recalled memory is: its key (every version of a cell has the same), from
    its document id; for a memory that is not an auto-retained cell, its text without the
    ``[cell N]`` line, whitespace folded (copies of one text are one)."""
    from hindsight_magic._capture.identity import cell_document

    parsed = cell_document(result.get("document_id"))
    if parsed is not None:
        return f"cell {parsed.key}"
    return "text " + " ".join(_HEADER.sub("", str(result.get("text") or "").strip()).split())


def recall_answers(
    project: Path, env: dict[str, str], asked: Sequence[str], as_of: str | None = None
) -> list[list[dict[str, Any]]]:
    """``hm.recall`` of each question from a new session in the project (next week's
    kernel): the first ``MRR_DEPTH`` memories, as text, document id and provenance line."""
    import hindsight_magic as hm

    saved = dict(os.environ)
    os.environ.update(env, HINDSIGHT_JOURNAL_PATH="off")  # the kernels' leftovers stay theirs
    try:
        session = hm.project_session(project)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    answers = []
    try:
        for question in asked:
            when = {"as_of": as_of} if as_of else {}
            result = hm.recall(question, session=session, **when)
            answers.append(
                [
                    {
                        "text": memory.text,
                        "document_id": memory.document_id,
                        "line": getattr(memory, "provenance_line", lambda: "")(),
                    }
                    for memory in list(result)[:MRR_DEPTH]
                ]
            )
    finally:
        session.close(5)
    return answers


@dataclass
class Arm:
    """One way of running the re-runs: its mode, its bank, its project folder, and where its
    extension comes from (None: this checkout's)."""

    name: str
    mode: str
    bank: str
    project: Path
    env: dict[str, str]  # the kernels': the server through the counting proxy
    server: str  # the server itself, which the questions are asked of
    code: Path | None = None

    def ask(self, asked: Sequence[str], as_of: str | None = None) -> list[list[dict[str, Any]]]:
        """Each question's answers, read by this arm's own extension."""
        env = {**self.env, "HINDSIGHT_API_URL": self.server}
        if self.code is None:
            return recall_answers(self.project, env, asked, as_of)
        request = self.project.parent / "ask.json"
        request.write_text(
            json.dumps({"project": str(self.project), "env": env, "questions": list(asked)})
        )
        script = "import sys; sys.path[:1] = []; from bench.reruns import ask_child; ask_child()"
        env = {"PYTHONPATH": os.pathsep.join((str(self.code), str(ROOT)))}
        try:
            return list(run_child(["-c", script, str(request)], env, timeout=1800))
        finally:
            request.unlink()

    def run(self, session: Session, ids: list[str], night: int, out: Path) -> list[str]:
        env = {**self.env, NIGHT: str(night)}
        if self.code is not None:
            env["PYTHONPATH"] = str(self.code)
        if self.mode == "papermill":
            return run_papermill(session, ids, self.project, env, out)
        return run_lab(session, ids, self.project, env)


def ask_child() -> None:
    """In a child process whose ``hindsight_magic`` is the earlier code: the answers to the
    questions of the request file (``sys.argv[1]``), as JSON on the last line."""
    import hindsight_magic

    request = json.loads(Path(sys.argv[1]).read_text())
    where = Path(hindsight_magic.__file__).resolve()
    if ROOT in where.parents:
        raise SystemExit(f"the earlier code was not imported: {where}")
    answers = recall_answers(Path(request["project"]), request["env"], request["questions"])
    print(json.dumps(answers))


# -- scoring ---------------------------------------------------------------------------------


def rank_of(answers: Sequence[dict[str, Any]], text: str) -> int | None:
    """1-based rank of the first memory holding ``text``, or None."""
    return next((n for n, a in enumerate(answers, 1) if text in str(a["text"])), None)


@dataclass
class Found:
    """What the questions of one group found."""

    asked: int = 0
    hits: int = 0  # answered in the top 5
    shown: int = 0  # memories in the top 5s
    distinct: int = 0  # … of which different cells (summed per question)
    repeated: int = 0  # top 5s holding one cell twice (two versions, or copies)
    examples: list[str] = field(default_factory=list)

    def add(self, fact: Fact, answers: Sequence[dict[str, Any]]) -> None:
        top = list(answers)[:TOP]
        cells = [cell_of(a) for a in top]
        self.asked += 1
        self.hits += any(found(fact, str(a["text"])) for a in top)
        self.shown += len(top)
        self.distinct += len(set(cells))
        if len(set(cells)) < len(cells):
            self.repeated += 1
            if len(self.examples) < 2:
                self.examples.append(fact.question)

    def to_json(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "hit@5": self.hits / self.asked if self.asked else 0.0,
            "distinct@5": self.distinct / self.shown if self.shown else 1.0,
            "repeated": self.repeated,
            "examples": self.examples,
        }


def found_by(arm: Arm, asked: dict[str, list[Fact]]) -> dict[str, Any]:
    """hit@5 and distinct@5 of each group of questions."""
    every = [fact for group in asked.values() for fact in group]
    answers = iter(arm.ask([fact.question for fact in every]))
    scores = {}
    for group, group_facts in asked.items():
        score = Found()
        for fact in group_facts:
            score.add(fact, next(answers))
        scores[group] = score.to_json()
    return scores


def revisions(arm: Arm, last: int, moment: str | None) -> dict[str, Any]:
    """After the last run: where the revised decision and its earlier version rank, the
    last AUC and the earlier ones; the same as of ``moment`` (before the last run)."""
    now = arm.ask([DECISION_QUESTION, NIGHTLY_QUESTION])
    figures: dict[str, Any] = {
        "decision": _ranks(now[0], decision(3), [decision(2)]),
        "auc": _ranks(now[1], auc(last), [auc(n) for n in range(1, last)]),
    }
    if moment is not None and arm.code is None:
        then = arm.ask([DECISION_QUESTION, NIGHTLY_QUESTION], as_of=moment)
        figures["as of"] = {
            "decision": _ranks(then[0], decision(2), [decision(3)]),
            "auc": _ranks(then[1], auc(last - 1), [auc(last)]),
        }
    return figures


def _ranks(answers: Sequence[dict[str, Any]], wanted: str, others: Sequence[str]) -> dict[str, Any]:
    """The rank of ``wanted``, the ranks of ``others`` found, and whether ``wanted``'s line
    says it replaced an earlier version."""
    rank = rank_of(answers, wanted)
    line = str(answers[rank - 1].get("line") or "") if rank else ""
    return {
        "rank": rank,
        "others": sorted(r for r in (rank_of(answers, text) for text in others) if r),
        "says it replaces": "replaces the version of" in line,
        "line": line,
    }


# -- one arm ---------------------------------------------------------------------------------


def _traffic_json(sent: Traffic, started: datetime) -> dict[str, Any]:
    """What one run sent: requests, bytes, and the memories its own kernel made (by source)
    apart from those an earlier kernel left queued (made before this run began: its journal
    delivered them now)."""
    writes, reads = sent.count("POST", "/memories"), sent.count("GET")
    total = sum(sent.requests.values())
    own: Counter[str] = Counter()
    late = 0
    for source, stamp in sent.memories:
        try:
            made = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            made = started
        if made.tzinfo is not None and made < started:
            late += 1
        else:
            own[source] += 1
    return {
        "requests": total,
        "writes": writes,
        "reads": reads,
        "other": total - writes - reads,
        "supersedes": sent.count("PATCH", "/memories/{id}"),
        "up": sent.bytes_up,
        "down": sent.bytes_down,
        "memories": dict(own),
        "late": late,
        "kinds": {f"{m} {p}": n for (m, p), n in sorted(sent.requests.items())},
    }


def rerun(
    arm: Arm, chosen: Sequence[Book], runs: Sequence[int], proxy: CountingProxy, out: Path
) -> dict[str, Any]:
    """Run the re-run notebooks ``max(runs)`` times (the once-run one in the first run
    only), counting each run's traffic; after each run of ``runs``, count the bank and ask
    every question; after the last, the revisions."""
    asked = questions(chosen)
    last = max(runs)
    seen: dict[str, set[tuple[int, str]]] = {book.name: set() for book in chosen}
    result: dict[str, Any] = {"runs": [], "checkpoints": {}}
    moment = None
    for night in range(1, last + 1):
        if night == last and last > 1:
            moment = datetime.now(timezone.utc).isoformat()
            time.sleep(1.5)  # what the last run records comes after the moment
        for book in chosen:
            if book.role == "once" and night > 1:
                continue
            progress(f"{arm.name}: run {night} of {book.name}", PART)
            before, started = proxy.traffic(), datetime.now(timezone.utc)
            revised = night == last and last > 1
            texts = arm.run(book.as_run(night, revised), book.cell_ids(), night, out)
            sent = proxy.traffic() - before
            versions = set(enumerate(texts))
            changed = sorted(n for n, _ in versions - seen[book.name])
            expected = {len(texts) - 1} if book.role != "once" else set()
            if night > 1 and set(changed) - expected:
                progress(f"{arm.name}: cells changed by themselves in run {night}: {changed}", PART)
            seen[book.name] |= versions
            result["runs"].append(
                {"book": book.role, "night": night, "changed": len(changed), "cells": changed}
                | _traffic_json(sent, started)
            )
        if night in runs:
            progress(f"{arm.name}: after {night} runs, the bank counted and asked …", PART)
            result["checkpoints"][str(night)] = {
                **_settled_contents(arm),
                "versions": sum(len(v) for v in seen.values()),
                "retain versions": sum(
                    text.startswith("%retain") for v in seen.values() for _, text in v
                ),
                "found": found_by(arm, asked),
            }
    result["revisions"] = revisions(arm, last, moment)
    return result


def _settled_contents(arm: Arm) -> dict[str, int]:
    """The bank's contents once the server has indexed what was sent (not consolidated:
    recall reads facts, which consolidation leaves as they are)."""
    with raw_client(arm.server) as http:
        settle_bank(http, arm.bank, 1800, consolidation=False)
        return bank_contents(http, arm.bank)


def baseline(arm: Arm, chosen: Sequence[Book], last: int, out: Path) -> dict[str, Any]:
    """Each notebook run once, in its last version, into a bank of its own; its questions."""
    versions = 0
    for book in chosen:
        progress(f"{arm.name}: the baseline, {book.name} once", PART)
        versions += len(arm.run(book.as_run(last, last=last > 1), book.cell_ids(), last, out))
    contents = _settled_contents(arm)
    return {**contents, "versions": versions, "found": found_by(arm, questions(chosen))}


@contextmanager
def before_versions(folder: Path) -> Iterator[Path | None]:
    """The extension of ``BEFORE_COMMIT`` exported into ``folder`` (None when this checkout's
    history does not have it)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", BEFORE_COMMIT, "hindsight_magic"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        progress(f"no commit {BEFORE_COMMIT} in this checkout: no comparison with it", PART)
        yield None
        return
    target = folder / "before"
    target.mkdir()
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    yield target


def measure(
    url: str,
    runs: Sequence[int] = (1, 5, 20),
    before_runs: int = 6,
    cells: int | None = None,
    modes: Sequence[str] = MODES,
) -> dict[str, Any]:
    """Each mode's re-runs and baseline; the re-runs of the code before versions, up to
    ``before_runs`` runs (0: none). JSON-able."""
    chosen = books(cells)
    last = max(runs)
    result: dict[str, Any] = {
        "runs": sorted(runs),
        "questions": {group: len(f) for group, f in questions(chosen).items()},
        "cells": sum(len(book.as_run(1, False).cells) for book in chosen),
        "arms": {},
        "baselines": {},
    }
    banks: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-reruns-") as tmp, CountingProxy(url) as proxy:
        folder = Path(tmp)
        out = folder / "out"
        out.mkdir()

        def arm(name: str, mode: str, kind: str, code: Path | None = None) -> Arm:
            bank = new_bank(kind)
            banks.append(bank)
            place = folder / f"arm-{len(banks)}"
            project = place / "churnwork"
            project.mkdir(parents=True)
            env = {
                "HINDSIGHT_API_URL": proxy.url,
                "HINDSIGHT_BANK_ID": bank,
                "HINDSIGHT_JOURNAL_PATH": str(place / "journal.sqlite3"),
            }
            return Arm(name, mode, bank, project, env, url, code)

        try:
            for mode in modes:
                result["baselines"][mode] = baseline(
                    arm(mode, mode, "reruns-once"), chosen, last, out
                )
                delete_bank(url, banks[-1])
                result["arms"][mode] = rerun(arm(mode, mode, "reruns"), chosen, runs, proxy, out)
                delete_bank(url, banks[-1])
            if before_runs:
                with before_versions(folder) as code:
                    if code is not None:
                        old = arm(BEFORE, "JupyterLab", "reruns-before", code)
                        points = sorted({n for n in runs if n < before_runs} | {before_runs})
                        figures = rerun(old, chosen, points, proxy, out)
                        progress(f"{BEFORE}: its bank read by today's code …", PART)
                        today = replace(old, code=None)
                        figures["read today"] = found_by(today, questions(chosen))
                        figures["read today revisions"] = revisions(today, before_runs, None)
                        result["arms"][BEFORE] = figures
        finally:
            for bank in banks:
                delete_bank(url, bank)
    return result


# -- the table -------------------------------------------------------------------------------


def _times(count: float, versions: float) -> str:
    return f"{count / versions:.2f}× ({num(count)} / {num(versions)})" if versions else "n/a"


def _runs(night: int) -> str:
    return f"after {night} run{'s' if night > 1 else ''}"


def _found(got: dict[str, Any], asked: dict[str, int]) -> str:
    """``0.92 / 0.92; 1.00 / 1.00; 0 of 72``: found@5 and distinct@5 of the re-run and the
    once-run notebooks' questions, and the top 5s holding one cell twice."""
    rerun, once = got["re-run"], got["once"]
    twice = rerun["repeated"] + once["repeated"]
    return (
        f"{rerun['hit@5']:.2f} / {once['hit@5']:.2f}; "
        f"{rerun['distinct@5']:.2f} / {once['distinct@5']:.2f}; "
        f"{twice} of {asked['re-run'] + asked['once']}"
    )


def _rank(figures: dict[str, Any]) -> str:
    """``#1; none``: the rank of what was asked for, and the others' ranks in the top 5."""
    shown = f"#{figures['rank']}" if figures["rank"] else "absent"
    within = [f"#{r}" for r in figures["others"] if r <= TOP]
    return f"{shown}; {', '.join(within) if within else 'none'}"


def rows(figures: dict[str, Any]) -> Section:
    """Section 14 of BENCHMARKS.md: per way of running, documents per cell version, what a
    re-run sends, what recall finds, the revisions and as-of; and the code before versions."""
    table: list[Row] = []
    asked = figures["questions"]
    questions_text = f"{asked['re-run']} + {asked['once']} questions"
    for name, arm in figures["arms"].items():
        new = name != BEFORE
        points = sorted(arm["checkpoints"].items(), key=lambda item: int(item[0]))
        for night, point in points:
            table += _checkpoint_rows(name, int(night), point, new, questions_text, asked)
        if new:
            night, point = points[-1]
            twice = point["cells valid twice"]
            table.append(
                Row(
                    "14",
                    f"{name}, {_runs(int(night))}: cells with more than one version still valid "
                    "(an earlier version not superseded on the server)",
                    num(twice),
                    bar="0",
                    passed=twice == 0,
                )
            )
        elif len(points) >= 2 and int(points[-1][0]) < max(figures["runs"]):
            table.append(_estimate_row(name, points, max(figures["runs"])))
        base = figures["baselines"].get(name)
        if base is not None:
            final = points[-1][1]["found"]["re-run"]["hit@5"]
            kept = final >= base["found"]["re-run"]["hit@5"]
            table.append(
                Row(
                    "14",
                    f"{name}, the baseline (each notebook run once into a bank of its own: "
                    f"documents per cell {_times(base['documents'], base['versions'])}): "
                    f"found@5 re-run / once-run notebooks' questions; distinct@5; top 5s "
                    "holding one cell twice; the re-run notebooks' found@5 "
                    f"{_runs(int(points[-1][0]))} ≥ the baseline's",
                    f"{_found(base['found'], asked)}; {'yes' if kept else 'no'}",
                    bar="yes",
                    passed=kept,
                )
            )
        table += _traffic_rows(name, arm["runs"], new)
        last = int(points[-1][0])
        table += _revision_rows(name, arm["revisions"], last, new)
        if "read today" in arm:
            table.append(
                Row(
                    "14",
                    f"{name}: its bank read by today's code (no migration step): found@5 "
                    "re-run / once-run; distinct@5; top 5s holding one cell twice",
                    _found(arm["read today"], asked),
                )
            )
            table += _revision_rows(f"{name}, read today", arm["read today revisions"], last, False)
    notes = [
        "14: the recall-quality sessions as notebooks (`bench/notebooks/`, "
        f"{figures['cells']} cells): the data analysis re-run with a tenure cut-off appended, "
        "revised 2 → 3 months in its last run; the lab log re-run as a nightly job whose "
        "appended last cell shows an AUC that changes every run; the teaching session run once. "
        "Each run is a new kernel with the extension's defaults, JupyterLab-style (cell ids "
        "sent, the queue flushed before the kernel exits) or by the `papermill` command (no "
        "ids; no flush cell; the planted error cells tagged `raises-exception`). A distinct "
        "cell version is a cell's source, value and error as the kernel showed them (what "
        "auto-retain keeps by default; printed output is not kept), counted per notebook and "
        "cell by the benchmark (the `%retain` cells too); documents and memories "
        "are read from the server. Every kernel talks to the server through a counting proxy: "
        "writes are `POST …/memories`, reads are GETs. found@5: the share of the planted "
        "questions answered in the top 5; distinct@5: the share of the top 5 that are "
        "different cells (a cell's key from its document id, else the memory's text without "
        "its `[cell N]` line). The baseline bank holds each notebook run once, in its last "
        f"version. `{BEFORE}` is the extension before versions were kept, exported from git "
        "onto the kernels' `PYTHONPATH` and asked with that code (its revision comes in its "
        "own last run). `python -m bench.reruns` runs this section alone."
    ]
    return table, notes


def _checkpoint_rows(
    name: str,
    night: int,
    point: dict[str, Any],
    new: bool,
    questions_text: str,
    asked: dict[str, int],
) -> list[Row]:
    versions, retains = point["versions"], point["retain versions"]
    ratio = point["documents"] / versions
    barred = new and night >= BAR_AFTER
    split = ""
    if point["cell documents"]:
        others = point["documents"] - point["cell documents"]
        split = (
            f"; the cells' own documents per version of a cell without `%retain` "
            f"{_times(point['cell documents'], versions - retains)}, the other documents "
            f"(`%retain` memories) per distinct `%retain` line {_times(others, retains)}"
        )
    memories = point["memories valid"] + point["memories superseded"]
    twice = point["found"]["re-run"]["repeated"] + point["found"]["once"]["repeated"]
    return [
        Row(
            "14",
            f"{name}, {_runs(night)}: documents per distinct cell version{split}; memories "
            f"(valid + superseded: {num(point['memories valid'])} + "
            f"{num(point['memories superseded'])}) per version {memories / versions:.2f}×",
            _times(point["documents"], versions),
            bar=f"≤ {RATIO_BAR}×" if barred else "",
            passed=ratio <= RATIO_BAR if barred else None,
        ),
        Row(
            "14",
            f"{name}, {_runs(night)}: found@5 re-run / once-run notebooks' questions "
            f"({questions_text}); distinct@5; top 5s holding one cell twice",
            _found(point["found"], asked),
            bar="0 twice" if new else "",
            passed=twice == 0 if new else None,
        ),
    ]


def _estimate_row(name: str, points: list[tuple[str, dict[str, Any]]], runs: int) -> Row:
    """What the code before versions would hold after ``runs`` runs, extrapolated from its
    own growth per run (every run stores every cell again)."""
    (first, a), (last, b) = points[0], points[-1]
    per_run = (b["documents"] - a["documents"]) / (int(last) - int(first))
    documents = a["documents"] + per_run * (runs - int(first))
    versions = a["versions"] + (runs - int(first)) * (b["versions"] - a["versions"]) / (
        int(last) - int(first)
    )
    return Row(
        "14",
        f"{name}, after {runs} runs, estimated (not measured): documents per distinct cell "
        f"version, growing by {num(per_run)} documents a run as measured",
        _times(round(documents), round(versions)),
    )


def _median(group: Sequence[dict[str, Any]], key: str) -> str:
    return num(Stat.of(float(run[key]) for run in group).median)


def _sent(run: dict[str, Any], source: str | None = None) -> float:
    memories = run["memories"]
    return float(sum(memories.values()) if source is None else memories.get(source, 0))


def _traffic_rows(name: str, runs: Sequence[dict[str, Any]], new: bool) -> list[Row]:
    table: list[Row] = []
    first = [run for run in runs if run["night"] == 1]
    later = [run for run in runs if run["night"] > 1 and run["book"] != "once"]
    unchanged = [run for run in later if run["changed"] == 0]
    changed = [run for run in later if run["changed"] > 0]
    late = [run["late"] for run in runs]
    table.append(
        Row(
            "14",
            f"{name}: memories a kernel still held when it was gone, delivered by a later "
            "run's kernel (from the journal they share): memories, in how many of the runs",
            f"{num(sum(late))} in {sum(1 for n in late if n)} of {len(late)}",
        )
    )
    if first:
        table.append(
            stat_row(
                "14",
                f"{name}: memories sent by a notebook's first run (every cell new), for "
                f"reference ({_median(first, 'requests')} requests, "
                f"{_median(first, 'up')} B sent: medians)",
                Stat.of(_sent(run) for run in first),
                "",
            )
        )
    for label, group in (
        ("a re-run of the unchanged notebook", unchanged),
        ("a re-run with changed cells (the nightly AUC; the revision)", changed),
    ):
        if not group:
            continue
        cells = Stat.of(_sent(run, "autoretain") for run in group)
        retains = Stat.of(_sent(run, "%retain") for run in group)
        alike = all(_sent(run, "autoretain") == run["changed"] for run in group)
        if group is unchanged:
            bar, passed = "0", Stat.of(_sent(run) for run in group).max == 0
        else:
            bar, passed = "auto-retained = changed cells", alike
        table.append(
            stat_row(
                "14",
                f"{name}: memories sent by {label} (auto-retained cells: median "
                f"{num(cells.median)}, max {num(cells.max)}; `%retain` lines: median "
                f"{num(retains.median)}; changed cells: median {_median(group, 'changed')}; "
                f"`POST …/memories` requests: median {_median(group, 'writes')})",
                Stat.of(_sent(run) for run in group),
                "",
                bar=bar if new else "",
                passed=passed if new else None,
            )
        )
        kinds = _typical(group)
        table.append(
            stat_row(
                "14",
                f"{name}: bytes sent to the server by {label} (received: median "
                f"{_median(group, 'down')} B; requests: median {_median(group, 'requests')}, of "
                f"which GETs {_median(group, 'reads')}, `PATCH …/memories/{{id}}` (superseding) "
                f"{_median(group, 'supersedes')}; a typical one: {kinds})",
                Stat.of(float(run["up"]) for run in group),
                "B",
            )
        )
    return table


def _typical(group: Sequence[dict[str, Any]]) -> str:
    """The requests of the run whose kinds of request are the most common in ``group``."""
    shapes = [json.dumps(run["kinds"], sort_keys=True) for run in group]
    common = max(set(shapes), key=shapes.count)
    kinds = json.loads(common)
    return ", ".join(
        f"{kind.replace('/v1/default/banks/{bank}', '…')} ×{n}" for kind, n in kinds.items()
    )


def _revision_rows(name: str, got: dict[str, Any], last: int, new: bool) -> list[Row]:
    decided, value = got["decision"], got["auc"]
    first = decided["rank"] == 1 and not [r for r in decided["others"] if r <= TOP]
    current = value["rank"] == 1 and not [r for r in value["others"] if r <= TOP]
    table = [
        Row(
            "14",
            f"{name}: the revised decision (2 → 3 months in run {last}): its rank; its earlier "
            "version's rank in the top 5; its line says what it replaced",
            f"{_rank(decided)}; {'yes' if decided['says it replaces'] else 'no'}",
            bar="#1; none; yes" if new else "",
            passed=first and decided["says it replaces"] if new else None,
        ),
        Row(
            "14",
            f"{name}: the nightly AUC of run {last}: its rank; the earlier runs' AUCs' ranks in "
            "the top 5",
            _rank(value),
            bar="#1; none" if new else "",
            passed=current if new else None,
        ),
    ]
    then = got.get("as of")
    if then is not None:
        ok = all(then[key]["rank"] is not None and not then[key]["others"] for key in then)
        table.append(
            Row(
                "14",
                f"{name}: as of a moment before run {last}: the earlier decision's rank, the "
                f"revision's; run {last - 1}'s AUC's rank, run {last}'s",
                f"{_rank_only(then['decision'])}, {_others(then['decision'])}; "
                f"{_rank_only(then['auc'])}, {_others(then['auc'])}",
                bar="found, absent; found, absent",
                passed=ok,
            )
        )
    return table


def _rank_only(figures: dict[str, Any]) -> str:
    return f"#{figures['rank']}" if figures["rank"] else "absent"


def _others(figures: dict[str, Any]) -> str:
    return ", ".join(f"#{r}" for r in figures["others"]) or "absent"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.reruns", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--runs", default="1,5,20", help="count the bank and ask after these runs (1,5,20)"
    )
    parser.add_argument(
        "--before-runs",
        type=int,
        default=6,
        help=f"runs of the code before versions ({BEFORE_COMMIT}); 0: none",
    )
    parser.add_argument(
        "--cells", type=int, default=None, help="the first N cells of each notebook"
    )
    parser.add_argument("--modes", default=",".join(MODES), help="JupyterLab, papermill or both")
    args = parser.parse_args(argv)
    runs = sorted({int(part) for part in args.runs.split(",") if part.strip()})
    modes = [mode for mode in MODES if mode in args.modes.split(",")]
    with bench_server() as server:
        figures = measure(server.url, runs, args.before_runs, args.cells, modes)
    table, notes = rows(figures)
    print(markdown_table(table))
    for note in notes:
        print(f"\n{note}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
