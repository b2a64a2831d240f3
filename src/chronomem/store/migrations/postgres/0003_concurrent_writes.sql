-- Concurrent writers (see docs/architecture.md, "Concurrency").
--
-- System time now comes from a hybrid logical clock kept in a sequence:
-- chronomem_tick(clock) returns greatest(last + 1, clock) and records it.
-- A sequence is not transactional, so ticking never holds a row lock until
-- COMMIT (the old meta row did, which serialised every writer).
--
-- Write transactions come in two kinds:
-- * exclusive (chronomem_begin_write): the store-wide advisory lock, taken
--   exclusively; for identity changes, bulk loads, erasure, episodes;
-- * shared (chronomem_begin_shared): the same lock taken shared, plus one
--   transaction-level advisory lock per (subject, predicate) group and per
--   name the transaction creates, taken by the client before it reads the
--   group; the transaction's system time is ticked after its group locks are
--   held, so within a group versions are stamped in commit order.
-- A read "as known at" T first calls chronomem_settle(T): it takes the
-- store-wide lock exclusively for an instant (so every write that began
-- before has committed) and moves the clock to T, so no later write is
-- stamped at or before T. The answer at T is final from then on.

CREATE SEQUENCE chronomem_clock AS BIGINT MINVALUE -9223372036854775808 NO CYCLE;
SELECT setval('chronomem_clock',
              COALESCE((SELECT value::bigint FROM meta WHERE key = 'last_system_time'), -9223372036854775807),
              true);
DELETE FROM meta WHERE key = 'last_system_time';

CREATE FUNCTION chronomem_tick(clock_us BIGINT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE v BIGINT;
BEGIN
    PERFORM pg_advisory_lock(1668442480, hashtext(current_schema()));
    SELECT greatest(last_value + 1, clock_us) INTO v FROM chronomem_clock;
    PERFORM setval('chronomem_clock', v);
    PERFORM pg_advisory_unlock(1668442480, hashtext(current_schema()));
    RETURN v;
END
$$;

-- note a system time written explicitly (an import): the clock never goes back
CREATE FUNCTION chronomem_note(at_us BIGINT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE v BIGINT;
BEGIN
    PERFORM pg_advisory_lock(1668442480, hashtext(current_schema()));
    SELECT greatest(last_value, at_us) INTO v FROM chronomem_clock;
    PERFORM setval('chronomem_clock', v);
    PERFORM pg_advisory_unlock(1668442480, hashtext(current_schema()));
    RETURN v;
END
$$;

CREATE OR REPLACE FUNCTION chronomem_begin_write(clock_us BIGINT, OUT now_us BIGINT, OUT names_version BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_lock(1668442479, hashtext(current_schema()));
    PERFORM set_config('synchronous_commit', 'off', true);
    now_us := chronomem_tick(clock_us);
    SELECT COALESCE((SELECT value::bigint FROM meta WHERE key = 'names_version'), 0) INTO names_version;
END
$$;

-- a shared write: its system time is provisional (not ticked) until the
-- client has locked its groups and calls chronomem_tick
CREATE FUNCTION chronomem_begin_shared(clock_us BIGINT, OUT now_us BIGINT, OUT names_version BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_lock_shared(1668442479, hashtext(current_schema()));
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT greatest(last_value + 1, clock_us) INTO now_us FROM chronomem_clock;
    SELECT COALESCE((SELECT value::bigint FROM meta WHERE key = 'names_version'), 0) INTO names_version;
END
$$;

CREATE FUNCTION chronomem_end_shared() RETURNS boolean
LANGUAGE sql AS $$ SELECT pg_advisory_unlock_shared(1668442479, hashtext(current_schema())) $$;

CREATE FUNCTION chronomem_settle(at_us BIGINT, clock_us BIGINT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE v BIGINT;
BEGIN
    PERFORM pg_advisory_lock(1668442479, hashtext(current_schema()));
    PERFORM pg_advisory_lock(1668442480, hashtext(current_schema()));
    SELECT last_value INTO v FROM chronomem_clock;
    IF at_us > v AND at_us <= clock_us THEN
        PERFORM setval('chronomem_clock', at_us);
        v := at_us;
    END IF;
    PERFORM pg_advisory_unlock(1668442480, hashtext(current_schema()));
    PERFORM pg_advisory_unlock(1668442479, hashtext(current_schema()));
    RETURN v;
END
$$;
