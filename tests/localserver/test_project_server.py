"""A project's own server, and what ``server purge`` says it deletes.

Two clones on one machine share the user's data dir, and so one server: a purge from either
deletes both clones' memories. A clone gets its own with one command anywhere in it
(``hindsight-magic server start --project``): a data dir at the project's top,
a free port recorded in its state file, and kernels started anywhere in the project find that
server and keep their journal there. ``server purge`` names the banks it would delete with
their memories, and who uses the server.

One real server is started here (by the command line, in a clone's folder), for the module.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import stop_and_remove
from helpers import wait_for
from kernels import Kernel

from hindsight_magic._localserver import actions, launcher
from hindsight_magic._machine import PROJECT_DATA_DIR, data_dir

REPO = Path(__file__).resolve().parents[2]
OWN = PROJECT_DATA_DIR
SHARED = "HINDSIGHT_MAGIC_DATA_DIR"  # the tests' data dir (conftest), as a user's would be


def command(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hindsight-magic ARGS`` run in ``cwd`` as a user would: no data dir set, no terminal."""
    env = {k: v for k, v in os.environ.items() if k != SHARED}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "hindsight_magic._cli", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def make_clone(base: Path, name: str) -> Path:
    project = base / name
    (project / "notebooks").mkdir(parents=True)
    (project / ".git").mkdir()  # a repository's top folder
    return project


# -- without a server ------------------------------------------------------------------------


def test_a_project_s_own_data_dir_is_found_from_any_of_its_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = make_clone(tmp_path, "air-quality")
    other = make_clone(tmp_path, "air-quality-copy")
    (clone / OWN).mkdir()
    monkeypatch.delenv(SHARED)
    assert data_dir(clone / "notebooks") == clone / OWN
    monkeypatch.chdir(clone / "notebooks")
    assert data_dir() == clone / OWN
    assert data_dir(other / "notebooks") != clone / OWN  # the other clone: not this one's
    monkeypatch.setenv(SHARED, str(tmp_path / "chosen"))
    assert data_dir(clone) == tmp_path / "chosen"  # the variable still wins


STOPPED = (
    "The server is stopped, so its banks cannot be listed: every project that used this data "
    "dir loses its memories."
)


def test_a_purge_of_the_user_s_stopped_server_says_every_project_loses_its_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # the user's data dir, here
    monkeypatch.delenv(SHARED)
    monkeypatch.chdir(make_clone(tmp_path, "churn"))  # a project without a data dir of its own
    home = tmp_path / "xdg" / "hindsight-magic" / "server"
    home.mkdir(parents=True)
    (home / "hindsight.log").write_text("a server ran here\n")
    found, plan = actions.purge_plan(None)
    assert found
    assert STOPPED in plan
    users = "Every notebook on this machine without a data dir of its own uses it"
    rest = f"each project and clone, unless it has a {OWN} folder or sets HINDSIGHT_MAGIC_DATA_DIR."
    assert f"{users} (data dir {home.parent}): {rest}" in plan


def test_a_purge_of_a_chosen_data_dir_says_who_chose_it(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "hindsight.log").write_text("a server ran here\n")
    found, plan = actions.purge_plan(tmp_path)
    assert found
    assert STOPPED in plan
    users = f"Every notebook started with HINDSIGHT_MAGIC_DATA_DIR={tmp_path.resolve()} uses it"
    assert f"{users}, whatever its project or clone." in plan


