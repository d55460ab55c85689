#!/usr/bin/python3
"""test_destinations.py: per-destination traffic shaping, end to end
(sql/migrations/0016_destinations.sql; docs/fairness.md, "Destinations";
shaping/fq_shaper.h): real fairqd, fairq-sender and the SMTP sink, the
destinations configured through the HTTP API (PUT /v1/destinations/NAME)
and watched through it (GET /v1/destinations[/NAME], their "live" figures)
and /metrics.

Two destinations are configured before anything is submitted: "slow"
(slow.example, 20/s, burst 5) and "busy" (busy.example, 50/s, burst 5);
fast.example is named by none, so it is "default"'s, which has no limit.
One fairqd run, the scenarios one after the other (each a subTest):

  1. Rate and independence. Tenant A (weight 1) submits one request of
     150 recipients at slow.example and 150 at fast.example, interleaved;
     tenant B (weight 3) 150 at slow.example. One sender of 20 workers.
     From the sink's arrival times: (a) all of fast.example arrives while
     slow.example has had at most a third of its 300 (A's fast mail is not
     stuck behind its own slow mail, nor behind B's); (b) slow.example
     arrives at 20/s (14..24/s from its 20th arrival to its last;
     unshaped, it would be hundreds a second); (c) while A and B both have
     slow.example mail pending, B gets 2..4.5 times A's share (weights 3
     and 1); (d) every message is sent at its first attempt, and each is
     stamped with its destination (fairq.messages.destination).
  2. Throttling replies. A fresh sender delivers to a second sink that
     turns its first connection away with "421 4.7.0" at the greeting and
     answers the first two RCPTs to busy.example with "421 4.7.0", the
     next three with "451 4.7.1 rate limited": six throttling replies at
     three stages. 40 messages to busy.example: all are sent, each at
     attempt 1 (a deferral costs none); GET /v1/destinations/busy counts
     6 throttled and 6 deferred, and the first look that shows them shows
     the destination "throttled" below its configured 50/s; /metrics has
     fairq_destination_throttled_total{destination="busy"} 6.
  4. A relay's limit: a sender started with --max-rate 10/s (and 20
     workers) is handed no more than 10 messages a second: 40 messages to
     an unlimited destination arrive at 10/s (7..11.5/s past the first
     second's burst; unpaced, hundreds a second), each at attempt 1.
  3. Config errors are refused: a rate "fast", burst without a rate, and a
     domain another destination owns (for a new destination, and for
     "slow", whose own row the refused write must not leave changed) are
     4xx answers naming the fault, and GET shows the destinations as they
     were.

Tenant send budgets (sql/migrations/0017_tenant_send_budgets.sql;
docs/fairness.md, "Tenant send budgets"), set by SQL on fairq.tenants,
each a test of its own (TenantSendBudgetsTest):

  5. A send rate: tenant A at 20/s, tenant B unlimited, 120 recipients
     each submitted together. A's arrivals past its first second's burst
     come at 20/s (18..22/s); all of B's are in while A has had at most
     half of its own (A's limit does not slow B); every message is sent
     at its first attempt.
  6. A daily quota across a crash: tenant Q with a quota of 30 submits
     50. Exactly 30 arrive; 20 stay pending at try_count 0; /metrics has
     fairq_tenant_send_held{tenant="q"} 1 and fairq_tenant_sent_today 30.
     kill -9 fairqd and start another: it counts the day's reservations
     as sent, so still 30 at the sink, 20 pending. The quota raised to 40:
     exactly 10 more. fairq.tenant_send_days never reserves past the
     quota.
"""

import re
import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

# poll_ms: how often the scheduler reports each destination's live
# figures (what GET /v1/destinations and /metrics show), and its fallback
# for a missed NOTIFY
FAIRQD = {"poll_ms": 200}
CONCURRENCY = 20  # The one sender's workers: far more than 20/s needs

# The destinations as configured (PUT bodies)
SLOW = {"rate": "20/s", "burst": 5, "max_inflight": None, "domains": ["slow.example"]}
SLOW_PER_S = 20.0
BUSY = {"rate": "50/s", "burst": 5, "max_inflight": None, "domains": ["busy.example"]}
BUSY_PER_S = 50.0

