#!/usr/bin/python3
"""test_channels.py: channels besides mail, end to end (api/API.md,
"Channels"; docs/protocol.md, rule 2; docs/delivery.md, "The sender's
channels"): real fairqd, two fairq-senders serving email and http with a
pool of workers each (channels = email,http), the SMTP sink and the HTTP
sink (http_sink.py, which verifies Standard Webhooks signatures itself),
and later a third sender serving only "sms" through exec_command.

One fairqd run, the scenarios one after the other (each a subTest, so
that one failing does not hide how the others fare):

  1. the HTTP sink answers 200, 429 with Retry-After, 500 and 400 as its
     rules say, and tells signed requests that verify from those that do
     not (checked by hand, before fairqd sends it anything);
  then the requests of 2 and 4 go in together, and
  6. a bad channel is a 400 at submit, and stores nothing;
  2. a webhook campaign of one tenant (signed) and a mail campaign of
     another flow together: each message arrives once at its sink, the
     webhooks with their URL fields percent-encoded, their JSON body
     fields escaped and their signatures verified; both requests end done;
  4. 429 with Retry-After: N is the receiver throttling: it costs the
     message no attempt, the message waits at least N seconds (its
     destination, the sink's host, is named by none: "default"'s budget is
     not slowed for it) and is delivered then; 500 is retried; 400 makes
     the message dead with the status and the answer's text as its
     last_error, as GET /v1/messages shows it;
  3. a stuck relay (the SMTP sink stopped with SIGSTOP: connections are
     accepted, nothing answered) holds up only mail: a second webhook
     campaign arrives whole while the sink is stopped, no slower than
     twice the first (plus 2 s); the mail waits (none dead, none handed to
     a sender with no idle email worker) and all of it arrives once the
     sink resumes;
  5. a message of a channel no sender serves ("sms") waits: pending, never
     attempted, its request not done; once a sender of "sms" (exec_command
     appending stdin to a file) joins, it goes out and the request ends done.

Scenarios 2, 3 and 5 need fairqd to route by channel (credit per sender
and channel, docs/protocol.md rule 2): a fairqd that counts a sender's
credit of all channels as one hands it more mail than its email pool
holds, and the mail it NACKs ("no idle worker") dies after max_attempts;
it hands sms to senders of email and http, which NACK it.

fairqd runs with short retry delays (retry_base_ms=200, retry_cap_ms=1000)
and poll_ms=200, so retries come due within a second.
"""

import base64
import collections
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, PYTHON, message_id_of  # noqa: E402

FAIRQD = {"retry_base_ms": 200, "retry_cap_ms": 1000, "poll_ms": 200}
SENDERS = 2
EMAIL_POOL = 4   # Each sender's email workers (its email credit)
HTTP_POOL = 16   # Each sender's http workers
SMS_POOL = 4

N_HOOKS = 300    # The webhook campaigns (scenarios 2 and 3)
N_MAIL = 300     # The mail campaign flowing with the first (scenario 2)
N_MAIL_STUCK = 100  # The mail sent while the relay is stuck (scenario 3)
N_SMS = 12

RETRY_AFTER_S = 3  # The 429's Retry-After (scenario 4)
FAILS_500 = 2      # How many 500s before the message is taken

# How long a campaign of a few hundred may take at most (ASan, 2 cores)
CAMPAIGN_TIMEOUT_S = 40
# How long the sms messages are watched waiting for a sender of their own
SMS_WAIT_S = 4.0

# Values that need encoding: in a URL's query (percent-encoded, every byte
# but A-Z a-z 0-9 - . _ ~) and in a JSON string (escaped)
REFS = ["a/b", "x y&z=1", "100%", "caf\u00e9?#", "~safe-._", "plus+sign", "q\"uote'"]
NAMES = ["Ann", "Zo\u00eb \"the\" \\ best", "line\nbreak\ttab", "ctrl\u0001\u001f",
         "</script>&<", "\U0001F48C post", "{{not a tag}}"]

# Scenario 4's recipients and what the HTTP sink answers them
R4_RULES = [
    {"match": "/r4/k429", "status": 429, "retry_after": str(RETRY_AFTER_S),
     "body": "slow down, please", "times": 1},
    {"match": "/r4/k500", "status": 500, "body": "oops, internal", "times": FAILS_500},
    {"match": "/r4/k400", "status": 400, "body": "unknown customer k400\nsecond line"},
]
# Scenario 1's, on paths fairqd never uses
SELF_RULES = [
    {"match": "/self/429", "status": 429, "retry_after": "7", "body": "later"},
    {"match": "/self/500", "status": 500, "body": "boom"},
    {"match": "/self/400", "status": 400, "body": "bad"},
]

