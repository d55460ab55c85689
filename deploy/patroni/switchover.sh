#!/usr/bin/env bash
# fairq through a Patroni switchover, for real, on this machine (loopback only).
#
#   deploy/patroni/switchover.sh [--failover]
#
# In a temporary directory it removes at the end, it starts one etcd, two Patroni
# nodes (PostgreSQL 15, synchronous_mode: true), fairqd with a connection string that
# names both servers and target_session_attrs=read-write, two fairq-senders and an SMTP
# sink. It submits a campaign in SQL, keeps submitting small requests over the HTTP
# API, and mid-campaign runs `patronictl switchover` (and, with --failover, later
# kills the new primary's Patroni and PostgreSQL, a lost host). Once every accepted
# request is done it counts, from the sink's mail and the database: recipients of the
# accepted requests, delivered, duplicates, lost; how long after each event deliveries
# resumed; the submits answered 503 meanwhile. It exits 1 if a recipient of a request
# answered 202 (or submitted in SQL) was never delivered.
#
# As root, Patroni and PostgreSQL run as the `postgres` account (PostgreSQL refuses
# root); otherwise as the invoking user. Debian 12 packages it needs (patroni,
# python3-etcd, etcd-server, etcd-client, postgresql-15, python3-aiosmtpd) are
# installed when missing, if it runs as root or has passwordless sudo.
#
# Environment (all optional):
#   SWITCHOVER_BUILD       fairq's build directory (default: build/release of the
#                          repository; cmake --build it --target fairqd fairq-sender)
#   SWITCHOVER_RECIPIENTS  the campaign's size (default 20000)
#   SWITCHOVER_PGBIN       PostgreSQL 15's programs (default /usr/lib/postgresql/15/bin)
#   SWITCHOVER_KEEP=1      keep the temporary directory (logs, mail) for a look
set -euo pipefail

# The demo talks to its own servers only: PG* variables would redirect psql and
# libpq, FAIRQ_* ones override fairqd's settings, PATRONI_* ones Patroni's and
# ETCD_* (but ETCD_UNSUPPORTED_ARCH) etcd's.
for v in "${!PG@}" "${!FAIRQ_@}" "${!PATRONI_@}" "${!ETCD@}"; do
    [[ $v == ETCD_UNSUPPORTED_ARCH ]] || unset "$v"
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
HERE="$ROOT/deploy/patroni"
BUILD=${SWITCHOVER_BUILD:-$ROOT/build/release}
FAIRQD="$BUILD/fairqd/fairqd"
SENDER="$BUILD/sender/fairq-sender"
SINK="$ROOT/tests/e2e/smtp_sink.py"
PYTHON=/usr/bin/python3 # Debian's, which has aiosmtpd (the sink's library)
PGBIN=${SWITCHOVER_PGBIN:-/usr/lib/postgresql/15/bin}
RECIPIENTS=${SWITCHOVER_RECIPIENTS:-20000}
KEEP=${SWITCHOVER_KEEP:-0}

PACKAGES=(patroni python3-etcd etcd-server etcd-client postgresql-15 postgresql-client-15
    python3-aiosmtpd)

SCOPE=fairq-demo
NODES=(pg1 pg2)
SENDERS=(sender-1 sender-2)
CONCURRENCY=8      # Per sender, as in deploy/quickstart.sh
TENANT=shop
SUBMIT_RECIPIENTS=10 # Each HTTP submit during the run: a small request...
SUBMIT_EVERY_MS=50   # ...every 50 ms (plus the answer's time)
SWITCH_AT=4          # The switchover once 1/4 of the campaign is delivered
FAILOVER_AT=2        # The failover (--failover) once 1/2 is
# Timeouts, in seconds, of every wait
T_START=60        # a process to get ready
T_CLUSTER=120     # a leader and a synchronous standby (the first initdb included)
T_SWITCH=90       # the cluster to settle after a switchover or failover
T_RESUME=90       # deliveries to resume after one
T_CAMPAIGN=600    # every accepted request to be done
RESUME_BY=100     # "resumed": this many more deliveries than when the event ended

