#!/usr/bin/python3
"""fq_api.py: what the HTTP API tests share (api/API.md).

The tests of tests/api drive fairqd's HTTP API over real sockets, on top of
the end-to-end harness (tests/e2e/fq_e2e.py): a fresh database per test,
the real fairqd, fairq-sender and SMTP sink. This module adds:

  * APITest, an E2ETest whose start() runs fairqd, waits for its schema and
    its /healthz, and makes an admin token (self.admin);
  * api(), one request through the harness's http(), with the admin token
    unless told otherwise, failing clearly when no HTTP answer comes, and
    its answer checked against api/openapi.yaml (fq_openapi.py);
  * assert_error(), the one shape of every error of API.md's table;
  * raw(), bytes written on a socket of our own, for what urllib will not
    send (broken request lines, lying Content-Length, a chunked body);
  * the shapes of the request, message and tenant objects.
"""

import contextlib
import http.client
import json
import os
import re
import socket
import sys
import time
import urllib.error

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import fq_e2e  # noqa: E402
import fq_openapi  # noqa: E402
from fq_e2e import E2ETest, wait_for  # noqa: E402, F401

# API.md's table of errors
ERROR_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
               422: "unprocessable_content", 429: "rate_limited", 503: "database_unavailable", 500: "internal"}

REQUEST_KEYS = {"id", "tenant", "status", "priority", "total", "pending", "inflight", "sent",
                "failed", "dead", "cancelled", "rejected", "created_at", "send_at",
                "finished_at"}
REQUEST_STATUSES = {"accepted", "splitting", "active", "paused", "done", "cancelled",
                    "rejected"}
FINISHED = {"done", "cancelled", "rejected"}
MESSAGE_KEYS = {"id", "request", "tenant", "to", "status", "attempts", "next_attempt_at",
                "last_attempt_at", "last_error"}
MESSAGE_STATUSES = {"pending", "sent", "failed", "dead", "cancelled"}
TENANT_KEYS = {"name", "weight", "max_inflight", "submit_rate", "max_send_rate", "daily_quota",
               "sent_today", "open_requests", "depth", "failed", "unsplit", "inflight",
               "send_rate", "oldest_pending_age_s", "oldest_due_age_s", "held", "bounce_rate",
               "complaint_rate"}

RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
TOKEN = re.compile(r"^fq_[A-Za-z0-9_-]{43}$")

ADMIN = object()  # api(token=ADMIN): the test's admin token (the default)

# How long the splitter may take to turn a small request into messages, and
# a small campaign to be delivered (ASan builds, 2 shared cores)
SPLIT_TIMEOUT_S = 20
DELIVERY_TIMEOUT_S = 30


