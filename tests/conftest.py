"""Shared fixtures: an isolated data dir, a real IPython shell, and a real Hindsight server.

The server is started once per test session with the project's own launcher
(``hindsight_magic._localserver.launcher.start``) in a temporary data dir, and stopped at the
end. Set ``HINDSIGHT_TEST_SERVER_URL`` to reuse a server you already run (faster while developing).
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# helpers.py, kernels.py and faultkit.py are imported by name from test modules in any subfolder;
# the benchmark's notebook sessions (bench/recall_sessions.py) are used by the tests too
for _folder in (Path(__file__).parent, Path(__file__).parent.parent):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from helpers import (  # noqa: E402
    PLANTED_KEY,
    FakeHindsight,
    RunningServer,
    closing_all,
    free_port,
    one_line,
)

__all__ = ["PLANTED_KEY", "Cell", "Notebook", "RunningServer", "free_port", "one_line"]

_DATA_DIRS: list[str] = []  # made in pytest_configure: test modules import this file as well


def pytest_configure(config: pytest.Config) -> None:
    """Keep tests away from the user's settings and data (kernels started by tests inherit)."""
    for name in list(os.environ):
        if name.startswith("HINDSIGHT_") and name != "HINDSIGHT_TEST_SERVER_URL":
            del os.environ[name]
    _DATA_DIRS.append(tempfile.mkdtemp(prefix="hindsight-magic-tests-"))
    os.environ["HINDSIGHT_MAGIC_DATA_DIR"] = _DATA_DIRS[-1]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the tests' data dir (journals, state files): a test run leaves nothing behind."""
    import shutil

    while _DATA_DIRS:
        shutil.rmtree(_DATA_DIRS.pop(), ignore_errors=True)


@pytest.fixture(autouse=True)
def _widgets_closed() -> Iterator[None]:
    """Close the widgets a test made (panels and their parts) when it ends: left open,
    ipywidgets closes each in its finaliser at interpreter exit, after its own module is torn
    down, and prints an ``Exception ignored … 'NoneType' object has no attribute 'pop'``
    traceback per widget (262 of them after ``make test``)."""
    yield
    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()


@pytest.fixture(scope="session")
def hindsight_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A real Hindsight server, started by the project's launcher (once per test session)."""
    reuse = os.environ.get("HINDSIGHT_TEST_SERVER_URL")
    if reuse:
        yield RunningServer(reuse.rstrip("/"))
        return
    from hindsight_magic._localserver import launcher as server

    data_dir = tmp_path_factory.mktemp("hindsight-server")
    info = server.start(port=free_port(), data_dir=data_dir)
    try:
        yield RunningServer(info.url, data_dir)
    finally:
        stop_and_remove(data_dir)


@pytest.fixture(scope="session")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A real Hindsight server with auth on, accepting ``PLANTED_KEY`` only (once per session)."""
    from hindsight_magic._localserver import launcher as server

    data_dir = tmp_path_factory.mktemp("hindsight-keyed-server")
    info = server.start(port=free_port(), data_dir=data_dir, api_key=PLANTED_KEY)
    try:
        yield RunningServer(info.url, data_dir)
    finally:
        stop_and_remove(data_dir)


def stop_and_remove(data_dir: Path) -> None:
    """Stop the server of ``data_dir`` and remove all its data, PostgreSQL's included."""
    from hindsight_magic._localserver import launcher as server

    server.discard(data_dir)


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A temp data dir whose server is stopped and whose PostgreSQL data is removed at the end."""
    yield tmp_path
    stop_and_remove(tmp_path)


@pytest.fixture
def open_data_dir() -> Iterator[Path]:
    """A data dir every user may enter (mode 755 under /tmp), so that as root PostgreSQL's data
    can live inside it; stopped and removed at the end like ``data_dir``."""
    path = Path(tempfile.mkdtemp(prefix="hindsight-magic-open-"))
    path.chmod(0o755)
    yield path
    stop_and_remove(path)


@pytest.fixture
def queue(pair: tuple[Any, Any]) -> Any:
    """The retain queue of a test module's ``pair`` (a queue and its worker, made by
    ``helpers.delivery``)."""
    return pair[0]


@pytest.fixture
def worker(pair: tuple[Any, Any]) -> Any:
    """The worker of a test module's ``pair``."""
    return pair[1]


@pytest.fixture
def bank_id() -> str:
    """A bank no other test uses."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def ip() -> Any:
    """IPython's global test shell (a real InteractiveShell)."""
    from IPython.testing.globalipapp import start_ipython

    return start_ipython()


@dataclass
class Cell:
    """What a user sees after running one cell."""

    result: Any
    out: str
    error: BaseException | None

    @property
    def text(self) -> str:
        """Everything printed, including the error line."""
        return self.out


