"""``server start --llm …``: the local server with a real LLM, end to end, and ``doctor``.

No LLM provider can be reached from the test machines, so the LLM is a stand-in started by the
test (``llmstandin.StandInLLM``: an OpenAI-compatible endpoint that answers with fixed,
rule-made text, named as a stand-in in every answer). The server is started the way a user
does it, ``hindsight-magic server start --llm openai --base-url URL --model NAME``, with the key
in ``OPENAI_API_KEY``; everything the server's LLM does goes through the stand-in. With a real
provider, the same two commands check it: ``hindsight-magic server start --llm openai``, then
``%hindsight doctor``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import free_port, wait_for
from llmstandin import STAND_IN, StandInLLM

import hindsight_magic as hm
from hindsight_magic._cli import main
from hindsight_magic._memory.mental_models import SUMMARY
from hindsight_magic._session import HindsightSession
from hindsight_magic._settings import HindsightSettings
from hindsight_magic._ui import doctor

KEY = f"sk-stand-in-{uuid.uuid4().hex}"  # the key the stand-in accepts: a leak would show it
BANK = "llm-check"
FACTS = (
    "Churn study: we validate the churn model with 5-fold cross-validation.",
    "The baseline model reaches an AUC of 0.81 on the holdout month.",
)


@pytest.fixture
def stand_in() -> Iterator[StandInLLM]:
    llm = StandInLLM(KEY)
    try:
        yield llm
    finally:
        llm.close()


def memory_texts(url: str) -> list[str]:
    reply = httpx.get(f"{url}/v1/default/banks/{BANK}/memories/list", timeout=30)
    reply.raise_for_status()
    return [str(item.get("text")) for item in reply.json().get("items") or ()]


@pytest.mark.integration
def test_server_start_with_an_llm_extracts_answers_and_summarizes_through_it(
    stand_in: StandInLLM,
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    notebook: Any,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    port = free_port()
    argv = ["server", "start", "--llm", "openai", "--base-url", stand_in.url]
    argv += ["--model", "stand-in", "--data-dir", str(data_dir), "--port", str(port)]
    code = main(argv)
    said = capsys.readouterr()
    assert code == 0, said.err
    url = f"http://127.0.0.1:{port}"
    assert f"Hindsight server running at {url} (pid " in said.out
    assert ", LLM: openai (stand-in))" in said.out
    state = (data_dir / "server" / "state.json").read_text()
    recorded = json.loads(state)
    assert (recorded["llm_provider"], recorded["llm_model"]) == ("openai", "stand-in")
    assert recorded["llm_base_url"] == stand_in.url
    assert "text" in stand_in.calls  # the server checked the LLM answers as it started

    journal = str(tmp_path / "journal.sqlite3")
    settings = HindsightSettings(api_url=url, bank_id=BANK, scoping="global", journal_path=journal)
    session = HindsightSession(settings)
    try:
        # extraction: the LLM makes the memories (a fact a sentence), not the text as written
        hm.retain(" ".join(FACTS), wait=180, session=session)
        assert "extraction" in stand_in.calls
        assert any(FACTS[0] in text for text in stand_in.texts)
        texts = wait_for(lambda: memory_texts(url), 120, "the facts", until=lambda t: len(t) >= 2)
        assert sorted(texts) == sorted(FACTS), texts

        # reflect: the LLM's answer, shown as an answer, with what it is based on
        answer = hm.reflect("How do we validate the churn model?", session=session)
        assert answer.answered
        assert str(answer).startswith(f"{STAND_IN} answer (a test endpoint, not a model): ")
        assert "\n\nBased on (" in repr(answer)
        # %%reflect --no-sources: the answer alone, without what it is based on
        notebook.connect(url, BANK, journal_path=str(tmp_path / "magics.sqlite3"))
        cell = notebook.run("%%reflect --no-sources\nHow do we validate the churn model?")
        assert cell.error is None, cell.text
        assert cell.result.answered
        assert cell.result.based_on is None
        assert STAND_IN in cell.text
        assert "Based on" not in cell.text

        # a mental model's content: the LLM's summary, shown as one
        assert session.refresh_model("user-preferences") is not None

        def summary() -> str:
            model = session.model("user-preferences")
            return (model.content or "") if model is not None else ""

        content = wait_for(summary, 120, "the model's summary", until=lambda c: STAND_IN in c)
        assert content.startswith(f"{STAND_IN} summary (a test endpoint, not a model): ")
        model = session.model("user-preferences")
        assert model is not None
        assert not model.listing
        assert model.kind == SUMMARY

        # doctor: one real call says what works; a key the provider refuses is one line
        report = doctor.run_checks(url, None, BANK, journal)
        assert report["llm"].line() == (
            "ok    llm: openai answers (one call): extraction, reflect and mental models work"
        )
        stand_in.accepted_key = f"sk-another-{uuid.uuid4().hex}"  # the provider revoked it
        line = doctor.run_checks(url, None, BANK, journal)["llm"].line()
        assert line.startswith(
            "fix:  llm: openai refused its key: extraction, observations, reflect and mental "
            "models fail → check its key (e.g. OPENAI_API_KEY)"
        ), line
        assert "\n" not in line
        assert KEY not in line
    finally:
        session.close()

    # the key went to the server's environment only
    assert KEY not in (data_dir / "server" / "state.json").read_text()
    assert KEY not in (data_dir / "server" / "hindsight.log").read_text()
    assert not any(KEY in text for text in memory_texts(url))


def test_an_llm_without_its_key_is_one_line_and_starts_nothing(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("OPENAI_API_KEY", "HINDSIGHT_API_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert main(["server", "start", "--llm", "openai", "--data-dir", str(data_dir)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        "hindsight-magic: error: --llm openai needs an API key: set OPENAI_API_KEY or "
        "HINDSIGHT_API_LLM_API_KEY in the environment (never in a notebook cell), then start "
        "again"
    )
    assert not (data_dir / "server" / "state.json").exists()


@pytest.mark.integration
def test_a_server_running_without_an_llm_is_restarted_with_the_one_asked_for(
    stand_in: StandInLLM,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in [name for name in os.environ if name.startswith("HINDSIGHT_API_LLM_")]:
        monkeypatch.delenv(name)
    port = free_port()
    assert main(["server", "start", "--data-dir", str(data_dir), "--port", str(port)]) == 0
    assert ", LLM: mock (no LLM): reflect and mental models show" in capsys.readouterr().out
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    argv = ["server", "start", "--llm", "openai", "--base-url", stand_in.url, "--model", "stand-in"]
    assert main([*argv, "--data-dir", str(data_dir)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(
        "Hindsight server restarted with another LLM (it ran with mock (no LLM)) at "
        f"http://127.0.0.1:{port} (pid "  # where the kernels that used it find it
    ), said
    assert ", LLM: openai (stand-in))" in said
    assert main([*argv, "--data-dir", str(data_dir)]) == 0  # the same LLM: the same server
    assert capsys.readouterr().out.startswith("Hindsight server already running at ")
