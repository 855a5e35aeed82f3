"""The package's one family of exceptions, at the bottom so that every module can raise them.

``except hindsight_magic.Error`` catches everything this package raises on purpose. Under it:

- ``InputError`` (also a ``ValueError``): what the user gave cannot be used — a setting, a
  query, a time window, an archive. The message is one line saying what to do. Modules that
  need to tell their own kind apart subclass it (``SettingsError``, ``CurationError``,
  ``LayerError``, ``WhenError``, ``OverviewError``, ``ArchiveError``); callers catch
  ``InputError``.
- ``HindsightError``: a Hindsight call failed (no reply, a timeout, an error reply), or an
  operation the server ran for us did (an import it could not read). What it means for the
  user, in words and commands, is ``_diagnosis``'s job; ``_diagnosis.in_words`` makes the
  ``HindsightError`` the magics raise with those words, which IPython shows as one line (a
  local server that would not start is one too).
- ``QueueFullError`` and ``QueueClosedError`` (``_delivery/items.py``): a retain the queue
  cannot take.

Every class a user can meet is exported from ``hindsight_magic``. Failures that never reach
the user (a journal that cannot be written, a local server's trouble, an agent tool's refusal)
are ``Error`` subclasses beside the code that raises and handles them (``tests/test_errors.py``
checks both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

PUBLIC = "hindsight_magic"  # exported errors are named as the user imports them
ErrorKind = Literal["http", "timeout", "connect", "not_hindsight", "unconfirmed"]
NO_REPLY: tuple[ErrorKind, ...] = ("timeout", "connect", "unconfirmed")  # worth a retry


class Error(Exception):
    """Something hindsight_magic could not do; ``str()`` is one line saying why."""

    __module__ = PUBLIC

    # IPython's hook for showing an exception: set (by the magics, and by
    # ``_diagnosis.in_words``) on an error whose message is the whole story, which is then
    # shown as that one line instead of a traceback
    _render_traceback_: Callable[[], list[str]]


class InputError(Error, ValueError):
    """Bad input; the message is one line saying what to do."""

    __module__ = PUBLIC


class HindsightError(Error):
    """A failed Hindsight call: ``operation``, ``status_code`` (None without a reply), ``details``.

    ``kind`` is ``"http"`` (the server answered with an error), ``"timeout"``, ``"connect"`` (no
    reply at all), ``"not_hindsight"`` (something answered that does not speak Hindsight) or
    ``"unconfirmed"`` (a retain got a 2xx whose body was unreadable: it may have been accepted).
    """

    __module__ = PUBLIC

    def __init__(
        self,
        operation: str,
        message: str,
        status_code: int | None = None,
        details: Any = None,
        kind: ErrorKind = "http",
    ) -> None:
        super().__init__(message)
        self.operation = operation
        self.status_code = status_code
        self.details = details
        self.kind: ErrorKind = kind

    @property
    def transient(self) -> bool:
        """Worth retrying later: no reply, a timeout, an unreadable 2xx, 408, 429 or a 5xx."""
        if self.kind in NO_REPLY:
            return True
        code = self.status_code or 0
        return code in (408, 429) or code >= 500

    @property
    def refuses_items(self) -> bool:
        """Refused for what a batch carries (400, 413, 422), not for the connection or key."""
        return not self.transient and self.status_code in (400, 413, 422)
