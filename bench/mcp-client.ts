/**
 * The MCP client layer's cost: a tool call through the worker's session pool (guarded, capped transport; per-call
 * routing of logs and lost streams; result conversion) against the SDK's own client calling the same server directly
 * with the platform fetch. Both against server-everything's `echo` (a child process on loopback), one call at a time
 * and CALLS at CONCURRENCY, interleaved in rounds so that machine noise hits both sides alike.
 * Run alone: `npx tsx bench/mcp-client.ts`; `benchMcpClient` is the part a stack bench can call.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { performance } from 'node:perf_hooks';
import { mcpClientOptions } from '../src/mcp/options';
import { createMcpSessionPool } from '../src/mcp/pool';
import { everythingServer, stopEverythingServer } from '../test/helpers/mcp-everything';
import { inFlight, percentile, round } from './measure';

const ROUNDS = 5;
const CALLS = 400;
const CONCURRENCY = 20;

export interface McpClientBench {
  serial: { poolP50: number; sdkP50: number; poolP95: number; sdkP95: number; addedP50: number };
  concurrent: { poolCallsPerSecond: number; sdkCallsPerSecond: number };
}

export async function benchMcpClient(url: string): Promise<McpClientBench> {
  const pool = createMcpSessionPool(
    mcpClientOptions({ NETWORK_BLOCKLIST: [], MCP_ALLOWLIST: ['127.0.0.1'], MCP_CONNECT_TIMEOUT_MS: 10_000, MCP_CALL_TIMEOUT_MS: 60_000, MCP_MAX_RESPONSE_BYTES: 4 * 1024 * 1024 }),
  );
  const sdk = new Client({ name: 'bench', version: '1' });
  await sdk.connect(new StreamableHTTPClientTransport(new URL(url)));
  const target = { key: 'bench', url };
  const viaPool = () => pool.callTool(target, { name: 'echo', arguments: { message: 'hi' } });
  const viaSdk = () => sdk.callTool({ name: 'echo', arguments: { message: 'hi' } });
  const timed = async (call: () => Promise<unknown>, into: number[]) => {
    const t = performance.now();
    await call();
    into.push(performance.now() - t);
  };
  try {
    for (let i = 0; i < 200; i++) await Promise.all([viaPool(), viaSdk()]); // warm-up: JIT, connections
    const poolMs: number[] = [];
    const sdkMs: number[] = [];
    let poolWall = 0;
    let sdkWall = 0;
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      for (let i = 0; i < CALLS; i++) {
        await timed(viaPool, poolMs);
        await timed(viaSdk, sdkMs);
      }
      let t = performance.now();
      await inFlight(CALLS, CONCURRENCY, () => viaPool().then(() => undefined));
      poolWall += performance.now() - t;
      t = performance.now();
      await inFlight(CALLS, CONCURRENCY, () => viaSdk().then(() => undefined));
      sdkWall += performance.now() - t;
    }
    const p = (v: number[], q: number) => round(percentile(v, q), 2);
    return {
      serial: { poolP50: p(poolMs, 50), sdkP50: p(sdkMs, 50), poolP95: p(poolMs, 95), sdkP95: p(sdkMs, 95), addedP50: round(percentile(poolMs, 50) - percentile(sdkMs, 50), 2) },
      concurrent: { poolCallsPerSecond: Math.round((ROUNDS * CALLS * 1000) / poolWall), sdkCallsPerSecond: Math.round((ROUNDS * CALLS * 1000) / sdkWall) },
    };
  } finally {
    await pool.close();
    await sdk.close();
  }
}

if (require.main === module) {
  (async () => {
    try {
      const { url } = await everythingServer();
      console.log(JSON.stringify(await benchMcpClient(url), null, 2));
    } finally {
      await stopEverythingServer();
    }
  })().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
