#!/usr/bin/env bash
# Install the Debian 12 packages fairq needs to build, test and run
# (and, with --packaging, to build and try its own packages).
# Safe to run repeatedly: when everything is already installed it touches nothing,
# needs no root and no network.
set -euo pipefail

PACKAGES=(
    build-essential cmake pkg-config git clang-format
    libczmq-dev libzmq3-dev libsodium-dev
    libpq-dev libmsgpack-dev libcmocka-dev
    libcurl4-openssl-dev libmicrohttpd-dev libjansson-dev libgmime-3.0-dev
    postgresql-15 postgresql-common postgresql-client-15
    python3-aiosmtpd python3-prometheus-client ca-certificates openssl procps
    python3-zmq python3-msgpack clang libclang-rt-14-dev
    # The API tests check every answer against api/openapi.yaml (tests/api)
    python3-jsonschema python3-yaml
    pgbouncer
    # promtool, which checks deploy/monitoring's rules (tests/deploy)
    prometheus
    # The web console's end-to-end test drives it in headless Chromium
    # through chromedriver (tests/e2e/test_console.py; skipped without them)
    chromium chromium-driver python3-selenium
)
# --packaging: also what deploy/build-packages.sh and deploy/package-check.sh
# need (debhelper to build, a Debian 12 root booted under systemd-nspawn to try)
if [[ "${1:-}" == --packaging ]]; then
    PACKAGES+=(debhelper dpkg-dev fakeroot debootstrap systemd-container)
fi

# Only "install ok installed" counts: a removed package can leave "deinstall ok config-files".
missing=()
for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$pkg")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: all ${#PACKAGES[@]} packages already installed"
    exit 0
fi
echo "install-deps: missing: ${missing[*]}"

# apt-get needs root: use it directly, else sudo without prompting (CI has no stdin).
if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    echo "install-deps: need root to install packages: run as root or give this user passwordless sudo" >&2
    exit 1
fi

# env passes DEBIAN_FRONTEND through sudo, which would otherwise drop it;
# Dpkg::Use-Pty=0 keeps the progress bar out of CI logs.
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
