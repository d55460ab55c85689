#!/usr/bin/python3
"""test_latency.py: delivery and end-to-end times, end to end
(metrics/fq_latency.h; docs/operations.md, "Delivery times"; api/API.md,
a tenant's and a destination's "latency").

Real fairqd, one fairq-sender and a real SMTP sink that waits DELAY_S
before answering each message's DATA, so that every delivery takes at
least that long in the sender:

  1. A campaign of N messages to a named destination ("okdest",
     ok.test) is delivered. /metrics counts each delivery once in
     fairq_tenant_delivery_seconds and fairq_destination_delivery_seconds
     (as many as fairq_tenant_sent_total), their sums are at least
     N x DELAY_S, and the end-to-end times are at least the delivery
     times. The API's tenant and destination views show the same
     deliveries with quantiles, end to end at or above in the sender.
  2. A request whose send_at is SEND_LATER_S ahead is measured from its
     send_at, not from its accept: its end-to-end time is at least its
     delivery time and well under SEND_LATER_S.
"""

import re
import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

FAIRQD = {"poll_ms": 200}
DELAY_S = 0.2  # The sink's wait before each DATA reply
N = 12
CONCURRENCY = 4  # Fewer workers than messages: some wait for one, end to end
RULES = {"rules": [{"at": "data", "match": "@", "reply": "250 OK", "delay": DELAY_S}]}
OKDEST = {"rate": None, "burst": None, "max_inflight": None, "domains": ["ok.test"]}
# The splitter reads the destinations' domains again when its copy is older
# than 1 s (fq_splitter.c): a request submitted this long after the PUT is
# split with the new domains
SPLITTER_DOMAINS_S = 1.5
SEND_LATER_S = 4

SAMPLE = re.compile(r'^([a-z_]+)\{([^}]*)\} (\S+)$')
LABEL = re.compile(r'([a-z_]+)="([^"]*)"')


class LatencyTest(E2ETest):

    def metrics(self):
        """/metrics as {(name, frozenset of label pairs): value}."""
        status, _, text = self.h.http("GET", "/metrics", token=self.token)
        self.assertEqual(status, 200, f"GET /metrics: {status} {text!r:.300}")
        samples = {}
        for line in text.splitlines():
            m = SAMPLE.match(line)
            if m:
                samples[(m.group(1), frozenset(LABEL.findall(m.group(2))))] = float(m.group(3))
        return samples

    @staticmethod
    def get(samples, name, **labels):
        return samples.get((name, frozenset(labels.items())))

    def api(self, path):
        status, _, payload = self.h.http("GET", path, token=self.token)
        self.assertEqual(status, 200, f"GET {path}: {status} {payload!r:.300}")
        return payload

    def test_delivery_and_end_to_end(self):
        h = self.h
        sink = h.start_sink(rules=RULES)
        h.start_fairqd(**FAIRQD)
        h.wait_schema()
        self.token = h.make_token()
        status, _, payload = h.http("PUT", "/v1/destinations/okdest", OKDEST, token=self.token)
        self.assertIn(status, (200, 201), f"PUT /v1/destinations/okdest: {status} {payload!r:.300}")
        h.create_tenant("shop")
        h.create_tenant("later")
        h.start_sender("s1", sink, CONCURRENCY)
        time.sleep(SPLITTER_DOMAINS_S)

        # 1. A campaign through the slow sink
        rid = h.submit("shop", [{"to": f"r{i}@ok.test", "fields": {"name": "r", "n": i}}
                                for i in range(N)])
        h.wait_request(rid, "done", 30)
        samples = self.metrics()
        sent = self.get(samples, "fairq_tenant_sent_total", tenant="shop")
        self.assertEqual(sent, N)
        delivery_n = self.get(samples, "fairq_tenant_delivery_seconds_count", tenant="shop")
        delivery_sum = self.get(samples, "fairq_tenant_delivery_seconds_sum", tenant="shop")
        e2e_n = self.get(samples, "fairq_tenant_end_to_end_seconds_count", tenant="shop")
        e2e_sum = self.get(samples, "fairq_tenant_end_to_end_seconds_sum", tenant="shop")
        self.note(f"shop: {delivery_n:.0f} delivered, {delivery_sum:.3f} s in the sender,"
                  f" {e2e_sum:.3f} s end to end")
        self.assertEqual(delivery_n, N)
        self.assertEqual(e2e_n, N)
        self.assertGreaterEqual(delivery_sum, N * DELAY_S)
        self.assertGreaterEqual(e2e_sum, delivery_sum)
        # Every delivery took DELAY_S or more: none in a bucket below it
        self.assertEqual(self.get(samples, "fairq_tenant_delivery_seconds_bucket",
                                  tenant="shop", le="0.1"), 0)
        self.assertEqual(self.get(samples, "fairq_tenant_delivery_seconds_bucket",
                                  tenant="shop", le="+Inf"), N)
        route = {"destination": "okdest", "channel": "email"}
        self.assertEqual(self.get(samples, "fairq_destination_delivery_seconds_count", **route), N)
        self.assertEqual(self.get(samples, "fairq_destination_end_to_end_seconds_count", **route),
                         N)
        self.assertGreaterEqual(
            self.get(samples, "fairq_destination_delivery_seconds_sum", **route), N * DELAY_S)

        # The API: the same deliveries, over the last minutes
        latency = self.api("/v1/tenants/shop")["latency"]
        self.note(f"GET /v1/tenants/shop latency: {latency}")
        self.assertEqual(latency["delivered"], N)
        self.assertGreater(latency["window_s"], 0)
        self.assertGreater(latency["delivery_s"]["p50"], 0.1)
        self.assertGreaterEqual(latency["delivery_s"]["p99"], latency["delivery_s"]["p50"])
        self.assertGreaterEqual(latency["end_to_end_s"]["p99"], latency["delivery_s"]["p99"])
        live = self.api("/v1/destinations/okdest")["live"]["latency"]
        self.assertEqual(live["delivered"], N)
        self.assertGreater(live["delivery_s"]["p50"], 0.1)
        # A tenant that delivered nothing has no quantiles
        quiet = self.api("/v1/tenants/later")["latency"]
        self.assertEqual(quiet["delivered"], 0)
        self.assertEqual(quiet["delivery_s"], {"p50": None, "p95": None, "p99": None})
        self.assertEqual(quiet["end_to_end_s"], {"p50": None, "p95": None, "p99": None})

        # 2. Scheduled for later: measured from its send_at
        accepted = time.monotonic()
        later = h.submit("later", [{"to": "soon@ok.test", "fields": {"name": "s", "n": 1}}],
                         send_at=f"now() + interval '{SEND_LATER_S} s'")
        h.wait_request(later, "done", 30)
        self.assertGreaterEqual(time.monotonic() - accepted, SEND_LATER_S)
        samples = self.metrics()
        delivery = self.get(samples, "fairq_tenant_delivery_seconds_sum", tenant="later")
        e2e = self.get(samples, "fairq_tenant_end_to_end_seconds_sum", tenant="later")
        self.note(f"later: {delivery:.3f} s in the sender, {e2e:.3f} s end to end")
        self.assertEqual(self.get(samples, "fairq_tenant_end_to_end_seconds_count",
                                  tenant="later"), 1)
        self.assertGreaterEqual(delivery, DELAY_S)
        # Clocks of the database and of fairqd may differ by a millisecond
        self.assertGreaterEqual(e2e + 0.001, delivery)
        self.assertLess(e2e, SEND_LATER_S / 2)


if __name__ == "__main__":
    fq_e2e.main()
