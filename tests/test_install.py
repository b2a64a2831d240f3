"""``chronomem install`` / ``uninstall``: golden configs per client in a
temporary home, merging with existing configs, idempotence, backups,
dry runs, hooks and the CLI."""

from __future__ import annotations

import json
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
    ("cline", "user"): (".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
                        {"mcpServers": {"chronomem": {"command": "chronomem", "args": ARGS, "disabled": False,
                                                      "alwaysAllow": []}}}),
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
    return install(key, DB, home=home, project=project, command="chronomem", platform="linux", **kw)


def do_uninstall(key: str, dirs: tuple[Path, Path], **kw: Any) -> Any:
    home, project = dirs
    return uninstall(key, home=home, project=project, platform="linux", **kw)


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
    install("cursor", "data/mem.db", home=dirs[0], command="chronomem", platform="linux")
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
    install("claude-code", "/other.db", home=dirs[0], command="chronomem", platform="linux")
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


def test_claude_code_hooks(dirs: tuple[Path, Path]) -> None:
    settings = dirs[0] / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "notify-send done"}]}]}}))
    out = do_install("claude-code", dirs, hooks=True)
    assert {c.path for c in out.changed} == {dirs[0] / ".claude.json", settings}
    data = json.loads(settings.read_text())
    commands = [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"]]
    assert commands[0] == "notify-send done" and "chronomem-reminder" in commands[1]
    assert data["model"] == "opus"
    assert do_install("claude-code", dirs, hooks=True).changed == []
    # the hook command prints valid JSON for Claude Code
    hook = commands[1]
    payload = hook.split("echo '", 1)[1].rsplit("'", 1)[0]
    assert "fact_add" in json.loads(payload)["systemMessage"]
    do_uninstall("claude-code", dirs)
    data = json.loads(settings.read_text())
    assert data == {"model": "opus", "hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "notify-send done"}]}]}}


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
    rows = {r["client"]: r for r in detect(home, project, "linux")}
    assert rows["cursor"]["detected"] and not rows["cursor"]["scopes"]["user"]["installed"]
    assert not rows["goose"]["detected"]
    assert rows["codex"]["scopes"]["project"]["installed"] and not rows["codex"]["scopes"]["user"]["installed"]
    assert rows["claude-code"]["hooks"] is True


# -- the CLI ----------------------------------------------------------------------
def test_cli_install_list_uninstall(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.adapters.cli import main

    home, project = dirs
    monkeypatch.chdir(project)
    env = {"HOME": str(home), "CHRONOMEM_DB": None, "CHRONOMEM_NAMESPACE": None, "XDG_DATA_HOME": None}

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
    r = _cli(["install"], home, project)
    assert r.exit_code == 2
    r = _cli(["install", "windsurf", "--scope", "project"], home, project)
    assert r.exit_code == 1 and r.output.startswith("error: Windsurf has no project-scope")
