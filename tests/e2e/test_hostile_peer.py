#!/usr/bin/python3
"""test_hostile_peer.py: a peer of fairqd's gateway that lies.

fairq-sender is one client of fairqd's gateway, not the only possible one:
whoever holds a key listed in gateway_allow_dir (or reaches a gateway in
insecure mode) can send any frame. The peer here is a pyzmq DEALER that
joins as a sender's runtime does (GW_HELLO, GW_WELCOME, heartbeats) and
then sends what no honest sender would:

  * every message type the schemas define (runtime/fq_sysmsg.def and
    messages/fq_messages.def, read at run time so new types are covered) and
    some unknown ones, to every actor of fairqd and to paths that name
    none, as tell, ask and reply, with correlation ids 0, 1 and 2^64-1,
    with valid bodies (naming the ids of real messages) and with garbage;
  * frames that are not envelopes at all;
  * the sender protocol out of turn: outcomes without HELLO, outcomes for
    messages it never held or another sender holds, fairqd's internal
    messages (STORE_ACKS, STORE_NACK, DISPATCH, SETTLED, DRAIN) and a
    REPLY with correlation id 0.

What must hold, as a user sees it: fairqd keeps running (no abort, no
sanitizer report); no message row is sent, failed or dead, nor has an
attempt counted, unless the sink received it or a real sender reported on
it; a paused request's messages are not handed out; asks that fairqd
refuses are answered with ERROR and nothing else comes back but the
sender protocol's answers; and a real fairq-sender then delivers a fresh
request completely.

Each test sends its frames as one batch (or a few), waits for the gateway
to have read them (an ask sent last comes back once every frame before it
was handled) and for their effects to settle, then checks.
"""

import collections
import os
import re
import sys
import threading
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import msgpack  # noqa: E402  (python3-msgpack)
import zmq  # noqa: E402  (python3-zmq, with CURVE)

import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, message_id_of  # noqa: E402

# Envelope flags (runtime/fq_envelope.h)
TELL, ASK, REPLY = 0, 1, 2
CORRS = (0, 1, 2**64 - 1)
U64_MAX, U32_MAX, I64_MIN = 2**64 - 1, 2**32 - 1, -2**63

# Generous: no sender dies on purpose here, and a real sender declared dead
# by a loaded machine would reconnect but blur what the checks see
HEARTBEAT_MS = 500
HEARTBEAT_TIMEOUT_MS = 5000
FAIRQD = {"poll_ms": 200, "heartbeat_ms": HEARTBEAT_MS,
          "heartbeat_timeout_ms": HEARTBEAT_TIMEOUT_MS}
SENDER_HEARTBEAT = ["--heartbeat-ms", str(HEARTBEAT_MS),
                    "--heartbeat-timeout-ms", str(HEARTBEAT_TIMEOUT_MS)]
CONCURRENCY = 8
PAUSE_SEEN_S = 1.5

# How long the forged frames' effects get to show once the gateway has read
# them all: the store writes within ack_flush_ms (20 ms), a leaked message
# reaches the sink within a few hundred ms, even under ASan
SETTLE_S = 2.0
# How long a batch may take the gateway to read (about 8,000 frames, ASan)
BATCH_TIMEOUT_S = 60
# A sink rule that holds deliveries to @held.test at RCPT for this long, so
# that those messages stay in flight at the real sender while the forged
# outcomes arrive and are checked (about 3 s after s1 took them on a quiet
# machine, 10 s on a loaded one), and well under fairq-sender's 30 s SMTP
# time-out
HOLD_S = 12

# The peer's system name and the path of its (pretend) sender actor
PEER = "hostile"
PEER_SENDER = "/user/sender"

# Frames fairqd may send a peer whatever it forged: the gateway's own
# (GW_*), ERROR for a refused ask, WELCOME for a HELLO to the dispatcher
ANSWERS = {"ERROR", "GW_WELCOME", "GW_HEARTBEAT", "GW_BYE", "GW_REHELLO", "GW_WATCH",
           "GW_TERMINATED", "WELCOME"}

# Type ids no schema defines (a guard below checks that they are unknown)
UNKNOWN_TYPES = (0, 6, 99, 119, 150, 65535, U32_MAX)


# ---------------------------------------------------------------------
# The schemas, read from the .def files

FIELD = r"FQ_(U64LIST|U64|I64|U32|BOOL|DOUBLE|STR|BIN|STRMAP)\(\s*(\w+)\s*\)"


def load_schema():
    """{name: (id, [(kind, field), ...])} for every FQ_MESSAGE of the
    runtime's and fairq's schema files."""
    out = {}
    for rel in ("runtime/fq_sysmsg.def", "messages/fq_messages.def"):
        with open(os.path.join(fq_e2e.ROOT, rel), encoding="utf-8") as f:
            text = re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read(), flags=re.S)
        for m in re.finditer(r"FQ_MESSAGE\(\s*(\w+)\s*,\s*\w+\s*,\s*(\d+)\s*,", text):
            depth, i = 1, m.end()
            while depth:  # To the parenthesis that closes FQ_MESSAGE(
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            fields = re.findall(FIELD, text[m.end():i - 1])
            out[m.group(1)] = (int(m.group(2)), fields)
    return out


