"""Opening a PostgreSQL store: its URL (the ``?schema=`` part, the password
kept out of ``store.url``), the settings of its connections, and the schema
set-up (migrations, the extensions they need, pgvector where available).
Used by :class:`~chronomem.store.postgres.store.PostgresStore`.
"""

from __future__ import annotations

import json
import logging
import re
from array import array
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ...core.index_text import index_columns, metadata_text
from ...core.quantize import dequantize
from ...core.time import Clock, to_us
from ...errors import MissingExtraError, SchemaVersionError, StoreError, StoreUnavailableError
from ..migrations import STEP_CHUNK, Int8Row, load_migrations, requantize_vectors, split_steps

__all__ = ["connect", "connection_kwargs", "connection_lost", "import_psycopg", "migrate", "split_params",
           "split_schema"]

log = logging.getLogger("chronomem.store.postgres")

# database-wide advisory lock key for migrations ("chronomem" in two int4s)
_MIGRATE_LOCK = (1668442479, 1835363693)
_SCHEMA_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def split_schema(url: str) -> tuple[str, str | None]:
    """``(conninfo URL without chronomem's own parameters, schema or None)``."""
    conninfo, params = split_params(url)
    return conninfo, params.get("schema")


#: the URL parameters chronomem reads itself (libpq would refuse them)
OWN_PARAMS = ("schema", "read_timeout", "pool_size")

#: the most connections ``?pool_size=`` may ask one store for
MAX_POOL_SIZE = 1000


def split_params(url: str) -> tuple[str, dict[str, str]]:
    """``(conninfo URL, chronomem's own parameters)``: ``?schema=NAME``,
    ``?read_timeout=SECONDS`` and ``?pool_size=N`` are taken out of the URL,
    the rest is libpq's."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    own: dict[str, str] = {}
    rest = []
    for k, v in query:
        if k in OWN_PARAMS:
            own[k] = v
        else:
            rest.append((k, v))
    schema = own.get("schema")
    if schema is not None and not _SCHEMA_RE.fullmatch(schema):
        raise StoreError(f"schema name {schema!r} must be letters, digits and underscores")
    if "read_timeout" in own:
        try:
            ok = 0 < float(own["read_timeout"]) < 1e6
        except ValueError:
            ok = False
        if not ok:
            raise StoreError(f"read_timeout={own['read_timeout']!r} must be a number of seconds above 0")
    if "pool_size" in own and not (own["pool_size"].isdigit() and 1 <= int(own["pool_size"]) <= MAX_POOL_SIZE):
        raise StoreError(f"pool_size={own['pool_size']!r} must be a whole number of connections from 1 to "
                         f"{MAX_POOL_SIZE}")
    # quote (not quote_plus): libpq reads "+" literally, so "-c%20x=y" must stay "%20"
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), own


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(":" + parts.password + "@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def import_psycopg() -> Any:
    """The psycopg module, or the missing extra's error."""
    try:
        import psycopg
    except ImportError:
        raise MissingExtraError("psycopg", "postgres") from None
    return psycopg


# SQLSTATEs of a server that is going away or not ready: admin_shutdown,
# crash_shutdown, cannot_connect_now (starting up or shutting down) and
# too_many_connections; class 08 is every connection exception
_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# what libpq says when the server answered and refused us for good
_PERMANENT = ("authentication failed", "does not exist", "no pg_hba.conf entry", "invalid ")


def connection_lost(exc: BaseException, psycopg: Any) -> bool:
    """Whether a driver error means the server could not be reached or the
    connection died (the same call may work later), rather than a refused
    statement or bad credentials."""
    state = getattr(exc, "sqlstate", None)
    if state:
        return state.startswith("08") or state in _UNAVAILABLE_STATES
    if isinstance(exc, psycopg.InterfaceError):
        return "closed" in str(exc)  # a connection the server dropped, used again
    if not isinstance(exc, psycopg.OperationalError):
        return False
    return not any(word in str(exc) for word in _PERMANENT)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def connection_kwargs(conninfo: str, schema: str | None, connect_timeout: float, *,
                      lock_timeout: float | None = None, statement_timeout: float | None = None) -> dict[str, Any]:
    """The settings of every connection of a store (the first and the pool's):
    autocommit, the connect timeout and the ``options`` (the URL's, the
    schema's search path, and the lock and statement timeouts; an option the
    URL sets itself wins)."""
    kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": max(1, int(connect_timeout))}
    # the URL's options (e.g. -c synchronous_commit=off, which "normal"
    # durability follows) as a parameter: split_schema re-encodes a
    # space as "+", which libpq does not decode
    given = dict(parse_qsl(urlsplit(conninfo).query)).get("options", "")
    parts = [f"-c lock_timeout={_ms(lock_timeout)}"] if lock_timeout else []
    if statement_timeout:
        parts.append(f"-c statement_timeout={_ms(statement_timeout)}")
    if given:
        parts.append(given)  # later -c settings override earlier ones
    if schema is not None:
        parts.append(f"-c search_path={schema},public")
    if parts:
        kwargs["options"] = " ".join(parts)
    return kwargs


