#!/usr/bin/python3
"""test_http_operator_routes.py: the routes the end-to-end tests drive for
their effect on delivery (webhooks, schedules, holds, late feedback, the
global suppression list), here through the API client, so that each of
their answers is checked against api/openapi.yaml as well (fq_openapi.py):
an endpoint read, changed, given a new secret and removed; a schedule read
by id and by name; a hold of all placed and released; a global suppression
read back; a late bounce recorded against a message and the same report
posted again.
"""

import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, recipients, submit_body  # noqa: E402

FAIRQD = {"poll_ms": 200}


class OperatorRoutesTest(APITest):

    def test_webhook_endpoint_lifecycle(self):
        """An endpoint: read back as made, its URL and events changed, its
        secret rotated (the old one kept for a while), then removed."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        made = self.ok(self.api("POST", "/v1/tenants/acme/webhooks",
                                {"url": "https://hooks.acme.example/fairq",
                                 "events": ["message.dead"]}), 201, "register")
        path = f"/v1/tenants/acme/webhooks/{made['id']}"
        self.assertEqual(self.ok(self.api("GET", path), what="read")["url"],
                         "https://hooks.acme.example/fairq")
        changed = self.ok(self.api("PATCH", path, {"url": "https://hooks.acme.example/v2",
                                                   "events": None}), what="change")
        self.assertEqual((changed["url"], changed["events"]),
                         ("https://hooks.acme.example/v2", None))
        rotated = self.ok(self.api("POST", path + "/rotate"), what="rotate")
        self.assertNotEqual(rotated["secret"], made["secret"])
        self.assertIsNotNone(rotated["previous_secret_until"])
        status, _, _ = self.api("DELETE", path)
        self.assertEqual(status, 204)
        self.assert_error(self.api("GET", path), 404, "removed")

    def test_schedule_read_by_id_and_name(self):
        """A schedule reads the same by its id and by its name, with the
        request it submits."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        made = self.ok(self.api("POST", "/v1/tenants/acme/schedules", {
            "name": "weekly-digest", "cron": "0 9 * * mon", "time_zone": "Europe/Berlin",
            "request": {"from": "news@acme.example", "subject": "Your week",
                        "body": "Hello {{name}}", "recipients": recipients(1)}}), 201, "make")
        by_id = self.ok(self.api("GET", f"/v1/tenants/acme/schedules/{made['id']}"), what="id")
        by_name = self.ok(self.api("GET", "/v1/tenants/acme/schedules/weekly-digest"),
                          what="name")
        self.assertEqual(by_id, by_name)
        self.assertEqual(by_id["request"]["subject"], "Your week")

    def test_hold_of_all_released(self):
        """A hold of all shows in the list, and its release answers the hold
        as it was and empties the list."""
        self.start(**FAIRQD)
        self.ok(self.api("POST", "/v1/holds", {"scope": "all", "reason": "relay change"}), 201,
                "hold all")
        self.assertTrue(self.ok(self.api("GET", "/v1/holds"), what="list")["all"])
        released = self.ok(self.api("DELETE", "/v1/holds/all"), what="release all")
        self.assertEqual((released["scope"], released["reason"], released["released"]),
                         ("all", "relay change", True))
        self.assertEqual(self.ok(self.api("GET", "/v1/holds"), what="list")["holds"], [])
        self.assert_error(self.api("DELETE", "/v1/holds/all"), 404, "released twice")

    def test_global_suppression_read_back(self):
        """An address on the global list reads back with its reason."""
        self.start(**FAIRQD)
        self.ok(self.api("PUT", "/v1/suppressions/Bob@Example.net", {"detail": "asked by phone"}),
                201, "suppress")
        entry = self.ok(self.api("GET", "/v1/suppressions/bob@example.net"), what="read")
        self.assertEqual((entry["address"], entry["reason"]), ("bob@example.net", "manual"))

    def test_late_bounce_recorded_once(self):
        """A JSON bounce naming a message and its recipient is recorded (an
        event, the address suppressed for the tenant); posted again, it is
        a duplicate; one naming no fairq message is unmatched."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        request = self.submit_ok(submit_body("acme", recipients=recipients(1)))
        self.wait_split(request["id"], 1)
        message = self.messages_of(request["id"])[0]
        report = {"type": "bounce", "message_id": f"<fairq.{message['id']}@acme.example>",
                  "recipient": message["to"], "status": "5.1.1",
                  "detail": "smtp; 550 5.1.1 no such user"}
        first = self.ok(self.api("POST", "/v1/feedback", report), what="bounce")
        self.assertEqual((first["kind"], first["recorded"]), ("json", 1))
        again = self.ok(self.api("POST", "/v1/feedback", [report]), what="bounce again")
        self.assertEqual((again["recorded"], again["duplicates"]), (0, 1))
        stranger = dict(report, message_id="<someone.else@example.net>")
        self.assertEqual(self.ok(self.api("POST", "/v1/feedback", stranger),
                                 what="stranger")["unmatched"], 1)
        self.ok(self.api("GET", f"/v1/tenants/acme/suppressions/{message['to']}"),
                what="suppressed by the bounce")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            events = self.ok(self.api("GET", "/v1/events?tenant=acme&type=message.bounced"),
                             what="events")["events"]
            if events:
                break
            time.sleep(0.1)
        self.assertEqual([e["message"] for e in events], [message["id"]])


if __name__ == "__main__":
    fq_api.main()
