"""The MCP server as agents meet it: ``hindsight-magic mcp`` spawned over stdio and driven by
the official SDK's own client, from synchronous tests (a blocking portal runs the client's
event loop on a thread of its own). The fixtures (``mcp_client``, ``mcp_env``,
``project_dir``) are in ``conftest.py``."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")  # the `mcp` extra (CI installs it with the test extra)

COMMAND = str(Path(sys.executable).with_name("hindsight-magic"))
AGENT = "pytest-agent"
AGENT_VERSION = "1.2.3"


@asynccontextmanager
async def _connected(project: Path, env: dict[str, str]) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import Implementation

    params = StdioServerParameters(
        command=COMMAND, args=["mcp", "--project", str(project)], env=env, cwd=str(project)
    )
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            info = Implementation(name=AGENT, version=AGENT_VERSION)
            async with ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                yield session


class McpClient:
    """One ``hindsight-magic mcp`` process and the SDK client session talking to it."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        from anyio.from_thread import start_blocking_portal

        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._session_cm = self.portal.wrap_async_context_manager(_connected(project, env))
        self.session = self._session_cm.__enter__()

    def tools(self) -> list[Any]:
        """``tools/list``."""
        return list(self.portal.call(self.session.list_tools).tools)

    def call(self, name: str, **arguments: Any) -> Any:
        """``tools/call``: its result (``.is_error``, ``.content``, ``.structured_content``)."""
        return self.portal.call(self.session.call_tool, name, arguments)

    def text(self, name: str, **arguments: Any) -> str:
        """A tool's text, failing the test when it answered with an error."""
        result = self.call(name, **arguments)
        assert not result.is_error, result.content[0].text
        return str(result.content[0].text)

    def resource(self, uri: str) -> str:
        """``resources/read``: the text of the resource."""
        return str(self.portal.call(self.session.read_resource, uri).contents[0].text)

    def close(self) -> None:
        """End the session (the server process exits with its stdin)."""
        try:
            self._session_cm.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)


def error_line(result: Any) -> str:
    """The one line of an error result (the test fails on a success or on several lines)."""
    assert result.is_error, result
    text = str(result.content[0].text)
    assert "\n" not in text, text
    return text