FAILOVER=0
case ${1:-} in
    "") ;;
    --failover) FAILOVER=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *)
        printf 'switchover: unknown argument "%s" (--failover or nothing)\n' "$1" >&2
        exit 2
        ;;
esac

say() { printf '%s\n' "$*"; }
warn() { printf 'switchover: %s\n' "$*" >&2; }
die() {
    warn "$*"
    exit 1
}

now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    printf '%s' "$((t / 1000))"
}
# Seconds (to the tenth) of a number of milliseconds
secs() { printf '%d.%d' "$(($1 / 1000))" "$(($1 % 1000 / 100))"; }
# Seconds since the start, for progress lines
T0=$(now_ms)
stamp() { printf '%6ss ' "+$(secs $(($(now_ms) - T0)))"; }
step() { say "$(stamp) $*"; }

# ---------------------------------------------------------------------------
# What it needs

need_packages() {
    local pkg status missing=()
    for pkg in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        [[ $status == "install ok installed" ]] || missing+=("$pkg")
    done
    ((${#missing[@]} == 0)) && return 0
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
            die "missing packages: ${missing[*]}; install them as root: apt-get install --no-install-recommends ${missing[*]}"
        fi
        sudo=(sudo -n)
    fi
    say "Installing ${missing[*]} (Debian packages; their services are not used)"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 \
        --no-install-recommends "${missing[@]}" >/dev/null
}

need_programs() {
    local p
    for p in "$FAIRQD" "$SENDER"; do
        [[ -x $p ]] || die "$p is missing: build it (cmake -S $ROOT -B $BUILD -DCMAKE_BUILD_TYPE=Release && cmake --build $BUILD --target fairqd fairq-sender) or set SWITCHOVER_BUILD"
    done
    for p in initdb pg_ctl pg_rewind psql; do
        [[ -x $PGBIN/$p ]] || die "$PGBIN/$p is missing (postgresql-15? or set SWITCHOVER_PGBIN)"
    done
    for p in patroni patronictl etcd etcdctl setpriv; do
        command -v "$p" >/dev/null || die "$p is not on PATH"
    done
    # etcd refuses to start on architectures it does not support, unless told
    if [[ $(uname -m) != x86_64 && $(uname -m) != aarch64 ]]; then
        export ETCD_UNSUPPORTED_ARCH=${ETCD_UNSUPPORTED_ARCH:-$(dpkg --print-architecture)}
    fi
}

# ---------------------------------------------------------------------------
# Background processes: each in a session of its own (setsid execs it, so $! is the
# program), its output in $WORK/log/NAME.log.

declare -A PID
WORK=""

alive() {
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $state != Z ]]
}

start_bg() {
    local name=$1
    shift
    setsid "$@" </dev/null >"$WORK/log/$name.log" 2>&1 &
    PID[$name]=$!
}

show_log() {
    local log="$WORK/log/$1.log"
    [[ -f $log ]] || return 0
    warn "last lines of $1's log ($log):"
    tail -n "${2:-20}" "$log" | sed 's/^/    /' >&2
}

# Waits until a command succeeds, or fails after timeout seconds (or when process
# NAME, if given, exits) with what it waited for and NAME's log.
wait_until() {
    local timeout=$1 what=$2 name=$3
    shift 3
    local deadline=$(($(now_ms) + timeout * 1000))
    until "$@"; do
        if [[ -n $name ]] && ! alive "${PID[$name]}"; then
            show_log "$name"
            die "$name exited while waiting for $what"
        fi
        if (($(now_ms) > deadline)); then
            [[ -n $name ]] && show_log "$name"
            die "timed out after $timeout s waiting for $what"
        fi
        sleep 0.2
    done
}

log_has() { grep -Eq -- "$2" "$WORK/log/$1.log"; }

# SIGTERM, then up to timeout seconds, then SIGKILL.
stop_bg() {
    local timeout=$1 name=$2 pid deadline
    pid=${PID[$name]:-}
    [[ -n $pid ]] || return 0
    unset "PID[$name]"
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$(($(now_ms) + timeout * 1000))
    while alive "$pid" && (($(now_ms) < deadline)); do
        sleep 0.1
    done
    if alive "$pid"; then
        warn "$name (pid $pid) did not stop within $timeout s of SIGTERM: killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
}

# ---------------------------------------------------------------------------
# PostgreSQL's account: as root, postgres; otherwise whoever runs this

# AS_PG is the prefix that runs a program so (set once $WORK exists): setpriv execs, so
# a background Patroni's pid is Patroni's own. From /: the account may not be allowed
# into the caller's working directory.
if [[ $(id -u) -eq 0 ]]; then
    PG_OWNER=postgres
else
    PG_OWNER=$(id -un)
fi
AS_PG=()
set_as_pg() {
    if [[ $(id -u) -eq 0 ]]; then
        AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups env -C / HOME="$WORK")
    else
        AS_PG=(env -C /)
    fi
}
as_pg() { "${AS_PG[@]}" "$@"; }

