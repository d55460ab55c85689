#!/usr/bin/python3
"""test_http_events.py: GET /v1/events (api/API.md) over real sockets,
with events written by SQL, each statement a transaction of its own: the
event object as API.md shows it; every event once, in (transaction, id)
order, across pages of any size, the cursor given back by an empty page;
each filter (tenant, request, type); a tenant token reading its own tenant
only, another tenant's name or request a 404 in the words of one that does
not exist; an event of a transaction still open held back, and found by
the poll after its commit, the cursor never passing it; every malformed
parameter a 400 with its words; no token 401, another method 405, the
database away 503. The requests are due in an hour, so the pipeline
writes no event of its own meanwhile.
"""

import subprocess
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, submit_body  # noqa: E402

HOUR = 3600
FAIRQD = {"poll_ms": 200}
EVENT_KEYS = {"id", "tenant", "request", "message", "type", "recipient", "detail", "at"}
TYPES = ["message.sent", "message.deferred", "message.dead", "message.cancelled",
         "message.rejected", "message.suppressed", "message.unsubscribed", "message.bounced",
         "message.complained", "request.split", "request.done", "request.cancelled"]
TYPES_TEXT = ", ".join(TYPES)
# How long an event of a committed transaction may take to show (another
# program's transaction on the cluster holds the snapshot's bound back)
SETTLE_S = 10


def lit(value):
    return "NULL" if value is None else fq_api.fq_e2e.lit(str(value))


