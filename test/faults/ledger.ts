import fs from 'node:fs';
import path from 'node:path';

/** What a scenario expects of a run it triggered: how it ends, and a pattern its reason must match if in `error`. */
export interface RunExpectation {
  status: 'ready' | 'error' | 'any';
  reason?: RegExp;
}

/** A run the service accepted (201, 200, or a 503 naming the run it recorded and later answered for). */
export interface AcceptedRun {
  scenario: string;
  /** The run's URL, as the trigger answered it. */
  url: string;
  /** The run's workflow id, `run/<owner>/<profile>/<task>/<run>`. */
  workflowId: string;
  expect: RunExpectation;
  /** The trigger's text, when the suite triggered it (the final scan's canary reads it back). */
  text?: string;
  /** The run as its scenario first read it closed: the final accounts read it again and compare. */
  closed?: ClosedRun;
}

/** What a closed run must keep for ever: its status and, in order, each entry's `msg` and `error`. */
export interface ClosedRun {
  status: string;
  entries: Array<{ msg?: string; error?: string }>;
}

/** A closed run as `ClosedRun` (only the fields that may never change once it is closed). */
export const closedRun = (run: any): ClosedRun => ({
  status: run.status,
  entries: ((run.results ?? []) as any[]).map((e) => ({ msg: e.msg, error: e.error })),
});

/** A request the suite made to the API, as counted. */
interface Counts {
  requests: number;
  byStatus: Record<string, number>;
  /** Error answers by status and error code (`429 trigger_limit`, `503 temporal_unavailable`...). */
  errorCodes: Record<string, number>;
  /** 503s naming a dependency (`mongodb_unavailable`, `temporal_unavailable`) with Retry-After: what issue 12 asks for. */
  dependency503: number;
  /** Every other 5xx, with what was asked: each one is a bug. */
  unexpected5xx: Array<{ scenario: string; method: string; path: string; status: number; body: string }>;
  /** Requests that found no API listening (while it was killed), with why: not answers, and only while it is down. */
  unreachable: Array<{ scenario: string; method: string; path: string; cause: string }>;
  /** Requests the API did not answer within the client's 30 s: a hang, which issue 12 rules out. */
  noAnswer: Array<{ scenario: string; method: string; path: string }>;
  /** Answers slower than `slowAfterMs` (counted everywhere; asserted only while a dependency is down). */
  slow: Array<{ scenario: string; method: string; path: string; status: number; ms: number }>;
  slowestMs: number;
}

/**
 * The suite's accounts: every request and its answer, every fault injected, every run accepted and how it ended,
 * every secret used. Written to test-results/faults-summary.json at the end, whatever happened.
 */
class Ledger {
  scenario = 'setup';
  readonly counts: Counts = { requests: 0, byStatus: {}, errorCodes: {}, dependency503: 0, unexpected5xx: [], unreachable: [], noAnswer: [], slow: [], slowestMs: 0 };
  /**
   * How long an answer may take while a dependency does not answer: the API's DEPENDENCY_TIMEOUT_MS and a margin for
   * a loaded two-core machine (the harness sets it from the services' settings).
   */
  slowAfterMs = Infinity;
  /** Tasks with a webhook (`<owner>/<profile>/<task>`), and the secret each signs with. */
  readonly webhookTasks = new Map<string, string>();
  readonly faults: Array<{ scenario: string; fault: string }> = [];
  readonly runs = new Map<string, AcceptedRun>();
  /** Secrets the suite gave the service, by kind; the final scan looks for each. */
  /** `mcp secret`: an MCP install's header value or URL query, which no answer shows, not even to the owner. */
  /** `access token`: a user's token (`ptr_…`), shown once in the answer that made it and nowhere else. */
  readonly secrets: Array<{ kind: 'provider key' | 'install secret' | 'webhook secret' | 'mcp secret' | 'access token'; value: string }> = [];
  readonly notes: string[] = [];
  /** Every answer's body, by request (`<method> <path> <status>`): the final scan looks for secrets in them too. */
  readonly answers: Array<{ where: string; text: string }> = [];
  final: Record<string, unknown> = {};
  private readonly started = Date.now();

  fault(fault: string) {
    this.faults.push({ scenario: this.scenario, fault });
  }

  secret(kind: Ledger['secrets'][number]['kind'], value: string) {
    this.secrets.push({ kind, value });
    return value;
  }

