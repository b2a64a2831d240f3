"""Where each agent keeps its MCP server config, and what an entry looks like.

Every path is computed from a home directory (and, for project scope, a
project directory) passed in, so tests can point them at temporary dirs.
``platform`` is ``sys.platform`` unless given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

__all__ = ["CLIENTS", "ClientSpec", "Scope", "client"]

Scope = Literal["user", "project"]
Format = Literal["json", "toml", "yaml"]


def _appdata(home: Path, platform: str) -> Path:
    """The per-user application-data directory of desktop apps."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        return home / "AppData" / "Roaming"
    return home / ".config"


def _stdio_entry(command: str, args: list[str]) -> dict[str, Any]:
    return {"command": command, "args": args}


def _typed_stdio_entry(command: str, args: list[str]) -> dict[str, Any]:
    return {"type": "stdio", "command": command, "args": args}


@dataclass(frozen=True)
class ClientSpec:
    """One agent: its config file per scope, format, and entry shape."""

    key: str
    label: str
    doc_url: str
    fmt: Format
    #: path of the servers mapping inside the config (``("mcpServers",)``)
    container: tuple[str, ...]
    user_path: Callable[[Path, str], Path] | None
    project_path: Callable[[Path], Path] | None
    entry: Callable[[str, list[str]], dict[str, Any]]
    #: directories (relative to home) whose presence means the client is installed
    detect: Callable[[Path, str], list[Path]]
    #: where Claude-Code-style ``hooks`` live, per scope (None: no hook support)
    hooks_user_path: Callable[[Path], Path] | None = None
    hooks_project_path: Callable[[Path], Path] | None = None
    #: keys written into a brand-new file before the servers mapping
    new_file_keys: tuple[tuple[str, Any], ...] = ()

    @property
    def scopes(self) -> tuple[Scope, ...]:
        out: list[Scope] = []
        if self.user_path is not None:
            out.append("user")
        if self.project_path is not None:
            out.append("project")
        return tuple(out)

    def path(self, scope: Scope, home: Path, project: Path, platform: str) -> Path:
        if scope == "user" and self.user_path is not None:
            return self.user_path(home, platform)
        if scope == "project" and self.project_path is not None:
            return self.project_path(project)
        raise ValueError(scope)

    def hooks_path(self, scope: Scope, home: Path, project: Path) -> Path | None:
        if scope == "user" and self.hooks_user_path is not None:
            return self.hooks_user_path(home)
        if scope == "project" and self.hooks_project_path is not None:
            return self.hooks_project_path(project)
        return None


def _dot_dir_client(key: str, label: str, doc_url: str, fmt: Format, container: tuple[str, ...], dot_dir: str,
                    filename: str) -> ClientSpec:
    """A client configured by ``DOT_DIR/FILENAME`` in the home directory (user
    scope) and in the project (project scope), with plain stdio entries; it is
    installed if ``~/DOT_DIR`` exists."""
    return ClientSpec(
        key=key, label=label, doc_url=doc_url, fmt=fmt, container=container,
        user_path=lambda home, _p: home / dot_dir / filename,
        project_path=lambda project: project / dot_dir / filename,
        entry=_stdio_entry, detect=lambda home, _p: [home / dot_dir],
    )


