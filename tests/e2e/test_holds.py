#!/usr/bin/python3
"""test_holds.py: operators' holds, end to end (sql/migrations/0024_holds.sql;
docs/operations.md, "Holds"): real fairqd, fairq-sender and the SMTP sink,
the holds placed and released through the HTTP API (/v1/holds).

One fairqd run, the scenarios one after the other:

  1. A tenant held across a crash. Tenant A is held, then A and B submit
     20 recipients each. B's 20 arrive; A's stay pending at try_count 0,
     and five of them made failed and due (a retry come due while held)
     are neither claimed nor attempted. GET /v1/tenants/a says held, with
     no oldest due age (its work is held) while oldest_pending_age_s still
     counts; /metrics has fairq_tenant_held{tenant="a"} 1. fairqd is killed
     (SIGKILL) and another started: A is still held, nothing of A's goes.
     Released: A's 20 arrive, each exactly once, and a second release
     answers 404.
  2. A destination held: "heldd" (held.example) is held; A submits 10 to
     held.example and 10 to free.example. The free ones arrive, the held
     ones stay pending at try_count 0; GET /v1/destinations/heldd and
     /metrics say held. Released: they arrive, each once.
  3. All held: B submits 10; nothing arrives; fairq_held_all is 1.
     Released: the 10 arrive, each once.
"""

import re
import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

# poll_ms: the scheduler's fallback for a missed NOTIFY
FAIRQD = {"poll_ms": 200}
CONCURRENCY = 8
N_EACH = 20      # Scenario 1: A's and B's recipients
N_RETRIES = 5    # Of A's, made failed and due while held
N_DEST = 10      # Scenario 2: A's to each domain
N_ALL = 10       # Scenario 3: B's
# Ten polls without an arrival: nothing more is coming
QUIET_S = 2.0
DELIVER_TIMEOUT_S = 20
# The splitter reads the destinations' domains again when its copy is
# older than 1 s (fq_splitter.c): a request submitted this long after the
# PUT is split with the new domains
SPLITTER_DOMAINS_S = 1.5

