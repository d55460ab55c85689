#!/usr/bin/python3
"""test_http_destinations.py: the destinations routes (api/API.md,
"Destinations") over real sockets: "default" always there; a destination
created, read back (GET one and GET all) with what the PUT gave, its
domains lowercased and sorted, replaced whole by the next PUT and deleted;
every refusal of a PUT with its status and the words of its detail; a
domain another destination owns a 409 naming both; "default" taking no
domains and never deleted; tenant tokens refused (403); a database that
went away (503); the families of /metrics; and fairqd's destinations_file,
written at start and at SIGHUP, its faults refused at start (exit 2, with
PATH:LINE) and logged at a reload that keeps the destinations as they were.
No sender runs: how the scheduler shapes a destination is the actors'
tests'.
"""

import os
import signal
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest  # noqa: E402

FAIRQD = {"poll_ms": 200}
DESTINATION_KEYS = {"name", "rate", "burst", "max_inflight", "domains", "updated_at", "live",
                    "held"}
LIVE_KEYS = {"state", "effective_rate", "ready", "inflight", "sent", "deferred", "throttled",
             "suspended_for_ms", "latency"}
# The live delivery times (api/API.md, a tenant's "latency"): no sender
# here, so nothing delivered and no quantile
NO_LATENCY = {"window_s": 300, "delivered": 0,
              "delivery_s": {"p50": None, "p95": None, "p99": None},
              "end_to_end_s": {"p50": None, "p95": None, "p99": None}}
STATES = {"open", "throttled", "suspended"}
# fairqd's exit code for a configuration error (fairqd/fq_fairqd.h)
EXIT_CONFIG = 2


