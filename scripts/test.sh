#!/usr/bin/env bash
# The whole test suite, as CI runs it: tools (built once per machine), the Python client's virtual environment,
# type check, lint, then mocha against the real stack.
set -euo pipefail
cd "$(dirname "$0")/.."

# On its own line: a failure inside `eval "$(...)"` would not stop the script.
tools=$(bash scripts/install-tools.sh)
eval "$(sed 's/^/export /' <<<"$tools")"
bash scripts/python-client.sh
export PTR_TEST_PYTHON="$PWD/.venv/bin/python"

echo "[test] type check"; npx tsc --noEmit
echo "[test] lint"; npx eslint . --max-warnings 0
# With no arguments: the whole suite, then the fault suite (test/faults, its own servers; a few minutes).
echo "[test] mocha"; if [ $# -eq 0 ]; then faults=1; set -- 'test/**/*.test.ts'; fi
log=$(mktemp)
set +e
npx mocha "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# A plain closing line that any CI reads, whatever the runner: "N passed, N failed".
passed=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -oE '^ +[0-9]+ passing' | tail -n1 | grep -oE '[0-9]+' || echo 0)
failed=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -oE '^ +[0-9]+ failing' | tail -n1 | grep -oE '[0-9]+' || echo 0)
rm -f "$log"
echo "mocha: ${passed:-0} passed, ${failed:-0} failed"
if [ "${faults:-0}" = 1 ]; then
  echo "[test] fault suite"
  set +e
  npx mocha --config test/faults/.mocharc.json
  faults_status=$?
  set -e
  echo "fault suite: $([ "$faults_status" -eq 0 ] && echo passed || echo failed) (test-results/faults-summary.json)"
  if [ "$status" -eq 0 ]; then status=$faults_status; fi
fi
exit "$status"
