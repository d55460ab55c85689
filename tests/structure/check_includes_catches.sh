#!/usr/bin/env bash
# The include check must fail on a forbidden include, not only pass on a
# clean tree: a copy of the real folders gets one runtime file that reaches
# the store, one CLI file that includes libpq, and one file included by path.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PYTHON=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for folder in base log runtime sql cli actors; do
    cp -r "$ROOT/$folder" "$TMP/"
done
printf '#include "fq_store.h"\n' >"$TMP/runtime/fq_reaches_up.c"
printf '#include <libpq-fe.h>\n' >"$TMP/cli/fq_cli_db.c"
printf '#include "../sql/fq_store.h"\n' >"$TMP/actors/fq_by_path.c"
set +e
out=$("$PYTHON" "$ROOT/tests/structure/check_includes.py" "$TMP" 2>&1)
rc=$?
set -e
echo "$out"
[[ $rc -eq 1 ]] || { echo "expected exit 1, got $rc"; exit 1; }
grep -q 'runtime/fq_reaches_up.c:1: runtime/ may not include fq_store.h' <<<"$out"
grep -q 'cli/fq_cli_db.c:1: cli/ may not include <libpq-fe.h>' <<<"$out"
grep -q 'actors/fq_by_path.c:1: include "../sql/fq_store.h" by path' <<<"$out"
# and the clean copy of the same folders passes
rm "$TMP/runtime/fq_reaches_up.c" "$TMP/cli/fq_cli_db.c" "$TMP/actors/fq_by_path.c"
"$PYTHON" "$ROOT/tests/structure/check_includes.py" "$TMP" >/dev/null || {
    echo "the clean copy failed"; "$PYTHON" "$ROOT/tests/structure/check_includes.py" "$TMP"; exit 1; }
echo "check_includes catches what it must"
