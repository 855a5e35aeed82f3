"""Loading and unloading the extension in a shell (``%load_ext``, ``%unload_ext``, ``%reload_ext``).

One ``HindsightMagics`` per shell, kept in ``LOADED``; loading twice does nothing, unloading
unhooks, retains the last cells, flushes (bounded), stops the worker and removes the magics.

Two things are attached to the shell besides the magics, and removed again on unload:

- ``CellHook``: the auto-retainer's O(1) ``post_run_cell`` (so ``%reload_ext`` leaves exactly
  one). It never prints and never raises; the worker reads the cell's outputs later through
  ``outputs_of`` (IPython ≥ 9.1 records them per cell).
- ``keep_question_marks``: an input transformer so that ``%recall what did we decide?`` is a
  question, not a help request. IPython reads a line ending in ``word?`` as ``%pinfo word``;
  for lines that call this extension's line magics with text it makes the same
  ``run_line_magic`` call IPython would, with the text verbatim. ``%recall?`` alone still
  shows the help."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from .._capture.autoretain import Outputs, error_text, plain_outputs
from .._capture.transcript import is_own_result
from .._text import plural

if TYPE_CHECKING:
    from .._capture.autoretain import AutoRetainer
    from .magics import HindsightMagics


MAGIC_NAMES = {
    "line": ("retain", "recall", "reflect", "hindsight"),
    "cell": ("retain", "recall", "reflect"),
}


LOADED: dict[int, HindsightMagics] = {}


def load(ipython: Any) -> HindsightMagics:
    """Register the magics and start the kernel's memory session (once per shell)."""
    loaded = LOADED.get(id(ipython))
    if loaded is not None:
        return loaded
    from .magics import HindsightMagics

    magics = HindsightMagics(shell=ipython)
    ipython.register_magics(magics)
    cleanup = getattr(ipython, "input_transformers_cleanup", None)
    if cleanup is not None and keep_question_marks not in cleanup:
        cleanup.append(keep_question_marks)
    LOADED[id(ipython)] = magics
    return magics


def unload(ipython: Any) -> None:
    """Flush the queue, stop the worker and remove the magics."""
    magics = LOADED.pop(id(ipython), None)
    if magics is None:
        return

    cleanup = getattr(ipython, "input_transformers_cleanup", [])
    if keep_question_marks in cleanup:
        cleanup.remove(keep_question_marks)
    try:
        left = magics.close()
    finally:
        manager = ipython.magics_manager
        for kind, names in MAGIC_NAMES.items():
            for name in names:
                bound = manager.magics[kind].get(name)
                if getattr(bound, "__self__", None) is magics:
                    del manager.magics[kind][name]
        manager.registry.pop(type(magics).__name__, None)
        if magics in ipython.configurables:
            ipython.configurables.remove(magics)
    if left:
        count = plural(left, "memory", "memories")
        print(f"hindsight_magic: {count} could not be delivered before unload.")


log = logging.getLogger("hindsight_magic")


class CellHook:
    """Connects a shell's ``post_run_cell`` event to an ``AutoRetainer``."""

    def __init__(self, autoretainer: AutoRetainer, shell: Any) -> None:
        self.post_run_cell = autoretainer.post_run_cell
        self._shell = shell
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
        if not kept:  # IPython < 9.1 records no outputs
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


MAGICS = ("retain", "recall", "reflect")
_LINE = re.compile(
    r"^(?P<indent>\s*)(?P<target>(?:[A-Za-z_][\w.]*\s*=\s*)?)"
    rf"%(?P<name>{'|'.join(MAGICS)})(?P<sep>\s+)(?P<text>\S.*?\?+)\s*$"
)


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
