"""Install, uninstall and list the chronomem MCP server in agent configs.

Every operation first *plans* the file changes (old text -> new text) and then
applies them: ``dry_run`` stops after planning (the caller prints the diffs),
a real run writes each changed file atomically after copying the previous
version to ``<file>.bak``. Planning is pure: re-running an install that is
already in place plans no change (idempotent), and other servers and settings
in the file are always kept.
"""

from __future__ import annotations

import difflib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from ...errors import ChronomemError, InstallError
from .clients import CLIENTS, ClientSpec, Scope, client
from .formats import (
    ConfigFormatError,
    dump_json,
    load_jsonc,
    toml_set_table,
    toml_unset_table,
    yaml_has_child,
    yaml_remove_child,
    yaml_set_child,
)

__all__ = [
    "Change",
    "HOOK_MARKER",
    "InstallError",
    "Outcome",
    "SERVER_NAME",
    "detect",
    "install",
    "server_command",
    "uninstall",
]

SERVER_NAME = "chronomem"
HOOK_MARKER = "chronomem-reminder"
HOOK_EVENT = "Stop"
HOOK_TEXT = (
    "chronomem: before you finish, save durable facts you learned with fact_add (or remember, with "
    "the evidence text) and fact_invalidate the ones that changed."
)
# A Claude Code command hook: its JSON output's systemMessage is shown at the end of the turn.
HOOK_COMMAND = "echo '{\"systemMessage\": \"" + HOOK_TEXT + "\"}'  # " + HOOK_MARKER


@dataclass(frozen=True)
class Change:
    """One file's planned edit. ``old`` is None when the file does not exist yet."""

    path: Path
    old: str | None
    new: str
    what: str

    @property
    def changed(self) -> bool:
        return (self.old or "") != self.new

    def diff(self) -> str:
        old = (self.old or "").splitlines(keepends=True)
        new = self.new.splitlines(keepends=True)
        label = str(self.path)
        lines = difflib.unified_diff(old, new, fromfile=label if self.old is not None else "/dev/null",
                                     tofile=label)
        out = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        return out


@dataclass
class Outcome:
    """What an install/uninstall did (or would do, with ``dry_run``)."""

    client: str
    label: str
    scope: Scope
    action: Literal["install", "uninstall"]
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[Change]:
        return [c for c in self.changes if c.changed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "client": self.client, "scope": self.scope, "action": self.action, "dry_run": self.dry_run,
            "files": [
                {"path": str(c.path), "what": c.what, "changed": c.changed, "created": c.old is None,
                 "backup": str(_backup_path(c.path)) if c.changed and c.old is not None else None,
                 **({"diff": c.diff()} if self.dry_run and c.changed else {})}
                for c in self.changes
            ],
            "notes": list(self.notes),
        }


def _backup_path(path: Path) -> Path:
    return path.with_name(path.name + ".bak")


def server_command(db: str | os.PathLike[str], namespace: str | None = None,
                   command: str | None = None) -> tuple[str, list[str]]:
    """The command and arguments an agent runs: ``chronomem --db PATH [--namespace NS] mcp``.

    ``db`` is made absolute (agents start servers from other directories). A
    URL (``postgresql://...``, ``sqlite:///...``) is passed through unchanged.
    ``command`` defaults to the ``chronomem`` executable found on PATH
    (absolute, so GUI apps without the shell's PATH find it), else
    ``"chronomem"``.
    """
    text = os.fspath(db)
    if "://" not in text and text != ":memory:":
        text = str(Path(text).expanduser().resolve())
    exe = command or shutil.which("chronomem") or "chronomem"
    args = ["--db", text]
    if namespace and namespace != "default":
        args += ["--namespace", namespace]
    args.append("mcp")
    return exe, args


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None


def _resolve(spec_key: str) -> ClientSpec:
    try:
        return client(spec_key)
    except KeyError:
        names = ", ".join(c.key for c in CLIENTS)
        raise InstallError(f"unknown client {spec_key!r}; choose one of: {names}") from None


def _container(data: dict[str, Any], keys: Sequence[str], path: Path, create: bool) -> dict[str, Any] | None:
    node: Any = data
    for k in keys:
        nxt = node.get(k)
        if nxt is None:
            if not create:
                return None
            nxt = {}
            node[k] = nxt
        if not isinstance(nxt, dict):
            raise InstallError(f"{path}: '{k}' is not a JSON object; fix it by hand and retry")
        node = nxt
    assert isinstance(node, dict)
    return node


