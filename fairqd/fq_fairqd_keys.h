/*  fq_fairqd_keys.h — fairqd's settings: one X-macro list of keys, read by
    the configuration engine (config/fq_config.h: the file's syntax, the
    sources default < file < environment < flags, the messages, the
    printout and the help). Every key is also a row of the table in
    docs/operations.md, which says which of them SIGHUP reloads.

    A key's variable is FAIRQ_ and its name in capitals; its config file
    is named by --config PATH or FAIRQ_CONFIG. Besides each key's range,
    the schema checks that heartbeat_timeout_ms is at least twice
    heartbeat_ms, retry_cap_ms at least retry_base_ms,
    database_retry_max_ms at least database_retry_min_ms,
    http_connections_max at least http_threads and
    http_connections_per_ip, name a valid system name, and that a
    gateway_bind without gateway_insecure has a gateway_cert and a
    gateway_allow_dir, and that one-click unsubscribe's keys go together
    (unsubscribe_listen needs unsubscribe_url, unsubscribe_url an https://
    URL and unsubscribe_secret_file, unsubscribe_mailto an address and
    unsubscribe_url). fq_fairqd.h's fq_fairqd_config_load adds that libpq
    can read the connection strings.
*/
#ifndef FQ_FAIRQD_KEYS_H
#define FQ_FAIRQD_KEYS_H

#include "fq_config.h"
#include "fq_gateway.h"
#include "fq_http_policy.h"