def connect(psycopg: Any, conninfo: str, kwargs: dict[str, Any]) -> Any:
    """One connection, or a one-sentence error: :class:`StoreUnavailableError`
    when the server cannot be reached now, :class:`StoreError` when it refused
    us (credentials, an unknown database)."""
    try:
        return psycopg.connect(conninfo, **kwargs)
    except psycopg.Error as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        text = f"cannot connect to PostgreSQL at {_redact(conninfo)}: {msg}"
        if connection_lost(exc, psycopg):
            raise StoreUnavailableError(text) from None
        raise StoreError(text) from None


def migrate(conn: Any, schema: str | None, clock: Clock, psycopg: Any) -> bool:
    """Create ``schema`` (if given) and apply the pending migrations on
    ``conn``, under a database-wide advisory lock (several processes may
    open a store at once; taken only when a read finds something to apply,
    and the check repeated under it); whether episode vectors have a
    pgvector column.
    The caller turns driver errors into :class:`StoreError` s."""
    migrations = load_migrations("postgres")
    latest = max(n for n, _, _ in migrations)
    if _up_to_date(conn, schema, latest, {m[0] for m in migrations}):
        # nothing to apply: no lock (one migrating elsewhere in the database would make this open wait)
        return _has_pgvector_column(conn)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", _MIGRATE_LOCK)
        if schema is not None:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
        )
        done = {int(v) for (v,) in conn.execute("SELECT version FROM schema_migrations")}
        if done and max(done) > latest:
            raise SchemaVersionError(
                f"database schema version {max(done)} is newer than this chronomem ({latest}); upgrade chronomem"
            )
        pending = [m for m in migrations if m[0] not in done]
        if pending:
            _ensure_extension(conn, "btree_gist", "postgresql-contrib")
            for number, name, sql in pending:
                log.info("applying migration %s", name)
                for step, piece in split_steps(sql):
                    if step is not None:
                        _STEPS[step](conn)
                    else:
                        conn.execute(piece)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                    (number, name, to_us(clock())),
                )
            _add_pgvector(conn, psycopg)
        return _has_pgvector_column(conn)


def _up_to_date(conn: Any, schema: str | None, latest: int, numbers: set[int]) -> bool:
    """Whether the store's schema has every migration, by plain reads (no
    lock); :class:`SchemaVersionError` when it is newer than this chronomem.
    (The store's own schema by name: the search path falls back to
    ``public`` when the named one does not exist yet.)"""
    table = f'"{schema}".schema_migrations' if schema is not None else "schema_migrations"
    if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
        return False
    done = {int(v) for (v,) in conn.execute(f"SELECT version FROM {table}")}
    if done and max(done) > latest:
        raise SchemaVersionError(
            f"database schema version {max(done)} is newer than this chronomem ({latest}); upgrade chronomem"
        )
    return numbers <= done


def _has_pgvector_column(conn: Any) -> bool:
    return bool(conn.execute(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'episode_vectors' AND column_name = 'embedding')"
    ).fetchone()[0])

def _add_pgvector(conn: Any, psycopg: Any) -> None:
    """Where the server has pgvector, keep each vector also as ``vector``
    (indexed per model with HNSW) for SQL users; results never depend on it."""
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        log.info("pgvector is not available: vectors are stored as int8 only")
        return
    try:
        with conn.transaction():  # a savepoint: lacking the privilege is not an error
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            conn.execute("ALTER TABLE episode_vectors ADD COLUMN IF NOT EXISTS embedding public.vector")
            _fill_pgvector(conn)
            for model_id, dim in conn.execute("SELECT id, dim FROM embedding_models").fetchall():
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS episode_vectors_hnsw_{int(model_id)} ON episode_vectors "
                    f"USING hnsw ((embedding::public.vector({int(dim)})) public.vector_cosine_ops) "
                    f"WHERE model_id = {int(model_id)}"
                )
    except psycopg.Error as exc:
        log.warning("pgvector not enabled (%s): vectors are stored as int8 only", exc.diag.message_primary)

