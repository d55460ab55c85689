/*  fq_sender_keys.h — fairq-sender's settings: one X-macro list of keys,
    read by the configuration engine (config/fq_config.h), as fairqd's
    are: the same file syntax, the same sources

        default < config file < environment < command line

    the same messages, --print-config (smtp_password masked) and a help
    generated from the table. A key's variable is FAIRQ_SENDER_ and its
    name in capitals (FAIRQ_SENDER_SMTP_PASSWORD); the config file is
    named by --config PATH or FAIRQ_SENDER_CONFIG. Flags are the keys with
    dashes (--smtp-url); underscores are taken too.

    Why the defaults are what they are:
    * connect "": there is no sensible default; the schema's check
      requires it (from any source).
    * name "": sender-HOST-PID, made at start, unique on a host.
    * concurrency 8: keeps a typical relay busy without tripping its
      per-client connection limits; at most FQ_SENDER_WORKERS. It is the
      size of each channel's pool of workers.
    * channel_concurrency "": every channel's pool is concurrency workers
      (a sender of email alone has the workers it had before channels had
      pools of their own); an operator names the pools that should differ
      ("http:200,sms:4": webhooks wait on slower receivers than a relay,
      an SMS gateway takes few at once).
    * channels email, transport smtp, starttls try: production delivers
      mail to a relay, and encrypts whenever the relay offers it; a
      sender serves other channels only when told (every configuration
      written before channels existed serves what it served).
    * http_timeout_ms 30000, http_connect_timeout_ms 10000: as long as an
      SMTP delivery may take; a host that does not accept a connection in
      10 s is down. http_insecure_tls false: TLS is verified.
    * exec_timeout_ms 30000: as long as an SMTP delivery may take.
    * smtp_timeout_ms 0: the transport's own default (30 s, one place:
      fq_transport.h).
    * heartbeat_ms, heartbeat_timeout_ms: the gateway's defaults, within
      fairqd's ranges (below them the heartbeats would busy the sender,
      above them nobody would wait that long).
    * drain_timeout_ms 10000: covers an SMTP answer in flight.
    * log_level info: every event of the sender's life, not per message.
*/
#ifndef FQ_SENDER_KEYS_H
#define FQ_SENDER_KEYS_H

#include "fq_config.h"
#include "fq_gateway.h"
#include "fq_sender.h"

//  What connect looks like, for the messages that ask for it.
#define FQ_SENDER_CONNECT_FORM "tcp://HOST:PORT[,tcp://HOST:PORT...]"

//  The sizes a channel's pool may have, for the help.
#define FQ_SENDER_POOL_RANGE "1.." FQ_CONFIG_STR(FQ_SENDER_WORKERS)

