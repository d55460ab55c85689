#!/usr/bin/python3
"""test_http_malformed.py: fairqd's HTTP API against bad input (api/API.md):
a corpus of malformed bodies for POST /v1/requests, PUT /v1/tenants/{name}
and PATCH /v1/requests/{id} (truncated JSON, not an object, wrong types of
every field, unknown fields, empty and huge arrays, deep nesting, invalid
UTF-8, NUL, numbers out of range, times that are not times), odd ids in
paths, bad query parameters, and broken HTTP over raw sockets. Each must
answer 400 (or 404 where the contract allows it) with a JSON error body,
fairqd must stay up, and nothing may be half-stored.
"""

import json
import socket
import sys
import threading
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, submit_body  # noqa: E402

HOUR = 3600
FAIRQD = {"poll_ms": 200}
DEEP = 10000  # Levels of nesting
HUGE = 100000  # Elements of a huge array

BAD = (400,)
BAD_OR_MISSING = (400, 404)


def raw_with(body, key, text):
    """body as JSON bytes, with key's value the raw JSON text given (for
    what json.dumps will not write: 1e309, huge integers)."""
    body = dict(body)
    body[key] = "@@RAW@@"
    return json.dumps(body).replace('"@@RAW@@"', text).encode()


def deep_array(levels):
    return "[" * levels + "]" * levels


def deep_object(levels):
    return '{"a":' * levels + "1" + "}" * levels


