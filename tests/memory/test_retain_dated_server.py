"""Dated memories on the real server: what is retained with ``timestamp=`` (``%retain --at``,
``%%retain --at``) is recorded then, so recall's windows and as-of find it then and not now.

A researcher importing last year's lab notes: each note retained with its own date, one note
retained today. Through a real shell, as a user would: ``hm.retain`` in a cell, the magics, and
``%recall --since/--until/--as-of``; what is checked is what the user sees.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

import pytest
from conftest import Notebook
from helpers import RunningServer, wait_for

pytestmark = pytest.mark.integration

WORD = f"w{uuid.uuid4().hex[:6]}"  # in every memory here and nowhere else on the server
YEAR = date.today().year - 1  # last year
MARCH = f"Lab note {WORD}: the pump was recalibrated; runs before it read 4% high."
JUNE = f"Lab note {WORD}: the pump's seal was replaced after the leak."
SEPTEMBER = f"Lab note {WORD}: the pump was moved to bench 3 for the pressure study."
TODAY = f"Lab note {WORD}: the pump is due for its yearly service."
NOTES = (MARCH, JUNE, SEPTEMBER, TODAY)
QUERY = f"lab note {WORD} pump"
THIS_MONTH = date.today().replace(day=1).isoformat()


@pytest.fixture
def shell(notebook: Notebook, hindsight_server: RunningServer, bank_id: str) -> Notebook:
    notebook.connect(hindsight_server.url, bank_id, recall_limit="10")
    return notebook


def run(shell: Notebook, source: str) -> str:
    """Run a cell; what it shows (its printed text and its result), as text."""
    cell = shell.run(source)
    assert cell.error is None, cell.text
    return cell.text + (repr(cell.result) if cell.result is not None else "")


def found(shell: Notebook, options: str) -> set[str]:
    """Which notes ``%recall OPTIONS QUERY`` shows."""
    shown = run(shell, f"%recall {options} {QUERY}")
    return {note for note in NOTES if note in shown}


def test_notes_retained_with_their_dates_are_found_then_and_not_now(shell: Notebook) -> None:
    queued = run(
        shell,
        "import hindsight_magic as hm\nfrom datetime import datetime\n"
        f"hm.retain({MARCH!r}, timestamp=datetime({YEAR}, 3, 14, 9, 30))",
    )
    assert "1 memory queued." in queued
    assert "1 memory queued." in run(shell, f"%retain --at {YEAR}-06-20 {JUNE}")
    assert "1 memory queued." in run(shell, f'%%retain --at "2 Sep {YEAR}"\n{SEPTEMBER}')
    assert "1 memory queued." in run(shell, f"%retain {TODAY}")

    assert found(shell, "") == set(NOTES)  # all four match the query
    last_year = f"--since {YEAR}-01-01 --until {YEAR}-12-31"
    assert found(shell, last_year) == {MARCH, JUNE, SEPTEMBER}
    assert found(shell, f"--since {THIS_MONTH}") == {TODAY}
    assert found(shell, f"--since {YEAR}-06-01 --until {YEAR}-06-30") == {JUNE}
    assert found(shell, f"--until {YEAR}-03-14") == {MARCH}  # a day includes all of it

    # memory as it was: on 1 April last year only the March note had been written
    assert found(shell, f"--as-of {YEAR}-04-01") == {MARCH}
    assert found(shell, f"--as-of {YEAR}-07-01") == {MARCH, JUNE}
    assert found(shell, f"--as-of {YEAR}-03-13") == set()
    june = shell.run(f"%recall --since {YEAR}-06-01 --until {YEAR}-06-30 {QUERY}").result
    headline = repr(june).splitlines()[0]
    assert f"between 1 Jun {YEAR} and 30 Jun {YEAR}" in headline
    assert f" · {YEAR}-06-20 · " in repr(june)  # the note's own date where its age goes


def test_a_date_in_the_python_api_is_a_when_as_since_takes_it(
    hindsight_server: RunningServer, bank_id: str
) -> None:
    import hindsight_magic as hm
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    settings = HindsightSettings(
        api_url=hindsight_server.url, bank_id=bank_id, scoping="global", journal_path="off"
    )
    session = HindsightSession(settings)
    try:
        hm.retain(MARCH, timestamp=f"14 Mar {YEAR} 09:30", session=session)
        hm.retain(TODAY, session=session)
        then = hm.recall(QUERY, since=date(YEAR, 3, 14), until=date(YEAR, 3, 14), session=session)
        now = hm.recall(QUERY, since=THIS_MONTH, session=session)
        before = hm.recall(QUERY, as_of=f"{YEAR}-03-14 09:00", session=session)
        after = hm.recall(QUERY, as_of=f"{YEAR}-03-14 10:00", session=session)
    finally:
        session.close()
    assert MARCH in then.texts
    assert TODAY not in then.texts
    assert TODAY in now.texts
    assert MARCH not in now.texts
    assert MARCH not in before.texts  # read as it was before the note was written
    assert MARCH in after.texts
    assert TODAY not in after.texts
    memory: Any = next(m for m in then if m.text == MARCH)
    assert memory.mentioned_at.startswith(f"{YEAR}-03-14")  # as the server recorded it


def test_a_cell_run_again_with_a_date_added_dates_its_memory_then(shell: Notebook) -> None:
    """A researcher retains a note, then adds ``--at`` (or ``timestamp=``) to the same cell and
    runs it again: the note is found at that date (a ``%retain`` line's dated text replaces
    the undated one) and the same cell run again unchanged sends nothing."""

    def cell(source: str, cell_id: str) -> str:
        ran = shell.run(f"{source}\nhindsight_magic.flush()", cell_id=cell_id)
        assert ran.error is None, ran.text
        return repr(ran.result)

    run(shell, "import hindsight_magic")
    cell(f"%retain {JUNE}", "june")  # first without its date
    dated = f"%retain --at {YEAR}-06-20 {JUNE}"
    said = cell(dated, "june")
    assert "1 memory accepted" in said, said
    assert "nothing new to send" in cell(dated, "june")
    cell(f"hindsight_magic.retain({MARCH!r})", "march")
    said = cell(f"hindsight_magic.retain({MARCH!r}, timestamp='{YEAR}-03-14')", "march")
    assert "1 memory accepted" in said, said

    assert found(shell, f"--since {YEAR}-06-01 --until {YEAR}-06-30") == {JUNE}
    assert found(shell, f"--since {YEAR}-03-14 --until {YEAR}-03-14") == {MARCH}
    # the undated text is superseded (on the worker, once the server has the dated one)
    now = wait_for(
        lambda: found(shell, f"--since {THIS_MONTH}"), 60, every_s=1, until=lambda f: JUNE not in f
    )
    assert JUNE not in now
