#!/usr/bin/python3
"""smtp_sink.py: a real SMTP server for fairq's integration tests.

fairq's rule is that integration tests talk to a real SMTP server, never to a
mock of one. This is that server: aiosmtpd (python3-aiosmtpd on Debian 12)
speaking ESMTP on a local TCP port, writing every message it accepts to a JSON
lines file, and answering as a rules file tells it to, so that a test can make
it refuse, defer, stall or hang up on chosen recipients.

Usage:

    /usr/bin/python3 tests/e2e/smtp_sink.py --port PORT --out FILE.jsonl
        [--rules FILE.json] [--host 127.0.0.1] [--auth USER:PASSWORD]
        [--quit-on-eof]

  --port PORT     the port to listen on; 0 picks a free one.
  --out FILE      where accepted messages go, one JSON object a line,
                  appended and flushed as each message is accepted.
  --rules FILE    how to answer (below); absent or missing: accept all.
  --host HOST     the address to listen on (default 127.0.0.1).
  --auth U:P      offer AUTH (PLAIN, LOGIN) over plain TCP and accept only
                  this user and password; without it, AUTH is not offered.
  --quit-on-eof   exit when stdin reaches end of file. A test gives the sink
                  a pipe as stdin and keeps the other end: if the test dies,
                  however it dies, the sink follows it instead of leaking.

Once listening, the sink prints "ready PORT" (the actual port) on stdout and
flushes it; a test waits for that line before connecting. SIGTERM and SIGINT
stop it cleanly (exit status 0).

Each accepted message is one line of --out:

    {"t": 1700000000.25,        unix time of acceptance
     "conn": 3,                 which connection carried it: connections are
                                numbered from 1 in the order they were
                                opened, so two messages with the same "conn"
                                came over one reused connection
     "helo": "sender.example",  the name the client gave in EHLO/HELO
     "auth": "user" or null,    the user that authenticated, if any
     "from": "a@example.com",   envelope sender (MAIL FROM)
     "to": ["b@example.com"],   envelope recipients (RCPT TO) accepted
     "subject": "Café",         the Subject header, RFC 2047 decoded
     "message_id": "<...>",     the Message-ID header, verbatim
     "headers": {"Subject": "=?UTF-8?B?Q2Fmw6k=?=", ...},
                                every header as sent (unfolded: folding line
                                breaks removed); a repeated name keeps its
                                last value
     "content_type": "text/plain",
     "body": "...",             the text body, transfer encoding and charset
                                decoded (the first text part of a multipart),
                                its line ends as "\\n"
     "raw": "..."}              the message as received, dot-unstuffed; bytes
                                that are not UTF-8 become U+FFFD

The rules file is JSON:

    {"default": "250 OK",
     "rules": [{"match": "nobody@", "reply": "550 5.1.1 no such user"},
               {"match": "slow@", "reply": "250 OK", "delay": 3.0},
               {"match": "later@", "reply": "451 4.3.0 try later",
                "at": "data"},
               {"match": "drop@", "reply": "disconnect"},
               {"match": "shop@", "reply": "disconnect", "at": "mail",
                "times": 1}]}

  * A rule applies to a recipient whose address contains "match" (to the
    sender for "at": "mail", to the client's IP address for "at":
    "connect"). The first rule that matches decides.
  * "at" is "rcpt" (the default: the reply to that RCPT TO), "data" (the
    reply to the DATA that follows, after the message was received),
    "mail" (the reply to MAIL FROM) or "connect" (the greeting: a reply
    that is not 2xx, "421 4.7.0 try again later", is sent instead of the
    220 and the connection closed, as a server that turns clients away
    does; a 2xx one lets the usual greeting follow, after the delay).
  * "times" (optional) is how many times the rule applies; after that it
    is skipped. {"times": 1} fails a first attempt only.
  * "reply" is the full SMTP reply line, code first. "disconnect" instead
    closes the connection without a reply.
  * "delay" (seconds, optional) is waited before replying: for timeouts.
  * "default" is the reply to DATA when no "data" rule matched: "250 OK" if
    absent. Give it a 4xx or 5xx to refuse every message at DATA time.
  * Messages not accepted (any reply but 2xx at DATA) are not written.

The file is read again each time a rule is looked up, and reloaded when its
content changed, so a test can change the sink's behaviour in the middle of
a run (its modification time would not do: it ticks too coarsely to tell
two quick rewrites apart). To change it, write a new file and rename it
over the old one, which is atomic; a file that does not parse (caught half
written) leaves the previous rules in force until it does. Loading new
content starts the "times" counts afresh.
"""

