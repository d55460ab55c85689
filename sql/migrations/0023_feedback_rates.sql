-- 0023_feedback_rates.sql — what a tenant's bounce and complaint rates
-- count, found without reading its deliveries.
--
-- GET /metrics shows, per tenant, its hard bounces, complaints and
-- unsubscribes of the last 24 hours and the rates they make
-- (docs/feedback.md, "Bounce and complaint rates";
-- sql/fq_store_rates.c). They are counted from these rare events: a
-- day of a tenant's message.sent rows is millions, and counting them
-- once a minute would cost more than the campaign's acks. This index
-- holds only the rows of the four types the figures count, by tenant and
-- time, so the count reads a tenant's day of them and nothing else, and
-- the million message.sent rows of a campaign cost it nothing but the
-- predicate's check at insert (as 0022's index).
--
-- message.dead is here whole (the pattern of fairqd's suppress_bounces,
-- which tells a hard bounce, is a setting, not part of the schema): a dead
-- message is one of few, unless a tenant mails a list of bad addresses,
-- which is what the figure is there to show.
CREATE INDEX events_feedback_rates_idx ON fairq.events (tenant_id, at)
    WHERE type IN ('message.dead', 'message.bounced', 'message.complained',
                   'message.unsubscribed');
