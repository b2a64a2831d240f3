-- chronomem schema 14 on SQLite: a log of the lexical index's row writes.
-- Every write of an episodes_fts row (replace_episode_index) appends the
-- episode's rowid; a deletion appends -1 (compact_episode_index). A warm
-- process's numpy copy of the index (store/sqlite/lexindex.py) replays the
-- log from where its copy stopped instead of reading the whole index again.
-- AUTOINCREMENT: a sequence number is never reused, even after the oldest
-- rows are pruned (a copy older than the oldest row left is rebuilt).
CREATE TABLE episode_index_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    episode_rowid INTEGER NOT NULL
);
