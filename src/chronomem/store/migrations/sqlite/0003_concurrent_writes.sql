-- Concurrent writers. PostgreSQL's 0003 moves system time to a sequence and
-- adds shared write transactions with per-group locks. SQLite has a single
-- writer (BEGIN IMMEDIATE) and keeps its clock in meta('last_system_time'),
-- so it has nothing to change; this file keeps both backends' migrations
-- numbered and named alike.
SELECT 1;
