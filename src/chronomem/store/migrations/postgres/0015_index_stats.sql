-- chronomem schema 15 on PostgreSQL: nothing to change. SQLite's 0015 keeps
-- each namespace's lexical statistics in a table; PostgreSQL counts them from
-- episodes_fts (ns_id, dl) in SQL. The number keeps both backends' versions equal.
SELECT 1;
