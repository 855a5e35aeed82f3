"""``pytest --nbval-lax notebooks/``: every notebook runs top to bottom against a real server.

nbval starts each notebook's kernel as a separate process that inherits this process's
environment, so everything a kernel needs is exported here, before any kernel starts: a real
local Hindsight server (started with the project's launcher in a temporary data dir, or the one
at ``HINDSIGHT_TEST_SERVER_URL``) as ``HINDSIGHT_API_URL``, and temporary
``HINDSIGHT_MAGIC_DATA_DIR`` / ``HINDSIGHT_JOURNAL_PATH`` so no user file is touched, and a
temporary folder of their own (``TMPDIR``): whatever a notebook leaves in it fails the run.
Other ``HINDSIGHT_*`` settings of the caller are dropped. The server is stopped at the end.

Run it as its own pytest invocation (``make test`` does): ``tests/`` has a ``conftest`` module
too, and the two would clash in one run.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

_STATE: dict[str, Path] = {}


def _nbval_enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("nbval", False) or config.getoption("nbval_lax", False))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pytest_sessionstart(session: pytest.Session) -> None:
    """Export the server URL and temporary paths for the notebook kernels."""
    if not _nbval_enabled(session.config) or "root" in _STATE:
        return
    for name in list(os.environ):
        if name.startswith("HINDSIGHT_") and name != "HINDSIGHT_TEST_SERVER_URL":
            del os.environ[name]
    root = Path(tempfile.mkdtemp(prefix="hindsight-notebooks-"))
    _STATE["root"] = root
    data_dir = root / "data"
    os.environ["HINDSIGHT_MAGIC_DATA_DIR"] = str(data_dir)
    os.environ["HINDSIGHT_JOURNAL_PATH"] = str(root / "journal.sqlite3")
    reuse = os.environ.get("HINDSIGHT_TEST_SERVER_URL", "").strip()
    if reuse:
        os.environ["HINDSIGHT_API_URL"] = reuse.rstrip("/")
    else:
        from hindsight_magic._localserver import launcher as server

        info = server.start(port=_free_port(), data_dir=data_dir)
        _STATE["server"] = data_dir
        os.environ["HINDSIGHT_API_URL"] = info.url
    # the kernels' temporary folder (not the server's: torch keeps a cache there), checked at
    # the end: a notebook cleans up after itself
    (root / "tmp").mkdir()
    os.environ["TMPDIR"] = str(root / "tmp")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the server this session started and remove the temporary files."""
    data_dir = _STATE.pop("server", None)
    if data_dir is not None:
        from hindsight_magic._localserver import launcher as server

        server.discard(data_dir)  # PostgreSQL's data too, wherever it lives
    root = _STATE.pop("root", None)
    if root is None:
        return
    left = sorted(path.name for path in (root / "tmp").iterdir())
    shutil.rmtree(root, ignore_errors=True)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        line = f"The notebooks left {', '.join(left)} in the temporary folder: remove it there."
        if reporter is not None:
            reporter.write_line(line, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say which server the notebooks use."""
    if not _nbval_enabled(config):
        return None
    return f"notebooks: Hindsight at {os.environ.get('HINDSIGHT_API_URL', '(starting)')}"
