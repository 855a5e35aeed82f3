"""Auto-retain in a real InteractiveShell: the post_run_cell hook, the every-N-cells tracker and
``%hindsight autoretain``. The server is unreachable, so what would be sent stays in the queue.

The worker builds transcripts in the background; the tests call auto-retain's ``process()``
themselves (it is idempotent and locked) and then read what was queued.
"""

from __future__ import annotations

import re
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import IPython
import pytest
from helpers import FakeClock, delivery

from hindsight_magic._capture import autoretain as hook
from hindsight_magic._capture.identity import cell_document
from hindsight_magic._capture.transcript import PIECE_CHARS, SOURCE_CAP
from hindsight_magic._delivery.items import OWN_ID_PREFIX, Batch, MemoryItem, Route
from hindsight_magic._text import local_timestamp
from hindsight_magic.testing import Driver

SOURCES = [f"value_{name} = {i}" for i, name in enumerate("abcdefghijkl")]


# IPython records each cell's printed output from 9.1 on; before, auto-retain cannot keep it
RECORDS_STREAMS = IPython.version_info >= (9, 1)


OWN_ID = re.compile(re.escape(OWN_ID_PREFIX) + r"[0-9a-f]{32}-\d+")


def session_of(notebook: Any) -> Any:
    return notebook.magics.session


def queued(session: Any) -> list[MemoryItem]:
    """Every item the queue holds, oldest first (pending, batched, in flight or failed)."""
    return [item for _, item in Driver(session).queued()]


def worker_of(session: Any) -> Any:
    """The session's worker, for the few tests that put a recorder or a fault in place of one
    of its own methods (``send``, ``submit``, ``close``): no public seam reaches inside it."""
    from hindsight_magic._session import PARTS

    return PARTS[id(session)].worker


def transcripts(session: Any) -> list[MemoryItem]:
    """The auto-retain items (``source: autoretain``), oldest first, after processing."""
    Driver(session).retain_cells()
    return [item for item in queued(session) if item.metadata.get("source") == "autoretain"]


def run(notebook: Any, source: str) -> int:
    """Run ``source`` as a user's cell; return its cell number."""
    number = notebook.ip.execution_count
    cell = notebook.run(source)
    assert cell.error is None, cell.text
    return number


def run_all(notebook: Any, sources: list[str]) -> list[int]:
    return [run(notebook, source) for source in sources]


def headers(item: MemoryItem) -> list[int]:
    return [int(n) for n in re.findall(r"^\[cell (\d+)[],]", item.content, re.MULTILINE)]


def cells_of(items: list[MemoryItem]) -> list[int]:
    """The cells the items hold, in order (a cell cut in parts once)."""
    return list(dict.fromkeys(n for item in items for n in headers(item)))


def text_of(items: list[MemoryItem]) -> str:
    return "\n\n".join(item.content for item in items)


def our_callbacks(ip: Any) -> list[Any]:
    return [
        callback
        for callback in ip.events.callbacks["post_run_cell"]
        if type(getattr(callback, "__self__", None)).__name__ == "AutoRetainer"
    ]


@pytest.fixture
def loaded(notebook: Any, dead_url: str) -> Any:
    notebook.monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    notebook.load(api_url=dead_url)
    return notebook


@pytest.fixture
def clock(notebook: Any) -> FakeClock:
    fake = FakeClock(1_700_000_000.0)
    notebook.monkeypatch.setattr(hook, "time", fake)
    return fake


# -- what counts -----------------------------------------------------------------------------


def test_cells_without_history_do_not_count(loaded: Any) -> None:
    session = session_of(loaded)
    for source in SOURCES[:4]:
        outcome = loaded.ip.run_cell(source, store_history=False)
        assert outcome.success
    Driver(session).retain_cells(force=True)
    assert session.autoretain_status().counted == 0
    assert transcripts(session) == []
    run(loaded, SOURCES[5])
    assert session.autoretain_status().counted == 1


def test_skipped_cells_do_not_count(loaded: Any) -> None:
    session = session_of(loaded)
    loaded.ip.run_cell("", store_history=True)
    loaded.ip.run_cell("   \n", store_history=True)
    run(loaded, "# hindsight: skip\nhidden_value = 1")
    run(loaded, "# note\n%hindsight autoretain status")
    run(loaded, "%hindsight config retain_context")
    run(loaded, "found = %hindsight help")
    assert session.autoretain_status().counted == 0
    assert transcripts(session) == []
    numbers = run_all(loaded, SOURCES[:3])
    items = transcripts(session)
    assert cells_of(items) == numbers
    assert "hidden_value" not in text_of(items)
    assert "%hindsight" not in text_of(items)


