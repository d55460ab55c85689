#!/usr/bin/python3
"""test_http_bulk.py: the operator's tools over the messages (api/API.md):
GET /v1/shape, the waiting messages by age; and POST /v1/messages/bulk,
against the real
fairqd, fairq-sender and SMTP sink: dead messages retried by their code
and delivered, pending ones cancelled by domain after a dry run, failed
ones rescheduled; batches and the cursor; a tenant's token confined to its
own tenant; and every malformed body answered 400 with nothing changed.
"""

import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, parse_time, recipients, submit_body  # noqa: E402

FAIRQD = {"poll_ms": 200, "retry_base_ms": 200, "retry_cap_ms": 1000}
DAY = 86400


class BulkActionsTest(APITest):

    def bulk(self, body, token=None, status=200, what="bulk"):
        answer = self.api("POST", "/v1/messages/bulk", body,
                          **({"token": token} if token else {}))
        return self.ok(answer, status, what)

    def status_counts(self, where):
        rows = self.h.sql("SELECT status, count(*) FROM fairq.messages m"
                          f" WHERE {where} GROUP BY 1 ORDER BY 1")
        return {status: int(n) for status, n in rows}

    def test_retry_dead_by_code(self):
        """Dead messages of a 5.1.1 are counted by a dry run, then retried
        in batches and delivered once the server takes them; another
        tenant's are left dead."""
        self.start(senders=1, **FAIRQD)
        self.sink.set_rules({"rules": [{"match": "nobody", "reply": "550 5.1.1 no such user"}]})
        self.put_tenant("acme")
        self.put_tenant("bravo")
        to = [{"to": f"nobody{i}@example.org", "fields": {"name": "N"}} for i in range(7)]
        to += [{"to": f"ann{i}@example.org", "fields": {"name": "A"}} for i in range(3)]
        rid = self.submit_ok(submit_body("acme", recipients=to))["id"]
        done = self.wait_request(rid, "done")
        self.assertEqual((done["sent"], done["dead"]), (3, 7), done)
        # bravo's dead message of the same code is not acme's to retry
        other = self.submit_ok(submit_body("bravo", recipients=[
            {"to": "nobody@example.org", "fields": {"name": "N"}}]))["id"]
        self.assertEqual(self.wait_request(other, "done")["dead"], 1)

        dry = self.bulk({"action": "retry", "tenant": "acme", "code": "5.1.1", "dry_run": True,
                         "batch": 3})
        self.assertEqual(dry, {"action": "retry", "dry_run": True, "matched": 7, "changed": 0,
                               "batches": 4, "complete": True, "next_after": None})
        self.assertEqual(self.get_request(rid)["dead"], 7, "a dry run changed something")

        self.sink.set_rules({})
        retried = self.bulk({"action": "retry", "tenant": "acme", "code": "5.1.1", "batch": 3})
        self.assertEqual((retried["matched"], retried["changed"], retried["batches"]),
                         (7, 7, 4), retried)
        final = self.wait_request(rid, "done")
        self.assertEqual((final["sent"], final["dead"]), (10, 0), final)
        self.assertEqual(self.get_request(other)["dead"], 1, "another tenant's message moved")
        delivered = sorted(t for r in self.sink.records() for t in r["to"]
                           if t.startswith("nobody") and t != "nobody@example.org")
        self.assertEqual(delivered, sorted(f"nobody{i}@example.org" for i in range(7)),
                         "each retried message delivered once")


    def test_cancel_by_domain_after_a_dry_run(self):
        """Pending messages at one domain are counted, then cancelled, the
        rest kept, with the counters and events; a second run finds
        nothing."""
        self.start(**FAIRQD)  # No sender: the messages stay pending
        self.put_tenant("acme")
        later = self.submit_ok(submit_body(
            "acme", recipients=recipients(4, domain="drop.example")
            + recipients(2, prefix="keep", domain="keep.example")))["id"]
        self.wait_split(later, 6)
        dry = self.bulk({"action": "cancel", "domain": "DROP.example", "dry_run": True})
        self.assertEqual((dry["matched"], dry["changed"]), (4, 0), dry)
        self.assertEqual(self.status_counts(f"request_id = {later}"), {"pending": 6})
        cancelled = self.bulk({"action": "cancel", "domain": "drop.example", "request": later})
        self.assertEqual((cancelled["matched"], cancelled["changed"]), (4, 4), cancelled)
        self.assertEqual(self.status_counts(f"request_id = {later}"),
                         {"cancelled": 4, "pending": 2})
        self.assertEqual(self.get_request(later)["cancelled"], 4)
        self.assertEqual(self.count("fairq.events", f"request_id = {later}"
                                    " AND type = 'message.cancelled'"), 4)
        again = self.bulk({"action": "cancel", "domain": "drop.example", "request": later})
        self.assertEqual((again["matched"], again["changed"], again["batches"]), (0, 0, 1))

    def test_reschedule_failed_and_tenant_tokens(self):
        """Failed messages' next attempt moves to tomorrow, then back to
        now and they are delivered; a tenant's token changes its own
        messages only, and names no other tenant."""
        # A retry far away: a 452 leaves each message failed for the test
        self.start(senders=1, **dict(FAIRQD, retry_base_ms=600000, retry_cap_ms=600000))
        self.sink.set_rules({"rules": [{"match": "user", "reply": "452 4.2.2 Mailbox full"}]})
        self.put_tenant("acme")
        self.put_tenant("bravo")
        ids = {}
        for tenant in ("acme", "bravo"):
            ids[tenant] = self.submit_ok(submit_body(tenant, recipients=recipients(3)))["id"]
        for rid in ids.values():
            self.h.wait(lambda: self.get_request(rid)["failed"] == 3, fq_api.DELIVERY_TIMEOUT_S,
                        f"request {rid}'s three 452s", interval=0.2)
        acme = self.new_token("acme")
        tomorrow = int(time.time()) + 2 * DAY
        moved = self.bulk({"action": "reschedule", "error": "MAILBOX FULL", "send_at": tomorrow},
                          token=acme)
        self.assertEqual((moved["matched"], moved["changed"]), (3, 3), moved)
        for m in self.messages_of(ids["acme"]):
            self.assertEqual(parse_time(m["next_attempt_at"]), tomorrow, m)
        for m in self.messages_of(ids["bravo"]):
            self.assertLess(parse_time(m["next_attempt_at"]), tomorrow - DAY / 2,
                            "acme's token moved bravo's message")
        self.assert_error(self.api("POST", "/v1/messages/bulk",
                                   {"action": "cancel", "tenant": "bravo"}, token=acme),
                          404, "another tenant named")
        self.assert_error(self.api("POST", "/v1/messages/bulk",
                                   {"action": "cancel", "request": ids["bravo"]}, token=acme),
                          404, "another tenant's request")
        # Now: delivered, and only them
        self.sink.set_rules({})
        now = self.bulk({"action": "reschedule", "code": "4.2.2", "tenant": "acme",
                         "send_at": 0})
        self.assertEqual(now["changed"], 3)
        final = self.wait_request(ids["acme"], "done")
        self.assertEqual(final["sent"], 3, final)
        self.assertEqual(self.status_counts(f"request_id = {ids['bravo']}"), {"failed": 3})

    def test_cursor_and_call_budget_fields(self):
        """after goes on past a message id; the counts are of the call."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme", recipients=recipients(5)))["id"]
        ids = sorted(m["id"] for m in self.wait_split(rid, 5))
        part = self.bulk({"action": "cancel", "request": rid, "after": ids[2], "dry_run": True})
        self.assertEqual(part["matched"], 2)
        whole = self.bulk({"action": "cancel", "request": rid, "batch": 1})
        self.assertEqual((whole["matched"], whole["changed"], whole["batches"]), (5, 5, 6))
        self.assertTrue(whole["complete"])

    def test_shape(self):
        """GET /v1/shape counts the waiting messages per tenant (and
        destination) by age, later ones apart; a tenant's token sees its
        own; bad queries are 400, an unknown tenant 404."""
        self.start(**FAIRQD)  # No sender: the messages stay pending
        self.put_tenant("acme")
        self.put_tenant("bravo")
        now = self.submit_ok(submit_body("acme", recipients=recipients(5)))["id"]
        self.wait_split(now, 5)
        old = self.submit_ok(submit_body("bravo", recipients=recipients(3)))["id"]
        self.wait_split(old, 3)
        self.h.sql("UPDATE fairq.requests SET created_at = now() - interval '2 hours',"
                   f" send_at = now() - interval '2 hours' WHERE id = {old}")
        shape = self.ok(self.api("GET", "/v1/shape"), 200, "shape")
        self.assertEqual(shape["edges_minutes"], [5, 10, 20, 40, 80, 160, 320, 640, 1280])
        rows = {r["tenant"]: r for r in shape["shape"]}
        self.assertEqual(rows["acme"], {"tenant": "acme", "destination": None, "total": 5,
                                        "later": 0, "ages": [5] + [0] * 9})
        self.assertEqual(rows["bravo"]["ages"], [0] * 5 + [3] + [0] * 4)  # 80..160 minutes
        self.assertEqual([r["tenant"] for r in shape["shape"]], ["acme", "bravo"])
        by = self.ok(self.api("GET", "/v1/shape?by=destination&tenant=bravo"), 200, "by")
        self.assertEqual([(r["tenant"], r["destination"], r["total"]) for r in by["shape"]],
                         [("bravo", "default", 3)])
        bravo = self.new_token("bravo")
        mine = self.ok(self.api("GET", "/v1/shape", token=bravo), 200, "bravo's")["shape"]
        self.assertEqual([r["tenant"] for r in mine], ["bravo"])
        self.assert_error(self.api("GET", "/v1/shape?tenant=acme", token=bravo), 404,
                          "another tenant's shape")
        self.assert_error(self.api("GET", "/v1/shape?tenant=nobody"), 404, "unknown tenant")
        for query in ("by=request", "tenant=Bad!", "limit=5", "by="):
            self.assert_error(self.api("GET", f"/v1/shape?{query}"), 400, query)

    def test_malformed_bodies(self):
        """Every malformed body is a 400 naming what is wrong (404 for an
        unknown tenant or request), and changes nothing."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme", recipients=recipients(3)))["id"]
        self.wait_split(rid, 3)
        cases = [
            ({}, "action"),
            ({"action": "delete", "tenant": "acme"}, "action"),
            ({"action": 1, "tenant": "acme"}, "action"),
            ({"action": "cancel"}, "name a message"),
            ({"action": "cancel", "status": "pending"}, "name a message"),
            ({"action": "cancel", "older_than": 60}, "name a message"),
            ({"action": "cancel", "tenant": "acme", "status": "sent"}, "sent"),
            ({"action": "cancel", "tenant": "acme", "status": "lost"}, "status"),
            ({"action": "retry", "tenant": "acme", "status": "pending"}, "pending"),
            ({"action": "reschedule", "tenant": "acme"}, "send_at"),
            ({"action": "cancel", "tenant": "acme", "send_at": 0}, "send_at"),
            ({"action": "reschedule", "tenant": "acme", "send_at": "tomorrow"}, "send_at"),
            ({"action": "reschedule", "tenant": "acme", "send_at": -1}, "send_at"),
            ({"action": "cancel", "tenant": "acme", "dry_run": "yes"}, "dry_run"),
            ({"action": "cancel", "tenant": "acme", "batch": 0}, "batch"),
            ({"action": "cancel", "tenant": "acme", "batch": 10001}, "batch"),
            ({"action": "cancel", "tenant": "acme", "batch": "10"}, "batch"),
            ({"action": "cancel", "tenant": "acme", "after": -1}, "after"),
            ({"action": "cancel", "tenant": "acme", "code": "55"}, "code"),
            ({"action": "cancel", "tenant": "acme", "code": "5.1"}, "code"),
            ({"action": "cancel", "tenant": "acme", "code": "9.1.1"}, "code"),
            ({"action": "cancel", "tenant": "acme", "code": 550}, "code"),
            ({"action": "cancel", "tenant": "acme", "error": ""}, "empty"),
            ({"action": "cancel", "tenant": "acme", "older_than": -5}, "older_than"),
            ({"action": "cancel", "tenant": "acme", "older_than": "1h"}, "older_than"),
            ({"action": "cancel", "tenant": "acme", "request": "7"}, "request"),
            ({"action": "cancel", "tenant": "acme", "request": 0}, "request"),
            ({"action": "cancel", "tenant": ["acme"]}, "tenant"),
            ({"action": "cancel", "tenant": "acme", "limit": 5}, "limit"),
        ]
        for body, what in cases:
            answer = self.api("POST", "/v1/messages/bulk", body)
            self.assert_error(answer, 400, f"{body}")
            self.assertIn(what, answer[2]["detail"], f"{body}: {answer[2]}")
        for body in ({"action": "cancel", "tenant": "nobody"},
                     {"action": "cancel", "request": 987654321}):
            self.assert_error(self.api("POST", "/v1/messages/bulk", body), 404, f"{body}")
        for raw in (b"{", b"[]", b"null", b'{"action": "cancel", "action": "retry"}'):
            self.assert_error(self.api("POST", "/v1/messages/bulk", raw=raw), 400, f"{raw!r}")
        self.assert_error(self.api("POST", "/v1/messages/bulk?dry_run=true",
                                   {"action": "cancel", "tenant": "acme"}), 400, "a query")
        self.assert_error_in(self.api("GET", "/v1/messages/bulk"), (400, 405), "GET of bulk")
        self.assert_error(self.api("POST", "/v1/messages/bulk", {"action": "cancel",
                                                                 "tenant": "acme"},
                                   token="fq_nope"), 401, "a bad token")
        self.assertEqual(self.status_counts(f"request_id = {rid}"), {"pending": 3})
        self.healthz_ok()


if __name__ == "__main__":
    fq_api.main()
