"""Memory that knows its evidence, in a real kernel on the real server: a cell reads
data/sales.csv and concludes a figure; the file is re-exported; the memory is flagged wherever
it is shown and listed by ``%hindsight verify``; a memory of an untouched file is not; running
the cell again on the new data clears the flag (its new version replaces the old)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import Notebook
from faultkit import proxy_for
from helpers import RunningServer, poll
from kernels import Kernel

pytestmark = pytest.mark.integration

SALES = "region,revenue\nEU,400\nUS,560\n"
RE_EXPORTED = "region,revenue\nEU,400\nUS,560\nEU,-61\n"  # late invoices
REVENUE_CELL = """import csv
rows = list(csv.DictReader(open('data/sales.csv')))
total = sum(int(r['revenue']) for r in rows)
f'Q3 revenue total is {total} thousand euros across the sales regions'"""
STAFF_CELL = """import json
staff = json.load(open('data/staff.json'))
f'The warehouse headcount is {staff["warehouse"]} people on the night shift'"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project (a git repository) with a notebook's data files."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text(SALES)
    (tmp_path / "data" / "staff.json").write_text('{"warehouse": 17}')
    return tmp_path


def kernel_env(project: Path, server: RunningServer, notebook: str, **more: str) -> dict[str, str]:
    """A kernel's settings: its own bank and journal, no mental models, the ``notebook``."""
    return {
        "HINDSIGHT_API_URL": server.url,
        "HINDSIGHT_BANK_ID": f"test-evidence-{uuid.uuid4().hex[:8]}",
        "HINDSIGHT_JOURNAL_PATH": str(project / "journal.sqlite3"),
        "HINDSIGHT_MENTAL_MODELS": "false",
        "JPY_SESSION_NAME": str(project / notebook),
        **more,
    }


def recall_once_indexed(kernel: Kernel, query: str, shows: str) -> str:
    """``%recall query`` once what it should find is indexed (the server takes its time)."""
    return poll(
        lambda: kernel.run(f"%recall {query}"),
        60,
        every_s=1,
        until=lambda shown: shows in shown and "being indexed" not in shown,
    )


