"""``HindsightMagics``: ``%retain``, ``%recall``, ``%%reflect`` and ``%hindsight`` — thin wrappers.

Each magic turns its line into a call of the public API (``hindsight_magic.retain`` …) on this
kernel's session and returns what it returns; ``%hindsight`` hands its line to the subcommands'
table with a ``HandlerContext`` (the session, these settings, the shell). Expected failures are
one line (``UsageError`` for bad usage, a ``HindsightError`` for server trouble, in the
session's words, with a hint: ``_diagnosis.in_words``); ``%hindsight config debug=true`` shows
full tracebacks instead.
The settings are this class's traits (inherited from ``HindsightSettings``): ``%config
HindsightMagics.<name> = value``. The extension (``extension.py``) attaches it to a shell.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand

from .. import _functions, _operations
from .._diagnosis import in_words
from .._errors import Error, HindsightError, InputError
from .._machine import notebook_from_env
from .._memory.provenance import RETAIN_MAGIC
from .._memory.results import RecallResult, ReflectResult
from .._session import HindsightSession
from .._session.wiring import take_notices
from .._settings import HindsightSettings, SettingsError
from .._text import plain_text
from .._ui.display import RetainResult
from .parsing import MagicOptions
from .subcommands import HandlerContext, help_text, run_subcommand

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

RETAIN_OPTIONS = MagicOptions("%retain", _operations.RETAIN)
_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?(?!\S)")  # 09:30 left after an unquoted --at date
RECALL_OPTIONS = MagicOptions("%recall", _operations.RECALL)
REFLECT_OPTIONS = MagicOptions("%%reflect", _operations.REFLECT)


def _drop_invalid_config(config: Any) -> None:
    """Ignore (with one line each) invalid ``c.HindsightMagics.*`` values, so loading works."""
    section = config.get("HindsightMagics") if "HindsightMagics" in config else None
    if not section:
        return
    for name in list(section):
        try:
            if section[name] is None:  # "not set here"
                del section[name]
                continue
            HindsightSettings.parse(name, section[name])
        except SettingsError as error:
            print(f"HindsightMagics config: {error} Ignored.", file=sys.stderr)
            del section[name]


def user_facing(usage: str | None = None) -> Callable[[F], F]:
    """Show pending background notices, then turn expected failures into one line: bad input
    as IPython's ``UsageError``, ending with the magic's ``usage`` line when it has one; a failed
    server call as the ``HindsightError`` in the session's words (``in_words``); any other
    error of the family (a queue that takes no more) as its own one line, which says what to
    do, under its own name."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(self: HindsightMagics, *args: Any, **kwargs: Any) -> Any:
            for notice in take_notices(self.session):
                print(plain_text(notice), file=sys.stderr)
            try:
                return method(self, *args, **kwargs)
            except InputError as error:  # bad input: one line, even with debug on
                raise UsageError(f"{error} Usage: {usage}" if usage else str(error)) from None
            except HindsightError as error:
                if self.debug:
                    raise
                raise in_words(error, self.session.explain(error)) from None
            except Error as error:
                if self.debug:
                    raise
                line = f"{type(error).__name__}: {plain_text(str(error))}"
                error._render_traceback_ = lambda: [line]
                raise

        return wrapper  # type: ignore[return-value]

    return decorate


def _refuse_a_time_cut_from_its_date(options: dict[str, Any], line: str, text: str) -> None:
    """``%retain --at 2025-03-14 09:30 Standup moved`` would date the memory at midnight and
    make "09:30" its first word: a ``UsageError`` asks for the quotes instead. A ``--at`` with
    its own time, or ``--`` before the text, means the text starts with a time on purpose."""
    when = options.get("timestamp")
    clock = _CLOCK.match(text)
    if when is None or clock is None or ":" in when:
        return
    if line[: len(line) - len(text)].rstrip().endswith((" --", "\t--")):
        return
    raise UsageError(
        f'Quote a date with its time: --at "{when} {clock.group(0)}" (or put -- before a memory '
        f"that starts with a time). Usage: {RETAIN_OPTIONS.usage}"
    )


