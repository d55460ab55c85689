-- 0011_claims_end_with_leadership.sql — a leader's claims of due retries
-- end with its leadership.
--
-- The scheduler claims the failed messages whose retry is due before it
-- sends them: the claim moves next_attempt_at 300 s ahead (a lease), so
-- that a claimed retry waiting in memory for its tenant's turn is not
-- claimed again. When the leader died holding claims, the next leader
-- found those retries not due for up to 300 s: a failover delayed them by
-- five minutes. A claim now records the epoch of the leader that made it,
-- and a new leader's scheduler releases, once when it starts, every claim
-- of an earlier epoch (fq_store_release_stale_claims): they are due again
-- at once. Acks and nacks clear the mark, so the index below holds only
-- the claims outstanding.
--
-- Adding a nullable column without a default rewrites nothing. Building the
-- partial index reads the whole messages table once, holding off writes to
-- it meanwhile: on a table of tens of millions of rows, upgrade in a quiet
-- moment.
ALTER TABLE fairq.messages ADD COLUMN claimed_epoch bigint;

CREATE INDEX messages_claimed_idx ON fairq.messages (claimed_epoch)
    WHERE claimed_epoch IS NOT NULL;