def test_a_memory_is_flagged_when_its_data_changes_until_the_cell_runs_again(
    project: Path, hindsight_server: RunningServer
) -> None:
    env = kernel_env(project, hindsight_server, "sales.ipynb", HINDSIGHT_RETAIN_EVERY_N_CELLS="1")
    kernel = Kernel(env, project)
    try:
        assert "Error" not in kernel.run("%load_ext hindsight_magic\nimport hindsight_magic as hm")
        assert "960 thousand" in kernel.run(REVENUE_CELL, cell_id="revenue")
        assert "17 people" in kernel.run(STAFF_CELL, cell_id="staff")
        before = recall_once_indexed(kernel, "what was the Q3 revenue total?", "Q3 revenue")
        assert "data changed" not in before, before
        assert "No memory rests on data that changed" in kernel.run("%hindsight verify")

        (project / "data" / "sales.csv").write_text(RE_EXPORTED)  # re-exported
        today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
        flagged = kernel.run("%recall what was the Q3 revenue total?")
        line = next(x for x in flagged.splitlines() if "DictReader" in x)
        assert f"data changed since: data/sales.csv (re-written {today})" in line, flagged
        context = kernel.run("print(hm.recall('what was the Q3 revenue total?').as_context())")
        assert "data changed since: data/sales.csv" in context, context
        staff = recall_once_indexed(kernel, "warehouse headcount night shift", "headcount")
        line = next(x for x in staff.splitlines() if "staff.json" in x)
        assert "data changed" not in line, staff

        listed = kernel.run("%hindsight verify")
        assert "1 memory rests on data that changed" in listed, listed
        assert "data/sales.csv (re-written" in listed, listed
        assert "data/sales.csv (re-written" in listed, listed
        assert "sales.ipynb · cell 2 · id " in listed, listed  # the cell to re-run
        assert "staff" not in listed, listed
        assert "re-run the cell" in listed, listed
        command = [sys.executable, "-m", "hindsight_magic._cli", "verify"]
        env_cli = {**os.environ, **env, "HINDSIGHT_JOURNAL_PATH": str(project / "cli.sqlite3")}
        done = subprocess.run(
            command, env=env_cli, cwd=project, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1, done.stderr  # 1: a memory's data changed
        assert "data/sales.csv (re-written" in done.stdout, done.stdout

        assert "899 thousand" in kernel.run(REVENUE_CELL, cell_id="revenue")  # on the new data
        after = recall_once_indexed(kernel, "what was the Q3 revenue total?", "replaces the")
        line = next(x for x in after.splitlines() if "DictReader" in x)
        assert "replaces the version of" in line, after  # the new version, on the new data
        assert "data changed" not in after, after
        assert "No memory rests on data that changed" in kernel.run("%hindsight verify")
    finally:
        kernel.shutdown()


def test_a_retain_in_a_cell_records_the_files_that_cell_reads(
    project: Path, hindsight_server: RunningServer
) -> None:
    env = kernel_env(project, hindsight_server, "staff.ipynb", HINDSIGHT_AUTO_RETAIN="false")
    kernel = Kernel(env, project)
    try:
        assert "Error" not in kernel.run("%load_ext hindsight_magic")
        cell = "staff = json.load(open('data/staff.json'))\n%retain The night shift has 17 people"
        assert "Error" not in kernel.run(f"import json\n{cell}")
        recall_once_indexed(kernel, "night shift people", "17 people")
        (project / "data" / "staff.json").write_text('{"warehouse": 23}')
        flagged = kernel.run("%recall night shift people")
        line = next(x for x in flagged.splitlines() if "17 people" in x)
        assert "data changed since: data/staff.json" in line, flagged
    finally:
        kernel.shutdown()


def test_a_cell_that_shows_the_same_on_new_data_is_a_new_version_too(
    project: Path, hindsight_server: RunningServer
) -> None:
    """Its text is the same, so without its evidence in its version the re-run sent nothing
    and the memory stayed flagged however often the cell ran on the new data."""
    env = kernel_env(project, hindsight_server, "load.ipynb", HINDSIGHT_RETAIN_EVERY_N_CELLS="1")
    cell = "rows = open('data/sales.csv').read()\n'the sales table for the Q3 review is loaded'"
    kernel = Kernel(env, project)
    try:
        assert "Error" not in kernel.run("%load_ext hindsight_magic")
        kernel.run(cell, cell_id="load")
        recall_once_indexed(kernel, "sales table Q3 review", "sales table")
        kernel.run(cell, cell_id="load")  # the same data: nothing new
        assert "No memory rests on data that changed" in kernel.run("%hindsight verify")
        (project / "data" / "sales.csv").write_text(RE_EXPORTED)
        assert "data/sales.csv (re-written" in kernel.run("%hindsight verify")
        kernel.run(cell, cell_id="load")  # on the new data
        after = recall_once_indexed(kernel, "sales table Q3 review", "replaces the")
        assert "data changed" not in after, after
        assert "No memory rests on data that changed" in kernel.run("%hindsight verify")
    finally:
        kernel.shutdown()


def test_a_long_verify_read_shows_one_progress_line_in_its_own_cell(
    notebook: Notebook,
    project: Path,
    hindsight_server: RunningServer,
    bank_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """verify reads every memory of the scope (whether its data changed is checked here): past
    ``LONG_READ`` memories a bar shows while it reads, here one line (no widgets), and none in
    the next cell; a short read shows none."""
    from hindsight_magic._ui import progress

    monkeypatch.chdir(project)
    notebook.connect(hindsight_server.url, bank_id)
    for fact in ("Q3 revenue was 960 thousand euros", "The EU accounts drove the Q3 dip"):
        cell = notebook.run(f"rows = open('data/sales.csv').read()\n%retain {fact}")
        assert cell.error is None, cell.text
    monkeypatch.setattr(progress, "LONG_READ", 1)
    cell = notebook.run("%hindsight verify")
    assert cell.error is None, cell.text
    assert cell.text.count("reading the bank's memories to check their data") == 1, cell.text
    assert "No memory rests on data that changed" in cell.text, cell.text
    assert "reading" not in notebook.run("print('next')").text

    monkeypatch.setattr(progress, "LONG_READ", 5000)
    quiet = notebook.run("import hindsight_magic as hm\nprint(hm.verify())").text
    assert "reading the bank" not in quiet, quiet
    assert "No memory rests on data that changed" in quiet, quiet


def test_verify_says_what_it_could_not_check_yet(
    notebook: Notebook,
    project: Path,
    hindsight_server: RunningServer,
    bank_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server slow to index (here every operation stays pending): the cell just run is not
    in what verify read, and it says so rather than vouch for it."""
    monkeypatch.chdir(project)
    with proxy_for(hindsight_server.url, slow_indexing=True) as proxy:
        notebook.connect(proxy.url, bank_id, auto_retain="true", retain_every_n_cells="1")
        assert "960 thousand" in notebook.run(REVENUE_CELL, cell_id="revenue").text
        cell = notebook.run("%hindsight verify")
        assert cell.error is None, cell.text
        assert (
            "Not checked yet: the last cell is still being indexed; run it again in a moment."
        ) in cell.text, cell.text


def test_the_timeline_marks_memories_whose_data_changed(
    notebook: Notebook,
    project: Path,
    hindsight_server: RunningServer,
    bank_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The timeline judges the memories it reads as verify does (no request more): a memory
    whose file was re-written is marked in its period, in the title, the table and the
    figure; a memory of an untouched file is not."""
    from matplotlib.text import Text

    from hindsight_magic._memory import overview

    monkeypatch.chdir(project)
    notebook.connect(hindsight_server.url, bank_id)
    for cell in (
        "rows = open('data/sales.csv').read()\n%retain Q3 revenue was 960 thousand euros",
        "staff = open('data/staff.json').read()\n%retain The night shift has 17 people",
    ):
        assert notebook.run(cell).error is None

    def timeline() -> Any:
        cell = notebook.run("_t = %hindsight timeline --by day")
        assert cell.error is None, cell.text
        return notebook.ip.user_ns["_t"]

    def drawn(picture: Any) -> list[str]:
        return [text.get_text() for text in picture.figure().findobj(Text)]

    untouched = timeline()
    assert "changed data" not in repr(untouched), repr(untouched)
    assert "data changed" not in repr(untouched), repr(untouched)
    assert not [text for text in drawn(untouched) if text.startswith("⚠")]

    (project / "data" / "sales.csv").write_text(RE_EXPORTED)
    marked = timeline()
    text = repr(marked)
    assert text.splitlines()[0].endswith("per day; 1 with changed data"), text
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("period"))
    assert lines[header].endswith("cells revised  data changed"), text
    assert lines[header + 1].endswith(" 1"), text  # today's row, the only one
    assert not lines[header + 2], text
    assert (
        "1 memory rests on data that changed since the cell read it (data/sales.csv): "
        "%hindsight verify lists them, with what to do."
    ) in text
    assert "staff.json" not in text
    assert "⚠ 1" in drawn(marked)
    assert any(t.endswith("; 1 with changed data") for t in drawn(marked))  # the title

    monkeypatch.setattr(overview, "READ_WHOLE", 1)  # a large scope: the server counts it
    counted = repr(timeline())
    assert counted.splitlines()[0].endswith("per day; 1 with changed data"), counted
    assert "1 memory rests on data that changed since the cell read it (data/sales.csv)" in counted