SCHEMA = load_schema()
T = {name: spec[0] for name, spec in SCHEMA.items()}
NAMES = {spec[0]: name for name, spec in SCHEMA.items()}


class Victims:
    """The ids forged bodies name: a paused request's messages (and the
    request and tenant), plus, when there is one, a request held at the
    real sender."""

    def __init__(self, paused_ids, paused_request, tenant, held_ids=(), held_request=None):
        self.paused_ids = list(paused_ids)
        self.paused_request = paused_request
        self.tenant = tenant
        self.held_ids = list(held_ids)
        self.held_request = held_request
        self._next = 0

    def all(self):
        """(message, request, tenant) of every victim."""
        return ([(m, self.paused_request, self.tenant) for m in self.paused_ids]
                + [(m, self.held_request, self.tenant) for m in self.held_ids])

    def next_id(self):
        ids = self.paused_ids + self.held_ids
        self._next += 1
        return ids[self._next % len(ids)]


def valid_value(kind, field, victims):
    """A well-typed value for one field, naming real ids where it can: what
    a forger who knows fairq's schema would send."""
    if kind == "U64":
        return victims.next_id() if field == "id" else victims.paused_request
    if kind == "U64LIST":
        index = {"requests": 1, "tenants": 2}.get(field, 0)
        return [v[index] for v in victims.all()]
    if kind == "U32":
        return {"n": 5, "concurrency": 4, "heartbeat_ms": HEARTBEAT_MS, "timeout_ms": 1000,
                "split": 1, "rejected": 0, "left": 0, "what": 0, "outcome": 0}.get(field, 1)
    if kind == "I64":
        return {"delta": 1000, "credit": 5, "code": -22}.get(field, 1)
    if kind == "BOOL":
        return True
    if kind == "DOUBLE":
        return 1.0
    if kind == "BIN":
        return b"forged"
    if kind == "STRMAP":
        return {"X-Forged": "1"}
    return {"name": PEER, "system": PEER, "version": "1", "capabilities": "smtp",
            "path": "fq://s1/user/sender", "target": "fq://s1/user/sender",
            "watcher": "/user/dispatcher", "tenant": "shop", "to": "victim@forged.test",
            "from": "news@shop.test", "error": "550 5.7.1 forged",
            "subject": "forged"}.get(field, "forged")


def edge_value(kind, field):
    """A well-typed value at the edge of its range."""
    del field
    return {"U64": U64_MAX, "U32": U32_MAX, "I64": I64_MIN, "BOOL": False,
            "DOUBLE": float("nan"), "BIN": b"\0" * 64, "U64LIST": [0, U64_MAX],
            "STRMAP": {"Bcc": "victim@forged.test", "A" * 300: "\r\n"},
            "STR": "\r\n.\r\nRCPT TO:<victim@forged.test>\r\n" + "A" * 600}[kind]


# Bodies that are not the schema's at all
GARBAGE_BODIES = (None, [-1, "x", None, 1.5, [], {}, b"\x00", True, I64_MIN, [[]],
                         {"a": None}, "z"])


def bodies(type_id, victims):
    """The bodies sent with one type: valid, at the edges, garbage."""
    name = NAMES.get(type_id)
    fields = SCHEMA[name][1] if name else []
    return [[valid_value(k, f, victims) for k, f in fields],
            [edge_value(k, f) for k, f in fields]] + list(GARBAGE_BODIES)


def envelope(type_id, flags=TELL, corr=0, to="/user/dispatcher", body=(), sender=PEER_SENDER):
    """One frame: the msgpack array [type, flags, corr, sender, to, body]."""
    return msgpack.packb([type_id, flags, corr, sender, to,
                          list(body) if isinstance(body, tuple) else body], use_bin_type=True)


