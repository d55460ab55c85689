#!/usr/bin/python3
"""test_http_boundary.py: fairqd's HTTP API at its boundary (api/API.md),
against what a hostile or unlucky client does: a database restart under
every pool thread (503 while it is down, never 500, and calls succeed once
it is back), a flood of idle connections from one address (refused beyond
the per-address limit, closed when idle, others served meanwhile), request
smuggling through ambiguous framing (refused and the connection closed,
the smuggled request never run), an escaped '/' in a path, a bearer token
with a NUL in it, a from address that is not one address, the database's
own words in an answer, and the memory a large submit takes.
"""

import json
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
import fq_e2e  # noqa: E402
from fq_api import APITest, submit_body  # noqa: E402

HOUR = 3600
FAIRQD = {"poll_ms": 200}
# How long PostgreSQL stays stopped in the restart: short, as another
# cluster on this machine could take its port meanwhile
DOWN_S = 2
# fairqd's HTTP threads (http_threads' default), each with a connection
THREADS = 4
# Connections beyond the per-address limit in the flood
SURPLUS = 12
# The submit of the memory test, and the bound API.md states: fairqd grows
# by at most this many times the body while it takes a submit
BIG_BODY = 20 * 1024 * 1024
MEMORY_FACTOR = 4


def fairqd_defaults():
    """The defaults fairqd --help states, by key (as the file spells it)."""
    done = subprocess.run([fq_e2e.PATHS["fairqd"], "--help"], capture_output=True, text=True,
                          timeout=30)
    return {m.group(1).replace("-", "_"): m.group(2) for m in
            re.finditer(r"--([\w-]+)=\S+\s+\(FAIRQ_\w+, default \"?([^\")]*)\"?\)", done.stdout)}


def connect(port, source="127.0.0.1", timeout=5):
    """A TCP connection to fairqd from source (any loopback address)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def read_all(sock, timeout):
    """Everything the server writes until it closes the connection (or
    timeout passes: then closed is False)."""
    deadline = time.monotonic() + timeout
    data = b""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except OSError:  # Reset: closed too
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


# /proc/net/tcp's states of a socket that is no connection of a server's
# any more, or not yet: listening, and TIME_WAIT (the socket is gone)
TCP_LISTEN, TCP_TIME_WAIT = "0A", "06"


def server_connections(port):
    """The TCP connections on the local port that the server still holds
    (established, or closed by the client and not yet by the server)."""
    count = 0
    with open("/proc/net/tcp", encoding="ascii") as f:
        next(f)
        for line in f:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] not in (TCP_LISTEN, TCP_TIME_WAIT):
                count += 1
    return count


def closed_by_server(sock, wait=0.0):
    """Whether the server has closed (or reset) the connection, waiting up
    to wait seconds for it."""
    sock.settimeout(max(wait, 0.001))
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except socket.timeout:
        return False
    except BlockingIOError:
        return False
    except OSError:
        return True


def statuses(data):
    """The status codes of every HTTP answer in data."""
    return [int(s) for s in re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)]


def vm_hwm_kib(pid):
    """The process's peak resident memory (VmHWM), KiB."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        return int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1))


