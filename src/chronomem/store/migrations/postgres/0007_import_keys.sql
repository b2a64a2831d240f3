-- What imports have stored (as SQLite's 0007_import_keys): import_keys maps
-- a hash of (format, a message's stable source id) to the episode holding its
-- latest version and a digest of that version's content (emptied on
-- erasure); import_files keeps a fingerprint per input file read in full.
CREATE TABLE import_keys (
    ns_id      BIGINT NOT NULL REFERENCES namespaces(id),
    key        TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    digest     TEXT NOT NULL,
    PRIMARY KEY (ns_id, key)
);
CREATE INDEX import_keys_episode ON import_keys(episode_id);

CREATE TABLE import_files (
    ns_id       BIGINT NOT NULL REFERENCES namespaces(id),
    path_key    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    imported_at BIGINT NOT NULL,
    PRIMARY KEY (ns_id, path_key)
);
