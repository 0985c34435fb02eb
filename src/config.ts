import os from 'node:os';
import { z } from 'zod';

/**
 * The only reader of process.env. Every setting is parsed once, here; `loadConfig` lists every problem at once.
 * Durations are milliseconds unless the name says otherwise.
 */

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));
const url = z.string().url();
const list = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );

/** `id:base64` where the base64 decodes to 32 bytes. */
const masterKey = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}:[A-Za-z0-9+/=]+$/, 'expected "<key id>:<base64 of 32 bytes>"')
  .transform((v, ctx) => {
    const [id, b64] = v.split(':') as [string, string];
    const key = Buffer.from(b64, 'base64');
    if (key.length !== 32) {
      ctx.addIssue({ code: 'custom', message: `key "${id}" decodes to ${key.length} bytes, expected 32` });
      return z.NEVER;
    }
    return { id, key };
  });

const httpUrl = url.regex(/^https?:\/\//, 'expected an http:// or https:// URL');

/** OTLP over HTTP, as OTEL_EXPORTER_OTLP_PROTOCOL names it; `grpc` (the spec's other value) is not offered. */
const otlpProtocol = z.enum(['http/protobuf', 'http/json'], { error: 'expected http/protobuf or http/json (grpc is not supported)' });

/** `key=value,key2=value2` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS is written. */
const otlpHeaders = optionalString.transform((v, ctx) => {
  const headers: Record<string, string> = {};
  for (const pair of (v ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const at = pair.indexOf('=');
    const name = at > 0 ? pair.slice(0, at).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      // The value may be a key: the problem names the position, never the text.
      ctx.addIssue({ code: 'custom', message: 'expected "name=value" pairs separated by commas' });
      return z.NEVER;
    }
    try {
      headers[name] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      ctx.addIssue({ code: 'custom', message: `the value of "${name}" is not URL-encoded text` });
      return z.NEVER;
    }
  }
  return headers;
});

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** `pretty`: one readable line per entry, for a person at a terminal (`npm run dev` decides); `json` for machines. */
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  HOST: z.string().default('127.0.0.1'),
  PORT: port.default(8080),
  PUBLIC_URL: url.optional(),
  MONGO_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'expected a mongodb:// URL'),
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('prompt-tasks'),
  /** The Temporal Web UI's address: the console links a run to its workflow there. Unset: no such links. */
  TEMPORAL_UI_URL: optionalString.pipe(url.optional()),
  MASTER_KEY: masterKey,
  MASTER_KEYS_RETIRED: list.pipe(z.array(masterKey)),
  SIGNING_SECRET: z.string().min(32, 'must be at least 32 characters'),
  OPENAI_API_KEY: optionalString,
  ANTHROPIC_API_KEY: optionalString,
  OPENAI_BASE_URL: url.optional(),
  ANTHROPIC_BASE_URL: url.optional(),
  OPENAI_DEFAULT_MODEL: z.string().min(1).default('gpt-5.4-mini'),
  ANTHROPIC_DEFAULT_MODEL: z.string().min(1).default('claude-sonnet-5-5'),
  /** The one model Variant A accepts. */
  VARIANT_A_MODEL: optionalString,
  ANTHROPIC_MAX_TOKENS: positiveInt.default(4096),
  PROVIDER_TIMEOUT_MS: positiveInt.default(120_000),
  /** `auto`: a run's provider calls stream their answer (endpoints answering plain JSON are handled); `off`: never. */
  PROVIDER_STREAM: z.enum(['auto', 'off']).default('auto'),
  SESSION_TTL_HOURS: positiveInt.default(24 * 30),
  SESSION_CACHE_MS: z.coerce.number().int().min(0).max(10_000).default(2_000),
  SIGNED_URL_TTL_DAYS: positiveInt.default(365),
  RUN_TIMEOUT_MS: positiveInt.default(30 * 60_000),
  RUN_MAX_TURNS: positiveInt.default(20),
  /** The most a task's `limits.max_total_tokens` may be (input plus output tokens over a run); unset: no ceiling. */
  RUN_MAX_TOTAL_TOKENS: optionalString.pipe(z.coerce.number<string | undefined>().int().positive().optional()),
  PROVIDER_RETRY_INITIAL_MS: positiveInt.default(1_000),
  PROVIDER_RETRY_MAX_MS: positiveInt.default(60_000),
  PROVIDER_MAX_ATTEMPTS: positiveInt.default(6),
  /**
   * A worker that stops heartbeating while it waits on a provider is presumed lost after this long (and its call made
   * again). Heartbeats go every third of it; each costs the Temporal server a few ms of CPU (measured: 4 ms on the
   * dev server), so thousands of waiting calls make it a trade between that load and how soon a lost worker is noticed.
   */
  PROVIDER_HEARTBEAT_TIMEOUT_MS: positiveInt.default(30_000),
  LIVE_RUN_CACHE_MS: z.coerce.number().int().min(0).max(5_000).default(500),
  /** How long the API reuses a run record for reads; a deleted run may be served this long after deletion. */
  RUN_RECORD_CACHE_MS: z.coerce.number().int().min(0).max(10_000).default(2_000),
  /** How long an API process reuses a task queue's backlog figure from Temporal (a live run's `?include=queue`). */
  QUEUE_STATS_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  /**
   * How long the API reuses what a trigger looks up (the task, a signed URL's revocations). A task change or a
   * revocation made through another API process takes effect there within this bound; through this one, at once.
   */
  TRIGGER_CACHE_MS: z.coerce.number().int().min(0).max(10_000).default(1_000),
  BODY_LIMIT_BYTES: positiveInt.default(1024 * 1024),
  /** Deepest nesting of arrays and objects a JSON body may have (400 `json_too_deep` above; at most 1000: deeper data would overflow the stores' encoders). */
  JSON_MAX_DEPTH: z.coerce.number().int().min(1).max(1_000).default(64),
  /** Triggers a minute per signed URL and per task (429 `trigger_limit` past it; a trigger of an existing run does not count); 0: off. */
  TRIGGER_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(6_000),
  /** Writes (POST, PUT, PATCH, DELETE other than triggers) a minute per session (429 `write_limit` past it); 0: off. */
  WRITE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  /** Runs a user may have pending or running at once (429 `live_runs_limit` past it); 0: off. */
  LIVE_RUNS_PER_USER: z.coerce.number().int().min(0).default(5_000),
  /**
   * Runs of one user whose workflows run at once: a trigger past it records the run (`pending`) and starts it as one of
   * that user's runs ends, so one user's flood waits in the store, not in Temporal ahead of everyone (src/runs/admission.ts,
   * docs/fairness.md); 0: off.
   */
  STARTED_RUNS_PER_USER: z.coerce.number().int().min(0).default(0),
  /**
   * Triggers of one user an API process works on at once; more wait in the process, in order (within the request's
   * deadline), so one user's burst cannot fill the database's queue ahead of everyone (src/runs/trigger.ts); 0: off.
   */
  TRIGGERS_AT_ONCE_PER_USER: z.coerce.number().int().min(0).default(8),
  /** Provider calls a worker runs at once: they are waiting, not computing, so thousands are cheap. */
  WORKER_MAX_PROVIDER_CALLS: positiveInt.default(2_000),
  /**
   * Provider calls one owner's runs may hold at once on a worker, so a slow model of one user cannot fill every slot;
   * a call over it is refused at once and tried again by its run later (src/temporal/owner-slots.ts). Unset: half of
   * WORKER_MAX_PROVIDER_CALLS.
   */
  WORKER_MAX_PROVIDER_CALLS_PER_OWNER: optionalString.pipe(z.coerce.number<string | undefined>().int().positive().optional()),
  /** Tool (servlet) calls a worker runs at once: they compute (WebAssembly), so about the cores. */
  WORKER_MAX_TOOL_CALLS: positiveInt.default(Math.max(1, os.availableParallelism())),
  /** MCP tool calls a worker runs at once: they wait on a remote server (unlike a servlet's CPU), so many are cheap. */
  WORKER_MAX_MCP_CALLS: positiveInt.default(200),
  /** Workflows a worker keeps in memory, so a waiting run is not replayed from history on its next event. */
  WORKER_WORKFLOW_CACHE: positiveInt.default(2_000),
  /** When set, a worker serves /healthz, /readyz and /metrics on this port. */
  WORKER_HTTP_PORT: port.optional(),
  /**
   * Deadline of every call to MongoDB or Temporal (server selection, operations, gRPC calls): a stalled dependency
   * gives a 503 naming it within about this long, instead of a hang.
   */
  DEPENDENCY_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3_000),
  /**
   * Content (prompts, answers, tool results, trigger data) above this size is stored in MongoDB and travels as a
   * reference: Temporal history and query answers stay small whatever the run.
   */
  RUN_INLINE_BYTES: positiveInt.default(64 * 1024),
  /**
   * How long a run's first model call may take before its workflow records the run `running` (lists show `pending`
   * meanwhile; a run's own reads show the workflow's view): a model that answers sooner has the run's start written
   * with its end or its first turn, one write of the run instead of two. 0: at once. Read where runs are triggered
   * (the API, the worker's schedules) and given to each run.
   */
  RUN_START_WRITE_DELAY_MS: z.coerce.number().int().min(0).max(10_000).default(250),
  /** Continue a run as new past this many history events; 0 (default): when Temporal suggests it. */
  RUN_CONTINUE_AS_NEW_EVENTS: z.coerce.number().int().min(0).default(0),
  /** How often the reconciler ends runs whose workflow closed without recording its end (terminated, timed out). */
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(1_000).default(30_000),
  /**
   * Closed runs whose last change is older than this many days (fractions allowed) are deleted by a Temporal Schedule
   * every RETENTION_INTERVAL_MS. Unset (default): runs are kept for ever, and the Schedule does not exist.
   */
  RUN_RETENTION_DAYS: optionalString.pipe(z.coerce.number<string | undefined>().positive().optional()),
  /** How often the retention Schedule deletes expired runs (while RUN_RETENTION_DAYS is set). */
  RETENTION_INTERVAL_MS: z.coerce.number().int().min(1_000).default(3_600_000),
  /** How long a read of a live run waits for the workflow to answer before it serves the run record instead. */
  LIVE_READ_WAIT_MS: z.coerce.number().int().min(0).max(30_000).default(1_000),
  /** A run's event stream sends a comment this often, so proxies do not close it while nothing happens. */
  EVENTS_HEARTBEAT_MS: z.coerce.number().int().min(10).max(300_000).default(15_000),
  /** Memory a process may use for copies of run contents (conversations on workers, large texts in the API). */
  CONTENT_CACHE_MB: positiveInt.default(256),
  /**
   * Bearer token of the codec endpoint (`/codec/decode`) the Temporal Web UI calls to show stored contents. Required
   * for it in production; in development, loopback callers need none.
   */
  CODEC_TOKEN: optionalString,
  /** Origins (the Web UI's) allowed to call the codec endpoint from a browser, comma separated. */
  CODEC_CORS_ORIGINS: list,
  /** Longest a prompt template may take to expand (in a worker thread that is stopped past it). */
  TEMPLATE_TIMEOUT_MS: positiveInt.default(2_000),
  /** Largest prompt template a task may be saved with (400 above). */
  TEMPLATE_MAX_BYTES: positiveInt.default(512 * 1024),
  /** Deepest nesting of sections (`{{#a}}…{{/a}}`) a template may be saved with (400 above): rendering grows with it. */
  TEMPLATE_MAX_DEPTH: positiveInt.default(32),
  /** Largest expanded prompt: a run whose prompt expands past it ends in `error` naming the limit. */
  RUN_PROMPT_MAX_BYTES: positiveInt.default(4 * 1024 * 1024),
  MODULE_LIMIT_BYTES: positiveInt.default(20 * 1024 * 1024),
  SERVLET_CALL_TIMEOUT_MS: positiveInt.default(10_000),
  SERVLET_MAX_MEMORY_MB: positiveInt.default(64),
  SERVLET_MAX_RESPONSE_BYTES: positiveInt.default(1024 * 1024),
  SERVLET_POOL_SIZE: positiveInt.default(2),
  /** Installs that keep warm plugins (each plugin is a worker thread); the least recently used pool is closed. */
  SERVLET_WARM_INSTALLS: positiveInt.default(32),
  /** Redirect hops a servlet's HTTP request may follow; each hop is checked like the first request. */
  SERVLET_MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(5),
  /** Extra blocked destinations: host names (globs), URL prefixes and CIDRs, comma separated. */
  NETWORK_BLOCKLIST: list,
  /** Destinations let through although the built-in blocklist refuses them (for one private host). */
  NETWORK_ALLOWLIST: list,
  /** How long a run's completion webhook is retried (hours, fractions allowed) before its delivery gives up. */
  WEBHOOK_RETRY_HOURS: z.coerce.number().positive().default(24),
  /** The first wait before a failed webhook delivery is retried; each next wait doubles, up to an hour. */
  WEBHOOK_RETRY_INITIAL_MS: positiveInt.default(10_000),
  /**
   * Webhook destinations let through although the built-in blocklist refuses them (syntax of NETWORK_ALLOWLIST);
   * for webhooks only: servlets never see these holes, and webhooks do not get NETWORK_ALLOWLIST's.
   */
  WEBHOOK_ALLOWLIST: list,
  /** Longest an MCP server may take to connect and list its tools (at install, at refresh, and opening a run's session). */
  MCP_CONNECT_TIMEOUT_MS: positiveInt.default(10_000),
  /** Longest one MCP tool call may go without an answer; each progress notification from the server restarts it. */
  MCP_CALL_TIMEOUT_MS: positiveInt.default(60_000),
  /**
   * Longest a question an MCP server asks during a tool call (elicitation) waits for a person's answer; then (or at the
   * run's time limit, if earlier) it is declined. MCP_CALL_TIMEOUT_MS does not run meanwhile.
   */
  INPUT_TIMEOUT_S: positiveInt.default(24 * 3600),
  /** Largest answer body an MCP server may send (a JSON answer, a call's event stream; one event of a session's stream). */
  MCP_MAX_RESPONSE_BYTES: positiveInt.default(4 * 1024 * 1024),
  /**
   * MCP server hosts let through although the built-in blocklist refuses them (syntax of NETWORK_ALLOWLIST), and the
   * only hosts an MCP server may be reached at over `http://` (elsewhere `https://` only). For MCP servers only.
   */
  MCP_ALLOWLIST: list,
  /** Longest a client may take to send a whole request, headers and body (408 `request_timeout` past it; raise it for slow module uploads). */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /** Connections open at once from one client address (429 `too_many_connections` past it; behind a proxy, the proxy's address); 0: off. */
  CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(0).default(64),
  /** A request still waiting on MongoDB or Temporal this long after its body was read is answered 503 naming it; 0: off. */
  REQUEST_DEADLINE_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
  /**
   * OpenTelemetry traces (docs/observability.md): exported over OTLP/HTTP to `<this>/v1/traces` while set (or while
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is); unset: no tracing at all.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(httpUrl.optional()),
  /** The traces' own endpoint, used as it is (no path added); wins over OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalString.pipe(httpUrl.optional()),
  OTEL_EXPORTER_OTLP_PROTOCOL: optionalString.pipe(otlpProtocol.default('http/protobuf')),
  /** The traces' own protocol; wins over OTEL_EXPORTER_OTLP_PROTOCOL. */
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optionalString.pipe(otlpProtocol.optional()),
  /** Headers of every export (a collector's or vendor's key): `name=value,...`, values URL-encoded. Never logged. */
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders,
  /** The traces' `service.name`. Unset: `prompt-task-runner-api` for the API, `prompt-task-runner-worker` for a worker. */
  OTEL_SERVICE_NAME: optionalString,
  /**
   * `true`: spans of model and tool calls carry the prompts, answers and tool arguments and results as events (the
   * GenAI convention's switch), each cut to a bounded size. Off: no content of a run is ever in a span.
   */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: optionalString.pipe(z.enum(['true', 'false']).default('false')).transform((v) => v === 'true'),
});

