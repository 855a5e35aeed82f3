"""Parsing magic lines: the free-text magics' options, and the ``%hindsight`` subcommands' words.

- ``parse_options`` for ``%retain``/``%recall``/``%%reflect``: leading ``--options``, then the
  free text **kept verbatim** — not shell-split, so ``%retain Revenue fell -3% in Q3 (it's
  "final")`` keeps its spacing, dashes and quotes. argparse cannot do that (it splits words and
  reads ``-3%`` as an option), so this small parser is ours. Options come first (``--name
  value``, ``--name=value``, ``--name "two words"``); ``--`` ends them.
- ``Words`` and ``Verbs`` declare what each ``%hindsight`` subcommand takes after its name (its
  argparse arguments, or a first word choosing among verbs, each with its own arguments); the
  one ``SubcommandParser`` per declaration (IPython's ``MagicArgumentParser``: argparse that
  raises ``UsageError``) is built from it when first used.

Both share the converters (``positive_int``, ``tag_list`` …). Every mistake is one
``UsageError`` line (never ``SystemExit``); a subcommand's ends in its usage."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, NoReturn, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from .._converters import choice as choice  # the kinds' converters, for the subcommands too
from .._converters import positive_int as positive_int
from .._operations import Operation, Param

_OPTION = re.compile(r"--([A-Za-z][\w-]*)(?:=|\s+|$)")
Converter = Callable[[str], Any]
FLAG: Converter = bool  # marker for options that take no value
F = TypeVar("F", bound=Callable[..., Any])


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


class MagicOptions:
    """A free-text magic's options, made from its operation's declaration
    (``_operations``): ``parse`` reads them (``parse_options``), and the usage line and the
    docstring's "Options:" paragraph are made from the same parameters.

    ``magic`` is how the usage starts (``%recall``, ``%%reflect``); the operation's ``text``
    follows the options (``QUERY``, ``+ question``); options marked ``cell_only`` get a usage of
    their own, for the cell form, after ``cell_text``."""

    def __init__(self, magic: str, operation: Operation, cell_text: str = "… + cell") -> None:
        self.operation = operation
        self.options = operation.params
        self.spec: dict[str, Converter] = {o.word: converter(o) for o in self.options}
        self._names = {o.word: o.name for o in self.options}  # ``--at`` is ``timestamp``
        line = " ".join(f"[{o.flag}]" for o in self.options if not o.cell_only)
        self.usage = f"{magic} {line} {operation.text}"
        cell = " ".join(f"[{o.flag}]" for o in self.options if o.cell_only)
        if cell:
            self.usage += f"  |  %{magic} {cell} {cell_text}"

    def parse(self, line: str) -> tuple[dict[str, Any], str]:
        """(options under their parameters' names, the text after them, verbatim); bad options
        are one ``UsageError`` line."""
        options, text = parse_options(line, self.spec, self.usage)
        return {self._names[word]: value for word, value in options.items()}, text

    def paragraph(self, indent: int = 8) -> str:
        """``Options: ``--budget low|mid|high`` (search effort), …`` for the docstring,
        wrapped at 92 columns under ``indent`` spaces."""
        import textwrap

        described = []
        for option in self.options:
            help = option.description
            help = f"cell only: {help}" if option.cell_only else help
            flag = option.flag.replace(" ", "\0")  # never broken between flag and value
            described.append(f"``{flag}`` ({help})" if help else f"``{flag}``")
        text = "Options: " + ", ".join(described) + "."
        margin = " " * indent
        wrapped = textwrap.fill(
            text, 92, initial_indent=margin, subsequent_indent=margin, break_on_hyphens=False
        )
        return wrapped.lstrip().replace("\0", " ")

    def document(self, function: F) -> F:
        """Put the operation's summary where ``function``'s docstring says ``{summary}``, and
        the options paragraph where it says ``{options}``."""
        doc = (function.__doc__ or "").replace("{summary}", self.operation.summary)
        function.__doc__ = doc.replace("{options}", self.paragraph())
        return function


def option(param: Param) -> Argument:
    """A subcommand's argument made from a declared ``param`` (its value's name, help and
    converter): ``timeline --since WHEN`` is recall's ``since``."""
    names, keywords = param.argument()
    if param.kind not in ("text", "flag"):
        keywords["type"] = converter(param)
    return arg(*names, **keywords)


