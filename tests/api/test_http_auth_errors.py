#!/usr/bin/python3
"""test_http_auth_errors.py: who may do what, and every error status of
api/API.md's table but 400 (test_http_malformed.py) and 500: 401 without a
valid bearer token, a tenant token confined to its own tenant (another
tenant's ids answer 404, exactly like ids that do not exist; admin routes
403), 404 for unknown routes, 405 with Allow, 413 over http_body_max, 429
over a tenant's submit_rate with Retry-After, and 503 while PostgreSQL is
down, after which fairqd recovers by itself.
"""

import base64
import os
import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, recipients, submit_body  # noqa: E402

HOUR = 3600
FAIRQD = {"poll_ms": 200}
BODY_MAX = 4096
# How long PostgreSQL stays stopped in the restart: short, as another
# cluster on this machine could take its port meanwhile
DOWN_S = 2


def all_routes(rid, mid, tenant):
    """(method, path, body) of every authenticated route."""
    r = f"/v1/requests/{rid}"
    return [("POST", "/v1/requests", submit_body(tenant)), ("GET", "/v1/requests", None),
            ("GET", r, None), ("PATCH", r, {"priority": 1}), ("POST", r + "/cancel", None),
            ("POST", r + "/pause", None), ("POST", r + "/resume", None),
            ("GET", r + "/rejects", None), ("GET", "/v1/messages", None),
            ("GET", f"/v1/messages/{mid}", None), ("POST", f"/v1/messages/{mid}/retry", None),
            ("GET", "/v1/errors", None), ("GET", "/v1/tenants", None), ("GET", f"/v1/tenants/{tenant}", None),
            ("PUT", f"/v1/tenants/{tenant}", {"weight": 2}),
            ("POST", f"/v1/tenants/{tenant}/tokens", None), ("GET", "/metrics", None),
            ("GET", "/v1/destinations", None), ("GET", "/v1/destinations/default", None),
            ("PUT", "/v1/destinations/google", {"rate": "1/s"}),
            ("DELETE", "/v1/destinations/google", None), ("GET", "/v1/holds", None),
            ("POST", "/v1/holds", {"scope": "tenant", "name": tenant}),
            ("DELETE", f"/v1/holds/tenant/{tenant}", None),
            ("POST", "/v1/messages/bulk", {"action": "cancel", "tenant": tenant, "dry_run": True}),
            ("GET", "/v1/shape", None), ("GET", f"/v1/tenants/{tenant}/schedules", None),
            ("GET", "/v1/whoami", None), ("GET", "/v1/senders", None), ("GET", "/v1/share", None)]