# Stops a node's PostgreSQL if it still runs (its Patroni was killed): a crash
pg_kill() {
    local data="$WORK/$1/data"
    [[ -f $data/postmaster.pid ]] || return 0
    as_pg "$PGBIN/pg_ctl" -D "$data" -w -t 30 stop -m immediate >/dev/null 2>&1 || true
}

# ---------------------------------------------------------------------------
# Cleanup: whatever happened, everything stops and the directory goes

cleanup() {
    local rc=$? name
    trap - EXIT INT TERM
    [[ -n $WORK && -d $WORK ]] || exit "$rc"
    ((rc == 130 || rc == 143)) && warn "interrupted: stopping everything"
    # Senders first (they finish what they hold), then fairqd, then the rest
    stop_bg 5 submitter
    for name in "${SENDERS[@]}"; do stop_bg 15 "$name"; done
    stop_bg 15 fairqd
    stop_bg 5 sink
    # SIGTERM to Patroni stops its PostgreSQL too; a server whose Patroni is gone
    # (killed by the failover) is stopped here
    for name in "${NODES[@]}"; do stop_bg 40 "patroni-$name"; done
    for name in "${NODES[@]}"; do pg_kill "$name"; done
    stop_bg 10 etcd
    if [[ $KEEP == 1 ]]; then
        warn "kept $WORK (logs in log/, mail in mail.jsonl): remove it when done"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}

# ---------------------------------------------------------------------------
# Ports: as many free ones as asked for, all different (each bound to port 0 and
# kept until all are picked)

