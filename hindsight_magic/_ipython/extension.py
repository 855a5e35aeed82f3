"""Loading and unloading the extension in a shell (``%load_ext``, ``%unload_ext``, ``%reload_ext``).

``load`` attaches an ``Attachment`` to the shell and registers it in ``_functions.SESSIONS``,
the one map from a shell to its session (so ``hm.retain()`` in a cell finds it); loading twice
does nothing. ``unload`` removes it from there and detaches it: unhooks, retains the last cells,
flushes (bounded), stops the worker and removes the magics.

Besides the magics, two things are attached to the shell, and removed again on unload:

- ``CellHook``: the auto-retainer's O(1) ``post_run_cell`` (so ``%reload_ext`` leaves exactly
  one). It never prints and never raises; the worker reads the cell's outputs later through
  ``outputs_of`` (IPython ≥ 9.1 records them per cell; before it, printed output is not
  recorded, and with ``retain_outputs=all`` a notice says so once).
- ``keep_question_marks``: an input transformer so that ``%recall what did we decide?`` is a
  question, not a help request. IPython reads a line ending in ``word?`` as ``%pinfo word``;
  for lines that call this extension's line magics with text it makes the same
  ``run_line_magic`` call IPython would, with the text verbatim. ``%recall?`` alone still
  shows the help. IPython reads a whole cell before running it, so in the cell that loads the
  extension such a line is already a help request: ``load`` says so (``READ_AS_HELP``)."""

from __future__ import annotations

import functools
import logging
import re
from typing import TYPE_CHECKING, Any

import IPython

from .._capture.autoretain import Outputs, error_text, plain_outputs
from .._capture.transcript import is_own_result
from .._functions import SESSIONS
from .._settings import RetainOutputs
from .._text import plural
from .magics import HindsightMagics

if TYPE_CHECKING:
    from .._session import HindsightSession


MAGIC_NAMES = {
    "line": ("retain", "recall", "reflect", "hindsight"),
    "cell": ("retain", "recall", "reflect"),
}


def load(ipython: Any) -> None:
    """Register the magics and start the kernel's memory session (once per shell)."""
    if SESSIONS.registered(ipython) is None:
        SESSIONS.register(ipython, Attachment(ipython))
        asked = questions_read_as_help(ipython)
        if asked:
            them = "it" if asked == 1 else "them"
            print(READ_AS_HELP.format(lines=plural(asked, "line", "lines"), them=them))


def unload(ipython: Any) -> None:
    """Flush the queue, stop the worker and remove the magics."""
    attached = SESSIONS.unregister(ipython)
    if not isinstance(attached, Attachment):
        return
    left = attached.detach()
    if left:
        count = plural(left, "memory", "memories")
        print(f"hindsight_magic: {count} could not be delivered before unload.")


class Attachment:
    """What the extension attaches to one shell: the magics (which make the kernel's
    session), the cell hook and the question-mark transformer."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.magics = HindsightMagics(shell=shell)  # UsageError: a bad HINDSIGHT_* variable
        session = self.magics.session
        self.hook = CellHook(session, shell)
        self.hook.register()
        shell.register_magics(self.magics)
        cleanup = getattr(shell, "input_transformers_cleanup", None)
        if cleanup is not None and keep_question_marks not in cleanup:
            cleanup.append(keep_question_marks)

    @property
    def session(self) -> HindsightSession:
        """The kernel's session (the magics made it)."""
        return self.magics.session

    def detach(self) -> int:
        """Unhook, retain the last cells, flush and stop, remove the magics; returns the
        memories left undelivered."""
        shell, magics = self.shell, self.magics
        cleanup = getattr(shell, "input_transformers_cleanup", [])
        if keep_question_marks in cleanup:
            cleanup.remove(keep_question_marks)
        try:
            self.hook.unregister()
            return magics.session.close()
        finally:
            manager = shell.magics_manager
            for kind, names in MAGIC_NAMES.items():
                for name in names:
                    bound = manager.magics[kind].get(name)
                    if getattr(bound, "__self__", None) is magics:
                        del manager.magics[kind][name]
            manager.registry.pop(type(magics).__name__, None)
            if magics in shell.configurables:
                shell.configurables.remove(magics)