class AuthErrorsTest(APITest):

    def test_unauthorized(self):
        """No token, an unknown one, another scheme, an empty one: 401 with
        WWW-Authenticate: Bearer on every route, and nothing changes.
        /healthz needs none."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme"))["id"]  # No sender: its message waits
        mid = self.wait_split(rid, 1)[0]["id"]
        unknown = "fq_" + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        authorizations = [None, f"Bearer {unknown}", f"Basic {base64.b64encode(b'a:b').decode()}",
                          "Bearer", "Bearer ", f"Bearer {self.admin}x", f"Bearer {self.admin[:-1]}",
                          f"Token {self.admin}", self.admin]
        requests_before = self.count("fairq.requests")
        tokens_before = self.count("fairq.api_tokens")
        for method, path, body in all_routes(rid, mid, "acme"):
            for authorization in authorizations:
                headers = {"Authorization": authorization} if authorization else None
                answer = self.api(method, path, body, token=None, headers=headers)
                what = f"{method} {path} with Authorization {authorization!r:.30}"
                self.assert_error(answer, 401, what)
                self.assertTrue(answer[1].get("WWW-Authenticate", "").startswith("Bearer"),
                                f"{what}: WWW-Authenticate {answer[1].get('WWW-Authenticate')!r}")
        self.assertEqual(self.count("fairq.requests"), requests_before)
        self.assertEqual(self.count("fairq.api_tokens"), tokens_before)
        self.assertEqual(self.h.request(rid)["status"] in ("accepted", "splitting", "active"), True)
        self.assertEqual(self.h.scalar("SELECT weight FROM fairq.tenants WHERE name = 'acme'"), "1")
        self.healthz_ok()

    def test_tenant_token_sees_only_its_tenant(self):
        """A tenant token reads and changes its own tenant's requests and
        messages; another tenant's ids answer 404 exactly as missing ids
        do, change nothing, and never show up in lists; admin routes and
        submits for another tenant answer 403. The admin token sees all."""
        self.start(**FAIRQD)
        h = self.h
        self.put_tenant("alpha")
        self.put_tenant("bravo-secret")
        ta, tb = self.new_token("alpha"), self.new_token("bravo-secret")
        # No sender: their messages wait
        ra = self.submit_ok(submit_body("alpha", recipients=recipients(2, "a")),
                            token=ta)["id"]
        rb = self.submit_ok(submit_body("bravo-secret", drop=("tenant",),
                                        recipients=recipients(2, "b") + [{"to": "x\ny@z.org"}]),
                            token=tb)
        self.assertEqual(rb["tenant"], "bravo-secret")
        rb = rb["id"]
        ma = self.wait_split(ra, 2)
        mb = self.wait_split(rb, 2)
        missing_r, missing_m = rb + 1000, mb[-1]["id"] + 1000

        # Another tenant's ids: 404 as for ids that do not exist
        for kind, rid, mid in (("other's", rb, mb[0]["id"]), ("missing", missing_r, missing_m)):
            for method, path, body in (
                    ("GET", f"/v1/requests/{rid}", None),
                    ("POST", f"/v1/requests/{rid}/cancel", None),
                    ("POST", f"/v1/requests/{rid}/pause", None),
                    ("POST", f"/v1/requests/{rid}/resume", None),
                    ("PATCH", f"/v1/requests/{rid}", {"priority": 9}),
                    ("GET", f"/v1/requests/{rid}/rejects", None),
                    ("GET", f"/v1/messages/{mid}", None),
                    ("POST", f"/v1/messages/{mid}/retry", None),
                    ("GET", "/v1/tenants/bravo-secret" if kind == "other's" else
                     "/v1/tenants/nosuch", None),
                    ("GET", "/v1/requests?tenant=bravo-secret" if kind == "other's" else
                     "/v1/requests?tenant=nosuch", None)):
                answer = self.api(method, path, body, token=ta)
                self.assert_error(answer, 404, f"alpha's token, {kind} id: {method} {path}")
                if "bravo" not in path:
                    self.assertNotIn("bravo", answer[2]["detail"],
                                     f"{method} {path}: the 404 tells of the other tenant")
        row = h.request(rb)
        self.assertNotIn(row["status"], ("paused", "cancelled"), "alpha's token changed bravo's")
        self.assertEqual(h.scalar(f"SELECT priority FROM fairq.requests WHERE id = {rb}"), "0")

        # Lists show alpha's only
        listed = self.ok(self.api("GET", "/v1/requests", token=ta), 200, "list")["requests"]
        self.assertEqual([r["id"] for r in listed], [ra])
        messages = self.ok(self.api("GET", "/v1/messages", token=ta), 200, "search")["messages"]
        self.assertEqual(sorted(m["id"] for m in messages), sorted(m["id"] for m in ma))
        for query in (f"?request={rb}", "?tenant=bravo-secret", "?to=b0@example.org",
                      "?domain=example.org&limit=1000"):
            answer = self.api("GET", "/v1/messages" + query, token=ta)
            if answer[0] == 404:
                self.assert_error(answer, 404, query)
            else:
                found = self.ok(answer, 200, query)["messages"]
                self.assertFalse([m for m in found if m["tenant"] != "alpha"],
                                 f"alpha's token sees bravo's messages through {query}: {found}")
        tenants = self.ok(self.api("GET", "/v1/tenants", token=ta), 200, "tenants")["tenants"]
        self.assertEqual([t["name"] for t in tenants], ["alpha"])
        self.assertEqual(self.ok(self.api("GET", "/v1/tenants/alpha", token=ta), 200,
                                 "own tenant")["name"], "alpha")

        # Forbidden: admin routes, even for its own tenant; submits for others
        for method, path, body in (("PUT", "/v1/tenants/alpha", {"weight": 1000}),
                                   ("PUT", "/v1/tenants/alpha", {"max_send_rate": "1000000/s"}),
                                   ("PUT", "/v1/tenants/alpha", {"daily_quota": 1}),
                                   ("PUT", "/v1/tenants/bravo-secret", {"weight": 1000}),
                                   ("PUT", "/v1/tenants/newcomer", {}),
                                   ("POST", "/v1/tenants/alpha/tokens", None),
                                   ("POST", "/v1/tenants/bravo-secret/tokens", None),
                                   ("GET", "/metrics", None),
                                   ("POST", "/v1/requests", submit_body("bravo-secret"))):
            self.assert_error(self.api(method, path, body, token=ta), 403,
                              f"alpha's token: {method} {path}")
        self.assertEqual(h.sql("SELECT name, weight, send_rate_count, daily_quota"
                               " FROM fairq.tenants ORDER BY name"),
                         [["alpha", "1", "", ""], ["bravo-secret", "1", "", ""]])
        self.assertEqual(self.count("fairq.api_tokens"), 3)  # admin, ta, tb
        self.assertEqual(self.count("fairq.requests"), 2)

        # Its own: everything works
        self.assertEqual(self.get_request(ra, token=ta)["tenant"], "alpha")
        self.assertEqual(self.ok(self.api("POST", f"/v1/requests/{ra}/pause", token=ta), 200,
                                 "own pause")["status"], "paused")
        self.assertEqual(self.ok(self.api("PATCH", f"/v1/requests/{ra}", {"priority": 4},
                                          token=ta), 200, "own PATCH")["priority"], 4)
        self.ok(self.api("GET", f"/v1/messages/{ma[0]['id']}", token=ta), 200, "own message")
        self.ok(self.api("GET", f"/v1/requests/{ra}/rejects", token=ta), 200, "own rejects")
        self.assertEqual(self.ok(self.api("POST", f"/v1/requests/{ra}/cancel", token=ta), 200,
                                 "own cancel")["status"], "cancelled")
        # ...and bravo's token sees its own, with its reject
        rejects = self.ok(self.api("GET", f"/v1/requests/{rb}/rejects", token=tb), 200,
                          "bravo's rejects")["rejects"]
        self.assertEqual([r["recipient"] for r in rejects], ["x\ny@z.org"])
        self.assert_error(self.api("GET", f"/v1/requests/{ra}", token=tb), 404, "bravo -> alpha")

        # The admin sees all
        listed = self.ok(self.api("GET", "/v1/requests"), 200, "admin list")["requests"]
        self.assertEqual(sorted(r["id"] for r in listed), sorted([ra, rb]))
        self.assertEqual(self.get_request(rb)["tenant"], "bravo-secret")
        messages = self.ok(self.api("GET", "/v1/messages"), 200, "admin search")["messages"]
        self.assertEqual({m["tenant"] for m in messages}, {"alpha", "bravo-secret"})
        tenants = self.ok(self.api("GET", "/v1/tenants"), 200, "admin tenants")["tenants"]
        self.assertEqual(sorted(t["name"] for t in tenants), ["alpha", "bravo-secret"])
        self.ok(self.api("GET", f"/v1/messages/{mb[0]['id']}"), 200, "admin: bravo's message")

    def test_not_found_and_method_not_allowed(self):
        """Unknown paths answer 404; a known path with another method 405,
        its Allow header listing the path's methods."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme"))["id"]  # No sender: its message waits
        mid = self.wait_split(rid, 1)[0]["id"]
        for path in ("/", "/v1", "/v1/", "/v1/nope", "/v2/requests", "/v1/request",
                     f"/v1/requests/{rid}/bogus", f"/v1/requests/{rid}/cancel/now",
                     f"/v1/messages/{mid}/bogus", "/v1/tenants/acme/bogus", "/metrics/x",
                     "/healthz/x", "/V1/REQUESTS", "/v1/requests/1/rejects/2"):
            self.assert_error(self.api("GET", path), 404, f"GET {path}")
        self.assert_error(self.api("POST", "/v1/nope", {"a": 1}), 404, "POST /v1/nope")

        r, m = f"/v1/requests/{rid}", f"/v1/messages/{mid}"
        cases = [("DELETE", r, {"GET", "PATCH"}), ("POST", r, {"GET", "PATCH"}),
                 ("PUT", r, {"GET", "PATCH"}),
                 ("PUT", "/v1/requests", {"GET", "POST"}),
                 ("DELETE", "/v1/requests", {"GET", "POST"}),
                 ("GET", r + "/cancel", {"POST"}), ("DELETE", r + "/pause", {"POST"}),
                 ("PUT", r + "/resume", {"POST"}), ("POST", r + "/rejects", {"GET"}),
                 ("POST", "/v1/messages", {"GET"}), ("DELETE", m, {"GET"}),
                 ("GET", m + "/retry", {"POST"}),
                 ("POST", "/v1/tenants", {"GET"}), ("DELETE", "/v1/tenants/acme", {"GET", "PUT"}),
                 ("PATCH", "/v1/tenants/acme", {"GET", "PUT"}),
                 ("PUT", "/v1/tenants/acme/tokens", {"POST", "GET"}),
                 ("POST", "/healthz", {"GET"}), ("POST", "/metrics", {"GET"}),
                 ("DELETE", "/metrics", {"GET"})]
        for method, path, allowed in cases:
            body = {"priority": 1} if method in ("POST", "PUT", "PATCH") else None
            answer = self.api(method, path, body)
            self.assert_error(answer, 405, f"{method} {path}")
            allow = answer[1].get("Allow")
            self.assertIsNotNone(allow, f"{method} {path}: 405 without Allow")
            listed = {word.strip().upper() for word in allow.split(",") if word.strip()}
            self.assertEqual(listed - {"HEAD", "OPTIONS"}, allowed, f"{method} {path}: Allow "
                                                                    f"{allow!r}")
        self.assertEqual(self.h.request(rid)["status"] in ("accepted", "splitting", "active"),
                         True, "a 405 changed the request")
        self.assertEqual(self.count("fairq.requests"), 1)

    def test_payload_too_large(self):
        """With http_body_max = 4096, a body of 4096 bytes is taken, one of
        4097 is a 413 on every route with a body, by Content-Length or
        chunked, and fairqd does not wait for a body it will refuse."""
        self.start(http_body_max=BODY_MAX, **FAIRQD)
        self.put_tenant("acme")
        later = int(time.time()) + HOUR

        def sized(size):
            body = submit_body("acme", send_at=later, body="")
            pad = size - len(fq_api.json.dumps(body).encode())
            self.assertGreaterEqual(pad, 0)
            body["body"] = "x" * pad
            data = fq_api.json.dumps(body).encode()
            self.assertEqual(len(data), size)
            return data

        exact = self.ok(self.api("POST", "/v1/requests", raw=sized(BODY_MAX)), 202,
                        "a body of exactly http_body_max bytes")
        rid = exact["id"]
        self.assert_error(self.api("POST", "/v1/requests", raw=sized(BODY_MAX + 1)), 413,
                          "a submit one byte over http_body_max")
        answer = self.raw(b"POST /v1/requests HTTP/1.1\r\nHost: fairq\r\n"
                          b"Authorization: Bearer " + self.admin.encode() + b"\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 200000\r\n\r\n" +
                          sized(200000), timeout=15)
        self.assert_raw_error(answer, 413, "a submit of 200,000 bytes")
        big = b'{"weight": 2' + b" " * BODY_MAX + b"}"
        self.assert_error(self.api("PUT", "/v1/tenants/acme", raw=big), 413, "PUT tenant")
        self.assert_error(self.api("PUT", "/v1/tenants/newcomer", raw=big), 413, "PUT tenant")
        big = b'{"priority": 2' + b" " * BODY_MAX + b"}"
        self.assert_error(self.api("PATCH", f"/v1/requests/{rid}", raw=big), 413, "PATCH")

        # A Content-Length far over the limit and no body at all: answered
        # at once, not after waiting for a gigabyte
        started = time.monotonic()
        answer = self.raw(b"POST /v1/requests HTTP/1.1\r\nHost: fairq\r\n"
                          b"Authorization: Bearer " + self.admin.encode() + b"\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n",
                          timeout=15)
        self.assert_raw_error(answer, 413, "Content-Length: 1000000000 without a body")
        self.assertLess(time.monotonic() - started, 10)
        # Chunked: no Content-Length to go by, the limit still holds
        chunk = b"x" * 1000
        parts = [b"POST /v1/requests HTTP/1.1\r\nHost: fairq\r\n"
                 b"Authorization: Bearer " + self.admin.encode() + b"\r\n"
                 b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                 b'12\r\n{"tenant": "acme",\r\n']
        parts += [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 8 + [b"0\r\n\r\n"]
        answer = self.raw(parts, timeout=15)
        self.assert_raw_error(answer, 413, "a chunked body of 8 KB")

        self.assertEqual(self.count("fairq.requests"), 1, "a refused body stored something")
        self.assertEqual(self.h.sql("SELECT name, weight FROM fairq.tenants"), [["acme", "1"]])
        self.assertEqual(self.get_request(rid)["priority"], 0)
        self.healthz_ok()

    def test_no_token_no_body(self):
        """A call without a valid token is answered 401 from its headers
        alone: a body announced within http_body_max is never waited for,
        so nobody without a token can make fairqd hold bodies."""
        self.start(**FAIRQD)
        for auth in (b"", b"Authorization: Bearer fq_nope\r\n"):
            answer = self.raw(b"POST /v1/requests HTTP/1.1\r\nHost: x\r\n" + auth +
                              b"Content-Type: application/json\r\n"
                              b"Content-Length: 10000000\r\n\r\n{", timeout=5)
            self.assert_raw_error(answer, 401, f"a tokenless 10 MB body ({auth!r})")
        self.healthz_ok()

    def test_submit_rate(self):
        """A tenant with submit_rate 3 gets three submits at once, then 429
        with Retry-After, and the refused submit stores nothing; other
        tenants are not held back; after Retry-After seconds a submit is
        taken again; submit_rate null lifts the limit."""
        self.start(**FAIRQD)
        self.put_tenant("acme", submit_rate=3)
        self.put_tenant("bravo")
        self.put_tenant("charlie", submit_rate=30)
        acme, bravo, charlie = (self.new_token(t) for t in ("acme", "bravo", "charlie"))
        later = int(time.time()) + HOUR
        for _ in range(3):
            self.submit_ok(submit_body("acme", send_at=later), token=acme)
        for _ in range(2):
            answer = self.submit(submit_body("acme", send_at=later), token=acme)
            self.assert_error(answer, 429, "the fourth submit of a minute")
            retry_after = answer[1].get("Retry-After")
            self.assertIsNotNone(retry_after, "429 without Retry-After")
            self.assertRegex(retry_after, r"^\d+$", "Retry-After is not delta-seconds")
            self.assertTrue(1 <= int(retry_after) <= 60, f"Retry-After {retry_after}")
        self.assertEqual(self.count("fairq.requests"), 3, "a 429 stored a request")
        # A retry with the key of a submit that got through is answered with
        # that request, not a 429: it costs nothing
        self.put_tenant("acme", submit_rate=1)
        self.h.sql("UPDATE fairq.requests SET idempotency_key = 'k-1' WHERE id ="
                   " (SELECT min(id) FROM fairq.requests)")
        first = int(self.h.scalar("SELECT min(id) FROM fairq.requests"))
        for _ in range(3):
            answer = self.api("POST", "/v1/requests", submit_body("acme", send_at=later),
                              token=acme, headers={"Idempotency-Key": "k-1"})
            self.assertEqual(answer[0], 202, answer)
            self.assertEqual(answer[2]["id"], first, answer)
        self.put_tenant("acme", submit_rate=3)
        # The admin's submits for acme (API.md: an operator's own, not limited)
        admin_status = self.submit(submit_body("acme", send_at=later))[0]
        self.note(f"an admin's submit for a tenant over its rate answers {admin_status}")
        for _ in range(6):
            self.submit_ok(submit_body("bravo", send_at=later), token=bravo)

        # charlie, 30 a minute: a burst until refused, then Retry-After is true
        taken, answer = 0, None
        for _ in range(70):
            answer = self.submit(submit_body("charlie", send_at=later), token=charlie)
            if answer[0] != 202:
                break
            taken += 1
        self.assert_error(answer, 429, f"charlie's submit after {taken}")
        self.assertGreaterEqual(taken, 3)
        self.assertLessEqual(taken, 60, "more than twice submit_rate in a burst")
        retry_after = int(answer[1].get("Retry-After", "0"))
        self.note(f"charlie (30 a minute): {taken} taken at once, then Retry-After {retry_after}")
        self.assertTrue(1 <= retry_after <= 60, retry_after)
        time.sleep(retry_after + 0.2)
        self.submit_ok(submit_body("charlie", send_at=later), token=charlie)

        self.put_tenant("acme", 200, submit_rate=None)
        self.submit_ok(submit_body("acme", send_at=later), token=acme)
        self.assertEqual(self.count("fairq.requests", "tenant_id = (SELECT id FROM fairq.tenants"
                                    " WHERE name = 'acme')"), 4 + (admin_status == 202))
        self.assertEqual(self.count("fairq.requests", "tenant_id = (SELECT id FROM fairq.tenants"
                                    " WHERE name = 'charlie')"), taken + 1)

    def test_database_unavailable(self):
        """PostgreSQL unreachable under fairqd: /healthz answers 503
        degraded, API calls 503 database_unavailable (never a 401 for a
        good token), promptly; once it is reachable again fairqd
        reconnects by itself: /healthz 200 and submits work again. Then
        the same recovery after a real restart of the PostgreSQL server."""
        self.start(database_retry_min_ms=100, database_retry_max_ms=1000, **FAIRQD)
        h = self.h
        self.put_tenant("acme")
        acme = self.new_token("acme")
        rid = self.submit_ok(submit_body("acme", send_at=int(time.time()) + HOUR))["id"]

        def degraded():
            answer = self.api("GET", "/healthz", token=None, timeout=5)
            return answer if answer[0] == 503 else None
        with self.database_blocked():
            answer = h.wait(degraded, 10, "/healthz to answer 503 while PostgreSQL is "
                                          "unreachable", interval=0.2)
            payload = answer[2]
            self.assertIsInstance(payload, dict, payload)
            self.assertEqual((payload.get("status"), payload.get("database")),
                             ("degraded", "unreachable"), payload)
            self.assertIsInstance(payload.get("detail"), str, payload)
            # As API.md shows it (test_http_requests compares its examples)
            self.assertEqual(set(payload), {"error", "status", "database", "detail"}, payload)
            self.assertEqual(payload["error"], "database_unavailable", payload)
            self.assertTrue(answer[1].get("Content-Type", "").startswith("application/json"))
            for method, path, body, token in (
                    ("POST", "/v1/requests", submit_body("acme"), fq_api.ADMIN),
                    ("POST", "/v1/requests", submit_body("acme"), acme),
                    ("GET", f"/v1/requests/{rid}", None, fq_api.ADMIN),
                    ("GET", "/v1/tenants", None, acme),
                    ("GET", "/v1/messages", None, fq_api.ADMIN),
                    ("GET", "/v1/errors", None, fq_api.ADMIN),
                    ("PUT", "/v1/tenants/acme", {"weight": 9}, fq_api.ADMIN),
                    ("POST", "/v1/holds", {"scope": "all"}, fq_api.ADMIN),
                    ("POST", "/v1/messages/bulk", {"action": "cancel", "tenant": "acme",
                                                   "dry_run": True}, fq_api.ADMIN),
                    ("GET", "/v1/shape", None, acme)):
                started = time.monotonic()
                answer = self.api(method, path, body, token=token, timeout=8)
                took = time.monotonic() - started
                self.assert_error(answer, 503, f"{method} {path} with PostgreSQL unreachable")
                self.assertLess(took, 5, f"{method} {path} took {took:.1f} s to answer 503")
            self.assertEqual(degraded()[0], 503, "/healthz recovered while still unreachable")
        h.wait(lambda: self.api("GET", "/healthz", token=None, timeout=5)[0] == 200, 30,
               "/healthz to answer 200 once PostgreSQL is reachable again", interval=0.2)
        self.healthz_ok()
        self.assertEqual(self.get_request(rid)["id"], rid)
        again = self.submit_ok(submit_body("acme"), token=acme)
        self.assertEqual(self.get_request(again["id"], token=acme)["tenant"], "acme")
        self.assertEqual(self.count("fairq.requests"), 2, "a 503 stored a request")
        self.assertEqual(h.scalar("SELECT weight FROM fairq.tenants"), "1")

        # The server itself restarted, down for a moment: fairqd is back too
        h.restart_postgres(down_s=DOWN_S)
        h.wait(lambda: self.api("GET", "/healthz", token=None, timeout=5)[0] == 200, 30,
               "/healthz to answer 200 after PostgreSQL restarted", interval=0.2)
        self.submit_ok(submit_body("acme"), token=acme)
        self.assertEqual(self.count("fairq.requests"), 3)


if __name__ == "__main__":
    fq_api.main()
