-- Entity ids are never reused (SQLite's 0004 rebuilds its entities table
-- with AUTOINCREMENT for that). PostgreSQL's identity column already never
-- hands out a value twice; this file keeps both backends' migrations
-- numbered and named alike.
SELECT 1;
