"""Settings: one declarative model that names, types, defaults and validates every option.

Sources, lowest to highest: the built-in default, the environment (``HINDSIGHT_<NAME>``),
IPython config (``c.HindsightMagics.<name>`` / ``%config HindsightMagics.<name> = …``) and
``%hindsight config <name>=<value>`` at run time. The API key only ever comes from the
environment (``HINDSIGHT_API_KEY``, alias ``HINDSIGHT_API_TOKEN``) or an explicit call; it is a
``Secret`` and is never shown.

This module deliberately avoids pydantic: importing it and building a model cost more than the
whole 150 ms budget of ``%load_ext`` on a small machine. ``Settings`` is a frozen dataclass whose
fields carry their ``Spec`` (kind, default, bounds, description); every value passes
``coerce_value`` on its way in (``build_settings``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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


class Secret:
    """A string that never shows itself (``repr``/``str`` are masked)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        """The value in clear — only for the Authorization header."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass(frozen=True)
class Spec:
    """One setting: its kind, default, bounds and one-line description."""

    kind: str  # str | int | float | bool | choice | url | secret | list | path
    default: Any
    description: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # inclusive
    above: float | None = None  # exclusive
    required: bool = False  # a str that may not be blank
    name: str = ""


def setting(kind: str, default: Any, description: str, **bounds: Any) -> Any:
    """A ``Settings`` field whose metadata carries its ``Spec``."""
    spec = Spec(kind, default, description, **bounds)
    return dataclasses.field(default=default, metadata={"spec": spec})


def _quoted_choices(choices: tuple[str, ...]) -> str:
    quoted = [repr(choice) for choice in choices]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def _number(spec: Spec, value: Any) -> float:
    if spec.kind == "int":
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("Input should be a valid integer")
        try:
            number: float = int(value.strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError):
            raise ValueError(
                "Input should be a valid integer, unable to parse string as an integer"
            ) from None
    else:
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise ValueError(
                "Input should be a valid number, unable to parse string as a number"
            ) from None
    if spec.minimum is not None and number < spec.minimum:
        raise ValueError(f"Input should be greater than or equal to {spec.minimum:g}")
    if spec.above is not None and number <= spec.above:
        raise ValueError(f"Input should be greater than {spec.above:g}")
    return number


def _url(value: Any) -> str | None:
    if value is None or not str(value).strip():
        return None
    url = str(value).strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must look like http://host:port or https://host")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise ValueError("has an invalid port") from None
    return url


def _convert(spec: Spec, value: Any) -> Any:
    """The typed value of ``value`` for ``spec``, or ValueError with pydantic-like wording."""
    kind = spec.kind
    if kind == "bool":
        if isinstance(value, str):
            word = value.strip().lower()
            if word not in TRUE_WORDS | FALSE_WORDS:
                raise ValueError("use true or false")
            return word in TRUE_WORDS
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise ValueError("use true or false")
    if kind in ("int", "float"):
        number = _number(spec, value)
        return int(number) if kind == "int" else number
    if kind == "url":
        return _url(value)
    if kind == "secret":
        if isinstance(value, Secret):
            return value if value else None
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("Input should be a valid string")
        return Secret(value.strip()) if value.strip() else None
    if kind == "list":
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ValueError("Input should be a comma-separated list of names")
    if not isinstance(value, str):
        raise ValueError("Input should be a valid string")
    if kind == "choice":
        if value not in spec.choices:
            raise ValueError(f"Input should be {_quoted_choices(spec.choices)}")
        return value
    text = value.strip() if kind in ("str", "path") else value
    if spec.required and not text:
        raise ValueError("String should have at least 1 character")
    return text


def _message(label: str, value: Any, problem: str, secret: bool) -> str:
    problem = problem.rstrip(".")
    if secret:
        return f"Invalid {label}: {problem}."
    return f"Invalid {label}={value!r}: {problem}."


def coerce_value(name: str, value: Any, label: str | None = None) -> Any:
    """Validate one setting by itself; returns the typed value or raises SettingsError."""
    spec = SPEC_BY_NAME.get(name)
    if spec is None:
        raise SettingsError(unknown_setting_message(name))
    try:
        return _convert(spec, value)
    except ValueError as error:
        raise SettingsError(
            _message(label or name, value, str(error), name in SECRET_FIELDS)
        ) from None


@dataclass(frozen=True)
class Settings:
    """Every hindsight_magic option; frozen, and built only through validated values."""

    api_url: str | None = setting(
        "url", None, f"Hindsight URL; unset: a running local server, else {FALLBACK_API_URL}."
    )
    api_key: Secret | None = setting(
        "secret", None, "API key, sent as 'Authorization: Bearer …'. Environment only."
    )
    bank_id: str = setting("str", "jupyter", "Base memory bank id.", required=True)
    bank_prefix: str = setting("str", "", "Optional prefix: bank becomes <prefix>-<bank>.")
    scoping: str = setting(
        "choice", "per-project-tagged", "How banks/tags follow projects.", choices=SCOPE_MODES
    )
    bank_mission: str = setting("str", "", "Reflect mission PUT once per bank.")
    retain_mission: str = setting("str", "", "Retain mission PUT once per bank.")
    auto_retain: bool = setting("bool", True, "Retain recent cells automatically.")
    retain_every_n_cells: int = setting("int", 3, "Auto-retain every N counted cells.", minimum=1)
    retain_overlap_cells: int = setting("int", 2, "Extra cells in last-cells mode.", minimum=0)
    retain_mode: str = setting(
        "choice",
        "full-session",
        "One appended document per session, or windows of cells.",
        choices=("full-session", "last-cells"),
    )
    retain_outputs: str = setting(
        "choice",
        "result",
        "Which cell outputs auto-retain keeps.",
        choices=("none", "result", "all"),
    )
    retain_context: str = setting("str", "jupyter", "Default 'context' of retained items.")
    recall_budget: str = setting(
        "choice", "mid", "Recall/reflect budget: low, mid or high.", choices=BUDGETS
    )
    recall_max_tokens: int = setting("int", 1024, "Max tokens of recall results.", minimum=1)
    recall_types: tuple[str, ...] = setting(
        "list", ("world", "experience"), "Memory types recalled (comma-separated)."
    )
    request_timeout_ms: int = setting("int", 30_000, "Timeout of other requests (ms).", above=0)
    retain_timeout_ms: int = setting("int", 60_000, "Timeout of a retain (ms).", above=0)
    recall_timeout_ms: int = setting("int", 30_000, "Timeout of a recall (ms).", above=0)
    reflect_timeout_ms: int = setting("int", 120_000, "Timeout of a reflect (ms).", above=0)
    mental_models: bool = setting("bool", True, "Load and show the bank's mental models.")
    mental_model_auto_seed: bool = setting("bool", True, "Create the built-in seed models.")
    mental_model_refresh_s: float = setting("float", 300.0, "Mental-model cache TTL (s).", above=0)
    mental_model_max_render_chars: int = setting(
        "int", 16_000, "Cap of the <mental_models> block.", minimum=0
    )
    journal_path: str = setting(
        "path", "", "On-disk queue file ('' = in the data dir, 'off' = memory only)."
    )
    debug: bool = setting("bool", False, "Full tracebacks and debug logs.")

    def key(self) -> str | None:
        """The API key in clear, for the Authorization header only."""
        return self.api_key.get_secret_value() if self.api_key else None

    def public_items(self) -> list[tuple[str, str]]:
        """(name, shown value) pairs for display; secrets appear only as set/unset."""
        items = []
        for name in SETTING_NAMES:
            value = getattr(self, name)
            if name in SECRET_FIELDS:
                shown = "(set)" if value else "(not set)"
            elif isinstance(value, tuple):
                shown = ",".join(value)
            else:
                shown = "" if value is None else str(value)
            items.append((name, shown))
        return items

    def as_dict(self) -> dict[str, Any]:
        """Every setting by name (the key stays a masked ``Secret``)."""
        return {name: getattr(self, name) for name in SETTING_NAMES}


SPECS: tuple[Spec, ...] = tuple(
    dataclasses.replace(field.metadata["spec"], name=field.name)
    for field in dataclasses.fields(Settings)
)
SPEC_BY_NAME: dict[str, Spec] = {spec.name: spec for spec in SPECS}
SETTING_NAMES: tuple[str, ...] = tuple(SPEC_BY_NAME)
CONFIGURABLE_NAMES: tuple[str, ...] = tuple(n for n in SETTING_NAMES if n not in SECRET_FIELDS)


def env_name(name: str) -> str:
    """The environment variable that sets ``name``."""
    return ENV_PREFIX + name.upper()


def parse_env(env: Mapping[str, str]) -> dict[str, Any]:
    """Read and validate ``HINDSIGHT_*`` values; an error names the variable."""
    values: dict[str, Any] = {}
    for spec in SPECS:
        variable = env_name(spec.name)
        raw = env.get(variable)
        if not (raw and raw.strip()) and spec.name in ENV_ALIASES:
            variable = ENV_ALIASES[spec.name]
            raw = env.get(variable)
        if raw is None or not raw.strip():
            continue
        if spec.kind == "bool" and raw.strip().lower() not in TRUE_WORDS | FALSE_WORDS:
            raise SettingsError(
                f"Invalid {variable}={raw.strip()!r}: use true/false (or 1/0, yes/no, on/off)."
            )
        values[spec.name] = coerce_value(spec.name, raw.strip(), label=variable)
    return values


def unknown_setting_message(name: str) -> str:
    """The message for a setting name that does not exist, with the valid names."""
    return f"Unknown setting {name!r}. Settings: {', '.join(SETTING_NAMES)}."


def build_settings(
    overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Defaults ← environment ← ``overrides`` (IPython config and run-time values)."""
    values = parse_env(os.environ if env is None else env)
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = coerce_value(name, value)
    return Settings(**values)
