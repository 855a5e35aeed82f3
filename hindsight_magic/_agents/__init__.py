"""Agents' way in: the MCP server (``hindsight-magic mcp``) over the public API alone.

``memory.py`` is what the tools do (framework-free, tested without MCP), ``server.py`` wires
them into the official MCP SDK's server, ``wiring.py`` prints the client snippets, and
``jupyter.py`` offers the same tools to ``jupyter-server-mcp``. import-linter keeps this
package on the public API (``hindsight_magic``) and the shared text helpers (``_text``).
"""
