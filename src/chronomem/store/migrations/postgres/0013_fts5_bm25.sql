-- chronomem schema 13 on PostgreSQL: the lexical index holds the tokens
-- SQLite's FTS5 makes ('porter unicode61 remove_diacritics 2', stemmed, no
-- stop words), with the episode's namespace and token count beside them, so
-- that lexical_search ranks with FTS5's bm25 over the namespace's statistics
-- (chronomem.store.postgres.fts5_bm25). The step rebuilds every index row
-- from the stored episodes (text, speaker, metadata, the session's
-- neighbouring turns; the month and year words of the context column from
-- the old row, which was written with the store's time zone) into a new
-- table, which then replaces the old one: no dead tuple of the old
-- tsvectors is left in the table, and the GIN index is built once.
CREATE TABLE episodes_fts_bm25 (
    rowid BIGINT PRIMARY KEY,
    ns_id BIGINT NOT NULL,
    dl    INTEGER NOT NULL,
    tsv   TSVECTOR NOT NULL
);
-- step: fts5_tokens
DROP TABLE episodes_fts;
ALTER TABLE episodes_fts_bm25 RENAME TO episodes_fts;
ALTER INDEX episodes_fts_bm25_pkey RENAME TO episodes_fts_pkey;
CREATE INDEX episodes_fts_tsv ON episodes_fts USING gin (tsv);
-- a namespace's row count and token total (bm25's N and avgdl): an index-only scan
CREATE INDEX episodes_fts_ns ON episodes_fts (ns_id) INCLUDE (dl);
