#!/usr/bin/python3
"""test_http_channels.py: requests on channels besides mail (api/API.md,
"Channels"), over real sockets: an http request (a webhook per recipient)
submitted, read back with its http fields and whether it is signed, never
its secret; its Idempotency-Key; a tenant's default signing secret; another
channel ("sms") with its body; recipients named by keys, not addresses,
split, searched, rejected alone, and the request paused, resumed and
cancelled; and every refusal of a submit with its 400 naming the place.
No sender runs: what fairqd renders for a sender is tested in
tests/actors (pipeline_test) and tests/channels.
"""

import json
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest  # noqa: E402

FAIRQD = {"poll_ms": 200}
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER_SECRET = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
HTTP_KEYS = {"method", "url", "headers", "body", "body_format", "signed"}


def http_body(tenant="hooks", drop=(), http_drop=(), http=None, **fields):
    """A valid http submit: two recipients named by keys, fields replaced
    or added as given, the keys in drop (of the body) and http_drop (of
    its "http") left out, http's members replaced by http."""
    body = {"tenant": tenant, "channel": "http",
            "http": {"method": "POST", "url": "https://hooks.example/in/{{id}}?ref={{ref}}",
                     "headers": {"Authorization": "Bearer t0k", "X-Ref": "{{ref}}"},
                     "body": "{\"id\": {{id}}, \"name\": \"{{name}}\"}",
                     "body_format": "json", "signing_secret": SECRET},
            "recipients": [{"to": "cust-1", "fields": {"id": 1, "ref": "r/1", "name": "Ann"}},
                           {"to": "cust-2", "fields": {"id": 2, "ref": "r 2", "name": "Bo"}}]}
    body.update(fields)
    for key in http_drop:
        body["http"].pop(key, None)
    body["http"].update(http or {})
    for key in drop:
        body.pop(key, None)
    return body