class DestinationsTest(APITest):

    def check_destination(self, d):
        self.assertIsInstance(d, dict, d)
        self.assertEqual(set(d), DESTINATION_KEYS, d)
        self.assertIsInstance(d["name"], str, d)
        self.assertTrue(d["rate"] is None or isinstance(d["rate"], str), d)
        for key in ("burst", "max_inflight"):
            self.assertTrue(d[key] is None or type(d[key]) is int, f"{key}: {d}")
        self.assertIsInstance(d["domains"], list, d)
        self.assertEqual(d["domains"], sorted(d["domains"]), f"domains not sorted: {d}")
        self.assertRegex(d["updated_at"], fq_api.RFC3339_UTC, d)
        self.assertIs(type(d["held"]), bool, d)
        live = d["live"]
        self.assertEqual(set(live), LIVE_KEYS, d)
        self.assertIn(live["state"], STATES, d)
        self.assertTrue(live["effective_rate"] is None or
                        type(live["effective_rate"]) in (int, float), d)
        for key in LIVE_KEYS - {"state", "effective_rate", "latency"}:
            self.assertIs(type(live[key]), int, f"{key}: {d}")
            self.assertGreaterEqual(live[key], 0, d)
        self.assertEqual(live["latency"], NO_LATENCY, d)
        return d

    def get(self, name, status=200):
        answer = self.api("GET", f"/v1/destinations/{name}")
        if status != 200:
            self.assert_error(answer, status, f"GET {name}")
            return answer[2]
        return self.check_destination(self.ok(answer, 200, f"GET {name}"))

    def listed(self):
        payload = self.ok(self.api("GET", "/v1/destinations"), 200, "GET /v1/destinations")
        self.assertEqual(set(payload), {"destinations"}, payload)
        for d in payload["destinations"]:
            self.check_destination(d)
        names = [d["name"] for d in payload["destinations"]]
        self.assertEqual(names, sorted(names), "destinations not in name order")
        return {d["name"]: d for d in payload["destinations"]}

    def wait_effective(self, name, rate):
        """The live figures follow a change within the scheduler's next
        look (at once while it has not seen the destination): waits for
        name's effective_rate to be rate (None: no limit)."""
        def check():
            got = self.get(name)["live"]["effective_rate"]
            return got is None if rate is None else got is not None and abs(got - rate) < 1e-9
        self.h.wait(check, 10, f"{name}'s effective_rate to be {rate}")

    def put(self, name, body, status=None):
        answer = self.api("PUT", f"/v1/destinations/{name}", body)
        self.assertIn(answer[0], (status,) if status else (200, 201),
                      f"PUT {name} {body!r:.200}: {answer[2]!r:.500}")
        return self.check_destination(answer[2])

    def refused(self, name, body, status, words, raw=None):
        """PUT name with body (or raw bytes) answers status, its detail
        holding each of words."""
        answer = self.api("PUT", f"/v1/destinations/{name}", body, raw=raw)
        self.assert_error(answer, status, f"PUT {name} {body!r:.200}")
        for word in (words if isinstance(words, (list, tuple)) else [words]):
            self.assertIn(word, answer[2]["detail"], f"PUT {name} {body!r:.200}")
        return answer[2]["detail"]

    # -----------------------------------------------------------------

    def test_put_get_list_delete(self):
        """default from the start; a PUT creates (201) and answers what it
        stored, GET one and GET all show the same; a second PUT replaces it
        whole (200); DELETE removes it and frees its domains."""
        self.start(**FAIRQD)
        everything = self.listed()
        self.assertEqual(list(everything), ["default"])
        default = everything["default"]
        self.assertEqual((default["rate"], default["burst"], default["max_inflight"],
                          default["domains"]), (None, None, None, []))
        self.assertEqual(default["live"]["state"], "open")

        body = {"rate": "100/s", "burst": 200, "max_inflight": 50,
                "domains": ["GMail.com", "googlemail.com"]}
        google = self.put("google", body, 201)
        self.assertEqual((google["name"], google["rate"], google["burst"],
                          google["max_inflight"], google["domains"]),
                         ("google", "100/s", 200, 50, ["gmail.com", "googlemail.com"]))
        # No traffic: open, idle, at its configured rate (or as the
        # scheduler says it, once it has seen it: the same when idle)
        live = google["live"]
        self.assertEqual((live["state"], live["ready"], live["inflight"], live["sent"],
                          live["deferred"], live["throttled"]), ("open", 0, 0, 0, 0, 0))
        self.assertEqual(live["effective_rate"], 100.0)
        self.assertEqual(self.get("google"), google)
        self.assertEqual(self.listed()["google"]["domains"], google["domains"])
        # The database holds what the API said
        self.assertEqual(self.h.sql("SELECT rate_count, rate_period_s, burst, max_inflight"
                                    " FROM fairq.destinations WHERE name = 'google'"),
                         [["100", "1", "200", "50"]])

        # Other units print back as written; burst null is the rate's default
        yahoo = self.put("yahoo", {"rate": "5/min", "domains": ["yahoo.com"]}, 201)
        self.assertEqual((yahoo["rate"], yahoo["burst"], yahoo["max_inflight"]),
                         ("5/min", None, None))
        for rate in ("10000/h", "1000/d"):
            self.assertEqual(self.put("yahoo", {"rate": rate}, 200)["rate"], rate)
        self.wait_effective("yahoo", 1000 / 86400)

        # Replaced whole: what the PUT leaves out is none
        google = self.put("google", {"domains": ["gmail.com"]}, 200)
        self.assertEqual((google["rate"], google["burst"], google["max_inflight"],
                          google["domains"]), (None, None, None, ["gmail.com"]))
        self.wait_effective("google", None)
        # googlemail.com was freed: another may take it
        self.put("gm", {"domains": ["googlemail.com"]}, 201)
        # null is none, as a field left out
        self.assertEqual(self.put("gm", {"domains": None, "rate": None, "burst": None,
                                         "max_inflight": None}, 200)["domains"], [])
        self.put("gm", {"domains": ["googlemail.com"]}, 200)
        # {} is a destination without limits nor domains
        empty = self.put("empty", {}, 201)
        self.assertEqual((empty["rate"], empty["burst"], empty["max_inflight"],
                          empty["domains"]), (None, None, None, []))
        # default takes a budget
        self.assertEqual(self.put("default", {"rate": "1000/h", "max_inflight": 10})["rate"],
                         "1000/h")

        self.assertEqual(list(self.listed()), ["default", "empty", "gm", "google", "yahoo"])
        answer = self.ok(self.api("DELETE", "/v1/destinations/gm"), 200, "DELETE gm")
        self.assertEqual(answer, {"name": "gm", "deleted": True})
        self.get("gm", 404)
        self.assert_error(self.api("DELETE", "/v1/destinations/gm"), 404, "DELETE again")
        # Its domain is free again
        self.put("google", {"domains": ["gmail.com", "googlemail.com"]}, 200)
        self.assertNotIn("gm", self.listed())

    def test_refusals(self):
        """Every refusal of a PUT, naming the field; 404s, default's 400s;
        a domain owned by another destination is a 409 naming both."""
        self.start(**FAIRQD)
        self.put("google", {"domains": ["gmail.com"]}, 201)

        self.refused("x", {"speed": "1/s"}, 400, 'unknown field "speed"')
        self.refused("x", {"rate": 100}, 400, "rate must be a text such as \"100/s\"")
        self.refused("x", {"rate": "100/x"}, 400, ['rate "100/x"', "unit"])
        self.refused("x", {"rate": "fast"}, 400, 'rate "fast"')
        self.refused("x", {"rate": "0/s"}, 400, 'rate "0/s"')
        self.refused("x", {"burst": 10}, 400, "burst needs a rate")
        self.refused("x", {"rate": "1/s", "burst": "10"}, 400,
                     "burst must be an integer within 1..1000000, or null")
        self.refused("x", {"rate": "1/s", "burst": 0}, 400, "burst must be an integer within")
        self.refused("x", {"rate": "1/s", "burst": 1000001}, 400, "within 1..1000000")
        self.refused("x", {"max_inflight": "5"}, 400,
                     "max_inflight must be an integer within 1..1000000, or null")
        self.refused("x", {"max_inflight": 1000001}, 400, "max_inflight must be")
        self.refused("x", {"max_inflight": 1.5}, 400, "max_inflight must be")
        self.refused("x", {"domains": "gmail.com"}, 400, "domains must be an array")
        self.refused("x", {"domains": {"a": 1}}, 400, "domains must be an array")
        self.refused("x", {"domains": ["a.example", 5]}, 400, "domains[1] must be a string")
        self.refused("x", {"domains": ["a.example", "bad_domain.example"]}, 400,
                     ['domains[1]: "bad_domain.example"', "a-z 0-9 - ."])
        self.refused("x", {"domains": ["a..example"]}, 400, ["domains[0]", "empty label"])
        self.refused("x", {"domains": [""]}, 400, ['domains[0]: "" is empty'])
        self.refused("x", {"domains": ["user@example.org"]}, 400, "domains[0]")
        self.refused("x", {"domains": ["a" * 64 + ".example"]}, 400, "longer than 63")
        self.refused("x", {"domains": ["b.example", "a.example", "B.example"]}, 400,
                     'domains[2]: "b.example" is given twice (also at 0)')
        many = [f"d{i}.example" for i in range(1001)]
        self.refused("x", {"domains": many}, 400, "domains: more than 1000 domains")
        self.refused("x", None, 400, "malformed JSON", raw=b'{"rate": ')
        self.refused("x", None, 400, "the body must be a JSON object", raw=b'["rate"]')
        self.refused("x", {"rate": "1/s", "rate ": 1}, 400, 'unknown field "rate "')
        self.refused("x", None, 400, 'field "rate" is given twice',
                     raw=b'{"rate": "1/s", "rate": "2/s"}')
        self.refused("Bad", {}, 400, "a destination name is 1..64 of a-z 0-9 _ . -")
        self.refused("a" * 65, {}, 400, "a destination name is 1..64")
        self.refused("default", {"domains": ["example.org"]}, 400,
                     'domains: the destination "default" takes none')
        # Exactly 1000 is fine
        self.assertEqual(len(self.put("many", {"domains": many[:1000]}, 201)["domains"]), 1000)
        self.ok(self.api("DELETE", "/v1/destinations/many"), 200, "DELETE many")

        # Another's domain: 409 naming the domain and both, nothing stored
        detail = self.refused("mine", {"rate": "1/s", "domains": ["example.org", "GMAIL.COM"]},
                              409, ['domain "gmail.com" belongs to destination "google"',
                                    'destination "mine"'])
        self.assertNotIn("fairq.", detail, "a detail quotes the database")
        self.get("mine", 404)
        self.assertEqual(self.count("fairq.destination_domains", "domain = 'example.org'"), 0)
        # None of it is stored: a failed PUT of an existing one keeps it
        self.put("mine", {"rate": "2/s"}, 201)
        self.refused("mine", {"rate": "9/s", "domains": ["gmail.com"]}, 409, "belongs to")
        self.assertEqual(self.get("mine")["rate"], "2/s")

        self.get("nosuch", 404)
        self.get("NoSuch", 400)
        self.assert_error(self.api("DELETE", "/v1/destinations/nosuch"), 404, "DELETE nosuch")
        answer = self.api("DELETE", "/v1/destinations/default")
        self.assert_error(answer, 400, "DELETE default")
        self.assertIn('the destination "default" cannot be deleted', answer[2]["detail"])
        self.get("default")
        self.assert_error(self.api("GET", "/v1/destinations?all=1"), 400, "a query")
        self.assert_error(self.api("POST", "/v1/destinations/x", {}), 405, "POST")

    def test_tenants_and_a_database_gone(self):
        """A tenant's token is refused on every route (403), without a
        token 401; a database that went away answers 503, and the routes
        work again once it is back."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        token = self.new_token("acme")
        self.put("google", {"domains": ["gmail.com"]}, 201)
        for method, path, body in (("GET", "/v1/destinations", None),
                                   ("GET", "/v1/destinations/google", None),
                                   ("PUT", "/v1/destinations/google", {"rate": "1/s"}),
                                   ("DELETE", "/v1/destinations/google", None)):
            answer = self.api(method, path, body, token=token)
            self.assert_error(answer, 403, f"{method} {path} with a tenant's token")
            self.assertIn("admin", answer[2]["detail"])
            self.assert_error(self.api(method, path, body, token=None), 401, f"{method} {path}")
        self.assertIsNone(self.get("google")["rate"], "a tenant's PUT changed it")

        with self.database_blocked():
            for method, path, body in (("GET", "/v1/destinations", None),
                                       ("GET", "/v1/destinations/google", None),
                                       ("PUT", "/v1/destinations/google", {"rate": "1/s"}),
                                       ("DELETE", "/v1/destinations/google", None)):
                self.assert_error(self.api(method, path, body), 503, f"{method} {path}, no db")
        self.h.wait(lambda: self.api("GET", "/v1/destinations")[0] == 200, 30,
                    "GET /v1/destinations to answer again")
        self.assertEqual(self.put("google", {"rate": "7/s"}, 200)["rate"], "7/s")

    def test_metrics_families(self):
        """/metrics declares the destinations' families (api/API.md)."""
        self.start(**FAIRQD)
        answer = self.api("GET", "/metrics")
        self.assertEqual(answer[0], 200, answer)
        for family, kind in (("fairq_destination_ready", "gauge"),
                             ("fairq_destination_inflight", "gauge"),
                             ("fairq_destination_max_inflight", "gauge"),
                             ("fairq_destination_configured_rate", "gauge"),
                             ("fairq_destination_effective_rate", "gauge"),
                             ("fairq_destination_suspended_seconds", "gauge"),
                             ("fairq_destination_state", "gauge"),
                             ("fairq_destination_sent_total", "counter"),
                             ("fairq_destination_deferred_total", "counter"),
                             ("fairq_destination_throttled_total", "counter")):
            self.assertIn(f"# TYPE {family} {kind}\n", answer[2], family)

    # -----------------------------------------------------------------
    # destinations_file

    def write(self, name, text):
        path = os.path.join(self.h.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_destinations_file(self):
        """fairqd writes its destinations_file at start, over what the API
        set for the same names, and again at SIGHUP; a reload of a file
        with a fault, or one the database refuses, is logged and changes
        nothing; other destinations are left alone."""
        path = self.write("destinations.conf",
                          "# the big ones\n"
                          "google rate=100/s burst=200 max_inflight=50 "
                          "domains=gmail.com,GoogleMail.com\n"
                          "\n"
                          "yahoo domains=yahoo.com   # no budget yet\n"
                          "default rate=1000/h\n")
        self.start(destinations_file=path, **FAIRQD)
        self.fairqd.wait_log(r"destinations_file .*destinations\.conf: 3 destinations written")
        google = self.get("google")
        self.assertEqual((google["rate"], google["burst"], google["max_inflight"],
                          google["domains"]), ("100/s", 200, 50, ["gmail.com", "googlemail.com"]))
        self.assertEqual(self.get("yahoo")["rate"], None)
        self.assertEqual(self.get("default")["rate"], "1000/h")

        # The API may change them meanwhile, and add others
        self.put("google", {"rate": "1/s", "domains": ["gmail.com"]})
        self.put("api-only", {"rate": "3/s", "domains": ["api.example"]}, 201)
        # SIGHUP: the file's destinations again, a new one added, yahoo's
        # budget changed; api-only left alone
        self.write("destinations.conf",
                   "google rate=100/s burst=200 max_inflight=50 domains=gmail.com,googlemail.com\n"
                   "yahoo rate=5/min domains=yahoo.com,ymail.com\n"
                   "outlook\trate=20/s\tdomains=outlook.com,hotmail.com\n")
        at = self.fairqd.log_size()
        self.fairqd.signal(signal.SIGHUP)
        self.fairqd.wait_log(r"destinations\.conf: 3 destinations written", after=at)
        self.assertEqual(self.get("google")["domains"], ["gmail.com", "googlemail.com"])
        self.assertEqual(self.get("google")["rate"], "100/s")
        self.assertEqual((self.get("yahoo")["rate"], self.get("yahoo")["domains"]),
                         ("5/min", ["yahoo.com", "ymail.com"]))
        self.assertEqual(self.get("outlook")["domains"], ["hotmail.com", "outlook.com"])
        self.assertEqual(self.get("api-only")["rate"], "3/s")

        # A fault in the file: logged with PATH:LINE, nothing changed
        self.write("destinations.conf", "google rate=100/s\nyahoo burst=7\n")
        at = self.fairqd.log_size()
        self.fairqd.signal(signal.SIGHUP)
        self.fairqd.wait_log(r"reload: destinations_file .*destinations\.conf:2: destination "
                             r"\"yahoo\": burst needs a rate .*; the destinations are kept",
                             after=at)
        self.assertEqual(self.get("yahoo")["rate"], "5/min")
        self.assertEqual(self.get("google")["domains"], ["gmail.com", "googlemail.com"])
        # One the database refuses (a domain of api-only's): logged, with
        # the line of the destination, nothing changed (one transaction)
        self.write("destinations.conf", "google rate=1/s\nnewcomer domains=api.example\n")
        at = self.fairqd.log_size()
        self.fairqd.signal(signal.SIGHUP)
        self.fairqd.wait_log(r"reload: destinations_file .*destinations\.conf:2: destination "
                             r"\"newcomer\": domain \"api\.example\" belongs to destination "
                             r"\"api-only\"", after=at)
        self.assertEqual(self.get("google")["rate"], "100/s")
        self.get("newcomer", 404)
        self.assertTrue(self.fairqd.alive(), "a reload stopped fairqd")

    def test_destinations_file_fault_at_start(self):
        """A destinations_file with a fault, or none at the path, stops
        fairqd at start with exit code 2 and PATH:LINE."""
        h = self.h
        for name, text, words in (
                ("bad.conf", "google rate=100/s\n\ngoogle rate=1/s\n",
                 'bad.conf:3: destination "google" is named again (first at line 1)'),
                ("rate.conf", "x rate=5/fortnight\n", 'rate.conf:1: destination "x": rate'),
                ("missing.conf", None, "missing.conf: could not open")):
            path = self.write(name, text) if text is not None else \
                os.path.join(h.dir, name)
            proc = h.start_fairqd(name=f"fairqd-{name}", wait=False, destinations_file=path)
            rc = proc.wait(60)
            proc.expect_exit = True
            self.assertEqual(rc, EXIT_CONFIG, f"{name}: exit {rc}: {proc.text()[-2000:]}")
            self.assertIn(f"fairqd: destinations_file {path}", proc.text())
            self.assertIn(words, proc.text(), name)
        # One the database refuses at start (a domain of another): exit 2
        self.start(**FAIRQD)
        self.put("api-only", {"domains": ["api.example"]}, 201)
        h.stop(self.fairqd)
        path = self.write("taken.conf", "first rate=1/s\nnewcomer domains=api.example\n")
        proc = h.start_fairqd(name="fairqd-taken", wait=False, destinations_file=path)
        rc = proc.wait(60)
        proc.expect_exit = True
        self.assertEqual(rc, EXIT_CONFIG, proc.text()[-2000:])
        self.assertIn('taken.conf:2: destination "newcomer": domain "api.example" belongs to '
                      'destination "api-only"', proc.text())
        self.assertEqual(self.count("fairq.destinations", "name = 'first'"), 0)


if __name__ == "__main__":
    fq_api.main()
