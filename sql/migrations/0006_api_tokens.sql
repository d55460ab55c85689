-- 0006_api_tokens.sql — bearer tokens of the HTTP API (api/API.md).
--
-- A token is shown once, when it is made; only its SHA-256 is kept, so a
-- copy of the database (a backup, a replica) does not hold usable tokens.
-- A tenant may hold several tokens at once, so one can be rotated out
-- (revoked by its id) while the next is rolled in. A token without a
-- tenant is an admin's.
CREATE TABLE fairq.api_tokens (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hash            bytea NOT NULL UNIQUE CHECK (octet_length(hash) = 32),
    tenant_id       bigint REFERENCES fairq.tenants (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_tokens_tenant_idx ON fairq.api_tokens (tenant_id);

-- The one token per tenant of 0001 gives way to the table above
ALTER TABLE fairq.tenants DROP COLUMN api_token_hash;
