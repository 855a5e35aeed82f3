"""``hindsight-magic mcp --print-config CLIENT``: the snippet that wires a client to the server.

Each client names MCP servers in its own JSON file; the snippet runs this installation's
``hindsight-magic`` (its full path, so the client need not share the shell's PATH) for the
project folder given, or, with ``--transport http``, reaches the running HTTP server with its
bearer token. The API key is never printed: the client passes the environment it was started
with, where ``HINDSIGHT_API_KEY`` belongs. ``HINDSIGHT_API_URL`` is carried over when
it is set here, so the agent reaches the same server as the notebooks.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from .._enums import StrEnum


class McpClient(StrEnum):
    """The agents whose configuration ``--print-config`` writes."""

    CLAUDE = "claude"
    VSCODE = "vscode"
    JUPYTER_AI = "jupyter-ai"


class Transport(StrEnum):
    """How the MCP server talks to its client: over its stdin/stdout, or HTTP on a port."""

    STDIO = "stdio"
    HTTP = "http"


CLIENTS = tuple(client.value for client in McpClient)  # plain words: argparse shows their repr
TRANSPORTS = tuple(transport.value for transport in Transport)
SERVER_NAME = "hindsight-magic"
WHERE = {
    "claude": "Claude Code: .mcp.json in the project (or `claude mcp add-json hindsight-magic "
    "'<the inner object>'`); Claude Desktop: claude_desktop_config.json",
    "vscode": "VS Code: .vscode/mcp.json in the project",
    "jupyter-ai": "Jupyter AI 3: .jupyter/mcp_settings.json at the root JupyterLab serves "
    "(restart JupyterLab); with jupyter-server-mcp installed the tools are there already",
}


def command_path() -> str:
    """This installation's ``hindsight-magic`` (next to its Python), else the bare name."""
    beside = os.path.join(os.path.dirname(sys.executable), "hindsight-magic")
    if os.path.exists(beside):
        return beside
    return shutil.which("hindsight-magic") or "hindsight-magic"


def snippet(client: McpClient, project: str, http: tuple[str, str] | None = None) -> dict[str, Any]:
    """The JSON ``client`` reads to start the server for ``project`` (stdio), or with ``http``
    (the URL of a running ``--transport http`` server, its token) to reach that server."""
    if http is not None:
        url, token = http
        remote = {"url": url, "headers": {"Authorization": f"Bearer {token}"}}
        if client == McpClient.JUPYTER_AI:
            return {"mcp_servers": [{"name": SERVER_NAME, **remote}]}
        key = "servers" if client == McpClient.VSCODE else "mcpServers"
        return {key: {SERVER_NAME: {"type": "http", **remote}}}
    entry: dict[str, Any] = {
        "command": command_path(),
        "args": ["mcp", "--project", os.path.abspath(project)],
    }
    url = os.environ.get("HINDSIGHT_API_URL", "").strip()
    if url:
        entry["env"] = {"HINDSIGHT_API_URL": url}
    if client == McpClient.VSCODE:
        return {"servers": {SERVER_NAME: {"type": "stdio", **entry}}}
    if client == McpClient.JUPYTER_AI:  # a list of servers, and env as name/value pairs
        env = [{"name": k, "value": v} for k, v in entry.pop("env", {}).items()]
        return {"mcp_servers": [{"name": SERVER_NAME, **entry, **({"env": env} if env else {})}]}
    return {"mcpServers": {SERVER_NAME: entry}}


def config_text(client: McpClient, project: str, http: tuple[str, str] | None = None) -> str:
    """The snippet as indented JSON (what ``--print-config`` prints on stdout)."""
    return json.dumps(snippet(client, project, http), indent=2)
