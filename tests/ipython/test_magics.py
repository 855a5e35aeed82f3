"""The magics in a real InteractiveShell: usage, bad input, lifecycle (no server needed)."""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import one_line, render_markdown, visible_text
from IPython.core.error import UsageError

import hindsight_magic
from bench.common import settled
from hindsight_magic.testing import Driver


def workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hindsight-magic-worker" and t.is_alive()]


@pytest.fixture
def loaded(notebook: Any, dead_url: str) -> Any:
    notebook.load(api_url=dead_url, bank_id="unit")
    return notebook


def test_retain_queues_without_touching_the_network(loaded: Any) -> None:
    cell = loaded.run("%retain The churn table double-counts Q3 refunds.")
    assert cell.error is None
    # (and that the server is not answering, if the worker's warm-up already asked it)
    assert str(cell.result).startswith("1 memory queued.")
    stats = loaded.magics.session.queue_stats()
    assert stats.pending == 1
    assert stats.requests == 0


def test_without_a_journal_the_line_says_the_memories_wait_in_the_kernel(
    notebook: Any, dead_url: str
) -> None:
    notebook.load(api_url=dead_url, journal_path="off", mental_models="false")
    settled(notebook.magics.session)  # the worker's warm-up found nobody answering
    cell = notebook.run("%%retain --split\nThe bucket moved.\n\nIt is in eu-west-2.")
    assert str(cell.result) == (
        f"2 memories queued. The Hindsight server at {dead_url} is not answering: they wait in "
        "this kernel's memory (no journal) and are sent when the server is back "
        "(%hindsight status)."
    )
    cell = notebook.run("%retain Versioning is on.")
    assert str(cell.result) == (
        "1 memory queued. The server is still not answering: 3 memories wait in this kernel's "
        "memory (no journal)."
    )


def test_a_queue_that_takes_no_more_is_one_line_saying_what_to_do(loaded: Any) -> None:
    loaded.magics.session.close()
    cell = loaded.run("%retain One more.")
    assert isinstance(cell.error, hindsight_magic.QueueClosedError)
    assert "Traceback" not in cell.text
    assert one_line(cell.text).startswith("QueueClosedError: "), cell.text
    assert "%reload_ext hindsight_magic" in cell.text


def test_cell_retain_split_and_options(loaded: Any) -> None:
    cell = loaded.run(
        "%%retain --split --tags methods,cv --context review\nUse 5-fold CV.\n\nClip at 3 sigma.\n"
    )
    assert str(cell.result).startswith("2 memories queued.")  # (the server is not answering)
    pending = Driver(loaded.magics.session).queued()
    assert [item.content for _, item in pending] == ["Use 5-fold CV.", "Clip at 3 sigma."]
    route, first = pending[0]
    assert first.context == "review"
    assert route.tags is not None
    assert {"methods", "cv"} <= set(route.tags)
    assert first.metadata == {
        "source": "%retain",
        "kernel_session": loaded.magics.session.session_id,
        "retain_cell": str(loaded.ip.execution_count - 1),  # the cell that ran %%retain
    }


def test_retain_at_queues_the_memory_with_its_date(loaded: Any) -> None:
    lines = (
        '%retain --at "14 Mar 2025 09:30" The pump was recalibrated.',
        "%retain --at 2025-03-14T09:30 -- 10:00 standup moved to 10:30.",  # -- : text's time
        "%retain --at 2025-03-14 -- 09:30 standup.",
        "%%retain --at 2025-03-14T09:30\nThe seal was replaced.",
    )
    for line in lines:
        cell = loaded.run(line)
        assert cell.error is None, cell.text
    queued = [item for _, item in Driver(loaded.magics.session).queued()]
    assert [item.content for item in queued] == [
        "The pump was recalibrated.",
        "10:00 standup moved to 10:30.",
        "09:30 standup.",
        "The seal was replaced.",
    ]
    moments = [datetime.fromisoformat(item.timestamp) for item in queued]
    local = moments[0].tzinfo  # the user's zone, as --since reads a WHEN
    assert moments[0] == datetime(2025, 3, 14, 9, 30, tzinfo=local)
    assert moments[2] == datetime(2025, 3, 14, tzinfo=local)
    assert moments[1] == moments[3] == moments[0]


