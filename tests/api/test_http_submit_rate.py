#!/usr/bin/python3
"""test_http_submit_rate.py: a tenant's submit_rate is one budget however
many fairqd serve the API (migration 0010: the bucket is a row of the
database, not a process's memory). Two fairqd against one database, each
on its own HTTP port: a tenant with submit_rate N gets N accepted submits
between them, then 429 with Retry-After from either; a submit the database
refused gives its token back to both; the bucket refills by the database's
clock and outlives a fairqd's restart; with PostgreSQL unreachable a submit
answers 503, never 500.
"""

import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, submit_body  # noqa: E402

HOUR = 3600
# A lease longer than the test's outage of PostgreSQL: the leader is not
# deposed under it (a deposed fairqd exits, to start again as a standby)
FAIRQD = {"poll_ms": 200, "lease_ms": 30000}
RATE = 6  # Submits a minute: a token back every 10 s
# A subject only the database checks (requests_subject_check: at most 998
# bytes): fairqd takes the token, the database refuses the submit
TOO_LONG_SUBJECT = "s" * 1000


class SubmitRateTest(APITest):

    def start_second(self):
        """A second fairqd on the same database, with HTTP and gateway
        ports of its own; returns its base URL once its /healthz answers."""
        port = fq_api.fq_e2e.free_port()
        self.h.start_fairqd(name="fairqd-2", http_listen=f"127.0.0.1:{port}",
                            gateway_bind=f"tcp://127.0.0.1:{fq_api.fq_e2e.free_port()}",
                            **FAIRQD)
        url = f"http://127.0.0.1:{port}"
        self.h.wait(lambda: self.at(url, self._healthy), fq_api.fq_e2e.START_TIMEOUT_S,
                    "the second fairqd's /healthz to answer 200")
        return url

    def at(self, url, call, *args, **kwargs):
        """call (a method of this test) made to the fairqd at url."""
        first = self.h.http_url
        self.h.http_url = url
        try:
            return call(*args, **kwargs)
        finally:
            self.h.http_url = first

    def acme_count(self):
        return self.count("fairq.requests",
                          "tenant_id = (SELECT id FROM fairq.tenants WHERE name = 'acme')")

    def assert_rate_limited(self, answer, what):
        self.assert_error(answer, 429, what)
        retry_after = answer[1].get("Retry-After")
        self.assertIsNotNone(retry_after, f"{what}: 429 without Retry-After")
        self.assertRegex(retry_after, r"^\d+$", f"{what}: Retry-After is not delta-seconds")
        # Empty, a token is back in 60 / RATE seconds at most
        self.assertTrue(1 <= int(retry_after) <= 60 // RATE, f"{what}: Retry-After {retry_after}")
        return int(retry_after)

    def test_two_fairqd_share_the_rate(self):
        """submit_rate 6 across two fairqd: six submits, taken in turns,
        are accepted, then each answers 429; a refused submit's token comes
        back; time refills the one bucket; a restart does not."""
        self.start(**FAIRQD)
        first = self.h.http_url
        second = self.start_second()
        self.put_tenant("acme", submit_rate=RATE)
        acme = self.new_token("acme")
        later = int(time.time()) + HOUR  # No sender: nothing is sent

        def submit(url):
            return self.at(url, self.submit, submit_body("acme", send_at=later), token=acme)

        # Five in turns, then one the database refuses (400): its token is
        # given back, so the sixth is accepted all the same
        for i in range(RATE - 1):
            self.ok(submit((first, second)[i % 2]), 202, f"submit {i + 1} of {RATE}")
        refused = self.at(second, self.submit,
                          submit_body("acme", send_at=later, subject=TOO_LONG_SUBJECT),
                          token=acme)
        self.assert_error(refused, 400, "a subject the database refuses")
        self.ok(submit(first), 202, f"submit {RATE} of {RATE}, after a refused one")
        self.assertEqual(self.acme_count(), RATE)

        # The bucket is empty for both: each fairqd alone would have let
        # through RATE of its own
        waits = [self.assert_rate_limited(submit(url), f"a submit over the rate on {name}")
                 for url, name in ((first, "the first fairqd"), (second, "the second"),
                                   (first, "the first again"), (second, "the second again"))]
        self.note(f"{RATE} a minute over two fairqd: Retry-After {waits}")
        self.assertEqual(self.acme_count(), RATE, "a 429 stored a request")

        # The bucket refills by the database's clock: moved 10 s back, it
        # holds one token, for whichever fairqd asks first
        self.h.sql("UPDATE fairq.submit_buckets SET tokens = 0,"
                   " refreshed_at = clock_timestamp() - interval '10 s'")
        self.ok(submit(second), 202, "a submit once a token is back")
        self.assert_rate_limited(submit(first), "the next submit, on the other fairqd")

        # A fairqd started again does not start with a full bucket
        self.assertEqual(self.h.stop(self.fairqd), 0)
        self.h.http_url = first
        self.fairqd = self.h.start_fairqd(name="fairqd-again", **FAIRQD)
        self.h.wait(self._healthy, fq_api.fq_e2e.START_TIMEOUT_S,
                    "the first fairqd's /healthz after its restart")
        self.assert_rate_limited(submit(first), "a submit to a fairqd started again")
        self.assertEqual(self.acme_count(), RATE + 1)

        # An admin's submits for acme are not held to its rate, on either
        for url in (first, second):
            self.ok(self.at(url, self.submit, submit_body("acme", send_at=later)), 202,
                    "an admin's submit for acme")

        # PostgreSQL unreachable: 503 from either, never 500; then back
        with self.database_blocked():
            for url, name in ((first, "the first fairqd"), (second, "the second")):
                self.assert_error(submit(url), 503, f"a submit on {name}, PostgreSQL unreachable")
        self.h.sql("UPDATE fairq.submit_buckets SET tokens = 0,"
                   " refreshed_at = clock_timestamp() - interval '10 s'")
        self.h.wait(lambda: submit(second)[0] == 202, 30,
                    "a submit to be accepted once PostgreSQL is back", interval=0.5)
        # The first fairqd's HTTP thread that could not connect pauses a
        # little before it tries again: 503 until then (a 429 takes nothing)
        answer = self.h.wait(lambda: (lambda a: a if a[0] != 503 else None)(submit(first)), 30,
                             "the first fairqd to answer without 503", interval=0.5)
        self.assert_rate_limited(answer, "the next submit after PostgreSQL is back")
        self.assertEqual(self.acme_count(), RATE + 4)


if __name__ == "__main__":
    fq_api.main()
