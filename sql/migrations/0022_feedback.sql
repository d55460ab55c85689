-- 0022_feedback.sql — bounces and complaints that arrive later, once each.
--
-- A DSN (bounce) or an ARF report (complaint) that comes back after
-- delivery is recorded as a message.bounced or message.complained event
-- of its message (POST /v1/feedback, docs/feedback.md). The same report
-- may well be posted twice (a mailbox poller that crashed before it
-- deleted the mail, an MTA that retried its pipe), and must not write a
-- second event nor suppress again: this index makes the second insert a
-- conflict the statement skips (ON CONFLICT DO NOTHING), race-free
-- between two API threads.
--
-- Partial: only the rows of these two types are in it, so the million
-- message.sent rows of a campaign cost it nothing but the predicate's
-- check; without it, "has this message such an event" would scan a
-- tenant's events (events has no index by message).
CREATE UNIQUE INDEX events_feedback_once_idx ON fairq.events (message_id, type)
    WHERE type IN ('message.bounced', 'message.complained');
