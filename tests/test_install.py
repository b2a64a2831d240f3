"""``chronomem install`` / ``uninstall``: golden configs per client in a
temporary home, merging with existing configs, idempotence, backups,
dry runs, the locations clients really read (Cline >= 4 and its env
overrides, Claude Desktop from MSIX), the absolute command, shareable
project files, Claude Code hooks and the CLI."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chronomem.adapters.install import CLIENTS, InstallError, detect, install, uninstall

DB = "/srv/chronomem/memory.db"
ARGS = ["--db", DB, "--namespace", "work", "mcp"]

# The exact content each client gets in a fresh home (platform "linux").
GOLDEN_JSON: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("claude-code", "user"): (".claude.json", {"mcpServers": {"chronomem": {
        "type": "stdio", "command": "chronomem", "args": ARGS, "env": {}}}}),
    ("claude-code", "project"): ("P/.mcp.json", {"mcpServers": {"chronomem": {
        "type": "stdio", "command": "chronomem", "args": ARGS, "env": {}}}}),
    ("claude-desktop", "user"): (".config/Claude/claude_desktop_config.json", {"mcpServers": {"chronomem": {
        "command": "chronomem", "args": ARGS}}}),
    ("cursor", "user"): (".cursor/mcp.json", {"mcpServers": {"chronomem": {"command": "chronomem", "args": ARGS}}}),
    ("cursor", "project"): ("P/.cursor/mcp.json", {"mcpServers": {"chronomem": {
        "command": "chronomem", "args": ARGS}}}),
    ("vscode", "user"): (".config/Code/User/mcp.json", {"servers": {"chronomem": {
        "type": "stdio", "command": "chronomem", "args": ARGS}}}),
    ("vscode", "project"): ("P/.vscode/mcp.json", {"servers": {"chronomem": {
        "type": "stdio", "command": "chronomem", "args": ARGS}}}),
    ("gemini", "user"): (".gemini/settings.json", {"mcpServers": {"chronomem": {
        "command": "chronomem", "args": ARGS}}}),
    ("gemini", "project"): ("P/.gemini/settings.json", {"mcpServers": {"chronomem": {
        "command": "chronomem", "args": ARGS}}}),
    ("windsurf", "user"): (".codeium/windsurf/mcp_config.json", {"mcpServers": {"chronomem": {
        "command": "chronomem", "args": ARGS}}}),
    ("zed", "user"): (".config/zed/settings.json", {"context_servers": {"chronomem": {
        "source": "custom", "command": "chronomem", "args": ARGS, "env": {}}}}),
    ("zed", "project"): ("P/.zed/settings.json", {"context_servers": {"chronomem": {
        "source": "custom", "command": "chronomem", "args": ARGS, "env": {}}}}),
    ("cline", "user"): (".cline/data/settings/cline_mcp_settings.json",
                        {"mcpServers": {"chronomem": {"command": "chronomem", "args": ARGS, "disabled": False,
                                                      "autoApprove": []}}}),
    ("opencode", "user"): (".config/opencode/opencode.json", {"$schema": "https://opencode.ai/config.json",
                                                              "mcp": {"chronomem": {
                                                                  "type": "local", "command": ["chronomem", *ARGS],
                                                                  "enabled": True}}}),
    ("opencode", "project"): ("P/opencode.json", {"$schema": "https://opencode.ai/config.json", "mcp": {"chronomem": {
        "type": "local", "command": ["chronomem", *ARGS], "enabled": True}}}),
}
GOLDEN_TOML = (
    "[mcp_servers.chronomem]\n"
    'command = "chronomem"\n'
    'args = ["--db", "/srv/chronomem/memory.db", "--namespace", "work", "mcp"]\n'
)
GOLDEN_YAML = (
    "extensions:\n"
    "  chronomem:\n"
    "    enabled: true\n"
    '    type: "stdio"\n'
    '    name: "chronomem"\n'
    '    cmd: "chronomem"\n'
    '    args: ["--db", "/srv/chronomem/memory.db", "--namespace", "work", "mcp"]\n'
    '    description: "Bi-temporal fact memory"\n'
    "    timeout: 300\n"
)


@pytest.fixture()
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    return home, project


def do_install(key: str, dirs: tuple[Path, Path], **kw: Any) -> Any:
    home, project = dirs
    kw.setdefault("namespace", "work")
    kw.setdefault("platform", "linux")
    kw.setdefault("env", {})
    kw.setdefault("command", "chronomem")
    db = kw.pop("db", DB)
    return install(key, db, home=home, project=project, **kw)


def do_uninstall(key: str, dirs: tuple[Path, Path], **kw: Any) -> Any:
    home, project = dirs
    kw.setdefault("platform", "linux")
    kw.setdefault("env", {})
    return uninstall(key, home=home, project=project, **kw)


def _where(rel: str, dirs: tuple[Path, Path]) -> Path:
    home, project = dirs
    return project / rel[2:] if rel.startswith("P/") else home / rel


def test_every_client_has_a_golden_and_a_doc_url() -> None:
    covered = {k for k, _s in GOLDEN_JSON} | {"codex", "goose"}
    assert covered == {c.key for c in CLIENTS}
    assert len(CLIENTS) == 11
    for c in CLIENTS:
        assert c.doc_url.startswith("https://")


@pytest.mark.parametrize(("key", "scope"), sorted(GOLDEN_JSON))
def test_golden_json(key: str, scope: str, dirs: tuple[Path, Path]) -> None:
    rel, expected = GOLDEN_JSON[(key, scope)]
    out = do_install(key, dirs, scope=scope)
    path = _where(rel, dirs)
    assert [c.path for c in out.changes] == [path]
    assert path.read_text() == json.dumps(expected, indent=2) + "\n"
    assert not path.with_name(path.name + ".bak").exists()  # nothing to back up
    again = do_install(key, dirs, scope=scope)
    assert again.changed == []  # idempotent


@pytest.mark.parametrize("scope", ["user", "project"])
def test_golden_codex_toml(scope: str, dirs: tuple[Path, Path]) -> None:
    do_install("codex", dirs, scope=scope)
    path = (dirs[0] if scope == "user" else dirs[1]) / ".codex" / "config.toml"
    assert path.read_text() == GOLDEN_TOML
    assert tomllib.loads(path.read_text())["mcp_servers"]["chronomem"]["args"] == ARGS
    assert do_install("codex", dirs, scope=scope).changed == []


def test_golden_goose_yaml(dirs: tuple[Path, Path]) -> None:
    do_install("goose", dirs)
    path = dirs[0] / ".config" / "goose" / "config.yaml"
    assert path.read_text() == GOLDEN_YAML
    assert do_install("goose", dirs).changed == []


def test_default_namespace_is_not_passed(dirs: tuple[Path, Path]) -> None:
    do_install("cursor", dirs, namespace="default")
    data = json.loads((dirs[0] / ".cursor" / "mcp.json").read_text())
    assert data["mcpServers"]["chronomem"]["args"] == ["--db", DB, "mcp"]


def test_relative_db_becomes_absolute(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(dirs[1])
    install("cursor", "data/mem.db", home=dirs[0], command="chronomem", platform="linux", env={})
    args = json.loads((dirs[0] / ".cursor" / "mcp.json").read_text())["mcpServers"]["chronomem"]["args"]
    assert args == ["--db", str((dirs[1] / "data" / "mem.db").resolve()), "mcp"]


def test_json_merge_keeps_other_servers_and_settings(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".claude.json"
    original = {"numStartups": 12, "projects": {"/x": {"allowedTools": []}},
                "mcpServers": {"github": {"command": "gh-mcp", "args": []}}}
    path.write_text(json.dumps(original))
    out = do_install("claude-code", dirs)
    data = json.loads(path.read_text())
    assert data["numStartups"] == 12 and data["projects"] == original["projects"]
    assert list(data["mcpServers"]) == ["github", "chronomem"]
    assert data["mcpServers"]["github"] == original["mcpServers"]["github"]
    backup = path.with_name(".claude.json.bak")
    assert json.loads(backup.read_text()) == original
    assert out.to_dict()["files"][0]["backup"] == str(backup)
    # changing the database updates our entry in place
    install("claude-code", "/other.db", home=dirs[0], command="chronomem", platform="linux", env={})
    data = json.loads(path.read_text())
    assert data["mcpServers"]["chronomem"]["args"] == ["--db", "/other.db", "mcp"]
    assert json.loads(backup.read_text())["mcpServers"]["chronomem"]["args"] == ARGS
    do_uninstall("claude-code", dirs)
    data = json.loads(path.read_text())
    assert data["mcpServers"] == {"github": original["mcpServers"]["github"]}
    assert data["numStartups"] == 12


def test_jsonc_with_comments_is_read_and_noted(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".config" / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('// Zed settings\n{\n  "theme": "One Dark", /* inline */\n  "url": "http://x//y",\n'
                    '  "context_servers": {"other": {"command": "o", "args": [],},},\n}\n')
    out = do_install("zed", dirs)
    data = json.loads(path.read_text())
    assert data["theme"] == "One Dark" and data["url"] == "http://x//y"
    assert set(data["context_servers"]) == {"other", "chronomem"}
    assert any("comments" in n for n in out.notes)
    assert path.with_name("settings.json.bak").read_text().startswith("// Zed settings")


def test_codex_merge_keeps_every_other_byte(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".codex" / "config.toml"
    path.parent.mkdir()
    original = ('# my codex config\nmodel = "o3"\n\n[mcp_servers.github]\ncommand = "gh"\nargs = ["mcp"]\n\n'
                '[mcp_servers.chronomem]\ncommand = "old"\n\n[mcp_servers.chronomem.env]\nX = "1"\n\n'
                '[profiles.fast]\nmodel = "o4-mini" # fast\n')
    path.write_text(original)
    do_install("codex", dirs)
    text = path.read_text()
    assert text.startswith('# my codex config\nmodel = "o3"\n\n[mcp_servers.github]\ncommand = "gh"\nargs = ["mcp"]\n')
    assert '[profiles.fast]\nmodel = "o4-mini" # fast\n' in text
    assert 'command = "old"' not in text and "[mcp_servers.chronomem.env]" not in text
    data = tomllib.loads(text)
    assert data["mcp_servers"]["chronomem"] == {"command": "chronomem", "args": ARGS}
    assert data["mcp_servers"]["github"] == {"command": "gh", "args": ["mcp"]}
    assert do_install("codex", dirs).changed == []
    do_uninstall("codex", dirs)
    data = tomllib.loads(path.read_text())
    assert "chronomem" not in data["mcp_servers"] and data["profiles"]["fast"]["model"] == "o4-mini"


def test_codex_inline_definition_is_refused_not_mangled(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('mcp_servers = { chronomem = { command = "x" } }\n')
    with pytest.raises(InstallError, match="by hand"):
        do_install("codex", dirs)
    assert path.read_text() == 'mcp_servers = { chronomem = { command = "x" } }\n'
    path.write_text("this is = = not toml\n")
    with pytest.raises(InstallError, match="not valid TOML"):
        do_install("codex", dirs)


def test_goose_merge_keeps_other_extensions(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".config" / "goose" / "config.yaml"
    path.parent.mkdir(parents=True)
    original = ("GOOSE_PROVIDER: anthropic\n"
                "extensions:\n"
                "    developer:\n"
                "        enabled: true\n"
                "        type: builtin\n"
                "\n"
                "    memory:\n"
                "        enabled: false\n"
                "GOOSE_MODEL: claude\n")
    path.write_text(original)
    do_install("goose", dirs)
    text = path.read_text()
    assert text.startswith("GOOSE_PROVIDER: anthropic\nextensions:\n    developer:\n")
    assert "    memory:\n        enabled: false\n    chronomem:\n        enabled: true\n" in text
    assert text.endswith("GOOSE_MODEL: claude\n")
    assert text.count("chronomem:") == 1
    do_install("goose", dirs, namespace=None)  # update in place
    text = path.read_text()
    assert text.count("chronomem:") == 1 and '"--namespace"' not in text
    do_uninstall("goose", dirs)
    assert path.read_text() == original


def test_goose_flow_style_is_refused(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".config" / "goose" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("extensions: {developer: {enabled: true}}\n")
    with pytest.raises(InstallError, match="flow style"):
        do_install("goose", dirs)
    path.write_text("extensions: {}\nX: 1\n")
    do_install("goose", dirs)
    assert path.read_text().startswith("extensions:\n  chronomem:\n")


def test_dry_run_writes_nothing_and_shows_a_diff(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".cursor" / "mcp.json"
    out = do_install("cursor", dirs, dry_run=True)
    assert not path.exists() and not path.parent.exists()
    diff = out.changes[0].diff()
    assert diff.startswith("--- /dev/null\n+++ ") and '+      "command": "chronomem",' in diff
    assert "diff" in out.to_dict()["files"][0]
    do_install("cursor", dirs)
    before = path.read_text()
    out = do_uninstall("cursor", dirs, dry_run=True)
    assert path.read_text() == before and not path.with_name("mcp.json.bak").exists()
    assert '-    "chronomem": {' in out.changes[0].diff()


def test_hooks_on_a_client_without_hooks_is_a_note(dirs: tuple[Path, Path]) -> None:
    out = do_install("cursor", dirs, hooks=True)
    assert len(out.changes) == 1 and any("hook" in n for n in out.notes)


def test_errors(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(InstallError, match="unknown client 'emacs'"):
        do_install("emacs", dirs)
    with pytest.raises(InstallError, match="no project-scope"):
        do_install("windsurf", dirs, scope="project")
    bad = dirs[0] / ".cursor" / "mcp.json"
    bad.parent.mkdir()
    bad.write_text("{ not json")
    with pytest.raises(InstallError, match="not valid JSON"):
        do_install("cursor", dirs)
    bad.write_text('{"mcpServers": []}')
    with pytest.raises(InstallError, match="not a JSON object"):
        do_install("cursor", dirs)


def test_uninstall_when_absent_changes_nothing(dirs: tuple[Path, Path]) -> None:
    out = do_uninstall("gemini", dirs)
    assert out.changed == [] and not (dirs[0] / ".gemini").exists()


def test_detect(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    (home / ".cursor").mkdir()
    do_install("codex", dirs, scope="project")
    rows = {r["client"]: r for r in detect(home, project, "linux", env={})}
    assert rows["cursor"]["detected"] and not rows["cursor"]["scopes"]["user"]["installed"]
    assert not rows["goose"]["detected"]
    assert rows["codex"]["scopes"]["project"]["installed"] and not rows["codex"]["scopes"]["user"]["installed"]
    assert rows["claude-code"]["hooks"] is True


# -- Cline >= 4: ~/.cline/data/settings, env overrides, the legacy file -----------------
CLINE_FILE = "cline_mcp_settings.json"


@pytest.mark.parametrize(("env", "where"), [
    ({}, "home/.cline/data/settings"),
    ({"CLINE_DIR": "{t}/cdir"}, "cdir/data/settings"),
    ({"CLINE_DATA_DIR": "{t}/data"}, "data/settings"),
    ({"CLINE_DATA_DIR": "{t}/data", "CLINE_DIR": "{t}/cdir"}, "data/settings"),  # data dir wins
    ({"CLINE_MCP_SETTINGS_PATH": "{t}/x/mine.json", "CLINE_DATA_DIR": "{t}/data"}, "x/mine.json"),  # file wins
    ({"CLINE_MCP_SETTINGS_PATH": "  ", "CLINE_DIR": " "}, "home/.cline/data/settings"),  # blank = unset
])
def test_cline_path_and_env_overrides(env: dict[str, str], where: str, tmp_path: Path,
                                      dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    resolved = {k: v.replace("{t}", str(tmp_path)) for k, v in env.items()}
    for k in ("CLINE_MCP_SETTINGS_PATH", "CLINE_DATA_DIR", "CLINE_DIR"):
        monkeypatch.delenv(k, raising=False)
    for k, v in resolved.items():
        monkeypatch.setenv(k, v)
    # env=None reads os.environ, as the CLI does
    out = do_install("cline", dirs, env=None)
    expected = tmp_path / where if where.endswith(".json") else tmp_path / where / CLINE_FILE
    assert [c.path for c in out.changes] == [expected]
    entry = json.loads(expected.read_text())["mcpServers"]["chronomem"]
    assert entry["autoApprove"] == [] and "alwaysAllow" not in entry
    assert detect(dirs[0], dirs[1], "linux")[8]["scopes"]["user"]["installed"] is True


def _legacy_cline(home: Path) -> Path:
    return home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "settings" / CLINE_FILE


def test_cline_legacy_entry_is_migrated_and_other_servers_kept(dirs: tuple[Path, Path]) -> None:
    home = dirs[0]
    legacy = _legacy_cline(home)
    legacy.parent.mkdir(parents=True)
    original = {"mcpServers": {
        "github": {"command": "gh-mcp", "args": [], "alwaysAllow": ["search"]},
        "chronomem": {"command": "/old/chronomem", "args": ["--db", "/old.db", "mcp"], "disabled": False,
                      "alwaysAllow": ["facts", "recall"]},
    }, "other": 1}
    legacy.write_text(json.dumps(original))
    out = do_install("cline", dirs)
    new = home / ".cline" / "data" / "settings" / CLINE_FILE
    assert {c.path for c in out.changed} == {new, legacy}
    # the user's approvals carried over under the new name; the rest is ours
    assert json.loads(new.read_text())["mcpServers"]["chronomem"] == {
        "command": "chronomem", "args": ARGS, "disabled": False, "autoApprove": ["facts", "recall"]}
    kept = json.loads(legacy.read_text())
    assert kept == {"mcpServers": {"github": original["mcpServers"]["github"]}, "other": 1}
    assert json.loads(legacy.with_name(CLINE_FILE + ".bak").read_text()) == original
    assert any(str(legacy) in n and "1 other server" in n for n in out.notes)
    assert do_install("cline", dirs).changed == []  # idempotent, legacy file untouched now
    do_uninstall("cline", dirs)
    assert "chronomem" not in json.loads(new.read_text())["mcpServers"]
    assert json.loads(legacy.read_text()) == kept


def test_cline_legacy_file_without_our_entry_is_not_touched(dirs: tuple[Path, Path]) -> None:
    legacy = _legacy_cline(dirs[0])
    legacy.parent.mkdir(parents=True)
    legacy.write_text('{"mcpServers": {"github": {"command": "gh"}}}')
    out = do_install("cline", dirs)
    assert [c.path for c in out.changed] == [dirs[0] / ".cline" / "data" / "settings" / CLINE_FILE]
    assert legacy.read_text() == '{"mcpServers": {"github": {"command": "gh"}}}'
    assert not legacy.with_name(CLINE_FILE + ".bak").exists()


def test_an_unreadable_legacy_file_does_not_block_the_install(dirs: tuple[Path, Path]) -> None:
    legacy = _legacy_cline(dirs[0])
    legacy.parent.mkdir(parents=True)
    legacy.write_text("{ not json")
    out = do_install("cline", dirs)
    assert (dirs[0] / ".cline" / "data" / "settings" / CLINE_FILE).exists()
    assert legacy.read_text() == "{ not json"
    assert any(n.startswith(f"left {legacy} as it is") and "not valid JSON" in n for n in out.notes)


def test_cline_reinstall_keeps_user_approvals(dirs: tuple[Path, Path]) -> None:
    do_install("cline", dirs)
    path = dirs[0] / ".cline" / "data" / "settings" / CLINE_FILE
    data = json.loads(path.read_text())
    data["mcpServers"]["chronomem"]["autoApprove"] = ["facts"]
    data["mcpServers"]["chronomem"]["timeout"] = 120
    path.write_text(json.dumps(data))
    assert do_install("cline", dirs).changed == []
    do_install("cline", dirs, namespace="other")
    entry = json.loads(path.read_text())["mcpServers"]["chronomem"]
    assert entry["autoApprove"] == ["facts"] and entry["timeout"] == 120 and "other" in entry["args"]


# -- Claude Desktop installed from MSIX on Windows ----------------------------------------
def _msix_config(local: Path, package: str = "Claude_pzs8sxrjxfjjc") -> Path:
    return local / "Packages" / package / "LocalCache" / "Roaming" / "Claude" / "claude_desktop_config.json"


def test_claude_desktop_windows_without_msix(dirs: tuple[Path, Path]) -> None:
    out = do_install("claude-desktop", dirs, platform="win32")
    assert [c.path for c in out.changes] == [dirs[0] / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json"]


def test_claude_desktop_msix_under_home(dirs: tuple[Path, Path]) -> None:
    home = dirs[0]
    package = home / "AppData" / "Local" / "Packages" / "Claude_pzs8sxrjxfjjc"
    package.mkdir(parents=True)
    (home / "AppData" / "Local" / "Packages" / "Claude.Other_x").mkdir()  # not a Claude_* package
    out = do_install("claude-desktop", dirs, platform="win32")
    target = _msix_config(home / "AppData" / "Local")
    assert [c.path for c in out.changes] == [target]
    assert json.loads(target.read_text())["mcpServers"]["chronomem"]["args"] == ARGS
    rows = {r["client"]: r for r in detect(home, dirs[1], "win32", env={})}
    assert rows["claude-desktop"]["detected"] and rows["claude-desktop"]["scopes"]["user"]["path"] == str(target)


def test_claude_desktop_msix_from_localappdata_and_both_present(tmp_path: Path, dirs: tuple[Path, Path]) -> None:
    home = dirs[0]
    local = tmp_path / "elsewhere" / "Local"
    (local / "Packages" / "Claude_aaa").mkdir(parents=True)
    chosen = _msix_config(local, "Claude_zzz")
    chosen.parent.mkdir(parents=True)
    chosen.write_text('{"mcpServers": {"fs": {"command": "fs-mcp"}}}')  # the package with a config wins
    classic = home / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json"
    classic.parent.mkdir(parents=True)
    classic.write_text(json.dumps({"mcpServers": {"chronomem": {"command": "x", "args": []},
                                                  "web": {"command": "w"}}, "theme": "dark"}))
    out = do_install("claude-desktop", dirs, platform="win32", env={"LOCALAPPDATA": str(local)})
    assert {c.path for c in out.changed} == {chosen, classic}
    assert set(json.loads(chosen.read_text())["mcpServers"]) == {"fs", "chronomem"}
    # the classic file the MSIX app does not read loses only our stale entry
    assert json.loads(classic.read_text()) == {"mcpServers": {"web": {"command": "w"}}, "theme": "dark"}
    assert any(str(classic) in n for n in out.notes)
    assert not _msix_config(local, "Claude_aaa").exists()
    again = do_install("claude-desktop", dirs, platform="win32", env={"LOCALAPPDATA": str(local)})
    assert again.changed == []
    # macOS and Linux never look for packages
    assert do_install("claude-desktop", dirs, env={"LOCALAPPDATA": str(local)}).changes[0].path == (
        home / ".config" / "Claude" / "claude_desktop_config.json")


# -- the command written: absolute when not on PATH ----------------------------------------
def _entry_of(dirs: tuple[Path, Path]) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads((dirs[0] / ".cursor" / "mcp.json").read_text())["mcpServers"]["chronomem"]
    return entry


def test_command_is_the_running_chronomem_script(tmp_path: Path, dirs: tuple[Path, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "venv" / "bin" / "chronomem"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [os.path.relpath(script, tmp_path), "install", "cursor"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    do_install("cursor", dirs, command=None)
    assert _entry_of(dirs)["command"] == str(script)


def test_command_falls_back_to_path_then_to_python_m(tmp_path: Path, dirs: tuple[Path, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/pytest"])  # not the chronomem script
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = bindir / "chronomem"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    do_install("cursor", dirs, command=None)
    assert _entry_of(dirs)["command"] == str(on_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    do_install("cursor", dirs, command=None)
    entry = _entry_of(dirs)
    assert entry["command"] == os.path.abspath(sys.executable) and Path(entry["command"]).is_absolute()
    assert entry["args"] == ["-m", "chronomem", *ARGS]
    # the written command really starts chronomem
    run = subprocess.run([entry["command"], "-m", "chronomem", "--version"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0 and "chronomem" in run.stdout


def test_real_cli_writes_its_own_script_path(tmp_path: Path, dirs: tuple[Path, Path]) -> None:
    """End to end: the installed ``chronomem`` script, run with a PATH that
    lacks it and a throwaway HOME, writes its own absolute path."""
    script = Path(sys.executable).parent / "chronomem"
    if not script.is_file():
        pytest.skip("the chronomem console script is not installed next to this interpreter")
    home = dirs[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLINE_", "CHRONOMEM_"))}
    env.update(HOME=str(home), PATH=str(tmp_path / "empty"))
    run = subprocess.run([str(script), "--db", str(tmp_path / "m.db"), "install", "cline", "--json"],
                         capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stderr
    written = home / ".cline" / "data" / "settings" / CLINE_FILE
    assert json.loads(run.stdout)["files"][0]["path"] == str(written)
    entry = json.loads(written.read_text())["mcpServers"]["chronomem"]
    assert entry["command"] == str(script)
    assert entry["args"] == ["--db", str(tmp_path / "m.db"), "mcp"]


# -- project scope: a shareable file -----------------------------------------------------------
@pytest.mark.parametrize("key", ["claude-code", "cursor", "vscode", "codex", "gemini", "zed", "opencode"])
def test_project_scope_holds_no_machine_path(key: str, tmp_path: Path, dirs: tuple[Path, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    project = dirs[1]
    out = do_install(key, dirs, scope="project", command=None, db=project / ".chronomem" / "memory.db",
                     hooks=key == "claude-code")
    assert out.notes == []
    for change in out.changes:
        assert str(tmp_path) not in change.new and sys.executable not in change.new
        assert ".chronomem/memory.db" in change.new
    if key == "claude-code":
        entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["chronomem"]
        assert entry["command"] == "chronomem"
        assert entry["args"] == ["--db", ".chronomem/memory.db", "--namespace", "work", "mcp"]
        hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
        assert hooks["Stop"][0]["hooks"][0]["command"] == (
            'chronomem --db "$CLAUDE_PROJECT_DIR"/.chronomem/memory.db --namespace work hook claude-code')
    # the user-scope entry stays absolute
    user = do_install(key if key != "zed" else "cursor", dirs, command=None, db=project / "m.db")
    assert str(project / "m.db") in user.changes[0].new


def test_project_scope_db_outside_the_project_is_kept_absolute_with_a_note(dirs: tuple[Path, Path]) -> None:
    out = do_install("cursor", dirs, scope="project")
    entry = json.loads((dirs[1] / ".cursor" / "mcp.json").read_text())["mcpServers"]["chronomem"]
    assert entry["args"][1] == DB
    assert any("outside the project" in n and "not shareable" in n for n in out.notes)
    url = do_install("cursor", dirs, scope="project", db="postgresql://db.internal/mem")
    assert url.notes == []


# -- Claude Code hooks -----------------------------------------------------------------------
REMINDER = {"type": "command", "command": "echo '{\"systemMessage\": \"chronomem: save facts\"}'  # chronomem-reminder"}
FOREIGN_STOP = {"type": "command", "command": "notify-send done"}
FOREIGN_COMPACT = {"matcher": "manual", "hooks": [{"type": "command", "command": "backup.sh", "timeout": 9}]}
OURS = "chronomem --db /srv/chronomem/memory.db --namespace work hook claude-code"


def _settings(dirs: tuple[Path, Path]) -> Path:
    return dirs[0] / ".claude" / "settings.json"


def _write_settings(dirs: tuple[Path, Path]) -> dict[str, Any]:
    original = {"model": "opus", "hooks": {
        "Stop": [{"hooks": [FOREIGN_STOP, REMINDER]}],
        "PreCompact": [FOREIGN_COMPACT],
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}],
    }}
    _settings(dirs).parent.mkdir(parents=True, exist_ok=True)
    _settings(dirs).write_text(json.dumps(original))
    return original


def test_hooks_install_reinstall_uninstall(dirs: tuple[Path, Path]) -> None:
    original = _write_settings(dirs)
    out = do_install("claude-code", dirs, hooks=True)
    assert {c.path for c in out.changed} == {dirs[0] / ".claude.json", _settings(dirs)}
    assert any("chronomem-reminder" in n for n in out.notes)
    data = json.loads(_settings(dirs).read_text())
    hooks = data["hooks"]
    assert data["model"] == "opus"
    assert list(hooks) == ["Stop", "PreCompact", "PostToolUse", "UserPromptSubmit", "SessionEnd"]
    # the reminder is gone, the foreign hooks stay first and unchanged, ours follow
    assert hooks["Stop"] == [{"hooks": [FOREIGN_STOP]},
                             {"hooks": [{"type": "command", "command": OURS, "timeout": 30}]}]
    assert hooks["PreCompact"] == [FOREIGN_COMPACT, {"hooks": [{"type": "command", "command": OURS, "timeout": 30}]}]
    assert hooks["UserPromptSubmit"] == [{"hooks": [{"type": "command", "command": OURS, "timeout": 5}]}]
    assert hooks["SessionEnd"] == [{"hooks": [{"type": "command", "command": OURS, "timeout": 30}]}]
    assert hooks["PostToolUse"] == original["hooks"]["PostToolUse"]
    assert do_install("claude-code", dirs, hooks=True).changed == []  # idempotent
    # a new namespace (or executable) replaces ours in place, never a second copy
    do_install("claude-code", dirs, hooks=True, namespace="home")
    hooks = json.loads(_settings(dirs).read_text())["hooks"]
    for event in ("Stop", "PreCompact", "UserPromptSubmit", "SessionEnd"):
        commands = [h["command"] for g in hooks[event] for h in g["hooks"]]
        assert sum(" hook claude-code" in c for c in commands) == 1
        assert "--namespace home" in commands[-1]
    out = do_uninstall("claude-code", dirs)
    assert json.loads(_settings(dirs).read_text()) == {"model": "opus", "hooks": {
        "Stop": [{"hooks": [FOREIGN_STOP]}], "PreCompact": [FOREIGN_COMPACT],
        "PostToolUse": original["hooks"]["PostToolUse"]}}
    assert do_uninstall("claude-code", dirs).changed == []


def test_hooks_of_another_database_are_kept_on_install_and_removed_on_uninstall(dirs: tuple[Path, Path]) -> None:
    do_install("claude-code", dirs, hooks=True, db="/a b/first.db")
    do_install("claude-code", dirs, hooks=True, db="/second.db")
    commands = [h["command"] for g in json.loads(_settings(dirs).read_text())["hooks"]["Stop"] for h in g["hooks"]]
    assert commands == [shlex.join(["chronomem", "--db", "/a b/first.db", "--namespace", "work", "hook",
                                    "claude-code"]),
                        "chronomem --db /second.db --namespace work hook claude-code"]
    do_uninstall("claude-code", dirs)
    assert not _settings(dirs).read_text().count("hook claude-code")
    assert json.loads(_settings(dirs).read_text()) == {}


def test_install_without_hooks_still_migrates_the_reminder(dirs: tuple[Path, Path]) -> None:
    original = _write_settings(dirs)
    out = do_install("claude-code", dirs)
    data = json.loads(_settings(dirs).read_text())
    assert data["hooks"]["Stop"] == [{"hooks": [FOREIGN_STOP]}]
    assert "UserPromptSubmit" not in data["hooks"]
    assert json.loads(_settings(dirs).with_name("settings.json.bak").read_text()) == original
    assert any("chronomem-reminder" in n for n in out.notes)
    assert do_install("claude-code", dirs).changed == []


def test_hooks_in_a_fresh_home_and_bad_settings(dirs: tuple[Path, Path]) -> None:
    do_install("claude-code", dirs, hooks=True, namespace=None)
    data = json.loads(_settings(dirs).read_text())
    assert data == {"hooks": {event: [{"hooks": [{"type": "command", "timeout": t,
                                                  "command": f"chronomem --db {DB} hook claude-code"}]}]
                              for event, t in (("UserPromptSubmit", 5), ("Stop", 30), ("PreCompact", 30),
                                               ("SessionEnd", 30))}}
    _settings(dirs).write_text('{"hooks": {"Stop": {"not": "a list"}}}')
    with pytest.raises(InstallError, match=r"hooks\.Stop is not a list"):
        do_install("claude-code", dirs, hooks=True)
    _settings(dirs).write_text('{"hooks": []}')
    with pytest.raises(InstallError, match="'hooks' is not a JSON object"):
        do_install("claude-code", dirs, hooks=True)


def test_user_scope_hook_command_is_absolute(tmp_path: Path, dirs: tuple[Path, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.chdir(dirs[1])
    do_install("claude-code", dirs, hooks=True, command=None, db="rel.db", namespace=None)
    command = json.loads(_settings(dirs).read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert shlex.split(command) == [os.path.abspath(sys.executable), "-m", "chronomem", "--db",
                                    str((dirs[1] / "rel.db").resolve()), "hook", "claude-code"]


# -- the CLI ----------------------------------------------------------------------
def test_cli_install_list_uninstall(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.adapters.cli import main

    home, project = dirs
    monkeypatch.chdir(project)
    env = {"HOME": str(home), "CHRONOMEM_DB": None, "CHRONOMEM_NAMESPACE": None, "XDG_DATA_HOME": None,
           "CLINE_DIR": None, "CLINE_DATA_DIR": None, "CLINE_MCP_SETTINGS_PATH": None}

    def _cli(args: list[str], _home: Path, _cwd: Path) -> Any:
        return CliRunner().invoke(main, args, env=env, catch_exceptions=False)

    db = str(project / "m.db")
    r = _cli(["--db", db, "install", "cursor", "--dry-run", "--command", "chronomem"], home, project)
    assert r.exit_code == 0, r.output
    assert "+++ " in r.output and "dry run" in r.output and not (home / ".cursor").exists()
    r = _cli(["--db", db, "install", "cursor", "--command", "chronomem", "--json"], home, project)
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["files"][0]["created"] is True and data["client"] == "cursor"
    entry = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["chronomem"]
    assert entry == {"command": "chronomem", "args": ["--db", db, "mcp"]}
    r = _cli(["--db", db, "install", "cursor", "--command", "chronomem"], home, project)
    assert "already configured" in r.output
    r = _cli(["install", "--list", "--json"], home, project)
    rows = {row["client"]: row for row in json.loads(r.output)}
    assert rows["cursor"]["scopes"]["user"]["installed"] is True
    r = _cli(["install", "--list"], home, project)
    assert r.exit_code == 0 and "claude-code" in r.output
    r = _cli(["--db", db, "install", "claude-code", "--scope", "project", "--command", "chronomem"], home, project)
    assert r.exit_code == 0 and (project / ".mcp.json").exists()
    r = _cli(["uninstall", "cursor"], home, project)
    assert r.exit_code == 0 and "mcp.json.bak" in r.output
    assert "chronomem" not in json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]
    r = _cli(["--db", db, "install", "claude-code", "--hooks", "--command", "/opt/cm/chronomem"], home, project)
    assert r.exit_code == 0, r.output
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0] == {
        "type": "command", "command": f"/opt/cm/chronomem --db {db} hook claude-code", "timeout": 5}
    r = _cli(["uninstall", "claude-code"], home, project)
    assert r.exit_code == 0 and "hooks" not in json.loads((home / ".claude" / "settings.json").read_text())
    r = _cli(["install"], home, project)
    assert r.exit_code == 2
    r = _cli(["install", "windsurf", "--scope", "project"], home, project)
    assert r.exit_code == 1 and r.output.startswith("error: Windsurf has no project-scope")
