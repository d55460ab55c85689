#!/usr/bin/python3
"""test_delivery.py: what happens to each message, as a user sees it
(docs/delivery.md): retries of transient failures, dead messages after permanent
ones, delayed sends, cancelling a campaign, stable Message-IDs and the
rendering of templates, through real fairqd, fairq-senders and SMTP sink.

fairqd runs with short retry delays (retry_base_ms=200, retry_cap_ms=1000)
and a fast slow poll (poll_ms=200), so retries and send_at come due within
a second rather than minutes.
"""

import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, message_id_of  # noqa: E402

FAIRQD = {"retry_base_ms": 200, "retry_cap_ms": 1000, "poll_ms": 200}
CONCURRENCY = 16


class DeliveryTest(E2ETest):

    def start(self, tenants=("shop",), senders=1, rules=None):
        h = self.h
        self.sink = h.start_sink(rules=rules)
        h.start_fairqd(**FAIRQD)
        h.wait_schema()
        for name in tenants:
            h.create_tenant(name)
        for i in range(senders):
            h.start_sender(f"s{i + 1}", self.sink, CONCURRENCY)

    def by_recipient(self, records):
        """{recipient: [sink records]}."""
        out = {}
        for r in records:
            for to in r["to"]:
                out.setdefault(to, []).append(r)
        return out

    def check_message_ids(self, records, messages):
        """Every delivered message carries <fairq.ID@domain>, ID its own
        fairq.messages id (the row of that very recipient), the domain its
        From's, and no two messages share one."""
        seen = {}
        for r in records:
            mid = message_id_of(r)
            self.assertIsNotNone(mid, f"no fairq Message-ID: {r['message_id']!r}")
            self.assertIn(mid, messages, f"{r['message_id']} names no message")
            self.assertEqual(r["to"], [messages[mid]["recipient"]],
                             f"{r['message_id']} is another recipient's")
            domain = r["from"].rsplit("@", 1)[1]
            self.assertTrue(r["message_id"].endswith(f"@{domain}>"), r["message_id"])
            other = seen.setdefault(r["to"][0], r["message_id"])
            self.assertEqual(other, r["message_id"], "one recipient, two Message-IDs")
        self.assertEqual(len(set(seen.values())), len(seen), "two messages, one Message-ID")

    def test_transient_failures_are_retried(self):
        """The sink answers 451 to some recipients for a while, then 250:
        every message arrives, the refused ones after several attempts."""
        self.start(rules={"rules": [{"match": "later", "reply": "451 4.3.0 try again later"}]})
        h = self.h
        recipients = [f"ok{i}@example.test" for i in range(7)] + \
                     [f"later{i}@example.test" for i in range(3)]
        rid = h.submit("shop", [{"to": to, "fields": {"name": to.split("@")[0], "n": i}}
                                for i, to in enumerate(recipients)], max_attempts=10)
        later = "recipient LIKE 'later%'"
        # Refused twice or more, waiting for a retry with the server's words
        def refused_twice():
            ms = list(h.messages(later).values())
            return len(ms) == 3 and all(m["status"] == "failed" and m["try_count"] >= 2
                                        for m in ms)
        h.wait(refused_twice, 20, "the 451'd messages to fail twice",
               describe=lambda: f"{list(h.messages(later).values())}")
        failing = h.messages(later)
        self.assertEqual(len(failing), 3)
        for m in failing.values():
            self.assertIn("451 4.3.0 try again later", m["last_error"])
        delivered = {to for r in self.sink.records() for to in r["to"]}
        self.assertFalse(delivered & set(recipients[7:]), "a 451'd recipient was delivered")

        self.sink.set_rules({})  # The server accepts everything again
        h.wait_request(rid, "done", 20)
        records = self.sink.records()
        self.assertEqual(sorted(to for r in records for to in r["to"]), sorted(recipients))
        messages = h.messages(f"request_id = {rid}")
        self.check_message_ids(records, messages)
        tries = {m["recipient"]: m["try_count"] for m in messages.values()}
        self.note(f"try_count per recipient: {tries}")
        for m in messages.values():
            self.assertEqual(m["status"], "sent", m)
            if m["recipient"].startswith("later"):
                self.assertGreaterEqual(m["try_count"], 3, m)  # Two 451s at least, then 250
            else:
                self.assertEqual(m["try_count"], 1, m)
        request = h.request(rid)
        self.assertEqual((request["sent"], request["dead"], request["failed"]), (10, 0, 0))

    def test_permanent_failures_are_dead(self):
        """550 at RCPT or after the data: the message is dead at once, with
        the server's text kept; the others are delivered."""
        self.start(rules={"rules": [
            {"match": "nobody", "reply": "550 5.1.1 no such user"},
            {"match": "spam", "reply": "554 5.7.1 message refused as spam", "at": "data"}]})
        h = self.h
        recipients = ["ann@example.test", "nobody@example.test", "bob@example.test",
                      "spam@example.test", "cid@example.test"]
        rid = h.submit("shop", [{"to": to, "fields": {"name": to.split("@")[0], "n": i}}
                                for i, to in enumerate(recipients)])
        request = h.wait_request(rid, "done", 20)
        self.assertEqual((request["sent"], request["dead"], request["failed"]), (3, 2, 0))
        records = self.sink.records()
        self.assertEqual(sorted(to for r in records for to in r["to"]),
                         ["ann@example.test", "bob@example.test", "cid@example.test"])
        messages = h.messages(f"request_id = {rid}")
        self.check_message_ids(records, messages)
        by_to = {m["recipient"]: m for m in messages.values()}
        for to, text in (("nobody@example.test", "550 5.1.1 no such user"),
                         ("spam@example.test", "554 5.7.1 message refused as spam")):
            self.assertEqual(by_to[to]["status"], "dead", by_to[to])
            self.assertEqual(by_to[to]["try_count"], 1, "a permanent error is not retried")
            self.assertIn(text, by_to[to]["last_error"])
        self.note(f"last_error: {by_to['nobody@example.test']['last_error']!r}, "
                  f"{by_to['spam@example.test']['last_error']!r}")

    def test_send_at_delays_delivery(self):
        """A request with send_at three seconds ahead: none of its mail
        before then, all of it soon after; a request without waits for
        nothing."""
        self.start()
        h = self.h
        later_id, now_id = h.submit_together([
            h.submit_call("shop", [{"to": f"later{i}@example.test",
                                    "fields": {"name": f"l{i}", "n": i}} for i in range(5)],
                          send_at="now() + interval '3 seconds'"),
            h.submit_call("shop", [{"to": f"now{i}@example.test",
                                    "fields": {"name": f"n{i}", "n": i}} for i in range(5)])])
        send_at = h.request(later_id)["send_at"]
        h.wait_request(now_id, "done", 10, "the request without send_at to be sent at once")
        # Just before send_at: nothing of the delayed request yet
        time.sleep(max(0.0, send_at - 0.3 - time.time()))
        early = [r for r in self.sink.records() if r["to"][0].startswith("later")]
        self.assertEqual(early, [], "mail sent before its send_at")
        h.wait_request(later_id, "done", 15)
        records = self.sink.records()
        later = [r for r in records if r["to"][0].startswith("later")]
        self.assertEqual(len(later), 5)
        first, last = min(r["t"] for r in later), max(r["t"] for r in later)
        self.note(f"delayed mail arrived {first - send_at:.3f} .. {last - send_at:.3f} s after "
                  f"send_at (poll_ms {FAIRQD['poll_ms']})")
        self.assertGreaterEqual(first, send_at, "mail sent before its send_at")
        # Noticed by the slow poll (200 ms) at the latest, then sent at once
        self.assertLess(last, send_at + 3.0, "delayed mail late after its send_at")
        self.check_message_ids(records, h.messages())

    def test_cancel_mid_campaign(self):
        """Cancelling a campaign while it is sent: at most what was in flight
        arrives after the cancel, the request is cancelled, and another
        tenant's request goes on to the end."""
        senders = 2
        credit = senders * CONCURRENCY
        self.start(tenants=("big", "other"), senders=senders)
        h = self.h
        big_id, other_id = h.submit_together([
            h.submit_call("big", bulk=(4000, "big", "big.test")),
            h.submit_call("other", bulk=(1500, "other", "other.test"))])
        h.wait(lambda: sum(1 for r in self.sink.records() if r["to"][0].startswith("big"))
               >= 500, 60, "500 of the campaign's messages at the sink", interval=0.1)
        self.assertGreater(h.admin("cancel", big_id), 0, "nothing left to cancel")
        cancelled_at = time.time()  # The cancel is committed
        other_left = 1500 - h.request(other_id)["sent"]
        self.assertGreater(other_left, 100, "the other tenant was done before the cancel")
        h.wait_request(other_id, "done", 60, "the other tenant's request to finish")
        time.sleep(1.0)  # Anything late would have arrived by now

        records = self.sink.records()
        big = [r for r in records if r["to"][0].startswith("big")]
        after = [r for r in big if r["t"] > cancelled_at]
        request = h.request(big_id)
        self.note(f"campaign: {len(big)} delivered, {len(after)} of them after the cancel "
                  f"(credit {credit}); request {request}")
        self.assertLessEqual(len(after), credit,
                             "more of a cancelled request arrived than was in flight")
        self.assertEqual(request["status"], "cancelled")
        self.assertGreater(request["cancelled"], 0)
        self.assertEqual(request["sent"] + request["cancelled"], 4000, request)
        statuses = h.sql(f"SELECT status, count(*) FROM fairq.messages WHERE request_id = {big_id}"
                         " GROUP BY 1 ORDER BY 1")
        self.assertEqual({s for s, _ in statuses} - {"sent", "cancelled"}, set(), statuses)
        # Everything recorded as sent did arrive
        messages = h.messages()
        sent = {m["recipient"] for m in messages.values()
                if m["request_id"] == big_id and m["status"] == "sent"}
        self.assertEqual(sent - {r["to"][0] for r in big}, set())
        other = [r for r in records if r["to"][0].startswith("other")]
        self.assertEqual(len({r["to"][0] for r in other}), 1500)
        self.assertEqual(h.request(other_id)["sent"], 1500)
        self.check_message_ids(records, messages)

    def test_pause_and_resume(self):
        """Pausing a campaign stops its mail within a second (what was in
        flight, and what fairqd sent before it heard of the pause); resumed,
        it is sent to the end, each recipient once."""
        senders = 2
        self.start(senders=senders)
        h = self.h
        total = 3000
        rid = h.submit("shop", bulk=(total, "r", "example.test"))
        h.wait(lambda: self.sink.count() >= 300, 60, "300 messages at the sink", interval=0.05)
        self.assertEqual(h.admin("pause", rid), 1)
        paused_at = time.time()
        self.assertEqual(h.request(rid)["status"], "paused")
        time.sleep(2.0)
        during = [r for r in self.sink.records() if r["t"] > paused_at]
        late = [r for r in during if r["t"] > paused_at + 1.0]
        self.note(f"{len(during)} arrived after the pause, the last "
                  f"{max((r['t'] for r in during), default=paused_at) - paused_at:.3f} s after it")
        self.assertEqual(late, [], "mail of a paused request still sent a second later")
        self.assertLess(self.sink.count(), total)
        self.assertEqual(h.request(rid)["status"], "paused")

        self.assertEqual(h.admin("resume", rid), 1)
        h.wait_request(rid, "done", 60)
        records = self.sink.records()
        self.assertEqual(len(records), total, "a recipient missed or served twice")
        self.assertEqual(h.request(rid)["sent"], total)
        self.check_message_ids(records, h.messages())

    def test_templates_are_rendered(self):
        """Subject and body are rendered with each recipient's fields: as
        they are in plain text and in the Subject, HTML-escaped in an HTML
        body ({{ }}), raw with {{{ }}}."""
        self.start()
        h = self.h
        plain_id = h.submit(
            "shop",
            [{"to": "zoe@example.test",
              "fields": {"name": "Zoë", "code": "X<1>&'2'", "n": 42, "vip": True}},
             {"to": "max@example.test",
              "fields": {"name": "Max", "code": "B-7", "n": 7, "vip": False}}],
            subject="Café news for {{name}} ({{n}})",
            body="Dear {{ name }},\nyour code is {{code}}; order {{n}}; vip {{vip}}.\n")
        html_id = h.submit(
            "shop",
            [{"to": "tom@example.test",
              "fields": {"name": "<b>Tom & Jerry</b>", "raw": "<i>ok</i>",
                         "quote": "it's \"quoted\""}}],
            subject="News for {{name}}", html=True,
            body="<p>Hi {{name}}</p><div>{{{raw}}}</div><a title=\"{{quote}}\">x</a>")
        h.wait_request(plain_id, "done", 15)
        h.wait_request(html_id, "done", 15)
        records = self.sink.records()
        by_to = {r["to"][0]: r for r in records}
        self.assertEqual(len(records), 3)

        zoe = by_to["zoe@example.test"]
        self.assertEqual(zoe["subject"], "Café news for Zoë (42)")
        self.assertEqual(zoe["content_type"], "text/plain")
        self.assertEqual(zoe["body"], "Dear Zoë,\nyour code is X<1>&'2'; order 42; vip true.\n")
        self.assertEqual(zoe["from"], "news@shop.test")
        self.assertEqual(by_to["max@example.test"]["body"],
                         "Dear Max,\nyour code is B-7; order 7; vip false.\n")

        tom = by_to["tom@example.test"]
        self.assertEqual(tom["subject"], "News for <b>Tom & Jerry</b>")  # A header: verbatim
        self.assertEqual(tom["content_type"], "text/html")
        self.assertEqual(tom["body"].rstrip("\n"),
                         "<p>Hi &lt;b&gt;Tom &amp; Jerry&lt;/b&gt;</p><div><i>ok</i></div>"
                         "<a title=\"it&#39;s &quot;quoted&quot;\">x</a>")
        self.check_message_ids(records, h.messages())


if __name__ == "__main__":
    fq_e2e.main()
