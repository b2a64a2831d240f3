-- chronomem schema 9 on PostgreSQL: episode vectors as int8 (bytea, one
-- signed byte per dimension) and a per-vector float32 scale, as on SQLite
-- (chronomem.core.quantize: q = round(v / max|v| * 127), scale = max|v| / 127).
-- The step converts every real[] row in the migration's transaction. The
-- pgvector column, where there is one, keeps its float32 values and indexes.
ALTER TABLE episode_vectors ADD COLUMN vector_int8 BYTEA, ADD COLUMN scale REAL;
-- step: int8_vectors
-- (a row the step could not read, torn or not finite, is derived data: dropped)
DELETE FROM episode_vectors WHERE vector_int8 IS NULL;
ALTER TABLE episode_vectors DROP COLUMN vector;
ALTER TABLE episode_vectors RENAME COLUMN vector_int8 TO vector;
ALTER TABLE episode_vectors ALTER COLUMN vector SET NOT NULL, ALTER COLUMN scale SET NOT NULL;
-- Rewrite the table now: the dropped real[] values stay in every row (and the
-- UPDATE left a dead version of each) until a rewrite, which left alone made
-- the table 2.2 times its float32 size (100k vectors: 160 -> 359 MB; 47 MB
-- rewritten). VACUUM FULL cannot run in a transaction; CLUSTER can.
CLUSTER episode_vectors USING episode_vectors_pkey;
