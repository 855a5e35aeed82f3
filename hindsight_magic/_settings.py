"""Settings: one typed traitlets ``Configurable`` naming, typing, defaulting and checking them all.

Every option is a trait of ``HindsightSettings`` tagged ``config=True`` — the IPython convention
(``storemagic``'s ``autorestore``). ``HindsightMagics`` inherits these traits, so all four ways
of setting a value go through the same definitions and give the same one-line messages
(``Invalid <name>=<value>: <what is allowed>.``):

- the environment, ``HINDSIGHT_<NAME>`` (read as each trait's default, checked at load);
- IPython config, ``c.HindsightMagics.<name> = …`` in ``ipython_config.py``;
- ``%config HindsightMagics.<name> = …`` in a running kernel;
- ``%hindsight config <name>=<value>`` (strings parsed like the environment's).

The trait types come first: each is a traitlets type (``Unicode``, ``Enum``, ``Bool``, ``Int``,
``Float``, ``List``) with ``SettingTrait`` mixed in for the strict conversion and the message.
The API key is not a trait (``%config`` prints every trait): ``api_key`` reads
``HINDSIGHT_API_KEY`` (alias ``HINDSIGHT_API_TOKEN``) from the environment and is never shown.
Each trait carries an ``affects`` tag (``connection``, ``scope``, ``autoretain``,
``mental_models``, ``logging``) that tells the session what to rebuild when it changes."""

from __future__ import annotations

import math
import os
import re
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, get_args
from urllib.parse import urlsplit

from traitlets import Bool, Enum, Float, Int, List, TraitError, Unicode, validate
from traitlets.config import Configurable

from ._enums import StrEnum
from ._errors import PUBLIC, InputError

# traitlets' trait types take type parameters for the type checker, but only from traitlets 5.10
# on at run time: the floor this package declares (and tests) is older, so the parameters are
# given to mypy alone.
_Word = TypeVar("_Word", bound="SettingWord")
if TYPE_CHECKING:
    _TextTrait = Unicode[str, str | bytes]
    _OptionalTextTrait = Unicode[str | None, str | bytes | None]
    _EnumTrait = Enum
    _BoolTrait = Bool[bool, bool | int]
    _IntTrait = Int[int, int]
    _FloatTrait = Float[float, float]
    _ListTrait = List[str]
else:
    _TextTrait = _OptionalTextTrait = Unicode
    _BoolTrait, _IntTrait, _FloatTrait, _ListTrait = Bool, Int, Float, List

    class _EnumTrait(Enum, Generic[_Word]):
        pass


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
    metadata: dict[str, Any]  # traitlets': ``config``, ``affects``

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


