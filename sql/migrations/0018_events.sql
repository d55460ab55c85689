-- 0018_events.sql — what happened, as events: an outbox.
--
-- Every outcome of a message (sent, deferred for a retry, dead, cancelled,
-- rejected at split) and of a request (split, done, cancelled) is a row
-- here, written by the statement that makes the change it reports, so an
-- event is never lost (the change and its event commit together) and
-- never invented (a change rolled back takes its event with it). Tenants
-- read their own through GET /v1/events; webhooks will be fed from here.
--
-- Reading in order without missing any: ids are handed out as rows are
-- inserted, but transactions commit in another order, so a reader paging
-- by id alone could pass an id whose transaction commits later. Each row
-- therefore carries its transaction's id (txid), and a reader pages by
-- (txid, id) and takes only rows of transactions older than every one
-- still running (txid < pg_snapshot_xmin of its snapshot): whatever
-- commits later has a txid at or above that, so it sorts after the
-- reader's cursor and is read by its next page. The price: a transaction
-- that runs long holds back everything newer until it ends.
--
-- Volume: one row per message outcome. Rows older than retention_s are
-- pruned oldest first, so the table holds the same window of history as
-- fairq.messages.

CREATE TYPE fairq.event_type AS ENUM (
    'message.sent',       -- the receiver accepted it
    'message.deferred',   -- a temporary failure or a deferral: it will be tried again
    'message.dead',       -- a permanent failure, or its last attempt failed
    'message.cancelled',  -- cancelled before it was sent
    'message.rejected',   -- a recipient refused at split: no message was made
    'message.suppressed', -- a recipient on a suppression list: no message was made
    'message.unsubscribed', -- its recipient unsubscribed (one-click)
    'message.bounced',    -- a bounce (a DSN) came back for it after it was sent
    'message.complained', -- its recipient reported it as spam (an ARF report)
    'request.split',      -- every recipient of the request is a message (or rejected)
    'request.done',       -- every message of the request is final
    'request.cancelled'   -- the request was cancelled
);

CREATE TABLE fairq.events (
    -- Unique by its identity; no primary key: every index costs each of
    -- the million rows a campaign writes, and nothing looks an event up
    -- by its id alone
    id         bigint GENERATED ALWAYS AS IDENTITY,
    txid       xid8 NOT NULL DEFAULT pg_current_xact_id(),
    tenant_id  bigint NOT NULL,
    request_id bigint,
    message_id bigint,
    type       fairq.event_type NOT NULL,
    recipient  text,
    -- The receiver's reply of a deferred or dead message, or why a
    -- recipient was rejected; NULL otherwise
    detail     text CHECK (octet_length(detail) <= 2000),
    at         timestamptz NOT NULL DEFAULT now()
);
-- A tenant's events in reading order
CREATE INDEX events_tenant_idx ON fairq.events (tenant_id, txid, id);
-- Every tenant's, for an operator; and the oldest first, for pruning
CREATE INDEX events_order_idx ON fairq.events (txid, id);
