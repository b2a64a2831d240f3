-- Who wrote what (chronomem schema 10): recorded_by holds the name a version
-- or an episode was written as (the server token's name, Memory.acting_as,
-- open(agent=...), else the local OS user). NULL for every row written before
-- this migration: who wrote it was not recorded. One nullable column each; no
-- rewrite (SQLite adds a nullable column to the schema only).
ALTER TABLE facts ADD COLUMN recorded_by TEXT;
ALTER TABLE episodes ADD COLUMN recorded_by TEXT;
