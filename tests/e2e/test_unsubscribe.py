#!/usr/bin/python3
"""test_unsubscribe.py: one-click unsubscribe (RFC 8058; docs/feedback.md,
"One-click unsubscribe"; migration 0021).

Real fairqd with its public unsubscribe listener, one fairq-sender and a
real SMTP sink. A request with unsubscribe on delivers mail carrying
List-Unsubscribe (the listener's URL and a mailto) and
List-Unsubscribe-Post, and the URL in its body through {{unsubscribe_url}}.
A second campaign to the same recipient waits, split, with no sender. A
tampered token is refused and changes nothing; a GET shows the page and
changes nothing; the POST suppresses the address for the tenant, cancels
its pending message (not another recipient's), and reports
message.unsubscribed; a second POST changes nothing more; a third
campaign refuses the address at split. fairqd refuses to start with a
secret file others may read.
"""

import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api"))
import fq_e2e  # noqa: E402
import fq_openapi  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

FAIRQD = {"poll_ms": 200, "retry_base_ms": 100, "retry_cap_ms": 200}
MAILTO = "leave@lists.shop.test"
LINK = re.compile(r"<(http://127\.0\.0\.1:\d+/u/([A-Za-z0-9_-]+))>, "
                  r"<mailto:" + re.escape(MAILTO) + r"\?subject=unsubscribe>")


