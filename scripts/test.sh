#!/usr/bin/env bash
# The whole test suite, as CI runs it: tools (built once per machine, Node 24 among them, the cluster's Temporal server
# and PostgreSQL, and Debian's Chromium for the browser tests), the Python client's virtual environment, type check,
# lint, the unit tests under Node 20 (this node) and Node 24, then mocha against the real stack, the fault suite and the
# cluster suite (docs/deploy.md). Each phase prints its time
# ("[phase] <name>: N s"). With arguments, only mocha with them (e.g. one test file), under this node.
set -euo pipefail
cd "$(dirname "$0")/.."

phase_start=$SECONDS
phase_done() { echo "[phase] $1: $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }

# On their own lines: a failure inside `eval "$(...)"` would not stop the script.
tools=$(bash scripts/install-tools.sh --cluster)
node24=$(bash scripts/install-node.sh)
browser=$(bash scripts/install-browser.sh)
# Only KEY=path lines: an empty one would make a bare `export`, which prints the whole environment.
eval "$(printf '%s\n%s\n%s\n' "$tools" "$node24" "$browser" | sed -n 's/^\([A-Z_0-9]*=.\)/export \1/p')"
bash scripts/python-client.sh
export PTR_TEST_PYTHON="$PWD/.venv/bin/python"
phase_done tools

echo "[test] type check"; npx tsc --noEmit
echo "[test] lint"; npx eslint . --max-warnings 0
phase_done 'type check and lint'

passed=0 failed=0 status=0
# Each failing mocha run's failures (mocha's own account after "N failing"), printed again at the very end: CI keeps
# only the head and tail of a long log, and the fault suite runs last.
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT
# Runs mocha with the given command line, adds its counts to the totals and keeps the first failing exit status.
run_mocha() {
  local name=$1 log rc p f
  shift
  echo "[test] $name"
  log=$(mktemp)
  set +e
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  p=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -oE '^ +[0-9]+ passing' | tail -n1 | grep -oE '[0-9]+' || echo 0)
  f=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -oE '^ +[0-9]+ failing' | tail -n1 | grep -oE '[0-9]+' || echo 0)
  if [ "${f:-0}" -gt 0 ]; then
    { echo "--- $name"; sed 's/\x1b\[[0-9;]*m//g' "$log" | sed -n '/^ \{1,\}[0-9]\{1,\} failing/,$p' | head -n 80; } >> "$failures"
  elif [ "$rc" -ne 0 ]; then
    { echo "--- $name: exit status $rc without a failure reported; its last lines:"; sed 's/\x1b\[[0-9;]*m//g' "$log" | tail -n 30; } >> "$failures"
  fi
  rm -f "$log"
  # A run that ended without reporting a failure (a crash, an abort) counts as one, so the closing line shows it.
  if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then f=1; fi
  echo "[test] $name: ${p:-0} passed, ${f:-0} failed$([ "$rc" -eq 0 ] || echo " (exit status $rc)")"
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
  if [ "$status" -eq 0 ]; then status=$rc; fi
}

UNIT='test/unit/**/*.test.ts'
if [ $# -gt 0 ]; then
  run_mocha mocha npx mocha "$@"
else
  node_now="Node $(node -p 'process.versions.node.split(".")[0]')"
  run_mocha "unit ($node_now)" npx mocha "$UNIT"
  phase_done "unit ($node_now)"
  # Node 24 runs mocha's own script: `npx` would start mocha under the node on PATH.
  run_mocha 'unit (Node 24)' "$NODE24" node_modules/.bin/mocha "$UNIT"
  phase_done 'unit (Node 24)'
  # test/cluster has its own harness and configuration (the cluster suite, below).
  run_mocha 'main suite' npx mocha 'test/**/*.test.ts' --ignore "$UNIT" --ignore 'test/cluster/**'
  phase_done 'main suite'
fi
# A plain closing line that any CI reads, whatever the runner: "N passed, N failed", every mocha run above together.
echo "mocha: $passed passed, $failed failed"

if [ $# -eq 0 ]; then
  # The fault suite (test/faults, its own servers; a few minutes).
  echo "[test] fault suite"
  set +e
  npx mocha --config test/faults/.mocharc.json
  faults_status=$?
  set -e
  echo "fault suite: $([ "$faults_status" -eq 0 ] && echo passed || echo failed) (test-results/faults-summary.json)"
  if [ "$status" -eq 0 ]; then status=$faults_status; fi
  phase_done 'fault suite'
  # The production topology (PostgreSQL, temporal-server, FerretDB on PostgreSQL, two APIs and two workers).
  run_mocha 'cluster suite' npx mocha --config test/cluster/.mocharc.json
  phase_done 'cluster suite'
fi
if [ -s "$failures" ]; then
  echo "[test] failures (as reported above, again here at the end):"
  cat "$failures"
fi
exit "$status"
