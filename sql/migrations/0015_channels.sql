-- 0015_channels.sql — requests on channels besides mail: http and others.
--
-- A request names the channel its messages go out on (api/API.md,
-- "Channels"). "email", the default, is mail as it always was. "http"
-- makes each message one HTTP request (a webhook): the request gives its
-- method, a URL template, headers whose values are templates, a body
-- template of format json or form, and a signing secret or none; the
-- dispatcher renders them per recipient (channels/fq_channel.h) and signs
-- by Standard Webhooks when there is a secret, its own or, failing that,
-- its tenant's default (tenants.signing_secret, read at each dispatch: a
-- tenant's new secret signs the messages not yet sent). Any other name
-- (lowercase a-z 0-9 _ -, 1 to 32; the set is open) is a channel some
-- sender carries out on its own, given the recipient and the rendered
-- body.
--
-- Only mail has addresses: the recipients of another channel name
-- themselves by a key ("to": 1 to 320 bytes without a control character,
-- which the splitter checks, recipients/fq_recipients.h), and such a
-- request has no from address (from_addr NULL, which only mail needs
-- now), no subject ('') and none of mail's headers, reply_to or
-- text_body. An http request keeps its body in http_body (body is '').
--
-- The rule of an http request is stated once, in C (fq_http_spec_problem
-- of channels/fq_channel.h): fairqd's API refuses a bad one at submit
-- with a 400 naming its place, and the dispatcher parses every request by
-- it again before rendering (a request that breaks it has its messages
-- die with the reason). The checks here hold what a submit in SQL must
-- not store in any case: the channel's name, mail's fields kept to mail
-- and http's to http, the method, a URL of http or https, the headers'
-- shape, count, bytes, names (HTTP tokens; not one the connection owns
-- or Standard Webhooks' own; none twice in any case), their values free
-- of control characters, the templates' grammar, and a secret's form.
-- The limits are those of channels/fq_channel.h (FQ_HTTP_URL_MAX,
-- FQ_HTTP_BODY_MAX, FQ_HTTP_HEADERS_MAX, FQ_HTTP_HEADERS_BYTES_MAX,
-- FQ_HTTP_SECRET_MIN and _MAX, FQ_CHANNEL_NAME_MAX), which a test of
-- tests/sql compares with these.
--
-- Requests stored before this migration are mail: the new column's
-- default is a constant, which PostgreSQL adds without rewriting the
-- table, and the new checks are added NOT VALID, as every row already
-- stored holds 'email' and NULLs. Dropping from_addr's NOT NULL changes
-- the catalog only.
ALTER TABLE fairq.requests ADD COLUMN channel text NOT NULL DEFAULT 'email';
ALTER TABLE fairq.requests ADD CONSTRAINT requests_channel_check
    CHECK (channel ~ '^[a-z0-9_-]{1,32}$') NOT VALID;
ALTER TABLE fairq.requests ALTER COLUMN from_addr DROP NOT NULL;
ALTER TABLE fairq.requests ADD CONSTRAINT requests_from_addr_email_check
    CHECK (channel <> 'email' OR from_addr IS NOT NULL) NOT VALID;
ALTER TABLE fairq.requests
    ADD COLUMN http_method      text,
    ADD COLUMN http_url         text,
    ADD COLUMN http_headers     jsonb,
    ADD COLUMN http_body        text,
    ADD COLUMN http_body_format text,
    ADD COLUMN signing_secret   text;
-- Each IS NOT NULL first: a CHECK that comes out NULL passes
ALTER TABLE fairq.requests ADD CONSTRAINT requests_http_check CHECK (
    CASE WHEN channel = 'http'
         THEN http_method IS NOT NULL AND http_method IN ('POST', 'PUT', 'PATCH', 'DELETE', 'GET')
              AND http_url IS NOT NULL AND octet_length(http_url) <= 8192
              AND http_url ~ '^https?://'
              AND http_body_format IS NOT NULL AND http_body_format IN ('json', 'form')
              AND (http_body IS NULL OR octet_length(http_body) <= 262144)
              AND (http_headers IS NULL OR jsonb_typeof(http_headers) = 'object')
         ELSE http_method IS NULL AND http_url IS NULL AND http_headers IS NULL
              AND http_body IS NULL AND http_body_format IS NULL AND signing_secret IS NULL
    END) NOT VALID;

-- Why secret is not a signing secret ("whsec_" and the canonical base64
-- of 24 to 64 bytes, fq_http_secret_problem's rule), or NULL when it is.
CREATE FUNCTION fairq.signing_secret_problem(secret text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    -- The form first, so that decode() only ever sees base64 it takes
    IF secret !~ '^whsec_([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$'
       OR octet_length(secret) > 6 + 88 THEN
        RETURN 'a signing secret is "whsec_" and the base64 (with its padding) of 24 to 64 bytes';
    END IF;
    IF octet_length(decode(substr(secret, 7), 'base64')) NOT BETWEEN 24 AND 64 THEN
        RETURN 'a signing secret is "whsec_" and the base64 (with its padding) of 24 to 64 bytes';
    END IF;
    RETURN NULL;
END
$$;
ALTER TABLE fairq.requests ADD CONSTRAINT requests_signing_secret_check
    CHECK (fairq.signing_secret_problem(signing_secret) IS NULL) NOT VALID;

-- A tenant's default signing secret: its http requests that give none of
-- their own are signed with it (set by an admin, PUT /v1/tenants/NAME).
ALTER TABLE fairq.tenants ADD COLUMN signing_secret text
    CONSTRAINT tenants_signing_secret_check
    CHECK (fairq.signing_secret_problem(signing_secret) IS NULL);

-- Why an http request's headers (a JSON object of names to value
-- templates) are not ones fairq sends, or NULL when they are: the rule
-- of channels/fq_channel.h but for the templates' grammar, which the
-- caller checks with fairq.template_fields.
CREATE FUNCTION fairq.http_headers_problem(headers jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    v_name  text;
    v_count bigint;
    v_bytes bigint;
    -- FQ_HTTP_HEADERS_MAX and FQ_HTTP_HEADERS_BYTES_MAX
    c_max       CONSTANT integer := 32;
    c_bytes_max CONSTANT integer := 8 * 1024;
BEGIN
    IF jsonb_typeof(headers) <> 'object' THEN
        RETURN 'http headers must be a JSON object';
    END IF;
    SELECT h.key INTO v_name FROM jsonb_each(headers) AS h
     WHERE jsonb_typeof(h.value) <> 'string' LIMIT 1;
    IF v_name IS NOT NULL THEN
        RETURN format('http header "%s" must be a string', v_name);
    END IF;
    SELECT count(*), coalesce(sum(octet_length(h.key) + octet_length(h.value)), 0)
      INTO v_count, v_bytes FROM jsonb_each_text(headers) AS h;
    IF v_count > c_max THEN
        RETURN format('http headers: more than %s headers', c_max);
    END IF;
    IF v_bytes > c_bytes_max THEN
        RETURN format('http headers: more than %s bytes of names and values', c_bytes_max);
    END IF;
    SELECT h.key INTO v_name FROM jsonb_object_keys(headers) AS h(key)
     WHERE h.key !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]+$' LIMIT 1;
    IF v_name IS NOT NULL THEN
        RETURN format('http header "%s": a header''s name is letters, digits and '
                      '!#$%%&''*+-.^_`|~ only', v_name);
    END IF;
    SELECT h.key INTO v_name FROM jsonb_object_keys(headers) AS h(key)
     WHERE lower(h.key) IN ('host', 'content-length', 'transfer-encoding', 'connection',
                            'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade',
                            'webhook-id', 'webhook-timestamp', 'webhook-signature') LIMIT 1;
    IF v_name IS NOT NULL THEN
        RETURN format('http header "%s": it is written by the HTTP client or by fairq and '
                      'cannot be given', v_name);
    END IF;
    SELECT max(h.key) INTO v_name FROM jsonb_object_keys(headers) AS h(key)
     GROUP BY lower(h.key) HAVING count(*) > 1 LIMIT 1;
    IF v_name IS NOT NULL THEN
        RETURN format('http header "%s" is given twice (names are case-insensitive)', v_name);
    END IF;
    SELECT h.key INTO v_name FROM jsonb_each_text(headers) AS h
     WHERE translate(h.value, E'\t', '') ~ '[[:cntrl:]]' LIMIT 1;
    IF v_name IS NOT NULL THEN
        RETURN format('http header "%s": its value holds a control character', v_name);
    END IF;
    RETURN NULL;
END
$$;

-- fairq.submit_keyed of 0014 with the request's channel and its http
-- fields, which all have defaults: a call with 0014's fourteen arguments
-- (an older fairqd's, during a rolling upgrade; 0013's form calls it so
-- too) submits mail as before, and an application names what it gives
-- (channel => 'http', http_url => ...). 0014's function is dropped for
-- it, as two functions would both take fourteen arguments. The channel
-- and the http fields are part of what the caller's fingerprint covers
-- (fairqd's store adds them to it for a request that is not mail). For a
-- channel other than mail from_addr is NULL, subject NULL or '', and an
-- http request's body NULL or '' (it gives http_body).
DROP FUNCTION fairq.submit_keyed(text, text, text, text, json, boolean, timestamptz, integer,
                                 integer, text, bytea, jsonb, text, text);
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
    channel          text DEFAULT 'email',
    http_method      text DEFAULT NULL,
    http_url         text DEFAULT NULL,
    http_headers     jsonb DEFAULT NULL,
    http_body        text DEFAULT NULL,
    http_body_format text DEFAULT NULL,
    signing_secret   text DEFAULT NULL,
    OUT request_id   bigint,
    OUT replayed     boolean)
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
    v_email   boolean;
    v_http    boolean;
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
    IF submit_keyed.channel IS NULL OR submit_keyed.channel !~ '^[a-z0-9_-]{1,32}$' THEN
        RAISE EXCEPTION 'invalid channel "%": a channel''s name is 1 to 32 of a-z 0-9 _ -',
            submit_keyed.channel USING ERRCODE = '22023';
    END IF;
    v_email := submit_keyed.channel = 'email';
    v_http := submit_keyed.channel = 'http';
    IF NOT v_http AND (submit_keyed.http_method IS NOT NULL OR submit_keyed.http_url IS NOT NULL
                       OR submit_keyed.http_headers IS NOT NULL
                       OR submit_keyed.http_body IS NOT NULL
                       OR submit_keyed.http_body_format IS NOT NULL
                       OR submit_keyed.signing_secret IS NOT NULL) THEN
        RAISE EXCEPTION 'the http fields are for the http channel only, not "%"',
            submit_keyed.channel USING ERRCODE = '22023';
    END IF;
    IF NOT v_email AND (submit_keyed.from_addr IS NOT NULL OR submit_keyed.reply_to IS NOT NULL
                        OR submit_keyed.headers IS NOT NULL
                        OR submit_keyed.text_body IS NOT NULL
                        OR submit_keyed.body_is_html IS TRUE
                        OR coalesce(submit_keyed.subject, '') <> '') THEN
        RAISE EXCEPTION 'channel "%" takes no from, subject, html, text_body, headers or '
                        'reply_to: they are mail''s', submit_keyed.channel USING ERRCODE = '22023';
    END IF;

    IF v_email THEN
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
        IF submit_keyed.text_body IS NOT NULL AND submit_keyed.body_is_html IS NOT TRUE THEN
            RAISE EXCEPTION 'text_body is only for an HTML body (html true)'
                USING ERRCODE = '22023';
        END IF;
        PERFORM fairq.template_fields(submit_keyed.subject),
                fairq.template_fields(submit_keyed.body),
                fairq.template_fields(submit_keyed.text_body);
    ELSIF v_http THEN
        IF coalesce(submit_keyed.body, '') <> '' THEN
            RAISE EXCEPTION 'an http request gives its body as http_body' USING ERRCODE = '22023';
        END IF;
        IF submit_keyed.http_method IS NULL
           OR submit_keyed.http_method NOT IN ('POST', 'PUT', 'PATCH', 'DELETE', 'GET') THEN
            RAISE EXCEPTION 'http_method must be POST, PUT, PATCH, DELETE or GET'
                USING ERRCODE = '22023';
        END IF;
        IF submit_keyed.http_url IS NULL OR submit_keyed.http_url !~ '^https?://[^/?#{]' THEN
            RAISE EXCEPTION 'http_url must start with http:// or https:// and a host'
                USING ERRCODE = '22023';
        END IF;
        IF coalesce(submit_keyed.http_body_format, '') NOT IN ('json', 'form') THEN
            RAISE EXCEPTION 'http_body_format must be json or form' USING ERRCODE = '22023';
        END IF;
        IF submit_keyed.http_body IS NOT NULL AND submit_keyed.http_method = 'GET' THEN
            RAISE EXCEPTION 'http_body: a GET has no body' USING ERRCODE = '22023';
        END IF;
        IF submit_keyed.http_headers IS NOT NULL THEN
            v_problem := fairq.http_headers_problem(submit_keyed.http_headers);
            IF v_problem IS NOT NULL THEN
                RAISE EXCEPTION '%', v_problem USING ERRCODE = '22023';
            END IF;
            PERFORM fairq.template_fields(h.value)
               FROM jsonb_each_text(submit_keyed.http_headers) AS h;
        END IF;
        IF submit_keyed.signing_secret IS NOT NULL THEN
            v_problem := fairq.signing_secret_problem(submit_keyed.signing_secret);
            IF v_problem IS NOT NULL THEN
                RAISE EXCEPTION 'signing_secret: %', v_problem USING ERRCODE = '22023';
            END IF;
        END IF;
        PERFORM fairq.template_fields(submit_keyed.http_url),
                fairq.template_fields(submit_keyed.http_body);
    ELSE
        IF submit_keyed.body IS NULL THEN
            RAISE EXCEPTION 'channel "%" needs a body', submit_keyed.channel
                USING ERRCODE = '22023';
        END IF;
        PERFORM fairq.template_fields(submit_keyed.body);
    END IF;
    IF json_typeof(submit_keyed.recipients) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'recipients must be a JSON array' USING ERRCODE = '22023';
    END IF;
    v_total := json_array_length(submit_keyed.recipients);
    replayed := false;

    INSERT INTO fairq.requests AS r (tenant_id, idempotency_key, from_addr, subject, body,
                                     body_is_html, send_at, priority, max_attempts, total,
                                     fingerprint, headers, reply_to, text_body, channel,
                                     http_method, http_url, http_headers, http_body,
                                     http_body_format, signing_secret)
    -- Mail's subject, body and html as given (NOT NULL holds them); the
    -- others have none of their own
    VALUES (v_tenant, submit_keyed.idempotency_key, submit_keyed.from_addr,
            CASE WHEN v_email THEN submit_keyed.subject ELSE '' END,
            CASE WHEN v_http THEN '' ELSE submit_keyed.body END,
            CASE WHEN v_email THEN submit_keyed.body_is_html ELSE false END,
            coalesce(submit_keyed.send_at, now()),
            submit_keyed.priority, submit_keyed.max_attempts, v_total, submit_keyed.fingerprint,
            submit_keyed.headers, submit_keyed.reply_to, submit_keyed.text_body,
            submit_keyed.channel, submit_keyed.http_method, submit_keyed.http_url,
            submit_keyed.http_headers, submit_keyed.http_body, submit_keyed.http_body_format,
            submit_keyed.signing_secret)
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