def test_retain_from_python_in_a_cell_records_the_cell_and_notebook(loaded: Any) -> None:
    loaded.ip.user_ns["__session__"] = "/home/ana/field/fieldwork.ipynb"  # as ipykernel sets it
    try:
        number = loaded.ip.execution_count
        loaded.run("import hindsight_magic; hindsight_magic.retain('The lab is cold.')")
    finally:
        del loaded.ip.user_ns["__session__"]
    _, item = Driver(loaded.magics.session).queued()[-1]
    assert item.metadata == {
        "source": "python api",
        "kernel_session": loaded.magics.session.session_id,
        "notebook": "fieldwork.ipynb",  # not the home folder
        "retain_cell": str(number),
    }


def test_secrets_in_the_provenance_are_redacted(notebook: Any, dead_url: str) -> None:
    secret = "env-token-value-0123456789"
    notebook.monkeypatch.setenv("MY_API_TOKEN", secret)
    notebook.monkeypatch.setenv("JPY_SESSION_NAME", f"/home/ana/field/{secret}-notes.ipynb")
    notebook.load(api_url=dead_url)
    notebook.run("%retain The lab is cold.")
    _, item = Driver(notebook.magics.session).queued()[-1]
    assert item.metadata["notebook"] == "[REDACTED]-notes.ipynb"


def test_retain_keeps_dollar_and_braces_verbatim(loaded: Any) -> None:
    loaded.run("x = 5")
    loaded.run("%retain Costs rose $x and {x} -3% in Q3")
    _, item = Driver(loaded.magics.session).queued()[-1]
    assert item.content == "Costs rose $x and {x} -3% in Q3"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("%retain", "Nothing to retain"),
        ("%retain    ", "Nothing to retain"),
        ("%%retain\n   \n", "Nothing to retain"),
        ("%retain --nope x", "Unknown option --nope"),
        ("%retain --tags", "--tags needs a value"),
        ("%recall", "Nothing to search for"),
        ("%recall --budget huge churn", "Invalid --budget 'huge'"),
        ("%recall --max-tokens 0 churn", "Invalid --max-tokens '0'"),
        ("%recall --since soonish churn", "Cannot read 'soonish' as a time for --since"),
        ("%recall --until 2026-13-45 churn", "Cannot read '2026-13-45' as a time for --until"),
        ("%recall --since today --until 2020-01-01 churn", "is not before --until (1 Jan 2020)"),
        ("%recall --since 3 Nov churn", "--since '3' is a number, not a time"),
        ("%recall --since", "--since needs a value"),
        ("%%reflect\n", "cell body is empty"),
        ("%%reflect\n  \n", "Nothing to reflect on"),
        ("%reflect --var 1x why", "Invalid --var '1x'"),
        ("%hindsight bogus", "Valid subcommands: help, status, config"),
        ("%hindsight scope nope", "Invalid scope 'nope': use global, per-project"),
        ("%hindsight config recall_budget=huge", "Invalid recall_budget='huge'"),
        ("%hindsight config retain_every_n_cells=0", "greater than or equal to 1"),
        ("%hindsight config retain_every_n_cells=many", "Invalid retain_every_n_cells='many'"),
        ("%hindsight config auto_retain=maybe", "use true or false"),
        ("%hindsight config api_url=ftp://x", "Invalid api_url='ftp://x'"),
        ("%hindsight config nope=1", "Unknown setting 'nope'"),
        ("%hindsight config api_key=sk-123", "HINDSIGHT_API_KEY"),
        ("%hindsight bank two words", "one word"),
        ("%hindsight server fly", "Unknown server action 'fly'"),
    ],
)
def test_bad_input_is_one_clear_line_and_nothing_is_lost(
    loaded: Any, source: str, expected: str
) -> None:
    loaded.run("%retain keep this one")
    cell = loaded.run(source)
    assert isinstance(cell.error, UsageError)
    line = one_line(cell.text)
    assert expected in line
    assert "sk-123" not in cell.text
    assert loaded.magics.session.queue_stats().pending == 1


def test_invalid_config_value_is_rolled_back(loaded: Any, caplog: Any) -> None:
    loaded.run("%config HindsightMagics.recall_budget = 'huge'")
    assert "Invalid recall_budget='huge'" in caplog.text  # IPython's %config logs the error
    assert loaded.magics.recall_budget == "mid"
    assert loaded.magics.source("recall_budget") == "default"


