#!/usr/bin/python3
"""fq_e2e.py: the harness of fairq's end-to-end tests.

The tests drive the real programs, as a user would: a PostgreSQL database of
their own, fairqd, fairq-sender processes and the SMTP sink (smtp_sink.py, a
real aiosmtpd server), and look only at what a user sees: the mail that
reaches the sink, the rows of fairq.requests and fairq.messages, the logs and
the exit codes.

Each test (an E2ETest method) gets a Harness of its own:

  * a fresh database, fq_e2e_<pid>_<n>, made with createdb in the cluster of
    the PG* environment (pg_virtualenv) and dropped at the end;
  * a working directory for the logs of every child (one file each), the
    sink's output and its rules file;
  * start_fairqd / start_sender / start_sink (SMTP) / start_http_sink
    (http_sink.py, for webhooks), which wait until the program says it is
    up; every child is stopped at the end whatever happened (SIGTERM, then
    SIGKILL); if the test process itself dies (a ctest
    timeout), fairqd and the senders get SIGKILL (PR_SET_PDEATHSIG) and the
    sink quits (--quit-on-eof on a pipe);
  * fairqd and fairq-sender run through symbolic links named fqe2e-daemon
    and fqe2e-sender, so that someone's `pkill fairq-sender` on the same
    machine does not stop them (a child that ends unasked fails the test);
  * restart_postgres() restarts the server under fairqd;
  * make_cert / allow_cert / curve_settings: CURVE certificates made with
    `fairq-sender --make-cert`, fairqd's allow directory, and the settings
    of a CURVE gateway (start_sender(cert=...) then connects with CURVE);
  * sql() through psql -At, wait_for() with deadlines, the sink's jsonl,
    and api_request() for a request as GET /v1/requests/ID shows it (with
    the messages in a sender's hands, which the database does not know).

When a test fails, the tail of every log is printed and the directory kept.
A child that stops with a sanitizer report, or exits non-zero when the
harness stops it, fails the test too.

The programs are found from the command line of the test script (CMake
passes them), else the environment, else build/dev:

    --fairqd PATH   (FQ_E2E_FAIRQD)    --sender PATH   (FQ_E2E_SENDER)
    --admin PATH    (FQ_E2E_ADMIN)     --sink PATH     (FQ_E2E_SINK)

Any other argument goes to unittest (e.g. a test name, -k PATTERN).
"""

import base64
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PATHS = {
    "fairqd": os.environ.get("FQ_E2E_FAIRQD", os.path.join(ROOT, "build/dev/fairqd/fairqd")),
    "sender": os.environ.get("FQ_E2E_SENDER",
                             os.path.join(ROOT, "build/dev/sender/fairq-sender")),
    "admin": os.environ.get("FQ_E2E_ADMIN", os.path.join(ROOT, "build/dev/tests/e2e/fq_e2e_admin")),
    "sink": os.environ.get("FQ_E2E_SINK", os.path.join(HERE, "smtp_sink.py")),
}

# Debian's interpreter, which sees Debian's aiosmtpd: the python3 first on PATH
# may be another one, blind to Debian's packages
PYTHON = "/usr/bin/python3"

# Sanitizer findings must fail, not just print (as deploy/test.sh sets them)
os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")

