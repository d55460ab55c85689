#!/usr/bin/python3
"""test_fairness_cost.py: what a tenant's weight buys, by fairqd's
fairness_cost (docs/fairness.md, "What a message costs").

With fairness_cost = bytes, two tenants of equal weight, one sending 20 KB
messages and one 1 KB notices, get equal shares of the bytes sent, so the
small one sends about twenty messages to each of the big one's. With
fairness_cost = time, a tenant whose receiver takes 50 ms to answer each
message and one whose receiver answers at once get equal shares of the
senders' time. Real fairqd, one fairq-sender, a real SMTP sink; who got
what is read from the sink's arrival order while both are backlogged.
"""

import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, message_id_of  # noqa: E402

CONCURRENCY = 8
SLOW_S = 0.05  # The slow receiver's wait before it accepts each message

# Bodies of many short lines (SMTP lines stay short): about 20 KB and 1 KB
LINE = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, {{name}}.\n"
BIG_BODY = LINE * 300
SMALL_BODY = LINE * 15


class FairnessCostTest(E2ETest):

    def start(self, cost, tenants, rules=None):
        h = self.h
        self.sink = h.start_sink(rules=rules)
        h.start_fairqd(poll_ms=200, fairness_cost=cost)
        h.wait_schema()
        for name in tenants:
            h.create_tenant(name)
        h.start_sender("s1", self.sink, CONCURRENCY)

    def backlogged_window(self, first_done):
        """The tenants of the sink's lines while both were backlogged: from
        200 lines after both began to 100 lines before first_done's last."""
        tenant_of = self.h.message_tenants()
        tenants = [tenant_of[message_id_of(r)] for r in self.sink.records()]
        begun = max(tenants.index(t) for t in set(tenants))
        last = max(i for i, t in enumerate(tenants) if t == first_done)
        return tenants[begun + 200:last - 100]

    def test_bytes(self):
        """Equal weights buy equal bytes: 20 KB messages go out a
        twentieth as often as 1 KB ones."""
        h = self.h
        self.start("bytes", ["big", "small"])
        big_id, small_id = h.submit_together([
            h.submit_call("big", bulk=(400, "b", "big.test"), body=BIG_BODY),
            h.submit_call("small", bulk=(3000, "s", "small.test"), body=SMALL_BODY)])
        h.wait_request(small_id, "done", 120)
        window = self.backlogged_window("small")
        self.assertGreater(len(window), 1500, "too short a window to measure a share")
        big, small = window.count("big"), window.count("small")
        # Bytes as fairqd counts them: what a message renders to (body with
        # the name in, subject, addresses); the body is nearly all of it
        big_bytes = len(BIG_BODY.replace("{{name}}", "b100")) + 60
        small_bytes = len(SMALL_BODY.replace("{{name}}", "s1000")) + 60
        share = big * big_bytes / (big * big_bytes + small * small_bytes)
        self.note(f"fairness_cost bytes: {big} messages of {big_bytes} bytes and {small} of "
                  f"{small_bytes} in a window of {len(window)} deliveries; the big tenant's "
                  f"share of the bytes {share:.3f} (equal weights: 0.5; by message count it "
                  f"would have been {big_bytes / (big_bytes + small_bytes):.3f})")
        # Backlogged throughout: big still had mail to deliver after small's
        # last (read from the sink's order, not from a status read later, by
        # which time big may have finished)
        h.wait_request(big_id, "done", 120)
        tenant_of = h.message_tenants()
        order = [tenant_of[message_id_of(r)] for r in self.sink.records()]
        last_small = max(i for i, t in enumerate(order) if t == "small")
        self.assertIn("big", order[last_small + 1:],
                      "the big tenant ran out: the window was not backlogged")
        self.assertAlmostEqual(share, 0.5, delta=0.1)

    def test_time(self):
        """Equal weights buy equal sender time: a tenant whose receiver
        takes 50 ms a message sends far fewer than one answered at once."""
        h = self.h
        self.start("time", ["slowr", "fast"], rules={"rules": [
            {"match": "@slow.test", "reply": "250 OK", "at": "data", "delay": SLOW_S}]})
        slow_id, fast_id = h.submit_together([
            h.submit_call("slowr", bulk=(1500, "w", "slow.test")),
            h.submit_call("fast", bulk=(2500, "f", "fast.test"))])
        h.wait_request(fast_id, "done", 120)
        window = self.backlogged_window("fast")
        self.assertGreater(len(window), 1000, "too short a window to measure a share")
        slow, fast = window.count("slowr"), window.count("fast")
        self.note(f"fairness_cost time: {slow} messages to a receiver that waits {SLOW_S} s and "
                  f"{fast} to one that answers at once, in a window of {len(window)} "
                  f"deliveries (by message count each would have had half)")
        self.assertGreater(h.request(slow_id)["total"] - h.request(slow_id)["sent"], 0,
                           "the slow tenant ran out: the window was not backlogged")
        # Equal time: the slow tenant's 50 ms against the fast one's few ms
        # a message; by message count it would have been 0.5
        self.assertLess(slow / len(window), 0.25)
        self.assertGreater(slow, 0, "the slow tenant was starved")


if __name__ == "__main__":
    fq_e2e.main()