def test_config_sets_shows_and_resets(loaded: Any) -> None:
    shown = str(loaded.run("%hindsight config recall_budget=high").result)
    assert shown == "recall_budget = high   [%hindsight config]"
    assert loaded.magics.session.settings.recall_budget == "high"
    shown = str(loaded.run("%hindsight config recall_budget").result)
    assert shown == "recall_budget = high   [%hindsight config]"
    shown = str(loaded.run("%hindsight config recall_budget=").result)
    assert shown == "recall_budget = mid   [default]"
    assert loaded.magics.session.settings.recall_budget == "mid"
    loaded.run("%config HindsightMagics.retain_every_n_cells = 5")
    assert loaded.magics.session.settings.retain_every_n_cells == 5
    shown = str(loaded.run("%hindsight config retain_every_n_cells").result)
    assert shown == "retain_every_n_cells = 5   [%config]"


def test_config_shows_the_journal_file_in_use_when_none_is_set(
    notebook: Any, dead_url: str, tmp_path: Path
) -> None:
    """An unset ``journal_path`` means the data dir's journal: the row names that file."""
    notebook.monkeypatch.delenv("HINDSIGHT_JOURNAL_PATH")
    notebook.monkeypatch.setenv("HINDSIGHT_MAGIC_DATA_DIR", str(tmp_path / "data"))
    notebook.load(api_url=dead_url)
    journal = tmp_path / "data" / "journal.sqlite3"
    shown = str(notebook.run("%hindsight config journal_path").result)
    assert shown == f"journal_path = {journal}   [default]"
    rows = [line.split() for line in repr(notebook.run("%hindsight config").result).splitlines()]
    assert ["journal_path", str(journal), "[default]"] in rows


def test_config_lists_each_value_in_force_and_where_it_came_from(
    notebook: Any, dead_url: str
) -> None:
    notebook.monkeypatch.setenv("HINDSIGHT_API_TOKEN", "sk-live-SECRET-123")
    notebook.ip.config.HindsightMagics.bank_prefix = "team"  # as ipython_config.py would
    notebook.load(api_url=dead_url)
    notebook.run("%config HindsightMagics.retain_every_n_cells = 4")
    notebook.run("%hindsight config recall_budget=high")
    listing = notebook.run("%hindsight config")
    rows = {
        line.split()[0]: line.split(maxsplit=1)[1]
        for line in repr(listing.result).splitlines()[1:-1]
    }
    assert rows["api_url"] == f"{dead_url}   [env HINDSIGHT_API_URL]"
    assert rows["api_key"] == "(set)   [env HINDSIGHT_API_TOKEN]"
    assert rows["bank_prefix"] == "team   [IPython config]"
    assert rows["retain_every_n_cells"] == "4   [%config]"
    assert rows["recall_budget"] == "high   [%hindsight config]"
    assert rows["bank_id"] == "jupyter   [default]"
    assert "SECRET" not in repr(listing.result) + listing.result._repr_html_()


def test_config_listing_hides_the_key(notebook: Any, dead_url: str) -> None:
    notebook.load(api_url=dead_url, api_key="sk-live-SECRET-123")
    listing = notebook.run("%hindsight config")
    status = notebook.run("%hindsight status")
    config_magic = notebook.run("%config HindsightMagics")
    for cell in (listing, status, config_magic):
        assert "SECRET" not in cell.text
        assert "SECRET" not in repr(cell.result)
    assert "api_key" in repr(listing.result)
    assert "(set)" in repr(listing.result)


def test_scope_changes_route_for_new_items_only(loaded: Any, tmp_path: Any, monkeypatch) -> None:
    project = tmp_path / "MyProject"
    project.mkdir()
    monkeypatch.chdir(project)
    loaded.run("%hindsight scope per-project-tagged")
    loaded.run("%retain tagged fact")
    cell = loaded.run("%hindsight scope per-project")
    assert "bank unit-myproject (per-project)" in str(cell.result)
    loaded.run("%retain project fact")
    # the scope change tried to flush first; with no server the items wait, routes unchanged
    routes = {item.content: route for route, item in Driver(loaded.magics.session).queued()}
    assert routes["tagged fact"].bank_id == "unit"
    assert routes["tagged fact"].tags == ("project:myproject",)
    assert routes["project fact"].bank_id == "unit-myproject"
    assert routes["project fact"].tags is None
    cell = loaded.run("%hindsight scope global --project Other")
    assert "bank unit (global)" in str(cell.result)