free_ports() {
    "$PYTHON" - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

etcd_healthy() {
    ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$ETCD_PORT" endpoint health >/dev/null 2>&1
}

# ---------------------------------------------------------------------------
# Patroni

# Each node's YAML from the template: every @KEY@ replaced.
write_node_conf() {
    local i=$1 node=${NODES[$1]} dir="$WORK/${NODES[$1]}"
    mkdir -p "$dir"
    sed -e "s|@SCOPE@|$SCOPE|g" -e "s|@NAME@|$node|g" \
        -e "s|@REST_PORT@|${REST_PORT[$i]}|g" -e "s|@PG_PORT@|${PG_PORT[$i]}|g" \
        -e "s|@ETCD_PORT@|$ETCD_PORT|g" -e "s|@NODE_DIR@|$dir|g" -e "s|@PG_BIN@|$PGBIN|g" \
        -e "s|@SUPERUSER_PASSWORD@|$SUPERUSER_PASSWORD|g" \
        -e "s|@REPLICATION_PASSWORD@|$REPLICATION_PASSWORD|g" \
        -e "s|@REWIND_PASSWORD@|$REWIND_PASSWORD|g" \
        "$HERE/patroni-node.yml.in" >"$dir/patroni.yml"
    grep -q '@[A-Z_]*@' "$dir/patroni.yml" && die "$dir/patroni.yml: a placeholder is left"
    chmod 600 "$dir/patroni.yml"
    chmod 700 "$dir"
    [[ $(id -u) -ne 0 ]] || chown -R "$PG_OWNER:" "$dir"
    # Patroni's own check of the file. It holds a loopback connect_address for a
    # mistake (other hosts could not reach it), which on one host it is not: those two
    # complaints alone are fine (Patroni itself runs with it)
    local out
    if ! out=$(as_pg patroni --validate-config "$dir/patroni.yml" 2>&1); then
        out=$(grep -v 'connect_address 127\.0\.0\.1:[0-9]* didn.t pass validation: .must not contain "127\.0\.0\.1"' <<<"$out" || true)
        [[ -z $out ]] || die "patroni --validate-config $dir/patroni.yml: $out"
    fi
}

start_node() {
    local node=$1
    start_bg "patroni-$node" "${AS_PG[@]}" patroni "$WORK/$node/patroni.yml"
}

# The cluster as the REST API of any node that answers sees it: one line per
# member, "name role state lag" (GET /cluster).
cluster() {
    "$PYTHON" - "${REST_PORT[@]}" <<'EOF'
import json, sys, urllib.request
for port in sys.argv[1:]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/cluster", timeout=2) as r:
            members = json.load(r).get("members", [])
    except Exception:
        continue
    for m in members:
        print(m.get("name"), m.get("role"), m.get("state"), m.get("lag", 0))
    sys.exit(0)
sys.exit(1)
EOF
}

# Whether the cluster has leader WANT (any leader when empty) running and a synchronous
# standby running; sets LEADER and STANDBY.
healthy() {
    local want=$1 name role state _lag
    LEADER="" STANDBY=""
    while read -r name role state _lag; do
        [[ $state == running || $state == streaming ]] || continue
        case $role in
            leader | master) LEADER=$name ;;
            sync_standby) STANDBY=$name ;;
        esac
    done < <(cluster 2>/dev/null || true)
    [[ -n $LEADER && -n $STANDBY && (-z $want || $LEADER == "$want") ]]
}

# Whether a node answers as leader (GET /primary is 200 on the leader only)
leader_running() {
    "$PYTHON" -c 'import sys, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/primary", timeout=2)
except Exception:
    sys.exit(1)' "$1"
}

node_index() {
    local i
    for i in "${!NODES[@]}"; do [[ ${NODES[i]} == "$1" ]] && printf '%s' "$i"; done
}

patronictl_() { patronictl -c "$WORK/${NODES[0]}/patroni.yml" "$@"; }

# ---------------------------------------------------------------------------
# SQL, on whichever server is primary (both named, read-write wanted)

DSN_ADMIN() {
    printf 'host=127.0.0.1,127.0.0.1 port=%s,%s user=postgres dbname=%s passfile=%s target_session_attrs=read-write connect_timeout=2' \
        "${PG_PORT[0]}" "${PG_PORT[1]}" "$1" "$WORK/admin.pgpass"
}
sql() {
    local db=$1
    shift
    "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$(DSN_ADMIN "$db")" "$@"
}

# ---------------------------------------------------------------------------
# The run

