-- chronomem schema 9: episode vectors as int8, one signed byte per dimension,
-- and a per-vector float32 scale (chronomem.core.quantize: q = round(v /
-- max|v| * 127), scale = max|v| / 127), a quarter of float32's bytes; ranking
-- stays within noise of float32 (docs/evidence.md, "How vectors are stored").
-- The table is rebuilt: the step converts every float32 row into it, in the
-- migration's transaction (a crash leaves the store at schema 8).
CREATE TABLE episode_vectors_int8 (
    episode_rowid INTEGER NOT NULL,
    model_id      INTEGER NOT NULL,
    ns_id         INTEGER NOT NULL,
    vector        BLOB NOT NULL,
    scale         REAL NOT NULL,
    PRIMARY KEY (model_id, episode_rowid)
) WITHOUT ROWID;
-- step: int8_vectors
DROP TABLE episode_vectors;
ALTER TABLE episode_vectors_int8 RENAME TO episode_vectors;
CREATE INDEX episode_vectors_ns ON episode_vectors(ns_id, model_id);
