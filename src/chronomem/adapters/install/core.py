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
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from ...errors import ChronomemError, InstallError
from .clients import CLIENTS, ClientSpec, Env, Scope, client
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
    "HOOK_EVENTS",
    "HOOK_MARKER",
    "hook_command",
    "launcher",
    "InstallError",
    "Outcome",
    "SERVER_NAME",
    "detect",
    "install",
    "server_command",
    "uninstall",
]

SERVER_NAME = "chronomem"
#: the Stop hook earlier versions installed (an echo of a reminder); install and uninstall remove it
HOOK_MARKER = "chronomem-reminder"
#: what identifies a hook entry as chronomem's (with the db it names)
HOOK_SUBCOMMAND = "hook claude-code"
#: Claude Code events chronomem hooks, with each command's timeout in seconds (the Hooks reference's unit).
#: UserPromptSubmit runs before every prompt, so it must answer fast; the others may write to the memory.
HOOK_EVENTS: tuple[tuple[str, int], ...] = (
    ("UserPromptSubmit", 5), ("Stop", 30), ("PreCompact", 30), ("SessionEnd", 30),
)
#: the variable Claude Code sets for hook commands: the project root (keeps project settings shareable)
PROJECT_DIR_VAR = "CLAUDE_PROJECT_DIR"


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


def launcher(command: str | None = None) -> list[str]:
    """The argv prefix that starts chronomem, absolute so desktop apps (which
    do not get the shell's PATH) find it: ``command`` if given; else the
    running ``chronomem`` script (``sys.argv[0]``); else the ``chronomem`` on
    PATH; else this interpreter with ``-m chronomem``."""
    if command:
        return [command]
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.stem.lower() == "chronomem" and argv0.is_file():
        return [os.path.abspath(argv0)]
    found = shutil.which("chronomem")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "chronomem"]


def _db_arg(db: str | os.PathLike[str]) -> str:
    text = os.fspath(db)
    if "://" in text or text == ":memory:":
        return text
    return str(Path(text).expanduser().resolve())


def _project_db(db: str | os.PathLike[str], project: Path, notes: list[str]) -> str:
    """``db`` relative to ``project`` (POSIX separators) when it lies inside it,
    so a project config holds no path of this machine; else absolute, noted."""
    text = _db_arg(db)
    if "://" in text or text == ":memory:":
        return text
    try:
        return Path(text).relative_to(project.resolve()).as_posix()
    except ValueError:
        notes.append(f"the database {text} is outside the project {project}, so the project config names it by "
                     "its absolute path and is not shareable as is; put the database inside the project (or "
                     "use --scope user) for a file teammates can commit")
        return text


def _args(db_arg: str, namespace: str | None, sub: list[str]) -> list[str]:
    args = ["--db", db_arg]
    if namespace and namespace != "default":
        args += ["--namespace", namespace]
    return args + sub


def server_command(db: str | os.PathLike[str], namespace: str | None = None,
                   command: str | None = None) -> tuple[str, list[str]]:
    """The command and arguments an agent runs: ``<chronomem> --db PATH [--namespace NS] mcp``.

    ``db`` is made absolute (agents start servers from other directories). A
    URL (``postgresql://...``, ``sqlite:///...``) is passed through unchanged.
    The executable is :func:`launcher`'s.
    """
    exe, *pre = launcher(command)
    return exe, pre + _args(_db_arg(db), namespace, ["mcp"])


def hook_command(db: str | os.PathLike[str], namespace: str | None = None, command: str | None = None) -> str:
    """The shell command of chronomem's Claude Code hooks (user scope): absolute
    executable and database, ``hook claude-code`` last."""
    return shlex.join([*launcher(command), *_args(_db_arg(db), namespace, HOOK_SUBCOMMAND.split())])


def _project_hook_command(db_arg: str, namespace: str | None, command: str | None) -> str:
    # a relative db is anchored at $CLAUDE_PROJECT_DIR: hooks may run from a subdirectory
    exe = shlex.quote(command or "chronomem")
    if "://" in db_arg or db_arg == ":memory:" or Path(db_arg).is_absolute():
        where = shlex.quote(db_arg)
    else:
        where = f'"${PROJECT_DIR_VAR}"/{shlex.quote(db_arg)}'
    rest = shlex.join(_args("", namespace, HOOK_SUBCOMMAND.split())[2:])
    return f"{exe} --db {where} {rest}"


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


def _servers_of(path: Path, text: str | None, keys: Sequence[str]) -> dict[str, Any] | None:
    try:
        data, _ = load_jsonc(text or "", str(path))
    except ConfigFormatError as exc:
        raise InstallError(str(exc)) from None
    return _container(data, keys, path, create=False)