def malformed_frames():
    """Frames that are not envelopes, or envelopes no runtime writes."""
    hello = ["x", "1", "smtp", 4]
    pack = lambda value: msgpack.packb(value, use_bin_type=True)  # noqa: E731
    frames = [b"", b"\xc1", b"\x93\x01\x02", b"\xdd\xff\xff\xff\xff",  # 4-billion array, 5 bytes
              b"\xdf\xff\xff\xff\xff", b"\x91" * 100000 + b"\xc0",  # Nested 100,000 deep
              pack({"type": 100}), pack("garbage"), pack([None] * 6),
              pack(["100", 0, 0, PEER_SENDER, "/user/dispatcher", hello]),
              pack([-1, 0, 0, PEER_SENDER, "/user/dispatcher", hello]),
              pack([2**32, 0, 0, PEER_SENDER, "/user/dispatcher", hello]),
              pack([T["HELLO"], -1, 0, PEER_SENDER, "/user/dispatcher", hello]),
              pack([T["HELLO"], ASK, -1, PEER_SENDER, "/user/dispatcher", hello]),
              pack([T["HELLO"], ASK, 7, None, "/user/dispatcher", hello]),
              pack([T["HELLO"], ASK, 7, "/user/sen\0der", "/user/dispatcher", hello]),
              pack([T["HELLO"], ASK, 7, "", "/user/dispatcher", hello]),
              pack([T["HELLO"], ASK, 7, "user/sender", "/user/dispatcher", hello]),
              pack([T["HELLO"], ASK, 7, PEER_SENDER, 5, hello]),
              pack([T["HELLO"], ASK, 7, PEER_SENDER, "/user/dispatcher"]),
              pack([T["ACK"], TELL, 0, PEER_SENDER, "/user/dispatcher", [b"\x01"]]),
              pack([T["GW_HELLO"], TELL, 0, "", None, None]),
              pack([T["GW_HELLO"], TELL, 0, "", None, ["", 1, HEARTBEAT_MS]]),
              pack([T["GW_HELLO"], TELL, 0, "", None, ["a/b", 1, HEARTBEAT_MS]]),
              pack([T["GW_HELLO"], TELL, 0, "", None, ["x" * 300, 1, HEARTBEAT_MS]]),
              pack([T["GW_WATCH"], TELL, 0, "", None, ["not a path"]]),
              pack([T["GW_TERMINATED"], TELL, 0, "", None, [5]])]
    return frames + [[b"two", b"parts"]]  # A multi-part message


def recipients(prefix, domain, count):
    """PREFIXi@DOMAIN with the fields the harness's default template uses."""
    return [{"to": f"{prefix}{i}@{domain}", "fields": {"name": f"{prefix}{i}", "n": i}}
            for i in range(1, count + 1)]


# ---------------------------------------------------------------------
# The peer