export type Config = Omit<z.infer<typeof schema>, 'PUBLIC_URL' | 'VARIANT_A_MODEL' | 'WORKER_MAX_PROVIDER_CALLS_PER_OWNER'> & {
  PUBLIC_URL: string;
  VARIANT_A_MODEL: string;
  WORKER_MAX_PROVIDER_CALLS_PER_OWNER: number;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function describeIssues(issues: z.core.$ZodIssue[], env: Record<string, string | undefined>): string[] {
  return issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    const missing = issue.code === 'invalid_type' && env[String(issue.path[0])] === undefined;
    return missing ? `${name}: required but not set` : `${name}: ${issue.message}`;
  });
}

/** PUBLIC_URL as the API answers with it: as set, else the API's own address; never with a trailing "/". */
export function publicUrlOf(c: { PUBLIC_URL?: string; HOST: string; PORT: number }): string {
  return (c.PUBLIC_URL ?? `http://${c.HOST === '0.0.0.0' ? '127.0.0.1' : c.HOST}:${c.PORT}`).replace(/\/+$/, '');
}

/** Throws ConfigError naming every bad or missing variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(describeIssues(parsed.error.issues, env));
  }
  const c = parsed.data;
  return {
    ...c,
    PUBLIC_URL: publicUrlOf(c),
    // The hosted service's Variant A documentation: "we currently support gpt-4o".
    VARIANT_A_MODEL: c.VARIANT_A_MODEL ?? 'gpt-4o',
    WORKER_MAX_PROVIDER_CALLS_PER_OWNER: c.WORKER_MAX_PROVIDER_CALLS_PER_OWNER ?? Math.max(1, Math.floor(c.WORKER_MAX_PROVIDER_CALLS / 2)),
  };
}

/** For a service's entry point: the configuration, or every problem with it on stderr and exit code 2. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    return process.exit(2);
  }
}

/**
 * Parses only the named settings, for command-line helpers that touch the database alone (session, rotate-key):
 * they must not demand TEMPORAL_ADDRESS or SIGNING_SECRET. Throws ConfigError like `loadConfig`.
 */
