-- An episode's supersession on both time axes (as SQLite's
-- 0006_episode_supersession): superseded_at becomes the valid time the
-- supersession takes effect (the superseding episode's
-- coalesce(occurred_at, recorded_at)); superseded_recorded_at, new, the
-- system time it was recorded. Existing rows keep their old superseded_at
-- (max(recorded_at) of the two episodes) as superseded_recorded_at.
ALTER TABLE episodes ADD COLUMN superseded_recorded_at BIGINT;
UPDATE episodes SET superseded_recorded_at = superseded_at WHERE superseded_by IS NOT NULL;
UPDATE episodes e SET superseded_at = coalesce(n.occurred_at, n.recorded_at)
    FROM episodes n WHERE n.id = e.superseded_by AND e.superseded_by IS NOT NULL;
