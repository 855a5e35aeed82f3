"""Settings: defaults, environment parsing, precedence, validation messages and secrecy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from traitlets import Bool, Enum, Float, Int, List, TraitError, Unicode

from hindsight_magic._settings import (
    Budget,
    HindsightSettings,
    RetainOutputs,
    ScopeMode,
    Secret,
    SettingsError,
)

SECRET = "sk-top-secret-value-42"


@pytest.fixture
def build(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``build(env, **values)``: settings made with exactly ``env`` as the HINDSIGHT_* variables."""

    def make(env: dict[str, str] | None = None, **values: Any) -> HindsightSettings:
        for name in HindsightSettings.environment_variables():
            monkeypatch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        return HindsightSettings(**values)

    return make


coerce_value = HindsightSettings.parse


def one_line(error: pytest.ExceptionInfo[SettingsError]) -> str:
    message = str(error.value)
    assert "\n" not in message
    assert message
    return message


# -- defaults -------------------------------------------------------------------------------------


def test_defaults_match_the_design(build: Any) -> None:
    s = build({})
    assert s.api_url is None
    assert s.api_key is None
    assert s.key() is None
    assert s.bank_id == "jupyter"
    assert s.bank_prefix == ""
    assert s.scoping == "per-project-tagged"
    assert s.bank_mission == ""
    assert s.retain_mission == ""
    assert s.auto_retain is True
    assert s.retain_every_n_cells == 3
    assert s.retain_overlap_cells == 2
    assert s.retain_mode == "full-session"
    assert s.retain_outputs == "result"
    assert s.retain_context == "jupyter"
    assert s.evidence is True
    assert s.evidence_hash_limit_mb == 8
    assert s.recall_budget == "mid"
    assert s.recall_max_tokens == 1024
    assert s.recall_types == ["world", "experience"]
    assert s.request_timeout_ms == 30_000
    assert s.retain_timeout_ms == 60_000
    assert s.recall_timeout_ms == 30_000
    assert s.reflect_timeout_ms == 120_000
    assert s.mental_models is True
    assert s.mental_model_auto_seed is True
    assert s.mental_model_refresh_s == 300
    assert s.mental_model_max_render_chars == 16_000
    assert s.debug is False


def test_settings_are_typed_traits_and_reject_unknown_names(build: Any) -> None:
    traits = HindsightSettings.class_traits(config=True)
    assert isinstance(traits["retain_every_n_cells"], Int)
    assert isinstance(traits["mental_model_refresh_s"], Float)
    assert isinstance(traits["scoping"], Enum)
    assert isinstance(traits["auto_retain"], Bool)
    assert isinstance(traits["bank_id"], Unicode)
    assert isinstance(traits["recall_types"], List)
    s = build({})
    with pytest.raises(TraitError) as trait_error:
        s.retain_every_n_cells = 0  # what %config and c.HindsightMagics go through
    assert str(trait_error.value) == (
        "Invalid retain_every_n_cells=0: Input should be greater than or equal to 1."
    )
    assert s.retain_every_n_cells == 3
    with pytest.raises(SettingsError) as info:
        s.set_setting("no_such_setting", 1)
    assert "no_such_setting" in one_line(info)


def test_a_choice_is_a_member_of_its_vocabulary_and_shows_as_its_word(build: Any) -> None:
    """Code compares a choice with a member (mypy checks the name); the user's word, from the
    environment, ``%hindsight config`` or ``%config``, is still what is accepted and shown."""
    s = build({"HINDSIGHT_SCOPING": "per-project"})
    assert s.scoping is ScopeMode.PER_PROJECT
    s.set_setting("recall_budget", "high")
    assert s.recall_budget is Budget.HIGH
    s.retain_outputs = "all"  # type: ignore[assignment]  # what %config gives
    assert s.retain_outputs is RetainOutputs.ALL
    assert s.shown("scoping") == "per-project"
    help_text = HindsightSettings.class_get_help(s)  # what %config HindsightSettings prints
    assert "Current: 'per-project'" in help_text
    assert "ScopeMode" not in help_text


