"""Settings: one pydantic model that names, types, defaults and validates every option.

Sources, lowest to highest: the built-in default, the environment (``HINDSIGHT_<NAME>``),
IPython config (``c.HindsightMagics.<name>`` / ``%config HindsightMagics.<name> = …``) and
``%hindsight config <name>=<value>`` at run time. The API key only ever comes from the
environment (``HINDSIGHT_API_KEY``, alias ``HINDSIGHT_API_TOKEN``) or an explicit call; it is a
``SecretStr`` and is never shown.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

ScopeMode = Literal["global", "per-project", "per-project-tagged"]
Budget = Literal["low", "mid", "high"]
SCOPE_MODES: tuple[str, ...] = ("global", "per-project", "per-project-tagged")
BUDGETS: tuple[str, ...] = ("low", "mid", "high")
FALLBACK_API_URL = "http://localhost:8888"
ENV_PREFIX = "HINDSIGHT_"
SECRET_FIELDS = frozenset({"api_key"})
ENV_ALIASES = {"api_key": "HINDSIGHT_API_TOKEN", "journal_path": "HINDSIGHT_JOURNAL"}
TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


class SettingsError(ValueError):
    """An invalid setting value; the message is one line naming the setting and what is allowed."""


class Settings(BaseModel):
    """Every hindsight_magic option, with its default and validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_url: str | None = Field(
        None,
        description="Hindsight server URL. Unset: a running local server, else "
        f"{FALLBACK_API_URL}.",
    )
    api_key: SecretStr | None = Field(
        None, description="API key, sent as 'Authorization: Bearer …'. Environment only."
    )
    bank_id: str = Field("jupyter", min_length=1, description="Base memory bank id.")
    bank_prefix: str = Field("", description="Optional prefix: bank becomes <prefix>-<bank>.")
    scoping: ScopeMode = Field("per-project-tagged", description="How banks/tags follow projects.")
    bank_mission: str = Field("", description="Reflect mission PUT once per bank.")
    retain_mission: str = Field("", description="Retain mission PUT once per bank.")
    auto_retain: bool = Field(True, description="Retain recent cells automatically.")
    retain_every_n_cells: int = Field(3, ge=1, description="Auto-retain every N counted cells.")
    retain_overlap_cells: int = Field(2, ge=0, description="Extra cells in last-cells mode.")
    retain_mode: Literal["full-session", "last-cells"] = Field(
        "full-session", description="One appended document per session, or windows of cells."
    )
    retain_outputs: Literal["none", "result", "all"] = Field(
        "result", description="Which cell outputs auto-retain keeps."
    )
    retain_context: str = Field("jupyter", description="Default 'context' of retained items.")
    recall_budget: Budget = Field("mid", description="Recall/reflect budget: low, mid or high.")
    recall_max_tokens: int = Field(1024, ge=1, description="Max tokens of recall results.")
    recall_types: tuple[str, ...] = Field(
        ("world", "experience"), description="Memory types recalled (comma-separated)."
    )
    request_timeout_ms: int = Field(30_000, gt=0, description="Timeout of other requests (ms).")
    retain_timeout_ms: int = Field(60_000, gt=0, description="Timeout of a retain (ms).")
    recall_timeout_ms: int = Field(30_000, gt=0, description="Timeout of a recall (ms).")
    reflect_timeout_ms: int = Field(120_000, gt=0, description="Timeout of a reflect (ms).")
    mental_models: bool = Field(True, description="Load and show the bank's mental models.")
    mental_model_auto_seed: bool = Field(True, description="Create the built-in seed models.")
    mental_model_refresh_s: float = Field(300.0, gt=0, description="Mental-model cache TTL (s).")
    mental_model_max_render_chars: int = Field(
        16_000, ge=0, description="Cap of the <mental_models> block."
    )
    journal_path: str = Field(
        "", description="On-disk queue file ('' = in the data dir, 'off' = memory only)."
    )
    debug: bool = Field(False, description="Full tracebacks and debug logs.")

    @field_validator("api_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        url = value.strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must look like http://host:port or https://host")
        try:
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError:
            raise ValueError("has an invalid port") from None
        return url

    @field_validator("bank_id", "bank_prefix", "retain_context", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("recall_types", mode="before")
    @classmethod
    def _split_types(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("api_key", mode="before")
    @classmethod
    def _empty_key_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value

    def key(self) -> str | None:
        """The API key in clear, for the Authorization header only."""
        return self.api_key.get_secret_value() if self.api_key else None

    def public_items(self) -> list[tuple[str, str]]:
        """(name, shown value) pairs for display; secrets appear only as set/unset."""
        items = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in SECRET_FIELDS:
                shown = "(set)" if value else "(not set)"
            elif isinstance(value, tuple):
                shown = ",".join(value)
            else:
                shown = "" if value is None else str(value)
            items.append((name, shown))
        return items


SETTING_NAMES: tuple[str, ...] = tuple(Settings.model_fields)
CONFIGURABLE_NAMES: tuple[str, ...] = tuple(n for n in SETTING_NAMES if n not in SECRET_FIELDS)


def env_name(name: str) -> str:
    """The environment variable that sets ``name``."""
    return ENV_PREFIX + name.upper()


def describe_error(error: ValidationError, source: str = "") -> str:
    """One line for the first problem in a pydantic ValidationError."""
    first = error.errors()[0]
    name = str(first["loc"][0]) if first.get("loc") else "setting"
    label = source or name
    message = first.get("msg", "invalid value").removeprefix("Value error, ")
    value = first.get("input")
    if name in SECRET_FIELDS:
        return f"Invalid {label}: {message}."
    return f"Invalid {label}={value!r}: {message}."


def parse_env(env: Mapping[str, str]) -> dict[str, Any]:
    """Read ``HINDSIGHT_*`` values; booleans are strict (true/1/yes/on or false/0/no/off)."""
    values: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        raw = env.get(env_name(name))
        if not (raw and raw.strip()) and name in ENV_ALIASES:
            raw = env.get(ENV_ALIASES[name])
        if raw is None or not raw.strip():
            continue
        raw = raw.strip()
        if field.annotation is bool:
            word = raw.lower()
            if word not in TRUE_WORDS | FALSE_WORDS:
                raise SettingsError(
                    f"Invalid {env_name(name)}={raw!r}: use true/false (or 1/0, yes/no, on/off)."
                )
            values[name] = word in TRUE_WORDS
        else:
            values[name] = raw
    return values


def coerce_value(name: str, value: Any) -> Any:
    """Validate one setting by itself; returns the typed value or raises SettingsError."""
    if name not in Settings.model_fields:
        raise SettingsError(unknown_setting_message(name))
    if isinstance(value, str) and Settings.model_fields[name].annotation is bool:
        word = value.strip().lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            raise SettingsError(f"Invalid {name}={value!r}: use true or false.")
        value = word in TRUE_WORDS
    try:
        validated = Settings.model_validate({name: value})
    except ValidationError as error:
        raise SettingsError(describe_error(error)) from None
    return getattr(validated, name)


def unknown_setting_message(name: str) -> str:
    """The message for a setting name that does not exist, with the valid names."""
    return f"Unknown setting {name!r}. Settings: {', '.join(SETTING_NAMES)}."


def build_settings(
    overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Defaults ← environment ← ``overrides`` (IPython config and run-time values)."""
    values = parse_env(os.environ if env is None else env)
    try:
        Settings.model_validate(values)
    except ValidationError as error:
        first = str(error.errors()[0]["loc"][0])
        raise SettingsError(describe_error(error, env_name(first))) from None
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
    try:
        return Settings.model_validate(values)
    except ValidationError as error:
        raise SettingsError(describe_error(error)) from None
