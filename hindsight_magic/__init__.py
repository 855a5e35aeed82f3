"""hindsight_magic — long-term memory for Jupyter notebooks, backed by a Hindsight server.

In a notebook: ``%load_ext hindsight_magic``, then ``%retain``, ``%recall``, ``%%reflect`` and
``%hindsight help``. From Python (scripts, papermill, your own LLM prompts)::

    import hindsight_magic as hm

    hm.retain("The churn table double-counts Q3 refunds.", tags=["data-quality"])
    memories = hm.recall("churn data quality")      # a RecallResult: .texts, .as_context()
    answer = hm.reflect("What do we know about refunds?")
    hm.flush(timeout=10)                              # send what is queued now
    print(hm.status())
    hm.forget(memories[0], reason="wrong")             # or "#1"; hm.restore brings it back
    hm.timeline(by="week", since="30d")               # memories per week, as a figure
    hm.memory_map("Alice")                            # an entity, its neighbours, its memories

Inside IPython these use the kernel's session (loading the extension if needed); elsewhere one
session per process, without the cell hook. Bad input raises ``InputError`` (a ``ValueError``)
with one line saying what to do, or one of its kinds (``SettingsError``, ``CurationError``,
``ArchiveError`` …); server trouble raises ``HindsightError``; all are ``Error``.

Everything named here is the public API; the modules and packages whose names start with an
underscore are private and may change without notice. Importing this package is cheap: the
session, httpx and pydantic are imported on first use, ipywidgets only for a panel, and the
result types below when first named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import Error, HindsightError, InputError
from ._functions import (
    add_layer,
    clone,
    context,
    correct,
    dedupe,
    delete,
    flush,
    forget,
    forgotten,
    history,
    latest,
    layers,
    memory_map,
    project_session,
    purge_matching,
    recall,
    reflect,
    remove_layer,
    restore,
    retain,
    snapshot,
    status,
    timeline,
    verify,
)
from ._version import __version__

if TYPE_CHECKING:
    from ._capture.evidence import Evidence
    from ._delivery.items import QueueClosedError, QueueFullError
    from ._memory.archive import ArchiveError
    from ._memory.curation import CurationError, Outcome
    from ._memory.layers import LayerError, LayerList
    from ._memory.overview import OverviewError
    from ._memory.parsed_replies import RecalledMemory, Sources
    from ._memory.provenance import Provenance
    from ._memory.results import RecallResult, ReflectResult
    from ._session import HindsightSession as Session
    from ._settings import HindsightSettings as Settings
    from ._settings import SettingsError
    from ._timewindow import WhenError
    from ._ui.display import FlushResult, Report, RetainResult
    from ._ui.pictures import MemoryMap, Timeline

# What a user calls, types or catches, each with its reason in ``tests/test_public_face.py``.
# A type a ``Session`` method takes or returns is not here by that alone: a user reaches those
# values through the functions (``hm.flush(session=s)``), and what only the extension's wiring
# calls stays private (IPython's ``load_ipython_extension``/``unload_ipython_extension`` below
# are its protocol, found by name, not a user's call).
__all__ = [
    "ArchiveError",
    "CurationError",
    "Error",
    "Evidence",
    "FlushResult",
    "HindsightError",
    "InputError",
    "LayerError",
    "LayerList",
    "MemoryMap",
    "Outcome",
    "OverviewError",
    "Provenance",
    "QueueClosedError",
    "QueueFullError",
    "RecallResult",
    "RecalledMemory",
    "ReflectResult",
    "Report",
    "RetainResult",
    "Session",
    "Settings",
    "SettingsError",
    "Sources",
    "Timeline",
    "WhenError",
    "__version__",
    "add_layer",
    "clone",
    "context",
    "correct",
    "dedupe",
    "delete",
    "flush",
    "forget",
    "forgotten",
    "history",
    "latest",
    "layers",
    "memory_map",
    "project_session",
    "purge_matching",
    "recall",
    "reflect",
    "remove_layer",
    "restore",
    "retain",
    "snapshot",
    "status",
    "timeline",
    "verify",
]

# The result types and the errors raised beside the code that raises them, imported when
# first named (``hm.RecallResult``, ``except hm.CurationError``): the modules behind them would
# make ``import hindsight_magic`` cost what ``%load_ext`` does. ``"module:Name"`` where the
# public name says more than the class's own (``Settings``).
_LAZY = {
    "ArchiveError": "._memory.archive",
    "CurationError": "._memory.curation",
    "Evidence": "._capture.evidence",
    "FlushResult": "._ui.display",
    "LayerError": "._memory.layers",
    "LayerList": "._memory.layers",
    "MemoryMap": "._ui.pictures",
    "Outcome": "._memory.curation",
    "OverviewError": "._memory.overview",
    "Provenance": "._memory.provenance",
    "QueueClosedError": "._delivery.items",
    "QueueFullError": "._delivery.items",
    "RecallResult": "._memory.results",
    "RecalledMemory": "._memory.parsed_replies",
    "ReflectResult": "._memory.results",
    "Report": "._ui.display",
    "RetainResult": "._ui.display",
    "Session": "._session",
    "Settings": "._settings:HindsightSettings",
    "SettingsError": "._settings",
    "Sources": "._memory.parsed_replies",
    "Timeline": "._ui.pictures",
    "WhenError": "._timewindow",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, _, attribute = _LAZY[name].partition(":")
        return getattr(importlib.import_module(module, __name__), attribute or name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics and start the kernel's memory session (called by ``%load_ext``)."""
    from ._ipython.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Flush the queue, stop the worker and remove the magics (``%unload_ext``/``%reload_ext``)."""
    from ._ipython.extension import unload

    unload(ipython)