class UnsubscribeTest(E2ETest):

    def secret_file(self, mode=0o600):
        path = os.path.join(self.h.dir, "unsubscribe.secret")
        with open(path, "w", encoding="ascii") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(path, mode)
        return path

    def start(self):
        h = self.h
        self.sink = h.start_sink()
        self.port = fq_e2e.free_port()
        self.fairqd = h.start_fairqd(
            unsubscribe_listen=f"127.0.0.1:{self.port}",
            unsubscribe_url=f"http://127.0.0.1:{self.port}/",
            unsubscribe_secret_file=self.secret_file(), unsubscribe_mailto=MAILTO, **FAIRQD)
        h.wait_schema()
        h.create_tenant("shop")
        h.create_tenant("other")
        self.token = h.make_token("shop")

    def page(self, method, url, body=None, content_type="application/x-www-form-urlencoded"):
        """One call to the unsubscribe listener: (status, headers, text).
        An answer about a link is checked against api/openapi.yaml."""
        request = urllib.request.Request(url, data=body, method=method)
        if body is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, headers, text = answer.status, answer.headers, answer.read().decode()
        except urllib.error.HTTPError as error:
            status, headers, text = error.code, error.headers, error.read().decode()
        path = urllib.parse.urlsplit(url).path
        if path.startswith("/u/"):
            content_type = headers.get("Content-Type", "")
            payload = json.loads(text) if content_type.startswith("application/json") else text
            problem = fq_openapi.spec().check(method, path, status, payload, content_type)
            self.assertIsNone(problem, "the answer disagrees with api/openapi.yaml")
        return status, headers, text

    def submit(self, recipients, **fields):
        status, _, body = self.h.http("POST", "/v1/requests", token=self.token, body=dict({
            "from": "news@shop.test", "subject": "Hello {{name}}",
            "body": "Dear {{name}},\nto leave: {{unsubscribe_url}}\n",
            "recipients": recipients}, **fields))
        self.assertEqual(status, 202, body)
        return body["id"]

    def state(self):
        """What an unsubscribe may change: messages, suppressions, events."""
        h = self.h
        return (h.sql("SELECT id, status FROM fairq.messages ORDER BY id"),
                h.sql("SELECT tenant_id, address, reason FROM fairq.suppressions ORDER BY 2"),
                h.scalar("SELECT count(*) FROM fairq.events"))

    def test_one_click(self):
        h = self.h
        self.start()
        # A recipient's own unsubscribe_url is not the link: fairq's is
        first = self.submit([{"to": "Ann@ok.test", "fields": {"name": "Ann",
                                                              "unsubscribe_url": "http://x"}},
                             {"to": "bob@ok.test", "fields": {"name": "Bob"}}],
                            unsubscribe=True)
        sender = h.start_sender("s1", self.sink, 4)
        h.wait_request(first, "done", 60)
        self.assertEqual(h.request(first)["sent"], 2, h.request(first))
        h.wait(lambda: self.sink.count() == 2, 10, "both messages in the sink")
        records = {r["to"][0]: r for r in self.sink.records()}
        self.assertEqual(sorted(records), ["Ann@ok.test", "bob@ok.test"])
        ann = records["Ann@ok.test"]
        m = LINK.fullmatch(ann["headers"].get("List-Unsubscribe", ""))
        self.assertTrue(m, ann["headers"])
        url, token = m.group(1), m.group(2)
        self.assertEqual(ann["headers"].get("List-Unsubscribe-Post"),
                         "List-Unsubscribe=One-Click")
        self.assertIn(f"to leave: {url}\n", ann["body"])
        self.assertNotIn("http://x", ann["body"])
        # Each recipient has a link of their own, which names no id
        bob_url = LINK.fullmatch(records["bob@ok.test"]["headers"]["List-Unsubscribe"]).group(1)
        self.assertNotEqual(url, bob_url)
        self.assertNotIn("ann", token.lower())

        # A second campaign to Ann and Carl, split while no sender runs:
        # its messages wait, pending
        h.stop(sender)
        second = self.submit([{"to": "ann@ok.test", "fields": {"name": "Ann"}},
                              {"to": "carl@ok.test", "fields": {"name": "Carl"}}],
                             unsubscribe=True)
        h.wait(lambda: h.request(second)["split"] == 2, 30, "the second request split")
        before = self.state()
        self.assertEqual(before[1], [])

        # A token with one character changed is refused, nothing changed
        i = len(token) // 2
        tampered = url[:-len(token)] + token[:i] + ("A" if token[i] != "A" else "B") + \
            token[i + 1:]
        status, headers, text = self.page("POST", tampered, b"List-Unsubscribe=One-Click")
        self.assertEqual(status, 400, text)
        self.assertIn("not valid", text)
        status, _, _ = self.page("POST", url[:-5], b"List-Unsubscribe=One-Click")
        self.assertEqual(status, 400)
        # A POST that does not say one-click is no unsubscribe
        status, _, _ = self.page("POST", url, b"hello")
        self.assertEqual(status, 400)
        # The admin API is not served there
        status, _, _ = self.page("GET", f"http://127.0.0.1:{self.port}/v1/requests")
        self.assertEqual(status, 404)
        self.assertEqual(self.state(), before)

        # GET shows the page, whose form posts to itself, and changes nothing
        status, headers, text = self.page("GET", url + "?utm_source=mail")
        self.assertEqual(status, 200, text)
        self.assertIn('<form method="post" action="' + token + '">', text)
        self.assertIn("default-src 'none'", headers["Content-Security-Policy"])
        self.assertIn("frame-ancestors 'none'", headers["Content-Security-Policy"])
        self.assertEqual(headers["X-Frame-Options"], "DENY")
        self.assertNotIn("<script", text)
        self.assertEqual(self.state(), before)

        # The one-click POST: suppressed for this tenant, Ann's pending
        # message cancelled (not Carl's), and the unsubscribe reported
        status, _, text = self.page("POST", url, b"List-Unsubscribe=One-Click")
        self.assertEqual(status, 200, text)
        self.assertIn("unsubscribed", text)
        shop = h.scalar("SELECT id FROM fairq.tenants WHERE name = 'shop'")
        self.assertEqual(h.sql("SELECT tenant_id, address, reason FROM fairq.suppressions"),
                         [[shop, "ann@ok.test", "unsubscribe"]])
        self.assertEqual(h.sql(f"SELECT recipient, status FROM fairq.messages"
                               f" WHERE request_id = {second} ORDER BY id"),
                         [["ann@ok.test", "cancelled"], ["carl@ok.test", "pending"]])
        self.assertEqual(h.request(second)["cancelled"], 1)
        ann_first = h.scalar(f"SELECT id FROM fairq.messages WHERE request_id = {first}"
                             f" AND recipient = 'Ann@ok.test'")
        self.assertEqual(h.sql("SELECT type, request_id, message_id, recipient FROM fairq.events"
                               " WHERE type IN ('message.unsubscribed', 'message.cancelled')"
                               " ORDER BY id"),
                         [["message.cancelled", str(second),
                           h.scalar(f"SELECT id FROM fairq.messages WHERE request_id = {second}"
                                    f" AND recipient = 'ann@ok.test'"), "ann@ok.test"],
                          ["message.unsubscribed", str(first), ann_first, "Ann@ok.test"]])
        # The tenant reads it among its events
        status, _, body = h.http("GET", "/v1/events?type=message.unsubscribed", token=self.token)
        self.assertEqual(status, 200, body)
        self.assertEqual([(e["type"], e["recipient"]) for e in body["events"]],
                         [("message.unsubscribed", "Ann@ok.test")])

        # Again (a double click, a client's retry): success, nothing more
        after = self.state()
        status, _, _ = self.page("POST", url, b"List-Unsubscribe=One-Click")
        self.assertEqual(status, 200)
        self.assertEqual(self.state(), after)

        # A third campaign (without unsubscribe: {{unsubscribe_url}} would be
        # a field its recipients must give) refuses Ann at split; another
        # tenant still mails her
        third = self.submit([{"to": "ANN@ok.test", "fields": {"name": "Ann"}},
                             {"to": "dan@ok.test", "fields": {"name": "Dan"}}],
                            body="Dear {{name}}\n")
        h.start_sender("s2", self.sink, 4)
        h.wait_request(third, "done", 60)
        h.wait_request(second, "done", 60)
        self.assertEqual(h.sql(f"SELECT recipient, reason FROM fairq.rejects"
                               f" WHERE request_id = {third}"), [["ANN@ok.test", "suppressed"]])
        other = h.submit("other", [{"to": "ann@ok.test", "fields": {"name": "Ann", "n": 1}}])
        h.wait_request(other, "done", 60)
        self.assertEqual(h.request(other)["sent"], 1)
        # Mail without unsubscribe carries neither field
        plain = [r for r in self.sink.records() if r["to"] == ["dan@ok.test"]]
        self.assertEqual(len(plain), 1)
        self.assertNotIn("List-Unsubscribe", plain[0]["headers"])

    def test_refusals(self):
        """A submit that gives its own List-Unsubscribe with fairq's on is
        refused; without unsubscribe_url, asking for it is refused; fairqd
        does not start with a secret file others may read."""
        h = self.h
        self.start()
        status, _, body = h.http("POST", "/v1/requests", token=self.token, body={
            "from": "news@shop.test", "subject": "s", "body": "b", "unsubscribe": True,
            "headers": {"List-Unsubscribe": "<https://shop.test/u>"},
            "recipients": [{"to": "a@ok.test", "fields": {}}]})
        self.assertEqual(status, 400, body)
        self.assertIn("List-Unsubscribe", body["detail"])
        # The tenant's default on: the same headers are refused too
        admin = h.make_token()
        status, _, body = h.http("PUT", "/v1/tenants/shop", token=admin,
                                 body={"unsubscribe": True})
        self.assertEqual((status, body["unsubscribe"]), (200, True), body)
        status, _, body = h.http("POST", "/v1/requests", token=self.token, body={
            "from": "news@shop.test", "subject": "s", "body": "b",
            "headers": {"list-unsubscribe-post": "List-Unsubscribe=One-Click"},
            "recipients": [{"to": "a@ok.test", "fields": {}}]})
        self.assertEqual(status, 400, body)
        status, _, body = h.http("GET", "/v1/tenants/shop", token=admin)
        self.assertTrue(body["unsubscribe"])
        h.stop(self.fairqd)

        # Another fairqd without unsubscribe_url refuses to promise links
        plain = h.start_fairqd(name="plain", **FAIRQD)
        status, _, body = h.http("POST", "/v1/requests", token=self.token, body={
            "from": "news@shop.test", "subject": "s", "body": "b", "unsubscribe": True,
            "recipients": [{"to": "a@ok.test", "fields": {}}]})
        self.assertEqual(status, 400, body)
        self.assertIn("unsubscribe_url", body["detail"])
        h.stop(plain)

        # A secret file others may read: fairqd does not start
        loose = h.start_fairqd(name="loose", wait=False,
                               unsubscribe_url="https://unsubscribe.shop.test",
                               unsubscribe_secret_file=self.secret_file(0o644), **FAIRQD)
        loose.expect_exit = True
        self.assertEqual(loose.wait(30), 2, loose.text())
        self.assertIn("may be read or written by others", loose.text())


if __name__ == "__main__":
    fq_openapi.note_program(os.path.basename(sys.argv[0]))
    fq_e2e.main()
