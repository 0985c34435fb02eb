import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

/** The console's JavaScript, gzipped, must stay under this (issue 32). */
const LIMIT_BYTES = 200 * 1024;

const assets = path.join(__dirname, '..', 'dist', 'assets');
const scripts = readdirSync(assets).filter((name) => name.endsWith('.js'));
let total = 0;
for (const name of scripts) {
  const gzipped = gzipSync(readFileSync(path.join(assets, name)), { level: 9 }).length;
  total += gzipped;
  console.log(`console: ${name} ${(gzipped / 1024).toFixed(1)} KB gzipped`);
}
console.log(`console: JavaScript ${(total / 1024).toFixed(1)} KB gzipped in all (limit ${LIMIT_BYTES / 1024} KB)`);
if (total > LIMIT_BYTES) {
  console.error(`console: the JavaScript is over ${LIMIT_BYTES / 1024} KB gzipped`);
  process.exit(1);
}