/*  The keys: X(ID, name, TYPE, default, min, max, choices, help).

    Why the defaults are what they are:
    * database "": libpq's own defaults and the PG* variables, as psql.
    * database_listen "": the same server as database. It differs only
      behind a pooler in transaction mode (docs/operations.md, "Behind
      PgBouncer"): a LISTEN belongs to a session, which such a pooler does
      not keep for its client, so the intake needs a session of its own.
    * database_retry_min_ms 500, _max_ms 30000: a PostgreSQL restart takes
      seconds, so the first retry comes soon; doubling to 30 s keeps the log
      readable during a long outage and bounds how long fairqd lags behind
      a database that is back.
    * lease_ms 3000: a failover takes about a lease (docs/operations.md,
      "Several fairqd"): a standby takes over 1.5 to 3 s after a leader
      died (it renews every 1.5 s). Shorter makes a slow statement or a short
      network hiccup of the leader pause dispatch more often; longer makes
      every failover slower.
    * heartbeat_ms, heartbeat_timeout_ms: the gateway's defaults.
    * http_listen 127.0.0.1:8080: loopback until the operator exposes it.
    * http_threads 4: API calls are short reads and writes of the database;
      four keep a slow submit (a big body parsed and stored) from holding
      up status calls, each thread costing one database connection.
    * http_body_max 32 MiB: about 300,000 recipients with a few fields. A
      submit holds its body and libpq's copy of the recipients, about three
      times the body (api/API.md), so a larger campaign is better sent as
      several requests or through fairq.submit in SQL.
    * http_connections_max 1000, http_connections_per_ip 64,
      http_idle_timeout_s 10: the HTTP server's connection policy, whose
      reasons are in config/fq_http_policy.h (the defaults live there).
    * metrics_public false: /metrics names every tenant and its volumes.
    * unsubscribe_listen, unsubscribe_url, unsubscribe_secret_file,
      unsubscribe_mailto "": one-click unsubscribe is off until an operator
      gives the public URL recipients reach and the secret that seals its
      tokens (docs/feedback.md, "One-click unsubscribe"); its listener is
      one of its own, apart from the admin API, so that it alone may face
      the internet. The checks between them are fq_fairqd_keys.c's.
    * prefetch 256: ids per active request, held in memory (O(active
      requests): 2 KiB each, 20 MiB for 10,000 requests); one page query
      per 256 messages of a campaign. At 64 the pipeline benchmark
      measured 48,000 msgs/s: its hundred requests each ran dry every 64
      messages and waited for a page; at 256, 53,700-57,100. At least 2:
      the scheduler asks for more ids when half its ring is left.
    * ack_batch 500, ack_flush_ms 20: group commit, a transaction every
      few ms or every N acks, whichever comes first (docs/delivery.md):
      one transaction per 500 acks at full speed, and an ack never waits
      more than 20 ms for its batch. Each batch also updates the counters
      of every request it touches (a hundred at once when a hundred
      tenants send): at 5 ms the batches held ~250 acks at 50,000 msgs/s,
      and the pipeline benchmark measured 45,500 msgs/s; at 20 ms they
      fill to 500 and it measured 49,300-52,100. Four batches is also
      how far the store may fall behind before dispatch waits for it
      (actors/fq_store_window.h), so a crash sends at most that many
      answered messages again beyond the senders' credit.
      An ack's wait is not a message's: the sender's credit comes back
      with the ack itself, before it is written (unless four batches
      are unwritten already).
    * tenant_weight 1, tenant_max_inflight 1000, tenant_submit_rate 0:
      what a tenant gets when it is created without them. Weight 1 is an
      equal share; 1000 messages in senders' hands is far beyond what
      fairness needs (a tenant's turn is one message) and bounds what one
      tenant's stuck deliveries can hold; no submit rate, as a new tenant
      is the operator's own decision. They reload on SIGHUP.
    * retry_base_ms 60000, retry_cap_ms 3600000: a temporary mail failure
      (greylisting, a full mailbox) clears in minutes, not seconds; an hour
      cap is in line with MTAs (Postfix's maximal_backoff_time is 4000 s).
    * sent_events true: every outcome is an event (docs/feedback.md); the
      message.sent ones are most of them and cost the ack batch about a
      tenth more database time (the pipeline benchmark's acks: 0.81 to 0.91
      backends busy). A deployment that reads no sent events (no webhooks
      for them, no consumer of GET /v1/events that wants them) saves that.
    * suppress_bounces 5.1.1,5.1.2,5.1.3,5.1.6,5.1.10,5.2.1: the enhanced
      status codes (RFC 3463) that say the address itself is bad or gone
      (no such mailbox, no such domain, bad syntax, moved, no mail
      accepted, disabled), and no other: a 5.7.x policy refusal or a
      5.2.2 full mailbox says nothing of the address, and suppressing it
      would lose a reader. Basic codes (550) are allowed, but 550 is also
      what servers answer for policy reasons.
    * suppress_complaints true: a recipient who reported a tenant's mail
      as spam (an ARF report posted to POST /v1/feedback) must not get its
      mail again: mailbox providers count each further complaint against
      the sending IP, which carries every tenant's mail.
    * webhook_batch 100, webhook_attempts 100, webhook_disable_after_s
      259200: a batch of 100 events is one POST of some 30 KB, which a
      receiver takes in one go; 100 attempts at the default back-off (up
      to an hour apart) span three days, and an endpoint still failing
      after three days (Stripe's and Svix's horizon) is disabled rather
      than retried for ever, its cursor kept (docs/feedback.md).
    * fairness_cost messages: a tenant's turn is one message, the one
      measure that needs nothing measured, and right when messages are
      alike. bytes (what each message renders to) or time (how long its
      sender took to deliver it) make weights buy shares of those instead,
      for tenants whose messages differ in size or in how slow their
      receivers are (docs/fairness.md, "What a message costs").
    * splitters 2: splitting is COPY-bound in PostgreSQL. A big request's
      chunks never take the last idle splitter, so with two one is always
      free for a small request (a newcomer's is split the moment it comes,
      not after a campaign's 10,000-row chunk); more add little.
    * poll_ms 1000: the fallback when a NOTIFY is missed, and how soon a
      due retry or a delayed send_at is noticed.
    * retention_s 604800: a week of finished requests for operators to
      search, then they are pruned.
    * drain_timeout_ms 10000: long enough for an SMTP answer in flight.
    * log_level info: every event of the daemon's life, not per message.
    * destinations_file "": destinations are the API's alone until an
      operator names a file of them (fq_destinations_file.h). */
