"""hindsight_magic — long-term memory for Jupyter notebooks, backed by a Hindsight server.

In a notebook: ``%load_ext hindsight_magic``, then ``%retain``, ``%recall``, ``%%reflect`` and
``%hindsight help``. From Python (scripts, papermill, your own LLM prompts)::

    import hindsight_magic as hm

    hm.retain("The churn table double-counts Q3 refunds.", tags=["data-quality"])
    memories = hm.recall("churn data quality")      # a RecallResult: .texts, .as_context()
    answer = hm.reflect("What do we know about refunds?")
    hm.flush(timeout=10)                              # send what is queued now
    print(hm.status())

Inside IPython these use the kernel's session (loading the extension if needed); elsewhere one
session per process, without the cell hook. Importing this package is cheap: the session, httpx
and pydantic are imported on first use, ipywidgets only for a panel.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__
from .public_api import flush, recall, reflect, retain, status

__all__ = [
    "__version__",
    "flush",
    "load_ipython_extension",
    "recall",
    "reflect",
    "retain",
    "status",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics and start the kernel's memory session (called by ``%load_ext``)."""
    from .ipython.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Flush the queue, stop the worker and remove the magics (``%unload_ext``/``%reload_ext``)."""
    from .ipython.extension import unload

    unload(ipython)