class EventsTest(APITest):

    def setup_events(self):
        """fairqd; tenants acme and bravo with a token each and a request
        each (due in an hour); 30 events of theirs, each written by a
        transaction of its own, and 3 by one transaction together."""
        self.start(**FAIRQD)
        h = self.h
        self.put_tenant("acme")
        self.put_tenant("bravo")
        self.acme, self.bravo = self.new_token("acme"), self.new_token("bravo")
        later = int(time.time()) + HOUR
        self.requests = {t: self.submit_ok(submit_body(t, send_at=later))["id"]
                         for t in ("acme", "bravo")}
        self.tenant_ids = {t: int(h.scalar(f"SELECT id FROM fairq.tenants WHERE name = '{t}'"))
                           for t in ("acme", "bravo")}
        statements = []
        for i in range(30):
            tenant = "bravo" if i % 3 == 0 else "acme"
            kind = TYPES[i % 5]
            statements.append(self.insert_sql(
                tenant, self.requests[tenant], 1000 + i, kind, f"r{i}@example.org",
                "451 4.7.1 try later" if kind == "message.deferred" else None))
        statements.append("BEGIN;" + "".join(
            self.insert_sql("acme", self.requests["acme"], None, "request.split", None, None)
            for _ in range(3)) + "COMMIT;")
        h.sql("\n".join(statements))

    def insert_sql(self, tenant, request, message, kind, recipient, detail):
        return ("INSERT INTO fairq.events (tenant_id, request_id, message_id, type, recipient,"
                f" detail) VALUES ({self.tenant_ids[tenant]}, {lit(request)}, {lit(message)},"
                f" {lit(kind)}, {lit(recipient)}, {lit(detail)});")

    def sql_ids(self, where="true"):
        return [int(r[0]) for r in self.h.sql(
            f"SELECT id FROM fairq.events WHERE {where} ORDER BY txid, id")]

    def page(self, query="", token=fq_api.ADMIN):
        payload = self.ok(self.api("GET", f"/v1/events{query}", token=token), 200,
                          f"GET /v1/events{query}")
        self.assertEqual(set(payload), {"events", "next"}, payload)
        self.assertIsInstance(payload["next"], str, payload)
        self.assertRegex(payload["next"], r"^\d+-\d+$", payload)
        for e in payload["events"]:
            self.check_event(e)
        return payload

    def check_event(self, e):
        self.assertEqual(set(e), EVENT_KEYS, e)
        self.assertIs(type(e["id"]), int, e)
        self.assertIsInstance(e["tenant"], str, e)
        self.assertIn(e["type"], TYPES, e)
        for key in ("request", "message"):
            self.assertTrue(e[key] is None or type(e[key]) is int, f"{key}: {e}")
        for key in ("recipient", "detail"):
            self.assertTrue(e[key] is None or isinstance(e[key], str), f"{key}: {e}")
        self.assertRegex(e["at"], fq_api.RFC3339_UTC, e)

    def read_all(self, query="", token=fq_api.ADMIN, limit=100):
        """Every event, following next to an empty page: their ids."""
        sep = "&" if query else "?"
        cursor, ids = None, []
        while True:
            after = f"&after={cursor}" if cursor else ""
            payload = self.page(f"{query}{sep}limit={limit}{after}", token)
            events = payload["events"]
            self.assertLessEqual(len(events), limit, payload)
            if not events:
                self.assertEqual(payload["next"], cursor or "0-0", "an empty page's next")
                break
            ids += [e["id"] for e in events]
            self.assertNotEqual(payload["next"], cursor, payload)
            cursor = payload["next"]
        self.assertEqual(len(ids), len(set(ids)), f"an event twice: {ids}")
        return ids

    def test_pages_filters_and_tenants(self):
        """Every event once, in order, whatever the page size; each
        filter; each tenant's token its own events only."""
        self.setup_events()
        h = self.h
        every = self.sql_ids()
        self.assertEqual(len(every), 33)
        for limit in (1, 7, 1000):
            self.assertEqual(self.read_all(limit=limit), every, f"pages of {limit}")
        self.assertEqual(self.read_all(), every, "the default limit")

        # One event whole, as the row is
        first = self.page("?limit=2")["events"][1]
        row = h.sql("SELECT e.id, t.name, e.request_id, e.message_id, e.type, e.recipient,"
                    " e.detail, floor(extract(epoch FROM e.at))::bigint FROM fairq.events e"
                    f" JOIN fairq.tenants t ON t.id = e.tenant_id WHERE e.id = {first['id']}")[0]
        self.assertEqual([first["id"], first["tenant"], first["request"], first["message"],
                          first["type"], first["recipient"], first["detail"]],
                         [int(row[0]), row[1], int(row[2]), int(row[3]), row[4], row[5], row[6]])
        self.assertEqual(first["detail"], "451 4.7.1 try later")
        self.assertEqual(fq_api.parse_time(first["at"]), int(row[7]))
        split = self.page("?type=request.split&limit=1")["events"][0]
        self.assertEqual((split["message"], split["recipient"], split["detail"]),
                         (None, None, None), split)
        # The cursor is the last event's transaction and id
        payload = self.page("?limit=3")
        last = payload["events"][-1]["id"]
        self.assertEqual(payload["next"], h.scalar(
            f"SELECT txid::text || '-' || id FROM fairq.events WHERE id = {last}"))
        # after=0-0 is the start
        self.assertEqual(self.page("?after=0-0&limit=5")["events"],
                         self.page("?limit=5")["events"])

        acme_id, bravo_id = self.tenant_ids["acme"], self.tenant_ids["bravo"]
        acme_ids = self.sql_ids(f"tenant_id = {acme_id}")
        bravo_ids = self.sql_ids(f"tenant_id = {bravo_id}")
        self.assertEqual(self.read_all("?tenant=acme", limit=4), acme_ids)
        self.assertEqual(self.read_all(f"?request={self.requests['bravo']}", limit=4),
                         self.sql_ids(f"request_id = {self.requests['bravo']}"))
        self.assertEqual(self.read_all("?type=message.dead", limit=2),
                         self.sql_ids("type = 'message.dead'"))
        self.assertEqual(self.read_all("?tenant=acme&type=message.deferred", limit=2),
                         self.sql_ids(f"tenant_id = {acme_id} AND type = 'message.deferred'"))
        self.assertEqual(self.read_all("?type=request.cancelled"), [])
        self.assert_error(self.api("GET", "/v1/events?tenant=nobody"), 404, "admin, unknown")

        # A tenant token: its own events, named or not
        self.assertEqual(self.read_all(token=self.acme, limit=5), acme_ids)
        self.assertEqual(self.read_all("?tenant=acme", token=self.acme), acme_ids)
        self.assertEqual(self.read_all(token=self.bravo, limit=50), bravo_ids)
        self.assertEqual(self.read_all(f"?request={self.requests['acme']}", token=self.acme),
                         self.sql_ids(f"request_id = {self.requests['acme']}"))
        # Another tenant's name or request: the 404 of one that does not exist
        for name in ("bravo", "nobody"):
            answer = self.api("GET", f"/v1/events?tenant={name}", token=self.acme)
            self.assert_error(answer, 404, f"tenant={name}")
            self.assertEqual(answer[2]["detail"],
                             f'could not read tenant: "{name}" does not exist')
        for request in (self.requests["bravo"], 987654321):
            answer = self.api("GET", f"/v1/events?request={request}", token=self.acme)
            self.assert_error(answer, 404, f"request={request}")
            self.assertEqual(answer[2]["detail"], f"request {request} does not exist")
        answer = self.api("GET", f"/v1/events?tenant=acme&request={self.requests['bravo']}")
        self.assert_error(answer, 404, "admin, acme's events of bravo's request")

    def test_open_transaction_is_read_after_it_ends(self):
        """A poller following next: an event of a transaction still open
        does not show, nor any newer one, and next stays put; once the
        transaction commits the next poll gets it, then the newer ones."""
        self.setup_events()
        h = self.h
        cursor = "0-0"
        while True:
            payload = self.page(f"?after={cursor}&limit=1000")
            if not payload["events"]:
                break
            cursor = payload["next"]
        psql = subprocess.Popen(
            ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", h.dsn or h.dbname],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            psql.stdin.write("BEGIN;\n" + self.insert_sql(
                "acme", None, None, "message.dead", "held@example.org", "550 no")[:-1] +
                " RETURNING id;\n")
            psql.stdin.flush()
            held = int(psql.stdout.readline())
            newer = []
            for i in range(2):
                newer.append(int(h.scalar(self.insert_sql(
                    "bravo" if i else "acme", None, None, "message.sent", f"n{i}@example.org",
                    None)[:-1] + " RETURNING id")))
            for _ in range(3):
                payload = self.page(f"?after={cursor}")
                self.assertEqual(payload["events"], [], "an open transaction's, or newer")
                self.assertEqual(payload["next"], cursor)
            psql.stdin.write("COMMIT;\n")
            psql.stdin.close()
            self.assertEqual(psql.wait(timeout=30), 0, psql.stderr.read())
        finally:
            if psql.poll() is None:
                psql.kill()
                psql.wait()
        deadline = time.monotonic() + SETTLE_S
        ids = []
        while len(ids) < 3 and time.monotonic() < deadline:
            payload = self.page(f"?after={cursor}")
            ids += [e["id"] for e in payload["events"]]
            cursor = payload["next"]
            time.sleep(0.1)
        self.assertEqual(ids, [held] + newer)
        self.assertEqual(self.page(f"?after={cursor}")["events"], [])

    def test_refusals(self):
        """Every malformed parameter a 400 saying what is wrong; no token
        401; another method 405; the database away 503."""
        self.setup_events()
        refused = [
            ("?tenants=acme", 'unknown query parameter "tenants"'),
            ("?after=1-2&since=3", 'unknown query parameter "since"'),
            ("?limit=0", 'limit must be an integer within 1..1000, not "0"'),
            ("?limit=1001", 'limit must be an integer within 1..1000, not "1001"'),
            ("?limit=-1", 'limit must be an integer within 1..1000, not "-1"'),
            ("?limit=ten", 'limit must be an integer within 1..1000, not "ten"'),
            ("?limit=", 'limit must be an integer within 1..1000, not ""'),
            ("?request=abc", 'request id must be a positive integer, not "abc"'),
            ("?request=0", 'request id must be a positive integer, not "0"'),
            ("?request=-4", 'request id must be a positive integer, not "-4"'),
            ("?type=message.opened",
             f'type must be one of {TYPES_TEXT}, not "message.opened"'),
            ("?type=", f'type must be one of {TYPES_TEXT}, not ""'),
            ("?type=MESSAGE.SENT", f'type must be one of {TYPES_TEXT}, not "MESSAGE.SENT"'),
            ("?tenant=", "could not read events: the tenant's name is empty"),
        ]
        for cursor in ("abc", "", "12", "12-", "-12", "1-2-3", "1-2x", "+1-2", "1-+2", "1--2",
                       "1 -2", " 1-2", "0x1-2", "1-2\u00e9", "18446744073709551616-1",
                       "1-9223372036854775808"):
            refused.append((f"?after={urllib.parse.quote(cursor, safe='')}",
                            f'could not read events: "{cursor}" is not a cursor (a cursor is the'
                            ' "next" of a page, two numbers joined by \'-\', as "0-0" for the'
                            ' start)'))
        for query, detail in refused:
            for token in (fq_api.ADMIN, self.acme):
                answer = self.api("GET", f"/v1/events{query}", token=token)
                self.assert_error(answer, 400, query)
                self.assertEqual(answer[2]["detail"], detail, query)
        # Their bounds are taken
        self.assertEqual(len(self.page("?limit=1")["events"]), 1)
        self.assertEqual(len(self.page("?limit=1000")["events"]), 33)
        self.page("?after=18446744073709551615-9223372036854775807")
        for kind in TYPES:
            self.page(f"?type={kind}&limit=1")

        self.assert_error(self.api("GET", "/v1/events", token=None), 401, "no token")
        answer = self.api("POST", "/v1/events", {})
        self.assert_error(answer, 405, "POST")
        self.assertIn("GET", answer[1].get("Allow", ""))
        with self.database_blocked():
            self.assert_error(self.api("GET", "/v1/events"), 503, "no database")
            self.assert_error(self.api("GET", "/v1/events?tenant=acme", token=self.acme), 503,
                              "no database, a tenant")
        self.h.wait(lambda: self.api("GET", "/v1/events?limit=1")[0] == 200, 30,
                    "/v1/events once PostgreSQL is reachable again", interval=0.2)


if __name__ == "__main__":
    fq_api.main()
