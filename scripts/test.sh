#!/usr/bin/env bash
# The whole test suite, as CI runs it: tools (built once per machine), the Python client's virtual environment,
# type check, lint, then mocha against the real stack.
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(bash scripts/install-tools.sh | sed 's/^/export /')"
bash scripts/python-client.sh
export PTR_TEST_PYTHON="$PWD/.venv/bin/python"

echo "[test] type check"; npx tsc --noEmit
echo "[test] lint"; npx eslint . --max-warnings 0
echo "[test] mocha"; if [ $# -eq 0 ]; then set -- 'test/**/*.test.ts'; fi; npx mocha "$@"
