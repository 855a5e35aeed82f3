"""``HindsightMagics``: ``%retain``, ``%recall``, ``%%reflect`` and ``%hindsight`` — thin wrappers.

Each magic parses its line, calls the session and returns a result object. Expected failures are
one line (``UsageError`` for bad usage, ``HindsightMagicError`` for server trouble, with a hint);
``%hindsight config debug=true`` shows full tracebacks instead.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Any as AnyTrait
from traitlets import TraitError, observe, validate

from ..api.client import HindsightError
from ..session import HindsightSession
from ..settings import (
    BUDGETS,
    CONFIGURABLE_NAMES,
    SPEC_BY_NAME,
    Settings,
    SettingsError,
    build_settings,
    coerce_value,
    env_name,
)
from ..ui.display import RetainResult
from ..ui.errors import HindsightMagicError, explain, probe_identity
from .options import FLAG, choice, identifier, parse_options, positive_int, tag_list

F = TypeVar("F", bound=Callable[..., Any])

RETAIN_USAGE = "%retain [--context TEXT] [--tags a,b] TEXT  |  %%retain [--split] … + cell"
RECALL_USAGE = "%recall [--budget low|mid|high] [--max-tokens N] [--types a,b] [--var NAME] QUERY"
REFLECT_USAGE = "%%reflect [--context TEXT] [--budget low|mid|high] [--var NAME] + question"
MAX_MEMORY_CHARS = 1_000_000  # one %retain memory; bigger is refused before anything is queued


def _trait_help(name: str) -> str:
    field = SPEC_BY_NAME[name]
    default = field.default
    if isinstance(default, tuple):
        default = ",".join(default)
    return f"{field.description} Default: {default!r}; env {env_name(name)}. None = not set here."


def _drop_invalid_config(config: Any) -> None:
    """Ignore (with one line each) invalid ``c.HindsightMagics.*`` values, so loading works."""
    section = config.get("HindsightMagics") if "HindsightMagics" in config else None
    if not section:
        return
    for name in list(section):
        try:
            if name not in CONFIGURABLE_NAMES:
                raise SettingsError(f"Unknown setting {name!r}")
            if section[name] is not None:
                coerce_value(name, section[name])
        except SettingsError as error:
            print(f"HindsightMagics config: {error} Ignored.", file=sys.stderr)
            del section[name]


def user_facing(method: F) -> F:
    """Show pending background notices, then turn expected failures into one line."""

    @functools.wraps(method)
    def wrapper(self: HindsightMagics, *args: Any, **kwargs: Any) -> Any:
        for notice in self.session.take_notices():
            print(notice, file=sys.stderr)
        try:
            return method(self, *args, **kwargs)
        except (HindsightError, SettingsError, HindsightMagicError) as error:
            if self.session.settings.debug:
                raise
            if isinstance(error, SettingsError):
                raise UsageError(str(error)) from None
            if isinstance(error, HindsightError):
                session = self.session
                known = probe_identity(session.client) if error.kind == "not_hindsight" else None
                raise HindsightMagicError(explain(error, session.api_url, known)) from None
            raise

    return wrapper  # type: ignore[return-value]


@magics_class
class HindsightMagics(Magics):
    """Long-term memory for this notebook, backed by a Hindsight server.

    Configure with ``%config HindsightMagics.<name> = value`` or ``c.HindsightMagics.<name>``
    in ``ipython_config.py``; run ``%hindsight config`` for every setting and its value.
    """

    # One config trait per setting (None = not set here: the environment or default applies).
    locals().update(
        {
            name: AnyTrait(None, allow_none=True, help=_trait_help(name)).tag(config=True)
            for name in CONFIGURABLE_NAMES
        }
    )

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        self._session: HindsightSession | None = None
        if shell is not None:
            _drop_invalid_config(shell.config)
        super().__init__(shell=shell, **kwargs)
        self._session = HindsightSession(self.current_settings(), notebook=self._notebook_path)
        if shell is not None:
            self._session.autoretain.register(shell)

    @property
    def session(self) -> HindsightSession:
        """The kernel's Hindsight session."""
        assert self._session is not None
        return self._session

    # -- settings ---------------------------------------------------------------------------

    def overrides(self) -> dict[str, Any]:
        """The settings set through IPython config or ``%hindsight config``."""
        values = {name: getattr(self, name) for name in CONFIGURABLE_NAMES}
        return {name: value for name, value in values.items() if value is not None}

    def current_settings(self) -> Settings:
        """Defaults ← environment ← IPython config / run-time values."""
        try:
            return build_settings(self.overrides())
        except SettingsError as error:
            raise UsageError(str(error)) from None

    def set_setting(self, name: str, value: Any) -> None:
        """Set one setting at run time (None resets it to the environment or default)."""
        try:
            setattr(self, name, value)
        except TraitError as error:
            raise UsageError(str(error)) from None

    @validate(*CONFIGURABLE_NAMES)
    def _validate_setting(self, proposal: Any) -> Any:
        value = proposal["value"]
        if value is None:
            return None
        try:
            return coerce_value(proposal["trait"].name, value)
        except SettingsError as error:
            # A TraitError lets traitlets roll a bad %config value back.
            raise TraitError(str(error)) from None

    @observe(*CONFIGURABLE_NAMES)
    def _setting_changed(self, change: Any) -> None:
        if self._session is not None:
            self._session.apply(self.current_settings())

    def _notebook_path(self) -> str | None:
        import os

        path = os.environ.get("JPY_SESSION_NAME")
        if not path and self.shell is not None:
            path = self.shell.user_ns.get("__vsc_ipynb_file__")
        return str(path) if path else None

    # -- magics -----------------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    @user_facing
    def retain(self, line: str, cell: str | None = None) -> RetainResult:
        """Queue a durable fact for this notebook's long-term memory.

        Usage::

            %retain The churn table double-counts Q3 refunds; dedupe on order_id.
            %retain --tags data-quality,churn --context "weekly review" Refunds are late.

            %%retain --tags methods
            We use a 5-fold grouped CV split by customer_id.

        Options: ``--context TEXT`` (where the fact comes from; default the
        ``retain_context`` setting), ``--tags a,b`` (extra tags, added to the scope's),
        ``--split`` (cell only: each blank-line-separated paragraph is its own memory).
        One memory holds at most 1,000,000 characters; larger text is refused.

        Returns at once with "1 memory queued."; a background worker sends the queue in
        batches (16 items or 5 s), and before any ``%recall``/``%%reflect``. Check delivery with
        ``%hindsight status``; ``%hindsight flush`` sends now.
        """
        spec = {"context": str, "tags": tag_list, "split": FLAG}
        options, text = parse_options(line, spec, RETAIN_USAGE)
        if cell is not None:
            if text:
                raise UsageError(
                    f"Put the memory in the cell body, not after %%retain. {RETAIN_USAGE}"
                )
            text = cell
        elif options.get("split"):
            raise UsageError("--split is for %%retain (a cell of paragraphs).")
        if options.get("split"):
            pieces = [p.strip() for p in text.split("\n\n") if p.strip()]
        else:
            pieces = [text.strip()] if text.strip() else []
        if not pieces:
            raise UsageError(f"Nothing to retain: give the fact to remember. Usage: {RETAIN_USAGE}")
        largest = max(len(piece) for piece in pieces)
        if largest > MAX_MEMORY_CHARS:
            raise UsageError(
                f"Too large to retain: {largest:,} characters in one memory (the limit is "
                f"{MAX_MEMORY_CHARS:,}). Retain a summary, or paragraphs with %%retain --split."
            )
        for piece in pieces:
            self.session.retain(piece, context=options.get("context"), tags=options.get("tags", ()))
        return RetainResult(len(pieces))

    @no_var_expand
    @line_cell_magic
    @user_facing
    def recall(self, line: str, cell: str | None = None) -> Any:
        """Search this notebook's long-term memory; returns ranked memories as a table.

        Usage::

            %recall churn data quality
            memories = %recall --budget high what did we decide about outliers?

            %%recall --max-tokens 2048
            What do we know about the refunds table?

        Options: ``--budget low|mid|high`` (search effort; default ``recall_budget``),
        ``--max-tokens N`` (size of the results), ``--types world,experience``,
        ``--var NAME`` (also store the result in NAME).

        The result is a sequence of memories (``.text``, ``.type``, ``.tags``, ``.scores``);
        ``.as_context()`` gives a ``<memories>`` block to paste into an LLM prompt. Queued
        memories are sent first, so what you just retained can be found (about a second later).
        """
        spec = {
            "budget": choice(*BUDGETS),
            "max_tokens": positive_int,
            "types": tag_list,
            "var": identifier,
        }
        options, query = parse_options(line, spec, RECALL_USAGE)
        if cell is not None:
            query = f"{query}\n{cell}".strip()
        if not query.strip():
            raise UsageError(f"Nothing to search for: give a query. Usage: {RECALL_USAGE}")
        result = self.session.recall(
            query.strip(),
            budget=options.get("budget"),
            max_tokens=options.get("max_tokens"),
            types=options.get("types"),
        )
        if "var" in options:
            self.shell.user_ns[options["var"]] = result
        return result

    @no_var_expand
    @line_cell_magic
    @user_facing
    def reflect(self, line: str, cell: str | None = None) -> Any:
        """Ask the Hindsight server to synthesize an answer from this notebook's memory.

        Usage::

            %%reflect
            What have we learned about data quality in this project?

            %%reflect --context "for the weekly report" --var answer
            Summarize the modelling decisions so far.

            %reflect What conventions does this project follow?

        Options: ``--context TEXT`` (extra guidance for the answer), ``--budget low|mid|high``
        (default ``recall_budget``), ``--var NAME`` (also store the answer in NAME).

        Returns the answer as Markdown (a ``str``). With the local server's mock LLM the
        answer is a placeholder; configure a real LLM on the server for real answers.
        """
        spec = {"context": str, "budget": choice(*BUDGETS), "var": identifier}
        options, question = parse_options(line, spec, REFLECT_USAGE)
        if cell is not None:
            question = f"{question}\n{cell}".strip()
        if not question.strip():
            raise UsageError(f"Nothing to reflect on: give a question. Usage: {REFLECT_USAGE}")
        answer = self.session.reflect(
            question.strip(), context=options.get("context"), budget=options.get("budget")
        )
        if "var" in options:
            self.shell.user_ns[options["var"]] = answer
        return answer

    @line_magic
    @user_facing
    def hindsight(self, line: str) -> Any:
        """Manage this notebook's Hindsight memory session.

        Usage: ``%hindsight SUBCOMMAND [ARGS]``. Subcommands:

        - ``help`` — this list;
        - ``status`` — server, bank, tags, queue;
        - ``config [NAME[=VALUE]]`` — show or change settings (``NAME=`` resets one);
        - ``scope [global|per-project|per-project-tagged] [--project LABEL]`` — show or change
          where memories go;
        - ``bank [NAME] [--prefix P]`` — show or change the base bank;
        - ``flush`` — send queued memories now and wait (bounded);
        - ``retry [--drop]`` — re-send (or discard) memories the server refused earlier;
        - ``clear`` — forget the local recall cache and notices (server memory stays);
        - ``autoretain [on|off|every N|now|status]`` — the every-N-cells transcript;
        - ``server start|stop|status|logs`` — the local Hindsight server on this machine;
        - ``models [list | show ID | refresh [ID] | seed | delete ID | history ID]`` — the bank's
          mental models (curated summaries the server keeps up to date);
        - ``context`` — the ``<mental_models>`` block plus the last ``%recall``'s ``<memories>``
          block as one string, e.g. ``prompt = %hindsight context``;
        - ``panel`` — a live panel (queue, auto-retain, mental models; buttons to flush, retry,
          refresh and pause) that updates itself; a text snapshot where widgets cannot show;
        - ``doctor`` — check packages, server, key, bank, journal and widgets: ``ok`` or ``fix:``
          lines saying what to do.
        """
        from .subcommands import run_subcommand

        return run_subcommand(self, line)

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> int:
        """Unhook, retain the last cells, flush and stop; returns memories left undelivered."""
        if self.shell is not None:
            self.session.autoretain.unregister(self.shell)
        return self.session.close()
