"""``hindsight-magic demo``: the quickstart notebook run headless, end to end and when it fails."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from helpers import RunningServer, free_port
from nbformat.v4 import new_code_cell, new_notebook

from hindsight_magic._cli import SUBCOMMANDS, main
from hindsight_magic._localserver import demo
from hindsight_magic._localserver import launcher as server

REPO = Path(__file__).resolve().parents[2]


def test_demo_is_a_subcommand_and_finds_the_quickstart() -> None:
    assert "demo" in SUBCOMMANDS
    found = demo.find_notebook()
    assert found is not None
    assert found.name == "quickstart.ipynb"
    assert found.is_file()


def test_quickstart_is_stored_clean_and_has_no_server_url() -> None:
    nb = nbformat.read(REPO / "notebooks" / "quickstart.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code)
    text = "\n".join(cell.source for cell in nb.cells)
    assert "127.0.0.1" not in text
    assert "localhost" not in text
    assert "Memories retained:" in code[-1].source


def test_missing_demo_extra_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "nbclient", None)  # makes `import nbclient` fail
    assert main(["demo"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"hindsight-magic demo: {demo.MISSING_DEMO_EXTRA}"


def test_failing_cell_is_named_and_the_partial_notebook_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()  # nothing listens there
    fake = server.ServerInfo(
        url=f"http://127.0.0.1:{port}", pid=1, port=port, pg_port=0, data_dir=str(tmp_path),
        log_path=str(tmp_path / "hindsight.log"), llm_provider="mock", started_at="now",
    )  # fmt: skip
    monkeypatch.setattr(server, "start", lambda **_: fake)
    monkeypatch.setattr(server, "status", lambda *_: None)
    book = tmp_path / "broken.ipynb"
    cells = [
        new_code_cell("import os\nprint(os.environ['HINDSIGHT_API_URL'])"),
        new_code_cell("raise ValueError('the churn table is empty')"),
        new_code_cell("print('never runs')"),
    ]
    nbformat.write(new_notebook(cells=cells), book)
    out = tmp_path / "out"

    code = main(["demo", "--notebook", str(book), "--out", str(out), "--timeout", "60"])

    captured = capsys.readouterr()
    assert code == 1
    lines = captured.err.strip().splitlines()
    assert lines == [
        "hindsight-magic demo: cell 2 (`raise ValueError('the churn table is empty')`) failed: "
        "ValueError: the churn table is empty"
    ]
    partial = nbformat.read(out / "broken.ipynb", as_version=4)
    assert partial.cells[0].outputs[0]["text"].strip() == fake.url  # the URL was passed on
    assert partial.cells[1].outputs[0]["output_type"] == "error"
    assert not partial.cells[2].outputs
    assert "Partial notebook" in captured.out
    # the server line in the same words as `hindsight-magic server start`
    assert f"Hindsight server running at {fake.url} (pid 1, LLM: mock" in captured.out
    assert "Started in " in captured.out


@pytest.mark.integration
def test_demo_runs_the_quickstart_against_the_real_server(
    hindsight_server: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if hindsight_server.data_dir is None:
        pytest.skip("HINDSIGHT_TEST_SERVER_URL: the demo can only reuse a server by its data dir")
    port = urlsplit(hindsight_server.url).port
    out = tmp_path / "demo-out"
    argv = ["demo", "--port", str(port), "--data-dir", str(hindsight_server.data_dir)]

    code = main([*argv, "--out", str(out)])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"already running at {hindsight_server.url}" in captured.out
    # it ends by saying the server is left running, and how to stop or purge it
    assert f"still running at {hindsight_server.url}" in captured.out.splitlines()[-2]
    data_dir = str(hindsight_server.data_dir)
    assert f"hindsight-magic server stop --data-dir {data_dir}" in captured.out.splitlines()[-1]
    assert f"hindsight-magic server purge --data-dir {data_dir}" in captured.out.splitlines()[-1]
    assert (out / "quickstart.ipynb").is_file()
    assert (out / "quickstart.html").stat().st_size > 0
    assert not (out / "quickstart.kernel.log").exists()
    summary = {
        line.split(":", 1)[0]: line.split(":", 1)[1].strip()
        for line in captured.out.splitlines()
        if line.startswith(demo.SUMMARY_PREFIXES)
    }
    assert set(summary) == {"Memories retained", "Recalled", "Reflect"}
    assert int(summary["Memories retained"]) >= 6
    assert int(summary["Recalled"].split()[0]) >= 1
    assert summary["Recalled"].split("first: ", 1)[1] not in ("", "(none)")
    # the server has no LLM: no placeholder, the memories that answer instead
    assert "mock response" not in captured.out
    reflected = summary["Reflect"]
    assert reflected.startswith("no answer written (no LLM); "), reflected
    assert int(reflected.split("; ", 1)[1].split()[0]) >= 1, reflected
    assert reflected.split("first: ", 1)[1] not in ("", "(none)"), reflected
    executed = nbformat.read(out / "quickstart.ipynb", as_version=4)
    errors = [
        o for cell in executed.cells for o in cell.get("outputs", []) if o.output_type == "error"
    ]
    assert not errors
    recalled = next(c for c in executed.cells if c.source == "%recall how is churn defined?")
    shown = recalled.outputs[0]["data"]["text/plain"]
    first = shown.split("#1 ", 1)[1].split("\n", 1)[0]  # the definition answers, first
    assert "Churn study: churn is defined as no paid renewal" in first, shown
