#!/usr/bin/python3
"""test_feedback_rates.py: each tenant's bounce and complaint rates of the
last day on GET /metrics (docs/feedback.md, "Bounce and complaint rates";
sql/fq_store_rates.h), from a real campaign.

Real fairqd (with sent_events = false: delivered mail is counted from the
requests' counters, not from message.sent events), one fairq-sender and a
real SMTP sink that refuses two recipients with 550 5.1.1: the hard bounces
count, suppress their addresses, and make the bounce rate; a tenant that
sent nothing has figures of 0 and no rate.
"""

import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

FAIRQD = {"poll_ms": 200, "retry_base_ms": 100, "retry_cap_ms": 200}
RULES = {"rules": [{"match": "gone", "reply": "550 5.1.1 no such user"}]}


class FeedbackRatesTest(E2ETest):

    def test_bounce_rate_after_a_campaign(self):
        h = self.h
        sink = h.start_sink(rules=RULES)
        h.start_fairqd(sent_events="false", **FAIRQD)
        h.wait_schema()
        h.create_tenant("shop")
        h.create_tenant("quiet")
        h.start_sender("s1", sink, 8)
        rid = h.submit("shop", [{"to": f"ok{i}@ok.test", "fields": {"name": "o", "n": i}}
                                for i in range(18)]
                       + [{"to": f"gone{i}@ok.test", "fields": {"name": "g", "n": i}}
                          for i in range(2)])
        h.wait_request(rid, "done", 60)
        # The first scrape after the campaign reads the figures (at most
        # once a minute, and this is the first)
        token = h.make_token()
        lines = set(h.http("GET", "/metrics", token=token)[2].splitlines())
        self.note("rates: " + ", ".join(sorted(
            line for line in lines if "_24h{" in line or "_rate{" in line)))
        for line in ['fairq_tenant_delivered_24h{tenant="shop"} 18',
                     'fairq_tenant_bounces_24h{tenant="shop"} 2',
                     'fairq_tenant_complaints_24h{tenant="shop"} 0',
                     'fairq_tenant_unsubscribes_24h{tenant="shop"} 0',
                     'fairq_tenant_suppressions{tenant="shop"} 2',
                     # 2 of the 20 that met a verdict
                     'fairq_tenant_bounce_rate{tenant="shop"} 0.1',
                     'fairq_tenant_complaint_rate{tenant="shop"} 0',
                     'fairq_tenant_delivered_24h{tenant="quiet"} 0']:
            self.assertIn(line, lines)
        self.assertFalse([line for line in lines if line.startswith(
            ('fairq_tenant_bounce_rate{tenant="quiet"}',
             'fairq_tenant_complaint_rate{tenant="quiet"}'))])
        self.assertTrue(any(line.startswith("fairq_tenant_rates_age_seconds ")
                            for line in lines))


if __name__ == "__main__":
    fq_e2e.main()
