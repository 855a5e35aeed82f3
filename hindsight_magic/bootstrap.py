"""Where a session's pieces come from: kernel id, server URL, journal, logging."""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

from .delivery.journal import Journal, JournalError
from .paths import data_dir
from .settings import Settings

log = logging.getLogger("hindsight_magic")
log.addHandler(logging.NullHandler())  # never print from the worker into a cell

JOURNAL_FILE = "journal.sqlite3"


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (kernels and test runners replace it;
    a stream captured at import may be closed by then)."""

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


_DEBUG_HANDLER = _CurrentStderr()
_DEBUG_HANDLER.setFormatter(logging.Formatter("hindsight_magic %(levelname)s: %(message)s"))


def configure_logging(debug: bool) -> None:
    """With ``debug`` on, show the ``hindsight_magic`` logger's debug records on stderr."""
    if debug:
        log.setLevel(logging.DEBUG)
        if _DEBUG_HANDLER not in log.handlers:
            log.addHandler(_DEBUG_HANDLER)
    else:
        log.setLevel(logging.NOTSET)
        log.removeHandler(_DEBUG_HANDLER)


def kernel_id() -> str | None:
    """The Jupyter kernel id from the connection file, when running in a kernel."""
    if "ipykernel" not in sys.modules:
        return None
    try:
        from ipykernel.connect import get_connection_file

        name = os.path.basename(get_connection_file())
    except Exception:
        return None
    match = re.fullmatch(r"kernel-(.+)\.json", name)
    return match.group(1) if match else None


def open_journal(settings: Settings) -> tuple[Journal | None, str | None]:
    """The on-disk queue the settings ask for, or (None, why not)."""
    path = settings.journal_path.strip()
    if path.lower() == "off":
        return None, None
    target = Path(path).expanduser() if path else data_dir() / JOURNAL_FILE
    try:
        return Journal(target), None
    except JournalError as error:
        return None, f"{error}; queued memories are kept in memory only."
