"""Mental models without a server: seeds, create-only seeding, rendering, client methods, cache.

``FakeHindsight`` (in ``helpers``) is a small in-memory stand-in for the mental-model endpoints,
served through ``httpx.MockTransport``.
"""

from __future__ import annotations

import functools
import json
import re
import time
from typing import Any

import httpx
import pytest
from helpers import FakeClock, FakeHindsight, RequestRecorder

from hindsight_magic._api.client import HindsightClient, Timeouts
from hindsight_magic._api.replies import MentalModelReply, ModelHistoryItem
from hindsight_magic._errors import HindsightError
from hindsight_magic._memory import mental_models as mm
from hindsight_magic._memory.mental_models import MentalModel, render_block, resolve_seeds
from hindsight_magic._memory.scope import compute_scope
from hindsight_magic._settings import HindsightSettings
from hindsight_magic.testing import Driver

URL = "http://hindsight.test"


def model(name: str, content: str = "x", refreshed: str | None = None) -> MentalModel:
    return MentalModel(name.lower(), name, content=content, last_refreshed_at=refreshed)


# -- seeds -------------------------------------------------------------------------------------


def test_global_scope_gets_only_the_untagged_user_preferences() -> None:
    seeds = resolve_seeds(compute_scope("global", "jupyter", "", "churn"))
    assert [(s.id, s.tags, s.legacy_ids) for s in seeds] == [("user-preferences", (), ())]
    assert seeds[0].max_tokens == 600
    assert seeds[0].trigger == {"mode": "delta", "refresh_after_consolidation": True}


def test_per_project_scope_keeps_bare_ids_and_no_tags() -> None:
    seeds = resolve_seeds(compute_scope("per-project", "jupyter", "", "churn"))
    assert [(s.id, s.tags, s.legacy_ids, s.max_tokens) for s in seeds] == [
        ("user-preferences", (), (), 600),
        ("project-conventions", (), (), 800),
        ("project-decisions", (), (), 800),
    ]


def test_tagged_scope_suffixes_project_seeds_and_keeps_legacy_ids() -> None:
    seeds = resolve_seeds(compute_scope("per-project-tagged", "jupyter", "", "churn"))
    assert [(s.id, s.tags, s.legacy_ids) for s in seeds] == [
        ("user-preferences", (), ()),
        ("project-conventions-churn", ("project:churn",), ("project-conventions",)),
        ("project-decisions-churn", ("project:churn",), ("project-decisions",)),
    ]
    assert all(s.trigger["refresh_after_consolidation"] is True for s in seeds)


@pytest.mark.parametrize(
    ("label", "suffix"),
    [("My Repo.v2", "My-Repo.v2"), ("a//b__c", "a-b__c"), ("  ??  ", "project"), ("-x-", "x")],
)
def test_project_suffix_is_sanitised(label: str, suffix: str) -> None:
    seeds = resolve_seeds(compute_scope("per-project-tagged", "jupyter", "", label))
    assert seeds[1].id == f"project-conventions-{suffix}"
    assert seeds[1].tags == (f"project:{label}",)


def test_seed_queries_are_about_notebook_work() -> None:
    text = " ".join(seed.source_query for seed in mm.SEEDS).lower()
    for word in ("dataset", "notebook", "methods", "decisions", "conventions"):
        assert word in text
    for agent_word in ("pull request", " pr ", "coding agent", "code review"):
        assert agent_word not in text


def test_existence_by_id_or_legacy_id_with_the_same_tags() -> None:
    seed = resolve_seeds(compute_scope("per-project-tagged", "jupyter", "", "churn"))[1]
    assert mm.seed_exists(seed, [MentalModel("project-conventions-churn", "X")])
    legacy_same = MentalModel("project-conventions", "X", tags=("project:churn",))
    assert mm.seed_exists(seed, [legacy_same])
    legacy_other = MentalModel("project-conventions", "X", tags=("project:other",))
    assert not mm.seed_exists(seed, [legacy_other])
    legacy_untagged = MentalModel("project-conventions", "X")
    assert not mm.seed_exists(seed, [legacy_untagged])
    assert not mm.seed_exists(seed, [MentalModel("user-preferences", "X")])


