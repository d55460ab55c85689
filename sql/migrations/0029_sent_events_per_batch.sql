-- 0029_sent_events_per_batch.sql — one stored row for the message.sent
-- events of a request in one ack batch.
--
-- A campaign's deliveries were a row each in fairq.events, with its two
-- index entries: in the pipeline benchmark that doubled what the ack
-- batch cost PostgreSQL (0.44 backends busy with it against 0.23 without
-- the events), the largest cost beyond the raw floor's COPY and UPDATE.
-- Readers see the same events as before; only the storage changes:
--
-- * fairq.event_rows is the table (0018's fairq.events, renamed, its
--   indexes and their names kept). A row is one event, as before, or,
--   for message.sent, the events of up to 1024 messages of one request
--   acked together: their ids and recipients in message_ids and
--   recipients, message_id and recipient NULL.
-- * Each row owns a block of 1024 event ids: the identity counts in steps
--   of 1024, and the k-th message of a row (from 0) is event id + k. So
--   every event keeps an id of its own, ids still grow in reading order
--   (txid, id) within a transaction, and a cursor (txid, id) is what it
--   was: GET /v1/events' cursors and the webhooks' stay valid across
--   the upgrade.
-- * fairq.events is a view that expands the rows into events, with the
--   columns of 0018's table, plus row_id, the stored row's id. A reader
--   after a cursor (T, I) bounds its scan by (txid, row_id) > (T, I - 1024)
--   as well: the one condition the index can use, since the row holding
--   event I starts at most 1023 ids before it (sql/fq_store_events.c).
-- * The view takes INSERTs of single events as the table did (a trigger),
--   so the writers of 0021 and 0028 need no change; fairqd's own writers
--   write fairq.event_rows.

ALTER TABLE fairq.events RENAME TO event_rows;
ALTER TABLE fairq.event_rows
    ADD COLUMN message_ids bigint[],
    ADD COLUMN recipients text[],
    -- NOT VALID: the rows already there have neither (the new columns
    -- are NULL), and checking them would read the whole table under the
    -- rename's lock
    ADD CONSTRAINT event_rows_messages_check CHECK (
        (message_ids IS NULL) = (recipients IS NULL)
        AND (message_ids IS NULL
             OR (message_id IS NULL AND recipient IS NULL
                 AND cardinality(message_ids) BETWEEN 1 AND 1024
                 AND cardinality(recipients) = cardinality(message_ids)))) NOT VALID;
ALTER TABLE fairq.event_rows ALTER COLUMN id SET INCREMENT BY 1024;

CREATE VIEW fairq.events AS
    SELECT e.id + coalesce(m.k - 1, 0) AS id, e.txid, e.tenant_id, e.request_id,
           coalesce(m.message_id, e.message_id) AS message_id, e.type,
           coalesce(m.recipient, e.recipient) AS recipient, e.detail, e.at, e.id AS row_id
      FROM fairq.event_rows e
      LEFT JOIN LATERAL unnest(e.message_ids, e.recipients) WITH ORDINALITY
                AS m(message_id, recipient, k) ON true;

CREATE FUNCTION fairq.events_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO fairq.event_rows (tenant_id, request_id, message_id, type, recipient, detail, at)
    VALUES (NEW.tenant_id, NEW.request_id, NEW.message_id, NEW.type, NEW.recipient, NEW.detail,
            coalesce(NEW.at, now()))
    RETURNING id, txid, at INTO NEW.id, NEW.txid, NEW.at;
    NEW.row_id := NEW.id;
    RETURN NEW;
END
$$;
CREATE TRIGGER events_insert INSTEAD OF INSERT ON fairq.events
    FOR EACH ROW EXECUTE FUNCTION fairq.events_insert();

-- 0020's event_json took the table's row, which is now event_rows': the
-- webhooks read the view's events
DROP FUNCTION fairq.event_json(fairq.event_rows, text);
CREATE FUNCTION fairq.event_json(e fairq.events, tenant text) RETURNS json
    LANGUAGE sql STABLE AS $$
    SELECT json_build_object('id', e.id, 'tenant', tenant, 'request', e.request_id,
                             'message', e.message_id, 'type', e.type,
                             'recipient', e.recipient, 'detail', e.detail,
                             'at', to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
$$;

-- 0026's feeder, reading the view: its two reads after an endpoint's
-- cursor bound the stored rows too (the header), or they would walk
-- every event of the tenant from its first. The rest is 0026's.
CREATE OR REPLACE FUNCTION fairq.webhooks_feed(p_batch integer, p_bytes integer, p_scan integer,
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
    UPDATE fairq.webhooks h SET last_error = f.last_error, last_error_at = now(),
           failing_since = coalesce(h.failing_since, now()), updated_at = now()
      FROM (SELECT b.id, m.last_error FROM fairq.webhooks b
             CROSS JOIN LATERAL (SELECT m.last_error FROM fairq.messages m
                                  WHERE m.request_id = b.batch_request_id
                                    AND m.status IN ('pending', 'failed')
                                    AND m.last_error IS NOT NULL
                                  LIMIT 1) m
             WHERE b.batch_request_id IS NOT NULL) f
     WHERE h.id = f.id AND f.last_error IS DISTINCT FROM h.last_error;
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
                                             AND (e.txid, e.row_id)
                                                 > (h.cursor_txid, h.cursor_id - 1024)
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
                   AND (e.txid, e.row_id) > (w.cursor_txid, w.cursor_id - 1024)
                   AND (e.txid, e.id) > (w.cursor_txid, w.cursor_id) AND e.txid < v_xmin
                 ORDER BY e.txid, e.row_id, e.id LIMIT p_scan) x),
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