def test_env_names_and_setting_names(build: Any) -> None:
    variables = HindsightSettings.environment_variables()
    assert "HINDSIGHT_RETAIN_EVERY_N_CELLS" in variables
    assert "HINDSIGHT_API_URL" in variables
    assert "HINDSIGHT_JOURNAL" in variables  # the alias of HINDSIGHT_JOURNAL_PATH
    assert "HINDSIGHT_API_TOKEN" in variables
    assert "api_key" not in HindsightSettings.setting_names()  # never a trait: %config shows traits
    assert "api_key" not in HindsightSettings.class_trait_names()
    assert "bank_id" in HindsightSettings.setting_names()


# -- precedence -----------------------------------------------------------------------------------


def test_env_overrides_defaults(build: Any) -> None:
    env = {
        "HINDSIGHT_BANK_ID": "env-bank",
        "HINDSIGHT_SCOPING": "global",
        "HINDSIGHT_RECALL_MAX_TOKENS": "77",
        "HINDSIGHT_RECALL_TIMEOUT_MS": "1500",
        "HINDSIGHT_API_URL": "http://example.test:9000/",
        "HINDSIGHT_RECALL_TYPES": "world, observation ,",
        "HINDSIGHT_AUTO_RETAIN": "off",
    }
    s = build(env)
    assert s.bank_id == "env-bank"
    assert s.scoping == "global"
    assert s.recall_max_tokens == 77
    assert s.recall_timeout_ms == 1500
    assert s.api_url == "http://example.test:9000"
    assert s.recall_types == ["world", "observation"]
    assert s.auto_retain is False


def test_values_beat_env_and_reset_returns_to_env_then_default(build: Any) -> None:
    env = {"HINDSIGHT_BANK_ID": "env-bank", "HINDSIGHT_RECALL_BUDGET": "low"}
    s = build(env, bank_id="override-bank")
    assert s.bank_id == "override-bank"
    assert s.source("bank_id") == "argument"
    assert s.recall_budget == "low"
    assert s.source("recall_budget") == "env HINDSIGHT_RECALL_BUDGET"
    s.set_setting("bank_id", None)  # %hindsight config bank_id=
    assert s.bank_id == "env-bank"
    assert s.source("bank_id") == "env HINDSIGHT_BANK_ID"
    assert build({}).source("bank_id") == "default"


def test_the_source_names_how_a_value_was_set(build: Any) -> None:
    s = build({"HINDSIGHT_JOURNAL": "off", "HINDSIGHT_API_TOKEN": "sk-live-SECRET-123"})
    assert s.source("journal_path") == "env HINDSIGHT_JOURNAL"  # the alias, named as set
    assert s.source("api_key") == "env HINDSIGHT_API_TOKEN"
    assert build({}).source("api_key") == "default"
    s.set_setting("retain_every_n_cells", "4")
    assert s.source("retain_every_n_cells") == "%hindsight config"
    s.retain_every_n_cells = 5  # what %config does once the extension is loaded
    assert s.source("retain_every_n_cells") == "%config"
    s.set_setting("retain_every_n_cells", None)
    assert s.source("retain_every_n_cells") == "default"
    from traitlets.config import Config

    config = Config()
    config.HindsightSettings.bank_prefix = "team"  # c.HindsightMagics.* in ipython_config.py
    assert HindsightSettings(config=config).source("bank_prefix") == "IPython config"


def test_blank_env_values_are_ignored(build: Any) -> None:
    s = build({"HINDSIGHT_BANK_ID": "   ", "HINDSIGHT_DEBUG": ""})
    assert s.bank_id == "jupyter"
    assert s.debug is False


def test_unrelated_env_vars_are_ignored(build: Any) -> None:
    s = build({"HOME": "/root", "HINDSIGHT_NOT_A_SETTING": "x", "bank_id": "y"})
    assert s.bank_id == "jupyter"


