#!/usr/bin/env bash
# Debian's Chromium for the browser tests (test/console/), which playwright-core drives: installed with apt-get when
# /usr/lib/chromium/chromium is missing (it is not in the machine's image, so the test script must install it: a
# Chromium installed by hand would hide a missing step). Prints CHROMIUM=<path> on stdout like
# scripts/install-tools.sh (progress goes to stderr). Honours CHROMIUM (an existing Chromium binary: nothing is
# installed). Needs root, or sudo without a password, to install (CI runs as root).
set -euo pipefail

DEBIAN_CHROMIUM=/usr/lib/chromium/chromium

say() { printf '[install-browser] %s\n' "$*" >&2; }
fail() { printf '[install-browser] FAILED: %s\n' "$*" >&2; exit 1; }
version() { "$1" --version 2>/dev/null | head -n1 || true; }

if [ -n "${CHROMIUM:-}" ]; then
  [ -x "$CHROMIUM" ] || fail "CHROMIUM=$CHROMIUM is not an executable file"
  say "using CHROMIUM=$CHROMIUM ($(version "$CHROMIUM"))"; echo "CHROMIUM=$CHROMIUM"; exit 0
fi

if [ -x "$DEBIAN_CHROMIUM" ]; then
  say "Chromium already installed: $(version "$DEBIAN_CHROMIUM")"; echo "CHROMIUM=$DEBIAN_CHROMIUM"; exit 0
fi

command -v apt-get >/dev/null 2>&1 ||
  fail "no Chromium at $DEBIAN_CHROMIUM and no apt-get to install Debian's chromium package: install it, or set CHROMIUM to a Chromium binary"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2>/dev/null ||
    fail "no Chromium at $DEBIAN_CHROMIUM, and installing it needs root: run 'sudo apt-get install chromium', or set CHROMIUM to a Chromium binary"
  sudo=(sudo -n)
fi

log=$(mktemp -t install-browser.XXXXXX.log)
# Non-interactive, and waiting for the dpkg lock rather than failing while another apt-get holds it.
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=600)
# The recommended packages (a GPU driver, a printer dialogue, a notification daemon) are of no use headless.
install() { "${apt[@]}" install --no-install-recommends chromium >>"$log" 2>&1; }
# The package lists are read again only when they do not know the package (a fresh image ships none), or when the
# install fails (lists older than the mirror name files it no longer has).
# (Read whole first: with pipefail, `grep -q` ending the pipe early would fail it.)
has_candidate() { local policy; policy=$(apt-cache policy chromium 2>/dev/null) && grep -q 'Candidate: [0-9]' <<<"$policy"; }
update() { say "reading the package lists (apt-get update)..."; "${apt[@]}" update >>"$log" 2>&1; }

start=$SECONDS
say "no Chromium at $DEBIAN_CHROMIUM: installing Debian's chromium package with apt-get (log: $log)..."
if ! has_candidate; then
  update || { tail -n 20 "$log" >&2; fail "apt-get update failed (full log: $log)"; }
  has_candidate || fail "the package lists have no 'chromium' package (is Debian's main component in the sources?)"
fi
if ! install; then
  say "apt-get install failed; reading the package lists again and retrying once"
  { update && install; } || { tail -n 20 "$log" >&2; fail "apt-get install chromium failed (full log: $log)"; }
fi
[ -x "$DEBIAN_CHROMIUM" ] || fail "the chromium package is installed but $DEBIAN_CHROMIUM is missing (full log: $log)"
rm -f "$log"
say "Chromium ready in $((SECONDS - start)) s: $(version "$DEBIAN_CHROMIUM")"
echo "CHROMIUM=$DEBIAN_CHROMIUM"
