-- 0012_idempotency_fingerprint.sql — an idempotency key names one request.
--
-- A submit that repeated an idempotency key answered the first request
-- whatever it asked: a client that reused a key for another campaign (a
-- key made from a date, a copied call) was told 202 with the old request,
-- and its new campaign was never sent, without a word. As the IETF httpapi
-- Idempotency-Key draft has it, a key reused for another request is now
-- refused (the HTTP API answers 422), and only the same request again is
-- answered with the first one.
--
-- "The same request" is told by a fingerprint the store computes of what
-- was submitted, as fairq reads it (sql/fq_store_requests.c: a BLAKE2b-256
-- of the from address, templates, options and the recipients' text), and
-- keeps with the request. Requests stored before this migration, and those
-- submitted in SQL without a fingerprint, have none: their key answers
-- them again whatever is submitted with it, as before.
--
-- Adding a nullable column without a default rewrites nothing, and the
-- check is added NOT VALID: the rows already stored hold NULL, so there is
-- nothing to scan, and every row written from now on is checked.
ALTER TABLE fairq.requests ADD COLUMN fingerprint bytea;
ALTER TABLE fairq.requests ADD CONSTRAINT requests_fingerprint_check
    CHECK (octet_length(fingerprint) = 32) NOT VALID;

-- Submits a request, or answers the one its idempotency key named before:
-- what fairq.submit_json did (0008), with the request's fingerprint kept
-- and compared. request_id is the request's id; replayed is true when the
-- key named a request already (nothing is created). A key that named a
-- request of another fingerprint is refused with SQLSTATE FQ002 (and
-- nothing is created); a request without a fingerprint, or a call without
-- one, compares equal to anything.
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
    OUT request_id  bigint,
    OUT replayed    boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_tenant  bigint;
    v_total   integer;
    v_problem text;
    v_stored  bytea;
BEGIN
    SELECT t.id INTO v_tenant FROM fairq.tenants t WHERE t.name = submit_keyed.tenant;
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'unknown tenant "%"', submit_keyed.tenant USING ERRCODE = '22023';
    END IF;
    v_problem := fairq.address_problem(submit_keyed.from_addr);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'invalid from address: %', v_problem USING ERRCODE = '22023';
    END IF;
    IF json_typeof(submit_keyed.recipients) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'recipients must be a JSON array' USING ERRCODE = '22023';
    END IF;
    PERFORM fairq.template_fields(submit_keyed.subject), fairq.template_fields(submit_keyed.body);
    v_total := json_array_length(submit_keyed.recipients);
    replayed := false;

    INSERT INTO fairq.requests AS r (tenant_id, idempotency_key, from_addr, subject, body,
                                     body_is_html, send_at, priority, max_attempts, total,
                                     fingerprint)
    VALUES (v_tenant, submit_keyed.idempotency_key, submit_keyed.from_addr, submit_keyed.subject,
            submit_keyed.body, submit_keyed.body_is_html, coalesce(submit_keyed.send_at, now()),
            submit_keyed.priority, submit_keyed.max_attempts, v_total, submit_keyed.fingerprint)
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

-- fairq.submit_json as before, for the applications that call it: the
-- same function without a fingerprint (its key answers the first request
-- whatever is submitted with it, as it always did).
CREATE OR REPLACE FUNCTION fairq.submit_json(
    tenant          text,
    from_addr       text,
    subject         text,
    body            text,
    recipients      json,
    body_is_html    boolean DEFAULT false,
    send_at         timestamptz DEFAULT now(),
    priority        integer DEFAULT 0,
    max_attempts    integer DEFAULT 5,
    idempotency_key text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT k.request_id
      FROM fairq.submit_keyed(tenant, from_addr, subject, body, recipients, body_is_html,
                              send_at, priority, max_attempts, idempotency_key, NULL) AS k
$$;
