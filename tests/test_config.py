"""Settings: defaults, environment parsing, precedence, validation messages and secrecy."""

from __future__ import annotations

from typing import Any

import pytest

from hindsight_magic.settings import (
    CONFIGURABLE_NAMES,
    SETTING_NAMES,
    Secret,
    SettingsError,
    build_settings,
    coerce_value,
    env_name,
    parse_env,
)

SECRET = "sk-top-secret-value-42"


def one_line(error: pytest.ExceptionInfo[SettingsError]) -> str:
    message = str(error.value)
    assert "\n" not in message
    assert message
    return message


# -- defaults -------------------------------------------------------------------------------------


def test_defaults_match_the_design() -> None:
    s = build_settings(env={})
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
    assert s.recall_budget == "mid"
    assert s.recall_max_tokens == 1024
    assert s.recall_types == ("world", "experience")
    assert s.request_timeout_ms == 30_000
    assert s.retain_timeout_ms == 60_000
    assert s.recall_timeout_ms == 30_000
    assert s.reflect_timeout_ms == 120_000
    assert s.mental_models is True
    assert s.mental_model_auto_seed is True
    assert s.mental_model_refresh_s == 300
    assert s.mental_model_max_render_chars == 16_000
    assert s.debug is False


def test_settings_are_frozen_and_reject_unknown_names() -> None:
    s = build_settings(env={})
    with pytest.raises(Exception):  # noqa: B017, PT011 - pydantic's frozen-instance error
        s.bank_id = "other"  # type: ignore[misc]
    with pytest.raises(SettingsError) as info:
        build_settings({"no_such_setting": 1}, env={})
    assert "no_such_setting" in one_line(info)


def test_env_names_and_configurable_names() -> None:
    assert env_name("retain_every_n_cells") == "HINDSIGHT_RETAIN_EVERY_N_CELLS"
    assert env_name("api_url") == "HINDSIGHT_API_URL"
    assert "api_key" in SETTING_NAMES
    assert "api_key" not in CONFIGURABLE_NAMES
    assert "bank_id" in CONFIGURABLE_NAMES


# -- precedence -----------------------------------------------------------------------------------


def test_env_overrides_defaults() -> None:
    env = {
        "HINDSIGHT_BANK_ID": "env-bank",
        "HINDSIGHT_SCOPING": "global",
        "HINDSIGHT_RECALL_MAX_TOKENS": "77",
        "HINDSIGHT_RECALL_TIMEOUT_MS": "1500",
        "HINDSIGHT_API_URL": "http://example.test:9000/",
        "HINDSIGHT_RECALL_TYPES": "world, observation ,",
        "HINDSIGHT_AUTO_RETAIN": "off",
    }
    s = build_settings(env=env)
    assert s.bank_id == "env-bank"
    assert s.scoping == "global"
    assert s.recall_max_tokens == 77
    assert s.recall_timeout_ms == 1500
    assert s.api_url == "http://example.test:9000"
    assert s.recall_types == ("world", "observation")
    assert s.auto_retain is False


def test_overrides_beat_env_and_none_is_ignored() -> None:
    env = {"HINDSIGHT_BANK_ID": "env-bank", "HINDSIGHT_RECALL_BUDGET": "low"}
    s = build_settings({"bank_id": "override-bank", "recall_budget": None}, env=env)
    assert s.bank_id == "override-bank"
    assert s.recall_budget == "low"  # None did not erase the env value
    s2 = build_settings({"bank_id": None}, env={})
    assert s2.bank_id == "jupyter"  # nor the default


def test_blank_env_values_are_ignored() -> None:
    s = build_settings(env={"HINDSIGHT_BANK_ID": "   ", "HINDSIGHT_DEBUG": ""})
    assert s.bank_id == "jupyter"
    assert s.debug is False


def test_unrelated_env_vars_are_ignored() -> None:
    s = build_settings(env={"HOME": "/root", "HINDSIGHT_NOT_A_SETTING": "x", "bank_id": "y"})
    assert s.bank_id == "jupyter"


