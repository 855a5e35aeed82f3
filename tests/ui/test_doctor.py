"""``%hindsight doctor`` / ``hindsight-magic doctor``: each check says ok, or what to fix."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Notebook
from helpers import RunningServer

from hindsight_magic._cli import SUBCOMMANDS, main
from hindsight_magic._ipython.subcommands import SUBCOMMANDS as MAGIC_SUBCOMMANDS
from hindsight_magic._ui import doctor

Route = Callable[[httpx.Request], httpx.Response]


def hindsight_like(
    banks_status: int = 200, stats_status: int = 200, version: Any = None
) -> httpx.MockTransport:
    """A fake server: /version, the bank list and a bank's stats, with chosen statuses."""
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        seen.append(f"{request.method} {path}")
        if path == "/version":
            body = version if version is not None else {"api_version": "9.9.9"}
            return httpx.Response(200, json=body)
        if path == "/v1/default/banks":
            if banks_status != 200:
                return httpx.Response(banks_status, json={"detail": "Invalid API key"})
            return httpx.Response(200, json={"banks": [{"bank_id": "jupyter"}]})
        if path.endswith("/stats"):
            if stats_status != 200:
                return httpx.Response(stats_status, json={"detail": "Bank not found"})
            return httpx.Response(200, json={"total_nodes": 12, "total_documents": 3})
        return httpx.Response(404, json={"detail": "no such route"})

    transport = httpx.MockTransport(handle)
    transport.seen = seen  # type: ignore[attr-defined]
    return transport


def run(tmp_path: Path, transport: httpx.MockTransport | None, url: str = "http://hs.test"):
    return doctor.run_checks(url, None, "jupyter", str(tmp_path / "j.db"), transport=transport)


def test_everything_ok_against_a_hindsight_like_server(tmp_path: Path) -> None:
    transport = hindsight_like()
    report = run(tmp_path, transport)
    assert report.ok, report
    names = [check.name for check in report.checks]
    assert names == [
        "python", "packages", "server extra", "server", "auth", "bank", "extraction", "llm",
        "journal", "widgets",
    ]  # fmt: skip
    assert report["server"].detail == "Hindsight 9.9.9 at http://hs.test"
    assert "12 memories, 3 documents" in report["bank"].detail
    # nothing is written: reads, a dry run of what a retain would store, a reflect (the LLM)
    assert all(
        line.startswith("GET ") or line.endswith(("/memories/dry-run-extract", "/reflect"))
        for line in transport.seen
    )
    text = repr(report)
    assert text.splitlines()[0].endswith("doctor: all good")
    assert all(line.startswith(("ok ", "skip ")) for line in text.splitlines()[1:])


def test_dead_url_says_what_to_do_and_skips_what_needs_the_server(
    tmp_path: Path, dead_url: str
) -> None:
    report = doctor.run_checks(dead_url, None, "jupyter", str(tmp_path / "j.db"))
    assert not report.ok
    server = report["server"]
    assert server.state == "fix"
    assert server.line().startswith(f"fix:  server: no Hindsight server at {dead_url}: ")
    assert server.line().endswith("→ " + diagnosis_hint_for_a_dead_server())
    assert report["auth"].state == report["bank"].state == "skip"
    assert repr(report).splitlines()[0].endswith("doctor: 1 to fix")


def test_not_hindsight_and_refused_key_and_new_bank(tmp_path: Path) -> None:
    jupyter = httpx.MockTransport(lambda r: httpx.Response(200, text="<html>Jupyter</html>"))
    server = run(tmp_path, jupyter)["server"]
    assert server.state == "fix"
    assert "is not a Hindsight server" in server.detail
    assert "8899" in server.hint

    other_json = run(tmp_path, hindsight_like(version={"name": "something else"}))["server"]
    assert other_json.state == "fix"

    refused = run(tmp_path, hindsight_like(banks_status=401))
    assert refused["auth"].state == "fix"
    assert "HINDSIGHT_API_KEY" in refused["auth"].hint
    assert refused["bank"].state == "skip"

    fresh = run(tmp_path, hindsight_like(stats_status=404))
    assert fresh.ok
    assert "does not exist yet" in fresh["bank"].detail

    forbidden = run(tmp_path, hindsight_like(stats_status=403))
    assert forbidden["bank"].state == "fix"


def test_packages_missing_and_old_python() -> None:
    def only_httpx(name: str) -> str:
        if name == "httpx":
            return "0.28.1"
        raise metadata.PackageNotFoundError(name)

    packages = doctor.check_packages(only_httpx)
    assert packages.state == "fix"
    assert packages.detail == "missing ipython, ipywidgets, pydantic"
    assert packages.hint.startswith("pip install ipython ipywidgets pydantic")
    extra = doctor.check_server_extra(only_httpx)
    assert extra.state == "ok"  # optional: a shared server needs none of it
    assert "not installed" in extra.detail
    assert "hindsight-magic[server]" in extra.detail
    assert doctor.check_python((3, 9, 18)).state == "fix"
    assert doctor.check_python((3, 11, 7)).state == "ok"


