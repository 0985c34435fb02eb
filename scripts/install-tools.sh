#!/usr/bin/env bash
# Builds the Temporal CLI (dev server + Web UI) and FerretDB from the Go module proxy into a per-user cache outside
# the checkout, keyed by version, once. Prints the two binary paths as KEY=path lines on stdout (progress goes to
# stderr). Honours TEMPORAL_CLI / FERRETDB_BIN (existing binaries) and TEMPORAL_ADDRESS / MONGO_URL (external
# services: nothing to build for them).
#
# With --cluster it also readies what `npm run stack:cluster` runs (docs/deploy.md): the real Temporal server
# (`temporal-server`) and its schema tool (`temporal-sql-tool`) built from go.temporal.io/server at the version
# docker-compose.yml pins, the module's PostgreSQL v12 schema copied beside them, and PostgreSQL itself (found on PATH
# or in Debian's /usr/lib/postgresql/<version>/bin, else installed with apt-get), and the Temporal Web UI's server
# (`ui-server`, github.com/temporalio/ui-server/v2 at the version docker-compose.yml's temporalio/ui pins, its assets
# embedded). Extra lines: TEMPORAL_SERVER_BIN, TEMPORAL_SQL_TOOL, TEMPORAL_SCHEMA_DIR, POSTGRES_BIN_DIR,
# TEMPORAL_UI_SERVER_BIN.
set -euo pipefail

cluster=
for arg in "$@"; do
  case "$arg" in
    --cluster) cluster=1 ;;
    *) printf '[install-tools] unknown argument: %s (the only flag is --cluster)\n' "$arg" >&2; exit 2 ;;
  esac
done

TEMPORAL_VERSION=1.5.1
# The Temporal server docker-compose.yml runs (temporalio/auto-setup:<this>); the CLI above embeds the same server.
TEMPORAL_SERVER_VERSION=1.29.1
# The Web UI docker-compose.yml runs (temporalio/ui:<this>), the same the CLI above embeds.
TEMPORAL_UI_VERSION=2.42.1
FERRETDB_VERSION=1.24.2
# Our build of it carries three fixes (see build_ferretdb); the cache directory is named for them, so a build without
# them from an older checkout is never picked up.
FERRETDB_BUILD="$FERRETDB_VERSION-idindex-idfilter-pushdown"
CACHE_ROOT="${PTR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/prompt-task-runner/tools}"