main() {
    need_packages
    need_programs

    WORK=$(mktemp -d /tmp/fairq-patroni.XXXXXX)
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # The postgres account must reach its node directories under it
    chmod 755 "$WORK"
    mkdir -p "$WORK/log"
    set_as_pg
    say "fairq through a Patroni switchover, in $WORK ($(date -u '+%Y-%m-%d %H:%M UTC'))"

    local ports
    read -r -a ports < <(free_ports 9)
    ETCD_PORT=${ports[0]} ETCD_PEER_PORT=${ports[1]}
    REST_PORT=("${ports[2]}" "${ports[3]}")
    PG_PORT=("${ports[4]}" "${ports[5]}")
    GATEWAY_PORT=${ports[6]} HTTP_PORT=${ports[7]} SMTP_PORT=${ports[8]}

    # (a) etcd, one member, on loopback
    start_bg etcd etcd --name etcd1 --data-dir "$WORK/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "etcd1=http://127.0.0.1:$ETCD_PEER_PORT"
    wait_until "$T_START" "etcd to answer" etcd etcd_healthy
    step "etcd $(etcd --version | sed -n 's/^etcd Version: //p') on 127.0.0.1:$ETCD_PORT"

    # (b) two Patroni nodes. Passwords new at each run, alphanumeric (safe in YAML,
    # sed and pgpass alike)
    pw() { "$PYTHON" -c 'import secrets; print(secrets.token_hex(16))'; }
    SUPERUSER_PASSWORD=$(pw) REPLICATION_PASSWORD=$(pw) REWIND_PASSWORD=$(pw)
    FAIRQ_PASSWORD=$(pw)
    (
        umask 077
        printf '127.0.0.1:*:*:postgres:%s\n' "$SUPERUSER_PASSWORD" >"$WORK/admin.pgpass"
        printf '127.0.0.1:*:fairq:fairq:%s\n' "$FAIRQ_PASSWORD" >"$WORK/fairq.pgpass"
    )
    local i
    for i in "${!NODES[@]}"; do write_node_conf "$i"; done
    # The first node initialises the cluster and leads; the second clones it
    # (pg_basebackup) and becomes its synchronous standby
    start_node "${NODES[0]}"
    wait_until "$T_CLUSTER" "${NODES[0]} to initialise the cluster and lead" "patroni-${NODES[0]}" \
        leader_running "${REST_PORT[0]}"
    step "${NODES[0]} leads (PostgreSQL 15 on 127.0.0.1:${PG_PORT[0]}, REST API :${REST_PORT[0]})"
    start_node "${NODES[1]}"
    wait_until "$T_CLUSTER" "${NODES[1]} to become the synchronous standby" "patroni-${NODES[1]}" healthy ""
    step "${NODES[1]} is the synchronous standby (127.0.0.1:${PG_PORT[1]}, REST API :${REST_PORT[1]})"
    patronictl_ list | sed 's/^/        /'

    # (c) fairq's role and database, fairqd, the sink, the senders
    sql postgres -c "CREATE ROLE fairq LOGIN PASSWORD '$FAIRQ_PASSWORD'" \
        -c "ALTER ROLE fairq SET jit = off" -c "CREATE DATABASE fairq OWNER fairq"
    DSN="host=127.0.0.1,127.0.0.1 port=${PG_PORT[0]},${PG_PORT[1]} dbname=fairq user=fairq passfile=$WORK/fairq.pgpass target_session_attrs=read-write connect_timeout=2"
    cat >"$WORK/fairq.conf" <<EOF
# Written by deploy/patroni/switchover.sh. Both servers: libpq keeps the one that
# takes writes, whichever Patroni made primary.
database = "$DSN"
# Loopback only, a demo: no CURVE (deploy/quickstart.sh shows it with)
gateway_bind = tcp://127.0.0.1:$GATEWAY_PORT
gateway_insecure = true
http_listen = 127.0.0.1:$HTTP_PORT
# Connect again quickly once the new primary answers
database_retry_min_ms = 100
database_retry_max_ms = 1000
poll_ms = 200
retry_base_ms = 2000
retry_cap_ms = 10000
drain_timeout_ms = 5000
log_level = info
EOF
    : >"$WORK/mail.jsonl"
    start_bg sink "$PYTHON" "$SINK" --host 127.0.0.1 --port "$SMTP_PORT" --out "$WORK/mail.jsonl"
    wait_until "$T_START" "the SMTP sink" sink log_has sink '^ready [0-9]+'
    start_bg fairqd "$FAIRQD" --config "$WORK/fairq.conf"
    wait_until "$T_START" "fairqd to be ready" fairqd log_has fairqd 'INFO: +ready$'
    step "fairqd: HTTP API 127.0.0.1:$HTTP_PORT, gateway tcp://127.0.0.1:$GATEWAY_PORT, database \"$DSN\""
    sql fairq -c "INSERT INTO fairq.tenants (name) VALUES ('$TENANT')"
    TOKEN=$("$FAIRQD" token create --tenant "$TENANT" --config "$WORK/fairq.conf") ||
        die "fairqd token create failed"
    local name
    for name in "${SENDERS[@]}"; do
        start_bg "$name" "$SENDER" --connect "tcp://127.0.0.1:$GATEWAY_PORT" --insecure \
            --name "$name" --concurrency "$CONCURRENCY" --transport smtp \
            --smtp-url "smtp://127.0.0.1:$SMTP_PORT" --starttls never --helo "$name.test" \
            --drain-timeout-ms 5000
    done
    for name in "${SENDERS[@]}"; do
        wait_until "$T_START" "$name to be welcomed by fairqd" "$name" log_has "$name" 'welcomed by'
    done
    step "${#SENDERS[@]} senders, $CONCURRENCY at a time each, to the SMTP sink on 127.0.0.1:$SMTP_PORT"

    # (d) the campaign, in SQL, and small submits over HTTP all along
    CAMPAIGN=$(sql fairq -c "SELECT fairq.submit('$TENANT', 'news@shop.example',
        'Hello {{name}}', 'Dear {{name}}, this is message {{n}}.',
        (SELECT jsonb_agg(jsonb_build_object('to', 'c' || i || '@example.test',
                    'fields', jsonb_build_object('name', 'c' || i, 'n', i)) ORDER BY i)
           FROM generate_series(1, $RECIPIENTS) AS i))")
    step "campaign submitted in SQL: request $CAMPAIGN, $RECIPIENTS recipients"
    start_bg submitter "$PYTHON" -c "$SUBMITTER" "$HTTP_PORT" "$TOKEN" "$SUBMIT_RECIPIENTS" \
        "$SUBMIT_EVERY_MS" "$WORK/submits.txt"
    wait_until "$T_START" "the first HTTP submit answered 202" submitter \
        grep -qs ' 202 ' "$WORK/submits.txt"

    : >"$WORK/events.txt"
    wait_delivered $((RECIPIENTS / SWITCH_AT))
    switchover
    if ((FAILOVER)); then
        wait_delivered $((RECIPIENTS / FAILOVER_AT))
        failover
    fi

    # (f) done: no more submits, every accepted request finished
    sleep 2
    stop_bg 15 submitter
    local ids
    ids=$(awk '$2 == 202 { printf ",%s", $3 }' "$WORK/submits.txt")
    ids="$CAMPAIGN$ids"
    wait_until "$T_CAMPAIGN" "every accepted request to be done" "" all_done "$ids"
    step "every accepted request is done"
    sql fairq -c "COPY (SELECT request_id, id FROM fairq.messages
                        WHERE request_id IN ($ids)) TO STDOUT" >"$WORK/expected.txt"
    sql fairq -F ' ' -c "SELECT id, total, status FROM fairq.requests
                          WHERE id IN ($ids)" >"$WORK/requests.txt"
    say ""
    "$PYTHON" -c "$COUNT" "$WORK" "$CAMPAIGN"
    say "  (the whole run took $(secs $(($(now_ms) - T0))) s)"
}