# -- full-session mode -----------------------------------------------------------------------


def test_full_session_retains_each_new_cell_once_as_its_own_memory(loaded: Any) -> None:
    session = session_of(loaded)
    assert session.settings.retain_mode == "full-session"
    first = run_all(loaded, SOURCES[:2])
    assert transcripts(session) == []  # two cells: not yet
    first += [run(loaded, SOURCES[2])]
    items = transcripts(session)
    assert [item.content for item in items] == [
        f"[cell {n}]\n{source}" for n, source in zip(first, SOURCES[:3], strict=True)
    ]
    assert [item.metadata["cells"] for item in items] == [str(n) for n in first]
    # a document each, named by the cell and its version (``_capture/identity.py``)
    assert all(cell_document(item.document_id) for item in items)
    assert len({item.document_id for item in items}) == 3
    assert all(item.update_mode is None for item in items)
    assert all(item.context == "jupyter" for item in items)

    second = run_all(loaded, SOURCES[3:5])
    assert len(transcripts(session)) == 3
    second += [run(loaded, SOURCES[5])]
    later = transcripts(session)
    assert later[:3] == items  # nothing re-sent: what one retain sends never grows
    assert cells_of(later[3:]) == second
    status = session.autoretain_status()
    assert (status.counted, status.retained, status.until_next) == (6, 6, 3)


def test_config_changes_the_cadence(loaded: Any) -> None:
    session = session_of(loaded)
    cell = loaded.run("%hindsight config retain_every_n_cells=2")
    assert str(cell.result) == "retain_every_n_cells = 2   [%hindsight config]"
    first = [run(loaded, SOURCES[0])]
    assert transcripts(session) == []
    first.append(run(loaded, SOURCES[1]))
    assert cells_of(transcripts(session)) == first
    second = run_all(loaded, SOURCES[2:4])
    assert cells_of(transcripts(session)) == first + second


def test_hook_processes_in_the_background(loaded: Any) -> None:
    """Without any explicit processing, the worker queues the transcript soon after the cells."""
    session = session_of(loaded)
    numbers = run_all(loaded, SOURCES[:3])
    deadline = time.monotonic() + 3.0
    found: list[MemoryItem] = []
    while time.monotonic() < deadline and len(found) < 3:
        found = [i for i in queued(session) if i.metadata.get("source") == "autoretain"]
        time.sleep(0.05)
    assert cells_of(found) == numbers


# -- last-cells mode -------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["env", "config"])
def test_last_cells_windows_overlap(notebook: Any, dead_url: str, how: str) -> None:
    if how == "env":
        notebook.load(api_url=dead_url, retain_mode="last-cells")
    else:
        notebook.load(api_url=dead_url)
        notebook.run("%hindsight config retain_mode=last-cells")
    session = session_of(notebook)
    assert session.settings.retain_mode == "last-cells"
    numbers: list[int] = []
    for start in (0, 3, 6):
        numbers += run_all(notebook, SOURCES[start : start + 3])
        assert len(transcripts(session)) == start // 3 + 1  # small cells share one memory
    items = transcripts(session)
    assert [headers(item) for item in items] == [numbers[0:3], numbers[1:6], numbers[4:9]]
    assert len({item.document_id for item in items}) == 3  # a new document each time
    assert all(OWN_ID.fullmatch(item.document_id or "") for item in items)
    assert all(item.update_mode is None for item in items)
    assert SOURCES[0] not in items[1].content
    assert SOURCES[4] in items[2].content
    assert SOURCES[3] not in items[2].content


# -- batching of appends ---------------------------------------------------------------------


def test_two_appends_to_one_document_become_one_item_in_one_batch() -> None:
    sent: list[Batch] = []
    queue, worker = delivery(sent.append)
    route = Route("bank", ("project:x",))
    for part in ("[cell 1]\nfirst part", "[cell 4]\nsecond part"):
        item = MemoryItem(part, "2025-01-01T00:00:00+00:00", document_id="d", update_mode="append")
        queue.enqueue(route, item)
    queue.request_flush()
    assert worker.pump() == 1
    [batch] = sent
    [item] = batch.items
    assert item.content == "[cell 1]\nfirst part\n\n[cell 4]\nsecond part"
    assert item.document_id == "d"
    assert batch.count == 2


