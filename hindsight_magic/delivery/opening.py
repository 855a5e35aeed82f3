"""Where the journal lives, and opening it for a session.

``journal_path`` setting: ``''`` means ``journal.sqlite3`` in the data dir, ``off`` means no
journal (memories are kept in memory only), anything else is a file path.
"""

from __future__ import annotations

from pathlib import Path

from ..paths import data_dir
from .journal import Journal, JournalError

JOURNAL_FILE = "journal.sqlite3"


def journal_file(setting: str) -> Path | None:
    """The journal file the ``journal_path`` setting names, or None for ``off``."""
    path = setting.strip()
    if path.lower() == "off":
        return None
    return Path(path).expanduser() if path else data_dir() / JOURNAL_FILE


def open_journal(setting: str) -> tuple[Journal | None, str | None]:
    """The journal the setting asks for, or (None, why not — one line for the user)."""
    target = journal_file(setting)
    if target is None:
        return None, None
    try:
        return Journal(target), None
    except JournalError as error:
        return None, f"{error}; queued memories are kept in memory only."
