-- chronomem schema 13 on SQLite: nothing to change. PostgreSQL's 0013
-- rebuilds its lexical index with the tokens FTS5 makes here, so that both
-- rank with FTS5's bm25; the number keeps both backends' versions equal.
SELECT 1;