def test_dead_server_gives_the_start_hint_and_keeps_items(loaded: Any, dead_url: str) -> None:
    loaded.run("%retain survives the outage")
    cell = loaded.run("%recall anything")
    line = one_line(cell.text)
    assert f"no Hindsight server at {dead_url}" in line
    assert "%hindsight server start" in line
    flushed = loaded.run("%hindsight flush")
    assert "waiting to retry" in str(flushed.result)
    stats = loaded.magics.session.queue_stats()
    assert stats.retrying == 1
    assert stats.failed == 0


def test_a_flush_that_left_memories_waiting_never_says_nothing_new_to_send() -> None:
    """A re-run's %retain lines the server held, beside one whose send failed: the flush
    says both, not "nothing new to send" and then that a memory waits to retry."""
    from hindsight_magic._ui.display import FlushResult

    said = repr(FlushResult(0, 0, 1, 0, "timed out", already_stored=2))
    assert said.startswith("Flushed: 0 memories accepted by the server; 2 already stored"), said
    assert "nothing new" not in said
    assert "1 memory is waiting to retry (timed out)" in said


def _swap_client(notebook: Any, handler: Any) -> None:
    session = notebook.magics.session
    Driver(session).use_transport(httpx.MockTransport(handler), timeout_s=1)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (500, '{"detail": "database is down"}', "recall failed: database is down"),
        (500, "{trunc", "recall failed: {trunc — the server at"),
        (502, "<html>Bad gateway</html>", "(or a proxy in front of it) is failing"),
        (404, "<html><body>Not Found</body></html>", "answered but is not a Hindsight server"),
        (401, '{"detail": "Invalid API key"}', "check HINDSIGHT_API_KEY"),
        (200, "<html>hello</html>", "answered but is not a Hindsight server"),
    ],
)
def test_server_replies_become_one_line(loaded: Any, status: int, body: str, expected: str):
    _swap_client(loaded, lambda request: httpx.Response(status, text=body))
    cell = loaded.run("%recall churn")
    assert expected in one_line(cell.text)


def test_recall_since_until_keeps_only_the_window_and_says_it(loaded: Any) -> None:
    asked: list[dict[str, Any]] = []
    results = [
        {"id": "a", "text": "Flux is 3.1 (before the re-run)", "mentioned_at": "2026-10-30T10:00Z"},
        {"id": "b", "text": "Flux is 2.4 (after the re-run)", "mentioned_at": "2026-11-04T10:00Z"},
        {"id": "c", "text": "Flux has no date", "mentioned_at": None},
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/memories/recall"):
            asked.append(json.loads(request.content))
            return httpx.Response(200, json={"results": results})
        return httpx.Response(200, json={})

    _swap_client(loaded, handler)
    cell = loaded.run('%recall --since "3 Nov 2026" --until 2026-11-05 --max-tokens 500 flux')
    assert cell.error is None, cell.text
    shown = repr(cell.result)
    assert "1 memory shown; 1 matches the query between 3 Nov" in shown
    assert "Flux is 2.4 (after the re-run)" in shown
    assert "3.1" not in shown
    assert "no date" not in shown
    for page in (render_markdown(cell.result._repr_markdown_()), cell.result._repr_html_()):
        seen = visible_text(page)
        assert "between 3 Nov" in seen
        assert "2.4" in seen
        assert "3.1" not in seen
    body = asked[-1]
    assert body["query"] == "flux"
    assert body["max_tokens"] == 2000  # asked for more, then filtered
    assert set(body["temporal_window"]) == {"start", "end"}
    assert body["query_timestamp"] == body["temporal_window"]["end"]

    cell = loaded.run("%recall --until 2026-11-01 flux")
    assert "Flux is 3.1 (before the re-run)" in repr(cell.result)
    assert "2.4" not in repr(cell.result)
    cell = loaded.run("%recall --since 2099-01-01 flux")
    assert repr(cell.result).startswith("No relevant memories found since 1 Jan 2099")
    assert "query_timestamp" not in asked[-1]  # an open end: recency from now


def test_timeout_becomes_one_line(loaded: Any) -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    _swap_client(loaded, slow)
    cell = loaded.run("%%reflect\nwhat now?")
    assert "reflect request timed out after 1s" in one_line(cell.text)


def test_a_reflect_on_a_bank_not_on_the_server_does_not_create_it(loaded: Any) -> None:
    # Hindsight's reflect creates a bank it lacks: a mistyped bank would appear on the server
    asked: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}")
        if request.url.path == "/version":
            return httpx.Response(200, json={"api_version": "1.1.0"})
        return httpx.Response(404, json={"detail": "Bank 'unit' not found"})  # as Hindsight's

    _swap_client(loaded, server)
    cell = loaded.run("%%reflect\nwhat is the churn cut-off?")
    assert "there is no bank unit on the server yet (nothing was retained to it)" in cell.text
    assert not [call for call in asked if call.startswith("PUT") or call.endswith("/reflect")]


