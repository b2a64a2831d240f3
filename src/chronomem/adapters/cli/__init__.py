"""The ``chronomem`` command line: a thin click layer over :class:`~chronomem.Memory`.

Every command prints rich tables for humans and JSON with ``--json``. A
:class:`~chronomem.ChronomemError` becomes one ``error: ...`` line on stderr
and exit status 1 (usage errors exit 2, as click does).

Commands live in small modules that each expose ``register(main)``,
imported when one of their commands runs (``COMMAND_MODULES``) or when all
are listed. Optional modules (``agent_cmds``: MCP server and agent installs;
``web_cmds``: HTTP server) are registered when present; they must import
their optional dependencies inside their commands.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import Any

import click

from ...errors import ChronomemError
from ...service.evidence import EMBEDDERS
from ._common import CliError, State

__all__ = ["ChronomemGroup", "main"]

log = logging.getLogger("chronomem.cli")

_OPTIONAL_MODULES = ("agent_cmds", "web_cmds", "pg_cmds", "evidence_cmds", "ingest_cmds", "hook_cmds", "bench_cmds")
# every command module in registration order: a later one's command replaces
# an earlier one's of the same name (evidence_cmds' search, read_cmds' one)
_MODULES = ("fact_cmds", "read_cmds", "admin_cmds", "io_cmds", "token_cmds", *_OPTIONAL_MODULES)
# which module registers each command: only that one is imported to run it
# (importing all of them cost ~80 ms of a cold `search`); tests/test_cli.py
# checks this against what registering every module gives
COMMAND_MODULES = {
    "add": "fact_cmds", "invalidate": "fact_cmds", "correct": "fact_cmds", "retract": "fact_cmds",
    "erase": "fact_cmds", "facts": "read_cmds", "current": "read_cmds", "history": "read_cmds",
    "timeline": "read_cmds", "diff": "read_cmds", "conflicts": "read_cmds", "volatility": "read_cmds",
    "neighbors": "read_cmds", "path": "read_cmds", "entity": "read_cmds", "search": "evidence_cmds",
    "stats": "read_cmds", "alias": "admin_cmds", "merge": "admin_cmds", "unmerge": "admin_cmds",
    "predicate": "admin_cmds", "doctor": "admin_cmds", "demo": "admin_cmds", "import": "io_cmds",
    "export": "io_cmds", "token": "token_cmds", "mcp": "agent_cmds", "install": "agent_cmds",
    "uninstall": "agent_cmds", "serve": "web_cmds", "copy": "pg_cmds", "migrate": "pg_cmds",
    "remember": "evidence_cmds", "recall": "evidence_cmds", "reindex": "evidence_cmds", "eval": "evidence_cmds",
    "ingest": "ingest_cmds", "hook": "hook_cmds", "watch": "hook_cmds", "bench": "bench_cmds",
}


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record."""

    def emit(self, record: logging.LogRecord) -> None:
        self.setStream(sys.stderr)
        super().emit(record)


_handler = _StderrHandler()
_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))


def _configure_logging(verbose: int) -> None:
    logger = logging.getLogger("chronomem")
    if _handler not in logger.handlers:
        logger.addHandler(_handler)
    logger.setLevel(logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG)


#: the group's options that every command also takes after its name
#: (``chronomem mcp --db X`` as well as ``chronomem --db X mcp``)
GLOBAL_OPTIONS = ("db", "namespace", "timezone", "embedder", "read_replica", "verbose")


