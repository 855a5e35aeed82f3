"""Headless runs remember where they came from: a notebook run by papermill, nbconvert or
``jupyter execute`` writes its name and a run id into every memory's provenance, and recall
shows them.

Real runs (papermill's command line, ``pm.execute_notebook`` with ``HINDSIGHT_NOTEBOOK``,
``jupyter nbconvert --execute``, ``python -m nbconvert``, ``jupyter execute``) against the real
server; what is checked is what the server stored and what recall shows.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from helpers import RunningServer, run_command, run_script, wait_for

pytestmark = pytest.mark.integration

RUN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def report(folder: Path, fact: str) -> Path:
    """``report.ipynb``: loads the extension, retains ``fact`` in its third cell, flushes."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext hindsight_magic"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell(f"%retain {fact}"),
        nbformat.v4.new_code_cell("%hindsight flush --timeout 30"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = folder / "report.ipynb"
    nbformat.write(notebook, path)
    return path


def stored(server: RunningServer, bank: str, fact: str) -> dict[str, Any] | None:
    reply = httpx.get(
        f"{server.url}/v1/default/banks/{bank}/memories/list", params={"q": fact}, timeout=30
    )
    items = reply.json().get("items", []) if reply.status_code == 200 else []
    return next((m for m in items if m["text"] == fact), None)


def environment(server: RunningServer, bank: str, folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "JPY_"))}
    env.update(
        HINDSIGHT_API_URL=server.url,
        HINDSIGHT_BANK_ID=bank,
        HINDSIGHT_JOURNAL_PATH=str(folder / "journal.sqlite3"),
        HINDSIGHT_AUTO_RETAIN="false",
        HINDSIGHT_MENTAL_MODELS="false",
        **extra,
    )
    return env


def test_a_papermill_run_names_its_notebook_and_run(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str
) -> None:
    fact = f"The weekly report {uuid.uuid4().hex[:8]} counted 41 new sign-ups."
    notebook = report(tmp_path, fact)
    papermill = Path(sys.executable).with_name("papermill")
    command = [str(papermill), notebook.name, "out.ipynb", "--cwd", str(tmp_path)]
    run_command(command, environment(hindsight_server, bank_id, tmp_path), tmp_path, 300)
    memory = wait_for(lambda: stored(hindsight_server, bank_id, fact), 60, "the memory")
    meta = memory["metadata"]
    assert meta["notebook"] == "report.ipynb"
    assert RUN.fullmatch(meta["run"]), meta
    assert meta["retain_cell"] == "3"

    import hindsight_magic as hm
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    settings = HindsightSettings(api_url=hindsight_server.url, bank_id=bank_id, scoping="global")
    session = HindsightSession(settings, start_worker=False)
    try:
        line = next(
            line for line in repr(hm.recall(fact, session=session)).splitlines() if fact in line
        )
    finally:
        session.close()
    assert f"report.ipynb · run {meta['run'][:16]} · cell 3" in line, line


def test_a_run_from_python_is_named_by_the_notebook_setting(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str
) -> None:
    fact = f"The nightly job {uuid.uuid4().hex[:8]} found no late invoices."
    report(tmp_path, fact)
    script = (
        "import papermill as pm\n"
        "pm.execute_notebook('report.ipynb', 'out.ipynb', progress_bar=False)\n"
    )
    env = environment(hindsight_server, bank_id, tmp_path, HINDSIGHT_NOTEBOOK="nightly.ipynb")
    run_script(script, env, tmp_path, 300)
    memory = wait_for(lambda: stored(hindsight_server, bank_id, fact), 60, "the memory")
    assert memory["metadata"]["notebook"] == "nightly.ipynb"
    assert RUN.fullmatch(memory["metadata"]["run"])


def analysis(folder: Path) -> Path:
    """``runs/churn.ipynb``: loads the extension, states a decision in a cell of code, prints
    where the notebook is as the kernel finds it, and has auto-retain send what it kept."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext hindsight_magic"),
        nbformat.v4.new_code_cell("churn_window_days = 90  # churn: no order in the last 90 days"),
        nbformat.v4.new_code_cell(
            "from hindsight_magic._machine import headless_notebook_path\n"
            "print(headless_notebook_path())"
        ),
        nbformat.v4.new_code_cell("%hindsight autoretain now"),
        nbformat.v4.new_code_cell("%hindsight flush --timeout 30"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    (folder / "runs").mkdir()
    path = folder / "runs" / "churn.ipynb"
    nbformat.write(notebook, path)
    return path


BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        [str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "runs/churn.ipynb"],
        [sys.executable, "-m", "nbconvert", "--execute", "--to=notebook", "runs/churn.ipynb"],
        [str(BIN / "jupyter"), "execute", "runs/churn.ipynb", "--output=churn.nbconvert.ipynb"],
    ],
    ids=["jupyter nbconvert", "python -m nbconvert", "jupyter execute"],
)
def test_an_nbconvert_run_names_its_notebook(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str, command: list[str]
) -> None:
    """With auto-retain on, the cell's memory names the notebook as the command gave it, and
    the kernel finds the notebook's file (resolved against the runner's folder, not its own:
    nbconvert starts the kernel in the notebook's)."""
    notebook = analysis(tmp_path)
    env = environment(hindsight_server, bank_id, tmp_path)
    env["HINDSIGHT_AUTO_RETAIN"] = "true"
    run_command(command, env, tmp_path, 300)

    def decision() -> dict[str, Any] | None:
        reply = httpx.get(
            f"{hindsight_server.url}/v1/default/banks/{bank_id}/memories/list", timeout=30
        )
        items = reply.json().get("items", []) if reply.status_code == 200 else []
        return next((m for m in items if "churn_window_days" in m["text"]), None)

    meta = wait_for(decision, 60, "the cell's memory")["metadata"]
    assert meta.get("notebook") == "runs/churn.ipynb", meta
    assert RUN.fullmatch(meta["run"]), meta
    executed = nbformat.read(tmp_path / "runs" / "churn.nbconvert.ipynb", as_version=4)
    assert executed.cells[2].outputs[0]["text"].strip() == str(notebook)