class BoundaryTest(APITest):

    def api_backends(self):
        """Sessions of fairqd's HTTP threads: the last statement of each
        read fairq.api_tokens (each call looks its token up), which no
        actor does."""
        return int(self.h.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND query LIKE '%fairq.api_tokens%'"))

    def burst(self, calls, workers=8):
        """calls (method, path, body) run by workers threads at once, each
        on a connection of its own, so that every HTTP thread takes some.
        Returns [(status, payload)]."""
        results, lock = [], threading.Lock()

        def work(mine):
            for method, path, body in mine:
                try:
                    status, _, payload = self.h.http(method, path, body=body,
                                                     token=self.admin, timeout=30)
                except Exception as error:  # Reported as no answer
                    status, payload = None, repr(error)
                with lock:
                    results.append((status, payload))
        threads = [threading.Thread(target=work, args=(calls[i::workers],))
                   for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        return results

    def every_thread_reads(self, what):
        """Reads until each HTTP thread has taken one (its session then
        last read fairq.api_tokens); every one of them must succeed."""
        reads = [("GET", "/v1/tenants/acme/tokens", None)] * 32

        def all_taken():
            results = self.burst(reads)
            self.assertEqual([r for r in results if r[0] != 200], [], what)
            return self.api_backends() >= THREADS
        self.h.wait(all_taken, 60, f"all {THREADS} HTTP threads to take a call: {what}",
                    describe=lambda: f"{self.api_backends()} took one")

    def test_database_restart(self):
        """Every HTTP thread's connection goes stale under it: while the
        database is unreachable every call answers 503 (never 500), and
        once it is back, or right after a restart of the server, every
        call succeeds: each thread finds its connection cut and makes it
        again before the call's first statement. A session ended in the
        middle of a call is made again at once: a read runs once more, a
        change answers 503."""
        self.start(**FAIRQD)
        h = self.h
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme", send_at=int(time.time()) + HOUR))["id"]
        calls = [("GET", "/v1/tenants/acme/tokens", None), ("GET", f"/v1/requests/{rid}", None),
                 ("GET", "/v1/requests", None), ("PATCH", f"/v1/requests/{rid}", {"priority": 3}),
                 ("POST", "/v1/requests", submit_body("acme", send_at=int(time.time()) + HOUR))]
        self.every_thread_reads("before the database goes away")

        with self.database_blocked():
            results = self.burst(calls * 8)
            self.assertEqual(sorted({s for s, _ in results}), [503],
                             f"calls with the database unreachable: {results!r:.1500}")
            for status, payload in results:
                self.assertEqual(payload.get("error"), "database_unavailable", payload)
        h.wait(lambda: self.api("GET", "/healthz", token=None, timeout=5)[0] == 200, 30,
               "/healthz to answer 200 once PostgreSQL is reachable again", interval=0.2)
        results = self.burst(calls * 8)
        self.assertEqual([r for r in results if r[0] not in (200, 202)], [],
                         "calls once the database is back")

        # A real restart, every thread idle through it: each thread's first
        # call after it meets a connection the server closed
        self.every_thread_reads("before PostgreSQL restarts")
        before = self.count("fairq.requests")
        h.restart_postgres(down_s=DOWN_S)
        self.every_thread_reads("right after PostgreSQL restarted")
        results = self.burst(calls * 8)
        self.assertEqual([r for r in results if r[0] not in (200, 202)], [],
                         "calls after PostgreSQL restarted")
        self.assertEqual(self.count("fairq.requests"), before + 8)

        # A session cut in the middle of a call: the call waits on a lock
        # when its session is ended. A read runs once more and answers;
        # a change answers 503, never 500
        def cut_under(method, path, body):
            answer = []
            call = threading.Thread(target=lambda: answer.append(
                self.api(method, path, body, timeout=90)))
            # A transaction of our own holds the lock until we commit it
            locker = subprocess.Popen(["psql", "-X", "-q", "-d", h.dbname],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
            try:
                locker.stdin.write("BEGIN;\nLOCK TABLE fairq.requests IN ACCESS EXCLUSIVE MODE;\n")
                locker.stdin.flush()
                h.wait(lambda: h.scalar("SELECT count(*) FROM pg_locks WHERE mode ="
                                        " 'AccessExclusiveLock' AND granted"
                                        " AND relation = 'fairq.requests'::regclass") == "1",
                       30, "the lock on fairq.requests")
                call.start()
                # The API's read of the request, waiting on the lock
                waiting = ("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                           " AND query LIKE '%extract(epoch FROM r.finished_at)%'")
                pid = h.wait(lambda: h.scalar(waiting), 30, f"{method} {path} to wait")
                h.scalar(f"SELECT pg_terminate_backend({pid})")
                # The read runs again, and waits again; a change does not
                if method == "GET":
                    h.wait(lambda: h.scalar(waiting) not in (None, pid), 30,
                           f"{method} {path} to run again")
            finally:
                locker.stdin.write("COMMIT;\n")
                locker.stdin.close()
                locker.wait(30)
            call.join(90)
            return answer[0]
        request = self.ok(cut_under("GET", f"/v1/requests/{rid}", None), 200,
                          "a read whose session was ended under it")
        self.assertEqual(request["id"], rid)
        self.assert_error(cut_under("PATCH", f"/v1/requests/{rid}", {"priority": 4}), 503,
                          "a change whose session was ended under it")
        self.assertEqual(self.ok(self.api("PATCH", f"/v1/requests/{rid}", {"priority": 5}),
                                 200, "the next change")["priority"], 5)

    def test_connection_policy(self):
        """One address holding idle connections gets its share only: the
        connections beyond http_connections_per_ip are closed at once,
        another address is served meanwhile, and fairqd closes the idle
        ones after http_idle_timeout_s, after which the first address is
        served again. fairqd's limit of open files holds
        http_connections_max, raised at start if it was lower; a hard limit
        too low for it is refused with a clear message."""
        defaults = fairqd_defaults()
        per_ip = int(defaults["http_connections_per_ip"])
        idle_s = int(defaults["http_idle_timeout_s"])
        total = int(defaults["http_connections_max"])
        # Started with the usual soft limit of 1024 open files: fairqd
        # raises its own
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        low = 1024 if hard == resource.RLIM_INFINITY else min(1024, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
        try:
            self.start(**FAIRQD)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        with open(f"/proc/{self.fairqd.pid}/limits", encoding="utf-8") as f:
            limit = re.search(r"^Max open files\s+(\d+)", f.read(), re.M)
        self.assertGreater(int(limit.group(1)), total,
                           "fairqd's soft limit of open files is below http_connections_max")
        port = self.h.http_port
        auth = b"Authorization: Bearer " + self.admin.encode() + b"\r\n"
        tenants = b"GET /v1/tenants HTTP/1.1\r\nHost: x\r\n" + auth + b"Connection: close\r\n\r\n"

        # The harness's own calls (the wait for /healthz) end first: one
        # fairqd had not closed yet would count against the address's share
        self.h.wait(lambda: server_connections(port) == 0, 10,
                    "fairqd to close the connections of the calls before",
                    describe=lambda: f"{server_connections(port)} open")
        flood = []
        opened = time.monotonic()
        try:
            for _ in range(per_ip + SURPLUS):
                flood.append(connect(port))
            self.h.wait(lambda: sum(closed_by_server(s) for s in flood) >= SURPLUS, 20,
                        "the connections beyond the per-address limit to be closed",
                        describe=lambda: f"{sum(closed_by_server(s) for s in flood)} closed")
            time.sleep(0.5)
            closed = [s for s in flood if closed_by_server(s)]
            self.assertEqual(len(closed), SURPLUS,
                             f"{len(closed)} of {per_ip + SURPLUS} idle connections from one "
                             f"address were closed at once; http_connections_per_ip is {per_ip}")
            # Another address is served meanwhile, with and without a token
            for source in ("127.0.0.2", "127.0.0.3"):
                with connect(port, source) as other:
                    other.sendall(tenants)
                    data, _ = read_all(other, 10)
                self.assertEqual(statuses(data), [200], f"from {source}: {data[:300]!r}")
            with connect(port, "127.0.0.2") as other:
                other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                self.assertEqual(statuses(read_all(other, 10)[0]), [200])
            # The flooding address gets nothing more
            with connect(port) as more:
                more.sendall(tenants)
                data, was_closed = read_all(more, 5)
            self.assertEqual((data, was_closed), (b"", True),
                             "a connection beyond the per-address limit was served")
            self.h.check_alive()
            # libmicrohttpd's line for each refused connection is held to a
            # few a second: a flood does not flood the log
            refusals = self.fairqd.text().count("reached connection limit")
            self.assertLess(refusals, SURPLUS, "each refused connection was logged")
            # The idle ones are closed after the idle timeout, not before
            self.h.wait(lambda: all(closed_by_server(s) for s in flood), idle_s + 15,
                        f"fairqd to close the idle connections (http_idle_timeout_s {idle_s})",
                        interval=0.2)
            took = time.monotonic() - opened
            self.assertGreater(took, idle_s - 1, f"idle connections closed after {took:.1f} s")
            self.note(f"{per_ip + SURPLUS} idle connections: {SURPLUS} refused at once, the "
                      f"others closed after {took:.1f} s")
        finally:
            for s in flood:
                s.close()
        # A request sent a few bytes and then silence is cut off alike
        with connect(port) as slow:
            slow.sendall(b"GET /v1/tenants HTTP/1.1\r\nHost: x\r\nAuthoriz")
            started = time.monotonic()
            data, was_closed = read_all(slow, idle_s + 10)
        self.assertTrue(was_closed, "a request stalled halfway was never cut off")
        self.assertGreater(time.monotonic() - started, idle_s - 1)
        # And the flooding address is served again
        with connect(port) as again:
            again.sendall(tenants)
            self.assertEqual(statuses(read_all(again, 10)[0]), [200])
        self.healthz_ok()

        # A hard limit of open files below http_connections_max: fairqd
        # says so and does not start
        def low_hard_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        argv = self.h.fairqd_argv(dict(FAIRQD, http_listen=f"127.0.0.1:{fq_e2e.free_port()}",
                                       gateway_bind=f"tcp://127.0.0.1:{fq_e2e.free_port()}"))
        done = subprocess.run(argv, preexec_fn=low_hard_limit, capture_output=True, text=True,
                              timeout=60)
        self.assertNotEqual(done.returncode, 0, done.stdout[-2000:])
        self.assertRegex(done.stdout + done.stderr,
                         r"http_connections_max = \d+ needs \d+ open files .* hard limit of "
                         r"open files is 256")

    def smuggle(self, head, body=b""):
        """Writes a request with the headers given (CRLF-separated, no
        final blank line) and then body, on a connection of its own;
        returns (everything answered, whether the server closed)."""
        with connect(self.h.http_port) as sock:
            sock.sendall(head + b"\r\n\r\n" + body)
            return read_all(sock, 5)

    def test_request_smuggling(self):
        """Ambiguous framing (Content-Length with Transfer-Encoding, two
        lengths, a coding other than chunked, a length that is no number)
        is answered 400 once and the connection closed: the request hidden
        in the body, which would create a tenant, never runs."""
        self.start(**FAIRQD)
        auth = b"Authorization: Bearer " + self.admin.encode()

        def put(name, body=b"{}", extra=b""):
            return (b"PUT /v1/tenants/" + name.encode() + b" HTTP/1.1\r\nHost: x\r\n" + auth +
                    b"\r\nContent-Type: application/json\r\n" + extra +
                    b"Content-Length: %d\r\n\r\n" % len(body) + body)

        def chunked(data):
            return b"%x\r\n" % len(data) + data + b"\r\n0\r\n\r\n"

        cases = []
        for i, (headers, body) in enumerate([
                # Chunked and a length: whichever a proxy reads, the other
                # leaves bytes over
                ([b"Content-Length: 5", b"Transfer-Encoding: chunked"], chunked(b"{}")),
                ([b"Transfer-Encoding: chunked", b"Content-Length: 500"], chunked(b"{}")),
                ([b"Content-Length: 2", b"Content-Length: 250"], b"{}"),
                ([b"Content-Length: 2", b"Content-Length: 2"], b"{}"),
                ([b"Transfer-Encoding: gzip"], b"{}"),
                ([b"Transfer-Encoding: gzip, chunked"], chunked(b"{}")),
                ([b"Transfer-Encoding: chunked, chunked"], chunked(b"{}")),
                ([b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked"], chunked(b"{}")),
                ([b"Transfer-Encoding: xchunked"], chunked(b"{}"))]):
            smuggled = f"smuggled{i}"
            head = (b"PUT /v1/tenants/front%d HTTP/1.1\r\nHost: x\r\n" % i + auth + b"\r\n" +
                    b"\r\n".join(headers))
            cases.append((headers, head, body + put(smuggled), smuggled, True))
        # HTTP/1.0 has no chunked coding
        head = (b"PUT /v1/tenants/front10 HTTP/1.0\r\nHost: x\r\n" + auth +
                b"\r\nTransfer-Encoding: chunked")
        cases.append(([b"HTTP/1.0 chunked"], head, chunked(b"{}") + put("smuggled10"),
                       "smuggled10", True))
        # A length that is no number is refused by libmicrohttpd itself,
        # before fairqd sees the call (its answer is its own, not JSON)
        for i, length in enumerate([b"2, 2", b"+2", b"-2", b"0x2", b"2 2"], 11):
            head = (b"PUT /v1/tenants/front%d HTTP/1.1\r\nHost: x\r\n" % i + auth +
                    b"\r\nContent-Length: " + length)
            cases.append(([length], head, b"{}" + put(f"smuggled{i}"), f"smuggled{i}", False))

        for headers, head, body, smuggled, ours in cases:
            what = b" + ".join(headers).decode()
            data, was_closed = self.smuggle(head, body)
            self.assertTrue(was_closed, f"{what}: the connection stayed open: {data[:500]!r}")
            self.assertTrue(data.startswith(b"HTTP/1.1 400 "), f"{what}: {data[:500]!r}")
            if ours:
                # One answer, fairqd's, saying it closes
                self.assertEqual(statuses(data), [400], f"{what}: {data[:800]!r}")
                head_text, _, payload = data.partition(b"\r\n\r\n")
                self.assertIn(b"\r\nconnection: close", head_text.lower(), f"{what}: {data!r}")
                self.assertEqual(json.loads(payload)["error"], "bad_request", f"{what}: {data!r}")
            self.h.check_alive()
        self.assertEqual(self.h.sql("SELECT name FROM fairq.tenants ORDER BY name"), [],
                         "a request in a body ran")

        # Framed one way only, the same requests run, one after the other
        # on one connection
        with connect(self.h.http_port) as sock:
            sock.sendall(put("plain") + put("kept", extra=b"Connection: close\r\n"))
            data, _ = read_all(sock, 10)
        self.assertEqual(statuses(data), [201, 201], data[:1000])
        data, _ = self.smuggle(b"PUT /v1/tenants/chunky HTTP/1.1\r\nHost: x\r\n" + auth +
                               b"\r\nTransfer-Encoding: chunked\r\nConnection: close",
                               chunked(b'{"weight": 2}'))
        self.assertEqual(statuses(data), [201], data[:1000])
        self.assertEqual(self.h.sql("SELECT name, weight FROM fairq.tenants ORDER BY name"),
                         [["chunky", "2"], ["kept", "1"], ["plain", "1"]])

    def test_paths_and_tokens(self):
        """An escaped '/' is part of a segment, never a separator: a tenant
        named "acme/tokens" is not acme's token list, and request
        "11/cancel" does not cancel request 11. Segments are decoded after
        the path is cut, and query values as before. A bearer token is the
        whole header: with a NUL and more after it, it is no token."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        self.new_token("acme")
        rid = self.submit_ok(submit_body("acme", send_at=int(time.time()) + HOUR))["id"]
        for method, path in (("GET", "/v1/tenants/acme%2ftokens"),
                             ("GET", "/v1/tenants/acme%2Ftokens"),
                             ("POST", f"/v1/requests/{rid}%2fcancel"),
                             ("POST", f"/v1/requests/{rid}%2Fpause"),
                             ("GET", f"/v1/requests/{rid}%2frejects"),
                             ("GET", f"/v1/requests/{rid}%00"),
                             ("GET", "/v1/tenants/acme%252ftokens")):
            self.assert_error_in(self.api(method, path), (400, 404), f"{method} {path}")
        self.assertEqual(self.get_request(rid)["status"], "accepted", "an escaped / routed")
        # Escapes of ordinary characters still name the same things
        self.assertEqual(self.ok(self.api("GET", "/v1/tenants/%61cme"))["name"], "acme")
        tokens = self.ok(self.api("GET", "/v1/tenants/ac%6De/tokens"))
        self.assertEqual(len(tokens["tokens"]), 1)
        self.assertEqual([r["id"] for r in self.ok(
            self.api("GET", "/v1/requests?tenant=%61c%6De&limit=10"))["requests"]], [rid])
        escaped = "".join(f"%{ord(c):02X}" for c in str(rid))
        self.assertEqual(self.ok(self.api("POST", f"/v1/requests/{escaped}/pause"))["status"],
                         "paused")
        self.assert_error(self.api("GET", "/v1/messages?to=%ff%fe"), 400, "invalid UTF-8 query")

        # Bearer tokens, exactly
        port = self.h.http_port

        def tenants_with(authorization, last=False, eol=b"\r\n"):
            """GET /v1/tenants with the Authorization header given, among
            others or last of them, lines ended by eol."""
            lines = [b"GET /v1/tenants HTTP/1.1", b"Host: x", b"Connection: close"]
            lines.insert(len(lines) if last else 2, authorization)
            with connect(port) as sock:
                sock.sendall(eol.join(lines) + eol + eol)
                return statuses(read_all(sock, 10)[0])
        token = self.admin.encode()
        for last in (False, True):
            for eol in (b"\r\n", b"\n"):
                self.assertEqual(tenants_with(b"Authorization: Bearer " + token, last, eol),
                                 [200], (last, eol))
            self.assertEqual(tenants_with(b"Authorization: bearer " + token, last), [200])
            for bad in (b"Bearer " + token + b"\x00garbage", b"Bearer  " + token,
                        b"Bearer\t" + token, b"Bearer " + token + b",x",
                        b"Bearer " + token + b" x", b"Bearer " + token + b"\xff",
                        b"Bearer " + token[:-1] + b"\x00" + token[-1:], b"Bearer=" + token,
                        b"Bearer " + b"\x00" + token):
                for eol in (b"\r\n", b"\n"):
                    self.assertEqual(tenants_with(b"Authorization: " + bad, last, eol), [401],
                                     (bad, last, eol))
        # Among other headers, a NUL anywhere in the line is seen (as the
        # last header, libmicrohttpd 0.9.75's buffer cannot tell NULs right
        # before the line's end from the end of the header block)
        for bad in (b"\x00", b"\x00\x00x", b"\x00\r\nX-Other: 1"):
            self.assertEqual(tenants_with(b"Authorization: Bearer " + token + bad), [401], bad)
        self.assertEqual(tenants_with(b"Authorization: Bearer " + token + b"\r\n" +
                                      b"Authorization: Bearer " + token), [401],
                         "two Authorization headers")
        self.healthz_ok()

    def test_from_and_database_words(self):
        """A from that is not one address is a 400 naming it, and stores
        nothing; what the database refuses is answered in fairq's words,
        never in the database's (its constraints, relations, bytes)."""
        self.start(**FAIRQD)
        self.put_tenant("acme")
        later = int(time.time()) + HOUR
        for bad in ("news", "a@b, c@d", "a@b.example,c@d.example", "news\u2028@acme.example",
                    "Acme <news@acme.example>", "news@acme", "@acme.example", "news@",
                    "news@@acme.example", "news@acme..example", "", "not an address",
                    "a@b.example, c@d.example", "news@acme.example\r\nBcc: v@evil.test",
                    "news@acme.example\n"):
            answer = self.submit(submit_body("acme", send_at=later, from_=bad))
            self.assert_error(answer, 400, f"from {bad!r}")
            self.assertRegex(answer[2]["detail"], r"^invalid from address: \S", answer[2])
        self.assertEqual(self.count("fairq.requests"), 0)
        self.submit_ok(submit_body("acme", send_at=later, from_="first.last+x@news.acme.example"))

        database_words = re.compile(r"violates|constraint|relation|byte sequence|fairq\.|_check|"
                                    r"SQLSTATE|ERROR|syntax|out of range for type", re.I)
        cases = [
            ("a tab in the subject", "POST", "/v1/requests",
             submit_body("acme", send_at=later, subject="Hi\t{{name}}"), "subject"),
            ("a subject of 2,000 bytes", "POST", "/v1/requests",
             submit_body("acme", send_at=later, subject="s" * 2000), "subject"),
            ("a body over 1 MiB", "POST", "/v1/requests",
             submit_body("acme", send_at=later, body="b" * (1024 * 1024 + 1)), "body"),
            ("a send_at past year 9999", "POST", "/v1/requests",
             submit_body("acme", send_at=99999999999999), "send_at"),
            ("an unclosed tag", "POST", "/v1/requests",
             submit_body("acme", send_at=later, body="Dear {{name"), "body"),
            ("a send_at past year 9999", "PATCH", "/v1/requests/1", {"send_at": 99999999999999},
             "send_at"),
            ("invalid UTF-8 in a query", "GET", "/v1/messages?domain=%c3%28", None, "domain"),
        ]
        for label, method, path, body, word in cases:
            answer = self.api(method, path, body)
            self.assert_error(answer, 400, label)
            detail = answer[2]["detail"]
            self.assertNotRegex(detail, database_words, f"{label}: {detail!r}")
            self.assertIn(word, detail, f"{label}: {detail!r}")
        self.assertEqual(self.count("fairq.requests"), 1)

    def test_submit_memory(self):
        """A submit of 20 MB grows fairqd by at most MEMORY_FACTOR times its
        body (api/API.md), and its recipients are all stored."""
        # AddressSanitizer keeps freed memory in quarantine to catch its
        # use: what fairqd holds is measured without it
        options = os.environ.get("ASAN_OPTIONS", "")
        os.environ["ASAN_OPTIONS"] = options + ":quarantine_size_mb=0"
        try:
            self.start(**FAIRQD)
        finally:
            os.environ["ASAN_OPTIONS"] = options
        self.put_tenant("acme")
        later = int(time.time()) + HOUR
        # Every thread and connection is made, every path taken once
        for _ in range(THREADS * 2):
            self.submit_ok(submit_body("acme", send_at=later,
                                       recipients=fq_api.recipients(1000)))
        n = 0
        parts, size = [], 0
        while size < BIG_BODY:
            part = json.dumps({"to": f"user{n}@example.org", "fields": {"name": f"User {n}"}})
            parts.append(part)
            size += len(part) + 1
            n += 1
        body = json.dumps(submit_body("acme", send_at=later, recipients=[])).encode()
        body = body.replace(b'"recipients": []', b'"recipients": [' +
                            ",".join(parts).encode() + b"]")
        before = vm_hwm_kib(self.fairqd.pid)
        started = time.monotonic()
        request = self.ok(self.api("POST", "/v1/requests", raw=body, timeout=300), 202, "submit")
        took = time.monotonic() - started
        after = vm_hwm_kib(self.fairqd.pid)
        grown = (after - before) * 1024
        self.note(f"submit of {len(body) / 1e6:.1f} MB ({n} recipients) in {took:.1f} s: "
                  f"fairqd's peak grew {grown / 1e6:.1f} MB ({grown / len(body):.2f} times "
                  f"the body)")
        self.assertEqual(request["total"], n)
        self.assertLessEqual(grown, MEMORY_FACTOR * len(body),
                             f"fairqd grew {grown / len(body):.2f} times the body")
        self.assertEqual(int(self.h.scalar(
            "SELECT sum(json_array_length(recipients)) FROM fairq.recipient_chunks"
            f" WHERE request_id = {request['id']}")), n)


if __name__ == "__main__":
    fq_api.main()
