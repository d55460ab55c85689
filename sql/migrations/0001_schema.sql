-- 0001_schema.sql — fairq's tables.
--
-- PostgreSQL is the source of truth: the scheduler's memory is derived from
-- these rows, so a crash of fairqd loses nothing. Hot-path rules:
-- the ack UPDATE must stay HOT, so no index (and no partial-index predicate)
-- covers a column an ack changes (status, try_count, last_attempt_at,
-- updated_at), and messages leave room on each page (fillfactor).

CREATE TYPE fairq.request_status AS ENUM
    ('accepted', 'splitting', 'active', 'paused', 'done', 'cancelled', 'rejected');
CREATE TYPE fairq.message_status AS ENUM
    ('pending', 'sent', 'failed', 'dead', 'cancelled');

CREATE TABLE fairq.tenants (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text NOT NULL UNIQUE
                    CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,63}$'),
    -- Share of dispatch while backlogged (deficit round robin weight)
    weight          integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000),
    max_inflight    integer NOT NULL DEFAULT 1000 CHECK (max_inflight > 0),
    -- Submit limit per minute; NULL means unlimited
    submit_rate     integer CHECK (submit_rate > 0),
    -- sha256 of the tenant's API token; the token itself is never stored
    api_token_hash  bytea UNIQUE CHECK (octet_length(api_token_hash) = 32),
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE fairq.requests (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       bigint NOT NULL REFERENCES fairq.tenants (id),
    idempotency_key text CHECK (octet_length(idempotency_key) BETWEEN 1 AND 255),
    from_addr       text NOT NULL CHECK (octet_length(from_addr) BETWEEN 3 AND 320
                                         AND from_addr !~ '[[:cntrl:]]'),
    -- A mail header: no control characters (no CR/LF header injection)
    subject         text NOT NULL CHECK (octet_length(subject) <= 998
                                         AND subject !~ '[[:cntrl:]]'),
    -- The template parser's limit (FQ_TEMPLATE_MAX_SIZE): a body it could
    -- not render is refused at submit, not discovered at send
    body            text NOT NULL CHECK (octet_length(body) <= 1048576),
    body_is_html    boolean NOT NULL DEFAULT false,
    send_at         timestamptz NOT NULL DEFAULT now(),
    -- Orders requests within a tenant only (higher first)
    priority        integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN -1000 AND 1000),
    max_attempts    integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
    status          fairq.request_status NOT NULL DEFAULT 'accepted',
    status_detail   text,
    -- Counters kept by the batches that change messages, so status never
    -- counts a million rows
    total           integer NOT NULL DEFAULT 0,
    split           integer NOT NULL DEFAULT 0,
    rejected        integer NOT NULL DEFAULT 0,
    sent            integer NOT NULL DEFAULT 0,
    failed          integer NOT NULL DEFAULT 0,
    dead            integer NOT NULL DEFAULT 0,
    cancelled       integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    -- Every message of this request with a smaller id is final: where the
    -- scheduler resumes paging after a restart, so it never rescans them
    scan_from       bigint NOT NULL DEFAULT 0,
    UNIQUE (tenant_id, idempotency_key)
);
CREATE INDEX requests_tenant_idx ON fairq.requests (tenant_id, id);
-- Unfinished requests only: the set the scheduler loads at start
CREATE INDEX requests_open_idx ON fairq.requests (send_at)
    WHERE status IN ('accepted', 'splitting', 'active', 'paused');

-- Recipients as submitted, in chunks, until the splitter turns them into
-- messages. A chunk is deleted in the transaction that splits it, so a
-- crash mid-split resumes at the first chunk left.
CREATE TABLE fairq.recipient_chunks (
    request_id      bigint NOT NULL REFERENCES fairq.requests (id) ON DELETE CASCADE,
    chunk_no        integer NOT NULL,
    first_position  integer NOT NULL,
    recipients      json NOT NULL,
    PRIMARY KEY (request_id, chunk_no)
);

-- No foreign key to requests: COPY would check every row. Messages are
-- only written by the store module, and pruned before their request.
CREATE TABLE fairq.messages (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id      bigint NOT NULL,
    tenant_id       bigint NOT NULL,
    recipient       text NOT NULL,
    fields          jsonb NOT NULL DEFAULT '{}',
    status          fairq.message_status NOT NULL DEFAULT 'pending',
    try_count       integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_attempt_at timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 45);
-- Fix: fillfactor 45, not 70. Every message is updated at least once (its
-- ack), and a HOT update needs room for the new row version on the same
-- page: at 70 only the 30% left free could take new versions, so fewer than
-- half of the acks stayed HOT (measured: 43%). The new version is the old
-- one plus last_attempt_at (8 bytes), so a page must stay a little under
-- half full: at 45 all of them are HOT (at 50, 96%).
-- Paging a request by id cursor; status is filtered, never indexed (HOT)
CREATE INDEX messages_request_idx ON fairq.messages (request_id, id);
CREATE INDEX messages_tenant_idx ON fairq.messages (tenant_id, id);
-- Due retries. An ack sets it to NULL (NULL to NULL keeps the update HOT)
CREATE INDEX messages_retry_idx ON fairq.messages (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;
CREATE INDEX messages_recipient_idx ON fairq.messages (lower(recipient) text_pattern_ops);
CREATE INDEX messages_domain_idx ON fairq.messages (lower(split_part(recipient, '@', 2)));

-- Recipients the splitter refused, with the reason, per request
CREATE TABLE fairq.rejects (
    request_id      bigint NOT NULL REFERENCES fairq.requests (id) ON DELETE CASCADE,
    position        integer NOT NULL,
    recipient       text,
    reason          text NOT NULL,
    PRIMARY KEY (request_id, position)
);