export function loadConfigSubset<K extends keyof typeof schema.shape>(
  names: readonly K[],
  env: Record<string, string | undefined> = process.env,
): Pick<z.infer<typeof schema>, K> {
  // zod's pick() typing cannot follow a generic key list; the runtime mask is exactly `names`.
  const subset = schema.pick(Object.fromEntries(names.map((n) => [n, true])) as any);
  const parsed = subset.safeParse(env);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error.issues, env));
  return parsed.data as unknown as Pick<z.infer<typeof schema>, K>;
}

/** The name of a setting, as `loadConfigSubset` takes it. */
export type SettingName = keyof typeof schema.shape;

/** The variables a process cannot start without (the docker-compose test checks them). */
export const REQUIRED_VARIABLES = Object.entries(schema.shape)
  .filter(([, s]) => !s.safeParse(undefined).success)
  .map(([name]) => name);

const devSchema = z.object({
  PORT: port.default(8080),
  MONGO_URL: optionalString,
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_CLI: optionalString,
  FERRETDB_BIN: optionalString,
  DEV_DATA_DIR: z.string().default('.data'),
  DEV_TEMPORAL_PORT: port.default(7233),
  DEV_TEMPORAL_UI_PORT: port.default(8233),
  DEV_MONGO_PORT: port.default(27017),
  DEV_USER: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/).default('dev'),
  /** Unset: `pretty` when `npm run dev`'s output is a terminal, else `json` (its children's output is never one). */
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
});
export type DevConfig = z.infer<typeof devSchema>;

