"""Taking over what dead kernels left in a shared journal: their rows and their spools.

An owner is dead when its process is gone (same host), its heartbeat is stale (another host:
``STALE_AFTER_S``; this host, its process still running: ``STALE_LIVE_PROCESS_S``), or it has
rows or spools but no heartbeat row. Everything happens in the claimer's one ``BEGIN IMMEDIATE``
transaction, so two kernels never take the same rows; spool files are deleted after commit.
"""

from __future__ import annotations

import socket
import sqlite3
import time
from pathlib import Path

from .._machine import pid_exists
from .spool import decode, read_from, spool_prefix
from .stored import Kept, insert_rows

STALE_AFTER_S = 120.0
# An owner whose process still runs on this host is given longer: one pump against a hung
# server can take minutes (each request waits out its timeout), and its pid may be reused.
STALE_LIVE_PROCESS_S = 900.0


def dead_owners(db: sqlite3.Connection, me: str) -> list[str]:
    """Owners (other than ``me``) that will not come back for their rows."""
    host, now = socket.gethostname(), time.time()
    owners = db.execute("select owner, host, pid, heartbeat from owners").fetchall()
    known = {owner for owner, *_ in owners}
    dead = []
    for owner, owner_host, pid, beat in owners:
        if owner == me:
            continue
        if owner_host != host:
            gone = now - beat > STALE_AFTER_S
        else:
            gone = not pid_exists(pid) or now - beat > STALE_LIVE_PROCESS_S
        if gone:
            dead.append(owner)
    for table in ("items", "spools"):
        found = db.execute(f"select distinct owner from {table} where owner != ?", (me,))
        dead += [owner for (owner,) in found if owner not in known]
    return list(dict.fromkeys(dead))


def claim(
    db: sqlite3.Connection, me: str, journal: Path, files: set[str]
) -> tuple[int, list[Path]]:
    """Take the rows and spools of dead owners (inside a transaction).

    ``files`` are the spool files that existed before the transaction began: one the journal
    does not know was taken in already. Returns (memories claimed, files to delete).
    """
    claimed, leftovers = 0, set()
    for owner in dead_owners(db, me):
        cursor = db.execute(
            "update items set owner = ?, state = case state when 'pending' then 'spilled' "
            "else state end where owner = ?",
            (me, owner),
        )
        claimed += cursor.rowcount
        spools = db.execute("select name, offset from spools where owner = ?", (owner,))
        for name, offset in spools.fetchall():
            lines, _ = read_from(journal.with_name(name), offset)
            found = [entry for entry in map(decode, lines) if entry is not None]
            insert_rows(
                db, [Kept(bank, tags, item, "spilled").values(me) for bank, tags, item in found]
            )
            claimed += len(found)
            leftovers.add(journal.with_name(name))
        db.execute("delete from spools where owner = ?", (owner,))
        db.execute("delete from owners where owner = ?", (owner,))
    registered = {name for (name,) in db.execute("select name from spools")}
    leftovers.update(journal.with_name(name) for name in files - registered)
    return claimed, sorted(leftovers)


def spool_files(journal: Path) -> set[str]:
    """Names of the spool files next to ``journal`` now."""
    prefix = spool_prefix(journal)
    try:
        return {p.name for p in journal.parent.iterdir() if p.name.startswith(prefix)}
    except OSError:
        return set()