def nightly(folder: Path) -> Path:
    """``nightly.ipynb``: a parameters cell, a model's AUC that depends on the parameter, a
    decision that does not, then auto-retain sends what it kept."""
    notebook = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell("seed = 1")
    parameters.metadata["tags"] = ["parameters"]
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext hindsight_magic"),
        parameters,
        nbformat.v4.new_code_cell("# holdout AUC of the churn model\nauc = 0.80 + seed / 100\nauc"),
        nbformat.v4.new_code_cell("churn_window_days = 90  # churn: no order in the last 90 days"),
        nbformat.v4.new_code_cell("%hindsight autoretain now"),
        nbformat.v4.new_code_cell("%hindsight flush --timeout 30"),
    ]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / "nightly.ipynb"
    nbformat.write(notebook, path)
    return path


def test_nightly_papermill_runs_add_only_what_changed(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str
) -> None:
    """Papermill sends no cell ids: each cell is named by the id the notebook file gives its
    source (the injected parameters cell, not in the file, by its position). Three runs with
    one seed leave one document per cell; a new seed changes the AUC, whose earlier version is
    superseded, and its history shows both values."""
    nightly(tmp_path)
    papermill = Path(sys.executable).with_name("papermill")
    env = {**environment(hindsight_server, bank_id, tmp_path), "HINDSIGHT_AUTO_RETAIN": "true"}
    bank = f"{hindsight_server.url}/v1/default/banks/{bank_id}"

    def run(seed: int) -> None:
        command = [str(papermill), "nightly.ipynb", "out.ipynb", "-p", "seed", str(seed)]
        run_command([*command, "--cwd", str(tmp_path)], env, tmp_path, 300)

    def documents() -> dict[str, int]:
        items = httpx.get(f"{bank}/documents", params={"limit": 100}, timeout=30).json()["items"]
        return {d["id"]: d["memory_unit_count"] for d in items}

    for _ in range(3):
        run(1)
    first = wait_for(documents, 60, "the first run's cells", until=lambda d: len(d) >= 3)
    assert len(first) == 3, first  # the injected parameters, the AUC and the decision: once
    assert all(d.startswith("hm-cell-") for d in first)
    run(4)
    after = wait_for(
        documents,
        60,
        "the AUC and the parameters superseded",
        until=lambda d: sorted(d.values()) == [0, 0, 1, 1, 1],
    )
    assert len(after) == 5
    import hindsight_magic as hm
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    settings = HindsightSettings(api_url=hindsight_server.url, bank_id=bank_id, scoping="global")
    session = HindsightSession(settings, start_worker=False)
    try:
        found = hm.recall("holdout AUC of the churn model", session=session)
        auc = next(m for m in found if "holdout AUC" in m.text)
        assert "0.84" in auc.text
        assert "replaces the version of" in repr(found)
        history = repr(hm.history(auc, session=session))
    finally:
        session.close()
    assert "2 versions" in history
    assert "0.81" in history
    assert "0.84" in history


def test_a_papermill_rerun_says_nothing_was_sent_and_a_changed_retain_supersedes(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str
) -> None:
    """Papermill sends no cell ids: a ``%retain`` line's cell is named by the id the notebook
    file gives its source. Run again unchanged, nothing is sent and the flush says so; the
    line's text changed in the file, the new decision supersedes the old one."""
    path = report(tmp_path, "The churn cut-off is 3 months of no purchases")
    papermill = Path(sys.executable).with_name("papermill")
    env = environment(hindsight_server, bank_id, tmp_path)
    bank = f"{hindsight_server.url}/v1/default/banks/{bank_id}"

    def run() -> str:
        command = [str(papermill), path.name, "out.ipynb", "--cwd", str(tmp_path)]
        run_command(command, env, tmp_path, 300)
        flushed = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[3].outputs
        return " ".join(str(o.get("data", {}).get("text/plain", o.get("text"))) for o in flushed)

    def documents() -> dict[str, int]:
        items = httpx.get(f"{bank}/documents", params={"limit": 100}, timeout=30).json()["items"]
        return {d["id"]: d["memory_unit_count"] for d in items}

    assert "Flushed: 1 memory accepted by the server." in run()
    wait_for(documents, 60, "the decision stored", until=lambda d: list(d.values()) == [1])
    assert "Flushed: nothing new to send; 1 already stored." in run()

    notebook = nbformat.read(path, as_version=4)
    notebook.cells[2].source = notebook.cells[2].source.replace("3 months", "6 months")
    nbformat.write(notebook, path)
    assert "Flushed: 1 memory accepted by the server." in run()
    after = wait_for(
        documents,
        60,
        "the earlier decision superseded",
        until=lambda d: sorted(d.values()) == [0, 1],
    )
    assert len(after) == 2
    assert stored(hindsight_server, bank_id, "The churn cut-off is 6 months of no purchases")
    assert (
        stored(hindsight_server, bank_id, "The churn cut-off is 3 months of no purchases") is None
    )
