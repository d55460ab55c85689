-- 0024_holds.sql — operator holds: a tenant, a destination, or all of
-- fairq's sending stopped by hand until it is released (docs/operations.md,
-- "Holds"), as Postfix's hold queue does.
--
-- A hold changes no message: held work stays pending (or failed, its
-- retry due) with its try_count as it was, so a release loses nothing and
-- sends nothing twice. The leader's scheduler reads the holds at every full
-- poll and keeps a held tenant out of every lane's turns, a held
-- destination's lanes out of the channel's turns, and with a hold of all
-- releases nothing; a due retry that is held is not claimed
-- (fq_store_claim_due_retries). Messages already in a sender's hands
-- finish as they would.
--
-- A hold names what it holds: a tenant (tenant_id), a destination (its
-- name as fairq.destinations has it) or nothing (all). Holding what is
-- held already changes nothing (the unique index), so a hold is idempotent
-- and its first reason and author stay. A tenant or destination deleted
-- takes its hold with it.
--
-- Every change NOTIFYs fairq_requests with an empty payload, as 0016's
-- destinations do: each fairqd's scheduler then makes a full poll soon,
-- which reads the holds again, so a hold placed through any fairqd's API
-- takes effect on the leader within milliseconds; a leader that starts
-- reads them at its first poll, so a hold outlives every restart.

CREATE TABLE fairq.holds (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope       text NOT NULL CHECK (scope IN ('tenant', 'destination', 'all')),
    tenant_id   bigint REFERENCES fairq.tenants (id) ON DELETE CASCADE,
    destination text REFERENCES fairq.destinations (name) ON DELETE CASCADE ON UPDATE CASCADE,
    -- FQ_HOLD_REASON_MAX and FQ_HOLD_BY_MAX (sql/fq_store_holds.h)
    reason      text NOT NULL DEFAULT '' CHECK (octet_length(reason) <= 500),
    created_by  text NOT NULL CHECK (octet_length(created_by) BETWEEN 1 AND 100),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((scope = 'tenant') = (tenant_id IS NOT NULL)),
    CHECK ((scope = 'destination') = (destination IS NOT NULL))
);
CREATE UNIQUE INDEX holds_what_idx
    ON fairq.holds (scope, coalesce(tenant_id, 0), coalesce(destination, ''));

CREATE FUNCTION fairq.holds_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fairq_requests', '');
    RETURN NULL;
END $$;

CREATE TRIGGER holds_changed AFTER INSERT OR UPDATE OR DELETE ON fairq.holds
    FOR EACH STATEMENT EXECUTE FUNCTION fairq.holds_changed();

-- Whether a message of tenant p_tenant_id to destination p_destination is
-- held now: by a hold of its tenant, of its destination, or of all.
CREATE FUNCTION fairq.held(p_tenant_id bigint, p_destination text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM fairq.holds h
                    WHERE h.scope = 'all'
                       OR (h.scope = 'tenant' AND h.tenant_id = p_tenant_id)
                       OR (h.scope = 'destination' AND h.destination = p_destination))
$$;

-- Per tenant, since when its oldest message that is due now has waited:
-- the work fairq would send now and has not, the figure an operator's
-- alarm should watch (GET /v1/tenants' oldest_due_age_s, /metrics'
-- fairq_tenant_oldest_due_age_seconds, fairq top). A pending message is
-- due from when it was split or its request's send_at, whichever is
-- later; a failed one from its next_attempt_at. Left out: requests paused,
-- not yet due (send_at to come) or not yet split; retries backing off;
-- held work (a hold of its tenant, its destination, or of all). A retry
-- claimed by the scheduler counts from its claim's end, as it is in the
-- scheduler's hands until then.
--
-- It reads, per open request, its first message not final from its
-- scan_from (the reaper keeps that past its sent history) through
-- messages_request_idx, and the due retries through messages_retry_idx:
-- never a tenant's whole backlog.
CREATE VIEW fairq.tenant_oldest_due AS
    SELECT due.tenant_id, min(due.since) AS since
      FROM (SELECT r.tenant_id, greatest(r.send_at, m.created_at) AS since
              FROM fairq.requests r
             CROSS JOIN LATERAL (
                   SELECT m.created_at FROM fairq.messages m
                    WHERE m.request_id = r.id AND m.id > r.scan_from AND m.status = 'pending'
                      AND NOT EXISTS (SELECT 1 FROM fairq.holds h
                                       WHERE h.scope = 'destination'
                                         AND h.destination = m.destination)
                    ORDER BY m.id LIMIT 1) m
             WHERE r.status IN ('splitting', 'active') AND r.send_at <= now()
            UNION ALL
            SELECT m.tenant_id, m.next_attempt_at
              FROM fairq.messages m JOIN fairq.requests r ON r.id = m.request_id
             WHERE m.next_attempt_at <= now() AND m.status = 'failed'
               AND r.status IN ('splitting', 'active')
               AND NOT EXISTS (SELECT 1 FROM fairq.holds h
                                WHERE h.scope = 'destination'
                                  AND h.destination = m.destination)) due
     WHERE NOT EXISTS (SELECT 1 FROM fairq.holds h
                        WHERE h.scope = 'all'
                           OR (h.scope = 'tenant' AND h.tenant_id = due.tenant_id))
     GROUP BY due.tenant_id;
