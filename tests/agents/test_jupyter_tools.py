"""``jupyter-server-mcp`` discovers the memory tools through its entry point group and serves
them with the same descriptions and one-line errors (its own server, in memory)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

pytest.importorskip("jupyter_server_mcp")

from jupyter_server_mcp.extension import MCPExtensionApp
from jupyter_server_mcp.mcp_server import MCPServer

from hindsight_magic._agents.jupyter import TOOLS


def registered() -> Any:
    """A jupyter-server-mcp server with every tool its entry points name, as it starts."""
    # the library's own entry-point discovery, as its server starts; it has no public route
    specs = MCPExtensionApp()._discover_entrypoint_tools()  # noqa: SLF001  no public route
    server = MCPServer(name="test", port=0)
    for spec in specs:
        module, name = spec.rsplit(":", 1)
        server.register_tool(getattr(importlib.import_module(module), name))
    return specs, server


def test_the_entry_point_names_every_tool() -> None:
    specs, server = registered()
    assert set(TOOLS) <= set(specs)
    names = {tool["name"] for tool in server.list_tools()}
    assert {"recall", "retain", "reflect", "forget", "restore", "status", "verify"} <= names


def test_a_tool_called_there_answers_bad_input_with_one_line() -> None:
    import anyio
    from fastmcp import Client

    _, server = registered()

    async def call() -> Any:
        async with Client(server.mcp) as client:
            tools = {tool.name: tool for tool in await client.list_tools()}
            result = await client.call_tool("recall", {"query": " "}, raise_on_error=False)
            return tools, result

    tools, result = anyio.run(call)
    from hindsight_magic._agents.declared import sentence
    from hindsight_magic._operations import AGENT_TOOLS

    # the same declarations as the stand-alone server's: every parameter, in its words
    for name, declared in AGENT_TOOLS.items():
        assert tools[name].description == declared.summary
        properties = tools[name].input_schema.get("properties", {})
        assert list(properties) == [param.name for param in declared.params]
        for param in declared.params:
            assert properties[param.name]["description"] == sentence(param), param.name
    # its bounds and default as schema too, from the same declaration
    limit = tools["recall"].input_schema["properties"]["max_results"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 50, 10)
    assert result.is_error
    text = result.content[0].text
    assert "Nothing to search for" in text
    assert "\n" not in text


def test_an_agents_memory_there_is_named_after_its_mcp_client() -> None:
    import anyio
    from fastmcp import Client, FastMCP

    from hindsight_magic._agents.jupyter import DEFAULT_CLIENT, caller

    server = FastMCP("test")
    server.tool(lambda: caller().name, name="who")

    async def call() -> str:
        async with Client(server) as client:
            return str((await client.call_tool("who", {})).content[0].text)

    assert anyio.run(call) == "fastmcp"  # the in-memory client's own name
    assert caller().name == DEFAULT_CLIENT  # outside a request
