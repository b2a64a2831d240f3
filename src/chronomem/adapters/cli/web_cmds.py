"""``chronomem serve``: the web view, the JSON API and MCP over HTTP on one port.

Needs the ``web`` extra (starlette, uvicorn); they are imported inside the
command so that the rest of the CLI works without them.
"""

from __future__ import annotations

import json
import logging
import sys

import click

from ._common import json_option, state

__all__ = ["register"]

log = logging.getLogger("chronomem.cli")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback requires a token.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="TCP port (0: any free port).")
@click.option("--token", envvar="CHRONOMEM_TOKEN", default=None, metavar="TOKEN",
              help="Legacy shared bearer token: an admin token named serve-token on --namespace, guarding API "
                   "writes and /mcp (every route when not on loopback) [env CHRONOMEM_TOKEN]. Prefer "
                   "`chronomem token create`.")
@click.option("--no-mcp", is_flag=True, help="Do not mount the MCP endpoint at /mcp.")
@click.option("--pool-size", type=click.IntRange(1, 1000), default=None, metavar="N",
              help="PostgreSQL: connections to keep (default 10, or the URL's ?pool_size=); also the number "
                   "of requests served at once.")
@click.option("--rate-limit", default=None, metavar="RATE",
              help="Requests per token (per client address without one), e.g. 20/s or 600/min; over it: 429 "
                   "with Retry-After. Default: no limit.")
@click.option("--burst", type=click.IntRange(1, 1_000_000), default=None, metavar="N",
              help="With --rate-limit: requests a token may send at once (default: twice the rate a second, "
                   "at least 10).")
@click.option("--access-log/--no-access-log", default=True, show_default=True,
              help="One line per request on stderr (logger chronomem.access).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Access log lines as key=value text or JSON objects.")
@click.option("--shutdown-timeout", type=click.IntRange(0, 3600), default=10, show_default=True,
              metavar="SECONDS", help="On SIGTERM / Ctrl-C: how long requests in flight may finish.")
@json_option
def serve_cmd(host: str, port: int, token: str | None, no_mcp: bool, pool_size: int | None,
              rate_limit: str | None, burst: int | None, access_log: bool, log_format: str,
              shutdown_timeout: int) -> None:
    """Serve the web view (/), the JSON API (/api) and MCP (/mcp) until Ctrl-C.

    The web view is read-only; writes go through the API. One process
    serves every namespace its tokens name (`chronomem token create`): each
    request's namespace comes from its token (or /ns/NAME/... and the
    X-Chronomem-Namespace header, checked against it). Once the store has an
    active token every request needs one; a non-loopback --host refuses to
    start without one (or --token / CHRONOMEM_TOKEN). /healthz and /readyz
    answer without a token. SIGTERM or Ctrl-C stops accepting, lets requests
    in flight finish (--shutdown-timeout), then closes the database. Running
    it for a team: docs/team.md.
    """
    from ...store import missing_local_file, server_pool
    from ..web.ops import Ops, RateLimiter, configure_access_log, parse_rate
    from ..web.server import bind, build_app, is_loopback, mounted, resolve_token, run_app

    st = state()  # --db / --namespace after `serve` are the group's (see ChronomemGroup)
    resolved = resolve_token(token, host, store_tokens=True)
    if resolved is None and not is_loopback(host):
        # refuse an unsafe bind before creating anything: a missing file has no tokens
        has = st.memory(create=False).tokens.any_active() if missing_local_file(st.db_path) is None else False
        resolve_token(None, host, store_tokens=has)
    limiter = None
    if rate_limit is not None:
        rate = parse_rate(rate_limit, "--rate-limit")
        limiter = RateLimiter(rate, burst if burst is not None else max(10, int(2 * rate)))
    elif burst is not None:
        raise click.UsageError("--burst needs --rate-limit")
    shown_db = st.db_path
    st.db, connections = server_pool(st.db_path, pool_size)  # the URL the store opens (?pool_size=N)
    configure_access_log(access_log)
    mem = st.memory()
    tokens_on = mem.tokens.any_active()
    app = build_app(mem, host=host, token=resolved, mcp=not no_mcp, ops=Ops(log_format=log_format, limiter=limiter),
                    threads=connections)
    sock = bind(host, port)
    port = int(sock.getsockname()[1])  # the real one when --port 0
    has_mcp = mounted(app, "/mcp")
    shown = f"[{host}]" if ":" in host else host
    info = {"url": f"http://{shown}:{port}/", "api": f"http://{shown}:{port}/api/openapi.json",
            "mcp": f"http://{shown}:{port}/mcp" if has_mcp else None, "db": shown_db, "namespace": st.namespace,
            "auth": "every route (tokens)" if tokens_on
            else "every route" if resolved and not is_loopback(host)
            else ("API writes and /mcp" if resolved else "none (loopback only)"),
            "pool_size": connections, "rate_limit": limiter.describe() if limiter else None,
            "health": f"http://{shown}:{port}/healthz", "ready": f"http://{shown}:{port}/readyz"}
    if st.json:
        click.echo(json.dumps(info))
    else:
        click.echo(f"chronomem serving {shown_db} (namespace {st.namespace}) at {info['url']}", err=True)
        click.echo(f"  API {info['api']}" + (f" · MCP {info['mcp']}" if has_mcp else " · no MCP (extra missing)")
                   + f" · auth: {info['auth']} · Ctrl-C to stop", err=True)
    sys.stdout.flush()
    level = logging.getLogger("chronomem").getEffectiveLevel()
    uv_level = "info" if level <= logging.INFO else "warning"
    if is_loopback(host):  # hooks of this database ask this server for their recall (docs/hooks.md)
        from ..hooks.server_link import announce

        with announce(shown_db, st.namespace, f"http://{shown}:{port}/"):
            run_app(app, sock, log_level=uv_level, graceful=shutdown_timeout)
    else:
        run_app(app, sock, log_level=uv_level, graceful=shutdown_timeout)
    # the group closes the memory (and its connection pool) after this returns


def register(main: click.Group) -> None:
    main.add_command(serve_cmd)
