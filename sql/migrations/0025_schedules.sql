-- 0025_schedules.sql — recurring sends: a tenant's schedules, each a cron
-- expression in a time zone whose firings submit a stored request.
--
-- A schedule holds its expression twice: as written (cron), and as the
-- sets of minutes, hours, days, months and weekdays it matches (bit n set
-- when value n matches), which fairqd's API parses and checks
-- (api/fq_cron.c) when the schedule is made or changed. The sets are what
-- this file reads; it never parses the text. Which instant a local time
-- is, is PostgreSQL's to say: it holds the time zone database, and fairqd
-- is multi-threaded, where changing TZ to ask libc is not safe.
--
-- Time zones and their changes (fairq.schedule_instant):
-- * a local time that does not exist (the hour a clock skips in spring)
--   fires at the first instant after the gap: every firing in the gap is
--   one firing then;
-- * a local time that happens twice (the hour a clock repeats in autumn)
--   fires once, at its first occurrence; the repeated hour fires nothing.
--
-- The request a firing submits is stored as fairq.submit_keyed's
-- arguments, checked by fairqd's API exactly as a submit's body is, and
-- then by a trial submit rolled back (fairq.schedule_save), so a firing
-- never fails for a reason that could be known when the schedule was
-- made. The body as the tenant gave it is kept beside them, to be read
-- back and changed.
--
-- Firing (fairq.schedules_fire, the leader's schedule firer): the due
-- schedules are locked (SKIP LOCKED: two fairqds never take one), each
-- firing submitted with the idempotency key "schedule:ID:UNIX_SECONDS" of
-- the schedule and the firing's scheduled instant, and next_fire_at moved
-- on in the same transaction. A crash before the commit leaves both
-- undone; after it, both done. The key stands behind the lock: a firing
-- submitted twice anyway answers the first request (a replay), for as
-- long as that request is kept.
--
-- Missed firings (fairqd was down, or no leader was): a schedule's missed
-- says what becomes of firings found due more than the grace late:
-- * 'latest' (the default): the most recent one due fires once, late;
--   older ones are skipped;
-- * 'skip': none fires; the schedule waits for its next firing.
-- Either way skipped counts them, and the firer logs how many it skipped.
-- A paused schedule fires nothing; resumed, it starts from then: firings
-- while paused are neither made nor counted.

CREATE TABLE fairq.schedules (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       bigint NOT NULL REFERENCES fairq.tenants (id) ON DELETE CASCADE,
    -- Starts with a letter, so that a path segment is a name or an id,
    -- never both; FQ_SCHEDULE_NAME_MAX (sql/fq_store_schedules.h)
    name            text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_.-]{0,63}$'),
    -- FQ_CRON_MAX (api/fq_cron.h)
    cron            text NOT NULL CHECK (octet_length(cron) BETWEEN 1 AND 200),
    time_zone       text NOT NULL CHECK (octet_length(time_zone) BETWEEN 1 AND 64),
    minutes         bigint NOT NULL,
    hours           bigint NOT NULL,
    days            bigint NOT NULL,
    months          bigint NOT NULL,
    weekdays        bigint NOT NULL,
    days_any        boolean NOT NULL,
    weekdays_any    boolean NOT NULL,
    missed          text NOT NULL DEFAULT 'latest' CHECK (missed IN ('latest', 'skip')),
    paused          boolean NOT NULL DEFAULT false,
    -- The request as given (a submit's body), to be read back
    request         json NOT NULL,
    -- fairq.submit_keyed's arguments, as fairqd's API made them from it
    from_addr        text,
    subject          text NOT NULL,
    body             text NOT NULL,
    recipients       json NOT NULL,
    body_is_html     boolean NOT NULL,
    priority         integer NOT NULL,
    max_attempts     integer NOT NULL,
    headers          jsonb,
    reply_to         text,
    text_body        text,
    channel          text NOT NULL,
    http_method      text,
    http_url         text,
    http_headers     jsonb,
    http_body        text,
    http_body_format text,
    signing_secret   text,
    unsubscribe      boolean,
    -- The next firing's instant; never NULL for an expression the API took
    -- (one that never fires is refused)
    next_fire_at    timestamptz,
    last_fire_at    timestamptz, -- The last firing's scheduled instant
    last_request_id bigint,      -- Its request (pruned with time: no reference)
    last_error      text,        -- Why the last firing submitted nothing; NULL: it did
    fired           bigint NOT NULL DEFAULT 0,
    skipped         bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

-- The firer's question, each poll: which are due
CREATE INDEX schedules_due ON fairq.schedules (next_fire_at) WHERE NOT paused;

-- The instant local time p_local is in zone p_tz, by the rules above: of
-- the zone's offsets a day before and a day after, the earliest instant
-- whose local time is p_local (two in a repeated hour: the first); none
-- (a skipped hour) the first instant whose local time is past it, found
-- minute by minute across the gap (an hour or two; once a year).
CREATE FUNCTION fairq.schedule_instant(p_local timestamp, p_tz text) RETURNS timestamptz
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_before  timestamp := p_local - interval '1 day';
    v_after   timestamp := p_local + interval '1 day';
    v_a       timestamptz;
    v_b       timestamptz;
    v_at      timestamptz;
BEGIN
    -- local - (local as UTC) is the offset; p_local less it is the instant
    v_a := (p_local - (v_before - (v_before AT TIME ZONE p_tz AT TIME ZONE 'UTC')))
           AT TIME ZONE 'UTC';
    v_b := (p_local - (v_after - (v_after AT TIME ZONE p_tz AT TIME ZONE 'UTC')))
           AT TIME ZONE 'UTC';
    IF (v_a AT TIME ZONE p_tz) = p_local AND (v_b AT TIME ZONE p_tz) = p_local THEN
        RETURN least(v_a, v_b);
    ELSIF (v_a AT TIME ZONE p_tz) = p_local THEN
        RETURN v_a;
    ELSIF (v_b AT TIME ZONE p_tz) = p_local THEN
        RETURN v_b;
    END IF;
    v_at := least(v_a, v_b);
    WHILE v_at < greatest(v_a, v_b) AND (v_at AT TIME ZONE p_tz) < p_local LOOP
        v_at := v_at + interval '1 minute';
    END LOOP;
    RETURN v_at;
END $$;

-- The first firing after p_after of the sets in zone p_tz, or NULL when
-- none comes within the days searched: eight years and a day, the longest
-- wait an expression the API takes can have (February 29 of a leap year
-- whose century skips one).
CREATE FUNCTION fairq.schedule_next(
    p_minutes bigint, p_hours bigint, p_days bigint, p_months bigint, p_weekdays bigint,
    p_days_any boolean, p_weekdays_any boolean, p_tz text, p_after timestamptz)
    RETURNS timestamptz
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    -- A local time before p_after's never fires after it: it came before
    -- (or in a repeated hour, its first occurrence did)
    v_from  timestamp := date_trunc('minute', p_after AT TIME ZONE p_tz);
    v_day   date := (p_after AT TIME ZONE p_tz)::date;
    v_local timestamp;
    v_at    timestamptz;
    v_dom   boolean;
    v_dow   boolean;
BEGIN
    FOR i IN 0 .. 8 * 366 + 1 LOOP
        IF (p_months >> extract(month FROM v_day)::int) & 1 = 1 THEN
            v_dom := (p_days >> extract(day FROM v_day)::int) & 1 = 1;
            v_dow := (p_weekdays >> extract(dow FROM v_day)::int) & 1 = 1;
            -- Both restricted: either will do (cron's rule)
            IF (CASE WHEN NOT p_days_any AND NOT p_weekdays_any THEN v_dom OR v_dow
                     ELSE v_dom AND v_dow END) THEN
                FOR v_local IN
                    SELECT v_day + make_interval(hours => h, mins => m)
                      FROM generate_series(0, 23) h, generate_series(0, 59) m
                     WHERE (p_hours >> h) & 1 = 1 AND (p_minutes >> m) & 1 = 1
                       AND v_day + make_interval(hours => h, mins => m) >= v_from
                     ORDER BY 1
                LOOP
                    v_at := fairq.schedule_instant(v_local, p_tz);
                    IF v_at > p_after THEN
                        RETURN v_at;
                    END IF;
                END LOOP;
            END IF;
        END IF;
        v_day := v_day + 1;
    END LOOP;
    RETURN NULL;
END $$;

-- The first firing of schedule s after p_after.
CREATE FUNCTION fairq.schedule_next_of(s fairq.schedules, p_after timestamptz)
    RETURNS timestamptz
    LANGUAGE sql STABLE AS $$
    SELECT fairq.schedule_next(s.minutes, s.hours, s.days, s.months, s.weekdays, s.days_any,
                               s.weekdays_any, s.time_zone, p_after)
$$;

-- Makes (p_id NULL) or changes schedule p_id of tenant p_tenant; NULL
-- leaves a field as it is (a new schedule needs them all but paused and
-- missed), and the request's fields are taken when p_request is not NULL.
-- Checks the time zone (an IANA name PostgreSQL knows), the tenant's most
-- schedules (p_max) and the request, by a trial submit rolled back: a
-- request fairq.submit_keyed would refuse is refused here, in its words.
-- The next firing is worked out again from now when the expression or
-- the zone changed, or the schedule is resumed. Answers the schedule's id,
-- or NULL when p_id is not the tenant's. Errors: 22023 (bad input: the
-- message says), 23505 (the name is taken).
CREATE FUNCTION fairq.schedule_save(
    p_tenant text, p_id bigint, p_max integer, p_name text, p_cron text,
    p_minutes bigint, p_hours bigint, p_days bigint, p_months bigint, p_weekdays bigint,
    p_days_any boolean, p_weekdays_any boolean, p_time_zone text, p_missed text,
    p_paused boolean, p_request json,
    p_from_addr text, p_subject text, p_body text, p_recipients json, p_body_is_html boolean,
    p_priority integer, p_max_attempts integer, p_headers jsonb, p_reply_to text,
    p_text_body text, p_channel text, p_http_method text, p_http_url text,
    p_http_headers jsonb, p_http_body text, p_http_body_format text, p_signing_secret text,
    p_unsubscribe boolean)
    RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    v_tenant  bigint;
    v_old     fairq.schedules;
    v_new     fairq.schedules;
    v_problem text;
BEGIN
    -- The tenant's row locked: its creates take turns, so the count holds
    SELECT t.id INTO v_tenant FROM fairq.tenants t WHERE t.name = p_tenant FOR NO KEY UPDATE;
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'unknown tenant "%"', p_tenant USING ERRCODE = '22023';
    END IF;
    IF p_time_zone IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM pg_timezone_names WHERE name = p_time_zone) THEN
        RAISE EXCEPTION 'time_zone: "%" is not a time zone PostgreSQL knows (an IANA name such as Europe/Berlin)',
            left(p_time_zone, 64) USING ERRCODE = '22023';
    END IF;
    IF p_request IS NOT NULL THEN
        BEGIN
            PERFORM fairq.submit_keyed(p_tenant, p_from_addr, p_subject, p_body, p_recipients,
                p_body_is_html, now(), p_priority, p_max_attempts, NULL, NULL, p_headers,
                p_reply_to, p_text_body, p_channel, p_http_method, p_http_url, p_http_headers,
                p_http_body, p_http_body_format, p_signing_secret, p_unsubscribe);
            -- Taken: undone, with its NOTIFY and events
            RAISE EXCEPTION 'trial submit' USING ERRCODE = 'FQ250';
        EXCEPTION
            WHEN SQLSTATE 'FQ250' THEN NULL;
            -- fairq's own refusals (22023) say what is wrong in fairq's
            -- words; the server's (a constraint's name) are not for tenants
            WHEN OTHERS THEN v_problem := CASE WHEN SQLSTATE = '22023' THEN SQLERRM
                ELSE format('the database refused it (SQLSTATE %s)', SQLSTATE) END;
        END;
        IF v_problem IS NOT NULL THEN
            RAISE EXCEPTION 'request: %', v_problem USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_id IS NULL THEN
        IF (SELECT count(*) FROM fairq.schedules WHERE tenant_id = v_tenant) >= p_max THEN
            RAISE EXCEPTION 'a tenant has at most % schedules', p_max USING ERRCODE = '22023';
        END IF;
        INSERT INTO fairq.schedules AS s (tenant_id, name, cron, time_zone, minutes, hours, days,
               months, weekdays, days_any, weekdays_any, missed, paused, request, from_addr,
               subject, body, recipients, body_is_html, priority, max_attempts, headers,
               reply_to, text_body, channel, http_method, http_url, http_headers, http_body,
               http_body_format, signing_secret, unsubscribe)
        VALUES (v_tenant, p_name, p_cron, p_time_zone, p_minutes, p_hours, p_days, p_months,
               p_weekdays, p_days_any, p_weekdays_any, coalesce(p_missed, 'latest'),
               coalesce(p_paused, false), p_request, p_from_addr, p_subject, p_body,
               p_recipients, p_body_is_html, p_priority, p_max_attempts, p_headers,
               p_reply_to, p_text_body, p_channel, p_http_method, p_http_url, p_http_headers,
               p_http_body, p_http_body_format, p_signing_secret, p_unsubscribe)
        RETURNING * INTO v_new;
        UPDATE fairq.schedules s SET next_fire_at = fairq.schedule_next_of(v_new, now())
         WHERE s.id = v_new.id;
        RETURN v_new.id;
    END IF;
    SELECT * INTO v_old FROM fairq.schedules s
     WHERE s.id = p_id AND s.tenant_id = v_tenant FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    UPDATE fairq.schedules s SET
        name = coalesce(p_name, s.name),
        cron = coalesce(p_cron, s.cron),
        minutes = coalesce(p_minutes, s.minutes), hours = coalesce(p_hours, s.hours),
        days = coalesce(p_days, s.days), months = coalesce(p_months, s.months),
        weekdays = coalesce(p_weekdays, s.weekdays),
        days_any = coalesce(p_days_any, s.days_any),
        weekdays_any = coalesce(p_weekdays_any, s.weekdays_any),
        time_zone = coalesce(p_time_zone, s.time_zone),
        missed = coalesce(p_missed, s.missed),
        paused = coalesce(p_paused, s.paused),
        updated_at = now()
     WHERE s.id = p_id;
    IF p_request IS NOT NULL THEN
        UPDATE fairq.schedules s SET request = p_request, from_addr = p_from_addr,
               subject = p_subject, body = p_body, recipients = p_recipients,
               body_is_html = p_body_is_html, priority = p_priority,
               max_attempts = p_max_attempts, headers = p_headers, reply_to = p_reply_to,
               text_body = p_text_body, channel = p_channel, http_method = p_http_method,
               http_url = p_http_url, http_headers = p_http_headers, http_body = p_http_body,
               http_body_format = p_http_body_format, signing_secret = p_signing_secret,
               unsubscribe = p_unsubscribe
         WHERE s.id = p_id;
    END IF;
    SELECT * INTO v_new FROM fairq.schedules s WHERE s.id = p_id;
    IF v_new.cron <> v_old.cron OR v_new.time_zone <> v_old.time_zone
       OR (v_old.paused AND NOT v_new.paused) THEN
        UPDATE fairq.schedules s SET next_fire_at = fairq.schedule_next_of(v_new, now())
         WHERE s.id = p_id;
    END IF;
    RETURN p_id;