EXEC_SCRIPT = '''\
import fcntl, json, os, sys
record = {name: os.environ.get(name) for name in (
    "FAIRQ_MESSAGE_ID", "FAIRQ_TENANT", "FAIRQ_REQUEST_ID", "FAIRQ_ATTEMPT",
    "FAIRQ_CHANNEL", "FAIRQ_TO", "FAIRQ_METHOD")}
record["body"] = sys.stdin.buffer.read().decode("utf-8", "replace")
with open(sys.argv[1], "a", encoding="utf-8") as out:
    fcntl.flock(out, fcntl.LOCK_EX)
    out.write(json.dumps(record) + "\\n")
    out.flush()
'''


def new_secret():
    """A Standard Webhooks secret: whsec_ and the base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


def url_encoded(value):
    """value as fairq writes it into a URL: percent-encoded UTF-8, every byte
    but A-Z a-z 0-9 - . _ ~ (which urllib's quote with safe="" keeps)."""
    return urllib.parse.quote(str(value), safe="")


def header(record, name):
    """A header of an HTTP sink record, by name in any case; None if absent."""
    for key, value in record["headers"].items():
        if key.lower() == name.lower():
            return value
    return None


class ChannelsTest(E2ETest):

    # -----------------------------------------------------------------
    # Helpers

    def api(self, method, path, body=None):
        return self.h.http(method, path, body, token=self.token)

    def submit(self, body, what):
        """POST /v1/requests; returns the new request's id."""
        status, _, payload = self.api("POST", "/v1/requests", body)
        self.assertEqual(status, 202, f"{what}: submit answered {status}: {payload!r:.800}")
        return payload["id"]

    def api_messages(self, request_id):
        """Every message of the request, as GET /v1/messages shows them."""
        out, after = [], None
        while True:
            path = f"/v1/messages?request={request_id}&limit=1000"
            if after is not None:
                path += f"&after={after}"
            status, _, payload = self.api("GET", path)
            self.assertEqual(status, 200, f"GET {path}: {status} {payload!r:.500}")
            out += payload["messages"]
            after = payload["next_after"]
            if after is None:
                return out

    def statuses(self, request_id):
        """{status: count} of the request's messages, from the database."""
        return {s: int(n) for s, n in self.h.sql(
            f"SELECT status, count(*) FROM fairq.messages WHERE request_id = {int(request_id)}"
            " GROUP BY 1 ORDER BY 1")}

    def wait_done(self, request_id, timeout, what):
        h = self.h
        return h.wait(lambda: (lambda r: r if r["status"] == "done" else None)(
                          h.api_request(request_id)),
                      timeout, f"{what} (request {request_id}) to be done", interval=0.2,
                      describe=lambda: f"request {h.api_request(request_id)}, messages "
                                       f"{self.statuses(request_id)}")

    def check_mail_arrived(self, name, request_id, records, expected, once):
        """Every address of expected reached the SMTP sink (exactly once
        with once); else fails saying what became of the missing ones."""
        delivered = collections.Counter(to for r in records for to in r["to"])
        missing = sorted(set(expected) - set(delivered))
        extra = sorted(set(delivered) - set(expected))
        twice = sorted(to for to, n in delivered.items() if n > 1) if once else []
        if missing or extra or twice:
            lost = collections.Counter(
                (m["status"], m["last_error"])
                for m in self.h.messages(f"request_id = {int(request_id)}").values()
                if m["recipient"] in set(missing))
            self.fail(f"{name}: {len(missing)} of {len(expected)} mails never reached the "
                      f"SMTP sink (their messages by status and last_error: "
                      f"{dict(lost.most_common(4))}), {len(extra)} not of this request, "
                      f"{len(twice)} delivered twice (e.g. {twice[:2]})")

    def hook_records(self, prefix):
        """The HTTP sink's records whose path starts with prefix."""
        return [r for r in self.hooks.records() if r["path"].startswith(prefix)]

    def webhook_campaign(self, name, ids, secret):
        """A signed webhook submit of tenant hooks: recipient cust-I for each
        I in ids, its fields in the URL's path and query, a header and a
        JSON body."""
        url = self.hooks.url + f"/{name}/{{{{id}}}}?ref={{{{ref}}}}&n={{{{id}}}}"
        return {"tenant": "hooks", "channel": "http",
                "http": {"method": "POST", "url": url,
                         "headers": {"X-Campaign": name, "X-Id": "{{id}}"},
                         "body": "{\"id\": {{id}}, \"name\": \"{{name}}\", \"vip\": {{vip}},"
                                 " \"ref\": \"{{ref}}\"}",
                         "body_format": "json", "signing_secret": secret},
                "recipients": [{"to": f"cust-{i}", "fields": self.hook_fields(i)} for i in ids]}

    @staticmethod
    def hook_fields(i):
        return {"id": i, "ref": REFS[i % len(REFS)], "name": NAMES[i % len(NAMES)],
                "vip": i % 2 == 0}

    def check_webhooks(self, name, request_id, ids, submitted_at):
        """Each webhook of the campaign arrived exactly once, as rendered
        from its recipient's fields, signed and verified by the sink, its
        webhook-id msg_ and its message's id. Returns the records."""
        records = self.hook_records(f"/{name}/")
        by_path = {}
        for r in records:
            by_path.setdefault(r["path"], []).append(r)
        expected = {f"/{name}/{i}?ref={url_encoded(self.hook_fields(i)['ref'])}&n={i}": i
                    for i in ids}
        missing = sorted(set(expected) - set(by_path))
        extra = sorted(set(by_path) - set(expected))
        twice = sorted(p for p, rs in by_path.items() if len(rs) > 1)
        if missing or extra or twice:
            self.fail(f"{name}: {len(missing)} webhooks missing (e.g. {missing[:2]}; their "
                      f"messages {self.statuses(request_id)}), {len(extra)} at paths not "
                      f"expected (URL fields not percent-encoded as they should be? e.g. "
                      f"{extra[:2]}), {len(twice)} delivered more than once (e.g. {twice[:2]})")
        message_ids = {m["recipient"]: m["id"] for m in
                       self.h.messages(f"request_id = {int(request_id)}").values()}
        for path, i in expected.items():
            r = by_path[path][0]
            fields = self.hook_fields(i)
            self.assertEqual(r["method"], "POST", r)
            self.assertIs(r["verified"], True,
                          f"{name}: the webhook to {path} did not verify: {r['verify_error']}; "
                          f"headers {r['headers']}")
            self.assertEqual(header(r, "webhook-id"), f"msg_{message_ids[f'cust-{i}']}", r)
            stamp = int(header(r, "webhook-timestamp"))
            self.assertLessEqual(abs(r["t"] - stamp), 60, f"webhook-timestamp {stamp}: {r}")
            self.assertGreaterEqual(stamp, int(submitted_at) - 1, r)
            self.assertEqual(header(r, "Content-Type"), "application/json", r)
            self.assertEqual((header(r, "X-Campaign"), header(r, "X-Id")), (name, str(i)), r)
            try:
                body = json.loads(r["body"])
            except ValueError as e:
                self.fail(f"{name}: the body to {path} is not JSON ({e}): {r['body']!r}")
            self.assertEqual(body, {"id": i, "name": fields["name"], "vip": fields["vip"],
                                    "ref": fields["ref"]},
                             f"{name}: body fields not escaped as JSON strings: {r['body']!r}")
        return records

    # -----------------------------------------------------------------
    # The test

    def test_channels(self):
        h = self.h
        started = time.monotonic()
        self.secret = new_secret()
        self.r4_secret = new_secret()
        self.smtp = h.start_sink("smtp_sink")
        self.hooks = h.start_http_sink("http_sink", rules={"rules": SELF_RULES + R4_RULES},
                                       secrets=[self.secret, self.r4_secret])
        h.start_fairqd(**FAIRQD)
        h.wait_schema()
        for tenant in ("hooks", "shop", "texts"):
            h.create_tenant(tenant)
        self.token = h.make_token()
        self.senders = [h.start_sender(f"s{i + 1}", self.smtp, EMAIL_POOL,
                                       extra=["--channels", "email,http",
                                              "--channel-concurrency", f"http:{HTTP_POOL}"])
                        for i in range(SENDERS)]
        self.note(f"started in {time.monotonic() - started:.1f} s")

        with self.subTest("scenario 1: the HTTP sink answers on command and verifies "
                          "signatures"):
            self.scenario_sink()
        # Scenarios 2, 4 and 6 run side by side: their requests go in at once
        self.submit_together()
        with self.subTest("scenario 6: bad channel fields refused at submit"):
            self.scenario_refused()
        with self.subTest("scenario 2: a webhook campaign and a mail campaign flow together"):
            self.scenario_flow()
        with self.subTest("scenario 4: the receiver's 429 with Retry-After, 500 and 400"):
            self.scenario_answers()
        with self.subTest("scenario 3: a stuck relay does not hold up webhooks"):
            self.scenario_stuck_relay()
        with self.subTest("scenario 5: a channel no sender serves waits for one"):
            self.scenario_unserved_channel()
        self.note(f"whole run {time.monotonic() - started:.1f} s")

    # -----------------------------------------------------------------
    # 1. The HTTP sink itself

    def scenario_sink(self):
        """The sink, asked directly: the rules' answers, and verified true
        for a correct signature, false for a wrong secret, a body changed or
        a stale timestamp, null for no signature."""
        import hashlib
        import hmac

        def sign(secret, msg_id, stamp, body):
            key = base64.b64decode(secret[len("whsec_"):])
            mac = hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256)
            return "v1," + base64.b64encode(mac.digest()).decode()

        def send(path, body=b"{}", headers=None):
            request = urllib.request.Request(self.hooks.url + path, data=body, method="POST",
                                             headers=headers or {})
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return answer.status, answer.headers, answer.read().decode()
            except urllib.error.HTTPError as error:
                return error.code, error.headers, error.read().decode()

        now = int(time.time())
        body = b'{"x": 1}'
        good = {"webhook-id": "msg_1", "webhook-timestamp": str(now),
                "webhook-signature": sign(self.secret, "msg_1", now, body)}
        cases = [
            ("/self/ok", body, good, 200, None, True),
            ("/self/several", body, dict(good, **{"webhook-signature": "v1,AAAA " +
                                                  good["webhook-signature"]}), 200, None, True),
            ("/self/other-secret", body,
             dict(good, **{"webhook-signature": sign(new_secret(), "msg_1", now, body)}),
             200, None, False),
            ("/self/body-changed", b'{"x": 2}', good, 200, None, False),
            ("/self/stale", body, {"webhook-id": "msg_1", "webhook-timestamp": str(now - 3600),
                                   "webhook-signature": sign(self.secret, "msg_1", now - 3600,
                                                             body)}, 200, None, False),
            ("/self/unsigned", body, {}, 200, None, None),
            ("/self/429", body, {}, 429, "7", None),
            ("/self/500", body, {}, 500, None, None),
            ("/self/400", body, {}, 400, None, None),
        ]
        for path, payload, headers, status, retry_after, _ in cases:
            got, answer_headers, text = send(path, payload, headers)
            self.assertEqual((got, answer_headers.get("Retry-After")), (status, retry_after),
                             f"the HTTP sink answered {path} with {got} {text!r}")
        records = {r["path"]: r for r in self.hook_records("/self/")}
        for path, _, _, status, _, verified in cases:
            self.assertEqual((records[path]["status"], records[path]["verified"]),
                             (status, verified),
                             f"the HTTP sink's record of {path}: {records[path]}")

    def submit_together(self):
        """Submits the webhook campaign w1 (tenant hooks), the mail campaign
        m1 (tenant shop) and the webhooks r4 (scenario 4) at once."""
        self.w1_ids = list(range(1, N_HOOKS + 1))
        self.m1_body = {"tenant": "shop", "from": "news@shop.test", "subject": "Hello {{name}}",
                        "body": "Dear {{name}},\nthis is message {{n}}.\n",
                        "recipients": [{"to": f"m{i}@mail.test",
                                        "fields": {"name": f"m{i}", "n": i}}
                                       for i in range(N_MAIL)]}
        self.r4_body = {"tenant": "hooks", "channel": "http", "max_attempts": 5,
                        "http": {"method": "PUT", "url": self.hooks.url + "/r4/{{key}}",
                                 "body": "{\"key\": \"{{key}}\"}",
                                 "signing_secret": self.r4_secret},
                        "recipients": [{"to": k, "fields": {"key": k}}
                                       for k in ("k429", "k500", "k400", "kok")]}
        self.submitted_at = time.time()
        self.w1 = self.submit(self.webhook_campaign("w1", self.w1_ids, self.secret),
                              "webhooks w1")
        self.m1 = self.submit(self.m1_body, "mail m1")
        self.r4 = self.submit(self.r4_body, "webhooks r4")

    # -----------------------------------------------------------------
    # 6. Submits refused

    def scenario_refused(self):
        """Refused at submit with a 400 naming the fault, and nothing stored."""
        h = self.h
        mail, r4 = self.m1_body, self.r4_body
        requests_before = int(h.scalar("SELECT count(*) FROM fairq.requests"))
        for what, body, detail in (
                ("a channel in capitals", dict(mail, channel="SMS"),
                 "channel: a channel's name is made of a-z 0-9 _ - only"),
                ("a field in the URL's host",
                 dict(r4, http=dict(r4["http"], url="http://{{key}}.hooks.test/in")),
                 "http.url: fields may stand in its path and query only"),
                ("mail's subject on channel http", dict(r4, subject="Hi"),
                 "subject is for mail only")):
            status, _, payload = self.api("POST", "/v1/requests", body)
            self.assertEqual(status, 400, f"{what}: expected 400, got {status} {payload!r:.300}")
            self.assertEqual(payload.get("error"), "bad_request", f"{what}: {payload}")
            self.assertIn(detail, payload.get("detail", ""), f"{what}: {payload}")
        self.assertEqual(int(h.scalar("SELECT count(*) FROM fairq.requests")), requests_before,
                         "a refused submit stored a request")

    # -----------------------------------------------------------------
    # 2. Webhooks and mail together

    def scenario_flow(self):
        h = self.h
        w1, m1, mail, submitted_at = self.w1, self.m1, self.m1_body, self.submitted_at
        hooks_ids = self.w1_ids
        self.wait_done(w1, CAMPAIGN_TIMEOUT_S, "the webhook campaign w1")
        self.wait_done(m1, CAMPAIGN_TIMEOUT_S, "the mail campaign m1")
        hooks = self.check_webhooks("w1", w1, hooks_ids, submitted_at)
        self.w1_duration = max(r["t"] for r in hooks) - submitted_at
        mails = self.smtp.records()
        self.check_mail_arrived("m1", m1, mails, [r["to"] for r in mail["recipients"]],
                                once=True)
        message_ids = {m["recipient"]: m["id"] for m in h.messages(f"request_id = {m1}").values()}
        for r in mails:
            self.assertEqual(message_id_of(r), message_ids[r["to"][0]], r["message_id"])
            self.assertEqual(r["subject"], "Hello " + r["to"][0].split("@")[0], r)
        for rid, n in ((w1, N_HOOKS), (m1, N_MAIL)):
            request = h.api_request(rid)
            self.assertEqual((request["sent"], request["dead"], request["failed"]), (n, 0, 0),
                             request)
        first_mail = min(r["t"] for r in mails)
        last_mail = max(r["t"] for r in mails)
        self.note(f"w1: {N_HOOKS} webhooks in {self.w1_duration:.2f} s; m1: {N_MAIL} mails "
                  f"{first_mail - submitted_at:.2f} .. {last_mail - submitted_at:.2f} s "
                  "after the submit")

    # -----------------------------------------------------------------
    # 4. The receiver's answers

    def scenario_answers(self):
        h = self.h
        r4_id = self.r4
        self.wait_done(r4_id, CAMPAIGN_TIMEOUT_S, "the webhooks r4 (429, 500, 400)")
        by_key = {}
        for r in self.hook_records("/r4/"):
            by_key.setdefault(r["path"].rsplit("/", 1)[1], []).append(r)
        messages = {m["to"]: m for m in self.api_messages(r4_id)}
        self.note("r4: " + "; ".join(
            f"{k}: {[x['status'] for x in by_key.get(k, [])]} -> {messages[k]['status']} "
            f"after {messages[k]['attempts']} ({messages[k]['last_error']!r})"
            for k in sorted(messages)))
        for k, rs in by_key.items():
            for r in rs:
                self.assertIs(r["verified"], True, f"r4 {k}: {r['verify_error']}")
                self.assertEqual(r["method"], "PUT", r)

        k429 = by_key.get("k429", [])
        self.assertEqual([r["status"] for r in k429], [429, 200],
                         "k429: expected a 429, then one more attempt taken")
        waited = k429[1]["t"] - k429[0]["t"]
        self.assertGreaterEqual(waited, RETRY_AFTER_S,
                                f"k429: tried again {waited:.2f} s after a 429 with "
                                f"Retry-After: {RETRY_AFTER_S}")
        self.assertEqual(header(k429[0], "webhook-id"), header(k429[1], "webhook-id"),
                         "webhook-id changed between attempts")
        # A 429 is the receiver throttling: a deferral, which costs no
        # attempt
        self.assertEqual((messages["k429"]["status"], messages["k429"]["attempts"]),
                         ("sent", 1), messages["k429"])

        k500 = by_key.get("k500", [])
        self.assertEqual([r["status"] for r in k500], [500] * FAILS_500 + [200],
                         "k500: a 500 is retried until taken")
        self.assertEqual((messages["k500"]["status"], messages["k500"]["attempts"]),
                         ("sent", FAILS_500 + 1), messages["k500"])

        k400 = by_key.get("k400", [])
        self.assertEqual([r["status"] for r in k400], [400], "k400: a 400 is not retried")
        self.assertEqual((messages["k400"]["status"], messages["k400"]["attempts"]),
                         ("dead", 1), messages["k400"])
        error = messages["k400"]["last_error"] or ""
        self.assertTrue(error.startswith("HTTP 400"), f"k400: last_error {error!r}")
        self.assertIn("unknown customer k400", error, f"k400: last_error {error!r}")
        self.assertNotIn("second line", error, "last_error holds the first line only")

        self.assertEqual([r["status"] for r in by_key.get("kok", [])], [200])
        request = h.api_request(r4_id)
        self.assertEqual((request["sent"], request["dead"]), (3, 1), request)

    # -----------------------------------------------------------------
    # 3. A stuck relay

    def scenario_stuck_relay(self):
        h = self.h
        w1_duration = getattr(self, "w1_duration", None)
        mail = {"tenant": "shop", "from": "news@shop.test", "subject": "Stuck {{name}}",
                "body": "Dear {{name}},\nthis waited for the relay.\n",
                "recipients": [{"to": f"n{i}@mail2.test", "fields": {"name": f"n{i}"}}
                               for i in range(N_MAIL_STUCK)]}
        hooks_ids = list(range(1001, 1001 + N_HOOKS))
        smtp_before = self.smtp.count()
        # The relay accepts connections and answers nothing
        self.smtp.proc.signal(signal.SIGSTOP)
        try:
            m2 = self.submit(mail, "mail m2")
            # Until the senders' email workers are all stuck on the relay
            h.wait(lambda: int(h.api_request(m2)["inflight"]) >= SENDERS * EMAIL_POOL, 15,
                   f"{SENDERS * EMAIL_POOL} of the mail m2 in the senders' hands (their email "
                   "workers stuck on the stopped relay)", interval=0.1,
                   describe=lambda: f"request {h.api_request(m2)}")
            submitted_at = time.time()
            w2 = self.submit(self.webhook_campaign("w2", hooks_ids, self.secret), "webhooks w2")

            def arrived():
                return len({r["path"] for r in self.hook_records("/w2/")}) >= N_HOOKS
            h.wait(arrived, CAMPAIGN_TIMEOUT_S,
                   f"all {N_HOOKS} webhooks of w2 while the SMTP relay is stuck (a stuck relay "
                   "must hold up mail only)", interval=0.1,
                   describe=lambda: f"{len({r['path'] for r in self.hook_records('/w2/')})} "
                                    f"arrived; w2 {h.api_request(w2)}; m2 {self.statuses(m2)}")
            hooks = self.check_webhooks("w2", w2, hooks_ids, submitted_at)
            w2_duration = max(r["t"] for r in hooks) - submitted_at
            self.note(f"w2: {N_HOOKS} webhooks in {w2_duration:.2f} s with the relay stuck "
                      f"(w1 took {w1_duration if w1_duration is None else round(w1_duration, 2)}"
                      " s with mail flowing)")
            if w1_duration is not None:
                limit = 2 * w1_duration + 2.0
                self.assertLessEqual(w2_duration, limit,
                                     f"webhooks slowed down by a stuck relay: w2 took "
                                     f"{w2_duration:.2f} s, w1 {w1_duration:.2f} s")
            self.wait_done(w2, 10, "the webhook campaign w2")

            # The mail waits: none dead, none failed for want of a worker
            self.assertEqual(self.smtp.count(), smtp_before)
            m2_messages = h.messages(f"request_id = {m2}")
            by_status = self.statuses(m2)
            self.note(f"m2 while the relay is stuck: {by_status}, request {h.api_request(m2)}")
            refused = [m for m in m2_messages.values() if "no idle worker" in m["last_error"]]
            if refused:
                self.fail(f"{len(refused)} mails of m2 were handed to a sender whose email "
                          "workers were all busy on the stuck relay (fairqd must send a message "
                          "only to a sender with free credit for its channel); m2's messages "
                          f"{by_status}; e.g. {refused[0]}")
            dead = [m for m in m2_messages.values() if m["status"] == "dead"]
            if dead:
                self.fail(f"{len(dead)} mails of m2 died while the relay was stuck (they must "
                          f"wait for it); m2's messages {by_status}; e.g. {dead[0]}")
            self.assertNotEqual(h.api_request(m2)["status"], "done")
        finally:
            self.smtp.proc.signal(signal.SIGCONT)
        resumed_at = time.time()
        self.wait_done(m2, CAMPAIGN_TIMEOUT_S + 20, "the mail m2 once the relay resumed")
        mails = [r for r in self.smtp.records() if r["to"][0].endswith("@mail2.test")]
        delivered = [to for r in mails for to in r["to"]]
        self.check_mail_arrived("m2", m2, mails, [r["to"] for r in mail["recipients"]],
                                once=False)
        request = h.api_request(m2)
        self.assertEqual((request["sent"], request["dead"]), (N_MAIL_STUCK, 0), request)
        tries = [m["try_count"] for m in h.messages(f"request_id = {m2}").values()]
        self.note(f"m2: {len(mails)} delivered ({len(delivered) - len(set(delivered))} twice), "
                  f"the last {max(r['t'] for r in mails) - resumed_at:.2f} s after the relay "
                  f"resumed; attempts {min(tries)}..{max(tries)}")

    # -----------------------------------------------------------------
    # 5. A channel no sender serves

    def scenario_unserved_channel(self):
        h = self.h
        recipients = [{"to": f"+49 170 00{i:02d}", "fields": {"code": 1000 + i,
                                                              "name": f"Zo\u00eb & {i}"}}
                      for i in range(N_SMS)]
        rid = self.submit({"tenant": "texts", "channel": "sms",
                           "body": "Code {{code}} for {{name}}", "recipients": recipients},
                          "sms")
        h.wait(lambda: len(self.api_messages(rid)) == N_SMS, 15,
               f"the {N_SMS} sms messages split", interval=0.1)
        # No sender serves sms: the messages wait, never attempted
        watch_until = time.monotonic() + SMS_WAIT_S
        while time.monotonic() < watch_until:
            h.check_alive()
            request = h.api_request(rid)
            self.assertNotEqual(request["status"], "done",
                                f"the sms request ended without a sender of sms: {request}")
            wrong = [m for m in self.api_messages(rid)
                     if m["status"] != "pending" or m["attempts"] != 0]
            if wrong:
                self.fail(f"{len(wrong)} of {N_SMS} sms messages were handed to a sender that "
                          "does not serve sms (they must stay pending, never attempted, until "
                          f"one does): e.g. {wrong[0]}")
            time.sleep(0.5)

        out = os.path.join(h.dir, "sms.jsonl")
        script = os.path.join(h.dir, "sms_append.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(EXEC_SCRIPT)
        h.start_sender("s_sms", self.smtp, SMS_POOL,
                       extra=["--channels", "sms", "--exec-command", f"{PYTHON} {script} {out}"])
        self.wait_done(rid, 30, "the sms request once a sender of sms joined")
        with open(out, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        self.assertEqual(sorted(r["FAIRQ_TO"] for r in records),
                         sorted(r["to"] for r in recipients), "an sms missing or sent twice")
        by_to = {r["FAIRQ_TO"]: r for r in records}
        for r in recipients:
            got = by_to[r["to"]]
            self.assertEqual((got["FAIRQ_CHANNEL"], got["FAIRQ_TENANT"], got["body"]),
                             ("sms", "texts", f"Code {r['fields']['code']} for "
                                              f"{r['fields']['name']}"), got)
            self.assertEqual(got["FAIRQ_REQUEST_ID"], str(rid), got)
        request = h.api_request(rid)
        self.assertEqual((request["sent"], request["dead"]), (N_SMS, 0), request)


if __name__ == "__main__":
    fq_e2e.main()
