-- Typed end causes (issue 14). What cut a version's valid interval short
-- was one column, invalidated_by, holding either the superseding fact's id
-- or the free-text reason given to invalidate() ('invalidated' when none
-- was). Now three columns say it:
-- * end_kind: 'superseded' (cut by a fact) or 'invalidated'; NULL for an
--   open interval or an end written with the fact;
-- * invalidated_by: the superseding fact's id, and nothing else;
-- * end_reason: the free-text reason, NULL when none was given.
ALTER TABLE facts ADD COLUMN end_kind TEXT;
ALTER TABLE facts ADD COLUMN end_reason TEXT;
-- a fact id is a UUIDv7 (core/ids.py) or, in a hand-made import, the id of
-- a fact this store holds; anything else was a reason
UPDATE facts SET end_kind = 'superseded'
    WHERE invalidated_by IS NOT NULL
      AND (invalidated_by GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
           OR EXISTS (SELECT 1 FROM facts g WHERE g.fact_id = facts.invalidated_by));
UPDATE facts SET end_kind = 'invalidated', end_reason = NULLIF(invalidated_by, 'invalidated'), invalidated_by = NULL
    WHERE invalidated_by IS NOT NULL AND end_kind IS NULL;
-- the close of an invalidated or retracted version names its reason in
-- closed_by; the default texts were no reason
UPDATE facts SET closed_by = NULL WHERE close_kind IN ('invalidated', 'retracted') AND closed_by = close_kind;
