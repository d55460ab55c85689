#!/usr/bin/python3
"""test_recovery_requeue.py: a sender dies holding a paused or cancelled
request's messages.

When the gateway declares a sender dead, the dispatcher gives what it held
back to the scheduler, which sends it again at once (docs/protocol.md,
rule 5). A request paused or cancelled meanwhile must keep its state
through that: a paused request's messages wait until it is resumed, and a
cancelled request's are never sent, whichever sender is running.

The first sender, s1, delivers through a relay that holds every message to
@held.test at RCPT (an SMTP sink rule), so the request's messages stay in
its hands and none reaches the relay's mailbox; it is then killed with
SIGKILL. A second sender, s2, with a fast relay of its own, runs all along
with free credit, and delivers another request meanwhile to show that it
could have taken them.

Heartbeats are short on both sides (300 ms, dead after 3,000 ms of
silence), so that the dead sender is noticed within seconds, and a live one
is not declared dead by a loaded machine.
"""

import re
import sys
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, message_id_of  # noqa: E402

CONCURRENCY = 8
TOTAL = CONCURRENCY  # The request: exactly what s1 can hold at once
HEARTBEAT_MS = 300
HEARTBEAT_TIMEOUT_MS = 3000
# How long the request is watched after s1 was declared dead (its messages
# go back to the scheduler at that moment): several heartbeat timeouts, and
# dozens of scheduler polls
WATCH_S = 3 * HEARTBEAT_TIMEOUT_MS / 1000
# The held relay's hold at RCPT: longer than the whole test (s1 dies first)
HOLD_S = 120
FAIRQD = {"poll_ms": 200, "retry_base_ms": 200, "retry_cap_ms": 1000,
          "heartbeat_ms": HEARTBEAT_MS, "heartbeat_timeout_ms": HEARTBEAT_TIMEOUT_MS}
SENDER_HEARTBEAT = ["--heartbeat-ms", str(HEARTBEAT_MS),
                    "--heartbeat-timeout-ms", str(HEARTBEAT_TIMEOUT_MS)]


def recipients(prefix, domain, count):
    """PREFIXi@DOMAIN with the fields the harness's default template uses."""
    return [{"to": f"{prefix}{i}@{domain}", "fields": {"name": f"{prefix}{i}", "n": i}}
            for i in range(1, count + 1)]