CLIENTS: tuple[ClientSpec, ...] = (
    # https://docs.claude.com/en/docs/claude-code/mcp (scopes: user -> ~/.claude.json "mcpServers",
    # project -> .mcp.json); hooks: https://docs.claude.com/en/docs/claude-code/hooks (settings.json "hooks")
    ClientSpec(
        key="claude-code", label="Claude Code", doc_url="https://docs.claude.com/en/docs/claude-code/mcp",
        fmt="json", container=("mcpServers",),
        user_path=lambda home, _p: home / ".claude.json",
        project_path=lambda project: project / ".mcp.json",
        entry=lambda cmd, args: {"type": "stdio", "command": cmd, "args": args, "env": {}},
        detect=lambda home, _p: [home / ".claude", home / ".claude.json"],
        hooks_user_path=lambda home: home / ".claude" / "settings.json",
        hooks_project_path=lambda project: project / ".claude" / "settings.json",
    ),
    # https://modelcontextprotocol.io/quickstart/user (claude_desktop_config.json "mcpServers")
    ClientSpec(
        key="claude-desktop", label="Claude Desktop", doc_url="https://modelcontextprotocol.io/quickstart/user",
        fmt="json", container=("mcpServers",),
        user_path=lambda home, p: _appdata(home, p) / "Claude" / "claude_desktop_config.json",
        project_path=None, entry=_stdio_entry,
        detect=lambda home, p: [_appdata(home, p) / "Claude"],
    ),
    # https://docs.cursor.com/context/model-context-protocol (~/.cursor/mcp.json, .cursor/mcp.json "mcpServers")
    _dot_dir_client("cursor", "Cursor", "https://docs.cursor.com/context/model-context-protocol", "json",
                    ("mcpServers",), ".cursor", "mcp.json"),
    # https://code.visualstudio.com/docs/copilot/customization/mcp-servers (.vscode/mcp.json and the user
    # profile's mcp.json, top-level "servers", entries with "type": "stdio")
    ClientSpec(
        key="vscode", label="VS Code", doc_url="https://code.visualstudio.com/docs/copilot/customization/mcp-servers",
        fmt="json", container=("servers",),
        user_path=lambda home, p: _appdata(home, p) / "Code" / "User" / "mcp.json",
        project_path=lambda project: project / ".vscode" / "mcp.json",
        entry=_typed_stdio_entry, detect=lambda home, p: [_appdata(home, p) / "Code"],
    ),
    # https://developers.openai.com/codex/mcp (~/.codex/config.toml, .codex/config.toml [mcp_servers.<name>])
    _dot_dir_client("codex", "Codex CLI", "https://developers.openai.com/codex/mcp", "toml", ("mcp_servers",),
                    ".codex", "config.toml"),
    # https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md
    # (~/.gemini/settings.json, .gemini/settings.json "mcpServers")
    _dot_dir_client("gemini", "Gemini CLI",
                    "https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md", "json",
                    ("mcpServers",), ".gemini", "settings.json"),
    # https://docs.windsurf.com/windsurf/cascade/mcp (~/.codeium/windsurf/mcp_config.json "mcpServers")
    ClientSpec(
        key="windsurf", label="Windsurf", doc_url="https://docs.windsurf.com/windsurf/cascade/mcp",
        fmt="json", container=("mcpServers",),
        user_path=lambda home, _p: home / ".codeium" / "windsurf" / "mcp_config.json",
        project_path=None, entry=_stdio_entry,
        detect=lambda home, _p: [home / ".codeium" / "windsurf"],
    ),
    # https://zed.dev/docs/ai/mcp (settings.json "context_servers", custom servers: command + args;
    # ~/.config/zed/settings.json on macOS and Linux, .zed/settings.json per project; JSON with comments)
    ClientSpec(
        key="zed", label="Zed", doc_url="https://zed.dev/docs/ai/mcp",
        fmt="json", container=("context_servers",),
        user_path=lambda home, p: (_appdata(home, p) / "Zed" if p.startswith("win") else home / ".config" / "zed")
        / "settings.json",
        project_path=lambda project: project / ".zed" / "settings.json",
        entry=lambda cmd, args: {"source": "custom", "command": cmd, "args": args, "env": {}},
        detect=lambda home, p: [home / ".config" / "zed", _appdata(home, p) / "Zed"],
    ),
    # https://docs.cline.bot/mcp/configuring-mcp-servers (cline_mcp_settings.json in the VS Code extension's
    # global storage, "mcpServers" with "disabled" and "alwaysAllow")
    ClientSpec(
        key="cline", label="Cline", doc_url="https://docs.cline.bot/mcp/configuring-mcp-servers",
        fmt="json", container=("mcpServers",),
        user_path=lambda home, p: _appdata(home, p) / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
        / "settings" / "cline_mcp_settings.json",
        project_path=None,
        entry=lambda cmd, args: {"command": cmd, "args": args, "disabled": False, "alwaysAllow": []},
        detect=lambda home, p: [_appdata(home, p) / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"],
    ),
    # https://opencode.ai/docs/mcp-servers/ (opencode.json "mcp": {"type": "local", "command": [...]};
    # ~/.config/opencode/opencode.json globally, opencode.json in the project root)
    ClientSpec(
        key="opencode", label="OpenCode", doc_url="https://opencode.ai/docs/mcp-servers/",
        fmt="json", container=("mcp",),
        user_path=lambda home, _p: home / ".config" / "opencode" / "opencode.json",
        project_path=lambda project: project / "opencode.json",
        entry=lambda cmd, args: {"type": "local", "command": [cmd, *args], "enabled": True},
        detect=lambda home, _p: [home / ".config" / "opencode"],
        new_file_keys=(("$schema", "https://opencode.ai/config.json"),),
    ),
    # https://block.github.io/goose/docs/guides/config-files (~/.config/goose/config.yaml "extensions",
    # stdio extensions: type, cmd, args, enabled, timeout)
    ClientSpec(
        key="goose", label="Goose", doc_url="https://block.github.io/goose/docs/guides/config-files",
        fmt="yaml", container=("extensions",),
        user_path=lambda home, p: (_appdata(home, p) / "Block" / "goose" / "config" if p.startswith("win")
                                   else home / ".config" / "goose") / "config.yaml",
        project_path=None,
        entry=lambda cmd, args: {
            "enabled": True, "type": "stdio", "name": "chronomem", "cmd": cmd, "args": args,
            "description": "Bi-temporal fact memory", "timeout": 300,
        },
        detect=lambda home, p: [home / ".config" / "goose", _appdata(home, p) / "Block" / "goose"],
    ),
)


def client(key: str) -> ClientSpec:
    """The client named ``key`` (case-insensitive; ``_`` and ``-`` equivalent)."""
    norm = key.strip().lower().replace("_", "-")
    aliases = {"claude": "claude-code", "code": "vscode", "vs-code": "vscode", "gemini-cli": "gemini",
               "codex-cli": "codex"}
    norm = aliases.get(norm, norm)
    for c in CLIENTS:
        if c.key == norm:
            return c
    raise KeyError(key)
