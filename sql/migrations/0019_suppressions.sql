-- 0019_suppressions.sql — addresses not to mail: suppression lists.
--
-- A tenant's list holds the addresses that must not get its mail again
-- (they bounced hard, complained, unsubscribed, or the tenant said so);
-- the operator's global list (tenant_id NULL) holds those no tenant may
-- mail. A suppressed recipient is refused at split, with the reason
-- "suppressed" in fairq.rejects and a message.suppressed event: no
-- message is made, so it is never sent and costs no attempt.
--
-- Addresses are kept lowercased, whole: the split compares each
-- recipient's address lowercased, so Bob@Example.com and bob@example.com
-- are one entry. An address is suppressed once per list; adding it again
-- keeps the first entry.
--
-- The split looks its chunk's recipients up here, one index probe each,
-- and only when the tenant's list or the global one has any entry: a
-- deployment that suppresses nothing pays one cheap query per chunk.

CREATE TYPE fairq.suppression_reason AS ENUM (
    'manual',      -- added through the API or the CLI, or imported
    'bounce',      -- a hard bounce (an SMTP reply fairqd's suppress_bounces names)
    'complaint',   -- the recipient reported the mail as spam
    'unsubscribe'  -- the recipient unsubscribed
);

CREATE TABLE fairq.suppressions (
    -- NULL: the operator's global list
    tenant_id  bigint REFERENCES fairq.tenants (id) ON DELETE CASCADE,
    address    text NOT NULL CHECK (octet_length(address) BETWEEN 3 AND 320
                                    AND address = lower(address)
                                    AND address !~ '[[:space:][:cntrl:]]'),
    reason     fairq.suppression_reason NOT NULL,
    detail     text CHECK (octet_length(detail) <= 2000),
    created_at timestamptz NOT NULL DEFAULT now()
);
-- One entry per list and address; the global list is tenant 0 here
CREATE UNIQUE INDEX suppressions_list_address_idx
    ON fairq.suppressions ((coalesce(tenant_id, 0)), address);
