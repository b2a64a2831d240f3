-- The erasures of a namespace after a time, found by an index range: a
-- pinned read answered by a PostgreSQL read replica asks the primary whether
-- anything was erased since the standby's replayed time (replica_patch.py),
-- on every such read once the clock has moved; without the index that was a
-- scan of the whole log. SQLite gets the same index, so the schemas stay alike.
CREATE INDEX IF NOT EXISTS erasures_ns_time ON erasures (ns_id, erased_at);
