"""Where each agent keeps its MCP server config, and what an entry looks like.

Every path is computed from a home directory, the environment (a mapping,
for the variables some clients honour) and, for project scope, a project
directory, all passed in, so tests can point them at temporary dirs.
``platform`` is ``sys.platform`` unless given.

The comment above each spec names the documentation or source, and the
version of it, that its path and entry shape were checked against
(``docs/install.md`` has the same table).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

__all__ = ["CLIENTS", "ClientSpec", "Env", "Scope", "claude_desktop_msix_dirs", "client"]

Scope = Literal["user", "project"]
Format = Literal["json", "toml", "yaml"]
Env = Mapping[str, str]


def _appdata(home: Path, platform: str) -> Path:
    """The per-user application-data directory of desktop apps."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        return home / "AppData" / "Roaming"
    return home / ".config"


def _env_path(env: Env, name: str) -> Path | None:
    """``env[name]`` as a path; unset and blank are the same (as in Cline's ``?.trim() ||``)."""
    value = (env.get(name) or "").strip()
    return Path(value) if value else None


def _local_appdata(home: Path, env: Env) -> Path:
    return _env_path(env, "LOCALAPPDATA") or home / "AppData" / "Local"


def claude_desktop_msix_dirs(home: Path, env: Env) -> list[Path]:
    """The ``%LOCALAPPDATA%\\Packages\\Claude_*`` folders of an MSIX-installed Claude Desktop, sorted."""
    packages = _local_appdata(home, env) / "Packages"
    try:
        return sorted(p for p in packages.glob("Claude_*") if p.is_dir())
    except OSError:
        return []


def _claude_desktop_classic(home: Path, platform: str) -> Path:
    return _appdata(home, platform) / "Claude" / "claude_desktop_config.json"


def _claude_desktop_path(home: Path, platform: str, env: Env) -> Path:
    """An MSIX install reads only the copy inside its package's virtualized
    ``LocalCache\\Roaming``; several packages: the one that already has a config,
    else the first by name."""
    if platform.startswith("win"):
        candidates = [d / "LocalCache" / "Roaming" / "Claude" / "claude_desktop_config.json"
                      for d in claude_desktop_msix_dirs(home, env)]
        if candidates:
            return next((c for c in candidates if c.exists()), candidates[0])
    return _claude_desktop_classic(home, platform)


def _claude_desktop_stale(home: Path, platform: str, env: Env) -> list[Path]:
    # with an MSIX install the classic %APPDATA% file is not read by the app
    classic = _claude_desktop_classic(home, platform)
    return [classic] if _claude_desktop_path(home, platform, env) != classic else []


def _cline_path(home: Path, _platform: str, env: Env) -> Path:
    """Cline's own resolution (``getSharedMcpSettingsPath``): the file override,
    else ``$CLINE_DATA_DIR/settings``, else ``${CLINE_DIR:-~/.cline}/data/settings``."""
    explicit = _env_path(env, "CLINE_MCP_SETTINGS_PATH")
    if explicit is not None:
        return explicit
    data_dir = _env_path(env, "CLINE_DATA_DIR")
    if data_dir is None:
        data_dir = (_env_path(env, "CLINE_DIR") or home / ".cline") / "data"
    return data_dir / "settings" / "cline_mcp_settings.json"


def _cline_legacy_dir(home: Path, platform: str) -> Path:
    return _appdata(home, platform) / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"


def _cline_stale(home: Path, platform: str, _env: Env) -> list[Path]:
    # Cline < 4 read this file (earlier chronomem versions wrote it); Cline >= 4 copies it once, then ignores it
    return [_cline_legacy_dir(home, platform) / "settings" / "cline_mcp_settings.json"]


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
    user_path: Callable[[Path, str, Env], Path] | None
    project_path: Callable[[Path], Path] | None
    entry: Callable[[str, list[str]], dict[str, Any]]
    #: directories (relative to home) whose presence means the client is installed
    detect: Callable[[Path, str, Env], list[Path]]
    #: where Claude-Code-style ``hooks`` live, per scope (None: no hook support)
    hooks_user_path: Callable[[Path], Path] | None = None
    hooks_project_path: Callable[[Path], Path] | None = None
    #: keys written into a brand-new file before the servers mapping
    new_file_keys: tuple[tuple[str, Any], ...] = ()
    #: files chronomem wrote before that the client no longer reads: our entry
    #: is removed from them on install and uninstall (nothing else is touched)
    stale_paths: Callable[[Path, str, Env], list[Path]] | None = None
    #: fields of an existing entry the user manages in the client (kept on re-install)
    user_fields: tuple[str, ...] = ()
    #: legacy field names mapped to current ones when an entry is carried over
    renamed_fields: tuple[tuple[str, str], ...] = ()

    @property
    def scopes(self) -> tuple[Scope, ...]:
        out: list[Scope] = []
        if self.user_path is not None:
            out.append("user")
        if self.project_path is not None:
            out.append("project")
        return tuple(out)

    def path(self, scope: Scope, home: Path, project: Path, platform: str, env: Env | None = None) -> Path:
        if scope == "user" and self.user_path is not None:
            return self.user_path(home, platform, env or {})
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
        user_path=lambda home, _p, _e: home / dot_dir / filename,
        project_path=lambda project: project / dot_dir / filename,
        entry=_stdio_entry, detect=lambda home, _p, _e: [home / dot_dir],
    )


