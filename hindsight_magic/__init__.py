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
    from ._capture.autoretain import AutoRetainStatus
    from ._capture.autoretain import Source as MemorySource
    from ._capture.evidence import Evidence
    from ._delivery.items import (
        FlushOutcome,
        NotAnswering,
        QueueClosedError,
        QueueFullError,
        QueueStats,
        UpdateMode,
    )
    from ._memory.archive import ArchiveError, Progress
    from ._memory.curation import CurationError, Outcome
    from ._memory.layers import LayerError, LayerList
    from ._memory.mental_models import MentalModel, ModelChange, RefreshOutcome, SeedOutcome
    from ._memory.overview import EntityMap, OverviewError, Period, TimelineCounts
    from ._memory.parsed_replies import RecalledMemory, Sources
    from ._memory.provenance import AgentOrigin, Provenance
    from ._memory.results import RecallResult, ReflectResult
    from ._memory.timewindow import AsOf, TimeWindow, WhenError
    from ._operations import RecallRequest, ReflectRequest
    from ._session import HindsightSession as Session
    from ._session.status import SessionStatus
    from ._settings import Budget, SettingsError
    from ._settings import HindsightSettings as Settings
    from ._ui.display import FlushResult, Report, RetainResult
    from ._ui.pictures import MemoryMap, Timeline


__all__ = [
    "AgentOrigin",
    "ArchiveError",
    "AsOf",
    "AutoRetainStatus",
    "Budget",
    "CurationError",
    "EntityMap",
    "Error",
    "Evidence",
    "FlushOutcome",
    "FlushResult",
    "HindsightError",
    "InputError",
    "LayerError",
    "LayerList",
    "MemoryMap",
    "MemorySource",
    "MentalModel",
    "ModelChange",
    "NotAnswering",
    "Outcome",
    "OverviewError",
    "Period",
    "Progress",
    "Provenance",
    "QueueClosedError",
    "QueueFullError",
    "QueueStats",
    "RecallRequest",
    "RecallResult",
    "RecalledMemory",
    "ReflectRequest",
    "ReflectResult",
    "RefreshOutcome",
    "Report",
    "RetainResult",
    "SeedOutcome",
    "Session",
    "SessionStatus",
    "Settings",
    "SettingsError",
    "Sources",
    "TimeWindow",
    "Timeline",
    "TimelineCounts",
    "UpdateMode",
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
    "load_ipython_extension",
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
    "unload_ipython_extension",
    "verify",
]

# The result types and the errors raised beside the code that raises them, imported when
# first named (``hm.RecallResult``, ``except hm.CurationError``): the modules behind them would
# make ``import hindsight_magic`` cost what ``%load_ext`` does. ``"module:Name"`` where the
# public name says more than the class's own (``Settings``, ``MemorySource``).
_LAZY = {
    "AgentOrigin": "._memory.provenance",
    "ArchiveError": "._memory.archive",
    "AsOf": "._memory.timewindow",
    "AutoRetainStatus": "._capture.autoretain",
    "Budget": "._settings",
    "CurationError": "._memory.curation",
    "EntityMap": "._memory.overview",
    "Evidence": "._capture.evidence",
    "FlushOutcome": "._delivery.items",
    "FlushResult": "._ui.display",
    "LayerError": "._memory.layers",
    "LayerList": "._memory.layers",
    "MemoryMap": "._ui.pictures",
    "MemorySource": "._capture.autoretain:Source",
    "MentalModel": "._memory.mental_models",
    "ModelChange": "._memory.mental_models",
    "NotAnswering": "._delivery.items",
    "Outcome": "._memory.curation",
    "OverviewError": "._memory.overview",
    "Period": "._memory.overview",
    "Progress": "._memory.archive",
    "Provenance": "._memory.provenance",
    "QueueClosedError": "._delivery.items",
    "QueueFullError": "._delivery.items",
    "QueueStats": "._delivery.items",
    "RecallRequest": "._operations",
    "RecallResult": "._memory.results",
    "RecalledMemory": "._memory.parsed_replies",
    "ReflectRequest": "._operations",
    "ReflectResult": "._memory.results",
    "RefreshOutcome": "._memory.mental_models",
    "Report": "._ui.display",
    "RetainResult": "._ui.display",
    "SeedOutcome": "._memory.mental_models",
    "Session": "._session",
    "SessionStatus": "._session.status",
    "Settings": "._settings:HindsightSettings",
    "SettingsError": "._settings",
    "Sources": "._memory.parsed_replies",
    "TimeWindow": "._memory.timewindow",
    "Timeline": "._ui.pictures",
    "TimelineCounts": "._memory.overview",
    "UpdateMode": "._delivery.items",
    "WhenError": "._memory.timewindow",
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
