#!/usr/bin/python3
"""test_http_suppressions.py: the suppression lists (api/API.md,
"Suppression lists") over real sockets: an address added (201, then 200
with the first entry kept), read in any case, listed a page at a time in
address order with its cursor and the counts of the first page, removed
(204, then 404); the global list the same under /v1/suppressions; an
import of CSV text with a header or without, with good, duplicate, known
and bad lines (each bad one refused alone, with its line and why, at most
100 listed and all counted); a tenant's token on its own list only
(another tenant's a 404 in the words of one that does not exist), the
global list admin-only (403); every malformed input a 400 with its words;
the database away 503; and a suppressed recipient of a request submitted
through the API refused at split with the reason "suppressed".
"""

import sys
import urllib.parse

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, submit_body  # noqa: E402

FAIRQD = {"poll_ms": 200}
ENTRY_KEYS = {"address", "reason", "detail", "created_at"}
REASONS = ("manual", "bounce", "complaint", "unsubscribe")
CSV = {"Content-Type": "text/csv"}
ADDRESS_RULE = "address is not local@domain"


def quote(address):
    """An address as a path segment."""
    return urllib.parse.quote(address, safe="@")


class SuppressionsTest(APITest):

    def base(self, tenant):
        return f"/v1/tenants/{tenant}/suppressions" if tenant else "/v1/suppressions"

    def check_entry(self, entry):
        self.assertEqual(set(entry), ENTRY_KEYS, entry)
        self.assertIn(entry["reason"], REASONS, entry)
        self.assertEqual(entry["address"], entry["address"].lower(), entry)
        self.assertTrue(entry["detail"] is None or isinstance(entry["detail"], str), entry)
        self.assertRegex(entry["created_at"], fq_api.RFC3339_UTC, entry)
        return entry

    def put(self, tenant, address, body=None, status=None, token=fq_api.ADMIN):
        answer = self.api("PUT", f"{self.base(tenant)}/{quote(address)}", body, token=token)
        self.assertIn(answer[0], (status,) if status else (200, 201),
                      f"PUT {address}: {answer[2]!r:.500}")
        return self.check_entry(answer[2])

    def get(self, tenant, address, status=200, token=fq_api.ADMIN):
        answer = self.api("GET", f"{self.base(tenant)}/{quote(address)}", token=token)
        if status != 200:
            self.assert_error(answer, status, f"GET {address}")
            return answer[2]["detail"]
        return self.check_entry(self.ok(answer, 200, f"GET {address}"))

    def delete(self, tenant, address, status=204, token=fq_api.ADMIN):
        answer = self.api("DELETE", f"{self.base(tenant)}/{quote(address)}", token=token)
        if status != 204:
            self.assert_error(answer, status, f"DELETE {address}")
            return answer[2]["detail"]
        self.assertEqual(answer[0], 204, f"DELETE {address}: {answer[2]!r:.500}")
        self.assertEqual(answer[2], "", "a 204 with a body")
        return None

    def page(self, tenant, query="", token=fq_api.ADMIN):
        payload = self.ok(self.api("GET", f"{self.base(tenant)}{query}", token=token), 200,
                          f"GET {self.base(tenant)}{query}")
        first = "after=" not in query
        self.assertEqual(set(payload), {"suppressions", "next", "counts"} if first
                         else {"suppressions", "next"}, payload)
        for entry in payload["suppressions"]:
            self.check_entry(entry)
        return payload

    def listed(self, tenant, token=fq_api.ADMIN):
        """Every address of the list, through pages of 2."""
        addresses, query = [], "?limit=2"
        for _ in range(1000):
            payload = self.page(tenant, query, token)
            addresses += [e["address"] for e in payload["suppressions"]]
            if payload["next"] is None:
                return addresses
            query = f"?limit=2&after={urllib.parse.quote(payload['next'])}"
        self.fail("the pages do not end")

    def import_csv(self, tenant, text, token=fq_api.ADMIN, status=200):
        raw = text.encode() if isinstance(text, str) else text
        answer = self.api("POST", f"{self.base(tenant)}/import", raw=raw, headers=CSV, token=token)
        if status != 200:
            self.assert_error(answer, status, "import")
            return answer[2]["detail"]
        payload = self.ok(answer, 200, "import")
        self.assertEqual(set(payload), {"added", "already", "refused", "refused_count"}, payload)
        for refusal in payload["refused"]:
            self.assertEqual(set(refusal), {"line", "address", "reason"}, refusal)
        return payload

    def refused(self, method, path, status, words, body=None, raw=None, headers=None,
                token=fq_api.ADMIN):
        answer = self.api(method, path, body, raw=raw, headers=headers, token=token)
        self.assert_error(answer, status, f"{method} {path[:100]} {body!r:.100}")
        for word in (words if isinstance(words, (list, tuple)) else [words]):
            self.assertIn(word, answer[2]["detail"], f"{method} {path[:100]} {body!r:.100}")
        self.assertNotIn("fairq.", answer[2]["detail"], "a detail quotes the database")
        return answer[2]["detail"]

    # -----------------------------------------------------------------

    def test_add_get_list_delete(self):
        """PUT adds (201) an entry lowercased, again (200) keeps the first
        entry; GET in any case; pages of any size in address order, the
        first with the counts; DELETE (204, then 404); the global list is
        a list of its own."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        bob = self.put("acme", "Bob@Example.COM", {"detail": "asked by phone"}, 201)
        self.assertEqual((bob["address"], bob["reason"], bob["detail"]),
                         ("bob@example.com", "manual", "asked by phone"))
        # Bob@X = bob@x: the same entry, the first one kept
        again = self.put("acme", "BOB@example.com", None, 200)
        self.assertEqual(again, bob)
        self.assertEqual(self.put("acme", "bob@example.com", {"detail": "other"}, 200), bob)
        self.assertEqual(self.put("acme", "bob@example.com", {"detail": None}, 200), bob)
        self.assertEqual(self.get("acme", "bOB@eXAMPLE.com"), bob)
        self.assertEqual(self.count("fairq.suppressions"), 1)
        # {} and no body alike: no detail
        self.assertIsNone(self.put("acme", "ann@example.com", {}, 201)["detail"])
        self.assertIsNone(self.put("acme", "cy@example.com", None, 201)["detail"])
        detail = self.get("acme", "dan@example.com", 404)
        self.assertEqual(detail, '"dan@example.com" is not on the suppression list of tenant '
                                 '"acme"')

        # An entry of another reason, as a hard bounce makes it
        self.h.sql("INSERT INTO fairq.suppressions (tenant_id, address, reason, detail)"
                   " SELECT id, 'eve@example.com', 'bounce', '550 5.1.1 no such user'"
                   " FROM fairq.tenants WHERE name = 'acme'")
        eve = self.get("acme", "eve@example.com")
        self.assertEqual((eve["reason"], eve["detail"]), ("bounce", "550 5.1.1 no such user"))
        for i in range(5):
            self.put("acme", f"z{i}@example.org", status=201)

        everything = self.page("acme")
        addresses = [e["address"] for e in everything["suppressions"]]
        self.assertEqual(addresses, ["ann@example.com", "bob@example.com", "cy@example.com",
                                     "eve@example.com"] + [f"z{i}@example.org" for i in range(5)])
        self.assertIsNone(everything["next"])
        self.assertEqual(everything["counts"], {"manual": 8, "bounce": 1, "complaint": 0,
                                                "unsubscribe": 0, "total": 9})
        self.assertEqual(everything["suppressions"][1], bob)
        # Pages: the next of a full page is its last address
        first = self.page("acme", "?limit=3")
        self.assertEqual([e["address"] for e in first["suppressions"]], addresses[:3])
        self.assertEqual(first["next"], "cy@example.com")
        second = self.page("acme", "?limit=3&after=cy@example.com")
        self.assertEqual([e["address"] for e in second["suppressions"]], addresses[3:6])
        # The cursor in any case; a cursor not on the list
        self.assertEqual(self.page("acme", "?limit=3&after=CY@Example.com"), second)
        self.assertEqual([e["address"] for e in self.page(
            "acme", "?after=d@example.com")["suppressions"]], addresses[3:])
        last = self.page("acme", f"?limit=1000&after={addresses[-1]}")
        self.assertEqual((last["suppressions"], last["next"]), ([], None))
        self.assertEqual(self.listed("acme"), addresses)

        # DELETE: 204, then 404; the others stay
        self.delete("acme", "BOB@example.com")
        self.assertIn('"bob@example.com" is not on the suppression list of tenant "acme"',
                      self.delete("acme", "bob@example.com", 404))
        self.get("acme", "bob@example.com", 404)
        self.assertEqual(self.page("acme")["counts"]["total"], 8)

        # The global list: the same routes, a list apart
        self.assertEqual(self.page(None), {"suppressions": [], "next": None,
                                           "counts": {"manual": 0, "bounce": 0, "complaint": 0,
                                                      "unsubscribe": 0, "total": 0}})
        eve_global = self.put(None, "Eve@Example.com", {"detail": "the operator's"}, 201)
        self.assertEqual((eve_global["address"], eve_global["detail"]),
                         ("eve@example.com", "the operator's"))
        self.assertEqual(self.get("acme", "eve@example.com")["reason"], "bounce")
        self.assertEqual(self.listed(None), ["eve@example.com"])
        self.assertIn("is not on the global suppression list",
                      self.get(None, "ann@example.com", 404))
        self.delete(None, "eve@example.com")
        self.delete(None, "eve@example.com", 404)
        self.get("acme", "eve@example.com")

    def test_import(self):
        """CSV with a header naming its address column, quoted fields,
        CRLF, a BOM, blank lines; new, known and repeated addresses; each
        bad line refused alone with its line and why; without a header,
        each line's first field; at most 100 refusals listed, all counted;
        an empty body a 400."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.put("acme", "known@example.com", {"detail": "before"}, 201)
        text = ("\ufeffname,Email,city\r\n"                          # 1
                "Ann,ann@example.com,Bonn\r\n"                       # 2
                "\"Smith, Bob\",Bob@Example.com,\"Köln\"\r\n"         # 3
                "\r\n"                                               # 4 blank
                "Known,KNOWN@example.com,x\r\n"                      # 5 known
                "Again,ann@EXAMPLE.com,y\r\n"                        # 6 repeated
                "Bad,not-an-address,z\r\n"                           # 7
                "Space,\"a b@example.com\",z\r\n"                    # 8
                "Short\r\n"                                          # 9
                "\"Multi\nline\",  cy@example.com  ,z\r\n"           # 10-11
                "Quote,\"q\"\"uote@example.com\",z\r\n"              # 12
                "Ctl,\"tab\t@example.com\",z\r\n"                    # 13
                "After,\"eve@example.com\"x,z\r\n"                  # 14
                "Unclosed,\"dan@example.com,z\r\nFred,fred@example.com\r\n")  # 15
        result = self.import_csv("acme", text)
        self.assertEqual((result["added"], result["already"]), (4, 2), result)
        refused = {r["line"]: r for r in result["refused"]}
        self.assertEqual(sorted(refused), [7, 8, 9, 13, 14, 15], result)
        self.assertEqual(result["refused_count"], 6)
        self.assertEqual((refused[7]["address"], refused[7]["reason"]),
                         ("not-an-address", ADDRESS_RULE))
        self.assertEqual((refused[8]["address"], refused[8]["reason"]),
                         ("a b@example.com",
                          "address contains a space, control or non-ASCII character"))
        self.assertEqual(refused[9]["reason"], "the line has no field in the address column")
        self.assertEqual(refused[13]["address"], "tab\t@example.com")
        self.assertEqual((refused[14]["address"], refused[14]["reason"]),
                         ("eve@example.com", "text after the closing quote of a field"))
        # An unclosed quote takes the rest of the body: the line is refused
        self.assertEqual(refused[15]["reason"], "a quoted field is not closed")
        self.assertTrue(refused[15]["address"].startswith("dan@example.com,z\r\nFred"),
                        refused[15])
        self.assertEqual(self.listed("acme"),
                         ["ann@example.com", "bob@example.com", "cy@example.com",
                          "known@example.com", 'q"uote@example.com'])
        self.assertEqual(self.get("acme", "known@example.com")["detail"], "before")
        self.assertEqual(self.get("acme", "ann@example.com")["reason"], "manual")
        # The same again: nothing new
        again = self.import_csv("acme", text)
        self.assertEqual((again["added"], again["already"], again["refused_count"]), (0, 6, 6))

        # Without a header: an address a line, its first field; "email"
        # only as a column's whole name
        result = self.import_csv(None, "email@example.org\nfred@example.org,Fred\n\n"
                                       "gus@example.org")
        self.assertEqual((result["added"], result["already"], result["refused"]), (3, 0, []))
        self.assertEqual(self.listed(None), ["email@example.org", "fred@example.org",
                                             "gus@example.org"])
        self.assertEqual(self.listed("acme")[0], "ann@example.com")
        # The header alone: nothing
        result = self.import_csv("acme", "address\n")
        self.assertEqual((result["added"], result["already"], result["refused"]), (0, 0, []))

        # Many bad lines: 100 listed, all counted, the good ones added
        lines = ["address"] + [f"bad{i}" if i % 2 else f"good{i}@example.net"
                               for i in range(300)]
        result = self.import_csv("acme", "\n".join(lines) + "\n")
        self.assertEqual((result["added"], result["already"], result["refused_count"]),
                         (150, 0, 150))
        self.assertEqual(len(result["refused"]), 100)
        self.assertEqual([r["line"] for r in result["refused"]], list(range(3, 203, 2)))
        self.assertEqual(result["refused"][0], {"line": 3, "address": "bad1",
                                                "reason": ADDRESS_RULE})
        # A long address is quoted cut; a line not UTF-8 is quoted readable
        result = self.import_csv("acme", b"x" * 400 + b"@example.com\n\xff\xfe@example.com\n")
        self.assertEqual(result["refused_count"], 2)
        self.assertEqual(result["refused"][0]["reason"], "address longer than 320 bytes")
        self.assertEqual(result["refused"][0]["address"], "x" * 100)
        self.assertEqual(result["refused"][1]["address"], "??@example.com")
        # Large: 20,000 addresses, several of the store's batches
        result = self.import_csv("acme", "".join(f"user{i}@bulk.example\n" for i in range(20000)))
        self.assertEqual((result["added"], result["already"], result["refused_count"]),
                         (20000, 0, 0))
        self.assertEqual(self.page("acme")["counts"]["total"], 5 + 150 + 20000)

        # An empty body, or one of blank lines
        for raw in (b"", b"\n\n", b"\xef\xbb\xbf", b"  \r\n\t\n"):
            self.assertIn("the body is empty", self.import_csv("acme", raw, status=400))
        # Semicolons do not separate fields: no header, each line refused
        result = self.import_csv("acme", "Address;Name\nx@example.com;X\n")
        self.assertEqual([(r["line"], r["reason"]) for r in result["refused"]],
                         [(1, ADDRESS_RULE), (2, "address domain has an invalid character")])

    def test_tenants_and_admin(self):
        """A tenant's token manages its own list; another tenant's, or a
        tenant that does not exist, is a 404 in the same words; the global
        list needs an admin token (403); no token is a 401."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.put_tenant("bravo")
        acme = self.new_token("acme")
        self.put("bravo", "bravo-only@example.com", status=201)
        self.put("acme", "mine@example.com", status=201, token=acme)
        self.assertEqual(self.get("acme", "MINE@example.com", token=acme)["address"],
                         "mine@example.com")
        self.assertEqual(self.listed("acme", token=acme), ["mine@example.com"])
        self.assertEqual(self.import_csv("acme", "x@example.com\n", token=acme)["added"], 1)
        self.delete("acme", "x@example.com", token=acme)
        # The admin sees it too
        self.assertEqual(self.listed("acme"), ["mine@example.com"])

        routes = (("GET", "", None), ("GET", "/a@example.com", None),
                  ("PUT", "/a@example.com", {}), ("DELETE", "/a@example.com", None),
                  ("POST", "/import", None))
        for tenant, token in (("bravo", acme), ("nosuch", acme), ("nosuch", fq_api.ADMIN)):
            for method, suffix, body in routes:
                raw = b"a@example.com\n" if suffix == "/import" else None
                self.refused(method, f"/v1/tenants/{tenant}/suppressions{suffix}", 404,
                             f'could not read tenant: "{tenant}" does not exist', body=body,
                             raw=raw, headers=CSV if raw else None, token=token)
        self.assertEqual(self.listed("bravo"), ["bravo-only@example.com"])
        for method, suffix, body in routes:
            raw = b"a@example.com\n" if suffix == "/import" else None
            detail = self.refused(method, f"/v1/suppressions{suffix}", 403, "admin", body=body,
                                  raw=raw, headers=CSV if raw else None, token=acme)
            self.assertEqual(detail, "this needs an admin token")
            self.refused(method, f"/v1/suppressions{suffix}", 401, "token", body=body, raw=raw,
                         token=None)
            self.refused(method, f"/v1/tenants/acme/suppressions{suffix}", 401, "token",
                         body=body, raw=raw, token=None)
        self.assertEqual(self.listed(None), [])

    def test_malformed(self):
        """Every malformed input is a 400 naming the fault, nothing
        stored."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        base = "/v1/tenants/acme/suppressions"
        for segment, words in (
                ("bob", 'invalid address "bob": ' + ADDRESS_RULE),
                ("bob@localhost", "address domain is not a dotted name"),
                ("a@b@example.com", "address has more than one @"),
                ("bob%20smith@example.com",
                 "address contains a space, control or non-ASCII character"),
                ("bob%0A@example.com", "address contains CR or LF"),
                ("bob%0D%0ABcc:%20x@example.com", "address contains CR or LF"),
                ("bob%09@example.com", "control"),
                ("b%C3%B6b@example.com", "non-ASCII"),
                ("bob@exa_mple.com", "address domain has an invalid character"),
                ("x" * 309 + "@example.com", "address longer than 320 bytes")):
            for method, body in (("GET", None), ("PUT", {}), ("DELETE", None)):
                for path in (f"{base}/{segment}", f"/v1/suppressions/{segment}"):
                    self.refused(method, path, 400, words, body=body)
        # 320 bytes is one
        self.put("acme", "x" * 308 + "@example.com", status=201)
        self.refused("GET", f"{base}/bob%2F@example.com", 400, "escaped '/'")
        self.refused("GET", "/v1/tenants/Acme/suppressions", 400, "a tenant name is 1..64")
        self.refused("PUT", "/v1/tenants/a%20b/suppressions/x@example.com", 400,
                     "a tenant name is 1..64", body={})

        # Bodies of a PUT
        path = f"{base}/bob@example.com"
        self.refused("PUT", path, 400, "malformed JSON", raw=b'{"detail": ')
        self.refused("PUT", path, 400, "malformed JSON", raw=b"detail=x")
        self.refused("PUT", path, 400, "the body must be a JSON object", raw=b'["x"]')
        self.refused("PUT", path, 400, 'unknown field "reason"', body={"reason": "bounce"})
        self.refused("PUT", path, 400, 'unknown field "Detail"', body={"Detail": "x"})
        self.refused("PUT", path, 400, 'field "detail" is given twice',
                     raw=b'{"detail": "a", "detail": "b"}')
        for bad in (5, True, ["x"], {"a": 1}):
            self.refused("PUT", path, 400, "detail must be a string, or null",
                         body={"detail": bad})
        self.refused("PUT", path, 400, "detail must be at most 2000 bytes, not 2001",
                     body={"detail": "d" * 2001})
        for bad in ("line\nbreak", "tab\there", "nul\x7f", "c1 \x85"):
            self.refused("PUT", path, 400, "detail must be text without control characters",
                         body={"detail": bad})
        self.refused("PUT", path, 400, "\\u0000", raw=b'{"detail": "a\\u0000b"}')
        self.assertEqual(self.put("acme", "bob@example.com", {"detail": "d" * 2000},
                                  status=201)["detail"], "d" * 2000)

        # Query parameters
        for query, words in (("?limit=0", 'limit must be an integer within 1..1000, not "0"'),
                             ("?limit=1001", "limit must be an integer within 1..1000"),
                             ("?limit=ten", 'not "ten"'),
                             ("?after=nobody", '"nobody" is not a cursor (a cursor is the '
                                               '"next" of a page: an address)'),
                             ("?after=a%0Ab@example.com", "is not a cursor"),
                             ("?before=x@example.com", 'unknown query parameter "before"')):
            self.refused("GET", f"{base}{query}", 400, words)
            self.refused("GET", f"/v1/suppressions{query}", 400, words)
        self.refused("GET", f"{base}/bob@example.com?x=1", 400, 'unknown query parameter "x"')
        self.refused("DELETE", f"{base}/bob@example.com?x=1", 400, "unknown query parameter")
        self.refused("POST", f"{base}/import?tenant=acme", 400, "unknown query parameter",
                     raw=b"a@example.com\n", headers=CSV)
        # Methods
        self.refused("POST", f"{base}/bob@example.com", 405, "POST is not allowed here")
        self.refused("PATCH", base, 405, "PATCH is not allowed here; use GET")
        self.refused("GET", f"{base}/import", 400, 'invalid address "import"')
        # Nothing stored but the two good ones
        self.assertEqual(self.count("fairq.suppressions"), 2)

    def test_database_gone(self):
        """The database away: every route answers 503; once it is back,
        they work again."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.put("acme", "bob@example.com", status=201)
        calls = (("GET", "/v1/tenants/acme/suppressions", None, None),
                 ("GET", "/v1/tenants/acme/suppressions/bob@example.com", None, None),
                 ("PUT", "/v1/tenants/acme/suppressions/ann@example.com", {}, None),
                 ("DELETE", "/v1/tenants/acme/suppressions/bob@example.com", None, None),
                 ("POST", "/v1/tenants/acme/suppressions/import", None, b"c@example.com\n"),
                 ("GET", "/v1/suppressions", None, None),
                 ("POST", "/v1/suppressions/import", None, b"c@example.com\n"))
        with self.database_blocked():
            for method, path, body, raw in calls:
                self.assert_error(self.api(method, path, body, raw=raw,
                                           headers=CSV if raw else None),
                                  503, f"{method} {path}, no database")
        self.h.wait(lambda: self.api("GET", "/v1/suppressions")[0] == 200, 30,
                    "GET /v1/suppressions to answer again")
        self.assertEqual(self.listed("acme"), ["bob@example.com"])

    def test_suppressed_at_split(self):
        """A request submitted through the API to a suppressed address
        (in another case), an address of the global list and a good one:
        once split, the first two are its rejects with the reason
        "suppressed", and only the good one is a message."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        acme = self.new_token("acme")
        self.put("acme", "gone@example.org", status=201, token=acme)
        self.put(None, "nobody@example.org", status=201)
        request = self.submit_ok(submit_body("acme", recipients=[
            {"to": "Gone@Example.org", "fields": {"name": "Gone"}},
            {"to": "ann@example.org", "fields": {"name": "Ann"}},
            {"to": "NOBODY@example.org", "fields": {"name": "Nobody"}}]), token=acme)
        rid = request["id"]
        split = self.h.wait(lambda: (lambda r: r if r["rejected"] == 2 and
                                     r["status"] in ("active", "done") else None)(
                                         self.get_request(rid, token=acme)),
                            fq_api.SPLIT_TIMEOUT_S, f"request {rid} to be split")
        self.assertEqual((split["total"], split["pending"], split["rejected"]), (3, 1, 2), split)
        rejects = self.ok(self.api("GET", f"/v1/requests/{rid}/rejects", token=acme), 200,
                          "rejects")
        self.assertEqual(rejects["rejects"], [
            {"position": 0, "recipient": "Gone@Example.org", "reason": "suppressed"},
            {"position": 2, "recipient": "NOBODY@example.org", "reason": "suppressed"}])
        self.assertEqual([m["to"] for m in self.messages_of(rid, token=acme)],
                         ["ann@example.org"])
        # Removed from the list, the next request reaches it
        self.delete("acme", "GONE@example.org", token=acme)
        again = self.submit_ok(submit_body("acme", recipients=[
            {"to": "gone@example.org", "fields": {"name": "Gone"}}]), token=acme)
        self.assertEqual([m["to"] for m in self.wait_split(again["id"], 1)],
                         ["gone@example.org"])


if __name__ == "__main__":
    fq_api.main()
