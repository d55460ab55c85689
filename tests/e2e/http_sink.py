#!/usr/bin/python3
"""http_sink.py: a real HTTP(S) server for fairq's tests of the http channel.

fairq's rule is that tests talk to a real server, never to a mock of one.
This is the HTTP one, in Python's standard library alone: an HTTP/1.1 server
(connections kept alive) on a local TCP port, writing down every request it
receives, and answering as the request's own query string tells it to, so
that a test can make it defer, refuse, stall or redirect any request.

Usage:

    /usr/bin/python3 tests/e2e/http_sink.py --port PORT --out FILE.jsonl
        [--host 127.0.0.1] [--tls-dir DIR] [--quit-on-eof]

  --port PORT     the port to listen on; 0 picks a free one.
  --out FILE      where requests go, one JSON object a line, appended and
                  flushed as each request has been read (before any delay).
  --host HOST     the address to listen on (default 127.0.0.1).
  --tls-dir DIR   speak HTTPS with a self-signed certificate for 127.0.0.1
                  and localhost: DIR/cert.pem (give it to a client as its CA
                  file to trust the sink) and DIR/key.pem, made with openssl
                  when not there yet.
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
     "body": "..."}          the request's body (Content-Length bytes), as
                             UTF-8 (bytes that are not become U+FFFD)

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
"""

import argparse
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

# The self-signed certificate: valid a day, for the names tests use.
CERT_DAYS = "1"
CERT_SUBJECT = "/CN=fairq-http-sink"
CERT_NAMES = "subjectAltName=IP:127.0.0.1,DNS:localhost"


class Sink:
    """What the handlers share: the output file and the connection count."""

    def __init__(self, out_path):
        self.out = open(out_path, "a", encoding="utf-8")
        self.lock = threading.Lock()
        self.connections = 0

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
        self.server.sink.record({
            "t": time.time(),
            "conn": self.conn_number,
            "method": self.command,
            "path": self.path,
            "headers": {name: value for name, value in self.headers.items()},
            "body": body.decode("utf-8", errors="replace"),
        })
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query,
                                      keep_blank_values=True)
        ask = {name: values[-1] for name, values in query.items()}
        if "delay" in ask:
            time.sleep(float(ask["delay"]))
        status = int(ask.get("status", "200"))
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
    parser.add_argument("--quit-on-eof", action="store_true")
    args = parser.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    server = Server((args.host, args.port), Handler)
    server.sink = Sink(args.out)
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