def test_ensure_seeds_creates_only_missing_models_and_never_edits() -> None:
    fake = FakeHindsight()
    fake.banks["b"] = {}
    fake.add("b", "project-conventions", "Edited by hand", tags=("project:churn",))
    seeds = resolve_seeds(compute_scope("per-project-tagged", "b", "", "churn"))
    outcome = mm.ensure_seeds(fake.client(), "b", seeds)
    assert outcome.created == ["user-preferences", "project-decisions-churn"]
    assert outcome.present == ["project-conventions-churn"]
    listing = fake.calls("GET", "/mental-models$")
    assert listing[0][2] == {"detail": "metadata"}
    bodies = {body["id"]: body for _, _, _, body in fake.calls("POST", "/mental-models$")}
    assert "tags" not in bodies["user-preferences"]
    assert bodies["project-decisions-churn"]["tags"] == ["project:churn"]
    assert bodies["project-decisions-churn"]["max_tokens"] == 800
    assert bodies["user-preferences"]["trigger"] == mm.AUTO_REFRESH
    assert not [r for r in fake.requests if r[0] in ("PATCH", "DELETE", "PUT")]
    assert fake.banks["b"]["project-conventions"]["name"] == "Edited by hand"


def test_ensure_seeds_reports_create_failures_and_raises_on_list_failure() -> None:
    fake = FakeHindsight()
    fake.banks["b"] = {}
    fake.fail["POST /mental-models$"] = (422, {"detail": "bad seed"})
    outcome = mm.ensure_seeds(
        fake.client(), "b", resolve_seeds(compute_scope("global", "b", "", "x"))
    )
    assert outcome.failed == [("user-preferences", "createMentalModel failed: bad seed")]
    fake.fail["GET /mental-models$"] = (500, {"detail": "db down"})
    with pytest.raises(HindsightError, match="listMentalModels failed: db down"):
        mm.ensure_seeds(fake.client(), "b", resolve_seeds(compute_scope("global", "b", "", "x")))


# -- rendering ---------------------------------------------------------------------------------


def test_render_exact_block_sorted_by_name() -> None:
    models = [model("beta", "  second  "), model("Alpha", "first", refreshed="2026-01-02")]
    assert render_block(models, 16_000) == (
        "<mental_models>\n" + mm.PREAMBLE + "\n\n"
        "# Alpha _(refreshed 2026-01-02)_\nfirst\n\n# beta\nsecond\n</mental_models>"
    )


def test_render_is_empty_below_the_minimum_budget_or_without_content() -> None:
    models = [model("A", "content")]
    minimum = mm.CLEAN_OVERHEAD + mm.MIN_CONTENT_ROOM
    assert render_block(models, minimum - 1) == ""
    assert render_block(models, minimum).startswith("<mental_models>")
    assert render_block([model("A", "   ")], 16_000) == ""
    assert render_block([], 16_000) == ""


@pytest.mark.parametrize("budget", [400, 437, 520, 700, 1_000, 2_500, 16_000])
@pytest.mark.parametrize("count", [1, 3, 12])
def test_render_never_exceeds_the_budget(budget: int, count: int) -> None:
    models = [model(f"Model {i:02d} " + "n" * 40, "word " * 900) for i in range(count)]
    block = render_block(models, budget)
    assert len(block) <= budget
    if block:
        assert block.startswith("<mental_models>\n" + mm.PREAMBLE)
        assert block.endswith("\n</mental_models>")


def test_each_model_gets_at_least_120_chars_and_cuts_are_marked() -> None:
    models = [model(f"M{i}", str(i) * 1_000) for i in range(10)]
    budget = mm.TRUNCATED_OVERHEAD + 700  # 700 // 10 = 70 < 120: the floor applies
    block = render_block(models, budget)
    assert len(block) <= budget
    assert "# M0\n" + "0" * 119 + "…" in block  # the first section is always kept, 120 chars
    assert block.endswith(mm.TRUNCATION_MARKER + "\n</mental_models>")
    assert "# M9" not in block


