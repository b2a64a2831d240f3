-- chronomem schema 7: what imports have stored, so a re-run adds only what
-- is new. import_keys: one row per imported message, keyed by a hash of
-- (format, the message's stable id in its source), pointing at the episode
-- holding its latest version; digest hashes what that version was made of
-- (text, speaker, occurred_at) and is emptied when the episode is erased, so
-- a re-import neither resurrects an erased message nor keeps a trace of its
-- text. import_files: a fingerprint per input file already read in full, so
-- an unchanged file is skipped unread. Neither table holds source text or paths.
CREATE TABLE import_keys (
    ns_id      INTEGER NOT NULL REFERENCES namespaces(id),
    key        TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    digest     TEXT NOT NULL,
    PRIMARY KEY (ns_id, key)
) WITHOUT ROWID;
CREATE INDEX import_keys_episode ON import_keys(episode_id);

CREATE TABLE import_files (
    ns_id       INTEGER NOT NULL REFERENCES namespaces(id),
    path_key    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    imported_at INTEGER NOT NULL,
    PRIMARY KEY (ns_id, path_key)
) WITHOUT ROWID;
