-- 0021_unsubscribe.sql — one-click unsubscribe (RFC 8058).
--
-- A mail request with unsubscribe on gets, in each message, a
-- List-Unsubscribe header naming an HTTPS URL fairqd serves (and a mailto
-- when the operator gives one), List-Unsubscribe-Post: List-Unsubscribe=
-- One-Click, and the URL as the template field unsubscribe_url. The URL
-- holds a token sealed by fairqd (unsubscribe/fq_unsubscribe_token.h):
-- the tenant, the request and the recipient, encrypted and authenticated,
-- so the database holds nothing of it. A POST to the URL runs
-- fairq.unsubscribe below (docs/feedback.md, "One-click unsubscribe").
--
-- Whether a request has it: its own unsubscribe when the submit said
-- (true or false), else its tenant's default as it is when the message is
-- dispatched (NULL here). Requests stored before this migration hold
-- NULL, and tenants start with false: nothing changes for them until a
-- tenant or a request asks. Adding a nullable column, and a NOT NULL one
-- with a constant default, rewrites no table (PostgreSQL 11 and later).
ALTER TABLE fairq.tenants ADD COLUMN unsubscribe boolean NOT NULL DEFAULT false;
ALTER TABLE fairq.requests ADD COLUMN unsubscribe boolean;

