-- 0020_webhooks.sql — tenants' webhook endpoints, fed from the events.
--
-- A tenant registers endpoints (POST /v1/tenants/NAME/webhooks): a URL,
-- the event types it wants (NULL: all) and a signing secret. Each
-- endpoint reads its tenant's events (0018) in their reading order from
-- a cursor of its own, and gets them in batches, signed by Standard
-- Webhooks, delivered at least once and in order.
--
-- A batch rides on the http channel (0015): it is a request of the
-- tenant with one message, a POST of the batch to the endpoint's URL. So
-- it goes out through the senders like any http message, in its tenant's
-- turn of the http lane (a tenant with a slow endpoint gets its share of
-- the http senders, no more), with the destination's shaping, and it is
-- retried with the nack's back-off when the endpoint fails. Mail never
-- waits for it: mail is another lane with its own credit.
--
-- One batch per endpoint is in flight at a time, and the cursor moves
-- past a batch only once its message is sent: the next batch starts
-- where the last delivered one ended, so events arrive in order and none
-- is skipped. A crash between a delivery and its ack costs a second
-- delivery of the batch (the same webhook-id, so a receiver can tell).
--
-- A batch request reports nothing itself: the ack, the nack, the split
-- and the finish write no event for a request with a webhook_id, or
-- every delivered batch would make an event for the next batch to carry.
-- The tenant's request list leaves batches out; they are in their
-- tenant's figures (depth, rate) as the http messages they are.
--
-- A batch whose message dies (its attempts spent, or a permanent failure
-- such as 410 Gone) is sent again as a new batch after a back-off; an
-- endpoint failing for longer than fairqd's webhook_disable_after_s is
-- disabled (with why), and the tenant enables it again by PATCH. Its
-- cursor stays where it was: nothing is lost while it is disabled, as
-- long as events are kept (retention_s).