SANITIZER_REPORT = re.compile(
    r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: \w+Sanitizer")

MESSAGE_ID = re.compile(r"^<fairq\.(\d+)@([^>]+)>$")

# How long a started program may take to say it is up (ASan builds, 2 cores)
START_TIMEOUT_S = 30
# How long a program may take to stop after SIGTERM before it is killed
STOP_TIMEOUT_S = 25

# psql's separators: ASCII unit and record separators never occur in the data
FIELD_SEP = "\x1f"
RECORD_SEP = "\x1e"

_counter = [0]


def free_port():
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lit(value):
    """value as an SQL literal (standard_conforming_strings is on)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if "\0" in text:
        raise ValueError("NUL in an SQL literal")
    return "'" + text.replace("'", "''") + "'"


def wait_for(predicate, timeout, what, interval=0.05, describe=None):
    """Calls predicate until it returns something true, and returns that.
    Fails the test after timeout seconds, saying what it waited for (and
    describe(), if given, for the state at that moment)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = f"; {describe()}" if describe else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{detail}")
        time.sleep(interval)


def message_id_of(record):
    """fairq's message id in a sink record's Message-ID, or None."""
    m = MESSAGE_ID.match(record.get("message_id") or "")
    return int(m.group(1)) if m else None


def _die_with_parent():
    """In a child before exec: killed when the test process dies, even by
    SIGKILL (a ctest timeout), so that no fairqd or sender outlives it."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Proc:
    """A child process, its output in a log file."""

    def __init__(self, name, argv, log_path, stdin=subprocess.DEVNULL, stdout=None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.started = time.time()
        self.popen = subprocess.Popen(argv, stdin=stdin, preexec_fn=_die_with_parent,
                                      stdout=stdout if stdout is not None else self.log,
                                      stderr=self.log if stdout is not None else subprocess.STDOUT)
        self.pid = self.popen.pid
        self.expect_exit = False  # The test killed it on purpose

    def alive(self):
        return self.popen.poll() is None

    def returncode(self):
        return self.popen.poll()

    def signal(self, signum):
        if self.alive():
            os.kill(self.pid, signum)

    def kill9(self):
        """kill -9, as a crash: the harness does not blame it for dying."""
        self.expect_exit = True
        self.signal(signal.SIGKILL)
        self.popen.wait(timeout=10)

    def wait(self, timeout):
        """The exit code, or None if still running after timeout seconds."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_log(self, pattern, timeout=START_TIMEOUT_S, after=0):
        """Waits for a line matching pattern (a regex) in the log, at or
        after byte offset `after`; returns the match. Fails early if the
        process exits meanwhile."""
        regex = re.compile(pattern)

        def found():
            with open(self.log_path, "rb") as f:
                f.seek(after)
                m = regex.search(f.read().decode("utf-8", "replace"))
            if m:
                return m
            if not self.alive():
                raise AssertionError(f"{self.name} exited ({self.returncode()}) before "
                                     f"logging /{pattern}/")
            return None
        return wait_for(found, timeout, f"{self.name} to log /{pattern}/", interval=0.05)

    def log_size(self):
        return os.path.getsize(self.log_path)

    def close(self):
        self.log.close()


class Sink:
    """smtp_sink.py: a real SMTP server writing what it accepts as jsonl."""

    def __init__(self, harness, name, rules=None):
        self.dir = harness.dir
        self.out = os.path.join(self.dir, f"{name}.jsonl")
        self.rules_path = os.path.join(self.dir, f"{name}.rules.json")
        self.set_rules(rules or {})
        self.proc = Proc(name, [PYTHON, PATHS["sink"], "--port", "0", "--out", self.out,
                                "--rules", self.rules_path, "--quit-on-eof"],
                         os.path.join(self.dir, f"{name}.log"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self._ready_line()
        m = re.match(r"ready (\d+)", line)
        if not m:
            raise AssertionError(f"sink said {line!r} instead of \"ready PORT\"")
        self.port = int(m.group(1))
        self.url = f"smtp://127.0.0.1:{self.port}"
        self._offset = 0
        self._records = []

    def _ready_line(self):
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(self.proc.popen.stdout, selectors.EVENT_READ)
        if not sel.select(timeout=START_TIMEOUT_S):
            raise AssertionError("the SMTP sink did not say \"ready\"")
        return self.proc.popen.stdout.readline().decode()

    def set_rules(self, rules):
        """Replaces the rules file atomically (the sink rereads it)."""
        tmp = self.rules_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(rules, f)
        os.replace(tmp, self.rules_path)

    def records(self):
        """Every message accepted so far, in arrival order (complete lines
        only: a line being written is read next time)."""
        if os.path.exists(self.out):
            with open(self.out, "rb") as f:
                f.seek(self._offset)
                data = f.read()
            end = data.rfind(b"\n") + 1
            for line in data[:end].splitlines():
                if line.strip():
                    self._records.append(json.loads(line))
            self._offset += end
        return list(self._records)

    def count(self):
        return len(self.records())

    def stop(self):
        if self.proc.alive():
            try:
                self.proc.popen.stdin.close()  # --quit-on-eof
            except OSError:
                pass
            if self.proc.wait(10) is None:
                self.proc.signal(signal.SIGKILL)
                self.proc.wait(10)
        if self.proc.popen.stdout:
            self.proc.popen.stdout.close()
        self.proc.close()


class HttpSink(Sink):
    """http_sink.py: a real HTTP server writing each request it receives as
    jsonl, answering as its rules file (set_rules) or each request's query
    string says, and verifying Standard Webhooks signatures with secrets
    (each record's "verified"). url is http://127.0.0.1:PORT."""

    def __init__(self, harness, name, rules=None, secrets=()):
        self.dir = harness.dir
        self.out = os.path.join(self.dir, f"{name}.jsonl")
        self.rules_path = os.path.join(self.dir, f"{name}.rules.json")
        self.set_rules(rules or {})
        argv = [PYTHON, os.path.join(HERE, "http_sink.py"), "--port", "0", "--out", self.out,
                "--rules", self.rules_path, "--quit-on-eof"]
        for secret in secrets:
            argv += ["--secret", secret]
        self.proc = Proc(name, argv, os.path.join(self.dir, f"{name}.log"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self._ready_line()
        m = re.match(r"ready (\d+)", line)
        if not m:
            raise AssertionError(f"HTTP sink said {line!r} instead of \"ready PORT\"")
        self.port = int(m.group(1))
        self.url = f"http://127.0.0.1:{self.port}"
        self._offset = 0
        self._records = []


class Harness:
    """One test's database, programs and files."""

    def __init__(self, test_name):
        _counter[0] += 1
        short = re.sub(r"[^A-Za-z0-9_]+", "_", test_name.split(".")[-1])[:40]
        self.dir = tempfile.mkdtemp(prefix=f"fq_e2e_{short}_")
        self.dbname = f"fq_e2e_{os.getpid()}_{_counter[0]}"
        self.procs = []
        self.sinks = []
        self.gateway_port = free_port()
        # fairqd's HTTP API (api/API.md), on a port of this test's own
        self.http_port = free_port()
        self.http_url = f"http://127.0.0.1:{self.http_port}"
        self._admin_token = None  # api_request's, made on first use
        self.problems = []
        # The programs run through links of their own names, so that a broad
        # `pkill fairq-sender` or `pkill fairqd` by someone else on the same
        # machine (a smoke script) does not stop this test's processes
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(bindir)
        self.bin = {}
        for key, link in (("fairqd", "fqe2e-daemon"), ("sender", "fqe2e-sender")):
            self.bin[key] = os.path.join(bindir, link)
            os.symlink(os.path.abspath(PATHS[key]), self.bin[key])
        self._run(["dropdb", "--if-exists", "--force", self.dbname])
        self._run(["createdb", self.dbname], check=True)
        # Where sql() goes: this test's database, unless a test that runs a
        # cluster of its own (test_pg_failover) names another
        self.dsn = None

    # -----------------------------------------------------------------
    # SQL

    def _run(self, argv, check=False, input_text=None):
        done = subprocess.run(argv, input=input_text, capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}): "
                                 f"{done.stderr.strip()}")
        return done

    def sql(self, query):
        """Runs query (one or more statements) with psql; returns the rows
        of the results as lists of strings (NULL is "")."""
        done = self._run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", FIELD_SEP,
                          "-R", RECORD_SEP, "-d", self.dsn or self.dbname, "-f", "-"],
                         input_text=query)
        if done.returncode != 0:
            raise AssertionError(f"SQL failed: {done.stderr.strip()}\nquery: {query[:2000]}")
        out = done.stdout
        if out.endswith("\n"):
            out = out[:-1]
        if not out:
            return []
        return [record.split(FIELD_SEP) for record in out.split(RECORD_SEP)]

    def scalar(self, query):
        rows = self.sql(query)
        return rows[0][0] if rows else None

    # -----------------------------------------------------------------
    # fairq's data, as a user sees it

    def wait_schema(self, timeout=START_TIMEOUT_S):
        """fairqd applies the migrations at start: waits for fairq.submit."""
        wait_for(lambda: self.scalar(
            "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'fairq' AND p.proname = 'submit'") == "1",
            timeout, "fairqd's migrations (fairq.submit)")

    def make_token(self, tenant=None):
        """A new API token (admin when tenant is None), stored as fairqd
        stores them: only its SHA-256 (fairq.api_tokens). Returns the token."""
        token = "fq_" + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        owner = "NULL" if tenant is None else \
            f"(SELECT id FROM fairq.tenants WHERE name = {lit(tenant)})"
        self.sql(f"INSERT INTO fairq.api_tokens (hash, tenant_id) VALUES "
                 f"(sha256(convert_to({lit(token)}, 'UTF8')), {owner})")
        return token

    def http(self, method, path, body=None, token=None, headers=None, raw=None, timeout=30):
        """One HTTP request to fairqd's API. body is sent as JSON, raw as
        the bytes given. Returns (status, headers, parsed JSON or text)."""
        data = raw if raw is not None else \
            (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.http_url + path, data=data, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        if data is not None and not (headers and "Content-Type" in headers):
            request.add_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                status, answer_headers, text = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            status, answer_headers, text = error.code, error.headers, error.read()
        text = text.decode("utf-8", "replace")
        try:
            payload = json.loads(text)
        except ValueError:
            payload = text
        return status, answer_headers, payload

    def create_tenant(self, name, weight=1, max_inflight=1000):
        self.sql(f"INSERT INTO fairq.tenants (name, weight, max_inflight)"
                 f" VALUES ({lit(name)}, {weight}, {max_inflight})")

    @staticmethod
    def submit_call(tenant, recipients=None, subject="Hello {{name}}",
                    body="Dear {{name}},\nthis is message {{n}}.\n", from_addr=None, html=False,
                    send_at=None, priority=0, max_attempts=5, bulk=None, idempotency_key=None):
        """The SQL of one fairq.submit call. recipients is a list of
        {"to": ..., "fields": {...}}; or bulk=(n, local_prefix, domain)
        makes n recipients PREFIXi@DOMAIN with fields name=PREFIXi, n=i in
        the database itself. send_at is SQL (e.g. "now() + interval '3 s'")."""
        from_addr = from_addr or f"news@{tenant}.test"
        if bulk:
            n, prefix, domain = bulk
            recips = (f"(SELECT jsonb_agg(jsonb_build_object('to', {lit(prefix)} || i || '@' ||"
                      f" {lit(domain)}, 'fields', jsonb_build_object('name', {lit(prefix)} || i,"
                      f" 'n', i)) ORDER BY i) FROM generate_series(1, {int(n)}) AS i)")
        else:
            recips = f"{lit(json.dumps(recipients))}::jsonb"
        return (f"fairq.submit({lit(tenant)}, {lit(from_addr)}, {lit(subject)}, {lit(body)},"
                f" {recips}, {lit(html)}, {send_at or 'now()'}, {int(priority)},"
                f" {int(max_attempts)}, {lit(idempotency_key)})")

    def submit(self, tenant, recipients=None, **kwargs):
        """Submits one request; returns its id."""
        return int(self.scalar("SELECT " + self.submit_call(tenant, recipients, **kwargs)))

    def submit_together(self, calls):
        """Submits several requests in one statement (one transaction, so
        they share created_at); returns their ids."""
        return [int(v) for v in self.sql("SELECT " + ", ".join(calls))[0]]

    def request(self, request_id):
        """The request's row as a dict (counters as ints, times as epoch
        seconds)."""
        cols = ["id", "status", "total", "split", "rejected", "sent", "failed", "dead",
                "cancelled"]
        rows = self.sql(f"SELECT {', '.join(cols)}, extract(epoch FROM created_at),"
                        f" extract(epoch FROM send_at), coalesce(status_detail, '')"
                        f" FROM fairq.requests WHERE id = {int(request_id)}")
        if not rows:
            return None
        row = rows[0]
        out = {c: (row[i] if c == "status" else int(row[i])) for i, c in enumerate(cols)}
        out["created_at"] = float(row[len(cols)])
        out["send_at"] = float(row[len(cols) + 1])
        out["status_detail"] = row[len(cols) + 2]
        return out

    def check_alive(self):
        """Fails at once if a child the test still counts on has ended."""
        for proc in self.procs:
            if not proc.expect_exit and not proc.alive():
                raise AssertionError(f"{proc.name} exited unexpectedly with "
                                     f"{proc.returncode()} (see {proc.log_path})")

    def wait(self, predicate, timeout, what, interval=0.05, describe=None):
        """wait_for, failing early if a child dies meanwhile."""
        def check():
            self.check_alive()
            return predicate()
        return wait_for(check, timeout, what, interval, describe)

    def wait_request(self, request_id, statuses, timeout, what=None):
        """Waits until the request's status is one of statuses."""
        if isinstance(statuses, str):
            statuses = (statuses,)
        return self.wait(lambda: (lambda r: r if r and r["status"] in statuses else None)(
                            self.request(request_id)),
                        timeout, what or f"request {request_id} to be {'/'.join(statuses)}",
                        interval=0.2, describe=lambda: f"request is {self.request(request_id)}")

    def messages(self, where="true"):
        """fairq.messages rows as dicts, by id."""
        rows = self.sql("SELECT m.id, m.request_id, t.name, m.recipient, m.status, m.try_count,"
                        " coalesce(m.last_error, ''), m.fields::text FROM fairq.messages m"
                        " JOIN fairq.tenants t ON t.id = m.tenant_id"
                        f" WHERE {where} ORDER BY m.id")
        return {int(r[0]): {"id": int(r[0]), "request_id": int(r[1]), "tenant": r[2],
                            "recipient": r[3], "status": r[4], "try_count": int(r[5]),
                            "last_error": r[6], "fields": json.loads(r[7])} for r in rows}

    def message_tenants(self):
        """{message id: tenant name} for every message."""
        return {int(r[0]): r[1] for r in self.sql(
            "SELECT m.id, t.name FROM fairq.messages m JOIN fairq.tenants t ON t.id = m.tenant_id")}

    # -----------------------------------------------------------------
    # Programs

    def _proc(self, name, argv, **kwargs):
        proc = Proc(name, argv, os.path.join(self.dir, f"{name}.log"), **kwargs)
        self.procs.append(proc)
        return proc

    def start_sink(self, name="sink", rules=None):
        sink = Sink(self, name, rules)
        self.sinks.append(sink)
        return sink

    def start_http_sink(self, name="http_sink", rules=None, secrets=()):
        """Starts http_sink.py (HttpSink), verifying signatures by secrets."""
        sink = HttpSink(self, name, rules, secrets)
        self.sinks.append(sink)
        return sink

    def fairqd_argv(self, settings):
        options = {"database": f"dbname={self.dbname}",
                   "gateway_bind": f"tcp://127.0.0.1:{self.gateway_port}",
                   "gateway_insecure": "true",
                   "http_listen": f"127.0.0.1:{self.http_port}",
                   "drain_timeout_ms": "3000"}
        options.update({k: str(v) for k, v in settings.items()})
        return [self.bin["fairqd"]] + [f"--{k}={v}" for k, v in options.items()]

    def start_fairqd(self, name="fairqd", wait=True, **settings):
        """Starts fairqd (settings are its keys: poll_ms=200, ...) on this
        test's gateway port; with wait, returns once it logs "ready"."""
        proc = self._proc(name, self.fairqd_argv(settings))
        proc.settings = settings
        if wait:
            proc.wait_log(r"\bready\b")
        return proc

    def start_sender(self, name, sink=None, concurrency=16, wait=True, smtp_url=None,
                     extra=(), cert=None, connect=None):
        """Starts fairq-sender NAME delivering to sink over SMTP (EHLO
        NAME.test, so the sink's "helo" tells who delivered); with wait,
        returns once fairqd welcomed it. cert: its CURVE certificate
        (make_cert), for a fairqd started with curve_settings(); without
        it the sender connects in insecure mode. connect: its --connect
        (several fairqd: "tcp://A,tcp://B"); this test's gateway if None."""
        security = ["--cert", cert, "--server-cert", self.curve_server_cert()] if cert else \
            ["--insecure"]
        argv = ([self.bin["sender"], "--connect",
                 connect or f"tcp://127.0.0.1:{self.gateway_port}"]
                + security
                + ["--transport", "smtp", "--smtp-url", smtp_url or sink.url,
                   "--concurrency", str(concurrency), "--name", name, "--helo", f"{name}.test",
                   "--drain-timeout-ms", "2000"]
                + list(extra))
        proc = self._proc(name, argv)
        if wait:
            proc.wait_log(r"welcomed by")
        return proc

    # -----------------------------------------------------------------
    # CURVE: certificates as an operator makes them (README, fairq-sender)

    def make_cert(self, name):
        """A new CURVE certificate, written by `fairq-sender --make-cert`:
        CERTS/NAME (the public part) and CERTS/NAME_secret. Returns the
        path of the public part."""
        certs = os.path.join(self.dir, "certs")
        os.makedirs(certs, exist_ok=True)
        path = os.path.join(certs, name)
        self._run([self.bin["sender"], "--make-cert", path], check=True)
        return path

    def allow_cert(self, path):
        """Lets a certificate's owner into fairqd's gateway: copies the
        public part into gateway_allow_dir, as the README says."""
        os.makedirs(self.allow_dir(), exist_ok=True)
        shutil.copy(path, os.path.join(self.allow_dir(), os.path.basename(path)))

    def allow_dir(self):
        return os.path.join(self.dir, "allowed")

    def curve_server_cert(self):
        """fairqd's own certificate (made on first use)."""
        path = os.path.join(self.dir, "certs", "fairqd")
        if not os.path.exists(path):
            self.make_cert("fairqd")
        return path

    def curve_settings(self):
        """fairqd settings for a CURVE gateway: its certificate and the
        allow directory (made here, empty until allow_cert)."""
        os.makedirs(self.allow_dir(), exist_ok=True)
        return {"gateway_insecure": "false", "gateway_cert": self.curve_server_cert(),
                "gateway_allow_dir": self.allow_dir()}

    @staticmethod
    def cert_keys(path):
        """(public, secret) Z85 keys of a CZMQ certificate file; secret is
        read from PATH_secret, None when that file is absent."""
        def key(file, name):
            with open(file, encoding="utf-8") as f:
                m = re.search(rf'^\s*{name}\s*=\s*"([^"]{{40}})"', f.read(), re.M)
            if not m:
                raise AssertionError(f"no {name} in certificate {file}")
            return m.group(1)
        secret_path = path + "_secret"
        return (key(path, "public-key"),
                key(secret_path, "secret-key") if os.path.exists(secret_path) else None)

    # -----------------------------------------------------------------
    # The HTTP API's view of a request

    def api_request(self, request_id):
        """The request object of GET /v1/requests/ID (api/API.md), with an
        admin token of this harness's own."""
        if not self._admin_token:
            self._admin_token = self.make_token()
        # 503: fairqd could not reach PostgreSQL just then (a loaded machine);
        # it reconnects by itself, so the question is asked again
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            status, _, body = self.http("GET", f"/v1/requests/{int(request_id)}",
                                        token=self._admin_token)
            if status == 200:
                return body
            if status != 503 or time.monotonic() >= deadline:
                raise AssertionError(f"GET /v1/requests/{request_id} answered {status}: {body}")
            time.sleep(0.2)

    def admin(self, command, request_id):
        """fq_e2e_admin cancel|pause|resume REQUEST_ID; returns its output."""
        done = self._run([PATHS["admin"], "--database", f"dbname={self.dbname}", command,
                          str(request_id)])
        if done.returncode != 0:
            raise AssertionError(f"fq_e2e_admin {command} {request_id} failed: "
                                 f"{done.stderr.strip()}")
        return int(done.stdout.strip())

    def restart_postgres(self, down_s=0.0):
        """Restarts the PostgreSQL server of the PG* environment (the
        cluster of pg_virtualenv) in fast mode, which cuts every connection,
        leaving it down for down_s seconds, and returns once it accepts
        connections again.

        pg_ctl on the server's own data directory, as the directory's owner
        (through runuser when the test runs as root), not pg_ctlcluster:
        clusters of concurrent pg_virtualenv sessions share one name
        (15/regress) and so one external pid file, and pg_ctlcluster then
        takes a running cluster for a stopped one."""
        import pwd
        datadir = self.scalar("SHOW data_directory")
        pg_config = os.environ.get("PG_CONFIG", "pg_config")
        bindir = self._run([pg_config, "--bindir"], check=True).stdout.strip()
        owner = pwd.getpwuid(os.stat(datadir).st_uid).pw_name
        logfile = None
        for line in self._run(["pg_lsclusters", "--no-header"]).stdout.splitlines():
            fields = line.split()
            if len(fields) >= 7 and fields[5] == datadir:
                logfile = fields[6]
        # The server's options as it was started (config_file=... on Debian),
        # for the start: "restart" reads them from there itself
        with open(os.path.join(datadir, "postmaster.opts"), encoding="utf-8") as f:
            opts = shlex.split(f.read())[1:]
        if opts[:2] == ["-D", datadir]:
            opts = opts[2:]
        pg_ctl = [os.path.join(bindir, "pg_ctl"), "-D", datadir, "-w", "-t", "60"]
        log = ["-l", logfile] if logfile else []
        steps = [pg_ctl + ["restart", "-m", "fast"] + log]
        if down_s > 0:
            steps = [pg_ctl + ["stop", "-m", "fast"],
                     pg_ctl + ["start", "-o", " ".join(shlex.quote(o) for o in opts)] + log]
        for i, argv in enumerate(steps):
            if os.geteuid() != os.stat(datadir).st_uid:
                argv = ["runuser", "-u", owner, "--"] + argv
            if i == 1:
                time.sleep(down_s)
            # The server inherits pg_ctl's output: never a pipe we would wait on
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=120)
            if done.returncode != 0:
                raise AssertionError(f"{' '.join(argv)} failed ({done.returncode})")
        wait_for(lambda: self._run(["psql", "-X", "-At", "-d", self.dbname, "-c", "SELECT 1"])
                 .returncode == 0, 30, "PostgreSQL to accept connections after its restart",
                 interval=0.1)

    def stop(self, proc, timeout=STOP_TIMEOUT_S):
        """SIGTERM; returns the exit code (None if it had to be killed)."""
        proc.signal(signal.SIGTERM)
        rc = proc.wait(timeout)
        if rc is None:
            self.problems.append(f"{proc.name} did not stop within {timeout} s of SIGTERM")
            proc.signal(signal.SIGKILL)
            proc.wait(10)
        proc.expect_exit = True
        return rc

    # -----------------------------------------------------------------
    # The end

    def cleanup(self):
        """Stops every child (fairqd first, so that it can drain, then the
        senders, then the sinks), drops the database, and fails if a child
        reported a sanitizer error or exited abnormally."""
        # Before stopping anything: a child that ended though the test
        # neither stopped nor killed it crashed, or was signalled from
        # outside (someone's pkill): either way the test saw something else
        for proc in self.procs:
            if not proc.expect_exit and not proc.alive():
                self.problems.append(f"{proc.name} exited by itself with {proc.returncode()} "
                                     f"(see {proc.log_path})")
        running = [p for p in self.procs if p.alive()]
        order = sorted(running, key=lambda p: 0 if p.argv[0] == self.bin["fairqd"] else 1)
        for proc in order:
            proc.signal(signal.SIGTERM)
            rc = proc.wait(STOP_TIMEOUT_S)
            if rc is None:
                self.problems.append(f"{proc.name} did not stop within {STOP_TIMEOUT_S} s of "
                                     "SIGTERM (killed)")
                proc.signal(signal.SIGKILL)
                proc.wait(10)
            elif rc != 0:
                self.problems.append(f"{proc.name} exited with {rc} after SIGTERM")
            proc.expect_exit = True
        for proc in self.procs:
            proc.close()
        for sink in self.sinks:
            sink.stop()
        self._run(["dropdb", "--if-exists", "--force", self.dbname])
        for proc in self.procs + [s.proc for s in self.sinks]:
            m = SANITIZER_REPORT.search(proc.text())
            if m:
                self.problems.append(f"{proc.name} reported a sanitizer error ({m.group(0)}): "
                                     f"see {proc.log_path}")
        if self.problems:
            raise AssertionError("; ".join(self.problems))

    def report(self, failed):
        """Prints the tail of every log after a failure; removes the
        directory after a success."""
        if not failed:
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        out = sys.stderr
        for proc in self.procs + [s.proc for s in self.sinks]:
            text = proc.text() if os.path.exists(proc.log_path) else ""
            lines = text.splitlines()
            tail = lines[-80:]
            print(f"\n----- {proc.name} (pid {proc.pid}, exit {proc.returncode()}): "
                  f"{proc.log_path}, last {len(tail)} of {len(lines)} lines -----", file=out)
            for line in tail:
                print(line, file=out)
        print(f"----- files kept in {self.dir} -----", file=out)


class E2ETest(unittest.TestCase):
    """A test with a Harness in self.h; logs printed when it fails."""

    def setUp(self):
        self.h = Harness(self.id())
        self.addCleanup(self.h.cleanup)

    def run(self, result=None):
        if result is None:
            result = self.defaultTestResult()
        before = len(result.failures) + len(result.errors)
        started = time.monotonic()
        super().run(result)
        failed = len(result.failures) + len(result.errors) > before
        harness = getattr(self, "h", None)
        if harness:
            harness.report(failed)
        print(f"[{self.id()}: {time.monotonic() - started:.1f} s]", file=sys.stderr, flush=True)
        return result

    def note(self, text):
        """A measured figure, printed for the test log."""
        print(f"  [{self._testMethodName}] {text}", file=sys.stderr, flush=True)


def main():
    """Takes the program paths off the command line, then runs unittest."""
    argv = [sys.argv[0]]
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        key = arg[2:].split("=", 1)[0] if arg.startswith("--") else None
        if key in PATHS:
            if "=" in arg:
                PATHS[key] = arg.split("=", 1)[1]
            else:
                i += 1
                PATHS[key] = args[i]
        else:
            argv.append(arg)
        i += 1
    for key, path in PATHS.items():
        if not os.path.exists(path):
            print(f"fq_e2e: {key} not found at {path}", file=sys.stderr)
            sys.exit(2)
    for tool in ("psql", "createdb", "dropdb"):
        if not shutil.which(tool):
            print(f"fq_e2e: {tool} not on PATH", file=sys.stderr)
            sys.exit(2)
    unittest.main(argv=argv, verbosity=2)
