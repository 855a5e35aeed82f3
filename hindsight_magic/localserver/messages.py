"""One wording for the local server's state, shared by ``hindsight-magic server``,
``%hindsight server`` and ``hindsight-magic demo``.

Each function does the launcher call and returns what the user reads; the caller prints it
(command line) or shows it (notebook). ``command`` is how the user runs server actions where
they are: ``"hindsight-magic server"`` or ``"%hindsight server"``.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..discovery import ServerInfo
from . import launcher

MOCK_NOTE = (
    "mock — reflect answers are placeholders; "
    "set HINDSIGHT_API_LLM_PROVIDER/HINDSIGHT_API_LLM_API_KEY for real answers"
)


def describe(info: ServerInfo) -> str:
    """``URL (pid N, LLM: provider[, API key required])``."""
    llm = MOCK_NOTE if info.llm_provider == "mock" else info.llm_provider
    auth = ", API key required" if info.auth else ""
    return f"{info.url} (pid {info.pid}, LLM: {llm}{auth})"


def start(
    *, port: int, data_dir: Path | None = None, wait_s: float = 180
) -> tuple[ServerInfo, str]:
    """Start (or reuse) the server; return it and the lines saying which, and how long it took.

    Raises ``ServerError`` as ``launcher.start`` does.
    """
    before = launcher.status(data_dir)
    t0 = time.monotonic()
    info = launcher.start(port=port, data_dir=data_dir, wait_s=wait_s)
    if before is not None and before.pid == info.pid:
        return info, f"Hindsight server already running at {describe(info)}"
    took = time.monotonic() - t0
    return info, (
        f"Hindsight server running at {describe(info)}\n"
        f"Started in {took:.1f} s; log: {info.log_path}"
    )


def status(data_dir: Path | None, command: str) -> tuple[bool, str]:
    """Whether the server runs and answers, and the lines that say so (or what is wrong)."""
    info = launcher.running_server(data_dir)
    if info is None:
        home = launcher.server_home(data_dir).parent
        return False, (
            f"No Hindsight server running (data dir {home}); start one with `{command} start`."
        )
    if launcher.status(data_dir) is None:
        return False, (
            f"Hindsight server pid {info.pid} is running but not answering at {info.url} "
            f"(still starting, or stuck: see `{command} logs`)."
        )
    return True, (
        f"Hindsight server running at {describe(info)}\n"
        f"Started {info.started_at}; data dir {info.data_dir}; log {info.log_path}"
    )


def stop(data_dir: Path | None = None) -> str:
    """Stop the server; say whether one was running."""
    if launcher.stop(data_dir):
        return "Hindsight server stopped."
    return "No Hindsight server was running."


def logs(data_dir: Path | None = None, lines: int = 40) -> str:
    """The end of the server log, or a note that there is none yet."""
    return launcher.log_tail(data_dir, lines=lines) or "(no server log yet)"