@contextlib.contextmanager
def default_port_taken() -> Iterator[None]:
    """Port 8899 held while the block runs (when no program holds it already)."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):  # taken already
            holder.bind(("127.0.0.1", launcher.DEFAULT_PORT))
            holder.listen()
        yield


# -- a clone's own server --------------------------------------------------------------------


@pytest.fixture(scope="module")
def clone() -> Iterator[tuple[Path, str]]:
    """A clone (in a folder every user may enter, so that as root PostgreSQL's data stays in
    it) whose own server was started by the command line in one of its folders; its URL."""
    base = Path(tempfile.mkdtemp(prefix="hindsight-magic-open-"))
    base.chmod(0o755)
    project = make_clone(base, "air-quality")
    try:
        with default_port_taken():  # by the other clone's server
            started = command(project / "notebooks", "server", "start", "--project")
        assert started.returncode == 0, started.stderr
        match = re.search(
            r"Hindsight server running at (http://127\.0\.0\.1:(\d+)) ", started.stdout
        )
        assert match, started.stdout
        assert int(match.group(2)) != launcher.DEFAULT_PORT  # a free one, found by kernels
        assert f"Notebooks in {project} use it (the project's own data dir)" in started.stdout
        yield project, match.group(1)
    finally:
        stop_and_remove(project / OWN)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.integration
def test_a_kernel_in_the_clone_uses_the_clone_s_server_and_journal(
    clone: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, url = clone
    assert (project / OWN / ".gitignore").read_text().splitlines()[-1] == "*"  # out of git
    monkeypatch.delenv(SHARED)  # a user's kernel: no data dir set
    kernel = Kernel({}, project / "notebooks")
    try:
        out = kernel.run(
            "%load_ext hindsight_magic\n"
            "%retain The Marylebone station reads PM2.5 every ten minutes.\n"
            "import hindsight_magic as hm\n"
            "print(get_ipython().magics_manager.registry['HindsightMagics'].session.api_url)\n"
            "print(hm.recall('how often is PM2.5 read at Marylebone?')[0].text)"
        )
    finally:
        kernel.shutdown()
    assert f"{url}\n" in out, out
    assert "The Marylebone station reads PM2.5 every ten minutes." in out
    assert (project / OWN / "journal.sqlite3").is_file()  # its journal is the project's too
    with httpx.Client(base_url=url, timeout=30) as http:
        listed = http.get("/v1/default/banks/jupyter/memories/list", params={"q": "Marylebone"})
    assert listed.json()["items"], listed.text  # on the clone's server


@pytest.mark.integration
def test_purge_names_the_banks_and_memories_it_deletes_and_who_uses_the_server(
    clone: tuple[Path, str], notebook: Any, dead_url: str
) -> None:
    project, url = clone
    items = [{"content": f"Sensor {n} was recalibrated."} for n in range(3)]
    with httpx.Client(base_url=url, timeout=60) as http:
        reply = http.post("/v1/default/banks/calibration/memories", json={"items": items})
        reply.raise_for_status()

    def listed() -> str | None:
        plan = command(project, "server", "purge")
        return plan.stdout if re.search(r"  calibration: [3-9] memories", plan.stdout) else None

    text = wait_for(listed, 60, "the plan to name the bank with its memories")
    assert re.search(r"^Its [2-9] banks, \d+ memories:$", text, re.MULTILINE), text
    assert f"Notebooks in {project} use it (the project's own data dir)" in text
    again = command(project, "server", "purge")
    assert again.returncode == 1  # no terminal to ask on: nothing deleted
    assert again.stderr == "hindsight-magic: nothing deleted; add --yes to delete it\n"

    notebook.load(api_url=dead_url)
    asked = notebook.run(f"%hindsight server purge --data-dir {project / OWN}")
    assert asked.error is None, asked.text
    shown = str(asked.result)
    assert re.search(r"  calibration: [3-9] memories", shown), shown
    assert shown.endswith("run `%hindsight server purge --yes` to delete it.")

    assert command(project, "server", "stop").returncode == 0
    stopped = command(project, "server", "purge").stdout
    assert "The server is stopped, so its banks cannot be listed: every project that " in stopped
    assert command(project, "server", "purge", "--yes").returncode == 0
    assert not (project / OWN / "server").exists()


def test_project_and_data_dir_together_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hindsight_magic._cli import main

    assert main(["server", "start", "--project", "--data-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "hindsight-magic: error: give --project or --data-dir, not both\n"
