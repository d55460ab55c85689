#!/usr/bin/python3
"""test_pg_failover.py: fairq through a PostgreSQL failover (docs/operations.md,
"PostgreSQL failover").

The test runs a replicated PostgreSQL of its own on 127.0.0.1: a primary
and a synchronous standby (synchronous_standby_names names it, so a commit
is acknowledged only once the standby has it). fairqd connects with a
multi-host connection string, both servers and
target_session_attrs=read-write, and so always to whichever is primary.

A campaign runs and submits keep coming over the HTTP API; mid-way the
primary is stopped with -m immediate (a crash: no shutdown checkpoint, no
goodbye to its clients) and the standby is promoted. Every request answered
202, before, during or after the failover, must then be done with every
recipient at the SMTP sink at least once; submits made while no primary
answered get 503, never 500.
"""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, free_port, message_id_of, wait_for  # noqa: E402

FAIRQD = {"poll_ms": 200, "retry_base_ms": 200, "retry_cap_ms": 1000,
          "database_retry_min_ms": 100, "database_retry_max_ms": 1000}
CONCURRENCY = 16
CAMPAIGN = 4000
SUBMIT_RECIPIENTS = 20
SUBMIT_EVERY_S = 0.05
STANDBY_NAME = "standby1"


def _bindir():
    pg_config = os.environ.get("PG_CONFIG", "pg_config")
    return subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                          check=True).stdout.strip()


