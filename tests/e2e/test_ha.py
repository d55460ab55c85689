#!/usr/bin/python3
"""test_ha.py: several fairqd on one database (docs/operations.md, "Several
fairqd").

Two and three fairqd run a whole campaign together: one leads, the others
stand by, and every recipient gets exactly one mail. Then the leader fails
in every way the issue names, under load: kill -9 ten times over (each time
started again, as systemd would), frozen with SIGSTOP for longer than its
lease, its database connections terminated again and again; and a standby
is killed while the leader runs. In each: no recipient is lost, duplicates
stay within what a failover may cost (the senders' credit plus the acks the
old leader had not written, per failover), and the requests' counters
agree with their messages.

The senders connect to every fairqd (--connect A,B,C) and are served by
whichever leads. The lease is fairqd's default (3 s); the takeover time,
from the kill to the first message the new leader dispatched reaching the
relay, is printed as p50 and max.
"""

import json
import random
import signal
import statistics
import sys
import time
import urllib.request

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, free_port, message_id_of  # noqa: E402

SENDERS = 2
CONCURRENCY = 16
CREDIT = SENDERS * CONCURRENCY
ACK_BATCH = 100
# Per failover: what the senders held, and acks received but not written
# (at most FQ_STORE_WINDOW_BATCHES store batches: actors/fq_store_window.h)
FAILOVER_DUPLICATES = CREDIT + 4 * ACK_BATCH
HEARTBEAT_MS = 200
HEARTBEAT_TIMEOUT_MS = 1000
FAIRQD = {"poll_ms": 200, "retry_base_ms": 200, "retry_cap_ms": 1000,
          "heartbeat_ms": HEARTBEAT_MS, "heartbeat_timeout_ms": HEARTBEAT_TIMEOUT_MS,
          "ack_batch": ACK_BATCH, "metrics_public": "true"}
SENDER_HEARTBEAT = ["--heartbeat-ms", str(HEARTBEAT_MS),
                    "--heartbeat-timeout-ms", str(HEARTBEAT_TIMEOUT_MS)]
LEASE_S = 3.0  # fairqd's default lease_ms
# The sink answers each message after this long: the campaigns last through
# every fault (CREDIT / RELAY_DELAY_S messages a second at most)
RELAY_DELAY_S = 0.02
# By then the senders of a leader that failed have delivered what it had
# handed them: one message per worker, in 0.1 to 0.3 s under the sanitizers
OLD_DONE_S = 1.0
# No takeover comes sooner after a failure: the leader renews at half the
# lease, and a renewal may take a while (nothing here slows the database,
# so no renewal fails and is tried again later)
TAKEOVER_MIN_S = 0.4 * LEASE_S
# Targets of the issue, with the default lease
TAKEOVER_P50_S = 3.0
TAKEOVER_MAX_S = 6.0


class Instance:
    """One fairqd of the cluster: its ports, and its process while it runs."""

    def __init__(self, name):
        self.name = name
        self.gateway = f"tcp://127.0.0.1:{free_port()}"
        self.http_port = free_port()
        self.proc = None
        self.lives = 0

    def settings(self):
        return dict(FAIRQD, gateway_bind=self.gateway,
                    http_listen=f"127.0.0.1:{self.http_port}")

    def get(self, path):
        """GET path of this fairqd's API: (status, text), (None, "") when down."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}",
                                        timeout=2) as answer:
                return answer.status, answer.read().decode()
        except OSError:
            return None, ""

    def dispatched(self):
        """Messages this process's pipeline dispatched (0 for a standby)."""
        status, text = self.get("/metrics")
        if status != 200:
            return 0
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("fairq_tenant_dispatched_total{"))

    def leads(self):
        status, text = self.get("/metrics")
        return status == 200 and "\nfairq_leader 1\n" in "\n" + text


