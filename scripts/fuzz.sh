#!/usr/bin/env bash
# The long fuzz run: the suite in test/fuzz with a larger budget per target than the bounded
# run `npm test` does (2 s per in-process target, 24 s for the server-level sweep).
#
#   scripts/fuzz.sh                 # 60 s per in-process target, 600 s against a server
#   FUZZ_SECONDS=300 FUZZ_SERVER_SECONDS=3600 scripts/fuzz.sh
#   FUZZ_SEED=1234 scripts/fuzz.sh  # replay one run (the seed is in a failure's report)
#   scripts/fuzz.sh test/fuzz/decoders.test.ts   # some targets only
#
# Per target it prints (and appends to $FUZZ_REPORT, fuzz-report.txt by default) a line
# "fuzz <target>: <inputs> inputs in <seconds> s (<outcome>:<count> ...)".
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
export FUZZ_SERVER_SECONDS="${FUZZ_SERVER_SECONDS:-600}"
export FUZZ_REPORT="${FUZZ_REPORT:-$PWD/fuzz-report.txt}"
# the property tests run as long as their budget; vitest's own limit must not cut them short
TIMEOUT_MS=$(( (FUZZ_SECONDS * 20 + FUZZ_SERVER_SECONDS + 600) * 1000 ))
: > "$FUZZ_REPORT"
npx tsc -p tsconfig.json
npx vitest run --testTimeout "$TIMEOUT_MS" "${@:-test/fuzz}"
echo "per-target report: $FUZZ_REPORT"