def test_cells_queued_before_a_flush_go_in_one_request(loaded: Any) -> None:
    session = session_of(loaded)
    sent: list[Batch] = []
    loaded.monkeypatch.setattr(worker_of(session), "send", sent.append)
    numbers = run_all(loaded, SOURCES[:6])
    assert len(transcripts(session)) == 6
    outcome = session.flush(2.0)
    assert outcome.settled
    [batch] = sent
    assert cells_of(batch.items) == numbers
    assert batch.count == 6


# -- what an item carries --------------------------------------------------------------------


def test_timestamp_is_when_the_cell_ran(loaded: Any, clock: FakeClock) -> None:
    session = session_of(loaded)
    started = clock.now
    run(loaded, SOURCES[0])
    clock.now += 60
    run_all(loaded, SOURCES[1:3])
    clock.now += 3600  # processed (and later flushed) much later
    first, second, third = transcripts(session)
    assert first.timestamp == local_timestamp(datetime.fromtimestamp(started, timezone.utc))
    later = local_timestamp(datetime.fromtimestamp(started + 60, timezone.utc))
    assert second.timestamp == third.timestamp == later


def test_metadata_and_scope_tags(notebook: Any, dead_url: str) -> None:
    notebook.monkeypatch.setenv("JPY_SESSION_NAME", "analysis/churn.ipynb")
    notebook.load(api_url=dead_url)
    session = session_of(notebook)
    cells = run_all(notebook, SOURCES[:3])
    item = transcripts(session)[2]
    assert item.metadata == {
        "source": "autoretain",
        "kernel_session": session.session_id,
        "notebook": "analysis/churn.ipynb",
        "cells": str(cells[2]),
    }
    assert session.scope.mode == "per-project-tagged"
    assert item.tags == (f"project:{session.label}",)
    [route] = [r for r, i in Driver(session).queued() if i is item]
    assert route.tags == item.tags
    assert route.bank_id == session.scope.bank_id


def test_metadata_without_a_notebook_name(loaded: Any) -> None:
    session = session_of(loaded)
    cells = run_all(loaded, SOURCES[:3])
    item = transcripts(session)[0]
    assert item.metadata == {
        "source": "autoretain",
        "kernel_session": session.session_id,
        "cells": str(cells[0]),
    }


def test_a_long_cell_is_cut_into_parts_that_each_name_the_cell(loaded: Any) -> None:
    session = session_of(loaded)
    lines = [
        f"reading_{n} = round({n} * 0.5 + 1.25, 2)  # Lab B bench {n}, recalibrated"
        for n in range(40)
    ]
    long = run(loaded, "\n".join(lines))
    run_all(loaded, SOURCES[:2])
    parts = [item for item in transcripts(session) if headers(item) == [long]]
    assert len(parts) > 1
    for n, part in enumerate(parts, 1):
        assert part.content.startswith(f"[cell {long}, part {n} of {len(parts)}]\n")
        assert len(part.content) <= PIECE_CHARS
        assert part.metadata["cells"] == str(long)
        assert part.document_id != parts[0].document_id or n == 1
    assert [line for p in parts for line in p.content.splitlines()[1:]] == lines
    # the names each part defines are its entities
    assert "reading_0" in parts[0].entities
    assert "reading_39" in parts[-1].entities
    assert "reading_39" not in parts[0].entities


def test_a_last_cells_window_names_its_own_cells(notebook: Any, dead_url: str) -> None:
    notebook.load(api_url=dead_url, retain_mode="last-cells", retain_overlap_cells="1")
    session = session_of(notebook)
    cells = run_all(notebook, SOURCES[:6])
    first, second = transcripts(session)
    assert first.metadata["cells"] == f"{cells[0]}-{cells[2]}"
    assert second.metadata["cells"] == f"{cells[2]}-{cells[5]}"  # the overlap cell included


def test_secrets_are_redacted_before_queueing(notebook: Any, dead_url: str) -> None:
    env_secret = "env-token-value-0123456789"
    api_key = "hs-api-key-abcdef-9876"
    openai = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"
    notebook.monkeypatch.setenv("MY_API_TOKEN", env_secret)
    notebook.load(api_url=dead_url, api_key=api_key)
    session = session_of(notebook)
    run(notebook, f"client_key = {openai!r}")
    run(notebook, f"token = {env_secret!r}\ntoken")  # the result repeats the secret
    run(notebook, f"print({api_key!r}[:4])\nkey = {api_key!r}")
    items = transcripts(session)
    content = text_of(items)
    assert content.count("[REDACTED]") >= 4
    for secret in (env_secret, api_key, openai, openai[8:20], env_secret[:12]):
        assert secret not in content
        assert not any(secret in name for item in items for name in item.entities)
    assert "client_key = '[REDACTED]'" in content
    assert "[result]\n'[REDACTED]'" in content


