"""Which Hindsight server a session talks to when ``api_url`` is not set: a running local one.

Cheap and dependency-free, because ``%load_ext`` calls it: it reads the local server's state
file and checks its process, without importing the ``localserver`` package.
"""

from __future__ import annotations

from .settings import FALLBACK_API_URL, HindsightSettings


def resolve_api_url(settings: HindsightSettings) -> str:
    """Explicit setting, else a running local server, else Hindsight's default URL."""
    if settings.api_url:
        return settings.api_url
    from .localserver.launcher import running_server

    try:
        info = running_server()
    except Exception:  # a broken state file must not stop the extension
        info = None
    return info.url if info else FALLBACK_API_URL


def running_server() -> object | None:
    """The running local server's recorded state (URL, pid, LLM provider), or None."""
    from .localserver.launcher import running_server as recorded

    try:
        return recorded()
    except Exception:  # a broken state file must not stop the extension
        return None