all_done() {
    local left
    left=$(sql fairq -c "SELECT count(*) FROM fairq.requests
                          WHERE id IN ($1) AND status NOT IN ('done', 'cancelled', 'rejected')" \
        2>/dev/null) && [[ $left == 0 ]]
}

delivered() { wc -l <"$WORK/mail.jsonl"; }

wait_delivered() {
    local n=$1
    wait_until "$T_CAMPAIGN" "$n messages at the sink" fairqd more_than "$n"
}

# An event's line in events.txt: "name t_start_ms t_end_ms" (unix ms)
note_event() { printf '%s %s %s\n' "$1" "$2" "$3" >>"$WORK/events.txt"; }

# (e) the planned switchover: the synchronous standby becomes primary, the old
# primary (shut down cleanly) follows it as a standby
switchover() {
    healthy "" || die "the cluster is not healthy before the switchover"
    local from=$LEADER to=$STANDBY t out
    step "$(delivered) delivered: patronictl switchover --leader $from --candidate $to --force"
    t=$(now_ms)
    out=$(patronictl_ switchover --leader "$from" --candidate "$to" --force "$SCOPE" 2>&1) ||
        die "patronictl switchover failed: $out"
    step "patronictl returned after $(secs $(($(now_ms) - t))) s: $(printf '%s' "$out" | grep -v '^+\|^|' | tr '\n' ' ')"
    wait_until "$T_SWITCH" "$to to lead with $from as its synchronous standby" "" healthy "$to"
    local settled
    settled=$(now_ms)
    step "$to leads, $from is its synchronous standby ($(secs $((settled - t))) s after the command)"
    wait_resumed "switchover" "$t" "$settled"
}

# (e') the failover: the primary's host is lost (its Patroni killed, its PostgreSQL
# crashed); the synchronous standby is promoted once the leader key expires (ttl), and
# the old primary, started again, rejoins as a standby (pg_rewind if it must)
failover() {
    healthy "" || die "the cluster is not healthy before the failover"
    local dead=$LEADER to=$STANDBY t
    step "$(delivered) delivered: kill -9 $dead's Patroni and stop its PostgreSQL -m immediate"
    t=$(now_ms)
    kill -KILL "${PID[patroni-$dead]}"
    unset "PID[patroni-$dead]"
    pg_kill "$dead"
    wait_until "$T_SWITCH" "$to to be promoted" "" leader_running "${REST_PORT[$(node_index "$to")]}"
    local promoted
    promoted=$(now_ms)
    step "$to promoted ($(secs $((promoted - t))) s after the kill)"
    wait_resumed "failover" "$t" "$promoted"
    start_node "$dead"
    wait_until "$T_SWITCH" "$dead to rejoin as $to's synchronous standby" "patroni-$dead" healthy "$to"
    step "$dead is back, $to's synchronous standby ($(secs $(($(now_ms) - t))) s after the kill)"
}

wait_resumed() {
    local what=$1 t=$2 since=$3 base
    base=$(delivered)
    wait_until "$T_RESUME" "deliveries to resume after the $what" fairqd \
        more_than $((base + RESUME_BY))
    note_event "$what" "$t" "$since"
    step "deliveries go on ($(delivered) delivered)"
}
more_than() { (($(delivered) >= $1)); }

# ---------------------------------------------------------------------------
# Python helpers

# Submits a small request every few ms until SIGTERM; one line per answer in OUT:
# "unix_ms status request_id" (request_id "-" unless 202).
SUBMITTER=$(
    cat <<'EOF'
import json, signal, sys, time, urllib.error, urllib.request
port, token, n, every_ms, out = sys.argv[1:6]
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
k = 0
with open(out, "a", buffering=1) as f:
    while not stop:
        k += 1
        body = json.dumps({"from": "news@shop.example", "subject": "Hello {{name}}",
                           "body": "Dear {{name}}",
                           "recipients": [{"to": f"h{k}-{i}@example.test",
                                           "fields": {"name": f"h{k}-{i}"}}
                                          for i in range(int(n))]}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/requests", data=body,
                                     method="POST")
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Content-Type", "application/json")
        t = int(time.time() * 1000)
        rid = "-"
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status = r.status
                rid = str(json.load(r)["id"])
        except urllib.error.HTTPError as e:
            status = e.code
        except Exception as e:
            status = "error:" + type(e).__name__
        f.write(f"{t} {status} {rid}\n")
        time.sleep(int(every_ms) / 1000)
EOF
)

# The figures, from the sink's mail, the database and the events.
COUNT=$(
    cat <<'EOF'
import collections, json, os, re, sys, time
work, campaign = sys.argv[1], int(sys.argv[2])
mid = re.compile(r"^<fairq\.(\d+)@[^>]+>$")
times, ids = [], collections.Counter()
with open(os.path.join(work, "mail.jsonl"), encoding="utf-8") as f:
    for line in f:
        r = json.loads(line)
        m = mid.match(r.get("message_id") or "")
        if m:
            ids[int(m.group(1))] += 1
        times.append(r["t"])
times.sort()
expected = set()
with open(os.path.join(work, "expected.txt")) as f:
    for line in f:
        expected.add(int(line.split()[1]))
requests = {}
with open(os.path.join(work, "requests.txt")) as f:
    for line in f:
        rid, total, status = line.split()
        requests[int(rid)] = (int(total), status)
answers = collections.Counter()
submits = []
with open(os.path.join(work, "submits.txt")) as f:
    for line in f:
        t, status, rid = line.split()
        answers[status] += 1
        submits.append((int(t) / 1000, status))
events = []
with open(os.path.join(work, "events.txt")) as f:
    for line in f:
        name, t, settled = line.split()
        events.append((name, int(t) / 1000, int(settled) / 1000))

recipients = sum(total for total, _ in requests.values())
delivered = set(ids) & expected
lost = expected - set(ids)
dups = sum(c - 1 for i, c in ids.items() if i in expected)
not_done = [r for r, (_, s) in requests.items() if s != "done"]
print("Figures")
print(f"  requests accepted           {len(requests)}: the campaign ({requests[campaign][0]}"
      f" recipients, SQL) and {answers['202']} small ones answered 202 over HTTP")
print(f"  recipients of those         {recipients} ({len(expected)} messages in the database)")
print(f"  delivered (distinct ids)    {len(delivered)}")
print(f"  duplicates                  {dups}")
print(f"  lost                        {len(lost)}")
print(f"  HTTP submits                {sum(answers.values())}: " +
      ", ".join(f"{n} answered {s}" for s, n in sorted(answers.items())))
for k, (name, t, settled) in enumerate(events):
    end = events[k + 1][1] if k + 1 < len(events) else float("inf")
    # The longest pause between two deliveries after the event began (the moment
    # before its first delivery counts as one): it ends when deliveries resumed
    window = [t] + [x for x in times if t < x < end]
    gap, resumed = 0.0, t
    for a, b in zip(window, window[1:]):
        if b - a > gap:
            gap, resumed = b - a, b
    # The HTTP API's view: submits answered 503 (no primary to write to) after the
    # event began, and the first 202 after the last of them
    mine = [(x, s) for (x, s) in submits if t <= x < end]
    refused = [x for (x, s) in mine if s != "202"]
    print(f"  {name} ({'command' if name == 'switchover' else 'kill'} at"
          f" {time.strftime('%H:%M:%S', time.gmtime(t))} UTC):")
    print(f"    deliveries resumed        {resumed - t:.1f} s after it"
          f" (longest pause between two deliveries {gap:.1f} s)")
    if refused:
        back = next((x for (x, s) in mine if s == "202" and x > refused[-1]), None)
        print(f"    HTTP submits refused      {len(refused)}"
              f" ({sum(1 for (x, s) in mine if s == '503' and x >= t)} answered 503),"
              f" from +{refused[0] - t:.1f} s to +{refused[-1] - t:.1f} s;"
              + (f" 202 again at +{back - t:.1f} s" if back else " no 202 after"))
    else:
        print("    HTTP submits refused      none")
    print(f"    cluster settled           {settled - t:.1f} s after it"
          f" ({'new leader and its synchronous standby' if name == 'switchover' else 'standby promoted'})")
if not_done:
    print(f"  NOT DONE: requests {sorted(not_done)[:20]}")
if lost:
    print(f"  LOST: {len(lost)} recipients, e.g. message ids {sorted(lost)[:20]}")
    sys.exit(1)
if len(expected) != recipients:
    print(f"  MISSING: {recipients - len(expected)} recipients without a message")
    sys.exit(1)
print("  nothing lost: every recipient of every accepted request was delivered")
EOF
)

main "$@"