class HATest(E2ETest):

    def start(self, instances=3, relay_delay=RELAY_DELAY_S):
        h = self.h
        self.sink = h.start_sink(rules={"rules": [
            {"match": "@", "reply": "250 OK", "at": "data", "delay": relay_delay}]}
            if relay_delay else None)
        self.instances = [Instance(chr(ord("a") + i)) for i in range(instances)]
        for instance in self.instances:
            self.run_instance(instance)
        h.wait_schema()
        for tenant in ("shop", "news"):
            h.create_tenant(tenant)
        connect = ",".join(i.gateway for i in self.instances)
        self.senders = [h.start_sender(f"s{i + 1}", self.sink, CONCURRENCY, connect=connect,
                                       extra=SENDER_HEARTBEAT) for i in range(SENDERS)]

    def run_instance(self, instance):
        """Starts (or starts again, as systemd would) one fairqd."""
        instance.lives += 1
        instance.proc = self.h.start_fairqd(name=f"fairqd-{instance.name}{instance.lives}",
                                            **instance.settings())
        return instance

    def leader(self, timeout=15):
        """The instance that leads now (waits for one)."""
        return self.h.wait(lambda: next((i for i in self.instances
                                          if i.proc.alive() and i.leads()), None),
                           timeout, "a fairqd that leads")

    def campaign(self, total, tenants=("shop", "news")):
        """Requests of total recipients in all, one per tenant."""
        per = total // len(tenants)
        return {self.h.submit(t, bulk=(per, f"{t}-r", "example.test")): per for t in tenants}

    def delivered(self):
        return {message_id_of(r) for r in self.sink.records()}

    def check(self, requests, failovers):
        """Every recipient delivered, duplicates within the failovers'
        bound (none without one), counters consistent. Returns the
        duplicates."""
        h = self.h
        for rid, total in requests.items():
            try:
                request = h.wait_request(rid, "done", 120)
            except AssertionError as timeout:
                left = h.sql("SELECT id, status, try_count, last_error,"
                             " round(extract(epoch FROM next_attempt_at - now()))"
                             " FROM fairq.messages WHERE request_id = %d AND status <> 'sent'"
                             " ORDER BY id LIMIT 20" % rid)
                raise AssertionError(f"{timeout}; its messages not sent (id, status, tries, "
                                     f"last error, next attempt in s): {left}") from None
            self.assertEqual(request["sent"], total, request)
        records = self.sink.records()
        ids = [message_id_of(r) for r in records]
        messages = h.messages("request_id IN (%s)" % ",".join(str(r) for r in requests))
        self.assertEqual(set(ids), set(messages), "messages never delivered, or strangers")
        self.assertTrue(all(m["status"] == "sent" for m in messages.values()))
        duplicates = len(ids) - len(set(ids))
        self.assertLessEqual(duplicates, failovers * FAILOVER_DUPLICATES,
                             f"{duplicates} duplicates over {failovers} failovers")
        # The counters a request keeps agree with its messages
        rows = h.sql("SELECT r.id, r.total, r.sent, r.failed, r.dead, r.cancelled, r.rejected,"
                     " (SELECT count(*) FROM fairq.messages m WHERE m.request_id = r.id"
                     "   AND m.status = 'sent'),"
                     " (SELECT count(*) FROM fairq.messages m WHERE m.request_id = r.id)"
                     " FROM fairq.requests r WHERE r.id IN (%s)"
                     % ",".join(str(r) for r in requests))
        for row in rows:
            rid, total, sent, failed, dead, cancelled, rejected, sent_rows, rows_ = map(int, row)
            self.assertEqual(total, sent + failed + dead + cancelled + rejected, row)
            self.assertEqual(sent, sent_rows, row)
            self.assertEqual(rows_ + rejected, total, row)
        return duplicates

    def takeover(self, failed_at, exclude):
        """Seconds from failed_at (time.time()) until the first message the
        new leader dispatched reached the relay, and the new leader.

        The relay's clock of arrival is the measure, not a poll of fairqd's
        /metrics: that reads the database, takes tens of ms under the
        sanitizers and more on a leader that has just started, and polling
        it added 0.1 to 0.3 s to each takeover measured. A message that
        reached the relay is one that was dispatched, so the figure is
        never less than the issue's "kill to the next message dispatched".
        Which arrival is the new leader's needs no guess: the old leader's
        senders finish what they held within a fraction of OLD_DONE_S, and
        no standby takes over before the lease runs out, about half a lease
        after the failure at the soonest (the leader renews at half the
        lease). So the first message to arrive later than OLD_DONE_S after
        the failure is the new leader's, and a takeover measured under
        TAKEOVER_MIN_S would mean that reasoning failed."""
        def dispatching():
            for i in self.instances:
                if i is exclude or not i.proc.alive():
                    continue
                status, text = i.get("/healthz")
                if status == 200 and json.loads(text).get("lease_held") and i.dispatched() > 0:
                    return i
            return None
        new = self.h.wait(dispatching, 30, "a new leader dispatching", interval=0.05)
        after = failed_at + OLD_DONE_S

        def first_arrival():
            return next((r["t"] for r in self.sink.records() if r["t"] > after), None)
        arrived = self.h.wait(first_arrival, 30, "a message of the new leader at the relay",
                              interval=0.05)
        took = arrived - failed_at
        self.assertGreaterEqual(took, TAKEOVER_MIN_S, "a message came before the lease ran out")
        return took, new

    # -----------------------------------------------------------------

    def test_two_and_three_fairqd_deliver_exactly_once(self):
        """Two fairqd, then three, each a whole campaign with no fault:
        one leads (its pipeline the only one started), the others stand
        by and say who leads, and every recipient gets exactly one mail."""
        self.start(instances=3, relay_delay=0)
        h = self.h
        # Two running first: the third waits, stopped, for the second half
        third = self.instances[2]
        h.stop(third.proc)
        requests = self.campaign(2000)
        self.check(requests, failovers=0)
        self.run_instance(third)
        requests.update(self.campaign(3000))
        self.assertEqual(self.check(requests, failovers=0), 0)
        leader = self.leader()
        started = [i for i in self.instances if "pipeline started" in i.proc.text()]
        self.assertEqual(started, [leader], "more than one pipeline ran")
        leader_name = json.loads(leader.get("/healthz")[1])["instance"]
        for instance in self.instances:
            status, text = instance.get("/healthz")
            self.assertEqual(status, 200, text)
            health = json.loads(text)
            self.assertEqual(health["role"], "leader" if instance is leader else "standby")
            self.assertEqual(health["leader"]["instance"], leader_name)
        self.note(f"{len(self.delivered())} recipients, 0 duplicates, leader {leader.name}")

    def test_leader_killed_ten_times(self):
        """kill -9 the leader ten times under load, each time started again
        as a standby: another takes over within the targets, nothing is
        lost, duplicates within the bound per failover."""
        self.start()
        h = self.h
        requests = self.campaign(16000)
        takeovers = []
        seed = time.time_ns()
        chance = random.Random(seed)
        for _ in range(10):
            leader = self.leader()
            h.wait(lambda: leader.dispatched() > 200, 30, "the leader dispatching")
            # At a moment of the leader's renewal cycle left to chance: the
            # poll above sees each new leader dispatching at much the same
            # time after its takeover, and so (its renewals being due at
            # fixed times after it) killed it at much the same point of
            # the cycle, and every takeover took about as long
            time.sleep(chance.uniform(0, LEASE_S / 2))
            killed_at = time.time()
            leader.proc.kill9()
            took, _ = self.takeover(killed_at, exclude=leader)
            takeovers.append(took)
            self.run_instance(leader)
        duplicates = self.check(requests, failovers=10)
        p50, worst = statistics.median(takeovers), max(takeovers)
        self.note("takeover after kill -9 of the leader (lease 3 s): p50 %.2f s, max %.2f s "
                  "(%s); %d duplicates over 10 failovers (bound %d each); kill times seed %d"
                  % (p50, worst, ", ".join("%.2f" % t for t in takeovers), duplicates,
                     FAILOVER_DUPLICATES, seed))
        self.assertLessEqual(p50, TAKEOVER_P50_S)
        self.assertLessEqual(worst, TAKEOVER_MAX_S)

    def test_leader_frozen_longer_than_its_lease(self):
        """SIGSTOP the leader for twice its lease: a standby takes over;
        SIGCONT: the old leader finds it was deposed and exits 4 without
        dispatching more, and comes back as a standby."""
        self.start()
        h = self.h
        requests = self.campaign(8000)
        leader = self.leader()
        h.wait(lambda: leader.dispatched() > 500, 30, "the leader dispatching")
        leader.proc.signal(signal.SIGSTOP)
        frozen_at = time.time()
        took, new = self.takeover(frozen_at, exclude=leader)
        time.sleep(max(0.0, 2 * LEASE_S - (time.time() - frozen_at)))
        before = leader.proc.log_size()
        leader.proc.expect_exit = True
        leader.proc.signal(signal.SIGCONT)
        self.assertEqual(leader.proc.wait(15), 4, "a deposed leader exits 4")
        leader.proc.wait_log(r"deposed: .* leads", after=before)
        self.run_instance(leader)
        duplicates = self.check(requests, failovers=1)
        self.assertTrue(new.leads())
        self.note(f"frozen leader replaced after {took:.2f} s; it exited 4 on waking; "
                  f"{duplicates} duplicates (bound {FAILOVER_DUPLICATES})")

    def test_connections_terminated_again_and_again(self):
        """pg_terminate_backend of every fairqd connection, five times a
        second apart, under load: connections come back, a leader keeps or
        hands over the lease, and nothing is lost."""
        self.start(instances=2)
        h = self.h
        requests = self.campaign(8000)
        leader = self.leader()
        h.wait(lambda: leader.dispatched() > 500, 30, "the leader dispatching")
        for _ in range(5):
            h.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                  f" WHERE datname = current_database() AND application_name LIKE 'fairq%'")
            time.sleep(1.0)
        # A leader deposed meanwhile exits 4, and is started again
        failovers = 0
        for instance in self.instances:
            if not instance.proc.alive():
                self.assertEqual(instance.proc.returncode(), 4, instance.proc.text()[-2000:])
                instance.proc.expect_exit = True
                failovers += 1
                self.run_instance(instance)
        duplicates = self.check(requests, failovers=max(failovers, 1))
        self.note(f"5 rounds of pg_terminate_backend: {failovers} failovers, "
                  f"{duplicates} duplicates")

    def test_standby_killed(self):
        """kill -9 a standby mid-campaign: the leader goes on, exactly once."""
        self.start(instances=3)
        h = self.h
        requests = self.campaign(4000)
        leader = self.leader()
        h.wait(lambda: leader.dispatched() > 500, 30, "the leader dispatching")
        standby = next(i for i in self.instances if i is not leader)
        standby.proc.kill9()
        self.assertEqual(self.check(requests, failovers=0), 0)
        self.assertTrue(leader.leads())
        self.assertNotIn("pipeline started", standby.proc.text())


if __name__ == "__main__":
    fq_e2e.main()