def _with_user_fields(spec: ClientSpec, entry: dict[str, Any], previous: Any) -> dict[str, Any]:
    """``entry`` plus the fields the user manages in the client, taken from the
    entry already there (legacy names renamed)."""
    if not isinstance(previous, dict):
        return entry
    prev = dict(previous)
    for legacy, current in spec.renamed_fields:
        if legacy in prev and current not in prev:
            prev[current] = prev[legacy]
    out = dict(entry)
    for f in spec.user_fields:
        if f in prev:
            out[f] = prev[f]
    return out


def _plan_json(spec: ClientSpec, path: Path, entry: dict[str, Any] | None, notes: list[str],
               carried: Any = None) -> Change:
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
        entry = _with_user_fields(spec, entry, servers.get(SERVER_NAME, carried))
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


def _plan_stale(spec: ClientSpec, target: Path, home: Path, platform: str, env: Env,
                notes: list[str]) -> tuple[list[Change], Any]:
    """Remove our entry from files the client no longer reads; returns the
    changes and the removed entry (to carry its user fields over)."""
    if spec.stale_paths is None:
        return [], None
    changes: list[Change] = []
    carried: Any = None
    for stale in spec.stale_paths(home, platform, env):
        if stale == target:  # an override pointing the client back at it: it is read again
            continue
        text = _read(stale)
        try:
            servers = _servers_of(stale, text, spec.container) if text is not None else None
        except InstallError as exc:  # the client does not read it, so it must not block the install
            notes.append(f"left {stale} as it is: {exc}")
            continue
        if servers is None or SERVER_NAME not in servers:
            continue
        carried = carried if carried is not None else servers[SERVER_NAME]
        changes.append(Change(stale, text, _plan_json(spec, stale, None, notes).new, "legacy mcp server"))
        others = len(servers) - 1
        kept = f"; its {others} other server(s) are left as they are" if others else ""
        notes.append(f"removed chronomem's entry from {stale}, which {spec.label} no longer reads "
                     f"(previous version in {_backup_path(stale).name}){kept}")
    return changes, carried


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


