#!/usr/bin/python3
"""test_pgbouncer.py: fairq behind PgBouncer in transaction pooling
(docs/operations.md, "Behind PgBouncer").

A real PgBouncer (Debian's /usr/sbin/pgbouncer) of the test's own, on a free
port of 127.0.0.1, in front of the PostgreSQL of pg_virtualenv:
pool_mode = transaction and a pool of SERVER_POOL connections, fewer than
fairqd's clients (its actors, its lease keeper and its HTTP threads each
hold one), so that server connections really pass from one client to the
next. fairqd's `database` goes through PgBouncer; its `database_listen`
goes to PostgreSQL directly, as the operations guide says it must.

A campaign from a few tenants, some recipients refused once with a 451 (so
they are retried), then:
  * every recipient reaches the SMTP sink exactly once, and each request's
    counters and each message's row agree with that;
  * the HTTP API's reads (GET /v1/requests/ID, GET /v1/tenants) answer
    through PgBouncer, as its submits did;
  * PgBouncer did share its server connections among more clients, and
    the intake's LISTEN is on a session of its own, not one of PgBouncer's;
  * a statement fairqd prepared on one server connection was unknown on
    another (PgBouncer 1.18 keeps no prepared statements per client), and
    fairqd said so and ran its statements as text from then on;
  * no session setting of fairq's is left on PgBouncer's server
    connections: clients of the same pool, each on a server connection of
    its own, see enable_bitmapscan, plan_cache_mode, jit and TimeZone as
    the server's defaults.

PgBouncer must be installed (deploy/install-deps.sh installs it): without
it the test fails, saying so, rather than skip. PgBouncer refuses to run as
root: when the test runs as root, PgBouncer runs as the owner of the
PostgreSQL data directory.
"""

import os
import pwd
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest, message_id_of, free_port, lit  # noqa: E402

PGBOUNCER = "/usr/sbin/pgbouncer"

# Server connections of PgBouncer's one pool (fairqd's database and user):
# fewer than fairqd's clients, so transactions of different clients take
# turns on the same server connections
SERVER_POOL = 4

FAIRQD = {"retry_base_ms": 200, "retry_cap_ms": 1000, "poll_ms": 200}
CONCURRENCY = 16

# The campaign: tenant -> recipients, RETRIED of them refused at first
TENANTS = {"alpha": 300, "beta": 150, "gamma": 60}
RETRIED = 20

# The settings fairqd once SET on each session; none may outlive a
# transaction of fairqd's on a server connection PgBouncer lends others
SETTINGS = ("enable_bitmapscan", "plan_cache_mode", "jit", "TimeZone")

DELIVERY_TIMEOUT_S = 120

# Attempts per message: the "retry" refusals last until the last of them was
# refused once, seconds after the first tenant's were; at retry_cap_ms a
# second apart, 5 attempts could run out in that window and fail a message
MAX_ATTEMPTS = 60