class Text(SettingTrait, _TextTrait):
    """A string, stripped; ``required`` refuses a blank one, ``rule`` says why a value cannot
    be used (``bank_id_problem`` for bank ids and prefixes) or None."""

    def __init__(
        self,
        default_value: str = "",
        *,
        required: bool = False,
        rule: Callable[[str], str | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(default_value, **kwargs)
        self.required = required
        self.rule = rule

    def convert(self, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("Input should be a valid string")
        text = value.strip()
        if self.required and not text:
            raise ValueError("String should have at least 1 character")
        problem = self.rule(text) if self.rule is not None and text else None
        if problem:
            raise ValueError(problem)
        return text


BANK_ID_MAX_BYTES = 192  # the server's limit (UTF-8 bytes)
# What the server refuses in a new bank id (control characters, a leading "_"), and what cannot
# travel as one URL path segment: a separator or a query/fragment/escape character, or a segment
# that is only dots. Checked where a bank id or prefix is set, so a bad one never reaches a send.
_BANK_ID_RULE = (
    "use 1-192 bytes without control characters or / \\ ? # %, not starting with '_' "
    "and not only dots"
)
_NOT_IN_BANK_ID = frozenset("/\\?#%")


def bank_id_problem(value: str) -> str | None:
    """Why ``value`` cannot be (part of) a bank id, or None when it can."""
    if not value or len(value.encode("utf-8")) > BANK_ID_MAX_BYTES or value != value.strip():
        return _BANK_ID_RULE
    if value.startswith("_") or set(value) == {"."} or not _NOT_IN_BANK_ID.isdisjoint(value):
        return _BANK_ID_RULE
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):  # Cs: not UTF-8
        return _BANK_ID_RULE
    return None


MAX_TAG_CHARS = 256


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` (or a recall type) cannot be used, or None: at most ``MAX_TAG_CHARS``
    characters, no control characters, no line breaks or tabs."""
    if len(tag) > MAX_TAG_CHARS or any(
        ch in "\n\t" or unicodedata.category(ch) == "Cc" for ch in tag
    ):  # a lone surrogate is replaced when the tag is sent, as in a memory's text
        return f"use at most {MAX_TAG_CHARS} characters and no control characters"
    return None


def bank_id_part(text: str) -> str:
    """``text`` made fit to stand inside a bank id: what the rule refuses becomes ``-`` (for the
    project label a per-project bank ends with, which comes from a folder's name)."""
    return "".join(
        "-" if ch in _NOT_IN_BANK_ID or unicodedata.category(ch) == "Cc" else ch for ch in text
    )


class Url(SettingTrait, _OptionalTextTrait):
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


class SettingWord(StrEnum):
    """A word a setting takes: equal to its string (the environment, IPython config and
    ``%hindsight config`` give strings), and shown as that string where traitlets prints a
    value's ``repr`` (``%config HindsightMagics``)."""

    def __repr__(self) -> str:
        return repr(self.value)


class Choice(SettingTrait, _EnumTrait[_Word]):
    """One of a fixed set of words, the members of a ``SettingWord`` enum."""

    def __init__(self, words: type[_Word], default_value: _Word, **kwargs: Any) -> None:
        self.choices: tuple[str, ...] = tuple(words)
        super().__init__(tuple(words), default_value, **kwargs)
        self.words = words

    def convert(self, value: Any) -> _Word:
        if value not in self.choices:
            raise ValueError(f"Input should be {_quoted(self.choices)}")
        return self.words(value)


class Flag(SettingTrait, _BoolTrait):
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


def bounded(number: float, minimum: float | None, above: float | None) -> float:
    """``number`` if it is within the bounds (``minimum`` inclusive, ``above`` exclusive)."""
    if minimum is not None and number < minimum:
        raise ValueError(f"Input should be greater than or equal to {minimum:g}")
    if above is not None and number <= above:
        raise ValueError(f"Input should be greater than {above:g}")
    return number


class Count(SettingTrait, _IntTrait):
    """A whole number with optional bounds."""

    def __init__(
        self, default_value: int, *, minimum: int | None = None, above: int | None = None, **kw: Any
    ) -> None:
        super().__init__(default_value, **kw)
        self.minimum, self.above = minimum, above

    def convert(self, value: Any) -> int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("Input should be a valid integer")
        try:
            number = int(value.strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(
                "Input should be a valid integer, unable to parse string as an integer"
            ) from None
        return int(bounded(number, self.minimum, self.above))


class Seconds(SettingTrait, _FloatTrait):
    """A finite number of seconds with optional bounds (``nan`` and ``inf`` are refused: a
    refresh interval of either would stop the worker's schedule)."""

    def __init__(self, default_value: float, *, above: float | None = None, **kw: Any) -> None:
        super().__init__(default_value, **kw)
        self.above = above

    def convert(self, value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError("Input should be a valid number")
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise ValueError(
                "Input should be a valid number, unable to parse string as a number"
            ) from None
        if not math.isfinite(number):
            raise ValueError("Input should be a finite number")
        return bounded(number, None, self.above)


class Names(SettingTrait, _ListTrait):
    """A list of names; a string is split on commas, blanks dropped."""

    def __init__(self, default_value: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(Unicode(), list(default_value), **kwargs)

    def convert(self, value: Any) -> list[str]:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return list(value)
        raise ValueError("Input should be a comma-separated list of names")


MINE = "mine"  # the label of the bank a session writes, beside its layers
_LAYER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
LAYER_NAME_RULE = (
    f"a layer's name is 1-40 letters, digits, '-', '_' or '.' (not {MINE!r}, which is your own "
    "bank)"
)


def layer_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a layer, or None."""
    if not _LAYER_NAME.fullmatch(name) or name == MINE:
        return LAYER_NAME_RULE
    return None


class LayerPairs(Names):
    """Banks read beside the session's own, as ``NAME=BANK`` pairs (comma-separated in a
    string): each name once, each a name ``layer_name_problem`` accepts, each bank a bank id."""

    def convert(self, value: Any) -> list[str]:
        pairs, names = [], set()
        given = super().convert(value)  # a list from code may hold "a=x,b=y" strings too
        for pair in (part for text in given for part in text.split(",")):
            if not pair.strip():
                continue
            name, equals, bank = (part.strip() for part in pair.partition("="))
            if not equals or not name or not bank:
                raise ValueError(f"write each layer as NAME=BANK, not {pair!r}")
            problem = layer_name_problem(name) or bank_id_problem(bank)
            if problem:
                raise ValueError(problem)
            if name in names:
                raise ValueError(f"the layer name {name!r} is given twice")
            names.add(name)
            pairs.append(f"{name}={bank}")
        return pairs


class ScopeMode(SettingWord):
    """How banks and tags follow projects (``scoping``)."""

    GLOBAL = "global"
    PER_PROJECT = "per-project"
    PER_PROJECT_TAGGED = "per-project-tagged"


class Budget(SettingWord):
    """How hard the server searches in a recall or reflect (``recall_budget``, ``--budget``)."""

    LOW = "low"
    MID = "mid"
    HIGH = "high"


class Extraction(SettingWord):
    """How the server makes memories of what is retained (``retain_extraction``): ``server``
    leaves the bank's own mode; the others are Hindsight's ``retain_extraction_mode``."""

    SERVER = "server"
    CHUNKS = "chunks"
    CONCISE = "concise"
    VERBOSE = "verbose"
    VERBATIM = "verbatim"


class RetainMode(SettingWord):
    """What auto-retain sends (``retain_mode``): each new cell once, or windows of cells."""

    FULL_SESSION = "full-session"
    LAST_CELLS = "last-cells"


class RetainOutputs(SettingWord):
    """Which cell outputs auto-retain keeps (``retain_outputs``)."""

    NONE = "none"
    RESULT = "result"
    ALL = "all"


SCOPE_MODES: tuple[str, ...] = tuple(ScopeMode)
BUDGETS: tuple[str, ...] = tuple(Budget)
FALLBACK_API_URL = "http://localhost:8888"
# what a change of a setting rebuilds in a session (its trait's ``affects`` tag)
Affects = Literal["connection", "scope", "autoretain", "mental_models", "logging"]
KEY_VARIABLES = ("HINDSIGHT_API_KEY", "HINDSIGHT_API_TOKEN")


# where a value was set (``HindsightSettings.source``), besides the environment and the default
HINDSIGHT_CONFIG = "%hindsight config"
RUN_TIME_CONFIG = "%config"  # or an attribute set in code, after load
CONFIG = "IPython config"  # c.HindsightMagics.* or %config before the load
ARGUMENT = "argument"
KEY_IN_ENVIRONMENT = (
    "Set the API key in the environment (HINDSIGHT_API_KEY) before starting the kernel: "
    "a key typed into a cell is saved in the notebook."
)


class SettingsError(InputError):
    """An invalid setting value; the message is one line naming the setting and what is allowed."""

    __module__ = PUBLIC


class HindsightSettings(Configurable):
    """Every hindsight_magic option. ``%hindsight config`` shows them with where each came from.

    Public as ``hindsight_magic.Settings``: ``Session(Settings(bank_id="nb"))`` builds a session
    of one's own, each option a keyword (unset ones from ``HINDSIGHT_*`` and the defaults)."""

    api_url = Url(
        help=f"Hindsight URL; unset: a running local server, else {FALLBACK_API_URL}."
    ).tag(config=True, affects="connection")
    bank_id = Text("jupyter", required=True, rule=bank_id_problem, help="Base memory bank id.").tag(
        config=True, affects="scope"
    )
    bank_prefix = Text(
        rule=bank_id_problem, help="Optional prefix: bank becomes <prefix>-<bank>."
    ).tag(config=True, affects="scope")
    scoping = Choice(
        ScopeMode, ScopeMode.PER_PROJECT_TAGGED, help="How banks/tags follow projects."
    ).tag(config=True, affects="scope")
    bank_mission = Text(help="Reflect mission PUT once per bank.").tag(config=True)
    retain_mission = Text(help="Retain mission PUT once per bank.").tag(config=True)
    retain_extraction = Choice(
        Extraction,
        Extraction.SERVER,
        help="How the server makes memories of what is retained, set on each bank once: "
        "'server' leaves the bank's own mode; 'chunks' stores the text as written (no LLM "
        "needed); 'concise', 'verbose', 'verbatim' let the server's LLM extract facts.",
    ).tag(config=True)
    auto_retain = Flag(True, help="Retain recent cells automatically.").tag(
        config=True, affects="autoretain"
    )
    retain_every_n_cells = Count(3, minimum=1, help="Auto-retain every N counted cells.").tag(
        config=True, affects="autoretain"
    )
    retain_overlap_cells = Count(2, minimum=0, help="Extra cells in last-cells mode.").tag(
        config=True
    )
    retain_mode = Choice(
        RetainMode,
        RetainMode.FULL_SESSION,
        help="Each new cell once, as its own memories; or windows of the last cells.",
    ).tag(config=True)
    retain_outputs = Choice(
        RetainOutputs, RetainOutputs.RESULT, help="Which cell outputs auto-retain keeps."
    ).tag(config=True)
    evidence = Flag(
        True, help="Record the data files a retained cell read, and flag them when they change."
    ).tag(config=True)
    evidence_hash_limit_mb = Count(
        8, minimum=0, help="Hash data files up to this size whole (MB); larger: size and ends."
    ).tag(config=True)
    retain_context = Text("jupyter", help="Default 'context' of retained items.").tag(config=True)
    notebook = Text(
        help="The notebook named in provenance where neither Jupyter nor a runner's command line"
        " says (pm.execute_notebook, nbclient)."
    ).tag(config=True)
    recall_budget = Choice(Budget, Budget.MID, help="Recall/reflect budget: low, mid or high.").tag(
        config=True
    )
    recall_max_tokens = Count(1024, minimum=1, help="Max tokens of recall results.").tag(
        config=True
    )
    recall_limit = Count(
        5, minimum=1, help="Most memories a recall shows, the most relevant first."
    ).tag(config=True)
    recall_types = Names(
        ("world", "experience"), help="Memory types recalled (comma-separated)."
    ).tag(config=True)
    layers = LayerPairs(
        (),
        help="Banks read beside your own, NAME=BANK pairs (comma-separated): recall and "
        "reflect read them too, nothing here writes to them.",
    ).tag(config=True)
    request_timeout_ms = Count(30_000, above=0, help="Timeout of other requests (ms).").tag(
        config=True, affects="connection"
    )
    retain_timeout_ms = Count(60_000, above=0, help="Timeout of a retain (ms).").tag(
        config=True, affects="connection"
    )
    recall_timeout_ms = Count(30_000, above=0, help="Timeout of a recall (ms).").tag(
        config=True, affects="connection"
    )
    reflect_timeout_ms = Count(120_000, above=0, help="Timeout of a reflect (ms).").tag(
        config=True, affects="connection"
    )
    mental_models = Flag(True, help="Load and show the bank's mental models.").tag(
        config=True, affects="mental_models"
    )
    mental_model_auto_seed = Flag(True, help="Create the built-in seed models.").tag(
        config=True, affects="mental_models"
    )
    mental_model_refresh_s = Seconds(300.0, above=0, help="Mental-model cache TTL (s).").tag(
        config=True
    )
    mental_model_max_render_chars = Count(
        16_000, minimum=0, help="Cap of the <mental_models> block."
    ).tag(config=True)
    journal_path = Text(help="On-disk queue file ('' = in the data dir, 'off' = memory only).").tag(
        config=True, env_alias="HINDSIGHT_JOURNAL"
    )
    debug = Flag(False, help="Full tracebacks and debug logs.").tag(config=True, affects="logging")

    # Set by the session that follows these settings: why a new value of a setting that shapes
    # the scope would make a bank or tag that cannot be used, given the rest (each setting can be
    # fine alone, a prefix, a bank and the project label together too long), or None.
    scope_check: Callable[[str, Any], str | None] | None = None

    @validate("bank_id", "bank_prefix", "scoping")
    def _scope_fits(self, proposal: Any) -> Any:
        check, value = self.scope_check, proposal["value"]
        problem = check(proposal["trait"].name, value) if check is not None else None
        if problem:
            raise TraitError(problem)
        return value

    def __init__(self, *, strict_environment: bool = True, **kwargs: Any) -> None:
        if strict_environment:
            self.check_environment()
        self._explicit: dict[str, str] = {}  # name → where its value was set (``source``)
        super().__init__(**kwargs)
        for section in self._config_sections():
            self._explicit.update(dict.fromkeys(set(section) & set(self.setting_names()), CONFIG))
        self._explicit.update(dict.fromkeys(set(kwargs) & set(self.setting_names()), ARGUMENT))
        for name in self.setting_names():  # read the environment once, now, on this thread
            getattr(self, name)
        self.observe(self._note_explicit, names=list(self.setting_names()))

    @classmethod
    def from_environment(cls) -> HindsightSettings:
        """Settings from the environment alone, invalid variables ignored (for ``doctor``)."""
        return cls(strict_environment=False)

    # -- the definitions ---------------------------------------------------------------------

    @classmethod
    def setting_names(cls) -> tuple[str, ...]:
        """Every setting's name, in declaration order."""
        return tuple(n for n, v in vars(HindsightSettings).items() if isinstance(v, SettingTrait))

    @classmethod
    def affects(cls, name: str) -> Affects | None:
        """What a change of setting ``name`` rebuilds in a session (None: nothing, it is read
        when used)."""
        tag = cls._setting(name).metadata.get("affects")
        if tag is not None and tag not in get_args(Affects):
            raise ValueError(f"setting {name}: unknown affects tag {tag!r}")
        return cast("Affects | None", tag)

    @classmethod
    def environment_variables(cls) -> tuple[str, ...]:
        """Every ``HINDSIGHT_*`` variable a setting or the key is read from."""
        names = [v for n in cls.setting_names() for v in cls._setting(n).env_variables()]
        return (*names, *KEY_VARIABLES)

    @classmethod
    def _setting(cls, name: str) -> SettingTrait:
        if name == "api_key":
            raise SettingsError(KEY_IN_ENVIRONMENT)
        trait = cls.class_traits(config=True).get(name)
        if trait is None:
            raise SettingsError(unknown_setting_message(name))
        assert isinstance(trait, SettingTrait)
        return trait

    @classmethod
    def check_environment(cls) -> None:
        """Refuse an invalid ``HINDSIGHT_*`` value with one line naming the variable."""
        for name in cls.setting_names():
            trait = cls._setting(name)
            found = trait.env_value()
            if found is None:
                continue
            variable, raw = found
            try:
                trait.convert(raw)
            except ValueError as error:
                raise SettingsError(trait.message(variable, raw, error)) from None

    @classmethod
    def parse(cls, name: str, value: Any) -> Any:
        """The typed value of ``value`` for setting ``name``, or SettingsError (one line)."""
        trait = cls._setting(name)
        try:
            return trait.convert(value)
        except ValueError as error:
            raise SettingsError(trait.message(name, value, error)) from None

    # -- values and where they come from -----------------------------------------------------

    def set_setting(self, name: str, value: Any) -> None:
        """Set one setting (``None`` resets it to the environment or default)."""
        self._setting(name)  # unknown names fail here
        parsed = self.trait_defaults(name) if value is None else self.parse(name, value)
        try:
            self.set_trait(name, parsed)
        except TraitError as error:
            raise SettingsError(str(error)) from None
        if value is None:
            self._explicit.pop(name, None)
            return
        self._explicit[name] = HINDSIGHT_CONFIG

    def source(self, name: str) -> str:
        """Where the value of ``name`` comes from: ``%hindsight config``, ``%config`` (or set
        in code), ``IPython config`` (at load), ``argument``, ``env HINDSIGHT_…`` or
        ``default``. The key's: the variable it was read from, or ``default``."""
        if name == "api_key":
            key = next((v for v in KEY_VARIABLES if os.environ.get(v, "").strip()), None)
            return f"env {key}" if key else "default"
        if name in self._explicit:
            return self._explicit[name]
        found = self._setting(name).env_value()
        return f"env {found[0]}" if found is not None else "default"

    def shown(self, name: str) -> str:
        """The value as ``%hindsight config`` shows it."""
        value = getattr(self, name)
        if isinstance(value, list | tuple):
            return ",".join(value)
        return "" if value is None else str(value)

    def public_items(self) -> list[tuple[str, str]]:
        """(name, shown value) of every setting, the key only as set/not set."""
        items = [(name, self.shown(name)) for name in self.setting_names()]
        items.insert(1, ("api_key", "(set)" if self.api_key else "(not set)"))
        return items

    def as_dict(self) -> dict[str, Any]:
        """Every setting by name, the key as a masked ``Secret``."""
        values: dict[str, Any] = {name: getattr(self, name) for name in self.setting_names()}
        values["api_key"] = self.api_key
        return values

    @property
    def api_key(self) -> Secret | None:
        """The API key from the environment, masked (never a trait, never shown)."""
        for variable in KEY_VARIABLES:
            value = os.environ.get(variable, "").strip()
            if value:
                return Secret(value)
        return None

    def key(self) -> str | None:
        """The API key in clear, for the Authorization header only."""
        secret = self.api_key
        return secret.get_secret_value() if secret else None

    def _config_sections(self) -> list[Any]:
        names = [c.__name__ for c in type(self).mro() if issubclass(c, Configurable)]
        return [self.config[n] for n in names if n in self.config]

    def _note_explicit(self, change: Any) -> None:
        self._explicit[change["name"]] = RUN_TIME_CONFIG


def unknown_setting_message(name: str) -> str:
    """The message for a setting name that does not exist, with the valid names."""
    names = ", ".join(("api_key", *HindsightSettings.setting_names()))
    return f"Unknown setting {name!r}. Settings: {names}."


KERNEL_CONFIG_FILES = ("ipython_config.py", "ipython_kernel_config.py")  # what a kernel reads


def profile_config_dir() -> str:
    """The default IPython profile's folder, where a kernel reads its config files
    (``$IPYTHONDIR/profile_default``, ``~/.ipython/profile_default`` when unset)."""
    base = os.environ.get("IPYTHONDIR") or os.path.join(os.path.expanduser("~"), ".ipython")
    return os.path.join(base, "profile_default")


def settings_like_a_kernel(
    folder: str | None = None, warn: Callable[[str], None] | None = None
) -> HindsightSettings:
    """Settings as a kernel started on this machine would have them, outside IPython: the
    environment, then ``c.HindsightMagics.*`` from the profile's ``ipython_config.py`` and
    ``ipython_kernel_config.py`` (read with traitlets alone, no IPython). An invalid value is
    left out with one line to ``warn``, as a kernel does; an invalid ``HINDSIGHT_*`` variable
    is a ``SettingsError``."""
    from traitlets.config import Config
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    folder = folder or profile_config_dir()
    section: dict[str, Any] = {}
    for name in KERNEL_CONFIG_FILES:
        try:
            loaded = PyFileConfigLoader(name, path=folder).load_config()
        except ConfigFileNotFound:
            continue
        if "HindsightMagics" in loaded:
            section.update(loaded["HindsightMagics"])
    for name, value in list(section.items()):
        try:
            if value is None:
                raise SettingsError(f"{name} is None")
            HindsightSettings.parse(name, value)
        except SettingsError as error:
            if warn is not None and value is not None:
                warn(f"HindsightMagics config: {error} Ignored.")
            del section[name]
    config = Config()
    config.HindsightSettings = Config(section)
    try:
        return HindsightSettings(config=config)
    except TraitError as error:
        raise SettingsError(str(error)) from None
