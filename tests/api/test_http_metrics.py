#!/usr/bin/python3
"""test_http_metrics.py: GET /metrics (api/API.md) is Prometheus' text
format 0.0.4, parsed by the Prometheus client library (Debian's
python3-prometheus-client) and by a strict line check of our own, and holds
what API.md promises after real deliveries through fairq-sender and the
SMTP sink: per tenant and per sender counters with their labels, gauges,
the dispatch latency histogram, each actor's mailbox depth and restarts,
and the database batch histograms. Who may read it: an admin token, or
anyone with metrics_public = true.
"""

import math
import re
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest, recipients, submit_body  # noqa: E402

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

FAIRQD = {"poll_ms": 200}

# The families of API.md's table, by name as the parser gives them (a
# counter's without _total), with their types and labels
TENANT_COUNTERS = ["fairq_tenant_submitted", "fairq_tenant_split", "fairq_tenant_rejected",
                   "fairq_tenant_dispatched", "fairq_tenant_sent", "fairq_tenant_failed",
                   "fairq_tenant_dead", "fairq_tenant_requeued"]
TENANT_GAUGES = ["fairq_tenant_inflight", "fairq_tenant_depth", "fairq_tenant_failed_waiting",
                 "fairq_tenant_unsplit", "fairq_tenant_open_requests",
                 "fairq_tenant_oldest_pending_age_seconds", "fairq_tenant_send_held",
                 "fairq_tenant_sent_today", "fairq_tenant_daily_quota",
                 "fairq_tenant_max_send_rate_per_second", "fairq_tenant_oldest_due_age_seconds",
                 "fairq_tenant_held"]
SENDER_COUNTERS = ["fairq_sender_dispatched", "fairq_sender_sent", "fairq_sender_failed",
                   "fairq_sender_dead", "fairq_sender_requeued"]
SENDER_GAUGES = ["fairq_sender_up", "fairq_sender_inflight", "fairq_sender_credit"]
ACTOR_COUNTERS = ["fairq_actor_handled", "fairq_actor_restarts", "fairq_actor_failures"]
HISTOGRAMS = {"fairq_dispatch_latency_seconds": "tenant", "fairq_db_batch_rows": "statement",
              "fairq_db_batch_seconds": "statement"}
PLAIN = {"fairq_database_up": "gauge", "fairq_requests_inflight": "gauge",
         "fairq_senders_connected": "gauge", "fairq_dead_letters": "counter",
         "fairq_held_all": "gauge", "fairq_store_unwritten": "gauge",
         "fairq_store_waits": "counter", "fairq_store_wait_seconds": "counter"}

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
SAMPLE_LINE = re.compile(rf"^({METRIC_NAME})(\{{(?:{LABEL}(?:,{LABEL})*,?)?\}})? "
                         r"([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|NaN|[-+]?Inf))"
                         r"(?: -?[0-9]+)?$")
HELP_LINE = re.compile(rf"^# HELP ({METRIC_NAME})(?: (.*))?$")
TYPE_LINE = re.compile(rf"^# TYPE ({METRIC_NAME}) (counter|gauge|histogram|summary|untyped)$")