# The splitter reads the destinations' domains again when its copy is
# older than 1 s (fq_splitter.c, S_DOMAINS_MS): a request submitted this
# long after the PUT is split with the new domains
SPLITTER_DOMAINS_S = 1.5

# Scenario 1
N_EACH = 150  # A's slow and fast recipients, and B's slow ones
WEIGHT_A, WEIGHT_B = 1, 3
# (a) all of fast.example must be in while slow.example has had at most
# this share of its mail (at 20/s that is 5 s; the fast mail takes 1-2)
FAST_DONE_BEFORE_SLOW_SHARE = 1 / 3
# (b) the rate, measured from this slow.example arrival (1-based) to the
# last: past the burst and the start, when both requests take part
RATE_FROM = 20
RATE_MIN, RATE_MAX = 14.0, 24.0
# (c) B's share against A's among slow.example arrivals from B's first
# (A's request may be split first and take the burst alone), but not before
# this one (0-based: past the burst of 5), to B's last
SHARE_FROM = 10
RATIO_MIN, RATIO_MAX = 2.0, 4.5
# Scenario 1's requests take 15 s at 20/s; this is four times that
RUN_TIMEOUT_S = 60

# Scenario 2: the second sink's rules, six throttling replies in all
N_BUSY = 40
BUSY_RULES = {"rules": [
    {"match": "127.0.0.1", "at": "connect", "reply": "421 4.7.0 Try again later", "times": 1},
    {"match": "@busy.example", "reply": "421 4.7.0 Try again later", "times": 2},
    {"match": "@busy.example", "reply": "451 4.7.1 rate limited", "times": 3},
]}
BUSY_THROTTLES = sum(rule["times"] for rule in BUSY_RULES["rules"])
BUSY_TIMEOUT_S = 40
LOOK_EVERY_S = 0.1  # How often GET /v1/destinations/busy is asked meanwhile

# Scenario 4: a sender whose relay takes 10 a second (fairq-sender's
# max_rate), and 20 workers that could go far faster
RELAY_RATE = "10/s"
N_RELAY = 40
RELAY_BURST = 10  # One second's worth: the first 10 may go at once
RELAY_RATE_MIN, RELAY_RATE_MAX = 7.0, 11.5

# How long the scheduler may take to report a change (a few polls)
REPORT_TIMEOUT_S = 10

# Tenant send budgets: scenario 5, a tenant's send rate
TENANT_RATE = 20  # A's send_rate_count per 1 s: its burst is one second's worth
N_TENANT = 120    # A's and B's recipients
TENANT_RATE_MIN, TENANT_RATE_MAX = 18.0, 22.0  # 20/s, +-10 %
# B's last arrival comes while A has had at most this share of its own
# (at 20/s, 120 take 5 s; B's alone take about one)
B_DONE_BEFORE_A_SHARE = 0.5
# Scenario 6, a daily quota: Q's quota, what it submits, the quota raised
QUOTA, N_QUOTA, QUOTA_RAISED = 30, 50, 40
QUIET_S = 2.0  # Ten polls without an arrival: nothing more is coming
QUOTA_TIMEOUT_S = 20
# The raised quota is read at the next full poll; the tenant's first
# message may then take this long to arrive, its last this long
RAISED_FIRST_S, RAISED_LAST_S = 1.0, 3.0

SAMPLE = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def domain_of(record):
    return record["to"][0].rsplit("@", 1)[1]


class ShapingTest(E2ETest):
    """The helpers of this file's tests (no test of its own)."""

    def api(self, method, path, body=None):
        return self.h.http(method, path, body, token=self.token)

    def metrics(self):
        """/metrics as {(name, frozenset of label pairs): value}."""
        status, _, text = self.api("GET", "/metrics")
        self.assertEqual(status, 200, f"GET /metrics: {status} {text!r:.300}")
        samples = {}
        for line in text.splitlines():
            m = SAMPLE.match(line)
            if m:
                labels = frozenset(LABEL.findall(m.group(2)))
                samples[(m.group(1), labels)] = float(m.group(3))
        return samples

    def check_first_attempt(self, request_ids, total):
        """Every message of the requests sent, at its first attempt."""
        messages = self.h.messages(
            f"request_id IN ({', '.join(str(int(r)) for r in request_ids)})").values()
        self.assertEqual(len(messages), total)
        wrong = [m for m in messages if (m["status"], m["try_count"]) != ("sent", 1)]
        self.assertEqual(wrong[:3], [], f"{len(wrong)} of {total} messages not sent at their "
                                        "first attempt (a deferral costs no attempt)")