//  The keys: X(ID, name, TYPE, default, min, max, choices, help).
#define FQ_SENDER_KEYS(X)                                                                          \
    X(CONNECT, connect, STRING, "", 0, 0, NULL,                                                    \
      "tcp://HOST:PORT of fairqd's gateway, or of each fairqd's, comma-separated (required)")      \
    X(CERT, cert, STRING, "", 0, 0, NULL,                                                          \
      "this sender's CURVE certificate (PATH, its secret in PATH_secret)")                         \
    X(SERVER_CERT, server_cert, STRING, "", 0, 0, NULL,                                            \
      "fairqd's public CURVE certificate (one for all fairqd)")                                    \
    X(SERVER_KEY, server_key, STRING, "", 0, 0, NULL,                                              \
      "fairqd's public CURVE key (Z85), instead of server_cert")                                   \
    X(INSECURE, insecure, BOOL, "false", 0, 0, NULL,                                               \
      "no CURVE (development only; fairqd must allow it too)")                                     \
    X(NAME, name, STRING, "", 0, 0, NULL, "this sender's name; empty: sender-HOST-PID")            \
    X(CONCURRENCY, concurrency, INT, "8", 1, FQ_SENDER_WORKERS, NULL,                              \
      "messages of each channel delivered at once (its workers) = its credit granted")             \
    X(CHANNELS, channels, STRING, FQ_CHANNEL_EMAIL, 0, 0, NULL,                                    \
      "channels served, comma-separated: email (by transport), http (by the http_ keys), any "     \
      "other NAME (by exec_command)")                                                              \
    X(CHANNEL_CONCURRENCY, channel_concurrency, STRING, "", 0, 0, NULL,                            \
      "NAME:N[,NAME:N...] workers of the channels named (" FQ_SENDER_POOL_RANGE " each) instead "  \
      "of concurrency, e.g. http:200,sms:4")                                                       \
    X(MAX_RATE, max_rate, STRING, "", 0, 0, NULL,                                                  \
      "most messages this sender's relay takes, COUNT/s, /min, /h or /d (an SES account's "        \
      "sending rate, say): fairqd hands it no more; empty: no limit")                              \
    X(TRANSPORT, transport, CHOICE, "smtp", 0, 0, "smtp|file|null|exec",                           \
      "the email channel's: smtp: to a relay; file: appended to an mbox; null: dropped "           \
      "(benchmarks); exec: exec_command")                                                          \
    X(SMTP_URL, smtp_url, STRING, "", 0, 0, NULL, "smtp://HOST:PORT or smtps://HOST:PORT")         \
    X(SMTP_USER, smtp_user, STRING, "", 0, 0, NULL, "SMTP AUTH user name; empty: no AUTH")         \
    X(SMTP_PASSWORD, smtp_password, SECRET, "", 0, 0, NULL,                                        \
      "SMTP AUTH password (better in the environment or the config file than in a flag)")          \
    X(STARTTLS, starttls, CHOICE, "try", 0, 0, "try|require|never",                                \
      "STARTTLS on smtp://: when offered, always, or never")                                       \
    X(SMTP_TIMEOUT_MS, smtp_timeout_ms, INT, "0", 0, 3600000, NULL,                                \
      "longest one delivery may take; 0: the transport's default (30000)")                         \
    X(TLS_INSECURE, tls_insecure, BOOL, "false", 0, 0, NULL,                                       \
      "do not verify the SMTP server's certificate (tests)")                                       \
    X(HELO, helo, STRING, "", 0, 0, NULL, "name said in EHLO; empty: libcurl's")                   \
    X(FILE, file, STRING, "", 0, 0, NULL,                                                          \
      "file transport: the mbox it appends to; null: its delivery log")                            \
    X(MESSAGE_ID_DOMAIN, message_id_domain, STRING, "", 0, 0, NULL,                                \
      "domain of Message-ID; empty: the From address's")                                           \
    X(HTTP_TIMEOUT_MS, http_timeout_ms, INT, "30000", 1, 3600000, NULL,                            \
      "http channel: longest one request may take")                                                \
    X(HTTP_CONNECT_TIMEOUT_MS, http_connect_timeout_ms, INT, "10000", 1, 600000, NULL,             \
      "http channel: longest opening a connection (TCP and TLS) may take")                         \
    X(HTTP_CA_FILE, http_ca_file, STRING, "", 0, 0, NULL,                                          \
      "http channel: CA certificates (PEM) servers are verified by; empty: the system's")          \
    X(HTTP_INSECURE_TLS, http_insecure_tls, BOOL, "false", 0, 0, NULL,                             \
      "http channel: do not verify servers' certificates (tests)")                                 \
    X(EXEC_COMMAND, exec_command, STRING, "", 0, 0, NULL,                                          \
      "/PATH/PROGRAM [ARG ...] run per message of the other channels (split on blanks, no shell)") \
    X(EXEC_TIMEOUT_MS, exec_timeout_ms, INT, "30000", 1, 3600000, NULL,                            \
      "longest one exec_command may run; then its process group is killed")                        \
    X(HEARTBEAT_MS, heartbeat_ms, INT, FQ_CONFIG_STR(FQ_GATEWAY_HEARTBEAT_MS), 10, 60000, NULL,    \
      "idle interval between two heartbeats to fairqd")                                            \
    X(HEARTBEAT_TIMEOUT_MS, heartbeat_timeout_ms, INT,                                             \
      FQ_CONFIG_STR(FQ_GATEWAY_HEARTBEAT_TIMEOUT_MS), 20, 600000, NULL,                            \
      "silence after which fairqd is gone")                                                        \
    X(DRAIN_TIMEOUT_MS, drain_timeout_ms, INT, "10000", 0, 3600000, NULL,                          \
      "on SIGTERM, longest wait for the deliveries under way")                                     \
    X(LOG_LEVEL, log_level, CHOICE, "info", 0, 0, "debug|info|warning|error",                      \
      "least severe messages logged")

//  The keys' indexes: FQ_SENDER_KEY_CONNECT, ...
typedef enum {
#define X(id, name, type, def, min, max, choices, help) FQ_SENDER_KEY_##id,
    FQ_SENDER_KEYS(X)
#undef X
        FQ_SENDER_KEY_COUNT
} fq_sender_key_t;

//  The sender's commands besides running (fq_config_command's index).
typedef enum {
    FQ_SENDER_COMMAND_MAKE_CERT, //  --make-cert PATH: a new certificate, then exit
} fq_sender_command_t;

//  fairq-sender's schema, for fq_config_new: the table, the FAIRQ_SENDER_
//  prefix, --make-cert, and the checks: connect is given and is a list of
//  tcp:// endpoints, name, when given, is a valid system name, channels
//  is a list of channel names (fq_sender_channels_parse),
//  channel_concurrency sizes some of them (fq_sender_pools_parse), and
//  exec_command is given when a channel needs it (one other than email
//  and http, or email with transport exec).
extern const fq_config_schema_t fq_sender_schema;

//  Fills config's transport (the email channel's) and channels from the
//  channels key, the keys of each channel's transport (email: transport
//  and its keys; http: the http_ keys; another: exec_command) and
//  channel_concurrency (each channel's concurrency, 0 for one it does not
//  name: config's concurrency, which the caller sets).
//  The channels' names are written to names, the other strings borrowed
//  from settings, which must have passed the schema's checks. Returns 0,
//  or FQ_EINVAL.
int fq_sender_channels_from(fq_config_t *settings, fq_sender_config_t *config,
                            char names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1]);
#endif