def test_the_environment_is_read_once_when_the_settings_are_made(
    build: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = build({"HINDSIGHT_RETAIN_MODE": "last-cells"})
    monkeypatch.setenv("HINDSIGHT_RETAIN_MODE", "full-session")
    monkeypatch.setenv("HINDSIGHT_BANK_ID", "later")
    assert s.retain_mode == "last-cells"  # not re-read later, on whichever thread reads first
    assert s.bank_id == "jupyter"


def test_real_environment_is_used_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_BANK_PREFIX", "team")
    assert HindsightSettings().bank_prefix == "team"


# -- environment booleans -------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["true", "TRUE", "True", "1", "yes", "YeS", "on", "ON", " on "])
def test_env_true_words(build: Any, word: str) -> None:
    assert build({"HINDSIGHT_DEBUG": word}).debug is True


@pytest.mark.parametrize("word", ["false", "FALSE", "0", "no", "No", "off", "OFF"])
def test_env_false_words(build: Any, word: str) -> None:
    assert build({"HINDSIGHT_AUTO_RETAIN": word}).auto_retain is False


@pytest.mark.parametrize("word", ["maybe", "2", "enabled", "t", "y", "-1", "tru"])
def test_env_bad_boolean_is_an_error(build: Any, word: str) -> None:
    with pytest.raises(SettingsError) as info:
        build({"HINDSIGHT_AUTO_RETAIN": word})
    message = one_line(info)
    assert "HINDSIGHT_AUTO_RETAIN" in message
    assert repr(word) in message
    assert "true" in message
    assert "false" in message


# -- the API key ----------------------------------------------------------------------------------


def test_api_key_from_env_and_token_alias(build: Any) -> None:
    assert build({"HINDSIGHT_API_KEY": SECRET}).key() == SECRET
    assert build({"HINDSIGHT_API_TOKEN": SECRET}).key() == SECRET
    both = {"HINDSIGHT_API_KEY": "from-key", "HINDSIGHT_API_TOKEN": "from-token"}
    assert build(both).key() == "from-key"
    blank_key = {"HINDSIGHT_API_KEY": "  ", "HINDSIGHT_API_TOKEN": "from-token"}
    assert build(blank_key).key() == "from-token"


def test_api_key_is_stripped_and_blank_is_none(build: Any) -> None:
    assert build({"HINDSIGHT_API_KEY": f"  {SECRET}\n"}).key() == SECRET
    assert build({"HINDSIGHT_API_KEY": "   "}).api_key is None


def test_key_never_shown(build: Any) -> None:
    s = build({"HINDSIGHT_API_KEY": SECRET})
    assert isinstance(s.api_key, Secret)
    assert s.key() == SECRET
    assert SECRET not in repr(s)
    assert SECRET not in str(s)
    assert SECRET not in str(s.as_dict())
    assert SECRET not in repr(s.api_key)
    assert SECRET not in str(s.api_key)
    assert SECRET not in str(s.public_items())
    assert dict(s.public_items())["api_key"] == "(set)"
    assert dict(build({}).public_items())["api_key"] == "(not set)"


@pytest.mark.parametrize("bad", [[SECRET], {"token": SECRET}, 12345])
def test_key_cannot_be_set_and_is_never_in_error_messages(build: Any, bad: Any) -> None:
    with pytest.raises(SettingsError) as info:
        build({}).set_setting("api_key", bad)
    message = one_line(info)
    assert "HINDSIGHT_API_KEY" in message
    assert SECRET not in message
    assert "12345" not in message


def test_key_not_in_message_about_another_env_var(build: Any) -> None:
    env = {"HINDSIGHT_API_KEY": SECRET, "HINDSIGHT_SCOPING": "nope"}
    with pytest.raises(SettingsError) as info:
        build(env)
    assert SECRET not in str(info.value)
    assert "HINDSIGHT_SCOPING" in str(info.value)


# -- invalid values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_var", "value", "allowed"),
    [
        ("HINDSIGHT_SCOPING", "weird", "per-project-tagged"),
        ("HINDSIGHT_RECALL_BUDGET", "HIGH", "'low', 'mid' or 'high'"),
        ("HINDSIGHT_RETAIN_MODE", "everything", "last-cells"),
        ("HINDSIGHT_RECALL_MAX_TOKENS", "abc", "integer"),
        ("HINDSIGHT_RETAIN_EVERY_N_CELLS", "0", "greater than or equal to 1"),
        ("HINDSIGHT_REQUEST_TIMEOUT_MS", "-5", "greater than 0"),
        ("HINDSIGHT_API_URL", "ftp://x", "http"),
    ],
)
def test_invalid_env_values_name_the_variable_and_value(
    build: Any, env_var: str, value: str, allowed: str
) -> None:
    with pytest.raises(SettingsError) as info:
        build({env_var: value})
    message = one_line(info)
    assert message.startswith(f"Invalid {env_var}={value!r}: ")
    assert allowed in message


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("scoping", "weird", "'global', 'per-project' or 'per-project-tagged'"),
        ("recall_budget", "max", "'low', 'mid' or 'high'"),
        ("retain_outputs", "some", "'none', 'result' or 'all'"),
        ("recall_max_tokens", "abc", "valid integer"),
        ("recall_max_tokens", "0", "greater than or equal to 1"),
        ("retain_every_n_cells", "2.5", "valid integer"),
        ("reflect_timeout_ms", "0", "greater than 0"),
        ("mental_model_refresh_s", "-1", "greater than 0"),
        ("api_url", "ftp://x", "must look like http://host:port or https://host"),
        ("api_url", "http://", "must look like http://host:port or https://host"),
        ("api_url", "localhost:8888", "must look like http://host:port or https://host"),
        ("api_url", "http://host:99999", "invalid port"),
        ("api_url", "http://host:abc", "invalid port"),
    ],
)
def test_invalid_values_name_the_setting_and_value(
    build: Any, name: str, value: str, allowed: str
) -> None:
    with pytest.raises(SettingsError) as info:
        coerce_value(name, value)
    message = one_line(info)
    assert message.startswith(f"Invalid {name}={value!r}: ")
    assert allowed in message
    with pytest.raises(SettingsError) as info2:
        build({}).set_setting(name, value)
    assert one_line(info2).startswith(f"Invalid {name}={value!r}: ")