import argparse
import asyncio
import email
import email.policy
import json
import logging
import os
import signal
import sys
import time

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

# The reply given when no rule says otherwise.
DEFAULT_REPLY = "250 OK"

# The name the sink gives in its greeting. Fixed, so that aiosmtpd does not
# look up the host's FQDN (a DNS query that can take seconds) at each start.
SINK_HOSTNAME = "smtp-sink.test"

# Idle seconds after which the sink hangs up on a client, as a real server
# does (Postfix waits 300 s). Long enough for any test.
IDLE_TIMEOUT_S = 300

# Reading stdin for --quit-on-eof: the size of one read.
STDIN_READ_SIZE = 4096


class Rules:
    """The rules file, re-read when it changes."""

    def __init__(self, path):
        self.path = path
        self.raw = None  # The file's content when last loaded
        self.default = DEFAULT_REPLY
        self.rules = []
        self.used = []  # Times each rule applied

    def _refresh(self):
        # Read at every use, not when the mtime changes: file times tick
        # coarsely (a few milliseconds), so two quick rewrites can share one
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
            self.raw, self.default, self.rules, self.used = None, DEFAULT_REPLY, [], []
            return
        try:
            spec = json.loads(raw)
        except ValueError as e:
            # Half written: keep the previous rules, try again next time
            print(f"smtp_sink: rules not loaded yet: {e}", file=sys.stderr)
            return
        self.raw = raw
        self.default = spec.get("default", DEFAULT_REPLY)
        self.rules = spec.get("rules", [])
        self.used = [0] * len(self.rules)

    def find(self, address, at):
        """The first rule for address at "mail", "rcpt" or "data" that has
        times left, counted as used; or None."""
        self._refresh()
        for i, rule in enumerate(self.rules):
            if rule.get("at", "rcpt") != at or rule.get("match", "") not in address:
                continue
            if "times" in rule and self.used[i] >= rule["times"]:
                continue
            self.used[i] += 1
            return rule
        return None

    def default_data_reply(self):
        self._refresh()
        return self.default


class Sink:
    """The handler: decides replies and records accepted messages."""

    def __init__(self, rules, out):
        self.rules = rules
        self.out = out
        self.connections = 0

    async def _apply(self, server, rule):
        """Waits out the rule's delay; returns its reply, or None after
        hanging up on the client."""
        delay = rule.get("delay", 0)
        if delay:
            await asyncio.sleep(delay)
        if rule.get("reply") == "disconnect":
            server.transport.close()
            return None
        return rule.get("reply", DEFAULT_REPLY)

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        reply = DEFAULT_REPLY
        rule = self.rules.find(address, "mail")
        if rule is not None:
            reply = await self._apply(server, rule)
            if reply is None:
                return "421 4.4.2 closing connection"
        if reply.startswith("2"):
            envelope.mail_from = address
            envelope.mail_options.extend(mail_options)
        return reply

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        reply = DEFAULT_REPLY
        rule = self.rules.find(address, "rcpt")
        if rule is not None:
            reply = await self._apply(server, rule)
            if reply is None:
                return "421 4.4.2 closing connection"
        if reply.startswith("2"):
            envelope.rcpt_tos.append(address)
            envelope.rcpt_options.extend(rcpt_options)
        return reply

    async def handle_DATA(self, server, session, envelope):
        reply = None
        for rcpt in envelope.rcpt_tos:
            rule = self.rules.find(rcpt, "data")
            if rule is not None:
                reply = await self._apply(server, rule)
                if reply is None:
                    return "421 4.4.2 closing connection"
                break
        if reply is None:
            reply = self.rules.default_data_reply()
        if reply.startswith("2"):
            self._record(session, envelope)
        return reply

    def _record(self, session, envelope):
        raw = envelope.original_content
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        headers = {}
        for name, value in msg.raw_items():
            headers[name] = value.replace("\r\n", "").replace("\n", "")
        body_part = msg.get_body(preferencelist=("plain", "html"))
        body = body_part.get_content() if body_part is not None else ""
        body = body.replace("\r\n", "\n")
        auth = None
        if session.authenticated and isinstance(session.auth_data, LoginPassword):
            auth = session.auth_data.login.decode("utf-8", "replace")
        record = {
            "t": time.time(),
            "conn": getattr(session, "fq_conn", 0),
            "helo": session.host_name,
            "auth": auth,
            "from": envelope.mail_from,
            "to": list(envelope.rcpt_tos),
            "subject": str(msg.get("Subject", "")),
            "message_id": headers.get("Message-ID"),
            "headers": headers,
            "content_type": msg.get_content_type(),
            "body": body,
            "raw": raw.decode("utf-8", "replace"),
        }
        self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.out.flush()