class DestinationsTest(ShapingTest):

    # -----------------------------------------------------------------
    # Helpers

    def put(self, name, body):
        status, _, payload = self.api("PUT", f"/v1/destinations/{name}", body)
        self.assertIn(status, (200, 201), f"PUT /v1/destinations/{name}: {status} {payload!r:.500}")
        return payload

    def destination(self, name):
        """GET /v1/destinations/NAME."""
        status, _, payload = self.api("GET", f"/v1/destinations/{name}")
        self.assertEqual(status, 200, f"GET /v1/destinations/{name}: {status} {payload!r:.500}")
        return payload

    def submit(self, tenant, recipients):
        """POST /v1/requests; returns the new request's id."""
        status, _, payload = self.api("POST", "/v1/requests", {
            "tenant": tenant, "from": f"news@{tenant}.test", "subject": "Hello {{name}}",
            "body": "Dear {{name}},\nthis is message {{n}}.\n",
            "recipients": [{"to": to, "fields": {"name": to.split("@")[0], "n": i}}
                           for i, to in enumerate(recipients)]})
        self.assertEqual(status, 202, f"submit of {tenant}: {status} {payload!r:.500}")
        return payload["id"]

    def destination_metric(self, name, destination, **labels):
        key = (name, frozenset(dict(labels, destination=destination).items()))
        return self.metrics().get(key)

    def settled(self, name, predicate, what):
        """The live figures of destination name once the scheduler reports
        it idle (nothing ready, nothing in flight) and predicate holds:
        they are reported at each poll, so a look just after a request is
        done may still show its last messages in flight."""
        def look():
            live = self.destination(name)["live"]
            return live if live["ready"] == 0 and live["inflight"] == 0 and predicate(live) \
                else None
        return self.h.wait(look, REPORT_TIMEOUT_S,
                           f"GET /v1/destinations/{name} to show it idle with {what}",
                           interval=0.2, describe=lambda: f"{self.destination(name)}")

    def wait_done(self, request_id, timeout, what):
        h = self.h
        h.wait(lambda: h.api_request(request_id)["status"] == "done", timeout,
               f"{what} (request {request_id}) to be done", interval=0.2,
               describe=lambda: f"request {h.api_request(request_id)}")

    # -----------------------------------------------------------------
    # The test

    def test_destinations(self):
        h = self.h
        started = time.monotonic()
        self.sink = h.start_sink()
        h.start_fairqd(**FAIRQD)
        h.wait_schema()
        h.create_tenant("a", weight=WEIGHT_A)
        h.create_tenant("b", weight=WEIGHT_B)
        self.token = h.make_token()
        self.sender = h.start_sender("s1", self.sink, CONCURRENCY)

        configured_at = time.monotonic()
        self.put("slow", SLOW)
        self.put("busy", BUSY)
        # The scheduler has read them once it reports their rates
        h.wait(lambda: (self.destination_metric("fairq_destination_configured_rate", "slow"),
                        self.destination_metric("fairq_destination_configured_rate", "busy"))
               == (SLOW_PER_S, BUSY_PER_S), REPORT_TIMEOUT_S,
               "the scheduler to report slow's and busy's configured rates", interval=0.1)
        # and the splitters once their copy of the domains is older than 1 s
        time.sleep(max(0.0, configured_at + SPLITTER_DOMAINS_S - time.monotonic()))
        self.note(f"started and configured in {time.monotonic() - started:.1f} s")

        with self.subTest("scenario 1: a destination's rate holds back its own mail only, "
                          "shared by weight"):
            self.scenario_rate()
        with self.subTest("scenario 2: throttling replies slow a destination, cost no attempt"):
            self.scenario_throttling()
        with self.subTest("scenario 4: a sender is handed no more than its relay takes"):
            self.scenario_relay_limit()
        with self.subTest("scenario 3: bad destination configurations are refused"):
            self.scenario_refused()
        self.note(f"whole run {time.monotonic() - started:.1f} s")

    # -----------------------------------------------------------------
    # 1. Rate and independence

    def scenario_rate(self):
        h = self.h
        # A's one request interleaves its slow and fast recipients
        a_recipients = [to for i in range(N_EACH)
                        for to in (f"a{i}@slow.example", f"a{i}@fast.example")]
        b_recipients = [f"b{i}@slow.example" for i in range(N_EACH)]
        submitted_at = time.time()
        a_id = self.submit("a", a_recipients)
        b_id = self.submit("b", b_recipients)
        self.wait_done(b_id, RUN_TIMEOUT_S, "B's slow.example request")
        self.wait_done(a_id, RUN_TIMEOUT_S, "A's mixed request")

        records = self.sink.records()
        delivered = sorted(to for r in records for to in r["to"])
        self.assertEqual(delivered, sorted(a_recipients + b_recipients),
                         "each recipient delivered exactly once")
        fast = [r for r in records if domain_of(r) == "fast.example"]
        slow = sorted((r for r in records if domain_of(r) == "slow.example"),
                      key=lambda r: r["t"])
        slow_t = [r["t"] for r in slow]
        fast_last = max(r["t"] for r in fast)
        slow_by_then = sum(1 for t in slow_t if t <= fast_last)
        # (b) the rate over the middle and end of slow.example's run
        rate = (len(slow_t) - RATE_FROM) / (slow_t[-1] - slow_t[RATE_FROM - 1])
        # (c) the shares while both A and B have slow.example mail pending
        tenants = [r["to"][0][0] for r in slow]
        b_first = tenants.index("b")
        b_last = max(i for i, t in enumerate(tenants) if t == "b")
        share_from = max(SHARE_FROM, b_first)
        window = tenants[share_from:b_last + 1]
        a_n, b_n = window.count("a"), window.count("b")
        ratio = b_n / a_n if a_n else float("inf")
        self.note(f"fast.example: {len(fast)} in {fast_last - submitted_at:.2f} s after the "
                  f"submit, by when slow.example had {slow_by_then} of {len(slow)}; "
                  f"slow.example: first {slow_t[0] - submitted_at:.2f} s, last "
                  f"{slow_t[-1] - submitted_at:.2f} s after the submit, {rate:.2f}/s from its "
                  f"{RATE_FROM}th arrival to its last (configured {SLOW_PER_S:g}/s); B/A among "
                  f"slow arrivals {share_from}..{b_last}: {b_n}/{a_n} = {ratio:.2f} "
                  f"(weights {WEIGHT_B}:{WEIGHT_A})")

        # (a) A's fast mail went out while its own slow mail waited
        self.assertEqual(len(fast), N_EACH)
        self.assertLessEqual(slow_by_then, len(slow) * FAST_DONE_BEFORE_SLOW_SHARE,
                             "fast.example's mail waited behind slow.example's budget")
        # (b)
        self.assertGreaterEqual(rate, RATE_MIN, "slow.example went slower than its rate")
        self.assertLessEqual(rate, RATE_MAX, "slow.example went faster than its rate")
        # (c)
        self.assertGreaterEqual(ratio, RATIO_MIN, "B got less than its weight's share")
        self.assertLessEqual(ratio, RATIO_MAX, "B got more than its weight's share")
        # (d) and the stamps the scheduler's lanes went by
        self.check_first_attempt([a_id, b_id], 3 * N_EACH)
        stamps = {(d, domain): int(n) for d, domain, n in h.sql(
            "SELECT destination, split_part(recipient, '@', 2), count(*) FROM fairq.messages"
            f" WHERE request_id IN ({int(a_id)}, {int(b_id)}) GROUP BY 1, 2")}
        self.assertEqual(stamps, {("slow", "slow.example"): 2 * N_EACH,
                                  ("default", "fast.example"): N_EACH},
                         "messages stamped with the wrong destination")
        live = self.settled("slow", lambda live: live["sent"] == 2 * N_EACH,
                            f"{2 * N_EACH} released")
        self.assertEqual((live["state"], live["deferred"], live["throttled"]), ("open", 0, 0),
                         live)

    # -----------------------------------------------------------------
    # 2. Throttling replies

    def scenario_throttling(self):
        h = self.h
        # A sender that has no connection open yet, to a sink whose first
        # connection is turned away: the connect rule applies exactly once
        self.assertEqual(h.stop(self.sender), 0, "sender s1 did not stop cleanly")
        sink = h.start_sink("busy_sink", rules=BUSY_RULES)
        self.busy_sender = h.start_sender("s2", sink, CONCURRENCY)
        before = self.destination("busy")
        self.assertEqual((before["live"]["state"], before["live"]["effective_rate"],
                          before["live"]["throttled"], before["live"]["deferred"]),
                         ("open", BUSY_PER_S, 0, 0), before)

        recipients = [f"c{i}@busy.example" for i in range(N_BUSY)]
        submitted_at = time.time()
        rid = self.submit("a", recipients)
        looks = []  # (seconds after the submit, live figures)
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while h.api_request(rid)["status"] != "done":
            h.check_alive()
            if time.monotonic() > deadline:
                self.fail(f"the busy.example request was not done within {BUSY_TIMEOUT_S} s: "
                          f"{h.api_request(rid)}; busy {self.destination('busy')['live']}")
            looks.append((time.time() - submitted_at, self.destination("busy")["live"]))
            time.sleep(LOOK_EVERY_S)
        done_at = time.time() - submitted_at
        after = self.settled("busy", lambda live: live["throttled"] >= BUSY_THROTTLES,
                             f"{BUSY_THROTTLES} throttling replies")
        # The state holds for 10 quiet seconds at least (the climb from half
        # the rate back to it): the look at the end shows it too, should
        # the request have been done before a report showed the replies
        looks.append((time.time() - submitted_at, after))
        first = next(((at, live) for at, live in looks if live["throttled"] > 0), None)
        throttled_total = self.destination_metric("fairq_destination_throttled_total", "busy")
        records = sink.records()
        arrived = sorted(r["t"] - submitted_at for r in records)
        self.note(f"busy.example: {len(records)} delivered in {done_at:.2f} s; first look "
                  f"showing throttling replies {first}; at the end {after}; /metrics "
                  f"throttled_total {throttled_total}; arrivals "
                  f"{arrived[0]:.2f} .. {arrived[-1]:.2f} s after the submit")

        self.assertEqual(sorted(to for r in records for to in r["to"]), sorted(recipients),
                         "each busy.example recipient delivered exactly once")
        self.check_first_attempt([rid], N_BUSY)
        self.assertIsNotNone(first, f"no look at busy while it was throttled: {looks[-3:]}")
        self.assertEqual(first[1]["state"], "throttled", first)
        self.assertLess(first[1]["effective_rate"], BUSY_PER_S, first)
        # Each reply of the rules is one throttling reply, and one message
        # given back without an attempt
        self.assertEqual((after["throttled"], after["deferred"]),
                         (BUSY_THROTTLES, BUSY_THROTTLES), after)
        self.assertEqual(throttled_total, BUSY_THROTTLES,
                         'fairq_destination_throttled_total{destination="busy"}')

    # -----------------------------------------------------------------
    # 4. A relay's limit

    def scenario_relay_limit(self):
        h = self.h
        self.assertEqual(h.stop(self.busy_sender), 0, "sender s2 did not stop cleanly")
        sink = h.start_sink("relay_sink")
        h.start_sender("s3", sink, CONCURRENCY, extra=["--max-rate", RELAY_RATE])
        recipients = [f"r{i}@fast.example" for i in range(N_RELAY)]
        submitted_at = time.time()
        rid = self.submit("a", recipients)
        self.wait_done(rid, RUN_TIMEOUT_S, "the request to the paced sender")
        records = sink.records()
        arrived = sorted(r["t"] - submitted_at for r in records)
        rate = (len(arrived) - RELAY_BURST) / (arrived[-1] - arrived[RELAY_BURST - 1])
        self.note(f"sender s3 at {RELAY_RATE}: {len(records)} delivered, "
                  f"{arrived[0]:.2f} .. {arrived[-1]:.2f} s after the submit, {rate:.2f}/s "
                  f"past the first {RELAY_BURST}")
        self.assertEqual(sorted(to for r in records for to in r["to"]), sorted(recipients),
                         "each recipient delivered exactly once")
        self.assertGreaterEqual(rate, RELAY_RATE_MIN, "the paced sender went slower than 10/s")
        self.assertLessEqual(rate, RELAY_RATE_MAX, "the paced sender was handed more than 10/s")
        self.check_first_attempt([rid], N_RELAY)

    # -----------------------------------------------------------------
    # 3. Refused configurations

    def scenario_refused(self):
        h = self.h
        before = {name: self.destination(name) for name in ("slow", "busy")}
        domains_before = h.sql("SELECT domain, destination FROM fairq.destination_domains"
                               " ORDER BY 1")
        for what, name, body, statuses, detail in (
                ("a rate that is no rate", "slow", dict(SLOW, rate="fast"), (400,),
                 'rate "fast"'),
                ("a burst without a rate", "slow", dict(SLOW, rate=None), (400,),
                 "burst needs a rate"),
                ("a new destination with a domain slow owns", "other",
                 {"rate": "10/s", "domains": ["fresh.example", "slow.example"]}, (409,),
                 'domain "slow.example" belongs to destination "slow"'),
                ("slow taking busy's domain", "slow",
                 dict(SLOW, rate="10/s", domains=["busy.example"]), (409,),
                 'domain "busy.example" belongs to destination "busy"')):
            status, _, payload = self.api("PUT", f"/v1/destinations/{name}", body)
            self.assertIn(status, statuses, f"{what}: {status} {payload!r:.300}")
            self.assertIsInstance(payload, dict, f"{what}: {payload!r:.300}")
            self.assertIn(detail, payload.get("detail", ""), f"{what}: {payload}")
        status, _, payload = self.api("GET", "/v1/destinations/other")
        self.assertEqual(status, 404, f"a refused PUT made destination other: {payload}")
        for name, was in before.items():
            now = self.destination(name)
            fields = ("name", "rate", "burst", "max_inflight", "domains", "updated_at")
            self.assertEqual({k: now[k] for k in fields}, {k: was[k] for k in fields},
                             f"a refused PUT changed {name}")
        self.assertEqual(h.sql("SELECT domain, destination FROM fairq.destination_domains"
                               " ORDER BY 1"), domains_before)
        status, _, listing = self.api("GET", "/v1/destinations")
        self.assertEqual(status, 200, listing)
        names = sorted(d["name"] for d in listing["destinations"])
        self.assertEqual(names, ["busy", "default", "slow"], listing)
        self.assertEqual(before["slow"]["rate"], SLOW["rate"])
        self.assertEqual(before["slow"]["domains"], SLOW["domains"])
        self.assertEqual(before["busy"]["burst"], BUSY["burst"])


