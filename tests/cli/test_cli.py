#!/usr/bin/python3
"""test_cli.py: the real fairq program against a real fairqd, PostgreSQL
and SMTP sink (the e2e harness, tests/e2e/fq_e2e.py), as a user or a
script drives it: submitting JSON and CSV and following the request to
its end, the lifecycle commands, search and retry, tenants and tokens
(the first made by `fairqd token create`, on the database's side), top,
and the exit codes scripts rely on.

fairq runs with its output captured (no terminal), except where a
pseudo-terminal is given to it on purpose (the progress bar, top's live
view). Its token comes from FAIRQ_TOKEN, its URL from FAIRQ_URL.

    test_cli.py --fairqd PATH --sender PATH --admin PATH --sink PATH --fairq PATH
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, free_port  # noqa: E402

FAIRQ = [os.environ.get("FQ_CLI_FAIRQ", "")]

# Short retry delays and a fast slow poll: retries and send_at come due
# within a second (as in tests/e2e/test_delivery.py)
FAIRQD = {"retry_base_ms": 200, "retry_cap_ms": 1000, "poll_ms": 200}

# A small campaign's delivery, and a watch's end (ASan builds, 2 cores)
DELIVERY_TIMEOUT_S = 60

# fairq's exit codes (cli/fq_cli.h)
OK, FAILED, USAGE, NOT_FOUND, AUTH, SERVER, CONFLICT, RATE_LIMITED = range(8)
# fairqd's (fairqd/fq_fairqd.h): its token command fails with 1
FAIRQD_FAILURE = 1

TOKEN = re.compile(r"^fq_[A-Za-z0-9_-]{43}$")
HOUR = 3600

MIB = 1024 * 1024
# fairqd's http_body_max in the large-file tests (its default)
BODY_MAX = 32 * MIB
# The large CSV: far more than BODY_MAX of JSON, and far more than fairq
# may hold (it would take three times the file to hold it whole)
LARGE_CSV_BYTES = 80 * MIB
# The most memory fairq may take for a CSV of any size: its own (libcurl,
# jansson, an ASan build's runtime, some 20 MiB) and a record at a time
CLI_RSS_MAX = 40 * MIB
# Recipients of the CSV the server takes: some 7 MiB of JSON, a hundred
# pieces of what fairq reads and sends at a time
ACCEPTED_RECIPIENTS = 50000
# Generous for a large submission on a loaded 2-core machine
LARGE_TIMEOUT_S = 300


def recipients(n, prefix="user", domain="example.org"):
    return [{"to": f"{prefix}{i}@{domain}", "fields": {"name": f"{prefix}{i}"}}
            for i in range(n)]


def body(tenant="shop", rcpts=None, **fields):
    out = {"tenant": tenant, "from": f"news@{tenant}.test", "subject": "Hi {{name}}",
           "body": "Dear {{name}},\nhello.\n", "recipients": rcpts or recipients(3)}
    out.update(fields)
    return out


class CliTest(E2ETest):

    # -----------------------------------------------------------------
    # Helpers

    def start(self, senders=1, rules=None, tenants=("shop",), **settings):
        h = self.h
        self.sink = h.start_sink(rules=rules)
        h.start_fairqd(**{**FAIRQD, **settings})
        h.wait_schema()
        for name in tenants:
            h.create_tenant(name)
        self.admin = h.make_token()
        h.wait(self._healthy, fq_e2e.START_TIMEOUT_S, "fairqd's /healthz to answer 200")
        for i in range(senders):
            h.start_sender(f"s{i + 1}", self.sink, 16)

    def _healthy(self):
        try:
            return self.h.http("GET", "/healthz", timeout=5)[0] == 200
        except OSError:
            return False

    def env(self, token):
        environ = {k: v for k, v in os.environ.items() if not k.startswith("FAIRQ_")}
        environ["FAIRQ_URL"] = self.h.http_url
        if token:
            environ["FAIRQ_TOKEN"] = token
        return environ

    def fairq(self, *args, expect=OK, token="admin", input_text=None, timeout=120):
        """Runs fairq ARGS with the admin token (or token=, None for none);
        fails unless it exits with expect. Returns the CompletedProcess."""
        if token == "admin":
            token = self.admin
        done = subprocess.run([FAIRQ[0], *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env(token), input=input_text)
        self.check_output(args, done.stdout + done.stderr, token)
        if expect is not None and done.returncode != expect:
            self.fail(f"fairq {' '.join(args)}: exit {done.returncode}, wanted {expect}\n"
                      f"stdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}")
        return done

    def check_output(self, args, text, token):
        """No sanitizer report; and the token fairq was given (not one it
        was asked to make) never shows."""
        self.assertIsNone(fq_e2e.SANITIZER_REPORT.search(text), f"fairq {args}: {text}")
        if token:
            self.assertNotIn(token, text, f"fairq {args} printed its token")

    def fairqd_token(self, *args, expect=OK, env=None):
        """Runs `fairqd token create ARGS` as on the database host; fails
        unless it exits with expect. Returns the CompletedProcess."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith("FAIRQ_")}
        environ.update(env or {})
        done = subprocess.run([self.h.bin["fairqd"], "token", "create", *args],
                              capture_output=True, text=True, timeout=120, env=environ)
        self.assertIsNone(fq_e2e.SANITIZER_REPORT.search(done.stdout + done.stderr),
                          f"fairqd token create {args}: {done.stderr}")
        if done.returncode != expect:
            self.fail(f"fairqd token create {' '.join(args)}: exit {done.returncode}, wanted "
                      f"{expect}\nstdout: {done.stdout}\nstderr: {done.stderr}")
        return done

    def fairq_json(self, *args, **kwargs):
        done = self.fairq("--json", *args, **kwargs)
        try:
            return json.loads(done.stdout)
        except ValueError:
            self.fail(f"fairq --json {' '.join(args)}: not one JSON document: {done.stdout!r}")

    def file(self, name, content):
        path = os.path.join(self.h.dir, name)
        with open(path, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        return path

    def json_file(self, name, document):
        return self.file(name, json.dumps(document))

    def run_on_pty(self, args, token="admin", keys=None, until=None, timeout=60):
        """Runs fairq ARGS with a pseudo-terminal as its stdin and stdout;
        once its output matches until (a regex), types keys (bytes) or
        sends it a signal (a number). Returns (exit code, output, stderr)."""
        if token == "admin":
            token = self.admin
        master, slave = pty.openpty()
        proc = subprocess.Popen([FAIRQ[0], *args], stdin=slave, stdout=slave,
                                stderr=subprocess.PIPE, env=self.env(token), close_fds=True)
        os.close(slave)
        output = b""
        deadline = time.monotonic() + timeout
        typed = keys is None
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.1)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:  # EIO: the other side closed
                        chunk = b""
                    if not chunk and proc.poll() is not None:
                        break
                    output += chunk
                elif proc.poll() is not None:
                    break
                if not typed and until and re.search(until, output.decode("utf-8", "replace")):
                    if isinstance(keys, bytes):
                        os.write(master, keys)
                    else:
                        # A signal, as Ctrl-C sends (the pseudo-terminal is
                        # not fairq's controlling terminal, so ^C would not)
                        proc.send_signal(keys)
                    typed = True
            else:
                proc.kill()
                self.fail(f"fairq {' '.join(args)} on a terminal did not end in {timeout} s:"
                          f" {output[-2000:]!r}")
            code = proc.wait(10)
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stderr = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
        text = output.decode("utf-8", "replace")
        self.check_output(args, text + stderr, token)
        return code, text, stderr

    def large_csv(self, name, rows):
        """A CSV of rows recipients with three columns, written in pieces;
        returns its path and size."""
        path = os.path.join(self.h.dir, name)
        with open(path, "w") as f:
            f.write("email,name,city\n")
            for first in range(0, rows, 10000):
                f.write("".join(f'user{i:08d}@example.org,"Name, {i}",A city of {i % 977}\n'
                                for i in range(first, min(first + 10000, rows))))
        return path, os.path.getsize(path)

    def fairq_measured(self, *args, stdin_path=None):
        """Runs fairq ARGS with the admin token, its standard input fed
        from stdin_path through a pipe (a pipe cannot be read twice, so
        fairq copies it aside). Returns (exit code, stdout, stderr, peak
        resident memory in bytes), the peak from the kernel's accounting
        of the process (wait4's ru_maxrss)."""
        out_path, err_path = (os.path.join(self.h.dir, f"fairq.{n}") for n in ("out", "err"))
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.Popen([FAIRQ[0], *args], env=self.env(self.admin), stdout=out,
                                    stderr=err,
                                    stdin=subprocess.PIPE if stdin_path else subprocess.DEVNULL)
            feeder = None
            if stdin_path:
                def feed():
                    with open(stdin_path, "rb") as f:
                        try:
                            for chunk in iter(lambda: f.read(MIB), b""):
                                proc.stdin.write(chunk)
                        except BrokenPipeError:
                            pass
                    try:
                        proc.stdin.close()
                    except BrokenPipeError:
                        pass
                feeder = threading.Thread(target=feed, daemon=True)
                feeder.start()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if feeder:
                feeder.join(LARGE_TIMEOUT_S)
        with open(out_path) as out, open(err_path) as err:
            stdout, stderr = out.read(), err.read()
        self.check_output(args, stdout + stderr, self.admin)
        return proc.returncode, stdout, stderr, usage.ru_maxrss * 1024

    def wait_message_status(self, message_id, status, timeout=DELIVERY_TIMEOUT_S):
        return self.h.wait(
            lambda: self.fairq_json("message", str(message_id))["status"] == status, timeout,
            f"message {message_id} to be {status}", interval=0.2)

    # -----------------------------------------------------------------
    # Submitting, and following a request to its end

    def test_submit_json_and_watch(self):
        """submit FILE.json (and from stdin, and with an Idempotency-Key);
        status --watch without a terminal prints a line per change and
        exits 0 once every message is sent; --json prints one document."""
        self.start()
        h = self.h
        path = self.json_file("request.json", body(rcpts=recipients(5)))
        done = self.fairq("submit", path)
        # Its recipients are checked as it is split, after the answer
        m = re.match(r"accepted request (\d+) \(shop\): 5 recipients(, none rejected| \(fairqd "
                     r"checks each as it splits the request: \"fairq status \d+\" counts those "
                     r"rejected, \"fairq rejects \d+\" shows them\))\n$", done.stdout)
        self.assertIsNotNone(m, done.stdout)
        rid = int(m.group(1))
        watch = self.fairq("status", str(rid), "--watch", "--interval-s", "0.2",
                           timeout=DELIVERY_TIMEOUT_S * 2)
        lines = watch.stdout.splitlines()
        self.assertTrue(lines, watch.stderr)
        for line in lines:
            self.assertRegex(line, rf"^request {rid} \w+: \d+/5 handled, sent \d+, failed \d+, "
                                   r"dead \d+, pending \d+$")
        self.assertEqual(len(lines), len(set(lines)), "a line printed twice in a row")
        self.assertEqual(lines[-1], f"request {rid} done: 5/5 handled, sent 5, failed 0, "
                                    "dead 0, pending 0")
        self.assertEqual(h.request(rid)["sent"], 5)
        self.assertEqual(len({tuple(r["to"]) for r in self.sink.records()}), 5)

        # For people: one line per field; for scripts: the request object
        shown = self.fairq("status", str(rid)).stdout
        self.assertRegex(shown, r"(?m)^status +done$")
        self.assertRegex(shown, r"(?m)^sent +5$")
        self.assertRegex(shown, r"(?m)^created +\d{4}-\d\d-\d\dT")
        request = self.fairq_json("status", str(rid))
        self.assertEqual((request["id"], request["status"], request["sent"]), (rid, "done", 5))
        # A finished request's watch ends at once; with --json, one document
        request = self.fairq_json("status", str(rid), "--watch")
        self.assertEqual(request["status"], "done")

        # From stdin, with --watch right away, and --json
        request = self.fairq_json("submit", "-", "--watch", input_text=json.dumps(
            body(rcpts=recipients(2, prefix="stdin"))), timeout=DELIVERY_TIMEOUT_S * 2)
        self.assertEqual((request["status"], request["sent"]), ("done", 2))

        # The same Idempotency-Key answers the first request again
        path = self.json_file("again.json", body(rcpts=recipients(1, prefix="idem")))
        first = self.fairq_json("submit", path, "--idempotency-key", "order-42")
        second = self.fairq_json("submit", path, "--idempotency-key", "order-42")
        self.assertEqual(first["id"], second["id"])
        third = self.fairq_json("submit", path, "--idempotency-key", "order-43")
        self.assertNotEqual(first["id"], third["id"])

    def test_submit_csv(self):
        """submit --csv: the header names the fields, the "email" column is
        the address, quoted fields keep their commas, quotes and line
        breaks; the mail that arrives says so."""
        self.start()
        csv = self.file("people.csv",
                        "\ufeffemail,name,note\r\n"
                        "ann@example.org,\"Smith, Ann\",\"said \"\"hi\"\"\"\r\n"
                        "bob@example.org,Bob,\"two\r\nlines\"\r\n"
                        "\r\n"
                        "zoe@example.org,Zo\u00eb,plain\r\n")
        template = self.file("body.html", "<p>Dear {{name}}</p><p>{{{note}}} &amp; {{note}}"
                                          "</p>\n")
        send_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
        request = self.fairq_json("submit", "--csv", csv, "--tenant", "shop", "--from",
                                  "news@shop.test", "--subject", "Hi {{name}}", "--body-file",
                                  template, "--html", "--send-at", send_at, "--priority", "5",
                                  "--max-attempts", "3", "--idempotency-key", "csv-1")
        rid = request["id"]
        self.assertEqual((request["tenant"], request["total"], request["priority"]),
                         ("shop", 3, 5))
        self.fairq("status", str(rid), "--watch", "--interval-s", "0.2",
                   timeout=DELIVERY_TIMEOUT_S * 2)
        records = {r["to"][0]: r for r in self.sink.records()}
        self.assertEqual(set(records), {"ann@example.org", "bob@example.org", "zoe@example.org"})
        self.assertEqual(records["ann@example.org"]["subject"], "Hi Smith, Ann")
        self.assertEqual(records["zoe@example.org"]["subject"], "Hi Zo\u00eb")
        fields = {m["recipient"]: m["fields"] for m in self.h.messages().values()}
        self.assertEqual(fields["ann@example.org"],
                         {"email": "ann@example.org", "name": "Smith, Ann", "note": 'said "hi"'})
        self.assertEqual(fields["bob@example.org"]["note"], "two\r\nlines")
        # The same key and request again: the same request, nothing new
        again = self.fairq_json("submit", "--csv", csv, "--tenant", "shop", "--from",
                                "news@shop.test", "--subject", "Hi {{name}}", "--body-file",
                                template, "--html", "--send-at", send_at, "--priority", "5",
                                "--max-attempts", "3", "--idempotency-key", "csv-1")
        self.assertEqual(again["id"], rid)
        # The same key with another request: refused (422), and said so
        changed = self.fairq("submit", "--csv", csv, "--tenant", "shop", "--from",
                             "news@shop.test", "--subject", "Other {{name}}", "--body-file",
                             template, "--idempotency-key", "csv-1", expect=1)
        self.assertIn("422", changed.stderr)
        # The body template inline, as it is given (later: no delivery waited for)
        inline = self.fairq_json("submit", "--csv", csv, "--tenant", "shop", "--from",
                                 "news@shop.test", "--subject", "Hi {{name}}", "--body",
                                 "Hello {{name}}: {{note}}", "--send-at", "+1h")
        self.assertEqual(inline["total"], 3)
        self.assertEqual(self.h.scalar(f"SELECT body || '|' || body_is_html FROM fairq.requests"
                                       f" WHERE id = {inline['id']}"),
                         "Hello {{name}}: {{note}}|false")

    def test_submit_large_csv_in_bounded_memory(self):
        """submit --csv streams the file: a CSV of 80 MiB, whose JSON is far
        over the server's http_body_max, is refused with the server's 413
        told plainly (exit 1), and fairq's peak memory stays far below the
        file's size; a CSV of 50,000 recipients from a pipe is taken whole,
        in as little memory."""
        self.start(senders=0, http_body_max=BODY_MAX)
        template = self.file("large.txt", "Dear {{name}} of {{city}}\n")
        opts = ["--tenant", "shop", "--from", "news@shop.test", "--subject", "Hi {{name}}",
                "--body-file", template, "--timeout-s", str(LARGE_TIMEOUT_S)]
        rows = LARGE_CSV_BYTES // len("user00000000@example.org,\"Name, 000000\",A city of 00\n")
        path, size = self.large_csv("large.csv", rows)
        self.assertGreaterEqual(size, LARGE_CSV_BYTES * 0.9)
        code, stdout, stderr, rss = self.fairq_measured("submit", "--csv", path, *opts)
        self.note(f"{size / MIB:.1f} MiB CSV ({rows} recipients), refused with 413: "
                  f"fairq's peak RSS {rss / MIB:.1f} MiB")
        self.assertEqual(code, FAILED, stderr)
        self.assertEqual(stdout, "")
        self.assertRegex(stderr, rf"^fairq: {re.escape(path)}: {rows} recipients make a request "
                                 rf"of \d+ bytes, more than the server takes \(.*{BODY_MAX}.*"
                                 r"\(413 payload_too_large\)\); split the file, or raise the "
                                 r"server's http_body_max\n$")
        self.assertLess(rss, CLI_RSS_MAX)
        self.assertLess(CLI_RSS_MAX, size / 2)
        self.assertEqual(self.h.scalar("SELECT count(*) FROM fairq.requests"), "0")

        # Under the limit, from a pipe: every recipient arrives
        path, size = self.large_csv("accepted.csv", ACCEPTED_RECIPIENTS)
        code, stdout, stderr, rss = self.fairq_measured("--json", "submit", "--csv", "-", *opts,
                                                        stdin_path=path)
        self.note(f"{size / MIB:.1f} MiB CSV ({ACCEPTED_RECIPIENTS} recipients) from a pipe, "
                  f"accepted: fairq's peak RSS {rss / MIB:.1f} MiB")
        self.assertEqual(code, OK, stderr)
        request = json.loads(stdout)
        self.assertEqual((request["tenant"], request["total"]), ("shop", ACCEPTED_RECIPIENTS))
        self.assertLess(rss, CLI_RSS_MAX)
        last = ACCEPTED_RECIPIENTS - 1
        self.h.wait(lambda: self.h.scalar(
            f"SELECT count(*) FROM fairq.messages WHERE request_id = {request['id']}")
            == str(ACCEPTED_RECIPIENTS), LARGE_TIMEOUT_S, "the request to be split")
        fields = self.h.scalar(f"SELECT fields::text FROM fairq.messages WHERE recipient = "
                               f"'user{last:08d}@example.org'")
        self.assertEqual(json.loads(fields), {"email": f"user{last:08d}@example.org",
                                              "name": f"Name, {last}",
                                              "city": f"A city of {last % 977}"})

    def test_watch_ends_with_dead_and_rejected(self):
        """A request that finishes with a dead message (550) and a rejected
        recipient: status --watch exits 1 and says so; rejects lists the
        rejected one; search finds the dead one; retry gives it another
        attempt (then 409 once it is no longer dead)."""
        self.start(rules={"rules": [{"match": "doomed", "reply": "550 5.1.1 no such user"}]})
        rcpts = recipients(3) + [{"to": "doomed@example.org", "fields": {"name": "D"}},
                                 {"to": "not an address", "fields": {"name": "X"}}]
        path = self.json_file("r.json", body(rcpts=rcpts))
        rid = self.fairq_json("submit", path, "--idempotency-key", "r-1")["id"]
        watch = self.fairq("status", str(rid), "--watch", "--interval-s", "0.2",
                           expect=FAILED, timeout=DELIVERY_TIMEOUT_S * 2)
        self.assertIn(f"fairq: request {rid} done with 1 dead, 0 cancelled and 1 rejected of 5 "
                      f"(\"fairq rejects {rid}\" shows the rejected)", watch.stderr)
        # Once checked, a submit's answer (here: the same key again) tells
        # the rejected recipients, and where to see them
        done = self.fairq("submit", path, "--idempotency-key", "r-1")
        self.assertEqual(done.stdout, f"accepted request {rid} (shop): 4 recipients, 1 rejected "
                                      f"(\"fairq rejects {rid}\" shows them)\n")
        rejects = self.fairq_json("rejects", str(rid))
        self.assertEqual([(r["position"], r["recipient"]) for r in rejects["rejects"]],
                         [(4, "not an address")])
        table = self.fairq("rejects", str(rid)).stdout.splitlines()
        self.assertRegex(table[0], r"^POSITION +RECIPIENT +REASON$")
        self.assertRegex(table[1], r"^ +4 +not an address +\S")

        dead = self.fairq_json("search", "--request", str(rid), "--status", "dead")["messages"]
        self.assertEqual([m["to"] for m in dead], ["doomed@example.org"])
        self.assertIn("550 5.1.1 no such user", dead[0]["last_error"])
        mid = dead[0]["id"]
        table = self.fairq("search", "--request", str(rid), "--status", "dead").stdout
        self.assertRegex(table, r"^ *ID +REQUEST +TENANT +TO +STATUS +ATTEMPTS")
        self.assertIn("doomed@example.org", table)
        # The errors met, grouped by their codes
        errors = self.fairq_json("errors", "--request", str(rid), "--status", "dead")["errors"]
        self.assertEqual([(e["tenant"], e["code"], e["enhanced"], e["count"], e["dead"])
                          for e in errors], [("shop", "550", "5.1.1", 1, 1)])
        table = self.fairq("errors", "--request", str(rid), "--status", "dead").stdout
        self.assertRegex(table, r"^TENANT +DESTINATION +CODE +ENHANCED +COUNT +FAILED +DEAD "
                                r"+EXAMPLE")
        self.assertRegex(table.splitlines()[1], r"^shop +\S+ +550 +5\.1\.1 +1 +0 +1 +\S")
        # The recipient's server takes it now: the retry delivers it
        self.sink.set_rules({})
        message = self.fairq_json("retry", str(mid))
        self.assertEqual((message["id"], message["status"]), (mid, "failed"))
        self.wait_message_status(mid, "sent")
        done = self.fairq("retry", str(mid), expect=CONFLICT)
        self.assertRegex(done.stderr, r"^fairq: .+\(409 conflict\)\n$")
        self.assertIn("doomed@example.org", {r["to"][0] for r in self.sink.records()})

    def test_bulk_actions(self):
        """messages retry|cancel|reschedule: a dry run counts, the change
        goes in batches and reports its totals, --json gives one document;
        malformed arguments are usage errors before any call, and what
        fairqd refuses is exit 1 with its reason."""
        self.start(rules={"rules": [{"match": "doomed", "reply": "550 5.1.1 no such user"}]})
        rcpts = recipients(2) + [{"to": f"doomed{i}@example.org", "fields": {"name": "D"}}
                                 for i in range(3)]
        rid = self.fairq_json("submit", self.json_file("b.json", body(rcpts=rcpts)))["id"]
        self.fairq("status", str(rid), "--watch", "--interval-s", "0.2", expect=FAILED,
                   timeout=DELIVERY_TIMEOUT_S * 2)
        found = self.fairq_json("search", "--tenant", "shop", "--code", "5.1.1", "--older-than",
                                "0", "--error", "no such")["messages"]
        self.assertEqual(sorted(m["to"] for m in found),
                         [f"doomed{i}@example.org" for i in range(3)])
        dry = self.fairq("messages", "retry", "--tenant", "shop", "--code", "5.1.1",
                         "--dry-run", "--batch", "2")
        self.assertEqual(dry.stdout, "retry would change 3 messages (dry run, 3 batches)\n")
        self.assertEqual(self.fairq_json("messages", "retry", "--request", str(rid), "--error",
                                         "NO SUCH", "--dry-run"),
                         {"action": "retry", "dry_run": True, "matched": 3, "changed": 0,
                          "batches": 2, "complete": True, "next_after": None})
        self.sink.set_rules({})
        done = self.fairq("messages", "retry", "--tenant", "shop", "--code", "550", "--batch", "2")
        self.assertEqual(done.stdout, "retry: 3 messages changed of 3 matched (3 batches)\n")
        self.h.wait(lambda: self.fairq_json("status", str(rid))["sent"] == 5, DELIVERY_TIMEOUT_S,
                    "the retried messages to be delivered", interval=0.2)
        # Nothing left to change
        self.assertEqual(self.fairq("messages", "cancel", "--request", str(rid)).stdout,
                         "cancel: 0 messages changed of 0 matched (1 batches)\n")
        self.assertEqual(self.fairq("messages", "reschedule", "--tenant", "shop",
                                    "--older-than", "0", "--send-at", "+1h").stdout,
                         "reschedule: 0 messages changed of 0 matched (1 batches)\n")
        # The queue's shape: a request for in an hour waits as "later"
        soon = self.fairq_json("submit", self.json_file("s.json", body(
            rcpts=recipients(4), send_at=int(time.time()) + HOUR)))["id"]
        table = self.fairq("shape").stdout.splitlines()
        self.assertRegex(table[0], r"^TENANT +TOTAL +LATER +5 +10 +20 +40 +80 +160 +320 +640 "
                                   r"+1280 +1280\+$")
        self.assertRegex(table[1], r"^TOTAL +4 +4( +0){10}$")
        self.assertRegex(table[2], r"^shop +4 +4( +0){10}$")
        shape = self.fairq_json("shape", "--by-destination", "--tenant", "shop")
        self.assertEqual(shape["shape"], [{"tenant": "shop", "destination": None, "total": 4,
                                           "later": 4, "ages": [0] * 10}])
        self.fairq("cancel", str(soon))
        self.assertEqual(self.fairq_json("shape")["shape"], [])
        self.fairq("shape", "--tenant", "Shop!", expect=USAGE)
        # Usage errors, before any call
        for args in (("messages", "reschedule", "--tenant", "shop"),
                     ("messages", "cancel", "--tenant", "Shop!"),
                     ("messages", "cancel", "--tenant", "shop", "--older-than", "5x"),
                     ("messages", "cancel", "--tenant", "shop", "--older-than", "-1"),
                     ("messages", "cancel", "--tenant", "shop", "--batch", "0"),
                     ("messages", "cancel", "--tenant", "shop", "--status", "lost"),
                     ("messages", "cancel", "--request", "x"),
                     ("messages", "reschedule", "--tenant", "shop", "--send-at", "soon"),
                     ("messages", "cancel", "extra")):
            failed = self.fairq(*args, expect=USAGE)
            self.assertRegex(failed.stderr, r"^fairq[ :]", args)
            self.assertEqual(failed.stdout, "")
        # fairqd's refusals
        wide = self.fairq("messages", "cancel", expect=FAILED)
        self.assertIn("name a message, request, tenant", wide.stderr)
        self.assertIn("code", self.fairq("messages", "cancel", "--tenant", "shop", "--code", "55",
                                         expect=FAILED).stderr)
        self.fairq("messages", "cancel", "--tenant", "nobody", expect=NOT_FOUND)

    # -----------------------------------------------------------------
    # The lifecycle, lists and searches

    def test_lifecycle_list_and_search(self):
        """search by request, address and domain, and every page with
        --all; list with its filters; pause, resume, reschedule, cancel
        (and 409 once the request is finished). No sender: the messages
        stay pending."""
        self.start(senders=0)
        # Due now, but no sender: its messages stay pending
        rcpts = recipients(3) + recipients(2, domain="Other.test")
        rid = self.fairq_json("submit", self.json_file("now.json", body(rcpts=rcpts)))["id"]
        other = self.fairq_json("submit", self.json_file(
            "other.json", body(rcpts=recipients(1, prefix="x"),
                               send_at=int(time.time()) + HOUR)))["id"]

        # Search: every message of the request, by address, by domain
        self.h.wait(lambda: len(self.fairq_json("search", "--request", str(rid))["messages"])
                    == 5, 30, "the request's 5 messages")
        found = self.fairq_json("search", "--to", "USER1@example.org")["messages"]
        self.assertEqual([m["to"] for m in found], ["user1@example.org"])
        found = self.fairq_json("search", "--domain", "other.test")["messages"]
        self.assertEqual(len(found), 2)
        page = self.fairq_json("search", "--request", str(rid), "--limit", "2")
        self.assertEqual(len(page["messages"]), 2)
        self.assertIsNotNone(page["next_after"])
        every = self.fairq_json("search", "--request", str(rid), "--tenant", "shop", "--limit",
                                "2", "--all")
        self.assertEqual(len(every["messages"]), 5)
        self.assertIsNone(every["next_after"])
        ids = [m["id"] for m in every["messages"]]
        self.assertEqual(ids, sorted(set(ids)))
        table = self.fairq("search", "--request", str(rid), "--limit", "2", "--all").stdout
        self.assertEqual(len(table.splitlines()), 6)
        message = self.fairq("message", str(ids[0])).stdout
        self.assertRegex(message, rf"(?m)^message +{ids[0]}$")
        self.assertRegex(message, r"(?m)^status +pending$")

        # Lists: newest first, filtered, limited
        listed = self.fairq_json("list")
        self.assertEqual([r["id"] for r in listed["requests"]][:2], [other, rid])
        listed = self.fairq_json("list", "--tenant", "shop", "--limit", "1")
        self.assertEqual([r["id"] for r in listed["requests"]], [other])
        self.assertEqual(listed["next_before"], other)
        older = self.fairq_json("list", "--before", str(other))
        self.assertEqual([r["id"] for r in older["requests"]], [rid])
        table = self.fairq("list").stdout.splitlines()
        self.assertRegex(table[0], r"^ *ID +TENANT +STATUS +TOTAL +SENT +FAILED +DEAD +PENDING")
        self.assertRegex(table[1], rf"^ *{other} +shop +\w+ +1 ")

        # Pause, resume, reschedule
        self.assertEqual(self.fairq_json("pause", str(rid))["status"], "paused")
        self.assertEqual(self.fairq_json("pause", str(rid))["status"], "paused")  # Again: 0
        self.assertRegex(self.fairq("status", str(rid)).stdout, r"(?m)^status +paused$")
        self.assertNotEqual(self.fairq_json("resume", str(rid))["status"], "paused")
        request = self.fairq_json("reschedule", str(rid), "--priority", "-7", "--send-at",
                                  "+2h")
        self.assertEqual(request["priority"], -7)
        shown = self.fairq("reschedule", str(rid), "--priority", "9").stdout
        self.assertRegex(shown, r"(?m)^priority +9$")

        # Cancel; cancelling again changes nothing; anything else is 409
        self.assertEqual(self.fairq_json("cancel", str(rid))["status"], "cancelled")
        self.assertEqual(self.fairq_json("cancel", str(rid))["status"], "cancelled")
        self.assertEqual(self.fairq_json("list", "--status", "cancelled")["requests"][0]["id"],
                         rid)
        for args in (("pause", str(rid)), ("resume", str(rid)),
                     ("reschedule", str(rid), "--priority", "1")):
            done = self.fairq(*args, expect=CONFLICT)
            self.assertRegex(done.stderr, r"^fairq: .+\(409 conflict\)\n$")
        done = self.fairq("status", str(rid), "--watch", expect=FAILED)
        self.assertIn("cancelled", done.stderr)

    # -----------------------------------------------------------------
    # Tenants, tokens, top

    def test_tenants_tokens_and_top(self):
        """tenants set creates then updates; show and list; a tenant token
        from tenants token sees only its tenant; fairqd token create makes
        tokens straight in the database, which fairq then uses; top --once
        and top on a terminal."""
        self.start(senders=0)
        done = self.fairq("tenants", "set", "newco", "--weight", "3", "--max-inflight", "50",
                          "--submit-rate", "10")
        self.assertIn("tenant newco created", done.stdout)
        self.assertRegex(done.stdout, r"(?m)^weight +3$")
        done = self.fairq("tenants", "set", "newco", "--submit-rate", "none")
        self.assertIn("tenant newco updated", done.stdout)
        tenant = self.fairq_json("tenants", "show", "newco")
        self.assertEqual((tenant["name"], tenant["weight"], tenant["max_inflight"],
                          tenant["submit_rate"]), ("newco", 3, 50, None))
        tenant = self.fairq_json("tenants", "set", "newco", "--weight", "1000")
        self.assertEqual((tenant["weight"], tenant["max_inflight"]), (1000, 50))
        names = [t["name"] for t in self.fairq_json("tenants")["tenants"]]
        self.assertEqual(sorted(names), ["newco", "shop"])
        table = self.fairq("tenants").stdout.splitlines()
        self.assertRegex(table[0], r"^NAME +WEIGHT +MAX INFLIGHT +SUBMIT RATE +MAX SEND RATE +"
                                   r"DAILY QUOTA +SENT TODAY +OPEN +DEPTH")
        shown = self.fairq("tenants", "show", "shop").stdout
        self.assertRegex(shown, r"(?m)^tenant +shop$")
        self.assertRegex(shown, r"(?m)^oldest +(-|\d+s)$")

        # A tenant token, printed alone; it sees its own tenant only
        token = self.fairq("tenants", "token", "newco").stdout.strip()
        self.assertRegex(token, TOKEN)
        answer = self.fairq_json("tenants", "token", "newco")
        self.assertEqual(answer["tenant"], "newco")
        self.assertRegex(answer["token"], TOKEN)
        names = [t["name"] for t in self.fairq_json("tenants", token=token)["tenants"]]
        self.assertEqual(names, ["newco"])
        rid = self.fairq_json("submit", self.json_file("own.json", {
            "from": "a@newco.test", "subject": "Hi", "body": "Hi {{name}}",
            "recipients": recipients(1), "send_at": int(time.time()) + HOUR}),
            token=token)["id"]
        self.assertEqual(self.fairq_json("status", str(rid), token=token)["tenant"], "newco")
        # Due now, no sender: shop's three messages wait (its depth is 3)
        shop = self.fairq_json("submit", self.json_file("shop.json", body()))["id"]
        # Another tenant's request is "not found"; admin routes forbidden
        self.fairq("status", str(shop), token=token, expect=NOT_FOUND)
        done = self.fairq("tenants", "set", "newco", "--weight", "2", token=token, expect=AUTH)
        self.assertIn("403", done.stderr)
        self.fairq("tenants", "token", "shop", token=token, expect=AUTH)

        # Tokens are listed by id, and one is revoked by its id
        listed = self.fairq("tenants", "tokens", "newco").stdout
        ids = re.findall(r"(?m)^ *(\d+) ", listed)
        self.assertEqual(len(ids), 2, listed)
        self.assertNotIn(token, listed)
        mine = self.fairq_json("tenants", "tokens", "newco")["tokens"]
        self.assertEqual([str(t["id"]) for t in mine], ids)
        done = self.fairq("tenants", "revoke", "newco", ids[0])
        self.assertIn(f"token {ids[0]} of tenant newco revoked", done.stdout)
        self.fairq("tenants", token=token, expect=AUTH)
        self.fairq("tenants", "revoke", "newco", ids[0], expect=NOT_FOUND)
        self.fairq("tenants", "revoke", "newco", "x1", expect=USAGE)

        # Bootstrap tokens, straight into the database by fairqd (the
        # database from a flag, then from the environment); fairq uses them
        database = f"dbname={self.h.dbname}"
        done = self.fairqd_token("--admin", "--database", database)
        self.assertEqual(done.stderr, "")  # the schema is there: nothing applied
        admin = done.stdout.strip()
        self.assertEqual(done.stdout, admin + "\n")
        self.assertRegex(admin, TOKEN)
        self.assertEqual(len(self.fairq_json("tenants", token=admin)["tenants"]), 2)
        done = self.fairqd_token("--tenant", "shop", "--json",
                                 env={"FAIRQ_DATABASE": database})
        answer = json.loads(done.stdout)
        self.assertEqual(answer["tenant"], "shop")
        self.assertEqual([t["name"] for t in
                          self.fairq_json("tenants", token=answer["token"])["tenants"]], ["shop"])
        done = self.fairqd_token("--tenant", "nosuch", "--database", database,
                                 expect=FAIRQD_FAILURE)
        self.assertIn("no tenant \"nosuch\"", done.stderr)
        # fairq itself makes none: it points to fairqd (and says so when asked)
        done = self.fairq("token", "create", "--admin", token=None, expect=USAGE)
        self.assertIn("run \"fairqd token create\" on the database host", done.stderr)
        done = self.fairq("token", "--help", token=None)
        self.assertIn("Run \"fairqd token create\" on a host that reaches the", done.stdout)

        # top: a snapshot without a terminal, busiest first
        self.h.wait(lambda: self.fairq_json("tenants", "show", "shop")["depth"] == 3, 30,
                    "shop's 3 messages to wait")
        done = self.fairq("top", "--once")
        lines = done.stdout.splitlines()
        self.assertRegex(lines[0], r"^2 tenants  depth \d+  in flight \d+ ")
        self.assertRegex(lines[0], r" 0\.0/s \(1m\)  open requests ")
        # One reading: the minute's rate only, its window said
        self.assertRegex(lines[1], r"^TENANT +WEIGHT +DEPTH +IN FLIGHT +MAX +FAILED +"
                                   r"RATE/S \(1m\) +OLDEST")
        self.assertRegex(lines[2], r"^shop +1 +3 ", lines)
        self.assertRegex(lines[3], r"^newco +1000 +0 ", lines)
        # The same snapshot without a terminal; the ages (OLDEST) may have
        # ticked a second on between the two
        def ages_masked(text):
            return re.sub(r" \d+s ", " Ns ", text)
        self.assertEqual(ages_masked(self.fairq("top").stdout), ages_masked(done.stdout))
        top = self.fairq_json("top", "--once")
        self.assertEqual(sorted(t["name"] for t in top["tenants"]), ["newco", "shop"])
        # top on a terminal: redrawn in place until q, the terminal put back;
        # the rate now over 5 s of refreshes (from /metrics: no sender, 0.0)
        # beside the minute's, once two readings are in
        code, screen, stderr = self.run_on_pty(
            ["top", "--interval-s", "0.2"], keys=b"q",
            until=r"(?s)TENANT.*shop +1 +3 +0 +\d+ +0 +0\.0 +0\.0 .*TENANT.*shop")
        self.assertEqual(code, OK, stderr)
        self.assertRegex(screen, r"FAILED +RATE/S \(5s\) +RATE/S \(1m\) +OLDEST")
        self.assertRegex(screen, r"in flight \d+  0\.0/s \(5s\), 0\.0/s \(1m\)  open")
        self.assertNotIn("rate now needs", screen)
        self.assertIn("\x1b[?1049h", screen)
        self.assertTrue(screen.endswith("\x1b[?25h\x1b[?1049l"), repr(screen[-100:]))
        self.assertGreaterEqual(screen.count("fairq top"), 2)
        # ... and until Ctrl-C
        code, screen, stderr = self.run_on_pty(["top"], keys=signal.SIGINT, until=r"TENANT")
        self.assertEqual(code, OK, stderr)
        self.assertTrue(screen.endswith("\x1b[?1049l"), repr(screen[-100:]))
        # A tenant's token may not read /metrics: the minute's rate only, and why
        code, screen, stderr = self.run_on_pty(["top", "--interval-s", "0.2"], keys=b"q",
                                               token=answer["token"],
                                               until=r"(?s)TENANT.*shop.*TENANT.*shop")
        self.assertEqual(code, OK, stderr)
        self.assertIn("(rate now needs /metrics: an admin token, or metrics_public)", screen)
        self.assertRegex(screen, r"FAILED +RATE/S \(1m\) +OLDEST")
        self.assertNotIn("(5s)", screen)

    def test_tenant_send_budgets(self):
        """tenants set --max-send-rate and --daily-quota set a tenant's
        send budget, keep it when left out and remove it with none; show
        and the list print it with what the quota counted today; a bad
        rate or quota is a usage error (2) before any call; a tenant token
        may not change it (4)."""
        self.start(senders=0)
        done = self.fairq("tenants", "set", "newco", "--max-send-rate", "100/s",
                          "--daily-quota", "50000")
        self.assertIn("tenant newco created", done.stdout)
        self.assertRegex(done.stdout, r"(?m)^max send rate +100/s$")
        self.assertRegex(done.stdout, r"(?m)^daily quota +50000$")
        self.assertRegex(done.stdout, r"(?m)^sent today +0$")
        tenant = self.fairq_json("tenants", "show", "newco")
        self.assertEqual((tenant["max_send_rate"], tenant["daily_quota"], tenant["sent_today"]),
                         ("100/s", 50000, 0))
        # Any unit, written back in its canonical form; what is left out stays
        tenant = self.fairq_json("tenants", "set", "newco", "--max-send-rate", "5/m")
        self.assertEqual((tenant["max_send_rate"], tenant["daily_quota"]), ("5/min", 50000))
        tenant = self.fairq_json("tenants", "set", "newco", "--weight", "2")
        self.assertEqual((tenant["max_send_rate"], tenant["daily_quota"]), ("5/min", 50000))
        tenant = self.fairq_json("tenants", "set", "newco", "--daily-quota", "1000000000000",
                                 "--max-send-rate", "1000/day")
        self.assertEqual((tenant["max_send_rate"], tenant["daily_quota"]),
                         ("1000/d", 1000000000000))
        # The leader's count of today, as fairqd recorded it
        tid = self.h.scalar("SELECT id FROM fairq.tenants WHERE name = 'newco'")
        self.h.sql(f"SELECT fairq.reserve_sends({tid}, (now() AT TIME ZONE 'UTC')::date,"
                   " 20, 1000000000000, 12)")
        shown = self.fairq("tenants", "show", "newco").stdout
        self.assertRegex(shown, r"(?m)^max send rate +1000/d$")
        self.assertRegex(shown, r"(?m)^daily quota +1000000000000$")
        self.assertRegex(shown, r"(?m)^sent today +12$")
        table = self.fairq("tenants").stdout.splitlines()
        self.assertRegex(table[0], r"^NAME +WEIGHT +MAX INFLIGHT +SUBMIT RATE +MAX SEND RATE +"
                                   r"DAILY QUOTA +SENT TODAY +OPEN ")
        rows = {line.split()[0]: line.split() for line in table[1:]}
        self.assertEqual(rows["newco"][:7], ["newco", "2", "1000", "-", "1000/d",
                                             "1000000000000", "12"], table)
        self.assertEqual(rows["shop"][4:7], ["-", "-", "0"], table)

        # Usage errors, before any call: fairqd has no way to see them
        for args, words in (
                (["--max-send-rate", "5/fortnight"],
                 '--max-send-rate: rate "5/fortnight": unknown unit "fortnight"'),
                (["--max-send-rate", "0/s"], '--max-send-rate: rate "0/s": count "0"'),
                (["--max-send-rate", "100"], '--max-send-rate: rate "100": no unit'),
                (["--max-send-rate", ""], '--max-send-rate: rate "": empty'),
                (["--max-send-rate", "None"], '--max-send-rate: rate "None"'),
                (["--max-send-rate", "1000000001/s"], 'rate "1000000001/s": count'),
                (["--daily-quota", "0"], "invalid value for --daily-quota (or none): \"0\""),
                (["--daily-quota", "-1"], "invalid value for --daily-quota"),
                (["--daily-quota", "1000000000001"], "(an integer in 1..1000000000000)"),
                (["--daily-quota", "lots"], "invalid value for --daily-quota"),
                (["--daily-quota", "1e6"], "invalid value for --daily-quota"),
                (["--weight", "2", "--daily-quota", "NONE"], "invalid value for --daily-quota")):
            done = self.fairq("tenants", "set", "newco", *args, expect=USAGE)
            self.assertIn(words, done.stderr)
        self.fairq("tenants", "set", "newco", "--max-send-rate", expect=USAGE)
        tenant = self.fairq_json("tenants", "show", "newco")
        self.assertEqual((tenant["weight"], tenant["max_send_rate"], tenant["daily_quota"]),
                         (2, "1000/d", 1000000000000))

        # A tenant may read its budget, not change it
        token = self.fairq("tenants", "token", "newco").stdout.strip()
        self.assertEqual(self.fairq_json("tenants", "show", "newco", token=token)["sent_today"],
                         12)
        for args in (["--max-send-rate", "1000000/s"], ["--daily-quota", "none"]):
            done = self.fairq("tenants", "set", "newco", *args, token=token, expect=AUTH)
            self.assertIn("403", done.stderr)

        # none removes each, the one without the other
        tenant = self.fairq_json("tenants", "set", "newco", "--max-send-rate", "none")
        self.assertEqual((tenant["max_send_rate"], tenant["daily_quota"]),
                         (None, 1000000000000))
        done = self.fairq("tenants", "set", "newco", "--daily-quota", "none")
        self.assertIn("tenant newco updated", done.stdout)
        self.assertRegex(done.stdout, r"(?m)^max send rate +-$")
        self.assertRegex(done.stdout, r"(?m)^daily quota +-$")
        self.assertEqual(self.h.sql("SELECT send_rate_count, send_rate_period_s, daily_quota,"
                                    " weight FROM fairq.tenants WHERE name = 'newco'"),
                         [["", "", "", "2"]])

    def test_destinations(self):
        """destinations set creates, then changes only what its options
        name (a read, then a PUT of the whole); show and the list; usage
        errors before any call; a domain of another destination is a
        conflict (6); delete, and default never; tenants may not (4); top
        on a terminal shows no line for destinations that are idle."""
        self.start(senders=0)
        table = self.fairq("destinations").stdout.splitlines()
        self.assertRegex(table[0], r"^NAME +RATE +BURST +MAX INFLIGHT +STATE +RATE NOW +READY +"
                                   r"IN FLIGHT +SENT +DEFERRED +THROTTLED +DOMAINS$")
        self.assertRegex(table[1], r"^default +none +- +none +open +none +0 +0 +0 +0 +0 +-$")
        done = self.fairq("destinations", "set", "google", "--rate", "100/s", "--burst", "200",
                          "--max-inflight", "50", "--domains", "GMail.com,googlemail.com")
        self.assertIn("destination google created", done.stdout)
        self.assertRegex(done.stdout, r"(?m)^rate +100/s$")
        self.assertRegex(done.stdout, r"(?m)^domains +gmail\.com,googlemail\.com$")
        # Only what is named changes
        google = self.fairq_json("destinations", "set", "google", "--max-inflight", "none")
        self.assertEqual((google["rate"], google["burst"], google["max_inflight"],
                          google["domains"]), ("100/s", 200, None, ["gmail.com", "googlemail.com"]))
        google = self.fairq_json("destinations", "set", "google", "--rate", "5/min")
        self.assertEqual((google["rate"], google["burst"]), ("5/min", 200))
        done = self.fairq("destinations", "set", "google", "--burst", "default")
        self.assertIn("destination google updated", done.stdout)
        self.assertRegex(done.stdout, r"(?m)^burst +1 \(the rate's default\)$")
        # No rate, no burst
        self.fairq("destinations", "set", "google", "--burst", "300")
        google = self.fairq_json("destinations", "set", "google", "--rate", "none")
        self.assertEqual((google["rate"], google["burst"]), (None, None))
        google = self.fairq_json("destinations", "show", "google")
        self.assertEqual(google["domains"], ["gmail.com", "googlemail.com"])
        shown = self.fairq("destinations", "show", "google").stdout
        self.assertRegex(shown, r"(?m)^destination +google$")
        self.assertRegex(shown, r"(?m)^state +open$")
        names = [d["name"] for d in self.fairq_json("destinations")["destinations"]]
        self.assertEqual(names, ["default", "google"])
        self.assertRegex(self.fairq("destinations").stdout,
                         r"(?m)^google +none +- +none +open +none +0 .* "
                         r"gmail\.com,googlemail\.com$")

        # Usage errors, before any call
        for args, words in ((["--rate", "5/fortnight"], "--rate: rate \"5/fortnight\""),
                            (["--burst", "0"], "--burst"),
                            (["--max-inflight", "lots"], "--max-inflight")):
            done = self.fairq("destinations", "set", "google", *args, expect=USAGE)
            self.assertIn(words, done.stderr)
        self.fairq("destinations", "set", "Google", expect=USAGE)
        self.fairq("destinations", "show", "Bad Name", expect=USAGE)
        # The API's refusals: a domain of another (6), a bad domain (1)
        done = self.fairq("destinations", "set", "mine", "--domains", "gmail.com",
                          expect=CONFLICT)
        self.assertIn("domain \"gmail.com\" belongs to destination \"google\"", done.stderr)
        done = self.fairq("destinations", "set", "mine", "--domains", "bad_domain",
                          expect=FAILED)
        self.assertIn("domains[0]", done.stderr)
        self.fairq("destinations", "show", "mine", expect=NOT_FOUND)
        done = self.fairq("destinations", "set", "default", "--domains", "a.example",
                          expect=FAILED)
        self.assertIn("takes none", done.stderr)

        # A tenant may not
        token = self.fairq("tenants", "token", "shop").stdout.strip()
        self.fairq("destinations", token=token, expect=AUTH)
        self.fairq("destinations", "set", "google", "--rate", "1/s", token=token, expect=AUTH)

        # Idle destinations take no line of top
        code, screen, stderr = self.run_on_pty(["top", "--interval-s", "0.2"], keys=b"q",
                                               until=r"(?s)TENANT.*TENANT")
        self.assertEqual(code, OK, stderr)
        self.assertNotIn("destination ", screen)

        done = self.fairq("destinations", "delete", "google")
        self.assertIn("destination google deleted", done.stdout)
        self.fairq("destinations", "delete", "google", expect=NOT_FOUND)
        done = self.fairq("destinations", "delete", "default", expect=FAILED)
        self.assertIn("cannot be deleted", done.stderr)

    def test_suppressions(self):
        """suppressions: add (in any case, again leaves it as it was), the
        list a page at a time with its counts, remove (3 when not there),
        import a file or stdin (1 when a line was refused, each shown as
        FILE:LINE), the global list admin-only (4), another tenant's list
        not found (3); a suppressed recipient is refused at split."""
        self.start(senders=0, tenants=("shop", "other"))
        done = self.fairq("suppressions", "add", "Bob@Example.com", "ann@example.com",
                          "--tenant", "shop", "--detail", "asked by phone")
        self.assertEqual(done.stdout, "bob@example.com added to the list of tenant shop\n"
                                      "ann@example.com added to the list of tenant shop\n")
        done = self.fairq("suppressions", "add", "BOB@example.com", "--tenant", "shop")
        self.assertRegex(done.stdout, r"^bob@example\.com was on the list of tenant shop already "
                                      r"\(manual, since \d{4}-\d\d-\d\dT[\d:]+Z\)\n$")
        entry = self.fairq_json("suppressions", "add", "cy@example.com", "--tenant", "shop")
        self.assertEqual((entry["address"], entry["reason"], entry["detail"]),
                         ("cy@example.com", "manual", None))

        done = self.fairq("suppressions", "--tenant", "shop")
        lines = done.stdout.splitlines()
        self.assertRegex(lines[0], r"^ADDRESS +REASON +CREATED +DETAIL$")
        self.assertRegex(lines[1], r"^ann@example\.com +manual +\d{4}-\S+Z +asked by phone$")
        self.assertEqual([line.split()[0] for line in lines[1:]],
                         ["ann@example.com", "bob@example.com", "cy@example.com"])
        self.assertIn("the list of tenant shop holds 3: manual 3, bounce 0, complaint 0, "
                      "unsubscribe 0", done.stderr)
        done = self.fairq("suppressions", "list", "--tenant", "shop", "--limit", "2")
        self.assertEqual(len(done.stdout.splitlines()), 3)
        self.assertIn("(more: --after bob@example.com)", done.stderr)
        page = self.fairq_json("suppressions", "--tenant", "shop", "--after", "BOB@example.com")
        self.assertEqual(([e["address"] for e in page["suppressions"]], page["next"]),
                         (["cy@example.com"], None))
        self.assertEqual(self.fairq("suppressions", "--tenant", "other").stdout, "")

        done = self.fairq("suppressions", "remove", "CY@example.com", "--tenant", "shop")
        self.assertEqual(done.stdout, "CY@example.com removed from the list of tenant shop\n")
        done = self.fairq("suppressions", "remove", "cy@example.com", "--tenant", "shop",
                          expect=NOT_FOUND)
        self.assertIn('"cy@example.com" is not on the suppression list of tenant "shop"',
                      done.stderr)
        self.assertEqual(self.fairq("--json", "suppressions", "remove", "ann@example.com",
                                    "--tenant", "shop").stdout, "")
        # The API's refusals: exit 1 with its words
        done = self.fairq("suppressions", "add", "bob@localhost", "--tenant", "shop",
                          expect=FAILED)
        self.assertIn('invalid address "bob@localhost": address domain is not a dotted name',
                      done.stderr)

        # Imports: a file with a bad line (exit 1), stdin, a clean one (0)
        path = self.file("list.csv", "name,Email\nDan,dan@example.com\nBad,nobody\n"
                                     "Bob,BOB@example.com\nEve,eve@example.com\n")
        done = self.fairq("suppressions", "import", path, "--tenant", "shop", expect=FAILED)
        self.assertEqual(done.stdout, "2 added to the list of tenant shop, 1 on it already, "
                                      "1 lines refused\n")
        self.assertIn(f'{path}:3: "nobody": address is not local@domain', done.stderr)
        result = self.fairq_json("suppressions", "import", "-", "--global",
                                 input_text="gus@example.com\nhal@example.com\n")
        self.assertEqual((result["added"], result["already"], result["refused_count"]),
                         (2, 0, 0))
        done = self.fairq("suppressions", "import", "-", "--global", input_text="gus@example.com")
        self.assertEqual(done.stdout, "0 added to the global list, 1 on it already, "
                                      "0 lines refused\n")
        done = self.fairq("suppressions", "import", self.file("empty.csv", ""), "--global",
                          expect=FAILED)
        self.assertIn("the body is empty", done.stderr)
        self.assertEqual([e["address"] for e in self.fairq_json(
            "suppressions", "--global")["suppressions"]], ["gus@example.com", "hal@example.com"])

        # A tenant's token: its own list; another's is not found, the
        # global one not allowed
        token = self.fairq("tenants", "token", "shop").stdout.strip()
        self.fairq("suppressions", "add", "ivy@example.com", "--tenant", "shop", token=token)
        done = self.fairq("suppressions", "--tenant", "other", token=token, expect=NOT_FOUND)
        self.assertIn('could not read tenant: "other" does not exist', done.stderr)
        done = self.fairq("suppressions", "--global", token=token, expect=AUTH)
        self.assertIn("this needs an admin token", done.stderr)
        self.fairq("suppressions", "remove", "gus@example.com", "--global", token=token,
                   expect=AUTH)
        self.fairq("suppressions", "import", "-", "--global", token=token, expect=AUTH,
                   input_text="x@example.com\n")

        # At split: the suppressed recipient is a reject, "suppressed"
        rid = self.fairq_json("submit", self.json_file("suppressed.json", body(rcpts=[
            {"to": "Dan@Example.com", "fields": {"name": "Dan"}},
            {"to": "new@example.com", "fields": {"name": "New"}},
            {"to": "hal@example.com", "fields": {"name": "Hal"}}])), token=token)["id"]
        rejects = self.h.wait(lambda: (lambda r: r if len(r) == 2 else None)(
            self.fairq_json("rejects", str(rid), token=token)["rejects"]), 30,
            f"request {rid}'s two suppressed recipients to be refused at split")
        self.assertEqual([(r["recipient"], r["reason"]) for r in rejects],
                         [("Dan@Example.com", "suppressed"), ("hal@example.com", "suppressed")])

    def test_events(self):
        """events: one line each, oldest first, escaped; its filters; a
        page's cursor with --after, and --json; a tenant's token its own
        tenant only (exit 3 for another's); --follow printing what comes,
        one JSON object a line with --json, until SIGINT (exit 0). The
        events are written by SQL; the request is due in an hour, so the
        pipeline writes none meanwhile."""
        self.start(senders=0, tenants=("shop", "other"))
        h = self.h
        rid = self.fairq_json("submit", self.json_file("later.json", body(
            send_at=int(time.time()) + HOUR)))["id"]
        tenant = {t: h.scalar(f"SELECT id FROM fairq.tenants WHERE name = '{t}'")
                  for t in ("shop", "other")}

        def insert(name, request, message, kind, recipient, detail):
            return int(h.scalar(
                "INSERT INTO fairq.events (tenant_id, request_id, message_id, type, recipient,"
                f" detail) VALUES ({tenant[name]}, {request or 'NULL'}, {message or 'NULL'},"
                f" {fq_e2e.lit(kind)}, {fq_e2e.lit(recipient) if recipient else 'NULL'},"
                f" {fq_e2e.lit(detail) if detail else 'NULL'}) RETURNING id"))
        ids = [insert("shop", rid, 11, "message.sent", "ann@example.org", None),
               insert("other", None, None, "request.done", None, None),
               insert("shop", rid, 12, "message.deferred", "bob@example.org",
                      "451 4.7.1 try\nlater"),
               insert("shop", rid, None, "request.split", None, None),
               insert("other", None, 99, "message.dead", "eve@example.org", "550 no")]

        lines = self.fairq("events").stdout.splitlines()
        self.assertEqual(len(lines), 5, lines)
        for line, kind in zip(lines, ("message.sent", "request.done", "message.deferred",
                                      "request.split", "message.dead")):
            self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  " + re.escape(kind))
        # The time, type, tenant, request, message, recipient and detail;
        # "-" for none, a line break of the detail escaped
        # (the type's column as wide as the longest type, message.unsubscribed)
        self.assertTrue(lines[2].endswith(
            f"  {'message.deferred':<20}  shop  {rid}  12  bob@example.org  451 4.7.1 try\\nlater"),
            lines[2])
        self.assertTrue(lines[1].endswith(f"  {'request.done':<20}  other  -  -  -  -"), lines[1])
        done = self.fairq("events", "--tenant", "shop", "--type", "message.deferred")
        self.assertEqual(done.stdout, lines[2] + "\n")
        self.assertEqual(self.fairq("events", "--request", str(rid)).stdout.splitlines(),
                         [lines[0], lines[2], lines[3]])
        self.assertEqual(self.fairq("events", "--type", "request.cancelled").stdout, "")

        # A page's cursor: --after goes on from it, none twice
        page = self.fairq_json("events", "--limit", "2")
        self.assertEqual([e["id"] for e in page["events"]], ids[:2])
        done = self.fairq("events", "--limit", "2")
        self.assertIn(f"(more: --after {page['next']}, or --follow)", done.stderr)
        rest = self.fairq_json("events", "--after", page["next"])
        self.assertEqual([e["id"] for e in rest["events"]], ids[2:])
        end = self.fairq_json("events", "--after", rest["next"])
        self.assertEqual((end["events"], end["next"]), ([], rest["next"]))
        # A cursor the server refuses (its id beyond 63 bits): exit 1
        done = self.fairq("events", "--after", "1-99999999999999999999", expect=FAILED)
        self.assertIn("is not a cursor", done.stderr)

        # A tenant's token: its own events; another tenant's are not found
        shop = h.make_token("shop")
        self.assertEqual(self.fairq("events", token=shop).stdout.splitlines(),
                         [lines[0], lines[2], lines[3]])
        done = self.fairq("events", "--tenant", "other", token=shop, expect=NOT_FOUND)
        self.assertIn('"other" does not exist', done.stderr)

        # --follow: what is there, then what comes, until interrupted
        proc = subprocess.Popen([FAIRQ[0], "--json", "events", "--tenant", "shop", "--follow"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.env(self.admin))
        out = b""

        def read_lines(count, timeout=30):
            nonlocal out
            deadline = time.monotonic() + timeout
            while out.count(b"\n") < count and time.monotonic() < deadline:
                ready, _, _ = select.select([proc.stdout], [], [], 0.2)
                if ready:
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    out += chunk
            return [json.loads(line) for line in out.decode().splitlines()]
        try:
            self.assertEqual([e["id"] for e in read_lines(3)], [ids[0], ids[2], ids[3]])
            insert("other", None, None, "request.done", None, None)
            late = insert("shop", rid, 13, "message.dead", "cy@example.org", "550 gone")
            events = read_lines(4)
            self.assertEqual([e["id"] for e in events], [ids[0], ids[2], ids[3], late])
            self.assertEqual((events[3]["type"], events[3]["detail"]),
                             ("message.dead", "550 gone"))
            time.sleep(1.5)  # A poll or so more: nothing else comes
            proc.send_signal(signal.SIGINT)
            self.assertEqual(proc.wait(10), OK)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stderr = proc.stderr.read().decode()
        proc.stdout.close()
        proc.stderr.close()
        self.assertEqual(len(read_lines(4, timeout=0)), 4)
        self.check_output(("events", "--follow"), out.decode() + stderr, self.admin)

    def test_progress_bar_on_a_terminal(self):
        """status --watch on a terminal redraws one line in place: a bar,
        the counters, the rate, the ETA; then the request's summary."""
        self.start()
        rid = self.fairq_json("submit", self.json_file(
            "bar.json", body(rcpts=recipients(20))))["id"]
        code, screen, stderr = self.run_on_pty(["status", str(rid), "--watch", "--interval-s",
                                                "0.1"], timeout=DELIVERY_TIMEOUT_S * 2)
        self.assertEqual(code, OK, stderr)
        self.assertIn("\r[", screen)
        self.assertIn("\x1b[K", screen)
        self.assertRegex(screen, r"\[#+\] 100%  sent 20  failed 0  dead 0  pending 0 ")
        self.assertIn(f"request {rid} (shop) done: total 20, sent 20", screen)

    # -----------------------------------------------------------------
    # Exit codes

    def test_exit_codes(self):
        """404 is 3, 401 and 403 are 4, 409 is 6 (above), 429 is 7, a 400
        is 1 with the API's detail, a refused connection is 5, bad usage
        is 2, health is 0; errors on stderr as "fairq: ...", stdout empty."""
        self.start(senders=0)
        done = self.fairq("status", "999999", expect=NOT_FOUND)
        self.assertRegex(done.stderr, r"^fairq: .+\(404 not_found\)\n$")
        self.assertEqual(done.stdout, "")
        self.fairq("--json", "message", "999999", expect=NOT_FOUND)
        self.fairq("tenants", "show", "nosuch", expect=NOT_FOUND)
        self.fairq("retry", "999999", expect=NOT_FOUND)

        bad = "fq_" + "A" * 43
        done = self.fairq("list", token=bad, expect=AUTH)
        self.assertRegex(done.stderr, r"^fairq: .+\(401 unauthorized\)\n$")
        done = self.fairq("list", token=None, expect=AUTH)
        self.assertIn("no token given (--token or FAIRQ_TOKEN)", done.stderr)
        # --token wins over FAIRQ_TOKEN
        self.fairq("--token", self.admin, "list", token=bad)
        self.fairq("--token", bad, "list", expect=AUTH)

        # A body fairqd refuses: 1, with its detail
        done = self.fairq("submit", self.json_file("unknown.json", body(colour="red")),
                          expect=FAILED)
        self.assertRegex(done.stderr, r"^fairq: .*colour.*\(400 bad_request\)\n$")

        # The tenant's submit_rate holds its tokens (not an admin's): the
        # second submit in the minute is 429
        self.fairq("tenants", "set", "shop", "--submit-rate", "1")
        token = self.fairq("tenants", "token", "shop").stdout.strip()
        path = self.json_file("rate.json", body(send_at=int(time.time()) + HOUR))
        self.fairq("submit", path, token=token)
        done = self.fairq("submit", path, token=token, expect=RATE_LIMITED)
        self.assertRegex(done.stderr, r"\(429 rate_limited\); retry after \d+ s\n$")

        # health needs no token
        done = self.fairq("health", token=None)
        self.assertEqual(done.stdout, "ok (database ok)\n")
        self.assertEqual(self.fairq_json("health", token=None)["database"], "ok")

        # Nobody at that port: 5; a usage error: 2, before anything is sent
        environ_url = f"http://127.0.0.1:{free_port()}"
        done = self.fairq("--url", environ_url, "status", "1", expect=SERVER)
        self.assertIn(f"fairq: could not reach {environ_url}", done.stderr)
        self.fairq("--url", environ_url, "health", expect=SERVER)
        self.fairq("status", "abc", expect=USAGE)
        self.fairq("list", "--limit", "5000", expect=USAGE)
        self.fairq("tenants", "set", "shop", "--weight", "0", expect=USAGE)


def main():
    """Takes --fairq PATH off the command line; the harness takes the rest."""
    args = sys.argv[1:]
    rest = [sys.argv[0]]
    i = 0
    while i < len(args):
        if args[i] == "--fairq":
            FAIRQ[0] = args[i + 1]
            i += 2
        elif args[i].startswith("--fairq="):
            FAIRQ[0] = args[i].split("=", 1)[1]
            i += 1
        else:
            rest.append(args[i])
            i += 1
    if not FAIRQ[0] or not os.path.exists(FAIRQ[0]):
        print(f"test_cli: fairq not found at {FAIRQ[0]!r} (--fairq PATH)", file=sys.stderr)
        sys.exit(2)
    sys.argv = rest
    fq_e2e.main()


if __name__ == "__main__":
    main()
