"""Mental models against a real Hindsight server (started once per test session).

What the extension did is checked by reading the server directly over HTTP. The server runs the
mock LLM, whose "summary" is ``"mock response\\n"``: the extension never shows it, and lists
instead the memories each model's question finds, with where they came from. The render cap is
exercised with long model names (the server allows 256 characters).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import httpx
import pytest
from helpers import RunningServer, poll, wait_for

from hindsight_magic._memory.mental_models import LISTING, SEEDS, TRUNCATION_MARKER, tag_suffix
from hindsight_magic._memory.scope import project_label
from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration

SEED_QUERIES = {seed.id: seed.source_query for seed in SEEDS}


def banks(url: str) -> str:
    return f"{url}/v1/default/banks"


def server_models(url: str, bank: str) -> dict[str, dict[str, Any]]:
    """The bank's models by id, with content (read directly, not through the extension)."""
    reply = httpx.get(f"{banks(url)}/{bank}/mental-models", params={"detail": "content"})
    if reply.status_code == 404:
        return {}
    reply.raise_for_status()
    return {item["id"]: item for item in reply.json()["items"]}


def remember(url: str, bank: str, text: str) -> None:
    """A memory in ``bank`` (synchronously), so that refreshes produce content."""
    reply = httpx.post(
        f"{banks(url)}/{bank}/memories", json={"items": [{"content": text}], "async": False},
        timeout=60,
    )  # fmt: skip
    reply.raise_for_status()


def load(notebook: Any, server: RunningServer, bank: str, **env: str) -> Any:
    """Load with the scope's bank on the server (as a first retain makes it: a bank that is
    only looked at is never created, nor seeded), its first model load over."""
    magics = notebook.load(api_url=server.url, bank_id=bank, **env)
    made = magics.session.scope.bank_id
    httpx.put(f"{banks(server.url)}/{made}", json={}, timeout=30).raise_for_status()
    assert magics.session.reload_models() is None
    return magics


def text_of(notebook: Any, line: str) -> str:
    cell = notebook.run(line)
    assert cell.error is None, cell.text
    return repr(cell.result)


@pytest.mark.parametrize("scoping", ["per-project-tagged", "per-project", "global"])
def test_fresh_bank_gets_exactly_the_applicable_seeds_once(
    notebook: Any, hindsight_server: RunningServer, bank_id: str, scoping: str
) -> None:
    magics = load(notebook, hindsight_server, bank_id, scoping=scoping)
    scope = magics.session.scope
    label, bank = scope.label, scope.bank_id
    if scoping == "per-project-tagged":
        tag = f"project:{label}"
        suffix = tag_suffix(tag)
        expected = {
            "user-preferences": [],
            f"project-conventions-{suffix}": [tag],
            f"project-decisions-{suffix}": [tag],
        }
    elif scoping == "per-project":
        assert bank == f"{bank_id}-{label}"
        expected = {"user-preferences": [], "project-conventions": [], "project-decisions": []}
    else:
        expected = {"user-preferences": []}
    models = server_models(hindsight_server.url, bank)
    assert {mid: m["tags"] for mid, m in models.items()} == expected
    for mid, model in models.items():
        seed_id = next(s for s in SEED_QUERIES if mid == s or mid.startswith(f"{s}-"))
        assert model["source_query"] == SEED_QUERIES[seed_id]
        assert model["max_tokens"] == (600 if seed_id == "user-preferences" else 800)
        assert model["trigger"]["mode"] == "delta"
        assert model["trigger"]["refresh_after_consolidation"] is True
    created = {mid: m["created_at"] for mid, m in models.items()}

    notebook.run("%reload_ext hindsight_magic")  # a second load (a new session) creates none
    assert Driver(notebook.magics.session).models_loaded(15)
    again = server_models(hindsight_server.url, bank)
    assert {mid: m["created_at"] for mid, m in again.items()} == created


