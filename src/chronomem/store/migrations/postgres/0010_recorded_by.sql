-- Who wrote what (as SQLite's 0010_recorded_by): recorded_by holds the name a
-- version or an episode was written as (the server token's name,
-- Memory.acting_as, open(agent=...), else the local OS user). NULL for every
-- row written before this migration. A nullable column without a default:
-- a catalog change, no table rewrite.
ALTER TABLE facts ADD COLUMN recorded_by TEXT;
ALTER TABLE episodes ADD COLUMN recorded_by TEXT;
