"""The server actions: the ``hindsight-magic`` command line and ``%hindsight server``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import free_port, needs_server_extra, one_line
from IPython.core.error import UsageError

from hindsight_magic._cli import SUBCOMMANDS, main
from hindsight_magic._localserver import actions
from hindsight_magic._localserver.postgres import ROOT_PG_BASE

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "hindsight-magic"


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "server" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert main(["server"]) == 2  # an action is required; argparse printed the usage
    assert "server" in SUBCOMMANDS
    capsys.readouterr()
    assert main(["server", "--help"]) == 0
    listed = capsys.readouterr().out
    assert all(action.name in listed and action.help in listed for action in actions.ACTIONS)
    assert main(["server", "logs", "-n", "0"]) == 2  # a positive number of lines
    assert "expected a positive integer, got '0'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["snapshot", "restore", "clone"])
def test_a_transfer_takes_the_words_its_declaration_gives_the_command_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from hindsight_magic._functions import TRANSFERS

    operation = TRANSFERS[name].operation
    assert main(["--help"]) == 0
    assert operation.command_line_summary in " ".join(capsys.readouterr().out.split())
    assert main([name, "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    for param in operation.params:
        names, _ = param.argument()
        if param.front == "magic":  # the command line keeps no session to switch
            assert f"{names[0]} " not in shown, (name, names)
        else:
            assert param.description in shown, (name, param.name)
            assert (param.value_name or names[0]) in shown, (name, param.name)


def test_the_command_list_says_what_restore_takes(capsys: pytest.CaptureFixture[str]) -> None:
    """The command line's restore takes only an archive: its line in the list says so, and
    where a forgotten memory is brought back instead."""
    assert main(["--help"]) == 0
    listed = " ".join(capsys.readouterr().out.split())
    line = listed.split(" restore ", 1)[1].split(" clone ", 1)[0]
    assert line == "restore a snapshot as a bank (a forgotten memory: %hindsight restore #N)"
    assert main(["restore", "--help"]) == 0
    assert "archive" in capsys.readouterr().out


def test_status_and_logs_without_a_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["server", "status", "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().out == (
        f"No Hindsight server running (data dir {tmp_path}); "
        "start one with `hindsight-magic server start`.\n"
        f"No server data in {tmp_path / 'server'}.\n"
    )
    assert main(["server", "purge", "--data-dir", str(tmp_path)]) == 0
    assert "nothing to delete" in capsys.readouterr().out
    assert main(["server", "logs", "--data-dir", str(tmp_path)]) == 0
    assert "no server log yet" in capsys.readouterr().out
    assert main(["server", "stop", "--data-dir", str(tmp_path)]) == 0
    assert "No Hindsight server was running" in capsys.readouterr().out


def test_purge_deletes_the_mcp_token_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MCP server's token opens the memory the server held: purge lists it, deletes it and
    says so; the journal stays."""
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "hindsight.log").write_text("a line\n", encoding="utf-8")
    token = tmp_path / "mcp-http-token"
    token.write_text("t0ken\n", encoding="utf-8")
    journal = tmp_path / "journal.sqlite3"
    journal.write_bytes(b"kept")
    where = ["--data-dir", str(tmp_path)]
    assert main(["server", "status", *where]) == 1
    assert f"  MCP HTTP token: {token} (6 B)" in capsys.readouterr().out.splitlines()
    assert main(["server", "purge", "--yes", *where]) == 0
    out = capsys.readouterr().out
    assert f"  MCP HTTP token: {token} (6 B)" in out.splitlines()
    assert out.rstrip().endswith("Deleted its data: 13 B in 1 directory and the MCP HTTP token.")
    assert not token.exists()
    assert not (tmp_path / "server").exists()
    assert journal.read_bytes() == b"kept"


