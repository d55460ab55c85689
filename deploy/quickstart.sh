#!/usr/bin/env bash
# Install dependencies, make an optimised build and run fairq's main job.
set -euo pipefail

# Resolve the repo root from this script's location so the caller's cwd doesn't matter.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build/release"

# --- main job ---------------------------------------------------------------
# For now fairq's main job is the runtime benchmark. Replace this function when
# fairqd itself becomes the thing to run; nothing else needs to change.
run_main_job() {
    local bin="$BUILD/tests/bench/fq_bench_runtime"
    if [[ ! -x "$bin" ]]; then
        echo "quickstart: $bin was not built (is tests/bench/ in the build yet?)" >&2
        exit 1
    fi
    "$bin" "$@"
}
# ---------------------------------------------------------------------------

"$ROOT/deploy/install-deps.sh"

mkdir -p "$BUILD" 2>/dev/null || { echo "quickstart: cannot create $BUILD (repo not writable by $(id -un))" >&2; exit 1; }
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$(nproc)"

run_main_job "$@"
