-- 0010_submit_buckets.sql — a tenant's submit rate, held in the database.
--
-- A tenant's submit_rate (submits per minute) is a token bucket: it holds
-- up to submit_rate tokens, a minute's worth, and gains submit_rate / 60 a
-- second, never more than submit_rate. A submit takes one; a submit the
-- database then refused gives it back.
--
-- Why here and not in fairqd's memory: any number of fairqd serve the HTTP
-- API against one database (docs/operations.md, "Several fairqd"). With a
-- bucket in each process a tenant would get its rate once per fairqd, N
-- times its rate behind N of them, and a new fairqd would start with a full
-- bucket. The one bucket every instance shares is a row here, and its clock
-- is the database's (clock_timestamp()), the one clock every instance
-- shares: a fairqd whose clock is off cannot hand out more.
--
-- A take is one statement that locks the tenant's row once (INSERT ... ON
-- CONFLICT DO UPDATE): two fairqd taking at once wait for each other for
-- the length of that statement only, and tenants never wait for each other.
-- The bucket is brought up to date as it is read, so nothing ever has to
-- refill it, and a row is written only when a token is taken.

CREATE TABLE fairq.submit_buckets (
    tenant_id    bigint PRIMARY KEY REFERENCES fairq.tenants (id) ON DELETE CASCADE,
    -- What the bucket held at refreshed_at; it may exceed a rate lowered
    -- since, which every read caps (a lowered rate takes effect at once)
    tokens       double precision NOT NULL CHECK (tokens >= 0),
    refreshed_at timestamptz NOT NULL
);

-- What a bucket that held p_tokens at p_refreshed_at holds at p_now, for
-- p_rate submits per minute: p_rate / 60 more a second, at most p_rate. A
-- time before p_refreshed_at (a clock stepped back) adds nothing.
CREATE FUNCTION fairq.submit_bucket_level(p_tokens double precision,
                                          p_refreshed_at timestamptz, p_rate integer,
                                          p_now timestamptz) RETURNS double precision
    LANGUAGE sql IMMUTABLE AS $$
    SELECT least(p_rate, p_tokens + p_rate / 60.0 * greatest(
               extract(epoch FROM p_now - p_refreshed_at)::double precision, 0))
$$;

-- Takes one token of p_tenant_id's bucket for p_rate submits per minute.
-- Answers 0 when it took one; otherwise the whole seconds until one is
-- back (1..60), and the bucket is left as it was. A tenant's first take
-- finds its bucket full.
CREATE FUNCTION fairq.take_submit_token(p_tenant_id bigint, p_rate integer) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    now_ts timestamptz := clock_timestamp();
    held   double precision; -- What the bucket holds now
BEGIN
    IF p_tenant_id IS NULL OR p_rate IS NULL OR p_rate <= 0 THEN
        RAISE EXCEPTION 'fairq.take_submit_token needs a tenant and a rate above 0'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A row the WHERE leaves alone is locked all the same: what is read
    -- below is what the refusal saw, and stays so until the transaction ends
    INSERT INTO fairq.submit_buckets AS b (tenant_id, tokens, refreshed_at)
        VALUES (p_tenant_id, p_rate - 1, now_ts)
        ON CONFLICT (tenant_id) DO UPDATE
        SET tokens = fairq.submit_bucket_level(b.tokens, b.refreshed_at, p_rate, now_ts) - 1,
            refreshed_at = greatest(b.refreshed_at, now_ts)
        WHERE fairq.submit_bucket_level(b.tokens, b.refreshed_at, p_rate, now_ts) >= 1;
    IF FOUND THEN
        RETURN 0;
    END IF;
    SELECT fairq.submit_bucket_level(b.tokens, b.refreshed_at, p_rate, now_ts) INTO held
        FROM fairq.submit_buckets b WHERE b.tenant_id = p_tenant_id;
    RETURN greatest(ceil((1 - held) * 60.0 / p_rate), 1)::integer;
END $$;

-- Gives back the token a take got, when what it paid for did not happen (a
-- submit the database refused). Never fills the bucket past p_rate.
CREATE FUNCTION fairq.give_back_submit_token(p_tenant_id bigint, p_rate integer) RETURNS void
    LANGUAGE sql AS $$
    UPDATE fairq.submit_buckets SET tokens = least(tokens + 1, greatest(p_rate, 0))
        WHERE tenant_id = p_tenant_id
$$;