class PgBouncer:
    """A PgBouncer of the test's own, its files in the harness's directory."""

    def __init__(self, harness):
        if not os.path.exists(PGBOUNCER):
            raise AssertionError(f"pgbouncer is not installed ({PGBOUNCER} is missing): "
                                 "run deploy/install-deps.sh (Debian package pgbouncer)")
        self.h = harness
        self.port = free_port()
        self.backend = (os.environ.get("PGHOST") or "localhost", os.environ.get("PGPORT") or "5432")
        self.user = os.environ.get("PGUSER") or pwd.getpwuid(os.geteuid()).pw_name
        password = os.environ.get("PGPASSWORD")
        if not password:
            raise AssertionError("PGPASSWORD is not set: run under pg_virtualenv")
        # Its files: readable by the user it runs as, in a directory of
        # their own inside the harness's (which that user may then cross)
        self.dir = os.path.join(harness.dir, "pgbouncer")
        os.mkdir(self.dir)
        owner = self._run_as()
        if owner:
            os.chmod(harness.dir, 0o711)
            os.chmod(self.dir, 0o755)
        auth = os.path.join(self.dir, "userlist.txt")
        self._write(auth, f'"{self.user}" "{password}"\n', owner)
        ini = os.path.join(self.dir, "pgbouncer.ini")
        host, port = self.backend
        self._write(ini, "\n".join([
            "[databases]",
            # Any database name, on the backend of the PG* environment
            f"* = host={host} port={port}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            "pool_mode = transaction",
            f"default_pool_size = {SERVER_POOL}",
            "min_pool_size = 0",
            "reserve_pool_size = 0",
            "max_client_conn = 200",
            "auth_type = scram-sha-256",
            f"auth_file = {auth}",
            f"admin_users = {self.user}",
            # The log goes to stderr, which the harness keeps
            "logfile =",
            "log_connections = 0",
            "log_disconnections = 0",
            ""]), owner)
        argv = [PGBOUNCER, ini]
        if owner:
            uid, gid = owner
            # setpriv execs (no fork), and sets the parent-death signal after
            # the change of user, which clears it: PgBouncer dies with the test
            argv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                    "--pdeathsig=KILL", "--"] + argv
        # Not one of the harness's children: those are stopped by SIGTERM,
        # which PgBouncer answers with a "fast exit" (status 1), and fairqd
        # among them must drain with PgBouncer still there (stop)
        self.proc = fq_e2e.Proc("pgbouncer", argv, os.path.join(harness.dir, "pgbouncer.log"))
        self.proc.wait_log(r"process up")
        self.url = f"host=127.0.0.1 port={self.port}"

    def stop(self):
        """Stops PgBouncer (after the harness stopped fairqd), and hands its
        log to the harness, which prints it if the test failed."""
        self.proc.expect_exit = True
        self.proc.signal(signal.SIGTERM)
        if self.proc.wait(fq_e2e.STOP_TIMEOUT_S) is None:
            self.proc.signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc.close()
        self.h.procs.append(self.proc)

    def _run_as(self):
        """(uid, gid) to run as when root: the data directory's owner."""
        if os.geteuid() != 0:
            return None
        st = os.stat(self.h.scalar("SHOW data_directory"))
        if st.st_uid == 0:
            raise AssertionError("the PostgreSQL data directory is root's: PgBouncer "
                                 "cannot run as its owner")
        return st.st_uid, st.st_gid

    @staticmethod
    def _write(path, text, owner):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o600)
        if owner:
            os.chown(path, *owner)

    def conninfo(self, dbname):
        return f"{self.url} dbname={dbname}"

    def psql(self, dbname, query, header=False):
        """Runs query through PgBouncer; returns its rows (lists of strings),
        the first one the column names with header."""
        argv = ["psql", "-X", "-q", "-A", "-F", fq_e2e.FIELD_SEP, "-v", "ON_ERROR_STOP=1",
                "-h", "127.0.0.1", "-p", str(self.port), "-d", dbname, "-c", query]
        if not header:
            argv.insert(3, "-t")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise AssertionError(f"psql through pgbouncer failed: {done.stderr.strip()}\n"
                                 f"query: {query}")
        lines = [line for line in done.stdout.splitlines() if line]
        if header and lines and lines[-1].startswith("("):
            lines = lines[:-1]  # "(N rows)"
        return [line.split(fq_e2e.FIELD_SEP) for line in lines]

    def show(self, what):
        """SHOW what on PgBouncer's admin console, as dicts."""
        rows = self.psql("pgbouncer", f"SHOW {what}", header=True)
        names = rows[0]
        return [dict(zip(names, row)) for row in rows[1:]]