@needs_server_extra
def test_start_error_is_one_line_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        code = main(["server", "start", "--port", str(port), "--data-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("hindsight-magic: error: port ")
    assert "--port" in err
    assert "Traceback" not in err


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed console script (or the module while the package is not installed)."""
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hindsight_magic._cli"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, env=env, timeout=300, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.integration
def test_cli_round_trip(open_data_dir: Path) -> None:
    """start, status (with every data folder, all inside the data dir), logs, stop, purge."""
    data_dir = open_data_dir
    port = free_port()
    where = ["--data-dir", str(data_dir)]
    started = cli("server", "start", "--port", str(port), *where)
    assert started.returncode == 0, started.stderr
    assert f"Hindsight server running at http://127.0.0.1:{port}" in started.stdout
    assert "LLM: mock" in started.stdout
    assert "Started in" in started.stdout

    again = cli("server", "start", "--port", str(port), *where)
    assert "already running" in again.stdout

    status = cli("server", "status", *where)
    assert status.returncode == 0
    assert f"http://127.0.0.1:{port}" in status.stdout

    logs = cli("server", "logs", "-n", "5", *where)
    assert logs.returncode == 0
    assert 0 < len(logs.stdout.splitlines()) <= 5

    data = data_locations(status.stdout)
    assert data == [data_dir / "server", data_dir / "server" / "pgdata"]  # all under D
    assert all(path.is_dir() for path in data)
    assert "PostgreSQL's data is in" not in started.stdout

    stopped = cli("server", "stop", *where)
    assert stopped.returncode == 0
    assert "stopped" in stopped.stdout
    assert cli("server", "status", *where).returncode == 1

    unconfirmed = cli("server", "purge", *where)  # no terminal to ask on: refuses
    assert unconfirmed.returncode == 1
    assert unconfirmed.stderr == "hindsight-magic: nothing deleted; add --yes to delete it\n"
    assert data_locations(unconfirmed.stdout) == data
    assert all(path.is_dir() for path in data)

    purged = cli("server", "purge", "--yes", *where)
    assert purged.returncode == 0, purged.stderr
    assert "Deleted its data: " in purged.stdout
    assert "in 2 directories" in purged.stdout
    assert not any(path.exists() for path in data)
    assert f"No server data in {data[0]}." in cli("server", "status", *where).stdout


def data_locations(text: str) -> list[Path]:
    """The directories a status or purge text lists: ``  what: /path (size)``."""
    found = re.findall(r"^  [\w ]+: (/\S+) \(\d+(?:\.\d)? [kMG]?B\)$", text, re.MULTILINE)
    return [Path(path) for path in found]


# --- the same actions from a notebook: %hindsight server ------------------------------------


def test_cli_and_magic_offer_the_same_actions_and_options(
    notebook: Any, dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook.load(api_url=dead_url)
    bad = notebook.run("%hindsight server bogus")
    assert isinstance(bad.error, UsageError)
    line = one_line(str(bad.error))
    assert "Unknown server action 'bogus'; actions: start, stop, status, logs, purge." in line
    for action in actions.ACTIONS:
        assert main(["server", action.name, "--help"]) == 0
        cli_help = capsys.readouterr().out
        for option in (*action.options, actions.DATA_DIR):
            assert option.flags[-1] in cli_help
            shown = (
                f"[{option.flags[-1]}]"
                if option.type is bool
                else f"[{option.flags[-1]} {option.metavar}]"
            )
            assert shown in line or option is actions.DATA_DIR
    assert "--data-dir D" in line


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("%hindsight server start --port 0", "Invalid --port expected a positive integer"),
        ("%hindsight server start --lines 3", "Unknown option --lines. Options: --port, --wait"),
        ("%hindsight server logs --lines", "--lines needs a value"),
        ('%hindsight server status --data-dir "x', "No closing quotation"),
    ],
)
def test_magic_usage_errors_are_one_line(
    notebook: Any, dead_url: str, source: str, expected: str
) -> None:
    notebook.load(api_url=dead_url)
    cell = notebook.run(source)
    assert isinstance(cell.error, UsageError)
    line = one_line(str(cell.error))
    assert expected in line
    assert "Usage: %hindsight server" in line


def test_magic_without_a_server(notebook: Any, dead_url: str, tmp_path: Path) -> None:
    notebook.load(api_url=dead_url)
    where = f"--data-dir {tmp_path}"
    status = notebook.run("%hindsight server")  # bare: status of the default data dir
    assert status.error is None
    assert str(status.result).startswith("No Hindsight server running")
    assert "`%hindsight server start`" in str(status.result)
    assert str(notebook.run(f"%hindsight server logs {where}").result) == "(no server log yet)"
    stop = notebook.run(f"%hindsight server stop {where}")
    assert str(stop.result) == "No Hindsight server was running."
    assert notebook.magics.session.api_url == dead_url


@pytest.mark.integration
def test_magic_start_points_the_session_at_the_new_server(
    notebook: Any, dead_url: str, data_dir: Path
) -> None:
    notebook.load(api_url=dead_url)
    port = free_port()
    where = f"--data-dir {data_dir}"
    started = notebook.run(f"%hindsight server start --port {port} {where}")
    assert started.error is None, started.text
    url = f"http://127.0.0.1:{port}"
    assert str(started.result).startswith(f"Hindsight server running at {url} (pid ")
    assert "This session now uses it." in str(started.result)
    assert notebook.magics.session.api_url == url
    status = notebook.run(f"%hindsight server status {where}")
    assert str(status.result).startswith(f"Hindsight server running at {url}")
    pg_data = data_locations(str(status.result))[-1]
    if os.geteuid() == 0:  # a private data dir: PostgreSQL's user cannot enter it
        assert pg_data.is_relative_to(ROOT_PG_BASE)
        assert f"PostgreSQL's data is in {pg_data}" in str(started.result)
    assert "Data (" in str(status.result)
    assert "`%hindsight server purge`" in str(status.result)
    plan = notebook.run(f"%hindsight server purge {where}")
    assert str(plan.result).endswith("run `%hindsight server purge --yes` to delete it.")
    assert notebook.run(f"%hindsight server status {where}").result.text.startswith(
        f"Hindsight server running at {url}"
    )  # asking did not stop it
    purged = notebook.run(f"%hindsight server purge --yes {where}")
    assert str(purged.result).startswith("Stopped the Hindsight server and deleted its data: ")
    assert not (data_dir / "server").exists()
    assert not pg_data.exists()
    if pg_data.is_relative_to(ROOT_PG_BASE):  # its <hash> folder goes too
        assert not pg_data.parent.exists()
