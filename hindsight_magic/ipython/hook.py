"""The ``post_run_cell`` hook: the auto-retainer's O(1) ``post_run_cell``, attached to a shell.

Registered on load, unregistered on unload (so ``%reload_ext`` leaves exactly one). The hook is
the auto-retainer's own method (no extra call per cell); it never prints and never raises. The
work happens later on the worker (``capture.autoretain``), which reads the cell's outputs
through ``outputs_of`` here — IPython ≥ 9.1 records them per cell.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..capture.autoretain import Outputs, error_text, plain_outputs

if TYPE_CHECKING:
    from ..capture.autoretain import AutoRetainer

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
        for output in kept:
            if output.output_type == "execute_result":
                result_text = str(output.bundle.get("text/plain", "")) or None
            elif output.output_type == "out_stream" and error is None:
                streams.append("".join(output.bundle.get("stream", [])))
        return result_text, error, "".join(streams) or None
