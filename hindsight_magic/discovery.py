"""Which Hindsight server a session talks to when ``api_url`` is not set: a running local one.

``%load_ext`` calls this at every load, so it is cheap and self-contained (stdlib and psutil):
it reads the local server's state file (``state.json`` in ``server_home()``, written by
``localserver.launcher``) and checks that the recorded process is alive and is a Hindsight
server — no HTTP, and without importing the ``localserver`` package.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from .paths import data_dir as _default_data_dir
from .settings import FALLBACK_API_URL


@dataclass
class ServerInfo:
    """What ``state.json`` records about a running local server (never the API key)."""

    url: str
    pid: int
    port: int
    pg_port: int
    data_dir: str
    log_path: str
    llm_provider: str
    started_at: str
    auth: bool = False
    pg_data: str = ""

    def to_json(self) -> str:
        """Serialize to JSON text."""
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerInfo:
        """Parse JSON text written by ``to_json`` (unknown keys are ignored)."""
        raw = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})


class _HasApiUrl(Protocol):
    @property
    def api_url(self) -> str | None: ...


def server_home(data_dir: Path | None = None) -> Path:
    """``<data dir>/server``: holds ``state.json``, ``hindsight.log`` and usually ``pgdata/``."""
    return (Path(data_dir) if data_dir is not None else _default_data_dir()) / "server"


def read_state(home: Path) -> ServerInfo | None:
    """The server recorded in ``home/state.json`` (alive or not); None if there is none."""
    try:
        return ServerInfo.from_json((home / "state.json").read_text())
    except (OSError, ValueError, TypeError):
        return None


def is_hindsight_process(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process whose command line mentions hindsight.

    A recycled pid, or a server that exited but was not yet reaped, is not our server. When the
    system hides another user's command line, a live process is taken to be the server.
    """
    import psutil  # only when a state file names a process (most loads have none)

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        cmdline = proc.cmdline()
    except psutil.NoSuchProcess:  # includes ZombieProcess
        return False
    except psutil.AccessDenied:
        return True
    return "hindsight" in " ".join(cmdline).lower()


def running_server(data_dir: Path | None = None) -> ServerInfo | None:
    """The recorded server of this data dir if its process is alive, else None (no HTTP).

    Never raises: a broken state file or data dir must not stop the extension.
    """
    try:
        info = read_state(server_home(data_dir))
        return info if info is not None and is_hindsight_process(info.pid) else None
    except Exception:
        return None


def resolve_api_url(settings: _HasApiUrl) -> str:
    """Explicit setting, else a running local server, else Hindsight's default URL."""
    if settings.api_url:
        return settings.api_url
    info = running_server()
    return info.url if info else FALLBACK_API_URL
