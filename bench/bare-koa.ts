/** Baseline for closed-run reads: a bare Koa route answering the same bytes, in its own process like the API. */
import fs from 'node:fs';
import Koa from 'koa';

const [port, file] = process.argv.slice(2);
const body = fs.readFileSync(file!);
const app = new Koa();
app.use((ctx) => {
  ctx.type = 'application/json';
  ctx.body = body;
});
app.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
