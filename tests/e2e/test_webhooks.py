#!/usr/bin/python3
"""test_webhooks.py: tenants' webhook endpoints, end to end (api/API.md,
"Webhooks"; docs/feedback.md, "Webhooks"): real fairqd, a fairq-sender
serving email and http, the SMTP sink and the HTTP sink (http_sink.py,
which verifies Standard Webhooks signatures itself).

  1. the API refuses what is not an endpoint (a URL that is not http(s),
     one with a template tag, an unknown event type, a bad secret, a body
     that is not JSON) with a 400 naming it, and another tenant's token
     sees a 404;
  2. tenant "shop" has an endpoint for every event and one for
     request.done only; tenant "news" has one that answers 503 to every
     POST (a dead receiver). Both send a campaign: all mail of both is
     delivered, and shop's endpoint gets every one of shop's events as
     stored (GET /v1/events), in their order, each signed (verified by the
     sink), in batches of at most webhook_batch; the filtered endpoint gets
     the request.done events only; no event reports a webhook's own batch;
  3. fairqd is killed with SIGKILL during a second campaign of shop and
     started again: every event of shop stored still reaches the endpoint
     (at least once: a batch may come twice, with the same webhook-id);
  4. news's dead endpoint shows its failure (state failing, last_error
     with the 503, a backlog), is disabled after webhook_disable_after_s,
     and once the receiver is back and news enables it, every event of
     news arrives;
  5. a rotation: the batches after it carry two signatures, the new
     secret's and the old one's, both valid.
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

BATCH = 50
FAIRQD = {"retry_base_ms": 200, "retry_cap_ms": 1000, "poll_ms": 200,
          "webhook_batch": BATCH, "webhook_attempts": 3, "webhook_disable_after_s": 4}
N_MAIL = 150
TIMEOUT_S = 60


def verify(secret, headers, body):
    """Which of the v1 signatures of a request verify with secret."""
    key = base64.b64decode(secret[len("whsec_"):])
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.{body}".encode()
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return [s == "v1," + expected for s in headers["webhook-signature"].split(" ")]


def lowered(headers):
    return {k.lower(): v for k, v in headers.items()}


class WebhooksTest(E2ETest):

    def events(self, tenant):
        """Every event of tenant as GET /v1/events pages them, in order."""
        out, after = [], "0-0"
        while True:
            status, _, page = self.h.http("GET", f"/v1/events?tenant={tenant}&limit=1000"
                                          f"&after={after}", token=self.admin)
            self.assertEqual(status, 200, page)
            out += page["events"]
            if not page["events"]:
                return out
            after = page["next"]

    def delivered(self, path):
        """The events of every batch the sink took on path (2xx), in order
        of arrival, and the batches' records."""
        events, batches = [], []
        for r in self.hooks.records():
            if r["path"] == path and r["method"] == "POST" and 200 <= r["status"] < 300:
                body = json.loads(r["body"])
                batches.append(r)
                events += body["data"]["events"]
        return events, batches

    def hook(self, tenant, token, **body):
        status, _, answer = self.h.http("POST", f"/v1/tenants/{tenant}/webhooks", body,
                                        token=token)
        self.assertEqual(status, 201, answer)
        return answer

    def test_webhooks(self):
        h = self.h
        self.smtp = h.start_sink("smtp_sink")
        self.hooks = h.start_http_sink("http_sink", rules={"rules": [
            {"match": "/news", "status": 503, "body": "down for maintenance"}]})
        self.fairqd = h.start_fairqd(**FAIRQD)
        h.wait_schema()
        for tenant in ("shop", "news"):
            h.create_tenant(tenant)
        self.admin = h.make_token()
        shop, news = h.make_token("shop"), h.make_token("news")
        h.start_sender("s1", self.smtp, 8, extra=["--channels", "email,http",
                                                  "--channel-concurrency", "http:8"])

        with self.subTest("1: malformed endpoints are refused"):
            base = f"/v1/tenants/shop/webhooks"
            for body, words in (
                    ({"url": "ftp://127.0.0.1/x"}, "url"),
                    ({"url": self.hooks.url + "/{{x}}"}, "{{"),
                    ({}, "url is required"),
                    ({"url": self.hooks.url, "events": ["message.nope"]}, "events[0]"),
                    ({"url": self.hooks.url, "events": "message.sent"}, "events"),
                    ({"url": self.hooks.url, "secret": "whsec_short"}, "secret"),
                    ({"url": self.hooks.url, "colour": "red"}, "colour")):
                status, _, answer = h.http("POST", base, body, token=shop)
                self.assertEqual(status, 400, f"{body}: {answer}")
                self.assertIn(words, json.dumps(answer), body)
            status, _, answer = h.http("POST", base, raw=b"{not json", token=shop)
            self.assertEqual(status, 400, answer)
            status, _, answer = h.http("GET", base, token=news)
            self.assertEqual(status, 404, answer)
            status, _, answer = h.http("GET", base + "/999", token=shop)
            self.assertEqual(status, 404, answer)
            status, _, answer = h.http("GET", base, token=shop)
            self.assertEqual((status, answer), (200, {"webhooks": []}))

        all_hook = self.hook("shop", shop, url=self.hooks.url + "/shop")
        done_hook = self.hook("shop", shop, url=self.hooks.url + "/shop-done",
                              events=["request.done"])
        news_hook = self.hook("news", news, url=self.hooks.url + "/news")
        self.assertTrue(all_hook["secret"].startswith("whsec_"))
        self.assertEqual(done_hook["events"], ["request.done"])
        self.assertEqual(all_hook["state"], "ok")

        with self.subTest("2: every event, in order, signed; a dead endpoint delays nothing"):
            started = time.monotonic()
            ids = [h.submit(t, bulk=(N_MAIL, t, "example.test")) for t in ("shop", "news")]
            for rid in ids:
                h.wait_request(rid, ("done",), TIMEOUT_S)
            mail_s = time.monotonic() - started
            stored = self.events("shop")
            self.assertEqual(len(stored), N_MAIL + 2, "shop's events: sent, split, done")
            h.wait(lambda: len(self.delivered("/shop")[0]) >= len(stored), TIMEOUT_S,
                   "shop's events at its endpoint")
            got, batches = self.delivered("/shop")
            self.assertEqual(got, stored, "the endpoint got the events exactly as stored")
            self.assertTrue(all(len(json.loads(b["body"])["data"]["events"]) <= BATCH
                                for b in batches))
            for b in batches:
                self.assertEqual(verify(all_hook["secret"], lowered(b["headers"]), b["body"]),
                                 [True], "signed by the endpoint's secret")
            h.wait(lambda: len(self.delivered("/shop-done")[0]) >= 1, TIMEOUT_S,
                   "the request.done endpoint")
            self.assertEqual([e["type"] for e in self.delivered("/shop-done")[0]],
                             ["request.done"])
            # No event reports a batch: the only requests with events are the campaigns
            self.assertEqual(
                h.scalar("SELECT count(*) FROM fairq.events e JOIN fairq.requests r"
                         " ON r.id = e.request_id WHERE r.webhook_id IS NOT NULL"), "0")
            status, _, listed = h.http("GET", "/v1/requests", token=shop)
            self.assertEqual([r["id"] for r in listed["requests"]], [ids[0]],
                             "batches are not in the tenant's request list")
            self.note(f"both campaigns delivered in {mail_s:.1f} s; shop's {len(stored)}"
                      f" events in {len(batches)} batches")

        with self.subTest("3: none missing across a kill -9 of fairqd"):
            rid = h.submit("shop", bulk=(N_MAIL, "again", "example.test"))
            h.wait(lambda: int(h.scalar(f"SELECT sent FROM fairq.requests WHERE id = {rid}"))
                   >= N_MAIL // 3, TIMEOUT_S, "a third of the second campaign")
            self.fairqd.kill9()
            self.fairqd = h.start_fairqd(name="fairqd-2", **FAIRQD)
            h.wait_request(rid, ("done",), TIMEOUT_S)
            stored = self.events("shop")
            h.wait(lambda: {e["id"] for e in self.delivered("/shop")[0]}
                   >= {e["id"] for e in stored}, TIMEOUT_S, "every event after the kill")
            got = self.delivered("/shop")[0]
            twice = len(got) - len({e["id"] for e in got})
            # In order: each event arrives after every event before it
            first = {}
            for i, e in enumerate(got):
                first.setdefault(e["id"], i)
            order = [first[e["id"]] for e in stored]
            self.assertEqual(order, sorted(order), "events arrived out of order")
            self.note(f"{len(stored)} events stored, all delivered; {twice} twice")

        with self.subTest("4: a dead endpoint shows its failure, is disabled, and resumes"):
            def news_state():
                status, _, w = h.http("GET", f"/v1/tenants/news/webhooks/{news_hook['id']}",
                                      token=news)
                self.assertEqual(status, 200, w)
                return w
            h.wait(lambda: news_state()["state"] == "disabled", TIMEOUT_S,
                   "news's endpoint disabled")
            w = news_state()
            self.assertIn("503", w["last_error"])
            self.assertIn("failing since", w["disabled_reason"])
            self.assertGreater(w["backlog"], 0)
            self.assertEqual(w["delivered"], 0)
            self.hooks.set_rules({"rules": []})
            status, _, w = h.http("PATCH", f"/v1/tenants/news/webhooks/{news_hook['id']}",
                                  {"enabled": True}, token=news)
            self.assertEqual((status, w["state"], w["failures"]), (200, "ok", 0), w)
            stored = self.events("news")
            h.wait(lambda: len({e["id"] for e in self.delivered("/news")[0]}) >= len(stored),
                   TIMEOUT_S, "news's events once enabled")
            self.assertEqual(self.delivered("/news")[0][:len(stored)], stored)
            h.wait(lambda: news_state()["backlog"] == 0, TIMEOUT_S, "news's backlog")

        with self.subTest("5: a rotated secret signs beside the new one"):
            status, _, w = h.http("POST", f"/v1/tenants/shop/webhooks/{all_hook['id']}/rotate",
                                  {"keep_previous_s": 3600}, token=shop)
            self.assertEqual(status, 200, w)
            self.assertNotEqual(w["secret"], all_hook["secret"])
            self.assertIsNotNone(w["previous_secret_until"])
            before = len(self.delivered("/shop")[1])
            h.submit("shop", bulk=(3, "rot", "example.test"))
            h.wait(lambda: len(self.delivered("/shop")[1]) > before, TIMEOUT_S,
                   "a batch after the rotation")
            for b in self.delivered("/shop")[1][before:]:
                headers = lowered(b["headers"])
                self.assertEqual(verify(w["secret"], headers, b["body"]), [True, False])
                self.assertEqual(verify(all_hook["secret"], headers, b["body"]), [False, True])
            status, _, _ = h.http("DELETE", f"/v1/tenants/shop/webhooks/{done_hook['id']}",
                                  token=shop)
            self.assertEqual(status, 204)
            status, _, listed = h.http("GET", "/v1/tenants/shop/webhooks", token=shop)
            self.assertEqual([x["id"] for x in listed["webhooks"]], [all_hook["id"]])
        h.check_alive()


if __name__ == "__main__":
    fq_e2e.main()
