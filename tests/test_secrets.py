"""A planted API key (and a planted password) appear nowhere they should not.

A real server with auth on accepts the planted key. One session runs every magic and subcommand
with ``debug`` on, auto-retains cells that contain the secrets and retains text that contains
them; then a second session uses a wrong key (also planted) and hits every error path. The
secrets are then searched for in: every output of the extension's cells (text, HTML, Markdown),
``%config HindsightMagics``, the panel (text and widgets), every log record at every level,
the errors raised and the ``repr`` of the extension's objects, the journal's files (bytes), and
everything the server holds (documents and extracted memories), which must say ``[REDACTED]``.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import ServerReader
from helpers import PLANTED_KEY, RunningServer

from hindsight_magic._ipython.subcommands import SUBCOMMANDS
from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration

PASSWORD = f"pw-planted-{uuid.uuid4().hex[:16]}"  # not credential-shaped: redacted by name
WRONG_KEY = f"wrong-planted-{uuid.uuid4().hex[:16]}"
SECRETS = (PLANTED_KEY, PASSWORD, WRONG_KEY)


class Places:
    """Everything collected for the scan: place name → text or bytes."""

    def __init__(self) -> None:
        self.places: dict[str, str | bytes] = {}

    def add(self, name: str, value: Any) -> None:
        key, n = name, 1
        while key in self.places:  # the same cell run twice is two places
            n += 1
            key = f"{name} #{n}"
        if isinstance(value, bytes | str):
            self.places[key] = value
        else:
            self.places[key] = repr(value)

    def add_result(self, name: str, result: Any) -> None:
        """A cell result as every front end could render it."""
        if result is None:
            return
        self.add(f"{name} repr", result)
        self.add(f"{name} str", str(result))
        for method in ("_repr_html_", "_repr_markdown_", "_repr_mimebundle_"):
            render = getattr(result, method, None)
            if callable(render):
                self.add(f"{name} {method}", json.dumps(render(), default=str))

    def leaks(self) -> list[str]:
        found = []
        for name, value in self.places.items():
            for secret in SECRETS:
                needle = secret.encode() if isinstance(value, bytes) else secret
                if needle in value:
                    found.append(f"{name}: {secret[:14]}…")
        return found


@pytest.fixture
def places() -> Places:
    return Places()


@pytest.fixture
def reader(keyed_server: RunningServer, bank_id: str) -> Iterator[ServerReader]:
    reader = ServerReader(keyed_server.url, bank_id, PLANTED_KEY)
    yield reader
    reader.close()


def run_magic(notebook: Any, places: Places, source: str) -> Any:
    """Run one of the extension's cells and collect everything it shows."""
    cell = notebook.run(source)
    name = source.splitlines()[0][:60]
    places.add(f"output of {name!r}", cell.text)
    places.add_result(f"result of {name!r}", cell.result)
    error = cell.error
    while error is not None:  # the error and what it was raised from (the shown traceback
        places.add(f"error of {name!r}", f"{error!s} {error!r} {vars(error)!r}")  # is in .text)
        error = error.__cause__ or error.__context__
    return cell


def collect_objects(notebook: Any, places: Places, label: str) -> None:
    from hindsight_magic._session import PARTS

    magics = notebook.magics
    session = magics.session
    parts = PARTS[id(session)]  # the parts' reprs: what a traceback or a debugger shows
    for name, value in {
        "magics": magics,
        "session": session,
        "client": parts.connection.client,
        "settings": session.settings,
        "settings str": str(session.settings),
        "settings dump": session.settings.as_dict(),
        "settings public": session.settings.public_items(),
        "queue": parts.queue,
        "queue stats": session.queue_stats(),
        "failed batches": [(b.error, b.items) for b in Driver(session).failed_batches()],
        "scope": session.scope,
        "autoretain": session.autoretain_status(),
        "notices": Driver(session).notices(),
    }.items():
        places.add(f"{label}: {name}", value)


def widget_tree(widget: Any) -> Iterator[Any]:
    """``widget`` and every widget inside it (through the public ``children``)."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from widget_tree(child)


def collect_panel(notebook: Any, places: Places, label: str) -> None:
    """The live panel's widgets (the shell has no front end, so the magic shows text)."""
    if "panel" not in SUBCOMMANDS:
        return
    from hindsight_magic._ui.panel.hub import panel_hub
    from hindsight_magic._ui.panel.widgets import HindsightPanel

    hub = panel_hub(notebook.magics.session)
    panel = HindsightPanel(hub, hub.snapshot())
    try:
        states = [widget.get_state() for widget in widget_tree(panel)]
        places.add(f"{label}: panel widgets", json.dumps(states, default=str))
        places.add(f"{label}: panel repr", panel)
    finally:
        panel.close()


