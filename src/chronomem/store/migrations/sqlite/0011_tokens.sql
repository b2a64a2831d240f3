-- chronomem schema 11: access tokens for `chronomem serve` (docs/web.md#tokens).
-- Store-wide, not per namespace: a token names the namespaces it may use.
-- Only the SHA-256 of a token is kept (token_hash, unique: the lookup key);
-- the token itself is shown once at creation and stored nowhere. scopes and
-- namespaces are JSON arrays of strings. Revoking sets revoked_at and keeps
-- the row (its name stays taken, list shows it). Times are UTC microseconds.
CREATE TABLE tokens (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    token_hash   TEXT NOT NULL UNIQUE,
    scopes       TEXT NOT NULL,
    namespaces   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    expires_at   INTEGER,
    revoked_at   INTEGER
);
