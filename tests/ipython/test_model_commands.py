"""``%hindsight models …`` and ``%hindsight context`` in a real InteractiveShell.

The session's client is pointed at ``FakeHindsight`` (in-memory mental-model endpoints), so
these run without a server; ``test_mental_models_server.py`` repeats the key paths for real.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FakeHindsight, one_line, render_markdown, visible_text

from hindsight_magic._memory import mental_models
from hindsight_magic._ui import display as model_views
from hindsight_magic.testing import Driver


@pytest.fixture
def fake() -> FakeHindsight:
    return FakeHindsight()


@pytest.fixture
def book(notebook: Any, dead_url: str, bank_id: str, fake: FakeHindsight, monkeypatch: Any) -> Any:
    """A loaded notebook whose session talks to ``fake`` (an empty bank, seeding already done)."""
    monkeypatch.setattr(mental_models, "REFRESH_SETTLE_S", 0.0)
    notebook.load(api_url=dead_url, bank_id=bank_id)
    session = notebook.magics.session
    Driver(session).use_transport(fake.transport, fake.url, timeout_s=1)
    fake.banks[bank_id] = {}
    assert session.reload_models() is None  # ensures bank and seeds once
    fake.banks[bank_id].clear()  # start each test from an empty bank
    fake.requests.clear()
    return notebook


def out(book: Any, line: str) -> str:
    cell = book.run(line)
    assert cell.error is None, cell.text
    return repr(cell.result)


def bank_of(book: Any) -> str:
    return book.magics.session.scope.bank_id


def test_list_shows_inventory_lines_and_escaped_html(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    assert out(book, "%hindsight models") == f"No mental models on bank {bank}."
    fake.add(bank, "zeta", "<b>Zeta</b>", "z", tags=("project:x",))
    fake.add(bank, "alpha", "Alpha", "a")
    result = book.run("%hindsight models list").result
    lines = repr(result).splitlines()
    assert lines[0] == f"Mental Models — {bank}"
    assert lines[1].startswith("- alpha: Alpha (refreshed ")
    assert lines[2].startswith("- zeta: <b>Zeta</b> [project:x] (refreshed ")
    assert "&lt;b&gt;Zeta&lt;/b&gt;" in result._repr_html_()
    assert "<b>Zeta</b>" not in result._repr_html_()


def test_show_gives_content_and_escapes_markdown(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    fake.add(bank, "m1", "Methods", "Use <script>x</script> **grouped** CV", tags=("project:x",))
    fake.add(bank, "blank", "Blank", "")
    result = book.run("%hindsight models show m1").result
    text = repr(result)
    assert text.startswith("Methods\n  id: m1\n  tags: project:x\n")
    assert "source query: about Methods" in text
    assert text.endswith("Use <script>x</script> **grouped** CV")
    page = render_markdown(result._repr_markdown_())
    assert "<script" not in page
    assert "<strong>grouped</strong>" in page  # the model's Markdown still renders
    assert "Use <script>x</script> grouped CV" in visible_text(page)
    assert out(book, "%hindsight models show blank").endswith(model_views.EMPTY_CONTENT)
    assert out(book, "%hindsight models show nope") == "Mental model not found: nope"


def test_refresh_one_model_or_only_the_auto_refresh_ones(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    assert out(book, "%hindsight models refresh") == (
        "No mental models opted into auto-refresh; 0 curated model(s) left untouched. "
        "Pass an explicit id to refresh one of them."
    )
    fake.add(bank, "auto", "Auto", "")
    fake.add(bank, "curated", "Curated", "hand written", auto=False)
    assert out(book, "%hindsight models refresh curated") == (
        "Refresh queued for mental model curated."
    )
    fake.requests.clear()
    assert out(book, "%hindsight models refresh") == (
        "Refresh queued for 1/1 auto-refresh model(s); skipped 1 curated model(s)."
    )
    assert [p.rsplit("/", 2)[1] for _, p, _, _ in fake.calls("POST", "/refresh$")] == ["auto"]
    assert out(book, "%hindsight models refresh nope") == "Mental model not found: nope"
    del fake.banks[bank]["auto"]
    assert out(book, "%hindsight models refresh").startswith(
        "No mental models opted into auto-refresh; 1 curated model(s) left untouched."
    )


def test_refresh_reports_per_model_failures(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    fake.add(bank, "good", "Good")
    fake.add(bank, "bad", "Bad")
    fake.fail["POST /bad/refresh$"] = (500, {"detail": "llm down"})
    assert out(book, "%hindsight models refresh").splitlines() == [
        "Refresh queued for 1/2 auto-refresh model(s).",
        "Refresh failed for bad: refreshMentalModel failed: llm down",
    ]


def test_refresh_reloads_the_cache(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    fake.add(bank, "auto", "Auto", "")
    assert book.run("%hindsight context").result == ""
    out(book, "%hindsight models refresh auto")
    out(book, "%hindsight models reload")
    assert "# Auto" in book.run("%hindsight context").result


def test_seed_is_create_only_and_reports_counts(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    assert out(book, "%hindsight models seed") == "Seeded 3 new mental model(s); 0 already present."
    label = book.magics.session.scope.label
    assert set(fake.banks[bank]) == {
        "user-preferences", f"project-conventions-{label}", f"project-decisions-{label}"
    }  # fmt: skip
    fake.banks[bank]["user-preferences"]["name"] = "Renamed on the server"
    assert out(book, "%hindsight models seed") == "Seeded 0 new mental model(s); 3 already present."
    assert fake.banks[bank]["user-preferences"]["name"] == "Renamed on the server"
    out(book, "%hindsight scope global")
    fake.banks.setdefault(bank_of(book), {})
    assert out(book, "%hindsight models seed") == "Seeded 0 new mental model(s); 1 already present."


def test_seed_failures_and_no_applicable_seeds(book: Any, fake: FakeHindsight, monkeypatch: Any):
    fake.fail["POST /mental-models$"] = (422, {"detail": "id taken"})
    lines = out(book, "%hindsight models seed").splitlines()
    assert lines[0] == "Seeded 0 new mental model(s); 0 already present."
    assert lines[1] == "Seed failed for user-preferences: createMentalModel failed: id taken"
    monkeypatch.setattr(mental_models, "resolve_seeds", lambda scope: [])
    assert out(book, "%hindsight models seed") == (
        "No built-in seeds apply to scoping=per-project-tagged."
    )


def test_delete(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    fake.add(bank, "old", "Old", "x")
    assert (
        out(book, "%hindsight models delete old") == f"Deleted mental model old from bank {bank}."
    )
    assert "old" not in fake.banks[bank]
    assert out(book, "%hindsight models delete nope") == "Mental model not found: nope"
    assert out(book, "%hindsight models remove nope") == "Mental model not found: nope"


def test_history_shows_each_change_as_a_diff(book: Any, fake: FakeHindsight) -> None:
    bank = bank_of(book)
    fake.add(bank, "m", "M", "")
    assert out(book, "%hindsight models history m") == "No history recorded for m."
    out(book, "%hindsight models refresh m")
    fake.banks[bank]["m"]["content"] = "mock response\nsecond line"
    fake.history[(bank, "m")].insert(
        0, {"previous_content": "mock response\n", "changed_at": "2026-05-06T07:08:09Z"}
    )
    result = book.run("%hindsight models history m").result
    lines = repr(result).splitlines()
    assert lines[0] == "History of m (2 changes, newest first)"
    assert lines[2:5] == ["changed 2026-05-06 07:08 UTC:", "  mock response", "+ second line"]
    assert lines[-1] == "+ mock response"
    assert out(book, "%hindsight models history nope") == "Mental model not found: nope"


def test_history_html_is_escaped() -> None:
    result = model_views.ModelHistory("m", [("now", ["+ <img src=x>"])])
    assert "&lt;img src=x&gt;" in result._repr_html_()
    assert "<img" not in result._repr_html_()


def test_line_diff_is_capped() -> None:
    old = "\n".join(f"old {i}" for i in range(300))
    new = "\n".join(f"new {i}" for i in range(300))
    diff = model_views.line_diff(old, new)
    assert len(diff) == model_views.DIFF_MAX_OUTPUT_LINES + 1
    assert diff[-1] == "… (400 more lines)"
    assert model_views.line_diff("a\nb", "a\nc") == ["  a", "- b", "+ c"]


MODELS_USAGE = (
    "Usage: %hindsight models [list | show ID | refresh [ID] | seed | delete ID | history ID "
    "| reload]"
)


@pytest.mark.parametrize(
    ("line", "usage"),
    [
        ("%hindsight models show", "Missing ID. Usage: %hindsight models show ID"),
        ("%hindsight models delete a b", "Unexpected 'b'. Usage: %hindsight models delete ID"),
        ("%hindsight models history", "Missing ID. Usage: %hindsight models history ID"),
        ("%hindsight models refresh a b", "Unexpected 'b'. Usage: %hindsight models refresh [ID]"),
        (
            "%hindsight models frobnicate",
            "Unknown models action 'frobnicate'; actions: list, show, refresh, seed, delete, "
            f"history, reload. {MODELS_USAGE}",
        ),
        ("%hindsight models list extra", "Unexpected 'extra'. Usage: %hindsight models list"),
        ("%hindsight models remove", "Missing ID. Usage: %hindsight models remove ID"),
        (
            "%hindsight models reload --help",
            "Unexpected '--help'. Usage: %hindsight models reload",
        ),
        ("%hindsight context extra", "Unexpected 'extra'. Usage: %hindsight context"),
    ],
)
def test_bad_usage_is_one_line(book: Any, line: str, usage: str) -> None:
    cell = book.run(line)
    assert one_line(cell.text) == f"UsageError: {usage}"


def test_an_id_may_start_with_a_dash(book: Any) -> None:
    assert out(book, "%hindsight models show -x") == "Mental model not found: -x"


def test_server_errors_are_one_line(book: Any, fake: FakeHindsight) -> None:
    fake.fail["GET /mental-models$"] = (500, {"detail": "db down"})
    cell = book.run("%hindsight models list")
    line = one_line(cell.text)
    assert line.startswith("HindsightError: listMentalModels failed: db down — the server at")
    assert line.endswith(
        "failed; try again, or read its log (`%hindsight server logs` for the local one)."
    )


def test_disabled_models(book: Any, fake: FakeHindsight) -> None:
    fake.add(bank_of(book), "m", "M", "content")
    book.run("%hindsight config mental_models=false")
    assert out(book, "%hindsight models list") == (
        "Mental models are disabled (mental_models = false); turn them on with "
        "%hindsight config mental_models=true."
    )
    assert book.run("%hindsight context").result == ""
    assert "disabled (mental_models = false)" in out(book, "%hindsight status")
    book.run("%hindsight config mental_models=true")  # switching on loads again
    assert "\ncontent\n</mental_models>" in book.run("%hindsight context").result


def test_context_is_the_models_block_plus_the_last_memories(book: Any, fake: FakeHindsight):
    session = book.magics.session
    assert book.run("%hindsight context").result == ""
    assert out(book, "%hindsight context") == model_views.NO_CONTEXT
    fake.add(bank_of(book), "m", "Data Sources", "Sales come from the warehouse.")
    assert session.reload_models() is None
    found = {"results": [{"id": "r1", "text": "Refunds are late."}]}
    fake.fail["POST /memories/recall$"] = (200, found)
    assert book.run("found = %recall refunds").error is None
    cell = book.run("prompt = %hindsight context")
    assert cell.error is None
    prompt = book.ip.user_ns["prompt"]
    assert isinstance(prompt, str)
    models, _, memories = prompt.partition("</mental_models>\n\n")
    assert memories == book.ip.user_ns["found"].as_context()  # the last recall's block
    assert models.startswith("<mental_models>\n")
    assert "# Data Sources _(refreshed " in prompt
    assert prompt.endswith("- Refunds are late.\n</memories>")
    assert repr(book.run("%hindsight context").result) == prompt


def test_context_respects_the_render_cap(book: Any, fake: FakeHindsight) -> None:
    for i in range(5):
        fake.add(bank_of(book), f"m{i}", f"Model {i}", "long content " * 200)
    book.run("%hindsight config mental_model_max_render_chars=900")
    assert book.magics.session.reload_models() is None
    block = book.run("%hindsight context").result
    assert 0 < len(block) <= 900
    assert block.endswith("…[mental-model snapshot truncated at render budget]\n</mental_models>")


def test_help_and_status_mention_mental_models(book: Any, fake: FakeHindsight) -> None:
    listing = out(book, "%hindsight help")
    assert "models" in listing
    assert "context" in listing
    fake.add(bank_of(book), "m", "M", "content")
    assert book.magics.session.reload_models() is None
    status = out(book, "%hindsight status")
    assert "Mental models:" in status
    assert "state      ok, 1 model listed at" in status
    doc = book.ip.find_line_magic("hindsight").__doc__ or ""
    assert "models [list | show ID" in doc
    assert "``context`` — the <mental_models> + last <memories> block" in doc