-- fairq.submit_keyed of 0015 with the request's unsubscribe (NULL: the
-- tenant's default). A function of its own that calls 0015's rather than
-- a copy of it: 0015's stays the one that checks and stores a request,
-- and callers of its 21 arguments (fairq.submit_json, applications) are
-- untouched. What it adds:
-- * unsubscribe is mail's: another channel with unsubscribe true is
--   refused;
-- * when fairq writes List-Unsubscribe for the request (its own
--   unsubscribe, else its tenant's default now), the request may not give
--   List-Unsubscribe or List-Unsubscribe-Post among its headers: two of
--   them would leave the receiver to pick one. The names are spelt here
--   and in the dispatcher's load (sql/fq_store_requests.c), as 0013 spells
--   Reply-To: SQL cannot read mailheaders/fq_mail_headers.h, whose
--   FQ_MAIL_HEADER_LIST_UNSUBSCRIBE and _POST they must agree with.
--   (A tenant who turns its default on later does not make its stored
--   requests wrong: the dispatcher leaves their own two out when it writes
--   fairq's.) Without fairq's unsubscribe a request still gives its own
--   List-Unsubscribe, as it could before;
-- * unsubscribe is stored with the request, and is part of the
--   fingerprint the store computes (fq_store_requests.c), so a repeated
--   Idempotency-Key with another unsubscribe is refused as another
--   request.
CREATE FUNCTION fairq.submit_keyed(
    tenant           text,
    from_addr        text,
    subject          text,
    body             text,
    recipients       json,
    body_is_html     boolean,
    send_at          timestamptz,
    priority         integer,
    max_attempts     integer,
    idempotency_key  text,
    fingerprint      bytea,
    headers          jsonb,
    reply_to         text,
    text_body        text,
    channel          text,
    http_method      text,
    http_url         text,
    http_headers     jsonb,
    http_body        text,
    http_body_format text,
    signing_secret   text,
    unsubscribe      boolean,
    OUT request_id   bigint,
    OUT replayed     boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    v_default boolean;
    v_name    text;
BEGIN
    IF unsubscribe AND coalesce(channel, 'email') <> 'email' THEN
        RAISE EXCEPTION 'unsubscribe is for mail only, not channel "%"', channel
            USING ERRCODE = '22023';
    END IF;
    SELECT t.unsubscribe INTO v_default FROM fairq.tenants t WHERE t.name = tenant;
    IF coalesce(unsubscribe, v_default, false) AND coalesce(channel, 'email') = 'email'
       AND headers IS NOT NULL AND jsonb_typeof(headers) = 'object' THEN
        SELECT h.key INTO v_name FROM jsonb_object_keys(headers) AS h(key)
         WHERE lower(h.key) IN ('list-unsubscribe', 'list-unsubscribe-post') LIMIT 1;
        IF v_name IS NOT NULL THEN
            RAISE EXCEPTION 'header "%": fairq writes it for a request with unsubscribe on',
                v_name USING ERRCODE = '22023';
        END IF;
    END IF;
    SELECT k.request_id, k.replayed INTO request_id, replayed
      FROM fairq.submit_keyed(tenant, from_addr, subject, body, recipients, body_is_html,
                              send_at, priority, max_attempts, idempotency_key, fingerprint,
                              headers, reply_to, text_body, channel, http_method, http_url,
                              http_headers, http_body, http_body_format, signing_secret) AS k;
    -- A replay stored nothing: the first request keeps what it had. One
    -- more version of the row just inserted, once per request
    IF NOT replayed AND unsubscribe IS NOT NULL THEN
        UPDATE fairq.requests r SET unsubscribe = submit_keyed.unsubscribe
         WHERE r.id = request_id;
    END IF;
END
$$;

-- What a POST to an unsubscribe URL does, in one transaction: the
-- recipient (any case) goes on the tenant's suppression list with reason
-- 'unsubscribe' (kept as it was when it is there already), the tenant's
-- messages to it that are not sent yet (pending or failed: a retry is
-- coming) are cancelled exactly as fq_store_cancel_messages cancels them
-- (their counters, a message.cancelled event each), and a
-- message.unsubscribed event names the request and its message to the
-- recipient (NULL once pruned). Every request of the tenant: whoever asks
-- to get no more of a sender's mail asks for none of it, not only of one
-- campaign; other tenants' mail to the same address is theirs.
--
-- Idempotent: a second call finds the address suppressed and nothing left
-- to cancel, writes nothing and answers the same known. The event is
-- written only when the call changed something, so a link followed twice
-- (a user's double click, a mail client's retry) reports one unsubscribe.
--
-- known is false when the tenant is gone (nothing is written: the link
-- outlived its sender). Locks: the tenant's row, shared (it cannot be
-- deleted meanwhile), then the messages, then their requests: the order
-- of every cancel (sql/fq_store_operator.c).
CREATE FUNCTION fairq.unsubscribe(
    p_tenant      bigint,
    p_request     bigint,
    p_recipient   text,
    OUT known      boolean,
    OUT suppressed boolean,
    OUT cancelled  integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_address text := lower(p_recipient);
    v_message bigint;
BEGIN
    known := false;
    suppressed := false;
    cancelled := 0;
    PERFORM 1 FROM fairq.tenants t WHERE t.id = p_tenant FOR KEY SHARE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    known := true;
    INSERT INTO fairq.suppressions (tenant_id, address, reason, detail)
    VALUES (p_tenant, v_address, 'unsubscribe', 'one-click unsubscribe, request ' || p_request)
    ON CONFLICT DO NOTHING;
    suppressed := FOUND;
    -- next_attempt_at goes too: a cancelled message must leave the retry
    -- index. messages_recipient_idx (0001) finds the recipient's rows
    WITH target AS MATERIALIZED (
        SELECT m.id, m.status FROM fairq.messages m
         WHERE lower(m.recipient) = v_address AND m.tenant_id = p_tenant
           AND m.status IN ('pending', 'failed') FOR UPDATE),
    changed AS (
        UPDATE fairq.messages m SET status = 'cancelled', next_attempt_at = NULL,
               updated_at = now()
          FROM target t WHERE m.id = t.id
        RETURNING m.id, m.request_id, m.tenant_id, m.recipient, t.status = 'failed' AS was_failed),
    evented AS (
        INSERT INTO fairq.events (tenant_id, request_id, message_id, type, recipient)
        SELECT c.tenant_id, c.request_id, c.id, 'message.cancelled', c.recipient FROM changed c),
    counted AS (
        UPDATE fairq.requests r SET cancelled = r.cancelled + c.n, failed = r.failed - c.failed,
               updated_at = now()
          FROM (SELECT request_id, count(*) AS n, count(*) FILTER (WHERE was_failed) AS failed
                  FROM changed GROUP BY request_id) c
         WHERE r.id = c.request_id RETURNING c.n)
    SELECT coalesce(sum(n), 0) INTO cancelled FROM counted;
    IF suppressed OR cancelled > 0 THEN
        SELECT m.id INTO v_message FROM fairq.messages m
         WHERE lower(m.recipient) = v_address AND m.request_id = p_request
         ORDER BY m.id LIMIT 1;
        INSERT INTO fairq.events (tenant_id, request_id, message_id, type, recipient)
        VALUES (p_tenant, p_request, v_message, 'message.unsubscribed', p_recipient);
    END IF;
END
$$;