class HostilePeer:
    """A DEALER connected to fairqd's gateway. One thread owns the socket:
    it sends what is queued, reads everything fairqd sends (kept in
    self.inbox, decoded), sends heartbeats once welcomed, and answers
    REHELLO with GW_HELLO as a runtime does."""

    def __init__(self, endpoint, name=PEER, keys=None, server_key=None, rehello=True):
        self.name = name
        self.rehello = rehello
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 2000)
        # Unbounded queues: a whole batch is queued at once, and nothing
        # fairqd answers is dropped on this side
        self.sock.setsockopt(zmq.SNDHWM, 0)
        self.sock.setsockopt(zmq.RCVHWM, 0)
        if keys:
            self.sock.curve_publickey = keys[0].encode()
            self.sock.curve_secretkey = keys[1].encode()
            self.sock.curve_serverkey = server_key.encode()
        self.sock.connect(endpoint)
        self.cond = threading.Condition()
        self.outbox = collections.deque()
        self.inbox = []
        self.undecodable = 0
        self.welcomed = False
        self.stopping = False
        self.stop_by = None
        self._corr = 1000
        self.thread = threading.Thread(target=self._run, name=f"peer-{name}", daemon=True)
        self.thread.start()

    def _gw_hello(self):
        return envelope(T["GW_HELLO"], sender="", to=None, body=[self.name, 1, HEARTBEAT_MS])

    def _run(self):
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        last_sent = time.monotonic()
        try:
            self._loop(poller, last_sent)
        finally:
            with self.cond:
                # What could not be sent by the deadline is dropped
                self.sock.close(linger=0 if self.outbox else 2000)

    def _loop(self, poller, last_sent):
        while True:
            with self.cond:
                if self.stopping and (not self.outbox or time.monotonic() > self.stop_by):
                    return
            if poller.poll(10):
                while True:
                    try:
                        parts = self.sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self._received(parts)
            with self.cond:
                while self.outbox:
                    item = self.outbox[0]
                    try:
                        if isinstance(item, list):
                            self.sock.send_multipart(item, zmq.NOBLOCK)
                        else:
                            self.sock.send(item, zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self.outbox.popleft()
                    last_sent = time.monotonic()
                self.cond.notify_all()
            if self.welcomed and time.monotonic() - last_sent >= HEARTBEAT_MS / 1000:
                try:
                    self.sock.send(envelope(T["GW_HEARTBEAT"], sender="", to=None, body=[]),
                                   zmq.NOBLOCK)
                except zmq.Again:
                    pass
                last_sent = time.monotonic()

    def _received(self, parts):
        try:
            if len(parts) != 1:
                raise ValueError("multi-part")
            frame = msgpack.unpackb(parts[0], raw=False, strict_map_key=False)
            type_id, flags, corr, sender, to, body = frame[:6]
        except (ValueError, TypeError, msgpack.UnpackException):
            with self.cond:
                self.undecodable += 1
            return
        if type_id == T["GW_WELCOME"]:
            self.welcomed = True
        elif type_id == T["GW_REHELLO"] and self.rehello:
            self.send([self._gw_hello()])
        with self.cond:
            self.inbox.append({"type": type_id, "name": NAMES.get(type_id, str(type_id)),
                               "flags": flags, "corr": corr, "sender": sender, "to": to,
                               "body": body})
            self.cond.notify_all()

    def send(self, frames):
        with self.cond:
            self.outbox.extend(frames)

    def received(self):
        with self.cond:
            return list(self.inbox)

    def wait(self, predicate, timeout):
        """Waits until predicate(inbox) is true; returns its value or None."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate(self.inbox)
                if value or time.monotonic() >= deadline:
                    return value
                self.cond.wait(min(0.05, max(0.0, deadline - time.monotonic())))

    def corr(self):
        """A correlation id of its own, for an ask whose answer is awaited."""
        self._corr += 1
        return self._corr

    def replies_to(self, corr):
        return [f for f in self.received() if f["flags"] & REPLY and f["corr"] == corr]

    def gw_hello(self, timeout=10):
        """Says GW_HELLO as a sender's runtime does; True once welcomed."""
        self.send([self._gw_hello()])
        return bool(self.wait(lambda inbox: any(f["type"] == T["GW_WELCOME"] for f in inbox),
                              timeout))

    def sync(self, meanwhile, timeout=BATCH_TIMEOUT_S):
        """Returns once the gateway has read every frame sent so far: an ask
        to a path where no actor lives, sent last, comes back (as ERROR)
        only after the frames before it were handled. Calls meanwhile()
        while it waits (to fail early); fails if no answer comes."""
        corr = self.corr()
        self.send([envelope(T["STATS_QUERY"], ASK, corr, "/user/no-such-actor", [])])
        deadline = time.monotonic() + timeout
        while not self.wait(lambda inbox: any(f["flags"] & REPLY and f["corr"] == corr
                                              for f in inbox), 0.2):
            meanwhile()
            if time.monotonic() >= deadline:
                raise AssertionError(f"fairqd's gateway did not answer an ask to a path without "
                                     f"an actor within {timeout} s of the batch (an ask must "
                                     f"always end, with ERROR here)")

    def close(self, bye=True):
        """Says GW_BYE (the gateway then forgets the peer at once) and
        closes the socket once everything queued is sent."""
        if bye:
            self.send([envelope(T["GW_BYE"], sender="", to=None, body=["done"])])
        with self.cond:
            self.stopping = True
            self.stop_by = time.monotonic() + 5
        self.thread.join(30)
        if self.thread.is_alive():
            raise AssertionError(f"the peer {self.name}'s thread did not stop")
        self.ctx.term()


# ---------------------------------------------------------------------
# The tests

class HostilePeerTest(E2ETest):

    def setUp(self):
        super().setUp()
        self.peers = []
        self.addCleanup(self.close_peers)

    def close_peers(self):
        for peer in self.peers:
            if peer.thread.is_alive():
                peer.close(bye=False)

    # -----------------------------------------------------------------
    # Setting up

    def start(self, curve=False, hold=False):
        """The sink, fairqd and one real sender s1 (with CURVE: fairqd's
        gateway lets in s1's key and the hostile peer's). A paused request
        P of 6 messages, split while no sender was connected; with hold, a
        request H of 3 messages in flight at s1, held by the sink."""
        h = self.h
        rules = {"rules": [{"match": "@held.test", "reply": "250 OK", "delay": HOLD_S}]} \
            if hold else {}
        self.sink = h.start_sink(rules=rules)
        settings = dict(FAIRQD)
        self.curve = curve
        if curve:
            settings.update(h.curve_settings())
            self.s1_cert = h.make_cert("s1")
            self.peer_cert = h.make_cert(PEER)
            h.allow_cert(self.s1_cert)
            h.allow_cert(self.peer_cert)
        self.fairqd = h.start_fairqd(**settings)
        h.wait_schema()
        h.create_tenant("shop")
        self.tenant = int(h.scalar("SELECT id FROM fairq.tenants WHERE name = 'shop'"))
        self.paused = h.submit("shop", recipients("p", "paused.test", 6))
        h.wait(lambda: h.request(self.paused)["split"] == 6, 30, "the paused request's split",
               describe=lambda: f"request is {h.request(self.paused)}")
        h.admin("pause", self.paused)
        self.paused_ids = sorted(h.messages(f"request_id = {self.paused}"))
        # The scheduler takes the pause in at its next poll (a NOTIFY makes
        # one at once): give it several before a sender brings credit
        time.sleep(PAUSE_SEEN_S)
        self.s1 = h.start_sender("s1", self.sink, CONCURRENCY, extra=SENDER_HEARTBEAT,
                                 cert=self.s1_cert if curve else None)
        self.held, self.held_ids = None, []
        if hold:
            self.held = h.submit("shop", recipients("h", "held.test", 3))
            h.wait(lambda: h.api_request(self.held)["inflight"] == 3, 60,
                   "the held request's 3 messages in flight at s1",
                   describe=lambda: f"request is {h.api_request(self.held)}")
            self.held_since = time.monotonic()
            self.held_ids = sorted(h.messages(f"request_id = {self.held}"))
        self.victims = Victims(self.paused_ids, self.paused, self.tenant, self.held_ids,
                               self.held)
        # Nothing of the paused request went out before any frame was forged
        self.assertEqual(self.paused_problems(), [],
                         "a paused request's messages went out before the peer connected")

    def peer(self, name=PEER, keys=None, rehello=True, welcome=True):
        """A hostile peer connected to fairqd's gateway (with CURVE, with
        the allowed hostile key unless keys says otherwise); with welcome,
        it has said GW_HELLO and been welcomed."""
        server_key = None
        if self.curve:
            server_key = self.h.cert_keys(self.h.curve_server_cert())[0]
            keys = keys or self.h.cert_keys(self.peer_cert)
        peer = HostilePeer(f"tcp://127.0.0.1:{self.h.gateway_port}", name, keys, server_key,
                           rehello)
        self.peers.append(peer)
        if welcome:
            self.assertTrue(peer.gw_hello(), f"the peer {name} was not welcomed by the gateway")
        return peer

    def dispatcher(self):
        """The dispatcher's address as fairq-sender writes it."""
        return f"tcp://127.0.0.1:{self.h.gateway_port}/user/dispatcher"

    def hello_as_sender(self, peer):
        """HELLO to the dispatcher as fairq-sender says it (an ask), and
        CREDIT; fails unless WELCOME comes back."""
        corr = peer.corr()
        peer.send([envelope(T["HELLO"], ASK, corr, self.dispatcher(),
                            [PEER, "1.0", "smtp", 4])])
        welcome = peer.wait(lambda inbox: [f for f in inbox if f["flags"] & REPLY
                                           and f["corr"] == corr], 10)
        self.assertTrue(welcome and welcome[0]["type"] == T["WELCOME"],
                        f"HELLO to the dispatcher was answered with {welcome} instead of WELCOME")
        peer.send([envelope(T["CREDIT"], TELL, 0, self.dispatcher(), [4])])

    # -----------------------------------------------------------------
    # What must hold

    def sink_ids(self):
        return {message_id_of(r) for r in self.sink.records()}

    def row_problems(self):
        """Message rows that changed without a real delivery: sent without
        reaching the sink, failed or dead (the sink refuses nothing, so no
        real sender ever failed one), an attempt counted on a pending one;
        and mail at the sink that fairq never made."""
        rows = self.h.messages()  # The rows first: what is sent reached the sink before
        delivered = self.sink_ids()
        problems = []
        for m in rows.values():
            what = f"message {m['id']} (request {m['request_id']}, {m['recipient']})"
            if m["status"] == "sent" and m["id"] not in delivered:
                problems.append(f"{what} is sent but never reached the sink")
            elif m["status"] == "sent" and m["try_count"] != 1:
                problems.append(f"{what} is sent with {m['try_count']} attempts counted for one "
                                f"delivery")
            elif m["status"] in ("failed", "dead"):
                problems.append(f"{what} is {m['status']} after {m['try_count']} attempts "
                                f"(last error {m['last_error']!r}) though no sender failed it")
            elif m["status"] == "pending" and (m["try_count"] or m["last_error"]):
                problems.append(f"{what} is pending with {m['try_count']} attempts counted "
                                f"(last error {m['last_error']!r})")
            elif m["status"] == "cancelled":
                problems.append(f"{what} is cancelled, and nobody cancelled it")
        for r in self.sink.records():
            m = rows.get(message_id_of(r))
            if not m or r["to"] != [m["recipient"]]:
                problems.append(f"the sink received mail fairq never made: to {r['to']}, "
                                f"Message-ID {r['message_id']}, subject {r['subject']!r}")
        return problems

    def paused_problems(self, peers=()):
        """Ways the paused request's messages went out: to the sink, to a
        hostile peer, or in flight according to the API."""
        problems = []
        leaked = sorted(set(self.paused_ids) & self.sink_ids())
        if leaked:
            problems.append(f"paused request {self.paused}: messages {leaked} reached the sink")
        for peer in peers:
            got = sorted({f["body"][0] for f in peer.received()
                          if f["type"] == T["MESSAGE"] and isinstance(f["body"], list)
                          and f["body"]})
            if got:
                problems.append(f"fairqd handed messages {got} to the hostile peer {peer.name}")
        inflight = self.h.api_request(self.paused)["inflight"]
        if inflight:
            problems.append(f"paused request {self.paused}: {inflight} messages in flight")
        status = self.h.request(self.paused)["status"]
        if status != "paused":
            problems.append(f"paused request {self.paused} is {status}")
        return problems

    def answer_problems(self, peer):
        """Frames fairqd sent the peer that are none of the answers it may
        give a stranger: an actor's reply (STATS, DRAINED, GW_STATUS, ...)
        means a forged frame reached an actor it must not reach."""
        counts = collections.Counter(f["name"] for f in peer.received()
                                     if f["name"] not in ANSWERS and f["type"] != T["MESSAGE"])
        problems = [f"fairqd sent the peer {count} {name} frame(s): forged frames reached "
                    f"an actor that answered" for name, count in sorted(counts.items())]
        if peer.undecodable:
            problems.append(f"fairqd sent the peer {peer.undecodable} frame(s) that are not "
                            f"envelopes")
        return problems

    def expect_alive(self, after):
        """Fails, quoting fairqd's last words, if a program has ended."""
        try:
            self.h.check_alive()
        except AssertionError as error:
            found = re.findall(r"^.*(?:Assertion|AddressSanitizer|runtime error|escalat|"
                               r"FATAL).*$", self.fairqd.text(), re.M)
            raise AssertionError(f"after {after}: {error}; fairqd's log: "
                                 f"{' | '.join(found[-3:]) or 'no assertion or fatal line'}") \
                from None

    def sync(self, peer, after):
        """peer.sync, failing at once if fairqd dies meanwhile."""
        peer.sync(lambda: self.expect_alive(after))

    def check(self, after, peers=(), more=()):
        """Everything that must hold after a batch; all problems in one
        failure, named by the batch."""
        self.expect_alive(after)
        report = fq_e2e.SANITIZER_REPORT.search(self.fairqd.text())
        problems = [f"fairqd reported a sanitizer error ({report.group(0)})"] if report else []
        problems += self.row_problems() + self.paused_problems(peers) + list(more)
        for peer in peers:
            problems += self.answer_problems(peer)
        if problems:
            self.fail(f"after {after}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))

    def send_batch(self, peer, frames, what, peers=None):
        """Sends frames, waits until the gateway read them all and their
        effects settled, and checks."""
        started = time.monotonic()
        before = len(peer.received())
        peer.send(frames)
        self.sync(peer, what)
        read = time.monotonic() - started
        time.sleep(SETTLE_S)
        got = collections.Counter(f["name"] for f in peer.received()[before:])
        self.note(f"{what}: {len(frames)} frames read in {read:.1f} s; fairqd answered "
                  f"{dict(sorted(got.items()))}")
        self.check(what, peers if peers is not None else [peer])

    def check_dispatch_works(self, peers=()):
        """After the peers left: a fresh request is delivered completely by
        the real sender; the paused request is still held back, and once
        resumed it is delivered completely too."""
        h = self.h
        for peer in peers:
            peer.close()
        fresh = h.submit("shop", recipients("f", "fresh.test", 5))
        request = h.wait_request(fresh, "done", 60, f"a fresh request {fresh} to be delivered "
                                 f"after the forged frames (is dispatch still working?)")
        self.assertEqual(request["sent"], 5, f"the fresh request ended {request}")
        fresh_ids = set(h.messages(f"request_id = {fresh}"))
        self.assertEqual(fresh_ids - self.sink_ids(), set(),
                         "messages of the fresh request missing at the sink")
        self.assertEqual(self.paused_problems(), [],
                         "the paused request went out while a fresh one was delivered")
        h.admin("resume", self.paused)
        request = h.wait_request(self.paused, "done", 60,
                                 f"paused request {self.paused} to be delivered once resumed")
        self.assertEqual(request["sent"], len(self.paused_ids), f"resumed request ended {request}")
        self.assertEqual(set(self.paused_ids) - self.sink_ids(), set(),
                         "messages of the resumed request missing at the sink")
        if self.held:
            request = h.wait_request(self.held, "done", HOLD_S + 30,
                                     f"held request {self.held} to be delivered by s1")
            self.assertEqual(request["sent"], len(self.held_ids), f"held request ended {request}")
        problems = self.row_problems()
        self.assertEqual(problems, [], "message rows after the end")

    # -----------------------------------------------------------------
    # The frames

    def targets(self):
        """Every actor of fairqd, a splitter's path as a child of the
        scheduler, the guardians, fairqd's addresses as a peer writes
        them, another peer's sender, and paths where nothing lives."""
        port = self.h.gateway_port
        return ["/user/dispatcher", f"tcp://127.0.0.1:{port}/user/dispatcher", "/user/store",
                f"tcp://127.0.0.1:{port}/user/store", "/user/scheduler", "/user/intake",
                "/user/reaper", "/user/splitter-1", "/user/splitter-2",
                "/user/scheduler/splitter-1", "/system/gateway", "/user", "/system",
                "fq://fairqd/user/scheduler", "fq://s1/user/sender", "/user/no-such-actor",
                "not a path"]

    def matrix(self, flags):
        """Every type (but the handshake's own GW_HELLO and GW_BYE, which
        the gateway takes as this peer's joining and leaving, and which
        are sent at the start and the end) to every target with these
        flags, every correlation id and every body."""
        types = sorted(set(T.values()) - {T["GW_HELLO"], T["GW_BYE"]}) + list(UNKNOWN_TYPES)
        frames = []
        for type_id in types:
            for body in bodies(type_id, self.victims):
                for to in self.targets():
                    for corr in CORRS:
                        frames.append(envelope(type_id, flags, corr, to, body))
        return frames

    def forge_everything(self):
        """The matrix, one batch each for tells, asks and replies, the
        malformed frames first; then a fresh request must go out."""
        self.assertEqual(set(UNKNOWN_TYPES) & set(T.values()), set(),
                         "an id meant to be unknown is in a schema")
        peer = self.peer()
        self.send_batch(peer, malformed_frames() + self.matrix(TELL),
                        "malformed frames and every type as a tell")
        self.send_batch(peer, self.matrix(ASK), "every type as an ask")
        refused_asks = [f for f in peer.received() if f["name"] == "ERROR" and f["corr"] in CORRS]
        self.note(f"{len(refused_asks)} forged asks answered with ERROR")
        self.assertTrue(refused_asks, "no forged ask was answered with ERROR")
        self.send_batch(peer, self.matrix(REPLY), "every type as a reply")
        self.check_dispatch_works([peer])

    def test_forged_frames_insecure(self):
        """A gateway in insecure mode (anyone who reaches it is a peer):
        the whole matrix of forged and malformed frames changes nothing."""
        self.start()
        self.forge_everything()

    def test_forged_frames_curve(self):
        """A CURVE gateway: a key that is not allowed never gets in, an
        allowed key cannot take another sender's name, and the whole
        matrix sent with an allowed key changes nothing."""
        self.start(curve=True)
        public, secret = zmq.curve_keypair()
        stranger = self.peer("stranger", keys=(public.decode(), secret.decode()), welcome=False)
        self.assertFalse(stranger.gw_hello(timeout=2),
                         "a key that is not in gateway_allow_dir was welcomed")
        self.assertEqual(stranger.received(), [],
                         "fairqd answered a key that is not in gateway_allow_dir")
        stranger.close(bye=False)
        impostor = self.peer("s1", rehello=False, welcome=False)
        self.assertFalse(impostor.gw_hello(timeout=2),
                         "an allowed key took the name of sender s1, which another key holds")
        impostor.close(bye=False)
        self.assertNotRegex(self.fairqd.text(), r"peer s1 lost: (replaced|renamed)",
                            "sender s1 was dropped when another key claimed its name")
        self.assertTrue(self.s1.alive())
        self.forge_everything()
        self.assertNotRegex(self.fairqd.text(), r"peer s1 lost: (replaced|renamed)",
                            "sender s1 was replaced during the forged frames")

    def test_reply_with_correlation_id_zero(self):
        """[ERROR, REPLY, corr 0] to the dispatcher (the reply to an ask
        nobody made), then the same from each sender-protocol type, and
        to every actor: fairqd keeps running and still delivers."""
        self.start()
        peer = self.peer()
        what = ('[3, 2, 0, "/user/sender", "/user/dispatcher", [5, "x"]] (a REPLY with '
                'correlation id 0)')
        peer.send([msgpack.packb([3, 2, 0, "/user/sender", "/user/dispatcher", [5, "x"]])])
        self.sync(peer, what)
        time.sleep(SETTLE_S)
        self.check(what, [peer])
        frames = []
        for name in ("ERROR", "HELLO", "WELCOME", "CREDIT", "ACK", "NACK", "BYE",
                     "STATS", "DRAINED"):
            for to in self.targets():
                frames.append(envelope(T[name], REPLY, 0, to, bodies(T[name], self.victims)[0]))
        self.send_batch(peer, frames, "replies with correlation id 0 of the sender protocol's "
                        "types to every actor")
        self.check_dispatch_works([peer])

    def test_internal_messages_refused(self):
        """fairqd's internal messages from a peer that never said HELLO:
        STORE_ACKS and STORE_NACK to the store, a DISPATCH of the paused
        request's messages, a SETTLED that requeues them, DRAIN to the
        dispatcher, and asks for internal counters. None may act; each
        ask is answered with ERROR."""
        self.start(curve=True)
        peer = self.peer()
        v, p, rid = self.victims, self.paused_ids, self.paused
        n = len(p)
        asks = {}

        def ask(name, to, body):
            corr = peer.corr()
            asks[corr] = f"{name} to {to}"
            return envelope(T[name], ASK, corr, to, body)

        frames = [
            envelope(T["STORE_ACKS"], TELL, 0, "/user/store", [p[:2]]),
            envelope(T["STORE_NACK"], TELL, 0, "/user/store", [p[2], True, "550 5.7.1 forged"]),
            envelope(T["STORE_NACK"], TELL, 0, "/user/store", [p[3], False, "451 4.7.1 forged"]),
            envelope(T["ACK"], TELL, 0, self.dispatcher(), [p[4]]),
            envelope(T["NACK"], TELL, 0, self.dispatcher(), [p[5], True, "550 5.7.1 forged"]),
            envelope(T["DISPATCH"], TELL, 0, self.dispatcher(), [p, [rid] * n, [v.tenant] * n]),
            envelope(T["SETTLED"], TELL, 0, "/user/scheduler",
                     [p, [rid] * n, [v.tenant] * n, True, n]),
            envelope(T["CREDIT_CHANGED"], TELL, 0, "/user/scheduler", [1000]),
            envelope(T["DRAIN"], TELL, 0, self.dispatcher(), [1000]),
            ask("DRAIN", self.dispatcher(), [1000]),
            ask("STATS_QUERY", "/user/store", []),
            ask("STATS_QUERY", self.dispatcher(), []),
            ask("STATS_QUERY", "/user/scheduler", []),
            ask("GW_STATUS_QUERY", "/system/gateway", []),
        ]
        what = ("STORE_ACKS, STORE_NACK, DISPATCH, SETTLED, CREDIT_CHANGED, DRAIN and "
                "STATS_QUERY from a peer that never said HELLO")
        peer.send(frames)
        self.sync(peer, what)
        time.sleep(SETTLE_S)
        more = []
        for corr, asked in asks.items():
            answers = [f["name"] for f in peer.replies_to(corr)]
            if answers != ["ERROR"]:
                more.append(f"the ask {asked} was answered with {answers or 'nothing'} "
                            f"instead of one ERROR")
        self.check(what, [peer], more)
        self.check_dispatch_works([peer])

    def test_outcomes_only_from_the_holder(self):
        """A peer that joined as a sender (HELLO, WELCOME, CREDIT) reports
        outcomes for messages it never received: ACK, ACKS, permanent NACK
        and transient NACK of the paused request's messages, of ids that do
        not exist, and of messages the real sender s1 holds right now
        (held by the sink). None is recorded; s1's own outcomes are."""
        self.start(curve=True, hold=True)
        peer = self.peer()
        self.hello_as_sender(peer)
        p, h_ids = self.paused_ids, self.held_ids
        to = self.dispatcher()
        frames = [envelope(T["ACK"], TELL, 0, to, [p[0]]),
                  envelope(T["NACK"], TELL, 0, to, [p[1], True, "550 5.7.1 forged"]),
                  envelope(T["NACK"], TELL, 0, to, [p[2], False, "451 4.7.1 forged"]),
                  envelope(T["ACK"], TELL, 0, to, [10**12]),
                  envelope(T["NACK"], TELL, 0, to, [10**12 + 1, True, "550 5.7.1 forged"]),
                  envelope(T["ACK"], TELL, 0, to, [U64_MAX]),
                  envelope(T["NACK"], TELL, 0, to, [U64_MAX, False, "451 4.7.1 forged"]),
                  envelope(T["ACK"], TELL, 0, to, [h_ids[0]]),
                  envelope(T["NACK"], TELL, 0, to, [h_ids[1], True, "550 5.7.1 forged"]),
                  envelope(T["NACK"], TELL, 0, to, [h_ids[2], False, "451 4.7.1 forged"]),
                  #  Protocol 2's batch of acks: each id is judged as its own ACK
                  envelope(T["ACKS"], TELL, 0, to, [[p[0], 10**12 + 2, 0, U64_MAX, h_ids[0],
                                                     h_ids[1]]]),
                  envelope(T["ACKS"], TELL, 0, to, [[]])]
        what = ("ACK, ACKS and NACK from a sender of messages it never held (the paused "
                "request's, ids that do not exist, and s1's in flight)")
        peer.send(frames)
        self.sync(peer, what)
        time.sleep(SETTLE_S)
        held_for = time.monotonic() - self.held_since
        self.note(f"checked {held_for:.1f} s after s1 took the held messages (held {HOLD_S} s)")
        self.assertLess(held_for, HOLD_S - 1, "the sink released the held messages before the "
                        "check: it could not tell forged outcomes from real ones (raise HOLD_S)")
        self.assertEqual(set(h_ids) & self.sink_ids(), set(), "held messages at the sink early")
        self.check(what, [peer])
        self.check_dispatch_works([peer])


if __name__ == "__main__":
    fq_e2e.main()
