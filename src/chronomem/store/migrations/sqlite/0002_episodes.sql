-- chronomem schema 2: episodes (evidence), their time mentions, embeddings and
-- the lexical index. An erased episode keeps its row as a tombstone (id and
-- times only, erased_at set) so the facts that cited it can say so. Times are INTEGER UTC microseconds like schema 1.
CREATE TABLE episodes (
    rowid         INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    ns_id         INTEGER NOT NULL REFERENCES namespaces(id),
    text          TEXT NOT NULL,
    occurred_at   INTEGER,
    occurred_prec INTEGER,
    recorded_at   INTEGER NOT NULL,
    source        TEXT,
    session       TEXT,
    speaker       TEXT,
    metadata      TEXT,
    superseded_by TEXT,
    superseded_at INTEGER,
    erased_at     INTEGER
);
CREATE INDEX episodes_ns ON episodes(ns_id, recorded_at);
CREATE INDEX episodes_session ON episodes(ns_id, session);
CREATE INDEX episodes_superseded ON episodes(ns_id) WHERE superseded_by IS NOT NULL;

-- Time expressions found in an episode's text, resolved against occurred_at
-- to a half-open interval [start_us, end_us).
CREATE TABLE episode_times (
    episode_rowid INTEGER NOT NULL,
    start_us      INTEGER NOT NULL,
    end_us        INTEGER NOT NULL,
    phrase        TEXT NOT NULL,
    precision     INTEGER NOT NULL
);
CREATE INDEX episode_times_episode ON episode_times(episode_rowid);

-- The embedding models whose vectors the store holds (name + dimension).
CREATE TABLE embedding_models (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    dim  INTEGER NOT NULL
);

-- One float32 vector per (episode, model): the source of truth for dense search.
CREATE TABLE episode_vectors (
    episode_rowid INTEGER NOT NULL,
    model_id      INTEGER NOT NULL,
    ns_id         INTEGER NOT NULL,
    vector        BLOB NOT NULL,
    PRIMARY KEY (model_id, episode_rowid)
) WITHOUT ROWID;
CREATE INDEX episode_vectors_ns ON episode_vectors(ns_id, model_id);

-- Lexical index (rowid = episodes.rowid), written in the episode's transaction.
-- Columns: the text, who said it, context (date words, captions) and the text
-- of the turns just before and after it in the same session.
-- Unsegmented scripts (Chinese, Japanese, ...) are indexed as character bigrams.
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    body, speaker, context, neighbors, tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Facts cite episodes: find them from the episode side.
CREATE INDEX facts_episode ON facts(episode_id) WHERE episode_id IS NOT NULL;
CREATE INDEX fact_sources_episode ON fact_sources(episode_id) WHERE episode_id IS NOT NULL;
