"""hindsight_magic — long-term memory for Jupyter notebooks, backed by a Hindsight server.

Load it with ``%load_ext hindsight_magic``; then ``%retain``, ``%recall``, ``%%reflect`` and
``%hindsight help``. Importing this package is cheap: the magics are imported at load, httpx and
pydantic on first use, ipywidgets only for a panel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .ipython.magics import HindsightMagics

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]

MAGIC_NAMES = {
    "line": ("retain", "recall", "reflect", "hindsight"),
    "cell": ("retain", "recall", "reflect"),
}
_loaded: dict[int, HindsightMagics] = {}


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics and start the kernel's memory session (called by ``%load_ext``)."""
    if id(ipython) in _loaded:
        return
    from .ipython.magics import HindsightMagics
    from .ipython.questions import keep_question_marks

    magics = HindsightMagics(shell=ipython)
    ipython.register_magics(magics)
    cleanup = getattr(ipython, "input_transformers_cleanup", None)
    if cleanup is not None and keep_question_marks not in cleanup:
        cleanup.append(keep_question_marks)
    _loaded[id(ipython)] = magics


def unload_ipython_extension(ipython: Any) -> None:
    """Flush the queue, stop the worker and remove the magics (``%unload_ext``/``%reload_ext``)."""
    magics = _loaded.pop(id(ipython), None)
    if magics is None:
        return
    from .ipython.questions import keep_question_marks

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
        count = f"{left} memory" if left == 1 else f"{left} memories"
        print(f"hindsight_magic: {count} could not be delivered before unload.")
