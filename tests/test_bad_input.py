"""Bad input of every kind ends in one clear line, and nothing queued before it is lost.

One parametrized test in the real in-process shell: magic arguments, settings (run time, IPython
config and environment values read at ``%load_ext``), unreachable servers, and server replies
(swapped in with ``httpx.MockTransport``). Before each bad input one memory is queued; after it,
that memory is still held (queue and journal) and, for loads that failed, recovered by the next
load. With ``debug`` on, the traceback is shown instead.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from IPython.core.error import UsageError
from journalkit import on_disk

from hindsight_magic._errors import HindsightError
from hindsight_magic.testing import Driver

KEPT = "keep this one: the churn table double-counts Q3 refunds"
VERSION = {"api_version": "1.1.0", "features": {}}
TEN_MB = 10 * 1024 * 1024

Reply = Callable[[httpx.Request], httpx.Response]


@dataclass
class Case:
    id: str
    cell: str
    expect: tuple[str, ...]  # all of these in the one line the user sees
    setup: tuple[str, ...] = ()  # cells run first (their output is not checked)
    env: dict[str, str] = field(default_factory=dict)  # set, then the cell is %load_ext
    reply: Reply | None = None  # the server's misbehaviour (everything but /version)
    queued: int = 0  # memories the cell itself queues (accepted input)
    debug: bool = False  # debug on: a traceback is expected instead of one line


def replying(status: int, body: str, ctype: str = "application/json") -> Reply:
    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body.encode(), headers={"content-type": ctype})

    return reply


def too_slow(request: httpx.Request) -> httpx.Response:
    time.sleep(0.2)
    raise httpx.ReadTimeout("timed out", request=request)


HTML_502 = "<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"
HTML_LOGIN = "<!doctype html><html><title>Sign in</title><form>…</form></html>"

CASES = [
    # -- magic arguments ----------------------------------------------------------------------
    Case("retain-empty", "%retain", ("Nothing to retain: give the fact", "Usage: %retain")),
    Case("retain-whitespace", "%retain   \t  ", ("Nothing to retain", "Usage: %retain")),
    Case("cell-retain-blank", "%%retain\n  \n\t\n", ("Nothing to retain", "Usage: %retain")),
    Case(
        "retain-unknown-flag",
        "%retain --priority high Fact",
        ("Unknown option --priority", "Options: --context, --tags, --at, --split"),
    ),
    Case(
        "retain-unreadable-at",
        "%retain --at the-other-day Fact",
        ("Cannot read 'the-other-day' as a time for --at", "3d", "Usage: %retain"),
    ),
    Case(
        "retain-at-in-the-future",
        "%retain --at 2999-01-01 Fact",
        ("--at (1 Jan 2999) is in the future", "leave --at out", "Usage: %retain"),
    ),
    Case(
        "retain-at-date-then-time-unquoted",  # else 09:30 starts the memory, dated at midnight
        "%retain --at 2025-03-14 09:30 Standup moved",
        ('Quote a date with its time: --at "2025-03-14 09:30"', "Usage: %retain"),
    ),
    Case(
        "cell-retain-at-in-the-future",
        "%%retain --at 2999-01-01\nFact",
        ("--at (1 Jan 2999) is in the future", "Usage: %retain"),
    ),
    Case("retain-split-on-line", "%retain --split a line", ("--split is for %%retain",)),
    Case("retain-flag-without-value", "%retain --tags", ("--tags needs a value", "Usage:")),
    Case("retain-unclosed-quote", '%retain --context "weekly review Fact', ('Unclosed " in',)),
    Case(
        "recall-not-a-number",
        "%recall --max-tokens many churn",
        ("Invalid --max-tokens 'many'", "Usage: %recall"),
    ),
    Case("recall-negative", "%recall --max-tokens -5 churn", ("'-5': must be at least 1",)),
    Case(
        "recall-bad-budget",
        "%recall --budget extreme churn",
        ("Invalid --budget 'extreme': use one of low, mid, high",),
    ),
    Case(
        "recall-unreadable-when",
        "%recall --since the-other-day churn",
        ("Cannot read 'the-other-day' as a time for --since", "3d", "Usage: %recall"),
    ),
    Case(
        "recall-since-after-until",
        "%recall --since today --until 2020-01-01 churn",
        ("--since (today) is not before --until (1 Jan 2020)", "swap them", "Usage: %recall"),
    ),
    Case("reflect-bad-var", "%%reflect --var 2x\nwhy?", ("Invalid --var '2x'", "variable name")),
    Case("flush-bad-timeout", "%hindsight flush --timeout soon", ("Invalid --timeout 'soon'",)),
    Case("flush-zero-timeout", "%hindsight flush --timeout 0", ("must be greater than 0",)),
    Case(
        "unknown-subcommand",
        "%hindsight frobnicate",
        ("Unknown subcommand 'frobnicate'", "Valid subcommands: help, status"),
    ),
    Case("unknown-server-action", "%hindsight server fly", ("Unknown server action 'fly'",)),
    Case("retry-unknown-flag", "%hindsight retry --now", ("Unknown option --now", "--drop")),
    Case(
        "autoretain-bad-word", "%hindsight autoretain sometimes", ("Usage: %hindsight autoretain",)
    ),
    Case(
        "retain-10-MB",
        "%retain " + "x" * TEN_MB,
        ("Too large to retain: 10,485,760 characters", "limit is 1,000,000", "--split"),
    ),
    Case(
        "retain-NUL-bytes",
        "%retain Columns\x00are\x00NUL-separated",
        ("1 memory queued.",),
        queued=1,
    ),
    Case(
        "retain-lone-surrogate",
        "%retain Half a pair \ud800 here",
        ("1 memory queued.",),
        queued=1,
    ),
    Case(
        "retain-surrogate-options",
        "%retain --tags ok,\udcff --context \udcfe Tagged fact",
        ("1 memory queued.",),
        queued=1,
    ),
    Case(
        "bank-and-prefix-too-long",
        "%hindsight bank " + "b" * 150,
        ("Invalid bank 'pppppppp", "1-192 bytes"),
        setup=("%hindsight bank --prefix " + "p" * 150,),
    ),
    Case("project-control-char", "%hindsight scope --project a\x01b", ("Invalid project tag",)),
    Case("retain-control-tag", "%retain --tags ok,a\x01b Fact", ("Invalid tag 'a\\x01b'",)),
    # -- settings -----------------------------------------------------------------------------
    Case(
        "config-bad-enum",
        "%hindsight config recall_budget=huge",
        ("Invalid recall_budget='huge'", "'low', 'mid' or 'high'"),
    ),
    Case(
        "config-bad-scope",
        "%hindsight config scoping=team",
        ("Invalid scoping='team'", "'global', 'per-project' or 'per-project-tagged'"),
    ),
    Case(
        "config-negative",
        "%hindsight config retain_every_n_cells=-3",
        ("Invalid retain_every_n_cells='-3'", "greater than or equal to 1"),
    ),
    Case(
        "config-zero",
        "%hindsight config recall_max_tokens=0",
        ("Invalid recall_max_tokens='0'", "greater than or equal to 1"),
    ),
    Case(
        "config-not-a-number",
        "%hindsight config request_timeout_ms=soon",
        ("Invalid request_timeout_ms='soon'", "valid integer"),
    ),
    Case(
        "config-malformed-url",
        "%hindsight config api_url=http//no-colon",
        ("Invalid api_url='http//no-colon'", "http://host:port"),
    ),
    Case(
        "config-bad-port",
        "%hindsight config api_url=http://localhost:99999",
        ("Invalid api_url='http://localhost:99999'", "invalid port"),
    ),
    Case("bank-with-slash", "%hindsight bank a/b", ("Invalid bank_id='a/b'", "/ \\ ? # %")),
    Case("bank-climbing", "%hindsight bank ../../etc", ("Invalid bank_id='../../etc'",)),
    Case("bank-with-query", "%hindsight bank x?y=1", ("Invalid bank_id='x?y=1'",)),
    Case("bank-reserved-start", "%hindsight bank _meta", ("Invalid bank_id='_meta'", "'_'")),
    Case("prefix-with-slash", "%hindsight bank --prefix a/b", ("Invalid bank_prefix='a/b'",)),
    Case(
        "config-bank-too-long",
        "%hindsight config bank_id=" + "é" * 100,
        ("Invalid bank_id=", "1-192 bytes"),
    ),
    Case(
        "ipython-config-bad-enum",
        "%config HindsightMagics.retain_mode = 'sometimes'",
        ("Invalid retain_mode='sometimes'", "'full-session' or 'last-cells'"),
    ),
    Case(
        "env-bad-enum",
        "%load_ext hindsight_magic",
        ("Invalid HINDSIGHT_RECALL_BUDGET='extreme'", "'low', 'mid' or 'high'"),
        env={"HINDSIGHT_RECALL_BUDGET": "extreme"},
    ),
    Case(
        "env-bad-bank",
        "%load_ext hindsight_magic",
        ("Invalid HINDSIGHT_BANK_ID='team/a'", "/ \\ ? # %"),
        env={"HINDSIGHT_BANK_ID": "team/a"},
    ),
    Case(
        "env-not-a-number",
        "%load_ext hindsight_magic",
        ("Invalid HINDSIGHT_RETAIN_EVERY_N_CELLS='three'", "valid integer"),
        env={"HINDSIGHT_RETAIN_EVERY_N_CELLS": "three"},
    ),
    Case(
        "env-negative",
        "%load_ext hindsight_magic",
        ("Invalid HINDSIGHT_RECALL_TIMEOUT_MS='-100'", "greater than 0"),
        env={"HINDSIGHT_RECALL_TIMEOUT_MS": "-100"},
    ),
    Case(
        "env-zero",
        "%load_ext hindsight_magic",
        ("Invalid HINDSIGHT_RECALL_MAX_TOKENS='0'", "greater than or equal to 1"),
        env={"HINDSIGHT_RECALL_MAX_TOKENS": "0"},
    ),
    Case(
        "env-bad-boolean",
        "%load_ext hindsight_magic",
        ("Invalid HINDSIGHT_AUTO_RETAIN='maybe'", "use true/false"),
        env={"HINDSIGHT_AUTO_RETAIN": "maybe"},
    ),
    Case(
        "env-url-without-scheme",
        "%load_ext hindsight_magic",
        ("Invalid HINDSIGHT_API_URL='localhost:8899'", "http://host:port"),
        env={"HINDSIGHT_API_URL": "localhost:8899"},
    ),
    Case(
        "unreachable-host",
        "%recall churn",
        ("no Hindsight server at http://nowhere.invalid:8899", "%hindsight server start"),
        setup=("%hindsight config api_url=http://nowhere.invalid:8899",),
    ),
    Case(
        "refused-port",
        "%reflect What did we decide?",
        ("reflect request failed", "no Hindsight server at", "set HINDSIGHT_API_URL"),
    ),
    # -- curation -----------------------------------------------------------------------------
    Case(
        "forget-before-any-recall",
        "%hindsight forget #2",
        ("#2 names a memory of the last %recall", "run %recall first"),
    ),
    Case("forget-nothing-named", "%hindsight forget", ("Usage: %hindsight forget #N|ID",)),
    Case("correct-empty-text", "%hindsight correct #1   ", ("Nothing to correct to",)),
    Case("delete-unknown-flag", "%hindsight delete doc --force", ("Unknown option --force",)),
    Case(
        "forget-dead-server",
        "%hindsight forget 9b72be6f-8bc4-4cd3-aef7-36dc41d35331 --reason stale",
        ("updateMemory request failed", "no Hindsight server at"),
    ),
    Case(
        "delete-unknown-document",
        "%hindsight delete no-such-document",
        ("No document no-such-document in bank 'bad-input'",),
        reply=replying(404, '{"detail": "Document not found"}'),
    ),
    Case(
        "delete-server-error",
        "%hindsight delete doc-1 --yes",
        ("deleteDocument failed: database is down", "try again"),
        reply=replying(500, '{"detail": "database is down"}'),
    ),
    Case(
        "purge-slow-server",
        "%hindsight purge-matching sk-live-1234",
        ("listMemories request timed out after 1s",),
        reply=too_slow,
    ),
    Case(
        "forget-garbage-reply",
        "%hindsight forget 9b72be6f-8bc4-4cd3-aef7-36dc41d35331",
        ("the reply was not Hindsight JSON",),
        reply=replying(200, '{"id": "9b72'),
    ),
    # -- timeline and map ---------------------------------------------------------------------
    Case(
        "timeline-unreadable-when",
        "%hindsight timeline --since soon",
        ("Cannot read 'soon' as a time", "3d, 2w"),
    ),
    Case(
        "timeline-since-after-until",
        "%hindsight timeline --since today --until 2026-11-01",
        ("--since (today) is not before --until (1 Nov)", "swap them"),
    ),
    Case("timeline-unknown-period", "%hindsight timeline --by year", ("Invalid --by 'year'",)),
    Case("map-top-zero", "%hindsight map --top 0", ("Invalid --top '0'", "at least 1")),
    Case(
        "map-unknown-entity",
        "%hindsight map Berkly",
        ("No entity named 'Berkly'", "did you mean Berkeley?"),
        reply=replying(
            200,
            '{"total": 1, "items": [{"id": "m1", "fact_type": "world", "entities": "Berkeley"}]}',
        ),
    ),
    Case(
        "timeline-garbage-reply",
        "%hindsight timeline",
        ("listMemories", "the reply was not Hindsight JSON"),
        reply=replying(200, '{"items": [{"id": '),
    ),
    # -- server replies -----------------------------------------------------------------------
    Case(
        "html-error-page",
        "%recall churn",
        ("HTTP 502 with a non-JSON reply (text/html)", "is failing; try again"),
        reply=replying(502, HTML_502, "text/html"),
    ),
    Case(
        "html-login-page",
        "%recall churn",
        ("HTTP 401 with a non-JSON reply (text/html; charset=utf-8)", "check HINDSIGHT_API_KEY"),
        reply=replying(401, HTML_LOGIN, "text/html; charset=utf-8"),
    ),
    Case(
        "truncated-json",
        "%recall churn",
        ("the reply was not Hindsight JSON (HTTP 200", "is failing; try again"),
        reply=replying(200, '{"results": [{"text": "The churn tab'),
    ),
    Case(
        "500-with-json-body",
        "%%reflect\nWhat changed?",
        ("reflect failed: database is down", "try again", "%hindsight server logs"),
        reply=replying(500, '{"detail": "database is down"}'),
    ),
    Case(
        "500-with-text-body",
        "%recall churn",
        ("recall failed: Internal Server Error", "is failing; try again"),
        reply=replying(500, "Internal Server Error", "text/plain"),
    ),
    Case(
        "429-busy",
        "%recall churn",
        ("recall failed: Too many requests", "busy; try again in a moment"),
        reply=replying(429, '{"detail": "Too many requests"}'),
    ),
    Case(
        "401-json",
        "%recall churn",
        ("recall failed: Invalid API key", "check HINDSIGHT_API_KEY"),
        reply=replying(401, '{"detail": "Invalid API key"}'),
    ),
    Case(
        "slow-reply",
        "%recall churn",
        ("recall request timed out after 1s", "slow or unreachable; try again"),
        reply=too_slow,
    ),
    Case(
        "debug-shows-the-traceback",
        "%recall churn",
        ("Traceback", "HindsightError", "recall failed: database is down"),
        reply=replying(500, '{"detail": "database is down"}'),
        debug=True,
    ),
]


def swap_client(session: Any, reply: Reply) -> None:
    """The session talks to a server that answers /version properly and ``reply`` otherwise."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/version":
            return httpx.Response(200, json=VERSION)
        return reply(request)

    Driver(session).use_transport(httpx.MockTransport(handler), timeout_s=1)


