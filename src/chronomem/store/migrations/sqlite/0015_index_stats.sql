-- chronomem schema 15 on SQLite: each namespace's lexical statistics. FTS5's
-- bm25 reads N, avgdl and term counts over the whole table, so one
-- namespace's episodes moved another's scores; the search ranks within a
-- namespace over its own rows and tokens (store/sqlite/lexstats.py), kept
-- here in the transaction of every index row written or deleted. The step
-- counts the rows already indexed (from FTS5's docsize records).
CREATE TABLE episode_index_stats (
    ns_id INTEGER PRIMARY KEY,
    nrow  INTEGER NOT NULL,
    ntok  INTEGER NOT NULL
);
-- step: index_stats
