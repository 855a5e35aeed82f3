"""Parsing magic lines: the free-text magics' options, and the ``%hindsight`` subcommands' words.

- ``parse_options`` for ``%retain``/``%recall``/``%%reflect``: leading ``--options``, then the
  free text **kept verbatim** — not shell-split, so ``%retain Revenue fell -3% in Q3 (it's
  "final")`` keeps its spacing, dashes and quotes. argparse cannot do that (it splits words and
  reads ``-3%`` as an option), so this small parser is ours. Options come first (``--name
  value``, ``--name=value``, ``--name "two words"``); ``--`` ends them.
- ``SubcommandParser`` for ``%hindsight`` subcommands, whose arguments are words: IPython's
  ``MagicArgumentParser`` (argparse that raises ``UsageError``).

Both share the converters (``positive_int``, ``tag_list`` …). Errors raise ``UsageError`` (one
line, never ``SystemExit``)."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

_OPTION = re.compile(r"--([A-Za-z][\w-]*)(?:=|\s+|$)")
Converter = Callable[[str], Any]
FLAG: Converter = bool  # marker for options that take no value


def _read_value(text: str) -> tuple[str, str]:
    """Read one (possibly quoted) value from the start of ``text``; return (value, rest)."""
    if text[:1] in ("'", '"'):
        quote = text[0]
        end = text.find(quote, 1)
        if end < 0:
            raise UsageError(f"Unclosed {quote} in the options.")
        return text[1:end], text[end + 1 :]
    match = re.match(r"\S+", text)
    if not match:
        return "", text
    return match.group(0), text[match.end() :]


def parse_options(
    line: str, spec: Mapping[str, Converter], usage: str
) -> tuple[dict[str, Any], str]:
    """Split ``line`` into (options, remaining text). ``spec`` maps option name → converter."""
    options: dict[str, Any] = {}
    rest = line.lstrip()
    while rest.startswith("--"):
        if rest == "--" or rest.startswith(("-- ", "--\t", "--\n")):
            rest = rest[2:].lstrip()
            break
        match = _OPTION.match(rest)
        name = match.group(1) if match else rest.split()[0][2:]
        key = name.replace("-", "_")
        if not match or key not in spec:
            valid = ", ".join("--" + n.replace("_", "-") for n in spec) or "none"
            raise UsageError(f"Unknown option --{name}. Options: {valid}. Usage: {usage}")
        converter = spec[key]
        if converter is FLAG and match.group(0).endswith("="):
            raise UsageError(f"--{name} takes no value. Usage: {usage}")
        rest = rest[match.end() :]
        if converter is FLAG:
            options[key] = True
        else:
            raw, rest = _read_value(rest)
            if not raw:
                raise UsageError(f"--{name} needs a value. Usage: {usage}")
            try:
                options[key] = converter(raw)
            except (TypeError, ValueError) as error:
                raise UsageError(f"Invalid --{name} {raw!r}: {error}. Usage: {usage}") from None
        rest = rest.lstrip()
    return options, rest


def choice(*allowed: str) -> Converter:
    """A converter accepting only ``allowed`` values."""

    def convert(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"use one of {', '.join(allowed)}")
        return value

    return convert


def positive_int(value: str) -> int:
    """An integer ≥ 1."""
    number = int(value)
    if number < 1:
        raise ValueError("must be at least 1")
    return number


def positive_float(value: str) -> float:
    """A number > 0."""
    number = float(value)
    if number <= 0:
        raise ValueError("must be greater than 0")
    return number


def tag_list(value: str) -> tuple[str, ...]:
    """Comma-separated tags, blanks dropped."""
    tags = tuple(t.strip() for t in value.split(",") if t.strip())
    if not tags:
        raise ValueError("give at least one tag")
    return tags


def identifier(value: str) -> str:
    """A Python variable name."""
    if not value.isidentifier():
        raise ValueError("not a valid Python variable name")
    return value


class SubcommandParser(MagicArgumentParser):
    """An argparse parser for one ``%hindsight`` subcommand: errors are one ``UsageError`` line
    ending in the usage, never ``SystemExit`` (IPython's ``MagicArgumentParser`` does that part).

    Converters raise ``argparse.ArgumentTypeError`` with the problem; the message then reads
    ``Invalid --timeout 'soon': must be a number.``
    """

    def __init__(self, name: str, usage: str) -> None:
        super().__init__(  # type: ignore[no-untyped-call]
            prog=f"%hindsight {name}", usage=usage, add_help=False
        )

    def parse_line(self, args: str) -> argparse.Namespace:
        """Parse the text after the subcommand's name (shell-like quoting)."""
        try:
            words = shlex.split(args)
        except ValueError as error:
            raise UsageError(f"{error}. Usage: {self.usage}") from None
        return self.parse_intermixed_args(words)  # options may stand anywhere among the words

    def error(self, message: str) -> NoReturn:
        unknown = re.fullmatch(r"unrecognized arguments: (\S+).*", message)
        invalid = re.fullmatch(
            r"argument (?:\S+/)?(\S+): (.+)", message
        )  # -n/--lines: the long one
        if unknown and unknown.group(1).startswith("-"):
            options = [o for action in self._actions for o in action.option_strings]
            valid = ", ".join(o for o in options if o.startswith("--")) or "none"
            message = f"Unknown option {unknown.group(1)}. Options: {valid}"
        elif invalid and invalid.group(2) == "expected one argument":
            message = f"{invalid.group(1)} needs a value"
        elif invalid and invalid.group(1).startswith("-"):
            message = f"Invalid {invalid.group(1)} {invalid.group(2)}"
        raise UsageError(f"{message[:1].upper()}{message[1:]}. Usage: {self.usage}")


def argument_type(convert: Converter) -> Converter:
    """``convert`` for argparse: its ValueError becomes ``'value': problem``."""

    def parse(value: str) -> Any:
        try:
            return convert(value)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(f"{value!r}: {error}") from None

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse
