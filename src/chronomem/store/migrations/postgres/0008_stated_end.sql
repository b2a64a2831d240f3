-- The end a write gave a version that another value cut short (as SQLite's
-- 0008_stated_end): stated_to / stated_to_prec hold the valid_to the write
-- or the correction asked for (the maximum bigint for an open end) when
-- placement cut it and no closed version records that end (placement rule
-- 1, or a cut in the transaction that wrote it); NULL otherwise, and for
-- every row written before this migration.
ALTER TABLE facts ADD COLUMN stated_to BIGINT;
ALTER TABLE facts ADD COLUMN stated_to_prec INTEGER;