def test_settings_error_is_a_value_error(build: Any) -> None:
    assert issubclass(SettingsError, ValueError)


# -- coerce_value ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [("true", True), ("On", True), (" YES ", True), ("1", True), ("off", False), ("0", False)],
)
def test_coerce_bool_words(build: Any, word: str, expected: bool) -> None:
    assert coerce_value("auto_retain", word) is expected


def test_coerce_bool_native_and_bad_word(build: Any) -> None:
    assert coerce_value("debug", True) is True
    assert coerce_value("debug", False) is False
    with pytest.raises(SettingsError) as info:
        coerce_value("debug", "sometimes")
    message = one_line(info)
    assert "debug" in message
    assert "'sometimes'" in message


def test_coerce_numbers(build: Any) -> None:
    assert coerce_value("recall_max_tokens", "512") == 512
    assert coerce_value("retain_every_n_cells", 5) == 5
    assert coerce_value("retain_overlap_cells", "0") == 0
    assert coerce_value("mental_model_refresh_s", "2.5") == 2.5
    assert coerce_value("request_timeout_ms", "1000") == 1000


def test_coerce_strings_and_literals(build: Any) -> None:
    assert coerce_value("bank_id", "  notes  ") == "notes"
    assert coerce_value("bank_prefix", " team ") == "team"
    assert coerce_value("scoping", "per-project") == "per-project"
    assert coerce_value("recall_budget", "high") == "high"
    assert coerce_value("bank_mission", "Be concise.") == "Be concise."


def test_coerce_recall_types(build: Any) -> None:
    assert coerce_value("recall_types", "world, experience ,observation") == [
        "world",
        "experience",
        "observation",
    ]
    assert coerce_value("recall_types", ["world"]) == ["world"]


def test_coerce_api_url(build: Any) -> None:
    assert coerce_value("api_url", "http://localhost:8899/") == "http://localhost:8899"
    assert coerce_value("api_url", "https://h.example///") == "https://h.example"
    assert coerce_value("api_url", " http://h:1 ") == "http://h:1"
    assert coerce_value("api_url", "") is None
    assert coerce_value("api_url", "   ") is None
    assert coerce_value("api_url", None) is None


def test_the_key_is_a_secret(build: Any) -> None:
    value = build({"HINDSIGHT_API_KEY": SECRET}).api_key
    assert isinstance(value, Secret)
    assert value.get_secret_value() == SECRET


def test_coerce_unknown_setting_lists_the_valid_names(build: Any) -> None:
    with pytest.raises(SettingsError) as info:
        coerce_value("bank", "x")
    message = one_line(info)
    assert message.startswith("Unknown setting 'bank'.")
    assert "bank_id" in message
    assert "recall_budget" in message


def test_env_strings_are_stripped_and_booleans_typed(build: Any) -> None:
    s = build({"HINDSIGHT_BANK_ID": " b ", "HINDSIGHT_DEBUG": "yes"})
    assert (s.bank_id, s.debug) == ("b", True)


# -- public items ---------------------------------------------------------------------------------