def _set_late_global(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """A global option given after the command: it overrides the group's."""
    if value is None or (param.name == "verbose" and not value):
        return  # not given after the command: the group's value stands
    st = ctx.find_object(State)
    if st is None:  # pragma: no cover - commands always run under the group
        return
    if param.name == "verbose":
        st.verbose += int(value)  # `-v mcp -v` counts both, as `-vv mcp` would
        _configure_logging(st.verbose)
    else:
        setattr(st, str(param.name), value)


def _late_globals(group: click.Command, cmd: click.Command) -> None:
    """Give ``cmd`` (and a sub-group's commands) ``group``'s global options,
    without environment variables or defaults: only what is typed after the
    command overrides what the group read. An option the command already
    has under the same name or flag stays the command's own."""
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _late_globals(group, sub)
    taken_names = {p.name for p in cmd.params}
    taken_flags = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    for p in group.params:
        if p.name not in GLOBAL_OPTIONS or not isinstance(p, click.Option):
            continue
        if p.name in taken_names or taken_flags.intersection(p.opts):
            continue
        late = click.Option(
            p.opts, type=None if p.count else p.type, count=p.count, default=None, metavar=p.metavar,
            expose_value=False, callback=_set_late_global,
            help=f"Same as the global {p.opts[-1]}.",
        )
        late.name = p.name
        cmd.params.append(late)


class ChronomemGroup(click.Group):
    """A group that turns library errors into one clean ``error:`` line and
    gives every command it holds the global options after its name too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loaded: set[str] = set()
        self._all = True  # (a group built with its commands; main() loads them lazily)
        self._rank = 0  # the position in _MODULES of the module registering now
        self._owner: dict[str, int] = {}
        self._registering = False  # (a module's register() adds its commands: no loading of all)
        super().__init__(*args, **kwargs)

    # The commands load lazily: ``commands`` (help, docs, tests) registers every
    # module; running one command imports only its module.
    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        if not self._all and not self._registering:
            self._load_all()
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._commands = value

    def lazy(self) -> None:
        """Register the command modules on demand from now on."""
        self._all = False

    def _load(self, module: str) -> bool:
        """Register ``module``'s commands; ``False`` when it is an optional
        module whose extra is missing."""
        if module in self._loaded:
            return True
        modname = f"{__name__}.{module}"
        try:
            imported = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name != modname or module not in _OPTIONAL_MODULES:
                raise
            self._loaded.add(module)
            return False
        self._loaded.add(module)
        self._rank = _MODULES.index(module)
        self._registering = True
        try:
            imported.register(self)
        finally:
            self._registering = False
        return True

    def _load_all(self) -> None:
        self._all = True
        for module in _MODULES:
            self._load(module)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if not self._all:
            module = COMMAND_MODULES.get(cmd_name)
            if module is None or not self._load(module) or cmd_name not in self._commands:
                self._load_all()  # (an unknown name, or an optional module missing: say so as click does)
        return self._commands.get(cmd_name)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        name = name or cmd.name
        if name is not None and self._owner.get(name, -1) > self._rank:
            return  # a later module's command of this name stays
        super().add_command(cmd, name)
        if name is not None:
            self._owner[name] = self._rank
        _late_globals(self, cmd)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        _escape_unencodable_output()  # before click parses (its usage errors echo the arguments)
        return super().main(*args, **kwargs)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError:
            raise  # the help text, as asked for
        except click.UsageError as exc:
            raise _OneLineUsageError(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise  # the help text, as asked for
        except click.UsageError as exc:
            raise _OneLineUsageError(exc) from None
        except ChronomemError as exc:
            log.debug("command failed", exc_info=True)
            raise CliError(str(exc)) from None
        except BrokenPipeError:
            # the reader went away (`chronomem facts | head`): stop quietly
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            ctx.exit(0)
        except OSError as exc:
            log.debug("command failed", exc_info=True)
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            raise CliError(f"{exc.strerror or exc}{where}") from None
        except (click.exceptions.Exit, click.Abort, click.ClickException):
            raise
        except Exception as exc:
            # a bug or an unforeseen failure: still one line (exit 1); -v shows the traceback
            log.info("command failed with an unexpected error", exc_info=True)
            raise CliError(f"internal error ({type(exc).__name__}): {exc}; run with -v for the traceback") from None


class _OneLineUsageError(click.UsageError):
    """A usage error as one ``error:`` line naming the command's help (exit 2)."""

    def __init__(self, exc: click.UsageError) -> None:
        super().__init__(exc.format_message(), exc.ctx)

    def show(self, file: Any = None) -> None:
        message = " ".join(self.format_message().split())
        where = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        line = f"error: {message}{where}"
        click.echo(line.encode("utf-8", "backslashreplace").decode("utf-8"), err=True)


def _escape_unencodable_output() -> None:
    """Print lone surrogates (from undecodable arguments or stored text) as
    ``\\udXXX`` escapes instead of dying with ``UnicodeEncodeError``."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot change its error mode keeps it
                pass


@click.group(cls=ChronomemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db", envvar="CHRONOMEM_DB", default=None, metavar="PATH",
    help="Memory database: a file path or sqlite:///path [env CHRONOMEM_DB; default "
         "$XDG_DATA_HOME/chronomem/memory.db, falling back to ~/.local/share/chronomem/memory.db].",
)
@click.option("--namespace", envvar="CHRONOMEM_NAMESPACE", default="default", show_default=True,
              help="Namespace inside the database [env CHRONOMEM_NAMESPACE].")
@click.option("--timezone", envvar="CHRONOMEM_TIMEZONE", default="UTC", show_default=True,
              help="How times without an offset are read and how times are shown [env CHRONOMEM_TIMEZONE].")
@click.option("--embedder", envvar="CHRONOMEM_EMBEDDER", default="auto", show_default=True,
              type=click.Choice(["auto", *EMBEDDERS, "none"]),
              help="Sentence embedder for episodes and search: auto = the built-in model the store's vectors "
                   "were made with, else minilm; none = lexical only [env CHRONOMEM_EMBEDDER].")
@click.option("--read-replica", envvar="CHRONOMEM_READ_REPLICA", default=None, metavar="URL",
              help="PostgreSQL: a streaming standby of the --db server; reads as known at a time it has "
                   "replayed run there, the rest on the primary (docs/postgres.md, \"Read replica\") "
                   "[env CHRONOMEM_READ_REPLICA].")
@click.option("-v", "--verbose", count=True, help="Log progress to stderr (-vv for debug).")
@click.version_option(package_name="chronomem", prog_name="chronomem")
@click.pass_context
def main(ctx: click.Context, db: str | None, namespace: str, timezone: str, embedder: str,
         read_replica: str | None, verbose: int) -> None:
    """chronomem: a local-first, bi-temporal knowledge-graph memory.

    Facts are `SUBJECT -PREDICATE-> OBJECT` with a valid time (when it was
    true in the world) and a system time (when the memory believed it).
    Times are ISO-8601 and may be partial: 2024, 2024-03, 2024-03-05T10:00.
    The options that choose what to read (--as-of, --known-at, --at, --since,
    --until, --start, --end, diff's T1 T2) also take a time phrase: now,
    yesterday, '3 days ago', 'last March', 'April 2022', 'Q3 2024'.
    """
    _configure_logging(verbose)
    state = State(db=db, namespace=namespace, timezone=timezone, embedder=embedder, verbose=verbose,
                  read_replica=read_replica)
    ctx.obj = state
    ctx.call_on_close(state.close)
    log.debug("database %s, namespace %s", state.db_path, namespace)


main.lazy()
