-- 0008_submit_from.sql — a request's from address is checked at submit.
--
-- fairq.requests only asked of from_addr that it be 3..320 bytes without
-- control characters, so "news", "a@b, c@d" or an address holding U+2028
-- were taken, and every message of the request then died at delivery,
-- where no SMTP server takes such a sender. The from address must now be
-- one address by the rule recipients are split by (fq_recipient_address_problem
-- in recipients/fq_recipients.c), checked inside fairq.submit_json, so that it holds
-- for applications calling fairq.submit or fairq.submit_json in SQL as
-- well as for fairqd's HTTP API. Not a table constraint: rows already
-- stored stay as they are, and are not checked again.

-- Why address is not one mail address, or NULL when it is. The rule and
-- the words of fq_recipient_address_problem (recipients/), which the store
-- tests hold against this function: one @, a non-empty local part of
-- printable ASCII without spaces, a dotted domain of letters, digits and
-- hyphens, at most 320 bytes (RFC 5321: 64 + @ + 255). The first fault
-- found, in the order the C function finds them.
CREATE FUNCTION fairq.address_problem(address text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    printable integer; -- Length of the printable ASCII prefix
    first_at  integer;
    second_at integer;
    domain    text;
BEGIN
    IF address IS NULL OR address = '' THEN
        RETURN 'empty address';
    END IF;
    IF octet_length(address) > 320 THEN
        RETURN 'address longer than 320 bytes';
    END IF;
    -- The C function walks the bytes once: the first of a bad character
    -- and a second @ is the fault it names
    printable := length(substring(address FROM '^[!-~]*'));
    first_at := strpos(address, '@');
    IF first_at > 0 AND strpos(substr(address, first_at + 1), '@') > 0 THEN
        second_at := first_at + strpos(substr(address, first_at + 1), '@');
    END IF;
    IF printable < length(address) AND (second_at IS NULL OR printable + 1 < second_at) THEN
        IF substr(address, printable + 1, 1) IN (E'\r', E'\n') THEN
            RETURN 'address contains CR or LF';
        END IF;
        RETURN 'address contains a space, control or non-ASCII character';
    END IF;
    IF second_at IS NOT NULL THEN
        RETURN 'address has more than one @';
    END IF;
    IF first_at <= 1 OR first_at = length(address) THEN
        RETURN 'address is not local@domain';
    END IF;
    domain := substr(address, first_at + 1);
    IF left(domain, 1) = '.' OR right(domain, 1) = '.' OR strpos(domain, '.') = 0 THEN
        RETURN 'address domain is not a dotted name';
    END IF;
    IF domain !~ '^[A-Za-z0-9.-]+$' OR strpos(domain, '..') > 0 THEN
        RETURN 'address domain has an invalid character';
    END IF;
    RETURN NULL;
END
$$;

-- fairq.submit_json as in 0007, with the from address checked first.
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
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_tenant  bigint;
    v_id      bigint;
    v_total   integer;
    v_problem text;
BEGIN
    SELECT t.id INTO v_tenant FROM fairq.tenants t WHERE t.name = submit_json.tenant;
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'unknown tenant "%"', submit_json.tenant USING ERRCODE = '22023';
    END IF;
    v_problem := fairq.address_problem(submit_json.from_addr);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'invalid from address: %', v_problem USING ERRCODE = '22023';
    END IF;
    IF json_typeof(submit_json.recipients) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'recipients must be a JSON array' USING ERRCODE = '22023';
    END IF;
    PERFORM fairq.template_fields(submit_json.subject), fairq.template_fields(submit_json.body);
    v_total := json_array_length(submit_json.recipients);

    INSERT INTO fairq.requests AS r (tenant_id, idempotency_key, from_addr, subject, body,
                                     body_is_html, send_at, priority, max_attempts, total)
    VALUES (v_tenant, submit_json.idempotency_key, submit_json.from_addr, submit_json.subject,
            submit_json.body, submit_json.body_is_html, coalesce(submit_json.send_at, now()),
            submit_json.priority, submit_json.max_attempts, v_total)
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING r.id INTO v_id;
    IF v_id IS NULL THEN
        -- The key was used before (perhaps by a transaction just committed)
        SELECT r.id INTO v_id FROM fairq.requests r
         WHERE r.tenant_id = v_tenant AND r.idempotency_key = submit_json.idempotency_key;
        RETURN v_id;
    END IF;

    IF v_total BETWEEN 1 AND fairq.chunk_size() THEN
        -- One chunk: the array as it came
        INSERT INTO fairq.recipient_chunks (request_id, chunk_no, first_position, recipients)
        VALUES (v_id, 0, 0, submit_json.recipients);
    ELSE
        INSERT INTO fairq.recipient_chunks (request_id, chunk_no, first_position, recipients)
        SELECT v_id, (ord - 1) / fairq.chunk_size(), min(ord) - 1, json_agg(elem ORDER BY ord)
          FROM json_array_elements(submit_json.recipients) WITH ORDINALITY AS e(elem, ord)
         GROUP BY (ord - 1) / fairq.chunk_size();
    END IF;

    -- Delivered at commit, and only then: a rolled back submit wakes nobody
    PERFORM pg_notify('fairq_requests', v_id::text);
    RETURN v_id;
END
$$;