def converter(param: Param) -> Converter:
    """What reads ``param``'s value from a magic's line, by its declared kind
    (``_operations.KINDS``)."""
    return param.converter


def positive_float(value: str) -> float:
    """A number > 0."""
    number = float(value)
    if number <= 0:
        raise ValueError("must be greater than 0")
    return number


def setting_assignment(text: str) -> tuple[str, str | None]:
    """``NAME`` → (NAME, None): show it; ``NAME=VALUE`` → (NAME, VALUE), one pair of quotes
    around the value removed; ``NAME=`` → (NAME, ""): reset it."""
    name, sep, value = text.partition("=")
    if not sep:
        return name.strip(), None
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return name.strip(), value


class SubcommandParser(MagicArgumentParser):
    """An argparse parser for one ``%hindsight`` subcommand (or one verb of it): errors are one
    ``UsageError`` line ending in the usage, never ``SystemExit`` (IPython's
    ``MagicArgumentParser`` does that part).

    Converters raise ``argparse.ArgumentTypeError`` with the problem; the message then reads
    ``Invalid --timeout 'soon': must be a number.`` Without ``usage``, argparse writes it from
    the arguments (``%hindsight models show ID``).
    """

    def __init__(self, name: str, usage: str | None = None) -> None:
        super().__init__(  # type: ignore[no-untyped-call]
            prog=f"%hindsight {name}",
            usage=usage,
            add_help=False,
            formatter_class=argparse.HelpFormatter,  # IPython's doubles the % of the usage
        )

    @property
    def usage_line(self) -> str:
        """The usage, as the end of every error message shows it."""
        # parse_intermixed_args sets ``usage`` to argparse's own, newline included, meanwhile
        return (self.usage or self.format_usage().removeprefix("usage: ")).strip()

    @property
    def takes_options(self) -> bool:
        """Whether any ``--option`` is declared (else every word is a plain word)."""
        return any(action.option_strings for action in self._actions)

    def parse_line(self, args: str) -> argparse.Namespace:
        """Parse the text after the subcommand's name (shell-like quoting)."""
        try:
            words = shlex.split(args)
        except ValueError as error:
            raise UsageError(f"{error}. Usage: {self.usage_line}") from None
        return self.parse_words(words)

    def parse_words(self, words: list[str]) -> argparse.Namespace:
        """Parse words already split. Options may stand anywhere among the words; without
        declared options, every word is a word, even one starting with ``-`` (a model id)."""
        if self.takes_options:
            return self.parse_intermixed_args(words)
        return self.parse_args(["--", *words] if words else [])

    def error(self, message: str) -> NoReturn:
        unknown = re.fullmatch(r"unrecognized arguments: (?:-- )?(.+)", message, re.DOTALL)
        missing = re.fullmatch(r"the following arguments are required: (.+)", message, re.DOTALL)
        invalid = re.fullmatch(
            r"argument (?:\S+/)?(\S+): (.+)", message, re.DOTALL
        )  # -n/--lines: the long one
        if unknown and unknown.group(1).startswith("-") and self.takes_options:
            options = [o for action in self._actions for o in action.option_strings]
            valid = ", ".join(o for o in options if o.startswith("--")) or "none"
            message = f"Unknown option {unknown.group(1).split()[0]}. Options: {valid}"
        elif unknown:
            message = f"Unexpected {unknown.group(1)!r}"
        elif missing:
            message = f"Missing {missing.group(1)}"
        elif invalid and invalid.group(2) == "expected one argument":
            message = f"{invalid.group(1)} needs a value"
        elif invalid and invalid.group(1).startswith("-"):
            message = f"Invalid {invalid.group(1)} {invalid.group(2)}"
        raise UsageError(f"{message[:1].upper()}{message[1:]}. Usage: {self.usage_line}")


def argument_type(convert: Converter) -> Converter:
    """``convert`` for argparse: its ValueError becomes ``'value': problem``."""

    def parse(value: str) -> Any:
        try:
            return convert(value)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(f"{value!r}: {error}") from None

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


class Argument(NamedTuple):
    """One argparse argument: its names (``"id"``, or ``"-n", "--lines"``) and keywords."""

    names: tuple[str, ...]
    keywords: Mapping[str, Any]