def journal_bodies(path: Path) -> list[dict[str, Any]]:
    """What the journal and its spools hold, oldest first (a next kernel would find it)."""
    return [{"content": content} for _, content in on_disk(path)]


def seen(cell: Any, records: list[Any]) -> str:
    """What the user sees: the cell's output plus what IPython itself logged (%config)."""
    logged = [
        r.getMessage()
        for r in records
        if r.levelno >= logging.WARNING and not r.name.startswith("hindsight_magic")
    ]
    return "\n".join([cell.text, *logged]).strip()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_ends_in_one_clear_line_and_loses_nothing(
    notebook: Any, dead_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, case: Case
) -> None:
    journal = tmp_path / "journal.sqlite3"  # the notebook fixture's journal
    notebook.load(
        api_url=dead_url,
        bank_id="bad-input",
        auto_retain="false",
        mental_models="false",
        debug="true" if case.debug else "false",
    )
    assert str(notebook.run(f"%retain {KEPT}").result).startswith("1 memory queued.")
    for source in case.setup:
        notebook.run(source)
    if case.reply is not None:
        swap_client(notebook.magics.session, case.reply)
    if case.env:
        notebook.run("%unload_ext hindsight_magic")  # env values are read at load
        for name, value in case.env.items():
            notebook.monkeypatch.setenv(name, value)

    caplog.clear()
    cell = notebook.run(case.cell)
    shown = seen(cell, caplog.records)
    if "surrogate" in case.id:  # IPython's own history database cannot store them either
        notebook.ip.history_manager.db_input_cache.clear()

    if case.debug:
        assert isinstance(cell.error, HindsightError)  # the real error, not the one line
        assert not hasattr(cell.error, "_render_traceback_")
        assert all(part in shown for part in case.expect), shown
    else:
        lines = [line for line in shown.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one line, got:\n{shown[:2000]}"
        assert "Traceback" not in shown
        assert all(part in lines[0] for part in case.expect), lines[0]
        assert len(lines[0]) < 600
        if not case.queued and not case.id.startswith("ipython-config"):
            assert isinstance(cell.error, UsageError | HindsightError), cell.error

    # nothing queued before the bad input is lost
    bodies = journal_bodies(journal)
    assert [b["content"] for b in bodies][:1] == [KEPT]
    assert len(bodies) == 1 + case.queued
    if case.env:  # the load failed: fix the environment, load again, and it is all there
        for name in case.env:
            notebook.monkeypatch.delenv(name)
        notebook.run("%load_ext hindsight_magic")
    stats = notebook.magics.session.queue_stats()
    assert stats.pending + stats.in_flight + stats.retrying + stats.failed == 1 + case.queued
    assert stats.accepted == 0
    if case.queued:
        check_what_was_queued(notebook, case, bodies[1])


def check_what_was_queued(notebook: Any, case: Case, body: dict[str, Any]) -> None:
    """Accepted odd input is stored as valid text and can be sent (httpx encodes it)."""
    sent: list[dict[str, Any]] = []

    def accept(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/memories"):
            sent.append(json.loads(request.content.decode("utf-8")))  # strict UTF-8
        return httpx.Response(200, json={"success": True, "items_count": 1})

    session = notebook.magics.session
    swap_client(session, accept)
    session.flush(5)
    stats = session.queue_stats()
    assert (stats.accepted, stats.failed, stats.retrying) == (2, 0, 0), stats
    items = [item for request in sent for item in request["items"]]
    assert items[0]["content"] == KEPT
    delivered = items[-1]
    assert delivered["content"] == body["content"]
    if "surrogate" in case.id:
        assert "\ufffd" in json.dumps(delivered, ensure_ascii=False)
        assert not any(
            0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(delivered, ensure_ascii=False)
        )
    if "NUL" in case.id:
        assert delivered["content"] == "Columns\x00are\x00NUL-separated"