def test_a_secret_at_the_length_cap_is_not_leaked(notebook: Any, dead_url: str) -> None:
    secret = "env-token-value-0123456789abcdef"
    notebook.monkeypatch.setenv("MY_API_TOKEN", secret)
    notebook.load(api_url=dead_url)
    session = session_of(notebook)
    # the cap falls inside the secret, and still does after the secret is redacted
    run(notebook, f"pad = '{'x' * (SOURCE_CAP - 20)} {secret} {'y' * 40}'")
    run_all(notebook, SOURCES[:2])
    content = text_of(transcripts(session))
    assert re.search(r"…\[\d+ more", content)  # the cap marker (a long line is cut at spaces)
    assert secret[:6] not in content


@pytest.mark.parametrize("outputs", ["none", "result", "all"])
def test_retain_outputs(notebook: Any, dead_url: str, outputs: str) -> None:
    notebook.load(api_url=dead_url, retain_outputs=outputs)
    session = session_of(notebook)
    run(notebook, "print('std' + 'out text')")
    run(notebook, "6 * 7")
    cell = notebook.run("1/0")
    assert isinstance(cell.error, ZeroDivisionError)
    content = text_of(transcripts(session))
    assert "Traceback" not in content
    assert ("[result]\n42" in content) == (outputs != "none")
    assert ("[error]\nZeroDivisionError: division by zero" in content) == (outputs != "none")
    assert ("[output]\nstdout text" in content) == (outputs == "all" and RECORDS_STREAMS)
    told = [line for line in Driver(session).notices() if "does not record printed output" in line]
    assert len(told) == (outputs == "all" and not RECORDS_STREAMS)
    if outputs == "none":
        assert "[result]" not in content
        assert "[error]" not in content


def test_memory_blocks_in_outputs_never_feed_back(notebook: Any, dead_url: str) -> None:
    notebook.load(api_url=dead_url, retain_outputs="all")
    session = session_of(notebook)
    run(notebook, "recalled = ''.join(['<memo', 'ries>', 'churn', ' is 5%', '</memo', 'ries>'])")
    run(notebook, "recalled + ' and more'")
    run(notebook, "print(recalled)\nprint('visible')")
    content = text_of(transcripts(session))
    assert "churn is 5%" not in content
    assert "[result]\n' and more'" in content
    assert ("[output]\nvisible" in content) == RECORDS_STREAMS


def test_a_cell_mixing_our_magics_with_code_is_retained_as_its_code(loaded: Any) -> None:
    """A ``%retain`` line is its own memory and a ``%hindsight`` line is not the user's work:
    the cell's memory is its code alone. (A ``%recall`` question among code, which needs a
    server to run, is ``test_findable_server``'s.)"""
    session = session_of(loaded)
    run(loaded, "%hindsight config retain_every_n_cells=1")
    run(loaded, "%retain Churn means 90 days without an order.\nchurn_days = 90  # the definition")
    run(loaded, "status = %hindsight status\nsplit_seed = 20240611  # the split we keep")
    memories = transcripts(session)
    assert [item.content.split("\n", 1)[1] for item in memories] == [
        "churn_days = 90  # the definition",
        "split_seed = 20240611  # the split we keep",
    ]
    retained = [
        item.content for item in queued(session) if item.metadata.get("source") != "autoretain"
    ]
    assert retained == ["Churn means 90 days without an order."]  # the %retain text, once


# -- the hook is silent and robust -----------------------------------------------------------


def test_hook_never_prints(notebook: Any, dead_url: str) -> None:
    notebook.load(api_url=dead_url, retain_every_n_cells="1")
    session = session_of(notebook)
    numbers = [notebook.ip.execution_count]
    assert notebook.run("print('only this')").text == "only this\n"
    numbers.append(notebook.ip.execution_count)
    assert notebook.run("quiet_one = 1").text == ""
    assert notebook.run("# hindsight: skip\nquiet2 = 2").text == ""
    time.sleep(0.4)  # let the worker build a transcript in the background
    numbers.append(notebook.ip.execution_count)
    assert notebook.run("quiet3 = 3").text == ""
    assert notebook.run("quiet3").text.strip() == f"Out[{numbers[-1] + 1}]: 3"
    assert cells_of(transcripts(session)) == [*numbers, numbers[-1] + 1]