MAGIC_CELLS = [
    f"%retain The staging API key is {PLANTED_KEY}; rotate it monthly.",
    f"%%retain --split --tags ops\nDeploys read {PLANTED_KEY} from the vault.\n\n"
    f"The warehouse password is {PASSWORD}.",
    "%hindsight autoretain now",
    "%hindsight flush",
    "%recall --budget high staging API key rotation",
    "%%recall\nwarehouse password",
    "%%reflect --context 'for the runbook'\nWhat is the staging key?",
    "%reflect Where do deploys read the key from?",
    "%hindsight status",
    "%hindsight config",
    "%hindsight config api_url",
    f"%hindsight config api_key={PLANTED_KEY}",  # refused, and never echoed
    "%hindsight config debug",
    "%config HindsightMagics",
    "%hindsight scope",
    "%hindsight bank",
    "%hindsight help",
    "%hindsight autoretain status",
    "%hindsight models",
    "%hindsight context",
    "%hindsight retry",
    "%hindsight retry --drop",
    "%hindsight clear",
    "%hindsight server status",
    "%hindsight server logs",
]
OPTIONAL_CELLS = {"panel": "%hindsight panel", "doctor": "%hindsight doctor"}
WRONG_KEY_CELLS = [
    "%retain Written with the wrong key.",
    "%hindsight flush",
    "%recall anything",
    "%%reflect\nanything?",
    "%hindsight status",
    "%hindsight flush",
    "%hindsight retry",
    "%hindsight config",
]


def test_planted_secrets_appear_nowhere(
    notebook: Any,
    keyed_server: RunningServer,
    bank_id: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    places: Places,
    reader: ServerReader,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, every level
    notebook.monkeypatch.setenv("WAREHOUSE_PASSWORD", PASSWORD)
    notebook.load(
        api_url=keyed_server.url,
        bank_id=bank_id,
        api_key=PLANTED_KEY,
        debug="true",
        retain_every_n_cells="2",
    )
    optional = [cell for name, cell in OPTIONAL_CELLS.items() if name in SUBCOMMANDS]
    user_cells = [  # the user's own cells: their outputs are theirs, their transcript is ours
        f'service_config = {{"token": "{PLANTED_KEY}", "region": "eu-west-1"}}\nservice_config',
        'import os\nwarehouse = os.environ["WAREHOUSE_PASSWORD"]\nwarehouse',
        "total_rows = 42",
        "print('rows loaded')",
    ]
    for source in user_cells:
        assert notebook.run(source).error is None
    for source in MAGIC_CELLS + optional:
        run_magic(notebook, places, source)
    stats = notebook.magics.session.queue_stats()
    assert (stats.failed, stats.accepted >= 4) == (0, True)  # sanity: the key was accepted
    collect_objects(notebook, places, "right key")
    collect_panel(notebook, places, "right key")

    # the server holds what was retained, redacted
    expected = {
        "The staging API key is [REDACTED]; rotate it monthly.",
        "Deploys read [REDACTED] from the vault.",
        "The warehouse password is [REDACTED].",
    }
    lines = reader.settled_lines(expected, 240)
    assert expected <= set(lines), sorted(lines)[:20]
    documents = reader.documents()
    transcript = "\n".join(documents.values())
    assert '"token": "[REDACTED]"' in transcript  # the auto-retained cell
    assert "warehouse\n[result]\n'[REDACTED]'" in transcript
    places.add("server documents", json.dumps(documents))
    places.add("server memories", json.dumps(reader.memory_texts()))
    places.add("server retain operations", json.dumps(list(reader.accepted_contents())))

    # a wrong key (planted too): every error path
    notebook.monkeypatch.setenv("HINDSIGHT_API_KEY", WRONG_KEY)
    run_magic(notebook, places, "%reload_ext hindsight_magic")
    for source in WRONG_KEY_CELLS + optional:
        run_magic(notebook, places, source)
    status = repr(notebook.run("%hindsight status").result)
    assert "refuses the API key (check HINDSIGHT_API_KEY)" in status  # sanity: it was wrong
    assert notebook.magics.session.queue_stats().failed >= 1
    collect_objects(notebook, places, "wrong key")
    collect_panel(notebook, places, "wrong key")

    # logs at every level, and the journal on disk
    records = caplog.records
    assert any(r.levelno == logging.DEBUG and r.name == "hindsight_magic" for r in records)
    places.add("log text", caplog.text)
    places.add("log records", [(r.name, r.levelname, r.getMessage(), r.args) for r in records])
    journal = Path(os.environ["HINDSIGHT_JOURNAL_PATH"])
    files = sorted(journal.parent.glob(journal.name + "*"))
    assert journal in files
    for path in files:
        places.add(f"journal file {path.name}", path.read_bytes())

    assert len(places.places) > 150  # sanity: the scan covered a lot
    assert places.leaks() == []


def test_a_password_said_in_prose_never_reaches_the_server(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """``%retain`` and ``hindsight_magic.retain`` of a note that says a password in words: the
    server holds the note with ``[REDACTED]`` where the password was; prose about passwords
    is kept as written."""
    notebook.connect(hindsight_server.url, bank_id)
    secret, other = f"hunter2{uuid.uuid4().hex[:8]}", f"Tk9{uuid.uuid4().hex[:10]}"
    notebook.run(f"%retain the warehouse password is {secret}")
    notebook.run(f"import hindsight_magic as hm\nhm.retain('pw {other} for the VPN')")
    notebook.run("%retain the password policy changed: rotate every 90 days")
    notebook.magics.session.flush(60)
    expected = {
        "pw [REDACTED] for the VPN",
        "the password policy changed: rotate every 90 days",
        "the warehouse password is [REDACTED]",
    }
    reader = ServerReader(hindsight_server.url, bank_id)
    try:
        accepted = reader.accepted_contents()  # what the retain requests carried
        stored = reader.settled_lines(expected, 120)
        held = json.dumps([accepted, stored, reader.memory_texts()])
    finally:
        reader.close()
    assert set(accepted) == expected
    assert set(stored) == expected
    assert secret not in held
    assert other not in held
