-- 0004_statistics.sql — cheap statistics for the columns fairqd plans by.
--
-- fairqd ANALYZEs these columns itself while a campaign is split
-- (fq_store_refresh_stats), each time the table has doubled, because a
-- table grown from nothing in seconds would otherwise be planned as nearly
-- empty. With the default target (100) each pass samples 30,000 rows,
-- nearly every page of a young table: a fifth of the database's time
-- during a campaign. The scheduler's plans only need to know that the
-- table is large and most of it pending, which 3,000 rows tell as well.
ALTER TABLE fairq.messages
    ALTER COLUMN id SET STATISTICS 10,
    ALTER COLUMN request_id SET STATISTICS 10,
    ALTER COLUMN tenant_id SET STATISTICS 10,
    ALTER COLUMN status SET STATISTICS 10,
    ALTER COLUMN next_attempt_at SET STATISTICS 10;
