-- 0014_request_text_body.sql — a plain-text alternative beside an HTML body.
--
-- A request whose body is HTML may give a second body template, text_body,
-- the same message in plain text (api/API.md, the submit's "text_body").
-- The dispatcher renders it per recipient like the body, without HTML
-- escaping, and carries it in MSG as its last field (docs/protocol.md);
-- fairq-sender then writes the mail as multipart/alternative, the text
-- part first. It is a template of the body's grammar, so the recipients
-- must have its fields too (fairq.template_fields checks it here, the API
-- and the splitter in C, fq_template.h).
--
-- Requests stored before this migration hold NULL and are sent as before.
-- A nullable column without a default rewrites nothing; the check is
-- added NOT VALID, as the rows already stored hold NULL.
ALTER TABLE fairq.requests ADD COLUMN text_body text;
-- At most as long as a body may be (0001's requests_body_check).
ALTER TABLE fairq.requests ADD CONSTRAINT requests_text_body_check
    CHECK (text_body IS NULL OR (octet_length(text_body) <= 1048576 AND body_is_html))
    NOT VALID;

-- fairq.submit_keyed of 0013 with the request's text_body (a template, or
-- NULL for none; only with body_is_html). It is part of what the caller's
-- fingerprint covers (fairqd's store adds it to it when given).
CREATE FUNCTION fairq.submit_keyed(
    tenant          text,
    from_addr       text,
    subject         text,
    body            text,
    recipients      json,
    body_is_html    boolean,
    send_at         timestamptz,
    priority        integer,
    max_attempts    integer,
    idempotency_key text,
    fingerprint     bytea,
    headers         jsonb,
    reply_to        text,
    text_body       text,
    OUT request_id  bigint,
    OUT replayed    boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_tenant  bigint;
    v_total   integer;
    v_problem text;
    v_stored  bytea;
    v_name    text;
    v_count   bigint;
    v_bytes   bigint;
    -- The most headers a request may give, and the most bytes of their
    -- names and values together: FQ_MAIL_HEADERS_MAX and
    -- FQ_MAIL_HEADERS_BYTES_MAX of mailheaders/fq_mail_headers.h, which
    -- holds the C constants the API and fairq-sender check by; both must
    -- agree
    c_headers_max       CONSTANT integer := 32;
    c_headers_bytes_max CONSTANT integer := 8 * 1024;
BEGIN
    SELECT t.id INTO v_tenant FROM fairq.tenants t WHERE t.name = submit_keyed.tenant;
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'unknown tenant "%"', submit_keyed.tenant USING ERRCODE = '22023';
    END IF;
    v_problem := fairq.address_problem(submit_keyed.from_addr);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'invalid from address: %', v_problem USING ERRCODE = '22023';
    END IF;
    IF submit_keyed.reply_to IS NOT NULL THEN
        v_problem := fairq.address_problem(submit_keyed.reply_to);
        IF v_problem IS NOT NULL THEN
            RAISE EXCEPTION 'invalid reply_to address: %', v_problem USING ERRCODE = '22023';
        END IF;
    END IF;
    IF submit_keyed.headers IS NOT NULL THEN
        IF jsonb_typeof(submit_keyed.headers) IS DISTINCT FROM 'object' THEN
            RAISE EXCEPTION 'headers must be a JSON object' USING ERRCODE = '22023';
        END IF;
        SELECT h.key INTO v_name FROM jsonb_each(submit_keyed.headers) AS h
         WHERE jsonb_typeof(h.value) <> 'string' LIMIT 1;
        IF v_name IS NOT NULL THEN
            RAISE EXCEPTION 'header "%" must be a string', v_name USING ERRCODE = '22023';
        END IF;
        -- 'reply-to' is FQ_MAIL_HEADER_REPLY_TO of mailheaders/fq_mail_headers.h,
        -- in lower case: SQL cannot read the C header, so it is spelled here
        SELECT h.key INTO v_name FROM jsonb_object_keys(submit_keyed.headers) AS h(key)
         WHERE lower(h.key) = 'reply-to' LIMIT 1;
        IF v_name IS NOT NULL THEN
            RAISE EXCEPTION 'header "%": give the address as reply_to, not among headers',
                v_name USING ERRCODE = '22023';
        END IF;
        SELECT max(h.key) INTO v_name FROM jsonb_object_keys(submit_keyed.headers) AS h(key)
         GROUP BY lower(h.key) HAVING count(*) > 1 LIMIT 1;
        IF v_name IS NOT NULL THEN
            RAISE EXCEPTION 'header "%" is given twice (names are case-insensitive)', v_name
                USING ERRCODE = '22023';
        END IF;
        SELECT count(*), coalesce(sum(octet_length(h.key) + octet_length(h.value)), 0)
          INTO v_count, v_bytes FROM jsonb_each_text(submit_keyed.headers) AS h;
        IF v_count > c_headers_max THEN
            RAISE EXCEPTION 'headers: more than % headers', c_headers_max
                USING ERRCODE = '22023';
        END IF;
        IF v_bytes > c_headers_bytes_max THEN
            RAISE EXCEPTION 'headers: more than % bytes of names and values',
                c_headers_bytes_max USING ERRCODE = '22023';
        END IF;
    END IF;
    IF json_typeof(submit_keyed.recipients) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'recipients must be a JSON array' USING ERRCODE = '22023';
    END IF;
    IF submit_keyed.text_body IS NOT NULL AND submit_keyed.body_is_html IS NOT TRUE THEN
        RAISE EXCEPTION 'text_body is only for an HTML body (html true)' USING ERRCODE = '22023';
    END IF;
    PERFORM fairq.template_fields(submit_keyed.subject), fairq.template_fields(submit_keyed.body),
            fairq.template_fields(submit_keyed.text_body);
    v_total := json_array_length(submit_keyed.recipients);
    replayed := false;

    INSERT INTO fairq.requests AS r (tenant_id, idempotency_key, from_addr, subject, body,
                                     body_is_html, send_at, priority, max_attempts, total,
                                     fingerprint, headers, reply_to, text_body)
    VALUES (v_tenant, submit_keyed.idempotency_key, submit_keyed.from_addr, submit_keyed.subject,
            submit_keyed.body, submit_keyed.body_is_html, coalesce(submit_keyed.send_at, now()),
            submit_keyed.priority, submit_keyed.max_attempts, v_total, submit_keyed.fingerprint,
            submit_keyed.headers, submit_keyed.reply_to, submit_keyed.text_body)
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING r.id INTO request_id;
    IF request_id IS NULL THEN
        -- The key was used before (perhaps by a transaction just committed)
        SELECT r.id, r.fingerprint INTO request_id, v_stored FROM fairq.requests r
         WHERE r.tenant_id = v_tenant AND r.idempotency_key = submit_keyed.idempotency_key;
        IF v_stored IS NOT NULL AND submit_keyed.fingerprint IS NOT NULL
           AND v_stored <> submit_keyed.fingerprint THEN
            RAISE EXCEPTION 'idempotency key "%" was used for another request (%)',
                submit_keyed.idempotency_key, request_id USING ERRCODE = 'FQ002';
        END IF;
        replayed := true;
        RETURN;
    END IF;

    IF v_total BETWEEN 1 AND fairq.chunk_size() THEN
        -- One chunk: the array as it came
        INSERT INTO fairq.recipient_chunks (request_id, chunk_no, first_position, recipients)
        VALUES (submit_keyed.request_id, 0, 0, submit_keyed.recipients);
    ELSE
        INSERT INTO fairq.recipient_chunks (request_id, chunk_no, first_position, recipients)
        SELECT submit_keyed.request_id, (ord - 1) / fairq.chunk_size(), min(ord) - 1,
               json_agg(elem ORDER BY ord)
          FROM json_array_elements(submit_keyed.recipients) WITH ORDINALITY AS e(elem, ord)
         GROUP BY (ord - 1) / fairq.chunk_size();
    END IF;

    -- Delivered at commit, and only then: a rolled back submit wakes nobody
    PERFORM pg_notify('fairq_requests', request_id::text);
END
$$;

-- The submit_keyed of 0013, for a fairqd of the version before this one
-- that still calls it during a rolling upgrade (and for the 0012 form,
-- which calls it): the same request, without a text_body.
CREATE OR REPLACE FUNCTION fairq.submit_keyed(
    tenant          text,
    from_addr       text,
    subject         text,
    body            text,
    recipients      json,
    body_is_html    boolean,
    send_at         timestamptz,
    priority        integer,
    max_attempts    integer,
    idempotency_key text,
    fingerprint     bytea,
    headers         jsonb,
    reply_to        text,
    OUT request_id  bigint,
    OUT replayed    boolean)
LANGUAGE sql AS $$
    SELECT k.request_id, k.replayed
      FROM fairq.submit_keyed(tenant, from_addr, subject, body, recipients, body_is_html,
                              send_at, priority, max_attempts, idempotency_key, fingerprint,
                              headers, reply_to, NULL::text) AS k
$$;
