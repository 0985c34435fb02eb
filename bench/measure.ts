import fs from 'node:fs';
import http from 'node:http';
import pLimit from 'p-limit';

export const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Runs `task` `total` times with `concurrency` in flight: each latency (ms), the time taken (s), completions per second. */
export async function inFlight(total: number, concurrency: number, task: (i: number) => Promise<void>) {
  const latencies: number[] = [];
  const limit = pLimit(concurrency);
  const start = performance.now();
  await Promise.all(
    Array.from({ length: total }, (_, i) =>
      limit(async () => {
        const t = performance.now();
        await task(i);
        latencies.push(performance.now() - t);
      }),
    ),
  );
  const seconds = (performance.now() - start) / 1000;
  return { latencies, seconds, perSecond: total / seconds };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/**
 * GET with keep-alive; resolves with the status code once the body is read. `serverMs` gets the Server-Timing time.
 * A kept-alive socket the server closed in the meantime (its keep-alive timeout) is retried once on a new one, as
 * browsers do for a GET.
 */
export function get(url: string, headers: Record<string, string> = {}, serverMs?: (ms: number) => void, retried = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers }, (res) => {
      const timing = /app;dur=([\d.]+)/.exec(String(res.headers['server-timing'] ?? ''));
      if (serverMs && timing) serverMs(Number(timing[1]));
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (!retried && req.reusedSocket && err.code === 'ECONNRESET') resolve(get(url, headers, serverMs, true));
      else reject(err);
    });
  });
}

/** Hammers `url` with `concurrency` clients for `seconds`: requests per second and latency percentiles. */
export async function hammer(url: string, concurrency: number, seconds: number, headers: Record<string, string> = {}) {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        const status = await get(url, headers);
        if (status !== 200) throw new Error(`${url} answered ${status}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { perSecond: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/** Resident memory of a process, from /proc (Linux). */
export async function rssMb(pid: number): Promise<number> {
  const status = await fs.promises.readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux; clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds used by process `pid` and its children: the live ones' own, and what the exited ones used (its
 * cutime and cstime). For PostgreSQL, whose postmaster forks a backend per connection.
 */
export function treeCpuSeconds(pid: number): number {
  try {
    const fields = (p: number | string) => {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    };
    const own = fields(pid);
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const f = fields(entry);
        if (Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // gone in between
      }
    }
    return ticks / 100;
  } catch {
    return NaN;
  }
}

/** This process's direct children by command name (the Temporal dev server is started by the testing library). */
export function childPids(): Array<{ pid: number; comm: string }> {
  const out: Array<{ pid: number; comm: string }> = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) out.push({ pid: Number(entry), comm });
    } catch {
      // gone in between
    }
  }
  return out;
}