class ChannelsTest(APITest):

    def test_submit_http_and_other_channels(self):
        """A good http submit: 202 with channel "http" and its http fields
        (signed, never the secret), the same in GET and the list; the same
        Idempotency-Key with the same request replays, with another URL or
        secret is a 422. A tenant's default secret signs a request without
        one. Another channel takes its body. Recipient keys are split,
        searched and rejected alone, and the lifecycle works on them."""
        self.start(**FAIRQD)
        self.put_tenant("hooks")
        body = http_body()
        answer = self.submit(body, key="hook-1")
        request = self.ok(answer, 202, "an http submit")
        self.check_request(request)
        self.assertEqual(request["channel"], "http")
        http = request["http"]
        self.assertEqual(set(http), HTTP_KEYS)
        self.assertEqual((http["method"], http["url"], http["headers"], http["body"],
                          http["body_format"], http["signed"]),
                         ("POST", body["http"]["url"], body["http"]["headers"],
                          body["http"]["body"], "json", True))
        self.assertEqual((request["headers"], request["reply_to"], request["text_body"]),
                         ({}, None, None))
        rid = request["id"]
        for got in (self.get_request(rid),
                    [r for r in self.ok(self.api("GET", "/v1/requests?tenant=hooks"), 200,
                                        "list")["requests"] if r["id"] == rid][0]):
            self.assertEqual((got["channel"], got["http"]), ("http", http))
        for answer in (self.api("GET", f"/v1/requests/{rid}"), self.api("GET", "/v1/requests")):
            self.assertNotIn("whsec_", json.dumps(answer[2]), "a secret in an answer")
        row = self.h.sql("SELECT channel, from_addr IS NULL, subject, body, http_method,"
                         f" signing_secret FROM fairq.requests WHERE id = {rid}")[0]
        self.assertEqual(row, ["http", "t", "", "", "POST", SECRET])

        # Idempotency-Key: the same request (its headers in another order)
        # replays; another URL, secret or none is another request
        same = http_body(http={"headers": dict(reversed(list(body["http"]["headers"].items())))})
        again = self.submit(same, key="hook-1")
        self.assertEqual(self.ok(again, 202, "the same http request")["id"], rid)
        self.assertEqual(again[1].get("Idempotent-Replayed"), "true")
        for label, other in (("another url", http_body(http={"url": "https://hooks.example/x"})),
                             ("another secret", http_body(http={"signing_secret": OTHER_SECRET})),
                             ("no secret", http_body(http_drop=("signing_secret",)))):
            self.assert_error(self.submit(other, key="hook-1"), 422, label)

        # A tenant's default secret: set by an admin, never shown; signs a
        # request without one of its own
        tenant = self.ok(self.api("PUT", "/v1/tenants/hooks", {"signing_secret": OTHER_SECRET}),
                         200, "a default secret")
        self.assertIs(tenant["signing_secret_set"], True)
        self.assertNotIn("whsec_", json.dumps(tenant))
        unsigned = self.submit_ok(http_body(http_drop=("signing_secret",)))
        self.assertIs(unsigned["http"]["signed"], True, unsigned)
        self.ok(self.api("PUT", "/v1/tenants/hooks", {"signing_secret": None}), 200, "removed")
        self.assertIs(self.get_request(unsigned["id"])["http"]["signed"], False)
        self.assertIs(self.ok(self.api("GET", "/v1/tenants/hooks"), 200, "tenant")
                      ["signing_secret_set"], False)
        self.assert_error(self.api("PUT", "/v1/tenants/hooks", {"signing_secret": "whsec_x"}),
                          400, "a bad default secret")
        acme = self.new_token("hooks")
        self.assert_error(self.api("PUT", "/v1/tenants/hooks", {"signing_secret": SECRET},
                                   token=acme), 403, "a tenant's token")

        # Another channel: its body, rendered as it is, for each key
        sms = self.submit_ok({"tenant": "hooks", "channel": "sms", "body": "Code {{code}}",
                              "recipients": [{"to": "+49 170 1", "fields": {"code": 7}}]})
        self.assertEqual((sms["channel"], sms["http"]), ("sms", None))
        mail = self.submit_ok(fq_api.submit_body("hooks"))
        self.assertEqual((mail["channel"], mail["http"]), ("email", None))

        # Keys are split; a bad key is rejected alone; searched by "to"
        keyed = self.submit_ok(http_body(recipients=[
            {"to": "cust-1", "fields": {"id": 1, "ref": "a", "name": "A"}},
            {"to": "", "fields": {"id": 2, "ref": "b", "name": "B"}},
            {"to": "cust-3", "fields": {"id": 3, "ref": "c\r\nX-Evil: 1", "name": "C"}},
            {"to": "Cust 4 <not an address>", "fields": {"id": 4, "ref": "d", "name": "D"}}]))
        kid = keyed["id"]
        messages = self.wait_split(kid, 2)
        self.assertEqual(sorted(m["to"] for m in messages), ["Cust 4 <not an address>", "cust-1"])
        rejects = self.ok(self.api("GET", f"/v1/requests/{kid}/rejects"), 200,
                          "rejects")["rejects"]
        self.assertEqual([(r["recipient"], r["reason"]) for r in rejects],
                         [("", "empty recipient key"),
                          ("cust-3", "field \"ref\" goes into a header and holds CR, LF or NUL")])
        found = self.ok(self.api("GET", "/v1/messages?to=CUST-1&tenant=hooks"), 200,
                        "search by key")["messages"]
        self.assertEqual([(m["to"], m["request"]) for m in found if m["request"] == kid],
                         [("cust-1", kid)])
        self.assertEqual(self.ok(self.api("POST", f"/v1/requests/{kid}/pause"), 200,
                                 "pause")["status"], "paused")
        self.assertEqual(self.ok(self.api("POST", f"/v1/requests/{kid}/resume"), 200,
                                 "resume")["status"], "active")
        cancelled = self.ok(self.api("POST", f"/v1/requests/{kid}/cancel"), 200, "cancel")
        self.assertEqual((cancelled["status"], cancelled["cancelled"], cancelled["rejected"]),
                         ("cancelled", 2, 2))
        status, _, metrics = self.api("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertIn('fairq_tenant_rejected_total{tenant="hooks"} 2', metrics)

    def test_refusals(self):
        """Each submit a channel cannot take is a 400 naming what and
        where, and stores nothing."""
        self.start(**FAIRQD)
        self.put_tenant("hooks")
        long_body = "{\"a\": \"" + "x" * (256 * 1024) + "\"}"
        cases = [
            ("a channel in capitals", http_body(channel="HTTP"),
             "channel: a channel's name is made of a-z 0-9 _ - only"),
            ("an empty channel", http_body(channel=""), "channel: a channel's name is empty"),
            ("a channel too long", http_body(channel="c" * 33), "longer than 32 bytes"),
            ("a channel not a string", http_body(channel=7), "channel must be a string"),
            ("http for mail", dict(fq_api.submit_body("hooks"), http={"method": "POST"}),
             "http is for channel \"http\" only"),
            ("http without http", http_body(drop=("http",)),
             "http is required with channel \"http\""),
            ("from", http_body(**{"from": "news@hooks.example"}), "from is for mail only"),
            ("subject", http_body(subject="Hi"), "subject is for mail only"),
            ("html", http_body(html=False), "html is for mail only"),
            ("text_body", http_body(text_body="x"), "text_body is for mail only"),
            ("reply_to", http_body(reply_to="a@hooks.example"), "reply_to is for mail only"),
            ("mail headers", http_body(headers={"X-A": "1"}), "headers is for mail only"),
            ("a top-level body", http_body(body="x"),
             "body: an http request gives its body as http.body"),
            ("http not an object", http_body(http=None) | {"http": "POST"},
             "http must be an object"),
            ("an unknown http field", http_body(http={"timeout": 5}),
             "http: unknown field \"timeout\""),
            ("no method", http_body(http_drop=("method",)), "http.method is required"),
            ("a method in lower case", http_body(http={"method": "post"}),
             "http.method: must be POST, PUT, PATCH, DELETE or GET"),
            ("CONNECT", http_body(http={"method": "CONNECT"}), "http.method: must be"),
            ("no url", http_body(http_drop=("url",)), "http.url is required"),
            ("an ftp url", http_body(http={"url": "ftp://hooks.example/"}),
             "http.url: must start with http:// or https://"),
            ("a field in the host", http_body(http={"url": "https://{{host}}/in"}),
             "http.url: fields may stand in its path and query only"),
            ("credentials", http_body(http={"url": "https://u:p@hooks.example/"}),
             "http.url: holds credentials"),
            ("a space", http_body(http={"url": "https://hooks.example/a b"}),
             "http.url: holds a space"),
            ("a fragment", http_body(http={"url": "https://hooks.example/a#b"}),
             "http.url: holds a fragment"),
            ("a bad port", http_body(http={"url": "https://hooks.example:99999/"}),
             "http.url: its port is not within 1..65535"),
            ("an unclosed tag in the url", http_body(http={"url": "https://hooks.example/{{id"}),
             "http.url: unclosed tag at byte 22"),
            ("headers not an object", http_body(http={"headers": ["X-A"]}),
             "http.headers must be an object"),
            ("a header not a string", http_body(http={"headers": {"X-A": 1}}),
             "http.headers \"X-A\": its value must be a string"),
            ("Host", http_body(http={"headers": {"Host": "evil.example"}}),
             "http.headers \"Host\": it is written by the HTTP client or by fairq"),
            ("Content-Length", http_body(http={"headers": {"content-length": "1"}}),
             "cannot be given"),
            ("Transfer-Encoding", http_body(http={"headers": {"Transfer-Encoding": "chunked"}}),
             "cannot be given"),
            ("Connection", http_body(http={"headers": {"Connection": "close"}}),
             "cannot be given"),
            ("webhook-signature", http_body(http={"headers": {"Webhook-Signature": "v1,x"}}),
             "cannot be given"),
            ("a bad header name", http_body(http={"headers": {"X A": "1"}}),
             "http.headers \"X A\": a header's name is"),
            ("a header twice", http_body(http={"headers": {"X-A": "1", "x-a": "2"}}),
             "given twice"),
            ("CR in a header", http_body(http={"headers": {"X-A": "a\r\nX-B: c"}}),
             "http.headers \"X-A\": its value holds a control character"),
            ("an unclosed tag in a header", http_body(http={"headers": {"X-A": "{{ref"}}),
             "http.headers \"X-A\": unclosed tag at byte 0"),
            ("an unclosed tag in the body", http_body(http={"body": "{\"id\": {{id}"}),
             "http.body: unclosed tag at byte 7"),
            ("a body that is not JSON", http_body(http={"body": "{\"id\": {{id}}"}),
             "http.body: not JSON once its fields are filled in"),
            ("a GET with a body", http_body(http={"method": "GET"}),
             "http.body: a GET has no body"),
            ("a body too long", http_body(http={"body": long_body}),
             "http.body: longer than 262144 bytes"),
            ("a bad body_format", http_body(http={"body_format": "xml"}),
             "http.body_format must be json or form"),
            ("a secret without its prefix", http_body(http={"signing_secret": SECRET[6:]}),
             "http.signing_secret: a signing secret is \"whsec_\""),
            ("a secret too short", http_body(http={"signing_secret": "whsec_AAAAAAAA"}),
             "http.signing_secret"),
            ("a secret not base64", http_body(http={"signing_secret": "whsec_" + "!" * 32}),
             "http.signing_secret"),
            ("http for sms", http_body(channel="sms"), "http is for channel \"http\" only"),
            ("sms without a body", {"tenant": "hooks", "channel": "sms",
                                    "recipients": [{"to": "k"}]}, "body is required"),
            ("sms with a subject", {"tenant": "hooks", "channel": "sms", "body": "b",
                                    "subject": "s", "recipients": [{"to": "k"}]},
             "subject is for mail only"),
            ("sms with a bad template", {"tenant": "hooks", "channel": "sms", "body": "{{a",
                                         "recipients": [{"to": "k"}]},
             "body: unclosed tag at byte 0"),
        ]
        before = self.count("fairq.requests")
        for label, body, detail in cases:
            answer = self.submit(body)
            self.assert_error(answer, 400, label)
            self.assertIn(detail, answer[2]["detail"], label)
        self.assertEqual(self.count("fairq.requests"), before, "a refused submit stored a row")
        # A duplicate key inside "http" (the top level refuses its own)
        raw = json.dumps(http_body()).replace('"method": "POST"',
                                              '"method": "POST", "method": "PUT"')
        answer = self.api("POST", "/v1/requests", raw=raw.encode())
        self.assert_error(answer, 400, "a key twice in http")
        self.assertIn("http must be an object: duplicate object key", answer[2]["detail"])


if __name__ == "__main__":
    fq_api.main()
