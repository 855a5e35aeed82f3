"""The local Hindsight server (an optional extra): launcher, PostgreSQL, data, the CLI actions.

Never imported by ``%load_ext``: only ``hindsight-magic server`` and ``%hindsight server`` reach
it. Its one exception, ``ServerError``, is defined here so that every module of the package can
raise it without importing another.
"""

from __future__ import annotations

from .._errors import Error


class ServerError(Error):
    """A local-server failure. ``str()`` is one line saying what to do; ``log_tail`` holds the
    last lines of the server log (start failures) for callers to show separately."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(" ".join(message.split()))
        self.log_tail = log_tail
