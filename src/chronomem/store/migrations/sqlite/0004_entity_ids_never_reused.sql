-- Entity ids are never reused. SQLite gives a new row max(id) + 1, so after
-- the entity with the highest id was erased, the next new entity took its
-- id; another connection that had cached the erased entity's display name
-- under that id (names are cached by id, as they never change) then showed
-- the erased name on the new entity's facts. AUTOINCREMENT allocates past
-- every id ever used. A table cannot gain AUTOINCREMENT in place, so it is
-- rebuilt (foreign keys are off on chronomem's connections, and the
-- migration runs in one transaction). PostgreSQL's identity columns never
-- reuse values; its 0004 changes nothing.
CREATE TABLE entities_0004 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    ns_id      INTEGER NOT NULL REFERENCES namespaces(id),
    key        TEXT NOT NULL,
    name       TEXT NOT NULL,
    type       TEXT,
    properties TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (ns_id, key)
);
INSERT INTO entities_0004 (id, ns_id, key, name, type, properties, created_at)
    SELECT id, ns_id, key, name, type, properties, created_at FROM entities ORDER BY id;
-- ids erased before this migration may have been the highest: start past
-- the highest id any entity, key or fact still mentions (copying the rows
-- above made the sequence row unless the table was empty)
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'entities_0004', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'entities_0004');
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT max(id) FROM entities), 0),
                                     coalesce((SELECT max(entity_id) FROM entity_keys), 0),
                                     coalesce((SELECT max(subject_id) FROM facts), 0),
                                     coalesce((SELECT max(object_id) FROM facts), 0))
    WHERE name = 'entities_0004';
DROP TABLE entities;
ALTER TABLE entities_0004 RENAME TO entities;