/** Settings of `npm run dev` (which starts the embedded servers when no address is given). */
export function loadDevConfig(env: Record<string, string | undefined> = process.env): DevConfig {
  const parsed = devSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return parsed.data;
}

const clusterSchema = z.object({
  /** Unset: FerretDB on the cluster's PostgreSQL. */
  MONGO_URL: optionalString,
  /** Secrets, the Temporal server's config and the logs. Unset: $XDG_DATA_HOME/prompt-task-runner/cluster. */
  CLUSTER_DATA_DIR: optionalString,
  /**
   * PostgreSQL's data directory. Unset: <CLUSTER_DATA_DIR>/postgresql; when run as root (PostgreSQL then runs as the
   * `postgres` user, who cannot enter root's home), under /var/lib/postgresql/prompt-task-runner/.
   */
  CLUSTER_PG_DATA: optionalString,
  /**
   * The first of the 16 consecutive loopback ports the cluster uses (docs/deploy.md lists which is which). At most
   * 32752: Temporal's PostgreSQL schema keeps its services' membership ports in a smallint (the server exits at start
   * with "out of range for type smallint" otherwise).
   */
  CLUSTER_BASE_PORT: port.refine((p) => p > 0 && p + 15 <= 32767, 'expected a port from 1 to 32752 (Temporal keeps membership ports in a smallint)').default(18000),
  CLUSTER_APIS: z.coerce.number().int().min(1).max(2).default(2),
  CLUSTER_WORKERS: z.coerce.number().int().min(1).max(2).default(2),
  CLUSTER_USER: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/).default('dev'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  XDG_DATA_HOME: optionalString,
});
export type ClusterConfig = z.infer<typeof clusterSchema>;

/** Settings of `npm run stack:cluster` (src/cli/cluster.ts). */
export function loadClusterConfig(env: Record<string, string | undefined> = process.env): ClusterConfig {
  const parsed = clusterSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return parsed.data;
}

/** Every setting of the service, and those of `npm run dev` and `npm run stack:cluster`: docs/configuration.md lists each (a unit test checks). */
export { schema as configSchema, devSchema as devConfigSchema, clusterSchema as clusterConfigSchema };
