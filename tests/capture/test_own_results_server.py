"""Memory never feeds on itself: what the extension returned, shown in a cell in any way, is not
in the transcript auto-retain sends — checked on what the real server stored.

A newcomer's cell ``hm.recall('pump')`` sent the recall's own text back in the next transcript
(``[result] 1 memory shown … - The pump runs at 40 Hz.``), so every recall shown re-retained
what it found. Each way a result reaches a cell's output is one cell here: the
Python API as the cell's value, a variable shown later, a ``print`` and an f-string, a status
report, a text's words listed, sorted or counted; the cell's own source and its other output
must still be retained.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import RunningServer, wait_for

from hindsight_magic._api.client import HindsightClient
from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration

FACT = "The pump runs at 40 Hz on weekdays."


def test_results_shown_in_cells_are_never_retained(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        scoping="global",
        retain_outputs="all",  # printed output is retained too: the strictest case
        retain_every_n_cells="100",  # one transcript, sent when the test says
        mental_models="false",
    )
    assert notebook.run(f"%retain {FACT}").error is None
    cells = [
        "import hindsight_magic as hm\nhm.recall('pump')",  # the Python API, as the value
        "r = %recall pump",  # a magic (a cell of ours alone: skipped as a whole)
        "checked = True\nr",  # a variable shown later
        "r[0]",  # one memory of it
        "r.texts",  # its texts
        "for m in r:\n    print('memory:', m.text)",  # each text, printed
        "print(hm.recall('pump speed'))",  # the text, printed
        "print(f\"answer: {hm.reflect('How fast is the pump?', sources=False)}\")",
        "hm.status(check_server=False)",  # a status report
        "r[0].text.split()",  # its words, shown one to a line
        "sorted(set(r[0].text.split()))",  # … sorted
        "__import__('collections').Counter(r[0].text.split())",  # … counted
        "print('the analysis printed this line')",  # the cell's own output: kept
    ]
    for source in cells:
        cell = notebook.run(source)
        assert cell.error is None, cell.text
    session = notebook.magics.session
    assert Driver(session).retain_cells(force=True)
    session.flush(60)

    client = HindsightClient(session.api_url)  # the test's own, to ask the server

    def stored() -> str:  # what auto-retain sent, as the server stores it (a document a cell)
        listed = client.list_memories(bank_id, limit=500).items
        ours = [m for m in listed if (m.metadata or {}).get("source") == "autoretain"]
        ids = {m.document_id for m in ours if m.document_id}
        texts = [str(d and d.original_text) for d in (client.document(bank_id, i) for i in ids)]
        text = "\n".join(texts)
        return text if all(source in text for source in kept) else ""

    kept = [  # sources are the notebook's own work
        "hm.recall('pump')",
        "checked = True",
        "print('memory:', m.text)",
        "the analysis printed this line",
        'print(f"answer: {hm.reflect(',
    ]
    text = wait_for(stored, timeout_s=60, what="the cells on the server")
    for ours in ("40 Hz", "weekdays", "shown; ", "the query", "No answer was", "Queue:"):
        assert ours not in text, f"{ours!r} was retained:\n{text}"
