#!/usr/bin/python3
"""test_cli_holds.py: fairq's holds commands against a real fairqd and
PostgreSQL (the e2e harness, through test_cli.py's helpers): a tenant, a
destination and all held (again: no error, the first reason stays),
listed as a table and as JSON, shown in tenants and top; released (again:
exit 3); usage errors (2) before any call, the API's refusals (1 and 3),
a tenant's token (4). What a hold does to delivery is
tests/e2e/test_holds.py's.

    test_cli_holds.py --fairqd PATH --sender PATH --admin PATH --sink PATH --fairq PATH
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli  # noqa: E402
from test_cli import AUTH, FAILED, NOT_FOUND, OK, USAGE  # noqa: E402, F401
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
REASON_MAX = 500  # Bytes of a hold's reason (sql/fq_store_holds.h)


class HoldsCliTest(E2ETest):
    # The helpers of test_cli.py's CliTest (not its tests)
    start = test_cli.CliTest.start
    _healthy = test_cli.CliTest._healthy
    env = test_cli.CliTest.env
    fairq = test_cli.CliTest.fairq
    fairq_json = test_cli.CliTest.fairq_json
    check_output = test_cli.CliTest.check_output

    def test_holds(self):
        self.start(senders=0, tenants=("shop", "other"))
        table = self.fairq("holds").stdout.splitlines()
        self.assertEqual(len(table), 1, table)
        self.assertRegex(table[0], r"^SCOPE +NAME +BY +SINCE +REASON$")

        # Held, and held again: no error, the first reason stays
        done = self.fairq("hold", "tenant", "shop", "--reason", "abuse report", "--by", "ops")
        self.assertRegex(done.stdout, rf"^tenant shop held \(by ops at {TIME}\): abuse report\n$")
        done = self.fairq("hold", "tenant", "shop", "--reason", "another")
        self.assertRegex(done.stdout, r"^tenant shop was held already \(by ops at .*\): "
                                      r"abuse report\n$")
        done = self.fairq("hold", "destination", "default")
        self.assertRegex(done.stdout, r"^destination default held \(by \S+ at .*\)\n$")
        hold = self.fairq_json("hold", "all", "--reason", "relay down")
        self.assertEqual((hold["scope"], hold["name"], hold["reason"]), ("all", None, "relay down"))

        table = self.fairq("holds").stdout.splitlines()
        self.assertEqual(len(table), 4, table)
        self.assertRegex(table[1], rf"^all +- +\S+ +{TIME} +relay down$")
        self.assertRegex(table[2], rf"^tenant +shop +ops +{TIME} +abuse report$")
        self.assertRegex(table[3], rf"^destination +default +\S+ +{TIME} +-$")
        listed = self.fairq_json("holds")
        self.assertTrue(listed["all"])
        self.assertEqual([(h["scope"], h["name"]) for h in listed["holds"]],
                         [("all", None), ("tenant", "shop"), ("destination", "default")])

        # Shown where tenants are
        shown = self.fairq("tenants", "show", "shop").stdout
        self.assertRegex(shown, r"(?m)^held +yes$")
        self.assertRegex(shown, r"(?m)^oldest due +(-|\d+s)$")
        tenants = self.fairq("tenants").stdout.splitlines()
        self.assertRegex(tenants[0], r"OLDEST DUE +HELD$")
        self.assertRegex([t for t in tenants if t.startswith("shop ")][0], r" yes$")
        self.assertRegex([t for t in tenants if t.startswith("other ")][0], r" -$")
        top = self.fairq("top", "--once").stdout
        self.assertRegex(top, r"(?m)^shop \(held\) ")
        self.assertIn("OLDEST DUE", top)

        # Usage errors, before any call
        for args in (["hold", "tenant", "Bad Name"], ["hold", "tenant"], ["hold", "all", "x"],
                     ["hold", "everything"], ["release", "destination", "UPPER"],
                     ["release", "tenant"]):
            self.fairq(*args, expect=USAGE)
        # The API's refusals
        done = self.fairq("hold", "tenant", "nobody", expect=NOT_FOUND)
        self.assertIn("tenant \"nobody\" does not exist", done.stderr)
        self.fairq("hold", "destination", "nowhere", expect=NOT_FOUND)
        done = self.fairq("hold", "tenant", "other", "--reason", "r" * (REASON_MAX + 1),
                          expect=FAILED)
        self.assertIn("reason", done.stderr)
        # A tenant may not
        token = self.fairq("tenants", "token", "shop").stdout.strip()
        self.fairq("holds", token=token, expect=AUTH)
        self.fairq("release", "tenant", "shop", token=token, expect=AUTH)

        # Released once; then not held (3)
        done = self.fairq("release", "tenant", "shop")
        self.assertRegex(done.stdout, r"^tenant shop released; held \(by ops at .*\): "
                                      r"abuse report\n$")
        done = self.fairq("release", "tenant", "shop", expect=NOT_FOUND)
        self.assertIn("tenant \"shop\" is not held", done.stderr)
        released = self.fairq_json("release", "all")
        self.assertTrue(released["released"])
        self.fairq("release", "all", expect=NOT_FOUND)
        self.fairq("release", "destination", "default")
        self.assertEqual(self.fairq_json("holds"), {"all": False, "holds": []})


if __name__ == "__main__":
    test_cli.main()
