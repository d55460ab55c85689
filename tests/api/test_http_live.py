#!/usr/bin/python3
"""test_http_live.py: what a web console reads of fairqd besides the
resources (api/API.md): GET /v1/whoami for both kinds of token; GET
/v1/senders with real fairq-senders connected, delivering to the SMTP
sink, and leaving; GET /v1/share after real deliveries, its counts summing
to what was dispatched, per tenant, a tenant token seeing its own only;
and the tenant object's bounce_rate and complaint_rate, as /metrics shows
them, after bounce and complaint reports.
"""

import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, recipients, submit_body  # noqa: E402

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

FAIRQD = {"poll_ms": 200}

SENDER_KEYS = {"name", "address", "connected", "credit", "inflight", "dispatched", "sent",
               "failed", "dead", "requeued"}
# Slots of a minute in /v1/share, and its default window
SLOTS_PER_MINUTE = 6
SHARE_MINUTES = 10


class LiveTest(APITest):

    def sender_list(self, token=fq_api.ADMIN):
        payload = self.ok(self.api("GET", "/v1/senders", token=token), what="senders")
        self.assertEqual(set(payload), {"senders"}, payload)
        for sender in payload["senders"]:
            self.assertEqual(set(sender), SENDER_KEYS, sender)
        return payload["senders"]

    def share(self, query="", token=fq_api.ADMIN):
        payload = self.ok(self.api("GET", "/v1/share" + query, token=token), what="share")
        self.assertEqual(set(payload), {"slot_s", "until", "tenants"}, payload)
        self.assertEqual(payload["slot_s"], 10, payload)
        names = [t["name"] for t in payload["tenants"]]
        self.assertEqual(names, sorted(names), payload)
        return payload

    def deliver(self, tenant, n, token=fq_api.ADMIN):
        """A request of n recipients of tenant, sent to the end."""
        request = self.submit_ok(submit_body(tenant, recipients=recipients(n, prefix=tenant)),
                                 token=token)
        done = self.wait_request(request["id"], ("done",))
        self.assertEqual(done["sent"], n, done)
        return request["id"]

    # -----------------------------------------------------------------
    # Who calls

    def test_whoami(self):
        """An admin token is told it is one, with no tenant; a tenant token
        its tenant; no token, or a revoked one, is a 401."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.assertEqual(self.ok(self.api("GET", "/v1/whoami"), what="admin"),
                         {"admin": True, "tenant": None})
        token = self.new_token("acme")
        self.assertEqual(self.ok(self.api("GET", "/v1/whoami", token=token), what="tenant"),
                         {"admin": False, "tenant": "acme"})
        self.assert_error(self.api("GET", "/v1/whoami", token=None), 401, "no token")
        self.assert_error(self.api("GET", "/v1/whoami", token="fq_" + "x" * 43), 401,
                          "an unknown token")
        self.assert_error(self.api("GET", "/v1/whoami?tenant=acme"), 400, "a query parameter")
        self.assert_error(self.api("POST", "/v1/whoami"), 405, "POST")

    # -----------------------------------------------------------------
    # The senders

    def test_senders_connected_delivering_and_gone(self):
        """Two real senders show, by name, connected with their credit;
        their counters add up to what they delivered; one stopped shows as
        gone with its counters kept. A tenant token gets 403."""
        self.start(senders=2, **FAIRQD)
        found = self.h.wait(lambda: (lambda s: s if len(s) == 2 and all(
                                x["connected"] for x in s) else None)(self.sender_list()),
                            fq_api.DELIVERY_TIMEOUT_S, "both senders listed", interval=0.2)
        self.assertEqual([s["name"] for s in found], ["s1", "s2"])
        for sender in found:
            self.assertTrue(sender["address"], sender)
            self.assertEqual(sender["inflight"], 0, sender)
        self.put_tenant("acme")
        acme = self.new_token("acme")
        self.assert_error(self.api("GET", "/v1/senders", token=acme), 403, "a tenant token")
        self.assert_error(self.api("GET", "/v1/senders?name=s1"), 400, "a query parameter")

        self.deliver("acme", 20)
        # The acks reach the metrics a flush after the request is done
        # (and the credit they give back with them)
        self.h.wait(lambda: (lambda s: sum(x["sent"] for x in s) == 20 and all(
                        x["credit"] > 0 and x["inflight"] == 0 for x in s))(self.sender_list()),
                    fq_api.DELIVERY_TIMEOUT_S, "20 acks counted and the credit back",
                    interval=0.2, describe=lambda: f"senders: {self.sender_list()}")
        senders = self.sender_list()
        self.assertEqual(sum(s["dispatched"] for s in senders), 20, senders)
        for sender in senders:
            self.assertEqual((sender["failed"], sender["dead"], sender["requeued"]), (0, 0, 0),
                             sender)
        # The sink heard them from both, as their counters say
        by_helo = {}
        for record in self.sink.records():
            by_helo[record["helo"]] = by_helo.get(record["helo"], 0) + 1
        self.assertEqual({s["name"]: s["sent"] for s in senders if s["sent"]},
                         {helo.split(".")[0]: n for helo, n in by_helo.items()})

        # s2 stops: it stays on show, gone, its counters kept
        self.h.stop(self.senders[1])  # The processes APITest.start made
        gone = self.h.wait(lambda: (lambda s: s if not s[1]["connected"] else None)(
                               self.sender_list()),
                           fq_api.DELIVERY_TIMEOUT_S, "s2 to leave", interval=0.2)
        self.assertEqual(gone[1]["name"], "s2")
        self.assertEqual((gone[1]["credit"], gone[1]["inflight"]), (0, 0), gone)
        self.assertEqual(gone[1]["sent"], senders[1]["sent"], gone)
        self.assertTrue(gone[0]["connected"], gone)

    # -----------------------------------------------------------------
    # The share of dispatch

    def test_share_after_deliveries(self):
        """After deliveries, each tenant's counts sum to what it was
        handed, in the newest slots; a tenant handed nothing is left out;
        a tenant token sees its own entry only; the window is as asked."""
        self.start(senders=1, **FAIRQD)
        empty = self.share()
        self.assertEqual(empty["tenants"], [], empty)
        for name in ("acme", "bravo", "charlie"):
            self.put_tenant(name)
        before = time.time()
        self.deliver("acme", 12)
        self.deliver("bravo", 5)
        payload = self.share()
        counts = {t["name"]: t["dispatched"] for t in payload["tenants"]}
        self.assertEqual(set(counts), {"acme", "bravo"}, payload)
        for name, n in (("acme", 12), ("bravo", 5)):
            self.assertEqual(len(counts[name]), SHARE_MINUTES * SLOTS_PER_MINUTE, payload)
            self.assertEqual(sum(counts[name]), n, payload)
            self.assertTrue(all(type(c) is int and c >= 0 for c in counts[name]), payload)
        # until: the end of the current slot, at most a slot ahead
        until = fq_api.parse_time(payload["until"])
        self.assertGreaterEqual(until, before - 1, payload)
        self.assertLessEqual(until, time.time() + 11, payload)

        # A minute: 6 slots, the same counts (the deliveries took less)
        minute = self.share("?minutes=1")
        for entry in minute["tenants"]:
            self.assertEqual(len(entry["dispatched"]), SLOTS_PER_MINUTE, minute)
        self.assertEqual({t["name"]: sum(t["dispatched"]) for t in minute["tenants"]},
                         {"acme": 12, "bravo": 5}, minute)

        # The longest window, asked for: as many slots as the default
        longest = self.share(f"?minutes={SHARE_MINUTES}")
        self.assertEqual({t["name"]: len(t["dispatched"]) for t in longest["tenants"]},
                         {"acme": SHARE_MINUTES * SLOTS_PER_MINUTE,
                          "bravo": SHARE_MINUTES * SLOTS_PER_MINUTE}, longest)

        # A tenant token: its own entry only, none for a tenant with none
        bravo = self.new_token("bravo")
        mine = self.share("?minutes=5", token=bravo)
        self.assertEqual([(t["name"], sum(t["dispatched"]), len(t["dispatched"]))
                          for t in mine["tenants"]], [("bravo", 5, 5 * SLOTS_PER_MINUTE)])
        charlie = self.new_token("charlie")
        self.assertEqual(self.share(token=charlie)["tenants"], [])

        for query, what in (("?minutes=0", "0"), ("?minutes=11", "11"),
                            ("?minutes=abc", "abc"), ("?minutes=", "empty"),
                            ("?minutes=1.5", "1.5")):
            answer = self.api("GET", "/v1/share" + query)
            self.assert_error(answer, 400, f"minutes {what}")
            self.assertIn("minutes must be an integer within 1..10", answer[2]["detail"])
        self.assert_error(self.api("GET", "/v1/share?tenant=acme"), 400, "an unknown parameter")
        self.assert_error(self.api("GET", "/v1/share", token=None), 401, "no token")

    # -----------------------------------------------------------------
    # The tenant's rates of the last day

    def test_tenant_bounce_and_complaint_rates(self):
        """A tenant with mail delivered, one bounce and one complaint
        reported shows the rates /metrics shows; a tenant with no mail in
        the day shows null."""
        self.start(senders=1, **FAIRQD)
        self.put_tenant("acme")
        self.put_tenant("bravo")
        # Nothing reads the rates before the tenant routes below: the
        # first read, at most once a minute, must see the reports
        request_id = self.deliver("acme", 4)
        messages = self.messages_of(request_id)
        for kind, message in (("bounce", messages[0]), ("complaint", messages[1])):
            report = {"type": kind, "message_id": f"<fairq.{message['id']}@acme.example>",
                      "recipient": message["to"], "status": "5.1.1",
                      "detail": "smtp; 550 5.1.1 no such user"}
            self.assertEqual(self.ok(self.api("POST", "/v1/feedback", report),
                                     what=kind)["recorded"], 1)
        acme = self.ok(self.api("GET", "/v1/tenants/acme"), what="acme")
        self.check_tenant(acme)
        # 1 bounce over 4 delivered, 1 complaint over 4 delivered
        self.assertAlmostEqual(acme["bounce_rate"], 0.25, places=6, msg=acme)
        self.assertAlmostEqual(acme["complaint_rate"], 0.25, places=6, msg=acme)
        listed = {t["name"]: t for t in self.ok(self.api("GET", "/v1/tenants"),
                                                what="tenants")["tenants"]}
        self.assertEqual((listed["acme"]["bounce_rate"], listed["acme"]["complaint_rate"]),
                         (acme["bounce_rate"], acme["complaint_rate"]))
        self.assertIsNone(listed["bravo"]["bounce_rate"], listed["bravo"])
        self.assertIsNone(listed["bravo"]["complaint_rate"], listed["bravo"])
        # The same figures /metrics shows
        status, _, text = self.api("GET", "/metrics")
        self.assertEqual(status, 200, text)
        families = {f.name: f for f in text_string_to_metric_families(text)}

        def metric(name, tenant):
            found = [s.value for s in families[name].samples if s.labels.get("tenant") == tenant]
            return found[0] if found else None
        self.assertAlmostEqual(metric("fairq_tenant_bounce_rate", "acme"), acme["bounce_rate"])
        self.assertAlmostEqual(metric("fairq_tenant_complaint_rate", "acme"),
                               acme["complaint_rate"])
        self.assertIsNone(metric("fairq_tenant_bounce_rate", "bravo"))
        # A tenant token reads its own rates
        token = self.new_token("acme")
        own = self.ok(self.api("GET", "/v1/tenants", token=token), what="own")["tenants"]
        self.assertEqual([(t["name"], t["bounce_rate"]) for t in own],
                         [("acme", acme["bounce_rate"])])


if __name__ == "__main__":
    fq_api.main()