def _hook_db(command: str) -> str | None:
    """The ``--db`` value of a hook command, if it is chronomem's hook."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    sub = HOOK_SUBCOMMAND.split()
    if tokens[-len(sub):] != sub or not any("chronomem" in t for t in tokens[:-len(sub)]):
        return None
    if "--db" in tokens[:-1]:
        return tokens[tokens.index("--db") + 1]
    return ""


def _is_ours(hook: Any, db: str | None) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    found = _hook_db(hook["command"])
    return found is not None and (db is None or found == db)


def _is_reminder(hook: Any) -> bool:
    return isinstance(hook, dict) and HOOK_MARKER in str(hook.get("command", ""))


HookMode = Literal["install", "uninstall", "migrate"]


def _plan_hooks(path: Path, mode: HookMode, command: str | None, notes: list[str]) -> Change:
    """``install``: our hook on each of :data:`HOOK_EVENTS` (an existing one for
    the same db is replaced where it is); ``uninstall``: every chronomem hook
    removed; all modes drop the old reminder hook. Foreign hooks, groups and
    matchers are kept as they are."""
    old = _read(path)
    try:
        data, _comments = load_jsonc(old or "", str(path))
        before, _ = load_jsonc(old or "", str(path))
    except ConfigFormatError as exc:
        raise InstallError(str(exc)) from None
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: 'hooks' is not a JSON object; fix it by hand and retry")
    timeouts = dict(HOOK_EVENTS) if mode == "install" else {}
    db = _hook_db(command) if command is not None else None
    ours = None if mode == "migrate" else db
    reminder = False
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            if event in timeouts:
                raise InstallError(f"{path}: hooks.{event} is not a list; fix it by hand and retry")
            out[event] = groups
            continue
        placed = event not in timeouts
        new_groups: list[Any] = []
        for g in groups:
            if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
                new_groups.append(g)
                continue
            kept: list[Any] = []
            for h in g["hooks"]:
                if _is_reminder(h):
                    reminder = True
                elif mode != "migrate" and _is_ours(h, ours):
                    if not placed:
                        assert command is not None
                        kept.append({"type": "command", "command": command, "timeout": timeouts[event]})
                        placed = True
                else:
                    kept.append(h)
            if kept or not g["hooks"]:  # a group we emptied goes; one found empty stays
                new_groups.append({**g, "hooks": kept})
        if not placed:
            assert command is not None
            new_groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeouts[event]}]})
        if new_groups or not groups:
            out[event] = new_groups
    for event, timeout in timeouts.items():
        if event not in out:
            assert command is not None
            out[event] = [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]
    if out:
        data["hooks"] = out
    else:
        data.pop("hooks", None)
    if data == before:
        return Change(path, old, old or "", "Claude Code hooks")
    if reminder:
        notes.append(f"removed the old '{HOOK_MARKER}' Stop hook from {path}"
                     + (" (replaced by chronomem hook claude-code)" if mode == "install" else ""))
    return Change(path, old, dump_json(data), "Claude Code hooks")


def _plan(spec: ClientSpec, scope: Scope, entry: dict[str, Any] | None, hooks: str | None, home: Path,
          project: Path, platform: str, env: Env, notes: list[str]) -> list[Change]:
    """``entry`` None: uninstall. ``hooks``: the hook command to install (None:
    leave chronomem's hooks alone on install, remove them on uninstall)."""
    if scope not in spec.scopes:
        raise InstallError(
            f"{spec.label} has no {scope}-scope MCP config; use --scope {spec.scopes[0]}"
        )
    path = spec.path(scope, home, project, platform, env)
    stale, carried = _plan_stale(spec, path, home, platform, env, notes) if scope == "user" else ([], None)
    if spec.fmt == "json":
        changes = [_plan_json(spec, path, entry, notes, carried)]
    elif spec.fmt == "toml":
        changes = [_plan_toml(spec, path, entry)]
    else:
        changes = [_plan_yaml(spec, path, entry)]
    changes += stale
    hooks_path = spec.hooks_path(scope, home, project)
    if hooks is not None and hooks_path is None:
        notes.append(f"{spec.label} has no hook support that chronomem knows of; --hooks was skipped")
    elif hooks_path is not None and (hooks is not None or hooks_path.exists()):
        mode: HookMode = "uninstall" if entry is None else ("install" if hooks is not None else "migrate")
        change = _plan_hooks(hooks_path, mode, hooks, notes)
        if change.changed or hooks is not None:
            changes.append(change)
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
            command: str | None = None, platform: str | None = None, env: Mapping[str, str] | None = None) -> Outcome:
    """Add (or update) the chronomem server in ``client_key``'s config.

    User scope writes absolute paths (the executable from :func:`launcher`, the
    database). Project scope writes a file meant to be committed: a bare
    ``chronomem`` (or ``command``) and the database relative to the project
    when it lies inside it. ``env`` (default ``os.environ``) supplies the
    variables some clients honour (``CLINE_*``, ``LOCALAPPDATA``).
    """
    spec = _resolve(client_key)
    h, p = _dirs(home, project)
    environ: Env = os.environ if env is None else env
    out = Outcome(spec.key, spec.label, scope, "install", dry_run)
    if scope == "project":
        db_arg = _project_db(db, p, out.notes)
        exe, args = command or "chronomem", _args(db_arg, namespace, ["mcp"])
        hook = _project_hook_command(db_arg, namespace, command) if hooks else None
    else:
        exe, args = server_command(db, namespace, command)
        hook = hook_command(db, namespace, command) if hooks else None
    out.changes = _plan(spec, scope, spec.entry(exe, args), hook, h, p, platform or sys.platform, environ,
                        out.notes)
    if not dry_run:
        _apply(out.changes)
    return out


def uninstall(client_key: str, *, scope: Scope = "user", dry_run: bool = False, home: Path | None = None,
              project: Path | None = None, platform: str | None = None,
              env: Mapping[str, str] | None = None) -> Outcome:
    """Remove the chronomem server, its hooks (for any database) and the old
    reminder hook from ``client_key``'s config, and our entry from files the
    client no longer reads."""
    spec = _resolve(client_key)
    h, p = _dirs(home, project)
    environ: Env = os.environ if env is None else env
    out = Outcome(spec.key, spec.label, scope, "uninstall", dry_run)
    out.changes = [c for c in _plan(spec, scope, None, None, h, p, platform or sys.platform, environ, out.notes)
                   if c.old is not None or c.changed]
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


def detect(home: Path | None = None, project: Path | None = None, platform: str | None = None,
           env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every supported client: whether it looks installed, its config files and
    whether chronomem is configured in them."""
    h, p = _dirs(home, project)
    plat = platform or sys.platform
    environ: Env = os.environ if env is None else env
    rows = []
    for spec in CLIENTS:
        scopes = {}
        for scope in spec.scopes:
            path = spec.path(scope, h, p, plat, environ)
            scopes[scope] = {"path": str(path), "exists": path.exists(), "installed": _installed(spec, path)}
        rows.append({
            "client": spec.key, "label": spec.label,
            "detected": any(d.exists() for d in spec.detect(h, plat, environ)),
            "scopes": scopes, "hooks": spec.hooks_user_path is not None, "docs": spec.doc_url,
        })
    return rows
