#!/usr/bin/python3
"""test_schedules.py: recurring sends, end to end (api/API.md, "Schedules";
docs/operations.md, "Recurring sends"): real fairqd, a fairq-sender and the
SMTP sink.

To wait no real minutes or hours, the test moves a schedule's next firing
into the past in the database, as the passing of time (or downtime) would.

  1. tenant "club" makes schedule "digest" (09:00 in Europe/Berlin, two
     recipients) and schedule "held", paused; both next firings are due
     now: digest fires once, its mail is delivered to both, and held fires
     nothing;
  2. fairqd is killed with SIGKILL and started again: the firing is not
     repeated; and with the same firing due again (as if the move to the
     next firing had been lost), its idempotency key answers the first
     request and none is made;
  3. schedule "minutely" ("* * * * *") missed an hour while fairqd was
     down: started again, fairqd fires the latest missed firing once and
     logs the others as skipped;
  4. the paused schedule still has fired nothing.
"""

import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

FAIRQD = {"poll_ms": 200}
TIMEOUT_S = 30
RECIPIENTS = [{"to": "ann@example.test", "fields": {"name": "Ann"}},
              {"to": "bob@example.test", "fields": {"name": "Bob"}}]


def request(subject):
    return {"from": "news@club.test", "subject": subject, "body": "Hello {{name}}",
            "recipients": RECIPIENTS}


class SchedulesTest(E2ETest):

    def schedule(self, name):
        status, _, answer = self.h.http("GET", f"/v1/tenants/club/schedules/{name}",
                                        token=self.club)
        self.assertEqual(status, 200, answer)
        return answer

    def make_due(self, name, ago="1 second"):
        """Moves the schedule's next firing into the past, whole seconds."""
        self.h.sql(f"UPDATE fairq.schedules SET next_fire_at = date_trunc('second', now())"
                   f" - interval {fq_e2e.lit(ago)} WHERE name = {fq_e2e.lit(name)}")

    def requests_of(self, subject):
        return int(self.h.scalar(f"SELECT count(*) FROM fairq.requests"
                                 f" WHERE subject = {fq_e2e.lit(subject)}"))

    def mails(self, subject_start):
        return [r for r in self.smtp.records() if r["subject"].startswith(subject_start)]

    def test_schedules(self):
        h = self.h
        self.smtp = h.start_sink("smtp_sink")
        self.fairqd = h.start_fairqd(**FAIRQD)
        h.wait_schema()
        h.create_tenant("club")
        self.club = h.make_token("club")
        h.start_sender("s1", self.smtp, 4)
        base = "/v1/tenants/club/schedules"
        for name, paused, subject in (("digest", False, "Digest for {{name}}"),
                                      ("held", True, "Held for {{name}}")):
            status, _, answer = h.http("POST", base, {
                "name": name, "cron": "0 9 * * *", "time_zone": "Europe/Berlin",
                "paused": paused, "request": request(subject)}, token=self.club)
            self.assertEqual(status, 201, answer)
            self.assertEqual(answer["paused"], paused)
        # 09:00 in Berlin is 07:00 or 08:00 UTC
        self.assertRegex(self.schedule("digest")["next_fire_at"], r"T0[78]:00:00Z$")

        with self.subTest("1: a due schedule fires once; a paused one does not"):
            self.make_due("digest")
            self.make_due("held")
            h.wait(lambda: self.schedule("digest")["fired"] == 1, TIMEOUT_S, "digest fired")
            digest = self.schedule("digest")
            self.assertIsNotNone(digest["last_request"])
            self.assertIsNone(digest["last_error"])
            h.wait_request(digest["last_request"], ("done",), TIMEOUT_S)
            h.wait(lambda: len(self.mails("Digest for")) == 2, TIMEOUT_S, "the digest's mail")
            self.assertEqual(sorted(m["subject"] for m in self.mails("Digest for")),
                             ["Digest for Ann", "Digest for Bob"])
            self.assertRegex(digest["next_fire_at"], r"T0[78]:00:00Z$")

        with self.subTest("2: a kill -9 and a restart repeat no firing"):
            status, _, _ = h.http("POST", base, {
                "name": "minutely", "cron": "* * * * *", "time_zone": "UTC",
                "request": request("Minutely for {{name}}")}, token=self.club)
            self.assertEqual(status, 201)
            self.fairqd.kill9()
            # Down: the digest's firing due again, as if its move on were
            # lost, and an hour of "minutely" missed
            self.h.sql("UPDATE fairq.schedules SET next_fire_at = last_fire_at"
                       " WHERE name = 'digest'")
            minutely_before = int(h.scalar("SELECT fired FROM fairq.schedules"
                                           " WHERE name = 'minutely'"))
            self.make_due("minutely", "1 hour")
            self.fairqd = h.start_fairqd(name="fairqd-2", **FAIRQD)
            h.wait(lambda: self.schedule("digest")["next_fire_at"] > digest["last_fire_at"],
                   TIMEOUT_S, "the digest's repeated firing taken")
            self.fairqd.wait_log(r"schedule digest .*firing \d+ submitted already")
            self.assertEqual(self.requests_of("Digest for {{name}}"), 1)
            self.assertEqual(self.schedule("digest")["fired"], 1)

        with self.subTest("3: missed firings: the latest fires once, the others skipped"):
            h.wait(lambda: self.schedule("minutely")["fired"] > minutely_before, TIMEOUT_S,
                   "minutely fired after the restart")
            minutely = self.schedule("minutely")
            self.assertEqual(minutely["fired"], minutely_before + 1)
            self.assertGreaterEqual(minutely["skipped"], 59)
            self.fairqd.wait_log(r"schedule minutely .*: \d+ missed firings skipped, "
                                 r"the latest fired")
            self.assertGreater(minutely["next_fire_at"], minutely["last_fire_at"])

        with self.subTest("4: the paused schedule fired nothing"):
            time.sleep(1)
            held = self.schedule("held")
            self.assertEqual((held["fired"], held["last_request"], held["next_fire_at"]),
                             (0, None, None))
            self.assertEqual(self.requests_of("Held for {{name}}"), 0)
            self.assertEqual(self.mails("Held for"), [])
        self.assertEqual(len(self.mails("Digest for")), 2, "no digest mail twice")
        h.check_alive()


if __name__ == "__main__":
    fq_e2e.main()
