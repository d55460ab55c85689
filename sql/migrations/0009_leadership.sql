-- 0009_leadership.sql — one leader among several fairqd: a lease and an epoch.
--
-- Any number of fairqd may run against one database; exactly one of them,
-- the leader, splits, schedules and dispatches (docs/operations.md, "Several
-- fairqd"). Leadership is a lease on the one row of fairq.leader, renewed
-- by the leader at half its length, and taken over by a standby
-- once it has run out. A session advisory lock alone would not do: a
-- leader frozen by SIGSTOP, or cut off behind a network partition, keeps
-- its session (and so its lock) while it no longer works, and a lock says
-- nothing to a write that arrives late.
--
-- The epoch is the fencing token: it grows by one with every takeover, the
-- pipeline of a leader carries the epoch it was started with, and every
-- write only the leader may make first calls fairq.fence(epoch), which
-- refuses a stale one. Times are the database's (clock_timestamp()), the
-- one clock every instance shares.

CREATE TABLE fairq.leader (
    only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    -- UNIQUE on purpose, and it is what makes fencing cheap: PostgreSQL
    -- locks a row FOR UPDATE only for an UPDATE that changes a column of
    -- a unique index, and FOR NO KEY UPDATE otherwise. A takeover changes
    -- the epoch and so waits for every fence (FOR KEY SHARE) in progress
    -- to commit; a renewal changes only lease_until and never waits for
    -- one, nor makes one wait.
    epoch       bigint NOT NULL UNIQUE CHECK (epoch >= 0),
    holder      text NOT NULL CHECK (octet_length(holder) <= 200),
    since       timestamptz NOT NULL,
    lease_until timestamptz NOT NULL
);
INSERT INTO fairq.leader (epoch, holder, since, lease_until)
    VALUES (0, '', now(), '-infinity');

-- Renews the lease of p_holder, leader at p_epoch; or, with p_epoch 0 (a
-- standby), takes it over when it has run out. A leader whose renewal
-- fails has been deposed and never takes over again in the same life: its
-- pipeline carries the old epoch, so it must start again as a standby.
-- Answers who leads now, since when and at which epoch, whether that is
-- p_holder, and the milliseconds left of the lease (when a standby should
-- look again).
CREATE FUNCTION fairq.lead(p_holder text, p_epoch bigint, p_lease_ms integer)
    RETURNS TABLE (holds_lease boolean, epoch bigint, holder text, since timestamptz,
                   lease_until timestamptz, ms_left integer)
    LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    lease   interval;
    current fairq.leader;
    held    boolean; -- Renewed, or taken over, by this call
BEGIN
    IF p_holder IS NULL OR p_holder = '' OR p_epoch IS NULL OR p_epoch < 0
       OR p_lease_ms IS NULL OR p_lease_ms < 100 THEN
        RAISE EXCEPTION 'fairq.lead needs a holder, an epoch >= 0 and a lease of at least 100 ms'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    lease := make_interval(secs => p_lease_ms / 1000.0);
    IF p_epoch > 0 THEN
        UPDATE fairq.leader SET lease_until = clock_timestamp() + lease
            WHERE epoch = p_epoch AND holder = p_holder
            RETURNING * INTO current;
        held := FOUND;
    ELSE
        UPDATE fairq.leader SET epoch = epoch + 1, holder = p_holder,
                since = clock_timestamp(), lease_until = clock_timestamp() + lease
            WHERE lease_until < clock_timestamp()
            RETURNING * INTO current;
        held := FOUND;
    END IF;
    IF NOT held THEN
        SELECT * INTO current FROM fairq.leader;
    END IF;
    RETURN QUERY SELECT held, current.epoch, current.holder, current.since, current.lease_until,
                        CASE WHEN current.lease_until <= clock_timestamp() THEN 0
                             ELSE ceil(extract(epoch FROM current.lease_until
                                               - clock_timestamp()) * 1000)::integer END;
END $$;

-- A leader stopping cleanly gives its lease up, so that a standby takes
-- over at its next look instead of when the lease would have run out.
CREATE FUNCTION fairq.resign(p_holder text, p_epoch bigint) RETURNS boolean
    LANGUAGE sql AS $$
    UPDATE fairq.leader SET lease_until = clock_timestamp()
        WHERE epoch = p_epoch AND holder = p_holder AND lease_until > clock_timestamp()
        RETURNING true
$$;

-- The fence of a leader's transaction: true when p_epoch is still the current
-- epoch, an error (SQLSTATE FQ001) when another fairqd has taken over
-- since. It keeps the leader's row locked FOR KEY SHARE until the calling
-- transaction ends, so a takeover waits for the write to commit and the
-- new leader reads it; a write that comes after the takeover is refused.
-- NULL is no leader's write (tools and tests that run no pipeline): let
-- through. Statements call it once, as (SELECT fairq.fence($n)). For the
-- transactions that change what the next leader reads: splits, claims of
-- due retries, the reaper's finishing, cursor moves and pruning.
CREATE FUNCTION fairq.fence(p_epoch bigint) RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    IF p_epoch IS NULL THEN
        RETURN true;
    END IF;
    PERFORM 1 FROM fairq.leader WHERE epoch = p_epoch FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'leadership epoch % is over', p_epoch
            USING ERRCODE = 'FQ001';
    END IF;
    RETURN true;
END $$;

-- The same check without the lock, for the two statements that run
-- hundreds of times a second: the dispatcher's load of the messages it
-- hands out and the store's batches of acks and nacks. A row lock would
-- give each load a transaction id, a WAL record and a commit, and make
-- every statement of the leader write the same tuple header (single runs
-- of the pipeline benchmark within one hour: 23,700 msgs/s with the lock;
-- 30,600 and 33,900 with this check, as with no check at all, 41,000 and
-- 32,700). Without it,
-- a stale epoch is refused from the first statement that starts after the
-- takeover committed; one already running may still finish. That is
-- enough for these two: a leader stops dispatching on its own before its
-- lease runs out (fq_lease.h), so it loads nothing then anyway, and an ack
-- or a nack reports what a sender did, which is true whoever writes it (a
-- late one costs at most a second delivery of that message).
CREATE FUNCTION fairq.check_epoch(p_epoch bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_epoch IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM fairq.leader WHERE epoch = p_epoch) THEN
        RAISE EXCEPTION 'leadership epoch % is over', p_epoch
            USING ERRCODE = 'FQ001';
    END IF;
    RETURN true;
END $$;
