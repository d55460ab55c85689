-- 0017_tenant_send_budgets.sql — what a tenant may send: a rate and a
-- daily quota, enforced as messages are dispatched.
--
-- submit_rate (0001, 0010) limits how often a tenant may submit; these
-- limit how many of its messages go out. A tenant's send rate is a token
-- bucket of send_rate_count messages per send_rate_period_s seconds (a
-- second's worth of burst, as a destination without one); its daily quota
-- is how many of its messages may be handed to senders in one UTC day.
-- NULL is no limit. The scheduler holds a tenant whose budget is spent out
-- of every lane's turns (docs/fairness.md, "Tenant send budgets"): its
-- messages stay pending, take no sender credit, cost no attempt and hold
-- back nobody else.
--
-- The day's count must survive a restart and a failover, or a tenant that
-- used its quota would get it again from the next leader. A count written
-- per message would cost a write per message, so the leader reserves the
-- quota in blocks: it writes a block's worth (a fiftieth of the quota, at
-- most 1,000) to tenant_send_days.reserved before handing any of it out.
-- A leader that starts counts what earlier leaders reserved today as sent.
-- So the quota is never exceeded, whatever crashes; a crash costs the
-- tenant at most the unused rest of one block that day, and a leader that
-- stops cleanly gives that rest back. used is what the leader has counted
-- (dispatched, less what came back unsent), written with each block and
-- at each full poll: the figure the API shows.

ALTER TABLE fairq.tenants
    ADD COLUMN send_rate_count    integer CHECK (send_rate_count BETWEEN 1 AND 1000000000),
    ADD COLUMN send_rate_period_s integer CHECK (send_rate_period_s IN (1, 60, 3600, 86400)),
    ADD COLUMN daily_quota        bigint CHECK (daily_quota BETWEEN 1 AND 1000000000000),
    ADD CONSTRAINT tenants_send_rate_whole
        CHECK ((send_rate_count IS NULL) = (send_rate_period_s IS NULL));

CREATE TABLE fairq.tenant_send_days (
    tenant_id  bigint NOT NULL REFERENCES fairq.tenants (id) ON DELETE CASCADE,
    day        date NOT NULL, -- UTC
    reserved   bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    used       bigint NOT NULL DEFAULT 0 CHECK (used >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, day)
);

-- Reserves up to p_want more of p_tenant_id's quota p_quota for p_day,
-- recording p_used as its count. Answers what was reserved before and
-- after: after - before is what the caller may hand out. Reserving never
-- goes past the quota (a quota lowered below what is reserved reserves
-- nothing more); the row is locked for the statement only. A tenant's
-- days older than a week are deleted as its new day starts.
CREATE FUNCTION fairq.reserve_sends(p_tenant_id bigint, p_day date, p_want bigint,
                                    p_quota bigint, p_used bigint,
                                    OUT before bigint, OUT after bigint)
    LANGUAGE plpgsql AS $$
BEGIN
    IF p_tenant_id IS NULL OR p_day IS NULL OR p_want IS NULL OR p_want < 0
       OR p_quota IS NULL OR p_quota < 1 OR p_used IS NULL OR p_used < 0 THEN
        RAISE EXCEPTION 'fairq.reserve_sends needs a tenant, a day, a want >= 0, a quota >= 1 and a count >= 0'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO fairq.tenant_send_days AS d (tenant_id, day, reserved, used)
        VALUES (p_tenant_id, p_day, 0, 0)
        ON CONFLICT (tenant_id, day) DO NOTHING;
    IF FOUND THEN
        DELETE FROM fairq.tenant_send_days
            WHERE tenant_id = p_tenant_id AND day < p_day - 7;
    END IF;
    SELECT d.reserved INTO before FROM fairq.tenant_send_days d
        WHERE d.tenant_id = p_tenant_id AND d.day = p_day FOR UPDATE;
    after := greatest(before, least(before + p_want, p_quota));
    UPDATE fairq.tenant_send_days
        SET reserved = after, used = least(p_used, after), updated_at = now()
        WHERE tenant_id = p_tenant_id AND day = p_day;
END
$$;