class PgBouncerTest(E2ETest):

    def setUp(self):
        self.bouncer = None
        # Added before the harness's cleanup, so run after it: PgBouncer
        # stops once fairqd has drained and stopped
        self.addCleanup(lambda: self.bouncer and self.bouncer.stop())
        super().setUp()

    def test_pipeline_through_transaction_pooling(self):
        h = self.h
        bouncer = self.bouncer = PgBouncer(h)
        # "retry" recipients are refused (451) until each was tried, then
        # accepted
        sink = h.start_sink(rules={"rules": [
            {"match": "retry", "reply": "451 4.3.0 try again later"}]})
        fairqd = h.start_fairqd(database=bouncer.conninfo(h.dbname),
                                database_listen=f"dbname={h.dbname}", **FAIRQD)
        h.wait_schema()
        for name in TENANTS:
            h.create_tenant(name)
        h.start_sender("s1", sink, CONCURRENCY)
        h.start_sender("s2", sink, CONCURRENCY)

        # Half the requests through the HTTP API (writes through PgBouncer),
        # half through fairq.submit, as an application would
        token = h.make_token()
        expected = {}  # recipient -> tenant
        requests = {}  # request id -> (tenant, total)
        retried = 0
        for name, count in TENANTS.items():
            for part in range(2):
                recipients = []
                for i in range(part, count, 2):
                    local = f"{name}{i}"
                    if retried < RETRIED and i % 7 == 3:
                        local = f"retry-{local}"
                        retried += 1
                    to = f"{local}@{name}.test"
                    recipients.append({"to": to, "fields": {"name": local, "n": i}})
                    expected[to] = name
                if part == 0:
                    status, _, body = h.http("POST", "/v1/requests", token=token, body={
                        "tenant": name, "from": f"news@{name}.test", "subject": "Hi {{name}}",
                        "body": "Dear {{name}},\nmessage {{n}}.\n", "recipients": recipients,
                        "max_attempts": MAX_ATTEMPTS})
                    self.assertEqual(status, 202, body)
                    rid = body["id"]
                else:
                    rid = h.submit(name, recipients, max_attempts=MAX_ATTEMPTS)
                requests[rid] = (name, len(recipients))
        self.assertEqual(retried, RETRIED)
        self.note(f"{len(expected)} recipients in {len(requests)} requests, "
                  f"{RETRIED} refused once")

        retry = "recipient LIKE 'retry-%'"

        def all_refused():
            ms = list(h.messages(retry).values())
            return len(ms) == RETRIED and all(m["try_count"] >= 1 for m in ms)
        h.wait(all_refused, DELIVERY_TIMEOUT_S, "every retry- recipient to be refused once",
               interval=0.2, describe=lambda: f"{list(h.messages(retry).values())[:3]}")
        sink.set_rules({})
        for rid in requests:
            h.wait_request(rid, "done", DELIVERY_TIMEOUT_S)

        # Every recipient exactly once, each with its own message's id
        records = sink.records()
        delivered = [to for r in records for to in r["to"]]
        duplicates = sorted({to for to in delivered if delivered.count(to) > 1})
        self.assertEqual(duplicates, [], "recipients delivered more than once")
        self.assertEqual(sorted(delivered), sorted(expected))
        messages = h.messages()
        self.assertEqual(len(messages), len(expected))
        for r in records:
            mid = message_id_of(r)
            self.assertIn(mid, messages, r["message_id"])
            self.assertEqual([messages[mid]["recipient"]], r["to"])
        for m in messages.values():
            self.assertEqual(m["status"], "sent", m)
            self.assertEqual(m["tenant"], expected[m["recipient"]], m)
            if m["recipient"].startswith("retry-"):
                self.assertGreaterEqual(m["try_count"], 2, m)
                self.assertIn("451 4.3.0", m["last_error"], m)
            else:
                self.assertEqual(m["try_count"], 1, m)

        # The counters, in the database and through the HTTP API (a read of
        # an API thread's connection, through PgBouncer)
        for rid, (name, total) in requests.items():
            row = h.request(rid)
            self.assertEqual((row["total"], row["split"], row["sent"], row["failed"],
                              row["dead"], row["cancelled"], row["rejected"]),
                             (total, total, total, 0, 0, 0, 0), row)
            api = h.api_request(rid)
            self.assertEqual((api["tenant"], api["status"], api["total"], api["sent"],
                              api["pending"], api["failed"], api["inflight"]),
                             (name, "done", total, total, 0, 0, 0), api)
        status, _, body = h.http("GET", "/v1/tenants", token=token)
        self.assertEqual(status, 200, body)
        tenants = {t["name"]: t for t in body["tenants"]}
        for name in TENANTS:
            self.assertIn(name, tenants, body)
            self.assertEqual((tenants[name]["depth"], tenants[name]["open_requests"]), (0, 0),
                             tenants[name])

        # PgBouncer shared SERVER_POOL server connections among more clients
        clients = [c for c in bouncer.show("CLIENTS") if c["database"] == h.dbname]
        servers = [s for s in bouncer.show("SERVERS") if s["database"] == h.dbname]
        self.note(f"{len(clients)} clients of pgbouncer on {len(servers)} server connections")
        self.assertGreater(len(clients), SERVER_POOL)
        self.assertLessEqual(len(servers), SERVER_POOL)
        # ...and the intake LISTENs on a session of its own, not one of them
        listeners = h.sql("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                          " AND query ILIKE 'LISTEN%'")
        self.assertEqual(len(listeners), 1, listeners)
        self.assertNotIn(listeners[0][0], {s["remote_pid"] for s in servers})
        # A statement fairqd prepared on one server connection was unknown
        # on the next: fairqd ran it as text from then on, and lost nothing
        self.assertRegex(fairqd.text(), r"the server forgot a statement prepared on this "
                         r"connection \(a pooler in transaction mode\?\): statements run as "
                         r"text")

        # No setting of fairqd's sessions is left on PgBouncer's server
        # connections: SERVER_POOL clients at once, each in a transaction
        # (so each on a server connection of its own: all of them), see the
        # server's defaults
        self.check_server_defaults(bouncer)
        self.assertTrue(fairqd.alive())
        self.assertTrue(bouncer.proc.alive(), "pgbouncer exited")

    def check_server_defaults(self, bouncer):
        h = self.h
        names = ", ".join(lit(name) for name in SETTINGS)
        # Each client holds its server connection for a while (a transaction
        # of several statements, one -c each): the others cannot get it
        # meanwhile
        argv = ["psql", "-X", "-q", "-At", "-F", fq_e2e.FIELD_SEP, "-v", "ON_ERROR_STOP=1",
                "-h", "127.0.0.1", "-p", str(bouncer.port), "-d", h.dbname,
                "-c", "BEGIN", "-c", "SELECT pg_sleep(1)",
                "-c", "SELECT pg_backend_pid(), name, setting, reset_val, source"
                      f" FROM pg_settings WHERE name IN ({names})",
                "-c", "COMMIT"]
        clients = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True) for _ in range(SERVER_POOL)]
        rows = []
        for client in clients:
            out, err = client.communicate(timeout=60)
            self.assertEqual(client.returncode, 0, f"psql through pgbouncer failed: {err}")
            rows += [line.split(fq_e2e.FIELD_SEP) for line in out.splitlines()
                     if fq_e2e.FIELD_SEP in line]
        pids = {row[0] for row in rows}
        self.note(f"settings seen on {len(pids)} server connections: "
                  f"{sorted({(r[1], r[2]) for r in rows})}")
        self.assertEqual(len(pids), SERVER_POOL, rows)
        self.assertEqual(len(rows), SERVER_POOL * len(SETTINGS), rows)
        for pid, name, setting, reset_val, source in rows:
            self.assertEqual(setting, reset_val,
                             f"{name} is {setting} on server connection {pid}, "
                             f"not the server's {reset_val} (source {source})")
            self.assertNotEqual(source, "session", f"{name} was SET on connection {pid}")


if __name__ == "__main__":
    fq_e2e.main()
