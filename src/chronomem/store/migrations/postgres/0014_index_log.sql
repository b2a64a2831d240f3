-- chronomem schema 14 on PostgreSQL: nothing to change. SQLite's 0014 adds
-- the log its warm numpy copy of the FTS5 index replays; PostgreSQL ranks
-- in SQL. The number keeps both backends' versions equal.
SELECT 1;