#define FQ_FAIRQD_KEYS(X)                                                                          \
    X(NAME, name, STRING, "fairqd", 0, 0, NULL,                                                    \
      "name of this actor system, as sender workers address it (fq://NAME/...)")                   \
    X(DATABASE, database, CONNINFO, "", 0, 0, NULL,                                                \
      "PostgreSQL connection string (libpq); empty uses the PG* environment")                      \
    X(DATABASE_LISTEN, database_listen, CONNINFO, "", 0, 0, NULL,                                  \
      "connection string for LISTEN only (not via a transaction pooler); empty: database")         \
    X(DATABASE_RETRY_MIN_MS, database_retry_min_ms, INT, "500", 10, 60000, NULL,                   \
      "at start: first wait before connecting again to an unreachable database")                   \
    X(DATABASE_RETRY_MAX_MS, database_retry_max_ms, INT, "30000", 10, 3600000, NULL,               \
      "at start: longest wait between two attempts to connect to the database")                    \
    X(LEASE_MS, lease_ms, INT, "3000", 500, 600000, NULL,                                          \
      "the leader's lease: a standby takes over this long after the leader stops renewing it")     \
    X(GATEWAY_BIND, gateway_bind, STRING, "", 0, 0, NULL,                                          \
      "endpoint sender workers connect to, e.g. tcp://*:5555; empty: no gateway")                  \
    X(GATEWAY_CERT, gateway_cert, STRING, "", 0, 0, NULL,                                          \
      "CURVE certificate of this server (zcert file, its secret in FILE_secret)")                  \
    X(GATEWAY_ALLOW_DIR, gateway_allow_dir, STRING, "", 0, 0, NULL,                                \
      "directory of the public certificates of the sender workers allowed in")                     \
    X(GATEWAY_INSECURE, gateway_insecure, BOOL, "false", 0, 0, NULL,                               \
      "gateway without CURVE: anyone who reaches it is let in (development only)")                 \
    X(HEARTBEAT_MS, heartbeat_ms, INT, FQ_CONFIG_STR(FQ_GATEWAY_HEARTBEAT_MS), 10, 60000, NULL,    \
      "idle interval between two heartbeats to a sender worker")                                   \
    X(HEARTBEAT_TIMEOUT_MS, heartbeat_timeout_ms, INT,                                             \
      FQ_CONFIG_STR(FQ_GATEWAY_HEARTBEAT_TIMEOUT_MS), 20, 600000, NULL,                            \
      "silence after which a sender worker is dead (at least twice heartbeat_ms)")                 \
    X(HTTP_LISTEN, http_listen, STRING, "127.0.0.1:8080", 0, 0, NULL,                              \
      "address:port of the HTTP API and metrics; empty: no HTTP API")                              \
    X(HTTP_THREADS, http_threads, INT, "4", 1, 64, NULL,                                           \
      "threads serving the HTTP API, each with its own database connection")                       \
    X(HTTP_BODY_MAX, http_body_max, INT, "33554432", 1024, 268435456, NULL,                        \
      "largest HTTP request body in bytes (413 beyond)")                                           \
    X(HTTP_CONNECTIONS_MAX, http_connections_max, INT, FQ_CONFIG_STR(FQ_HTTP_CONNECTIONS_MAX), 1,  \
      1048576, NULL, "most HTTP connections open at once (each an open file)")                     \
    X(HTTP_CONNECTIONS_PER_IP, http_connections_per_ip, INT,                                       \
      FQ_CONFIG_STR(FQ_HTTP_CONNECTIONS_PER_IP), 1, 1048576, NULL,                                 \
      "most HTTP connections open at once from one client address")                                \
    X(HTTP_IDLE_TIMEOUT_S, http_idle_timeout_s, INT, FQ_CONFIG_STR(FQ_HTTP_IDLE_TIMEOUT_S), 1,     \
      3600, NULL,                                                                                  \
      "an HTTP connection silent this many seconds is closed (idle or a slow request)")            \
    X(UNSUBSCRIBE_LISTEN, unsubscribe_listen, STRING, "", 0, 0, NULL,                              \
      "host:port of the public one-click unsubscribe listener (GET and POST /u/TOKEN); empty: "    \
      "off")                                                                                       \
    X(UNSUBSCRIBE_URL, unsubscribe_url, STRING, "", 0, 0, NULL,                                    \
      "public https:// base URL recipients reach the unsubscribe listener by; empty: no links")    \
    X(UNSUBSCRIBE_SECRET_FILE, unsubscribe_secret_file, STRING, "", 0, 0, NULL,                    \
      "file of the secret (32 bytes or more, no access for others) that seals unsubscribe links")  \
    X(UNSUBSCRIBE_MAILTO, unsubscribe_mailto, STRING, "", 0, 0, NULL,                              \
      "address of List-Unsubscribe's mailto form, besides the URL; empty: none")                   \
    X(METRICS_PUBLIC, metrics_public, BOOL, "false", 0, 0, NULL,                                   \
      "serve GET /metrics without a token (it shows every tenant's figures)")                      \
    X(TENANT_WEIGHT, tenant_weight, INT, "1", 1, 1000, NULL,                                       \
      "weight of a tenant created without one (PUT /v1/tenants/NAME)")                             \
    X(TENANT_MAX_INFLIGHT, tenant_max_inflight, INT, "1000", 1, 2147483647, NULL,                  \
      "max_inflight of a tenant created without one")                                              \
    X(TENANT_SUBMIT_RATE, tenant_submit_rate, INT, "0", 0, 2147483647, NULL,                       \
      "submits per minute of a tenant created without a submit_rate; 0: no limit")                 \
    X(PREFETCH, prefetch, INT, "256", 2, 10000, NULL,                                              \
      "message ids the scheduler keeps ready per active request")                                  \
    X(ACK_BATCH, ack_batch, INT, "500", 1, 10000, NULL,                                            \
      "acks and nacks the store writes together; 4 batches unwritten stop dispatch")               \
    X(ACK_FLUSH_MS, ack_flush_ms, INT, "20", 1, 10000, NULL,                                       \
      "longest an ack waits for its batch to fill before it is written")                           \
    X(RETRY_BASE_MS, retry_base_ms, INT, "60000", 1, 86400000, NULL,                               \
      "first retry delay of a failed message; doubles with each attempt")                          \
    X(RETRY_CAP_MS, retry_cap_ms, INT, "3600000", 1, 604800000, NULL,                              \
      "longest retry delay (at least retry_base_ms)")                                              \
    X(SPLITTERS, splitters, INT, "2", 1, 16, NULL,                                                 \
      "splitter actors: requests split at once (each splits chunk by chunk)")                      \
    X(POLL_MS, poll_ms, INT, "1000", 10, 600000, NULL,                                             \
      "slow poll of open requests and due retries (a NOTIFY wakes fairqd sooner)")                 \
    X(RETENTION_S, retention_s, INT, "604800", 0, 315360000, NULL,                                 \
      "finished requests and their messages are deleted after this many seconds")                  \
    X(DRAIN_TIMEOUT_MS, drain_timeout_ms, INT, "10000", 0, 3600000, NULL,                          \
      "on SIGTERM, longest wait for messages in flight to be acked")                               \
    X(SENT_EVENTS, sent_events, BOOL, "true", 0, 0, NULL,                                          \
      "write a message.sent event for each message delivered (false: only the other events)")      \
    X(SUPPRESS_BOUNCES, suppress_bounces, STRING, "5.1.1,5.1.2,5.1.3,5.1.6,5.1.10,5.2.1", 0, 0,    \
      NULL,                                                                                        \
      "permanent failures whose reply holds one of these codes (5.1.1, or 550 first) suppress "    \
      "their address for the tenant; empty: none")                                                 \
    X(SUPPRESS_COMPLAINTS, suppress_complaints, BOOL, "true", 0, 0, NULL,                          \
      "a complaint (an ARF report posted to /v1/feedback) suppresses its address for the tenant")  \
    X(WEBHOOK_BATCH, webhook_batch, INT, "100", 1, 1000, NULL,                                     \
      "most events in one webhook batch (one POST to an endpoint)")                                \
    X(WEBHOOK_ATTEMPTS, webhook_attempts, INT, "100", 1, 100, NULL,                                \
      "attempts of a webhook batch, with the retry back-off, before it is sent anew")              \
    X(WEBHOOK_DISABLE_AFTER_S, webhook_disable_after_s, INT, "259200", 1, 31536000, NULL,          \
      "an endpoint failing this long is disabled until its tenant enables it")                     \
    X(FAIRNESS_COST, fairness_cost, CHOICE, "messages", 0, 0, "messages|bytes|time",               \
      "what a tenant's weight buys a share of: messages, their rendered bytes, or delivery time")  \
    X(LOG_LEVEL, log_level, CHOICE, "info", 0, 0, "debug|info|warning|error",                      \
      "least severe messages logged")                                                              \
    X(DESTINATIONS_FILE, destinations_file, STRING, "", 0, 0, NULL,                                \
      "file of destinations (NAME rate=100/s burst=N max_inflight=N domains=a.com,b.com), "        \
      "written to the database at start and on SIGHUP; empty: none")

//  The keys' indexes: FQ_FAIRQD_KEY_NAME, FQ_FAIRQD_KEY_DATABASE, ...
typedef enum {
#define X(id, name, type, def, min, max, choices, help) FQ_FAIRQD_KEY_##id,
    FQ_FAIRQD_KEYS(X)
#undef X
        FQ_FAIRQD_KEY_COUNT
} fq_fairqd_key_t;

//  fairqd's commands besides running (fq_config_command's index).
typedef enum {
    FQ_FAIRQD_COMMAND_MAKE_CERT, //  --make-cert PATH: a new certificate, then exit
} fq_fairqd_command_t;

//  fairqd's schema, for fq_config_new: the table, the FAIRQ_ prefix,
//  --make-cert and the checks between keys.
extern const fq_config_schema_t fq_fairqd_schema;

#endif
