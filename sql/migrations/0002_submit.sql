-- 0002_submit.sql — transactional enqueue.
--
-- An application submits a request inside its own transaction, together
-- with its own data (no dual write): after a rollback nothing exists, after
-- the commit fairqd is woken by NOTIFY (and finds it anyway on its slow
-- poll). Recipients are stored as submitted, in chunks; fairqd's splitter
-- validates each and turns them into message rows with COPY.

-- Recipients per stored chunk: big enough that a million recipients make
-- only a hundred rows, small enough that dispatch starts after one chunk.
CREATE FUNCTION fairq.chunk_size() RETURNS integer
    LANGUAGE sql IMMUTABLE AS 'SELECT 10000';

-- Checks a template's tags and returns the distinct field names it uses.
-- The grammar is that of actors/fq_template.h: {{ name }} (escaped in HTML
-- bodies) and {{{ name }}} (raw); every {{ opens a tag. Raises on an
-- unclosed tag or an invalid name, so a bad template fails the submit.
CREATE FUNCTION fairq.template_fields(template text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    pos      integer := 1;
    hit    integer;
    tag_at   integer;
    raw      boolean;
    closer   text;
    tag_text    text;
    names    text[] := '{}';
BEGIN
    LOOP
        hit := strpos(substr(template, pos), '{{');
        EXIT WHEN hit = 0;
        tag_at := pos + hit - 1;
        raw := substr(template, tag_at + 2, 1) = '{';
        closer := CASE WHEN raw THEN '}}}' ELSE '}}' END;
        pos := tag_at + length(closer);
        hit := strpos(substr(template, pos), closer);
        IF hit = 0 THEN
            RAISE EXCEPTION 'template has an unclosed tag at character %', tag_at
                USING ERRCODE = '22023';
        END IF;
        tag_text := substr(template, pos, hit - 1);
        IF tag_text !~ '^\s*[A-Za-z_][A-Za-z0-9_.-]{0,63}\s*$' THEN
            RAISE EXCEPTION 'template has an invalid tag at character %', tag_at
                USING ERRCODE = '22023';
        END IF;
        tag_text := btrim(tag_text, E' \t\r\n\f\v');
        IF NOT tag_text = ANY (names) THEN
            names := names || tag_text;
        END IF;
        pos := pos + hit - 1 + length(closer);
    END LOOP;
    RETURN names;
END
$$;

-- Submits a request; returns its id. The same idempotency key (per tenant)
-- returns the first request's id and creates nothing.
CREATE FUNCTION fairq.submit(
    tenant          text,
    from_addr       text,
    subject         text,
    body            text,
    recipients      jsonb,
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
BEGIN
    SELECT t.id INTO v_tenant FROM fairq.tenants t WHERE t.name = submit.tenant;
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'unknown tenant "%"', submit.tenant USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(submit.recipients) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'recipients must be a JSON array' USING ERRCODE = '22023';
    END IF;
    PERFORM fairq.template_fields(submit.subject), fairq.template_fields(submit.body);

    INSERT INTO fairq.requests AS r (tenant_id, idempotency_key, from_addr, subject, body,
                                     body_is_html, send_at, priority, max_attempts, total)
    VALUES (v_tenant, submit.idempotency_key, submit.from_addr, submit.subject, submit.body,
            submit.body_is_html, coalesce(submit.send_at, now()), submit.priority,
            submit.max_attempts, jsonb_array_length(submit.recipients))
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING r.id INTO v_id;
    IF v_id IS NULL THEN
        -- The key was used before (perhaps by a transaction just committed)
        SELECT r.id INTO v_id FROM fairq.requests r
         WHERE r.tenant_id = v_tenant AND r.idempotency_key = submit.idempotency_key;
        RETURN v_id;
    END IF;

    INSERT INTO fairq.recipient_chunks (request_id, chunk_no, first_position, recipients)
    SELECT v_id, (ord - 1) / fairq.chunk_size(), min(ord) - 1, json_agg(elem ORDER BY ord)
      FROM jsonb_array_elements(submit.recipients) WITH ORDINALITY AS e(elem, ord)
     GROUP BY (ord - 1) / fairq.chunk_size();

    -- Delivered at commit, and only then: a rolled back submit wakes nobody
    PERFORM pg_notify('fairq_requests', v_id::text);
    RETURN v_id;
END
$$;
