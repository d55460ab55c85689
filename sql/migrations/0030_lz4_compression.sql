-- 0030_lz4_compression.sql — the big values fairq writes and reads once
-- are compressed with lz4 instead of pglz.
--
-- A stored chunk of recipients (up to fairq.chunk_size(), 10,000: about
-- 800 KB of JSON) is compressed by its submit and read back once by the
-- splitter; a row of message.sent events (0029: up to 1024 message ids
-- and recipients) is compressed by the ack batch that writes it. With
-- pglz, PostgreSQL's default, that compression was about half of a big
-- submit (5.0 ms of a 10,000-recipient chunk, against 2.0 with lz4, for
-- about a fifth more space: 20 chunks took 6.3 MB with lz4 against 5.3
-- with pglz, and 34 uncompressed) and a few percent of the ack batch's
-- time in the pipeline benchmark. The chunks live only until they are
-- split, and the event rows as long as the events: time matters more.
--
-- Only new values are compressed the new way (no rewrite: the catalog
-- only). A server built without lz4 refuses the method; the columns then
-- keep pglz and everything works as before.
DO $$
BEGIN
    ALTER TABLE fairq.recipient_chunks ALTER COLUMN recipients SET COMPRESSION lz4;
    ALTER TABLE fairq.event_rows ALTER COLUMN message_ids SET COMPRESSION lz4,
                                 ALTER COLUMN recipients SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not supported by this server: values stay compressed with pglz';
END
$$;
