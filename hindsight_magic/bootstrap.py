"""Where a session's identity and logging come from: the kernel id, the debug log handler."""

from __future__ import annotations

import logging
import os
import re
import sys

log = logging.getLogger("hindsight_magic")
log.addHandler(logging.NullHandler())  # never print from the worker into a cell


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (kernels and test runners replace it;
    a stream captured at import may be closed by then)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


_DEBUG_HANDLER = _CurrentStderr()
_DEBUG_HANDLER.setFormatter(logging.Formatter("hindsight_magic %(levelname)s: %(message)s"))


def configure_logging(debug: bool) -> None:
    """With ``debug`` on, show the ``hindsight_magic`` logger's debug records on stderr."""
    if debug:
        log.setLevel(logging.DEBUG)
        if _DEBUG_HANDLER not in log.handlers:
            log.addHandler(_DEBUG_HANDLER)
    else:
        log.setLevel(logging.NOTSET)
        log.removeHandler(_DEBUG_HANDLER)


def kernel_id() -> str | None:
    """The Jupyter kernel id from the connection file, when running in a kernel."""
    if "ipykernel" not in sys.modules:
        return None
    try:
        from ipykernel.connect import get_connection_file

        name = os.path.basename(get_connection_file())
    except Exception:
        return None
    match = re.fullmatch(r"kernel-(.+)\.json", name)
    return match.group(1) if match else None