def _plan_json(spec: ClientSpec, path: Path, entry: dict[str, Any] | None, notes: list[str]) -> Change:
    old = _read(path)
    try:
        data, had_comments = load_jsonc(old or "", str(path))
    except ConfigFormatError as exc:
        raise InstallError(str(exc)) from None
    if old is None and entry is not None:
        for k, v in spec.new_file_keys:
            data[k] = v
    servers = _container(data, spec.container, path, create=entry is not None)
    if entry is not None:
        assert servers is not None
        if servers.get(SERVER_NAME) == entry:
            return Change(path, old, old or "", "mcp server")
        servers[SERVER_NAME] = entry
    else:
        if servers is None or SERVER_NAME not in servers:
            return Change(path, old, old or "", "mcp server")
        del servers[SERVER_NAME]
    if had_comments:
        notes.append(f"{path} had comments, which are not kept when it is rewritten (the original is in "
                     f"{_backup_path(path).name})")
    return Change(path, old, dump_json(data), "mcp server")


def _plan_toml(spec: ClientSpec, path: Path, entry: dict[str, Any] | None) -> Change:
    old = _read(path)
    table = [*spec.container, SERVER_NAME]
    try:
        if entry is not None:
            import tomllib

            current: Any = tomllib.loads(old or "")
            for k in table:
                current = current.get(k) if isinstance(current, dict) else None
            if current == entry:
                return Change(path, old, old or "", "mcp server")
            return Change(path, old, toml_set_table(old or "", table, entry, str(path)), "mcp server")
        if old is None:
            return Change(path, old, "", "mcp server")
        return Change(path, old, toml_unset_table(old, table, str(path)), "mcp server")
    except ConfigFormatError as exc:
        raise InstallError(str(exc)) from None
    except Exception as exc:  # tomllib.TOMLDecodeError on the idempotence read
        raise InstallError(f"{path} is not valid TOML ({exc}); fix it and retry") from None


def _plan_yaml(spec: ClientSpec, path: Path, entry: dict[str, Any] | None) -> Change:
    old = _read(path)
    parent = spec.container[0]
    try:
        if entry is not None:
            new = yaml_set_child(old or "", parent, SERVER_NAME, entry, str(path))
        else:
            new = yaml_remove_child(old or "", parent, SERVER_NAME) if old is not None else ""
    except ConfigFormatError as exc:
        raise InstallError(str(exc)) from None
    if old is None and entry is None:
        new = ""
    return Change(path, old, new, "mcp server")


def _hook_entry() -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": HOOK_COMMAND}]}


def _has_hook(groups: Any) -> bool:
    return isinstance(groups, list) and any(
        isinstance(g, dict) and any(isinstance(h, dict) and HOOK_MARKER in str(h.get("command", ""))
                                    for h in g.get("hooks", []) or [])
        for g in groups
    )


def _plan_hooks(path: Path, add: bool) -> Change:
    old = _read(path)
    try:
        data, _comments = load_jsonc(old or "", str(path))
    except ConfigFormatError as exc:
        raise InstallError(str(exc)) from None
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InstallError(f"{path}: 'hooks' is not a JSON object; fix it by hand and retry")
    present = isinstance(hooks, dict) and _has_hook(hooks.get(HOOK_EVENT))
    if add == present:
        return Change(path, old, old or "", "session-end reminder hook")
    if add:
        hooks = data.setdefault("hooks", {})
        assert isinstance(hooks, dict)
        groups = hooks.setdefault(HOOK_EVENT, [])
        if not isinstance(groups, list):
            raise InstallError(f"{path}: hooks.{HOOK_EVENT} is not a list; fix it by hand and retry")
        groups.append(_hook_entry())
    else:
        assert isinstance(hooks, dict)
        kept = []
        for g in hooks.get(HOOK_EVENT, []):
            if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                rest = [h for h in g["hooks"] if not (isinstance(h, dict) and HOOK_MARKER in str(h.get("command")))]
                if not rest:
                    continue
                g = {**g, "hooks": rest}
            kept.append(g)
        if kept:
            hooks[HOOK_EVENT] = kept
        else:
            hooks.pop(HOOK_EVENT, None)
        if not hooks:
            data.pop("hooks", None)
    return Change(path, old, dump_json(data), "session-end reminder hook")


