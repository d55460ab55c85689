-- 0028_split_at_submit.sql — a small mail request becomes messages in
-- its submit's own transaction.
--
-- Under a full load a new tenant's first message waited for its
-- request's split: a transaction of fairqd's own after the submit, whose
-- COMMIT waited 18 to 36 ms (fsync on) for the WAL flush behind the big
-- requests' COPYs, and then told the scheduler. Split here, the messages
-- exist when the submit commits, and the scheduler, woken by its NOTIFY,
-- reads them with the request (docs/fairness.md, "Splitting takes turns
-- too").
--
-- fairq.split_at_submit takes a request only when it is sure the
-- splitter (sql/fq_store_split.c with recipients/fq_recipients.c) would
-- make the same messages of it: mail, due now, at most 100 recipients,
-- and every recipient good by a rule stricter than the C one —
-- * an object of "to" and "fields" only, no key twice;
-- * "to" an address by fairq.address_problem (0008, the C rule in SQL),
--   on neither its tenant's suppression list nor the global one;
-- * "fields" absent, null, or an object of strings, booleans and plain
--   numbers (at most 15 digits before and after the point: each reads as
--   the same number in jansson and PostgreSQL), holding every field the
--   subject, body and text body use, the subject's without CR or LF;
-- * nothing in the list's text that PostgreSQL cannot read as text
--   (fairq.json_text_readable);
-- * the templates do not use unsubscribe_url (whether a recipient must
--   give it depends on the request's unsubscribe, set after the chunk).
-- Anything else is left to the splitter unchanged: it is split, and its
-- bad recipients rejected with the C reasons, as before. So this needs no
-- reject of its own; a test holds the two rules together
-- (tests/sql/store_split_at_submit_test.c).
--
-- The writes are the splitter's (S_WRITE_SQL): the message rows in the
-- recipients' order, the destinations they reach (by each recipient's
-- domain, from fairq.destination_domains), the chunk's deletion, the
-- request active with its split counter, and its request.split event.
--
-- An operator who wants every split done by fairqd (the submits then do
-- less; the first messages wait for a splitter) sets
-- fairq.split_at_submit = off for the database or role, or per session.

-- fairq.template_fields of 0002 with the blanks around a tag's name the
-- C parser's (templates/fq_template.c: space, tab, CR, LF): 0002's \s
-- took form feeds and vertical tabs too, so a template the splitter
-- could not parse passed the submit, and split here its messages would
-- only fail at dispatch. tests/sql/template_grammar_test.c holds the two
-- together. Requests already stored keep their templates.
CREATE OR REPLACE FUNCTION fairq.template_fields(template text) RETURNS text[]
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
        IF tag_text !~ E'^[ \t\r\n]*[A-Za-z_][A-Za-z0-9_.-]{0,63}[ \t\r\n]*$' THEN
            RAISE EXCEPTION 'template has an invalid tag at character %', tag_at
                USING ERRCODE = '22023';
        END IF;
        names := names || btrim(tag_text, E' \t\r\n');
        tag_at := tag_at + 2 + length(piece);
    END LOOP;
    -- Each name once, in order of first use (an ANY() test per tag would be
    -- quadratic in the number of names)
    RETURN ARRAY(SELECT n FROM unnest(names) WITH ORDINALITY AS u(n, i) GROUP BY n ORDER BY min(i));
END
$$;

-- Whether PostgreSQL can read the JSON text doc's strings as text: no
-- \u0000 escape, and no surrogate escape that is not half of a pair
-- (json input stores both, but ->>, ::jsonb and every function that reads
-- a string refuse them). jansson refuses them too, so the splitter rejects
-- a recipient holding one as one that "could not be read"; before that,
-- the reads of its split must not fail on it (sql/fq_store_split.c, the
-- suppressed addresses). Escaped backslashes go first, so that "\\u0000"
-- (a backslash, then the letters u0000) is plain text.
CREATE FUNCTION fairq.json_text_readable(doc text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT NOT (t ~ '\\u0000'
                OR regexp_replace(t, '\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}',
                                  '', 'g') ~ '\\u[dD][89a-fA-F]')
      FROM replace(doc, '\\', '') AS t
$$;

-- Whether the request was split at its submit, for fairqd's count of
-- what was split (fairq_tenant_split_total): its splitters count the rows
-- they write, and the scheduler those of a request split here as it takes
-- it up. A constant default: no table rewrite.
ALTER TABLE fairq.requests ADD COLUMN split_at_submit boolean NOT NULL DEFAULT false;

CREATE FUNCTION fairq.split_at_submit(p_request bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    -- The most recipients split here: enough for a newcomer's small
    -- request, little enough that a submit stays a few ms of checks
    c_max CONSTANT integer := 100;
    v_request      fairq.requests;
    v_chunk        json;
    v_fields       text[];
    v_header       text[];
    v_good         bigint;
    v_destinations text[];
    v_recipients   text[];
    v_values       jsonb[];
BEGIN
    -- PostgreSQL's spellings of false, in any case (unset, or empty: on)
    IF lower(btrim(current_setting('fairq.split_at_submit', true)))
       IN ('off', 'of', 'false', 'fals', 'fal', 'fa', 'f', 'no', 'n', '0') THEN
        RETURN false;
    END IF;
    SELECT * INTO v_request FROM fairq.requests r WHERE r.id = p_request;
    IF NOT FOUND OR v_request.channel <> 'email' OR v_request.status <> 'accepted'
       OR v_request.split <> 0 OR v_request.rejected <> 0
       OR v_request.total NOT BETWEEN 1 AND c_max OR v_request.send_at > now()
       OR getdatabaseencoding() <> 'UTF8' THEN
        RETURN false;
    END IF;
    -- At most fairq.chunk_size() recipients are one chunk, the first
    SELECT c.recipients INTO v_chunk FROM fairq.recipient_chunks c
     WHERE c.request_id = p_request AND c.chunk_no = 0 AND c.first_position = 0;
    IF NOT FOUND OR NOT fairq.json_text_readable(v_chunk::text) THEN
        RETURN false;
    END IF;
    v_header := fairq.template_fields(v_request.subject);
    v_fields := v_header || fairq.template_fields(v_request.body)
                || coalesce(fairq.template_fields(v_request.text_body), '{}');
    IF 'unsubscribe_url' = ANY (v_fields) THEN
        RETURN false;
    END IF;
    -- Reads only: whatever PostgreSQL refuses in a recipient (a number
    -- too big for numeric, say) leaves the request to the splitter
    BEGIN
        WITH given AS (
            SELECT e AS j, e::jsonb AS b, n
              FROM json_array_elements(v_chunk) WITH ORDINALITY AS a(e, n)),
        checked AS (
            SELECT n, b->>'to' AS address, b->'fields' AS f, j->'fields' AS jf,
                   jsonb_typeof(b) = 'object'
                   AND (SELECT count(*) FROM json_object_keys(j))
                       = (SELECT count(*) FROM jsonb_object_keys(b))
                   AND NOT EXISTS (SELECT 1 FROM jsonb_object_keys(b) AS k(key)
                                    WHERE k.key NOT IN ('to', 'fields'))
                   AND jsonb_typeof(b->'to') = 'string'
                   AND fairq.address_problem(b->>'to') IS NULL AS shaped
              FROM given
             WHERE json_typeof(j) = 'object'),
        good AS (
            SELECT n, address,
                   CASE WHEN jsonb_typeof(f) = 'object' THEN f ELSE '{}' END AS f
              FROM checked c
             WHERE shaped
               AND (f IS NULL OR jsonb_typeof(f) = 'null'
                    OR (jsonb_typeof(f) = 'object'
                        AND (SELECT count(*) FROM json_object_keys(jf))
                            = (SELECT count(*) FROM jsonb_object_keys(f))
                        AND NOT EXISTS (
                            SELECT 1 FROM jsonb_each(f) AS v(key, value)
                             WHERE NOT (jsonb_typeof(v.value) IN ('string', 'boolean')
                                        OR (jsonb_typeof(v.value) = 'number'
                                            AND v.value::text
                                                ~ '^-?[0-9]{1,15}(\.[0-9]{1,15})?$')))))
               AND NOT EXISTS (SELECT 1 FROM unnest(v_fields) AS u(name)
                                WHERE NOT coalesce(c.f ? u.name, false))
               AND NOT EXISTS (SELECT 1 FROM unnest(v_header) AS u(name)
                                WHERE jsonb_typeof(c.f->u.name) = 'string'
                                  AND (strpos(c.f->>u.name, chr(13)) > 0
                                       OR strpos(c.f->>u.name, chr(10)) > 0))
               AND NOT EXISTS (SELECT 1 FROM fairq.suppressions s
                                WHERE coalesce(s.tenant_id, 0) IN (0, v_request.tenant_id)
                                  AND s.address = lower(c.address)))
        SELECT count(*),
               array_agg(coalesce((SELECT d.destination FROM fairq.destination_domains d
                                    WHERE d.domain = lower(split_part(address, '@', 2))),
                                  'default') ORDER BY n),
               array_agg(address ORDER BY n), array_agg(f ORDER BY n)
          INTO v_good, v_destinations, v_recipients, v_values
          FROM good;
    EXCEPTION WHEN OTHERS THEN
        RETURN false;
    END;
    IF v_good <> v_request.total THEN
        RETURN false;
    END IF;

    WITH inserted AS (
        INSERT INTO fairq.messages (request_id, tenant_id, destination, recipient, fields)
        SELECT p_request, v_request.tenant_id, u.d, u.r, u.f
          FROM unnest(v_destinations, v_recipients, v_values) WITH ORDINALITY AS u(d, r, f, n)
         ORDER BY u.n
        RETURNING destination)
    INSERT INTO fairq.request_destinations (request_id, destination)
    SELECT DISTINCT p_request, i.destination FROM inserted i
    ON CONFLICT DO NOTHING;
    DELETE FROM fairq.recipient_chunks c WHERE c.request_id = p_request;
    UPDATE fairq.requests r SET split = v_good, status = 'active', split_at_submit = true,
           updated_at = now()
     WHERE r.id = p_request;
    IF v_request.webhook_id IS NULL THEN
        INSERT INTO fairq.events (tenant_id, request_id, type)
        VALUES (v_request.tenant_id, p_request, 'request.split');
    END IF;
    RETURN true;
END
$$;

-- fairq.submit_keyed of 0021, which fairqd's HTTP API calls, then the
-- split above. Unchanged otherwise.
CREATE OR REPLACE FUNCTION fairq.submit_keyed(
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
    IF NOT replayed THEN
        PERFORM fairq.split_at_submit(request_id);
    END IF;
END
$$;

-- fairq.submit_json of 0012, which applications call, then the split
-- above.
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
#variable_conflict use_variable
DECLARE
    v_id       bigint;
    v_replayed boolean;
BEGIN
    SELECT k.request_id, k.replayed INTO v_id, v_replayed
      FROM fairq.submit_keyed(tenant, from_addr, subject, body, recipients, body_is_html,
                              send_at, priority, max_attempts, idempotency_key, NULL) AS k;
    IF NOT v_replayed THEN
        PERFORM fairq.split_at_submit(v_id);
    END IF;
    RETURN v_id;
END
$$;
