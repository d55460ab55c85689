#!/usr/bin/python3
"""test_cli_args.py: the fairq program's command lines, with no server.

Every bad argument is refused before anything is sent, with exit code 2
and a message that says what was expected (for a bad file: FILE:LINE);
--help works for fairq and for each command; a server that is not there
is exit 5; the token never shows in any output.

    test_cli_args.py --fairq PATH [unittest arguments]
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import unittest

FAIRQ = os.environ.get("FQ_CLI_FAIRQ", "fairq")

# Sanitizer findings must fail, not just print
os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:")

SECRET = "fq_" + "s3cr3t" * 7 + "x"

HERE = os.path.dirname(os.path.abspath(__file__))
# The one place the version is set: the project's top CMakeLists.txt
TOP_CMAKELISTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "CMakeLists.txt")

COMMANDS = ["submit", "status", "list", "search", "message", "cancel", "pause", "resume",
            "reschedule", "retry", "rejects", "events", "errors", "tenants", "tenants show",
            "tenants set", "tenants token", "tenants tokens", "tenants revoke", "destinations",
            "destinations show", "destinations set", "destinations delete", "suppressions",
            "suppressions list", "suppressions add", "suppressions remove", "suppressions import",
            "webhooks", "webhooks list", "webhooks add", "webhooks show", "webhooks set",
            "webhooks rotate", "webhooks remove", "top", "health"]


def closed_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ArgsTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fq_cli_args_")
        # Nothing listens here: a command that got past its checks fails
        # with 5, never hangs or reaches someone's fairqd
        self.url = f"http://127.0.0.1:{closed_port()}"

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)

    def file(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        return path

    def run_fairq(self, *args, env=None, input_text=None):
        environ = {k: v for k, v in os.environ.items() if not k.startswith("FAIRQ_")}
        environ["FAIRQ_URL"] = self.url
        environ["FAIRQ_TOKEN"] = SECRET
        environ.update(env or {})
        done = subprocess.run([FAIRQ, *args], capture_output=True, text=True, timeout=60,
                              env=environ, input=input_text)
        for stream in (done.stdout, done.stderr):
            self.assertIsNone(SANITIZER_REPORT.search(stream), f"fairq {args}: {stream}")
            self.assertNotIn(SECRET, stream, f"fairq {args} printed the token")
        return done

    def expect(self, code, text, *args, **kwargs):
        """fairq ARGS exits with code, and its stderr (or stdout) says text."""
        done = self.run_fairq(*args, **kwargs)
        self.assertEqual(done.returncode, code,
                         f"fairq {' '.join(args)}: exit {done.returncode}, wanted {code}\n"
                         f"stdout: {done.stdout}\nstderr: {done.stderr}")
        if text is not None:
            self.assertIn(text, done.stderr + done.stdout,
                          f"fairq {' '.join(args)}: no {text!r} in\n{done.stderr}")
        return done

    # -----------------------------------------------------------------

    def test_help(self):
        done = self.expect(0, "Usage: fairq", "--help")
        for command in COMMANDS:
            self.assertIn(command, done.stdout)
        for code in range(8):
            self.assertRegex(done.stdout, rf"\n  {code}  \w")
        self.expect(0, "Usage: fairq", "-h")
        self.expect(0, "Usage: fairq", "help")
        for command in COMMANDS:
            done = self.expect(0, f"Usage: fairq {command}", *command.split(), "--help")
            self.assertIn("--url", done.stdout)
        self.expect(0, "Usage: fairq tenants set", "help", "tenants", "set")
        self.expect(0, "--watch", "status", "--help")
        # Help comes before checks: nothing else on the line matters
        self.expect(0, "Usage: fairq status", "status", "abc", "--help")

    def test_version(self):
        """--version prints "fairq X.Y.Z", the version of project() in the
        top CMakeLists.txt, and exits 0; before the command only."""
        with open(TOP_CMAKELISTS) as f:
            version = re.search(r"project\(fairq VERSION ([0-9.]+)", f.read()).group(1)
        done = self.expect(0, None, "--version")
        self.assertEqual(done.stdout, f"fairq {version}\n")
        self.assertEqual(done.stderr, "")
        self.assertEqual(self.expect(0, None, "--json", "--version").stdout, done.stdout)
        self.assertIn("--version", self.expect(0, "Usage: fairq", "--help").stdout)
        self.expect(2, "unknown option --version", "status", "1", "--version")

    def help_texts(self):
        """(name, text) of fairq --help and of every command's --help."""
        texts = [("fairq", self.expect(0, "Usage: fairq", "--help").stdout)]
        for command in COMMANDS:
            texts.append((command, self.expect(0, None, *command.split(), "--help").stdout))
        return texts

    def test_help_shows_every_value(self):
        """Every option that takes a value shows its placeholder, a word
        that says what to give (N, PATH, NAME...), wherever the help names
        it; flags are spelled with dashes."""
        option_line = re.compile(r"(?m)^ +--([a-z][a-z-]*)(?: ([A-Z][A-Za-z|]*))?(?:  |\n|$)")
        for name, text in self.help_texts():
            values = {}
            for option, value in option_line.findall(text):
                if value:
                    self.assertTrue(value == "N" or len(value) > 1,
                                    f"{name} --help: --{option} {value} says little")
                    values[option] = value
            self.assertTrue(name == "fairq" or "timeout-s" in values, f"{name} --help: {text}")
            self.assertNotRegex(text, r"--[a-z]+_", f"{name} --help spells a flag with _")
            for m in re.finditer(r"--([a-z][a-z-]*[a-z])", text):
                if m.group(1) not in values:
                    continue
                after = text[m.end():].split(None, 1)
                word = after[0] if after and text[m.end()] in " \n" else ""
                self.assertTrue(word.startswith(values[m.group(1)]) or re.match(r'[0-9"+]', word),
                                f"{name} --help: --{m.group(1)} without its value "
                                f"{values[m.group(1)]}: ...{text[m.start() - 40:m.end() + 20]!r}")

    def test_tenants_help_lists_its_subcommands(self):
        done = self.expect(0, "Usage: fairq tenants", "tenants", "--help")
        text = done.stdout
        self.assertIn("fairq tenants SUBCOMMAND [ARGS]", text)
        subcommands = {"show": "show NAME", "set": "set NAME", "token": "token NAME",
                       "tokens": "tokens NAME", "revoke": "revoke NAME TOKEN_ID"}
        for sub, left in subcommands.items():
            summary = self.expect(0, None, "tenants", sub, "--help").stdout.split("\n")[2]
            self.assertRegex(text, rf"(?m)^  {left} +{re.escape(summary.rstrip('.')[:30])}")
        # The options of each, under it, with their values
        self.assertRegex(text, r"(?m)^  set NAME .*\n      --weight N +share of dispatch")
        self.assertRegex(text, r"(?m)^      --max-inflight N +")
        self.assertRegex(text, r"(?m)^      --submit-rate N\|none +")
        # Wider than the column: its text starts on the next line
        self.assertRegex(text, r"(?m)^      --max-send-rate RATE\|none *\n +most of its messages")
        self.assertRegex(text, r"(?m)^      --daily-quota N\|none +most of its messages")
        self.assertEqual(self.expect(0, None, "help", "tenants").stdout, text)
        done = self.expect(2, "unexpected argument \"bogus\"", "tenants", "bogus")
        self.assertIn("Try \"fairq tenants --help\" for its subcommands", done.stderr)

    def test_flags_with_underscores(self):
        """A flag spelled as the API spells its fields, with underscores,
        is the same flag (help and messages show the dashes)."""
        self.expect(2, "invalid value for --timeout-s", "--timeout_s", "0", "health")
        self.expect(2, "invalid value for --timeout-s", "health", "--timeout_s", "0")
        self.expect(2, "invalid value for --max-inflight", "tenants", "set", "acme",
                    "--max_inflight", "0")
        self.expect(2, "invalid value for --interval-s", "top", "--interval_s", "0.01")
        self.expect(5, "could not reach", "tenants", "set", "acme", "--submit_rate", "none",
                    "--max_inflight", "9")
        self.expect(2, "unknown option --wei_ght", "tenants", "set", "acme", "--wei_ght", "1")
        self.expect(2, "--max-send-rate: rate \"1/x\"", "tenants", "set", "acme",
                    "--max_send_rate", "1/x")
        self.expect(2, "invalid value for --daily-quota", "tenants", "set", "acme",
                    "--daily_quota", "0")

    def test_top_help_says_its_windows(self):
        text = self.expect(0, "Usage: fairq top", "top", "--help").stdout
        self.assertIn("RATE/S (6s) is the rate now, over the last 6 s", text)
        self.assertIn("RATE/S (1m) is fairqd's\naverage over the last minute", text)
        self.assertIn("RATE/S (1m)", self.expect(0, None, "tenants", "--help").stdout)

    def test_commands_and_options(self):
        self.expect(2, "no command given")
        self.expect(2, "no command given", "--json")
        self.expect(2, "unknown command \"frobnicate\"", "frobnicate")
        self.expect(2, "unknown option --bogus", "--bogus", "tenants")
        self.expect(2, "fairq status: unknown option --bogus", "status", "1", "--bogus")
        self.expect(2, "unknown option --watch", "list", "--watch")
        self.expect(2, "option --limit needs a value", "list", "--limit")
        self.expect(2, "unknown option --json=yes", "list", "--json=yes")
        self.expect(2, "missing argument", "status")
        self.expect(2, "unexpected argument \"2\"", "status", "1", "2")
        self.expect(2, "unexpected argument \"x\"", "tenants", "x")
        self.expect(2, "missing argument", "tenants", "show")

    def test_global_options(self):
        self.expect(2, "invalid --url \"ftp://x\"", "--url", "ftp://x", "health")
        self.expect(2, "invalid --url", "health", env={"FAIRQ_URL": "127.0.0.1:8080"})
        self.expect(2, "invalid value for --timeout-s", "--timeout-s", "0", "health")
        self.expect(2, "invalid value for --timeout-s", "health", "--timeout-s", "x")
        self.expect(2, "invalid value for --timeout-s", "health",
                    env={"FAIRQ_TIMEOUT_S": "-3"})
        self.expect(2, "invalid --token", "health", env={"FAIRQ_TOKEN": "fq_x\r\nX-Evil: 1"})
        self.expect(2, "invalid --token", "--token", "fq x", "health")
        # Global options after the command, as well as before
        self.expect(5, "could not reach", "health", "--timeout-s", "5", "--json")

    def test_ids_and_numbers(self):
        for command in ("status", "cancel", "pause", "resume", "reschedule", "rejects"):
            for bad in ("abc", "0", "1.5", "12x", "99999999999999999999"):
                self.expect(2, f"invalid request id \"{bad}\"", command, bad)
            self.expect(2, "unknown option -1", command, "-1")
        for bad in ("x", "0"):
            self.expect(2, f"invalid message id \"{bad}\"", "retry", bad)
            self.expect(2, f"invalid message id \"{bad}\"", "message", bad)
        self.expect(2, "invalid value for --interval-s", "status", "1", "--watch",
                    "--interval-s", "0")
        for bad in ("0", "1001", "ten", "-5"):
            self.expect(2, "invalid value for --limit", "list", "--limit", bad)
            self.expect(2, "invalid value for --limit", "search", "--limit", bad)
            self.expect(2, "invalid value for --limit", "rejects", "1", "--limit", bad)
        self.expect(2, "invalid --before id", "list", "--before", "0")
        self.expect(2, "invalid value for --after", "search", "--after", "x")
        self.expect(2, "invalid --request id", "search", "--request", "-3")
        self.expect(2, "invalid value for --interval-s", "top", "--interval-s", "0.01")

    def test_events_arguments(self):
        """events: every bad value refused before anything is sent, saying
        what was expected; good ones get as far as the (absent) server."""
        for bad in ("0", "1001", "ten", "1.5"):
            self.expect(2, f'invalid value for --limit: "{bad}" (an integer in 1..1000)',
                        "events", "--limit", bad)
        for bad in ("abc", "", "12", "12-", "1-2-3", "1--2", "1 -2", "1-2x", "0x1-2", "1-+2",
                    "123456789012345678901-1", "1-123456789012345678901"):
            self.expect(2, f'invalid value for --after: "{bad}" (a cursor: the "next" of a page,'
                        " two numbers joined by '-', as 0-0 for the start)",
                        "events", "--after", bad)
        self.expect(2, 'invalid value for --type: "message.opened" (one of message.sent, '
                    "message.deferred, message.dead, message.cancelled, message.rejected, "
                    "message.suppressed, message.unsubscribed, message.bounced, "
                    "message.complained, request.split, request.done, request.cancelled)",
                    "events", "--type", "message.opened")
        self.expect(2, 'invalid value for --type: "MESSAGE.SENT"', "events", "--type",
                    "MESSAGE.SENT")
        for bad in ("0", "x", "99999999999999999999"):
            self.expect(2, f'invalid --request id "{bad}"', "events", "--request", bad)
        self.expect(2, 'invalid tenant "Acme"', "events", "--tenant", "Acme")
        self.expect(2, 'fairq events: unexpected argument "7"', "events", "7")
        self.expect(2, "fairq events: unknown option --all", "events", "--all")
        self.expect(2, "option --after needs a value", "events", "--after")
        self.expect(2, "unknown option --follow", "search", "--follow")
        # Good values get past the checks: nothing listens (5)
        self.expect(5, "could not reach", "events", "--tenant", "acme", "--request", "7",
                    "--type", "request.done", "--after", "12-34", "--limit", "1000")
        self.expect(5, "could not reach", "events", "--after", "0-0", "--limit", "1")

    def test_suppressions_arguments(self):
        """suppressions: every bad argument refused before anything is
        sent (exit 2, saying what was expected); good ones get as far as
        the (absent) server."""
        for args in (["suppressions"], ["suppressions", "list", "--limit", "5"],
                     ["suppressions", "add", "a@example.com"],
                     ["suppressions", "remove", "a@example.com"],
                     ["suppressions", "import", "-"]):
            self.expect(2, "which list? give --tenant NAME (a tenant's) or --global", *args)
            self.expect(2, "--tenant NAME and --global cannot go together", *args, "--tenant",
                        "acme", "--global")
            self.expect(2, 'invalid tenant "Acme"', *args, "--tenant", "Acme")
            self.expect(2, "option --tenant needs a value", *args, "--tenant")
        for bad in ("0", "1001", "ten", "-1"):
            self.expect(2, f'invalid value for --limit: "{bad}" (an integer in 1..1000)',
                        "suppressions", "--global", "--limit", bad)
        for bad in ("nobody", "", "a b@example.com", "x" * 321 + "@example.com"):
            self.expect(2, "invalid value for --after", "suppressions", "list", "--global",
                        "--after", bad)
        for bad, shown in (("bob", "bob"), ("", ""), ("bob smith@example.com", None),
                           ("bob@example.com\nBcc: x@y.z", "bob@example.com\\nBcc"),
                           ("x" * 321, None)):
            done = self.expect(2, "(an address: local@domain, 1..320 bytes of printable ASCII "
                               "without spaces)", "suppressions", "add", bad, "--global")
            if shown is not None:
                self.assertIn(f'invalid address "{shown}', done.stderr)
            self.expect(2, "invalid address", "suppressions", "remove", bad, "--tenant", "acme")
        # Every address is checked before the first is sent
        self.expect(2, 'invalid address "nope"', "suppressions", "add", "ok@example.com", "nope",
                    "--global")
        for bad in ("d" * 2001, "two\nlines", "tab\there"):
            self.expect(2, "invalid value for --detail (at most 2000 bytes of text, without "
                        "control characters", "suppressions", "add", "a@example.com", "--global",
                        "--detail", bad)
        self.expect(2, "missing argument", "suppressions", "add", "--global")
        self.expect(2, "missing argument", "suppressions", "remove", "--global")
        self.expect(2, "missing argument", "suppressions", "import", "--global")
        self.expect(2, 'unexpected argument "b@example.com"', "suppressions", "remove",
                    "a@example.com", "b@example.com", "--global")
        self.expect(2, 'unexpected argument "e@example.com"', "suppressions", "add",
                    *[f"{c}@example.com" for c in "abcde"], "--global")
        self.expect(2, 'fairq suppressions: unexpected argument "bogus"', "suppressions", "bogus")
        self.expect(2, "unknown option --detail", "suppressions", "remove", "a@example.com",
                    "--global", "--detail", "x")
        self.expect(2, "unknown option --after", "suppressions", "import", "f.csv", "--global",
                    "--after", "a@example.com")
        missing = os.path.join(self.dir, "missing.csv")
        self.expect(2, f'could not open "{missing}": No such file or directory', "suppressions",
                    "import", missing, "--global")
        self.expect(2, "could not read", "suppressions", "import", self.dir, "--global")
        # Good values get past the checks: nothing listens (5)
        self.expect(5, "could not reach", "suppressions", "--tenant", "acme", "--after",
                    "A@Example.com", "--limit", "1000")
        self.expect(5, "could not reach", "suppressions", "add", "a@example.com",
                    "b@example.com", "c@example.com", "d@example.com", "--global", "--detail",
                    "d" * 2000)
        self.expect(5, "could not reach", "suppressions", "remove", "a@example.com", "--global")
        self.expect(5, "could not reach", "suppressions", "import", "-", "--tenant", "acme",
                    input_text="a@example.com\n")
        path = self.file("list.csv", "email\na@example.com\n")
        self.expect(5, "could not reach", "suppressions", "import", path, "--global")

    def test_webhooks_arguments(self):
        """webhooks: every bad argument refused before anything is sent
        (exit 2, saying what was expected); good ones get as far as the
        (absent) server."""
        url = "https://hooks.example/fairq"
        for args in (["webhooks"], ["webhooks", "list"], ["webhooks", "add", url],
                     ["webhooks", "show", "1"], ["webhooks", "set", "1", "--disable"],
                     ["webhooks", "rotate", "1"], ["webhooks", "remove", "1"]):
            self.expect(2, "which tenant? give --tenant NAME", *args)
            self.expect(2, 'invalid tenant "Acme"', *args, "--tenant", "Acme")
            self.expect(2, "option --tenant needs a value", *args, "--tenant")
        for command in ("show", "set", "rotate", "remove"):
            for bad in ("abc", "0", "1.5", "12x", "99999999999999999999"):
                self.expect(2, f'invalid webhook id "{bad}" (a positive integer)', "webhooks",
                            command, bad, "--tenant", "acme")
            self.expect(2, "missing argument", "webhooks", command, "--tenant", "acme")
            self.expect(2, 'unexpected argument "2"', "webhooks", command, "1", "2",
                        "--tenant", "acme")
        for bad in ("ftp://hooks.example", "hooks.example/x", "http://", "HTTPS://x.example",
                    ""):
            self.expect(2, f'invalid URL "{bad}" (the endpoint\'s http:// or https:// URL',
                        "webhooks", "add", bad, "--tenant", "acme")
            self.expect(2, f'invalid URL "{bad}"', "webhooks", "set", "1", "--tenant", "acme",
                        "--endpoint", bad)
        for bad, shown in (("message.opened", "message.opened"), ("ALL", "ALL"),
                           ("message.sent,,message.dead", ""), ("message.sent,", ""),
                           ("", ""), ("message.sent message.dead", "message.sent message.dead")):
            self.expect(2, f'invalid value for --events: "{shown}" (all, or event types between '
                        "commas, each one of message.sent, message.deferred,", "webhooks", "add",
                        url, "--tenant", "acme", "--events", bad)
            self.expect(2, f'invalid value for --events: "{shown}"', "webhooks", "set", "1",
                        "--tenant", "acme", "--events", bad)
        self.expect(2, "nothing to change: give --endpoint URL, --events LIST|all, --enable or "
                    "--disable", "webhooks", "set", "1", "--tenant", "acme")
        # --url is fairqd's API, not the endpoint's: a set that meant it is told
        self.expect(2, "the endpoint's URL is --endpoint URL", "webhooks", "set", "1",
                    "--tenant", "acme", "--url", url)
        self.expect(2, "--enable and --disable cannot go together", "webhooks", "set", "1",
                    "--tenant", "acme", "--enable", "--disable")
        for bad in ("-1", "604801", "1d", "x", "1.5"):
            self.expect(2, f'invalid value for --keep-previous-s: "{bad}" (an integer in '
                        "0..604800)", "webhooks", "rotate", "1", "--tenant", "acme",
                        "--keep-previous-s", bad)
        self.expect(2, "unknown option --secret", "webhooks", "set", "1", "--tenant", "acme",
                    "--secret", "whsec_x")
        self.expect(2, "unknown option --enable", "webhooks", "add", url, "--tenant", "acme",
                    "--enable")
        self.expect(2, "missing argument", "webhooks", "add", "--tenant", "acme")
        self.expect(2, 'fairq webhooks: unexpected argument "bogus"', "webhooks", "bogus",
                    "--tenant", "acme")
        # Good values get past the checks: nothing listens (5)
        self.expect(5, "could not reach", "webhooks", "--tenant", "acme")
        self.expect(5, "could not reach", "webhooks", "list", "--tenant", "acme")
        self.expect(5, "could not reach", "webhooks", "add", "http://127.0.0.1:9/x", "--tenant",
                    "acme", "--events", "message.dead,message.bounced,request.done",
                    "--secret", "whsec_anything")
        self.expect(5, "could not reach", "webhooks", "add", url, "--tenant", "acme",
                    "--events", "all")
        self.expect(5, "could not reach", "webhooks", "show", "7", "--tenant", "acme")
        self.expect(5, "could not reach", "webhooks", "set", "7", "--tenant", "acme",
                    "--endpoint", url, "--events", "all", "--enable")
        self.expect(5, "could not reach", "webhooks", "set", "7", "--tenant", "acme",
                    "--disable")
        for keep in ("0", "604800"):
            self.expect(5, "could not reach", "webhooks", "rotate", "7", "--tenant", "acme",
                        "--keep-previous-s", keep, "--secret", "whsec_x")
        self.expect(5, "could not reach", "webhooks", "remove", "7", "--tenant", "acme")

    def test_words(self):
        self.expect(2, "invalid value for --status: \"sent\" (one of accepted,", "list",
                    "--status", "sent")
        self.expect(2, "invalid value for --status: \"active\" (one of pending,", "search",
                    "--status", "active")
        self.expect(2, "invalid tenant \"Acme\"", "list", "--tenant", "Acme")
        self.expect(2, "invalid tenant \"a b\"", "search", "--tenant", "a b")
        self.expect(2, "invalid tenant name \"-x\"", "tenants", "show", "--", "-x")
        self.expect(2, "invalid tenant name \"x/y\"", "tenants", "set", "x/y")
        self.expect(2, "invalid tenant name \"UPPER\"", "tenants", "token", "UPPER")
        self.expect(2, "invalid value for --to", "search", "--to", "")
        self.expect(2, "invalid value for --domain", "search", "--domain", "a\tb")

    def test_reschedule_and_tenants_set(self):
        self.expect(2, "needs --send-at or --priority", "reschedule", "5")
        for bad in ("1001", "-1001", "high"):
            self.expect(2, "invalid value for --priority", "reschedule", "5", "--priority", bad)
        for bad in ("tomorrow", "2026-11-21", "2026-11-21T12:00:00", "+5w", "-5m"):
            self.expect(2, "invalid value for --send-at", "reschedule", "5", "--send-at", bad)
        for bad in ("0", "1001", "x"):
            self.expect(2, "invalid value for --weight", "tenants", "set", "acme", "--weight",
                        bad)
        self.expect(2, "invalid value for --max-inflight", "tenants", "set", "acme",
                    "--max-inflight", "0")
        self.expect(2, "invalid value for --max-inflight", "tenants", "set", "acme",
                    "--max-inflight", "2147483648")
        self.expect(2, "invalid value for --submit-rate", "tenants", "set", "acme",
                    "--submit-rate", "0")
        self.expect(2, "invalid value for --submit-rate", "tenants", "set", "acme",
                    "--submit-rate", "None")
        # Good arguments get as far as the (missing) server
        self.expect(5, "could not reach", "reschedule", "5", "--priority", "-1000",
                    "--send-at", "2026-11-21T12:00:00+02:00")
        self.expect(5, "could not reach", "reschedule", "5", "--send-at", "+90m")
        self.expect(5, "could not reach", "tenants", "set", "acme", "--weight", "1000",
                    "--max-inflight", "2147483647", "--submit-rate", "none")

    def test_tenants_set_send_budget(self):
        """--max-send-rate is read as fairqd reads a rate, --daily-quota
        within the schema's 1..1000000000000; each takes none; a bad one
        is a usage error (2) saying what is wrong, before any call."""
        for bad, words in (("5/fortnight", 'rate "5/fortnight": unknown unit "fortnight"; units'
                                           ' are s, min, h, d'),
                           ("0/s", 'rate "0/s": count "0" is not a whole number from 1 to'
                                   ' 1000000000'),
                           ("-1/s", 'rate "-1/s": count "-1"'),
                           ("1.5/s", 'rate "1.5/s": count "1.5"'),
                           ("1000000001/s", 'rate "1000000001/s": count'),
                           ("100", 'rate "100": no unit'),
                           ("/s", 'rate "/s": no count before "/"'),
                           ("", 'rate "": empty'),
                           ("100/S", 'rate "100/S": unknown unit "S"'),
                           ("Nones", 'rate "Nones"'),
                           ("none ", 'rate "none "')):
            done = self.expect(2, f"--max-send-rate: {words}", "tenants", "set", "acme",
                               "--max-send-rate", bad)
            self.assertIn("(or none)", done.stderr)
        for bad in ("0", "-1", "1000000000001", "99999999999999999999", "1e3", "1.5", "x",
                    "None", ""):
            self.expect(2, f"invalid value for --daily-quota (or none): \"{bad}\" (an integer"
                           " in 1..1000000000000)", "tenants", "set", "acme", "--daily-quota",
                        bad)
        self.expect(2, "option --max-send-rate needs a value", "tenants", "set", "acme",
                    "--max-send-rate")
        # Good values, each unit and none, get as far as the (missing) server
        for rate in ("100/s", "5/min", "5/m", "10000/h", "10000/hour", "1000/d", "1/day",
                     "1000000000/sec", "none"):
            self.expect(5, "could not reach", "tenants", "set", "acme", "--max-send-rate", rate)
        for quota in ("1", "1000000000000", "none"):
            self.expect(5, "could not reach", "tenants", "set", "acme", "--daily-quota", quota)
        self.expect(5, "could not reach", "tenants", "set", "acme", "--max-send-rate", "5/min",
                    "--daily-quota", "10000", "--weight", "3")

    def test_submit_json_files(self):
        self.expect(2, "needs a JSON FILE", "submit")
        self.expect(2, "could not open \"/nonexistent/x.json\"", "submit", "/nonexistent/x.json")
        bad = self.file("bad.json", '{"tenant": "acme",\n  "from": "a@b.c",\n  "subject": }\n')
        self.expect(2, f"{bad}:3:", "submit", bad)
        self.expect(2, "<stdin>:1:", "submit", "-", input_text="{nope")
        array = self.file("array.json", "[1, 2]")
        self.expect(2, "not a JSON object", "submit", array)
        dup = self.file("dup.json", '{"tenant": "a", "tenant": "b"}')
        self.expect(2, "duplicate", "submit", dup)
        good = self.file("good.json", '{"tenant": "acme"}')
        self.expect(2, "--from goes with --csv", "submit", good, "--from", "a@b.c")
        self.expect(2, "--html goes with --csv", "submit", good, "--html")
        self.expect(2, "invalid value for --idempotency-key", "submit", good,
                    "--idempotency-key", "x" * 256)
        self.expect(5, "could not reach", "submit", good)
        self.expect(5, "could not reach", "submit", "-", input_text='{"tenant": "acme"}')

    def test_submit_csv_files(self):
        body = self.file("body.txt", "Dear {{name}},\nhello from {{ city }}.\n")
        good = self.file("good.csv", "email,name,city\r\n\"ann@example.org\",\"Smith, Ann\","
                                     "\"Paris\"\r\n")
        csv = ["submit", "--csv"]
        opts = ["--from", "news@acme.example", "--subject", "Hi {{name}}", "--body-file", body]
        self.expect(2, "not both", "submit", good, "--csv", good, *opts)
        self.expect(2, "needs --from ADDR, --subject TEXT and --body TEXT (or --body-file PATH)",
                    *csv, good, "--from", "a@b.c")
        # The body template inline, or from a file: one of them
        inline = ["--from", "news@acme.example", "--subject", "Hi {{name}}", "--body",
                  "Dear {{name}}, hello from {{ city }}."]
        self.expect(2, "from --body TEXT or from --body-file PATH, not both", *csv, good,
                    *inline, "--body-file", body)
        self.expect(2, "the body template (--body) uses the field \"nom\"", *csv, good,
                    *inline[:4], "--body", "Dear {{nom}}")
        self.expect(2, "the body template (--body): ", *csv, good, *inline[:4], "--body",
                    "Dear {{name")
        self.expect(2, "--body goes with --csv PATH", "submit", self.file("j.json", "{}"),
                    "--body", "x")
        self.expect(5, "could not reach", *csv, good, *inline)
        # Standard input is free for the CSV when the body is inline
        with open(good) as f:
            self.expect(5, "could not reach", *csv, "-", *inline, input_text=f.read())
        self.expect(2, "could not open", *csv, os.path.join(self.dir, "none.csv"), *opts)
        cases = {
            "unterminated.csv": ("to,name\nann@example.org,\"Ann\n", 2,
                                 "quoted field not closed"),
            "ragged.csv": ("to,name,city\nann@example.org,Ann,Paris\nbob@example.org,Bob\n",
                           3, "2 fields, the header has 3"),
            "noname.csv": ("to,,city\n", 1, "column 2 of the header has no name"),
            "duplicate.csv": ("to,name,name\n", 1,
                              "column 3 of the header repeats the name \"name\" of column 2"),
            "latin1.csv": (b"to,name,city\nzoe@example.org,Zo\xeb,Paris\n", 2,
                           "invalid UTF-8 (byte 0xEB; save the file as UTF-8)"),
            "nul.csv": (b"to,name,city\nzoe@example.org,Zoe\x00,Paris\n", 2, "NUL byte"),
            "noaddress.csv": ("mail,name,city\nann@example.org,Ann,Paris\n", 1,
                              "no address column"),
            "emptyaddress.csv": ("to,name,city\n,Ann,Paris\n", 2, "empty address"),
            "headeronly.csv": ("to,name,city\n", 1, "no recipients"),
            "empty.csv": ("", 1, "no header row"),
            # One record may hold 1 MiB (FQ_CLI_CSV_RECORD_MAX): a longer
            # line, or a quote left open, is refused at its line
            "longline.csv": ("to,name,city\nann@example.org,Ann,Paris\nbob@example.org,Bob,"
                             + "x" * (1024 * 1024) + "\n", 3,
                             "record longer than 1048576 bytes, the most one record may hold"),
            "openquote.csv": ("to,name,city\nann@example.org,\"Ann,Paris\n"
                              + "bob@example.org,Bob,Paris\n" * 50000, 2,
                              "quoted field runs past 1048576 bytes"),
        }
        for name, (content, line, text) in cases.items():
            path = self.file(name, content)
            self.expect(2, f"{path}:{line}: {text}", *csv, path, *opts)
        # The templates are checked against the columns, with fairqd's parser
        nocity = self.file("nocity.csv", "to,name\nann@example.org,Ann\n")
        self.expect(2, "uses the field \"city\"", *csv, nocity, *opts)
        self.expect(2, "--subject uses the field \"nom\"", *csv, good, *opts[:2], "--subject",
                    "Hi {{nom}}", "--body-file", body)
        self.expect(2, "--subject: ", *csv, good, *opts[:2], "--subject", "Hi {{name",
                    "--body-file", body)
        nul_body = self.file("nul.txt", b"Dear\x00 {{name}}")
        self.expect(2, "NUL byte in the body template", *csv, good, *opts[:4], "--body-file",
                    nul_body)
        self.expect(2, "cannot both be standard input", *csv, "-", *opts[:4], "--body-file", "-")
        self.expect(2, "invalid value for --priority", *csv, good, *opts, "--priority", "5000")
        self.expect(2, "invalid value for --max-attempts", *csv, good, *opts, "--max-attempts",
                    "0")
        self.expect(2, "invalid value for --send-at", *csv, good, *opts, "--send-at", "later")
        self.expect(2, "invalid tenant", *csv, good, *opts, "--tenant", "Big Co")
        # A relative time is turned into a time at each run: with a key, a
        # retry would be another request (422), so it is refused here
        self.expect(2, "--send-at +1h with --idempotency-key", *csv, good, *opts,
                    "--send-at", "+1h", "--idempotency-key", "k1")
        # A good file gets as far as the (missing) server, from stdin too
        self.expect(5, "could not reach", *csv, good, *opts, "--tenant", "acme", "--html",
                    "--send-at", "+1h", "--priority", "3", "--max-attempts", "7")
        self.expect(5, "could not reach", *csv, good, *opts, "--tenant", "acme",
                    "--send-at", "2031-01-02T03:04:05Z", "--idempotency-key", "k1")
        with open(good) as f:
            self.expect(5, "could not reach", *csv, "-", *opts, input_text=f.read())
        # From standard input, a mistake is found before anything is sent too
        self.expect(2, "<stdin>:3: 2 fields, the header has 3", *csv, "-", *opts,
                    input_text="to,name,city\nann@example.org,Ann,Paris\nbob@example.org,Bob\n")

    def test_token_create_moved_to_fairqd(self):
        """fairq speaks HTTP only: the bootstrap token is fairqd's to make,
        on the database host. Whatever follows "token", fairq says so."""
        moved = "\"fairq token create\" moved to fairqd: run \"fairqd token create\" on the " \
                "database host"
        for args in (("token", "create", "--admin"), ("token", "create"), ("token",),
                     ("--json", "token", "create", "--tenant", "acme"),
                     ("token", "create", "--admin", "--database", "dbname=fairq")):
            done = self.expect(2, moved, *args)
            self.assertEqual(done.stdout, "")
            self.assertIn("fairqd token create --help", done.stderr)
        self.assertNotIn("token create", self.expect(0, "Usage: fairq", "--help").stdout)
        # Asked for help, it is help: where the command went, exit 0
        for args in (("token", "--help"), ("token", "-h"), ("token", "create", "--help"),
                     ("--help", "token"), ("token", "create", "--admin", "-h")):
            done = self.expect(0, "Usage: fairqd token create --admin | --tenant NAME", *args)
            self.assertEqual(done.stderr, "")
            self.assertIn("\"fairq token create\" moved to fairqd", done.stdout)
            self.assertIn("fairq tenants token NAME", done.stdout)

    def test_connection_refused(self):
        done = self.expect(5, f"fairq: could not reach {self.url}", "status", "1")
        self.assertEqual(done.stdout, "")
        self.expect(5, "could not reach", "--json", "tenants")
        self.expect(5, "could not reach", "top", "--once")
        # Without a terminal, top prints one snapshot: here, the failure
        self.expect(5, "could not reach", "top")
        # --url wins over FAIRQ_URL, and a trailing / is fine
        port = closed_port()
        self.expect(5, f"could not reach http://127.0.0.1:{port}", "--url",
                    f"http://127.0.0.1:{port}/", "list")
        # events --follow keeps trying for --timeout-s, then gives up with 5
        done = self.expect(5, "could not reach", "--timeout-s", "1", "events", "--follow")
        self.assertEqual(done.stdout, "")
        # status --watch keeps trying for --timeout-s, then gives up with 5
        self.expect(5, "could not reach", "--timeout-s", "1", "status", "7", "--watch",
                    "--interval-s", "0.2")


def main():
    global FAIRQ
    argv = [sys.argv[0]]
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        if args[i] == "--fairq":
            FAIRQ = args[i + 1]
            i += 2
        elif args[i].startswith("--fairq="):
            FAIRQ = args[i].split("=", 1)[1]
            i += 1
        else:
            argv.append(args[i])
            i += 1
    if not os.path.exists(FAIRQ):
        print(f"test_cli_args: fairq not found at {FAIRQ}", file=sys.stderr)
        sys.exit(2)
    unittest.main(argv=argv, verbosity=2)


if __name__ == "__main__":
    main()
