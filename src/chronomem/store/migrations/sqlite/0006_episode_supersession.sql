-- An episode's supersession on both time axes. superseded_at now says when
-- the supersession takes effect in valid time: the superseding episode's
-- coalesce(occurred_at, recorded_at), so a backfilled "the meeting moved"
-- overrides the old plan from the moment it was said. The new
-- superseded_recorded_at says when the memory recorded the supersession
-- (system time), so a read "as known at" an earlier time does not apply it.
-- Existing rows: superseded_at held max(recorded_at) of the two episodes,
-- the best record of when the supersession was stored (it was made no
-- earlier than that); it moves to superseded_recorded_at, and superseded_at
-- is computed from the superseding episode (kept where it no longer exists).
ALTER TABLE episodes ADD COLUMN superseded_recorded_at INTEGER;
UPDATE episodes SET superseded_recorded_at = superseded_at WHERE superseded_by IS NOT NULL;
UPDATE episodes SET superseded_at = coalesce(
        (SELECT coalesce(n.occurred_at, n.recorded_at) FROM episodes n WHERE n.id = episodes.superseded_by),
        superseded_at)
    WHERE superseded_by IS NOT NULL;
