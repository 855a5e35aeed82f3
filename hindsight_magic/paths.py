"""Where hindsight_magic keeps its files: one per-user data directory."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "hindsight-magic"


def data_dir() -> Path:
    """The per-user data directory (created on first use).

    ``HINDSIGHT_MAGIC_DATA_DIR`` wins; otherwise the platform's usual place, from platformdirs:
    ``$XDG_DATA_HOME/hindsight-magic`` (default ``~/.local/share/hindsight-magic``) on
    Linux, ``~/Library/Application Support/hindsight-magic`` on macOS and
    ``%LOCALAPPDATA%\\hindsight-magic`` on Windows.
    """
    explicit = os.environ.get("HINDSIGHT_MAGIC_DATA_DIR", "").strip()
    if explicit:
        path = Path(explicit).expanduser()
    else:
        import platformdirs  # imported here: not needed when HINDSIGHT_MAGIC_DATA_DIR is set

        path = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a text file ("" when it cannot be read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 200 * lines - 4096))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def pid_exists(pid: int) -> bool:
    """Whether a process with this id exists (it may belong to another user).

    On POSIX, signal 0 answers this at no cost; elsewhere psutil does. (psutil's import costs
    ~15 ms, and the journal asks this at every ``%load_ext`` where other kernels left rows.)
    """
    if os.name == "posix":
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # it exists, as another user's
            return True
        return True
    import psutil

    return bool(psutil.pid_exists(pid))
