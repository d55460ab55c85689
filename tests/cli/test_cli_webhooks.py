#!/usr/bin/python3
"""test_cli_webhooks.py: fairq's webhooks commands against a real fairqd
and PostgreSQL (the e2e harness, through test_cli.py's helpers): an
endpoint added (its secret printed), listed, shown, disabled and enabled,
its secret rotated, removed; the API's refusals (exit 1), a usage error
(2), another tenant's token (3: "does not exist"), and --json for scripts.
Delivery itself is tests/e2e/test_webhooks.py's.

    test_cli_webhooks.py --fairqd PATH --sender PATH --admin PATH --sink PATH --fairq PATH
"""

import base64
import os
import re
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli  # noqa: E402
from test_cli import AUTH, FAILED, NOT_FOUND, OK, USAGE  # noqa: E402, F401
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

SECRET = re.compile(r"whsec_[A-Za-z0-9+/]+=*")
TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
# Where the endpoints point: nothing needs to answer, as no event is made
HOOK = "http://127.0.0.1:9/hook"


def a_secret():
    """A secret as Standard Webhooks writes one: whsec_ and 32 bytes."""
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


class WebhooksCliTest(E2ETest):
    # The helpers of test_cli.py's CliTest (not its tests): fairqd started,
    # fairq run with a token and its exit code checked
    start = test_cli.CliTest.start
    _healthy = test_cli.CliTest._healthy
    env = test_cli.CliTest.env
    fairq = test_cli.CliTest.fairq
    fairq_json = test_cli.CliTest.fairq_json
    check_output = test_cli.CliTest.check_output

    def field(self, text, label):
        """The value of label in "label  value" lines (show's)."""
        m = re.search(rf"(?m)^{re.escape(label)}  +(.*)$", text)
        self.assertIsNotNone(m, f"no {label!r} in\n{text}")
        return m.group(1)

    def test_webhooks(self):
        self.start(senders=0, tenants=("shop", "other"))
        done = self.fairq("webhooks", "--tenant", "shop")
        self.assertEqual(done.stdout, "")
        self.assertIn("tenant shop has no webhook endpoint", done.stderr)

        # add: the id and the secret fairq made, which the endpoint needs
        done = self.fairq("webhooks", "add", HOOK, "--tenant", "shop", "--events",
                          "message.dead,message.bounced")
        m = re.fullmatch(r"webhook (\d+) added for tenant shop\nsecret: (\S+)\n", done.stdout)
        self.assertIsNotNone(m, done.stdout)
        first, secret = m.group(1), m.group(2)
        self.assertRegex(secret, SECRET)
        self.assertIn("needs this secret to verify fairq's signatures", done.stderr)
        # --json: the endpoint as the API answers it, a secret given kept
        given = a_secret()
        endpoint = self.fairq_json("webhooks", "add", "https://hooks.example/b", "--tenant",
                                   "shop", "--secret", given)
        second = str(endpoint["id"])
        self.assertEqual((endpoint["url"], endpoint["events"], endpoint["secret"],
                          endpoint["enabled"], endpoint["state"]),
                         ("https://hooks.example/b", None, given, True, "ok"))

        # The list, one line each in id order
        done = self.fairq("webhooks", "--tenant", "shop")
        lines = done.stdout.splitlines()
        self.assertRegex(lines[0], r"^ID +STATE +DELIVERED +BACKLOG +EVENTS +URL +LAST ERROR$")
        self.assertRegex(lines[1], rf"^ *{first} +ok +0 +0 +message\.dead,message\.bounced +"
                                   rf"{re.escape(HOOK)} +-$")
        self.assertRegex(lines[2], rf"^ *{second} +ok +0 +0 +all +https://hooks\.example/b +-$")
        self.assertEqual(len(lines), 3)
        self.assertEqual(self.fairq("webhooks", "list", "--tenant", "shop").stdout, done.stdout)
        self.assertEqual([w["id"] for w in self.fairq_json("webhooks", "--tenant",
                                                           "shop")["webhooks"]],
                         [int(first), int(second)])

        # show: every field, aligned
        done = self.fairq("webhooks", "show", first, "--tenant", "shop")
        for label, value in (("webhook", first), ("url", HOOK),
                             ("events", "message.dead,message.bounced"), ("enabled", "yes"),
                             ("state", "ok"), ("secret", secret), ("backlog", "0"),
                             ("batch in flight", "-"), ("previous secret until", "-"),
                             ("last error", "-")):
            self.assertEqual(self.field(done.stdout, label), value)
        self.assertRegex(self.field(done.stdout, "created"), TIME)

        # set: disable, then enable with a new URL and every type
        done = self.fairq("webhooks", "set", first, "--tenant", "shop", "--disable")
        self.assertTrue(done.stdout.startswith(f"webhook {first} updated\n"), done.stdout)
        self.assertEqual((self.field(done.stdout, "state"), self.field(done.stdout, "enabled")),
                         ("disabled", "no"))
        self.assertRegex(self.fairq("webhooks", "--tenant", "shop").stdout,
                         rf"(?m)^ *{first} +disabled ")
        endpoint = self.fairq_json("webhooks", "set", first, "--tenant", "shop", "--enable",
                                   "--endpoint", "https://hooks.example/a", "--events", "all")
        self.assertEqual((endpoint["url"], endpoint["events"], endpoint["enabled"],
                          endpoint["state"]), ("https://hooks.example/a", None, True, "ok"))
        # A usage error, before anything is sent; the API's refusal (1)
        done = self.fairq("webhooks", "set", first, "--tenant", "shop", expect=USAGE)
        self.assertIn("nothing to change", done.stderr)
        self.fairq("webhooks", "set", first, "--tenant", "shop", "--enable", "--disable",
                   expect=USAGE)
        done = self.fairq("webhooks", "set", first, "--tenant", "shop", "--endpoint",
                          "https://hooks.example/{{x}}", expect=FAILED)
        self.assertIn("an endpoint's URL holds no", done.stderr)
        done = self.fairq("webhooks", "add", "http://hooks.example:99999/x", "--tenant", "shop",
                          expect=FAILED)
        self.assertIn("url: ", done.stderr)

        # rotate: a new secret; the old one signs a day more, or not at all
        done = self.fairq("webhooks", "rotate", first, "--tenant", "shop")
        m = re.fullmatch(rf"webhook {first} has a new secret\nsecret: (\S+)\n"
                         rf"the old secret still signs beside it until ({TIME})\n", done.stdout)
        self.assertIsNotNone(m, done.stdout)
        self.assertNotEqual(m.group(1), secret)
        self.assertRegex(m.group(1), SECRET)
        self.assertIn("verify fairq's signatures", done.stderr)
        shown = self.fairq_json("webhooks", "show", first, "--tenant", "shop")
        self.assertEqual((shown["secret"], shown["previous_secret_until"]),
                         (m.group(1), m.group(2)))
        given = a_secret()
        done = self.fairq("webhooks", "rotate", first, "--tenant", "shop", "--secret", given,
                          "--keep-previous-s", "0")
        self.assertEqual(done.stdout, f"webhook {first} has a new secret\nsecret: {given}\n"
                                      "the old secret no longer signs\n")
        shown = self.fairq_json("webhooks", "show", first, "--tenant", "shop")
        self.assertEqual((shown["secret"], shown["previous_secret_until"]), (given, None))
        done = self.fairq("webhooks", "rotate", first, "--tenant", "shop", "--secret",
                          "whsec_short", expect=FAILED)
        self.assertIn("secret must be", done.stderr)
        self.fairq("webhooks", "rotate", first, "--tenant", "shop", "--keep-previous-s",
                   "604801", expect=USAGE)

        # Tokens: a tenant's manages its own endpoints; another tenant's
        # are not found (3), as a tenant that does not exist
        shop = self.fairq("tenants", "token", "shop").stdout.strip()
        other = self.fairq("tenants", "token", "other").stdout.strip()
        self.assertEqual(len(self.fairq_json("webhooks", "--tenant", "shop",
                                             token=shop)["webhooks"]), 2)
        for args in (["webhooks", "--tenant", "shop"],
                     ["webhooks", "show", first, "--tenant", "shop"],
                     ["webhooks", "set", first, "--tenant", "shop", "--disable"],
                     ["webhooks", "rotate", first, "--tenant", "shop"],
                     ["webhooks", "remove", first, "--tenant", "shop"],
                     ["webhooks", "add", HOOK, "--tenant", "shop"]):
            done = self.fairq(*args, token=other, expect=NOT_FOUND)
            self.assertIn('"shop" does not exist', done.stderr)
        self.assertEqual(self.fairq("webhooks", "--tenant", "other", token=other).stdout, "")
        self.fairq("webhooks", "--tenant", "shop", token=None, expect=AUTH)
        self.assertEqual(self.fairq_json("webhooks", "show", first, "--tenant", "shop")["state"],
                         "ok")

        # A failing endpoint, as fairqd's feeder leaves one: its last error
        # shortened in the list, escaped, and whole in show
        error = "503 down for maintenance\n" + "x" * 100
        self.h.sql(f"UPDATE fairq.webhooks SET failures = 3, failing_since = now(),"
                   f" last_error = {fq_e2e.lit(error)}, last_error_at = now()"
                   f" WHERE id = {second}")
        lines = self.fairq("webhooks", "--tenant", "shop").stdout.splitlines()
        self.assertRegex(lines[2], rf"^ *{second} +failing +0 +0 +all +https://hooks\.example/b"
                                   r" +503 down for maintenance\\nx{11}\.\.\.$")
        done = self.fairq("webhooks", "show", second, "--tenant", "shop")
        self.assertEqual(self.field(done.stdout, "last error"),
                         "503 down for maintenance\\n" + "x" * 100)
        self.assertEqual(self.field(done.stdout, "failures"), "3")
        self.assertRegex(self.field(done.stdout, "failing since"), TIME)

        # remove: gone (3 after), the other one kept; --json prints nothing
        done = self.fairq("webhooks", "remove", first, "--tenant", "shop", token=shop)
        self.assertEqual(done.stdout, f"webhook {first} removed\n")
        done = self.fairq("webhooks", "remove", first, "--tenant", "shop", expect=NOT_FOUND)
        self.assertIn(f"webhook {first} does not exist", done.stderr)
        self.fairq("webhooks", "show", first, "--tenant", "shop", expect=NOT_FOUND)
        self.assertEqual(self.fairq("--json", "webhooks", "remove", second, "--tenant",
                                    "shop").stdout, "")
        self.assertEqual(self.fairq_json("webhooks", "--tenant", "shop"), {"webhooks": []})


if __name__ == "__main__":
    test_cli.main()