def _fill_pgvector(conn: Any) -> None:
    """The ``embedding`` of the rows that have none (a store that gains
    pgvector after writing vectors), from the stored int8 vectors."""
    while True:
        rows = conn.execute("SELECT model_id, episode_rowid, vector, scale FROM episode_vectors "
                            "WHERE embedding IS NULL LIMIT 5000").fetchall()
        if not rows:
            return
        conn.cursor().executemany(
            "UPDATE episode_vectors SET embedding = %s::real[]::public.vector "
            "WHERE model_id = %s AND episode_rowid = %s",
            [(array("f", dequantize(bytes(q), float(s))).tolist(), m, r) for m, r, q, s in rows])


def _int8_vectors(conn: Any) -> None:
    """Migration 0009's step: each ``real[]`` vector into ``vector_int8`` as
    int8 bytes and a scale."""
    def read(model_id: int, rowid: int, limit: int) -> list[tuple[int, int, int, bytes]]:
        return [(int(m), int(r), int(ns), array("f", v).tobytes()) for m, r, ns, v in conn.execute(
            "SELECT model_id, episode_rowid, ns_id, vector FROM episode_vectors "
            "WHERE (model_id, episode_rowid) > (%s, %s) ORDER BY model_id, episode_rowid LIMIT %s",
            (model_id, rowid, limit)).fetchall()]

    def write(rows: list[Int8Row]) -> None:
        conn.cursor().executemany(
            "UPDATE episode_vectors SET vector_int8 = %s, scale = %s WHERE model_id = %s AND episode_rowid = %s",
            [(q, scale, m, r) for m, r, _ns, q, scale in rows])

    n = requantize_vectors(read, write)
    log.info("migration 0009: %d vectors stored as int8", n)


# migration 0013: every indexed live episode with what its index row is made
# of: the neighbouring live turns of its session (as
# BaseEpisodeTx.adjacent_episodes finds them) and, when it has an occurred
# time, the month and year words that open its old context column (the
# service wrote them in the store's time zone, which the store does not know)
_FTS5_ROWS = """
WITH live AS (
    SELECT e.rowid, e.ns_id, e.text, e.speaker, e.metadata, e.occurred_at, e.session,
           lag(e.text) OVER w AS prev, lead(e.text) OVER w AS next
    FROM episodes e WHERE e.erased_at IS NULL
    WINDOW w AS (PARTITION BY e.ns_id, e.session ORDER BY e.rowid)
)
SELECT l.rowid, l.ns_id, l.text, l.speaker, l.metadata, l.occurred_at, l.session, l.prev, l.next,
       (SELECT string_agg(c.lexeme, ' ' ORDER BY c.pos) FROM (
            SELECT u.lexeme, p.pos FROM unnest(f.tsv) u, unnest(u.positions, u.weights) p(pos, w)
            WHERE p.w = 'C' ORDER BY p.pos LIMIT 2) c) AS month_year
FROM live l JOIN episodes_fts f ON f.rowid = l.rowid
ORDER BY l.rowid
"""


def _fts5_tokens(conn: Any) -> None:
    """Migration 0013's step: each index row again, as today's
    ``replace_episode_index`` writes it (FTS5's tokens, the namespace, the
    token count), into ``episodes_fts_bm25``."""
    from .fts5_bm25 import tokenize_rows, tsvector_literal

    done = 0
    with conn.cursor(name="chronomem_fts5_tokens") as cur, conn.cursor() as out:
        cur.execute(_FTS5_ROWS)
        while True:
            rows = cur.fetchmany(STEP_CHUNK)
            if not rows:
                break
            parts: list[tuple[str, str, str, str]] = []
            for _rowid, _ns, text, speaker, metadata, occurred_at, session, prev, nxt, month_year in rows:
                context = [month_year] if occurred_at is not None and month_year else []
                context.extend(metadata_text(json.loads(metadata) if metadata else {}))
                neighbours = [t for t in (prev, nxt) if t is not None] if session is not None else []
                parts.append(index_columns(text, speaker, context, neighbours))
            with out.copy("COPY episodes_fts_bm25 (rowid, ns_id, dl, tsv) FROM STDIN") as copy:
                for row, tokens in zip(rows, tokenize_rows(parts), strict=True):
                    tsv, dl = tsvector_literal(tokens)
                    copy.write_row((row[0], row[1], dl, tsv))
            done += len(rows)
    log.info("migration 0013: %d lexical index rows rebuilt with FTS5's tokens", done)


# the Python steps migrations name (``-- step: NAME``, see chronomem.store.migrations)
_STEPS = {"int8_vectors": _int8_vectors, "fts5_tokens": _fts5_tokens}


def _ensure_extension(conn: Any, name: str, package: str) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,)).fetchone():
        return
    available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,)).fetchone()
    if not available:
        raise StoreError(
            f"the PostgreSQL server lacks the {name} extension: install {package} on the server"
        )
    # in schema public, so that dropping a store's schema never drops it
    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")