def test_hook_never_raises_when_the_session_is_broken(notebook: Any, dead_url: str) -> None:
    notebook.load(api_url=dead_url, retain_every_n_cells="1")
    session = session_of(notebook)
    kernel_thread = threading.current_thread()
    real_submit = worker_of(session).submit
    calls: list[Any] = []

    def broken(job: Any, *args: Any, **kwargs: Any) -> bool:
        if threading.current_thread() is not kernel_thread:
            return real_submit(job, *args, **kwargs)  # the worker's own re-scheduling
        calls.append(job)
        raise RuntimeError("worker is gone")

    notebook.monkeypatch.setattr(worker_of(session), "submit", broken)
    deadline = time.monotonic() + 3.0
    n = 0
    while not calls and time.monotonic() < deadline:  # until the hook itself hit the failure
        n += 1
        cell = notebook.run(f"answer = 21 * 2 + {n}\nanswer")
        assert cell.error is None
        assert cell.result == 42 + n
        assert cell.text.strip().endswith(f": {42 + n}")
        assert "Error in callback" not in cell.text
        assert "worker is gone" not in cell.text
        assert "Traceback" not in cell.text
        time.sleep(0.35)  # idle long enough for the worker to finish with the cells so far
    assert calls, "the hook never reached the broken queue"
    cell = notebook.run("answer + 1")
    assert cell.error is None
    assert cell.result == 43 + n
    assert "Error in callback" not in cell.text


# -- %hindsight autoretain -------------------------------------------------------------------


def test_autoretain_off_stops_counting_and_on_resumes(loaded: Any) -> None:
    session = session_of(loaded)
    off = loaded.run("%hindsight autoretain off")
    assert str(off.result).startswith("Auto-retain off")
    run_all(loaded, SOURCES[:4])
    Driver(session).retain_cells(force=True)
    assert session.autoretain_status().counted == 0
    assert transcripts(session) == []
    on = loaded.run("%hindsight autoretain on")
    assert str(on.result).startswith("Auto-retain on")
    numbers = run_all(loaded, SOURCES[4:7])
    items = transcripts(session)
    assert cells_of(items) == numbers
    assert SOURCES[0] not in text_of(items)


def test_autoretain_every_sets_the_interval(loaded: Any) -> None:
    session = session_of(loaded)
    cell = loaded.run("%hindsight autoretain every 5")
    assert "every 5 cells" in str(cell.result)
    assert session.settings.retain_every_n_cells == 5
    numbers = run_all(loaded, SOURCES[:4])
    assert transcripts(session) == []
    numbers.append(run(loaded, SOURCES[4]))
    assert cells_of(transcripts(session)) == numbers


def test_autoretain_now_retains_below_the_threshold(loaded: Any) -> None:
    session = session_of(loaded)
    numbers = run_all(loaded, SOURCES[:2])
    cell = loaded.run("%hindsight autoretain now")
    assert cell.error is None, cell.text
    assert "2 cells retained" in str(cell.result)
    assert cells_of(transcripts(session)) == numbers


def test_autoretain_now_with_nothing_new_queues_nothing(loaded: Any) -> None:
    session = session_of(loaded)
    loaded.run("%hindsight autoretain now")
    assert transcripts(session) == []


def test_autoretain_status_shows_the_counts(loaded: Any) -> None:
    run_all(loaded, SOURCES[:2])
    for line in ("%hindsight autoretain status", "%hindsight autoretain"):
        text = str(loaded.run(line).result)
        assert text.startswith("Auto-retain on: full-session, every 3 cells;")
        assert "2 cells counted" in text
        assert "next retain in 1" in text
        assert "0 cells retained" in text
    run(loaded, SOURCES[2])
    text = str(loaded.run("%hindsight autoretain status").result)
    assert "3 cells counted" in text
    assert "next retain in 3" in text
    assert "3 cells retained" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            "sometimes",
            "Unknown autoretain action 'sometimes'; actions: on, off, every, now, status. "
            "Usage: %hindsight autoretain [on | off | every N | now | status]",
        ),
        ("every", "Missing N. Usage: %hindsight autoretain every N"),
        ("on off", "Unexpected 'off'. Usage: %hindsight autoretain on"),
        ("now please", "Unexpected 'please'. Usage: %hindsight autoretain now"),
        ("status x", "Unexpected 'x'. Usage: %hindsight autoretain status"),
    ],
)
def test_autoretain_bad_usage_is_one_line(loaded: Any, args: str, message: str) -> None:
    cell = loaded.run(f"%hindsight autoretain {args}")
    lines = [line for line in cell.text.splitlines() if line.strip()]
    assert lines == [f"UsageError: {message}"]