def rfc3339(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def parse_time(text):
    """An RFC 3339 UTC time of an answer as Unix seconds."""
    import calendar
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$", text)
    if not m:
        raise AssertionError(f"not an RFC 3339 UTC time: {text!r}")
    whole = calendar.timegm(tuple(int(g) for g in m.groups()[:6]))
    return whole + (float(m.group(7)) if m.group(7) else 0.0)


def submit_body(tenant="acme", drop=(), **fields):
    """A valid submit body for tenant, fields replaced or added as given
    (from_=... for "from"), the keys in drop left out."""
    body = {"tenant": tenant, "from": f"news@{tenant}.example", "subject": "Hi {{name}}",
            "body": "Dear {{name}},\nhello.\n",
            "recipients": [{"to": "ann@example.org", "fields": {"name": "Ann"}}]}
    for key, value in fields.items():
        body["from" if key == "from_" else key] = value
    for key in drop:
        body.pop(key, None)
    return body


def recipients(n, prefix="user", domain="example.org"):
    return [{"to": f"{prefix}{i}@{domain}", "fields": {"name": f"{prefix}{i}"}}
            for i in range(n)]


class RawAnswer:
    """What came back on a raw socket: status None when the server closed
    (or reset) the connection without an HTTP answer."""

    def __init__(self, status=None, reason="", headers=None, body=b"", error=None):
        self.status, self.reason, self.headers, self.body, self.error = \
            status, reason, headers or {}, body, error

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except ValueError:
            return self.body.decode("utf-8", "replace")

    def __repr__(self):
        return (f"RawAnswer(status={self.status}, headers={self.headers}, "
                f"body={self.body[:300]!r}, error={self.error})")


class APITest(E2ETest):
    """An E2ETest speaking HTTP to fairqd."""

    def start(self, sink=False, senders=0, **settings):
        """fairqd with settings; its schema; /healthz answering 200; an
        admin token (self.admin). With sink, an SMTP sink (self.sink); with
        senders, that many fairq-senders delivering to it."""
        h = self.h
        if sink or senders:
            self.sink = h.start_sink()
        self.fairqd = h.start_fairqd(**settings)
        h.wait_schema()
        self.admin = h.make_token()
        h.wait(self._healthy, fq_e2e.START_TIMEOUT_S, "fairqd's /healthz to answer 200")
        self.senders = [h.start_sender(f"s{i + 1}", self.sink, 16) for i in range(senders)]
        return self.fairqd

    def _healthy(self):
        try:
            return self.h.http("GET", "/healthz", timeout=5)[0] == 200
        except (urllib.error.URLError, ConnectionError, http.client.HTTPException, OSError):
            return False

    # -----------------------------------------------------------------
    # Requests

    def api(self, method, path, body=None, token=ADMIN, headers=None, raw=None, timeout=30):
        """One HTTP request; returns (status, headers, payload), payload
        parsed JSON, or text when it is not JSON. token=None sends none."""
        if token is ADMIN:
            token = self.admin
        try:
            answer = self.h.http(method, path, body=body, token=token, headers=headers, raw=raw,
                                 timeout=timeout)
        except (urllib.error.URLError, ConnectionError, http.client.HTTPException,
                OSError) as error:
            self.h.check_alive()
            raise AssertionError(f"{method} {path[:200]}: no HTTP answer ({error!r})")
        problem = fq_openapi.spec().check(method, path, answer[0], answer[2],
                                          answer[1].get("Content-Type", ""))
        if problem:
            raise AssertionError(f"the answer disagrees with api/openapi.yaml: {problem}")
        return answer

    def assert_error(self, answer, status, what="", code=None):
        """answer (status, headers, payload) is the error status of API.md:
        JSON {"error": CODE, "detail": TEXT}, CODE the table's for status."""
        got, headers, payload = answer
        label = f"{what}: " if what else ""
        self.assertEqual(got, status, f"{label}expected {status}, got {got} {payload!r:.500}")
        self.check_error_body(answer, code or ERROR_CODES[status], label)

    def assert_error_in(self, answer, statuses, what=""):
        """answer is one of the errors statuses, shaped as API.md says."""
        got, headers, payload = answer
        label = f"{what}: " if what else ""
        self.assertIn(got, statuses, f"{label}expected one of {sorted(statuses)}, got {got} "
                                     f"{payload!r:.500}")
        self.check_error_body(answer, ERROR_CODES[got], label)

    def check_error_body(self, answer, code, label=""):
        got, headers, payload = answer
        self.assertIsInstance(payload, dict, f"{label}{got}: error body is not a JSON object: "
                                             f"{payload!r:.500}")
        self.assertEqual(set(payload), {"error", "detail"},
                         f"{label}{got}: error body keys {sorted(payload)}")
        self.assertEqual(payload["error"], code, f"{label}{got}: {payload!r:.500}")
        self.assertIsInstance(payload["detail"], str, f"{label}{payload!r:.500}")
        self.assertTrue(payload["detail"], f"{label}empty detail")
        content_type = headers.get("Content-Type", "") if headers else ""
        self.assertTrue(content_type.startswith("application/json"),
                        f"{label}{got}: Content-Type {content_type!r}")

    def ok(self, answer, status=200, what=""):
        """The payload of a successful answer with that status."""
        got, headers, payload = answer
        self.assertEqual(got, status, f"{what + ': ' if what else ''}expected {status}, "
                                      f"got {got} {payload!r:.800}")
        content_type = headers.get("Content-Type", "")
        self.assertTrue(content_type.startswith("application/json"),
                        f"{what}: Content-Type {content_type!r}")
        return payload

    # -----------------------------------------------------------------
    # fairq through the API

    def put_tenant(self, name, status=None, **fields):
        """PUT /v1/tenants/NAME (admin); returns the tenant object."""
        answer = self.api("PUT", f"/v1/tenants/{name}", fields)
        self.assertIn(answer[0], (status,) if status else (200, 201), f"PUT tenant {name}: "
                                                                     f"{answer[2]!r:.500}")
        self.check_tenant(answer[2])
        return answer[2]

    def new_token(self, tenant):
        """A tenant token through POST /v1/tenants/NAME/tokens."""
        payload = self.ok(self.api("POST", f"/v1/tenants/{tenant}/tokens"), 201,
                          f"token for {tenant}")
        self.assertEqual(payload.get("tenant"), tenant, payload)
        self.assertRegex(payload.get("token", ""), TOKEN)
        return payload["token"]

    def submit(self, body=None, token=ADMIN, key=None, **fields):
        """POST /v1/requests; returns (status, headers, payload)."""
        if body is None:
            body = submit_body(**fields)
        headers = {"Idempotency-Key": key} if key is not None else None
        return self.api("POST", "/v1/requests", body, token=token, headers=headers)

    def submit_ok(self, body=None, token=ADMIN, key=None, **fields):
        """A submit that must answer 202; returns the request object."""
        request = self.ok(self.submit(body, token, key, **fields), 202, "submit")
        self.check_request(request)
        return request

    def get_request(self, request_id, token=ADMIN):
        request = self.ok(self.api("GET", f"/v1/requests/{request_id}", token=token), 200,
                          f"GET request {request_id}")
        self.check_request(request)
        return request

    def wait_request(self, request_id, statuses, timeout=DELIVERY_TIMEOUT_S):
        """Polls GET /v1/requests/ID until its status is one of statuses."""
        if isinstance(statuses, str):
            statuses = (statuses,)
        last = [None]

        def check():
            last[0] = self.get_request(request_id)
            return last[0] if last[0]["status"] in statuses else None
        return self.h.wait(check, timeout, f"request {request_id} to be {'/'.join(statuses)}",
                           interval=0.2, describe=lambda: f"it is {last[0]}")

    def messages_of(self, request_id, token=ADMIN, query=""):
        """Every message of the request through GET /v1/messages."""
        payload = self.ok(self.api("GET", f"/v1/messages?request={request_id}&limit=1000{query}",
                                   token=token), 200, "message search")
        for m in payload["messages"]:
            self.check_message(m)
        return payload["messages"]

    def wait_split(self, request_id, count, timeout=SPLIT_TIMEOUT_S):
        """Waits until the request has count messages; returns them."""
        return self.h.wait(lambda: (lambda ms: ms if len(ms) == count else None)(
                               self.messages_of(request_id)),
                           timeout, f"request {request_id} to be split into {count} messages",
                           interval=0.2)

    @contextlib.contextmanager
    def database_blocked(self):
        """PostgreSQL unreachable for fairqd while the block runs: the
        test's database refuses new connections and its sessions are
        ended. The server itself stays up, holding its port, so that no
        other cluster on this machine (someone's pg_virtualenv) can take
        the port meanwhile, as it could during restart_postgres(down_s)."""
        h = self.h

        def run(query):
            h._run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", "postgres",
                    "-c", query], check=True)
        run(f"ALTER DATABASE {h.dbname} ALLOW_CONNECTIONS false")
        try:
            run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                f" WHERE datname = {fq_e2e.lit(h.dbname)} AND pid <> pg_backend_pid()")
            yield
        finally:
            run(f"ALTER DATABASE {h.dbname} ALLOW_CONNECTIONS true")

    def count(self, table, where="true"):
        return int(self.h.scalar(f"SELECT count(*) FROM {table} WHERE {where}"))

    def healthz_ok(self):
        answer = self.api("GET", "/healthz", token=None)
        self.assertEqual(answer[0], 200, f"/healthz: {answer[2]!r:.500}")
        self.assertIsInstance(answer[2], dict, answer[2])
        self.assertEqual((answer[2].get("status"), answer[2].get("database")), ("ok", "ok"),
                         answer[2])

    # -----------------------------------------------------------------
    # Shapes

    def check_request(self, r):
        self.assertIsInstance(r, dict, r)
        missing = REQUEST_KEYS - set(r)
        self.assertFalse(missing, f"request object without {sorted(missing)}: {r}")
        for key in ("id", "priority", "total", "pending", "inflight", "sent", "failed", "dead",
                    "cancelled", "rejected"):
            self.assertIs(type(r[key]), int, f"{key} is not an integer: {r}")
        self.assertIsInstance(r["tenant"], str, r)
        self.assertIn(r["status"], REQUEST_STATUSES, r)
        self.assertEqual(r["total"], r["pending"] + r["failed"] + r["sent"] + r["dead"] +
                         r["cancelled"] + r["rejected"],
                         f"total is not pending+failed+sent+dead+cancelled+rejected: {r}")
        self.assertLessEqual(r["inflight"], r["pending"] + r["failed"], r)
        for key in ("created_at", "send_at"):
            self.assertRegex(r[key], RFC3339_UTC, f"{key}: {r}")
        if r["finished_at"] is not None:
            self.assertRegex(r["finished_at"], RFC3339_UTC, r)
        self.assertEqual(r["finished_at"] is not None, r["status"] in FINISHED,
                         f"finished_at set if and only if finished: {r}")

    def check_message(self, m):
        self.assertIsInstance(m, dict, m)
        missing = MESSAGE_KEYS - set(m)
        self.assertFalse(missing, f"message object without {sorted(missing)}: {m}")
        for key in ("id", "request", "attempts"):
            self.assertIs(type(m[key]), int, f"{key}: {m}")
        self.assertIn(m["status"], MESSAGE_STATUSES, m)
        self.assertIsInstance(m["to"], str, m)
        self.assertFalse(re.search(r"[\r\n]", m["to"]), f"CR or LF in a message: {m}")
        for key in ("next_attempt_at", "last_attempt_at"):
            if m[key] is not None:
                self.assertRegex(m[key], RFC3339_UTC, f"{key}: {m}")
        self.assertTrue(m["last_error"] is None or isinstance(m["last_error"], str), m)

    def check_tenant(self, t):
        self.assertIsInstance(t, dict, t)
        missing = TENANT_KEYS - set(t)
        self.assertFalse(missing, f"tenant object without {sorted(missing)}: {t}")
        for key in ("weight", "max_inflight", "open_requests", "depth", "failed", "unsplit",
                    "inflight", "sent_today"):
            self.assertIs(type(t[key]), int, f"{key}: {t}")
        for key in ("submit_rate", "daily_quota"):
            self.assertTrue(t[key] is None or (type(t[key]) is int and t[key] > 0), f"{key}: {t}")
        self.assertTrue(t["max_send_rate"] is None or
                        re.match(r"^[1-9]\d*/(s|min|h|d)$", t["max_send_rate"]), t)
        self.assertGreaterEqual(t["sent_today"], 0, t)
        self.assertIn(type(t["send_rate"]), (int, float), t)
        self.assertTrue(t["oldest_pending_age_s"] is None or
                        type(t["oldest_pending_age_s"]) in (int, float), t)
        self.assertIs(type(t["oldest_due_age_s"]), int, t)
        self.assertGreaterEqual(t["oldest_due_age_s"], 0, t)
        self.assertIs(type(t["held"]), bool, t)
        for key in ("bounce_rate", "complaint_rate"):  # null: not known
            self.assertTrue(t[key] is None or (type(t[key]) in (int, float) and
                                               0 <= t[key] <= 1), f"{key}: {t}")

    # -----------------------------------------------------------------
    # Raw sockets

    def raw(self, parts, timeout=10, pause=0.0, allow_silence=False):
        """Writes parts (bytes, or a list of bytes written pause seconds
        apart) on a new connection and reads one HTTP answer. A server that
        answers early and closes (413 before the body) is fine: what could
        not be written is dropped. With allow_silence, no answer within
        timeout is RawAnswer(error="silent") rather than a failure (a
        server waiting for the rest of a request it cannot know is cut)."""
        if isinstance(parts, bytes):
            parts = [parts]
        sock = socket.create_connection(("127.0.0.1", self.h.http_port), timeout=timeout)
        error = None
        try:
            for i, part in enumerate(parts):
                if i and pause:
                    time.sleep(pause)
                try:
                    sock.sendall(part)
                except OSError as e:  # Answered and closed before the end
                    error = e
                    break
            return self._read_answer(sock, timeout, error)
        except AssertionError:
            if allow_silence:
                return RawAnswer(error="silent")
            raise
        finally:
            sock.close()

    @staticmethod
    def _read_answer(sock, timeout, error):
        deadline = time.monotonic() + timeout
        data = b""

        def more():
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                raise AssertionError(f"no complete HTTP answer within {timeout} s: {data[:300]!r}")
            except OSError:
                return b""
            return chunk

        while b"\r\n\r\n" not in data:
            chunk = more()
            if not chunk:
                return RawAnswer(body=data, error=error or "closed without an answer")
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"^HTTP/1\.[01] (\d{3}) ?(.*)$", lines[0])
        if not m:
            raise AssertionError(f"not an HTTP status line: {lines[0]!r}")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            want = int(headers["content-length"])
            while len(body) < want:
                chunk = more()
                if not chunk:
                    break
                body += chunk
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while not body.endswith(b"0\r\n\r\n"):
                chunk = more()
                if not chunk:
                    break
                body += chunk
            body = _dechunk(body)
        return RawAnswer(int(m.group(1)), m.group(2), headers, body, error)

    def assert_raw_error(self, answer, statuses, what):
        """A raw answer that is one of the error statuses, with API.md's
        JSON error body."""
        if isinstance(statuses, int):
            statuses = (statuses,)
        self.assertIn(answer.status, statuses, f"{what}: {answer}")
        payload = answer.json()
        self.assertIsInstance(payload, dict, f"{what}: error body is not JSON: {answer}")
        self.assertEqual(set(payload), {"error", "detail"}, f"{what}: {answer}")
        self.assertEqual(payload["error"], ERROR_CODES[answer.status], f"{what}: {answer}")


def _dechunk(body):
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return out


def main():
    fq_openapi.note_program(os.path.basename(sys.argv[0]))
    fq_e2e.main()
