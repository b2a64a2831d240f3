-- The end a write gave a version that another value cut short (issue: a
-- value cut on arrival was never restored). stated_to / stated_to_prec hold
-- the valid_to the write or the correction asked for (9223372036854775807
-- for an open end) when placement cut it and no closed version records that
-- end: a value that ends where a later one begins (placement rule 1), or one
-- cut in the transaction that wrote it. NULL otherwise, and for every row
-- written before this migration (what they were given was not recorded).
-- A retraction, erasure or correction of the cutter gives the end back.
ALTER TABLE facts ADD COLUMN stated_to INTEGER;
ALTER TABLE facts ADD COLUMN stated_to_prec INTEGER;