SAMPLE = re.compile(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


class HoldsTest(E2ETest):

    def api(self, method, path, body=None):
        status, _, answer = self.h.http(method, path, body, token=self.token)
        return status, answer

    def metrics(self):
        status, text = self.api("GET", "/metrics")
        self.assertEqual(status, 200, f"GET /metrics: {status} {text!r:.300}")
        samples = {}
        for line in text.splitlines():
            m = SAMPLE.match(line)
            if m:
                samples[(m.group(1), frozenset(LABEL.findall(m.group(2) or "")))] = \
                    float(m.group(3))
        return samples

    def arrived(self, domain):
        """Message-IDs the sink accepted for recipients at domain."""
        return [r["message_id"] for r in self.sink.records()
                if any(to.endswith("@" + domain) for to in r["to"])]

    def wait_arrived(self, domain, n, what):
        self.h.wait(lambda: len(self.arrived(domain)) >= n, DELIVER_TIMEOUT_S, what,
                    interval=0.1, describe=lambda: f"{len(self.arrived(domain))} arrived")

    def untouched(self, request_id):
        """(messages, of them unsent with try_count 0) of the request."""
        messages = self.h.messages(f"request_id = {int(request_id)}").values()
        return len(messages), sum(1 for m in messages
                                  if m["status"] in ("pending", "failed") and m["try_count"] == 0)

    def check_once(self, domain, n):
        """n arrived at domain, each message once, and none more."""
        ids = self.arrived(domain)
        self.assertEqual(len(ids), n, f"{domain}: {len(ids)} arrived, not {n}")
        self.assertEqual(len(set(ids)), n, f"{domain}: a message arrived twice")

    def test_holds(self):
        h = self.h
        started = time.monotonic()
        self.sink = h.start_sink()
        self.fairqd = h.start_fairqd(**FAIRQD)
        h.wait_schema()
        h.create_tenant("a")
        h.create_tenant("b")
        self.token = h.make_token()
        h.start_sender("s1", self.sink, CONCURRENCY)

        # 1. A tenant held, across a crash
        status, hold = self.api("POST", "/v1/holds",
                                {"scope": "tenant", "name": "a", "reason": "abuse report",
                                 "by": "ops"})
        self.assertEqual(status, 201, hold)
        self.assertEqual((hold["scope"], hold["name"], hold["reason"], hold["created_by"]),
                         ("tenant", "a", "abuse report", "ops"))
        status, again = self.api("POST", "/v1/holds",
                                 {"scope": "tenant", "name": "a", "reason": "other"})
        self.assertEqual((status, again["reason"]), (200, "abuse report"), again)
        rid_a = h.submit("a", bulk=(N_EACH, "a", "a.example"))
        h.submit("b", bulk=(N_EACH, "b", "b.example"))
        self.wait_arrived("b.example", N_EACH, "B's messages, while A is held")
        # A retry of A's that comes due while A is held
        h.sql(f"UPDATE fairq.messages SET status = 'failed', next_attempt_at = now()"
              f" - interval '1 s' WHERE id IN (SELECT id FROM fairq.messages"
              f" WHERE request_id = {rid_a} ORDER BY id LIMIT {N_RETRIES})")
        time.sleep(QUIET_S)
        self.assertEqual(self.arrived("a.example"), [], "a held tenant's message was sent")
        self.assertEqual(self.untouched(rid_a), (N_EACH, N_EACH))
        self.assertEqual(int(h.scalar(
            f"SELECT count(*) FROM fairq.messages WHERE request_id = {rid_a}"
            f" AND status = 'failed' AND claimed_epoch IS NULL AND next_attempt_at <= now()")),
            N_RETRIES, "a held retry was claimed")
        status, tenant = self.api("GET", "/v1/tenants/a")
        self.assertEqual(status, 200, tenant)
        self.assertTrue(tenant["held"], tenant)
        self.assertEqual(tenant["oldest_due_age_s"], 0, tenant)
        self.assertGreaterEqual(tenant["oldest_pending_age_s"], 1, tenant)
        status, other = self.api("GET", "/v1/tenants/b")
        self.assertFalse(other["held"], other)
        samples = self.metrics()
        self.assertEqual(samples.get(("fairq_tenant_held", frozenset({("tenant", "a")}))), 1.0)
        self.assertEqual(samples.get(("fairq_tenant_held", frozenset({("tenant", "b")}))), 0.0)
        self.assertEqual(samples.get(("fairq_held_all", frozenset())), 0.0)

        self.fairqd.kill9()
        self.fairqd = h.start_fairqd(name="fairqd-2", **FAIRQD)
        time.sleep(QUIET_S)
        self.assertEqual(self.arrived("a.example"), [], "a restarted fairqd sent a held tenant's")
        self.assertEqual(self.untouched(rid_a), (N_EACH, N_EACH))
        status, listed = self.api("GET", "/v1/holds")
        self.assertEqual(status, 200, listed)
        self.assertEqual([(x["scope"], x["name"]) for x in listed["holds"]], [("tenant", "a")])

        released_at = time.monotonic()
        status, released = self.api("DELETE", "/v1/holds/tenant/a")
        self.assertEqual((status, released.get("released")), (200, True), released)
        self.wait_arrived("a.example", N_EACH, "A's messages once released")
        self.note(f"A's {N_EACH} arrived {time.monotonic() - released_at:.2f} s after release")
        status, _ = self.api("DELETE", "/v1/holds/tenant/a")
        self.assertEqual(status, 404)
        h.wait_request(rid_a, "done", DELIVER_TIMEOUT_S)
        time.sleep(QUIET_S / 2)
        self.check_once("a.example", N_EACH)
        self.check_once("b.example", N_EACH)

        # 2. A destination held
        status, body = self.api("PUT", "/v1/destinations/heldd", {"domains": ["held.example"]})
        self.assertEqual(status, 201, body)
        status, hold = self.api("POST", "/v1/holds", {"scope": "destination", "name": "heldd"})
        self.assertEqual(status, 201, hold)
        time.sleep(SPLITTER_DOMAINS_S)
        rid_held = h.submit("a", bulk=(N_DEST, "h", "held.example"))
        h.submit("a", bulk=(N_DEST, "f", "free.example"))
        self.wait_arrived("free.example", N_DEST, "a held destination's neighbours")
        time.sleep(QUIET_S)
        self.assertEqual(self.arrived("held.example"), [], "a held destination's message was sent")
        self.assertEqual(self.untouched(rid_held), (N_DEST, N_DEST))
        status, destination = self.api("GET", "/v1/destinations/heldd")
        self.assertTrue(destination["held"], destination)
        self.assertEqual(self.metrics().get(
            ("fairq_destination_held", frozenset({("destination", "heldd")}))), 1.0)
        status, _ = self.api("DELETE", "/v1/holds/destination/heldd")
        self.assertEqual(status, 200)
        self.wait_arrived("held.example", N_DEST, "a destination's messages once released")
        time.sleep(QUIET_S / 2)
        self.check_once("held.example", N_DEST)
        self.check_once("free.example", N_DEST)

        # 3. All held
        status, hold = self.api("POST", "/v1/holds", {"scope": "all", "reason": "relay down"})
        self.assertEqual((status, hold["name"]), (201, None), hold)
        rid_all = h.submit("b", bulk=(N_ALL, "all", "all.example"))
        time.sleep(QUIET_S)
        self.assertEqual(self.arrived("all.example"), [], "a message was sent while all is held")
        self.assertEqual(self.untouched(rid_all), (N_ALL, N_ALL))
        self.assertEqual(self.metrics().get(("fairq_held_all", frozenset())), 1.0)
        status, _ = self.api("DELETE", "/v1/holds/all")
        self.assertEqual(status, 200)
        self.wait_arrived("all.example", N_ALL, "every message once all is released")
        time.sleep(QUIET_S / 2)
        self.check_once("all.example", N_ALL)
        self.note(f"all three scenarios in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    fq_e2e.main()
