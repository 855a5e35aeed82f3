"""Helpers shared by the benchmarks: the machine, the local server, a quiet shell."""

from __future__ import annotations

import os
import platform
from typing import Any


def machine_line() -> str:
    """One line describing where the numbers were measured."""
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def local_server_url() -> str:
    """``HINDSIGHT_BENCH_URL``, or the local server (started by the project launcher if needed)."""
    explicit = os.environ.get("HINDSIGHT_BENCH_URL")
    if explicit:
        return explicit.rstrip("/")
    from hindsight_magic import server

    return server.start().url


def quiet_shell() -> Any:
    """A real IPython shell that prints nothing (no history file, no Out[] echo)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryAccessor.enabled = False
    shell = InteractiveShell.instance(config=config)
    shell.displayhook.write_output_prompt = lambda: None  # type: ignore[method-assign]
    shell.displayhook.write_format_data = lambda *a, **k: None  # type: ignore[method-assign]
    return shell