@pytest.mark.parametrize("value", ["0", "x", "-2"])
def test_autoretain_bad_interval_is_one_line(loaded: Any, value: str) -> None:
    cell = loaded.run(f"%hindsight autoretain every {value}")
    lines = [line for line in cell.text.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("UsageError:")
    assert "retain_every_n_cells" in lines[0]
    assert session_of(loaded).settings.retain_every_n_cells == 3


# -- lifecycle -------------------------------------------------------------------------------


def test_reload_leaves_one_callback_and_unload_none(loaded: Any) -> None:
    ip = loaded.ip
    assert len(our_callbacks(ip)) == 1
    loaded.run("%load_ext hindsight_magic")
    assert len(our_callbacks(ip)) == 1
    loaded.run("%reload_ext hindsight_magic")
    assert len(our_callbacks(ip)) == 1
    loaded.run("reloaded = 'the hook feeds the new session'")
    Driver(session_of(loaded)).retain_cells(force=True)
    assert "the hook feeds the new session" in text_of(queued(session_of(loaded)))
    loaded.run("%reload_ext hindsight_magic")
    assert len(our_callbacks(ip)) == 1
    loaded.run("%unload_ext hindsight_magic")
    assert our_callbacks(ip) == []


def test_unload_retains_the_cells_not_yet_retained(loaded: Any) -> None:
    session = session_of(loaded)
    numbers = run_all(loaded, SOURCES[:2])
    snapshots: list[list[MemoryItem]] = []
    close = worker_of(session).close

    def snapshot_then_close(*args: Any, **kwargs: Any) -> int:
        snapshots.append(queued(session))
        return close(*args, **kwargs)

    loaded.monkeypatch.setattr(worker_of(session), "close", snapshot_then_close)
    assert transcripts(session) == []
    loaded.run("%unload_ext hindsight_magic")
    [items] = snapshots
    assert cells_of([i for i in items if i.metadata.get("source") == "autoretain"]) == numbers
    assert our_callbacks(loaded.ip) == []


def test_cells_are_retained_under_the_scope_they_ran_in(
    notebook: Any, dead_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("tokenizer", "optimizer"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "tokenizer")
    notebook.load(api_url=dead_url)
    session = session_of(notebook)
    run_all(notebook, ["vocab_size = 32000", "merges = 48000"])  # 2 of 3: no retain yet
    monkeypatch.chdir(tmp_path / "optimizer")
    notebook.run("%hindsight scope per-project-tagged")  # re-reads the project: optimizer
    run_all(notebook, ["learning_rate = 3e-4"])
    Driver(session).retain_cells(force=True)
    routes = {item.content: route.tags for route, item in Driver(session).queued()}
    tokenizer_cells = [c for c in routes if "vocab_size" in c]
    optimizer_cells = [c for c in routes if "learning_rate = 3e-4" in c]
    assert tokenizer_cells
    assert optimizer_cells
    assert all(routes[c] == ("project:tokenizer",) for c in tokenizer_cells)
    assert all(routes[c] == ("project:optimizer",) for c in optimizer_cells)
    assert not any("learning_rate = 3e-4" in c for c in tokenizer_cells)


# -- evidence --------------------------------------------------------------------------------


def test_a_cell_s_memory_records_the_files_it_read_and_only_with_evidence_on(
    loaded: Any, tmp_path: Path
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sales.csv").write_text("region,revenue\nEU,400\n")
    loaded.monkeypatch.chdir(tmp_path)
    session = session_of(loaded)
    reads = "text = open('sales.csv').read()\nf'the sales table holds {len(text)} characters'"
    run(loaded, reads)
    Driver(session).retain_cells(force=True)
    (item,) = [i for i in transcripts(session) if "sales.csv" in i.content]
    assert item.metadata["evidence"].startswith('[["sales.csv",22,')
    assert str(tmp_path) not in str(item.metadata)
    session.settings.evidence = False
    run(loaded, reads.replace("holds", "has"))
    Driver(session).retain_cells(force=True)
    (later,) = [i for i in transcripts(session) if "has" in i.content]
    assert "evidence" not in later.metadata