def submit_corpus(valid):
    """(label, body bytes, statuses) for POST /v1/requests; valid is a good
    body (a dict)."""
    good = json.dumps(valid).encode()
    corpus = [
        ("empty body", b"", BAD),
        ("only {", b"{", BAD),
        ("truncated after a member", b'{"tenant": "acme", "from": "news@acme.example"', BAD),
        ("truncated in the middle", good[:len(good) // 2], BAD),
        ("missing the last }", good[:-1], BAD),
        ("trailing comma", good[:-1] + b",}", BAD),
        ("single quotes", b"{'tenant': 'acme'}", BAD),
        ("trailing garbage", good + b"xyz", BAD),
        ("two objects", good + good, BAD),
        ("a bare word", b"nul", BAD),
        ("an array", b"[]", BAD),
        ("a string", b'"acme"', BAD),
        ("a number", b"42", BAD),
        ("null", b"null", BAD),
        ("true", b"true", BAD),
        ("the body inside an array", b"[" + good + b"]", BAD),
        ("an empty object", b"{}", BAD),
        ("unknown field cc", json.dumps(dict(valid, cc="x@example.org")).encode(), BAD),
        ("field name in capitals", json.dumps(
            dict({k: v for k, v in valid.items() if k != "tenant"}, Tenant="acme")).encode(), BAD),
    ]
    for key in ("from", "subject", "body", "recipients"):
        corpus.append((f"without {key}", json.dumps(
            {k: v for k, v in valid.items() if k != key}).encode(), BAD))
    wrong_types = {
        "tenant": ["5", "null", '["acme"]', "{}"],
        "from": ["1", "null", "{}", "[]"],
        "subject": ["true", "[]", "null", "1"],
        "body": ["1.5", "{}", "null", "false"],
        "html": ['"yes"', "1", "null", "[]"],
        "recipients": ["{}", '"ann@example.org"', "null", "[]", "5"],
        "send_at": ['"tomorrow"', '"2026-13-45T00:00:00Z"', '"2026-02-30T10:00:00Z"',
                    '"2026-11-21T10:04:05"', '"2026-11-21"', '""', "true", "{}", "[]", "1e309",
                    "1.5", '"2026-11-21T25:00:00Z"', "99999999999999999999"],
        "priority": ["5000", "-1001", "1001", '"1"', "1.5", "1e309", "99999999999999999999",
                     "true", "null", "[]"],
        "max_attempts": ["0", "101", "-1", '"5"', "2.5", "1e309", "true", "null"],
    }
    for key, texts in wrong_types.items():
        for text in texts:
            corpus.append((f"{key} = {text}", raw_with(valid, key, text), BAD))
    corpus += [
        (f"{DEEP} levels of arrays", deep_array(DEEP).encode(), BAD),
        (f"{DEEP} levels of objects", deep_object(DEEP).encode(), BAD),
        (f"subject of {DEEP} levels of arrays", raw_with(valid, "subject", deep_array(DEEP)), BAD),
        (f"an unknown field of {DEEP} levels of objects",
         raw_with(valid, "extra", deep_object(DEEP)), BAD),
        (f"{HUGE} numbers as the body", json.dumps([1] * HUGE).encode(), BAD),
        (f"subject as {HUGE} numbers", raw_with(valid, "subject", json.dumps([1] * HUGE)), BAD),
        ("invalid UTF-8 in subject", good.replace(b"Hi {{name}}", b"Hi \xff\xfe {{name}}"), BAD),
        ("overlong UTF-8 in from", good.replace(b"news@", b"news\xc0\xaf@"), BAD),
        ("truncated UTF-8 in subject", good.replace(b"Hi {{name}}", b"Hi {{name}} \xe2\x82"), BAD),
        ("UTF-8 surrogate bytes in body", good.replace(b"Dear", b"Dear \xed\xa0\x80"), BAD),
        ("lone surrogate escape in subject", raw_with(valid, "subject", r'"Hi \ud800 {{name}}"'),
         BAD),
        ("UTF-16 with a BOM", "\ufeff".encode("utf-16-le") + good.decode().encode("utf-16-le"),
         BAD),
        ("invalid UTF-8 in a key", good[:-1] + b', "\xff\xfe": 1}', BAD),
        ("NUL in subject", raw_with(valid, "subject", r'"Hi \u0000 {{name}}"'), BAD),
        ("NUL in from", raw_with(valid, "from", r'"news\u0000@acme.example"'), BAD),
        ("NUL in body", raw_with(valid, "body", r'"Dear \u0000 {{name}}"'), BAD),
        ("NUL in tenant", raw_with(valid, "tenant", r'"ac\u0000me"'), BAD_OR_MISSING),
        ("a raw NUL byte in a string", good.replace(b"Hi {{name}}", b"Hi \x00 {{name}}"), BAD),
        ("a raw newline in a string", good.replace(b"Hi {{name}}", b"Hi \n {{name}}"), BAD),
        ("CR LF in subject", raw_with(valid, "subject", r'"Hi\r\nBcc: victim@evil.test"'), BAD),
        ("LF in subject", raw_with(valid, "subject", r'"Hi\nBcc: victim@evil.test"'), BAD),
        ("CR LF in from", raw_with(valid, "from", r'"news@acme.example\r\nBcc: v@evil.test"'),
         BAD),
        ("a subject of 2,000 bytes", raw_with(valid, "subject", json.dumps("s" * 2000)), BAD),
        ("tenant that is not a name", raw_with(valid, "tenant", '"Not A Name!"'), BAD_OR_MISSING),
        ("an empty tenant", raw_with(valid, "tenant", '""'), BAD_OR_MISSING),
        ("a duplicate key with a bad value", good[:-1] + b', "priority": 5000}', BAD),
    ]
    return corpus


def tenant_corpus():
    """(label, body bytes) for PUT /v1/tenants/{name}: all 400."""
    corpus = [("only {", b"{"), ("truncated", b'{"weight": '),
              ("trailing comma", b'{"weight": 2,}'),
              ("an array", b"[]"), ("a string", b'"x"'), ("null", b"null"), ("a number", b"42"),
              ("garbage", b"weight=2"), ("two objects", b'{"weight": 2}{"weight": 3}'),
              ("unknown field name", b'{"name": "x"}'),
              ("unknown field colour", b'{"weight": 2, "colour": "red"}'),
              ("a tenant's figure", b'{"depth": 5}'),
              ("invalid UTF-8 key", b'{"weight": 2, "\xff": 1}'),
              ("invalid UTF-8 value", b'{"weight": "\xff"}'),
              ("NUL in a key", b'{"weight\\u0000": 2}'),
              (f"{HUGE} numbers", json.dumps([1] * HUGE).encode()),
              (f"weight of {DEEP} levels", b'{"weight": ' + deep_array(DEEP).encode() + b"}"),
              (f"{DEEP} levels of objects", deep_object(DEEP).encode())]
    wrong = {"weight": ["0", "1001", "-1", '"1"', "1.5", "null", "true", "1e309",
                        "99999999999999999999", "[]"],
             "max_inflight": ["0", "-1", '"5"', "1e309", "null", "2147483648", "1.5"],
             "submit_rate": ["0", "-5", '"10"', "1.5", "true", "2147483648", "[]"],
             "max_send_rate": ["100", '"0/s"', '"100/x"', '""', '"100"', '"1e3/s"', "true", "[]",
                               "{}", '"1/s\\u0000"', '"1/s\\u0000x"', '"\\u00e9/s"',
                               '"1000000001/s"', '"100/S"'],
             "daily_quota": ["0", "-1", '"5"', "1e309", "1.5", "1e3", "true", "1000000000001",
                             "99999999999999999999", "-99999999999999999999", "{}", '"none"']}
    for key, texts in wrong.items():
        for text in texts:
            corpus.append((f"{key} = {text}", f'{{"{key}": {text}}}'.encode()))
    return corpus


def patch_corpus():
    """(label, body bytes) for PATCH /v1/requests/{id}: all 400."""
    corpus = [("an empty object", b"{}"), ("empty body", b""), ("only {", b"{"),
              ("truncated", b'{"priority": '), ("an array", b"[]"), ("null", b"null"),
              ("a string", b'"x"'), ("unknown field status", b'{"status": "done"}'),
              ("unknown field tenant", b'{"tenant": "other"}'),
              ("max_attempts is not patchable", b'{"max_attempts": 3}'),
              ("a good field and an unknown one", b'{"priority": 1, "subject": "x"}'),
              ("invalid UTF-8", b'{"send_at": "\xff"}'),
              ("NUL in send_at", b'{"send_at": "2030-01-01T00:00:00Z\\u0000"}'),
              (f"{HUGE} numbers", json.dumps([1] * HUGE).encode()),
              (f"priority of {DEEP} levels", b'{"priority": ' + deep_array(DEEP).encode() + b"}")]
    wrong = {"priority": ["5000", "-1001", '"1"', "1.5", "true", "null", "1e309",
                          "99999999999999999999", "{}"],
             "send_at": ['"never"', '"2026-02-30T00:00:00Z"', '"2030-01-01T00:00:00"', "true",
                         "{}", "1e309", '""', "null"]}
    for key, texts in wrong.items():
        for text in texts:
            corpus.append((f"{key} = {text}", f'{{"{key}": {text}}}'.encode()))
    return corpus


def headers_corpus(valid):
    """(label, body bytes, the words the 400's detail must hold) for the
    "headers" and "reply_to" of a submit: each refused, naming the header
    (or the field) at fault."""
    def with_headers(headers):
        return json.dumps(dict(valid, headers=headers)).encode()

    def with_raw_headers(text):
        return raw_with(valid, "headers", text)

    corpus = [
        ("CR LF in a value", with_headers({"X-Campaign": "spring\r\nBcc: victim@evil.test"}),
         ['"X-Campaign"', "CR or LF"]),
        ("LF in a value", with_headers({"X-Campaign": "spring\nBcc: victim@evil.test"}),
         ['"X-Campaign"', "CR or LF"]),
        ("CR in a value", with_headers({"X-Campaign": "spring\rX-Evil: 1"}),
         ['"X-Campaign"', "CR or LF"]),
        ("a control in a value", with_headers({"X-Campaign": "bell\u0007"}),
         ['"X-Campaign"', "0x07"]),
        ("DEL in a value", with_headers({"X-Campaign": "del\u007f"}), ['"X-Campaign"', "0x7F"]),
        ("non-ASCII in a value", with_headers({"X-Campaign": "caf\u00e9"}),
         ['"X-Campaign"', "printable ASCII"]),
        ("CR LF in a name", with_headers({"X-A\r\nBcc": "victim@evil.test"}), ["its name"]),
        ("a space in a name", with_headers({"X Campaign": "spring"}),
         ['"X Campaign"', "its name"]),
        ("a colon in a name", with_headers({"X-Campaign:": "spring"}),
         ['"X-Campaign:"', "its name"]),
        ("non-ASCII in a name", with_headers({"X-Caf\u00e9": "spring"}), ["its name"]),
        ("an empty name", with_headers({"": "spring"}), ['""']),
        ("a duplicate name", with_raw_headers('{"X-Campaign": "a", "X-Campaign": "b"}'),
         ['"X-Campaign"', "twice"]),
        ("a duplicate name in another case", with_headers({"X-Campaign": "a", "x-campaign": "b"}),
         ['"x-campaign"', "twice"]),
        ("33 headers", with_headers({f"X-H{i}": "v" for i in range(33)}),
         ["more than 32 headers"]),
        ("9 KiB of headers", with_headers({f"X-H{i}": "v" * 900 for i in range(10)}),
         ["more than 8192 bytes"]),
        ("a line over 998 characters", with_headers({"X-Long": "v" * 1000}),
         ['"X-Long"', "998"]),
        ("headers as an array", with_raw_headers('[["X-Campaign", "spring"]]'),
         ["headers must be an object"]),
        ("headers as a string", with_raw_headers('"X-Campaign: spring"'),
         ["headers must be an object"]),
        ("headers null", with_raw_headers("null"), ["headers must be an object"]),
        ("a value that is a number", with_headers({"X-Count": 3}),
         ['"X-Count"', "must be a string"]),
        ("a value that is null", with_headers({"X-Campaign": None}),
         ['"X-Campaign"', "must be a string"]),
        ("a value that is an object", with_raw_headers('{"X-Campaign": {"a": "b"}}'),
         ['"X-Campaign"', "must be a string"]),
        ("Reply-To among headers", with_headers({"reply-to": "help@acme.example"}),
         ['"reply-to"', "reply_to"]),
        ("headers given twice", good_with_raw(valid, '"headers": {}, "headers": {}'),
         ['"headers"', "twice"]),
        ("reply_to a list", json.dumps(dict(valid, reply_to="a@acme.example, b@acme.example"))
         .encode(), ["invalid reply_to address"]),
        ("reply_to with a name", json.dumps(dict(valid, reply_to="Help <help@acme.example>"))
         .encode(), ["invalid reply_to address"]),
        ("reply_to with CR LF", json.dumps(dict(valid, reply_to="help@acme.example\r\nBcc: v@e.t"))
         .encode(), ["invalid reply_to address", "CR or LF"]),
        ("reply_to empty", json.dumps(dict(valid, reply_to="")).encode(),
         ["invalid reply_to address"]),
        ("reply_to a number", json.dumps(dict(valid, reply_to=5)).encode(),
         ["reply_to must be a string"]),
        ("reply_to null", json.dumps(dict(valid, reply_to=None)).encode(),
         ["reply_to must be a string"]),
    ]
    for owned in ("From", "to", "SUBJECT", "Date", "message-id", "MIME-Version", "content-type",
                  "Content-Transfer-Encoding", "return-path",
                  # Every Content- field changes how the one body part renders;
                  # Bcc would add recipients the envelope does not have
                  "Content-Disposition", "content-id", "Bcc", "cc", "Sender",
                  "Resent-From", "DKIM-Signature", "ARC-Seal", "Received"):
        corpus.append((f"the owned header {owned}", with_headers({"X-Ok": "1", owned: "x"}),
                       [f'"{owned}"', "written by fairq"]))
    return corpus


def good_with_raw(valid, members):
    """valid as JSON bytes with members (raw JSON text) added at its end."""
    return (json.dumps(valid)[:-1] + ", " + members + "}").encode()


class MalformedTest(APITest):

    def check_corpus(self, method, path, corpus):
        """Sends each body; each must be an error of its statuses with a
        JSON error body; fairqd stays up throughout."""
        failures = []
        for label, data, statuses in corpus:
            answer = self.api(method, path, raw=data)
            try:
                self.assert_error_in(answer, statuses, f"{method} {path}: {label}")
            except AssertionError as error:
                failures.append(str(error)[:400])
            self.h.check_alive()
        self.note(f"{method} {path}: {len(corpus)} bodies, {len(failures)} wrong answers")
        self.assertFalse(failures, f"{len(failures)} of {len(corpus)} bodies answered wrong:\n" +
                         "\n".join(failures))

    def test_submit_headers_refused(self):
        """Every bad "headers" or "reply_to" of a submit (header injection
        by CR or LF, a control or non-ASCII byte, a bad name, a field fairq
        writes itself in any case, a name given twice in any case, more
        than 32 or 8 KiB, a line over 998 characters, headers not an object
        or a value not a string, Reply-To among headers, a reply_to that is
        not one address) is a 400 whose detail names what is at fault;
        nothing is stored, fairqd stays up."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        valid = submit_body("acme", send_at=int(time.time()) + HOUR)
        self.ok(self.submit(dict(valid, headers={"X-Campaign": "spring"},
                                 reply_to="help@acme.example")), 202, "a good submit")
        before = self.count("fairq.requests")
        failures = []
        corpus = headers_corpus(valid)
        for label, data, words in corpus:
            answer = self.api("POST", "/v1/requests", raw=data)
            try:
                self.assert_error(answer, 400, label)
                for word in words:
                    self.assertIn(word, answer[2]["detail"], f"{label}: the detail")
            except AssertionError as error:
                failures.append(str(error)[:400])
            self.h.check_alive()
        self.note(f"{len(corpus)} bad headers, {len(failures)} wrong answers")
        self.assertFalse(failures, "\n".join(failures))
        self.assertEqual(self.count("fairq.requests"), before, "a refused submit stored a row")

    def test_submit_text_body_refused(self):
        """A bad "text_body" (given without html true, html false, not a
        string, a template that does not parse) is a 400 whose detail names
        text_body; nothing is stored, fairqd stays up. With html true a
        good one is taken."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        valid = submit_body("acme", send_at=int(time.time()) + HOUR)
        html = dict(valid, html=True)
        self.ok(self.submit(dict(html, text_body="Dear {{name}}")), 202, "a good text_body")
        before = self.count("fairq.requests")
        corpus = [
            ("text_body without html", dict(valid, text_body="Dear {{name}}"), ["text_body", "html"]),
            ("text_body with html false", dict(valid, html=False, text_body="Hi"),
             ["text_body", "html"]),
            ("text_body a number", dict(html, text_body=3), ["text_body", "string"]),
            ("text_body null", dict(html, text_body=None), ["text_body", "string"]),
            ("text_body an object", dict(html, text_body={"a": 1}), ["text_body", "string"]),
            ("text_body an unclosed tag", dict(html, text_body="Hi {{name"), ["text_body"]),
            ("text_body a bad tag", dict(html, text_body="Hi {{na me}}"), ["text_body"]),
        ]
        failures = []
        for label, body, words in corpus:
            answer = self.api("POST", "/v1/requests", body)
            try:
                self.assert_error(answer, 400, label)
                for word in words:
                    self.assertIn(word, answer[2]["detail"], f"{label}: the detail")
            except AssertionError as error:
                failures.append(str(error)[:400])
            self.h.check_alive()
        self.assertFalse(failures, "\n".join(failures))
        self.assertEqual(self.count("fairq.requests"), before, "a refused submit stored a row")

    def test_submit_corpus(self):
        """More than a hundred malformed submits: each a 400 (404 where the
        tenant is not a name), none stored, fairqd up."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        valid = submit_body("acme", send_at=int(time.time()) + HOUR)
        corpus = submit_corpus(valid)
        self.assertGreaterEqual(len(corpus), 30)
        self.check_corpus("POST", "/v1/requests", corpus)
        # With a tenant token, the same bodies (less the tenant) fail alike
        token = self.new_token("acme")
        failures = []
        for label, data, statuses in corpus[:20]:
            answer = self.api("POST", "/v1/requests", raw=data, token=token)
            if answer[0] not in (400, 403, 404):
                failures.append(f"{label}: {answer[0]} {answer[2]!r:.200}")
        self.assertFalse(failures, "with a tenant token:\n" + "\n".join(failures))
        self.healthz_ok()
        self.assertEqual(self.count("fairq.requests"), 0, "a malformed submit stored a request")
        self.assertEqual(self.count("fairq.recipient_chunks"), 0)
        self.assertEqual(self.count("fairq.messages"), 0)
        # The valid body itself is taken: the corpus failed for its faults
        self.submit_ok(valid)
        self.assertEqual(self.count("fairq.requests"), 1)

    def test_submit_recipient_faults(self):
        """Faults inside recipients: either the whole submit is a 400 and
        nothing is stored, or it is taken and every faulty recipient is
        rejected alone (API.md), never a message: a huge array of
        non-objects, NUL in "to", a number out of range in a field, a
        field nested 10,000 levels deep."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        # send_at now: split at once (no sender, and nothing to send anyway)
        cases = [
            (f"{HUGE} numbers as recipients", json.dumps(submit_body(
                "acme", recipients=[1] * HUGE)).encode(), HUGE),
            ("NUL in to", raw_with(submit_body("acme"), "recipients",
                                   r'[{"to": "ann\u0000@example.org", "fields": {"name": "A"}}]'),
             1),
            ("a field of 1e400", raw_with(submit_body("acme"), "recipients",
                                          '[{"to": "ann@example.org", "fields": '
                                          '{"name": "A", "n": 1e400}}]'), 1),
            (f"a field of {DEEP} levels", raw_with(
                submit_body("acme"), "recipients",
                '[{"to": "ann@example.org", "fields": {"name": ' + deep_array(DEEP) + '}}]'), 1),
        ]
        taken = 0
        for label, data, rejected in cases:
            answer = self.api("POST", "/v1/requests", raw=data, timeout=120)
            if answer[0] == 202:
                taken += 1
                rid = answer[2]["id"]
                final = self.wait_request(rid, ("rejected", "done"), timeout=120)
                self.assertEqual((final["total"], final["rejected"]), (rejected, rejected),
                                 f"{label}: {final}")
                self.assertEqual(self.count("fairq.messages", f"request_id = {rid}"), 0, label)
                page = self.ok(self.api("GET", f"/v1/requests/{rid}/rejects?limit=2"), 200,
                               label)["rejects"]
                self.assertEqual([r["position"] for r in page], list(range(min(2, rejected))))
                self.note(f"{label}: 202, all rejected ({page[0]['reason']!r})")
            else:
                self.assert_error(answer, 400, label)
                self.note(f"{label}: 400 ({answer[2]['detail']!r:.100})")
            self.assertEqual(self.count("fairq.requests"), taken, f"{label}: half-stored")
        self.healthz_ok()

    def test_submit_recipients_of_another_shape(self):
        """Recipients that are not objects with "to" (bare addresses,
        "email" for "to", a key of their own) are a 400 naming the first
        at fault by its index; nothing is stored. A recipient of the right
        shape with a bad value is still taken, to be rejected alone when
        split; a long list is checked in one quick pass. (A from that is
        not one address: test_http_boundary.)"""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        later = int(time.time()) + HOUR
        not_to = 'expected an object with "to"'
        only = 'a recipient has only "to" and "fields"'
        shapes = [
            (["ann@example.org"], f"recipients[0]: {not_to}, not a string"),
            (["ann@example.org", "bob@example.org"], f"recipients[0]: {not_to}, not a string"),
            ([{"email": "ann@example.org", "fields": {"name": "Ann"}}],
             'recipients[0]: unknown key "email" (did you mean "to"?)'),
            ([{"to": "ann@example.org", "name": "Ann"}],
             f'recipients[0]: unknown key "name" ({only})'),
            (fq_api.recipients(3) + [{"fields": {"name": "Nobody"}}], f"recipients[3]: {not_to}"),
            (fq_api.recipients(2) + [42], f"recipients[2]: {not_to}, not a number"),
            ([{}], f"recipients[0]: {not_to}"),
            ([None], f"recipients[0]: {not_to}, not null"),
            ([["ann@example.org"]], f"recipients[0]: {not_to}, not an array"),
            ([True], f"recipients[0]: {not_to}, not a boolean"),
        ]
        for recips, detail in shapes:
            answer = self.submit(submit_body("acme", recipients=recips, send_at=later))
            self.assert_error(answer, 400, f"recipients {recips!r:.80}")
            self.assertEqual(answer[2]["detail"], detail)
        self.assertEqual(self.count("fairq.requests"), 0, "a refused submit stored a request")

        # Keys are read as JSON reads them ("\u0074o" is "to"); a value
        # that is bad in the right shape is taken, and rejected when split
        data = raw_with(submit_body("acme", send_at=later), "recipients",
                        '[{"\\u0074o": "ann@example.org", "fields": {"name": "A"}},'
                        ' {"to": "not an address", "fields": null}, {"to": 5}]')
        taken = self.ok(self.api("POST", "/v1/requests", raw=data), 202, "escaped keys")
        self.assertEqual(taken["total"], 3)

        # One pass over a long list: a fault at its end is found quickly
        many = fq_api.recipients(HUGE)
        start = time.monotonic()
        answer = self.submit(submit_body("acme", recipients=many + ["late@example.org"],
                                         send_at=later))
        took = time.monotonic() - start
        self.assert_error(answer, 400, "a fault after 100,000 good recipients")
        self.assertEqual(answer[2]["detail"], f"recipients[{HUGE}]: {not_to}, not a string")
        self.note(f"{HUGE} recipients and a bare address refused in {took:.2f} s")
        self.assertLess(took, 10, "checking the recipients' shape is slow")
        self.assertEqual(self.count("fairq.requests"), 1)

    def test_tenant_corpus(self):
        """Malformed PUT /v1/tenants bodies on an existing and a new
        tenant, and names that are not names: 400, nothing changed or
        created."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        corpus = [(label, data, BAD) for label, data in tenant_corpus()]
        self.assertGreaterEqual(len(corpus), 30)
        self.check_corpus("PUT", "/v1/tenants/acme", corpus)
        self.check_corpus("PUT", "/v1/tenants/newcomer", corpus)
        names = ["Bad%20Name", "UPPER", "-lead", "_lead", "a" * 65, "a%00b", "%ff%fe", "a%2Fb",
                 "caf%C3%A9", "a%0D%0Ab", "a;b", "x" * 10000]
        failures = []
        for name in names:
            answer = self.api("PUT", f"/v1/tenants/{name}", {"weight": 2})
            try:
                self.assert_error_in(answer, BAD_OR_MISSING, f"PUT /v1/tenants/{name[:80]}")
            except AssertionError as error:
                failures.append(str(error)[:300])
        self.assertFalse(failures, "\n".join(failures))
        self.assertEqual(self.h.sql("SELECT name, weight, max_inflight, coalesce(submit_rate, 0),"
                                    " send_rate_count, send_rate_period_s, daily_quota"
                                    " FROM fairq.tenants"),
                         [["acme", "1", "1000", "0", "", "", ""]])
        self.healthz_ok()

    def test_patch_corpus(self):
        """Malformed PATCH bodies: 400, the request unchanged."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        later = int(time.time()) + HOUR
        rid = self.submit_ok(submit_body("acme", send_at=later))["id"]
        before = self.h.sql("SELECT send_at, priority, status FROM fairq.requests")
        corpus = [(label, data, BAD) for label, data in patch_corpus()]
        self.assertGreaterEqual(len(corpus), 30)
        self.check_corpus("PATCH", f"/v1/requests/{rid}", corpus)
        self.assertEqual(self.h.sql("SELECT send_at, priority, status FROM fairq.requests"),
                         before, "a malformed PATCH changed the request")
        self.healthz_ok()

    def test_schedules_refused(self):
        """Bad schedules (api/API.md, "Schedules"): a bad cron expression
        names its field and why, an unknown time zone, a request a submit
        would refuse (named "request: ..."), a request with tenant or
        send_at, names that are none or too long, unknown keys, malformed
        JSON, more than 100 schedules: 400; a name taken 409; another
        tenant's schedule or an unknown one 404. Nothing is stored by a
        refused call; fairqd stays up."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.put_tenant("bravo")
        base = "/v1/tenants/acme/schedules"
        request = submit_body("acme", drop=("tenant",))

        def schedule(**fields):
            body = {"name": "digest", "cron": "0 9 * * mon", "time_zone": "Europe/Berlin",
                    "request": request}
            body.update(fields)
            return body
        made = self.ok(self.api("POST", base, schedule()), 201, "a good schedule")
        self.assertEqual(made["request"], request)
        self.assertRegex(made["next_fire_at"], r"^\d{4}-\d\d-\d\dT0[78]:00:00Z$")
        failures = []
        for label, body, words in (
                ("cron hour", schedule(name="a", cron="0 24 * * *"),
                 "cron: hour: 24 is out of range 0..23"),
                ("cron fields", schedule(name="a", cron="0 9 * *"), "cron: a cron expression has 5"),
                ("cron name", schedule(name="a", cron="0 9 * * funday"), "cron: day-of-week"),
                ("cron step", schedule(name="a", cron="*/0 * * * *"), "cron: minute: a step"),
                ("cron never", schedule(name="a", cron="0 0 30 2 *"), "never fire"),
                ("cron type", schedule(name="a", cron=5), "cron must be a string"),
                ("time zone", schedule(name="a", time_zone="Mars/Olympus"),
                 "time_zone: \"Mars/Olympus\" is not a time zone"),
                ("time zone long", schedule(name="a", time_zone="x" * 65), "time_zone"),
                ("no request", {"name": "a", "cron": "* * * * *", "time_zone": "UTC"},
                 "request is required"),
                ("request array", schedule(name="a", request=[]), "request must be an object"),
                ("request from", schedule(name="a", request=dict(request, **{"from": "nope"})),
                 "request: "),
                ("request subject", schedule(name="a", request=dict(request, subject="{{x")),
                 "request: "),
                ("request tenant", schedule(name="a", request=dict(request, tenant="acme")),
                 "request: tenant"),
                ("request send_at", schedule(name="a", request=dict(request, send_at=1)),
                 "request: send_at"),
                ("request unknown", schedule(name="a", request=dict(request, colour="red")),
                 "request: unknown field"),
                ("request recipients", schedule(name="a", request=dict(request, recipients=[])),
                 "request: recipients"),
                ("name", schedule(name="9lives"), "name:"),
                ("name long", schedule(name="a" * 65), "name:"),
                ("name upper", schedule(name="Digest"), "name:"),
                ("missed", schedule(name="a", missed="all"), "missed must be"),
                ("paused", schedule(name="a", paused="yes"), "paused must be"),
                ("unknown key", schedule(name="a", colour="red"), "unknown field")):
            answer = self.api("POST", base, body)
            try:
                self.assert_error(answer, 400, label)
                self.assertIn(words, answer[2]["detail"], label)
            except AssertionError as error:
                failures.append(str(error)[:400])
        for label, data in (("truncated", b'{"name": "a", "cron"'), ("not an object", b"[1]"),
                            ("empty", b""), ("nul", b'{"name": "a\x00"}')):
            answer = self.api("POST", base, raw=data)
            try:
                self.assert_error(answer, 400, label)
            except AssertionError as error:
                failures.append(str(error)[:400])
        self.assertFalse(failures, "\n".join(failures))
        self.assertEqual(self.count("fairq.schedules"), 1, "a refused schedule was stored")
        self.assertEqual(self.count("fairq.requests"), 0, "a trial submit was kept")
        self.h.check_alive()
        # A name taken; PATCH of a bad field; unknown and another tenant's
        self.assert_error(self.api("POST", base, schedule()), 409, "name taken")
        self.assert_error(self.api("PATCH", base + "/digest", {"cron": "61 * * * *"}), 400)
        self.assert_error(self.api("PATCH", base + f"/{made['id']}", {"time_zone": "Nowhere"}),
                          400)
        self.assert_error(self.api("GET", base + "/nosuch"), 404)
        self.assert_error(self.api("GET", base + "/987654"), 404)
        self.assert_error(self.api("GET", base + "/Bad%20Name"), 400)
        self.assert_error(self.api("GET", f"/v1/tenants/bravo/schedules/{made['id']}"), 404)
        self.assert_error(self.api("DELETE", base + "/nosuch"), 404)
        bravo = self.h.make_token("bravo")
        self.assert_error(self.api("GET", base, token=bravo), 404, "another tenant's")
        self.assert_error(self.api("POST", base, schedule(name="b"), token=bravo), 404)
        # Paused and resumed by PATCH; the request kept
        paused = self.ok(self.api("PATCH", base + "/digest", {"paused": True}))
        self.assertEqual((paused["paused"], paused["next_fire_at"]), (True, None))
        resumed = self.ok(self.api("PATCH", base + "/digest", {"paused": False}))
        self.assertIsNotNone(resumed["next_fire_at"])
        self.assertEqual(resumed["request"], request)
        # A new request is checked as a new one is; a good one replaces it
        answer = self.api("PATCH", base + "/digest", {"request": dict(request, subject="{{x")})
        self.assert_error(answer, 400, "a bad new request")
        self.assertIn("request: subject", answer[2]["detail"])
        changed = self.ok(self.api("PATCH", base + "/digest",
                                   {"request": dict(request, subject="New {{name}}"),
                                    "cron": "@hourly", "missed": "skip"}))
        self.assertEqual((changed["request"]["subject"], changed["cron"], changed["missed"]),
                         ("New {{name}}", "@hourly", "skip"))
        self.assertRegex(changed["next_fire_at"], r":00:00Z$")
        # The most a tenant may have
        for i in range(99):
            self.ok(self.api("POST", base, schedule(name=f"s{i}")), 201, f"schedule {i}")
        answer = self.api("POST", base, schedule(name="onemore"))
        self.assert_error(answer, 400, "over the limit")
        self.assertIn("at most 100 schedules", answer[2]["detail"])
        self.assertEqual(self.api("DELETE", base + "/digest")[0], 204)
        self.assertEqual(self.count("fairq.schedules"), 99)
        self.healthz_ok()

    def test_holds_corpus(self):
        """Malformed POST /v1/holds bodies and DELETE paths: 400 (404 for
        what does not exist or is not held), JSON error bodies, nothing
        held; a tenant's token is refused (403)."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        good = {"scope": "tenant", "name": "acme"}
        corpus = [
            ("empty body", b"", BAD),
            ("truncated", b'{"scope": "tenant", "name": "ac', BAD),
            ("an array", b"[]", BAD),
            ("null", b"null", BAD),
            ("an empty object", b"{}", BAD),
            ("unknown field", json.dumps(dict(good, until="tomorrow")).encode(), BAD),
            ("a field twice", b'{"scope": "tenant", "scope": "all"}', BAD),
            ("unknown scope", json.dumps(dict(good, scope="everything")).encode(), BAD),
            ("scope in capitals", json.dumps(dict(good, scope="Tenant")).encode(), BAD),
            ("scope a number", json.dumps(dict(good, scope=1)).encode(), BAD),
            ("scope null", json.dumps(dict(good, scope=None)).encode(), BAD),
            ("no name", json.dumps({"scope": "tenant"}).encode(), BAD),
            ("empty name", json.dumps(dict(good, name="")).encode(), BAD),
            ("name a number", json.dumps(dict(good, name=5)).encode(), BAD),
            ("name an array", json.dumps(dict(good, name=["acme"])).encode(), BAD),
            ("overlong name", json.dumps(dict(good, name="a" * 65)).encode(), BAD),
            ("name in capitals", json.dumps(dict(good, name="ACME")).encode(), BAD),
            ("name with NUL", json.dumps(dict(good, name="ac\u0000me")).encode(), BAD),
            ("a name with all", json.dumps({"scope": "all", "name": "acme"}).encode(), BAD),
            ("overlong reason", json.dumps(dict(good, reason="r" * 501)).encode(), BAD),
            ("reason a number", json.dumps(dict(good, reason=7)).encode(), BAD),
            ("empty by", json.dumps(dict(good, by="")).encode(), BAD),
            ("overlong by", json.dumps(dict(good, by="b" * 101)).encode(), BAD),
            ("invalid UTF-8", b'{"scope": "tenant", "name": "acme", "reason": "\xff"}', BAD),
            ("unknown tenant", json.dumps(dict(good, name="nobody")).encode(), (404,)),
            ("unknown destination",
             json.dumps({"scope": "destination", "name": "nowhere"}).encode(), (404,)),
        ]
        self.check_corpus("POST", "/v1/holds", corpus)
        self.assertEqual(self.count("fairq.holds"), 0, "a malformed hold was stored")
        failures = []
        for path, statuses in (("/v1/holds/tenant/acme", (404,)), ("/v1/holds/all", (404,)),
                               ("/v1/holds/everything", BAD), ("/v1/holds/everything/acme", BAD),
                               ("/v1/holds/tenant/Bad%20Name", BAD),
                               ("/v1/holds/all/acme", BAD), ("/v1/holds/tenant/" + "a" * 65, BAD),
                               ("/v1/holds/destination/nowhere", (404,))):
            try:
                self.assert_error_in(self.api("DELETE", path), statuses, f"DELETE {path}")
            except AssertionError as error:
                failures.append(str(error)[:300])
        self.assertFalse(failures, "\n".join(failures))
        # A tenant may not hold, release or list
        token = self.h.make_token("acme")
        for method, path, body in (("GET", "/v1/holds", None), ("POST", "/v1/holds", good),
                                   ("DELETE", "/v1/holds/tenant/acme", None)):
            self.assert_error(self.api(method, path, body, token=token), 403, f"{method} {path}")
        self.assertEqual(self.count("fairq.holds"), 0)
        # The good one still holds, once
        self.assertEqual(self.api("POST", "/v1/holds", good)[0], 201)
        self.assertEqual(self.api("POST", "/v1/holds", good)[0], 200)
        self.assertEqual(self.count("fairq.holds"), 1)
        self.assertEqual(self.api("DELETE", "/v1/holds/tenant/acme")[0], 200)
        self.healthz_ok()

    def test_odd_paths_and_query_parameters(self):
        """Ids that are not ids, paths that are not routes, query
        parameters out of range: 400 (or 404 for numbers no request can
        have), JSON error bodies, never a 200 or a 500."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme"))["id"]  # No sender: its message waits
        self.assertEqual(rid, 1)
        mid = self.wait_split(rid, 1)[0]["id"]
        self.assertEqual(mid, 1)
        cases = [("GET", "/v1/requests/abc", BAD),
                 ("GET", "/v1/requests/1abc", BAD),
                 ("GET", "/v1/requests/1.0", BAD),
                 ("GET", "/v1/requests/0x1", BAD),
                 ("GET", "/v1/requests/1e0", BAD),
                 ("GET", "/v1/requests/%201", BAD_OR_MISSING),
                 ("GET", "/v1/requests/+1", BAD_OR_MISSING),
                 ("GET", "/v1/requests/-1", BAD_OR_MISSING),
                 ("GET", "/v1/requests/0", BAD_OR_MISSING),
                 ("GET", "/v1/requests/99999999999999999999", BAD_OR_MISSING),
                 ("GET", "/v1/requests/9223372036854775808", BAD_OR_MISSING),
                 ("GET", "/v1/requests/18446744073709551617", BAD_OR_MISSING),
                 ("GET", "/v1/requests/9223372036854775807", (404,)),
                 ("GET", "/v1/requests/1%00", BAD_OR_MISSING),
                 ("GET", "/v1/requests/1%0A", BAD_OR_MISSING),
                 ("GET", "/v1/requests/1/", BAD_OR_MISSING),
                 ("GET", "//v1/requests", BAD_OR_MISSING),
                 ("GET", "//v1/requests/1", BAD_OR_MISSING),
                 ("GET", "/v1//requests/1", BAD_OR_MISSING),
                 ("GET", "/v1/requests/" + "1" * 10000, BAD_OR_MISSING),
                 ("GET", "/v1/" + "a" * 10240, (404,)),
                 ("GET", "/v1/requests/%ff", BAD_OR_MISSING),
                 ("GET", "/v1/nope%ff", (404,)),
                 ("GET", "/v1/requests/%C3%A9", BAD_OR_MISSING),
                 ("POST", "/v1/requests/abc/cancel", BAD),
                 ("POST", "/v1/requests/-1/pause", BAD_OR_MISSING),
                 ("POST", "/v1/requests/1x/resume", BAD),
                 ("PATCH", "/v1/requests/abc", BAD),
                 ("GET", "/v1/requests/abc/rejects", BAD),
                 ("GET", "/v1/messages/abc", BAD),
                 ("GET", "/v1/messages/-5", BAD_OR_MISSING),
                 ("GET", "/v1/messages/99999999999999999999", BAD_OR_MISSING),
                 ("POST", "/v1/messages/1x/retry", BAD),
                 ("GET", "/v1/tenants/%ff", BAD_OR_MISSING),
                 ("GET", "/v1/tenants/" + "a" * 10000, BAD_OR_MISSING),
                 # Query parameters
                 ("GET", "/v1/requests?limit=0", BAD),
                 ("GET", "/v1/requests?limit=1001", BAD),
                 ("GET", "/v1/requests?limit=-1", BAD),
                 ("GET", "/v1/requests?limit=abc", BAD),
                 ("GET", "/v1/requests?limit=1.5", BAD),
                 ("GET", "/v1/requests?limit=99999999999999999999", BAD),
                 ("GET", "/v1/requests?limit=%00", BAD),
                 ("GET", "/v1/requests?status=bogus", BAD),
                 ("GET", "/v1/requests?colour=red", BAD),  # An unknown parameter
                 ("GET", "/v1/messages?limit=10&colour=red", BAD),
                 ("GET", "/v1/requests?status=pending", BAD),  # A message status
                 ("GET", "/v1/requests?status=ACTIVE", BAD),
                 ("GET", "/v1/requests?before=abc", BAD),
                 ("GET", "/v1/requests?before=99999999999999999999", BAD),
                 ("GET", "/v1/requests?tenant=Not%20A%20Name", BAD_OR_MISSING),
                 ("GET", "/v1/messages?limit=0", BAD),
                 ("GET", "/v1/messages?limit=1001", BAD),
                 ("GET", "/v1/messages?limit=abc", BAD),
                 ("GET", "/v1/messages?status=bogus", BAD),
                 ("GET", "/v1/messages?status=active", BAD),  # A request status
                 ("GET", "/v1/messages?after=abc", BAD),
                 ("GET", "/v1/messages?request=abc", BAD),
                 ("GET", "/v1/messages?request=1x", BAD),
                 ("GET", "/v1/errors?top=0", BAD),
                 ("GET", "/v1/errors?top=1001", BAD),
                 ("GET", "/v1/errors?top=abc", BAD),
                 ("GET", "/v1/errors?status=pending", BAD),  # No error to summarise
                 ("GET", "/v1/errors?status=bogus", BAD),
                 ("GET", "/v1/errors?request=abc", BAD),
                 ("GET", "/v1/errors?destination=", BAD),
                 ("GET", "/v1/errors?destination=Not%20A%20Name", BAD),
                 ("GET", "/v1/errors?colour=red", BAD),
                 ("GET", f"/v1/requests/{rid}/rejects?limit=0", BAD),
                 ("GET", f"/v1/requests/{rid}/rejects?limit=1001", BAD),
                 ("GET", f"/v1/requests/{rid}/rejects?after=abc", BAD)]
        failures = []
        for method, path, statuses in cases:
            body = {"priority": 1} if method == "PATCH" else None
            answer = self.api(method, path, body)
            try:
                self.assert_error_in(answer, statuses, f"{method} {path[:80]}")
            except AssertionError as error:
                failures.append(str(error)[:300])
            self.h.check_alive()
        self.note(f"{len(cases)} odd paths and parameters, {len(failures)} wrong answers")
        self.assertFalse(failures, f"{len(failures)} of {len(cases)} answered wrong:\n" +
                         "\n".join(failures))
        # Nothing changed, and the good forms still work
        self.assertEqual(self.h.request(rid)["status"] in ("accepted", "splitting", "active"), True)
        self.assertEqual(self.get_request(rid)["priority"], 0)
        self.ok(self.api("GET", "/v1/requests?limit=1000&status=active"), 200, "good query")
        self.ok(self.api("GET", "/v1/messages?limit=1"), 200, "good query")
        self.healthz_ok()

    def test_broken_http_over_raw_sockets(self):
        """Broken HTTP (garbage, headers without a colon, lying or
        negative Content-Length, a 100 KB header, a body cut short) never
        takes fairqd down; a slow or idle client does not hold others up;
        a body sent in pieces is read whole; concurrent submits all land."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        auth = b"Authorization: Bearer " + self.admin.encode() + b"\r\n"
        good = json.dumps(submit_body("acme", send_at=int(time.time()) + HOUR)).encode()
        garbage = [
            b"GARBAGE\r\n\r\n",
            b"\x00\x01\x02\xff\xfe" * 200 + b"\r\n\r\n",
            b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n",
            b"GET " + b"/v1/" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: -1\r\n\r\n{}",
            b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: abc\r\n\r\n{}",
            b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
            b"Content-Length: 99999999999999999999999\r\n\r\n{}",
            b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
            b"Content-Length: 5\r\nContent-Length: 7\r\n\r\n{}",
            b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
            b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
            b"GET /v1/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\x00x\r\n\r\n",
        ]
        for data in garbage:
            answer = self.raw(data, timeout=5, allow_silence=True)
            what = f"raw {data[:40]!r}"
            self.note(f"{what}: {answer.status or answer.error}")
            self.h.check_alive()
            if answer.status is not None:
                self.assertTrue(400 <= answer.status < 500 or answer.status == 505,
                                f"{what}: {answer}")
            self.healthz_ok()
        # The body cut short: the client gives up, fairqd must not wait forever
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", self.h.http_port), timeout=5) as s:
                s.sendall(b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
                          b"Content-Length: 5000\r\n\r\n" + good[:50])
        self.healthz_ok()

        # Idle and half-sent connections do not hold others up
        idle = []
        try:
            for i in range(20):
                s = socket.create_connection(("127.0.0.1", self.h.http_port), timeout=5)
                if i % 2:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                idle.append(s)
            started = time.monotonic()
            self.healthz_ok()
            self.assertLess(time.monotonic() - started, 5, "idle connections held /healthz up")
            rid = self.submit_ok(submit_body("acme"))["id"]
        finally:
            for s in idle:
                s.close()

        # A body written in three pieces, 0.3 s apart, is read whole
        head = (b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(good))
        third = len(good) // 3
        answer = self.raw([head, good[:third], good[third:2 * third], good[2 * third:]],
                          timeout=15, pause=0.3)
        self.assertEqual(answer.status, 202, answer)
        self.assertEqual(answer.json()["tenant"], "acme")

        # Sixteen submits at once
        results = []

        def one(i):
            try:
                results.append(self.h.http("POST", "/v1/requests", body=submit_body("acme"),
                                           token=self.admin, timeout=60)[0])
            except Exception as error:  # Reported by the test thread
                results.append(repr(error))
        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        self.assertEqual(results, [202] * 16)
        self.assertEqual(self.count("fairq.requests"), 18)
        self.assertEqual(self.get_request(rid)["id"], rid)

        # The default http_body_max: a Content-Length over 32 MiB is a 413
        answer = self.raw(b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
                          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" %
                          (32 * 1024 * 1024 + 1), timeout=15)
        self.assert_raw_error(answer, 413, "a Content-Length of 32 MiB + 1")
        self.healthz_ok()
        self.assertEqual(self.count("fairq.requests"), 18)
        # The default http_body_max is 32 MiB (API.md): a Content-Length of
        # 30 MiB is waited for, not refused
        answer = self.raw(b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
                          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" %
                          (30 * 1024 * 1024), timeout=3, allow_silence=True)
        self.assertEqual(answer.error, "silent",
                         f"a Content-Length of 30 MiB, under the default http_body_max of 32 MiB, "
                         f"answered at once: {answer}")


if __name__ == "__main__":
    fq_api.main()
