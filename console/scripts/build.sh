#!/usr/bin/env bash
# Builds the web console into console/dist (served by the API at /console): `npm run build:console`, and what
# `npm install` (prepare) and `npm run dev` run. Needs nothing but the installed packages.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"

# One type per concept: the console's API types come from the document the API itself serves.
tsx console/scripts/write-openapi.ts
openapi-typescript console/generated/openapi.json --output console/src/api/schema.d.ts >/dev/null
tsc -p console/tsconfig.json
vite build console --logLevel warn
tsx console/scripts/report-size.ts
