-- Access tokens for `chronomem serve` (as SQLite's 0011_tokens): store-wide;
-- only the SHA-256 of each token (token_hash, unique, the lookup key); scopes
-- and namespaces as JSON arrays; revoke sets revoked_at and keeps the row.
CREATE TABLE tokens (
    id           BIGSERIAL PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    token_hash   TEXT NOT NULL UNIQUE,
    scopes       TEXT NOT NULL,
    namespaces   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    expires_at   BIGINT,
    revoked_at   BIGINT
);
