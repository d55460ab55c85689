-- 0016_destinations.sql — the receiving side's budgets: destinations.
--
-- A destination is where messages are received: a recipient domain of
-- mail, the host of an http request's URL, or a named group of them
-- ("google" = gmail.com and googlemail.com). Each has a rate (rate_count
-- messages per rate_period_s seconds, a token bucket of burst tokens)
-- and a most in flight; NULL is no limit. The scheduler keeps a fairness
-- lane per channel and destination, so tenants share a destination's
-- budget by their weights, and a destination without budget holds back
-- its own messages only (docs/fairness.md, "Destinations").
--
-- "default" is the destination of every domain no other one names. Its
-- budget is one budget, shared by all those domains: name a domain to
-- give it a budget of its own. It always exists and has no domains.
--
-- The splitter stamps each message with its destination as it writes the
-- row (messages.destination), so the scheduler pages a request's messages
-- per destination with an index, and a throttled destination's backlog is
-- never read again to reach another's messages. A change of a
-- destination's domains applies to the messages split after it; the ones
-- already split keep the destination they were split with.
-- request_destinations says which destinations a request has messages
-- of, for a scheduler that starts (or a request it takes in again).
--
-- Every change NOTIFYs fairq_requests with an empty payload: the
-- scheduler then reads the open requests and the destinations again.

CREATE TABLE fairq.destinations (
    name          text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,63}$'),
    rate_count    integer CHECK (rate_count > 0),
    rate_period_s integer CHECK (rate_period_s IN (1, 60, 3600, 86400)),
    burst         integer CHECK (burst BETWEEN 1 AND 1000000),
    max_inflight  integer CHECK (max_inflight BETWEEN 1 AND 1000000),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((rate_count IS NULL) = (rate_period_s IS NULL)),
    CHECK (burst IS NULL OR rate_count IS NOT NULL)
);
INSERT INTO fairq.destinations (name) VALUES ('default');

-- A domain (or an http host) belongs to one destination at most
CREATE TABLE fairq.destination_domains (
    domain      text PRIMARY KEY
                CHECK (octet_length(domain) <= 253
                       AND domain ~ '^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$'),
    destination text NOT NULL REFERENCES fairq.destinations (name)
                ON DELETE CASCADE ON UPDATE CASCADE
                CHECK (destination <> 'default')
);
CREATE INDEX destination_domains_destination_idx ON fairq.destination_domains (destination);

CREATE TABLE fairq.request_destinations (
    request_id  bigint NOT NULL REFERENCES fairq.requests (id) ON DELETE CASCADE,
    destination text NOT NULL,
    PRIMARY KEY (request_id, destination)
);

-- A constant default: PostgreSQL adds the column without rewriting the
-- table, and the messages split before this migration are the default
-- destination's. The column never changes once written, so the index
-- keeps the acks' updates HOT (0001).
ALTER TABLE fairq.messages ADD COLUMN destination text NOT NULL DEFAULT 'default';
CREATE INDEX messages_request_destination_idx
    ON fairq.messages (request_id, destination, id);

-- The open requests split so far have their messages in "default"
INSERT INTO fairq.request_destinations (request_id, destination)
    SELECT id, 'default' FROM fairq.requests
     WHERE status IN ('accepted', 'splitting', 'active', 'paused') AND split > 0;

CREATE FUNCTION fairq.destinations_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fairq_requests', '');
    RETURN NULL;
END $$;

CREATE TRIGGER destinations_changed AFTER INSERT OR UPDATE OR DELETE ON fairq.destinations
    FOR EACH STATEMENT EXECUTE FUNCTION fairq.destinations_changed();
CREATE TRIGGER destination_domains_changed
    AFTER INSERT OR UPDATE OR DELETE ON fairq.destination_domains
    FOR EACH STATEMENT EXECUTE FUNCTION fairq.destinations_changed();

-- "default" stays: every domain no other destination names is its
CREATE FUNCTION fairq.destination_default_stays() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.name = 'default' AND (TG_OP = 'DELETE' OR NEW.name <> 'default') THEN
        RAISE EXCEPTION 'the destination "default" cannot be deleted or renamed'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;

CREATE TRIGGER destination_default_stays BEFORE UPDATE OR DELETE ON fairq.destinations
    FOR EACH ROW EXECUTE FUNCTION fairq.destination_default_stays();