class RequeueTest(E2ETest):

    def start(self):
        """fairqd; s1 behind the holding relay, with every message of a
        request R of TOTAL recipients in its hands; then s2 behind a fast
        relay, welcomed with free credit. Returns R's id."""
        h = self.h
        self.held_relay = h.start_sink("held-relay", rules={"rules": [
            {"match": "@held.test", "reply": "250 OK", "delay": HOLD_S}]})
        self.fast_relay = h.start_sink("fast-relay")
        self.fairqd = h.start_fairqd(**FAIRQD)
        h.wait_schema()
        h.create_tenant("shop")
        self.s1 = h.start_sender("s1", self.held_relay, CONCURRENCY, extra=SENDER_HEARTBEAT)
        rid = h.submit("shop", recipients("r", "held.test", TOTAL))
        h.wait(lambda: h.api_request(rid)["inflight"] == TOTAL, 60,
               f"all {TOTAL} messages of request {rid} in flight at s1",
               describe=lambda: f"request is {h.api_request(rid)}")
        self.ids = set(h.messages(f"request_id = {rid}"))
        self.s1_holds_at = self.fairqd.log_size()
        self.s2 = h.start_sender("s2", self.fast_relay, CONCURRENCY, extra=SENDER_HEARTBEAT)
        return rid

    def kill_s1(self):
        """SIGKILL to s1; returns once fairqd has declared it gone (and so
        given its messages back)."""
        log_at = self.fairqd.log_size()
        with open(self.fairqd.log_path, "rb") as f:
            f.seek(self.s1_holds_at)
            early = re.search(r'sender "s1" .* left.*', f.read().decode("utf-8", "replace"))
        if early:
            self.fail(f"s1 was declared dead before it was killed, so its messages went back "
                      f"early (heartbeats late: an overloaded machine?): {early.group(0)}")
        self.s1.kill9()
        self.fairqd.wait_log(r'sender "s1" .* left', timeout=10 * HEARTBEAT_TIMEOUT_MS / 1000,
                             after=log_at)

    def at_relays(self):
        """R's message ids that reached either relay."""
        got = {message_id_of(r) for sink in (self.held_relay, self.fast_relay)
               for r in sink.records()}
        return got & self.ids

    def other_request_delivered(self, prefix):
        """s2 delivers a request of 4 while R waits: it had credit and was
        dispatching all along."""
        h = self.h
        other = h.submit("shop", recipients(prefix, "fast.test", 4))
        request = h.wait_request(other, "done", 60,
                                 f"another request {other} to be delivered by s2")
        self.assertEqual(request["sent"], 4, f"the other request ended {request}")
        helos = {r["helo"] for r in self.fast_relay.records()
                 if r["to"][0].endswith("@fast.test")}
        self.assertEqual(helos, {"s2.test"}, "the other request's deliveries")

    def watch(self, rid, why):
        """For WATCH_S after s1's death, none of R's messages may reach a
        relay or be handed to s2 (the API's in-flight count), while
        another request goes through s2."""
        h = self.h
        deadline = time.monotonic() + WATCH_S
        self.other_request_delivered("o")
        while True:  # At least once after the other request, however long it took
            h.check_alive()
            leaked = sorted(self.at_relays())
            if leaked:
                self.fail(f"messages {leaked} of request {rid} were delivered while it was {why}, "
                          f"after their sender died")
            inflight = h.api_request(rid)["inflight"]
            if inflight:
                self.fail(f"{inflight} messages of request {rid} were handed to a sender while it "
                          f"was {why}, after their sender died")
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)

    def test_paused_request_waits_for_resume(self):
        """Pause R while its messages are in flight at s1, then kill s1:
        none goes to s2 while R is paused, and all do once it is resumed."""
        h = self.h
        rid = self.start()
        h.admin("pause", rid)
        self.kill_s1()
        self.watch(rid, "paused")
        request = h.request(rid)
        self.assertEqual(request["status"], "paused", f"request {rid} while paused: {request}")
        self.assertEqual(request["sent"] + request["failed"] + request["dead"], 0,
                         f"request {rid} while paused: {request}")
        rows = h.messages(f"request_id = {rid}")
        self.assertEqual({m["status"] for m in rows.values()}, {"pending"},
                         f"message rows of request {rid} while paused")
        h.admin("resume", rid)
        request = h.wait_request(rid, "done", 60, f"request {rid} to be delivered once resumed")
        self.assertEqual(request["sent"], TOTAL, f"request {rid} after resume: {request}")
        delivered = {message_id_of(r) for r in self.fast_relay.records()} & self.ids
        self.assertEqual(delivered, self.ids, f"messages of request {rid} at s2's relay")
        self.assertEqual({message_id_of(r) for r in self.held_relay.records()} & self.ids, set(),
                         "the held relay accepted a message it was told to hold")

    def test_cancelled_request_never_sent(self):
        """Cancel R while its messages are in flight at s1, then kill s1:
        none is delivered by s2, and every one ends cancelled."""
        h = self.h
        rid = self.start()
        cancelled = h.admin("cancel", rid)
        self.assertEqual(cancelled, TOTAL, "messages cancelled (all were pending)")
        self.kill_s1()
        self.watch(rid, "cancelled")
        request = h.request(rid)
        self.assertEqual((request["status"], request["cancelled"], request["sent"]),
                         ("cancelled", TOTAL, 0), f"request {rid} after the cancel: {request}")
        rows = h.messages(f"request_id = {rid}")
        self.assertEqual({m["status"] for m in rows.values()}, {"cancelled"},
                         f"message rows of request {rid}")
        self.assertEqual(sorted(self.at_relays()), [],
                         f"messages of request {rid} delivered after the cancel")


if __name__ == "__main__":
    fq_e2e.main()