@magics_class
class HindsightMagics(Magics, HindsightSettings):
    """Long-term memory for this notebook, backed by a Hindsight server.

    Configure with ``%config HindsightMagics.<name> = value`` or ``c.HindsightMagics.<name>``
    in ``ipython_config.py``; run ``%hindsight config`` for every setting and its value.
    """

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        if shell is not None:
            _drop_invalid_config(shell.config)
        try:
            super().__init__(shell=shell, **kwargs)
        except SettingsError as error:  # an invalid HINDSIGHT_* variable
            if shell is not None and self in shell.configurables:
                shell.configurables.remove(self)  # Magics.__init__ added the half-built self
            raise UsageError(str(error)) from None
        self.session = HindsightSession(self, notebook=self._notebook_path)

    def _notebook_path(self) -> str | None:
        path = notebook_from_env()
        if not path and self.shell is not None:  # ipykernel's copy of it, or VS Code's
            namespace = self.shell.user_ns
            path = namespace.get("__session__") or namespace.get("__vsc_ipynb_file__")
        return str(path) if path else None

    # -- magics -----------------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    @user_facing(RETAIN_OPTIONS.usage)
    @RETAIN_OPTIONS.document
    def retain(self, line: str, cell: str | None = None) -> RetainResult:
        """{summary}

        Usage::

            %retain The churn table double-counts Q3 refunds; dedupe on order_id.
            %retain --tags data-quality,churn --context "weekly review" Refunds are late.
            %retain --at 2025-03-14 The pump was recalibrated; older runs read 4% high.

            %%retain --tags methods
            We use a 5-fold grouped CV split by customer_id.

        {options}

        One memory holds at most 1,000,000 characters; larger text is refused. Each memory
        records where it came from: the notebook (when Jupyter tells it), this cell's number
        and the kernel session — ``%recall`` shows them next to the memory.

        Returns at once with "1 memory queued."; a background worker sends the queue in
        batches (16 items or 5 s), and before any ``%recall``/``%%reflect``. When the server was
        last found not answering, the line says so (once in full, then short): the memory waits
        in the journal until it is back. Check delivery with ``%hindsight status``;
        ``%hindsight flush`` sends now. From Python:
        ``hindsight_magic.retain(text, tags=…, context=…, timestamp=…)``.

        ``--at`` dates a memory when its fact was written or true (last year's lab notes,
        a transcript), so ``%recall --since``/``--until`` and ``--as-of`` find it then; a day
        is its start, a date in the future is refused.
        """
        options, text = RETAIN_OPTIONS.parse(line)
        _refuse_a_time_cut_from_its_date(options, line, text)
        if cell is not None:
            if text:
                raise UsageError(
                    f"Put the memory in the cell body, not after %%retain. {RETAIN_OPTIONS.usage}"
                )
            text = cell
        elif options.get("split"):
            raise UsageError("--split is for %%retain (a cell of paragraphs).")
        # every declared option is queue_text's keyword (tests/test_public_api.py checks)
        keywords = _operations.RETAIN.keywords(options)
        return _functions.queue_text(text, self.session, RETAIN_MAGIC, **keywords)

    @no_var_expand
    @line_cell_magic
    @user_facing(RECALL_OPTIONS.usage)
    @RECALL_OPTIONS.document
    def recall(self, line: str, cell: str | None = None) -> RecallResult:
        """{summary}

        Usage::

            %recall churn data quality
            %recall --limit 20 churn data quality
            memories = %recall --budget high what did we decide about outliers?
            %recall --since 2026-11-03 --until today flux calibration
            %recall --until "3 Nov" what did we believe before the re-run?
            %recall --as-of yesterday what tenure cut-off do we use?

            %%recall --max-tokens 2048
            What do we know about the refunds table?

        {options}

        The most relevant memories are shown (5 unless ``--limit`` or ``recall_limit`` says
        otherwise), and the headline says how many of the memories the recall ranked match the
        query (share a word with it or are close to it in meaning): ``5 memories shown; 14
        match the query``. Each memory is shown with where it came from (notebook · cell · how
        long ago), its tags and relevance (0-1, what the memories are ordered by) and, when the
        session reads layers (a course or team bank beside your own), its layer. The result is
        a sequence of memories (``.text``, ``.type``, ``.tags``, ``.relevance``,
        ``.provenance.notebook``, ``.provenance.cells`` …); ``.as_context()`` gives a
        ``<memories>`` block to paste into an LLM prompt. Queued memories are sent first, so
        what you just retained can be found (about a second later).
        From Python: ``hindsight_magic.recall(query, budget=…, since=…, until=…)``, whose
        docstring says how a window is applied (a filter, not only the server's ranking hint).
        """
        options, query = RECALL_OPTIONS.parse(line)
        if cell is not None:
            query = f"{query}\n{cell}"
        # every declared option but --var is hm.recall's keyword of that name
        # (tests/test_public_api.py checks): an option declared is an option passed
        keywords = _operations.RECALL.keywords(options)
        result = _functions.recall(query, session=self.session, **keywords)
        return self._store_var(options, result)

    @no_var_expand
    @line_cell_magic
    @user_facing(REFLECT_OPTIONS.usage)
    @REFLECT_OPTIONS.document
    def reflect(self, line: str, cell: str | None = None) -> ReflectResult:
        """{summary}

        Usage::

            %%reflect
            What have we learned about data quality in this project?

            %%reflect --context "for the weekly report" --var answer
            Summarize the modelling decisions so far.

            %reflect What conventions does this project follow?

        {options}

        Returns the answer as Markdown (a ``str``), followed by a collapsible **Based on**
        list: the memories it drew on (each with its notebook · cell · age), the mental models
        and the directives. ``.based_on`` keeps them (``.memories``, ``.mental_models``,
        ``.directives``). When the server has no LLM to write an answer (the local server's
        default), one line says so and how to get one
        (``hindsight-magic server start --llm openai``), and the memories that bear on the
        question follow, best first, as ``%recall`` shows them. From Python:
        ``hindsight_magic.reflect(question, context=…, sources=True)``.
        """
        options, question = REFLECT_OPTIONS.parse(line)
        if cell is not None:
            question = f"{question}\n{cell}"
        # as %recall's: each declared option reaches hm.reflect (--no-sources as sources=False)
        keywords = _operations.REFLECT.keywords(options)
        answer = _functions.reflect(question, session=self.session, **keywords)
        return self._store_var(options, answer)

    @line_magic
    @user_facing()
    def hindsight(self, line: str) -> Any:
        """Manage this notebook's Hindsight memory session: ``%hindsight SUBCOMMAND [ARGS]``.

        Subcommands (``%hindsight help`` shows the same list):

        """
        return run_subcommand(HandlerContext(self.session, self, self.shell), line)

    def _store_var(self, options: dict[str, Any], value: T) -> T:
        """``--var NAME``: also store ``value`` in the user's namespace."""
        if "var" in options and self.shell is not None:
            self.shell.user_ns[options["var"]] = value
        return value


HindsightMagics.hindsight.__doc__ = f"{HindsightMagics.hindsight.__doc__}{help_text()}"
