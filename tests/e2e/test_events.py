#!/usr/bin/python3
"""test_events.py: every outcome becomes an event, in the transaction that
makes it (fairq.events, migration 0018; api/API.md, "Events"); a hard
bounce suppresses its address (fairq.suppressions, 0019).

Real fairqd, one fairq-sender and a real SMTP sink whose rules make some
recipients fail: what fairq.events holds is compared with what the
messages, the rejects and the requests say happened, one by one. Then
fairqd is killed mid-campaign and started again: each message sent has
exactly one "message.sent" event, none missing and none extra.
"""

import collections
import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

FAIRQD = {"poll_ms": 200, "retry_base_ms": 100, "retry_cap_ms": 200}
RULES = {"rules": [
    {"match": "gone@", "reply": "550 5.1.1 no such user"},
    {"match": "busy@", "reply": "451 4.3.0 try later", "at": "data"},
    {"match": "once@", "reply": "451 4.3.0 try later", "at": "data", "times": 1}]}


class EventsTest(E2ETest):

    def start(self):
        h = self.h
        self.sink = h.start_sink(rules=RULES)
        self.fairqd = h.start_fairqd(**FAIRQD)
        h.wait_schema()
        h.create_tenant("shop")
        h.create_tenant("other")
        h.start_sender("s1", self.sink, 8)

    def events(self, where="true"):
        """fairq.events rows as dicts, in reading order."""
        rows = self.h.sql(
            "SELECT e.id, t.name, coalesce(e.request_id, 0), coalesce(e.message_id, 0),"
            " e.type, coalesce(e.recipient, ''), coalesce(e.detail, '')"
            " FROM fairq.events e JOIN fairq.tenants t ON t.id = e.tenant_id"
            f" WHERE {where} ORDER BY e.txid, e.id")
        return [{"id": int(r[0]), "tenant": r[1], "request": int(r[2]), "message": int(r[3]),
                 "type": r[4], "recipient": r[5], "detail": r[6]} for r in rows]

    def test_every_outcome_once(self):
        """Sent, deferred then sent, deferred until dead, dead at once,
        rejected at split, cancelled; the request's split and done; each
        as many times as it happened, and for whom."""
        h = self.h
        self.start()
        recipients = ([{"to": f"ok{i}@ok.test", "fields": {"name": f"ok{i}", "n": i}}
                       for i in range(20)]
                      + [{"to": "once@ok.test", "fields": {"name": "once", "n": 20}},
                         {"to": "busy@ok.test", "fields": {"name": "busy", "n": 21}},
                         {"to": "gone@ok.test", "fields": {"name": "gone", "n": 22}},
                         {"to": "not an address", "fields": {"name": "bad", "n": 23}}])
        rid = h.submit("shop", recipients, max_attempts=3)
        h.wait_request(rid, "done", 60)
        # The hard bounce (550 5.1.1) suppressed its address for the
        # tenant: the next campaign to it refuses it at split
        again = h.submit("shop", [{"to": "GONE@ok.test", "fields": {"name": "g", "n": 1}},
                                  {"to": "ok1@ok.test", "fields": {"name": "o", "n": 2}}])
        h.wait_request(again, "done", 30)
        self.assertEqual([(e["type"], e["recipient"]) for e in self.events(
            f"request_id = {again} AND type IN ('message.suppressed', 'message.sent')")],
            [("message.suppressed", "GONE@ok.test"), ("message.sent", "ok1@ok.test")])
        self.assertEqual(h.sql("SELECT address, reason FROM fairq.suppressions"),
                         [["gone@ok.test", "bounce"]])
        # And the metrics count both: the bounce, and the recipient refused
        token = h.make_token()
        wanted = {'fairq_tenant_bounced_total{tenant="shop"} 1',
                  'fairq_tenant_suppressed_total{tenant="shop"} 1'}
        h.wait(lambda: wanted <= set(h.http("GET", "/metrics", token=token)[2].splitlines()),
               10, f"/metrics to show {wanted}", interval=0.2)

        # Another request, paused as it goes, then cancelled: what was not
        # sent by then is cancelled, each with its event
        later = h.submit("other", bulk=(300, "x", "ok.test"))
        h.admin("pause", later)
        h.admin("cancel", later)
        h.wait(lambda: any(e["type"] == "request.cancelled"
                           for e in self.events(f"request_id = {later}")), 10,
               "the cancel's event", interval=0.1)
        # And one cancelled before its send_at came: never split
        unsplit = h.submit("other", [{"to": "y@ok.test", "fields": {"name": "y", "n": 1}}],
                           send_at="now() + interval '1 hour'")
        h.admin("cancel", unsplit)

        events = self.events(f"request_id = {rid}")
        by_type = collections.Counter(e["type"] for e in events)
        messages = h.messages(f"request_id = {rid}")
        by_status = collections.Counter(m["status"] for m in messages.values())
        self.note(f"request {rid}: messages {dict(by_status)}; events {dict(by_type)}")
        # Each message's events, as its row says it went
        per_message = collections.defaultdict(list)
        for e in events:
            if e["message"]:
                per_message[e["message"]].append(e["type"])
        for mid, m in messages.items():
            local = m["recipient"].split("@")[0]
            want = {"once": ["message.deferred", "message.sent"],
                    "busy": ["message.deferred"] * 2 + ["message.dead"],
                    "gone": ["message.dead"]}.get(local, ["message.sent"])
            self.assertEqual(per_message.get(mid), want, f"events of {m['recipient']}")
        self.assertEqual(set(per_message), set(messages), "events of messages that do not exist")
        # The receiver's words come with a failure
        dead = [e for e in events if e["type"] == "message.dead"]
        self.assertIn("5.1.1", next(e["detail"] for e in dead if e["recipient"].startswith("gone")))
        # The one recipient refused at split: an event, no message
        rejected = [e for e in events if e["type"] == "message.rejected"]
        self.assertEqual([(e["recipient"], e["message"]) for e in rejected],
                         [("not an address", 0)])
        self.assertTrue(rejected[0]["detail"], "a rejection says why")
        # The request: split once, done once, after every message's outcome
        self.assertEqual(by_type["request.split"], 1)
        self.assertEqual(by_type["request.done"], 1)
        self.assertEqual(events[-1]["type"], "request.done")
        self.assertTrue(all(e["tenant"] == "shop" for e in events))

        # Each message of the cancelled request: sent before the pause, or
        # cancelled; one event each, as its row says
        cancelled = self.events(f"request_id = {later}")
        kinds = collections.Counter(e["type"] for e in cancelled)
        statuses = collections.Counter(m["status"] for m in h.messages(
            f"request_id = {later}").values())
        self.note(f"request {later}, paused and cancelled: messages {dict(statuses)}; "
                  f"events {dict(kinds)}")
        self.assertEqual(statuses["sent"] + statuses["cancelled"], 300)
        self.assertGreater(statuses["cancelled"], 0, "all was sent before the pause")
        self.assertEqual(kinds["message.cancelled"], statuses["cancelled"])
        self.assertEqual(kinds["message.sent"], statuses["sent"])
        self.assertEqual(kinds["request.cancelled"], 1)
        self.assertEqual(kinds["request.done"], 0)
        self.assertTrue(all(e["tenant"] == "other" for e in cancelled))
        self.assertEqual([e["type"] for e in self.events(f"request_id = {unsplit}")],
                         ["request.cancelled"])

    def test_kill9_none_lost_none_invented(self):
        """kill -9 fairqd a third into a campaign and start it again: each
        message sent has one "message.sent" event, whatever was delivered
        twice."""
        h = self.h
        self.start()
        total = 3000
        rid = h.submit("shop", bulk=(total, "r", "ok.test"))
        h.wait(lambda: self.sink.count() >= total // 3, 60, "a third at the sink",
               interval=0.05)
        self.fairqd.kill9()
        time.sleep(0.3)
        self.fairqd = h.start_fairqd(name="fairqd-2", **FAIRQD)
        h.wait_request(rid, "done", 90)
        sent = self.events(f"request_id = {rid} AND type = 'message.sent'")
        per_message = collections.Counter(e["message"] for e in sent)
        messages = h.messages(f"request_id = {rid}")
        deliveries = self.sink.count()
        self.note(f"{deliveries} deliveries at the sink for {total} messages "
                  f"({deliveries - total} duplicates across the kill); {len(sent)} sent events "
                  f"for {len(per_message)} messages")
        self.assertEqual(set(per_message), set(messages), "a sent message without its event")
        self.assertEqual(max(per_message.values()), 1, "a message with two sent events")
        self.assertEqual(len(sent), total)
        types = collections.Counter(e["type"] for e in self.events(f"request_id = {rid}"))
        self.assertEqual(types, {"message.sent": total, "request.split": 1, "request.done": 1})

    def test_sent_events_off(self):
        """sent_events = false: no message.sent events, every other one as
        before (the dead message's, the request's)."""
        h = self.h
        self.sink = h.start_sink(rules=RULES)
        self.fairqd = h.start_fairqd(sent_events="false", **FAIRQD)
        h.wait_schema()
        h.create_tenant("shop")
        h.start_sender("s1", self.sink, 8)
        rid = h.submit("shop", [{"to": f"ok{i}@ok.test", "fields": {"name": "o", "n": i}}
                                for i in range(10)]
                       + [{"to": "gone@ok.test", "fields": {"name": "g", "n": 10}}])
        h.wait_request(rid, "done", 30)
        types = collections.Counter(e["type"] for e in self.events(f"request_id = {rid}"))
        self.assertEqual(types, {"message.dead": 1, "request.split": 1, "request.done": 1})
        self.assertEqual(h.request(rid)["sent"], 10)


if __name__ == "__main__":
    fq_e2e.main()
