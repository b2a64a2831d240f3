-- chronomem schema 1: namespaces, entities, predicates, bitemporal fact versions.
-- Times are INTEGER microseconds since the Unix epoch, UTC.
-- valid_from = -9223372036854775808 means "start unknown";
-- valid_to / system_to = 9223372036854775807 mean "open" / "still believed".
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE namespaces (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);

CREATE TABLE entities (
    id         INTEGER PRIMARY KEY,
    ns_id      INTEGER NOT NULL REFERENCES namespaces(id),
    key        TEXT NOT NULL,
    name       TEXT NOT NULL,
    type       TEXT,
    properties TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (ns_id, key)
);

-- Every name that resolves to an entity: its own key and its aliases.
CREATE TABLE entity_keys (
    ns_id      INTEGER NOT NULL,
    key        TEXT NOT NULL,
    entity_id  INTEGER NOT NULL REFERENCES entities(id),
    alias_name TEXT,
    PRIMARY KEY (ns_id, key)
) WITHOUT ROWID;
CREATE INDEX entity_keys_entity ON entity_keys(entity_id);

CREATE TABLE predicates (
    id          INTEGER PRIMARY KEY,
    ns_id       INTEGER NOT NULL REFERENCES namespaces(id),
    key         TEXT NOT NULL,
    name        TEXT NOT NULL,
    cardinality TEXT NOT NULL DEFAULT 'many' CHECK (cardinality IN ('one', 'many')),
    inverse     TEXT,
    description TEXT,
    declared    INTEGER NOT NULL DEFAULT 0,
    UNIQUE (ns_id, key)
);

CREATE TABLE predicate_keys (
    ns_id        INTEGER NOT NULL,
    key          TEXT NOT NULL,
    predicate_id INTEGER NOT NULL REFERENCES predicates(id),
    alias_name   TEXT,
    PRIMARY KEY (ns_id, key)
) WITHOUT ROWID;

-- One row per system-time version of a fact. Rows are immutable except for
-- closing: system_to, close_kind and closed_by are set once, when the store
-- stops believing the version.
CREATE TABLE facts (
    rowid           INTEGER PRIMARY KEY,
    fact_id         TEXT NOT NULL,
    version         INTEGER NOT NULL,
    ns_id           INTEGER NOT NULL,
    subject_id      INTEGER NOT NULL,
    predicate_id    INTEGER NOT NULL,
    object_id       INTEGER,
    object_lit      TEXT,
    valid_from      INTEGER NOT NULL,
    valid_from_prec INTEGER NOT NULL,
    valid_to        INTEGER NOT NULL,
    valid_to_prec   INTEGER NOT NULL,
    system_from     INTEGER NOT NULL,
    system_to       INTEGER NOT NULL,
    confidence      REAL NOT NULL DEFAULT 1.0,
    source          TEXT,
    episode_id      TEXT,
    properties      TEXT,
    invalidated_by  TEXT,
    close_kind      TEXT,
    closed_by       TEXT,
    CHECK (valid_to > valid_from),
    CHECK (system_to > system_from),
    CHECK ((object_id IS NULL) <> (object_lit IS NULL))
);
CREATE UNIQUE INDEX facts_version ON facts(fact_id, version);
-- as-of reads by subject (and predicate) on both axes
CREATE INDEX facts_subject ON facts(subject_id, system_to, predicate_id, valid_from);
-- incoming edges
CREATE INDEX facts_object ON facts(object_id, system_to, predicate_id) WHERE object_id IS NOT NULL;
-- predicate-wide as-of reads
CREATE INDEX facts_predicate ON facts(predicate_id, system_to, valid_from);
CREATE INDEX facts_closed_by ON facts(closed_by) WHERE closed_by IS NOT NULL;
-- recent system-time events: versions closed, newest first (new versions: rowid order)
CREATE INDEX facts_closed_at ON facts(ns_id, system_to) WHERE system_to < 9223372036854775807;

-- Extra evidence for a fact beyond the source on its first version.
CREATE TABLE fact_sources (
    fact_id     TEXT NOT NULL,
    source      TEXT,
    episode_id  TEXT,
    recorded_at INTEGER NOT NULL
);
CREATE INDEX fact_sources_fact ON fact_sources(fact_id);

-- Recorded, undoable operations (merge).
CREATE TABLE operations (
    id        TEXT PRIMARY KEY,
    ns_id     INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    at        INTEGER NOT NULL,
    payload   TEXT NOT NULL,
    undone_at INTEGER
);

-- Physical deletions, without content.
CREATE TABLE erasures (
    id        INTEGER PRIMARY KEY,
    ns_id     INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    erased_at INTEGER NOT NULL,
    versions  INTEGER NOT NULL,
    reason    TEXT
);
