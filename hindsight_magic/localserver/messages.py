"""One wording for the local server's state, shared by ``hindsight-magic server``,
``%hindsight server`` and ``hindsight-magic demo``.

Each function does the launcher call and returns what the user reads; the caller prints it
(command line) or shows it (notebook). ``command`` is how the user runs server actions where
they are: ``"hindsight-magic server"`` or ``"%hindsight server"``.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..api.errors import local_diagnosis
from ..discovery import ServerInfo
from ..local_facts import api_process, local_server
from . import launcher, storage
from .postgres import PG_USER

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
    text = (
        f"Hindsight server running at {describe(info)}\n"
        f"Started in {took:.1f} s; log: {info.log_path}"
    )
    home = launcher.server_home(data_dir)
    if info.pg_data and not Path(info.pg_data).is_relative_to(home):
        text += (
            f"\nPostgreSQL's data is in {info.pg_data}: PostgreSQL runs as the "
            f"{PG_USER!r} user, which cannot reach {home} (see the README, 'Where data lives')."
        )
    return info, text


def data_lines(data_dir: Path | None, command: str) -> str:
    """Where this server's data lives and how big it is (every directory), or that there is none."""
    found = storage.locations(data_dir)
    if not found:
        return f"No server data in {launcher.server_home(data_dir)}."
    total = storage.human_size(sum(location.size for location in found))
    lines = [f"Data ({total}; `{command} purge` deletes it):"]
    return "\n".join([*lines, *(f"  {location}" for location in found)])


def _not_running(data_dir: Path | None, command: str) -> str:
    """No server recorded as running: none at all, or one whose state file is gone."""
    home = launcher.server_home(data_dir)
    orphan = api_process(home=home)
    if orphan is None:
        where = f"data dir {home.parent}"
        return f"No Hindsight server running ({where}); start one with `{command} start`."
    return (
        f"A Hindsight server (pid {orphan[0]}, port {orphan[1]}) from this data dir runs, but its "
        f"state file is gone; run `{command} stop` (with the same --data-dir), then "
        f"`{command} start`."
    )


def status(data_dir: Path | None, command: str) -> tuple[bool, str]:
    """Whether the server runs and answers, and the lines that say so (or what is wrong), and
    where its data lives."""
    info = launcher.running_server(data_dir)
    if info is None:
        return False, f"{_not_running(data_dir, command)}\n{data_lines(data_dir, command)}"
    if launcher.status(data_dir) is None:
        local = local_server(info.url)
        fault = local_diagnosis(local, command) if local is not None else None
        running, text = (
            False,
            (
                f"{fault.summary}."
                if fault is not None
                else f"Hindsight server pid {info.pid} is running but not answering at {info.url} "
                f"(still starting, or stuck: see `{command} logs`)."
            ),
        )
    else:
        running, text = (
            True,
            (
                f"Hindsight server running at {describe(info)}\n"
                f"Started {info.started_at}; log {info.log_path}"
            ),
        )
    return running, f"{text}\n{data_lines(data_dir, command)}"


def purge_plan(data_dir: Path | None) -> tuple[bool, str]:
    """Whether there is data to delete, and the lines saying what ``purge`` would delete."""
    found = storage.locations(data_dir)
    if not found:
        return (
            False,
            f"No Hindsight server data in {launcher.server_home(data_dir)}; nothing to delete.",
        )
    total = storage.human_size(sum(location.size for location in found))
    head = f"This stops the local Hindsight server and deletes all its data ({total}, every bank):"
    return True, "\n".join([head, *(f"  {location}" for location in found)])


def purge(data_dir: Path | None = None) -> str:
    """Stop the server and delete its data; say what was freed."""
    was_running = launcher.running_server(data_dir) is not None
    found = launcher.purge(data_dir)
    if not found:
        return "No Hindsight server data; nothing deleted."
    freed = storage.human_size(sum(location.size for location in found))
    stopped = "Stopped the Hindsight server and deleted" if was_running else "Deleted"
    return (
        f"{stopped} its data: {freed} in {len(found)} director{'y' if len(found) == 1 else 'ies'}."
    )


def stop(data_dir: Path | None = None) -> str:
    """Stop the server; say whether one was running."""
    if launcher.stop(data_dir):
        return "Hindsight server stopped."
    return "No Hindsight server was running."


def logs(data_dir: Path | None = None, lines: int = 40) -> str:
    """The end of the server log, or a note that there is none yet."""
    return launcher.log_tail(data_dir, lines=lines) or "(no server log yet)"