def test_real_environment_is_used_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_BANK_PREFIX", "team")
    assert build_settings().bank_prefix == "team"


# -- environment booleans -------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["true", "TRUE", "True", "1", "yes", "YeS", "on", "ON", " on "])
def test_env_true_words(word: str) -> None:
    assert build_settings(env={"HINDSIGHT_DEBUG": word}).debug is True


@pytest.mark.parametrize("word", ["false", "FALSE", "0", "no", "No", "off", "OFF"])
def test_env_false_words(word: str) -> None:
    assert build_settings(env={"HINDSIGHT_AUTO_RETAIN": word}).auto_retain is False


@pytest.mark.parametrize("word", ["maybe", "2", "enabled", "t", "y", "-1", "tru"])
def test_env_bad_boolean_is_an_error(word: str) -> None:
    with pytest.raises(SettingsError) as info:
        build_settings(env={"HINDSIGHT_AUTO_RETAIN": word})
    message = one_line(info)
    assert "HINDSIGHT_AUTO_RETAIN" in message
    assert repr(word) in message
    assert "true" in message
    assert "false" in message


# -- the API key ----------------------------------------------------------------------------------


def test_api_key_from_env_and_token_alias() -> None:
    assert build_settings(env={"HINDSIGHT_API_KEY": SECRET}).key() == SECRET
    assert build_settings(env={"HINDSIGHT_API_TOKEN": SECRET}).key() == SECRET
    both = {"HINDSIGHT_API_KEY": "from-key", "HINDSIGHT_API_TOKEN": "from-token"}
    assert build_settings(env=both).key() == "from-key"
    blank_key = {"HINDSIGHT_API_KEY": "  ", "HINDSIGHT_API_TOKEN": "from-token"}
    assert build_settings(env=blank_key).key() == "from-token"


def test_api_key_is_stripped_and_blank_is_none() -> None:
    assert build_settings(env={"HINDSIGHT_API_KEY": f"  {SECRET}\n"}).key() == SECRET
    assert build_settings({"api_key": "   "}, env={}).api_key is None


def test_key_never_shown() -> None:
    s = build_settings(env={"HINDSIGHT_API_KEY": SECRET})
    assert isinstance(s.api_key, Secret)
    assert s.key() == SECRET
    assert SECRET not in repr(s)
    assert SECRET not in str(s)
    assert SECRET not in str(s.as_dict())
    assert SECRET not in repr(s.api_key)
    assert SECRET not in str(s.api_key)
    assert SECRET not in str(s.public_items())
    assert dict(s.public_items())["api_key"] == "(set)"
    assert dict(build_settings(env={}).public_items())["api_key"] == "(not set)"


@pytest.mark.parametrize("bad", [[SECRET], {"token": SECRET}, 12345])
def test_key_never_in_error_messages(bad: Any) -> None:
    with pytest.raises(SettingsError) as info:
        build_settings({"api_key": bad}, env={})
    message = one_line(info)
    assert "api_key" in message
    assert SECRET not in message
    assert "12345" not in message
    with pytest.raises(SettingsError) as info2:
        coerce_value("api_key", bad)
    assert SECRET not in str(info2.value)
    assert "12345" not in str(info2.value)


def test_key_not_in_message_about_another_env_var() -> None:
    env = {"HINDSIGHT_API_KEY": SECRET, "HINDSIGHT_SCOPING": "nope"}
    with pytest.raises(SettingsError) as info:
        build_settings(env=env)
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
    env_var: str, value: str, allowed: str
) -> None:
    with pytest.raises(SettingsError) as info:
        build_settings(env={env_var: value})
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
def test_invalid_values_name_the_setting_and_value(name: str, value: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as info:
        coerce_value(name, value)
    message = one_line(info)
    assert message.startswith(f"Invalid {name}={value!r}: ")
    assert allowed in message
    with pytest.raises(SettingsError) as info2:
        build_settings({name: value}, env={})
    assert one_line(info2).startswith(f"Invalid {name}={value!r}: ")


def test_settings_error_is_a_value_error() -> None:
    assert issubclass(SettingsError, ValueError)


# -- coerce_value ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [("true", True), ("On", True), (" YES ", True), ("1", True), ("off", False), ("0", False)],
)
def test_coerce_bool_words(word: str, expected: bool) -> None:
    assert coerce_value("auto_retain", word) is expected