def test_public_items_shows_every_setting_in_display_form(build: Any) -> None:
    s = build({}, api_url="http://h:1")
    items = dict(s.public_items())
    assert set(items) == {"api_key", *HindsightSettings.setting_names()}
    assert items["api_url"] == "http://h:1"
    assert items["api_key"] == "(not set)"
    assert items["recall_types"] == "world,experience"
    assert items["auto_retain"] == "True"
    assert items["recall_max_tokens"] == "1024"
    assert items["bank_prefix"] == ""
    assert all(isinstance(v, str) for v in items.values())
    assert dict(build({}).public_items())["api_url"] == ""


@pytest.mark.parametrize("blank", ["   ", "\t"])
def test_blank_bank_id_is_rejected(build: Any, blank: str) -> None:
    with pytest.raises(SettingsError) as info:
        coerce_value("bank_id", blank)
    assert "bank_id" in one_line(info)


@pytest.mark.parametrize(
    "bad",
    ["a/b", "../../etc", "x?y=1", "a#b", "50%", "back\\slash", "_meta", "..", ".", "tab\there"],
)
def test_a_bank_id_that_cannot_travel_in_a_url_is_refused(build: Any, bad: str) -> None:
    with pytest.raises(SettingsError, match=r"Invalid bank_id=.*not starting with '_'"):
        build().set_setting("bank_id", bad)


def test_a_bank_id_is_at_most_192_bytes(build: Any) -> None:
    settings = build()
    settings.set_setting("bank_id", "é" * 96)  # 192 bytes
    with pytest.raises(SettingsError, match="1-192 bytes"):
        settings.set_setting("bank_id", "é" * 97)


@pytest.mark.parametrize("good", ["analytics", "team.a-b:c", "Équipe 2", "日本語"])
def test_bank_ids_the_server_takes_are_accepted(build: Any, good: str) -> None:
    settings = build()
    settings.set_setting("bank_id", good)
    settings.set_setting("bank_prefix", good)
    assert (settings.bank_id, settings.bank_prefix) == (good, good)


def test_a_bad_bank_id_in_the_environment_is_refused_at_load(build: Any) -> None:
    with pytest.raises(SettingsError, match="Invalid HINDSIGHT_BANK_PREFIX='a/b'"):
        build({"HINDSIGHT_BANK_PREFIX": "a/b"})


def test_settings_like_a_kernel_read_the_profiles_config_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight_magic._settings import settings_like_a_kernel

    monkeypatch.delenv("HINDSIGHT_BANK_ID", raising=False)
    (tmp_path / "ipython_config.py").write_text(
        "c.HindsightMagics.bank_id = 'from-config'\nc.HindsightMagics.recall_budget = 'high'\n"
    )
    (tmp_path / "ipython_kernel_config.py").write_text(
        "c.HindsightMagics.bank_id = 'from-kernel-config'\nc.HindsightMagics.scoping = 'sideways'\n"
    )
    lines: list[str] = []
    settings = settings_like_a_kernel(str(tmp_path), warn=lines.append)
    assert settings.bank_id == "from-kernel-config"  # the kernel's file comes last, as in a kernel
    assert settings.recall_budget == "high"
    assert settings.scoping == "per-project-tagged"  # the invalid value is left out ...
    assert len(lines) == 1  # ... with one line saying so
    assert "scoping" in lines[0]
    assert "Ignored." in lines[0]
    assert settings_like_a_kernel(str(tmp_path / "none")).bank_id == "jupyter"


def test_every_setting_says_what_its_change_rebuilds_in_words_a_session_knows() -> None:
    """A session rebuilds what a setting's ``affects`` tag names, by a table keyed on
    ``Affects``: a tag outside it would be a change nothing follows."""
    tags = {name: HindsightSettings.affects(name) for name in HindsightSettings.setting_names()}
    assert tags["api_url"] == "connection"
    assert tags["bank_id"] == "scope"
    assert tags["recall_budget"] is None  # read when used


def test_a_budget_named_in_a_call_is_a_member_and_a_wrong_one_is_one_line() -> None:
    """``hm.recall(q, budget="high")`` reaches the session as ``Budget.HIGH``; another word is
    refused as before."""
    from hindsight_magic import InputError
    from hindsight_magic._operations import RecallRequest

    assert RecallRequest("q", budget="high").budget is Budget.HIGH  # type: ignore[arg-type]
    assert RecallRequest("q").budget is None
    with pytest.raises(InputError, match=r"^Invalid budget 'max': use low, mid, high\.$"):
        RecallRequest("q", budget="max")  # type: ignore[arg-type]
