#!/usr/bin/env bash
# fairq, running for real on this machine, in about a minute.
#
#   deploy/quickstart.sh [start]   install what fairq needs (Debian 12), build, start
#                                  PostgreSQL, an SMTP sink, fairqd and two senders,
#                                  submit three campaigns and watch them go out
#   deploy/quickstart.sh status    what is running, and how far each campaign is
#   deploy/quickstart.sh stop      stop everything the quickstart started (idempotent)
#
# Everything lives under var/ in the repository (git ignores it):
#
#   var/pg/          a private PostgreSQL 15 cluster (no system service): it listens on a
#                    unix socket in var/run only, never on TCP; trust authentication, so
#                    var/run is 0700 and only its owner (and root) can connect
#   var/run/         that socket, and a pid file per background process
#   var/log/         one log per process
#   var/certs/       CURVE certificates: fairqd's, one per sender, and allowed/ with the
#                    senders' public certificates only (fairqd's allow list)
#   var/fairq.conf   fairqd's configuration, written at each start
#   var/admin.token  an admin token of fairqd's HTTP API, made at each start (0600)
#   var/mail.jsonl   every message the SMTP sink accepted, one JSON object a line
#
# The cluster and the certificates are made once and reused. Each start drops and
# recreates the database "fairq" and empties var/mail.jsonl, and says so before it does:
# a half-sent campaign of an earlier run would otherwise resume alongside the new ones and
# muddle what the demo shows. A quickstart still running is stopped first, so there are
# never two.
#
# Ports (127.0.0.1 only; override when taken): QUICKSTART_GATEWAY_PORT (fairqd's gateway,
# default 25555), QUICKSTART_HTTP_PORT (fairqd's HTTP API, 25080), QUICKSTART_SMTP_PORT
# (the SMTP sink, 25025), QUICKSTART_PG_PORT (only
# names PostgreSQL's socket file, 55432). QUICKSTART_PGBIN: PostgreSQL's programs.
set -euo pipefail

# The demo talks to its own cluster and its own fairqd only. PG* variables (PGHOST,
# PGDATABASE, PGOPTIONS, ...) would redirect psql and libpq, and FAIRQ_* ones override
# fairqd's config file (FAIRQ_DATABASE could point it at a real database!) and the
# senders' options (FAIRQ_SENDER_*): none of them belongs in a quickstart.
# First, before this script names variables of its own.
unset "${!PG@}" "${!FAIRQ_@}"

# Resolve the repo root from this script's location so the caller's cwd doesn't matter;
# -P: the physical path, which is what the running processes' command lines hold.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD="$ROOT/build/release"
FAIRQD="$BUILD/fairqd/fairqd"
SENDER="$BUILD/sender/fairq-sender"
FAIRQ="$BUILD/cli/fairq"
SINK="$ROOT/tests/e2e/smtp_sink.py"
PYTHON=/usr/bin/python3 # Debian's, which has aiosmtpd (the SMTP sink's library)

VAR="$ROOT/var"
RUN="$VAR/run"
LOG="$VAR/log"
CERTS="$VAR/certs"
PGDATA_DIR="$VAR/pg"
CONF="$VAR/fairq.conf"
MAIL="$VAR/mail.jsonl"

PGBIN=${QUICKSTART_PGBIN:-/usr/lib/postgresql/15/bin}
PG_PORT=${QUICKSTART_PG_PORT:-55432}
GATEWAY_PORT=${QUICKSTART_GATEWAY_PORT:-25555}
SMTP_PORT=${QUICKSTART_SMTP_PORT:-25025}
HTTP_PORT=${QUICKSTART_HTTP_PORT:-25080}
ADMIN_TOKEN="$VAR/admin.token"

SENDERS=(sender-1 sender-2)
CONCURRENCY=8 # Per sender: fairq-sender's default, a typical relay's comfort zone
# The demo's campaigns: tenant, recipients. Submitted in this order, biggest first.
BIG=megastore BIG_N=20000
MID=bakery MID_N=300
SMALL=clinic SMALL_N=5
SMALL_AFTER=1000 # The small ones submit once the big one has delivered this many
TICK_MS=500      # Progress lines every half second while the small ones run...
LINGER_MS=3000   # ...and this long after they are done, then the summary
SLOW_TICK_MS=2000
WATCH_CAP_S=60 # Then stop watching; the big campaign goes on in the background

say() { printf '%s\n' "$*"; }
warn() { printf 'quickstart: %s\n' "$*" >&2; }
die() {
    warn "$*"
    exit 1
}