def test_a_failed_magic_is_recorded_under_the_name_its_line_shows(loaded: Any) -> None:
    cell = loaded.run("%recall anything")
    line = one_line(cell.text)
    # a kernel records ``type(error).__name__`` as the output's ``ename`` (papermill, nbclient
    # and the demo report it), and auto-retain writes it into a cell's transcript
    shown_name = line.split(":", 1)[0]
    assert shown_name == type(cell.error).__name__ == "HindsightError", (line, cell.error)
    assert isinstance(cell.error, hindsight_magic.HindsightError)  # what the README says
    assert str(cell.error) in line  # the same words, wherever the error is read


def test_debug_shows_the_full_traceback(loaded: Any) -> None:
    quiet = loaded.run("%recall anything")
    assert "no Hindsight server at" in one_line(quiet.text)
    loaded.run("%hindsight config debug=true")
    cell = loaded.run("%recall anything")
    assert "Traceback (most recent call last)" in cell.text
    # down to the frame that failed (IPython 7 names it "in call(self, …)", 8+ qualified)
    assert re.search(r"in (HindsightClient\.)?call\b", cell.text), cell.text
    lines = cell.text.splitlines()  # debug also turns on log lines, in any order
    assert any(line.startswith("HindsightError: recall request failed:") for line in lines)
    assert "no Hindsight server at" not in cell.text  # the raw error, not the friendly line


def test_bad_input_stays_one_line_with_debug_on(loaded: Any) -> None:
    loaded.run("%hindsight config debug=true")
    for source in ("%hindsight config retain_every_n_cells=0", "%retain   "):
        cell = loaded.run(source)
        assert isinstance(cell.error, UsageError), source
        assert "Traceback" not in cell.text
        assert one_line(cell.text).startswith("UsageError: ")


def test_a_prefix_can_be_cleared_and_none_means_not_set_here(notebook: Any) -> None:
    notebook.load(bank_prefix="team")
    magics = notebook.magics
    assert magics.session.scope.bank_id.startswith("team-")
    notebook.run('%hindsight bank --prefix ""')  # cleared, not reset to HINDSIGHT_BANK_PREFIX
    assert magics.bank_prefix == ""
    assert not magics.session.scope.bank_id.startswith("team-")
    notebook.run("%config HindsightMagics.bank_prefix = None")  # "not set here": env again
    assert magics.bank_prefix == "team"
    assert magics.session.scope.bank_id.startswith("team-")


def test_background_failure_is_reported_once_on_the_next_magic(loaded: Any) -> None:
    _swap_client(loaded, lambda request: httpx.Response(422, json={"detail": "bad field"}))
    loaded.run("%retain rejected fact")
    loaded.magics.session.flush(2)
    first = loaded.run("%hindsight status")
    assert "Memory retention failed for 1 memory: version failed: bad field" in first.text
    second = loaded.run("%hindsight status")
    assert "Memory retention failed" not in second.text
    assert "failed       1 (%hindsight retry)" in repr(second.result)


def test_help_lists_subcommands_and_docstrings_help(loaded: Any) -> None:
    listing = repr(loaded.run("%hindsight help").result)
    for name in ("status", "config", "scope", "bank", "flush", "retry", "clear", "server"):
        assert name in listing
    magic = loaded.ip.find_line_magic("retain")
    assert "Queue a durable fact" in (magic.__doc__ or "")
    assert "--context" in (loaded.ip.find_cell_magic("reflect").__doc__ or "")


def test_invalid_ipython_config_is_ignored_with_one_line(notebook: Any, dead_url: str) -> None:
    notebook.ip.config.HindsightMagics.recall_budget = "huge"
    notebook.ip.config.HindsightMagics.retain_every_n_cells = 4
    try:
        notebook.monkeypatch.setenv("HINDSIGHT_API_URL", dead_url)
        cell = notebook.run("%load_ext hindsight_magic")
        assert cell.error is None
        assert "Invalid recall_budget='huge'" in one_line(cell.text)
        settings = notebook.magics.session.settings
        assert (settings.recall_budget, settings.retain_every_n_cells) == ("mid", 4)
    finally:
        del notebook.ip.config["HindsightMagics"]