class Replicated:
    """A primary and a synchronous standby of their own, in a directory of
    the test's; run as the owner of pg_virtualenv's cluster when the test
    runs as root (PostgreSQL refuses to run as root)."""

    def __init__(self, workdir):
        self.bin = _bindir()
        self.dir = tempfile.mkdtemp(prefix="pg_", dir=workdir)
        self.user = None
        if os.geteuid() == 0:
            self.user = "postgres"
            pw = pwd.getpwnam(self.user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            os.chmod(workdir, 0o755)
        self.ports = {"primary": free_port(), "standby": free_port()}
        self.running = set()

    def _as_owner(self, argv, check=True):
        if self.user:
            argv = ["runuser", "-u", self.user, "--"] + argv
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}): "
                                 f"{done.stderr.strip()} {done.stdout.strip()}")
        return done

    def data(self, name):
        return os.path.join(self.dir, name)

    def dsn(self, name, dbname="postgres"):
        return f"host=127.0.0.1 port={self.ports[name]} user=postgres dbname={dbname}"

    def multi_host(self, dbname):
        """Both servers, the primary wanted: what fairqd is given."""
        return (f"host=127.0.0.1,127.0.0.1 port={self.ports['primary']},"
                f"{self.ports['standby']} user=postgres dbname={dbname}"
                " target_session_attrs=read-write connect_timeout=2")

    def _settings(self, name):
        return (f"\nport = {self.ports[name]}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.dir}'\n"
                "wal_level = replica\nmax_wal_senders = 5\nhot_standby = on\n"
                f"synchronous_standby_names = '{STANDBY_NAME}'\n"
                "fsync = off\nlog_min_messages = warning\n")

    @staticmethod
    def _append(path, text):
        # The file keeps its owner: root may write into the server's files
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)

    def start(self):
        primary, standby = self.data("primary"), self.data("standby")
        self._as_owner([os.path.join(self.bin, "initdb"), "-D", primary, "-U", "postgres",
                        "--auth=trust", "--no-sync"])
        self._append(os.path.join(primary, "postgresql.conf"), self._settings("primary"))
        self._append(os.path.join(primary, "pg_hba.conf"),
                     "host replication all 127.0.0.1/32 trust\n")
        self.pg_ctl("primary", "start")
        self._as_owner([os.path.join(self.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p",
                        str(self.ports["primary"]), "-U", "postgres", "-D", standby, "-R",
                        "--no-sync"])
        # postgresql.auto.conf, after what -R wrote there: it is read last,
        # and its last primary_conninfo, naming the standby, wins
        self._append(os.path.join(standby, "postgresql.auto.conf"),
                     self._settings("standby") +
                     f"primary_conninfo = 'host=127.0.0.1 port={self.ports['primary']}"
                     f" user=postgres application_name={STANDBY_NAME}'\n")
        self.pg_ctl("standby", "start")
        wait_for(lambda: self.scalar("primary", "SELECT sync_state FROM pg_stat_replication"
                                     f" WHERE application_name = '{STANDBY_NAME}'") == "sync",
                 30, "the standby to replicate synchronously")

    def pg_ctl(self, name, action, *extra):
        argv = [os.path.join(self.bin, "pg_ctl"), "-D", self.data(name), "-w", "-t", "60"]
        if action == "start":
            argv += ["-l", os.path.join(self.dir, f"{name}.log")]
        # The server inherits pg_ctl's output: never a pipe we would wait on
        if self.user:
            argv = ["runuser", "-u", self.user, "--"] + argv
        done = subprocess.run(argv + [action] + list(extra), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"pg_ctl {action} {name} failed ({done.returncode})")
        if action == "start":
            self.running.add(name)
        elif action == "stop":
            self.running.discard(name)

    def stop_waiting_for_standby(self, name):
        for query in ("ALTER SYSTEM SET synchronous_standby_names = ''",
                      "SELECT pg_reload_conf()"):
            done = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d",
                                   self.dsn(name), "-c", query],
                                  capture_output=True, text=True, timeout=30)
            if done.returncode != 0:
                raise AssertionError(f"{query} on {name}: {done.stderr.strip()}")

    def scalar(self, name, query, dbname="postgres"):
        done = subprocess.run(["psql", "-X", "-At", "-d", self.dsn(name, dbname), "-c", query],
                              capture_output=True, text=True, timeout=30)
        return done.stdout.strip() if done.returncode == 0 else None

    def log(self, name):
        try:
            with open(os.path.join(self.dir, f"{name}.log"), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return ""

    def stop_all(self):
        for name in list(self.running):
            try:
                self.pg_ctl(name, "stop", "-m", "immediate")
            except AssertionError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


class PGFailoverTest(E2ETest):

    def setUp(self):
        self.h = fq_e2e.Harness(self.id())
        self.pg = Replicated(self.h.dir)
        # Cleanups run last first: fairqd and the others stop before the
        # servers they use
        self.addCleanup(self.pg.stop_all)
        self.addCleanup(self.h.cleanup)
        self.pg.start()
        dbname = "fairq"
        subprocess.run(["createdb", "-h", "127.0.0.1", "-p", str(self.pg.ports["primary"]),
                        "-U", "postgres", dbname], check=True, capture_output=True, timeout=60)
        self.h.dsn = self.pg.multi_host(dbname)

    def test_primary_crashes_and_the_standby_is_promoted(self):
        """kill the primary mid-campaign, promote the synchronous standby:
        every request answered 202 is delivered in full."""
        h = self.h
        sink = h.start_sink()
        fairqd = h.start_fairqd(database=h.dsn, **FAIRQD)
        h.wait_schema()
        h.create_tenant("shop")
        h.start_sender("s1", sink, CONCURRENCY)
        token = h.make_token("shop")
        accepted = {h.submit("shop", bulk=(CAMPAIGN, "c", "example.test")): CAMPAIGN}
        answers = {"202": 0, "503": 0, "other": []}
        stop = threading.Event()

        def submit_loop():
            n = 0
            while not stop.is_set():
                n += 1
                recipients = [{"to": f"s{n}-{i}@example.test", "fields": {"name": f"s{n}-{i}"}}
                              for i in range(SUBMIT_RECIPIENTS)]
                try:
                    status, _, body = h.http("POST", "/v1/requests", token=token, timeout=20,
                                             body={"from": "news@shop.test",
                                                   "subject": "Hello {{name}}",
                                                   "body": "Dear {{name}}",
                                                   "recipients": recipients})
                except OSError as error:  # No answer at all: as bad as a 500
                    status, body = None, repr(error)
                if status == 202:
                    accepted[int(body["id"])] = SUBMIT_RECIPIENTS
                    answers["202"] += 1
                elif status == 503:
                    answers["503"] += 1
                else:
                    answers["other"].append((status, body))
                stop.wait(SUBMIT_EVERY_S)

        submitter = threading.Thread(target=submit_loop, daemon=True)
        submitter.start()
        try:
            h.wait(lambda: sink.count() >= CAMPAIGN // 4, 90, "a quarter of the campaign sent")
            crashed_at = time.monotonic()
            self.pg.pg_ctl("primary", "stop", "-m", "immediate")
            time.sleep(1.0)
            self.pg.pg_ctl("standby", "promote")
            # Alone now, it must not wait for a synchronous standby of its
            # own (there is none): every commit would hang. What Patroni does
            # by itself, an operator does by hand
            self.pg.stop_waiting_for_standby("standby")
            promoted_at = time.monotonic()
            before = sink.count()
            h.wait(lambda: sink.count() > before + 100, 60,
                   "deliveries to resume after the promotion")
            resumed_s = time.monotonic() - promoted_at
            time.sleep(2.0)
        finally:
            stop.set()
            submitter.join(30)
        self.assertEqual(answers["other"], [], "submits answered neither 202 nor 503")
        self.assertTrue(fairqd.alive())

        for rid in accepted:
            h.wait_request(rid, "done", 120)
        records = sink.records()
        delivered = {message_id_of(r) for r in records}
        ids = {int(r[0]) for r in h.sql(
            "SELECT id FROM fairq.messages WHERE request_id IN (%s)"
            % ",".join(str(r) for r in accepted))}
        total = sum(accepted.values())
        self.assertEqual(len(ids), total, "recipients of accepted requests without a message")
        self.assertEqual(ids - delivered, set(), "accepted recipients never delivered")
        duplicates = len(records) - len(delivered)
        self.note(f"{answers['202']} submits accepted over HTTP ({answers['503']} answered 503 "
                  f"meanwhile), {total} recipients all delivered, {duplicates} twice; "
                  f"deliveries resumed {resumed_s:.1f} s after the promotion "
                  f"({time.monotonic() - crashed_at:.0f} s after the crash in all)")


if __name__ == "__main__":
    fq_e2e.main()
