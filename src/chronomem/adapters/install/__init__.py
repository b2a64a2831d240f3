"""Register the chronomem MCP server with coding agents and desktop clients.

``chronomem install CLIENT`` writes or merges the server entry (``chronomem
--db PATH mcp``) into the client's own config file, in its own format:
Claude Code, Claude Desktop, Cursor, VS Code, Codex CLI, Gemini CLI,
Windsurf, Zed, Cline, OpenCode and Goose. See :mod:`chronomem.adapters.install.clients`
for every path and the documentation each one follows.
"""

from __future__ import annotations

from .clients import CLIENTS, ClientSpec, client
from .core import SERVER_NAME, Change, InstallError, Outcome, detect, install, server_command, uninstall

__all__ = [
    "CLIENTS",
    "Change",
    "ClientSpec",
    "InstallError",
    "Outcome",
    "SERVER_NAME",
    "client",
    "detect",
    "install",
    "server_command",
    "uninstall",
]