def test_load_twice_and_reload_leave_one_worker(notebook: Any, dead_url: str) -> None:
    before = len(workers())
    notebook.load(api_url=dead_url)
    notebook.run("%load_ext hindsight_magic")
    assert len(workers()) == before + 1
    first = notebook.magics
    notebook.run("%reload_ext hindsight_magic")
    assert notebook.magics is not first
    assert len(workers()) == before + 1
    assert str(notebook.run("%retain after reload").result).startswith("1 memory queued.")


def test_a_question_in_the_cell_that_loads_the_extension_is_named(
    notebook: Any, monkeypatch: pytest.MonkeyPatch, dead_url: str
) -> None:
    # IPython read the whole cell first: its `?` line became a help request before the load
    monkeypatch.setenv("HINDSIGHT_API_URL", dead_url)
    cell = notebook.run(
        "%load_ext hindsight_magic\n%recall which annealing temperature is standard?"
    )
    assert "Object `standard` not found." in cell.text  # IPython's, before the load
    assert (
        "hindsight_magic: IPython read this cell before the extension was loaded, so 1 line"
        " ending in `?` ran as help requests" in cell.text
    )
    assert "run it again in a new cell" in cell.text
    again = notebook.run("%recall which annealing temperature is standard?")
    assert "not found" not in again.text
    # loaded when the cell was read: its question was kept, and a reload says nothing
    reloaded = notebook.run("%reload_ext hindsight_magic\n%recall which one is standard?")
    assert "hindsight_magic: IPython read" not in reloaded.text
    assert "not found" not in reloaded.text


def test_unload_flushes_stops_and_removes_the_magics(notebook: Any, dead_url: str) -> None:
    before = len(workers())
    notebook.load(api_url=dead_url)
    notebook.run("%retain stranded while the server is down")
    cell = notebook.run("%unload_ext hindsight_magic")
    assert "1 memory could not be delivered" in cell.text
    assert len(workers()) == before
    gone = notebook.run("%retain x")
    assert "not found" in gone.text


def test_the_registry_maps_the_shell_to_its_session_while_loaded(
    notebook: Any, dead_url: str
) -> None:
    from hindsight_magic._functions import SESSIONS, current_session
    from hindsight_magic._ipython.extension import keep_question_marks

    ip = notebook.ip
    assert SESSIONS.registered(ip) is None
    notebook.load(api_url=dead_url)
    assert SESSIONS.registered(ip).session is notebook.magics.session
    assert current_session() is notebook.magics.session
    first = notebook.magics.session
    notebook.run("%reload_ext hindsight_magic")
    assert SESSIONS.registered(ip).session is notebook.magics.session is not first
    assert first.closed
    assert ip.input_transformers_cleanup.count(keep_question_marks) == 1
    notebook.run("%unload_ext hindsight_magic")
    assert SESSIONS.registered(ip) is None
    assert keep_question_marks not in ip.input_transformers_cleanup
    ip.extension_manager.loaded.discard("hindsight_magic")
    session = current_session()  # hm.retain() in a cell: loads the extension first
    assert SESSIONS.registered(ip).session is session is notebook.magics.session


def test_handlers_need_no_magics_only_a_context(tmp_path: Any, dead_url: str) -> None:
    from hindsight_magic._ipython.subcommands import HandlerContext, run_subcommand
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    settings = HindsightSettings(api_url=dead_url, journal_path=str(tmp_path / "j.db"))
    session = HindsightSession(settings, start_worker=False)
    try:
        ctx = HandlerContext(session, settings)
        shown = run_subcommand(ctx, "config retain_context=Ana's  weekly\\review")
        assert str(shown) == "retain_context = Ana's  weekly\\review   [%hindsight config]"
        run_subcommand(ctx, 'config retain_context="weekly review"')
        assert settings.retain_context == "weekly review"  # one pair of quotes removed
        assert str(run_subcommand(ctx, "autoretain every 7")).startswith("Auto-retain on:")
        assert settings.retain_every_n_cells == 7
        with pytest.raises(UsageError, match=r"^Missing N\. Usage: %hindsight autoretain every N$"):
            run_subcommand(ctx, "autoretain every")
    finally:
        session.close(0.1)


def test_the_ipython_layer_never_reaches_the_http_client() -> None:
    """Magics stay thin: server operations belong to the session's parts, not to handlers."""
    import ast
    from pathlib import Path

    import hindsight_magic._ipython as package

    for path in Path(package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("client", "connection"), f"{path.name}:{node.lineno}"
