import createPlugin from '@extism/extism';
import { contentAddress, createServletRuntime, type InstallRef } from '../activities/servlets';
import { pluginOptions } from '../activities/servlets/host';
import { compileServlet } from '../activities/servlets/module';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { buildTestServlets } from '../test/helpers/servlets';
import { percentile, round } from './measure';

export interface Percentiles {
  p50: number;
  p99: number;
}

const WARMUP = 300;
const ROUNDS = 10;
const CALLS_PER_ROUND = 300;

/**
 * Servlet call latency (ms) through the runtime's pool beside a direct Extism call of the same module with the
 * same plugin options, both warm, in the same run. The rounds alternate so that drift hits both alike. The
 * pooled figure includes what a run pays: input JSON, pool hand-off, output size/JSON/shape checks.
 */
export async function benchServlets(): Promise<{ pooled: Percentiles; direct: Percentiles }> {
  const config = loadConfig({
    MONGO_URL: 'mongodb://127.0.0.1:27017/bench',
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    MASTER_KEY: `bench:${Buffer.alloc(32, 7).toString('base64')}`,
    SIGNING_SECRET: 'bench-signing-secret-of-at-least-32-characters',
    ...process.env,
    LOG_LEVEL: 'warn',
  });
  const logger = createLogger({ level: 'warn', name: 'bench' });
  const { greeter } = await buildTestServlets();
  const request = { name: 'greet', arguments: { name: 'Ada' } };

  const runtime = createServletRuntime({ config, logger });
  const install: InstallRef = {
    key: 'bench',
    contentAddress: contentAddress(greeter),
    loadModule: async () => greeter,
    config: {},
    domains: [],
  };
  const direct = await createPlugin(
    { wasm: [{ module: await compileServlet(greeter, config.SERVLET_MAX_MEMORY_MB) }] },
    pluginOptions(config, { config: {}, fetch: (() => Promise.reject(new Error('no network'))) as typeof fetch }),
  );

  const pooledCall = async () => {
    const result = await runtime.call(install, request);
    if (result.isError) throw new Error(`bench servlet failed: ${JSON.stringify(result)}`);
  };
  const directCall = async () => {
    const output = await direct.call('call', JSON.stringify({ params: request }));
    JSON.parse(output!.text());
  };
  // Without a reset the SDK keeps every call's buffers and each call gets slower; the pool resets after
  // answering, so the direct plugin is reset too, outside the timed part.
  const afterDirect = () => direct.reset();

  const pooled: number[] = [];
  const plain: number[] = [];
  try {
    await time(pooledCall, WARMUP, []);
    await time(directCall, WARMUP, [], afterDirect);
    for (let round = 0; round < ROUNDS; round++) {
      await time(pooledCall, CALLS_PER_ROUND, pooled);
      await time(directCall, CALLS_PER_ROUND, plain, afterDirect);
    }
  } finally {
    await direct.close();
    await runtime.close();
  }
  return { pooled: percentiles(pooled), direct: percentiles(plain) };
}

async function time(fn: () => Promise<void>, times: number, into: number[], untimed?: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await fn();
    into.push(performance.now() - start);
    await untimed?.();
  }
}

/** The same rank rule as every other percentile of the table (measure.ts). */
function percentiles(samples: number[]): Percentiles {
  return { p50: round(percentile(samples, 50), 3), p99: round(percentile(samples, 99), 3) };
}

if (require.main === module) {
  benchServlets().then(
    ({ pooled, direct }) => {
      const rows = [
        ['servlet call', 'p50 ms', 'p99 ms'],
        ['pooled (runtime)', pooled.p50, pooled.p99],
        ['direct (Extism)', direct.p50, direct.p99],
        ['pooled overhead', round(pooled.p50 - direct.p50, 3), round(pooled.p99 - direct.p99, 3)],
      ];
      for (const row of rows) console.log(row.map((c, i) => String(c).padEnd(i === 0 ? 18 : 9)).join(' '));
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
