"""The ``hindsight-magic`` command line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_magic.cli import SUBCOMMANDS, main

REPO = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "hindsight-magic"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "server" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert main(["server"]) == 2  # an action is required; argparse printed the usage
    assert "server" in SUBCOMMANDS


def test_status_and_logs_without_a_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["server", "status", "--data-dir", str(tmp_path)]) == 1
    assert "No Hindsight server running" in capsys.readouterr().out
    assert main(["server", "logs", "--data-dir", str(tmp_path)]) == 0
    assert "no server log yet" in capsys.readouterr().out
    assert main(["server", "stop", "--data-dir", str(tmp_path)]) == 0
    assert "No Hindsight server was running" in capsys.readouterr().out


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
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hindsight_magic.cli"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


@pytest.mark.integration
def test_cli_round_trip(data_dir: Path) -> None:
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

    stopped = cli("server", "stop", *where)
    assert stopped.returncode == 0
    assert "stopped" in stopped.stdout
    assert cli("server", "status", *where).returncode == 1