def test_coerce_bool_native_and_bad_word() -> None:
    assert coerce_value("debug", True) is True
    assert coerce_value("debug", False) is False
    with pytest.raises(SettingsError) as info:
        coerce_value("debug", "sometimes")
    message = one_line(info)
    assert "debug" in message
    assert "'sometimes'" in message


def test_coerce_numbers() -> None:
    assert coerce_value("recall_max_tokens", "512") == 512
    assert coerce_value("retain_every_n_cells", 5) == 5
    assert coerce_value("retain_overlap_cells", "0") == 0
    assert coerce_value("mental_model_refresh_s", "2.5") == 2.5
    assert coerce_value("request_timeout_ms", "1000") == 1000


def test_coerce_strings_and_literals() -> None:
    assert coerce_value("bank_id", "  notes  ") == "notes"
    assert coerce_value("bank_prefix", " team ") == "team"
    assert coerce_value("scoping", "per-project") == "per-project"
    assert coerce_value("recall_budget", "high") == "high"
    assert coerce_value("bank_mission", "Be concise.") == "Be concise."


def test_coerce_recall_types() -> None:
    assert coerce_value("recall_types", "world, experience ,observation") == (
        "world",
        "experience",
        "observation",
    )
    assert coerce_value("recall_types", ["world"]) == ("world",)


def test_coerce_api_url() -> None:
    assert coerce_value("api_url", "http://localhost:8899/") == "http://localhost:8899"
    assert coerce_value("api_url", "https://h.example///") == "https://h.example"
    assert coerce_value("api_url", " http://h:1 ") == "http://h:1"
    assert coerce_value("api_url", "") is None
    assert coerce_value("api_url", "   ") is None
    assert coerce_value("api_url", None) is None


def test_coerce_api_key_returns_a_secret() -> None:
    value = coerce_value("api_key", SECRET)
    assert isinstance(value, Secret)
    assert value.get_secret_value() == SECRET


def test_coerce_unknown_setting_lists_the_valid_names() -> None:
    with pytest.raises(SettingsError) as info:
        coerce_value("bank", "x")
    message = one_line(info)
    assert message.startswith("Unknown setting 'bank'.")
    assert "bank_id" in message
    assert "recall_budget" in message


def test_parse_env_returns_raw_strings_and_typed_booleans() -> None:
    values = parse_env({"HINDSIGHT_BANK_ID": " b ", "HINDSIGHT_DEBUG": "yes"})
    assert values == {"bank_id": "b", "debug": True}


# -- public items ---------------------------------------------------------------------------------


def test_public_items_shows_every_setting_in_display_form() -> None:
    s = build_settings({"api_url": "http://h:1"}, env={})
    items = dict(s.public_items())
    assert list(items) == list(SETTING_NAMES)
    assert items["api_url"] == "http://h:1"
    assert items["api_key"] == "(not set)"
    assert items["recall_types"] == "world,experience"
    assert items["auto_retain"] == "True"
    assert items["recall_max_tokens"] == "1024"
    assert items["bank_prefix"] == ""
    assert all(isinstance(v, str) for v in items.values())
    assert dict(build_settings(env={}).public_items())["api_url"] == ""


@pytest.mark.parametrize("blank", ["   ", "\t"])
def test_blank_bank_id_is_rejected(blank: str) -> None:
    with pytest.raises(SettingsError) as info:
        coerce_value("bank_id", blank)
    assert "bank_id" in one_line(info)
