#!/usr/bin/python3
"""test_monitoring.py: what deploy/monitoring ships for Prometheus and
Grafana holds against the real fairqd: the alerting rules pass `promtool
check rules` and their unit tests (`promtool test rules`); a real /metrics,
of a fairqd that delivered mail through a real fairq-sender, passes
`promtool check metrics`; and every metric the rules and the dashboard
query is one that /metrics really has, so neither rots when a metric is
renamed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "api"))
import fq_api  # noqa: E402
from fq_api import APITest, recipients, submit_body  # noqa: E402

MONITORING = os.path.join(HERE, os.pardir, os.pardir, "deploy", "monitoring")
RULES = os.path.join(MONITORING, "fairq-alerts.yml")
RULE_TESTS = os.path.join(MONITORING, "fairq-alerts.test.yml")
DASHBOARD = os.path.join(MONITORING, "fairq-dashboard.json")
PROMTOOL = shutil.which("promtool")
FAIRQD = {"poll_ms": 200}

# A metric name in a query; a histogram's series end in these
METRIC = re.compile(r"\bfairq_[a-z0-9_]+")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def promtool(*args, stdin=None):
    return subprocess.run([PROMTOOL, *args], input=stdin, capture_output=True, text=True,
                          timeout=60, cwd=MONITORING)


def queried_metrics():
    """Every fairq metric the rules and the dashboard name: {name: where}."""
    names = {}
    with open(RULES, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("#"):
                continue
            for name in METRIC.findall(line.split("summary:")[0].split("description:")[0]):
                names.setdefault(name, "fairq-alerts.yml")
    with open(DASHBOARD, encoding="utf-8") as f:
        dashboard = json.load(f)
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            for name in METRIC.findall(target["expr"]):
                names.setdefault(name, f"dashboard panel \"{panel['title']}\"")
    for variable in dashboard["templating"]["list"]:
        for name in METRIC.findall(variable.get("query", "")):
            names.setdefault(name, f"dashboard variable {variable['name']}")
    return names


NO_PROMTOOL = "promtool not installed (Debian package prometheus)"


class MonitoringTest(APITest):

    @unittest.skipIf(PROMTOOL is None, NO_PROMTOOL)
    def test_rules_check_and_unit_tests(self):
        """promtool check rules and promtool test rules pass."""
        checked = promtool("check", "rules", RULES)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        self.assertIn("SUCCESS", checked.stdout)
        tested = promtool("test", "rules", RULE_TESTS)
        self.assertEqual(tested.returncode, 0, tested.stdout + tested.stderr)

    def test_dashboard_is_well_formed(self):
        """The dashboard is JSON Grafana imports: unique panel ids, each
        panel on the Prometheus variable, each query with a refId."""
        with open(DASHBOARD, encoding="utf-8") as f:
            dashboard = json.load(f)
        ids = [p["id"] for p in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        self.assertGreaterEqual(len(ids), 10)
        for panel in dashboard["panels"]:
            self.assertEqual(panel["datasource"]["uid"], "${datasource}", panel["title"])
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                self.assertTrue(target["refId"] and target["expr"], panel["title"])

    def test_real_metrics_pass_promtool_and_feed_every_query(self):
        """A fairqd that delivered mail: its /metrics passes promtool check
        metrics, and has every metric the rules and dashboard query."""
        self.start(senders=1, **FAIRQD)
        self.put_tenant("acme")
        rid = self.submit_ok(submit_body("acme", recipients=recipients(5)))["id"]
        self.wait_request(rid, "done")
        status, _, text = self.api("GET", "/metrics")
        self.assertEqual(status, 200, text)
        self.assertIsInstance(text, str)
        if PROMTOOL:
            checked = promtool("check", "metrics", stdin=text)
            self.assertEqual(checked.returncode, 0,
                             f"promtool check metrics:\n{checked.stdout}{checked.stderr}")
        else:
            self.note(f"promtool check metrics skipped: {NO_PROMTOOL}")
        exposed = set()
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                exposed.add(line.split()[2])
        missing = []
        for name, where in sorted(queried_metrics().items()):
            base = name
            for suffix in HISTOGRAM_SUFFIXES:
                if name.endswith(suffix) and name[:-len(suffix)] in exposed:
                    base = name[:-len(suffix)]
            if base not in exposed:
                missing.append(f"{name} ({where})")
        self.assertFalse(missing, "queried but not in /metrics: " + ", ".join(missing))


if __name__ == "__main__":
    fq_api.main()
