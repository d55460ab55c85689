#!/usr/bin/python3
"""test_http_requests.py: every route of fairqd's HTTP API doing its job
(api/API.md), over real sockets, with the real sender and SMTP sink where
mail must move: submit and its defaults, Idempotency-Key, listing and
paging, the lifecycle (pause, resume, cancel, PATCH) and its 409s, the
rejects of recipients with CR or LF (which never reach a mail header),
message search, the retry of a dead message, tenants, their send budgets
and their tokens.
"""

import json
import os
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, parse_time, recipients, rfc3339, submit_body  # noqa: E402

HOUR = 3600
FAIRQD = {"poll_ms": 200, "retry_base_ms": 200, "retry_cap_ms": 1000}


class RequestRoutesTest(APITest):

    def test_healthz_and_submit(self):
        """/healthz without a token; a submit with every field, by an admin
        token and by a tenant token (whose tenant may be left out); the
        request object as API.md shows it, and the row as submitted."""
        self.start(**FAIRQD)
        h = self.h
        self.healthz_ok()
        self.put_tenant("acme")
        self.put_tenant("bravo")
        send_at = int(time.time()) + HOUR
        request = self.submit_ok(submit_body(
            "acme", from_="news@acme.example", subject="Hi {{name}}",
            body="<p>Dear {{name}}</p>", html=True, send_at=rfc3339(send_at), priority=7,
            max_attempts=9, recipients=recipients(3)))
        self.assertEqual(request["tenant"], "acme")
        self.assertEqual(request["priority"], 7)
        self.assertEqual(request["total"], 3)
        self.assertEqual(request["sent"] + request["dead"] + request["cancelled"], 0)
        self.assertIn(request["status"], {"accepted", "splitting", "active"})
        self.assertEqual(parse_time(request["send_at"]), send_at)
        self.assertLess(abs(parse_time(request["created_at"]) - time.time()), 60)
        self.assertIsNone(request["finished_at"])
        again = self.get_request(request["id"])
        self.assertEqual((again["id"], again["tenant"], again["total"], again["send_at"]),
                         (request["id"], "acme", 3, request["send_at"]))
        row = h.sql("SELECT from_addr, subject, body, body_is_html, priority, max_attempts,"
                    f" extract(epoch FROM send_at) FROM fairq.requests WHERE id = {request['id']}")
        self.assertEqual(row[0][:6], ["news@acme.example", "Hi {{name}}", "<p>Dear {{name}}</p>",
                                      "t", "7", "9"])
        self.assertEqual(float(row[0][6]), send_at)

        # Defaults: html false, priority 0, max_attempts 5, send_at now
        request = self.submit_ok(submit_body("acme"))
        self.assertEqual(request["priority"], 0)
        self.assertLess(abs(parse_time(request["send_at"]) - time.time()), 60)
        row = h.sql("SELECT body_is_html, priority, max_attempts FROM fairq.requests"
                    f" WHERE id = {request['id']}")
        self.assertEqual(row[0], ["f", "0", "5"])

        # send_at as Unix seconds, and with an offset of its own
        request = self.submit_ok(submit_body("acme", send_at=send_at))
        self.assertEqual(parse_time(request["send_at"]), send_at)
        request = self.submit_ok(submit_body("acme", send_at="2031-11-21T12:00:00+02:00"))
        self.assertEqual(request["send_at"], "2031-11-21T10:00:00Z")

        # A tenant token: its own tenant, named or not; another's is a 403
        acme = self.new_token("acme")
        request = self.submit_ok(submit_body("acme", drop=("tenant",)), token=acme)
        self.assertEqual(request["tenant"], "acme")
        request = self.submit_ok(submit_body("acme"), token=acme)
        self.assertEqual(request["tenant"], "acme")
        before = self.count("fairq.requests")
        self.assert_error(self.submit(submit_body("bravo"), token=acme), 403,
                          "a tenant token submitting for another tenant")
        # An admin must name the tenant, and an existing one
        self.assert_error(self.submit(submit_body(drop=("tenant",))), 400,
                          "an admin token submitting without a tenant")
        self.assert_error(self.submit(submit_body("nosuch")), 404, "an unknown tenant")
        self.assertEqual(self.count("fairq.requests"), before, "a refused submit stored a row")

    def replayed(self, answer):
        """The Idempotent-Replayed header of an answer, None when absent."""
        return answer[1].get("Idempotent-Replayed")

    def test_idempotency_key(self):
        """The same Idempotency-Key of the same tenant with the same body
        answers the first request again, marked Idempotent-Replayed, and
        creates nothing; with another body it is a 422 (IETF httpapi
        Idempotency-Key draft); another key, or the same key of another
        tenant, is a new request; a key longer than 255 bytes is a 400."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.put_tenant("bravo")
        later = int(time.time()) + HOUR
        body = submit_body("acme", send_at=later, recipients=recipients(2))
        answer = self.submit(body, key="campaign-7")
        first = self.ok(answer, 202, "first submit")
        self.assertIsNone(self.replayed(answer), "a new request marked as replayed")
        # The same request again: the body as sent, and the same fields in
        # another order, with other spacing, send_at written otherwise and
        # a default given (the recipients are the same text)
        fields = dict(body, send_at=rfc3339(later), max_attempts=5)
        same = "{\n  " + ",\n  ".join(
            f"{json.dumps(k)} : {json.dumps(v)}" for k, v in reversed(list(fields.items()))) + "}"
        for label, data in (("the same body", json.dumps(body).encode()),
                            ("the same request written otherwise", same.encode())):
            answer = self.api("POST", "/v1/requests", raw=data,
                              headers={"Idempotency-Key": "campaign-7"})
            again = self.ok(answer, 202, label)
            self.assertEqual(again["id"], first["id"], f"{label}: the same key made a new request")
            self.assertEqual(again["total"], 2, f"{label}: the repeat is not the first request")
            self.assertEqual(self.replayed(answer), "true", f"{label}: no Idempotent-Replayed")
        # Another body with the same key: 422, nothing created or changed
        for label, other in (("another subject", dict(body, subject="Another {{name}}")),
                             ("other recipients", dict(body, recipients=recipients(5))),
                             ("send_at left out", submit_body("acme",
                                                              recipients=recipients(2)))):
            answer = self.submit(other, key="campaign-7")
            self.assert_error(answer, 422, f"{label} with a used key")
            self.assertIn("Idempotency-Key", answer[2]["detail"])
            self.assertIn("another request", answer[2]["detail"])
            self.assertIsNone(self.replayed(answer))
        self.assertEqual(self.count("fairq.requests"), 1)
        self.assertEqual(self.h.scalar("SELECT subject FROM fairq.requests"), "Hi {{name}}")
        # By a tenant token too: the key is the tenant's, whoever sends it
        acme = self.new_token("acme")
        again = self.submit_ok({k: v for k, v in body.items() if k != "tenant"}, token=acme,
                               key="campaign-7")
        self.assertEqual(again["id"], first["id"])

        other_key = self.submit_ok(submit_body("acme"), key="campaign-8")
        other_tenant = self.submit_ok(submit_body("bravo"), key="campaign-7")
        self.assertEqual(len({first["id"], other_key["id"], other_tenant["id"]}), 3)
        self.assertEqual(other_tenant["tenant"], "bravo")
        self.assertEqual(self.count("fairq.requests"), 3)

        # Eight clients at once with one new key: one request, one id
        answers = []

        def race():
            try:
                answers.append(self.h.http("POST", "/v1/requests", body=submit_body("acme"),
                                           token=self.admin, headers={"Idempotency-Key": "race"},
                                           timeout=60))
            except Exception as error:  # Reported by the test thread
                answers.append((repr(error), None, None))
        threads = [threading.Thread(target=race) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        self.assertEqual([a[0] for a in answers], [202] * 8, answers)
        self.assertEqual(len({a[2]["id"] for a in answers}), 1, "one key, several requests")
        self.assertEqual(sorted(str(a[1].get("Idempotent-Replayed")) for a in answers),
                         ["None"] + ["true"] * 7, "one answer creates, the others replay")
        self.assertEqual(self.count("fairq.requests", "idempotency_key = 'race'"), 1)

        longest = self.submit_ok(submit_body("acme"), key="k" * 255)
        self.assertEqual(self.submit_ok(submit_body("acme"), key="k" * 255)["id"], longest["id"])
        self.assert_error(self.submit(submit_body("acme"), key="k" * 256), 400,
                          "an Idempotency-Key of 256 bytes")
        self.assert_error(self.submit(submit_body("acme"), key=""), 400,
                          "an empty Idempotency-Key")
        self.assertEqual(self.count("fairq.requests"), 5)

        # A key used before fingerprints were kept (migration 0012), or by
        # fairq.submit in SQL, answers its request whatever the body
        legacy = self.submit_ok(submit_body("acme", send_at=later), key="legacy")
        self.h.sql(f"UPDATE fairq.requests SET fingerprint = NULL WHERE id = {legacy['id']}")
        answer = self.submit(submit_body("acme", subject="Else {{name}}"), key="legacy")
        self.assertEqual(self.ok(answer, 202, "a key without a fingerprint")["id"], legacy["id"])
        self.assertEqual(self.replayed(answer), "true")
        self.assertEqual(self.count("fairq.requests"), 6)

    def test_list_requests(self):
        """GET /v1/requests: newest first, pages by before/next_before,
        filtered by tenant and status."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.put_tenant("bravo")
        later = int(time.time()) + HOUR
        acme = [self.submit_ok(submit_body("acme", send_at=later))["id"] for _ in range(5)]
        bravo = [self.submit_ok(submit_body("bravo", send_at=later))["id"] for _ in range(2)]

        def page(query):
            payload = self.ok(self.api("GET", "/v1/requests" + query), 200, query)
            self.assertEqual(set(payload), {"requests", "next_before"}, payload)
            for r in payload["requests"]:
                self.check_request(r)
            return [r["id"] for r in payload["requests"]], payload["next_before"]

        ids, _ = page("")
        self.assertEqual(ids, sorted(acme + bravo, reverse=True), "not newest first")
        # Paging acme's five, two at a time
        seen, before, pages = [], None, 0
        while True:
            ids, next_before = page("?tenant=acme&limit=2" +
                                    (f"&before={before}" if before is not None else ""))
            pages += 1
            self.assertLessEqual(len(ids), 2)
            seen += ids
            if next_before is None:
                break
            self.assertEqual(next_before, min(ids), "next_before is not the page's smallest id")
            before = next_before
            self.assertLess(pages, 5, "paging does not end")
        self.assertEqual(seen, sorted(acme, reverse=True))
        self.assertEqual(page("?tenant=bravo")[0], sorted(bravo, reverse=True))
        self.assertEqual(page(f"?before={bravo[0]}")[0], sorted(acme, reverse=True))

        self.ok(self.api("POST", f"/v1/requests/{acme[1]}/pause"), 200, "pause")
        self.ok(self.api("POST", f"/v1/requests/{acme[2]}/cancel"), 200, "cancel")
        self.assertEqual(page("?status=paused")[0], [acme[1]])
        self.assertEqual(page("?status=cancelled")[0], [acme[2]])
        self.assertEqual(page("?tenant=bravo&status=paused")[0], [])
        self.assertEqual(page("?limit=1000")[0], sorted(acme + bravo, reverse=True))

    def test_lifecycle(self):
        """Pause, resume, PATCH and cancel of a request waiting for its
        send_at: each answers the object after the change; repeating a
        pause, resume or cancel changes nothing; a cancelled request
        answers 409 to anything else; unknown ids answer 404."""
        self.start(**FAIRQD)
        h = self.h
        self.put_tenant("acme")
        later = int(time.time()) + HOUR
        rid = self.submit_ok(submit_body("acme", send_at=later, recipients=recipients(4)))["id"]
        url = f"/v1/requests/{rid}"

        paused = self.ok(self.api("POST", url + "/pause"), 200, "pause")
        self.check_request(paused)
        self.assertEqual((paused["id"], paused["status"]), (rid, "paused"))
        self.assertEqual(self.ok(self.api("POST", url + "/pause"), 200, "pause again")["status"],
                         "paused")
        self.assertEqual(h.request(rid)["status"], "paused")
        # PATCH works on a paused request
        patched = self.ok(self.api("PATCH", url, {"priority": -3}), 200, "PATCH priority")
        self.assertEqual((patched["priority"], patched["status"]), (-3, "paused"))
        resumed = self.ok(self.api("POST", url + "/resume"), 200, "resume")
        self.check_request(resumed)
        self.assertIn(resumed["status"], {"accepted", "splitting", "active"})
        again = self.ok(self.api("POST", url + "/resume"), 200, "resume again")
        self.assertIn(again["status"], {"accepted", "splitting", "active"})

        new_send_at = later + HOUR
        patched = self.ok(self.api("PATCH", url, {"send_at": rfc3339(new_send_at)}), 200,
                          "PATCH send_at")
        self.check_request(patched)
        self.assertEqual(parse_time(patched["send_at"]), new_send_at)
        self.assertEqual(patched["priority"], -3, "PATCH of send_at changed the priority")
        patched = self.ok(self.api("PATCH", url, {"send_at": later, "priority": 1000}), 200,
                          "PATCH both")
        self.assertEqual((parse_time(patched["send_at"]), patched["priority"]), (later, 1000))
        row = h.sql(f"SELECT extract(epoch FROM send_at), priority FROM fairq.requests"
                    f" WHERE id = {rid}")[0]
        self.assertEqual((float(row[0]), int(row[1])), (later, 1000))

        cancelled = self.ok(self.api("POST", url + "/cancel"), 200, "cancel")
        self.check_request(cancelled)
        self.assertEqual(cancelled["status"], "cancelled")
        self.assertIsNotNone(cancelled["finished_at"])
        self.assertEqual(self.ok(self.api("POST", url + "/cancel"), 200,
                                 "cancel again")["status"], "cancelled")
        for method, path, body in (("POST", url + "/pause", None), ("POST", url + "/resume", None),
                                   ("PATCH", url, {"priority": 5})):
            self.assert_error(self.api(method, path, body), 409, f"{method} {path} of a "
                                                                 "cancelled request")
        self.assertEqual(self.get_request(rid)["priority"], 1000)
        self.assertEqual(h.request(rid)["status"], "cancelled")

        missing = rid + 1000
        for method, path, body in (("GET", f"/v1/requests/{missing}", None),
                                   ("POST", f"/v1/requests/{missing}/cancel", None),
                                   ("POST", f"/v1/requests/{missing}/pause", None),
                                   ("POST", f"/v1/requests/{missing}/resume", None),
                                   ("PATCH", f"/v1/requests/{missing}", {"priority": 1}),
                                   ("GET", f"/v1/requests/{missing}/rejects", None),
                                   ("GET", "/v1/messages/987654", None),
                                   ("POST", "/v1/messages/987654/retry", None),
                                   ("GET", "/v1/tenants/nosuch", None),
                                   ("POST", "/v1/tenants/nosuch/tokens", None)):
            self.assert_error(self.api(method, path, body), 404, f"{method} {path}")

        # A request split into messages (send_at now, no sender) cancelled:
        # its messages are counted cancelled
        split_id = self.submit_ok(submit_body("acme", recipients=recipients(3)))["id"]
        self.wait_split(split_id, 3)
        # fairqd's log names the tenant, as an operator knows it, not its id
        self.fairqd.wait_log(rf'scheduler: request {split_id} of tenant "acme" is open', 5)
        cancelled = self.ok(self.api("POST", f"/v1/requests/{split_id}/cancel"), 200, "cancel")
        self.assertEqual((cancelled["status"], cancelled["cancelled"], cancelled["pending"]),
                         ("cancelled", 3, 0), cancelled)
        self.assertEqual({m["status"] for m in self.messages_of(split_id)}, {"cancelled"})

        # Last, as it waits: the cancelled request's recipients, never split
        # (its send_at is an hour away), are counted cancelled, not pending
        final = self.h.wait(lambda: (lambda r: r if r["cancelled"] == 4 else None)(
            self.get_request(rid)), 10, "the four unsplit recipients of the cancelled request to "
            "be counted as cancelled, not pending",
            interval=0.2, describe=lambda: f"it is {self.get_request(rid)}; row {h.request(rid)}")
        self.assertEqual((final["pending"], final["sent"], final["total"]), (0, 0, 4))

    def test_crlf_recipients_are_rejected_and_never_sent(self):
        """Recipients with CR or LF in "to" (header injection), or in a
        field the Subject uses, or whose "to" is not a string are rejected
        alone, listed with a reason by /rejects, and never reach the SMTP
        server; the good ones are delivered. A finished request then answers
        409. (A recipient that is not an object with "to" is a 400 for the
        whole submit: test_http_malformed.)"""
        self.start(senders=1, **FAIRQD)
        h = self.h
        self.put_tenant("acme")
        bad = {1: "evil@example.org\r\nBcc: victim1@evil.test",
               2: "evil2@example.org\nBcc: victim2@evil.test",
               3: "evil3@example.org\rX-Evil: victim3",
               4: "zed@example.org", 5: None, 6: None}
        recips = [{"to": "ann@example.org", "fields": {"name": "Ann"}},
                  {"to": bad[1], "fields": {"name": "E1"}},
                  {"to": bad[2], "fields": {"name": "E2"}},
                  {"to": bad[3], "fields": {"name": "E3"}},
                  {"to": "zed@example.org", "fields": {"name": "Zed\r\nBcc: victim4@evil.test"}},
                  {"to": None, "fields": {"name": "Nobody"}},
                  {"to": 42},
                  {"to": "bob@example.org", "fields": {"name": "Bob"}}]
        request = self.submit_ok(submit_body("acme", recipients=recips))
        rid = request["id"]
        self.assertEqual(request["total"], 8)
        done = self.wait_request(rid, "done")
        # zed's name would put CR LF into the Subject: refused at split
        self.assertEqual((done["sent"], done["dead"], done["rejected"], done["pending"]),
                         (2, 0, 6, 0), done)

        payload = self.ok(self.api("GET", f"/v1/requests/{rid}/rejects"), 200, "rejects")
        self.assertEqual(set(payload), {"rejects", "next_after"})
        self.assertIsNone(payload["next_after"])
        rejects = payload["rejects"]
        self.assertEqual([r["position"] for r in rejects], [1, 2, 3, 4, 5, 6], rejects)
        self.assertIn("subject", rejects[3]["reason"])
        for r in rejects:
            self.assertEqual(set(r), {"position", "recipient", "reason"}, r)
            self.assertEqual(r["recipient"], bad[r["position"]], r)
            self.assertIsInstance(r["reason"], str, r)
            self.assertTrue(r["reason"], r)
        self.note(f"reasons: {[r['reason'] for r in rejects]}")
        # Paging the rejects two at a time
        seen, after = [], None
        for _ in range(6):
            page = self.ok(self.api("GET", f"/v1/requests/{rid}/rejects?limit=2" +
                                    (f"&after={after}" if after is not None else "")), 200,
                           "rejects page")
            self.assertLessEqual(len(page["rejects"]), 2)
            seen += [r["position"] for r in page["rejects"]]
            after = page["next_after"]
            if after is None:
                break
            self.assertEqual(after, seen[-1])
        self.assertEqual(seen, [1, 2, 3, 4, 5, 6])

        # The sink saw the three good recipients only, and no injected header
        records = self.sink.records()
        self.assertEqual(sorted(to for r in records for to in r["to"]),
                         ["ann@example.org", "bob@example.org"])
        for r in records:
            names = {name.lower() for name in r["headers"]}
            self.assertFalse(names & {"bcc", "x-evil"}, f"an injected header reached the sink: "
                                                        f"{r['headers']}")
            head = r["raw"].split("\n\n", 1)[0] if "\n\n" in r["raw"] else r["raw"]
            for line in head.replace("\r\n", "\n").split("\n"):
                self.assertFalse(line.lower().startswith(("bcc:", "x-evil:")),
                                 f"injected header line {line!r}")
            self.assertNotIn("victim", " ".join(r["to"]))
        messages = self.messages_of(rid)
        self.assertEqual(sorted(m["to"] for m in messages),
                         ["ann@example.org", "bob@example.org"])
        self.assertEqual(self.count("fairq.messages", r"recipient ~ '[\r\n]'"), 0)

        url = f"/v1/requests/{rid}"
        for method, path, body in (("POST", url + "/cancel", None), ("POST", url + "/pause", None),
                                   ("POST", url + "/resume", None),
                                   ("PATCH", url, {"priority": 3})):
            self.assert_error(self.api(method, path, body), 409, f"{method} {path} of a done "
                                                                 "request")
        self.assertEqual(self.get_request(rid)["status"], "done")

        # Every recipient refused: the request is finished ("rejected", or
        # "done": API.md does not say which), nothing sent
        rid = self.submit_ok(submit_body("acme", recipients=[{"to": "a\r\nb@example.org"},
                                                             {"to": 5}]))["id"]
        final = self.wait_request(rid, ("rejected", "done"))
        self.note(f"a request whose recipients were all rejected is {final['status']}")
        self.assertEqual((final["rejected"], final["total"]), (2, 2))
        self.assertIsNotNone(final["finished_at"])
        self.assert_error(self.api("POST", f"/v1/requests/{rid}/cancel"), 409,
                          "cancel of a request whose recipients were all rejected")
        self.assertEqual(self.ok(self.api("GET", f"/v1/requests/{rid}/rejects"), 200,
                                 "rejects")["rejects"][0]["recipient"], "a\r\nb@example.org")
        self.assertEqual(len(self.sink.records()), done["sent"])

    def test_submit_with_headers_and_reply_to(self):
        """A submit's "headers" and "reply_to" are kept with the request,
        shown by its object (in the 202, GET and the list), carried to each
        message and written into the mail the SMTP server receives, as given
        (a {{field}} in a value stays literal); a request without them shows
        {} and null and its mail has no Reply-To. An Idempotency-Key repeats
        only the same headers: other headers are another request (422)."""
        self.start(senders=1, **FAIRQD)
        self.put_tenant("acme")
        headers = {"X-Campaign": "spring", "List-Id": "<news.example.org>",
                   "List-Unsubscribe": "<https://acme.example/u/{{name}}>",
                   "precedence": "bulk"}
        body = submit_body("acme", headers=headers, reply_to="help@acme.example",
                           recipients=recipients(2))
        answer = self.submit(body, key="spring-1")
        request = self.ok(answer, 202, "a submit with headers and reply_to")
        self.assertEqual(request["headers"], headers)
        self.assertEqual(request["reply_to"], "help@acme.example")
        rid = request["id"]
        got = self.get_request(rid)
        self.assertEqual((got["headers"], got["reply_to"]), (headers, "help@acme.example"))
        listed = self.ok(self.api("GET", "/v1/requests?tenant=acme"), 200, "list")["requests"]
        self.assertEqual([r["headers"] for r in listed if r["id"] == rid], [headers])
        # The same headers in another order replay it; other headers are a 422
        again = self.submit(dict(body, headers=dict(reversed(list(headers.items())))),
                            key="spring-1")
        self.assertEqual(self.ok(again, 202, "the same headers again")["id"], rid)
        self.assertEqual(self.replayed(again), "true")
        for label, other in (("other headers", dict(body, headers={"X-Campaign": "autumn"})),
                             ("another reply_to", dict(body, reply_to="other@acme.example")),
                             ("no headers", submit_body("acme", recipients=recipients(2)))):
            self.assert_error(self.submit(other, key="spring-1"), 422, f"{label}, a used key")

        plain = self.submit_ok(submit_body("acme", recipients=[
            {"to": "plain@example.org", "fields": {"name": "Plain"}}]))
        self.assertEqual((plain["headers"], plain["reply_to"]), ({}, None))
        self.wait_request(rid, "done")
        self.wait_request(plain["id"], "done")

        records = {r["to"][0]: r for r in self.sink.records()}
        for i in range(2):
            got = records[f"user{i}@example.org"]["headers"]
            for name, value in headers.items():
                self.assertEqual(got.get(name), value, f"{name} of the delivered mail: {got}")
            self.assertEqual(got.get("Reply-To"), "help@acme.example", got)
            self.assertEqual(got.get("From"), "news@acme.example", got)
            self.assertEqual(sum(1 for n in got if n.lower() == "reply-to"), 1, got)
        got = records["plain@example.org"]["headers"]
        self.assertFalse({n.lower() for n in got} & {"reply-to", "x-campaign", "list-id"}, got)

    def test_submit_with_text_body(self):
        """A submit's "text_body" beside an HTML body is kept with the
        request, shown by its object (202, GET, list; null for none), and
        rendered per recipient into a plain-text part: the mail the SMTP
        server receives is multipart/alternative, the text part first and
        the HTML second, each with the recipient's fields (escaped in the
        HTML only). A field of text_body alone is required of each
        recipient too. An Idempotency-Key repeats only the same text_body."""
        import email
        import email.policy
        self.start(senders=1, **FAIRQD)
        self.put_tenant("acme")
        people = [{"to": "ann@example.org", "fields": {"name": "Ann & Bo", "code": "A1"}},
                  {"to": "cy@example.org", "fields": {"name": "Cy <3", "code": "C3"}},
                  {"to": "nocode@example.org", "fields": {"name": "No code"}}]
        body = submit_body("acme", html=True, body="<p>Dear {{name}}</p>",
                           text_body="Dear {{name}},\nyour code is {{code}}.\n",
                           recipients=people)
        request = self.ok(self.submit(body, key="alt-1"), 202, "a submit with text_body")
        self.assertEqual(request["text_body"], body["text_body"])
        rid = request["id"]
        self.assertEqual(self.get_request(rid)["text_body"], body["text_body"])
        listed = self.ok(self.api("GET", "/v1/requests?tenant=acme"), 200, "list")["requests"]
        self.assertEqual([r["text_body"] for r in listed if r["id"] == rid], [body["text_body"]])
        again = self.submit(body, key="alt-1")
        self.assertEqual(self.ok(again, 202, "the same text_body again")["id"], rid)
        for label, other in (("another text_body", dict(body, text_body="Hi {{name}}")),
                             ("no text_body", {k: v for k, v in body.items()
                                               if k != "text_body"})):
            self.assert_error(self.submit(other, key="alt-1"), 422, f"{label}, a used key")
        plain = self.submit_ok(submit_body("acme", html=True, body="<p>{{name}}</p>", recipients=[
            {"to": "single@example.org", "fields": {"name": "Single"}}]))
        self.assertIsNone(plain["text_body"])
        done = self.wait_request(rid, "done")
        self.assertEqual((done["sent"], done["rejected"]), (2, 1), done)
        self.wait_request(plain["id"], "done")

        records = {r["to"][0]: r for r in self.sink.records()}
        self.assertNotIn("nocode@example.org", records)
        for to, name, code in (("ann@example.org", "Ann & Bo", "A1"),
                               ("cy@example.org", "Cy <3", "C3")):
            record = records[to]
            self.assertEqual(record["content_type"], "multipart/alternative", record["headers"])
            msg = email.message_from_string(record["raw"], policy=email.policy.default)
            parts = list(msg.iter_parts())
            self.assertEqual([p.get_content_type() for p in parts], ["text/plain", "text/html"])
            text, html = (p.get_content().replace("\r\n", "\n") for p in parts)
            self.assertEqual(text, f"Dear {name},\nyour code is {code}.\n")
            escaped = name.replace("&", "&amp;").replace("<", "&lt;")
            self.assertEqual(html.rstrip("\n"), f"<p>Dear {escaped}</p>")
            boundary = msg.get_boundary()
            self.assertTrue(boundary)
            self.assertEqual(record["raw"].count("--" + boundary), 3)
        single = records["single@example.org"]
        self.assertEqual(single["content_type"], "text/html")
        self.assertNotIn("multipart", single["raw"])

    def test_messages_search(self):
        """GET /v1/messages by request, tenant, status, exact address and
        domain (both case-insensitive), paged by after/next_after; GET
        /v1/messages/{id}; retry of a message that is not dead is a 409."""
        self.start(**FAIRQD)  # No sender: the messages stay pending
        self.put_tenant("acme")
        self.put_tenant("bravo")
        one = self.submit_ok(submit_body("acme", recipients=[
            {"to": "Ann@Example.org", "fields": {"name": "Ann"}},
            {"to": "bob@example.org", "fields": {"name": "Bob"}},
            {"to": "cid@other.test", "fields": {"name": "Cid"}}]))["id"]
        two = self.submit_ok(submit_body("bravo", recipients=[
            {"to": "ann@example.org", "fields": {"name": "Ann"}}]))["id"]
        ones = self.wait_split(one, 3)
        twos = self.wait_split(two, 1)
        by_to = {m["to"]: m for m in ones}
        self.assertEqual(set(by_to), {"Ann@Example.org", "bob@example.org", "cid@other.test"})
        for m in ones:
            self.assertEqual((m["request"], m["tenant"], m["status"], m["attempts"]),
                             (one, "acme", "pending", 0), m)
            self.assertIsNone(m["last_error"])

        def search(query):
            payload = self.ok(self.api("GET", "/v1/messages" + query), 200, query)
            self.assertEqual(set(payload), {"messages", "next_after"}, payload)
            for m in payload["messages"]:
                self.check_message(m)
            ids = [m["id"] for m in payload["messages"]]
            self.assertEqual(ids, sorted(ids), f"{query}: not in id order")
            return ids

        all_ids = sorted([m["id"] for m in ones] + [twos[0]["id"]])
        self.assertEqual(search(""), all_ids)
        self.assertEqual(search("?tenant=bravo"), [twos[0]["id"]])
        self.assertEqual(search(f"?request={one}&status=pending"), sorted(by_to[t]["id"]
                                                                          for t in by_to))
        self.assertEqual(search("?status=sent"), [])
        self.assertEqual(search("?to=ANN@example.ORG"),
                         sorted([by_to["Ann@Example.org"]["id"], twos[0]["id"]]))
        self.assertEqual(search("?to=ann@example.org&tenant=acme"),
                         [by_to["Ann@Example.org"]["id"]])
        self.assertEqual(search("?domain=EXAMPLE.org&request=" + str(one)),
                         sorted([by_to["Ann@Example.org"]["id"], by_to["bob@example.org"]["id"]]))
        self.assertEqual(search("?domain=other.test"), [by_to["cid@other.test"]["id"]])
        # Paging one at a time
        seen, after = [], None
        for _ in range(10):
            payload = self.ok(self.api("GET", "/v1/messages?limit=1" +
                                       (f"&after={after}" if after is not None else "")), 200,
                              "page")
            self.assertLessEqual(len(payload["messages"]), 1)
            seen += [m["id"] for m in payload["messages"]]
            after = payload["next_after"]
            if after is None:
                break
            self.assertEqual(after, seen[-1])
        self.assertEqual(seen, all_ids)

        m = by_to["bob@example.org"]
        got = self.ok(self.api("GET", f"/v1/messages/{m['id']}"), 200, "GET message")
        self.check_message(got)
        self.assertEqual(got, m)
        self.assert_error(self.api("POST", f"/v1/messages/{m['id']}/retry"), 409,
                          "retry of a pending message")

    def test_retry_dead_message(self):
        """A message refused with 550 is dead; POST /retry makes it failed
        and due now, and it is delivered once the server accepts it; a
        retry of a sent message is a 409."""
        self.start(senders=1, **FAIRQD)
        self.sink.set_rules({"rules": [{"match": "nobody@", "reply": "550 5.1.1 no such user"}]})
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme", recipients=[
            {"to": "ann@example.org", "fields": {"name": "Ann"}},
            {"to": "nobody@example.org", "fields": {"name": "Nobody"}}]))["id"]
        done = self.wait_request(rid, "done")
        self.assertEqual((done["sent"], done["dead"]), (1, 1), done)
        dead = self.messages_of(rid, query="&status=dead")
        self.assertEqual(len(dead), 1)
        dead = dead[0]
        self.assertEqual((dead["to"], dead["attempts"]), ("nobody@example.org", 1))
        self.assertIn("550", dead["last_error"])
        self.assertIsNotNone(dead["last_attempt_at"])

        self.sink.set_rules({})
        retried = self.ok(self.api("POST", f"/v1/messages/{dead['id']}/retry"), 200, "retry")
        self.check_message(retried)
        self.assertEqual((retried["id"], retried["status"]), (dead["id"], "failed"))
        self.assertIsNotNone(retried["next_attempt_at"])
        self.assertLess(parse_time(retried["next_attempt_at"]), time.time() + 5, "not due now")
        sent = self.h.wait(lambda: (lambda m: m if m["status"] == "sent" else None)(
            self.ok(self.api("GET", f"/v1/messages/{dead['id']}"), 200, "GET message")),
            fq_api.DELIVERY_TIMEOUT_S, "the retried message to be sent", interval=0.2)
        self.assertEqual(sent["attempts"], 2)
        final = self.wait_request(rid, "done")
        self.assertEqual((final["sent"], final["dead"]), (2, 0), final)
        self.assertEqual(sorted(to for r in self.sink.records() for to in r["to"]),
                         ["ann@example.org", "nobody@example.org"])
        self.assert_error(self.api("POST", f"/v1/messages/{dead['id']}/retry"), 409,
                          "retry of a sent message")

    def test_tenants(self):
        """PUT creates (201) and updates (200) a tenant, any subset of its
        settings; GET lists and shows them with their live figures; POST
        /tokens makes a working tenant token stored as its SHA-256 only."""
        self.start(**FAIRQD)
        created = self.put_tenant("acme", 201, weight=3, max_inflight=50, submit_rate=100)
        self.assertEqual((created["name"], created["weight"], created["max_inflight"],
                          created["submit_rate"]), ("acme", 3, 50, 100))
        self.assertEqual((created["open_requests"], created["depth"], created["inflight"]),
                         (0, 0, 0))
        updated = self.put_tenant("acme", 200, weight=5)
        self.assertEqual((updated["weight"], updated["max_inflight"], updated["submit_rate"]),
                         (5, 50, 100), "PUT of one setting changed the others")
        updated = self.put_tenant("acme", 200, submit_rate=None)
        self.assertIsNone(updated["submit_rate"])
        self.assertEqual(self.put_tenant("acme", 200)["weight"], 5, "PUT {} changed something")
        default = self.put_tenant("bravo.co-2", 201)
        self.assertEqual((default["weight"], default["max_inflight"], default["submit_rate"]),
                         (1, 1000, None))
        self.assertEqual(self.h.sql("SELECT name, weight, max_inflight, submit_rate FROM"
                                    " fairq.tenants ORDER BY name"),
                         [["acme", "5", "50", ""], ["bravo.co-2", "1", "1000", ""]])

        listed = self.ok(self.api("GET", "/v1/tenants"), 200, "tenants")
        self.assertEqual(set(listed), {"tenants"})
        for t in listed["tenants"]:
            self.check_tenant(t)
        self.assertEqual(sorted(t["name"] for t in listed["tenants"]), ["acme", "bravo.co-2"])

        # Live figures: a request of 3 split and waiting (no sender)
        rid = self.submit_ok(submit_body("acme", recipients=recipients(3)))["id"]
        self.wait_split(rid, 3)

        def figures():
            t = self.ok(self.api("GET", "/v1/tenants/acme"), 200, "GET tenant")
            self.check_tenant(t)
            return t if (t["open_requests"], t["depth"], t["unsplit"]) == (1, 3, 0) else None
        t = self.h.wait(figures, 20, "acme's figures to show its request", interval=0.3)
        self.assertEqual((t["name"], t["inflight"], t["failed"]), ("acme", 0, 0))
        self.assertGreaterEqual(t["oldest_pending_age_s"], 0)

        # Tokens: shown once, work for their tenant, stored hashed
        first, second = self.new_token("acme"), self.new_token("acme")
        self.assertNotEqual(first, second)
        for token in (first, second):
            mine = self.ok(self.api("GET", "/v1/tenants", token=token), 200, "tenant's list")
            self.assertEqual([t["name"] for t in mine["tenants"]], ["acme"])
            self.assertEqual(self.h.scalar(
                "SELECT t.name FROM fairq.api_tokens k JOIN fairq.tenants t ON t.id = k.tenant_id"
                f" WHERE k.hash = sha256(convert_to({fq_api.fq_e2e.lit(token)}, 'UTF8'))"), "acme")
        dump = " ".join(" ".join(row) for row in self.h.sql(
            "SELECT encode(hash, 'escape'), encode(hash, 'hex') FROM fairq.api_tokens"))
        self.assertNotIn(first[3:20], dump, "a token is stored in the clear")

        # Listed by id and age, never shown again; revoked by id: that token
        # answers 401 at once, the other goes on working
        listed = self.ok(self.api("GET", "/v1/tenants/acme/tokens"), 200, "acme's tokens")
        self.assertEqual(set(listed), {"tenant", "tokens"})
        ids = [t["id"] for t in listed["tokens"]]
        self.assertEqual(len(ids), 2)
        for t in listed["tokens"]:
            self.assertEqual(set(t), {"id", "created_at"}, t)
            self.assertRegex(t["created_at"], fq_api.RFC3339_UTC)
        self.assertNotIn(first, json.dumps(listed))
        self.assert_error(self.api("GET", "/v1/tenants/acme/tokens", token=first), 403,
                          "a tenant listing tokens")
        self.assert_error(self.api("DELETE", f"/v1/tenants/acme/tokens/{ids[0]}", token=second),
                          403, "a tenant revoking a token")
        self.put_tenant("bravo")
        self.assert_error(self.api("DELETE", f"/v1/tenants/bravo/tokens/{ids[0]}"), 404,
                          "revoking acme's token as bravo's")
        self.assert_error(self.api("DELETE", "/v1/tenants/acme/tokens/abc"), 400,
                          "a token id that is not a number")
        revoked = self.ok(self.api("DELETE", f"/v1/tenants/acme/tokens/{ids[0]}"), 200, "revoke")
        self.assertEqual(revoked, {"tenant": "acme", "id": ids[0], "revoked": True})
        self.assert_error(self.api("GET", "/v1/tenants", token=first), 401, "a revoked token")
        self.ok(self.api("GET", "/v1/tenants", token=second), 200, "the other token")
        self.assert_error(self.api("DELETE", f"/v1/tenants/acme/tokens/{ids[0]}"), 404,
                          "revoking it again")
        self.assertEqual([t["id"] for t in self.ok(self.api("GET", "/v1/tenants/acme/tokens"), 200,
                                                   "acme's tokens")["tokens"]], ids[1:])

    def test_tenant_send_budgets(self):
        """PUT sets a tenant's max_send_rate and daily_quota (a new tenant
        has none unless given), the rate written back in its canonical
        form; a PUT without them keeps them and null removes each;
        sent_today is the leader's count of today (UTC), whatever it
        counted on other days; every malformed value is a 400 naming its
        problem, with nothing changed; a tenant token reads them but may
        not change them (403)."""
        self.start(**FAIRQD)
        created = self.put_tenant("acme", 201, max_send_rate="100/s", daily_quota=50000)
        self.assertEqual((created["max_send_rate"], created["daily_quota"],
                          created["sent_today"]), ("100/s", 50000, 0))
        plain = self.put_tenant("bravo", 201)
        self.assertEqual((plain["max_send_rate"], plain["daily_quota"], plain["sent_today"]),
                         (None, None, 0))

        def stored():
            return self.h.sql("SELECT name, send_rate_count, send_rate_period_s, daily_quota"
                              " FROM fairq.tenants ORDER BY name")
        self.assertEqual(stored(), [["acme", "100", "1", "50000"], ["bravo", "", "", ""]])
        shown = self.ok(self.api("GET", "/v1/tenants/acme"), 200, "GET acme")
        self.check_tenant(shown)
        self.assertEqual((shown["max_send_rate"], shown["daily_quota"]), ("100/s", 50000))
        listed = {t["name"]: t for t in
                  self.ok(self.api("GET", "/v1/tenants"), 200, "tenants")["tenants"]}
        self.assertEqual((listed["acme"]["max_send_rate"], listed["acme"]["daily_quota"],
                          listed["bravo"]["max_send_rate"], listed["bravo"]["daily_quota"]),
                         ("100/s", 50000, None, None))

        # Each unit, written back as the canonical one; the quota kept
        for given, canonical, period in (("5/m", "5/min", 60), ("7/sec", "7/s", 1),
                                         ("10000/hour", "10000/h", 3600),
                                         ("1000/day", "1000/d", 86400),
                                         ("1000000000/d", "1000000000/d", 86400),
                                         ("1/s", "1/s", 1)):
            t = self.put_tenant("acme", 200, max_send_rate=given)
            self.assertEqual((t["max_send_rate"], t["daily_quota"]), (canonical, 50000), given)
            self.assertEqual(stored()[0], ["acme", canonical.split("/")[0], str(period),
                                           "50000"], given)
        for quota in (1, 1000000000000):
            self.assertEqual(self.put_tenant("acme", 200, daily_quota=quota)["daily_quota"],
                             quota)
        # A PUT of other fields, or of nothing, keeps them
        t = self.put_tenant("acme", 200, weight=2, submit_rate=30)
        self.assertEqual((t["max_send_rate"], t["daily_quota"]), ("1/s", 1000000000000))
        self.assertEqual(self.put_tenant("acme", 200)["max_send_rate"], "1/s")
        self.put_tenant("acme", 200, max_send_rate="10000/h", daily_quota=50000)

        # sent_today: today's UTC row as the leader reserves and records it
        # (fairq.reserve_sends); yesterday's count is not today's
        tid = self.h.scalar("SELECT id FROM fairq.tenants WHERE name = 'acme'")
        self.h.sql(f"SELECT fairq.reserve_sends({tid}, (now() AT TIME ZONE 'UTC')::date,"
                   " 100, 50000, 37)")
        self.h.sql("INSERT INTO fairq.tenant_send_days (tenant_id, day, reserved, used)"
                   f" VALUES ({tid}, (now() AT TIME ZONE 'UTC')::date - 1, 900, 880)")
        self.assertEqual(self.ok(self.api("GET", "/v1/tenants/acme"), 200,
                                 "GET acme")["sent_today"], 37)
        listed = {t["name"]: t for t in
                  self.ok(self.api("GET", "/v1/tenants"), 200, "tenants")["tenants"]}
        self.assertEqual((listed["acme"]["sent_today"], listed["bravo"]["sent_today"]), (37, 0))

        # A tenant token sees its own budget, and may not change it
        token = self.new_token("acme")
        mine = self.ok(self.api("GET", "/v1/tenants/acme", token=token), 200, "own tenant")
        self.assertEqual((mine["max_send_rate"], mine["daily_quota"], mine["sent_today"]),
                         ("10000/h", 50000, 37))
        before = stored()
        for body in ({"max_send_rate": "1000000/s"}, {"max_send_rate": None},
                     {"daily_quota": 1000000000000}, {"daily_quota": None}):
            self.assert_error(self.api("PUT", "/v1/tenants/acme", body, token=token), 403,
                              f"acme's token: PUT {body}")
        self.assertEqual(stored(), before)

        # Malformed: 400 with what is wrong, nothing changed or created
        not_a_rate = ('max_send_rate must be a text such as "100/s", "5/min", "10000/h" or'
                      ' "1000/d", or null')
        not_a_quota = "daily_quota must be an integer within 1..1000000000000, or null"
        refused = [
            ({"max_send_rate": 100}, [not_a_rate]),
            ({"max_send_rate": 1.5}, [not_a_rate]),
            ({"max_send_rate": True}, [not_a_rate]),
            ({"max_send_rate": ["1/s"]}, [not_a_rate]),
            ({"max_send_rate": {"count": 1, "per": "s"}}, [not_a_rate]),
            ({"max_send_rate": ""}, ['max_send_rate: rate "": empty']),
            ({"max_send_rate": "100"}, ['max_send_rate: rate "100": no unit']),
            ({"max_send_rate": "/s"}, ['rate "/s": no count before "/"']),
            ({"max_send_rate": "0/s"}, ['max_send_rate: rate "0/s": count "0" is not a whole'
                                        ' number from 1 to 1000000000']),
            ({"max_send_rate": "-5/s"}, ['rate "-5/s": count "-5"']),
            ({"max_send_rate": "1.5/s"}, ['rate "1.5/s": count "1.5"']),
            ({"max_send_rate": "1000000001/s"}, ['rate "1000000001/s": count']),
            ({"max_send_rate": "100/x"}, ['max_send_rate: rate "100/x": unknown unit "x"',
                                          "units are s, min, h, d"]),
            ({"max_send_rate": "100/S"}, ['rate "100/S": unknown unit "S"']),
            ({"max_send_rate": "100/month"}, ['unknown unit "month"']),
            ({"max_send_rate": " 100/s"}, ['rate " 100/s"']),
            ({"max_send_rate": "100/s "}, ['unknown unit "s "']),
            ({"daily_quota": 0}, [not_a_quota]),
            ({"daily_quota": -1}, [not_a_quota]),
            ({"daily_quota": 1000000000001}, [not_a_quota]),
            ({"daily_quota": 2 ** 62}, [not_a_quota]),
            ({"daily_quota": "100"}, [not_a_quota]),
            ({"daily_quota": 1.5}, [not_a_quota]),
            ({"daily_quota": 1e3}, [not_a_quota]),
            ({"daily_quota": True}, [not_a_quota]),
            ({"daily_quota": [1]}, [not_a_quota]),
            # One good field does not carry a bad one
            ({"weight": 3, "daily_quota": 0}, [not_a_quota]),
            ({"max_send_rate": "5/min", "daily_quota": "x"}, [not_a_quota]),
            ({"max_send_rate": "5/fortnight", "daily_quota": 7}, ['unknown unit "fortnight"']),
        ]
        before = stored()
        for name in ("acme", "newcomer"):
            for body, words in refused:
                answer = self.api("PUT", f"/v1/tenants/{name}", body)
                self.assert_error(answer, 400, f"PUT {name} {body}")
                for word in words:
                    self.assertIn(word, answer[2]["detail"], f"PUT {name} {body}")
        self.assertEqual(stored(), before)

        # null removes each, the one without the other; the day's count stays
        t = self.put_tenant("acme", 200, max_send_rate=None)
        self.assertEqual((t["max_send_rate"], t["daily_quota"], t["sent_today"]),
                         (None, 50000, 37))
        t = self.put_tenant("acme", 200, daily_quota=None)
        self.assertEqual((t["max_send_rate"], t["daily_quota"], t["sent_today"]), (None, None, 37))
        self.assertEqual((t["weight"], t["submit_rate"]), (2, 30))
        self.assertEqual(stored(), [["acme", "", "", ""], ["bravo", "", "", ""]])
        # ... and null on what has none is no error
        t = self.put_tenant("bravo", 200, max_send_rate=None, daily_quota=None)
        self.assertEqual((t["max_send_rate"], t["daily_quota"]), (None, None))

    def test_sighup_reloads_http_settings(self):
        """SIGHUP makes the HTTP API take its new http_body_max,
        metrics_public and tenant defaults for the calls that follow, with
        no restart: the running fairqd answers by the new file."""
        conf = os.path.join(self.h.dir, "fairqd.conf")

        def write(text):
            with open(conf + ".new", "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(conf + ".new", conf)

        write("http_body_max = 4096\ntenant_weight = 3\n")
        fairqd = self.start(config=conf, **FAIRQD)
        self.assertEqual(self.put_tenant("acme", 201)["weight"], 3)
        big = submit_body(recipients=recipients(120))
        self.assertGreater(len(json.dumps(big)), 4096)
        self.assert_error(self.api("POST", "/v1/requests", big), 413, "over http_body_max")
        self.assert_error(self.api("GET", "/metrics", token=None), 401, "/metrics without a token")

        write("http_body_max = 65536\ntenant_weight = 5\ntenant_max_inflight = 40\n"
              "tenant_submit_rate = 30\nmetrics_public = true\n")
        fairqd.signal(signal.SIGHUP)
        fairqd.wait_log(r"reloaded config .*http_body_max 4096 -> 65536")
        self.assertNotRegex(fairqd.text(), r"(http_body_max|tenant_\w+|metrics_public)"
                                           r" needs a restart")
        created = self.put_tenant("bravo", 201)
        self.assertEqual((created["weight"], created["max_inflight"], created["submit_rate"]),
                         (5, 40, 30))
        self.assertEqual(self.put_tenant("acme", 200)["weight"], 3,
                         "a reload changed an existing tenant")
        self.ok(self.api("POST", "/v1/requests", big), 202, "the same body, under the new limit")
        status, _, _ = self.api("GET", "/metrics", token=None)
        self.assertEqual(status, 200, "/metrics is public after the reload")

    def test_api_md_examples_match_answers(self):
        """Every example answer and body of api/API.md is what the server
        really answers or takes: the same keys at every level, values of
        the same JSON types ("..." and null stand for any value), and the
        schema version of /healthz the one this build migrates to."""
        self.start(**FAIRQD)  # No sender: the messages stay pending
        self.put_tenant("acme")
        examples = api_md_examples()
        self.assertGreaterEqual(len(examples), 10, "API.md's examples were not found")
        answers = {}

        def answer(name, method, path, body=None, status=200):
            got = self.api(method, path, body)
            self.assertEqual(got[0], status, f"{name}: {got[2]!r:.300}")
            answers[name] = got[2]
            return got[2]

        answer("healthz", "GET", "/healthz")
        submitted = [e for e in examples if e.section.startswith("POST /v1/requests")
                     and e.value is not None and "recipients" in e.value]
        self.assertEqual(len(submitted), 1, "API.md's submit example")
        rid = answer("submit", "POST", "/v1/requests", submitted[0].value, 202)["id"]
        answer("request", "GET", f"/v1/requests/{rid}")
        answer("requests", "GET", "/v1/requests")
        # A request with a rejected recipient, and its messages split
        bad = self.submit_ok(submit_body("acme", recipients=recipients(2) + [
            {"to": "bad\r\naddress", "fields": {"name": "B"}}]))["id"]
        self.wait_request(bad, ("active", "done"))
        self.h.wait(lambda: self.get_request(bad)["rejected"] == 1, fq_api.SPLIT_TIMEOUT_S,
                    "the bad recipient to be rejected", interval=0.2)
        answer("rejects", "GET", f"/v1/requests/{bad}/rejects")
        messages = answer("messages", "GET", f"/v1/messages?request={bad}")["messages"]
        answer("message", "GET", f"/v1/messages/{messages[0]['id']}")
        # One of them failed, as a sender would leave it (its request's
        # counters are not this test's subject)
        self.h.sql("UPDATE fairq.messages SET status = 'failed', try_count = 1,"
                   " next_attempt_at = now() + interval '1 day',"
                   " last_error = '550 5.1.1 <ann@example.org>: no such user'"
                   f" WHERE id = {messages[1]['id']}")
        self.assertEqual(len(answer("errors", "GET", "/v1/errors")["errors"]), 1)
        # The bulk action's example body, taken as it is (a dry run)
        bulk = [e for e in examples if e.section.startswith("POST /v1/messages/bulk")
                and e.value is not None and "action" in e.value and "matched" not in e.value]
        self.assertEqual(len(bulk), 1, "API.md's bulk action example")
        self.assertTrue(bulk[0].value.get("dry_run"), "API.md's bulk example changes messages")
        answer("bulk", "POST", "/v1/messages/bulk", bulk[0].value)
        answer("shape", "GET", "/v1/shape")
        # The http request of "Channels": taken as it is, and shown as the
        # fragment there shows it
        channels = [e for e in examples if e.section.startswith("Channels")
                    and e.value is not None]
        http_submits = [e for e in channels if "recipients" in e.value]
        self.assertEqual(len(http_submits), 1, "API.md's http submit example")
        http_request = answer("http submit", "POST", "/v1/requests", http_submits[0].value, 202)
        shown = [e for e in channels if e.keys == {"channel", "http"}]
        self.assertEqual(len(shown), 1, "API.md's http request fragment")
        channel_failures = [f"line {shown[0].line} (http request): {p}" for p in
                            json_differences(shown[0].value,
                                             {k: http_request[k] for k in ("channel", "http")})]
        self.assertFalse(channel_failures, "\n".join(channel_failures))
        answer("tenant", "GET", "/v1/tenants/acme")
        answer("tenants", "GET", "/v1/tenants")
        answer("whoami", "GET", "/v1/whoami")
        answer("senders", "GET", "/v1/senders")
        answer("share", "GET", "/v1/share")
        token = answer("token", "POST", "/v1/tenants/acme/tokens", status=201)
        answer("tokens", "GET", "/v1/tenants/acme/tokens")
        answer("revoked", "DELETE", f"/v1/tenants/acme/tokens/{token['id']}")
        answer("destination put", "PUT", "/v1/destinations/google",
               {"rate": "100/s", "burst": 200, "max_inflight": 50,
                "domains": ["gmail.com", "googlemail.com"]}, 201)
        answer("destination", "GET", "/v1/destinations/google")
        answer("destinations", "GET", "/v1/destinations")
        answer("destination deleted", "DELETE", "/v1/destinations/google")
        answer("hold", "POST", "/v1/holds",
               {"scope": "tenant", "name": "acme", "reason": "abuse report #4411",
                "by": "ops@admin-1"}, 201)
        answer("holds", "GET", "/v1/holds")
        answer("hold released", "DELETE", "/v1/holds/tenant/acme")
        answer("error", "GET", "/v1/requests/987654", status=404)
        answer("webhook", "POST", "/v1/tenants/acme/webhooks",
               {"url": "https://hooks.acme.example/fairq"}, 201)
        answer("webhooks", "GET", "/v1/tenants/acme/webhooks")
        # The schedule's example body, taken as it is
        made = [e for e in examples if e.section.startswith("Schedules")
                and e.value is not None and "cron" in e.value and "id" not in e.value]
        self.assertEqual(len(made), 1, "API.md's schedule example")
        answer("schedule", "POST", "/v1/tenants/acme/schedules", made[0].value, 201)
        answer("schedules", "GET", "/v1/tenants/acme/schedules")
        # An event of every field, written as the pipeline writes them
        self.h.sql("INSERT INTO fairq.events (tenant_id, request_id, message_id, type, recipient,"
                   f" detail) SELECT t.id, {bad}, {messages[0]['id']}, 'message.deferred',"
                   " 'ann@example.org', '451 4.7.1 try later' FROM fairq.tenants t"
                   " WHERE t.name = 'acme'")
        self.h.wait(lambda: answer("events", "GET", "/v1/events")["events"],
                    fq_api.SPLIT_TIMEOUT_S, "the event to be read", interval=0.2)

        # Which answer each example shows, by its section and its keys
        def which(example):
            keys = example.keys
            if example.section == "Errors":
                return "error"
            if example.section.startswith("Channels"):
                return "channels"  # Checked above
            if example.section.startswith("GET /healthz"):
                return "healthz" if example.status != 503 else "healthz 503"
            if example.section.startswith("POST /v1/requests"):
                return "submit body"
            if example.section.startswith("POST /v1/messages/bulk"):
                return "bulk" if "matched" in keys else "bulk body"  # The body: sent above
            for name, wanted in (("whoami", {"admin", "tenant"}), ("senders", {"senders"}),
                                 ("share", {"slot_s", "until", "tenants"}),
                                 ("request", {"status", "total", "pending"}),
                                 ("message", {"attempts", "last_error"}),
                                 ("tenant", {"weight", "send_rate"}),
                                 ("requests", {"requests"}), ("rejects", {"rejects"}),
                                 ("messages", {"messages"}), ("tenants", {"tenants"}),
                                 ("errors", {"errors"}), ("shape", {"edges_minutes", "shape"}),
                                 ("token", {"token"}), ("tokens", {"tokens"}),
                                 ("revoked", {"revoked"}), ("destination", {"live", "domains"}),
                                 ("destinations", {"destinations"}),
                                 ("destination deleted", {"deleted"}),
                                 ("hold released", {"scope", "created_by", "released"}),
                                 ("hold", {"scope", "created_by"}), ("holds", {"holds", "all"}),
                                 ("events", {"events", "next"}),
                                 ("webhooks", {"webhooks"}),
                                 ("webhook", {"url", "secret", "backlog"}),
                                 ("schedules", {"schedules"}),
                                 ("schedule", {"cron", "next_fire_at"})):
                if wanted <= keys:
                    return name
            return None

        failures, seen = [], set()
        for example in examples:
            name = which(example)
            if example.status is None and name not in ("error", "submit body", "request",
                                                       "message", "tenant", "healthz", "events",
                                                       "webhook", "errors", "bulk", "shape",
                                                       "schedule", "hold", "hold released",
                                                       "whoami", "senders", "share"):
                continue  # A body a client sends (PATCH, PUT): no answer to compare
            if name is None:
                failures.append(f"line {example.line}: an example no answer is known for: "
                                f"{example.text[:120]}")
                continue
            seen.add(name)
            if name == "submit body":
                continue  # Taken as it is: answered 202 above
            if name == "healthz 503":
                # The database must be away: test_http_auth_errors checks this
                # answer's keys, these
                if example.keys != {"error", "status", "database", "detail"}:
                    failures.append(f"line {example.line}: /healthz's 503 shows keys "
                                    f"{sorted(example.keys)}")
                continue
            real = answers[name]
            if example.value is not None:
                failures += [f"line {example.line} ({name}): {p}"
                             for p in json_differences(example.value, real)]
            else:
                # Placeholders (ID or null, [...]): the keys it names
                real_keys = set(real) | {k for v in real.values() if isinstance(v, list)
                                         for item in v[:1] if isinstance(item, dict)
                                         for k in item}
                for key in sorted(example.keys - real_keys):
                    failures.append(f"line {example.line} ({name}): shows \"{key}\", which "
                                    f"the answer does not have")
                for key in sorted(set(real) - example.keys):
                    failures.append(f"line {example.line} ({name}): misses \"{key}\" of the "
                                    f"answer")
        schema = self.h.scalar("SELECT max(version) FROM fairq.schema_migrations")
        healthz = [e for e in examples if which(e) == "healthz" and e.value]
        if healthz and healthz[0].value.get("schema") != int(schema):
            failures.append(f"line {healthz[0].line}: /healthz shows schema "
                            f"{healthz[0].value.get('schema')}, the server answers {schema}")
        for name in ("healthz", "healthz 503", "submit body", "request", "message", "tenant",
                     "requests", "rejects", "messages", "errors", "tenants", "token", "tokens",
                     "revoked", "events", "error", "webhooks", "webhook", "hold", "holds",
                     "hold released", "schedule", "schedules", "whoami", "senders", "share"):
            if name not in seen:
                failures.append(f"API.md has no example of {name}")
        self.assertFalse(failures, "API.md's examples differ from the answers:\n" +
                         "\n".join(failures))


    def test_error_summary(self):
        """GET /v1/errors groups the failed and dead messages by tenant,
        destination and codes, with counts and an example; a tenant's
        token sees its own tenant only; the filters narrow it."""
        self.start(**FAIRQD)  # No sender: the errors are written as one would
        self.put_tenant("acme")
        self.put_tenant("bravo")
        ids = {}
        for tenant in ("acme", "bravo"):
            rid = self.submit_ok(submit_body(tenant, recipients=recipients(3)))["id"]
            ids[tenant] = sorted(m["id"] for m in self.wait_split(rid, 3))

        def fail(message_id, status, error):
            self.h.sql(f"UPDATE fairq.messages SET status = '{status}', try_count = 1,"
                       " next_attempt_at = now() + interval '1 day',"
                       f" last_error = '{error}' WHERE id = {message_id}")
        fail(ids["acme"][0], "dead", "550 5.1.1 <a@example.org>: no such user")
        fail(ids["acme"][1], "failed", "550 5.1.1 <b@example.org>: no such user")
        fail(ids["acme"][2], "failed", "HTTP 503: Service Unavailable")
        fail(ids["bravo"][0], "dead", "550 5.7.1 relaying denied")

        errors = self.ok(self.api("GET", "/v1/errors"), 200, "all errors")["errors"]
        self.assertEqual(len(errors), 3, errors)
        self.assertEqual(errors[0], {"tenant": "acme", "destination": "default", "code": "550",
                                     "enhanced": "5.1.1", "count": 2, "failed": 1, "dead": 1,
                                     "example": "550 5.1.1 <a@example.org>: no such user"})
        http = [e for e in errors if e["code"] == "503"]
        self.assertEqual(len(http), 1, errors)
        self.assertIsNone(http[0]["enhanced"])
        # Filters
        dead = self.ok(self.api("GET", "/v1/errors?status=dead&top=1"), 200, "dead")["errors"]
        self.assertEqual(len(dead), 1)
        self.assertEqual(dead[0]["dead"], 1)
        self.assertEqual(self.ok(self.api("GET", "/v1/errors?destination=google"), 200,
                                 "another destination")["errors"], [])
        # A tenant's token: its own only; another tenant named is unknown
        bravo = self.new_token("bravo")
        mine = self.ok(self.api("GET", "/v1/errors", token=bravo), 200, "bravo's")["errors"]
        self.assertEqual([(e["tenant"], e["enhanced"]) for e in mine], [("bravo", "5.7.1")])
        self.assert_error(self.api("GET", "/v1/errors?tenant=acme", token=bravo), 404,
                          "another tenant's errors")
        self.assert_error(self.api("GET", "/v1/errors?request=987654321", token=bravo),
                          404, "an unknown request")
        self.assert_error(self.api("GET", "/v1/errors?status=sent"), 400, "status sent")


class Example:
    """A JSON example of API.md: a fenced ```json block, or an inline
    `STATUS {...}` or `{...}`. value is the parsed JSON (None when it holds
    placeholders such as ID or TEXT); keys the keys it names at its top."""

    def __init__(self, section, line, status, text):
        self.section, self.line, self.status, self.text = section, line, status, text
        try:
            self.value = json.loads(text)
        except ValueError:
            self.value = None
        if isinstance(self.value, dict):
            self.keys = set(self.value)
        else:
            self.value = None
            self.keys = set(top_level_keys(text))


def top_level_keys(text):
    """The keys of a JSON-like object's top level, placeholders and all."""
    keys, depth, i = [], 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            end = text.index('"', i + 1)
            while text[end - 1] == "\\":
                end = text.index('"', end + 1)
            if depth == 1 and text[end + 1:].lstrip().startswith(":"):
                keys.append(text[i + 1:end])
            i = end
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    return keys


def api_md_examples():
    """The JSON examples of api/API.md, with the section each is under."""
    import os
    import re
    path = os.path.join(fq_api.HERE, os.pardir, os.pardir, "api", "API.md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    examples, section, block, start = [], "", None, 0
    for number, line in enumerate(lines, 1):
        if block is not None:
            if line.startswith("```"):
                examples.append(Example(section, start, None, "\n".join(block)))
                block = None
            else:
                block.append(line)
            continue
        if line.startswith("```json"):
            block, start = [], number
            continue
        if line.startswith("#"):
            section = line.lstrip("#").strip().strip("`")
            continue
        for m in re.finditer(r"`(?:(\d{3}) )?(\{[^`]*\})`", line):
            if '"' in m.group(2) and ":" in m.group(2):
                examples.append(Example(section, number,
                                        int(m.group(1)) if m.group(1) else None, m.group(2)))
    return examples


def json_differences(example, real, where="$"):
    """How example (a value of API.md) differs from real (an answer): keys
    either lacks, and values of another JSON type. "..." and null in the
    example stand for any value."""
    if example == "..." or example is None:
        return []
    if isinstance(example, dict):
        if not isinstance(real, dict):
            return [f"{where} is an object in API.md, {type(real).__name__} in the answer"]
        found = [f"{where}.{k} is in API.md, not in the answer" for k in sorted(set(example) -
                                                                                  set(real))]
        found += [f"{where}.{k} is in the answer, not in API.md" for k in sorted(set(real) -
                                                                                   set(example))]
        for k in sorted(set(example) & set(real)):
            found += json_differences(example[k], real[k], f"{where}.{k}")
        return found
    if isinstance(example, list):
        if not isinstance(real, list):
            return [f"{where} is an array in API.md, {type(real).__name__} in the answer"]
        return json_differences(example[0], real[0], f"{where}[0]") if example and real else []
    if real is None:
        return []  # A value that may be null (a time not yet come, no leader yet)
    kinds = (bool, (int, float), str)
    for kind in kinds:
        if isinstance(example, kind) and not (kind != bool and isinstance(example, bool)):
            if isinstance(real, kind) and (kind == bool or not isinstance(real, bool)):
                return []
            return [f"{where} is {example!r} in API.md, {real!r} in the answer"]
    return [f"{where}: {example!r} in API.md is not a JSON value"]


if __name__ == "__main__":
    fq_api.main()