def test_seed_edited_on_the_server_stays_edited(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    load(notebook, hindsight_server, bank_id)
    url = f"{banks(hindsight_server.url)}/{bank_id}/mental-models/user-preferences"
    edit = {"name": "Our Preferences", "source_query": "What does Ana like in charts?"}
    httpx.patch(url, json=edit).raise_for_status()
    notebook.run("%reload_ext hindsight_magic")
    assert Driver(notebook.magics.session).models_loaded(15)
    assert text_of(notebook, "%hindsight models seed") == (
        "Seeded 0 new mental model(s); 3 already present."
    )
    model = server_models(hindsight_server.url, bank_id)["user-preferences"]
    assert (model["name"], model["source_query"]) == (edit["name"], edit["source_query"])


def test_a_legacy_project_model_with_the_same_tags_counts_as_present(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    tag = f"project:{project_label()}"  # the kernel's working directory is this process's
    httpx.put(f"{banks(hindsight_server.url)}/{bank_id}", json={}).raise_for_status()
    legacy = {"id": "project-conventions", "name": "Old", "source_query": "old?", "tags": [tag]}
    httpx.post(f"{banks(hindsight_server.url)}/{bank_id}/mental-models", json=legacy)
    load(notebook, hindsight_server, bank_id)
    ids = set(server_models(hindsight_server.url, bank_id))
    suffix = tag_suffix(tag)
    assert ids == {"user-preferences", "project-conventions", f"project-decisions-{suffix}"}


def test_without_an_llm_a_seed_lists_the_memories_its_question_finds(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """The offline default: a seeded model shows real memories with where they came from,
    marked as a list (not a summary) in every form, and follows memory as it changes."""
    magics = load(notebook, hindsight_server, bank_id, scoping="global")
    decision = "Decision: we drop visits shorter than five seconds, the uptime bot makes them."
    notebook.run(f"%retain {decision}")
    notebook.run("%recall visits shorter than five seconds")  # sent and indexed

    def shown() -> str:
        return text_of(notebook, "%hindsight models show user-preferences")

    text = wait_for(shown, 60, "the memory listed", until=lambda text: decision in text)
    assert "mock response" not in text
    assert "  content: the memories its question finds, listed (no LLM on the server " in text
    line = next(line for line in text.splitlines() if decision in line)
    assert re.fullmatch(
        rf"- {re.escape(decision)} — cell \d+ · \d{{4}}-\d\d-\d\d \d\d:\d\d UTC", line
    ), line
    listed = text_of(notebook, "%hindsight models list")
    assert "user-preferences: User Preferences (refreshed " in listed
    assert "; a list of memories, no LLM summary)" in listed
    assert text_of(notebook, "%hindsight models history user-preferences") == (
        "No history recorded for user-preferences."
    )

    # memory changes: the worker sees the bank change after the next send, and lists again
    preference = "Ana prefers seaborn plots with a white background in every report."
    notebook.run(f"%retain {preference}")
    magics.session.flush(60)

    def context() -> str:  # the <mental_models> block alone (the last recall's follows it)
        return str(notebook.run("%hindsight context").result).split("</mental_models>")[0]

    block = wait_for(context, 120, "the new memory listed", until=lambda t: preference in t)
    assert "# User Preferences _(refreshed " in block
    assert "_(the memories its question finds, listed (no LLM on the server" in block
    assert "mock response" not in block
    forgotten = notebook.run(f"%hindsight forget {preference_id(magics, preference)}")
    assert forgotten.error is None, forgotten.text
    block = wait_for(context, 120, "the forgotten memory gone", until=lambda t: preference not in t)
    assert decision in block


def preference_id(magics: Any, text: str) -> str:
    """The id of the memory whose text is ``text`` (read from a recall)."""
    found = magics.session.recall(text)
    return next(memory.id for memory in found if memory.text == text)


def test_show_and_delete_and_a_server_refresh_never_shows_the_mock(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    load(notebook, hindsight_server, bank_id)
    remember(hindsight_server.url, bank_id, "Ana prefers seaborn plots with a white background.")
    assert text_of(notebook, "%hindsight models refresh user-preferences") == (
        "Refresh queued for mental model user-preferences."
    )

    def content() -> str:
        return server_models(hindsight_server.url, bank_id)["user-preferences"]["content"]

    assert wait_for(content, 20, "refreshed content", every_s=0.1) == "mock response\n"
    shown = text_of(notebook, "%hindsight models show user-preferences")
    assert shown.startswith("User Preferences\n  id: user-preferences\n")
    assert "\n- Ana prefers seaborn plots with a white background. — " in shown
    assert "mock response" not in shown
    assert text_of(notebook, "%hindsight models history user-preferences") == (
        "No history recorded for user-preferences."  # the mock's rewrites are no history
    )

    assert text_of(notebook, "%hindsight models delete nope") == "Mental model not found: nope"
    assert text_of(notebook, "%hindsight models delete user-preferences") == (
        f"Deleted mental model user-preferences from bank {bank_id}."
    )
    assert "user-preferences" not in server_models(hindsight_server.url, bank_id)
    assert text_of(notebook, "%hindsight models show user-preferences") == (
        "Mental model not found: user-preferences"
    )


def test_context_block_respects_the_render_cap(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    load(notebook, hindsight_server, bank_id, mental_model_auto_seed="false")
    remember(hindsight_server.url, bank_id, "Sales figures come from the nightly warehouse export.")
    names = [f"{letter} " + "long model name " * 12 for letter in "EDCBA"]
    for i, name in enumerate(names):
        model = {
            "id": f"long-{i}",
            "name": name,
            "source_query": "Where does sales data come from?",
        }
        httpx.post(f"{banks(hindsight_server.url)}/{bank_id}/mental-models", json=model)

    def filled() -> bool:
        models = server_models(hindsight_server.url, bank_id).values()
        return len(models) == 5 and all(m["content"] for m in models)

    wait_for(filled, 20, "five long models with content", every_s=0.1)
    assert text_of(notebook, "%hindsight models reload") == "Mental-model cache reloaded."

    full = notebook.run("%hindsight context").result
    assert full.count("\n- Sales figures come from the nightly warehouse export. — ") == 5
    assert "mock response" not in full
    assert TRUNCATION_MARKER not in full
    headers = [line for line in full.splitlines() if line.startswith("# ")]
    assert [h[2] for h in headers] == list("ABCDE")  # sorted by name

    notebook.run("%hindsight config mental_model_max_render_chars=1200")
    capped = notebook.run("%hindsight context").result
    assert 0 < len(capped) <= 1200
    assert capped.endswith(TRUNCATION_MARKER + "\n</mental_models>")
    assert capped.startswith("<mental_models>\n")
    assert "# A long model name" in capped
    assert "# E long model name" not in capped

    notebook.run("%hindsight config mental_model_max_render_chars=300")  # below the minimum
    assert notebook.run("%hindsight context").result == ""


def test_server_down_at_load_keeps_everything_usable(notebook: Any, dead_url: str) -> None:
    notebook.load(api_url=dead_url)
    assert Driver(notebook.magics.session).models_loaded(5)
    retained = text_of(notebook, "%retain the server is down but this is queued")
    assert retained.startswith("1 memory queued. The Hindsight server at "), retained
    assert "is not answering: it waits in the journal" in retained
    status = text_of(notebook, "%hindsight status")
    section = status.split("Mental models:")[1]
    assert "state      unavailable: " in section
    assert "request failed" in section
    assert notebook.run("%hindsight context").result == ""
    cell = notebook.run("%hindsight models list")
    assert f"no Hindsight server at {dead_url}" in cell.text
    assert "Traceback" not in cell.text


def status_models(notebook: Any) -> dict[str, str]:
    """The "Mental models" rows of ``%hindsight status`` (label → value)."""
    section = text_of(notebook, "%hindsight status").split("Mental models:\n")[1]
    lines = itertools.takewhile(lambda line: line.startswith("  "), section.splitlines())
    return dict(line.strip().split(maxsplit=1) for line in lines)


def listed_models(notebook: Any) -> list[str]:
    """The ids ``%hindsight models`` lists."""
    return re.findall(r"^- ([^:]+):", text_of(notebook, "%hindsight models"), re.MULTILINE)


def test_status_and_models_agree_once_the_first_retain_made_the_bank(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    # a new bank: the first retain creates it and the seeds follow; once the bank has a memory
    # the seeds list it (no LLM on this server); status shows their content soon after (the
    # cache lists again after the session sent it)
    text_of(notebook, "%retain The ice cores are stored at minus eighty degrees.")
    text_of(notebook, "%hindsight flush")
    rows = wait_for(
        lambda: status_models(notebook),
        60,  # seeding three models takes seconds on a busy server
        "the seeds",
        every_s=0.5,
        until=lambda rows: rows["state"].startswith("ok, 3 models listed at "),
    )
    listed = listed_models(notebook)
    assert len(listed) == 3
    rows = wait_for(
        lambda: status_models(notebook),
        240,  # the server indexes it: seconds, or minutes on a busy machine
        "content in status",
        every_s=1,
        until=lambda rows: "without content" not in rows["state"],
    )
    assert rows["models"] == ", ".join(sorted(listed))
    assert rows["content"] == LISTING  # marked as lists of memories, not summaries


# planted in a notebook: three decisions (said with %retain, hm.retain, a cell's comment) among
# the cells a real session also runs: bare prints, a huge value, plans
DECISIONS = {
    "%retain": (
        "%retain Decision: the tenure cut-off is 6 months; shorter tenures stay out of churn.",
        "tenure cut-off is 6 months",
    ),
    "hm.retain": (
        "import hindsight_magic as hm\n"
        "hm.retain('The standard annealing temperature is 0.7 for every sampling run.')",
        "standard annealing temperature is 0.7",
    ),
    "comment": (
        "HOLDOUT = 0.2  # decided: hold out a fifth of the customers, split by signup month",
        "hold out a fifth of the customers",
    ),
}
NOISE = {
    "print": ('print("before")', 'print("before")'),
    "print len": ("r = list(range(5))\nprint(len(r))", "print(len(r))"),
    "huge value": ('big = "x" * 2_000_000\nbig', "xxxxxxxxxx"),
    "plans": (
        "# plan for next week: try gradient boosting, ask Ana about the Q3 refunds\n"
        'plans = ["try gradient boosting", "ask Ana about the Q3 refunds"]\nplans',
        "gradient boosting",
    ),
}


def test_without_an_llm_project_decisions_lists_the_decisions_not_the_noise(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """What ``%hindsight context`` puts in an LLM's prompt without an LLM on the server: the
    Project Decisions model lists the memories that state something (retained on purpose, a
    cell's comment), never a bare print, a huge value or a plan."""
    magics = load(notebook, hindsight_server, bank_id, scoping="per-project")
    for source, _ in (*NOISE.values(), *DECISIONS.values()):
        assert notebook.run(source).error is None, source
    notebook.run("%hindsight autoretain now")
    magics.session.flush(60)
    notebook.run("%recall tenure cut-off")  # sent and indexed

    def shown() -> str:
        return text_of(notebook, "%hindsight models show project-decisions")

    def listed(text: str) -> tuple[list[str], list[str]]:
        found = [name for name, (_, said) in DECISIONS.items() if said in text]
        noise = [name for name, (_, said) in NOISE.items() if said in text]
        return found, noise

    text = poll(shown, 60, 0.5, until=lambda t: listed(t)[0] == [*DECISIONS])
    found, noise = listed(text)
    print(f"planted decisions listed: {len(found)} of {len(DECISIONS)}; noise: {noise}")
    assert (found, noise) == ([*DECISIONS], []), text