CREATE TABLE fairq.webhooks (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES fairq.tenants (id) ON DELETE CASCADE,
    -- The http channel's rule (fq_http_spec_problem) is checked by the API;
    -- these hold what SQL must not store in any case
    url         text NOT NULL CHECK (octet_length(url) <= 8192 AND url ~ '^https?://[^/?#]'),
    -- NULL: every type
    -- (64: FQ_WEBHOOK_EVENT_TYPES_MAX of sql/fq_store_webhooks.h)
    event_types fairq.event_type[] CHECK (cardinality(event_types) BETWEEN 1 AND 64),
    secret      text NOT NULL CHECK (fairq.signing_secret_problem(secret) IS NULL),
    -- After a rotation, the old secret signs too until previous_until, so
    -- that a receiver can change its secret in its own time
    previous_secret text CHECK (fairq.signing_secret_problem(previous_secret) IS NULL),
    previous_until  timestamptz,
    enabled     boolean NOT NULL DEFAULT true,
    disabled_reason text CHECK (octet_length(disabled_reason) <= 2200),
    -- Every event of the tenant up to (cursor_txid, cursor_id) in reading
    -- order was delivered (or is of a type the endpoint does not want)
    cursor_txid xid8 NOT NULL,
    cursor_id   bigint NOT NULL,
    -- The batch in flight: its request, where it ends, how many events
    batch_request_id bigint,
    batch_end_txid   xid8,
    batch_end_id     bigint,
    batch_events     integer,
    batch_at         timestamptz,
    -- Batches failed in a row, since when, and the endpoint's last answer
    failures        integer NOT NULL DEFAULT 0,
    failing_since   timestamptz,
    last_error      text CHECK (octet_length(last_error) <= 2000),
    last_error_at   timestamptz,
    last_success_at timestamptz,
    -- No new batch before this (the back-off after a failed one)
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered   bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_tenant_idx ON fairq.webhooks (tenant_id, id);

-- The endpoint a batch request delivers to; NULL for every other request.
-- Not a foreign key: a deleted endpoint's batches stay as history until
-- retention prunes them (its batch in flight is cancelled with it).
ALTER TABLE fairq.requests ADD COLUMN webhook_id bigint;

-- Where a new endpoint starts: after every event already committed, so it
-- gets what happens from now on, not the tenant's history. Every event of
-- a transaction older than every one still running is behind it; those
-- of transactions running now are ahead (at least once from the start).
CREATE FUNCTION fairq.webhook_start_txid() RETURNS xid8
    LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN pg_snapshot_xmin(pg_current_snapshot())::text::numeric > 0
                THEN (pg_snapshot_xmin(pg_current_snapshot())::text::numeric - 1)::text::xid8
                ELSE '0'::xid8 END
$$;

-- The event as GET /v1/events writes it (api/API.md, "Events"), so that a
-- receiver reads a webhook's events and a page of the API alike.
CREATE FUNCTION fairq.event_json(e fairq.events, tenant text) RETURNS json
    LANGUAGE sql STABLE AS $$
    SELECT json_build_object('id', e.id, 'tenant', tenant, 'request', e.request_id,
                             'message', e.message_id, 'type', e.type,
                             'recipient', e.recipient, 'detail', e.detail,
                             'at', to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
$$;

-- Takes back the batch in flight of endpoint p_webhook: its request is
-- cancelled (its message if not yet final, its recipients if not yet
-- split), without events, as a batch reports nothing, and the endpoint has
-- no batch, so the next pass sends the same events anew. For a rotation
-- or a new URL: the dispatcher keeps a request's secret and URL as it
-- first read them, so only a new batch is signed by the new secret and
-- goes to the new URL. A batch already at a sender may still arrive: at
-- least once. Locks the endpoint's row until the transaction ends.
CREATE FUNCTION fairq.webhook_batch_take_back(p_webhook bigint) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    v_request bigint;
BEGIN
    SELECT batch_request_id INTO v_request FROM fairq.webhooks WHERE id = p_webhook FOR UPDATE;
    IF v_request IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM fairq.recipient_chunks WHERE request_id = v_request;
    UPDATE fairq.messages SET status = 'cancelled', next_attempt_at = NULL, updated_at = now(),
           claimed_epoch = NULL
     WHERE request_id = v_request AND status IN ('pending', 'failed');
    UPDATE fairq.requests SET status = 'cancelled', cancelled = total - sent - dead - rejected,
           failed = 0, finished_at = now(), updated_at = now()
     WHERE id = v_request AND status IN ('accepted', 'splitting', 'active', 'paused');
    UPDATE fairq.webhooks SET batch_request_id = NULL, batch_end_txid = NULL,
           batch_end_id = NULL, batch_events = NULL, batch_at = NULL, updated_at = now()
     WHERE id = p_webhook;
END
$$;

-- One pass over the endpoints that have something to do: settle each
-- one's batch that ended (move the cursor past it when it was sent; count
-- a failure, back off, perhaps disable when it died), then submit its
-- next batch if events wait. Endpoints another caller holds are skipped
-- (SKIP LOCKED), so two callers never submit one batch twice.
--
-- p_batch events at most per batch, and at most about p_bytes of JSON
-- (the http channel takes bodies of up to 256 KiB); p_scan events read at
-- most per endpoint and pass (an endpoint that wants few types must not
-- read a campaign's million events in one go: the cursor moves over those
-- it read and did not want). A batch's message gets p_max_attempts
-- attempts with the nack's back-off; after it dies, the next try waits
-- p_base_ms doubled per failure up to p_cap_ms. Returns the batches
-- submitted.
CREATE FUNCTION fairq.webhooks_feed(p_batch integer, p_bytes integer, p_scan integer,
                                    p_max_attempts integer, p_base_ms integer, p_cap_ms integer,
                                    p_disable_after_s integer, p_epoch bigint)
    RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    w           record;
    v_xmin      xid8;
    v_status    fairq.request_status;
    v_sent      integer;
    v_error     text;
    v_since     timestamptz;
    v_wanted    integer;
    v_chosen    integer;
    v_events    json;
    v_end_txid  xid8;
    v_end_id    bigint;
    v_last_txid xid8;
    v_last_id   bigint;
    v_request   bigint;
    v_payload   text;
    v_submitted integer := 0;
BEGIN
    PERFORM fairq.fence(p_epoch);
    -- Events of transactions older than every one running: whatever
    -- commits later sorts after every cursor set here (0018)
    v_xmin := pg_snapshot_xmin(pg_current_snapshot());
    -- A batch under way that failed an attempt: its error shows on the
    -- endpoint (a write only when there is a new one)
    UPDATE fairq.webhooks h SET last_error = m.last_error, last_error_at = now(),
           failing_since = coalesce(h.failing_since, now()), updated_at = now()
      FROM fairq.messages m
     WHERE h.batch_request_id IS NOT NULL AND m.request_id = h.batch_request_id
       AND m.status IN ('pending', 'failed') AND m.last_error IS NOT NULL
       AND m.last_error IS DISTINCT FROM h.last_error;
    -- The endpoints with something to do, and only those, are locked: a
    -- pass that finds nothing writes nothing
    FOR w IN SELECT h.*, t.name AS tenant FROM fairq.webhooks h
               JOIN fairq.tenants t ON t.id = h.tenant_id
              WHERE h.enabled
                AND CASE WHEN h.batch_request_id IS NOT NULL
                         -- its batch ended (or is gone)
                         THEN NOT EXISTS (SELECT 1 FROM fairq.requests r
                                           WHERE r.id = h.batch_request_id
                                             AND r.status NOT IN ('done', 'cancelled', 'rejected'))
                         -- its back-off is over and events wait
                         ELSE h.next_attempt_at <= now()
                              AND EXISTS (SELECT 1 FROM fairq.events e
                                           WHERE e.tenant_id = h.tenant_id
                                             AND (e.txid, e.id) > (h.cursor_txid, h.cursor_id)
                                             AND e.txid < v_xmin) END
              ORDER BY h.id FOR UPDATE OF h SKIP LOCKED
    LOOP
        IF w.batch_request_id IS NOT NULL THEN
            SELECT r.status, r.sent, m.last_error INTO v_status, v_sent, v_error
              FROM fairq.requests r LEFT JOIN fairq.messages m ON m.request_id = r.id
             WHERE r.id = w.batch_request_id;
            IF FOUND AND v_status NOT IN ('done', 'cancelled', 'rejected') THEN
                CONTINUE; -- taken up again meanwhile
            END IF;
            IF FOUND AND v_sent > 0 THEN
                UPDATE fairq.webhooks SET cursor_txid = batch_end_txid, cursor_id = batch_end_id,
                       delivered = delivered + batch_events, batch_request_id = NULL,
                       batch_end_txid = NULL, batch_end_id = NULL, batch_events = NULL,
                       batch_at = NULL, failures = 0, failing_since = NULL,
                       last_success_at = now(), next_attempt_at = now(), updated_at = now()
                 WHERE id = w.id;
                w.cursor_txid := w.batch_end_txid;
                w.cursor_id := w.batch_end_id;
            ELSE
                -- Dead, cancelled or pruned: the same events go again
                v_error := coalesce(v_error, 'the batch ended without being delivered');
                v_since := coalesce(w.failing_since, w.batch_at, now());
                UPDATE fairq.webhooks SET batch_request_id = NULL, batch_end_txid = NULL,
                       batch_end_id = NULL, batch_events = NULL, batch_at = NULL,
                       failures = failures + 1, failing_since = v_since,
                       last_error = v_error, last_error_at = now(),
                       next_attempt_at = now() + make_interval(secs =>
                           least(p_cap_ms::float8, p_base_ms::float8 * power(2, least(failures, 30)))
                           / 1000),
                       enabled = now() - v_since < make_interval(secs => p_disable_after_s),
                       disabled_reason = CASE
                           WHEN now() - v_since < make_interval(secs => p_disable_after_s)
                           THEN NULL
                           ELSE format('failing since %s: %s',
                                       to_char(v_since AT TIME ZONE 'UTC',
                                               'YYYY-MM-DD"T"HH24:MI:SS"Z"'), v_error) END,
                       updated_at = now()
                 WHERE id = w.id;
                CONTINUE;
            END IF;
        END IF;

        -- The next batch: the events after the cursor, of the types wanted
        WITH scanned AS (
            SELECT x.ev, (x.ev).txid AS txid, (x.ev).id AS id, (x.ev).type AS type,
                   row_number() OVER (ORDER BY (x.ev).txid, (x.ev).id) AS n FROM (
                SELECT e AS ev FROM fairq.events e
                 WHERE e.tenant_id = w.tenant_id
                   AND (e.txid, e.id) > (w.cursor_txid, w.cursor_id) AND e.txid < v_xmin
                 ORDER BY e.txid, e.id LIMIT p_scan) x),
        -- Each event's JSON goes into the request's http_body, a template:
        -- "{{" would open a tag. JSON has it only inside a string, where
        -- "{\u007b" is the same text. Escaped here, so that the batch's
        -- size is measured as it will be (up to 3.5 times the bytes)
        wanted AS (
            SELECT s.txid, s.id,
                   replace(fairq.event_json(s.ev, w.tenant)::text, '{{', '{\u007b')::json AS body,
                   row_number() OVER (ORDER BY s.txid, s.id) AS k FROM scanned s
             WHERE w.event_types IS NULL OR s.type = ANY (w.event_types)),
        sized AS (
            SELECT *, sum(octet_length(body::text)) OVER (ORDER BY k) AS bytes FROM wanted),
        chosen AS (SELECT * FROM sized WHERE k <= p_batch AND (k = 1 OR bytes <= p_bytes))
        SELECT (SELECT count(*) FROM wanted), (SELECT count(*) FROM chosen),
               (SELECT json_agg(body ORDER BY k) FROM chosen),
               (SELECT txid FROM chosen ORDER BY k DESC LIMIT 1),
               (SELECT id FROM chosen ORDER BY k DESC LIMIT 1),
               (SELECT txid FROM scanned ORDER BY n DESC LIMIT 1),
               (SELECT id FROM scanned ORDER BY n DESC LIMIT 1)
          INTO v_wanted, v_chosen, v_events, v_end_txid, v_end_id, v_last_txid, v_last_id;
        IF v_last_id IS NULL THEN
            CONTINUE; -- nothing new
        END IF;
        -- Every wanted event read is in the batch: it ends where the read
        -- did, past the unwanted ones after its last
        IF v_chosen = v_wanted THEN
            v_end_txid := v_last_txid;
            v_end_id := v_last_id;
        END IF;
        IF v_chosen = 0 THEN
            UPDATE fairq.webhooks SET cursor_txid = v_end_txid, cursor_id = v_end_id,
                   updated_at = now() WHERE id = w.id;
            CONTINUE;
        END IF;
        -- The envelope has no "{{" of its own, and the events are escaped
        v_payload := json_build_object(
            'type', 'fairq.events',
            'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
            'data', json_build_object('webhook', w.id, 'events', v_events))::text;
        -- One endpoint whose batch cannot be made (a URL the http rule
        -- refuses since it was stored, say) must not stop the others' pass:
        -- its error shows on it, and it backs off as after a failed batch
        BEGIN
        SELECT s.request_id INTO v_request FROM fairq.submit_keyed(
            tenant => w.tenant, from_addr => NULL, subject => '', body => '',
            recipients => json_build_array(json_build_object('to', 'webhook ' || w.id)),
            body_is_html => false, send_at => NULL, priority => 0,
            max_attempts => p_max_attempts, idempotency_key => NULL, fingerprint => NULL,
            headers => NULL, reply_to => NULL, text_body => NULL, channel => 'http',
            http_method => 'POST', http_url => w.url, http_headers => NULL,
            http_body => v_payload, http_body_format => 'json') AS s;
        UPDATE fairq.requests SET webhook_id = w.id WHERE id = v_request;
        UPDATE fairq.webhooks SET batch_request_id = v_request, batch_end_txid = v_end_txid,
               batch_end_id = v_end_id, batch_events = v_chosen, batch_at = now(),
               updated_at = now()
         WHERE id = w.id;
        v_submitted := v_submitted + 1;
        EXCEPTION WHEN OTHERS THEN
            UPDATE fairq.webhooks SET failures = failures + 1,
                   failing_since = coalesce(failing_since, now()),
                   last_error = left('could not make a batch: ' || SQLERRM, 2000),
                   last_error_at = now(),
                   next_attempt_at = now() + make_interval(secs =>
                       least(p_cap_ms::float8, p_base_ms::float8 * power(2, least(failures, 30)))
                       / 1000),
                   updated_at = now()
             WHERE id = w.id;
        END;
    END LOOP;
    RETURN v_submitted;
END
$$;