def _plan(spec: ClientSpec, scope: Scope, entry: dict[str, Any] | None, hooks: bool, home: Path, project: Path,
          platform: str, notes: list[str]) -> list[Change]:
    if scope not in spec.scopes:
        raise InstallError(
            f"{spec.label} has no {scope}-scope MCP config; use --scope {spec.scopes[0]}"
        )
    path = spec.path(scope, home, project, platform)
    if spec.fmt == "json":
        changes = [_plan_json(spec, path, entry, notes)]
    elif spec.fmt == "toml":
        changes = [_plan_toml(spec, path, entry)]
    else:
        changes = [_plan_yaml(spec, path, entry)]
    hooks_path = spec.hooks_path(scope, home, project)
    if hooks:
        if hooks_path is None:
            notes.append(f"{spec.label} has no hook support that chronomem knows of; --hooks was skipped")
        else:
            changes.append(_plan_hooks(hooks_path, add=entry is not None))
    elif entry is None and hooks_path is not None and hooks_path.exists():
        changes.append(_plan_hooks(hooks_path, add=False))  # uninstall always removes our hook
    return changes


def _apply(changes: Sequence[Change]) -> None:
    for c in changes:
        if not c.changed:
            continue
        c.path.parent.mkdir(parents=True, exist_ok=True)
        if c.old is not None:
            _backup_path(c.path).write_text(c.old, encoding="utf-8")
        tmp = c.path.with_name(c.path.name + ".chronomem-tmp")
        tmp.write_text(c.new, encoding="utf-8")
        if c.path.exists():
            shutil.copymode(c.path, tmp)
        os.replace(tmp, c.path)


def _dirs(home: Path | None, project: Path | None) -> tuple[Path, Path]:
    h = Path(home) if home is not None else Path(os.environ.get("HOME") or Path.home())
    p = Path(project) if project is not None else Path.cwd()
    return h, p


def install(client_key: str, db: str | os.PathLike[str], *, namespace: str | None = None, scope: Scope = "user",
            hooks: bool = False, dry_run: bool = False, home: Path | None = None, project: Path | None = None,
            command: str | None = None, platform: str | None = None) -> Outcome:
    """Add (or update) the chronomem server in ``client_key``'s config."""
    spec = _resolve(client_key)
    h, p = _dirs(home, project)
    exe, args = server_command(db, namespace, command)
    out = Outcome(spec.key, spec.label, scope, "install", dry_run)
    out.changes = _plan(spec, scope, spec.entry(exe, args), hooks, h, p, platform or sys.platform, out.notes)
    if not dry_run:
        _apply(out.changes)
    return out


def uninstall(client_key: str, *, scope: Scope = "user", dry_run: bool = False, home: Path | None = None,
              project: Path | None = None, platform: str | None = None) -> Outcome:
    """Remove the chronomem server (and its reminder hook) from ``client_key``'s config."""
    spec = _resolve(client_key)
    h, p = _dirs(home, project)
    out = Outcome(spec.key, spec.label, scope, "uninstall", dry_run)
    out.changes = [c for c in _plan(spec, scope, None, True, h, p, platform or sys.platform, out.notes)
                   if c.old is not None or c.changed]
    out.notes = [n for n in out.notes if "--hooks was skipped" not in n]
    if not dry_run:
        _apply(out.changes)
    return out


def _installed(spec: ClientSpec, path: Path) -> bool:
    text = _read(path)
    if text is None:
        return False
    try:
        if spec.fmt == "json":
            data, _ = load_jsonc(text, str(path))
            node = _container(data, spec.container, path, create=False)
            return node is not None and SERVER_NAME in node
        if spec.fmt == "toml":
            import tomllib

            node2: Any = tomllib.loads(text)
            for k in spec.container:
                node2 = node2.get(k, {}) if isinstance(node2, dict) else {}
            return isinstance(node2, dict) and SERVER_NAME in node2
        return yaml_has_child(text, spec.container[0], SERVER_NAME)
    except (ChronomemError, ValueError):
        return False


def detect(home: Path | None = None, project: Path | None = None, platform: str | None = None) -> list[dict[str, Any]]:
    """Every supported client: whether it looks installed, its config files and
    whether chronomem is configured in them."""
    h, p = _dirs(home, project)
    plat = platform or sys.platform
    rows = []
    for spec in CLIENTS:
        scopes = {}
        for scope in spec.scopes:
            path = spec.path(scope, h, p, plat)
            scopes[scope] = {"path": str(path), "exists": path.exists(), "installed": _installed(spec, path)}
        rows.append({
            "client": spec.key, "label": spec.label, "detected": any(d.exists() for d in spec.detect(h, plat)),
            "scopes": scopes, "hooks": spec.hooks_user_path is not None, "docs": spec.doc_url,
        })
    return rows