def test_sections_are_cut_per_model_without_the_marker_when_all_fit() -> None:
    models = [model("A", "a" * 5_000), model("B", "b" * 10)]
    block = render_block(models, 3_000)
    inner = 3_000 - mm.TRUNCATED_OVERHEAD
    assert "a" * (inner // 2 - 1) + "…" in block
    assert "# B\nbbbbbbbbbb" in block
    assert mm.TRUNCATION_MARKER not in block


def test_inventory_line() -> None:
    tagged = MentalModel(
        "p-x", "Proj", tags=("project:x", "team"), last_refreshed_at="2026-03-04T05:06:07Z"
    )
    assert (
        mm.inventory_line(tagged)
        == "- p-x: Proj [project:x, team] (refreshed 2026-03-04 05:06 UTC)"
    )
    assert mm.inventory_line(MentalModel("u", "User")) == "- u: User (never refreshed)"


def test_visibility_by_recall_tags() -> None:
    assert mm.visible(MentalModel("a", "A"), ("project:x",))
    assert mm.visible(MentalModel("a", "A", tags=("project:y",)), None)
    assert mm.visible(MentalModel("a", "A", tags=("project:x", "t")), ("project:x",))
    assert not mm.visible(MentalModel("a", "A", tags=("project:y",)), ("project:x",))


# -- client ------------------------------------------------------------------------------------


def recording(status: int = 200, reply: Any = None) -> tuple[HindsightClient, list[httpx.Request]]:
    recorder = RequestRecorder(httpx.Response(status, json={} if reply is None else reply))
    client = HindsightClient(
        URL, None, Timeouts(1, 1, 1, 1), transport=httpx.MockTransport(recorder)
    )
    return client, recorder.requests


def test_client_paths_and_detail_query() -> None:
    client, seen = recording(reply={"id": "one", "items": [{"id": "m"}]})
    assert [model.id for model in client.list_mental_models("my bank")] == ["m"]
    assert client.get_mental_model("b", "a/b", detail="full") == MentalModelReply(id="one")
    client.refresh_mental_model("b", "m1")
    client.create_mental_model("b", "N", "q?", model_id="m1", tags=["t"], max_tokens=600)
    assert client.delete_mental_model("b", "m1") is True
    client.mental_model_history("b", "m1")
    shown = [(r.method, r.url.raw_path.decode(), r.content) for r in seen]
    assert shown[0] == ("GET", "/v1/default/banks/my%20bank/mental-models?detail=content", b"")
    assert shown[1] == ("GET", "/v1/default/banks/b/mental-models/a%2Fb?detail=full", b"")
    assert shown[2] == ("POST", "/v1/default/banks/b/mental-models/m1/refresh", b"")
    assert shown[3][:2] == ("POST", "/v1/default/banks/b/mental-models")
    assert json.loads(shown[3][2]) == {
        "name": "N", "source_query": "q?", "id": "m1", "tags": ["t"], "max_tokens": 600
    }  # fmt: skip
    assert shown[4][:2] == ("DELETE", "/v1/default/banks/b/mental-models/m1")
    assert shown[5][:2] == ("GET", "/v1/default/banks/b/mental-models/m1/history")


def test_client_404s_mean_missing() -> None:
    client, _ = recording(404, {"detail": "Mental model 'x' not found"})
    assert client.get_mental_model("b", "x") is None
    assert client.delete_mental_model("b", "x") is False
    assert client.list_mental_models("b") == []  # a bank that does not exist yet
    with pytest.raises(HindsightError, match="getMentalModelHistory failed: Mental model 'x'"):
        client.mental_model_history("b", "x")


@pytest.mark.parametrize(
    ("call", "operation"),
    [
        (lambda c: c.list_mental_models("b"), "listMentalModels"),
        (lambda c: c.get_mental_model("b", "m"), "getMentalModel"),
        (lambda c: c.create_mental_model("b", "n", "q"), "createMentalModel"),
        (lambda c: c.refresh_mental_model("b", "m"), "refreshMentalModel"),
        (lambda c: c.delete_mental_model("b", "m"), "deleteMentalModel"),
        (lambda c: c.mental_model_history("b", "m"), "getMentalModelHistory"),
    ],
)
def test_client_errors_name_the_operation(call: Any, operation: str) -> None:
    client, _ = recording(500, {"detail": "boom"})
    with pytest.raises(HindsightError, match=f"^{operation} failed: boom$"):
        call(client)


def test_history_accepts_a_list_or_items() -> None:
    entry = {"previous_content": "a", "changed_at": "2026-01-01T00:00:00Z"}
    change = [ModelHistoryItem(previous_content="a", changed_at="2026-01-01T00:00:00Z")]
    assert recording(reply=[entry])[0].mental_model_history("b", "m") == change
    assert recording(reply={"items": [entry]})[0].mental_model_history("b", "m") == change


# -- the cache ---------------------------------------------------------------------------------


@pytest.fixture
def make_session(make_session: Any) -> Any:
    """The shared ``make_session`` with mental models on and the project's auto-retain."""
    return functools.partial(make_session, mental_models=True, auto_retain=True)


def cache_of(session: Any) -> Any:
    """The session's mental-model cache (a private reach), for the tests of what no public
    read shows: when it lists again (its ``load`` among the worker's scheduled jobs) and the
    names it hands the session's other parts. Everything else reads ``Session.status()``."""
    from hindsight_magic._session import PARTS

    return PARTS[id(session)].mental_models


def models_status(session: Any) -> Any:
    """What ``%hindsight status`` shows of the mental models, without asking the server:
    ``model_rows`` (the report's lines) and ``models`` (those shown, with content)."""
    return session.status(check_server=False, wait_models=False)


def test_first_load_ensures_bank_seeds_then_lists_content(fake: FakeHindsight, make_session: Any):
    fake.banks["nb"] = {}  # on the server, without models
    session = make_session()
    driver = Driver(session)
    assert not driver.models_loaded(0.05)  # the worker has not run yet
    assert models_status(session).model_rows[0] == ("state", "loading")
    driver.pump()
    assert driver.models_loaded()
    methods = [(m, p.rsplit("/", 1)[-1], q.get("detail")) for m, p, q, _ in fake.requests]
    assert methods[0] == ("GET", "stats", None)  # is the bank there?
    assert methods[1] == ("PUT", "nb", None)
    assert methods[2] == ("GET", "mental-models", "metadata")
    assert methods[-1] == ("GET", "mental-models", "content")
    seeded = {"user-preferences", "project-conventions-churn", "project-decisions-churn"}
    assert set(fake.banks["nb"]) == seeded
    assert models_status(session).models == ()  # seeds have no content yet
    assert session.prompt_context() == ""


def test_a_bank_not_on_the_server_is_created_and_seeded_by_the_first_retain_only(
    fake: FakeHindsight, make_session: Any
) -> None:
    session = make_session()
    driver = Driver(session)
    driver.pump()
    assert driver.models_loaded()
    assert "nb" not in fake.banks  # looked at, not created
    assert not fake.calls("PUT")
    assert not fake.calls("POST", "mental-models")
    session.retain("The churn cut-off is 6 months.")
    driver.request_flush()
    assert driver.pump() == 1  # the batch: its bank is made first, then the seeds are due
    driver.run_due_jobs()
    assert set(fake.banks["nb"]) == {
        "user-preferences", "project-conventions-churn", "project-decisions-churn"
    }  # fmt: skip


def test_cache_keeps_visible_models_with_content_and_renders_them(
    fake: FakeHindsight, make_session: Any
):
    fake.banks["nb"] = {}
    fake.add("nb", "mine", "Mine", "ours", tags=("project:churn",))
    fake.add("nb", "theirs", "Theirs", "not ours", tags=("project:other",))
    fake.add("nb", "shared", "Shared", "everyone")
    fake.add("nb", "empty", "Empty", "  ")
    session = make_session(mental_model_auto_seed=False)
    driver = Driver(session)
    driver.pump()
    assert [m.id for m in models_status(session).models] == ["mine", "shared"]
    block = session.prompt_context()
    assert "# Mine" in block
    assert "# Shared" in block
    assert "Theirs" not in block
    assert not fake.calls("POST")  # auto-seed off: nothing created
    rows = dict(models_status(session).model_rows)
    # status lists what %hindsight models lists for this scope, content or not
    assert re.fullmatch(r"ok, 3 models listed at [\d:]{8} \(1 without content yet\)", rows["state"])
    assert rows["models"] == "empty (empty), mine, shared"
    assert cache_of(session).names() == {
        "empty": "Empty",
        "mine": "Mine",
        "shared": "Shared",
    }


def test_seeding_lists_again_soon_so_content_shows_within_seconds(
    fake: FakeHindsight, make_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight_magic._memory import mental_models as cache_module

    clock = FakeClock()
    monkeypatch.setattr(cache_module, "time", clock)
    fake.banks["nb"] = {}  # on the server
    session = make_session()
    driver = Driver(session)
    cache = cache_of(session)
    driver.pump()  # the first load: seeds the bank, lists three empty models
    assert dict(cache.status_rows())["models"] == (
        "project-conventions-churn (empty), project-decisions-churn (empty), "
        "user-preferences (empty)"
    )
    assert cache.load in driver.scheduled()  # a re-list is due soon, not in 300 s
    fake.banks["nb"]["user-preferences"]["content"] = "Prefers polars."
    cache.load()  # what the worker runs when it is due
    rows = dict(cache.status_rows())
    assert rows["state"].endswith("(2 without content yet)")
    assert [m.id for m in cache.models] == ["user-preferences"]
    for model in fake.banks["nb"].values():
        model["content"] = "Written by the server."
    cache.load()
    assert "without content" not in dict(cache.status_rows())["state"]
    driver.cancel(cache.load)  # what was scheduled ran
    clock.advance(cache_module.SETTLE_FOR_S + 1)
    cache.load()  # the settling time over: back to the mental_model_refresh_s cadence
    assert cache.load not in driver.scheduled()


def test_a_reload_lists_again_soon_for_a_while(
    fake: FakeHindsight, make_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight_magic._memory import mental_models as cache_module

    clock = FakeClock()
    monkeypatch.setattr(cache_module, "time", clock)
    session = make_session()
    driver = Driver(session)
    cache = cache_of(session)
    driver.pump()
    clock.advance(cache_module.SETTLE_FOR_S + 1)
    driver.cancel(cache.load)
    cache.load()
    assert cache.load not in driver.scheduled()
    cache.reload(clear=False)  # e.g. %hindsight models refresh: the server rewrites content
    driver.run_due_jobs()
    assert cache.load in driver.scheduled()


def test_second_load_creates_nothing_and_reuses_the_ensured_bank(
    fake: FakeHindsight, make_session: Any
):
    fake.banks["nb"] = {}  # on the server
    session = make_session()
    driver = Driver(session)
    driver.pump()
    created = len(fake.calls("POST"))
    session.reload_models(wait=False)  # %hindsight models refresh
    driver.pump()
    assert len(fake.calls("POST")) == created == 3
    assert len(fake.calls("GET", "mental-models$")) == 3  # metadata once, content twice


def test_failed_list_is_recorded_and_the_block_is_empty(fake: FakeHindsight, make_session: Any):
    fake.banks["nb"] = {}  # on the server
    fake.fail["GET /mental-models$"] = (500, {"detail": "db down"})
    session = make_session()
    driver = Driver(session)
    driver.pump()
    assert driver.models_loaded()
    state = dict(models_status(session).model_rows)["state"]
    assert state == "unavailable: listMentalModels failed: db down"
    assert session.prompt_context() == ""
    del fake.fail["GET /mental-models$"]  # the server recovers: the next load seeds and lists
    session.reload_models(wait=False)
    driver.pump()
    assert dict(models_status(session).model_rows)["state"].startswith("ok")
    assert len(fake.calls("POST")) == 3


def test_disabled_means_no_requests(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session(mental_models=False)
    driver = Driver(session)
    driver.pump()
    assert fake.requests == []
    assert driver.models_loaded()
    assert session.prompt_context() == ""
    assert models_status(session).model_rows == (("state", "disabled (mental_models = false)"),)


def test_scope_change_reloads_for_the_new_bank(fake: FakeHindsight, make_session: Any) -> None:
    fake.banks["other"] = {}
    fake.add("other", "o", "Other bank model", "hello")
    session = make_session(mental_model_auto_seed=False)
    driver = Driver(session)
    driver.pump()
    assert models_status(session).models == ()
    session.settings.bank_id = "other"
    assert not driver.models_loaded()  # old snapshot dropped
    driver.pump()
    assert [m.id for m in models_status(session).models] == ["o"]  # on bank other only


def test_loads_repeat_every_refresh_interval(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session(mental_model_refresh_s=0.05, mental_model_auto_seed=False)
    driver = Driver(session)
    driver.pump()
    assert len(fake.calls("GET", "mental-models$")) == 1
    time.sleep(0.06)
    driver.pump()
    assert len(fake.calls("GET", "mental-models$")) == 2


# -- what the user asks of the bank --------------------------------------------------------------


def test_operations_return_data_without_ipython(
    fake: FakeHindsight, make_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mm, "REFRESH_SETTLE_S", 0.0)
    fake.banks["nb"] = {}
    fake.add("nb", "zeta", "Zeta", "z")
    fake.add("nb", "auto", "Auto", "")
    fake.add("nb", "curated", "Curated", "by hand", auto=False)
    session = make_session(mental_model_auto_seed=False)
    assert [m.id for m in session.list_models()] == ["auto", "curated", "zeta"]
    zeta = MentalModelReply.model_validate(fake.banks["nb"]["zeta"])
    assert session.model("zeta") == MentalModel.from_reply(zeta)
    assert session.model("nope") is None
    assert session.refresh_model("curated") == "op"  # the refresh operation, to follow
    assert session.refresh_model("nope") is None
    fake.fail["POST /zeta/refresh$"] = (500, {"detail": "llm down"})
    outcome = session.refresh_auto_models()
    assert (outcome.queued, outcome.curated) == (["auto"], 1)
    assert outcome.failed == [("zeta", "refreshMentalModel failed: llm down")]
    assert session.delete_model("zeta") is True
    assert session.delete_model("zeta") is False
    assert "zeta" not in fake.banks["nb"]


def test_seed_creates_what_the_scope_lacks_and_history_pairs_each_change(
    fake: FakeHindsight, make_session: Any
) -> None:
    session = make_session(mental_model_auto_seed=False)
    outcome = session.seed_models()
    assert outcome is not None
    assert len(outcome.created) == 3
    assert session.seed_models().present == outcome.created  # type: ignore[union-attr]
    assert fake.calls("PUT")  # the bank was ensured first
    fake.banks["nb"]["user-preferences"]["content"] = "v3"
    fake.history[("nb", "user-preferences")] = [
        {"previous_content": "v2", "changed_at": "2026-05-06T07:08:09Z"},
        {"previous_content": None, "changed_at": None},
    ]
    assert session.model_history("user-preferences") == [
        mm.ModelChange("2026-05-06T07:08:09Z", "v2", "v3"),
        mm.ModelChange(None, "", "v2"),
    ]
    assert session.model_history("nope") is None


def test_a_list_of_memories_is_marked_as_a_list_in_the_prompt_block() -> None:
    """Without an LLM a model lists memories: the block says so beside its name, so the
    LLM that reads it is not told a summary was written."""
    listed = MentalModel(
        "p", "Prefs", content="- Ana likes seaborn — a.ipynb · cell 3", listing=True
    )
    summary = MentalModel("s", "Sites", content="Only two sites.")
    block = render_block([listed, summary], 2000)
    assert f"# Prefs _({mm.LISTING})_\n- Ana likes seaborn — a.ipynb · cell 3" in block
    assert "# Sites\nOnly two sites." in block
    assert mm.inventory_line(listed).endswith(
        "(never refreshed; a list of memories, no LLM summary)"
    )


def test_a_server_elsewhere_whose_models_say_mock_response_lists_memories_instead(
    fake: FakeHindsight,
) -> None:
    """Nothing on this machine records the server's LLM: a model whose content is the mock's
    text shows the memories its question finds, found again only when memory changed."""
    fake.add("nb", "prefs", "Prefs", "mock response\n")
    asked: list[tuple[str, int]] = []

    def find(query: str, count: int, tokens: int) -> list[Any]:
        from hindsight_magic._memory.parsed_replies import RecalledMemory

        asked.append((query, count))
        meta = {"notebook": "/w/plots.ipynb", "retain_cell": "3"}
        when = "2026-12-03T18:00:00+00:00"
        return [RecalledMemory(text="Ana likes seaborn.", metadata=meta, mentioned_at=when)]

    stats = {"total_nodes": 1, "total_documents": 1, "last_memory_write_at": "t1"}
    fake.fail["GET /nb/stats$"] = (200, stats)
    fake.fail["GET /nb/memories/list$"] = (200, {"items": [{}], "total": 1})
    settings = HindsightSettings(
        api_url=fake.url, bank_id="nb", scoping="global", mental_model_auto_seed=False
    )
    cache = mm.MentalModelCache(
        settings,
        _connection(fake),
        lambda: compute_scope("global", "nb", "", "x"),
        _Never(),
        find=find,
    )
    cache.load()
    [model] = cache.models
    assert model.listing
    assert model.content == "- Ana likes seaborn. — plots.ipynb · cell 3 · 2026-12-03 18:00 UTC"
    assert asked == [("about Prefs", mm.LISTING_POOL)]
    cache.load()  # memory unchanged: not asked again
    assert len(asked) == 1
    cache.memory_changed()  # the session sent a memory: found again
    cache.load()
    assert len(asked) == 2
    assert "mock response" not in cache.block()


def test_without_an_llm_a_model_lists_what_states_something() -> None:
    """Retained on purpose first, then notes, then cells that say something in words; never
    a bare print, a value shown, a huge value or a plan."""
    from hindsight_magic._memory.parsed_replies import RecalledMemory

    def memory(text: str, source: str = "autoretain") -> Any:
        return RecalledMemory(text=text, metadata={"source": source})

    found = [  # as a recall ranked them
        memory('[cell 2]\nprint("before")\n[output]\nbefore', "autoretain"),
        memory("[cell 4]\nbig = 'x' * 2_000_000\nbig\n[result]\n'" + "x" * 998 + "'"),
        memory("[cell 5]\n# plan for next week: try boosting, ask Ana\nplans = []"),
        memory("[cell 8]\nHOLDOUT = 0.2  # decided: hold out a fifth, by signup month"),
        memory("[cell 9]\nr = list(range(5))\nprint(len(r))\n[output]\n5"),
        memory("[cell 3]\nimport pandas as pd"),
        memory("[cell 10]\n# why is churn up?\nchurn.mean()\n[result]\n0.31"),
        memory("Agent: the refunds table double-counts Q3.", "agent"),
        memory("The standard annealing temperature is 0.7.", "python api"),
        memory("Decision: the tenure cut-off is 6 months.", "%retain"),
    ]
    assert [m.text for m in mm.listed(found)] == [
        "The standard annealing temperature is 0.7.",
        "Decision: the tenure cut-off is 6 months.",
        "Agent: the refunds table double-counts Q3.",
        "[cell 8]\nHOLDOUT = 0.2  # decided: hold out a fifth, by signup month",
    ]
    assert len(mm.listed(found * 3)) == mm.LISTED_MEMORIES


class _Never:
    def submit(self, job: Any, delay_s: float = 0.0) -> bool:
        return True


def _connection(fake: FakeHindsight) -> Any:
    from hindsight_magic._api.client import Connection

    return Connection(fake.url, None, Timeouts(1, 1, 1, 1), fake.transport)