class MetricsTest(APITest):

    def check_text_format(self, text):
        """The exposition line by line, as Prometheus' own (strict) parser
        would take it: every line a HELP, a TYPE or a sample; one TYPE per
        family, before its samples, and each family's samples together;
        a sample's name its family's (plus _bucket, _sum, _count for
        histograms); the text ends with a newline."""
        self.assertTrue(text.endswith("\n"), "the exposition does not end with a newline")
        types, finished, current = {}, set(), None
        for number, line in enumerate(text.split("\n")[:-1], 1):
            where = f"line {number}: {line!r:.200}"
            if line.startswith("#"):
                m = TYPE_LINE.match(line)
                if m:
                    self.assertNotIn(m.group(1), types, f"{where}: a second TYPE")
                    types[m.group(1)] = m.group(2)
                    if current:
                        finished.add(current)
                    current = m.group(1)
                    continue
                m = HELP_LINE.match(line)
                self.assertTrue(m or not line.startswith(("# HELP", "# TYPE")), where)
                continue
            self.assertTrue(line.strip(), f"{where}: an empty line")
            m = SAMPLE_LINE.match(line)
            self.assertTrue(m, f"{where}: not a sample line")
            name = m.group(1)
            family = name
            if current and types.get(current) == "histogram" and \
                    name in (current + "_bucket", current + "_sum", current + "_count"):
                family = current
            self.assertIn(family, types, f"{where}: a sample without a TYPE")
            self.assertEqual(family, current, f"{where}: a sample away from its family")
            self.assertNotIn(family, finished, f"{where}: the family {family} again")
        return types

    def metrics(self, token=fq_api.ADMIN):
        status, headers, text = self.api("GET", "/metrics", token=token)
        self.assertEqual(status, 200, f"/metrics: {text!r:.500}")
        content_type = headers.get("Content-Type", "")
        self.assertTrue(content_type.startswith("text/plain"), content_type)
        self.assertIn("version=0.0.4", content_type)
        self.assertIsInstance(text, str)
        types = self.check_text_format(text)
        families = {}
        for family in text_string_to_metric_families(text):
            self.assertNotIn(family.name, families, f"family {family.name} twice")
            self.assertNotEqual(family.type, "unknown", f"{family.name}: no TYPE")
            families[family.name] = family
        return text, types, families

    def value(self, families, name, sample_name=None, **labels):
        """The value of the one sample of family name with these labels
        (None if there is none)."""
        family = families.get(name)
        if family is None:
            return None
        found = [s.value for s in family.samples
                 if (sample_name is None or s.name == sample_name) and
                 all(s.labels.get(k) == v for k, v in labels.items())]
        self.assertLessEqual(len(found), 1, f"{name}{labels}: {len(found)} samples")
        return found[0] if found else None

    def check_histogram(self, family, label, value):
        """The histogram of family for label=value: cumulative buckets
        rising with le, +Inf equal to _count, a _sum. Returns _count."""
        samples = [s for s in family.samples if s.labels.get(label) == value]
        buckets = sorted(((float(s.labels["le"]), s.value) for s in samples
                          if s.name == family.name + "_bucket"), key=lambda b: b[0])
        self.assertGreaterEqual(len(buckets), 2, f"{family.name}{{{label}={value}}}: buckets")
        self.assertTrue(math.isinf(buckets[-1][0]), f"{family.name}: no le=\"+Inf\" bucket")
        counts = [c for _, c in buckets]
        self.assertEqual(counts, sorted(counts), f"{family.name}{{{label}={value}}}: buckets "
                                                 f"are not cumulative: {buckets}")
        count = [s.value for s in samples if s.name == family.name + "_count"]
        total = [s.value for s in samples if s.name == family.name + "_sum"]
        self.assertEqual(len(count), 1, f"{family.name}{{{label}={value}}}: _count")
        self.assertEqual(len(total), 1, f"{family.name}{{{label}={value}}}: _sum")
        self.assertEqual(buckets[-1][1], count[0], f"{family.name}: +Inf bucket != _count")
        self.assertGreaterEqual(total[0], 0)
        return count[0]

    def test_metrics_after_delivery(self):
        """Two tenants' mail delivered, one message dead, one recipient
        rejected: /metrics parses, and its tenant and sender counters,
        gauges and histograms say so."""
        self.start(senders=1, **FAIRQD)
        self.sink.set_rules({"rules": [{"match": "nobody@", "reply": "550 5.1.1 no such user"}]})
        self.put_tenant("alpha")
        self.put_tenant("bravo.b-2")
        alpha = self.submit_ok(submit_body("alpha", recipients=recipients(3, "a") + [
            {"to": "nobody@example.org", "fields": {"name": "N"}},
            {"to": "bad\r\nBcc: x@evil.test", "fields": {"name": "B"}}]))["id"]
        bravo = self.submit_ok(submit_body("bravo.b-2", recipients=recipients(2, "b")))["id"]
        self.assertEqual(self.wait_request(alpha, "done")["dead"], 1)
        self.wait_request(bravo, "done")
        self.assertEqual(self.sink.count(), 5)

        a, b = "alpha", "bravo.b-2"
        expected = {("fairq_tenant_submitted", a): 5, ("fairq_tenant_submitted", b): 2,
                    ("fairq_tenant_split", a): 4, ("fairq_tenant_split", b): 2,
                    ("fairq_tenant_rejected", a): 1, ("fairq_tenant_rejected", b): 0,
                    ("fairq_tenant_dispatched", a): 4, ("fairq_tenant_dispatched", b): 2,
                    ("fairq_tenant_sent", a): 3, ("fairq_tenant_sent", b): 2,
                    ("fairq_tenant_failed", a): 0, ("fairq_tenant_dead", a): 1,
                    ("fairq_tenant_dead", b): 0, ("fairq_tenant_inflight", a): 0,
                    ("fairq_tenant_depth", a): 0, ("fairq_tenant_depth", b): 0,
                    ("fairq_tenant_open_requests", a): 0}
        last = {}

        def settled():
            text, types, families = self.metrics()
            last["figures"] = {k: self.value(families, k[0], tenant=k[1]) for k in expected}
            last["all"] = (text, types, families)
            return last["all"] if last["figures"] == expected else None
        text, types, families = self.h.wait(
            settled, 15, "/metrics to count the deliveries", interval=0.3,
            describe=lambda: f"figures {last.get('figures')}, expected {expected}")
        self.note(f"{len(families)} families, {len(text.splitlines())} lines")

        # Every family of API.md's table, of its type, with its labels
        def labels_of(name):
            return {frozenset(k for k in s.labels if k != "le") for s in families[name].samples}
        wanted = {**{n: "counter" for n in TENANT_COUNTERS + SENDER_COUNTERS + ACTOR_COUNTERS},
                  **{n: "gauge" for n in TENANT_GAUGES + SENDER_GAUGES},
                  "fairq_actor_mailbox_depth": "gauge", "fairq_db_errors": "counter",
                  "fairq_message_errors": "gauge",
                  **{n: "histogram" for n in HISTOGRAMS}, **PLAIN}
        for name, kind in wanted.items():
            self.assertIn(name, families, f"no family {name}")
            self.assertEqual(families[name].type, kind, name)
            if kind == "counter":
                self.assertEqual(types.get(name + "_total"), "counter", f"{name}_total")
        for name in TENANT_COUNTERS + TENANT_GAUGES:
            tenants = {s.labels.get("tenant") for s in families[name].samples}
            self.assertEqual(tenants, {"alpha", "bravo.b-2"}, f"{name}: tenant labels")
            self.assertEqual(labels_of(name), {frozenset({"tenant"})}, name)
        for name in SENDER_COUNTERS + SENDER_GAUGES:
            self.assertEqual(labels_of(name), {frozenset({"sender", "address"})}, name)
        for name in ACTOR_COUNTERS + ["fairq_actor_mailbox_depth"]:
            self.assertEqual(labels_of(name), {frozenset({"actor"})}, name)
        for name, label in HISTOGRAMS.items():
            self.assertEqual(labels_of(name), {frozenset({label})}, name)
        for name in PLAIN:
            self.assertEqual(labels_of(name), {frozenset()}, name)
        # Read with the 24-hour rates, at most once a minute: the dead
        # message shows once they are read again, with these labels
        self.assertLessEqual(labels_of("fairq_message_errors"),
                             {frozenset({"tenant", "destination", "code", "enhanced"})})
        self.assertEqual(self.value(families, "fairq_database_up"), 1)
        self.assertEqual(self.value(families, "fairq_senders_connected"), 1)
        self.assertEqual(self.value(families, "fairq_requests_inflight"), 0)

        # The sender's counters, under its name
        senders = {s.labels.get("sender") for s in families["fairq_sender_sent"].samples}
        self.assertEqual(senders, {"s1"}, "fairq_sender_sent: sender labels")
        self.assertEqual(self.value(families, "fairq_sender_sent", sender="s1"), 5)
        self.assertEqual(self.value(families, "fairq_sender_dead", sender="s1"), 1)
        self.assertEqual(self.value(families, "fairq_sender_dispatched", sender="s1"), 6)
        self.assertEqual(self.value(families, "fairq_sender_up", sender="s1"), 1)
        self.assertEqual(self.value(families, "fairq_sender_inflight", sender="s1"), 0)

        # The dispatch latency histogram: one observation per first attempt
        latency = families["fairq_dispatch_latency_seconds"]
        self.assertEqual(self.check_histogram(latency, "tenant", "alpha"), 4)
        self.assertEqual(self.check_histogram(latency, "tenant", "bravo.b-2"), 2)
        # Each actor's mailbox depth and restarts, labelled by actor
        actors = {s.labels.get("actor") for s in families["fairq_actor_mailbox_depth"].samples}
        self.assertTrue({"/user/scheduler", "/user/dispatcher", "/user/store"} <= actors,
                        f"mailbox depth of too few actors: {actors}")
        self.assertNotIn(None, actors)
        restarts = {s.labels.get("actor") for s in families["fairq_actor_restarts"].samples}
        self.assertEqual(restarts, actors)
        for s in families["fairq_actor_mailbox_depth"].samples:
            self.assertGreaterEqual(s.value, 0, s)
        # Database batches: acks were written, and split chunks
        for name in ("fairq_db_batch_rows", "fairq_db_batch_seconds"):
            statements = {s.labels.get("statement") for s in families[name].samples}
            self.assertTrue({"acks", "split"} <= statements, f"{name}: {statements}")
            self.assertGreaterEqual(self.check_histogram(families[name], "statement", "acks"), 1)
            self.assertGreaterEqual(self.check_histogram(families[name], "statement", "split"), 1)
        rows = sum(s.value for s in families["fairq_db_batch_rows"].samples
                   if s.name == "fairq_db_batch_rows_sum" and s.labels["statement"] == "acks")
        self.assertEqual(rows, 5, "rows of the ack batches (the five sent messages)")

    def test_metrics_access(self):
        """/metrics needs an admin token (401 without, 403 for a tenant's);
        with metrics_public = true anyone may read it, and the rest of the
        API still needs its tokens; while PostgreSQL is down it still
        answers, with fairq_database_up 0."""
        fairqd = self.start(**FAIRQD)
        self.put_tenant("alpha")
        alpha = self.new_token("alpha")
        self.assert_error(self.api("GET", "/metrics", token=None), 401, "/metrics without a token")
        self.assert_error(self.api("GET", "/metrics", token=alpha), 403,
                          "/metrics with a tenant token")
        _, _, families = self.metrics()
        self.assertEqual(self.value(families, "fairq_database_up"), 1)
        self.assertEqual(self.h.stop(fairqd), 0)

        self.h.start_fairqd(name="fairqd-public", metrics_public="true", **FAIRQD)
        self.h.wait(self._healthy, fq_api.fq_e2e.START_TIMEOUT_S, "the second fairqd's /healthz")
        _, _, families = self.metrics(token=None)
        self.assertIn("fairq_tenant_depth", families)
        _, _, families = self.metrics(token=alpha)
        self.assertIn("fairq_dispatch_latency_seconds", families)
        self.assert_error(self.api("GET", "/v1/requests", token=None), 401,
                          "/v1/requests without a token, metrics_public or not")
        self.assert_error(self.api("GET", "/v1/tenants", token=None), 401, "/v1/tenants")

        # PostgreSQL unreachable: the public /metrics still answers, well
        # formed, fairq_database_up 0 (the actors' figures are in memory),
        # whichever HTTP thread takes the call
        with self.database_blocked():
            seen = []
            for _ in range(12):
                status, _, text = self.api("GET", "/metrics", token=None)
                seen.append(status)
                if status == 200:
                    families = {f.name: f for f in text_string_to_metric_families(text)}
                    self.assertEqual(self.value(families, "fairq_database_up"), 0)
                    self.assertIn("fairq_actor_mailbox_depth", families)
                    self.assertIn("fairq_dispatch_latency_seconds", families)
            self.assertEqual(seen, [200] * 12, "GET /metrics (metrics_public) with PostgreSQL "
                                               f"unreachable answered {seen}")
        self.h.wait(lambda: self.value(self.metrics(token=None)[2], "fairq_database_up") == 1, 30,
                    "/metrics to say fairq_database_up 1 again", interval=0.2)

if __name__ == "__main__":
    fq_api.main()
