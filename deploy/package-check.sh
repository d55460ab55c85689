#!/usr/bin/env bash
# Try the Debian packages as an operator would, on a real Debian 12 booted
# under systemd: install, set up (README "Install on a server", step by step),
# deliver, reload, reinstall, restart after a crash, stop, purge.
#
#   deploy/package-check.sh              build the packages, then try them
#   deploy/package-check.sh --debs DIR   try the .debs already in DIR
#
# The Debian 12 root is made once with debootstrap (build/package-check/base,
# about 250 MB, a minute) and copied for each run, then booted with
# systemd-nspawn (systemd as its PID 1, a private network: loopback only).
# Needs root, and Debian's mirror the first time (debootstrap, then PostgreSQL
# and the packages' dependencies into the root).
# Every step prints what it checks; the first failure stops the run (exit 1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK="$ROOT/build/package-check"
BASE="$WORK/base"
RUN="$WORK/run"
MACHINE="fairq-check-$$"
MIRROR="${FAIRQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

DEBS=""
if [[ "${1:-}" == --debs ]]; then
    DEBS=$(cd "${2:?--debs needs a directory}" && pwd)
elif [[ $# -gt 0 ]]; then
    echo "usage: deploy/package-check.sh [--debs DIR]" >&2
    exit 2
fi

step() { echo "package-check: $*"; }
fail() {
    echo "package-check: FAILED: $*" >&2
    if [[ -n "${LEADER:-}" ]]; then
        echo "--- the journal of fairqd and the senders (last 60 lines) ---" >&2
        inside journalctl --no-pager -n 60 -u fairqd -u 'fairq-sender@*' >&2 || true
    fi
    exit 1
}

[[ $(id -u) -eq 0 ]] || { echo "package-check: needs root (debootstrap, systemd-nspawn)" >&2; exit 1; }
"$ROOT/deploy/install-deps.sh" --packaging

if [[ -z "$DEBS" ]]; then
    "$ROOT/deploy/build-packages.sh"
    DEBS="$ROOT/build/packages"
fi
FAIRQ_DEB=$(ls "$DEBS"/fairq_*.deb 2>/dev/null | head -1)
SENDER_DEB=$(ls "$DEBS"/fairq-sender_*.deb 2>/dev/null | head -1)
[[ -n "$FAIRQ_DEB" && -n "$SENDER_DEB" ]] || fail "no fairq_*.deb and fairq-sender_*.deb in $DEBS"

# --- a Debian 12 root with systemd, made once ---------------------------------
if [[ ! -x "$BASE/lib/systemd/systemd" ]]; then
    step "making a Debian 12 root with debootstrap (once)"
    rm -rf "$BASE" "$BASE.tmp"
    mkdir -p "$WORK"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,ca-certificates,curl,man-db \
        bookworm "$BASE.tmp" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
        || { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap (log: $WORK/debootstrap.log)"; }
    echo "deb $MIRROR bookworm main" >"$BASE.tmp/etc/apt/sources.list"
    # No getty on a console nobody reads
    ln -sf /dev/null "$BASE.tmp/etc/systemd/system/console-getty.service"
    mv "$BASE.tmp" "$BASE"
fi
# What the packages depend on, and PostgreSQL, go into the base too (once):
# the root then boots with a network of its own, loopback only, so its
# PostgreSQL and fairqd ports never meet the host's.
needed=(postgresql)
for deb in "$FAIRQ_DEB" "$SENDER_DEB"; do
    for dep in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g'); do
        needed+=("$dep")
    done
done
missing=()
for pkg in $(printf '%s\n' "${needed[@]}" | sort -u); do
    [[ $(chroot "$BASE" dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true) == "install ok installed" ]] \
        || missing+=("$pkg")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    step "adding to the root: ${missing[*]}"
    systemd-nspawn -q -D "$BASE" --register=no --keep-unit sh -c "apt-get update -q && \
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ${missing[*]}" \
        >"$WORK/base-apt.log" 2>&1 \
        || { tail -20 "$WORK/base-apt.log" >&2; fail "apt-get in the root (log: $WORK/base-apt.log)"; }
fi

# PostgreSQL's package took the first free port when it made its cluster,
# with the host's network: 5433 if the host runs one on 5432 (a test's).
# The booted root has a network of its own, where 5432 is free and is what
# the packaged fairqd.conf (libpq's default) expects.
sed -i 's/^port = .*/port = 5432/' "$BASE"/etc/postgresql/*/main/postgresql.conf

rm -rf "$RUN"
cp -a "$BASE" "$RUN"
mkdir -p "$RUN/debs"
cp "$FAIRQ_DEB" "$SENDER_DEB" "$RUN/debs/"

# --- boot it ------------------------------------------------------------------
step "booting the root under systemd-nspawn"
# --register=no --keep-unit: the host may have no systemd of its own to register with
systemd-nspawn -D "$RUN" -M "$MACHINE" -b --register=no --keep-unit --private-network --console=pipe \
    >"$WORK/console.log" 2>&1 &
NSPAWN=$!
cleanup() {
    if [[ -n "${LEADER:-}" ]]; then
        inside systemctl poweroff >/dev/null 2>&1 || true
    fi
    for _ in $(seq 1 50); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.2; done
    kill "$NSPAWN" 2>/dev/null || true
    wait "$NSPAWN" 2>/dev/null || true
}
trap cleanup EXIT

# Commands run inside through the namespaces of the root's PID 1, with an
# environment of their own: the caller's (PGHOST of a test's PostgreSQL,
# FAIRQ_URL...) would otherwise follow them in
inside() {
    nsenter -t "$LEADER" -m -u -i -n -p -- \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}
LEADER=""
# The root's PID 1: nspawn's child once it runs systemd (before, the child
# is nspawn's own, setting the root up)
for _ in $(seq 1 100); do
    for pid in $(pgrep -P "$NSPAWN" || true); do
        [[ $(cat "/proc/$pid/comm" 2>/dev/null) == systemd ]] && LEADER=$pid
    done
    [[ -n "$LEADER" ]] && break
    sleep 0.1
done
[[ -n "$LEADER" ]] || fail "systemd-nspawn did not start (console: $WORK/console.log)"
state=""
for _ in $(seq 1 100); do
    state=$(inside systemctl is-system-running 2>/dev/null || true)
    [[ "$state" == running || "$state" == degraded ]] && break
    sleep 0.2
done
[[ "$state" == running || "$state" == degraded ]] || fail "the root did not boot (state: $state)"

# --- install --------------------------------------------------------------
step "installing the packages with apt"
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends /debs/*.deb' >"$WORK/apt.log" 2>&1 \
    || { tail -20 "$WORK/apt.log" >&2; fail "apt-get install (log: $WORK/apt.log)"; }
inside systemctl is-enabled fairqd.service >/dev/null || fail "fairqd.service is not enabled"
inside id fairq >/dev/null || fail "no user fairq"
inside id fairq-sender >/dev/null || fail "no user fairq-sender"
inside test -s /etc/fairq/curve/fairqd_secret || fail "the package made no CURVE certificate"
[[ $(inside stat -c %a:%U:%G /etc/fairq/fairqd.conf) == 640:root:fairq ]] \
    || fail "/etc/fairq/fairqd.conf is not 640 root:fairq"

step "the units pass systemd-analyze verify"
inside systemd-analyze verify fairqd.service fairq-sender@relay1.service \
    || fail "systemd-analyze verify"
for unit in fairqd.service fairq-sender@relay1.service; do
    exposure=$(inside systemd-analyze security --no-pager "$unit" | tail -1)
    step "systemd-analyze security $unit: $exposure"
done

# --- README "Install on a server", as written there ------------------------
step "database and role for fairq (peer authentication)"
inside runuser -u postgres -- createuser fairq
inside runuser -u postgres -- createdb -O fairq fairq
inside systemctl restart fairqd
for _ in $(seq 1 100); do
    inside curl -fsS http://127.0.0.1:8080/healthz >/dev/null 2>&1 && break
    sleep 0.2
done
inside curl -fsS http://127.0.0.1:8080/healthz >/dev/null || fail "fairqd is not healthy"

step "first admin token, first tenant"
ADMIN=$(inside runuser -u fairq -- fairqd token create --admin --config /etc/fairq/fairqd.conf) \
    || fail "fairqd token create --admin"
inside fairq --token "$ADMIN" tenants set acme --weight 2 >/dev/null || fail "fairq tenants set"
TENANT=$(inside fairq --token "$ADMIN" tenants token acme | tail -1) || fail "fairq tenants token"

step "a sender instance, fairq-sender@relay1, with its own certificate"
inside sh -e -c '
    install -d -o root -g fairq-sender -m 0750 /etc/fairq-sender/curve
    fairq-sender --make-cert /etc/fairq-sender/curve/relay1 >/dev/null
    chgrp fairq-sender /etc/fairq-sender/curve/relay1_secret
    chmod 0640 /etc/fairq-sender/curve/relay1_secret
    cp /etc/fairq/curve/fairqd /etc/fairq-sender/curve/fairqd
    cp /etc/fairq-sender/curve/relay1 /etc/fairq/curve/senders/relay1
    cat >/etc/fairq-sender/relay1.conf <<EOF
name = relay1
connect = tcp://127.0.0.1:5555
cert = /etc/fairq-sender/curve/relay1
server_cert = /etc/fairq-sender/curve/fairqd
transport = file
file = /var/lib/fairq-sender/relay1.mbox
EOF
    chgrp fairq-sender /etc/fairq-sender/relay1.conf
    chmod 0640 /etc/fairq-sender/relay1.conf
    systemctl enable --now fairq-sender@relay1
' || fail "setting up fairq-sender@relay1"

step "a request of 3 recipients is delivered"
inside sh -c "cat >/tmp/request.json" <<'EOF'
{"from": "news@example.org", "subject": "Hello {{name}}", "body": "Hi {{name}}",
 "recipients": [{"to": "a@example.net", "fields": {"name": "A"}},
                {"to": "b@example.net", "fields": {"name": "B"}},
                {"to": "c@example.net", "fields": {"name": "C"}}]}
EOF
inside timeout 120 fairq --token "$TENANT" submit /tmp/request.json --watch >"$WORK/submit.log" 2>&1 \
    || { cat "$WORK/submit.log" >&2; fail "fairq submit --watch"; }
delivered=$(inside grep -c '^From ' /var/lib/fairq-sender/relay1.mbox || true)
[[ "$delivered" == 3 ]] || fail "the mbox holds $delivered messages, not 3"

step "systemctl reload fairqd re-reads its configuration"
inside sed -i 's/^#log_level = info/log_level = debug/' /etc/fairq/fairqd.conf
inside systemctl reload fairqd || fail "systemctl reload fairqd"
# ExecReload only sends the signal: the summary comes a moment later
# (the journal is read whole: grep -q would close the pipe under pipefail)
reloaded=""
for _ in $(seq 1 50); do
    reloaded=$(inside journalctl -u fairqd --no-pager \
        | grep "reloaded config /etc/fairq/fairqd.conf: log_level info -> debug" || true)
    [[ -n "$reloaded" ]] && break
    sleep 0.2
done
[[ -n "$reloaded" ]] || fail "fairqd's log does not say it reloaded log_level"

step "reinstalling (an upgrade's path) restarts fairqd and keeps its configuration"
before=$(inside systemctl show -p MainPID --value fairqd)
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall /debs/fairq_*.deb' \
    >"$WORK/reinstall.log" 2>&1 || { cat "$WORK/reinstall.log" >&2; fail "apt-get install --reinstall"; }
after=$(inside systemctl show -p MainPID --value fairqd)
[[ "$after" != 0 && "$after" != "$before" ]] || fail "fairqd was not restarted (MainPID $before, then $after)"
inside grep -q '^log_level = debug' /etc/fairq/fairqd.conf || fail "the operator's change to fairqd.conf is lost"
[[ $(inside stat -c %a:%U:%G /etc/fairq/curve/fairqd_secret) == 640:root:fairq ]] \
    || fail "fairqd's secret key is not 640 root:fairq"

step "a crashed fairqd is restarted by systemd"
pid=$(inside systemctl show -p MainPID --value fairqd)
inside kill -9 "$pid"
for _ in $(seq 1 50); do
    [[ $(inside systemctl show -p NRestarts --value fairqd) == 1 ]] && break
    sleep 0.2
done
[[ $(inside systemctl show -p NRestarts --value fairqd) == 1 ]] || fail "fairqd was not restarted"

step "stop"
inside systemctl stop fairq-sender@relay1 fairqd || fail "systemctl stop"
for unit in fairqd fairq-sender@relay1; do
    [[ $(inside systemctl is-active "$unit" || true) == inactive ]] || fail "$unit is still running"
done
inside pgrep -u fairq >/dev/null && fail "a process of fairq is left"
inside pgrep -u fairq-sender >/dev/null && fail "a process of fairq-sender is left"

step "purge"
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q fairq fairq-sender' \
    >"$WORK/purge.log" 2>&1 || { cat "$WORK/purge.log" >&2; fail "apt-get purge"; }
for path in /usr/sbin/fairqd /usr/sbin/fairq-sender /usr/bin/fairq /etc/fairq /etc/fairq-sender \
    /var/lib/fairq-sender /lib/systemd/system/fairqd.service \
    /lib/systemd/system/fairq-sender@.service /etc/systemd/system/multi-user.target.wants/fairqd.service; do
    inside test -e "$path" && fail "$path is left after purge"
done
left=$(inside dpkg-query -W -f='${Package} ${Status}\n' fairq fairq-sender 2>/dev/null | grep -v "not-installed" || true)
[[ -z "$left" ]] || fail "left after purge: $left"

step "PASSED: install, set up, deliver, reload, reinstall, restart after a crash, stop and purge"