# Thousands separators, whatever the locale: 20000 -> 20,000.
group() {
    local n=$1 out=""
    while ((${#n} > 3)); do
        out=",${n: -3}$out"
        n=${n:0:-3}
    done
    printf '%s' "$n$out"
}

# Milliseconds since the epoch (bash 5's EPOCHREALTIME, no fork).
now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    printf '%s' "$((t / 1000))"
}

# "+12.3s" for a number of milliseconds.
secs() {
    local ms=$1
    printf '%d.%d' "$((ms / 1000))" "$((ms % 1000 / 100))"
}

# A path as the user should type it: relative to the repository when we run from it.
show() {
    if [[ $PWD == "$ROOT" ]]; then
        printf '%s' "${1#"$ROOT"/}"
    else
        printf '%s' "$1"
    fi
}

# ---------------------------------------------------------------------------
# PostgreSQL runs as the owner of var/pg: initdb and pg_ctl refuse to run as root, so as
# root that is the `postgres` account (runuser), otherwise the invoking user.

if [[ $(id -u) -eq 0 ]]; then
    PG_OWNER=postgres
else
    PG_OWNER=$(id -un)
fi

as_pg() {
    # From /: the owner may not be allowed into the caller's working directory
    if [[ $(id -u) -eq 0 ]]; then
        (cd / && runuser -u "$PG_OWNER" -- "$@")
    else
        (cd / && "$@")
    fi
}

# Makes path (a file or directory) belong to the cluster's owner.
pg_own() {
    if [[ $(id -u) -eq 0 ]]; then
        chown "$PG_OWNER:" "$@"
    fi
}

pg_running() {
    [[ -f "$PGDATA_DIR/PG_VERSION" ]] && as_pg "$PGBIN/pg_ctl" status -D "$PGDATA_DIR" >/dev/null 2>&1
}

# The running server's port and socket directory, from its postmaster.pid (lines 4 and
# 5), so that status and stop find it whatever QUICKSTART_PG_PORT says now.
pg_socket() {
    local -a lines
    mapfile -t -n 5 lines <"$PGDATA_DIR/postmaster.pid" 2>/dev/null || return 1
    [[ ${#lines[@]} -ge 5 && -n ${lines[3]} ]] || return 1
    printf '%s %s\n' "${lines[3]}" "${lines[4]}"
}

# psql on the quickstart's database, unaligned, without psqlrc, stopping at the first
# error. Extra arguments (-c, -v, ...) follow.
sql() {
    local port dir
    read -r port dir < <(pg_socket) || die "PostgreSQL in $(show "$PGDATA_DIR") is not running"
    "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d "${DB:-fairq}" "$@"
}

# Quoting for the three languages paths pass through, so a repository path with blanks
# or quotes still works: libpq's conninfo ('...' with \' and \\), fairqd's config file
# ("..." with \" and \\) and postgresql.conf ('...' with '').
conninfo_quote() {
    local s=${1//\\/\\\\}
    printf "'%s'" "${s//\'/\\\'}"
}
conf_quote() {
    local s=${1//\\/\\\\}
    printf '"%s"' "${s//\"/\\\"}"
}
pgconf_quote() {
    printf "'%s'" "${1//\'/\'\'}"
}

pg_start() {
    [[ -x "$PGBIN/initdb" && -x "$PGBIN/pg_ctl" && -x "$PGBIN/psql" ]] ||
        die "PostgreSQL 15's programs are not in $PGBIN (postgresql-15 missing? or set QUICKSTART_PGBIN)"
    local socket="$RUN/.s.PGSQL.$PG_PORT"
    # The kernel's limit for a unix socket's path (sun_path) is 107 bytes
    ((${#socket} <= 107)) || die "the socket path $socket is too long for a unix socket: clone fairq to a shorter path"

    mkdir -p "$PGDATA_DIR"
    pg_own "$RUN" "$PGDATA_DIR"
    chmod 700 "$RUN" "$PGDATA_DIR"
    local owner
    owner=$(stat -c %U "$PGDATA_DIR")
    [[ $owner == "$PG_OWNER" ]] ||
        die "$(show "$PGDATA_DIR") belongs to $owner, not $PG_OWNER: run the quickstart as the same user as before, or remove $(show "$VAR")"
    # As root, the cluster runs as postgres, which must be able to reach var/
    as_pg test -w "$PGDATA_DIR" -a -w "$RUN" ||
        die "user $PG_OWNER cannot reach $(show "$VAR") (a parent directory is closed to it, e.g. /root): put the repository where $PG_OWNER can enter, or run as a normal user"

    if [[ ! -f "$PGDATA_DIR/PG_VERSION" ]]; then
        [[ -z $(ls -A "$PGDATA_DIR") ]] ||
            die "$(show "$PGDATA_DIR") is neither empty nor a cluster (an interrupted initdb?): remove it and start again"
        say "Creating a PostgreSQL cluster in $(show "$PGDATA_DIR") (once; runs as $PG_OWNER)"
        # Superuser "postgres" whoever runs it, so the connection string is the same
        # as root and as a user; trust: the socket directory's permissions guard it.
        as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres -A trust -E UTF8 --no-locale \
            >"$LOG/initdb.log" 2>&1 || {
            tail -n 20 "$LOG/initdb.log" >&2
            die "initdb failed (log: $(show "$LOG/initdb.log"))"
        }
        # Our settings come from a file of their own, rewritten at each start
        printf "\n# deploy/quickstart.sh\ninclude_if_exists = 'quickstart.conf'\n" >>"$PGDATA_DIR/postgresql.conf"
    fi
    # Rewritten at each start, so the paths follow the repository if it moves
    cat >"$PGDATA_DIR/quickstart.conf" <<EOF
# Written by deploy/quickstart.sh at each start.
listen_addresses = ''
port = $PG_PORT
unix_socket_directories = $(pgconf_quote "$RUN")
unix_socket_permissions = 0700
EOF
    pg_own "$PGDATA_DIR/quickstart.conf"
    touch "$LOG/postgresql.log"
    pg_own "$LOG/postgresql.log"

    if ! as_pg "$PGBIN/pg_ctl" start -D "$PGDATA_DIR" -l "$LOG/postgresql.log" -w -t 60 >/dev/null; then
        tail -n 20 "$LOG/postgresql.log" >&2
        die "PostgreSQL did not start (log: $(show "$LOG/postgresql.log"))"
    fi
    # A run before this one left its database: say so before it goes
    if [[ -n $(DB=postgres sql -c "SELECT 1 FROM pg_database WHERE datname = 'fairq'") ]]; then
        say "quickstart: resetting the demo database fairq (drops its data: the requests, messages and tokens of the last run)"
    fi
    DB=postgres sql -c 'SET client_min_messages = warning' \
        -c 'DROP DATABASE IF EXISTS fairq WITH (FORCE)' -c 'CREATE DATABASE fairq'
    say "PostgreSQL 15  $(show "$PGDATA_DIR"), socket $(show "$socket"), fresh database fairq"
}

pg_stop() {
    if pg_running; then
        as_pg "$PGBIN/pg_ctl" stop -D "$PGDATA_DIR" -m fast -w -t 60 >/dev/null
        say "stopped PostgreSQL ($(show "$PGDATA_DIR"))"
    fi
}

# ---------------------------------------------------------------------------
# Background processes: each runs in a session of its own (setsid), so neither Ctrl-C in
# this terminal nor closing it reaches it, with its output in var/log/NAME.log and its
# pid in var/run/NAME.pid.

# Whether pid runs one of our programs: its command line names var/ (every one of them
# is given a path in it), so a recycled pid is never taken for it.
is_ours() {
    local cmdline state
    [[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] || return 1
    cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ $cmdline == *"$VAR/"* && $state != Z ]]
}

# The pid of NAME if it is running; a stale pid file is removed.
pid_of() {
    local file="$RUN/$1.pid" pid
    [[ -f $file ]] || return 1
    pid=$(<"$file")
    if is_ours "$pid"; then
        printf '%s' "$pid"
        return 0
    fi
    rm -f "$file"
    return 1
}

alive() {
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $state != Z ]]
}

start_bg() {
    local name=$1
    shift
    local pid i
    : >"$LOG/$name.log"
    # setsid execs the program (it forks only for a process group leader, which a
    # background job of a script is not), so $! is the program's pid
    setsid "$@" </dev/null >>"$LOG/$name.log" 2>&1 &
    pid=$!
    echo "$pid" >"$RUN/$name.pid"
    # Until the exec, the pid still runs a copy of this script
    for ((i = 0; i < 50; i++)); do
        is_ours "$pid" && return 0
        alive "$pid" || break
        sleep 0.1
    done
    show_log "$name"
    die "$name did not start"
}

# Prints the end of NAME's log, to show why it failed.
show_log() {
    local log="$LOG/$1.log"
    warn "last lines of $(show "$log"):"
    tail -n 25 "$log" | sed 's/^/    /' >&2
}

# Waits until NAME's log matches the regex, or fails (with the log's end) when NAME
# exits or timeout seconds pass. hint, if given, says what to look at.
wait_log() {
    local name=$1 regex=$2 timeout=$3 hint=${4:-}
    local pid deadline
    pid=$(<"$RUN/$name.pid")
    deadline=$(($(now_ms) + timeout * 1000))
    while ! grep -Eq -- "$regex" "$LOG/$name.log"; do
        if ! alive "$pid"; then
            show_log "$name"
            die "$name exited while starting"
        fi
        if (($(now_ms) > deadline)); then
            show_log "$name"
            die "$name did not get ready within $timeout s${hint:+ ($hint)}"
        fi
        sleep 0.1
    done
}

# SIGTERM to each of NAMES that runs, then up to timeout seconds for them to finish (each
# program drains its work first), then SIGKILL for any still there.
stop_bg() {
    local timeout=$1
    shift
    local name pid i deadline names=() pids=()
    for name; do
        pid=$(pid_of "$name") || continue
        kill -TERM "$pid" 2>/dev/null || true
        names+=("$name")
        pids+=("$pid")
    done
    deadline=$(($(now_ms) + timeout * 1000))
    for i in "${!pids[@]}"; do
        while alive "${pids[i]}" && (($(now_ms) < deadline)); do
            sleep 0.1
        done
        if alive "${pids[i]}"; then
            warn "${names[i]} (pid ${pids[i]}) did not stop within $timeout s of SIGTERM: killing it"
            kill -KILL "${pids[i]}" 2>/dev/null || true
        else
            say "stopped ${names[i]} (pid ${pids[i]})"
        fi
        rm -f "$RUN/${names[i]}.pid"
    done
}

anything_running() {
    local name
    for name in "${SENDERS[@]}" fairqd smtp-sink; do
        pid_of "$name" >/dev/null && return 0
    done
    pg_running
}

do_stop() {
    [[ -d $RUN ]] || return 0
    # Senders first: each says BYE and finishes what it holds, which needs fairqd (for
    # the acks) and the sink (for the mail); then fairqd, then the sink, then the store.
    stop_bg 30 "${SENDERS[@]}"
    stop_bg 30 fairqd
    stop_bg 10 smtp-sink
    pg_stop
}

# ---------------------------------------------------------------------------
# status

do_status() {
    if [[ ! -d $VAR ]]; then
        say "The quickstart has not run here yet (no $(show "$VAR"))."
        return 3
    fi
    local name pid all=0
    say "fairq quickstart in $(show "$VAR"):"
    for name in fairqd "${SENDERS[@]}" smtp-sink; do
        if pid=$(pid_of "$name"); then
            printf '  %-11s running, pid %-8s log %s\n' "$name" "$pid" "$(show "$LOG/$name.log")"
        else
            printf '  %-11s not running\n' "$name"
            all=3
        fi
    done
    if pg_running; then
        local port dir
        read -r port dir < <(pg_socket)
        printf '  %-11s running, socket %s\n' postgresql "$(show "$dir")/.s.PGSQL.$port"
        [[ -f $MAIL ]] && say "  mail        $(group "$(wc -l <"$MAIL")") messages in $(show "$MAIL")"
        say ""
        local rows id tenant status sent total failed
        rows=$(sql -F '|' -c "SELECT r.id, t.name, r.status, r.sent, r.total, r.dead + r.rejected
                                FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id
                               ORDER BY r.id" 2>/dev/null || true)
        if [[ -n $rows ]]; then
            printf '  %-7s %-10s %-10s %10s %10s %8s\n' request tenant status sent total failed
            while IFS='|' read -r id tenant status sent total failed; do
                printf '  %-7s %-10s %-10s %10s %10s %8s\n' "$id" "$tenant" "$status" "$(group "$sent")" "$(group "$total")" "$(group "$failed")"
            done <<<"$rows"
        else
            say "  no requests (yet)"
        fi
    else
        printf '  %-11s not running\n' postgresql
        all=3
    fi
    return "$all"
}

# ---------------------------------------------------------------------------
# start

build() {
    "$ROOT/deploy/install-deps.sh"
    mkdir -p "$BUILD" 2>/dev/null || die "cannot create $BUILD (repo not writable by $(id -un))"
    # Only the programs the demo runs: the tests and benchmarks stay buildable with
    # cmake --build build/release (deploy/test.sh builds them all).
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$BUILD" -j"$(nproc)" --target fairqd fairq-sender fairq
}

port_free() {
    # Something answers on it: taken (bash's /dev/tcp connects, nothing is sent)
    ! (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

make_certs() {
    mkdir -p "$CERTS/allowed"
    chmod 700 "$CERTS"
    local name
    for name in fairqd "${SENDERS[@]}"; do
        if [[ ! -s "$CERTS/$name" || ! -s "$CERTS/${name}_secret" ]]; then
            "$SENDER" --make-cert "$CERTS/$name" >/dev/null
        fi
        chmod 600 "$CERTS/${name}_secret"
    done
    # fairqd lets in exactly the public certificates in allowed/: never a secret
    for name in "${SENDERS[@]}"; do
        cp "$CERTS/$name" "$CERTS/allowed/$name"
    done
}

write_conf() {
    cat >"$CONF" <<EOF
# fairqd's configuration for deploy/quickstart.sh, written at each start (edits are
# overwritten). Every key: build/release/fairqd/fairqd --help.
name = fairqd
# The private cluster's unix socket under var/run: no TCP, no password
database = $(conf_quote "host=$(conninfo_quote "$RUN") port=$PG_PORT dbname=fairq user=postgres")
# Senders connect here, with CURVE: fairqd's certificate, and the senders' public ones
gateway_bind = tcp://127.0.0.1:$GATEWAY_PORT
gateway_cert = $(conf_quote "$CERTS/fairqd")
gateway_allow_dir = $(conf_quote "$CERTS/allowed")
# The HTTP API and /metrics, for the fairq CLI (token in var/admin.token)
http_listen = 127.0.0.1:$HTTP_PORT
# A demo: a failed message comes back within seconds, not after production's minute;
# due retries and requests are noticed within 200 ms
retry_base_ms = 2000
retry_cap_ms = 30000
poll_ms = 200
drain_timeout_ms = 5000
log_level = info
EOF
}

start_sink() {
    if [[ -s $MAIL ]]; then
        say "quickstart: emptying $(show "$MAIL") (the mail of the last run)"
    fi
    : >"$MAIL" # A fresh demo, a fresh mailbox
    start_bg smtp-sink "$PYTHON" "$SINK" --host 127.0.0.1 --port "$SMTP_PORT" --out "$MAIL"
    wait_log smtp-sink '^ready [0-9]+' 20
    say "SMTP sink      smtp://127.0.0.1:$SMTP_PORT, writing $(show "$MAIL")"
}

start_fairqd() {
    start_bg fairqd "$FAIRQD" --config "$CONF"
    wait_log fairqd 'INFO: +ready$' 60
    say "fairqd         gateway tcp://127.0.0.1:$GATEWAY_PORT (CURVE), HTTP API http://127.0.0.1:$HTTP_PORT, config $(show "$CONF")"
    # An admin token for the fairq CLI, made by fairqd in the database it reads from the
    # same config file (kept there as a hash only); the database is new at each start,
    # so is the token
    (
        umask 077
        "$FAIRQD" token create --admin --config "$CONF" >"$ADMIN_TOKEN"
    )
}

start_senders() {
    local name
    for name in "${SENDERS[@]}"; do
        # --starttls never: the local sink speaks plain SMTP; --helo: each message
        # tells (in the sink's "helo") which sender delivered it
        start_bg "$name" "$SENDER" --connect "tcp://127.0.0.1:$GATEWAY_PORT" \
            --cert "$CERTS/$name" --server-cert "$CERTS/fairqd" --name "$name" \
            --concurrency "$CONCURRENCY" --transport smtp --smtp-url "smtp://127.0.0.1:$SMTP_PORT" \
            --starttls never --helo "$name.quickstart.test" --drain-timeout-ms 5000
    done
    for name in "${SENDERS[@]}"; do
        wait_log "$name" 'welcomed by' 20 "not let in by fairqd? see also $(show "$LOG/fairqd.log")"
        say "$(printf '%-14s' "$name") smtp to the sink, $CONCURRENCY at a time"
    done
}

# ---------------------------------------------------------------------------
# The demo's campaigns. Recipients and their personal fields are generated in SQL.

create_tenants() {
    sql -c "INSERT INTO fairq.tenants (name) VALUES ('$BIG'), ('$MID'), ('$SMALL')
            ON CONFLICT (name) DO NOTHING"
}

submit_big() {
    sql <<EOF
SELECT fairq.submit('$BIG', 'offers@megastore.example',
    '{{name}}, our winter sale starts today',
    'Dear {{name}},

everything in our shop is 30% off until Sunday. Your customer number is {{customer}}.

Megastore',
    (SELECT jsonb_agg(jsonb_build_object(
                'to', 'customer' || i || '@example.com',
                'fields', jsonb_build_object(
                    'name', (ARRAY['Ann','Ben','Chloe','David','Emma','Farid','Grace','Hugo','Ines','Jonas'])[1 + i % 10]
                            || ' ' || (ARRAY['Smith','Garcia','Nguyen','Muller','Rossi','Kowalski','Silva','Dubois'])[1 + i / 10 % 8],
                    'customer', i)) ORDER BY i)
       FROM generate_series(1, $BIG_N) AS i));
EOF
}

# Two statements, two transactions: the bakery first, then the clinic.
submit_small() {
    sql <<EOF
SELECT fairq.submit('$MID', 'hello@bakery.example',
    'Fresh sourdough on Saturday, {{name}}',
    'Hi {{name}},

our sourdough is back this Saturday. We keep a loaf for you until noon.

The Corner Bakery',
    (SELECT jsonb_agg(jsonb_build_object(
                'to', 'neighbour' || i || '@example.org',
                'fields', jsonb_build_object('name', 'neighbour ' || i)) ORDER BY i)
       FROM generate_series(1, $MID_N) AS i));
SELECT fairq.submit('$SMALL', 'appointments@clinic.example',
    'Reminder: your appointment tomorrow at {{time}}',
    'Dear {{name}},

this is a reminder of your appointment with {{doctor}} tomorrow at {{time}}.
Please call us if you cannot come.

Green Street Clinic',
    (SELECT jsonb_agg(jsonb_build_object('to', p.email,
                'fields', jsonb_build_object('name', p.name, 'doctor', p.doctor, 'time', p.at)) ORDER BY p.n)
       FROM (VALUES (1, 'ann.lee@example.net', 'Ms Lee', 'Dr Okafor', '09:00'),
                    (2, 'bo.chen@example.net', 'Mr Chen', 'Dr Okafor', '09:30'),
                    (3, 'carla.diaz@example.net', 'Ms Diaz', 'Dr Berg', '10:15'),
                    (4, 'dev.patel@example.net', 'Mr Patel', 'Dr Berg', '11:00'),
                    (5, 'eva.novak@example.net', 'Ms Novak', 'Dr Okafor', '14:45'))
            AS p(n, email, name, doctor, at)));
EOF
}

# ---------------------------------------------------------------------------
# Watching

declare -A REQ    # tenant -> request id
declare -A SENT   # tenant -> sent
declare -A TOTAL  # tenant -> recipients
declare -A STATUS # tenant -> request status
declare -A AFTER  # tenant -> seconds from submit to its last delivery, once done
declare -A LINE   # tenant -> its formatted progress line
WATCHED=()        # tenants submitted so far, in order

# One query for every watched request; fills the arrays above.
poll() {
    local ids name sent total failed status after bar rest
    ids=$(IFS=,; echo "${REQ[*]}")
    while IFS='|' read -r name sent total failed status after; do
        SENT[$name]=$sent TOTAL[$name]=$total STATUS[$name]=$status AFTER[$name]=$after
        local width=$((total > 0 ? 20 * sent / total : 20)) state
        printf -v bar '%*s' "$width" ''
        printf -v rest '%*s' $((20 - width)) ''
        bar=${bar// /#}${rest// /-}
        case $status in
            done) state="done, $after s after submit" ;;
            active) state=sending ;;
            accepted) state=queued ;;
            *) state=$status ;;
        esac
        ((failed > 0)) && state+=", $(group "$failed") failed"
        LINE[$name]=$(printf '%-10s [%s] %7s / %-7s %s' "$name" "$bar" "$(group "$sent")" "$(group "$total")" "$state")
    done < <(sql -F '|' -c "
        SELECT t.name, r.sent, r.total, r.dead + r.rejected, r.status,
               to_char(extract(epoch FROM d.last - r.created_at), 'FM9990.00')
          FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id
          -- The last delivery's time, read only once the request is done
          LEFT JOIN LATERAL (SELECT max(m.updated_at) AS last FROM fairq.messages m
                              WHERE m.request_id = r.id AND m.status = 'sent'
                                AND r.status = 'done') d ON true
         WHERE r.id IN ($ids) ORDER BY r.id")
}

# Fails the watch (everything else stays up for a look) when a process died.
check_alive() {
    local name
    for name in fairqd "${SENDERS[@]}" smtp-sink; do
        if ! pid_of "$name" >/dev/null; then
            show_log "$name"
            die "$name stopped while the campaigns were running"
        fi
    done
}

print_tick() {
    local elapsed=$1 name first=1
    for name in "${WATCHED[@]}"; do
        if ((first)); then
            printf '%6ss  %s\n' "+$(secs "$elapsed")" "${LINE[$name]:-$name}"
            first=0
        else
            printf '%8s %s\n' "" "${LINE[$name]:-$name}"
        fi
    done
}

# Sleeps until the next tick, period ms after the previous one.
NEXT_TICK=0
tick_sleep() {
    local period=$1 now
    now=$(now_ms)
    ((NEXT_TICK = NEXT_TICK > 0 ? NEXT_TICK + period : now + period))
    ((NEXT_TICK < now)) && NEXT_TICK=$now
    local wait=$((NEXT_TICK - now))
    sleep "$((wait / 1000)).$(printf '%03d' $((wait % 1000)))"
}

summary() {
    local big=${REQ[$BIG]} mid=${REQ[$MID]} small=${REQ[$SMALL]}
    say ""
    # When each small request got its last delivery, and how much of the big campaign
    # had been delivered at that moment (a message's updated_at is its ack's time)
    local name total after big_sent lines=() first=1
    while IFS='|' read -r name total after big_sent; do
        ((big_sent < BIG_N)) || first=0
        lines+=("$(printf '  %-10s %7s recipients   all delivered %4s s after submit   %s then: %7s of %s' \
            "$name" "$(group "$total")" "$after" "$BIG" "$(group "$big_sent")" "$(group "$BIG_N")")")
    done < <(sql -F '|' -c "
        WITH small AS (
            SELECT t.name, r.total, r.created_at,
                   (SELECT max(m.updated_at) FROM fairq.messages m
                     WHERE m.request_id = r.id AND m.status = 'sent') AS last
              FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id
             WHERE r.id IN ($small, $mid))
        SELECT s.name, s.total, to_char(extract(epoch FROM s.last - s.created_at), 'FM9990.00'),
               (SELECT count(*) FROM fairq.messages m WHERE m.request_id = $big
                   AND m.status = 'sent' AND m.updated_at <= s.last)
          FROM small s ORDER BY s.last")
    if ((first)); then
        say "The small campaigns were done first, while $BIG (submitted first) was still sending:"
    else
        say "This time $BIG was done before a small campaign (a very fast machine?):"
    fi
    printf '%s\n' "${lines[@]}"
    say ""
}

watch_demo() {
    local t0 now elapsed
    say ""
    say "Submitting the campaigns (requests land in PostgreSQL; fairqd splits and dispatches them):"
    REQ[$BIG]=$(submit_big)
    t0=$(now_ms)
    WATCHED=("$BIG")
    printf '%6ss  %s submits a campaign to %s recipients (request %s)\n' "+0.0" "$BIG" "$(group "$BIG_N")" "${REQ[$BIG]}"

    # Phase 1: the big campaign alone, until its mail flows
    while :; do
        tick_sleep "$TICK_MS"
        check_alive
        poll
        now=$(now_ms)
        elapsed=$((now - t0))
        print_tick "$elapsed"
        if ((${SENT[$BIG]:-0} == 0 && elapsed > 20000)); then
            die "nothing delivered 20 s after the submit: something is wrong (see $(show "$LOG/fairqd.log") and the senders' logs)"
        fi
        ((${SENT[$BIG]:-0} >= SMALL_AFTER || elapsed > 30000)) && break
    done
    local ids
    mapfile -t ids < <(submit_small)
    ((${#ids[@]} == 2)) || die "could not submit the small campaigns"
    REQ[$MID]=${ids[0]} REQ[$SMALL]=${ids[1]}
    WATCHED+=("$MID" "$SMALL")
    printf '%6ss  %s has %s left to send; now %s submits %s recipients (request %s) and %s %s (request %s)\n' \
        "+$(secs $(($(now_ms) - t0)))" "$BIG" "$(group $((BIG_N - ${SENT[$BIG]:-0})))" "$MID" "$(group "$MID_N")" "${REQ[$MID]}" \
        "$SMALL" "$(group "$SMALL_N")" "${REQ[$SMALL]}"

    # Phase 2: all three, every half second, until the small ones are done and a bit
    local small_done_at=0 small_submitted
    small_submitted=$(now_ms)
    while :; do
        tick_sleep "$TICK_MS"
        check_alive
        poll
        now=$(now_ms)
        print_tick $((now - t0))
        if ((small_done_at == 0)) && [[ ${STATUS[$MID]:-} == "done" && ${STATUS[$SMALL]:-} == "done" ]]; then
            small_done_at=$now
        fi
        ((small_done_at > 0 && now - small_done_at >= LINGER_MS)) && break
        if ((small_done_at == 0 && now - small_submitted > 30000)); then
            die "the small campaigns are not done 30 s after their submit: something is wrong (see $(show "$LOG/fairqd.log") and the senders' logs)"
        fi
    done
    summary

    # Phase 3: the big one, less often, until it is done or the cap
    while [[ ${STATUS[$BIG]:-} != "done" ]] && (($(now_ms) - t0 < WATCH_CAP_S * 1000)); do
        tick_sleep "$SLOW_TICK_MS"
        check_alive
        poll
        printf '%6ss  %s\n' "+$(secs $(($(now_ms) - t0)))" "${LINE[$BIG]:-$BIG}"
    done
    if [[ ${STATUS[$BIG]:-} == "done" ]]; then
        local rate
        rate=$(awk -v n="${TOTAL[$BIG]}" -v s="${AFTER[$BIG]}" 'BEGIN { if (s > 0) printf "%d", n / s; else print "?" }')
        say "$BIG: all $(group "${TOTAL[$BIG]}") delivered ${AFTER[$BIG]} s after submit (about $(group "$rate") messages/s)."
    else
        say "$BIG has sent $(group "${SENT[$BIG]:-0}") of $(group "$BIG_N") after ${WATCH_CAP_S} s; it continues in the background."
    fi
}

# "pid N", or NOT RUNNING in capitals for a process that should be there.
pid_or_not() {
    local pid
    if pid=$(pid_of "$1"); then
        printf 'pid %s' "$pid"
    else
        printf 'NOT RUNNING'
    fi
}

guide() {
    local port dir psql_cmd me
    read -r port dir < <(pg_socket) || true
    psql_cmd="psql -h $(printf '%q' "${dir:-$RUN}") -p ${port:-$PG_PORT} -U postgres fairq"
    me=$(show "$ROOT/deploy/quickstart.sh")
    cat <<EOF

In the background:
  fairqd          $(pid_or_not fairqd), config $(show "$CONF"), log $(show "$LOG/fairqd.log")
  sender-1        $(pid_or_not sender-1), log $(show "$LOG/sender-1.log")
  sender-2        $(pid_or_not sender-2), log $(show "$LOG/sender-2.log")
  SMTP sink       $(pid_or_not smtp-sink), smtp://127.0.0.1:$SMTP_PORT, log $(show "$LOG/smtp-sink.log")
  PostgreSQL      $(pg_running && echo running || echo NOT RUNNING), $(show "$PGDATA_DIR"), log $(show "$LOG/postgresql.log")

The delivered mail: $(show "$MAIL"), one JSON object per message ($(group "$(wc -l <"$MAIL")") so far). One of them:
  grep -m1 @clinic.example $(printf '%q' "$(show "$MAIL")") | $PYTHON -c 'import json, sys; print(json.load(sys.stdin)["raw"])'

The same through fairqd's HTTP API, with the fairq CLI (an admin token is in $(show "$ADMIN_TOKEN")):
  export FAIRQ_URL=http://127.0.0.1:$HTTP_PORT FAIRQ_TOKEN=\$(cat $(printf '%q' "$(show "$ADMIN_TOKEN")"))
  $(show "$FAIRQ") list             # the requests; fairq status ID --watch follows one
  $(show "$FAIRQ") top              # live per-tenant view (q quits)

Progress, straight from PostgreSQL:
  $psql_cmd -c 'SELECT r.id, t.name, r.status, r.sent, r.total FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id ORDER BY r.id'

Status:          $me status
Stop everything: $me stop
EOF
}

# What the EXIT trap does depends on the phase. Interrupts end the script through it
# too: Ctrl-C runs `exit 130`, and bash may run that in a command substitution's
# subshell instead (a pending trap is inherited across fork), whose failure then ends
# the script through set -e; either way the script leaves through here.
# It writes to the script's own stdout and stderr (fds 3 and 4, saved at start): the
# trap may run inside a function whose output goes to /dev/null (pid_of >/dev/null).
STARTING=0
WATCHING=0
on_exit() {
    local rc=$?
    if ((STARTING && rc != 0)); then
        warn "start failed: stopping what it started"
        do_stop
    elif ((WATCHING)); then
        if ((rc == 130)); then
            printf '\nStopped watching.\n'
        fi
        guide
    fi
} >&3 2>&4

do_start() {
    build
    say ""
    mkdir -p "$RUN" "$LOG"
    if anything_running; then
        say "A previous quickstart is still running: stopping it first."
        do_stop
        say ""
    fi
    # Before anything starts: a taken port is found now, not halfway through
    port_free "$GATEWAY_PORT" || die "port $GATEWAY_PORT is taken: set QUICKSTART_GATEWAY_PORT to a free one"
    port_free "$SMTP_PORT" || die "port $SMTP_PORT is taken: set QUICKSTART_SMTP_PORT to a free one"
    port_free "$HTTP_PORT" || die "port $HTTP_PORT is taken: set QUICKSTART_HTTP_PORT to a free one"

    # Until all of it runs, a failure (or Ctrl-C) stops what was started
    exec 3>&1 4>&2
    STARTING=1
    trap on_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    say "Starting, all of it under $(show "$VAR"):"
    make_certs
    write_conf
    pg_start
    start_sink
    start_fairqd
    start_senders
    create_tenants
    STARTING=0

    # From here on, Ctrl-C (or a failure) only stops the watching: everything keeps
    # running, and the guide says where to look and how to stop it
    WATCHING=1
    watch_demo
}

case ${1:-start} in
    start) do_start ;;
    stop)
        do_stop
        say "The quickstart is stopped."
        ;;
    status) do_status ;;
    -h | --help | help) sed -n '2,8s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" ;;
    *)
        warn "unknown command \"$1\" (start, status or stop)"
        exit 2
        ;;
esac