class CountingSMTP(SMTP):
    """aiosmtpd's server, numbering each client connection."""

    def connection_made(self, transport):
        # After STARTTLS, aiosmtpd calls this again for the same client with
        # a fresh session: keep the number the connection already has.
        if not hasattr(self, "fq_conn"):
            self.event_handler.connections += 1
            self.fq_conn = self.event_handler.connections
        super().connection_made(transport)
        self.session.fq_conn = self.fq_conn

    async def _handle_client(self):
        # aiosmtpd greets every client with 220 and has no hook before it:
        # a "connect" rule answers first, for a server that turns clients
        # away at the greeting (overloaded, throttling)
        peer = self.session.peer[0] if self.session.peer else ""
        rule = self.event_handler.rules.find(peer, "connect")
        if rule is not None:
            reply = await self.event_handler._apply(self, rule)
            if reply is None:
                return
            if not reply.startswith("2"):
                await self.push(reply)
                self.transport.close()
                return
        await super()._handle_client()


def make_authenticator(user, password):
    def authenticate(server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword)
              and auth_data.login == user.encode()
              and auth_data.password == password.encode())
        if ok:
            return AuthResult(success=True, auth_data=auth_data)
        # handled=False: aiosmtpd itself replies "535 5.7.8 Authentication
        # credentials invalid" (handled=True would leave the client waiting)
        return AuthResult(success=False, handled=False)
    return authenticate


async def serve(args):
    loop = asyncio.get_running_loop()
    rules = Rules(args.rules)
    out = open(args.out, "a", encoding="utf-8")
    handler = Sink(rules, out)

    options = {"hostname": SINK_HOSTNAME, "timeout": IDLE_TIMEOUT_S, "loop": loop}
    if args.auth:
        user, _, password = args.auth.partition(":")
        options.update(authenticator=make_authenticator(user, password),
                       auth_require_tls=False)
    server = await loop.create_server(lambda: CountingSMTP(handler, **options),
                                      host=args.host, port=args.port)

    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if args.quit_on_eof:
        def on_stdin():
            if not os.read(sys.stdin.fileno(), STDIN_READ_SIZE):
                loop.remove_reader(sys.stdin.fileno())
                stop.set()
        loop.add_reader(sys.stdin.fileno(), on_stdin)

    port = server.sockets[0].getsockname()[1]
    print(f"ready {port}", flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()
    out.close()


def main():
    # aiosmtpd logs every connection, and warns about its own use of a
    # deprecated attribute at each AUTH: only errors belong in test output
    logging.getLogger("mail.log").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description="SMTP sink for fairq's tests")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rules")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--auth")
    parser.add_argument("--quit-on-eof", action="store_true")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
