#!/usr/bin/env bash
# The hosted service's own Python client (mcp-run 0.5.0 from PyPI), in an ignored virtual environment, for the
# compatibility tests. Skips the install when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp-run") != "0.5.0")' 2>/dev/null; then
  exit 0
fi
echo "[python-client] installing mcp-run 0.5.0 into $VENV" >&2
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check 'mcp-run==0.5.0' >&2
