#!/usr/bin/python3
"""test_cli_schedules.py: fairq's schedules commands against a real fairqd
and PostgreSQL (the e2e harness, through test_cli.py's helpers): a schedule
added from a request file (and from standard input), listed, shown, paused
and resumed, removed by id and by name; the API's refusals (exit 1: a bad
expression, an unknown time zone, a bad request), a name taken (6), usage
errors (2), another tenant's token (3: "does not exist"), and --json for
scripts. Firing itself is tests/e2e/test_schedules.py's.

    test_cli_schedules.py --fairqd PATH --sender PATH --admin PATH --sink PATH --fairq PATH
"""

import json
import os
import re
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli  # noqa: E402
from test_cli import AUTH, CONFLICT, FAILED, NOT_FOUND, OK, USAGE  # noqa: E402, F401
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
REQUEST = {"from": "news@shop.example", "subject": "Your week, {{name}}",
           "body": "Hello {{name}}",
           "recipients": [{"to": "ann@example.org", "fields": {"name": "Ann"}}]}


class SchedulesCliTest(E2ETest):
    # The helpers of test_cli.py's CliTest (not its tests)
    start = test_cli.CliTest.start
    _healthy = test_cli.CliTest._healthy
    env = test_cli.CliTest.env
    fairq = test_cli.CliTest.fairq
    fairq_json = test_cli.CliTest.fairq_json
    file = test_cli.CliTest.file
    check_output = test_cli.CliTest.check_output

    def field(self, text, label):
        """The value of label in "label  value" lines (show's)."""
        m = re.search(rf"(?m)^{re.escape(label)}  +(.*)$", text)
        self.assertIsNotNone(m, f"no {label!r} in\n{text}")
        return m.group(1)

    def test_schedules(self):
        self.start(senders=0, tenants=("shop", "other"))
        request = self.file("request.json", json.dumps(REQUEST))
        done = self.fairq("schedules", "--tenant", "shop")
        self.assertEqual(done.stdout, "")
        self.assertIn("tenant shop has no schedule", done.stderr)

        # add: from a file, and from standard input with --json
        done = self.fairq("schedules", "add", "weekly", "--tenant", "shop", "--cron",
                          "0 9 * * mon", "--time-zone", "Europe/Berlin", "--request", request)
        m = re.match(r"schedule (\d+) \(weekly\) added for tenant shop\n", done.stdout)
        self.assertIsNotNone(m, done.stdout)
        weekly = m.group(1)
        self.assertEqual(self.field(done.stdout, "cron"), "0 9 * * mon")
        self.assertRegex(self.field(done.stdout, "next fire at"), r"T0[78]:00:00Z$")
        made = self.fairq_json("schedules", "add", "daily", "--tenant", "shop", "--cron",
                               "@daily", "--request", "-", "--missed", "skip", "--paused",
                               input_text=json.dumps(REQUEST))
        self.assertEqual((made["name"], made["time_zone"], made["missed"], made["paused"],
                          made["next_fire_at"], made["request"]),
                         ("daily", "UTC", "skip", True, None, REQUEST))

        # The list, one line each in name order
        done = self.fairq("schedules", "--tenant", "shop")
        lines = done.stdout.splitlines()
        self.assertRegex(lines[0], r"^ID +NAME +CRON +TIME ZONE +NEXT FIRE AT +FIRED +SKIPPED$")
        self.assertRegex(lines[1], rf"^ *{made['id']} +daily +@daily +UTC +paused +0 +0$")
        self.assertRegex(lines[2], rf"^ *{weekly} +weekly +0 9 \* \* mon +Europe/Berlin +"
                                   rf"{TIME} +0 +0$")
        self.assertEqual(len(lines), 3)
        self.assertEqual(self.fairq("schedules", "list", "--tenant", "shop").stdout,
                         done.stdout)

        # show, by id and by name: every field, and the request
        done = self.fairq("schedules", "show", "weekly", "--tenant", "shop")
        for label, value in (("schedule", weekly), ("name", "weekly"),
                             ("time zone", "Europe/Berlin"), ("missed", "latest"),
                             ("paused", "no"), ("last fire at", "-"), ("fired", "0")):
            self.assertEqual(self.field(done.stdout, label), value)
        self.assertIn('"subject":"Your week, {{name}}"', done.stdout)
        self.assertEqual(self.fairq("schedules", "show", weekly, "--tenant", "shop").stdout,
                         done.stdout)

        # pause and resume
        done = self.fairq("schedules", "pause", "weekly", "--tenant", "shop")
        self.assertEqual(done.stdout, "schedule weekly paused\n")
        self.assertTrue(self.fairq_json("schedules", "show", weekly, "--tenant",
                                        "shop")["paused"])
        done = self.fairq("schedules", "resume", weekly, "--tenant", "shop")
        self.assertRegex(done.stdout, rf"^schedule {weekly} resumed: next firing at {TIME}\n$")

        # The API's refusals (1), a name taken (6), usage errors (2)
        for args, words in ((["--cron", "0 24 * * *"], "cron: hour: 24 is out of range"),
                            (["--cron", "* * *"], "cron: a cron expression has 5 fields"),
                            (["--cron", "@daily", "--time-zone", "Mars/Base"],
                             "is not a time zone")):
            done = self.fairq("schedules", "add", "bad", "--tenant", "shop", "--request",
                              request, *args, expect=FAILED)
            self.assertIn(words, done.stderr)
        bad_request = self.file("bad.json", json.dumps(dict(REQUEST, subject="{{x")))
        done = self.fairq("schedules", "add", "bad", "--tenant", "shop", "--cron", "@daily",
                          "--request", bad_request, expect=FAILED)
        self.assertIn("request: subject", done.stderr)
        done = self.fairq("schedules", "add", "weekly", "--tenant", "shop", "--cron", "@daily",
                          "--request", request, expect=CONFLICT)
        self.assertIn("exists already", done.stderr)
        not_json = self.file("not.json", "{\"from\": ")
        done = self.fairq("schedules", "add", "x", "--tenant", "shop", "--cron", "@daily",
                          "--request", not_json, expect=USAGE)
        self.assertIn("not.json:1:", done.stderr)
        for args in (["schedules", "add", "x", "--tenant", "shop", "--request", request],
                     ["schedules", "add", "Bad", "--tenant", "shop", "--cron", "@daily",
                      "--request", request],
                     ["schedules", "add", "x", "--tenant", "shop", "--cron", "@daily",
                      "--request", request, "--missed", "all"],
                     ["schedules", "show", "weekly"],
                     ["schedules", "show", "no way", "--tenant", "shop"],
                     ["schedules", "pause", "0", "--tenant", "shop"]):
            self.fairq(*args, expect=USAGE)
        self.fairq("schedules", "show", "nosuch", "--tenant", "shop", expect=NOT_FOUND)

        # Tokens: a tenant's manages its own; another tenant's are not found
        shop = self.fairq("tenants", "token", "shop").stdout.strip()
        other = self.fairq("tenants", "token", "other").stdout.strip()
        self.assertEqual(len(self.fairq_json("schedules", "--tenant", "shop",
                                             token=shop)["schedules"]), 2)
        for args in (["schedules", "--tenant", "shop"],
                     ["schedules", "show", "weekly", "--tenant", "shop"],
                     ["schedules", "pause", "weekly", "--tenant", "shop"],
                     ["schedules", "remove", "weekly", "--tenant", "shop"]):
            done = self.fairq(*args, token=other, expect=NOT_FOUND)
            self.assertIn('"shop" does not exist', done.stderr)
        self.fairq("schedules", "--tenant", "shop", token=None, expect=AUTH)

        # remove, by name and by id
        self.assertEqual(self.fairq("schedules", "remove", "weekly", "--tenant",
                                    "shop").stdout, "schedule weekly removed\n")
        self.assertEqual(self.fairq("schedules", "remove", str(made["id"]), "--tenant", "shop",
                                    "--json").stdout, "")
        self.fairq("schedules", "remove", "weekly", "--tenant", "shop", expect=NOT_FOUND)
        self.assertEqual(self.fairq_json("schedules", "--tenant", "shop"), {"schedules": []})


if __name__ == "__main__":
    test_cli.main()
