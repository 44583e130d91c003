#!/usr/bin/env bash
# The history checker (test/fault/history.test.ts) for longer than the suite's bounded run:
#   scripts/history-checker.sh [seconds] [lmdb|etcd3]     (default: 600 s on LMDB)
# It prints one "history checker: {...}" line of figures (operations checked, faults
# injected, anomalies) and every anomaly found.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
backend="${2:-lmdb}"
npx tsc -p tsconfig.json
if [[ "$backend" == etcd3 ]]; then export KUBESHARD_TEST_STORAGE=etcd3; fi
KUBESHARD_CHECKER_SECONDS="$seconds" npx vitest run test/fault/history.test.ts