def arg(*names: str, **keywords: Any) -> Argument:
    """One argument of a subcommand; a ``type`` converter's ``ValueError`` reads as
    ``Invalid --timeout 'soon': problem.``"""
    if "type" in keywords:
        keywords["type"] = argument_type(keywords["type"])
    return Argument(names, keywords)


class Words:
    """What a subcommand (or one of its verbs) takes after its name, declared once.

    ``arguments`` are argparse's; the usage that ends every error is made from them
    (``usage_line``), unless ``usage`` gives one made elsewhere (the local server's actions
    make theirs). ``verbatim``: the rest of the line is one word, not shell-split, so ``config
    retain_context=Ana's notes`` keeps its spaces, quotes and backslashes.
    """

    def __init__(self, *arguments: Argument, usage: str | None = None, verbatim: bool = False):
        self.arguments = arguments
        self.usage = usage
        self.verbatim = verbatim
        self._parsers: dict[str, SubcommandParser] = {}

    @property
    def syntax(self) -> str:
        """The arguments in the order declared: ``#N|ID [--reason R]`` ("" for none)."""
        words = []
        for names, keywords in self.arguments:
            flag = max(names, key=len)
            value = keywords.get("metavar") or flag.lstrip("-").upper()
            if not flag.startswith("-"):
                words.append(f"[{value}]" if keywords.get("nargs") in ("?", "*") else value)
            elif keywords.get("action") == "store_true":
                words.append(f"[{flag}]")
            else:
                words.append(f"[{flag} {value}]")
        return " ".join(words)

    def usage_line(self, name: str) -> str:
        """``%hindsight NAME`` and its ``syntax`` (``usage`` instead, when given)."""
        if self.usage is not None:
            return self.usage
        return f"%hindsight {name} {self.syntax}".strip()

    def parser(self, name: str) -> SubcommandParser:
        """The parser for subcommand ``name`` (built when first used, then kept)."""
        parser = self._parsers.get(name)
        if parser is None:
            parser = SubcommandParser(name, self.usage_line(name))
            for argument in self.arguments:
                parser.add_argument(*argument.names, **argument.keywords)
            self._parsers[name] = parser
        return parser

    def parse(self, name: str, text: str) -> argparse.Namespace:
        """The arguments in ``text`` (what follows ``%hindsight name``)."""
        parser = self.parser(name)
        if self.verbatim:
            return parser.parse_words([text.strip()] if text.strip() else [])
        return parser.parse_line(text)


class Verbs:
    """A subcommand whose first word is a verb (``models show ID``, ``server start``), each verb
    with its own ``Words``; no word means ``default``. The usage (for an unknown verb) is made
    from the verbs and their words, ``[list | show ID | …]``, leaving out the ``hidden`` ones
    (another name for a verb shown); ``usage`` gives one made elsewhere instead. Each verb's
    own usage ends its other errors."""

    def __init__(
        self,
        verbs: Mapping[str, Words],
        *,
        default: str,
        hidden: tuple[str, ...] = (),
        usage: str | None = None,
    ) -> None:
        self.verbs = verbs
        self.default = default
        self.hidden = hidden
        self.usage = usage

    @property
    def syntax(self) -> str:
        """``[list | show ID | refresh [ID]]``: every verb shown, with its words."""
        shown = (
            f"{verb} {words.syntax}".strip()
            for verb, words in self.verbs.items()
            if verb not in self.hidden
        )
        return f"[{' | '.join(shown)}]"

    def usage_line(self, name: str) -> str:
        """``%hindsight NAME`` and its ``syntax`` (``usage`` instead, when given)."""
        return self.usage if self.usage is not None else f"%hindsight {name} {self.syntax}"

    def parse(self, name: str, text: str) -> argparse.Namespace:
        """The verb (as ``.verb``) and its arguments in ``text``."""
        usage = self.usage_line(name)
        try:
            verb, *words = shlex.split(text) or [self.default]
        except ValueError as error:
            raise UsageError(f"{error}. Usage: {usage}") from None
        declared = self.verbs.get(verb)
        if declared is None:
            shown = ", ".join(v for v in self.verbs if v not in self.hidden)
            raise UsageError(f"Unknown {name} action {verb!r}; actions: {shown}. Usage: {usage}")
        parsed = declared.parser(f"{name} {verb}").parse_words(words)
        parsed.verb = verb
        return parsed


Declaration = Words | Verbs
