"""What a failure means for the user, in words, and the probes that find out.

The one mapping from a failure to words (``Diagnosis``: state, problem, what to do), used by the
magics' one-line errors, ``%hindsight status``, ``doctor``, the panel and the queue's refusal
notices. Besides the ``HindsightError`` it may use what this machine shows about the local
server behind the URL (``_machine.LocalServer``, gathered without HTTP): a stopped process, a
deleted data dir or a stopped PostgreSQL name the cause, with the exact commands to run, where
the HTTP error alone cannot. ``server_problem`` is the one path from a server check to its line:
the local server's facts first, then ``GET /health`` when the server answers but fails, then
the error itself (``diagnose``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ._api.errors import database_down
from ._errors import HindsightError
from ._machine import LocalServer, local_server, recorded_elsewhere
from ._text import plain_text

if TYPE_CHECKING:
    from ._api.client import HindsightClient


def in_words(error: HindsightError, message: str) -> HindsightError:
    """``error`` with ``message`` (what it means and what to do, one line) as its text, shown by
    IPython as that line, named as the class it is: still the public ``HindsightError``, so
    ``except hindsight_magic.HindsightError`` catches it and a notebook records it (the output's
    ``ename``, auto-retain's transcript) under the name the line shows. The magics raise it;
    ``%hindsight config debug=true`` shows the original traceback instead."""
    shown = HindsightError(error.operation, message, error.status_code, error.details, error.kind)
    line = f"{type(shown).__name__}: {plain_text(message)}"
    shown._render_traceback_ = lambda: [line]
    return shown


@dataclass(frozen=True)
class Diagnosis:
    """What a failure means for the user: a short ``state``, the ``problem`` naming the server,
    and the ``hint`` saying what to do. The one mapping from errors to words: the magics'
    one-line errors, ``%hindsight status`` and ``doctor`` all use it. ``local``: the words come
    from the local server's process, data dir or PostgreSQL (the problem names the cause)."""

    state: str
    problem: str
    hint: str
    local: bool = False

    @property
    def summary(self) -> str:
        """One line for ``%hindsight status``: ``state (hint)``, or ``problem; hint`` when the
        problem names a cause the state cannot (a local server's stopped process or lost data)."""
        return f"{self.problem}; {self.hint}" if self.local else f"{self.state} ({self.hint})"


NOTEBOOK_COMMAND = "%hindsight server"  # how server actions are run in a notebook …
TERMINAL_COMMAND = "hindsight-magic server"  # … and in a terminal
MEMORIES_WAIT = "queued memories are kept and sent once it is back"


def local_diagnosis(
    local: LocalServer,
    command: str = TERMINAL_COMMAND,
    unreachable: bool = False,
    url: str | None = None,
) -> Diagnosis | None:
    """What went wrong with the local server, from the machine's facts; None when nothing did.

    A stopped ``hindsight-api`` only counts when its URL is ``unreachable`` (another server may
    answer there now); ``url``, the address that was tried, is named first, and the stopped
    server's port when it is another (a kernel without a URL set tries the fallback one).
    ``command`` is how the user runs server actions where they read this.
    """
    start = f"`{local.start_command(command)}`"
    if not local.running:
        if not unreachable:
            return None
        port = "" if url is None or urlsplit(url).port == local.port else f", port {local.port}"
        problem = f"the local server (pid {local.pid}{port}) is not running"
        if url is not None:
            problem = f"no Hindsight server at {url}; {problem}"
        return Diagnosis("stopped", problem, f"run {start}; {MEMORIES_WAIT}", local=True)
    if local.data_dir_gone:
        problem = f"the local server's data dir {local.data_dir} was deleted while it ran"
        if local.pg_running and local.pg_data_exists:
            fate = f"its memories are still in PostgreSQL's data at {local.pg_data}"
        else:
            fate = "a new, empty server: the memories it stored are gone"
        hint = (
            f"run `{local.stop_command(command)}` then {start} "
            f"({fate}; queued memories are sent to it)"
        )
        return Diagnosis("data dir deleted", problem, hint, local=True)
    if local.pg_running is False:
        gone = f"pid {local.pg_pid} gone" if local.pg_pid else f"nothing on port {local.pg_port}"
        problem = (
            f"the local server's PostgreSQL stopped ({gone}); its API (pid {local.pid}) runs "
            "without a database"
        )
        hint = f"run `{local.stop_command(command)}` then {start}; {MEMORIES_WAIT}"
        return Diagnosis("PostgreSQL stopped", problem, hint, local=True)
    return None


def diagnose(
    error: HindsightError,
    url: str,
    is_hindsight: bool | None = None,
    local: LocalServer | None = None,
    command: str = TERMINAL_COMMAND,
    elsewhere: LocalServer | None = None,
) -> Diagnosis | None:
    """The meaning of ``error`` for a server at ``url``; None when its own message says it all.

    ``is_hindsight`` is the outcome of an identity probe (``GET /version``) made after a reply
    that was not Hindsight JSON; None when no probe was made. ``local``: what the machine shows
    about the local server behind ``url``, if any; its facts name the cause first, with the
    commands to run (``command``: as in a terminal, or ``NOTEBOOK_COMMAND``). ``elsewhere``:
    the local server recorded at another address (``_machine.recorded_elsewhere``), which a
    refused connection's hint points to instead of starting a server.
    """
    if local is not None:
        found = local_diagnosis(local, command, unreachable=error.kind == "connect", url=url)
        if found is not None:
            return found
    if database_down(error):
        return Diagnosis(
            "database unreachable",
            f"the server at {url} answers but cannot reach its database",
            "its PostgreSQL may have stopped: restart the server; queued memories are kept",
        )
    code = error.status_code or 0
    if error.kind == "connect":
        return Diagnosis(
            "unreachable", f"no Hindsight server at {url}", _unreachable(elsewhere, command)
        )
    if error.kind == "timeout":
        return Diagnosis(
            "slow or unreachable",
            f"the server at {url} is slow or unreachable",
            "try again or check it",
        )
    if error.kind == "not_hindsight" and is_hindsight is False:
        hint = (
            "point HINDSIGHT_API_URL at Hindsight (the local server listens on port 8899), "
            "or run a local one with `%hindsight server start`"
        )
        return Diagnosis(
            "answers, but is not a Hindsight server",
            f"{url} answered but is not a Hindsight server",
            hint,
        )
    if code in (401, 403):  # also a proxy's HTML login page
        return Diagnosis(
            "refuses the API key",
            f"the server at {url} refused the request",
            "check HINDSIGHT_API_KEY",
        )
    if error.kind == "not_hindsight":
        return Diagnosis(
            "failing", f"the server at {url} (or a proxy in front of it) is failing", "try again"
        )
    if code == 429:
        return Diagnosis("busy", f"the server at {url} is busy", "try again in a moment")
    if code >= 500:
        hint = "try again, or read its log (`%hindsight server logs` for the local one)"
        return Diagnosis("failing", f"the server at {url} failed", hint)
    return None


def _unreachable(elsewhere: LocalServer | None, command: str) -> str:
    """What to do when nothing answers at the URL: start a local server, or, when one is
    recorded at another address, point at it (starting it first if it stopped)."""
    if elsewhere is None:
        return (
            "start one with `%hindsight server start` (`hindsight-magic server start` in a "
            "terminal) or set HINDSIGHT_API_URL"
        )
    there = f"http://127.0.0.1:{elsewhere.port}"
    point = f"set HINDSIGHT_API_URL to {there}"
    if command == NOTEBOOK_COMMAND:
        point += f" (or run `%hindsight config api_url={there}`)"
    if elsewhere.running:
        return f"the local server runs at {there}: {point}"
    start = f"`{elsewhere.start_command(command)}`"
    return (
        f"the local server (pid {elsewhere.pid}, port {elsewhere.port}) is not running: "
        f"start it with {start}, then {point}"
    )


def explain(
    error: HindsightError,
    url: str,
    is_hindsight: bool | None = None,
    local: LocalServer | None = None,
    command: str = TERMINAL_COMMAND,
    elsewhere: LocalServer | None = None,
) -> str:
    """The error's message plus what it means and what the user can do, as one line."""
    diagnosis = diagnose(error, url, is_hindsight, local, command, elsewhere)
    if diagnosis is None:
        return str(error)
    return f"{error} — {diagnosis.problem}; {diagnosis.hint}."


def explain_for(client: HindsightClient, error: HindsightError, command: str) -> str:
    """``explain`` for the server ``client`` talks to: a reply that was not Hindsight's is
    followed by an identity probe (``GET /version``), to tell another server from a failing
    one; when nothing answered, a local server recorded for this URL (or, at the fallback URL,
    for the data dir) that stopped is the cause, and how to start it the hint; one recorded at
    another address is where to point instead."""
    url = client.base_url
    known = probe_identity(client) if error.kind == "not_hindsight" else None
    local = local_server(url) if error.kind == "connect" else None
    elsewhere = recorded_elsewhere(url) if error.kind == "connect" and local is None else None
    return explain(error, url, known, local, command, elsewhere)


def probe_identity(client: HindsightClient) -> bool | None:
    """True if ``client`` reaches Hindsight, False if something else answers, None if unknown."""
    try:
        client.identity()
    except HindsightError as error:
        if error.kind == "not_hindsight" and (error.status_code or 0) < 500:
            return False
        return None
    return True


def probe_database(client: HindsightClient) -> HindsightError | None:
    """``GET /health`` after a failing reply: its error when the server cannot reach its
    database (Hindsight answers 503 with ``"database": "error"``), else None."""
    try:
        client.health()
    except HindsightError as error:
        return error if database_down(error) else None
    return None


def server_problem(
    client: HindsightClient, error: HindsightError | None, command: str = TERMINAL_COMMAND
) -> Diagnosis | None:
    """What is wrong with ``client``'s server, in words, after a check failed with ``error``
    (or passed: None) — the local server's facts first, then ``GET /health`` when the server
    answers but fails, then the error itself (``diagnose``).

    None when nothing is wrong (``error`` None) or the error's own message says it all.
    """
    url = client.base_url
    local = local_server(url)
    running_fault = local_diagnosis(local, command) if local is not None else None
    if error is None or running_fault is not None:
        return running_fault
    if error.kind == "timeout" or (error.kind == "http" and (error.status_code or 0) >= 500):
        error = probe_database(client) or error  # answers, but fails: is its database down?
    known = False if error.kind == "not_hindsight" else None
    elsewhere = recorded_elsewhere(url) if local is None and error.kind == "connect" else None
    return diagnose(error, url, known, local, command, elsewhere)


@dataclass(frozen=True)
class ServerCheck:
    """Whether the server answered as Hindsight and took the key (``ok``), and ``line``:
    ``ok (Hindsight 1.1.0)`` or what is wrong and what to do."""

    ok: bool
    line: str


def server_state(client: HindsightClient, command: str = TERMINAL_COMMAND) -> ServerCheck:
    """``ok (Hindsight 1.1.0)``, or what is wrong, in one line: ``GET /version`` (is it
    Hindsight?), then ``GET /v1/default/banks`` (open even where ``/version`` is not: is the key
    accepted?), then what the machine shows of a local server (a deleted data dir)."""
    try:
        version = client.identity().api_version
        client.list_banks()
    except HindsightError as error:
        diagnosis = server_problem(client, error, command)
        return ServerCheck(False, diagnosis.summary if diagnosis else f"error: {error}")
    problem = server_problem(client, None, command)
    if problem:
        return ServerCheck(False, problem.summary)
    return ServerCheck(True, f"ok (Hindsight {version})")
