#!/usr/bin/env bash
# Build fairq with sanitizers and run the whole ctest suite against a throwaway
# PostgreSQL 15. Extra arguments go to ctest, e.g. `deploy/test.sh -R runtime`.
# Works from any directory, as root or as a normal user.
set -euo pipefail

# Resolve the repo root from this script's location so the caller's cwd doesn't matter.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build/test"

summary() {
    echo "test.sh: $1"
}

"$ROOT/deploy/install-deps.sh" || { summary "FAILED at install-deps"; exit 1; }

# A clone owned by another user (e.g. root) can't hold our build tree: say so plainly.
mkdir -p "$BUILD" 2>/dev/null || { echo "test.sh: cannot create $BUILD (repo not writable by $(id -un))" >&2; exit 1; }

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DFQ_SANITIZE=ON \
    || { summary "FAILED at configure"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" \
    || { summary "FAILED at build"; exit 1; }

# The optimised build of deploy/quickstart.sh must compile too: -O2 turns on
# warnings (and NDEBUG hides asserts) that the debug build never sees.
cmake -S "$ROOT" -B "$ROOT/build/release" -DCMAKE_BUILD_TYPE=Release \
    || { summary "FAILED at configure (release)"; exit 1; }
cmake --build "$ROOT/build/release" -j"$(nproc)" \
    || { summary "FAILED at build (release)"; exit 1; }

# Sanitizer findings must fail the test, not just print.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# install-deps.sh installed Chromium: e2e.console must run, not skip.
export FQ_REQUIRE_BROWSER=1

# -t: temporary cluster dir even as root, so a crashed earlier run can't leave a
# "cluster exists" behind. pg_virtualenv exports PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE.
# --no-tests=error: a run (or a -R filter) that finds no test must not pass silently.
rc=0
pg_virtualenv -t -v 15 \
    ctest --test-dir "$BUILD" --output-on-failure --timeout 600 --no-tests=error "$@" || rc=$?

if [[ $rc -eq 0 ]]; then
    summary "PASSED (build/test, sanitizers on, PostgreSQL 15)"
else
    summary "FAILED: pg_virtualenv/ctest exit code $rc"
fi
exit "$rc"
