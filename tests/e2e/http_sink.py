#!/usr/bin/python3
"""http_sink.py: a real HTTP(S) server for fairq's tests of the http channel.

fairq's rule is that tests talk to a real server, never to a mock of one.
This is the HTTP one, in Python's standard library alone: an HTTP/1.1 server
(connections kept alive) on a local TCP port, writing down every request it
receives, and answering as its rules file or the request's own query string
tells it to, so that a test can make it defer, refuse, stall or redirect any
request. It verifies Standard Webhooks signatures itself (with the secrets
it is given) and writes down whether each request verified.

Usage:

    /usr/bin/python3 tests/e2e/http_sink.py --port PORT --out FILE.jsonl
        [--host 127.0.0.1] [--tls-dir DIR] [--rules FILE.json]
        [--secret whsec_...]... [--quit-on-eof]

  --port PORT     the port to listen on; 0 picks a free one.
  --out FILE      where requests go, one JSON object a line, appended and
                  flushed as each request has been read (before any delay).
  --host HOST     the address to listen on (default 127.0.0.1).
  --tls-dir DIR   speak HTTPS with a self-signed certificate for 127.0.0.1
                  and localhost: DIR/cert.pem (give it to a client as its CA
                  file to trust the sink) and DIR/key.pem, made with openssl
                  when not there yet.
  --rules FILE    how to answer chosen paths (below); absent or missing:
                  as the query string says.
  --secret S      a Standard Webhooks signing secret ("whsec_" and base64)
                  to verify signed requests with; may be given several
                  times (a request verifies if one of them signed it).
                  More can be listed in the rules file ("secrets").
  --quit-on-eof   exit when stdin reaches end of file. A test gives the sink
                  a pipe as stdin and keeps the other end: if the test dies,
                  however it dies, the sink follows it instead of leaking.

Once listening, the sink prints "ready PORT" (the actual port) on stdout and
flushes it; a test waits for that line before connecting. SIGTERM and SIGINT
stop it (exit status 0).

Each request is one line of --out:

    {"t": 1700000000.25,     unix time it was read
     "conn": 3,              which connection carried it: numbered from 1 in
                             the order they were accepted, so two requests
                             with the same "conn" came over one connection
     "method": "POST",
     "path": "/hook?status=429",
     "headers": {"Content-Type": "application/json", ...},
                             every header as received; a repeated name keeps
                             its last value
     "body": "...",          the request's body (Content-Length bytes), as
                             UTF-8 (bytes that are not become U+FFFD)
     "status": 200,          the status it is answered with
     "rule": 0 or null,      the index of the rule that chose the answer
     "verified": true,       Standard Webhooks: true when webhook-id,
                             webhook-timestamp and webhook-signature are
                             there, the timestamp is within 5 minutes of
                             now and one "v1," signature is the HMAC of a
                             known secret; false when signed otherwise (or
                             signed with no secret known); null when the
                             request carries none of the three headers
     "verify_error": null}   why it did not verify (text), else null

The answer, from the query string of the request's path (any path):

  status=N         the status (default 200)
  body=TEXT        the body (default "ok"; "" for none)
  big=N            a body of N bytes ("x" repeated) instead
  retry_after=V    a Retry-After header with value V (seconds or a date)
  location=URL     a Location header (for redirects)
  delay=S          seconds to wait before answering (timeouts)
  close=1          close the connection after answering

Every answer has a Content-Length, so the connection stays open for the
client's next request unless close=1.

The rules file, when given, decides before the query string:

    {"secrets": ["whsec_..."],
     "rules": [{"match": "/hook/k429", "status": 429, "retry_after": "3",
                "body": "slow down", "times": 1},
               {"match": "/hook/k500", "status": 500, "times": 2},
               {"match": "/hook/k400", "status": 400, "body": "bad id"},
               {"match": "/slow/", "status": 200, "delay": 2.5}]}

  * A rule applies to a request whose path (with its query) contains
    "match"; the first rule that applies decides the whole answer: its
    "status" (default 200), "body" (default "ok"), "retry_after", "location",
    "delay" and "close", as the query string's of the same names.
  * "times" (optional) is how many requests the rule answers; after that
    it is skipped ({"times": 1}: a first attempt only).
  * The file is read again at every request and reloaded when its content
    changed (a test replaces it atomically: write, then rename); loading
    new content starts the "times" counts afresh. A file that does not
    parse (caught half written) leaves the previous rules in force.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Seconds a kept connection may stay idle before the sink closes it, as a
# real server does. Long enough for any test.
IDLE_TIMEOUT_S = 60

# Reading stdin for --quit-on-eof: the size of one read.
STDIN_READ_SIZE = 4096

# Standard Webhooks: how far a webhook-timestamp may be from now (its
# receivers' usual tolerance, against replays).
SIGNATURE_TOLERANCE_S = 300

# The self-signed certificate: valid a day, for the names tests use.
CERT_DAYS = "1"
CERT_SUBJECT = "/CN=fairq-http-sink"
CERT_NAMES = "subjectAltName=IP:127.0.0.1,DNS:localhost"


class Rules:
    """The rules file, re-read when its content changes (as smtp_sink.py's)."""

    def __init__(self, path):
        self.path = path
        self.raw = None  # The file's content when last loaded
        self.rules = []
        self.secrets = []
        self.used = []  # Times each rule applied

    def _refresh(self):
        if not self.path:
            return
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = None
        if raw == self.raw:
            return
        if raw is None:
            self.raw, self.rules, self.secrets, self.used = None, [], [], []
            return
        try:
            spec = json.loads(raw)
        except ValueError as e:
            print(f"http_sink: rules not loaded yet: {e}", file=sys.stderr)
            return
        self.raw = raw
        self.rules = spec.get("rules", [])
        self.secrets = spec.get("secrets", [])
        self.used = [0] * len(self.rules)

    def find(self, path):
        """(index, rule) of the first rule for path with times left, counted
        as used; or (None, None). The caller holds the sink's lock."""
        self._refresh()
        for i, rule in enumerate(self.rules):
            if rule.get("match", "") not in path:
                continue
            if "times" in rule and self.used[i] >= rule["times"]:
                continue
            self.used[i] += 1
            return i, rule
        return None, None

    def known_secrets(self):
        self._refresh()
        return list(self.secrets)


def secret_key(secret):
    """The HMAC key of a Standard Webhooks secret: the bytes of the base64
    after "whsec_"."""
    text = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    return base64.b64decode(text, validate=True)


def verify_signature(headers, body, secrets, now):
    """Standard Webhooks: (True, None) when signed by one of secrets, (None,
    None) when not signed at all, else (False, why). headers: lower-cased
    names to values; body: the raw bytes."""
    names = ("webhook-id", "webhook-timestamp", "webhook-signature")
    present = [n for n in names if n in headers]
    if not present:
        return None, None
    if len(present) != len(names):
        return False, "missing " + ", ".join(n for n in names if n not in headers)
    msg_id, stamp, signatures = (headers[n] for n in names)
    try:
        timestamp = int(stamp)
    except ValueError:
        return False, f"webhook-timestamp {stamp!r} is not an integer"
    if abs(now - timestamp) > SIGNATURE_TOLERANCE_S:
        return False, f"webhook-timestamp {timestamp} is {now - timestamp:.0f} s from now"
    if not secrets:
        return False, "no secret known to verify with"
    signed = msg_id.encode() + b"." + stamp.encode() + b"." + body
    expected = [base64.b64encode(hmac.new(secret_key(s), signed, hashlib.sha256).digest())
                .decode() for s in secrets]
    given = [sig.split(",", 1)[1] for sig in signatures.split()
             if sig.startswith("v1,")]
    if not given:
        return False, f"no v1 signature in {signatures!r}"
    for g in given:
        if any(hmac.compare_digest(g, e) for e in expected):
            return True, None
    return False, "no signature matches a known secret"


class Sink:
    """What the handlers share: the output file, the connection count, the
    rules and the secrets."""

    def __init__(self, out_path, rules_path=None, secrets=()):
        self.out = open(out_path, "a", encoding="utf-8")
        self.lock = threading.Lock()
        self.connections = 0
        self.rules = Rules(rules_path)
        self.secrets = list(secrets)

    def decide(self, path):
        """(rule index, rule) for path, and every secret known."""
        with self.lock:
            index, rule = self.rules.find(path)
            return index, rule, self.secrets + self.rules.known_secrets()

    def next_connection(self):
        with self.lock:
            self.connections += 1
            return self.connections

    def record(self, entry):
        with self.lock:
            self.out.write(json.dumps(entry) + "\n")
            self.out.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fairq-http-sink"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()
        self.conn_number = self.server.sink.next_connection()

    def log_message(self, format, *args):  # noqa: A002 (the base's name)
        pass  # Quiet: the test reads --out

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        received = time.time()
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query,
                                      keep_blank_values=True)
        ask = {name: values[-1] for name, values in query.items()}
        index, rule, secrets = self.server.sink.decide(self.path)
        if rule is not None:
            ask = {name: str(rule[name]) for name in
                   ("status", "body", "retry_after", "location", "delay") if name in rule}
            if rule.get("close"):
                ask["close"] = "1"
        status = int(ask.get("status", "200"))
        lowered = {name.lower(): value for name, value in self.headers.items()}
        try:
            verified, why = verify_signature(lowered, body, secrets, received)
        except ValueError as e:  # A secret that is not base64
            verified, why = False, f"bad secret: {e}"
        self.server.sink.record({
            "t": received,
            "conn": self.conn_number,
            "method": self.command,
            "path": self.path,
            "headers": {name: value for name, value in self.headers.items()},
            "body": body.decode("utf-8", errors="replace"),
            "status": status,
            "rule": index,
            "verified": verified,
            "verify_error": why,
        })
        if "delay" in ask:
            time.sleep(float(ask["delay"]))
        if "big" in ask:
            payload = b"x" * int(ask["big"])
        else:
            payload = ask.get("body", "ok").encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            if "retry_after" in ask:
                self.send_header("Retry-After", ask["retry_after"])
            if "location" in ask:
                self.send_header("Location", ask["location"])
            if ask.get("close") == "1":
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout): nothing to answer to
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _answer


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # A client that hung up or refused our certificate: not news


def make_certificate(directory):
    """DIR/cert.pem and DIR/key.pem, made once."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    if not (os.path.exists(cert) and os.path.exists(key)):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
             "-days", CERT_DAYS, "-subj", CERT_SUBJECT, "-addext", CERT_NAMES],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def quit_on_eof():
    while os.read(sys.stdin.fileno(), STDIN_READ_SIZE):
        pass
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--tls-dir")
    parser.add_argument("--rules")
    parser.add_argument("--secret", action="append", default=[])
    parser.add_argument("--quit-on-eof", action="store_true")
    args = parser.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    server = Server((args.host, args.port), Handler)
    server.sink = Sink(args.out, args.rules, args.secret)
    if args.tls_dir:
        cert, key = make_certificate(args.tls_dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        # The handshake in the connection's own thread, not in accept():
        # a client that refuses the certificate must not stall the others
        server.socket = context.wrap_socket(server.socket, server_side=True,
                                            do_handshake_on_connect=False)
    if args.quit_on_eof:
        threading.Thread(target=quit_on_eof, daemon=True).start()
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