log = logging.getLogger("hindsight_magic")


class CellHook:
    """Connects a shell's ``post_run_cell`` event to a session's auto-retain, and reads an
    executed cell's outputs for it from what the shell kept."""

    def __init__(self, session: HindsightSession, shell: Any) -> None:
        from .._session.wiring import cell_hook, notice

        autoretainer = cell_hook(session)
        self.post_run_cell = autoretainer.post_run_cell
        self._shell = shell
        self._settings = session.settings
        self._notice = functools.partial(notice, session)
        self._told_no_streams = False
        autoretainer.outputs_of = self.outputs_of

    def register(self) -> None:
        """Attach to the shell (once)."""
        if self.post_run_cell not in self._shell.events.callbacks["post_run_cell"]:
            self._shell.events.register("post_run_cell", self.post_run_cell)

    def unregister(self) -> None:
        """Detach from the shell."""
        if self.post_run_cell in self._shell.events.callbacks["post_run_cell"]:
            self._shell.events.unregister("post_run_cell", self.post_run_cell)

    def outputs_of(self, result: Any) -> Outputs:
        """(result text, error text, stdout) of an executed cell, from what IPython kept."""
        outputs = getattr(getattr(self._shell, "history_manager", None), "outputs", None)
        kept = outputs.get(result.execution_count) if outputs is not None else None
        if not kept:
            if outputs is None and self._settings.retain_outputs == RetainOutputs.ALL:
                self._tell_no_streams()
            return plain_outputs(result)
        error = error_text(result)
        result_text = None
        streams = []
        own = is_own_result(result.result)  # a recall or status shown: never retained
        for output in kept:
            if output.output_type == "execute_result" and not own:
                result_text = str(output.bundle.get("text/plain", "")) or None
            elif output.output_type == "out_stream" and error is None:
                streams.append("".join(output.bundle.get("stream", [])))
        return result_text, error, "".join(streams) or None

    def _tell_no_streams(self) -> None:
        """Say once that ``retain_outputs=all`` cannot keep printed output on this IPython."""
        if not self._told_no_streams:
            self._told_no_streams = True
            self._notice(NO_STREAMS.format(version=IPython.__version__))


NO_STREAMS = (
    "retain_outputs=all: IPython {version} does not record printed output, so auto-retain keeps"
    " cell values and errors only (IPython 9.1 or later keeps printed output too)."
)


MAGICS = ("retain", "recall", "reflect")
_LINE = re.compile(
    r"^(?P<indent>\s*)(?P<target>(?:[A-Za-z_][\w.]*\s*=\s*)?)"
    rf"%(?P<name>{'|'.join(MAGICS)})(?P<sep>\s+)(?P<text>\S.*?\?+)\s*$"
)


READ_AS_HELP = (
    "hindsight_magic: IPython read this cell before the extension was loaded, so {lines} ending"
    ' in `?` ran as help requests ("Object … not found"); run {them} again in a new cell.'
)


def questions_read_as_help(shell: Any) -> int:
    """How many lines of the running cell (as typed) ``keep_question_marks`` would have kept
    as questions, when IPython turned them into help requests (``%pinfo``) because the
    extension was not loaded yet as it read the cell (a ``%reload_ext`` cell was read with it)."""
    history = getattr(shell, "history_manager", None)
    typed = getattr(history, "input_hist_raw", None)
    parsed = getattr(history, "input_hist_parsed", None)
    if not typed or not parsed or "?" not in typed[-1] or "'pinfo" not in parsed[-1]:
        return 0
    lines = typed[-1].splitlines()
    return sum(1 for line in lines if keep_question_marks([line]) != [line])


def keep_question_marks(lines: list[str]) -> list[str]:
    """Rewrite ``%recall text?`` lines as explicit magic calls; other lines are untouched."""
    if not any("?" in line for line in lines):
        return lines
    result = []
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None or match.group("text").startswith("?"):
            result.append(line)
            continue
        name, text = match.group("name"), match.group("text")
        call = f"get_ipython().run_line_magic({name!r}, {text!r})"
        newline = "\n" if line.endswith("\n") else ""
        result.append(f"{match.group('indent')}{match.group('target')}{call}{newline}")
    return result
