"""The same memory tools for ``jupyter-server-mcp``, so Jupyter AI's personas get them unasked.

``jupyter-server-mcp`` (a Jupyter Server extension) runs one MCP server inside Jupyter Server
and registers every ``module:function`` listed by the ``jupyter_server_mcp.tools`` entry point
group; this package lists ``TOOLS`` there (``pyproject.toml``). Each is a typed function made
from the tool's declaration (``_operations.AGENT_TOOLS``, through ``declared.tool_function``:
the same parameters and words as ``hindsight-magic mcp``'s), over the same ``ProjectMemory``,
for the project Jupyter Server was started in. A ``ToolFailure`` is raised again as that
server's own ``ToolError``, so the model gets an error result with the one line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .._operations import (
    AGENT_FORGET,
    AGENT_RECALL,
    AGENT_REFLECT,
    AGENT_RESTORE,
    AGENT_RETAIN,
    AGENT_STATUS,
    AGENT_VERIFY,
)
from .declared import tool_function
from .memory import Answer, Client, ProjectMemory, ToolFailure

T = TypeVar("T")
DEFAULT_CLIENT = "jupyter-server-mcp"
TOOLS = [
    f"{__name__}:{name}"
    for name in ("recall", "retain", "reflect", "forget", "restore", "status", "verify")
]


@functools.cache
def project_memory() -> ProjectMemory:
    """The memory of the folder Jupyter Server runs in (made on the first tool call)."""
    return ProjectMemory(None)


def _text(call: Callable[[], Answer]) -> str:
    try:
        return call().text
    except ToolFailure as failure:
        from fastmcp.exceptions import ToolError  # what jupyter-server-mcp's server reports

        raise ToolError(str(failure)) from None


def caller() -> Client:
    """The MCP client calling, when the server says (else ``jupyter-server-mcp``)."""
    try:
        from fastmcp.server.dependencies import get_context

        params: Any = get_context().session.client_params
        info = params.client_info if hasattr(params, "client_info") else params.clientInfo
        return Client(str(info.name), str(info.version or ""))
    except Exception:  # no request context, or another server's shape: the default name
        return Client(DEFAULT_CLIENT)


recall = tool_function(
    AGENT_RECALL,
    lambda **arguments: _text(
        lambda: project_memory().recall(project_memory().request(AGENT_RECALL, arguments))
    ),
)


retain = tool_function(
    AGENT_RETAIN,
    lambda **arguments: _text(lambda: project_memory().retain(client=caller(), **arguments)),
)
reflect = tool_function(
    AGENT_REFLECT, lambda **arguments: _text(lambda: project_memory().reflect(**arguments))
)
forget = tool_function(
    AGENT_FORGET, lambda id, reason: _text(lambda: project_memory().forget(id, reason))
)
restore = tool_function(AGENT_RESTORE, lambda id: _text(lambda: project_memory().restore(id)))
status = tool_function(AGENT_STATUS, lambda: _text(project_memory().status))
verify = tool_function(AGENT_VERIFY, lambda: _text(project_memory().verify))