  request(method: string, path: string, status: number, body: string, retryAfter: string | null, ms: number) {
    this.counts.requests++;
    this.answers.push({ where: `${method} ${path} ${status}`, text: body });
    this.counts.slowestMs = Math.max(this.counts.slowestMs, ms);
    if (ms >= this.slowAfterMs) this.counts.slow.push({ scenario: this.scenario, method, path, status, ms });
    const key = `${Math.floor(status / 100)}xx`;
    this.counts.byStatus[key] = (this.counts.byStatus[key] ?? 0) + 1;
    this.counts.byStatus[String(status)] = (this.counts.byStatus[String(status)] ?? 0) + 1;
    if (status < 400) return;
    let code: unknown;
    try {
      code = JSON.parse(body)?.error?.code;
    } catch {
      code = undefined;
    }
    const named = `${status} ${String(code ?? (path === '/readyz' ? 'readyz' : '(no error code)'))}`;
    this.counts.errorCodes[named] = (this.counts.errorCodes[named] ?? 0) + 1;
    if (status < 500) return;
    if (status === 503 && retryAfter && (code === 'mongodb_unavailable' || code === 'temporal_unavailable')) this.counts.dependency503++;
    // `/readyz` answers 503 with the checks' own body by design (a dependency is down), not an error body.
    else if (status === 503 && path === '/readyz') this.counts.dependency503++;
    else this.counts.unexpected5xx.push({ scenario: this.scenario, method, path, status, body: body.slice(0, 500) });
  }

  unreachable(method: string, path: string, cause: string) {
    this.counts.requests++;
    this.counts.unreachable.push({ scenario: this.scenario, method, path, cause });
  }

  noAnswer(method: string, path: string) {
    this.counts.requests++;
    this.counts.noAnswer.push({ scenario: this.scenario, method, path });
  }

  accept(run: Omit<AcceptedRun, 'scenario'>) {
    if (!this.runs.has(run.workflowId)) this.runs.set(run.workflowId, { ...run, scenario: this.scenario });
    return this.runs.get(run.workflowId)!;
  }

  summary() {
    const status = (s: string) => this.counts.byStatus[s] ?? 0;
    return {
      seconds: Math.round((Date.now() - this.started) / 1000),
      requests: this.counts.requests,
      '2xx': status('2xx'),
      '4xx': status('4xx'),
      '5xx': status('5xx'),
      dependency503: this.counts.dependency503,
      unexpected5xx: this.counts.unexpected5xx.length,
      unreachable: this.counts.unreachable.length,
      noAnswer: this.counts.noAnswer.length,
      slowAnswers: this.counts.slow.length,
      slowAnswersByScenario: this.counts.slow.reduce<Record<string, number>>((acc, a) => ({ ...acc, [a.scenario]: (acc[a.scenario] ?? 0) + 1 }), {}),
      slowestAnswerMs: this.counts.slowestMs,
      statuses: Object.fromEntries(Object.entries(this.counts.byStatus).filter(([k]) => /^\d+$/.test(k))),
      errorCodes: this.counts.errorCodes,
      faultsSurvived: this.faults.length,
      faultsByKind: this.faults.reduce<Record<string, number>>((acc, f) => ({ ...acc, [f.fault]: (acc[f.fault] ?? 0) + 1 }), {}),
      runsAccepted: this.runs.size,
      ...this.final,
      secretsUsed: this.secrets.reduce<Record<string, number>>((acc, s) => ({ ...acc, [s.kind]: (acc[s.kind] ?? 0) + 1 }), {}),
      unexpected5xxDetails: this.counts.unexpected5xx.slice(0, 20),
      slowAnswerDetails: this.counts.slow.slice(0, 20),
      notes: this.notes,
    };
  }

  /** Writes the summary (test-results/faults-summary.json) and prints it. */
  write(file = path.join('test-results', 'faults-summary.json')) {
    const summary = this.summary();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
    const { unexpected5xxDetails, slowAnswerDetails, notes, statuses, errorCodes, faultsByKind, ...counts } = summary;
    console.log(`\nfault suite summary (${file}):`);
    for (const [k, v] of Object.entries(counts)) console.log(`  ${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`);
    console.log(`  statuses: ${JSON.stringify(statuses)}`);
    console.log(`  error codes: ${JSON.stringify(errorCodes)}`);
    console.log(`  faults: ${JSON.stringify(faultsByKind)}`);
    for (const u of unexpected5xxDetails) console.log(`  unexpected ${u.status}: ${u.method} ${u.path} (${u.scenario}) ${u.body}`);
    for (const u of slowAnswerDetails) console.log(`  slow answer: ${u.status} in ${u.ms} ms: ${u.method} ${u.path} (${u.scenario})`);
    for (const n of notes) console.log(`  note: ${n}`);
  }
}

export const ledger = new Ledger();
