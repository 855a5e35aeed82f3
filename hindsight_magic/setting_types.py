"""The trait types of the settings: strict conversion, one-line messages, environment defaults.

Each is a traitlets type (``Unicode``, ``Enum``, ``Bool``, ``Int``, ``Float``, ``List``) with
``SettingTrait`` mixed in, so ``%config``, IPython config files, ``HINDSIGHT_*`` variables and
``%hindsight config`` all convert values the same way and refuse bad ones with the same line:
``Invalid <name>=<value>: <what is allowed>.``
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from traitlets import Bool, Enum, Float, Int, List, TraitError, Unicode

TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


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


def _quoted(choices: tuple[str, ...]) -> str:
    quoted = [repr(choice) for choice in choices]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


class SettingTrait:
    """Mixin for a setting's trait: environment default, strict conversion, one-line messages.

    ``convert`` turns a typed value or a string (from the environment or ``%hindsight
    config``) into the setting's value, or raises ``ValueError`` saying what is allowed.
    """

    name: str | None
    help: str

    def convert(self, value: Any) -> Any:
        raise NotImplementedError

    def env_variables(self) -> tuple[str, ...]:
        """The environment variables that set this setting, most specific first."""
        metadata: dict[str, Any] = getattr(self, "metadata", {})
        alias = metadata.get("env_alias")
        return (f"HINDSIGHT_{str(self.name).upper()}", *((alias,) if alias else ()))

    def env_value(self) -> tuple[str, str] | None:
        """(variable, stripped value) of the first non-blank variable, or None."""
        for variable in self.env_variables():
            raw = os.environ.get(variable, "").strip()
            if raw:
                return variable, raw
        return None

    def message(self, label: str, value: Any, error: ValueError) -> str:
        """``Invalid <label>=<value>: <what is allowed>.``"""
        return f"Invalid {label}={value!r}: {str(error).rstrip('.')}."

    def validate(self, obj: Any, value: Any) -> Any:
        if value is None and not getattr(self, "allow_none", False):
            return self.default(obj)  # None: "not set here", the environment or default applies
        try:
            return self.convert(value)
        except ValueError as error:
            raise TraitError(self.message(str(self.name), value, error)) from None

    def from_string(self, s: str) -> Any:
        return self.validate(None, s)

    def class_init(self, cls: type[Any], name: str | None) -> None:
        super().class_init(cls, name)  # type: ignore[misc]
        variables = " or ".join(self.env_variables())
        if variables not in self.help:  # subclasses (HindsightMagics) init it again
            self.help = f"{self.help} Environment: {variables}."

    def default(self, obj: Any = None) -> Any:
        found = self.env_value()
        if found is not None:
            try:
                return self.convert(found[1])
            except ValueError:  # refused at load (HindsightSettings.check_environment)
                pass
        return super().default(obj)  # type: ignore[misc]


class Text(SettingTrait, Unicode[str, str | bytes]):
    """A string, stripped; ``required`` refuses a blank one."""

    def __init__(self, default_value: str = "", *, required: bool = False, **kwargs: Any) -> None:
        super().__init__(default_value, **kwargs)
        self.required = required

    def convert(self, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("Input should be a valid string")
        if self.required and not value.strip():
            raise ValueError("String should have at least 1 character")
        return value.strip()


class Url(SettingTrait, Unicode[str | None, str | bytes | None]):
    """An http(s) URL without a trailing slash; blank means not set (None)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(None, allow_none=True, **kwargs)

    def convert(self, value: Any) -> str | None:
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


class Choice(SettingTrait, Enum[str]):
    """One of a fixed set of words."""

    def __init__(self, choices: tuple[str, ...], default_value: str, **kwargs: Any) -> None:
        super().__init__(choices, default_value, **kwargs)
        self.choices = choices

    def convert(self, value: Any) -> str:
        if value not in self.choices:
            raise ValueError(f"Input should be {_quoted(self.choices)}")
        return str(value)


class Flag(SettingTrait, Bool[bool, bool | int]):
    """True or false; strings accept true/1/yes/on and false/0/no/off (any case)."""

    def convert(self, value: Any) -> bool:
        if isinstance(value, str):
            word = value.strip().lower()
            if word not in TRUE_WORDS | FALSE_WORDS:
                raise ValueError("use true or false")
            return word in TRUE_WORDS
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise ValueError("use true or false")

    def message(self, label: str, value: Any, error: ValueError) -> str:
        if label.startswith("HINDSIGHT_"):
            return f"Invalid {label}={value!r}: use true/false (or 1/0, yes/no, on/off)."
        return super().message(label, value, error)


class NumberTrait(SettingTrait):
    """Shared by ``Count`` and ``Seconds``: bounds ``min`` (inclusive) and ``above`` (exclusive)."""

    minimum: float | None = None
    above: float | None = None

    def parse(self, value: Any) -> float:
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        number = self.parse(value)
        if self.minimum is not None and number < self.minimum:
            raise ValueError(f"Input should be greater than or equal to {self.minimum:g}")
        if self.above is not None and number <= self.above:
            raise ValueError(f"Input should be greater than {self.above:g}")
        return number


class Count(NumberTrait, Int[int, int]):
    """A whole number with optional bounds."""

    def __init__(
        self, default_value: int, *, minimum: int | None = None, above: int | None = None, **kw: Any
    ) -> None:
        super().__init__(default_value, **kw)
        self.minimum, self.above = minimum, above

    def parse(self, value: Any) -> int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("Input should be a valid integer")
        try:
            return int(value.strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError):
            raise ValueError(
                "Input should be a valid integer, unable to parse string as an integer"
            ) from None


class Seconds(NumberTrait, Float[float, float]):
    """A number of seconds (float) with optional bounds."""

    def __init__(self, default_value: float, *, above: float | None = None, **kw: Any) -> None:
        super().__init__(default_value, **kw)
        self.above = above

    def parse(self, value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError("Input should be a valid number")
        try:
            return float(value.strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise ValueError(
                "Input should be a valid number, unable to parse string as a number"
            ) from None


class Names(SettingTrait, List[str]):
    """A list of names; a string is split on commas, blanks dropped."""

    def __init__(self, default_value: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(Unicode(), list(default_value), **kwargs)

    def convert(self, value: Any) -> list[str]:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return list(value)
        raise ValueError("Input should be a comma-separated list of names")