class TenantSendBudgetsTest(ShapingTest):
    """Scenarios 5 and 6: a tenant's send rate and daily quota."""

    def start(self, tenants, limits):
        """The sink, fairqd, one sender; tenants made, then given limits
        (SQL: the SET list of fairq.tenants by name) before any submit."""
        h = self.h
        self.sink = h.start_sink()
        self.fairqd = h.start_fairqd(**FAIRQD)
        h.wait_schema()
        for name in tenants:
            h.create_tenant(name)
        for name, sets in limits.items():
            h.sql(f"UPDATE fairq.tenants SET {sets} WHERE name = {fq_e2e.lit(name)}")
        self.token = h.make_token()
        h.start_sender("s1", self.sink, CONCURRENCY)

    def budget_metrics(self, tenant):
        """(fairq_tenant_send_held, fairq_tenant_sent_today) of tenant."""
        samples = self.metrics()
        label = frozenset({("tenant", tenant)})
        return (samples.get(("fairq_tenant_send_held", label)),
                samples.get(("fairq_tenant_sent_today", label)))

    def wait_budget_metrics(self, tenant, wanted):
        return self.h.wait(lambda: self.budget_metrics(tenant) == wanted, REPORT_TIMEOUT_S,
                           f"/metrics to show {tenant}'s (held, sent_today) as {wanted}",
                           interval=0.1, describe=lambda: f"{self.budget_metrics(tenant)}")

    def message_counts(self, request_id):
        """(sent, pending at try_count 0, others) of the request."""
        row = self.h.sql(
            "SELECT count(*) FILTER (WHERE status = 'sent'),"
            " count(*) FILTER (WHERE status = 'pending' AND try_count = 0),"
            " count(*) FILTER (WHERE NOT (status = 'sent'"
            "   OR (status = 'pending' AND try_count = 0)))"
            f" FROM fairq.messages WHERE request_id = {int(request_id)}")[0]
        return tuple(int(v) for v in row)

    def sent_today(self, tenant):
        """GET /v1/tenants/NAME's sent_today: the count the leader recorded."""
        status, _, payload = self.api("GET", f"/v1/tenants/{tenant}")
        self.assertEqual(status, 200, f"GET /v1/tenants/{tenant}: {status} {payload!r:.300}")
        return payload["sent_today"]

    def send_days(self, tenant):
        """[(day, reserved, used)] of tenant in fairq.tenant_send_days."""
        return [(r[0], int(r[1]), int(r[2])) for r in self.h.sql(
            "SELECT d.day, d.reserved, d.used FROM fairq.tenant_send_days d"
            " JOIN fairq.tenants t ON t.id = d.tenant_id"
            f" WHERE t.name = {fq_e2e.lit(tenant)} ORDER BY d.day")]

    # -----------------------------------------------------------------
    # 5. A tenant's send rate

    def test_tenant_send_rate(self):
        h = self.h
        started = time.monotonic()
        self.start(("a", "b"), {"a": f"send_rate_count = {TENANT_RATE}, send_rate_period_s = 1"})
        submitted_at = time.time()
        a_id, b_id = h.submit_together([
            h.submit_call("a", bulk=(N_TENANT, "a", "example.test")),
            h.submit_call("b", bulk=(N_TENANT, "b", "example.test"))])
        h.wait_request(b_id, "done", RUN_TIMEOUT_S, "B's request to be done")
        h.wait_request(a_id, "done", RUN_TIMEOUT_S, "A's request to be done")

        records = self.sink.records()
        self.assertEqual(sorted(to for r in records for to in r["to"]),
                         sorted([f"a{i}@example.test" for i in range(1, N_TENANT + 1)]
                                + [f"b{i}@example.test" for i in range(1, N_TENANT + 1)]),
                         "each recipient delivered exactly once")
        a_t = sorted(r["t"] for r in records if r["to"][0].startswith("a"))
        b_t = sorted(r["t"] for r in records if r["to"][0].startswith("b"))
        # Past the burst: from A's TENANT_RATE-th arrival to its last
        rate = (len(a_t) - TENANT_RATE) / (a_t[-1] - a_t[TENANT_RATE - 1])
        a_by_b_done = sum(1 for t in a_t if t <= b_t[-1])
        self.note(f"A ({TENANT_RATE}/s): first {a_t[0] - submitted_at:.2f} s, "
                  f"{TENANT_RATE}th {a_t[TENANT_RATE - 1] - submitted_at:.2f} s, last "
                  f"{a_t[-1] - submitted_at:.2f} s after the submit, {rate:.2f}/s past the "
                  f"burst; B (unlimited): first {b_t[0] - submitted_at:.2f} s, last "
                  f"{b_t[-1] - submitted_at:.2f} s, by when A had {a_by_b_done} of {len(a_t)}")
        self.assertGreaterEqual(rate, TENANT_RATE_MIN, "A went slower than its send rate")
        self.assertLessEqual(rate, TENANT_RATE_MAX, "A went faster than its send rate")
        self.assertLessEqual(a_by_b_done, N_TENANT * B_DONE_BEFORE_A_SHARE,
                             "B's mail waited behind A's send rate")
        self.check_first_attempt([a_id, b_id], 2 * N_TENANT)
        self.note(f"whole test {time.monotonic() - started:.1f} s")

    # -----------------------------------------------------------------
    # 6. A daily quota, across a crash

    def test_tenant_daily_quota_restart(self):
        h = self.h
        started = time.monotonic()
        self.start(("q",), {"q": f"daily_quota = {QUOTA}"})
        submitted_at = time.time()
        rid = h.submit("q", bulk=(N_QUOTA, "q", "example.test"))
        held = (QUOTA, N_QUOTA - QUOTA, 0)
        h.wait(lambda: self.message_counts(rid) == held, QUOTA_TIMEOUT_S,
               f"{QUOTA} of {N_QUOTA} messages sent, the rest pending", interval=0.1,
               describe=lambda: f"(sent, pending untried, others) {self.message_counts(rid)}")
        self.wait_budget_metrics("q", (1, QUOTA))
        time.sleep(QUIET_S)
        at_sink = self.sink.count()
        days = self.send_days("q")
        self.note(f"quota {QUOTA}: {at_sink} at the sink {time.time() - submitted_at:.2f} s "
                  f"after the submit; (sent, pending untried, others) "
                  f"{self.message_counts(rid)}; tenant_send_days {days}")
        self.assertEqual(at_sink, QUOTA, "the daily quota was exceeded")
        self.assertEqual(self.message_counts(rid), held)
        self.assertEqual(self.budget_metrics("q"), (1, QUOTA))
        self.assertEqual([d[1:] for d in days], [(QUOTA, QUOTA)], "(reserved, used) today")
        self.assertEqual(self.sent_today("q"), QUOTA, "GET /v1/tenants/q sent_today")

        # A crash, and another fairqd: it counts the day's reservations
        self.fairqd.kill9()
        killed_at = time.monotonic()
        self.fairqd = h.start_fairqd(name="fairqd-2", **FAIRQD)
        self.wait_budget_metrics("q", (1, QUOTA))
        leading_s = time.monotonic() - killed_at
        time.sleep(QUIET_S)
        at_sink = self.sink.count()
        days = self.send_days("q")
        api_sent_today = self.sent_today("q")
        self.note(f"after kill -9 and a restart (reporting q held in {leading_s:.1f} s): "
                  f"{at_sink} at the sink; (sent, pending untried, others) "
                  f"{self.message_counts(rid)}; tenant_send_days {days}; GET /v1/tenants/q "
                  f"sent_today {api_sent_today}")
        self.assertEqual(at_sink, QUOTA, "a restarted fairqd sent past the daily quota")
        self.assertEqual(self.message_counts(rid), held)
        self.assertLessEqual(days[0][1], QUOTA, f"reserved past the quota: {days}")
        # The new leader counts the earlier reservations as sent, and
        # records that count at its polls (QUIET_S is ten of them): the
        # figure the API shows must not fall back to 0
        with self.subTest("the restarted fairqd records the day's count"):
            self.assertEqual([d[1:] for d in days], [(QUOTA, QUOTA)],
                             "(reserved, used) today, after the restart")
            self.assertEqual(api_sent_today, QUOTA,
                             "GET /v1/tenants/q sent_today after the restart")

        # The quota raised: exactly the difference goes out
        raised_at = time.time()
        h.sql(f"UPDATE fairq.tenants SET daily_quota = {QUOTA_RAISED} WHERE name = 'q'")
        h.wait(lambda: self.sink.count() >= QUOTA_RAISED, QUOTA_TIMEOUT_S,
               f"{QUOTA_RAISED} at the sink once the quota is raised", interval=0.05,
               describe=lambda: f"{self.sink.count()} at the sink")
        h.wait(lambda: self.message_counts(rid)[0] == QUOTA_RAISED, QUOTA_TIMEOUT_S,
               f"{QUOTA_RAISED} messages sent", interval=0.1,
               describe=lambda: f"(sent, pending untried, others) {self.message_counts(rid)}")
        self.wait_budget_metrics("q", (1, QUOTA_RAISED))
        time.sleep(QUIET_S)
        records = self.sink.records()
        more = sorted(r["t"] - raised_at for r in records[QUOTA:])
        days = self.send_days("q")
        self.note(f"quota raised to {QUOTA_RAISED}: {len(records)} at the sink, the "
                  f"{len(more)} more {more[0]:.2f} .. {more[-1]:.2f} s after the raise; "
                  f"(sent, pending untried, others) {self.message_counts(rid)}; "
                  f"tenant_send_days {days}")
        self.assertEqual(len(records), QUOTA_RAISED, "the raised quota was exceeded")
        self.assertEqual(len({r["message_id"] for r in records}), QUOTA_RAISED,
                         "a message delivered twice")
        self.assertEqual(self.message_counts(rid),
                         (QUOTA_RAISED, N_QUOTA - QUOTA_RAISED, 0))
        self.assertLessEqual(more[0], RAISED_FIRST_S, "the raised quota was read late")
        self.assertLessEqual(more[-1], RAISED_LAST_S, "the raised quota was handed out late")
        self.assertEqual(len(days), 1, days)
        self.assertLessEqual(days[0][1], QUOTA_RAISED, f"reserved past the quota: {days}")
        self.note(f"whole test {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    fq_e2e.main()
