"""Generated bad input (Hypothesis): magic lines, ``%hindsight`` words and setting values.

The hand-written cases of ``test_bad_input.py`` name what once went wrong; these generate
thousands of lines a user could type (or paste) and check the rules that hold for every one of
them: never a traceback, always a result or one line saying what to do, and never a memory lost
or queued twice (``%retain`` queues exactly the memories it reports). The server is
unreachable, so nothing leaves the queue while a test runs.

Each property runs a fixed number of examples (``budget``), sized so that the module takes about
half a minute on two busy cores; ``HINDSIGHT_GENERATED_SCALE=10`` runs ten times more. Inputs
that once failed are kept as ``@example``s, so every run replays them first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import budget
from hypothesis import example, given
from hypothesis import strategies as st
from IPython.core.error import UsageError

from hindsight_magic._errors import HindsightError
from hindsight_magic._settings import HindsightSettings, SettingsError
from hindsight_magic.testing import Driver

# any character a front end can send, lone surrogates and NUL included
ANY_CHAR = st.characters(exclude_categories=())
OPTION_WORDS = [
    "--tags", "--context", "--split", "--budget", "--max-tokens", "--types", "--var",
    "--no-sources", "--", "-", "--tags=", "--=", "'", '"', "=", ",", "a,b", "  ", "\t", "low",
    "high", "0", "-3", "1e9", "x y", "%", "?", "\\",
]  # fmt: skip
LINE = st.one_of(
    st.text(ANY_CHAR, max_size=200),
    st.lists(
        st.one_of(st.sampled_from(OPTION_WORDS), st.text(ANY_CHAR, max_size=12)), max_size=8
    ).map(" ".join),
)


@pytest.fixture
def shell(notebook: Any, dead_url: str) -> Any:
    """A loaded extension whose server is unreachable; returns the IPython shell."""
    notebook.load(api_url=dead_url, mental_models="false", auto_retain="false")
    return notebook.ip


def queued(ip: Any) -> int:
    """How many memories the session holds (pending, in flight, retrying or failed)."""
    return len(Driver(ip.magics_manager.registry["HindsightMagics"].session).queued())


def one_line(error: BaseException) -> str:
    """The message a user sees: one line, with something in it."""
    message = str(error)
    assert message.strip()
    assert "\n" not in message.strip(), message
    assert "Traceback" not in message
    return message


def failure(call: Any, expected: type[Exception]) -> str | None:
    """The one line ``call`` failed with (an ``expected`` error), or None if it did not fail."""
    try:
        call()
    except expected as error:
        return one_line(error)
    return None


def run(ip: Any, kind: str, name: str, line: str, cell: str | None = None) -> Any:
    """Run a magic as IPython would; expected failures are returned, anything else raises."""
    try:
        if kind == "cell":
            return ip.run_cell_magic(name, line, cell or "")
        return ip.run_line_magic(name, line)
    except (UsageError, HindsightError) as error:
        one_line(error)
        return error


@budget(1000)
@given(text=LINE)
@example(text="Columns\x00are\x00NUL-separated")
@example(text="--tags ok,\udcff --context \udcfe Tagged fact")
@example(text="--tags")
@example(text='--context "weekly review Fact')
@example(text="--at 2999-01-01 Fact")
@example(text="--at \udcff Fact")
@example(text="--at 2026-11-03T14:30+25:00 Fact")
@example(text="--at 0 Fact")
def test_any_retain_line_queues_what_it_says_or_says_why_in_one_line(shell: Any, text: str) -> None:
    before = queued(shell)
    outcome = run(shell, "line", "retain", text)
    after = queued(shell)
    if isinstance(outcome, Exception):
        assert after == before  # refused: nothing queued
    else:
        assert after - before == outcome.count  # queued what it said, once each
        said = f"{outcome.count} memor{'y' if outcome.count == 1 else 'ies'} queued."
        assert repr(outcome).startswith(said)  # (then: the server is not answering, here)


@budget(400)
@given(line=LINE, body=st.text(ANY_CHAR, max_size=300))
@example(line="--split", body="a\n\n\n\nb\n\n  \n\nc")
@example(line="", body="  \n\t\n")
def test_any_retain_cell_queues_what_it_says(shell: Any, line: str, body: str) -> None:
    before = queued(shell)
    outcome = run(shell, "cell", "retain", line, body)
    delta = queued(shell) - before
    assert delta == (0 if isinstance(outcome, Exception) else outcome.count)


@budget(60)  # each one tries the unreachable server
@given(line=LINE)
@example(line="--max-tokens many churn")
@example(line="--budget huge x")
@example(line="what did we decide?")
@example(line="\ud800")  # once a traceback: the query could not be encoded as UTF-8
def test_any_recall_or_reflect_line_ends_in_one_line(shell: Any, line: str) -> None:
    for magic in ("recall", "reflect"):
        outcome = run(shell, "line", magic, line)
        assert isinstance(outcome, UsageError | HindsightError)  # bad input or no server


SUBCOMMAND_WORDS = [
    "help", "status", "config", "scope", "bank", "autoretain", "retry", "clear", "flush",
    "on", "off", "every", "now", "--drop", "--timeout", "--prefix", "--project", "global",
    "per-project", "per-project-tagged", "team/a", "..", "_x", "=", "retain_every_n_cells=0",
    "recall_budget=", "scoping=team", "api_key=sk-x", "bank_id=a?b", "3", "-1", "nan", "inf",
    "forget", "restore", "correct", "history", "forgotten", "delete", "purge-matching", "#1",
    "#0", "#-1", "--reason", "--yes", "9b72be6f-8bc4-4cd3-aef7-36dc41d35331", "hm-x-1",
]  # fmt: skip
SAFE = (
    "help", "status", "config", "scope", "bank", "autoretain", "retry", "clear", "flush",
    "forget", "restore", "correct", "history", "forgotten", "delete", "purge-matching",
)  # fmt: skip
ARGS = st.lists(
    st.one_of(st.sampled_from(SUBCOMMAND_WORDS), st.text(ANY_CHAR, max_size=10)), max_size=5
).map(" ".join)


@budget(400)
@given(name=st.one_of(st.sampled_from(SAFE), st.text(ANY_CHAR, max_size=12)), args=ARGS)
@example(name="autoretain", args="sometimes")
@example(name="retry", args="--now")
@example(name="flush", args="--timeout soon")
@example(name="config", args="api_key=sk-secret-value-123")
@example(name="bank", args="../../etc")
@example(name="retry", args="'\n '")  # once two lines: argparse's message kept the newline
@example(name="forget", args="#1 --reason")
@example(name="correct", args="#0 new text")
@example(name="delete", args="hm-x-1 --yes")
def test_any_hindsight_words_give_a_result_or_one_line(shell: Any, name: str, args: str) -> None:
    if name.strip() in ("server", "doctor", "models", "context", "panel", "snapshot", "clone"):
        return  # they start servers, wait on the network or draw widgets: not generated here
    before = queued(shell)
    outcome = run(shell, "line", "hindsight", f"{name} {args}")
    assert queued(shell) == before  # no subcommand here loses or adds a memory
    if isinstance(outcome, Exception):
        assert "sk-secret-value-123" not in str(outcome)


SETTING_VALUES = st.one_of(
    st.text(ANY_CHAR, max_size=30),
    st.sampled_from(["", " ", "true", "FALSE", "yes", "0", "-1", "1e3", "nan", "http://x:99999"]),
)


@budget(1000)
@given(name=st.sampled_from(HindsightSettings.setting_names()), value=SETTING_VALUES)
@example(name="bank_id", value="a/b")
@example(name="retain_every_n_cells", value="three")
@example(name="api_url", value="http//no-colon")
@example(name="mental_model_refresh_s", value="NAN")  # once taken: the schedule stopped
@example(name="request_timeout_ms", value="1e400")
def test_any_setting_value_is_taken_or_refused_in_one_line(name: str, value: str) -> None:
    refused = failure(lambda: HindsightSettings.parse(name, value), SettingsError)
    if refused is not None:
        assert refused.startswith(f"Invalid {name}=")
    else:  # a value taken parses as itself again
        parsed = HindsightSettings.parse(name, value)
        assert HindsightSettings.parse(name, parsed) == parsed


def can_be_environment(value: str) -> bool:
    """Whether a variable can hold ``value`` (no NUL; undecodable bytes only as the OS keeps
    them, ``\\udc80``-``\\udcff``)."""
    try:
        return "\x00" not in value and bool(os.fsencode(value) or True)
    except UnicodeEncodeError:
        return False


@budget(400)
@given(
    name=st.sampled_from(HindsightSettings.setting_names()),
    value=SETTING_VALUES.filter(can_be_environment),
)
def test_any_environment_value_loads_or_is_refused_in_one_line(
    monkeypatch_session: pytest.MonkeyPatch, name: str, value: str
) -> None:
    variable = f"HINDSIGHT_{name.upper()}"
    monkeypatch_session.setenv(variable, value)
    try:
        refused = failure(HindsightSettings.check_environment, SettingsError)
    finally:
        monkeypatch_session.delenv(variable)
    assert refused is None or refused.startswith(f"Invalid {variable}=")


@pytest.fixture(scope="module")
def monkeypatch_session() -> Iterator[pytest.MonkeyPatch]:
    """A monkeypatch that lives as long as the module (Hypothesis reruns the test body)."""
    patch = pytest.MonkeyPatch()
    yield patch
    patch.undo()