CLIENTS: tuple[ClientSpec, ...] = (
    # Checked 2026-12-01 against https://code.claude.com/docs/en/mcp (user scope -> ~/.claude.json
    # "mcpServers", project -> .mcp.json) and https://code.claude.com/docs/en/hooks (the Hooks reference as
    # stored that day: settings.json "hooks" -> event -> [{matcher?, hooks: [{type, command, timeout (s)}]}]).
    ClientSpec(
        key="claude-code", label="Claude Code", doc_url="https://code.claude.com/docs/en/mcp",
        fmt="json", container=("mcpServers",),
        user_path=lambda home, _p, _e: home / ".claude.json",
        project_path=lambda project: project / ".mcp.json",
        entry=lambda cmd, args: {"type": "stdio", "command": cmd, "args": args, "env": {}},
        detect=lambda home, _p, _e: [home / ".claude", home / ".claude.json"],
        hooks_user_path=lambda home: home / ".claude" / "settings.json",
        hooks_project_path=lambda project: project / ".claude" / "settings.json",
    ),
    # https://modelcontextprotocol.io/quickstart/user (claude_desktop_config.json "mcpServers"); the Windows
    # MSIX location (%LOCALAPPDATA%\Packages\Claude_*\LocalCache\Roaming\Claude) was checked 2026-12-01
    # against anthropics/claude-code#26073 (Claude Desktop 1.1.3189.0, package Claude_pzs8sxrjxfjjc).
    ClientSpec(
        key="claude-desktop", label="Claude Desktop", doc_url="https://modelcontextprotocol.io/quickstart/user",
        fmt="json", container=("mcpServers",),
        user_path=_claude_desktop_path,
        project_path=None, entry=_stdio_entry,
        detect=lambda home, p, e: [_appdata(home, p) / "Claude", *claude_desktop_msix_dirs(home, e)],
        stale_paths=_claude_desktop_stale,
    ),
    # https://cursor.com/docs/mcp (~/.cursor/mcp.json, .cursor/mcp.json "mcpServers": command, args, env).
    # Checked 2026-12-01 only through guides quoting that page as of 2026-10 (no stored copy of it).
    _dot_dir_client("cursor", "Cursor", "https://cursor.com/docs/mcp", "json",
                    ("mcpServers",), ".cursor", "mcp.json"),
    # Checked 2026-12-01 against https://code.visualstudio.com/docs/copilot/reference/mcp-configuration (stored
    # copy): .vscode/mcp.json or the user profile's mcp.json, top-level "servers", stdio entries need
    # "type": "stdio" and "command", "args" optional.
    ClientSpec(
        key="vscode", label="VS Code", doc_url="https://code.visualstudio.com/docs/copilot/customization/mcp-servers",
        fmt="json", container=("servers",),
        user_path=lambda home, p, _e: _appdata(home, p) / "Code" / "User" / "mcp.json",
        project_path=lambda project: project / ".vscode" / "mcp.json",
        entry=_typed_stdio_entry, detect=lambda home, p, _e: [_appdata(home, p) / "Code"],
    ),
    # https://developers.openai.com/codex/mcp (~/.codex/config.toml, .codex/config.toml [mcp_servers.<name>] in
    # trusted projects). Checked 2026-12-01 through secondary sources only (one verified it on Codex CLI 0.154.0,
    # 2026-09-16).
    _dot_dir_client("codex", "Codex CLI", "https://developers.openai.com/codex/mcp", "toml", ("mcp_servers",),
                    ".codex", "config.toml"),
    # https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md
    # (~/.gemini/settings.json, .gemini/settings.json "mcpServers"); not re-checked on 2026-12-01.
    _dot_dir_client("gemini", "Gemini CLI",
                    "https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md", "json",
                    ("mcpServers",), ".gemini", "settings.json"),
    # https://docs.windsurf.com/windsurf/cascade/mcp (~/.codeium/windsurf/mcp_config.json "mcpServers");
    # not re-checked on 2026-12-01.
    ClientSpec(
        key="windsurf", label="Windsurf", doc_url="https://docs.windsurf.com/windsurf/cascade/mcp",
        fmt="json", container=("mcpServers",),
        user_path=lambda home, _p, _e: home / ".codeium" / "windsurf" / "mcp_config.json",
        project_path=None, entry=_stdio_entry,
        detect=lambda home, _p, _e: [home / ".codeium" / "windsurf"],
    ),
    # https://zed.dev/docs/ai/mcp (settings.json "context_servers", custom servers: command + args;
    # ~/.config/zed/settings.json on macOS and Linux, .zed/settings.json per project; JSON with comments);
    # not re-checked on 2026-12-01.
    ClientSpec(
        key="zed", label="Zed", doc_url="https://zed.dev/docs/ai/mcp",
        fmt="json", container=("context_servers",),
        user_path=lambda home, p, _e: (_appdata(home, p) / "Zed" if p.startswith("win")
                                       else home / ".config" / "zed") / "settings.json",
        project_path=lambda project: project / ".zed" / "settings.json",
        entry=lambda cmd, args: {"source": "custom", "command": cmd, "args": args, "env": {}},
        detect=lambda home, p, _e: [home / ".config" / "zed", _appdata(home, p) / "Zed"],
    ),
    # Checked 2026-12-01 against Cline's source, github.com/cline/cline at 21cb8d2 (2026-08-22; VS Code
    # extension 4.1.13): apps/vscode/src/hosts/vscode/mcp-settings-legacy-migration.ts getSharedMcpSettingsPath
    # (CLINE_MCP_SETTINGS_PATH, else CLINE_DATA_DIR/settings, else ${CLINE_DIR:-~/.cline}/data/settings),
    # migrateLegacyMcpSettings (globalStorage file copied once, keeps autoApprove, drops alwaysAllow) and
    # docs/mcp/mcp-overview.mdx (stdio entry: command, args, env, disabled, autoApprove).
    ClientSpec(
        key="cline", label="Cline", doc_url="https://docs.cline.bot/mcp/configuring-mcp-servers",
        fmt="json", container=("mcpServers",),
        user_path=_cline_path,
        project_path=None,
        entry=lambda cmd, args: {"command": cmd, "args": args, "disabled": False, "autoApprove": []},
        detect=lambda home, p, _e: [home / ".cline", _cline_legacy_dir(home, p)],
        stale_paths=_cline_stale,
        user_fields=("autoApprove", "timeout"),
        renamed_fields=(("alwaysAllow", "autoApprove"),),
    ),
    # https://opencode.ai/docs/mcp-servers/ (opencode.json "mcp": {"type": "local", "command": [...]}). Paths
    # checked 2026-12-01 against https://opencode.ai/docs/config (stored copy): ~/.config/opencode/opencode.json,
    # opencode.json in the project; the entry shape only through secondary sources.
    ClientSpec(
        key="opencode", label="OpenCode", doc_url="https://opencode.ai/docs/mcp-servers/",
        fmt="json", container=("mcp",),
        user_path=lambda home, _p, _e: home / ".config" / "opencode" / "opencode.json",
        project_path=lambda project: project / "opencode.json",
        entry=lambda cmd, args: {"type": "local", "command": [cmd, *args], "enabled": True},
        detect=lambda home, _p, _e: [home / ".config" / "opencode"],
        new_file_keys=(("$schema", "https://opencode.ai/config.json"),),
    ),
    # Checked 2026-12-01 against https://block.github.io/goose/docs/guides/config-files (stored copy:
    # ~/.config/goose/config.yaml, %APPDATA%\Block\goose\config\config.yaml) and Goose's extension guide
    # (a stdio entry under "extensions": name, cmd, args, enabled, envs, type, timeout).
    ClientSpec(
        key="goose", label="Goose", doc_url="https://block.github.io/goose/docs/guides/config-files",
        fmt="yaml", container=("extensions",),
        user_path=lambda home, p, _e: (_appdata(home, p) / "Block" / "goose" / "config" if p.startswith("win")
                                       else home / ".config" / "goose") / "config.yaml",
        project_path=None,
        entry=lambda cmd, args: {
            "enabled": True, "type": "stdio", "name": "chronomem", "cmd": cmd, "args": args,
            "description": "Bi-temporal fact memory", "timeout": 300,
        },
        detect=lambda home, p, _e: [home / ".config" / "goose", _appdata(home, p) / "Block" / "goose"],
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
