"""A real IPython kernel (jupyter_client) whose cells run one by one, as a notebook's do."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any


class Kernel:
    """A kernel process started with extra environment variables in ``cwd``."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(
            kernel_name="python3", env={**os.environ, **env}, cwd=str(cwd)
        )
        self._pid: int | None = None

    def run(self, code: str, timeout_s: float = 120, cell_id: str | None = None) -> str:
        """Execute one cell (stored in history); return its text output and errors.
        ``cell_id``: sent as JupyterLab sends it (``metadata.cellId`` of the request), which
        the kernel hands to ``post_run_cell`` as ``info.cell_id``."""
        chunks: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            content = msg["content"]
            if msg["msg_type"] == "stream":
                chunks.append(content["text"])
            elif msg["msg_type"] == "error":
                chunks.append(f"Error {content['ename']}: {content['evalue']}")
            elif msg["msg_type"] in ("execute_result", "display_data"):
                chunks.append(content["data"].get("text/plain", ""))

        session = self.client.session
        make = session.msg
        if cell_id is not None:

            def with_cell_id(kind: str, content: Any = None, **kwargs: Any) -> Any:
                if kind == "execute_request":
                    kwargs["metadata"] = {**(kwargs.get("metadata") or {}), "cellId": cell_id}
                return make(kind, content, **kwargs)

            session.msg = with_cell_id  # type: ignore[method-assign]
        try:
            self.client.execute_interactive(code, timeout=timeout_s, output_hook=hook)
        finally:
            session.msg = make  # type: ignore[method-assign]
        return "".join(chunks)

    @property
    def pid(self) -> int:
        """The kernel's process id (asked once)."""
        if self._pid is None:
            self._pid = int(self.run("import os; print(os.getpid())").strip())
        return self._pid

    def shutdown(self, timeout_s: float = 30) -> None:
        """A polite shutdown (atexit handlers run), as when a notebook is closed."""
        self.client.shutdown()
        deadline = time.monotonic() + timeout_s
        while self.manager.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.close()

    def kill(self) -> None:
        """SIGKILL the kernel process: no atexit, no flush, nothing."""
        os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.manager.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.client.stop_channels()
        with contextlib.suppress(Exception):
            self.manager.cleanup_resources()  # its connection file

    def close(self) -> None:
        """Stop the kernel if it still runs; either way release its sockets and connection
        file (a kernel that died leaves its manager's ZeroMQ context open, and collecting it
        at exit waits forever on a message to the dead kernel)."""
        self.client.stop_channels()
        if self.manager.is_alive():
            self.manager.shutdown_kernel(now=True)
        else:
            with contextlib.suppress(Exception):
                self.manager.cleanup_resources()
