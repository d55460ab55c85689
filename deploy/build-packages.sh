#!/usr/bin/env bash
# Build the Debian packages fairq and fairq-sender from this tree:
#
#   deploy/build-packages.sh        ->  build/packages/fairq_VERSION_ARCH.deb
#                                       build/packages/fairq-sender_VERSION_ARCH.deb
#
# debhelper (debian/) with dpkg-buildpackage, on a copy of the tree (the build
# never writes into the sources). Installs its build dependencies when missing.
# deploy/package-check.sh installs, runs and purges what it builds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/build/packages"
WORK="$ROOT/build/package-src"

"$ROOT/deploy/install-deps.sh" --packaging

rm -rf "$WORK" "$OUT"
mkdir -p "$WORK/fairq" "$OUT"
# The tree as it is (committed or not), without builds and git's own files
tar -C "$ROOT" --exclude=./build --exclude=./.git -cf - . | tar -C "$WORK/fairq" -xf -

(cd "$WORK/fairq" && dpkg-buildpackage -b -us -uc -j"$(nproc)") >"$OUT/build.log" 2>&1 || {
    tail -40 "$OUT/build.log" >&2
    echo "build-packages: dpkg-buildpackage failed (whole log: $OUT/build.log)" >&2
    exit 1
}
mv "$WORK"/*.deb "$OUT"/
rm -rf "$WORK"
for deb in "$OUT"/*.deb; do
    echo "build-packages: $deb"
done
