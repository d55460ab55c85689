-- 0003_admin.sql — what the operator queries (sql/fq_store_operator.c) need.
--
-- Nothing here touches fairq.messages: its indexes stay as 0001 made them,
-- so the ack UPDATE stays HOT.

-- Finished requests by age, for the pruner: it pages the oldest first and
-- never scans the unfinished ones. Acks change neither finished_at nor
-- status, so their counter updates of fairq.requests stay HOT too.
CREATE INDEX requests_finished_idx ON fairq.requests (finished_at)
    WHERE status IN ('done', 'cancelled', 'rejected');

-- Set when the pruner first deletes rows of a finished request. A request
-- being pruned has lost part of its messages, so nothing may reopen it
-- (retrying its dead messages would leave counters that match no rows).
ALTER TABLE fairq.requests ADD COLUMN pruning_since timestamptz;