say() { printf '[install-tools] %s\n' "$*" >&2; }
fail() { printf '[install-tools] FAILED: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || need_go=1

build_temporal() {
  local dir="$CACHE_ROOT/temporal-$TEMPORAL_VERSION" bin
  bin="$dir/temporal"
  if [ -x "$bin" ]; then say "Temporal CLI $TEMPORAL_VERSION already built: $bin"; echo "TEMPORAL_CLI=$bin"; return; fi
  [ -z "${need_go:-}" ] || fail "step 'temporal': Go is not installed; install Go or set TEMPORAL_CLI / TEMPORAL_ADDRESS"
  say "building Temporal CLI v$TEMPORAL_VERSION from the Go module proxy (a few minutes the first time)..."
  mkdir -p "$dir"
  local log="$dir/build.log"
  if ! GOBIN="$dir/.gobin" CGO_ENABLED=0 go install -ldflags='-s -w' \
      "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_VERSION" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    fail "step 'temporal': go install failed (full log: $log)"
  fi
  mv "$dir/.gobin/temporal" "$bin.tmp" && mv "$bin.tmp" "$bin" || fail "step 'temporal': could not move the built binary to $bin"
  rmdir "$dir/.gobin" 2>/dev/null || true
  say "Temporal CLI ready: $bin"
  echo "TEMPORAL_CLI=$bin"
}

build_ferretdb() {
  local dir="$CACHE_ROOT/ferretdb-$FERRETDB_BUILD" bin
  bin="$dir/ferretdb"
  if [ -x "$bin" ]; then say "FerretDB $FERRETDB_VERSION already built: $bin"; echo "FERRETDB_BIN=$bin"; return; fi
  [ -z "${need_go:-}" ] || fail "step 'ferretdb': Go is not installed; install Go or set FERRETDB_BIN / MONGO_URL"
  say "building FerretDB v$FERRETDB_VERSION from the Go module proxy (a few minutes the first time)..."
  mkdir -p "$dir"
  local log="$dir/build.log" src
  src=$(mktemp -d)
  trap 'rm -rf "$src"' RETURN
  local mod
  if ! mod=$(go mod download -json "github.com/FerretDB/FerretDB@v$FERRETDB_VERSION" 2>>"$log" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); then
    tail -n 20 "$log" >&2; fail "step 'ferretdb': go mod download failed (log: $log)"
  fi
  [ -n "$mod" ] && [ -d "$mod" ] || { tail -n 20 "$log" >&2; fail "step 'ferretdb': module source not found after download (log: $log)"; }
  # The released module lacks build/version/version.txt, which the binary embeds; without it FerretDB panics at start.
  cp -r "$mod/." "$src/" && chmod -R u+w "$src"
  echo "v$FERRETDB_VERSION" >"$src/build/version/version.txt"
  # The fix: on SQLite, FerretDB 1.24 looks documents up by `_ferretdb_sjson->'$._id'` but indexes `_id` as
  # `_ferretdb_sjson->"_id"`. SQLite only uses an index for the very expression it was built on, so every find, update
  # and delete by _id scanned the whole table (measured: an update by _id in a 2,400-document collection took 59 ms of
  # FerretDB CPU; with the fix, 1.2 ms). The query now uses the index's own expression (same value, same data files).
  local meta="$src/internal/backends/sqlite/metadata/metadata.go"
  sed -i "s|IDColumn = DefaultColumn + \"->'\$._id'\"|IDColumn = DefaultColumn + \`->\"_id\"\`|" "$meta"
  grep -qF 'IDColumn = DefaultColumn + `->"_id"`' "$meta" || fail "step 'ferretdb': the _id index fix did not apply to $meta"
  # The second: only a filter that is exactly `{_id: <string or ObjectId>}` was looked up by _id; one with other
  # conditions besides (`{_id, status: {$nin: [...]}}`, a write that must not touch a closed run) read the whole
  # table (measured: 67 ms of FerretDB CPU per update in a 2,000-document collection). The lookup now uses the _id
  # of any filter that has one. FerretDB applies the whole filter to what the lookup returns in any case, so the
  # answers are the same; only the rows read change. Explain shows the new plan (its `filterPushdown` then means
  # "looked up by _id", not "no filtering left").
  local coll="$src/internal/backends/sqlite/collection.go"
  sed -i 's/\tif params.Filter.Len() == 1 {/\tif params.Filter.Len() >= 1 {/' "$coll"
  [ "$(grep -cF 'if params.Filter.Len() >= 1 {' "$coll")" = 2 ] || fail "step 'ferretdb': the _id filter fix did not apply to $coll"
  # The third: any other filter read the whole table and sorted it in Go, so a page of a task's run list cost FerretDB
  # CPU growing with every run stored (measured: 145 to 195 ms per page of 100 at 1,000 runs in the task, 1.8 s at
  # 10,000). The patch (scripts/ferretdb-pushdown.patch, on top of the two above) compares top-level equalities on
  # strings and dates and ranges on dates in SQL through the index's own expressions, and, when that is the whole
  # filter and the query sorts newest first with a limit, reads only the first N documents and their ties by the
  # index (21 to 25 ms per page at 1,000 and 10,000 runs, as much as returning any 100 runs costs). FerretDB applies
  # the whole filter, sort and limit to what SQL returns in any case; docs/ferretdb.md says which values it may miss.
  local script_dir
  script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  # `patch` where there is one, else git's own (the checkout has git); the source copy is not a repository.
  if command -v patch >/dev/null; then
    (cd "$src" && patch -p1 -s --forward <"$script_dir/ferretdb-pushdown.patch") >>"$log" 2>&1 || fail "step 'ferretdb': the pushdown patch did not apply (log: $log)"
  else
    (cd "$src" && git apply -p1 "$script_dir/ferretdb-pushdown.patch") >>"$log" 2>&1 || fail "step 'ferretdb': the pushdown patch did not apply (log: $log)"
  fi
  grep -qF 'func topRowsClause(' "$src/internal/backends/sqlite/pushdown.go" || fail "step 'ferretdb': the pushdown patch did not apply"
  if ! (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" ./cmd/ferretdb) >>"$log" 2>&1; then
    tail -n 20 "$log" >&2; fail "step 'ferretdb': go build failed (full log: $log)"
  fi
  mv "$bin.tmp" "$bin"
  say "FerretDB ready: $bin"
  echo "FERRETDB_BIN=$bin"
}

build_temporal_server() {
  local dir="$CACHE_ROOT/temporal-server-$TEMPORAL_SERVER_VERSION"
  if [ -x "$dir/temporal-server" ] && [ -x "$dir/temporal-sql-tool" ] && [ -d "$dir/schema/postgresql/v12/temporal" ]; then
    say "Temporal server $TEMPORAL_SERVER_VERSION already built: $dir"
  else
    [ -z "${need_go:-}" ] || fail "step 'temporal-server': Go is not installed; install Go (>= 1.25)"
    say "building temporal-server and temporal-sql-tool v$TEMPORAL_SERVER_VERSION from the Go module proxy (several minutes the first time)..."
    mkdir -p "$dir"
    local log="$dir/build.log" pkg
    : >"$log"
    for pkg in server tools/sql; do
      say "  go install go.temporal.io/server/cmd/$pkg@v$TEMPORAL_SERVER_VERSION"
      if ! GOBIN="$dir/.gobin" CGO_ENABLED=0 go install -ldflags='-s -w' \
          "go.temporal.io/server/cmd/$pkg@v$TEMPORAL_SERVER_VERSION" >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        fail "step 'temporal-server': go install of cmd/$pkg failed (full log: $log)"
      fi
    done
    local mod
    mod=$(go mod download -json "go.temporal.io/server@v$TEMPORAL_SERVER_VERSION" 2>>"$log" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -n "$mod" ] && [ -d "$mod/schema/postgresql/v12" ] || fail "step 'temporal-server': the module's schema/postgresql/v12 was not found (log: $log)"
    rm -rf "$dir/schema" && mkdir -p "$dir/schema/postgresql" && cp -r "$mod/schema/postgresql/v12" "$dir/schema/postgresql/" \
      && chmod -R u+w "$dir/schema" || fail "step 'temporal-server': could not copy the schema into $dir"
    mv "$dir/.gobin/sql" "$dir/temporal-sql-tool" && mv "$dir/.gobin/server" "$dir/temporal-server" \
      || fail "step 'temporal-server': could not move the built binaries into $dir"
    rmdir "$dir/.gobin" 2>/dev/null || true
    say "Temporal server ready: $dir"
  fi
  echo "TEMPORAL_SERVER_BIN=$dir/temporal-server"
  echo "TEMPORAL_SQL_TOOL=$dir/temporal-sql-tool"
  echo "TEMPORAL_SCHEMA_DIR=$dir/schema/postgresql/v12"
}

build_temporal_ui() {
  local dir="$CACHE_ROOT/temporal-ui-server-$TEMPORAL_UI_VERSION"
  if [ -x "$dir/ui-server" ]; then
    say "Temporal Web UI server $TEMPORAL_UI_VERSION already built: $dir/ui-server"
  else
    [ -z "${need_go:-}" ] || fail "step 'temporal-ui': Go is not installed; install Go (>= 1.24)"
    say "building the Temporal Web UI server v$TEMPORAL_UI_VERSION from the Go module proxy (about a minute)..."
    mkdir -p "$dir"
    local log="$dir/build.log"
    if ! GOBIN="$dir/.gobin" CGO_ENABLED=0 go install -ldflags='-s -w' \
        "github.com/temporalio/ui-server/v2/cmd/server@v$TEMPORAL_UI_VERSION" >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      fail "step 'temporal-ui': go install failed (full log: $log)"
    fi
    mv "$dir/.gobin/server" "$dir/ui-server" || fail "step 'temporal-ui': could not move the built binary into $dir"
    rmdir "$dir/.gobin" 2>/dev/null || true
    say "Temporal Web UI server ready: $dir/ui-server"
  fi
  echo "TEMPORAL_UI_SERVER_BIN=$dir/ui-server"
}

# PostgreSQL's server binaries (initdb, postgres, pg_ctl): PATH, then Debian's layout, then apt-get.
find_postgres() {
  local found
  found=$(command -v initdb 2>/dev/null || true)
  if [ -z "$found" ]; then
    found=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  if [ -z "$found" ]; then
    command -v apt-get >/dev/null || fail "step 'postgresql': no initdb on PATH or in /usr/lib/postgresql, and no apt-get to install it"
    say "installing PostgreSQL with apt-get (Debian's postgresql package)..."
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; } >&2 \
      || fail "step 'postgresql': apt-get install postgresql failed"
    found=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$found" ] || fail "step 'postgresql': installed, but no initdb under /usr/lib/postgresql/*/bin"
  fi
  # Through a symlink to the real directory, so postgres and pg_ctl are found beside it.
  local bindir
  bindir=$(dirname "$(readlink -f "$found")")
  [ -x "$bindir/postgres" ] && [ -x "$bindir/pg_ctl" ] || fail "step 'postgresql': $bindir has initdb but not postgres and pg_ctl"
  say "PostgreSQL: $("$bindir/postgres" --version) in $bindir"
  echo "POSTGRES_BIN_DIR=$bindir"
}

if [ -n "${TEMPORAL_CLI:-}" ]; then
  [ -x "$TEMPORAL_CLI" ] || fail "TEMPORAL_CLI=$TEMPORAL_CLI is not an executable file"
  say "using TEMPORAL_CLI=$TEMPORAL_CLI"; echo "TEMPORAL_CLI=$TEMPORAL_CLI"
elif [ -n "${TEMPORAL_ADDRESS:-}" ]; then
  say "TEMPORAL_ADDRESS=$TEMPORAL_ADDRESS is set: no Temporal CLI needed"
else
  build_temporal
fi

if [ -n "${FERRETDB_BIN:-}" ]; then
  [ -x "$FERRETDB_BIN" ] || fail "FERRETDB_BIN=$FERRETDB_BIN is not an executable file"
  say "using FERRETDB_BIN=$FERRETDB_BIN"; echo "FERRETDB_BIN=$FERRETDB_BIN"
elif [ -n "${MONGO_URL:-}" ]; then
  say "MONGO_URL is set: no FerretDB needed"
else
  build_ferretdb
fi

if [ -n "$cluster" ]; then
  build_temporal_server
  build_temporal_ui
  find_postgres
fi
