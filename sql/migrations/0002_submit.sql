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
-- The grammar is that of templates/fq_template.h: {{ name }} (escaped in HTML
-- bodies) and {{{ name }}} (raw); every {{ opens a tag. Raises on an
-- unclosed tag or an invalid name, so a bad template fails the submit.
--
-- Fix: one pass over the template, in time linear in its size. The first
-- version searched substr(template, pos) for each tag, copying the rest of
-- the template every time: a 400 kB body of tags held a backend for two
-- minutes, a 10 MiB one for days. Splitting on "{{" is the same grammar: a
-- tag must close before the next "{{" (else its name would hold braces,
-- which no name may), so each piece holds at most one tag and its closer.
CREATE FUNCTION fairq.template_fields(template text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    pieces   text[] := string_to_array(template, '{{');
    piece    text;
    tag_at   integer := coalesce(length(pieces[1]), 0) + 1;
    raw      boolean;
    closer   text;
    hit      integer;
    tag_text text;
    names    text[] := '{}';
BEGIN
    -- pieces[1] is the text before the first tag; each later piece follows
    -- a "{{", and starts with "{" if that is a raw tag's "{{{"
    FOREACH piece IN ARRAY pieces[2:] LOOP
        raw := left(piece, 1) = '{';
        closer := CASE WHEN raw THEN '}}}' ELSE '}}' END;
        tag_text := CASE WHEN raw THEN substr(piece, 2) ELSE piece END;
        hit := strpos(tag_text, closer);
        IF hit = 0 THEN
            RAISE EXCEPTION 'template has an unclosed tag at character %', tag_at
                USING ERRCODE = '22023';
        END IF;
        tag_text := left(tag_text, hit - 1);
        IF tag_text !~ '^\s*[A-Za-z_][A-Za-z0-9_.-]{0,63}\s*$' THEN
            RAISE EXCEPTION 'template has an invalid tag at character %', tag_at
                USING ERRCODE = '22023';
        END IF;
        names := names || btrim(tag_text, E' \t\r\n\f\v');
        tag_at := tag_at + 2 + length(piece);
    END LOOP;
    -- Each name once, in order of first use (an ANY() test per tag would be
    -- quadratic in the number of names)
    RETURN ARRAY(SELECT n FROM unnest(names) WITH ORDINALITY AS u(n, i) GROUP BY n ORDER BY min(i));
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