END $$;

-- One pass of the leader's schedule firer, fenced by the epoch: at most
-- p_limit due schedules, each in the order it came due, locked (another
-- fairqd's pass skips them), fired by the missed-firings rule above and
-- moved on to its next firing after now, in this one transaction. A
-- firing counts as missed when it is found more than p_grace_s late.
-- Counting skipped firings walks them, up to p_counted; past that the
-- walk jumps to the last hour, day, month or year (skipped is then a
-- lower bound: at least p_counted + 1). A request submit_keyed refuses (a tenant deleted
-- meanwhile cannot be: its schedules go with it) is the schedule's
-- last_error and stops nothing else. Answers a row per schedule fired or
-- skipped.
CREATE FUNCTION fairq.schedules_fire(p_epoch bigint, p_limit integer, p_grace_s integer,
                                     p_counted integer)
    RETURNS TABLE (schedule_id bigint, tenant text, name text, fire_at timestamptz,
                   request_id bigint, replayed boolean, skipped bigint, error text)
    LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s          record;
    v_now      timestamptz := now();
    v_due      timestamptz;
    v_next     timestamptz;
    v_skipped  bigint;
    v_jumped   boolean;
    v_window   interval;
    v_request  bigint;
    v_replayed boolean;
    v_error    text;
    v_fire     boolean;
BEGIN
    PERFORM fairq.fence(p_epoch);
    FOR s IN SELECT sc AS row, sc.id, sc.missed, sc.next_fire_at, t.name AS tenant_name,
                    sc.name AS schedule_name
               FROM fairq.schedules sc JOIN fairq.tenants t ON t.id = sc.tenant_id
              WHERE NOT sc.paused AND sc.next_fire_at <= v_now
              ORDER BY sc.next_fire_at LIMIT p_limit
                FOR UPDATE OF sc SKIP LOCKED
    LOOP
        -- The latest firing due, and how many came before it since
        v_due := s.next_fire_at;
        v_skipped := 0;
        v_jumped := false;
        LOOP
            v_next := fairq.schedule_next_of(s.row, v_due);
            EXIT WHEN v_next IS NULL OR v_next > v_now;
            IF v_skipped >= p_counted AND NOT v_jumped THEN
                v_jumped := true;
                FOREACH v_window IN ARRAY ARRAY[interval '1 hour', interval '1 day',
                                                interval '32 days', interval '366 days'] LOOP
                    v_next := fairq.schedule_next_of(s.row, greatest(v_due, v_now - v_window));
                    EXIT WHEN v_next <= v_now;
                END LOOP;
            END IF;
            v_skipped := v_skipped + 1;
            v_due := v_next;
        END LOOP;
        v_fire := s.missed = 'latest' OR v_due >= v_now - make_interval(secs => p_grace_s);
        IF NOT v_fire THEN
            v_skipped := v_skipped + 1;
        END IF;
        v_request := NULL;
        v_replayed := NULL;
        v_error := NULL;
        IF v_fire THEN
            BEGIN
                SELECT k.request_id, k.replayed INTO v_request, v_replayed
                  FROM fairq.submit_keyed(s.tenant_name, (s.row).from_addr, (s.row).subject,
                       (s.row).body, (s.row).recipients, (s.row).body_is_html, v_now,
                       (s.row).priority, (s.row).max_attempts,
                       format('schedule:%s:%s', s.id, extract(epoch FROM v_due)::bigint),
                       NULL, (s.row).headers, (s.row).reply_to, (s.row).text_body,
                       (s.row).channel, (s.row).http_method, (s.row).http_url,
                       (s.row).http_headers, (s.row).http_body, (s.row).http_body_format,
                       (s.row).signing_secret, (s.row).unsubscribe) AS k;
            EXCEPTION WHEN OTHERS THEN
                -- Shown to the tenant: fairq's own words only, as above
                v_error := CASE WHEN SQLSTATE = '22023' THEN left(SQLERRM, 2000)
                    ELSE format('the database refused the submit (SQLSTATE %s)', SQLSTATE) END;
            END;
        END IF;
        UPDATE fairq.schedules sc SET
               next_fire_at = fairq.schedule_next_of(s.row, greatest(v_due, v_now)),
               last_fire_at = CASE WHEN v_fire THEN v_due ELSE sc.last_fire_at END,
               last_request_id = coalesce(v_request, sc.last_request_id),
               last_error = CASE WHEN v_fire THEN v_error ELSE sc.last_error END,
               fired = sc.fired + CASE WHEN v_request IS NOT NULL AND NOT v_replayed
                                       THEN 1 ELSE 0 END,
               skipped = sc.skipped + v_skipped
         WHERE sc.id = s.id;
        schedule_id := s.id;
        tenant := s.tenant_name;
        name := s.schedule_name;
        fire_at := CASE WHEN v_fire THEN v_due END;
        request_id := v_request;
        replayed := coalesce(v_replayed, false);
        skipped := v_skipped;
        error := v_error;
        RETURN NEXT;
    END LOOP;
END $$;
