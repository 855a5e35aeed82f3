"""Loading and unloading the extension in a shell (``%load_ext``, ``%unload_ext``, ``%reload_ext``).

One ``HindsightMagics`` per shell, kept in ``LOADED``; loading twice does nothing, unloading
unhooks, retains the last cells, flushes (bounded), stops the worker and removes the magics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..text import plural

if TYPE_CHECKING:
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
    from .questions import keep_question_marks

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
    from .questions import keep_question_marks

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
