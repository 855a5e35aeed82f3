"""Where the journal lives, and opening it for a session.

``journal_path`` setting: ``''`` means ``journal.sqlite3`` in the data dir, ``off`` means no
journal (memories are kept in memory only), anything else is a file path.
"""

from __future__ import annotations

from pathlib import Path

from .._machine import data_dir
from .journal import Journal
from .sqlite_file import JournalError

JOURNAL_FILE = "journal.sqlite3"


def journal_file(setting: str) -> Path | None:
    """The journal file the ``journal_path`` setting names, or None for ``off``."""
    path = setting.strip()
    if path.lower() == "off":
        return None
    return Path(path).expanduser() if path else data_dir() / JOURNAL_FILE


def moved_aside_line(journal: Journal) -> str:
    """The line saying a damaged journal was replaced (``journal.moved_to`` is set)."""
    return (
        f"The journal {journal.path} was damaged ({journal.damage}): moved aside to "
        f"{journal.moved_to}; a fresh journal is in use."
    )


def memory_only_line(journal: Journal, error: JournalError) -> str:
    """The line saying the journal cannot be used for now (said once)."""
    return (
        f"The journal {journal.path} cannot be written ({error.reason}): queued memories are "
        "kept in memory only, and go back to the journal by themselves once it can be written."
    )


def open_journal(setting: str) -> tuple[Journal | None, str | None]:
    """The journal the setting asks for, and one line for the user if something happened.

    A damaged file is moved aside and a fresh one used; a file that cannot be opened now
    (read-only, disk full, permissions) gives a journal that is not open yet: the queue keeps
    memories in memory and its worker opens the journal as soon as it can.
    """
    target = journal_file(setting)
    if target is None:
        return None, None
    journal = Journal(target, open_now=False)
    try:
        journal.open()
    except JournalError as error:
        return journal, memory_only_line(journal, error)
    return journal, moved_aside_line(journal) if journal.moved_to else None