class Notebook:
    """Runs cells in the shell and captures what they print (stdout and stderr)."""

    def __init__(
        self, ip: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.ip = ip
        self.capsys = capsys
        self.monkeypatch = monkeypatch

    def load(self, **env: str) -> Any:
        """Set ``HINDSIGHT_<NAME>`` env values, ``%load_ext hindsight_magic``; return the magics."""
        for name, value in env.items():
            self.monkeypatch.setenv(f"HINDSIGHT_{name.upper()}", value)
        cell = self.run("%load_ext hindsight_magic")
        assert cell.error is None, cell.text
        return self.magics

    def connect(self, url: str, bank: str, **env: str) -> Any:
        """Load against ``bank`` at ``url`` in the global scope, with auto-retain and mental
        models off (what a server test of one feature wants); ``env`` adds or overrides."""
        settings = {"auto_retain": "false", "mental_models": "false", "scoping": "global"}
        return self.load(api_url=url, bank_id=bank, **{**settings, **env})

    def run(self, source: str, cell_id: str | None = None) -> Cell:
        """Run ``source`` as a cell with history (as a user's cell would); ``cell_id``: the
        id a notebook front end sends with it (JupyterLab's, nbformat 4.5)."""
        self.capsys.readouterr()
        outcome = self.ip.run_cell(source, store_history=True, cell_id=cell_id)
        captured = self.capsys.readouterr()
        error = outcome.error_before_exec or outcome.error_in_exec
        return Cell(outcome.result, captured.out + captured.err, error)

    @property
    def magics(self) -> Any:
        """The loaded ``HindsightMagics`` instance."""
        return self.ip.magics_manager.registry["HindsightMagics"]


@pytest.fixture
def notebook(
    ip: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[Notebook]:
    """A shell with the extension unloaded before and after the test; env changes undone."""
    from hindsight_magic import unload_ipython_extension

    unload_ipython_extension(ip)
    # each test its own journal, so no test adopts memories another one left behind
    monkeypatch.setenv("HINDSIGHT_JOURNAL_PATH", str(tmp_path / "journal.sqlite3"))
    book = Notebook(ip, capsys, monkeypatch)
    try:
        yield book
    finally:
        unload_ipython_extension(ip)
        ip.extension_manager.loaded.discard("hindsight_magic")
        ip.config.pop("HindsightMagics", None)  # %config values must not leak between tests


@pytest.fixture
def dead_url() -> str:
    """A URL where nothing answers."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dead_url: str) -> Iterator[Any]:
    """``sessions(**options)``: sessions on one journal (as kernels of one user), closed after."""
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    monkeypatch.setenv("HINDSIGHT_JOURNAL_PATH", str(tmp_path / "journal.sqlite3"))
    monkeypatch.setenv("HINDSIGHT_AUTO_RETAIN", "false")
    monkeypatch.setenv("HINDSIGHT_MENTAL_MODELS", "false")
    monkeypatch.setenv("HINDSIGHT_SCOPING", "global")
    monkeypatch.setenv("HINDSIGHT_API_URL", dead_url)
    made: list[HindsightSession] = []

    def make(**options: Any) -> HindsightSession:
        session = HindsightSession(HindsightSettings(), cwd=str(tmp_path), **options)
        made.append(session)
        return session

    yield make
    for session in reversed(made):
        session.close(0.5)


@pytest.fixture
def fake() -> FakeHindsight:
    """An in-memory Hindsight (``helpers.FakeHindsight``) for replies a real server cannot be
    made to give; ``make_session`` talks to it."""
    return FakeHindsight()


@pytest.fixture
def make_session(fake: FakeHindsight) -> Iterator[Any]:
    """``make_session(handler=…, **options)``: a session (``hindsight_magic.testing``) talking
    to ``handler`` (default: ``fake``), bank ``nb`` in the project ``churn``, no journal, no
    mental models, no auto-retain and no worker thread unless ``options`` say otherwise (any
    setting, or ``make_session``'s own ``run_worker``, ``queue_options``…); closed after."""
    import httpx

    from hindsight_magic.testing import make_session as session_for

    sessions: list[Any] = []

    def make(handler: Any = None, **options: Any) -> Any:
        values = {
            "bank_id": "nb",
            "journal_path": "off",
            "mental_models": False,
            "auto_retain": False,
            "cwd": "/tmp/churn",
            **options,
        }
        transport = httpx.MockTransport(handler or fake.handle)
        session = session_for(fake.url, transport=transport, **values)
        sessions.append(session)
        return session

    yield make
    for session in reversed(sessions):
        session.close(0.1)


@pytest.fixture
def mcp_env(tmp_path: Path) -> dict[str, str]:
    """What an MCP server process gets: this session's data dir and a journal of its own (shared
    with the test's kernels), no auto-retain (quieter); the code under test (``PYTHONPATH``,
    when a checkout runs its tests against another's environment)."""
    path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    return {
        "HINDSIGHT_MAGIC_DATA_DIR": os.environ["HINDSIGHT_MAGIC_DATA_DIR"],
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.sqlite3"),
        "HINDSIGHT_AUTO_RETAIN": "false",
        "IPYTHONDIR": str(tmp_path / "ipython"),
        **path,
    }


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """A project folder with a name no other test uses (its label tags the memories)."""
    folder = tmp_path / f"proj{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder


@pytest.fixture
def mcp_client() -> Iterator[Any]:
    """``mcp_client(project, env)``: ``hindsight-magic mcp`` for ``project`` with the SDK's
    client talking to it over stdio (``mcpkit.McpClient``); each is closed at the end."""
    from mcpkit import McpClient

    with closing_all(McpClient) as start:
        yield start