def test_journal_states(tmp_path: Path) -> None:
    assert doctor.check_journal("off").detail.startswith("off")
    fresh = doctor.check_journal(str(tmp_path / "sub" / "j.db"))
    assert fresh.state == "ok"
    assert "not created yet" in fresh.detail

    path = tmp_path / "journal.db"
    with sqlite3.connect(path) as db:
        db.execute("create table items (id integer primary key, state text)")
        db.executemany(
            "insert into items (state) values (?)", [("pending",), ("batched",), ("failed",)]
        )
    counts = doctor.check_journal(str(path))
    assert counts.state == "ok"
    assert "2 waiting to be sent, 1 refused (%hindsight retry)" in counts.detail

    broken = tmp_path / "broken.db"
    broken.write_text("not sqlite at all " * 100)
    assert doctor.check_journal(str(broken)).state == "fix"

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        check = doctor.check_journal(str(locked / "j.db"))
        if os.geteuid() != 0:  # root may write anywhere
            assert check.state == "fix"
            assert "HINDSIGHT_JOURNAL_PATH" in check.hint
    finally:
        locked.chmod(0o700)


def test_widgets_in_and_out_of_a_kernel() -> None:
    class ZMQInteractiveShell:
        pass

    assert "in a Jupyter kernel" in doctor.check_widgets(ZMQInteractiveShell()).detail
    assert "not in a kernel" in doctor.check_widgets(None).detail


def test_cli_doctor_is_registered_and_exits_1_with_a_fix(
    dead_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    assert "doctor" in SUBCOMMANDS
    monkeypatch.setenv("HINDSIGHT_JOURNAL_PATH", str(tmp_path / "j.db"))
    assert main(["doctor", "--url", dead_url]) == 1
    out = capsys.readouterr().out
    assert f"fix:  server: no Hindsight server at {dead_url}" in out
    monkeypatch.setenv("HINDSIGHT_AUTO_RETAIN", "maybe")
    assert main(["doctor", "--url", dead_url]) == 1
    assert "fix:  settings: Invalid HINDSIGHT_AUTO_RETAIN='maybe'" in capsys.readouterr().out


def test_magic_doctor_uses_the_session(notebook: Notebook, dead_url: str) -> None:
    assert "doctor" in MAGIC_SUBCOMMANDS
    assert "doctor" in repr(MAGIC_SUBCOMMANDS["help"].handler(None, ""))  # type: ignore[arg-type]
    notebook.load(api_url=dead_url, auto_retain="false", mental_models="false")
    cell = notebook.run("%hindsight doctor")
    assert cell.error is None, cell.text
    assert isinstance(cell.result, doctor.DoctorReport)
    assert cell.result["server"].detail.startswith(f"no Hindsight server at {dead_url}: ")
    assert "InteractiveShell" in cell.result["widgets"].detail  # the test shell, not a kernel
    assert notebook.run("%hindsight doctor now").error is not None  # takes no arguments


@pytest.mark.integration
def test_doctor_against_the_real_server(
    hindsight_server: RunningServer, tmp_path: Path, capsys: Any
) -> None:
    journal = str(tmp_path / "j.db")
    report = doctor.run_checks(hindsight_server.url, None, "doctor-never-written", journal)
    assert report.ok, report
    assert report["server"].detail.startswith("Hindsight ")
    assert report["auth"].state == "ok"
    assert "does not exist yet" in report["bank"].detail
    code = main(["doctor", "--url", hindsight_server.url, "--bank", "doctor-never-written"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ok    server: Hindsight" in out


@pytest.mark.integration
def test_doctor_says_when_a_bank_s_extraction_does_not_fit_the_server_s_llm(
    hindsight_server: RunningServer, bank_id: str, tmp_path: Path
) -> None:
    """The local server has no real LLM: a bank left in ``concise`` mode would store the mock's
    prompt lines; the doctor says so and how to fix it, and the setting fixes it."""
    journal = str(tmp_path / "j.db")
    fresh = doctor.run_checks(hindsight_server.url, None, bank_id, journal)["extraction"]
    assert fresh.state == "ok", fresh
    assert "stored as written" in fresh.detail
    with httpx.Client(base_url=hindsight_server.url, timeout=30) as http:
        http.put(f"/v1/default/banks/{bank_id}", json={"retain_extraction_mode": "concise"})
    concise = doctor.run_checks(hindsight_server.url, None, bank_id, journal)["extraction"]
    assert concise.state == "fix", concise
    assert "concise mode with a placeholder LLM" in concise.detail
    assert "retain_extraction=chunks" in concise.hint
    fixing = doctor.run_checks(hindsight_server.url, None, bank_id, journal, extraction="chunks")
    assert fixing["extraction"].state == "ok"
    assert "becomes chunks at the next write" in fixing["extraction"].detail


def diagnosis_hint_for_a_dead_server() -> str:
    """What every front end tells a user whose server does not answer."""
    return (
        "start one with `%hindsight server start` (`hindsight-magic server start` in a "
        "terminal) or set HINDSIGHT_API_URL"
    )


def test_the_llm_probe_s_words_become_a_check_state() -> None:
    """The server's probe statuses (``connected``, ``auth_failed``, ``not_configured`` …) as the
    doctor's one line: members on both sides, the same words shown."""
    from hindsight_magic._ui.doctor import CheckState, _probed

    assert _probed("openai", {"retain": "connected"}).state is CheckState.OK
    refused = _probed("openai", {"retain": "connected", "reflect": "auth_failed"})
    assert refused.state is CheckState.FIX
    assert "openai refused its key: reflect and mental models fail" in refused.line()
    assert _probed("mock", {"retain": "not_configured"}).state is CheckState.OK
    down = _probed("ollama", {"retain": "unreachable", "reflect": "timeout"})
    assert down.line().startswith("fix:  llm: ollama does not answer (timeout, unreachable)")
