"""The local server's one exception: a failure to start or stop it, with what to do."""

from __future__ import annotations


class ServerError(Exception):
    """A local-server failure. ``str()`` is one line saying what to do; ``log_tail`` holds the
    last lines of the server log (start failures) for callers to show separately."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(" ".join(message.split()))
        self.log_tail = log_tail
